/* A job that another local user attacks (tests/other_users.rs drives it and plays
 * the attacker). Usage: attacked <control directory>.
 *
 * The test and the job talk through files in the control directory: every rank
 * writes start.<rank> (its world and pid) before MPI_Init and waits for the file
 * `go`, so that an attacker can bind names before the job's ranks start; after
 * MPI_Init each rank writes ready.<rank> and the ranks pass messages around a ring
 * (two 64 KiB fragments each) until rank 0 sees the file `attacking`; then they pass
 * 40 more rounds while the attack goes on (or has just ended), and each rank compares
 * its open descriptors with the count before the attack.
 *
 * Exits 0 when every message arrived intact and no descriptor was added; 3 when `go`
 * never came, 4 when `attacking` never came, 5 when descriptors were added, 6 when a
 * message was wrong. MPI errors end the job (MPI_ERRORS_ARE_FATAL). */
#include <mpi.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEN (80 * 1024)

static const char *ctl;

static void path_of(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", ctl, name);
}

static int exists(const char *name) {
    char p[4096];
    path_of(p, sizeof p, name);
    return access(p, F_OK) == 0;
}

/* Writes a control file whole (a temporary name, then rename). */
static void put(const char *name, const char *text) {
    char p[4096], tmp[4200];
    path_of(p, sizeof p, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    FILE *f = fopen(tmp, "w");
    if (!f) { perror(tmp); exit(2); }
    fputs(text, f);
    fclose(f);
    if (rename(tmp, p) != 0) { perror(p); exit(2); }
}

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) { perror("/proc/self/fd"); exit(2); }
    while (readdir(d)) n++;
    closedir(d);
    return n - 3; /* ".", ".." and the directory's own descriptor */
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static unsigned char out[LEN], in[LEN];

/* One round: every rank sends LEN bytes to the next rank and checks what the
 * previous one sent; a probe for a message nobody sends on the way. */
static int ring(int rank, int size, int round) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, i, flag = 1;
    for (i = 0; i < LEN; i++) out[i] = (unsigned char)(i * 7 + round * 13 + rank);
    MPI_Sendrecv(out, LEN, MPI_BYTE, next, round % 100, in, LEN, MPI_BYTE, prev, round % 100,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (i = 0; i < LEN; i++)
        if (in[i] != (unsigned char)(i * 7 + round * 13 + prev)) {
            fprintf(stderr, "rank %d: round %d: byte %d from rank %d is wrong\n", rank, round, i, prev);
            return 0;
        }
    MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (flag) {
        fprintf(stderr, "rank %d: a message with a tag nobody sends\n", rank);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    int rank, size, before, after, round = 0, stop = 0, left = -1, ok = 1;
    char name[64], text[512];
    double t0;
    if (argc < 2 || !getenv("RMA_RANK") || !getenv("RMA_WORLD")) {
        fprintf(stderr, "usage: rmarun -n N attacked <control directory>\n");
        return 2;
    }
    ctl = argv[1];
    snprintf(name, sizeof name, "start.%s", getenv("RMA_RANK"));
    snprintf(text, sizeof text, "%s %d\n", getenv("RMA_WORLD"), (int)getpid());
    put(name, text);
    for (t0 = now(); !exists("go"); usleep(10000))
        if (now() - t0 > 60) return 3;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    before = open_fds();
    snprintf(name, sizeof name, "ready.%d", rank);
    snprintf(text, sizeof text, "%d %d\n", (int)getpid(), before);
    put(name, text);

    t0 = now();
    while (!stop) {
        ok = ok && ring(rank, size, round++);
        if (rank == 0) {
            if (left < 0 && exists("attacking")) left = 40;
            if (left >= 0 && left-- == 0) stop = 1;
            if (left < 0 && now() - t0 > 60) stop = 2;
        }
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (left < 0) usleep(2000);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    after = open_fds();
    if (after > before)
        fprintf(stderr, "rank %d: %d descriptors open before the attack, %d after it\n", rank,
                before, after);
    MPI_Finalize();
    if (stop == 2) return 4;
    if (after > before) return 5;
    return ok ? 0 : 6;
}
