/* The rest of MPI 3.1 (src/mpi31.txt): a function rma refuses reports
 * MPI_ERR_UNSUPPORTED_OPERATION through the error handler of the communicator it is
 * given (MPI_COMM_WORLD's when none), MPI_File_ functions return it (the default file
 * error handler returns), and none of them succeeds silently. The handle and status
 * conversions of the language bindings work (identity; statuses copied). Exits 0
 * when every check held; prints what failed otherwise. Any number of ranks. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf(__VA_ARGS__); printf("\n"); } } while (0)

static int handled = 0, handled_code = -1;
static MPI_Comm handled_comm = MPI_COMM_NULL;

static void on_error(MPI_Comm *comm, int *code, ...) {
    handled++;
    handled_comm = *comm;
    handled_code = *code;
}

static int class_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv) {
    int rank, rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    /* through MPI_COMM_WORLD's handler: MPI_ERRORS_RETURN */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char port[MPI_MAX_PORT_NAME];
    rc = MPI_Open_port(MPI_INFO_NULL, port);
    CHECK(class_of(rc) == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Open_port: %d", rc);
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    CHECK(strstr(text, "MPI_ERR_UNSUPPORTED_OPERATION") != NULL, "error string: %s", text);
    rc = MPI_Lookup_name("service", MPI_INFO_NULL, port);
    CHECK(class_of(rc) == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Lookup_name: %d", rc);

    /* through the handler of the communicator passed: a user function on
     * MPI_COMM_SELF sees the call's communicator and the class */
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(on_error, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, eh);
    MPI_Comm inter = MPI_COMM_NULL;
    int codes[1] = {0};
    rc = MPI_Comm_spawn("./nothing", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, codes);
    CHECK(class_of(rc) == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Comm_spawn: %d", rc);
    CHECK(handled == 1 && handled_comm == MPI_COMM_SELF && class_of(handled_code) == MPI_ERR_UNSUPPORTED_OPERATION,
          "the handler of MPI_COMM_SELF: %d calls, comm %d, code %d", handled, handled_comm, handled_code);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

    /* files: the class comes back even under MPI_ERRORS_ARE_FATAL on the world */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_File fh = MPI_FILE_NULL;
    rc = MPI_File_open(MPI_COMM_WORLD, "nothing", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(rc == MPI_ERR_UNSUPPORTED_OPERATION && fh == MPI_FILE_NULL, "MPI_File_open: %d", rc);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* language bindings: handles are their own Fortran handles */
    CHECK(MPI_Comm_c2f(MPI_COMM_WORLD) == (MPI_Fint) MPI_COMM_WORLD, "MPI_Comm_c2f");
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_SELF)) == MPI_COMM_SELF, "MPI_Comm_f2c");
    CHECK(MPI_Type_f2c(MPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "MPI_Type_f2c");
    CHECK(MPI_Op_f2c(MPI_Op_c2f(MPI_SUM)) == MPI_SUM, "MPI_Op_f2c");
    CHECK(MPI_Win_f2c(MPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL, "MPI_Win_f2c");
    CHECK(MPI_Request_f2c(MPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "MPI_Request_f2c");
    CHECK(MPI_Info_f2c(MPI_Info_c2f(MPI_INFO_ENV)) == MPI_INFO_ENV, "MPI_Info_f2c");
    CHECK(MPI_Group_f2c(MPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY, "MPI_Group_f2c");
    CHECK(MPI_Errhandler_f2c(MPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN, "MPI_Errhandler_f2c");
    CHECK(MPI_Message_f2c(MPI_Message_c2f(MPI_MESSAGE_NULL)) == MPI_MESSAGE_NULL, "MPI_Message_f2c");
    CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL, "MPI_File_f2c");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int dup_rank = -1;
    MPI_Comm_rank(MPI_Comm_f2c(MPI_Comm_c2f(dup)), &dup_rank);
    CHECK(dup_rank == rank, "a duplicate through its Fortran handle: rank %d", dup_rank);
    MPI_Comm_free(&dup);

    /* statuses: C to Fortran and back, and through Fortran 2008's */
    MPI_Status s, back;
    MPI_F08_status f08;
    MPI_Fint f[MPI_F_STATUS_SIZE];
    int me = rank, got = -1;
    rc = MPI_Sendrecv(&me, 1, MPI_INT, 0, 3, &got, 1, MPI_INT, 0, 3, MPI_COMM_SELF, &s);
    CHECK(rc == MPI_SUCCESS && got == rank, "MPI_Sendrecv on MPI_COMM_SELF: %d", rc);
    CHECK(MPI_Status_c2f(&s, f) == MPI_SUCCESS && f[MPI_F_SOURCE] == 0 && f[MPI_F_TAG] == 3 && f[MPI_F_ERROR] == s.MPI_ERROR,
          "MPI_Status_c2f: %d %d %d", f[MPI_F_SOURCE], f[MPI_F_TAG], f[MPI_F_ERROR]);
    memset(&back, 0xff, sizeof back);
    CHECK(MPI_Status_f2c(f, &back) == MPI_SUCCESS && memcmp(&back, &s, sizeof s) == 0, "MPI_Status_f2c");
    memset(&back, 0xff, sizeof back);
    CHECK(MPI_Status_c2f08(&s, &f08) == MPI_SUCCESS && f08.MPI_TAG == 3 && MPI_Status_f082c(&f08, &back) == MPI_SUCCESS
          && memcmp(&back, &s, sizeof s) == 0, "MPI_Status_c2f08/f082c");
    int count = -1;
    MPI_Get_count(&back, MPI_INT, &count);
    CHECK(count == 1, "the count through Fortran: %d", count);
    rc = MPI_Status_c2f(MPI_STATUS_IGNORE, f);
    CHECK(class_of(rc) == MPI_ERR_ARG, "MPI_Status_c2f(MPI_STATUS_IGNORE): %d", rc);

    /* MPI_Aint arithmetic */
    char buf[8];
    MPI_Aint a, b;
    MPI_Get_address(&buf[0], &a);
    MPI_Get_address(&buf[5], &b);
    CHECK(MPI_Aint_diff(b, a) == 5 && MPI_Aint_add(a, 5) == b, "MPI_Aint_add/diff");

    MPI_Finalize();
    if (errs) printf("rank %d: %d checks failed\n", rank, errs);
    return errs ? 1 : 0;
}
