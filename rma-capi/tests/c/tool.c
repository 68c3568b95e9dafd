/* The MPI_T tool information interface: control variables that are rma's settings.
 * MPI_T is initialized before MPI_Init, twice (reference-counted), and again after
 * MPI_Finalize. Every variable's description is read (lengths asked first); the
 * values read are the ones the launch set (the test runs this with RMA_STALL_MS=7000
 * and RMA_TRANSPORT=atomic); a constant variable refuses writes; RMA_TRANSPORT
 * written between window creations is the transport of the next window (its info's
 * rma_transport), as is RMA_CHECK's checker; bad values and handles are refused with
 * MPI_T's codes, which never go through an error handler. Exits 0 when every check
 * held; prints what failed otherwise. Any number of ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf(__VA_ARGS__); printf("\n"); } } while (0)

static int index_of(const char *name) {
    int i = -1, rc = MPI_T_cvar_get_index(name, &i);
    CHECK(rc == MPI_SUCCESS && i >= 0, "MPI_T_cvar_get_index(%s): %d", name, rc);
    return i;
}

/* reads string variable `name` into `out` (64 bytes) */
static void read_string(const char *name, char *out) {
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    int count = 0, rc = MPI_T_cvar_handle_alloc(index_of(name), NULL, &h, &count);
    CHECK(rc == MPI_SUCCESS && count == 64, "handle of %s: %d, count %d", name, rc, count);
    out[0] = 0;
    rc = MPI_T_cvar_read(h, out);
    CHECK(rc == MPI_SUCCESS, "reading %s: %d", name, rc);
    MPI_T_cvar_handle_free(&h);
}

static int write_string(const char *name, const char *value) {
    MPI_T_cvar_handle h;
    int count, rc = MPI_T_cvar_handle_alloc(index_of(name), NULL, &h, &count);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_T_cvar_write(h, value);
    MPI_T_cvar_handle_free(&h);
    return rc;
}

static unsigned long long read_number(const char *name) {
    MPI_T_cvar_handle h;
    int count = 0;
    unsigned long long v = 0;
    MPI_T_cvar_handle_alloc(index_of(name), NULL, &h, &count);
    CHECK(count == 1, "%s: count %d", name, count);
    CHECK(MPI_T_cvar_read(h, &v) == MPI_SUCCESS, "reading %s", name);
    /* read-only: never writable */
    int rc = MPI_T_cvar_write(h, &v);
    CHECK(rc == MPI_T_ERR_CVAR_SET_NEVER, "writing %s: %d", name, rc);
    MPI_T_cvar_handle_free(&h);
    return v;
}

/* the transport of a new window on MPI_COMM_WORLD (its info), and its checker */
static void new_window(char *transport, char *check) {
    MPI_Win win;
    MPI_Info info;
    int *base, flag = 0;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_get_info(win, &info);
    transport[0] = check[0] = 0;
    MPI_Info_get(info, "rma_transport", 63, transport, &flag);
    CHECK(flag, "no rma_transport in the window's info");
    MPI_Info_get(info, "rma_check", 63, check, &flag);
    if (!flag) strcpy(check, "off");
    MPI_Info_free(&info);
    MPI_Win_free(&win);
}

