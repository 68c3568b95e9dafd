/* rma's C interface: point to point, collectives, communicators, groups and
 * attributes, the parts one-sided programs and their test harnesses lean on.
 * Cases from an outside review: a flood of Isends before a barrier, receives matched
 * in posting order, intercommunicators, callbacks that call MPI. Run with 3 or 4
 * ranks. Exits 0 when every check held. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf(__VA_ARGS__); printf("\n"); } } while (0)

static int copies = 0, deletes = 0;
static int copy_fn(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag) {
    int n;
    MPI_Comm_size(old, &n); /* MPI inside a copy callback */
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}
static int delete_fn(MPI_Comm comm, int key, void *val, void *extra) {
    int n = -1;
    MPI_Comm_size(comm, &n); /* the communicator is still valid here */
    if (n > 0) deletes++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int rank, size, i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. 40 Isends before a barrier, received after it (more than a socket queues) */
    MPI_Request reqs[40];
    int vals[40];
    if (rank == 0)
        for (i = 0; i < 40; i++) { vals[i] = i; MPI_Isend(&vals[i], 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &reqs[i]); }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1)
        for (i = 0; i < 40; i++) { int v = -1; MPI_Recv(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); CHECK(v == i, "flood: message %d is %d", i, v); }
    if (rank == 0) MPI_Waitall(40, reqs, MPI_STATUSES_IGNORE);

    /* 2. receives match in the order they were posted */
    if (rank == 0) { int a = 1, b = 2; MPI_Send(&a, 1, MPI_INT, 1, 5, MPI_COMM_WORLD); MPI_Send(&b, 1, MPI_INT, 1, 6, MPI_COMM_WORLD); }
    if (rank == 1) {
        int x = 0, y = 0; MPI_Request r;
        MPI_Irecv(&x, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &r);
        MPI_Recv(&y, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(x == 1 && y == 2, "posting order: irecv got %d, recv got %d", x, y);
    }

    /* 3. bad arguments under MPI_ERRORS_RETURN: classes, no hang */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int v = 0, cls = -1, rc = MPI_Recv(&v, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "recv from no rank: class %d", cls);
    rc = MPI_Send(&v, 1, MPI_INT, 0, -4, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TAG, "negative tag: class %d", cls);
    CHECK(MPI_Error_class(MPI_ERR_TOPOLOGY, &cls) == MPI_SUCCESS && cls == MPI_ERR_TOPOLOGY, "MPI_ERR_TOPOLOGY refused");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    /* 4. collectives, in place and not */
    int sum = 0, mine = rank + 1, all[64], root_buf[64];
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size + 1) / 2, "allreduce %d", sum);
    int m = rank; MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(m == size - 1, "allreduce in place %d", m);
    for (i = 0; i < size; i++) all[i] = rank == 0 ? 10 * i : -1;
    int part = -1; MPI_Scatter(all, 1, MPI_INT, &part, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(part == 10 * rank, "scatter %d", part);
    MPI_Gather(&part, 1, MPI_INT, root_buf, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) for (i = 0; i < size; i++) CHECK(root_buf[i] == 10 * i, "gather [%d] = %d", i, root_buf[i]);
    int sendv[64], recvv[64];
    for (i = 0; i < size; i++) sendv[i] = 100 * rank + i;
    MPI_Alltoall(sendv, 1, MPI_INT, recvv, 1, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < size; i++) CHECK(recvv[i] == 100 * i + rank, "alltoall [%d] = %d", i, recvv[i]);
    char text[600]; memset(text, rank == 2 ? 'x' : 0, sizeof text);
    MPI_Bcast(text, sizeof text, MPI_CHAR, 2, MPI_COMM_WORLD);
    CHECK(text[0] == 'x' && text[599] == 'x', "bcast of 600 bytes from rank 2");

    /* 5. attributes: a copy function and a delete function that call MPI */
    int key, attr = 42;
    MPI_Comm_create_keyval(copy_fn, delete_fn, &key, NULL);
    MPI_Comm dup;
    MPI_Comm_set_attr(MPI_COMM_WORLD, key, &attr);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int *got = NULL, flag = 0;
    MPI_Comm_get_attr(dup, key, &got, &flag);
    CHECK(copies == 1 && flag && got == &attr, "dup copied the attribute: copies %d flag %d", copies, flag);
    MPI_Comm_free(&dup);
    CHECK(deletes == 1, "delete function on free: %d", deletes);
    MPI_Comm_delete_attr(MPI_COMM_WORLD, key);
    MPI_Comm_free_keyval(&key);

    /* 6. an intercommunicator: halves by parity, a message across, merged back */
    MPI_Comm halfc, inter, merged;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &halfc);
    MPI_Intercomm_create(halfc, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 77, &inter);
    int is_inter = 0, rsize = 0, hrank;
    MPI_Comm_test_inter(inter, &is_inter);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(halfc, &hrank);
    CHECK(is_inter && rsize == (rank % 2 ? size / 2 + size % 2 : size / 2), "intercomm: inter %d remote size %d", is_inter, rsize);
    if (hrank == 0) {
        int token = 1000 + rank, back = -1;
        MPI_Sendrecv(&token, 1, MPI_INT, 0, 9, &back, 1, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE);
        CHECK(back == 1000 + (rank % 2 ? 0 : 1), "intercomm message: %d", back);
    }
    MPI_Intercomm_merge(inter, rank % 2, &merged);
    int mrank;
    MPI_Comm_rank(merged, &mrank);
    CHECK(rank % 2 == 1 || mrank == rank / 2, "merge: low group first (rank %d -> %d)", rank, mrank);
    MPI_Comm_free(&merged); MPI_Comm_free(&inter); MPI_Comm_free(&halfc);

    /* 7. datatypes: contents with empty arrays given as NULL */
    MPI_Datatype vec; int ni, na, nd, comb, ints[3];
    MPI_Type_vector(2, 1, 3, MPI_INT, &vec);
    MPI_Type_get_envelope(vec, &ni, &na, &nd, &comb);
    MPI_Datatype old;
    MPI_Type_get_contents(vec, 3, 0, 1, ints, NULL, &old);
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && ints[2] == 3 && old == MPI_INT, "vector contents");
    MPI_Type_free(&vec);

    int total;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf(" No Errors\n");
    MPI_Finalize();
    return total != 0;
}
