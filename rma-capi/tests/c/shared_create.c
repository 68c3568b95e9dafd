/* rma's C interface: MPI_Win_create over memory of a shared window (the unified model
 * through the shared memory itself), long double arithmetic, and freeing the shared
 * window first, memory of mixed kinds, lengths that are not whole words, and gets into
 * window memory. Exits 0 when every check held; prints what failed otherwise. Run with
 * 3 or more ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf(__VA_ARGS__); printf("\n"); } } while (0)

typedef struct {
    long double v;
    int i;
} ldi;

int main(int argc, char **argv) {
    int rank, size, flag, *model;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, far = (rank + 2) % size;

    /* 1. a created window over this rank's part of a shared window */
    long *base;
    MPI_Win shm, win;
    MPI_Win_allocate_shared(8 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
                            &base, &shm);
    for (int k = 0; k < 8; k++) base[k] = 0;
    MPI_Win_create(base, 8 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == MPI_WIN_UNIFIED, "create over shared memory: model %d",
          flag ? *model : -1);
    MPI_Barrier(MPI_COMM_WORLD);

    /* puts and accumulates through the created window land in the shared memory: a
     * third rank loads them after the origins' flush, the target calling nothing */
    MPI_Win_lock_all(0, win);
    MPI_Win_lock_all(0, shm);
    long v = 100 + rank, one = 1;
    MPI_Put(&v, 1, MPI_LONG, right, 0, 1, MPI_LONG, win);
    MPI_Accumulate(&one, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(shm);
    MPI_Aint sz;
    int du;
    long *theirs;
    MPI_Win_shared_query(shm, far, &sz, &du, &theirs);
    CHECK(theirs[0] == 100 + (far + size - 1) % size, "load of rank %d: %ld", far, theirs[0]);
    long *zero;
    MPI_Win_shared_query(shm, 0, &sz, &du, &zero);
    CHECK(zero[1] == size, "accumulates seen through the shared window: %ld", zero[1]);
    MPI_Win_unlock_all(shm);
    MPI_Win_unlock_all(win);

    /* 2. long double through a created window over shared memory: sums of 2^-60,
     * which a double cannot hold next to 1 */
    long double *lbase;
    MPI_Win lshm, lwin;
    MPI_Win_allocate_shared(4 * sizeof(long double), sizeof(long double), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &lbase, &lshm);
    lbase[0] = 1.0L;
    lbase[1] = 0.0L;
    ldi *pairs = (ldi *) &lbase[2];
    pairs->v = -1.0L;
    pairs->i = -1;
    MPI_Win_create(lbase, 4 * sizeof(long double), sizeof(long double), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &lwin);
    MPI_Barrier(MPI_COMM_WORLD);
    long double tiny = 1.0L / (long double) (1ULL << 60), old;
    MPI_Win_lock_all(0, lwin);
    MPI_Fetch_and_op(&tiny, &old, MPI_LONG_DOUBLE, 0, 0, MPI_SUM, lwin);
    ldi mine = {(long double) (rank % 2), rank};
    MPI_Accumulate(&mine, 1, MPI_LONG_DOUBLE_INT, right, 2, 1, MPI_LONG_DOUBLE_INT,
                   MPI_MAXLOC, lwin);
    MPI_Win_unlock_all(lwin);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, lwin);
    long double got;
    MPI_Get(&got, 1, MPI_LONG_DOUBLE, 0, 0, 1, MPI_LONG_DOUBLE, lwin);
    MPI_Win_unlock_all(lwin);
    CHECK(got == 1.0L + size * tiny, "long double sum: 1 + %Lg, want 1 + %Lg", got - 1.0L,
          size * tiny);
    int left = (rank + size - 1) % size;
    CHECK(pairs->v == (long double) (left % 2) && pairs->i == left,
          "MAXLOC on long double int: (%Lg, %d), want (%d, %d)", pairs->v, pairs->i, left % 2,
          left);

    /* 3. the shared windows freed first: the created windows still work */
    MPI_Win_free(&shm);
    MPI_Win_free(&lshm);
    MPI_Win_lock_all(0, win);
    long w = 7 + rank, back = -1;
    MPI_Put(&w, 1, MPI_LONG, right, 2, 1, MPI_LONG, win);
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Get(&back, 1, MPI_LONG, right, 2, 1, MPI_LONG, win);
    MPI_Win_flush_all(win);
    MPI_Win_unlock_all(win);
    CHECK(back == 7 + rank, "put and get after the shared window's free: %ld", back);
    MPI_Win_free(&lwin);
    MPI_Win_free(&win);

    /* 4. one rank's memory not 8-byte aligned: every rank falls back to a copy of it
     * (the separate model), reconciled at synchronizations */
    static long raw[5];
    int *odd = (int *) ((char *) raw + 4), *shared_part, ione = 1;
    MPI_Win_allocate_shared(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                            &shared_part, &shm);
    for (int k = 0; k < 4; k++) shared_part[k] = odd[k] = 0;
    MPI_Win_create(rank == 1 ? odd : shared_part, 4 * sizeof(int), sizeof(int),
                   MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == MPI_WIN_SEPARATE, "unaligned memory: model %d",
          flag ? *model : -1);
    MPI_Win_fence(0, win);
    MPI_Accumulate(&ione, 1, MPI_INT, 1, 3, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    if (rank == 1) CHECK(odd[3] == size, "unaligned memory: odd[3] = %d", odd[3]);
    MPI_Win_free(&win);
    MPI_Win_free(&shm);

    /* 5. MPI_Alloc_mem's memory is shared too: a window created over it is unified */
    long *am;
    MPI_Alloc_mem(4 * sizeof(long), MPI_INFO_NULL, &am);
    for (int k = 0; k < 4; k++) am[k] = 0;
    MPI_Win_create(am, 4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == MPI_WIN_UNIFIED, "create over MPI_Alloc_mem: model %d",
          flag ? *model : -1);
    MPI_Win_lock_all(0, win);
    MPI_Accumulate(&one, 1, MPI_LONG, 0, 3, 1, MPI_LONG, MPI_SUM, win);
    MPI_Put(&v, 1, MPI_LONG, right, 0, 1, MPI_LONG, win);
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    /* the target reads its own memory without a call: the unified model after a
     * barrier that follows the origins' flush (MPI_Win_sync orders the loads) */
    MPI_Win_sync(win);
    CHECK(am[0] == 100 + (rank + size - 1) % size, "Alloc_mem put seen: %ld", am[0]);
    if (rank == 0) CHECK(am[3] == size, "Alloc_mem accumulates seen: %ld", am[3]);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc5 = MPI_Free_mem(am + 1), cls5 = -1;
    if (rc5 != MPI_SUCCESS) MPI_Error_class(rc5, &cls5);
    CHECK(cls5 == MPI_ERR_BASE, "MPI_Free_mem inside a block: %d", rc5);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Free_mem(am);

    /* 6. ranks' memory of three kinds (rank 0: a shared window's part, rank 1: the
     * heap, the others: MPI_Alloc_mem), every rank's 8-aligned and whole words: the
     * window is made in place; the shared window and the blocks freed first stay
     * mapped until the window goes */
    long *part, *heap = NULL, *blk = NULL, *mem6;
    MPI_Win_allocate_shared(4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
                            &part, &shm);
    if (rank == 0) {
        mem6 = part;
    } else if (rank == 1) {
        if (posix_memalign((void **) &heap, 8, 4 * sizeof(long))) MPI_Abort(MPI_COMM_WORLD, 1);
        mem6 = heap;
    } else {
        MPI_Alloc_mem(4 * sizeof(long), MPI_INFO_NULL, &blk);
        mem6 = blk;
    }
    for (int k = 0; k < 4; k++) mem6[k] = 0;
    MPI_Win_create(mem6, 4 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == MPI_WIN_UNIFIED, "mixed memory: model %d", flag ? *model : -1);
    MPI_Win_free(&shm);
    if (blk) MPI_Free_mem(blk);
    MPI_Win_lock_all(0, win);
    for (int t = 0; t < size; t++)
        MPI_Accumulate(&one, 1, MPI_LONG, t, 1, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    long sum6 = -1;
    MPI_Get(&sum6, 1, MPI_LONG, right, 1, 1, MPI_LONG, win);
    MPI_Win_flush_all(win);
    MPI_Win_unlock_all(win);
    CHECK(sum6 == size, "accumulates after the shared window and blocks were freed: %ld",
          sum6);
    MPI_Win_free(&win);
    free(heap);

    /* 7. a length that is not whole words: a copy (the separate model), so rma's word
     * atomics never touch the bytes past the program's object */
    static long words[2];
    int *three = (int *) words;
    for (int k = 0; k < 4; k++) three[k] = 0;
    MPI_Win_create(three, 3 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == MPI_WIN_SEPARATE, "12-byte window: model %d", flag ? *model : -1);
    MPI_Win_fence(0, win);
    MPI_Accumulate(&ione, 1, MPI_INT, right, 2, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    CHECK(three[2] == 1 && three[3] == 0, "12-byte window: %d %d", three[2], three[3]);
    MPI_Win_free(&win);

    /* 8. a get into memory of a window other ranks update meanwhile: the result lands
     * whole, and the neighbouring words others add to keep every addition */
    long *slots;
    MPI_Win_allocate(8 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &slots,
                     &win);
    for (int k = 0; k < 8; k++) slots[k] = rank == 0 ? 1000 + k : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int it = 0; it < 200; it++) {
        for (int t = 0; t < size; t++)
            MPI_Accumulate(&one, 1, MPI_LONG, t, 6, 1, MPI_LONG, MPI_SUM, win);
        MPI_Get(&slots[5], 1, MPI_LONG, 0, 2, 1, MPI_LONG, win);
        MPI_Fetch_and_op(&one, &slots[7], MPI_LONG, 0, 4, MPI_SUM, win);
        MPI_Win_flush_all(win);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    CHECK(slots[5] == 1002, "get into window memory: %ld", slots[5]);
    CHECK(slots[6] == 200L * size + (rank == 0 ? 1006 : 0),
          "additions beside a get into window memory: %ld", slots[6]);
    CHECK(slots[7] >= 1004 && slots[7] < 1004 + 200L * size,
          "fetch_and_op into window memory: %ld", slots[7]);
    if (rank == 0) CHECK(slots[4] == 1004 + 200L * size, "fetch_and_op sum: %ld", slots[4]);
    MPI_Win_free(&win);

    /* 9. info asking for the atomic transport: the window is made (as a copy), not
     * refused */
    MPI_Info atomic;
    MPI_Info_create(&atomic);
    MPI_Info_set(atomic, "rma_transport", "atomic");
    static long aligned4[4];
    int rc9 = MPI_Win_create(aligned4, sizeof aligned4, sizeof(long), atomic, MPI_COMM_WORLD,
                             &win);
    CHECK(rc9 == MPI_SUCCESS, "create with rma_transport=atomic: error %d", rc9);
    if (rc9 == MPI_SUCCESS) {
        MPI_Win_fence(0, win);
        MPI_Accumulate(&one, 1, MPI_LONG, right, 0, 1, MPI_LONG, MPI_SUM, win);
        MPI_Win_fence(0, win);
        CHECK(aligned4[0] == 1, "rma_transport=atomic window: %ld", aligned4[0]);
        MPI_Win_free(&win);
    }
    MPI_Info_free(&atomic);

    /* 10. one rank's arguments refused (a negative size): every rank returns the
     * error, none waits for the others in the creation, and the next window works */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static long ten[2];
    int rc10 = MPI_Win_create(ten, rank == 1 ? -8 : (MPI_Aint) sizeof ten, sizeof(long),
                              MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    int cls = -1;
    if (rc10 != MPI_SUCCESS) MPI_Error_class(rc10, &cls);
    CHECK(cls == MPI_ERR_SIZE, "one rank's negative size: rc %d class %d", rc10, cls);
    int rc10b = MPI_Win_allocate(rank == 2 ? -1 : 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD,
                                 &slots, &win);
    CHECK(rc10b != MPI_SUCCESS, "one rank's negative allocation size: rc %d", rc10b);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Win_create(ten, sizeof ten, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Accumulate(&one, 1, MPI_LONG, right, 1, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_fence(0, win);
    CHECK(ten[1] == 1, "the window after the refused ones: %ld", ten[1]);
    MPI_Win_free(&win);

    int total;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf(" No Errors\n");
    MPI_Finalize();
    return total != 0;
}
