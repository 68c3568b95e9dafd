/* What third-party MPI programs use besides one-sided calls: the program's own
 * reduction operations (not commutative, over a derived datatype), the v-collectives,
 * scans, reduce-scatter, nonblocking collectives progressed by waits on other
 * requests, and virtual topologies. Every result is checked exactly; prints
 * "No Errors" on rank 0 when all hold. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0;
#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            errs++;                                                           \
            fprintf(stderr, "rank %d, line %d: ", rank, __LINE__);            \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n");                                            \
        }                                                                     \
    } while (0)

static int rank, size;

/* 2x2 integer matrices, row-major: inout = in x inout (MPI's order: in comes from
 * the lower ranks) */
static int misaligned = 0;
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int *a = in, *b = inout;
    (void)dt;
    /* the buffers are aligned as C objects of any type would be */
    if ((uintptr_t)in % 16 != 0 || (uintptr_t)inout % 16 != 0)
        misaligned++;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                    a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

static void mat_of(int r, int m[4]) {
    m[0] = r + 1;
    m[1] = 1;
    m[2] = 1;
    m[3] = 0;
}

/* the product of the matrices of ranks lo..hi-1, in rank order */
static void product(int lo, int hi, int out[4]) {
    int acc[4] = {1, 0, 0, 1};
    for (int r = hi - 1; r >= lo; r--) {
        int m[4];
        int one = 1;
        mat_of(r, m);
        matmul(m, acc, &one, NULL);
    }
    memcpy(out, acc, sizeof acc);
}

static void user_ops(void) {
    MPI_Datatype mat;
    MPI_Op op;
    int commute = -1, mine[4], got[4], want[4];
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Op_create(matmul, 0, &op);
    MPI_Op_commutative(op, &commute);
    CHECK(commute == 0, "MPI_Op_commutative: %d", commute);
    MPI_Op_commutative(MPI_SUM, &commute);
    CHECK(commute == 1, "MPI_SUM commutative: %d", commute);

    mat_of(rank, mine);
    product(0, size, want);
    MPI_Allreduce(mine, got, 1, mat, op, MPI_COMM_WORLD);
    CHECK(!memcmp(got, want, sizeof want), "Allreduce of matrices: %d %d %d %d", got[0],
          got[1], got[2], got[3]);

    memset(got, 0, sizeof got);
    MPI_Reduce(mine, got, 1, mat, op, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1)
        CHECK(!memcmp(got, want, sizeof want), "Reduce of matrices at the last rank");

    MPI_Scan(mine, got, 1, mat, op, MPI_COMM_WORLD);
    product(0, rank + 1, want);
    CHECK(!memcmp(got, want, sizeof want), "Scan of matrices");

    /* a nonblocking reduction with the program's operation */
    MPI_Request rq;
    memset(got, 0, sizeof got);
    MPI_Iallreduce(mine, got, 1, mat, op, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    product(0, size, want);
    CHECK(!memcmp(got, want, sizeof want), "Iallreduce of matrices");

    /* two matrices at once, as plain ints: len is 2 in the function */
    int two[8], two_got[8];
    mat_of(rank, two);
    mat_of(rank, two + 4);
    MPI_Allreduce(two, two_got, 2, mat, op, MPI_COMM_WORLD);
    CHECK(!memcmp(two_got, want, sizeof want) && !memcmp(two_got + 4, want, sizeof want),
          "Allreduce of two matrices");

    /* MPI_Reduce_local: in x inout */
    int a[4] = {1, 2, 3, 4}, b[4] = {0, 1, 1, 0};
    MPI_Reduce_local(a, b, 1, mat, op);
    CHECK(b[0] == 2 && b[1] == 1 && b[2] == 4 && b[3] == 3, "Reduce_local: %d %d %d %d",
          b[0], b[1], b[2], b[3]);

    /* one-sided calls refuse the program's operations, with MPI_ERR_OP */
    int *base;
    MPI_Win win;
    MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_fence(0, win);
    int rc = MPI_Accumulate(mine, 1, mat, 0, 0, 1, mat, op, win);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "Accumulate with a user op: class %d", cls);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);

    /* a type whose lower bound is 4 bytes: its origin still 16-aligned */
    MPI_Datatype shifted;
    MPI_Aint disp = 4;
    int blen = 4;
    MPI_Type_create_hindexed(1, &blen, &disp, MPI_INT, &shifted);
    MPI_Type_commit(&shifted);
    int sh[5] = {0, 1, 2, 0, 1}, shg[5];
    MPI_Allreduce(sh, shg, 1, shifted, op, MPI_COMM_WORLD);
    MPI_Type_free(&shifted);
    CHECK(misaligned == 0, "a user op saw %d misaligned buffers", misaligned);
    MPI_Op_free(&op);
    CHECK(op == MPI_OP_NULL, "Op_free leaves MPI_OP_NULL");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Op sum = MPI_SUM;
    rc = MPI_Op_free(&sum);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "freeing MPI_SUM: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Type_free(&mat);
}

