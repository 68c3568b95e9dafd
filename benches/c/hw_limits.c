/*
 * hw_limits.c -- what two cores of this machine do with plain atomics, loads and
 * stores: the floor under the scenarios of benches/SCENARIOS.md.
 *
 * The main thread is pinned to CPU 0, a helper thread (when a test needs one) to
 * CPU 1.  All atomics are C11 <stdatomic.h>.  Each test is calibrated like the
 * RMA benchmarks (the iteration count grows x4 until a run takes >= 5 ms; these
 * runs are the warm-up), then timed `reps` times for about `secs` seconds each.
 * One CSV line per test, in the shape of the RMA benchmarks:
 *
 *     hw,test,N,iters,med_us,min_us,max_us
 *
 * with the median, minimum and maximum over the repetitions, in microseconds per
 * unit (below), and a last line check,contended_errors,<count>,0,0,0,0.
 *
 * test                   N      unit; what
 * roundtrip              1      one round trip of a cache line: CPU 0 writes a
 *                               line, CPU 1 sees it and writes it back
 * handoff                1      one fetch_add on a counter whose line the other
 *                               core wrote last (the two cores take turns): the
 *                               floor of a 1-element RMW from another process
 * fetch_add_local        1      one lock xadd on a line in the own cache
 * cas_local              1      one successful lock cmpxchg on a line in the own cache
 * cas_f64_add_local      1      one f64 add by a CAS loop on the 64-bit word holding
 *                               the f64, line in the own cache (accumulate of 1 f64)
 * fetch_add_contended    1      both cores fetch_add one word; per op per core
 *                               (elapsed / ops per core; aggregate rate = 2 / med)
 * cas_f64_add_contended  1      both cores CAS-loop f64 add on one word; per op per core
 * avx_add                bytes  one pass of b[i] += a[i] over `bytes` of f64 with an
 *                               explicit AVX loop (gcc -O2 leaves the plain loop
 *                               scalar): the streaming limit of a large accumulate;
 *                               GB/s = bytes / med_us / 1000
 * memcpy                 bytes  one memcpy of `bytes`
 * atomic_add             bytes  one pass of element-wise CAS-loop f64 adds over `bytes`
 *                               (an accumulate that is atomic per element)
 *
 * The streaming sizes are 8, 32, 256 KiB and 2 MiB, the payloads of accumulates of
 * 1024, 4096, 32768 and 262144 f64; the arrays stay warm in the cache, like the
 * target of the bandwidth scenarios.  The contended tests check the final value
 * (2 x ops per core); a wrong one counts in contended_errors and the exit status.
 *
 * Build: gcc -O2 -Wall -march=native -pthread -o hw_limits hw_limits.c
 * Usage: hw_limits [-r reps] [-t secs] [-o file.csv]     (defaults: 7 reps, 0.04 s)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __AVX__
#include <immintrin.h>
#endif

#define MAX_BYTES (2L << 20)

static int reps = 7;
static double secs = 0.04;
static FILE *csv;
static long contended_errors;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "hw_limits: cannot pin a thread to CPU %d (needs 2 CPUs)\n", cpu);
        exit(2);
    }
}

/* a counter alone on its cache line */
typedef struct {
    _Alignas(64) _Atomic long v;
} line_t;

static line_t ping, ready, go;
static _Alignas(64) _Atomic long counter;
static _Alignas(64) _Atomic uint64_t f64_word; /* the bits of an f64 */

static long load(line_t *l) { return atomic_load_explicit(&l->v, memory_order_acquire); }
static void store(line_t *l, long x) { atomic_store_explicit(&l->v, x, memory_order_release); }

static uint64_t bits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static double value(uint64_t u) {
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* *p += v for an f64 held in a 64-bit atomic word */
static inline void add_f64(_Atomic uint64_t *p, double v) {
    uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(p, &old, bits(value(old) + v),
                                                  memory_order_acq_rel, memory_order_relaxed)) {
    }
}

/* ---- tests with a partner on CPU 1: each returns seconds per unit ---- */

typedef struct {
    void *(*body)(void *); /* the partner thread */
    long n;                /* its iteration count */
} partner_t;

static void *partner_main(void *arg) {
    partner_t *p = arg;
    pin(1);
    store(&ready, 1);
    return p->body((void *)p->n);
}

/* starts the partner and waits until it runs on CPU 1 */
static pthread_t start_partner(partner_t *p) {
    pthread_t t;
    store(&ready, 0);
    store(&go, 0);
    pthread_create(&t, NULL, partner_main, p);
    while (!load(&ready)) {
    }
    return t;
}

static void *roundtrip_partner(void *arg) {
    long n = (long)arg;
    for (long i = 1; i <= n; i++) {
        while (load(&ping) != 2 * i - 1) {
        }
        store(&ping, 2 * i);
    }
    return NULL;
}

