/* Open MPI 4.1.4, osc/rdma over btl/vader: windows allocated on two different
 * communicators (two MPI_Comm_split of MPI_COMM_WORLD) receive each other's
 * accumulates. Each window's rank 0 should count 2 ranks x 10 = 20; one of them,
 * varying from run to run, counts 40. With `--mca osc sm` both count 20.
 *
 *   mpicc.openmpi -O2 ompi_rdma_two_comms.c -o two && mpirun.openmpi -n 4 ./two
 *
 * Found by rma's conformance case own_worlds_overlapping; rma-mpi refuses a window on
 * a second communicator while windows of another live, where osc/rdma may be in use.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm odd, lower;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &odd);
    MPI_Comm_split(MPI_COMM_WORLD, me >= p / 2, 0, &lower);
    uint64_t *a, *b;
    MPI_Win wa, wb;
    MPI_Win_allocate(64, 8, MPI_INFO_NULL, odd, &a, &wa);
    MPI_Win_allocate(64, 8, MPI_INFO_NULL, lower, &b, &wb);
    a[0] = 0; b[0] = 0;
    MPI_Win_fence(0, wa); MPI_Win_fence(0, wb);
    MPI_Win_lock_all(0, wa); MPI_Win_lock_all(0, wb);
    uint64_t one = 1, old;
    for (int i = 0; i < 10; i++) {
        MPI_Accumulate(&one, 1, MPI_UINT64_T, 0, 0, 1, MPI_UINT64_T, MPI_SUM, wa);
        MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, 0, 0, MPI_SUM, wb);
        MPI_Win_flush(0, wb);
    }
    MPI_Win_unlock_all(wa); MPI_Win_unlock_all(wb);
    MPI_Win_fence(0, wa); MPI_Win_fence(0, wb);
    int ra, rb; MPI_Comm_rank(odd, &ra); MPI_Comm_rank(lower, &rb);
    if (ra == 0) printf("world %d: a (parity window, rank 0) = %lu (want 20), base %p\n", me, (unsigned long)a[0], (void*)a);
    if (rb == 0) printf("world %d: b (half window, rank 0) = %lu (want 20), base %p\n", me, (unsigned long)b[0], (void*)b);
    MPI_Win_free(&wa); MPI_Win_free(&wb);
    MPI_Finalize();
    return 0;
}