static void v_collectives(void) {
    /* rank r contributes r+1 ints of value 100*r + i */
    int mine[64], counts[64], displs[64], all[1024], total = 0;
    for (int i = 0; i <= rank; i++)
        mine[i] = 100 * rank + i;
    for (int r = 0; r < size; r++) {
        counts[r] = r + 1;
        displs[r] = total + r; /* a gap of r ints before each part */
        total += r + 1;
    }
    int span = displs[size - 1] + counts[size - 1];
    for (int i = 0; i < span; i++)
        all[i] = -1;
    MPI_Allgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r]; i++)
            CHECK(all[displs[r] + i] == 100 * r + i, "Allgatherv part %d[%d] = %d", r, i,
                  all[displs[r] + i]);

    for (int i = 0; i < span; i++)
        all[i] = -1;
    MPI_Gatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, 1 % size,
                MPI_COMM_WORLD);
    if (rank == 1 % size)
        for (int r = 0; r < size; r++)
            CHECK(all[displs[r] + r] == 100 * r + r, "Gatherv part %d", r);

    /* the root scatters part r (r+1 ints) to rank r */
    int got[64];
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r]; i++)
            all[displs[r] + i] = 1000 * r + i;
    memset(got, 0, sizeof got);
    MPI_Scatterv(all, counts, displs, MPI_INT, got, rank + 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i <= rank; i++)
        CHECK(got[i] == 1000 * rank + i, "Scatterv got[%d] = %d", i, got[i]);

    /* alltoallv: rank r sends d+1 ints to rank d, valued 10000*r + 100*d + i */
    int sbuf[256], rbuf[256], sc[64], sd[64], rc[64], rd[64], at = 0, rat = 0;
    for (int d = 0; d < size; d++) {
        sc[d] = d + 1;
        sd[d] = at;
        for (int i = 0; i <= d; i++)
            sbuf[at++] = 10000 * rank + 100 * d + i;
        rc[d] = rank + 1;
        rd[d] = rat;
        rat += rank + 1;
    }
    MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int s = 0; s < size; s++)
        for (int i = 0; i <= rank; i++)
            CHECK(rbuf[rd[s] + i] == 10000 * s + 100 * rank + i, "Alltoallv from %d[%d] = %d",
                  s, i, rbuf[rd[s] + i]);

    /* Exscan of rank+1: the sum over lower ranks */
    int v = rank + 1, ex = -7;
    MPI_Exscan(&v, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0)
        CHECK(ex == rank * (rank + 1) / 2, "Exscan: %d", ex);

    /* reduce-scatter: element i of every rank is rank + i; block r has r+1 elements */
    int in[1024], out[64];
    for (int i = 0; i < total; i++)
        in[i] = rank + i;
    MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int first = rank * (rank + 1) / 2;
    for (int i = 0; i <= rank; i++)
        CHECK(out[i] == size * (size - 1) / 2 + size * (first + i), "Reduce_scatter[%d] = %d",
              i, out[i]);
    int blk[2];
    for (int i = 0; i < 2 * size; i++)
        in[i] = i;
    MPI_Reduce_scatter_block(in, blk, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(blk[0] == 2 * rank && blk[1] == 2 * rank + 1, "Reduce_scatter_block: %d %d",
          blk[0], blk[1]);
}

