/*
 * mpi_rma_bench.c -- the scenarios of benches/SCENARIOS.md against a system MPI.
 *
 * 2 ranks: rank 0 is the origin, rank 1 the target, except in the contended
 * scenarios (cont_*), where both ranks call on one element of rank 1's window.
 * Each rank's window holds WIN_ELEMS elements of 8 bytes (disp_unit 8): the i64
 * of fetch_and_op / compare_and_swap at displacements 0-1, the contended pair
 * at 8-9, the f64 array from 64 on (room for a stride-2 layout of MAX_N).
 *
 * Passive scenarios run under MPI_Win_lock_all on rank 0 with MPI_Win_flush(1)
 * after every call (bw_excl: an exclusive lock of rank 1); lock and unlock are
 * outside the timed loop, and rank 1 waits in MPI_Barrier meanwhile.  Each
 * scenario is calibrated (the iteration count grows x4 until a run takes
 * >= 5 ms; these runs are the warm-up), then timed `reps` times for about
 * `secs` seconds each; one CSV line gives the median, minimum and maximum over
 * the repetitions:
 *
 *     section,test,N,iters,med_us,min_us,max_us
 *
 * Times are microseconds per call (per call per rank in cont_*, per epoch in
 * acc_fence and bw_fence), except in section busy: total microseconds for the
 * 100 calls (3 runs).  The last line is check,contended_errors,<count>,0,0,0,0.
 *
 * Usage: mpiexec -n 2 mpi_rma_bench [-r reps] [-t secs] [-q] [-c] [-x] [-i] [-o file.csv]
 *   -r reps   timed repetitions per scenario (default 7)
 *   -t secs   seconds per repetition (default 0.04)
 *   -q        latency section only (fop cas acc gacc put get acc_fence)
 *   -c        MPI_Alloc_mem + MPI_Win_create instead of MPI_Win_allocate
 *   -x        skip compare_and_swap (Open MPI 4.1 osc/rdma over btl/vader crashes in it)
 *   -i        window info accumulate_ordering=none, accumulate_ops=same_op
 *   -o file   write the CSV lines to file (rank 0)
 *
 * Build: mpicc -O2 -Wall -o mpi_rma_bench mpi_rma_bench.c
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_N 262144L
#define LONG_OFF 0 /* fetch_and_op at 0, compare_and_swap at 1 */
#define CONT_OFF 8 /* contended i64 at 8, contended f64 at 9 */
#define DBL_OFF 64 /* the f64 array */
#define WIN_ELEMS (DBL_OFF + 2 * MAX_N + 64)
#define RATE_BATCH 10000L
#define BUSY_CALLS 100L
#define BUSY_MS 50.0
#define BUSY_RUNS 3

typedef enum {
    FOP, CAS, ACC, GACC, PUT, GET, ACC_FENCE, MSGRATE, CONT_FOP, CONT_ACC,
    BW_LOCKALL, BW_EXCL, BW_FENCE, CONTIG, STRIDED,
    BUSY_ACC, BUSY_FOP, BUSY_PUT, BUSY_GET
} test_t;

static const char *KEY[] = {
    "fop", "cas", "acc", "gacc", "put", "get", "acc_fence", "msgrate", "cont_fop", "cont_acc",
    "bw_lockall", "bw_excl", "bw_fence", "contig", "strided",
    "busy_acc", "busy_fop", "busy_put", "busy_get"};

static int rank;
static int reps = 7;
static double secs = 0.04;
static int quick, use_create, skip_cas, use_info;
static FILE *csv;

static MPI_Win win;
static void *base;            /* this rank's window memory */
static double *src, *res;     /* origin and result buffers, MAX_N doubles */
static MPI_Datatype strided;  /* vector(N, 1, 2, MPI_DOUBLE) of the current layout run */
static long contended_errors; /* on rank 1 */

