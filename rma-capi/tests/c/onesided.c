/* rma's C interface: one program through every kind of window and synchronization.
 * Exits 0 when every check held; prints what failed otherwise. Run with 3 or more
 * ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(int argc, char **argv) {
    int rank, size, i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. MPI_Win_create over the program's memory: fence, accumulate, the separate model */
    int buf[8] __attribute__((aligned(8))) = {0}, one = 1;
    MPI_Win win;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    int *model, flag;
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    /* the program's own memory, 8-byte aligned: updated in place (unified) */
    CHECK(flag && *model == MPI_WIN_UNIFIED, "create: model %d", flag ? *model : -1);
    buf[7] = 100 + rank; /* a local store, exposed by the next fence */
    MPI_Win_fence(0, win);
    MPI_Accumulate(&one, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, win);
    int got = -1;
    MPI_Get(&got, 1, MPI_INT, (rank + 1) % size, 7, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    if (rank == 0) CHECK(buf[1] == size, "accumulate: buf[1] = %d, want %d", buf[1], size);
    CHECK(got == 100 + (rank + 1) % size, "get after fence: %d", got);

    /* 2. passive target: lock, put, unlock; the target sees it after a barrier */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, (rank + 1) % size, 0, win);
    int v = 1000 + rank;
    MPI_Put(&v, 1, MPI_INT, (rank + 1) % size, 2, 1, MPI_INT, win);
    MPI_Win_unlock((rank + 1) % size, win);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(buf[2] == 1000 + (rank + size - 1) % size, "lock/put: buf[2] = %d", buf[2]);

    /* 3. errors: MPI_ERRORS_RETURN gives the class, and the window is unchanged */
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(0, win);
    int rc = MPI_Put(&v, 1, MPI_INT, size + 5, 0, 1, MPI_INT, win), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "bad rank: class %d", cls);
    rc = MPI_Put(&v, 1, MPI_INT, 0, 8, 1, MPI_INT, win);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_RANGE, "past the end: class %d", cls);
    rc = MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_MAXLOC, win);
    CHECK(rc != MPI_SUCCESS, "MAXLOC on int accepted");
    MPI_Win_unlock_all(win);
    rc = MPI_Win_unlock(0, win);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC, "unlock without lock: class %d", cls);
    MPI_Win_free(&win);
    CHECK(win == MPI_WIN_NULL, "free resets the handle");

    /* 4. MPI_Win_allocate: fetch_and_op tickets, compare_and_swap, a derived type */
    long *base;
    MPI_Win_allocate(16 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (i = 0; i < 16; i++) base[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    long inc = 1, ticket = -1, old = -1, me = rank, none = 0;
    MPI_Fetch_and_op(&inc, &ticket, MPI_LONG, 0, 0, MPI_SUM, win);
    MPI_Compare_and_swap(&me, &none, &old, MPI_LONG, 0, 1, win);
    MPI_Win_flush_all(win);
    MPI_Win_unlock_all(win);
    long tickets[64], olds[64];
    MPI_Allgather(&ticket, 1, MPI_LONG, tickets, 1, MPI_LONG, MPI_COMM_WORLD);
    MPI_Allgather(&old, 1, MPI_LONG, olds, 1, MPI_LONG, MPI_COMM_WORLD);
    long sum = 0; int winners = 0;
    for (i = 0; i < size; i++) { sum += tickets[i]; winners += olds[i] == 0; }
    CHECK(sum == (long)size * (size - 1) / 2, "tickets sum %ld", sum);
    CHECK(winners >= 1, "compare_and_swap: %d ranks saw 0", winners);
    MPI_Datatype every_other;
    MPI_Type_vector(4, 1, 2, MPI_LONG, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Win_fence(0, win);
    long src[4] = {1, 2, 3, 4};
    if (rank == 1) MPI_Put(src, 4, MPI_LONG, 0, 8, 1, every_other, win);
    MPI_Win_fence(0, win);
    if (rank == 0)
        CHECK(base[8] == 1 && base[9] == 0 && base[10] == 2 && base[14] == 4, "vector put: %ld %ld %ld %ld", base[8], base[9], base[10], base[14]);
    MPI_Type_free(&every_other);
    MPI_Win_free(&win);

    /* 5. PSCW between neighbours, on a split communicator */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    int cell = 0;
    MPI_Win_create(&cell, sizeof cell, sizeof cell, MPI_INFO_NULL, half, &win);
    if (hsize > 1) {
        MPI_Group hg, to, from;
        MPI_Comm_group(half, &hg);
        int next = (hrank + 1) % hsize, prev = (hrank + hsize - 1) % hsize;
        MPI_Group_incl(hg, 1, &next, &to);
        MPI_Group_incl(hg, 1, &prev, &from);
        MPI_Win_post(from, 0, win);
        MPI_Win_start(to, 0, win);
        int val = 7 + hrank;
        MPI_Put(&val, 1, MPI_INT, next, 0, 1, MPI_INT, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        CHECK(cell == 7 + prev, "PSCW: cell %d, want %d", cell, 7 + prev);
        MPI_Group_free(&hg); MPI_Group_free(&to); MPI_Group_free(&from);
    }
    MPI_Win_free(&win);
    MPI_Comm_free(&half);

    /* 6. a dynamic window: attach, publish the address, put by address */
    int *mem = malloc(4 * sizeof(int));
    memset(mem, 0, 4 * sizeof(int));
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_attach(win, mem, 4 * sizeof(int));
    MPI_Aint addr, addrs[64];
    MPI_Get_address(mem + 1, &addr);
    MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    MPI_Accumulate(&one, 1, MPI_INT, 0, addrs[0], 1, MPI_INT, MPI_SUM, win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) CHECK(mem[1] == size, "dynamic: mem[1] = %d", mem[1]);
    MPI_Win_detach(win, mem);
    MPI_Win_free(&win);
    free(mem);

    /* 7. point to point: a message longer than one datagram, any source */
    int n = 100000, *big = malloc(n * sizeof(int));
    if (rank == 1) { for (i = 0; i < n; i++) big[i] = i; MPI_Send(big, n, MPI_INT, 0, 5, MPI_COMM_WORLD); }
    if (rank == 0) {
        MPI_Status st;
        int cnt;
        MPI_Recv(big, n, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(st.MPI_SOURCE == 1 && cnt == n && big[n - 1] == n - 1, "recv: source %d count %d", st.MPI_SOURCE, cnt);
    }
    free(big);

    int total;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf(" No Errors\n");
    MPI_Finalize();
    return total != 0;
}