static void nonblocking(void) {
    /* rank 0 starts a barrier, then waits on a receive that rank 1 sends only once its
     * own barrier completed: rank 0's part must have gone at the call */
    MPI_Request b, r;
    MPI_Ibarrier(MPI_COMM_WORLD, &b);
    if (rank == 0) {
        int x = 0, done = 0;
        MPI_Irecv(&x, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &r);
        while (!done)
            MPI_Testall(1, &r, &done, MPI_STATUSES_IGNORE);
        CHECK(x == 42, "message after the barrier: %d", x);
    } else if (rank == 1) {
        int x = 42;
        MPI_Wait(&b, MPI_STATUS_IGNORE);
        MPI_Send(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
    }
    if (rank != 1)
        MPI_Wait(&b, MPI_STATUS_IGNORE);

    /* several at once, on two communicators, completed in reverse order */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Request q[7];
    int bc[3] = {0, 0, 0}, sum = 0, one = rank + 1, ag[64], agv[64], a2a_s[64], a2a_r[64],
        g[64], red = -1;
    int counts[64], displs[64];
    if (rank == size - 1)
        bc[0] = 7, bc[1] = 8, bc[2] = 9;
    for (int i = 0; i < size; i++) {
        a2a_s[i] = 100 * rank + i;
        counts[i] = 1;
        displs[i] = size - 1 - i; /* reversed */
    }
    MPI_Ibcast(bc, 3, MPI_INT, size - 1, dup, &q[0]);
    MPI_Iallreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[1]);
    MPI_Iallgather(&one, 1, MPI_INT, ag, 1, MPI_INT, dup, &q[2]);
    MPI_Iallgatherv(&one, 1, MPI_INT, agv, counts, displs, MPI_INT, MPI_COMM_WORLD, &q[3]);
    MPI_Ialltoall(a2a_s, 1, MPI_INT, a2a_r, 1, MPI_INT, dup, &q[4]);
    MPI_Igather(&one, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD, &q[5]);
    MPI_Ireduce(&one, &red, 1, MPI_INT, MPI_MAX, size - 1, dup, &q[6]);
    for (int i = 6; i >= 0; i--) {
        int flag = 0;
        while (!flag)
            MPI_Test(&q[i], &flag, MPI_STATUS_IGNORE);
        CHECK(q[i] == MPI_REQUEST_NULL, "request %d not reset", i);
    }
    CHECK(bc[0] == 7 && bc[1] == 8 && bc[2] == 9, "Ibcast: %d %d %d", bc[0], bc[1], bc[2]);
    CHECK(sum == size * (size + 1) / 2, "Iallreduce: %d", sum);
    for (int i = 0; i < size; i++) {
        CHECK(ag[i] == i + 1, "Iallgather[%d] = %d", i, ag[i]);
        CHECK(agv[size - 1 - i] == i + 1, "Iallgatherv[%d] = %d", i, agv[size - 1 - i]);
        CHECK(a2a_r[i] == 100 * i + rank, "Ialltoall[%d] = %d", i, a2a_r[i]);
        if (rank == 0)
            CHECK(g[i] == i + 1, "Igather[%d] = %d", i, g[i]);
    }
    if (rank == size - 1)
        CHECK(red == size, "Ireduce: %d", red);

    /* the scatters, all-to-alls and reduce-scatters, nonblocking */
    {
        int src[64], part[8], cnt[64], dsp[64], sc[64], sd[64], rc[64], rd[64];
        int sb[256], rb[256], w_sd[64], w_rd[64], blk[2], rsb[64];
        MPI_Datatype ts[64];
        MPI_Request z[6];
        for (int i = 0; i < 2 * size; i++)
            src[i] = 7 * i;
        for (int r = 0; r < size; r++) {
            cnt[r] = 1, dsp[r] = 2 * r + 1; /* every other element, odd ones */
            sc[r] = 2, sd[r] = 2 * r, rc[r] = 2, rd[r] = 2 * (size - 1 - r);
            w_sd[r] = sd[r] * (int)sizeof(int), w_rd[r] = rd[r] * (int)sizeof(int);
            ts[r] = MPI_INT;
            sb[2 * r] = 1000 * rank + 10 * r, sb[2 * r + 1] = 1000 * rank + 10 * r + 1;
        }
        for (int i = 0; i < 2 * size; i++)
            rsb[i] = rank + i;
        MPI_Iscatter(src, 2, MPI_INT, part, 2, MPI_INT, 0, MPI_COMM_WORLD, &z[0]);
        MPI_Iscatterv(src, cnt, dsp, MPI_INT, part + 2, 1, MPI_INT, size - 1, dup, &z[1]);
        MPI_Ialltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, &z[2]);
        MPI_Ialltoallw(sb, sc, w_sd, ts, rb + 64, rc, w_rd, ts, dup, &z[3]);
        MPI_Ireduce_scatter_block(rsb, blk, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &z[4]);
        int one3 = 3, got3 = -1;
        int ones[64];
        for (int r = 0; r < size; r++)
            ones[r] = 1;
        MPI_Ireduce_scatter(rsb, &got3, ones, MPI_INT, MPI_MAX, dup, &z[5]);
        (void)one3;
        MPI_Waitall(6, z, MPI_STATUSES_IGNORE);
        CHECK(part[0] == 14 * rank && part[1] == 14 * rank + 7, "Iscatter: %d %d", part[0],
              part[1]);
        CHECK(part[2] == 7 * (2 * rank + 1), "Iscatterv: %d", part[2]);
        for (int s = 0; s < size; s++) {
            int at = 2 * (size - 1 - s);
            CHECK(rb[at] == 1000 * s + 10 * rank && rb[at + 1] == 1000 * s + 10 * rank + 1,
                  "Ialltoallv from %d: %d %d", s, rb[at], rb[at + 1]);
            CHECK(rb[64 + at] == rb[at] && rb[64 + at + 1] == rb[at + 1], "Ialltoallw from %d",
                  s);
        }
        int base = size * (size - 1) / 2;
        CHECK(blk[0] == base + size * 2 * rank && blk[1] == base + size * (2 * rank + 1),
              "Ireduce_scatter_block: %d %d", blk[0], blk[1]);
        CHECK(got3 == size - 1 + rank, "Ireduce_scatter (max): %d", got3);
        /* blocking MPI_Alltoallw, with MPI_INT on one side and 2 ints as one
         * contiguous type on the other */
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        MPI_Datatype pairs[64];
        int ones2[64];
        for (int r = 0; r < size; r++)
            pairs[r] = pair, ones2[r] = 1;
        memset(rb, 0, sizeof rb);
        MPI_Alltoallw(sb, sc, w_sd, ts, rb, ones2, w_rd, pairs, MPI_COMM_WORLD);
        for (int s = 0; s < size; s++) {
            int at = 2 * (size - 1 - s);
            CHECK(rb[at] == 1000 * s + 10 * rank && rb[at + 1] == 1000 * s + 10 * rank + 1,
                  "Alltoallw from %d: %d %d", s, rb[at], rb[at + 1]);
        }
        MPI_Type_free(&pair);
    }

    /* persistent requests round the ring: started three times, handles kept */
    {
        int out = 0, in = -1, next = (rank + 1) % size, prev = (rank + size - 1) % size;
        MPI_Request p[2];
        MPI_Send_init(&out, 1, MPI_INT, next, 9, MPI_COMM_WORLD, &p[0]);
        MPI_Recv_init(&in, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &p[1]);
        MPI_Request keep0 = p[0], keep1 = p[1];
        for (int it = 0; it < 3; it++) {
            out = 100 * rank + it;
            MPI_Startall(2, p);
            MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
            CHECK(in == 100 * prev + it, "persistent receive %d: %d", it, in);
            CHECK(p[0] == keep0 && p[1] == keep1, "persistent handles reset at %d", it);
        }
        /* an inactive persistent request completes at once */
        int flag = 0;
        MPI_Test(&p[1], &flag, MPI_STATUS_IGNORE);
        CHECK(flag && p[1] == keep1, "Test of an inactive persistent request");
        MPI_Request_free(&p[0]);
        MPI_Request_free(&p[1]);
        CHECK(p[0] == MPI_REQUEST_NULL && p[1] == MPI_REQUEST_NULL, "Request_free");
    }

    /* elements, status setters, large-count extents, ready sends, send-receive in place */
    {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size, v[3] = {rank, rank, rank};
        MPI_Status s;
        MPI_Sendrecv_replace(v, 3, MPI_INT, next, 11, prev, 11, MPI_COMM_WORLD, &s);
        CHECK(v[0] == prev && v[2] == prev && s.MPI_SOURCE == prev, "Sendrecv_replace: %d", v[0]);
        int n = -1;
        MPI_Count nx = -1;
        MPI_Get_elements(&s, MPI_INT, &n);
        MPI_Get_elements_x(&s, MPI_INT, &nx);
        CHECK(n == 3 && nx == 3, "Get_elements: %d %lld", n, (long long)nx);
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        MPI_Get_elements(&s, pair, &n); /* 1.5 pairs: 3 ints */
        int cnt = -1;
        MPI_Get_count(&s, pair, &cnt);
        CHECK(n == 3 && cnt == MPI_UNDEFINED, "Get_elements of pairs: %d, count %d", n, cnt);
        MPI_Status_set_elements(&s, MPI_DOUBLE, 5);
        MPI_Get_count(&s, MPI_DOUBLE, &cnt);
        CHECK(cnt == 5, "Status_set_elements: %d", cnt);
        int flag = -1;
        MPI_Status_set_cancelled(&s, 1);
        MPI_Test_cancelled(&s, &flag);
        CHECK(flag == 1, "Test_cancelled: %d", flag);
        MPI_Count lb = -1, ext = -1;
        MPI_Datatype rs;
        MPI_Type_create_resized(MPI_INT, -4, 12, &rs);
        MPI_Type_get_extent_x(rs, &lb, &ext);
        CHECK(lb == -4 && ext == 12, "Type_get_extent_x: %lld %lld", (long long)lb, (long long)ext);
        MPI_Type_get_true_extent_x(rs, &lb, &ext);
        CHECK(lb == 0 && ext == 4, "Type_get_true_extent_x: %lld %lld", (long long)lb,
              (long long)ext);
        MPI_Type_free(&rs);
        MPI_Type_free(&pair);
        /* a ready send to a receive posted before a barrier */
        int got = -1, mine = 77 + rank;
        MPI_Request r;
        MPI_Irecv(&got, 1, MPI_INT, prev, 12, MPI_COMM_WORLD, &r);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Rsend(&mine, 1, MPI_INT, next, 12, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(got == 77 + prev, "Rsend: %d", got);
    }

    /* Testany, Waitsome, Testsome, Request_get_status; inactive persistent requests
     * and null handles take no part */
    {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        int in[3] = {-1, -1, -1}, outv[3] = {rank, rank + 10, rank + 20}, idx = -2, flag = -1;
        int dummy = 0, n = -1, ids[4];
        MPI_Request r[4];
        MPI_Recv_init(&dummy, 1, MPI_INT, prev, 99, MPI_COMM_WORLD, &r[3]); /* inactive */
        for (int k = 0; k < 3; k++)
            MPI_Irecv(&in[k], 1, MPI_INT, prev, 20 + k, MPI_COMM_WORLD, &r[k]);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 0; k < 3; k++)
            MPI_Send(&outv[k], 1, MPI_INT, next, 20 + k, MPI_COMM_WORLD);
        MPI_Request_get_status(r[0], &flag, MPI_STATUS_IGNORE);
        while (!flag)
            MPI_Request_get_status(r[0], &flag, MPI_STATUS_IGNORE);
        CHECK(r[0] != MPI_REQUEST_NULL && in[0] == prev, "Request_get_status keeps the request");
        flag = 0;
        while (!flag)
            MPI_Testany(4, r, &idx, &flag, MPI_STATUS_IGNORE);
        CHECK(idx >= 0 && idx < 3 && r[idx] == MPI_REQUEST_NULL, "Testany: index %d", idx);
        int done = 1;
        while (done < 3) {
            MPI_Waitsome(4, r, &n, ids, MPI_STATUSES_IGNORE);
            CHECK(n >= 1 && n <= 2, "Waitsome: %d", n);
            done += n;
        }
        MPI_Testsome(4, r, &n, ids, MPI_STATUSES_IGNORE);
        CHECK(n == MPI_UNDEFINED, "Testsome with nothing active: %d", n);
        MPI_Testany(4, r, &idx, &flag, MPI_STATUS_IGNORE);
        CHECK(flag == 1 && idx == MPI_UNDEFINED, "Testany with nothing active: %d %d", flag, idx);
        MPI_Waitany(4, r, &idx, MPI_STATUS_IGNORE);
        CHECK(idx == MPI_UNDEFINED, "Waitany skips an inactive persistent request: %d", idx);
        CHECK(in[0] == prev && in[1] == prev + 10 && in[2] == prev + 20, "Testany/Waitsome data");
        MPI_Request_free(&r[3]);
    }

    /* matched probes: the message taken at the probe, received by its handle */
    {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size, v = 500 + rank;
        int got[2] = {-1, -1}, flag = 0, cnt = -1;
        MPI_Message m;
        MPI_Status st;
        MPI_Request r;
        MPI_Isend(&v, 1, MPI_INT, next, 14, MPI_COMM_WORLD, &r);
        MPI_Mprobe(prev, 14, MPI_COMM_WORLD, &m, &st);
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(m != MPI_MESSAGE_NULL && st.MPI_SOURCE == prev && cnt == 1, "Mprobe");
        /* a probe no longer sees the matched message */
        MPI_Iprobe(prev, 14, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "Iprobe after Mprobe saw the message");
        MPI_Mrecv(got, 2, MPI_INT, &m, &st);
        CHECK(got[0] == 500 + prev && m == MPI_MESSAGE_NULL, "Mrecv: %d", got[0]);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Isend(&v, 1, MPI_INT, next, 15, MPI_COMM_WORLD, &r);
        flag = 0;
        while (!flag)
            MPI_Improbe(prev, 15, MPI_COMM_WORLD, &flag, &m, MPI_STATUS_IGNORE);
        MPI_Request q;
        MPI_Imrecv(&got[1], 1, MPI_INT, &m, &q);
        MPI_Wait(&q, &st);
        CHECK(got[1] == 500 + prev && st.MPI_TAG == 15, "Improbe/Imrecv: %d", got[1]);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st);
        CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "Mprobe of PROC_NULL");
        MPI_Mrecv(got, 1, MPI_INT, &m, MPI_STATUS_IGNORE);
        CHECK(m == MPI_MESSAGE_NULL, "Mrecv of MPI_MESSAGE_NO_PROC");
    }

    /* MPI_Pack / MPI_Unpack through an MPI_PACKED message */
    {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size, psz = -1, pos = 0;
        char pk[64];
        int iv[2] = {rank, -rank};
        double dv = rank + 0.5;
        MPI_Pack_size(2, MPI_INT, MPI_COMM_WORLD, &psz);
        CHECK(psz == 8, "Pack_size: %d", psz);
        MPI_Pack(iv, 2, MPI_INT, pk, sizeof pk, &pos, MPI_COMM_WORLD);
        MPI_Pack(&dv, 1, MPI_DOUBLE, pk, sizeof pk, &pos, MPI_COMM_WORLD);
        CHECK(pos == 16, "Pack position: %d", pos);
        char in[64];
        MPI_Sendrecv(pk, pos, MPI_PACKED, next, 13, in, sizeof in, MPI_PACKED, prev, 13,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int ov[2] = {0, 0}, at = 0;
        double od = 0;
        MPI_Unpack(in, sizeof in, &at, ov, 2, MPI_INT, MPI_COMM_WORLD);
        MPI_Unpack(in, sizeof in, &at, &od, 1, MPI_DOUBLE, MPI_COMM_WORLD);
        CHECK(ov[0] == prev && ov[1] == -prev && od == prev + 0.5 && at == 16,
              "Unpack: %d %d %g at %d", ov[0], ov[1], od, at);
    }

    /* a nonblocking collective's request cannot be freed */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Ibarrier(dup, &b);
    MPI_Request keep = b;
    int rc = MPI_Request_free(&b), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "Request_free of a collective: class %d", cls);
    MPI_Wait(&keep, MPI_STATUS_IGNORE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&dup);
}

