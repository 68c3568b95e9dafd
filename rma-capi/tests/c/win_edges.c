/* rma's C interface at a window's edges: MPI_Win_create over shared memory
 * (MPI_Alloc_mem blocks and shared windows) whose length is not a whole number of
 * 8-byte words is still made in place (the unified model: the word it ends in lies in
 * rma's own mapping), and rma's word atomics leave the program's bytes past the window
 * as they were (the edge compare-and-swaps write them back unchanged); and a
 * window's delete-attribute callbacks, run by MPI_Win_free, see the window still
 * valid (they may query it). Exits 0 when every check held; prints what failed
 * otherwise. Run with 2 or more ranks. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf(__VA_ARGS__); printf("\n"); } } while (0)

/* what the delete callback saw */
static int deleted = 0, rc_size = -1, rc_group = -1, rc_name = -1, rc_model = -1;
static MPI_Aint seen_size = -1;
static int seen_group = -1;
static char seen_name[MPI_MAX_OBJECT_NAME];

static int delete_fn(MPI_Win win, int keyval, void *value, void *extra) {
    (void) keyval;
    (void) extra;
    deleted++;
    CHECK(value == (void *) &deleted, "delete callback: attribute value %p", value);
    MPI_Aint *size;
    int flag = 0, len = 0, *model;
    rc_size = MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag);
    if (rc_size == MPI_SUCCESS && flag) seen_size = *size;
    rc_model = MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    MPI_Group g;
    rc_group = MPI_Win_get_group(win, &g);
    if (rc_group == MPI_SUCCESS) {
        MPI_Group_size(g, &seen_group);
        MPI_Group_free(&g);
    }
    rc_name = MPI_Win_get_name(win, seen_name, &len);
    return MPI_SUCCESS;
}

/* A window over `mem` (`bytes` long, ints), its model checked against `want`; then
 * every rank adds 1 into int 2 of its right neighbour's window under fences, and the
 * int past the window (int 3, the program's own) keeps `guard`. */
static void partial(const char *what, int *mem, int rank, int size, int want) {
    MPI_Win win;
    int flag, *model, one = 1, right = (rank + 1) % size;
    mem[0] = mem[1] = mem[2] = 0;
    mem[3] = 0x5a5a5a5a;
    MPI_Win_create(mem, 3 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == want, "%s: model %d, want %d", what, flag ? *model : -1, want);
    MPI_Win_fence(0, win);
    MPI_Accumulate(&one, 1, MPI_INT, right, 2, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    CHECK(mem[2] == 1 && mem[3] == 0x5a5a5a5a, "%s: %d %#x", what, mem[2], mem[3]);
    MPI_Win_free(&win);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. 12 bytes at the start of an MPI_Alloc_mem block of 16: a copy */
    int *block;
    MPI_Alloc_mem(4 * sizeof(int), MPI_INFO_NULL, &block);
    partial("12 bytes of an MPI_Alloc_mem block", block, rank, size, MPI_WIN_UNIFIED);

    /* 2. 12 bytes of a shared window's part of 16: a copy too */
    int *part;
    MPI_Win shm;
    MPI_Win_allocate_shared(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &part,
                            &shm);
    partial("12 bytes of a shared window", part, rank, size, MPI_WIN_UNIFIED);
    MPI_Win_free(&shm);

    /* 3. whole words of the block: made over the block itself (unified), as before */
    MPI_Win win;
    int flag, *model;
    MPI_Win_create(block, 4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
    CHECK(flag && *model == MPI_WIN_UNIFIED, "16 bytes of a block: model %d",
          flag ? *model : -1);
    MPI_Win_free(&win);
    MPI_Free_mem(block);

    /* 4. a delete callback that queries the window being freed: the window is valid
     * (an error would go to MPI_ERRORS_RETURN and be seen here, not end the job) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    static long mem4[4];
    int keyval;
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, delete_fn, &keyval, NULL);
    MPI_Win_create(mem4, sizeof mem4, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_set_name(win, "edges");
    MPI_Win_set_attr(win, keyval, &deleted);
    MPI_Win saved = win;
    int rc = MPI_Win_free(&win);
    CHECK(rc == MPI_SUCCESS && win == MPI_WIN_NULL, "MPI_Win_free: rc %d", rc);
    CHECK(deleted == 1, "the delete callback ran %d times", deleted);
    CHECK(rc_size == MPI_SUCCESS && seen_size == (MPI_Aint) sizeof mem4,
          "delete callback: MPI_Win_get_attr(MPI_WIN_SIZE) rc %d size %ld", rc_size,
          (long) seen_size);
    CHECK(rc_model == MPI_SUCCESS, "delete callback: MPI_Win_get_attr(MPI_WIN_MODEL) rc %d",
          rc_model);
    CHECK(rc_group == MPI_SUCCESS && seen_group == size,
          "delete callback: MPI_Win_get_group rc %d size %d", rc_group, seen_group);
    CHECK(rc_name == MPI_SUCCESS && !strcmp(seen_name, "edges"),
          "delete callback: MPI_Win_get_name rc %d name %s", rc_name, seen_name);
    /* the window is gone once MPI_Win_free returned (its error goes to
     * MPI_COMM_WORLD's handler, MPI_ERRORS_RETURN here) */
    MPI_Aint *size5;
    int cls5 = -1, rc5 = MPI_Win_get_attr(saved, MPI_WIN_SIZE, &size5, &flag);
    if (rc5 != MPI_SUCCESS) MPI_Error_class(rc5, &cls5);
    CHECK(cls5 == MPI_ERR_WIN, "the freed window's handle: rc %d class %d", rc5, cls5);
    MPI_Win_free_keyval(&keyval);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    int total;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf(" No Errors\n");
    MPI_Finalize();
    return total != 0;
}
