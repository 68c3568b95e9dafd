/* An erroneous call under the default handler (MPI_ERRORS_ARE_FATAL): every rank
 * must end, with a non-zero status, and not hang. */
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, x = 0;
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win_create(&x, sizeof x, sizeof x, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    if (rank == 1) MPI_Put(&x, 1, MPI_INT, 99, 0, 1, MPI_INT, win); /* no rank 99 */
    MPI_Win_fence(0, win); /* rank 0 waits here for a rank that has ended */
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
