/* Ranks that ask for different thread levels (MPI allows it): rank 0 MULTIPLE, the
 * others SINGLE or FUNNELED; their collectives must still meet. Prints "No Errors". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank = -1, size, provided, errs = 0;
    /* the level asked for depends on the rank, known before MPI_Init only from
     * rmarun's environment (RMA_RANK): rank 0 asks for MULTIPLE, the others SINGLE */
    const char *r = getenv("RMA_RANK");
    int want = (r && r[0] == '0' && r[1] == 0) ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != want) {
        fprintf(stderr, "rank %d: provided %d, not %d\n", rank, provided, want);
        errs++;
    }
    for (int i = 0; i < 50; i++) {
        int one = 1, sum = 0, b = rank == 0 ? i : -1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (sum != size || b != i) {
            fprintf(stderr, "rank %d, round %d: sum %d, bcast %d\n", rank, i, sum, b);
            errs++;
        }
    }
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("No Errors\n");
    MPI_Finalize();
    return all != 0;
}
