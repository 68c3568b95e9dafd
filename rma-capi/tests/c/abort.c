/* MPI_Abort(MPI_COMM_WORLD, code) on the last rank, code from argv[1], while the
 * other ranks sleep outside MPI: the job must end at once with the aborting rank's
 * exit status the code (its low 8 bits). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int code = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1)
        MPI_Abort(MPI_COMM_WORLD, code);
    sleep(60);
    printf("rank %d was not ended by MPI_Abort\n", rank);
    MPI_Finalize();
    return 3;
}