static double now_s(void) { /* a plain clock that never enters the MPI library */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void make_window(void) {
    MPI_Aint bytes = (MPI_Aint)WIN_ELEMS * 8;
    MPI_Info info = MPI_INFO_NULL;
    if (use_info) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "accumulate_ordering", "none");
        MPI_Info_set(info, "accumulate_ops", "same_op");
    }
    if (use_create) {
        MPI_Alloc_mem(bytes, MPI_INFO_NULL, &base);
        memset(base, 0, bytes);
        MPI_Win_create(base, bytes, 8, info, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate(bytes, 8, info, MPI_COMM_WORLD, &base, &win);
        memset(base, 0, bytes);
    }
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void free_window(void) {
    MPI_Win_free(&win);
    if (use_create) MPI_Free_mem(base);
}

/* One call of `t` with `n` elements to rank 1 (no flush); j is the call's
 * index in a message-rate batch. */
static void call(test_t t, long n, long j) {
    static long one = 1, cmp = 0, old;
    static double done = 1.0;
    switch (t) {
    case FOP: case BUSY_FOP:
        MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, LONG_OFF, MPI_SUM, win);
        break;
    case CAS:
        MPI_Compare_and_swap(&one, &cmp, &old, MPI_LONG, 1, LONG_OFF + 1, win);
        break;
    case ACC: case ACC_FENCE: case BUSY_ACC:
        MPI_Accumulate(src, 1, MPI_DOUBLE, 1, DBL_OFF, 1, MPI_DOUBLE, MPI_SUM, win);
        break;
    case GACC:
        MPI_Get_accumulate(src, 1, MPI_DOUBLE, res, 1, MPI_DOUBLE, 1, DBL_OFF, 1, MPI_DOUBLE,
                           MPI_SUM, win);
        break;
    case PUT: case BUSY_PUT:
        MPI_Put(src, 1, MPI_DOUBLE, 1, DBL_OFF + 1, 1, MPI_DOUBLE, win);
        break;
    case GET: case BUSY_GET:
        MPI_Get(res, 1, MPI_DOUBLE, 1, DBL_OFF + 2, 1, MPI_DOUBLE, win);
        break;
    case MSGRATE:
        MPI_Accumulate(src, 1, MPI_DOUBLE, 1, DBL_OFF + (j & 1023), 1, MPI_DOUBLE, MPI_SUM, win);
        break;
    case CONT_FOP:
        MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, CONT_OFF, MPI_SUM, win);
        break;
    case CONT_ACC:
        MPI_Accumulate(&done, 1, MPI_DOUBLE, 1, CONT_OFF + 1, 1, MPI_DOUBLE, MPI_SUM, win);
        break;
    case BW_LOCKALL: case BW_EXCL: case BW_FENCE: case CONTIG:
        MPI_Accumulate(src, (int)n, MPI_DOUBLE, 1, DBL_OFF, (int)n, MPI_DOUBLE, MPI_SUM, win);
        break;
    case STRIDED:
        MPI_Accumulate(src, (int)n, MPI_DOUBLE, 1, DBL_OFF, 1, strided, MPI_SUM, win);
        break;
    }
}

static double max_over_ranks(double x) {
    double m;
    MPI_Allreduce(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* rank 0's value, on every rank */
static double from_rank0(double x) {
    MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return x;
}

/* Collective: rank 1 reads the contended pair into *i, *d and, if `reset`,
 * zeroes it, inside an exclusive lock epoch on its own window. */
static void contended_pair(int reset, long *i, double *d) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        long *l = (long *)base + CONT_OFF;
        double *f = (double *)base + CONT_OFF + 1;
        *i = *l;
        *d = *f;
        if (reset) {
            *l = 0;
            *f = 0.0;
        }
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* both ranks call + flush on rank 1's contended element; the slowest rank's time */
static double run_contended(test_t t, long iters) {
    long got_i;
    double got_d;
    contended_pair(1, &got_i, &got_d);
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long k = 0; k < iters; k++) {
        call(t, 1, 0);
        MPI_Win_flush(1, win);
    }
    double el = MPI_Wtime() - t0;
    MPI_Win_unlock_all(win);
    double slowest = max_over_ranks(el);
    contended_pair(0, &got_i, &got_d);
    long expect = 2 * iters;
    int wrong = t == CONT_FOP ? got_i != expect : got_d != (double)expect;
    if (rank == 1 && wrong) {
        fprintf(stderr, "CONTENDED %s WRONG: got %ld / %.1f, expected %ld\n", KEY[t], got_i, got_d,
                expect);
        contended_errors++;
    }
    return slowest;
}

/* one call by rank 0 per fence epoch; both ranks fence */
static double run_fence(test_t t, long n, long iters) {
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long k = 0; k < iters; k++) {
        if (rank == 0) call(t, n, 0);
        MPI_Win_fence(0, win);
    }
    double el = MPI_Wtime() - t0;
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    return from_rank0(el);
}

