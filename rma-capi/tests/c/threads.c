/* MPI_THREAD_MULTIPLE: several threads per rank, each with its own communicator and
 * window, issue collectives, point-to-point messages and one-sided calls at once,
 * and all of them accumulate into one shared window. Every result is checked
 * exactly; rank 0 prints "No Errors". Threads and iterations: argv[1], argv[2]. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAXT 8

static int rank, size, nthreads = 4, iters = 200;
static MPI_Comm comms[MAXT];
static MPI_Win wins[MAXT], shared_win;
static long *bases[MAXT], *shared_base;
static int errs[MAXT];

#define CHECK(t, cond, ...)                                                   \
    do {                                                                      \
        if (!(cond)) {                                                        \
            errs[t]++;                                                        \
            fprintf(stderr, "rank %d thread %d, line %d: ", rank, t, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

static void *work(void *arg) {
    int t = (int)(long)arg;
    MPI_Comm c = comms[t];
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, main_flag = -1;
    MPI_Is_thread_main(&main_flag);
    CHECK(t, main_flag == 0, "Is_thread_main in a thread: %d", main_flag);
    MPI_Win_lock_all(0, wins[t]);
    for (int i = 0; i < iters; i++) {
        /* a collective on this thread's communicator */
        long mine = (long)rank * 1000 + i + t, sum = 0;
        MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c);
        long want = 1000L * size * (size - 1) / 2 + (long)size * (i + t);
        CHECK(t, sum == want, "Allreduce at %d: %ld, not %ld", i, sum, want);
        if (i % 16 == 0) {
            int b = rank == 0 ? 100 * t + i : -1;
            MPI_Bcast(&b, 1, MPI_INT, 0, c);
            CHECK(t, b == 100 * t + i, "Bcast at %d: %d", i, b);
            MPI_Barrier(c);
        }
        /* a message round the ring, tagged by thread and iteration */
        int out = rank * 100000 + t * 1000 + i % 1000, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, next, i % 32000, &in, 1, MPI_INT, prev, i % 32000, c,
                     MPI_STATUS_IGNORE);
        CHECK(t, in == prev * 100000 + t * 1000 + i % 1000, "ring at %d: %d", i, in);
        /* one-sided: this thread's window at the next rank, and the shared one */
        long one = 1, old = -1;
        MPI_Fetch_and_op(&one, &old, MPI_LONG, next, 0, MPI_SUM, wins[t]);
        MPI_Accumulate(&one, 1, MPI_LONG, next, 1, 1, MPI_LONG, MPI_SUM, wins[t]);
        MPI_Win_flush(next, wins[t]);
        CHECK(t, old >= i && old < iters, "Fetch_and_op at %d saw %ld", i, old);
        MPI_Accumulate(&one, 1, MPI_LONG, i % size, 0, 1, MPI_LONG, MPI_SUM, shared_win);
        if (i % 8 == 0)
            MPI_Win_flush_all(shared_win);
    }
    MPI_Win_unlock_all(wins[t]);
    MPI_Barrier(c);
    /* the previous rank's thread t added iters to both words of this rank's window */
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, wins[t]);
    long got[2];
    MPI_Get(got, 2, MPI_LONG, rank, 0, 2, MPI_LONG, wins[t]);
    MPI_Win_unlock(rank, wins[t]);
    CHECK(t, got[0] == iters && got[1] == iters, "window %d: %ld %ld, not %d", t, got[0],
          got[1], iters);
    /* fences on every thread's window at once (each window on its own communicator):
     * a thread waiting in its fence must not keep the others from theirs */
    for (int k = 0; k < iters / 10 + 2; k++) {
        long v = 1000L * k + rank;
        MPI_Win_fence(0, wins[t]);
        MPI_Put(&v, 1, MPI_LONG, next, 1, 1, MPI_LONG, wins[t]);
        MPI_Win_fence(0, wins[t]);
        CHECK(t, bases[t][1] == 1000L * k + prev, "fence round %d: %ld", k, bases[t][1]);
    }
    return NULL;
}

static void *late_send(void *arg) {
    int v = 4242;
    (void)arg;
    usleep(100 * 1000); /* the main thread is in its fence by then */
    MPI_Send(&v, 1, MPI_INT, 1, 77, MPI_COMM_WORLD);
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1)
        nthreads = atoi(argv[1]);
    if (argc > 2)
        iters = atoi(argv[2]);
    if (nthreads > MAXT)
        nthreads = MAXT;
    if (provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "provided %d, not MPI_THREAD_MULTIPLE\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int t = 0; t < nthreads; t++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
        MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, comms[t], &bases[t],
                         &wins[t]);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, wins[t]);
        bases[t][0] = bases[t][1] = 0;
        MPI_Win_unlock(rank, wins[t]);
    }
    MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &shared_base,
                     &shared_win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, shared_win);
    *shared_base = 0;
    MPI_Win_unlock(rank, shared_win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* the shared window's epoch is the process's: opened once, used by every thread */
    MPI_Win_lock_all(0, shared_win);
    pthread_t th[MAXT];
    for (int t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, work, (void *)(long)t);
    for (int t = 0; t < nthreads; t++)
        pthread_join(th[t], NULL);
    MPI_Win_unlock_all(shared_win);

    MPI_Barrier(MPI_COMM_WORLD);
    /* a fence that waits for a message another thread of the process sends: rank 0
     * fences in this thread while another sends to rank 1, which receives and only
     * then fences. Calls on the fenced window's communicator that do not use its
     * shared memory (point to point) must not wait for the fence. */
    if (rank == 0) {
        pthread_t s;
        pthread_create(&s, NULL, late_send, NULL);
        MPI_Win_fence(0, shared_win);
        pthread_join(s, NULL);
    } else {
        if (rank == 1) {
            int v = -1;
            MPI_Recv(&v, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (v != 4242) {
                fprintf(stderr, "rank 1: message %d\n", v);
                errs[0]++;
            }
        }
        MPI_Win_fence(0, shared_win);
    }
    MPI_Win_fence(0, shared_win);
    /* every thread of every rank added 1 per iteration, spread over the ranks */
    long total = 0, mine;
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, shared_win);
    MPI_Get(&mine, 1, MPI_LONG, rank, 0, 1, MPI_LONG, shared_win);
    MPI_Win_unlock(rank, shared_win);
    MPI_Allreduce(&mine, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int e = 0, all = 0;
    for (int t = 0; t < nthreads; t++)
        e += errs[t];
    if (total != (long)size * nthreads * iters) {
        fprintf(stderr, "rank %d: shared window total %ld, not %ld\n", rank, total,
                (long)size * nthreads * iters);
        e++;
    }
    MPI_Allreduce(&e, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int t = 0; t < nthreads; t++) {
        MPI_Win_free(&wins[t]);
        MPI_Comm_free(&comms[t]);
    }
    MPI_Win_free(&shared_win);
    if (rank == 0 && all == 0)
        printf("No Errors\n");
    MPI_Finalize();
    return all != 0;
}