static double roundtrip(long n, long bytes) {
    (void)bytes;
    partner_t p = {roundtrip_partner, n};
    store(&ping, 0);
    pthread_t t = start_partner(&p);
    double t0 = now_s();
    for (long i = 1; i <= n; i++) {
        store(&ping, 2 * i - 1);
        while (load(&ping) != 2 * i) {
        }
    }
    double el = now_s() - t0;
    pthread_join(t, NULL);
    return el / n;
}

/* the two cores take turns: CPU 0 adds on even values, CPU 1 on odd ones */
static void *handoff_partner(void *arg) {
    long n = (long)arg;
    for (long i = 0; i < n; i++) {
        while ((atomic_load_explicit(&counter, memory_order_acquire) & 1) == 0) {
        }
        atomic_fetch_add(&counter, 1);
    }
    return NULL;
}

static double handoff(long n, long bytes) {
    (void)bytes;
    long half = (n + 1) / 2;
    partner_t p = {handoff_partner, half};
    atomic_store(&counter, 0);
    pthread_t t = start_partner(&p);
    double t0 = now_s();
    for (long i = 0; i < half; i++) {
        while (atomic_load_explicit(&counter, memory_order_acquire) & 1) {
        }
        atomic_fetch_add(&counter, 1);
    }
    while (atomic_load(&counter) != 2 * half) {
    }
    double el = now_s() - t0;
    pthread_join(t, NULL);
    return el / (2.0 * half);
}

static void hammer_fetch_add(long n) {
    for (long i = 0; i < n; i++) atomic_fetch_add(&counter, 1);
}

static void hammer_cas_f64(long n) {
    for (long i = 0; i < n; i++) add_f64(&f64_word, 1.0);
}

static void *fetch_add_partner(void *arg) {
    while (!load(&go)) {
    }
    hammer_fetch_add((long)arg);
    return NULL;
}

static void *cas_f64_partner(void *arg) {
    while (!load(&go)) {
    }
    hammer_cas_f64((long)arg);
    return NULL;
}

/* both cores do n ops on one word; seconds per op per core; checks the sum */
static double contended(int f64, long n) {
    partner_t p = {f64 ? cas_f64_partner : fetch_add_partner, n};
    atomic_store(&counter, 0);
    atomic_store(&f64_word, bits(0.0));
    pthread_t t = start_partner(&p);
    double t0 = now_s();
    store(&go, 1);
    if (f64) hammer_cas_f64(n);
    else hammer_fetch_add(n);
    pthread_join(t, NULL);
    double el = now_s() - t0;
    int right = f64 ? value(atomic_load(&f64_word)) == 2.0 * n : atomic_load(&counter) == 2 * n;
    if (!right) {
        fprintf(stderr, "hw_limits: contended %s WRONG after %ld ops per core\n",
                f64 ? "cas_f64_add" : "fetch_add", n);
        contended_errors++;
    }
    return el / n;
}

static double fetch_add_contended(long n, long bytes) {
    (void)bytes;
    return contended(0, n);
}

static double cas_f64_add_contended(long n, long bytes) {
    (void)bytes;
    return contended(1, n);
}

/* ---- one core ---- */

static double fetch_add_local(long n, long bytes) {
    (void)bytes;
    atomic_store(&counter, 0);
    double t0 = now_s();
    hammer_fetch_add(n);
    return (now_s() - t0) / n;
}

static double cas_local(long n, long bytes) {
    (void)bytes;
    long expect = 0;
    atomic_store(&counter, 0);
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        long want = expect + 1;
        atomic_compare_exchange_strong(&counter, &expect, want); /* always succeeds */
        expect = want;
    }
    return (now_s() - t0) / n;
}

static double cas_f64_add_local(long n, long bytes) {
    (void)bytes;
    atomic_store(&f64_word, bits(0.0));
    double t0 = now_s();
    hammer_cas_f64(n);
    return (now_s() - t0) / n;
}

static double *arr_a, *arr_b; /* MAX_BYTES each, warm */

__attribute__((noinline)) static void add_avx(double *b, const double *a, long n) {
    long i = 0;
#ifdef __AVX__
    for (; i + 8 <= n; i += 8) {
        __m256d x = _mm256_add_pd(_mm256_loadu_pd(b + i), _mm256_loadu_pd(a + i));
        __m256d y = _mm256_add_pd(_mm256_loadu_pd(b + i + 4), _mm256_loadu_pd(a + i + 4));
        _mm256_storeu_pd(b + i, x);
        _mm256_storeu_pd(b + i + 4, y);
    }
#endif
    for (; i < n; i++) b[i] += a[i];
}

__attribute__((noinline)) static void add_atomic(_Atomic uint64_t *b, const double *a, long n) {
    for (long i = 0; i < n; i++) add_f64(&b[i], a[i]);
}

