/*
 * mpi_rma_scale.c -- the rank-scaling scenarios of benches/SCENARIOS.md ("Rank
 * scaling") against a system MPI, on any number of ranks; the same calls as
 * rma-scale (benches/src/bin/rma-scale.rs) makes over rma.
 *
 * Every rank makes the same calls. Each scenario is calibrated (iterations x4
 * until a run takes >= 5 ms), then timed `reps` times for about `secs` seconds;
 * every rank times its own loop between barriers on the machine's real-time
 * clock (CLOCK_REALTIME, as rma-scale's SystemTime), and a run's time is the
 * span from the first rank's start to the last rank's end. Rank 0 writes (and
 * flushes) one CSV line per scenario as soon as it ends:
 *
 *     scale,<scenario>,<ranks>,<iters>,<med>,<min>,<max>
 *
 * in microseconds per aggregate operation (the span / the calls of all ranks) or per epoch (fence, pscw_ring, win_alloc), in bytes per rank
 * for mem_rss and mem_shm; and for every checked scenario
 *
 *     check,<scenario>,<ranks>,<checks>,<wrong>,0,0
 *
 * A wrong count prints "WRONG ..." on stderr and makes the program exit with
 * status 1 at the end; the other scenarios still run.
 *
 * Usage: mpiexec -n N mpi_rma_scale [-r reps] [-t secs] [-s scenario,...] [-o file.csv]
 * Build: mpicc -O2 -Wall -o mpi_rma_scale mpi_rma_scale.c
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

/* window layout, in elements of 8 bytes (disp_unit 8) */
#define COUNTER 0      /* fop_counter */
#define EXCL_COUNT 1   /* lock_excl: get, +1, put under an exclusive lock */
#define SHARED_COUNT 2 /* lock_shared: accumulate +1 under a shared lock */
#define FLAG 3         /* gacc_poll */
#define PSCW_SLOT 4    /* pscw_ring */
#define MUTEX_COUNT 5  /* mutex: get, +1, put under the MCS mutex */
#define NEXT_TICKET 6  /* ticket_lock */
#define NOW_SERVING 7
#define TICKET_COUNT 8
#define SIG 9          /* sig_ring / flag_ring: the signal word */
#define SIG_DATA 576   /* sig_ring / flag_ring: SIG_N i64 of data */
#define SIG_N 8
#define HIST_OFF 640   /* hist_batch / hist_each: HIST_BINS i64 */
#define HIST_BINS 256
#define HIST_UPDATES 256 /* updates per call */
#define HIST_BATCHES 16  /* distinct batches cycled through */
#define COUNTER_BLOCK 64 /* counter_block: values reserved per call */
#define HOT_OFF 64     /* hot_acc: HOT_N i64 (4 KiB) */
#define HOT_N 512
#define RING_OFF 1024  /* ring_acc: RING_N f64 (256 KiB) */
#define RING_N 32768
#define WIN_ELEMS (RING_OFF + RING_N + 64)
#define FLAG_VALUE 42
#define ALLOC_BYTES (64 << 10) /* win_alloc */
#define MEM_BYTES (1 << 20)    /* mem */

/* "h_fop_counter" is rma's fop_counter through a target handle; C has no handles, so
 * here it makes the same MPI calls as fop_counter (the baseline a handle is judged by).
 * Likewise "counter" (rma's Counter building block) makes fop_counter's calls, and
 * "counter_block" the same calls with a block of COUNTER_BLOCK values per call;
 * "mutex" is an MCS queue lock written with MPI atomics (the algorithm of MPICH's
 * mcs_mutex, expressed here: fetch_and_op REPLACE into the tail and into the
 * predecessor's next, the handover a zero-byte message as in MPICH's test; not run
 * under MPICH, see main), and "mutex_async" (rma's Mutex::lock_async) the same calls;
 * "sig_ring", "flag_ring", "sig_stream" and "flag_stream" all make put + flush +
 * accumulate(+1) + flush, what MPI offers for a put with a signal (its calls to
 * different locations are unordered);
 * "hist_batch" combines each call's updates per target and sends one accumulate per
 * target with an indexed-block datatype (what an MPI program batches with). */