static void topologies(void) {
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(12, 2, dims);
    CHECK(dims[0] == 4 && dims[1] == 3, "Dims_create(12, 2): %d %d", dims[0], dims[1]);
    dims[0] = 0, dims[1] = 2, dims[2] = 0;
    MPI_Dims_create(24, 3, dims);
    CHECK(dims[0] == 4 && dims[1] == 2 && dims[2] == 3, "Dims_create(24, {0,2,0}): %d %d %d",
          dims[0], dims[1], dims[2]);

    /* a periodic ring over every rank */
    MPI_Comm ring;
    int n = size, periodic = 1, status = -1, coords[1], r = -1, src, dst;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &periodic, 0, &ring);
    MPI_Topo_test(ring, &status);
    CHECK(status == MPI_CART, "Topo_test: %d", status);
    MPI_Cart_coords(ring, rank, 1, coords);
    CHECK(coords[0] == rank, "Cart_coords: %d", coords[0]);
    coords[0] = rank + size;
    MPI_Cart_rank(ring, coords, &r);
    CHECK(r == rank, "Cart_rank wraps: %d", r);
    MPI_Cart_shift(ring, 0, 1, &src, &dst);
    CHECK(src == (rank + size - 1) % size && dst == (rank + 1) % size, "Cart_shift: %d %d",
          src, dst);
    int nd = -1;
    MPI_Cartdim_get(ring, &nd);
    CHECK(nd == 1, "Cartdim_get: %d", nd);
    /* neighborhood collectives on the ring: neighbors [prev, next] (both the same rank,
     * or this rank itself, on 2 and 1 ranks) */
    {
        int mine = 10 * rank + 1, two[2] = {-1, -1}, send[2] = {100 * rank, 100 * rank + 1};
        int got[2] = {-1, -1}, prev = (rank + size - 1) % size, next = (rank + 1) % size;
        MPI_Neighbor_allgather(&mine, 1, MPI_INT, two, 1, MPI_INT, ring);
        CHECK(two[0] == 10 * prev + 1 && two[1] == 10 * next + 1, "Neighbor_allgather: %d %d",
              two[0], two[1]);
        /* block 0 goes back, block 1 forward; block 0 comes from back (its block 1) */
        MPI_Request q;
        MPI_Ineighbor_alltoall(send, 1, MPI_INT, got, 1, MPI_INT, ring, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(got[0] == 100 * prev + 1 && got[1] == 100 * next, "Ineighbor_alltoall: %d %d",
              got[0], got[1]);
        int cnt[2] = {1, 1}, dsp[2] = {1, 0};
        MPI_Neighbor_alltoallv(send, cnt, dsp, MPI_INT, got, cnt, dsp, MPI_INT, ring);
        CHECK(got[1] == 100 * prev && got[0] == 100 * next + 1, "Neighbor_alltoallv: %d %d",
              got[0], got[1]);
    }
    MPI_Comm_free(&ring);

    /* a 2 x (size/2) grid when size is even: rows by Cart_sub */
    if (size % 2 == 0) {
        int d2[2] = {2, size / 2}, p2[2] = {0, 0}, keep[2] = {0, 1}, c2[2], rs = -1;
        MPI_Comm grid, row;
        MPI_Cart_create(MPI_COMM_WORLD, 2, d2, p2, 1, &grid);
        MPI_Cart_coords(grid, rank, 2, c2);
        CHECK(c2[0] == rank / (size / 2) && c2[1] == rank % (size / 2), "2-D coords");
        MPI_Cart_shift(grid, 0, 1, &src, &dst);
        CHECK(c2[0] == 0 ? (src == MPI_PROC_NULL && dst == rank + size / 2)
                         : (dst == MPI_PROC_NULL && src == rank - size / 2),
              "2-D shift off the edge: %d %d", src, dst);
        /* a grid edge is MPI_PROC_NULL: its block of the receive buffer stays as it was */
        {
            int four[4] = {-7, -7, -7, -7}, me = rank, up = rank - size / 2, down = rank + size / 2;
            int l = c2[1] > 0 ? rank - 1 : -1, r = c2[1] < size / 2 - 1 ? rank + 1 : -1;
            MPI_Neighbor_allgather(&me, 1, MPI_INT, four, 1, MPI_INT, grid);
            CHECK(four[0] == (c2[0] == 1 ? up : -7) && four[1] == (c2[0] == 0 ? down : -7) &&
                      four[2] == (l >= 0 ? l : -7) && four[3] == (r >= 0 ? r : -7),
                  "Neighbor_allgather on a grid: %d %d %d %d", four[0], four[1], four[2], four[3]);
        }
        MPI_Cart_sub(grid, keep, &row);
        MPI_Comm_size(row, &rs);
        CHECK(rs == size / 2, "Cart_sub row size: %d", rs);
        MPI_Comm_free(&row);
        MPI_Comm_free(&grid);
    } else if (size > 1) {
        /* a grid smaller than the communicator: the last rank gets MPI_COMM_NULL */
        MPI_Comm part;
        int k = size - 1, no = 0;
        MPI_Cart_create(MPI_COMM_WORLD, 1, &k, &no, 0, &part);
        CHECK((rank == size - 1) == (part == MPI_COMM_NULL), "Cart_create leaves out a rank");
        if (part != MPI_COMM_NULL)
            MPI_Comm_free(&part);
    }

    /* distributed graphs: each rank's out-neighbor is the next, weighted by its rank */
    MPI_Comm gr;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, w = rank;
    int wprev = prev;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &prev, &wprev, 1, &next, &w,
                                   MPI_INFO_NULL, 0, &gr);
    int indeg = -1, outdeg = -1, weighted = -1, s[4], sw[4], d[4], dw[4];
    MPI_Dist_graph_neighbors_count(gr, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && weighted == 1, "neighbors_count: %d %d %d", indeg,
          outdeg, weighted);
    MPI_Dist_graph_neighbors(gr, 1, s, sw, 1, d, dw);
    CHECK(s[0] == prev && sw[0] == prev && d[0] == next && dw[0] == rank, "neighbors");
    {
        int v = 1000 + rank, from = -1;
        MPI_Request q;
        MPI_Ineighbor_allgather(&v, 1, MPI_INT, &from, 1, MPI_INT, gr, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        CHECK(from == 1000 + prev, "Ineighbor_allgather on a graph: %d", from);
        MPI_Aint bd = 0;
        MPI_Datatype ti = MPI_INT;
        int one_c = 1;
        from = -1;
        MPI_Neighbor_alltoallw(&v, &one_c, &bd, &ti, &from, &one_c, &bd, &ti, gr);
        CHECK(from == 1000 + prev, "Neighbor_alltoallw on a graph: %d", from);
    }
    MPI_Comm_free(&gr);
    /* the same graph given by its sources: rank r names the edge r -> next */
    int deg = 1;
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &deg, &next, MPI_UNWEIGHTED,
                          MPI_INFO_NULL, 0, &gr);
    MPI_Dist_graph_neighbors_count(gr, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 1 && weighted == 0, "Dist_graph_create counts: %d %d %d",
          indeg, outdeg, weighted);
    MPI_Dist_graph_neighbors(gr, 1, s, MPI_UNWEIGHTED, 1, d, MPI_UNWEIGHTED);
    CHECK(s[0] == prev && d[0] == next, "Dist_graph_create neighbors: %d %d", s[0], d[0]);
    MPI_Comm_free(&gr);
}

/* at MPI_THREAD_SINGLE (MPI_Init), a call from another thread is refused */
static int thread_rc = -1;
static void *other_thread(void *arg) {
    int r;
    (void)arg;
    thread_rc = MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return NULL;
}

static void thread_levels(void) {
    int provided = -1, cls = -1;
    pthread_t t;
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_SINGLE, "Query_thread after MPI_Init: %d", provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    MPI_Error_class(thread_rc, &cls);
    CHECK(cls == MPI_ERR_OTHER, "a call from another thread at SINGLE: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    user_ops();
    v_collectives();
    if (size > 1)
        nonblocking();
    topologies();
    thread_levels();
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf("No Errors\n");
    MPI_Finalize();
    return all != 0;
}
