/* The MPI profiling interface, as a tool uses it: this program defines its own
 * MPI_Send, MPI_Win_fence, MPI_Put, MPI_Wtime, MPI_Pcontrol and
 * MPI_Type_create_hvector, each counting its calls and passing on to rma's function
 * under its PMPI_ name. The program's calls reach its wrappers and, through them,
 * rma (a PMPI_ name that came back to the wrapper would recurse until the stack
 * ran out); rma's own calls inside the library never reach a wrapper
 * (MPI_Type_hvector, which rma implements with MPI_Type_create_hvector, leaves that
 * count alone). Also: PMPI_ names of functions returning MPI_Aint and handles, and
 * of a refused function. Exits 0 when every check held; prints what failed
 * otherwise. Run with 2 or more ranks. */
#include <mpi.h>
#include <stdio.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf(__VA_ARGS__); printf("\n"); } } while (0)

static int sends = 0, fences = 0, nputs = 0, wtimes = 0, hvectors = 0, pcontrols = 0;
static int last_level = -1;

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
    sends++;
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Win_fence(int assert, MPI_Win win) {
    fences++;
    return PMPI_Win_fence(assert, win);
}

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
    nputs++;
    return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                    target_count, target_datatype, win);
}

double MPI_Wtime(void) {
    wtimes++;
    return PMPI_Wtime();
}

int MPI_Pcontrol(const int level, ...) {
    pcontrols++;
    last_level = level;
    return PMPI_Pcontrol(level);
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                            MPI_Datatype *newtype) {
    hvectors++;
    return PMPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype);
}

int main(int argc, char **argv) {
    int rank, size, i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* one-sided: every rank nputs its rank into its right neighbour's window */
    int *base;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    *base = -1;
    MPI_Win_fence(0, win);
    MPI_Put(&rank, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    CHECK(*base == (rank + size - 1) % size, "put: %d", *base);
    MPI_Win_free(&win);
    CHECK(fences == 2 && nputs == 1, "fences %d, nputs %d", fences, nputs);

    /* point to point: rank 0 sends three messages to rank 1 */
    int got = 0;
    if (rank == 0) {
        for (i = 0; i < 3; i++) MPI_Send(&i, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
        CHECK(sends == 3, "sends %d", sends);
    } else if (rank == 1) {
        for (i = 0; i < 3; i++) {
            MPI_Recv(&got, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(got == i, "message %d: %d", i, got);
        }
        CHECK(sends == 0, "sends %d on a rank that sent nothing", sends);
    }

    /* rma's own call inside the library is not the program's */
    MPI_Datatype t;
    MPI_Type_hvector(2, 1, 16, MPI_INT, &t);
    MPI_Type_free(&t);
    CHECK(hvectors == 0, "MPI_Type_hvector reached the program's MPI_Type_create_hvector (%d)", hvectors);
    MPI_Type_create_hvector(2, 1, 16, MPI_INT, &t);
    MPI_Type_free(&t);
    CHECK(hvectors == 1, "hvectors %d", hvectors);

    /* other results than int */
    double t0 = MPI_Wtime(), t1 = PMPI_Wtime();
    CHECK(wtimes == 1 && t1 >= t0, "wtimes %d, %f then %f", wtimes, t0, t1);
    CHECK(PMPI_Wtick() > 0.0, "PMPI_Wtick");
    CHECK(PMPI_Aint_add(100, 28) == 128 && PMPI_Aint_diff(100, 28) == 72, "PMPI_Aint_add/diff");
    CHECK(PMPI_Comm_f2c(PMPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD, "PMPI_Comm_c2f/f2c");
    CHECK(MPI_Pcontrol(2, "ignored") == MPI_SUCCESS && pcontrols == 1 && last_level == 2,
          "MPI_Pcontrol: %d calls, level %d", pcontrols, last_level);

    /* a refused function under its PMPI_ name reports through the handler too */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char port[MPI_MAX_PORT_NAME];
    int rc = PMPI_Open_port(MPI_INFO_NULL, port), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "PMPI_Open_port: %d", rc);

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    if (errs) printf("rank %d: %d checks failed\n", rank, errs);
    return errs ? 1 : 0;
}