static const char *SCENARIOS[] = {"fence",       "fop_counter", "h_fop_counter",
                                  "ring_acc",    "hot_acc",     "lock_excl",
                                  "lock_shared", "pscw_ring",   "gacc_poll",
                                  "win_alloc",   "counter",     "counter_block",
                                  "mutex",       "mutex_async", "ticket_lock",
                                  "sig_ring",    "flag_ring",   "sig_stream",
                                  "flag_stream", "hist_batch",  "hist_each",
                                  "mem"};
#define NSCEN (sizeof SCENARIOS / sizeof *SCENARIOS)

static int rank, size;
static int reps = 5;
static double secs = 0.05;
static int selected[NSCEN];
static FILE *csv;
static MPI_Win win;
static int64_t *base;
static long checks, wrong; /* on this rank */

static int left(void) { return (rank + size - 1) % size; }
static int right(void) { return (rank + 1) % size; }

/* nanoseconds on one clock for every process of the machine */
static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* seconds from the first rank's start to the last rank's end (the slowest rank's
 * time when all start together; where oversubscribed ranks run their loops one
 * after another, the slowest rank's own time would count only its own share) */
static double span(int64_t start, int64_t end) {
    int64_t first, last;
    MPI_Allreduce(&start, &first, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&end, &last, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    return (double)(last - first) * 1e-9;
}

static long sum_over_ranks(long x) {
    long s;
    MPI_Allreduce(&x, &s, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return s;
}

static void line(const char *text) {
    if (rank != 0) return;
    printf("%s\n", text);
    fflush(stdout);
    if (csv) {
        fprintf(csv, "%s\n", text);
        fflush(csv);
    }
}

static void check(const char *what, int ok, long got, long expect) {
    checks++;
    if (!ok) {
        wrong++;
        fprintf(stderr, "WRONG %s on %d ranks (rank %d): got %ld, expected %ld\n", what, size,
                rank, got, expect);
    }
}

/* collective: rank `owner` writes `count` elements of `type` at `disp` of its own
 * window under an exclusive lock of itself */
static void set_own(int owner, MPI_Aint disp, const void *values, int count, MPI_Datatype type) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == owner) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner, 0, win);
        MPI_Put(values, count, type, owner, disp, count, type, win);
        MPI_Win_unlock(owner, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* collective: rank `owner` reads its own window the same way */
static void get_own(int owner, MPI_Aint disp, void *out, int count, MPI_Datatype type) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == owner) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner, 0, win);
        MPI_Get(out, count, type, owner, disp, count, type, win);
        MPI_Win_unlock(owner, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* collective: `iters` iterations of scenario `s` with its exact check; its span
 * in seconds */
/* rank `me`'s k-th update of batch b in hist_batch / hist_each (as rma-scale) */
static void hist_update(int me, int b, int k, int n, int *target, int *bin) {
    uint64_t x = ((uint64_t)me * HIST_BATCHES + (uint64_t)b) * HIST_UPDATES + (uint64_t)k;
    x *= 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    *target = (int)(x % (uint64_t)n);
    *bin = (int)((x >> 16) % HIST_BINS);
}

/* the MCS mutex of "mutex": per rank [next, tail] (int), tail on rank 0; ranks are
 * stored as rank + 1, so that 0 (a fresh window's value) is the empty queue */
static MPI_Win mcs;
#define MCS_NEXT 0
#define MCS_TAIL 1
static int mcs_read_own(int field) {
    int v, dummy = 0;
    MPI_Fetch_and_op(&dummy, &v, MPI_INT, rank, field, MPI_NO_OP, mcs);
    MPI_Win_flush(rank, mcs);
    return v;
}
static void mcs_lock(void) {
    int nil = 0, me = rank + 1, prev, old;
    MPI_Fetch_and_op(&nil, &old, MPI_INT, rank, MCS_NEXT, MPI_REPLACE, mcs);
    MPI_Win_flush(rank, mcs);
    MPI_Fetch_and_op(&me, &prev, MPI_INT, 0, MCS_TAIL, MPI_REPLACE, mcs);
    MPI_Win_flush(0, mcs);
    if (prev != nil) {
        MPI_Fetch_and_op(&me, &old, MPI_INT, prev - 1, MCS_NEXT, MPI_REPLACE, mcs);
        MPI_Win_flush(prev - 1, mcs);
        /* the handover, as MPICH's mcs_mutex: a zero-byte message */
        MPI_Recv(NULL, 0, MPI_BYTE, prev - 1, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}
static void mcs_unlock(void) {
    int nil = 0, me = rank + 1, was;
    int next = mcs_read_own(MCS_NEXT);
    if (next == nil) {
        MPI_Compare_and_swap(&nil, &me, &was, MPI_INT, 0, MCS_TAIL, mcs);
        MPI_Win_flush(0, mcs);
        if (was == me) return;
        while ((next = mcs_read_own(MCS_NEXT)) == nil) sched_yield();
    }
    MPI_Send(NULL, 0, MPI_BYTE, next - 1, 77, MPI_COMM_WORLD);
}

/* a read-modify-write with no atomics of the i64 at `disp` on rank 0: get + flush,
 * +1, put + flush (exact only under a lock that excludes) */
static void plus_one(MPI_Aint disp) {
    int64_t v;
    MPI_Get(&v, 1, MPI_INT64_T, 0, disp, 1, MPI_INT64_T, win);
    MPI_Win_flush(0, win);
    v += 1;
    MPI_Put(&v, 1, MPI_INT64_T, 0, disp, 1, MPI_INT64_T, win);
    MPI_Win_flush(0, win);
}

/* polls this rank's own signal (fetch_and_op NO_OP + flush) until it reaches `want` */
static void wait_own_signal(uint64_t want) {
    uint64_t dummy = 0, seen;
    do {
        MPI_Fetch_and_op(&dummy, &seen, MPI_UINT64_T, rank, SIG, MPI_NO_OP, win);
        MPI_Win_flush(rank, win);
    } while (seen < want);
}

static double run_once(int s, long iters) {
    const char *name = SCENARIOS[s];
    long total = (long)size * iters;
    int64_t t0 = 0, t1 = 0;
    if (!strcmp(name, "fence")) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) MPI_Win_fence(0, win);
        t1 = now_ns();
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    } else if (!strcmp(name, "fop_counter") || !strcmp(name, "h_fop_counter")) {
        int64_t zero = 0, one = 1, old, got = 0;
        set_own(0, COUNTER, &zero, 1, MPI_INT64_T);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, COUNTER, MPI_SUM, win);
            MPI_Win_flush(0, win);
        }
        t1 = now_ns();
        MPI_Win_unlock_all(win);
        get_own(0, COUNTER, &got, 1, MPI_INT64_T);
        if (rank == 0) check(name, got == total, got, total);
    } else if (!strcmp(name, "ring_acc")) {
        static double src[RING_N], got[RING_N], zeros[RING_N];
        for (long i = 0; i < RING_N; i++) src[i] = 1.0;
        set_own(rank, RING_OFF, zeros, RING_N, MPI_DOUBLE);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            MPI_Accumulate(src, RING_N, MPI_DOUBLE, right(), RING_OFF, RING_N, MPI_DOUBLE, MPI_SUM,
                           win);
            MPI_Win_flush(right(), win);
        }
        t1 = now_ns();
        MPI_Win_unlock_all(win);
        get_own(rank, RING_OFF, got, RING_N, MPI_DOUBLE);
        long bad = -1;
        for (long i = 0; i < RING_N && bad < 0; i++)
            if (got[i] != (double)iters) bad = i;
        check("ring_acc element (index, then value as integer)", bad < 0,
              bad < 0 ? 0 : (long)got[bad], iters);
    } else if (!strcmp(name, "hot_acc")) {
        static int64_t src[HOT_N], got[HOT_N], zeros[HOT_N];
        for (long i = 0; i < HOT_N; i++) src[i] = i + 1;
        set_own(0, HOT_OFF, zeros, HOT_N, MPI_INT64_T);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            MPI_Accumulate(src, HOT_N, MPI_INT64_T, 0, HOT_OFF, HOT_N, MPI_INT64_T, MPI_SUM, win);
            MPI_Win_flush(0, win);
        }
        t1 = now_ns();
        MPI_Win_unlock_all(win);
        get_own(0, HOT_OFF, got, HOT_N, MPI_INT64_T);
        if (rank == 0) {
            long bad = -1;
            for (long i = 0; i < HOT_N && bad < 0; i++)
                if (got[i] != total * (i + 1)) bad = i;
            check("hot_acc element", bad < 0, bad < 0 ? 0 : (long)got[bad],
                  bad < 0 ? 0 : total * (bad + 1));
        }
    } else if (!strcmp(name, "lock_excl")) {
        int64_t zero = 0, v, got = 0;
        set_own(0, EXCL_COUNT, &zero, 1, MPI_INT64_T);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Get(&v, 1, MPI_INT64_T, 0, EXCL_COUNT, 1, MPI_INT64_T, win);
            MPI_Win_flush(0, win);
            v += 1;
            MPI_Put(&v, 1, MPI_INT64_T, 0, EXCL_COUNT, 1, MPI_INT64_T, win);
            MPI_Win_unlock(0, win);
        }
        t1 = now_ns();
        get_own(0, EXCL_COUNT, &got, 1, MPI_INT64_T);
        if (rank == 0) check("lock_excl count (get, +1, put)", got == total, got, total);
    } else if (!strcmp(name, "lock_shared")) {
        int64_t zero = 0, one = 1, got = 0;
        set_own(0, SHARED_COUNT, &zero, 1, MPI_INT64_T);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            MPI_Accumulate(&one, 1, MPI_INT64_T, 0, SHARED_COUNT, 1, MPI_INT64_T, MPI_SUM, win);
            MPI_Win_unlock(0, win);
        }
        t1 = now_ns();
        get_own(0, SHARED_COUNT, &got, 1, MPI_INT64_T);
        if (rank == 0) check("lock_shared count", got == total, got, total);
    } else if (!strcmp(name, "pscw_ring")) {
        int64_t zero = 0, v, got = 0;
        MPI_Group world_group, lg, rg;
        int l = left(), r = right();
        set_own(rank, PSCW_SLOT, &zero, 1, MPI_INT64_T);
        /* N = 2: left and right are the same rank, a group of one */
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        MPI_Group_incl(world_group, 1, &l, &lg);
        MPI_Group_incl(world_group, 1, &r, &rg);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            v = k + 1;
            MPI_Win_post(lg, 0, win);
            MPI_Win_start(rg, 0, win);
            MPI_Put(&v, 1, MPI_INT64_T, r, PSCW_SLOT, 1, MPI_INT64_T, win);
            MPI_Win_complete(win);
            MPI_Win_wait(win);
        }
        t1 = now_ns();
        MPI_Group_free(&lg);
        MPI_Group_free(&rg);
        MPI_Group_free(&world_group);
        get_own(rank, PSCW_SLOT, &got, 1, MPI_INT64_T);
        check("pscw_ring slot", got == iters, got, iters);
    } else if (!strcmp(name, "gacc_poll")) {
        int64_t flag = FLAG_VALUE, dummy = 0, r = 0, last = 0;
        long bad = 0;
        set_own(0, FLAG, &flag, 1, MPI_INT64_T);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            MPI_Get_accumulate(&dummy, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, 0, FLAG, 1, MPI_INT64_T,
                               MPI_NO_OP, win);
            MPI_Win_flush(0, win);
            if (r != FLAG_VALUE) {
                bad++;
                last = r;
            }
        }
        t1 = now_ns();
        MPI_Win_unlock_all(win);
        check("gacc_poll value read (last wrong value)", bad == 0, last, FLAG_VALUE);
    } else if (!strcmp(name, "counter") || !strcmp(name, "counter_block")) {
        long block = !strcmp(name, "counter") ? 1 : COUNTER_BLOCK;
        int64_t zero = 0, add = block, old, got = 0, next = 0, end = 0;
        set_own(0, COUNTER, &zero, 1, MPI_INT64_T);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            if (next == end) {
                MPI_Fetch_and_op(&add, &old, MPI_INT64_T, 0, COUNTER, MPI_SUM, win);
                MPI_Win_flush(0, win);
                next = old;
                end = old + block;
            }
            next++;
        }
        t1 = now_ns();
        MPI_Win_unlock_all(win);
        get_own(0, COUNTER, &got, 1, MPI_INT64_T);
        long expect = (long)size * ((iters + block - 1) / block) * block;
        if (rank == 0) check(name, got == expect, got, expect);
    } else if (!strcmp(name, "mutex") || !strcmp(name, "mutex_async")) {
        int64_t zero = 0, got = 0;
        int *own;
        set_own(0, MUTEX_COUNT, &zero, 1, MPI_INT64_T);
        MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &own, &mcs);
        own[0] = own[1] = 0;
        MPI_Win_lock_all(0, mcs);
        MPI_Win_sync(mcs);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            mcs_lock();
            plus_one(MUTEX_COUNT);
            mcs_unlock();
        }
        t1 = now_ns();
        MPI_Win_unlock_all(win);
        MPI_Win_unlock_all(mcs);
        MPI_Win_free(&mcs);
        get_own(0, MUTEX_COUNT, &got, 1, MPI_INT64_T);
        if (rank == 0) check("mutex count (get, +1, put)", got == total, got, total);
    } else if (!strcmp(name, "ticket_lock")) {
        int64_t zeros[3] = {0, 0, 0}, one = 1, dummy = 0, ticket, serving, v, got = 0;
        set_own(0, NEXT_TICKET, zeros, 3, MPI_INT64_T);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            MPI_Fetch_and_op(&one, &ticket, MPI_INT64_T, 0, NEXT_TICKET, MPI_SUM, win);
            MPI_Win_flush(0, win);
            for (;;) {
                MPI_Fetch_and_op(&dummy, &serving, MPI_INT64_T, 0, NOW_SERVING, MPI_NO_OP, win);
                MPI_Win_flush(0, win);
                if (serving == ticket) break;
                sched_yield();
            }
            plus_one(TICKET_COUNT);
            MPI_Fetch_and_op(&one, &v, MPI_INT64_T, 0, NOW_SERVING, MPI_SUM, win);
            MPI_Win_flush(0, win);
        }
        t1 = now_ns();
        MPI_Win_unlock_all(win);
        get_own(0, TICKET_COUNT, &got, 1, MPI_INT64_T);
        if (rank == 0) check("ticket_lock count (get, +1, put)", got == total, got, total);
    } else if (!strcmp(name, "sig_ring") || !strcmp(name, "flag_ring") ||
               !strcmp(name, "sig_stream") || !strcmp(name, "flag_stream")) {
        /* put + flush + accumulate(+1) + flush, what MPI offers for a signalled put; a
         * ring waits for its own signal each round, a stream once at the end */
        int64_t zero = 0, data[SIG_N], got[SIG_N + 1];
        uint64_t one = 1;
        int r = right(), stream = strstr(name, "stream") != NULL;
        set_own(rank, SIG, &zero, 1, MPI_INT64_T);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            for (int i = 0; i < SIG_N; i++) data[i] = k;
            MPI_Put(data, SIG_N, MPI_INT64_T, r, SIG_DATA, SIG_N, MPI_INT64_T, win);
            MPI_Win_flush(r, win);
            MPI_Accumulate(&one, 1, MPI_UINT64_T, r, SIG, 1, MPI_UINT64_T, MPI_SUM, win);
            MPI_Win_flush(r, win);
            if (!stream) wait_own_signal((uint64_t)k + 1);
        }
        if (stream) wait_own_signal((uint64_t)iters);
        t1 = now_ns();
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        get_own(rank, SIG, got, 1, MPI_INT64_T);
        get_own(rank, SIG_DATA, got + 1, SIG_N, MPI_INT64_T);
        int ok = got[0] == iters;
        for (int i = 1; i <= SIG_N; i++) ok &= got[i] == iters - 1;
        check("signal rings/streams: signal (and last data)", ok, (long)got[0], iters);
    } else if (!strcmp(name, "hist_batch") || !strcmp(name, "hist_each")) {
        static int64_t zeros[HIST_BINS], bins[HIST_BINS];
        static int tgt[HIST_BATCHES][HIST_UPDATES], bin[HIST_BATCHES][HIST_UPDATES];
        int batch = !strcmp(name, "hist_batch");
        int64_t one = 1;
        set_own(rank, HIST_OFF, zeros, HIST_BINS, MPI_INT64_T);
        for (int b = 0; b < HIST_BATCHES; b++)
            for (int k = 0; k < HIST_UPDATES; k++) hist_update(rank, b, k, size, &tgt[b][k], &bin[b][k]);
        int64_t *counts = calloc((size_t)size * HIST_BINS, sizeof *counts);
        int *displs = malloc(sizeof *displs * HIST_BINS);
        int64_t *vals = malloc(sizeof *vals * HIST_BINS);
        MPI_Win_lock_all(0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            int b = (int)(k % HIST_BATCHES);
            if (!batch) {
                for (int u = 0; u < HIST_UPDATES; u++)
                    MPI_Accumulate(&one, 1, MPI_INT64_T, tgt[b][u], HIST_OFF + bin[b][u], 1,
                                   MPI_INT64_T, MPI_SUM, win);
            } else {
                /* combine per target, then one accumulate per target */
                for (int u = 0; u < HIST_UPDATES; u++) counts[tgt[b][u] * HIST_BINS + bin[b][u]]++;
                for (int t = 0; t < size; t++) {
                    int n = 0;
                    for (int i = 0; i < HIST_BINS; i++)
                        if (counts[t * HIST_BINS + i]) {
                            displs[n] = HIST_OFF + i;
                            vals[n++] = counts[t * HIST_BINS + i];
                            counts[t * HIST_BINS + i] = 0;
                        }
                    if (!n) continue;
                    MPI_Datatype idx;
                    MPI_Type_create_indexed_block(n, 1, displs, MPI_INT64_T, &idx);
                    MPI_Type_commit(&idx);
                    MPI_Accumulate(vals, n, MPI_INT64_T, t, 0, 1, idx, MPI_SUM, win);
                    MPI_Type_free(&idx);
                }
            }
            MPI_Win_flush_all(win);
        }
        t1 = now_ns();
        MPI_Win_unlock_all(win);
        free(counts);
        free(displs);
        free(vals);
        get_own(rank, HIST_OFF, bins, HIST_BINS, MPI_INT64_T);
        long mine = 0;
        for (int i = 0; i < HIST_BINS; i++) mine += (long)bins[i];
        long all = sum_over_ranks(mine), expect = total * HIST_UPDATES;
        if (rank == 0) check("hist total over every rank's bins", all == expect, all, expect);
    } else if (!strcmp(name, "win_alloc")) {
        MPI_Win w;
        void *b;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        for (long k = 0; k < iters; k++) {
            MPI_Win_allocate(ALLOC_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b, &w);
            MPI_Win_free(&w);
        }
        t1 = now_ns();
    }
    return span(t0, t1);
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* calibration, then `reps` timed runs; the CSV line and the check line */
static void bench(int s) {
    const char *name = SCENARIOS[s];
    long checks0 = checks, wrong0 = wrong, iters = 1;
    run_once(s, 4);
    for (;;) {
        double el = run_once(s, iters);
        if (el >= 0.005 || iters >= (1L << 30)) {
            iters = (long)((double)iters * secs / (el > 0 ? el : 1e-9));
            if (iters < 1) iters = 1;
            break;
        }
        iters *= 4;
    }
    int per_epoch = !strcmp(name, "fence") || !strcmp(name, "pscw_ring") ||
                    !strcmp(name, "win_alloc");
    int per_update = !strcmp(name, "hist_batch") || !strcmp(name, "hist_each");
    double per = (double)iters * (per_epoch ? 1 : size) * (per_update ? HIST_UPDATES : 1);
    double *v = malloc(sizeof *v * reps);
    for (int r = 0; r < reps; r++) v[r] = run_once(s, iters) / per * 1e6;
    qsort(v, reps, sizeof *v, cmpd);
    double med = reps % 2 ? v[reps / 2] : 0.5 * (v[reps / 2 - 1] + v[reps / 2]);
    char text[256];
    snprintf(text, sizeof text, "scale,%s,%d,%ld,%.5f,%.5f,%.5f", name, size, iters, med, v[0],
             v[reps - 1]);
    line(text);
    free(v);
    long c = sum_over_ranks(checks - checks0), w = sum_over_ranks(wrong - wrong0);
    if (c > 0) {
        snprintf(text, sizeof text, "check,%s,%d,%ld,%ld,0,0", name, size, c, w);
        line(text);
    }
}