static double avx_add(long passes, long bytes) {
    double t0 = now_s();
    for (long p = 0; p < passes; p++) {
        add_avx(arr_b, arr_a, bytes / 8);
        __asm__ volatile("" ::: "memory");
    }
    return (now_s() - t0) / passes;
}

static double copy(long passes, long bytes) {
    double t0 = now_s();
    for (long p = 0; p < passes; p++) {
        memcpy(arr_b, arr_a, bytes);
        __asm__ volatile("" ::: "memory");
    }
    return (now_s() - t0) / passes;
}

static double atomic_add(long passes, long bytes) {
    double t0 = now_s();
    for (long p = 0; p < passes; p++) add_atomic((_Atomic uint64_t *)arr_b, arr_a, bytes / 8);
    return (now_s() - t0) / passes;
}

/* ---- measurement ---- */

typedef double (*run_fn)(long iters, long bytes); /* seconds per unit */

static int cmpd(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void measure(const char *test, run_fn run, long n) {
    long iters = 1;
    run(4, n);
    for (;;) {
        double el = run(iters, n) * iters;
        if (el >= 0.005 || iters >= (1L << 34)) {
            iters = (long)(iters * secs / (el > 0 ? el : 1e-9));
            if (iters < 1) iters = 1;
            break;
        }
        iters *= 4;
    }
    double v[64];
    for (int r = 0; r < reps; r++) v[r] = run(iters, n) * 1e6;
    qsort(v, reps, sizeof *v, cmpd);
    double med = reps % 2 ? v[reps / 2] : 0.5 * (v[reps / 2 - 1] + v[reps / 2]);
    double min = v[0], max = v[reps - 1];
    if (csv) fprintf(csv, "hw,%s,%ld,%ld,%.5f,%.5f,%.5f\n", test, n, iters, med, min, max);
    printf("%-22s %8ld %11ld %11.4f %11.4f %11.4f", test, n, iters, med, min, max);
    if (run == avx_add || run == copy || run == atomic_add)
        printf(" %9.2f GB/s\n", n / med * 1e-3);
    else
        printf(" %9.3f ns\n", med * 1e3);
    fflush(stdout);
}

static void parse_flags(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "r:t:o:")) != -1) {
        switch (opt) {
        case 'r': reps = atoi(optarg); break;
        case 't': secs = atof(optarg); break;
        case 'o':
            if (!(csv = fopen(optarg, "w"))) {
                perror(optarg);
                exit(2);
            }
            break;
        default:
            fprintf(stderr, "usage: hw_limits [-r reps] [-t secs] [-o file.csv]\n");
            exit(2);
        }
    }
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    if (secs <= 0) secs = 0.04;
}

int main(int argc, char **argv) {
    parse_flags(argc, argv);
    pin(0);
    arr_a = aligned_alloc(4096, MAX_BYTES);
    arr_b = aligned_alloc(4096, MAX_BYTES);
    for (long i = 0; i < MAX_BYTES / 8; i++) {
        arr_a[i] = 1.0;
        arr_b[i] = 0.0;
    }
    double start = now_s();
#ifdef __AVX__
    const char *avx = "AVX";
#else
    const char *avx = "no AVX: avx_add is a scalar loop";
#endif
    printf("# hw_limits: CPU 0 and CPU 1, reps %d, %.3f s per rep, %s\n", reps, secs, avx);
    printf("%-22s %8s %11s %11s %11s %11s\n", "test", "N", "iters", "med_us", "min_us", "max_us");

    measure("roundtrip", roundtrip, 1);
    measure("handoff", handoff, 1);
    measure("fetch_add_local", fetch_add_local, 1);
    measure("cas_local", cas_local, 1);
    measure("cas_f64_add_local", cas_f64_add_local, 1);
    measure("fetch_add_contended", fetch_add_contended, 1);
    measure("cas_f64_add_contended", cas_f64_add_contended, 1);
    static const long sizes[] = {8L << 10, 32L << 10, 256L << 10, 2L << 20};
    for (int k = 0; k < 4; k++) measure("avx_add", avx_add, sizes[k]);
    for (int k = 0; k < 4; k++) measure("memcpy", copy, sizes[k]);
    for (int k = 0; k < 4; k++) measure("atomic_add", atomic_add, sizes[k]);

    printf("# contended final-value check: %s (%ld wrong)\n# total %.1f s\n",
           contended_errors ? "FAILED" : "all exact", contended_errors, now_s() - start);
    if (csv) {
        fprintf(csv, "check,contended_errors,%ld,0,0,0,0\n", contended_errors);
        fclose(csv);
    }
    free(arr_a);
    free(arr_b);
    return contended_errors ? 1 : 0;
}