/* rank 1 computes BUSY_MS without calling MPI while rank 0 times `iters` calls +
 * flush; the epoch is opened and one call completed before the target goes busy
 * (MPICH's lock_all waits for the target). */
static double run_busy(test_t t, long iters) {
    double el = 0;
    if (rank == 0) {
        MPI_Win_lock_all(0, win);
        call(t, 1, 0);
        MPI_Win_flush(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        double t0 = MPI_Wtime();
        for (long k = 0; k < iters; k++) {
            call(t, 1, 0);
            MPI_Win_flush(1, win);
        }
        el = MPI_Wtime() - t0;
        MPI_Win_unlock_all(win);
    } else {
        double end = now_s() + BUSY_MS * 1e-3;
        volatile double x = 0;
        while (now_s() < end) x += 1.0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return from_rank0(el);
}

/* rank 0 calls + flushes under lock_all (bw_excl: exclusive lock of rank 1) */
static double run_passive(test_t t, long n, long iters) {
    double el = 0;
    long batch = t == MSGRATE ? RATE_BATCH : 1;
    if (rank == 0) {
        if (t == BW_EXCL) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        else MPI_Win_lock_all(0, win);
        double t0 = MPI_Wtime();
        for (long k = 0; k < iters; k++) {
            for (long j = 0; j < batch; j++) {
                call(t, n, j);
                if (batch == 1) MPI_Win_flush(1, win);
            }
            if (batch > 1) MPI_Win_flush(1, win);
        }
        el = MPI_Wtime() - t0;
        if (t == BW_EXCL) MPI_Win_unlock(1, win);
        else MPI_Win_unlock_all(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return from_rank0(el);
}

/* Collective: `iters` iterations of `t`; elapsed seconds, the same on every rank. */
static double run_once(test_t t, long n, long iters) {
    switch (t) {
    case CONT_FOP: case CONT_ACC: return run_contended(t, iters);
    case ACC_FENCE: case BW_FENCE: return run_fence(t, n, iters);
    case BUSY_ACC: case BUSY_FOP: case BUSY_PUT: case BUSY_GET: return run_busy(t, iters);
    default: return run_passive(t, n, iters);
    }
}

typedef struct {
    double med, min, max; /* microseconds */
    long iters;
} stat_t;

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median, min and max of v[0..n) (sorted in place), scaled by `scale` */
static stat_t stats(double *v, int n, double scale, long iters) {
    qsort(v, n, sizeof *v, cmpd);
    double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    stat_t s = {med * scale, v[0] * scale, v[n - 1] * scale, iters};
    return s;
}

/* calibration (x4 until a run takes >= 5 ms), then `reps` timed runs; us per call */
static stat_t bench(test_t t, long n) {
    long iters = 1;
    run_once(t, n, 4);
    for (;;) {
        double el = run_once(t, n, iters);
        if (el >= 0.005 || iters >= (1L << 30)) {
            iters = (long)((double)iters * secs / (el > 0 ? el : 1e-9));
            if (iters < 1) iters = 1;
            break;
        }
        iters *= 4;
    }
    double per = (double)iters * (t == MSGRATE ? RATE_BATCH : 1);
    double *v = malloc(sizeof *v * reps);
    for (int r = 0; r < reps; r++) v[r] = run_once(t, n, iters) / per;
    stat_t s = stats(v, reps, 1e6, iters);
    free(v);
    return s;
}

/* the CSV line and the human-readable row, on rank 0 */
static void record(const char *section, test_t t, long n, stat_t s) {
    if (rank != 0) return;
    if (csv)
        fprintf(csv, "%s,%s,%ld,%ld,%.4f,%.4f,%.4f\n", section, KEY[t], n, s.iters, s.med, s.min,
                s.max);
    printf("%-7s %-11s %8ld %10ld %11.3f %11.3f %11.3f", section, KEY[t], n, s.iters, s.med, s.min,
           s.max);
    if (!strcmp(section, "bw") || !strcmp(section, "layout"))
        printf(" %10.3f GB/s\n", 8e-3 * n / s.med);
    else if (!strcmp(section, "busy"))
        printf("   (total us for %ld calls)\n", n);
    else if (t == CONT_FOP || t == CONT_ACC)
        printf(" %10.2f Mops/s aggregate\n", 2.0 / s.med);
    else
        printf(" %10.2f Mops/s\n", 1.0 / s.med);
    fflush(stdout);
}

static void lat(test_t t) { record("lat", t, 1, bench(t, 1)); }

static void busy(test_t t) {
    double v[BUSY_RUNS];
    for (int r = 0; r < BUSY_RUNS; r++) v[r] = run_once(t, 1, BUSY_CALLS);
    record("busy", t, BUSY_CALLS, stats(v, BUSY_RUNS, 1e6, BUSY_CALLS));
}

static void bandwidth(test_t t) {
    for (long n = 1; n <= MAX_N; n *= 8) record("bw", t, n, bench(t, n));
}

static void layout(long n) {
    MPI_Type_vector((int)n, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    record("layout", CONTIG, n, bench(CONTIG, n));
    record("layout", STRIDED, n, bench(STRIDED, n));
    MPI_Type_free(&strided);
}

static void header(void) {
    char ver[MPI_MAX_LIBRARY_VERSION_STRING], host[256] = "";
    int len;
    MPI_Get_library_version(ver, &len);
    char *nl = strchr(ver, '\n');
    if (nl) *nl = 0;
    gethostname(host, sizeof host - 1);
    printf("# library: %s\n# window: %s%s, reps %d, %.3f s per rep, host %s\n", ver,
           use_create ? "MPI_Alloc_mem + MPI_Win_create" : "MPI_Win_allocate",
           use_info ? " (accumulate_ordering=none, accumulate_ops=same_op)" : "", reps, secs, host);
    printf("%-7s %-11s %8s %10s %11s %11s %11s\n", "section", "test", "N", "iters", "med_us",
           "min_us", "max_us");
}

static void parse_flags(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "r:t:qcxio:")) != -1) {
        switch (opt) {
        case 'r': reps = atoi(optarg); break;
        case 't': secs = atof(optarg); break;
        case 'q': quick = 1; break;
        case 'c': use_create = 1; break;
        case 'x': skip_cas = 1; break;
        case 'i': use_info = 1; break;
        case 'o':
            if (rank == 0 && !(csv = fopen(optarg, "w"))) {
                perror(optarg);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            break;
        default:
            if (rank == 0)
                fprintf(stderr, "usage: mpi_rma_bench [-r reps] [-t secs] [-q] [-c] [-x] [-i] [-o file]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (reps < 1) reps = 1;
    if (secs <= 0) secs = 0.04;
}

int main(int argc, char **argv) {
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "mpi_rma_bench needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    parse_flags(argc, argv);
    src = malloc(sizeof *src * MAX_N);
    res = malloc(sizeof *res * MAX_N);
    for (long i = 0; i < MAX_N; i++) {
        src[i] = 1.0;
        res[i] = 0.0;
    }
    make_window();
    double start = MPI_Wtime();
    if (rank == 0) header();

    static const test_t small[] = {FOP, CAS, ACC, GACC, PUT, GET, ACC_FENCE};
    for (size_t k = 0; k < sizeof small / sizeof *small; k++)
        if (!(small[k] == CAS && skip_cas)) lat(small[k]);
    if (!quick) {
        lat(MSGRATE);
        lat(CONT_FOP);
        lat(CONT_ACC);
        busy(BUSY_ACC);
        busy(BUSY_FOP);
        busy(BUSY_PUT);
        busy(BUSY_GET);
        bandwidth(BW_LOCKALL);
        bandwidth(BW_EXCL);
        bandwidth(BW_FENCE);
        layout(4096);
        layout(32768);
    }

    long errors = 0;
    MPI_Allreduce(&contended_errors, &errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# contended final-value check: %s (%ld wrong)\n# total %.1f s\n",
               errors ? "FAILED" : "all exact", errors, MPI_Wtime() - start);
        if (csv) {
            fprintf(csv, "check,contended_errors,%ld,0,0,0,0\n", errors);
            fclose(csv);
        }
    }
    free_window();
    free(src);
    free(res);
    MPI_Finalize();
    return errors ? 1 : 0;
}