static double rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char buf[256];
    double kb = 0;
    if (!f) return 0;
    while (fgets(buf, sizeof buf, f))
        if (!strncmp(buf, "VmRSS:", 6)) kb = atof(buf + 6);
    fclose(f);
    return kb * 1024;
}

/* used bytes of the file system on /dev/shm (-1: unknown) */
static double shm_used(void) {
    struct statvfs s;
    if (statvfs("/dev/shm", &s) != 0) return -1;
    return (double)(s.f_blocks - s.f_bfree) * s.f_frsize;
}

/* one window of MEM_BYTES per rank, untouched: each rank's VmRSS increase, and
 * the growth of /dev/shm's used bytes (rank 0, between barriers) per rank */
static void mem(void) {
    MPI_Win w;
    void *b;
    double shm0 = 0, shm1 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double rss0 = rss_bytes();
    if (rank == 0) shm0 = shm_used();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_allocate(MEM_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b, &w);
    MPI_Barrier(MPI_COMM_WORLD);
    double rss = rss_bytes() - rss0;
    if (rank == 0) shm1 = shm_used();
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&w);
    double sum, lo, hi;
    MPI_Allreduce(&rss, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&rss, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&rss, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    char text[256];
    snprintf(text, sizeof text, "scale,mem_rss,%d,1,%.0f,%.0f,%.0f", size, sum / size, lo, hi);
    line(text);
    if (shm0 >= 0 && shm1 >= 0) {
        double per = (shm1 - shm0) / size;
        snprintf(text, sizeof text, "scale,mem_shm,%d,1,%.0f,%.0f,%.0f", size, per, per, per);
        line(text);
    }
}