int main(int argc, char **argv) {
    int provided = -1, n = -1, rc, i;
    char s[64], t[64], c[64];

    /* before MPI_Init: not initialized, then twice */
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "MPI_T_cvar_get_num before MPI_T_init_thread");
    CHECK(MPI_T_finalize() == MPI_T_ERR_NOT_INITIALIZED, "MPI_T_finalize before MPI_T_init_thread");
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS && provided == MPI_THREAD_SINGLE,
          "MPI_T_init_thread: provided %d", provided);
    CHECK(MPI_T_init_thread(MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS, "MPI_T_init_thread again");

    CHECK(MPI_T_cvar_get_num(&n) == MPI_SUCCESS && n >= 5, "MPI_T_cvar_get_num: %d", n);
    for (i = 0; i < n; i++) {
        char name[64], desc[512];
        int name_len = 0, desc_len = 0, verbosity, datatype, bind, scope;
        MPI_T_enum e;
        /* lengths first */
        rc = MPI_T_cvar_get_info(i, NULL, &name_len, NULL, NULL, NULL, NULL, &desc_len, NULL, NULL);
        CHECK(rc == MPI_SUCCESS && name_len > 1 && desc_len > 1, "cvar %d: lengths %d %d", i, name_len, desc_len);
        int want_name = name_len;
        name_len = sizeof name;
        desc_len = sizeof desc;
        rc = MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &datatype, &e, desc, &desc_len, &bind, &scope);
        CHECK(rc == MPI_SUCCESS && name_len == want_name && (int) strlen(name) + 1 == name_len,
              "cvar %d: %d, name %s (%d)", i, rc, name, name_len);
        CHECK(datatype == MPI_CHAR || datatype == MPI_UNSIGNED_LONG_LONG, "%s: datatype %d", name, datatype);
        CHECK(bind == MPI_T_BIND_NO_OBJECT && e == MPI_T_ENUM_NULL, "%s: bind %d", name, bind);
        CHECK(scope == MPI_T_SCOPE_CONSTANT || scope == MPI_T_SCOPE_ALL_EQ, "%s: scope %d", name, scope);
        CHECK(verbosity >= MPI_T_VERBOSITY_USER_BASIC && verbosity <= MPI_T_VERBOSITY_MPIDEV_ALL, "%s: verbosity", name);
        CHECK(index_of(name) == i, "%s: its index", name);
        /* a short buffer: truncated, the NUL kept */
        char tiny[4];
        name_len = sizeof tiny;
        MPI_T_cvar_get_info(i, tiny, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        CHECK(name_len == 4 && tiny[3] == 0 && strncmp(tiny, name, 3) == 0, "%s: truncated to %s", name, tiny);
    }
    CHECK(MPI_T_cvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) == MPI_T_ERR_INVALID_INDEX,
          "an index past the last");
    CHECK(MPI_T_cvar_get_index("RMA_NOTHING", &i) == MPI_T_ERR_INVALID_NAME, "an unknown name");

    /* the values the library uses */
    CHECK(read_number("RMA_STALL_MS") == 7000, "RMA_STALL_MS");
    const char *lv = getenv("RMA_LIVENESS_MS");
    unsigned long long live = read_number("RMA_LIVENESS_MS");
    CHECK(lv ? live == strtoull(lv, NULL, 10) : live == 20, "RMA_LIVENESS_MS: %llu", live);
    read_string("RMA_WAIT", s);
    const char *wv = getenv("RMA_WAIT");
    CHECK(!strcmp(s, wv && (!strcmp(wv, "spin") || !strcmp(wv, "park")) ? wv : "auto"), "RMA_WAIT: %s", s);
    read_string("RMA_TRANSPORT", s);
    CHECK(!strcmp(s, "atomic"), "RMA_TRANSPORT: %s", s);
    CHECK(write_string("RMA_TRANSPORT", "carrier-pigeon") == MPI_T_ERR_INVALID, "a transport that does not exist");
    CHECK(write_string("RMA_CHECK", "sometimes") == MPI_T_ERR_INVALID, "a checker mode that does not exist");
    read_string("RMA_TRANSPORT", s);
    CHECK(!strcmp(s, "atomic"), "RMA_TRANSPORT after a refused write: %s", s);

    /* handles */
    MPI_T_cvar_handle h;
    int count;
    MPI_T_cvar_handle_alloc(index_of("RMA_WAIT"), NULL, &h, &count);
    MPI_T_cvar_handle stale = h;
    CHECK(MPI_T_cvar_handle_free(&h) == MPI_SUCCESS && h == MPI_T_CVAR_HANDLE_NULL, "freeing a handle");
    CHECK(MPI_T_cvar_read(stale, s) == MPI_T_ERR_INVALID_HANDLE, "reading through a freed handle");
    CHECK(MPI_T_cvar_handle_free(&stale) == MPI_T_ERR_INVALID_HANDLE, "freeing it again");

    /* no performance variables, no categories; the rest refused with MPI_T's code */
    CHECK(MPI_T_pvar_get_num(&n) == MPI_SUCCESS && n == 0, "MPI_T_pvar_get_num: %d", n);
    CHECK(MPI_T_category_get_num(&n) == MPI_SUCCESS && n == 0, "MPI_T_category_get_num: %d", n);
    CHECK(MPI_T_pvar_get_index("x", MPI_T_PVAR_CLASS_COUNTER, &i) == MPI_T_ERR_INVALID_NAME, "MPI_T_pvar_get_index");
    MPI_T_pvar_session session;
    rc = MPI_T_pvar_session_create(&session);
    CHECK(rc == MPI_T_ERR_INVALID, "MPI_T_pvar_session_create: %d", rc);

    /* MPI itself; MPI_T's codes have error strings */
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char text[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(MPI_T_ERR_INVALID, text, &len);
    CHECK(strstr(text, "MPI_T_ERR_INVALID") != NULL, "MPI_Error_string: %s", text);

    /* writes honoured at the next window's creation (every rank writes the same) */
    new_window(t, c);
    CHECK(!strcmp(t, "atomic") && !strcmp(c, "off"), "first window: %s, %s", t, c);
    CHECK(write_string("RMA_TRANSPORT", "queued") == MPI_SUCCESS, "writing RMA_TRANSPORT");
    read_string("RMA_TRANSPORT", s);
    CHECK(!strcmp(s, "queued"), "RMA_TRANSPORT read back: %s", s);
    new_window(t, c);
    CHECK(!strcmp(t, "queued"), "a window after RMA_TRANSPORT=queued: %s", t);
    CHECK(write_string("RMA_CHECK", "conflicts") == MPI_SUCCESS, "writing RMA_CHECK");
    new_window(t, c);
    CHECK(!strcmp(c, "conflicts"), "a window after RMA_CHECK=conflicts: %s", c);
    CHECK(write_string("RMA_CHECK", "off") == MPI_SUCCESS && write_string("RMA_TRANSPORT", "") == MPI_SUCCESS,
          "clearing RMA_CHECK and RMA_TRANSPORT");
    /* a written value dropped: the environment's applies again (atomic here) */
    read_string("RMA_TRANSPORT", s);
    CHECK(!strcmp(s, "atomic"), "RMA_TRANSPORT cleared: %s", s);
    new_window(t, c);
    CHECK(!strcmp(t, "atomic") && !strcmp(c, "off"), "a window with both cleared: %s, %s", t, c);

    /* finalized twice, then no more */
    CHECK(MPI_T_finalize() == MPI_SUCCESS && MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize twice");
    CHECK(MPI_T_finalize() == MPI_T_ERR_NOT_INITIALIZED, "a third MPI_T_finalize");
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "MPI_T_cvar_get_num after MPI_T_finalize");
    CHECK(MPI_T_pvar_session_create(&session) == MPI_T_ERR_NOT_INITIALIZED, "a refused function, not initialized");

    MPI_Finalize();

    /* and again after MPI_Finalize */
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread after MPI_Finalize");
    CHECK(read_number("RMA_STALL_MS") == 7000, "RMA_STALL_MS after MPI_Finalize");
    CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize after MPI_Finalize");

    if (errs) printf("rank %d: %d checks failed\n", rank, errs);
    return errs ? 1 : 0;
}
