/*
 * thread_levels.c -- what a thread level costs: the same calls, timed after
 * MPI_Init_thread at the level given as argv[1] (0 single, 1 funneled,
 * 2 serialized, 3 multiple), on one thread per rank.
 *
 * Each scenario runs `iters` times (argv[2], default 20000) after a warm-up of a
 * tenth of that; rank 0 prints one line per scenario:
 *
 *     level,scenario,ranks,us_per_call
 *
 * Scenarios: barrier; allreduce (one int, MPI_SUM); pingpong (an 8-byte
 * MPI_Send/MPI_Recv round trip between ranks 0 and 1, half the round trip);
 * fop (MPI_Fetch_and_op + MPI_Win_flush to the next rank under lock_all);
 * put (an 8-byte MPI_Put + MPI_Win_flush likewise).
 *
 * Run: rmarun -n 2 ./thread_levels 1; rmarun -n 2 ./thread_levels 3
 * (also builds against MPICH or Open MPI with their mpicc, for comparison).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size, iters = 20000;

static double timed(int n, void (*f)(void)) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++)
        f();
    double t = MPI_Wtime() - t0;
    double max = 0;
    MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max / n * 1e6;
}

static void barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

static void allreduce(void) {
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size)
        MPI_Abort(MPI_COMM_WORLD, 3);
}

static void pingpong(void) {
    long x = rank;
    if (rank == 0) {
        MPI_Send(&x, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&x, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Recv(&x, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&x, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD);
    }
}

static MPI_Win win;
static long *base;

static void fop(void) {
    long one = 1, old;
    int next = (rank + 1) % size;
    MPI_Fetch_and_op(&one, &old, MPI_LONG, next, 0, MPI_SUM, win);
    MPI_Win_flush(next, win);
}

static void put(void) {
    long v = rank;
    int next = (rank + 1) % size;
    MPI_Put(&v, 1, MPI_LONG, next, 1, 1, MPI_LONG, win);
    MPI_Win_flush(next, win);
}

int main(int argc, char **argv) {
    int want = argc > 1 ? atoi(argv[1]) : MPI_THREAD_FUNNELED, got = -1;
    MPI_Init_thread(&argc, &argv, want, &got);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 2)
        iters = atoi(argv[2]);
    if (got != want) {
        if (rank == 0)
            fprintf(stderr, "asked for thread level %d, got %d\n", want, got);
        MPI_Finalize();
        return 1;
    }
    MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    struct {
        const char *name;
        void (*f)(void);
    } s[] = {{"barrier", barrier},
             {"allreduce", allreduce},
             {"pingpong", pingpong},
             {"fop", fop},
             {"put", put}};
    MPI_Win_lock_all(0, win);
    for (unsigned k = 0; k < sizeof s / sizeof s[0]; k++) {
        timed(iters / 10 + 1, s[k].f);
        double us = timed(iters, s[k].f);
        if (s[k].f == pingpong)
            us /= 2;
        if (rank == 0)
            printf("%d,%s,%d,%.3f\n", got, s[k].name, size, us);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