static void usage(void) {
    if (rank == 0) {
        fprintf(stderr, "usage: mpi_rma_scale [-r reps] [-t secs] [-s scenario,...] [-o file]\n"
                        "scenarios:");
        for (size_t i = 0; i < NSCEN; i++) fprintf(stderr, " %s", SCENARIOS[i]);
        fprintf(stderr, "\n");
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void parse_flags(int argc, char **argv) {
    int opt, any = 0;
    for (size_t i = 0; i < NSCEN; i++) selected[i] = 1;
    while ((opt = getopt(argc, argv, "r:t:s:o:")) != -1) {
        switch (opt) {
        case 'r': reps = atoi(optarg); break;
        case 't': secs = atof(optarg); break;
        case 's':
            for (size_t i = 0; i < NSCEN; i++) selected[i] = 0;
            for (char *tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
                size_t i = 0;
                while (i < NSCEN && strcmp(tok, SCENARIOS[i])) i++;
                if (i == NSCEN) usage();
                selected[i] = any = 1;
            }
            if (!any) usage();
            break;
        case 'o':
            if (rank == 0 && !(csv = fopen(optarg, "w"))) {
                perror(optarg);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            break;
        default: usage();
        }
    }
    if (reps < 1) reps = 1;
    if (secs <= 0) secs = 0.05;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    parse_flags(argc, argv);
    MPI_Win_allocate((MPI_Aint)WIN_ELEMS * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    memset(base, 0, (size_t)WIN_ELEMS * 8);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    if (rank == 0) {
        char ver[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(ver, &len);
        char *nl = strchr(ver, '\n');
        if (nl) *nl = 0;
        printf("# library: %s\n# mpi_rma_scale: %d ranks, reps %d, %.3f s per rep\n"
               "# section,scenario,ranks,iters,med_us,min_us,max_us\n",
               ver, size, reps, secs);
        fflush(stdout);
    }
    int mpich = 0;
    {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int l;
        MPI_Get_library_version(v, &l);
        mpich = strstr(v, "MPICH") != NULL;
    }
    for (size_t s = 0; s < NSCEN; s++) {
        if (!selected[s]) continue;
        if (mpich && !strncmp(SCENARIOS[s], "mutex", 5)) {
            /* MPICH 4.0.2 (Debian 12, ch4:ucx) deadlocks in this MCS mutex within the
             * first iterations at 2 ranks: traced, a rank's swap into the tail returned
             * its own rank after its previous unlock, so the ranks ended up queued
             * behind each other (with a polled grant flag and with a zero-byte message
             * as the handover alike; not diagnosed further). Not measured there (rma's
             * Mutex runs under MPICH: rma_mpi). */
            if (rank == 0) {
                fprintf(stderr, "mpi_rma_scale: %s skipped under MPICH (a lost handover in 4.0.2)\n",
                        SCENARIOS[s]);
                char note[96];
                snprintf(note, sizeof note, "# %s: skipped under MPICH (MCS handover lost in 4.0.2)",
                         SCENARIOS[s]);
                line(note);
            }
            continue;
        }
        if (!strcmp(SCENARIOS[s], "mem")) mem();
        else bench((int)s);
    }
    long w = sum_over_ranks(wrong);
    if (rank == 0) {
        printf("# checks: %s (%ld wrong); total %.1f s\n", w ? "FAILED" : "all exact", w,
               MPI_Wtime() - start);
        if (csv) fclose(csv);
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return w ? 1 : 0;
}
