/*
 * rma-mpi-sys's C shim: a stable C ABI of plain ints, 64-bit integers and pointers over
 * a system MPI library's RMA, so that the same Rust code runs over MPICH's ABI (handles
 * are ints) and Open MPI's (handles are pointers).
 *
 * - Every MPI handle crosses the boundary as an intptr_t (the handle cast to an
 *   integer); only this file casts it back.
 * - Basic types, ops, assertion bits, lock types, thread levels and error classes
 *   cross as rma's own small codes (the discriminants of rma_core's BasicType and Op,
 *   the bits of rma_core's Assert); only this file knows the MPI constants.
 * - Every function returns an MPI error code (0 = MPI_SUCCESS), or a negative shim
 *   code: RMA_MPI_EBADCODE for a code this file does not know.
 *
 * Built by build.rs with the library's compiler wrapper (mpicc) as a shared object
 * that rma-mpi-sys loads at run time (src/ffi.rs), one per MPI library found.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define RMA_MPI_SHIM_ABI 7
#define RMA_MPI_EBADCODE (-1)
#define RMA_MPI_ENOMEM (-2)

#define H(x) ((intptr_t)(x))
#define COMM(h) ((MPI_Comm)(h))
#define WIN(h) ((MPI_Win)(h))
#define TYPE(h) ((MPI_Datatype)(h))

int rma_mpi_shim_abi(void) { return RMA_MPI_SHIM_ABI; }

/* The library this shim was compiled against: 1 MPICH, 2 Open MPI, 0 another. */
int rma_mpi_built_for(void) {
#if defined(OMPI_MAJOR_VERSION)
    return 2;
#elif defined(MPICH_VERSION) || defined(MPICH)
    return 1;
#else
    return 0;
#endif
}

/* ---- thread levels, environment ------------------------------------------------- */

static int level_to_mpi(int level, int *out) {
    switch (level) {
    case 0: *out = MPI_THREAD_SINGLE; return 0;
    case 1: *out = MPI_THREAD_FUNNELED; return 0;
    case 2: *out = MPI_THREAD_SERIALIZED; return 0;
    case 3: *out = MPI_THREAD_MULTIPLE; return 0;
    default: return RMA_MPI_EBADCODE;
    }
}

static int level_from_mpi(int level) {
    if (level == MPI_THREAD_MULTIPLE) return 3;
    if (level == MPI_THREAD_SERIALIZED) return 2;
    if (level == MPI_THREAD_FUNNELED) return 1;
    return 0;
}

int rma_mpi_initialized(int *flag) { return MPI_Initialized(flag); }

int rma_mpi_finalized(int *flag) { return MPI_Finalized(flag); }

int rma_mpi_init_thread(int required, int *provided) {
    int req, prov = MPI_THREAD_SINGLE;
    if (level_to_mpi(required, &req)) return RMA_MPI_EBADCODE;
    int rc = MPI_Init_thread(NULL, NULL, req, &prov);
    *provided = level_from_mpi(prov);
    return rc;
}

int rma_mpi_finalize(void) { return MPI_Finalize(); }

void rma_mpi_abort(intptr_t comm, int code) { MPI_Abort(COMM(comm), code); }

int rma_mpi_library_version(char *buf, int cap, int *len) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    int rc = MPI_Get_library_version(v, &n);
    if (rc) return rc;
    if (n > cap) n = cap;
    memcpy(buf, v, (size_t)n);
    *len = n;
    return 0;
}

/* The value of the string control variable `name` (MPI_T), such as Open MPI's `osc`
 * component selection; nonzero (an MPI_T code) if there is no such string variable. */
int rma_mpi_cvar_string(const char *name, char *buf, int cap, int *len) {
    int prov, idx, count = 0, rc;
    *len = 0;
    rc = MPI_T_init_thread(MPI_THREAD_SINGLE, &prov);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_T_cvar_get_index(name, &idx);
    MPI_Datatype type = MPI_DATATYPE_NULL;
    if (rc == MPI_SUCCESS) {
        char vname[256], desc[256];
        int nlen = sizeof vname, dlen = sizeof desc, verb, bind, scope;
        MPI_T_enum e;
        rc = MPI_T_cvar_get_info(idx, vname, &nlen, &verb, &type, &e, desc, &dlen, &bind, &scope);
    }
    if (rc == MPI_SUCCESS && type != MPI_CHAR) rc = RMA_MPI_EBADCODE;
    if (rc == MPI_SUCCESS) {
        MPI_T_cvar_handle h;
        rc = MPI_T_cvar_handle_alloc(idx, NULL, &h, &count);
        if (rc == MPI_SUCCESS) {
            char *tmp = calloc((size_t)count + 1, 1);
            rc = tmp ? MPI_T_cvar_read(h, tmp) : RMA_MPI_ENOMEM;
            if (rc == MPI_SUCCESS) {
                int n = (int)strnlen(tmp, (size_t)count);
                *len = n < cap ? n : cap;
                memcpy(buf, tmp, (size_t)*len);
            }
            free(tmp);
            MPI_T_cvar_handle_free(&h);
        }
    }
    MPI_T_finalize();
    return rc;
}

/* ---- communicator ---------------------------------------------------------------- */

int rma_mpi_world_dup(intptr_t *comm) {
    MPI_Comm c;
    int rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rc) return rc;
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (rc) return rc;
    rc = MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    *comm = H(c);
    return rc;
}

/* A communicator rma made, handed out with MPI_ERRORS_RETURN (freed if that fails). */
static int returning(MPI_Comm c, intptr_t *out) {
    int rc = MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (rc) {
        MPI_Comm_free(&c);
        return rc;
    }
    *out = H(c);
    return 0;
}

/* The thread level MPI was initialized with (MPI_Query_thread), as rma's code. */
int rma_mpi_query_thread(int *level) {
    int prov = MPI_THREAD_SINGLE;
    int rc = MPI_Query_thread(&prov);
    *level = level_from_mpi(prov);
    return rc;
}

int rma_mpi_is_thread_main(int *flag) { return MPI_Is_thread_main(flag); }

int rma_mpi_comm_test_inter(intptr_t comm, int *flag) {
    return MPI_Comm_test_inter(COMM(comm), flag);
}

/* Sets *out to 1 when the value `comm` names a communicator this library could have
 * made, by its handle's shape alone (no MPI call: a wrong handle passed to one would
 * raise the fatal default error handler): MPICH's handles are ints whose kind bits say
 * "communicator"; Open MPI's are pointers, which are never small integers. */
int rma_mpi_comm_shape(intptr_t comm, int *out) {
    if (COMM(comm) == MPI_COMM_NULL) {
        *out = 0;
        return 0;
    }
#if defined(MPICH_VERSION) || defined(MPICH)
    /* an int, sign-extended or not; kind bits 30-31 nonzero (builtin, direct or
     * indirect), object kind (bits 26-29) 1: a communicator */
    unsigned int h = (unsigned int)comm;
    *out = comm >= INT32_MIN && comm <= (intptr_t)UINT32_MAX && (h >> 30) != 0 &&
           ((h >> 26) & 0xf) == 1;
#elif defined(OMPI_MAJOR_VERSION)
    /* a readable, aligned address whose first word (the object's class, in a release
     * build of Open MPI) is the communicator class; read with process_vm_readv, which
     * fails with EFAULT rather than fault on an unmapped address. Where the kernel
     * refuses the read itself (EPERM, ENOSYS), alignment and size alone decide. */
    void *first = NULL;
    void *cls = dlsym(RTLD_DEFAULT, "ompi_communicator_t_class");
    struct iovec here = {&first, sizeof first};
    struct iovec there = {(void *)comm, sizeof first};
    *out = comm > 0xffff && (comm & 0x7) == 0;
    if (*out && cls) {
        ssize_t n = process_vm_readv(getpid(), &here, 1, &there, 1, 0);
        if (n == (ssize_t)sizeof first)
            *out = first == cls;
        else if (n < 0 && errno == EFAULT)
            *out = 0;
    }
#else
    *out = comm != 0;
#endif
    return 0;
}

/* MPI_Comm_dup of a communicator the program made, with MPI_ERRORS_RETURN on the
 * duplicate only (the program's communicator keeps its own handler). */
int rma_mpi_comm_dup(intptr_t comm, intptr_t *out) {
    MPI_Comm c;
    int rc = MPI_Comm_dup(COMM(comm), &c);
    return rc ? rc : returning(c, out);
}

/* MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the ranks of `comm` that can share
 * memory, with MPI_ERRORS_RETURN on the result. */
int rma_mpi_comm_split_shared(intptr_t comm, int key, intptr_t *out) {
    MPI_Comm c;
    int rc = MPI_Comm_split_type(COMM(comm), MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, &c);
    return rc ? rc : returning(c, out);
}

/* Calls `hook` when MPI_Finalize begins, while MPI still works: an attribute on
 * MPI_COMM_SELF, whose delete callback MPI_Finalize runs first. Set once per call. */
static int (*finalize_hook)(void);

/* The hook's nonzero result ends the job there, with MPI_Abort on MPI_COMM_WORLD
 * (MPI still works inside the callback), and abort(3) should that return. */
static int on_self_delete(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm; (void)keyval; (void)value; (void)extra;
    int code = finalize_hook ? finalize_hook() : 0;
    if (code) {
        MPI_Abort(MPI_COMM_WORLD, code);
        abort();
    }
    return MPI_SUCCESS;
}

int rma_mpi_watch_finalize(int (*hook)(void)) {
    int key, rc;
    finalize_hook = hook;
    rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_self_delete, &key, NULL);
    if (rc) return rc;
    return MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL);
}

/* MPI_Comm_split with MPI_ERRORS_RETURN on the result; color < 0 is MPI_UNDEFINED,
 * which gives *out = 0 (MPI_COMM_NULL). */
int rma_mpi_comm_split(intptr_t comm, int color, int key, intptr_t *out) {
    MPI_Comm c;
    int rc = MPI_Comm_split(COMM(comm), color < 0 ? MPI_UNDEFINED : color, key, &c);
    if (rc) return rc;
    if (c == MPI_COMM_NULL) {
        *out = 0;
        return 0;
    }
    return returning(c, out);
}

/* MPI_Comm_create_group of the ranks `ranks[0..n]` of `comm` (only they call it). */
int rma_mpi_comm_create_group(intptr_t comm, int n, const int *ranks, int tag, intptr_t *out) {
    MPI_Group all, sub;
    MPI_Comm c;
    int rc = MPI_Comm_group(COMM(comm), &all);
    if (rc) return rc;
    rc = MPI_Group_incl(all, n, ranks, &sub);
    MPI_Group_free(&all);
    if (rc) return rc;
    rc = MPI_Comm_create_group(COMM(comm), sub, tag, &c);
    MPI_Group_free(&sub);
    return rc ? rc : returning(c, out);
}

int rma_mpi_comm_free(intptr_t comm) {
    MPI_Comm c = COMM(comm);
    return MPI_Comm_free(&c);
}

int rma_mpi_comm_rank(intptr_t comm, int *rank) { return MPI_Comm_rank(COMM(comm), rank); }

int rma_mpi_comm_size(intptr_t comm, int *size) { return MPI_Comm_size(COMM(comm), size); }

/* Lets the library's progress engine run once (a non-blocking probe that matches
 * nothing rma sends: rma uses no point-to-point messages). */
int rma_mpi_progress(intptr_t comm) {
    int flag = 0;
    return MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, COMM(comm), &flag, MPI_STATUS_IGNORE);
}

/* Starts the agreement that precedes each of rma's collectives: the element-wise
 * maximum of two 64-bit words over `comm`, without blocking, so that the caller can
 * poll it (rma_mpi_test) and compare what the ranks entered. `in` and `out` must stay
 * valid until the request completes. */
int rma_mpi_iagree(intptr_t comm, const int64_t *in, int64_t *out, intptr_t *req) {
    MPI_Request q = MPI_REQUEST_NULL;
    int rc = MPI_Iallreduce(in, out, 2, MPI_INT64_T, MPI_MAX, COMM(comm), &q);
    *req = H(q);
    return rc;
}

int rma_mpi_allgather_i64(intptr_t comm, int64_t mine, int64_t *all) {
    return MPI_Allgather(&mine, 1, MPI_INT64_T, all, 1, MPI_INT64_T, COMM(comm));
}

int rma_mpi_allgatherv_bytes(intptr_t comm, const void *mine, int len, void *all,
                             const int *lens, const int *displs) {
    return MPI_Allgatherv(mine, len, MPI_BYTE, all, lens, displs, MPI_BYTE, COMM(comm));
}

/* ---- errors ---------------------------------------------------------------------- */

/* rma's error classes (rma_core::ErrorClass), as the Rust side decodes them. */
enum {
    C_RANK = 1, C_DISP, C_COUNT, C_TYPE, C_OP, C_BUFFER, C_RMA_RANGE, C_RMA_SYNC,
    C_RMA_FLAVOR, C_RMA_CONFLICT, C_ASSERT, C_INFO, C_ARG, C_WIN, C_NO_MEM,
    C_PROC_FAILED, C_INTERN, C_OTHER, C_RMA_SHARED
};

struct class_row {
    int mpi;
    int ours;
    const char *name;
};

#define ROW(c, o) {c, o, #c}

static const struct class_row CLASSES[] = {
    ROW(MPI_ERR_RANK, C_RANK), ROW(MPI_ERR_DISP, C_DISP), ROW(MPI_ERR_COUNT, C_COUNT),
    ROW(MPI_ERR_TYPE, C_TYPE), ROW(MPI_ERR_OP, C_OP), ROW(MPI_ERR_BUFFER, C_BUFFER),
    ROW(MPI_ERR_TRUNCATE, C_BUFFER), ROW(MPI_ERR_RMA_RANGE, C_RMA_RANGE),
    ROW(MPI_ERR_RMA_SYNC, C_RMA_SYNC), ROW(MPI_ERR_RMA_FLAVOR, C_RMA_FLAVOR),
    ROW(MPI_ERR_RMA_ATTACH, C_RMA_FLAVOR), ROW(MPI_ERR_RMA_SHARED, C_RMA_SHARED),
    ROW(MPI_ERR_UNSUPPORTED_OPERATION, C_RMA_FLAVOR),
    ROW(MPI_ERR_RMA_CONFLICT, C_RMA_CONFLICT), ROW(MPI_ERR_ASSERT, C_ASSERT),
    ROW(MPI_ERR_INFO, C_INFO), ROW(MPI_ERR_INFO_KEY, C_INFO), ROW(MPI_ERR_INFO_VALUE, C_INFO),
    ROW(MPI_ERR_INFO_NOKEY, C_INFO), ROW(MPI_ERR_ARG, C_ARG), ROW(MPI_ERR_LOCKTYPE, C_ARG),
    ROW(MPI_ERR_COMM, C_ARG), ROW(MPI_ERR_GROUP, C_ARG), ROW(MPI_ERR_REQUEST, C_ARG),
    ROW(MPI_ERR_SIZE, C_ARG), ROW(MPI_ERR_BASE, C_ARG), ROW(MPI_ERR_KEYVAL, C_ARG),
    ROW(MPI_ERR_ROOT, C_ARG), ROW(MPI_ERR_TAG, C_ARG), ROW(MPI_ERR_WIN, C_WIN),
    ROW(MPI_ERR_NO_MEM, C_NO_MEM),
#ifdef MPIX_ERR_PROC_FAILED
    ROW(MPIX_ERR_PROC_FAILED, C_PROC_FAILED),
#endif
#if defined(MPI_ERR_PROC_FAILED) && !defined(MPIX_ERR_PROC_FAILED)
    ROW(MPI_ERR_PROC_FAILED, C_PROC_FAILED),
#endif
    ROW(MPI_ERR_INTERN, C_INTERN), ROW(MPI_ERR_OTHER, C_OTHER), ROW(MPI_ERR_UNKNOWN, C_OTHER),
    ROW(MPI_ERR_PENDING, C_OTHER), ROW(MPI_ERR_IN_STATUS, C_OTHER),
};

static const struct class_row *class_row_of(int code) {
    int cls = MPI_ERR_UNKNOWN;
    if (MPI_Error_class(code, &cls) != MPI_SUCCESS) cls = MPI_ERR_UNKNOWN;
    for (size_t i = 0; i < sizeof CLASSES / sizeof CLASSES[0]; i++)
        if (CLASSES[i].mpi == cls) return &CLASSES[i];
    return NULL;
}

/* rma's class code for an MPI error code (C_OTHER for classes it does not list). */
int rma_mpi_error_class(int code) {
    const struct class_row *row = class_row_of(code);
    return row ? row->ours : C_OTHER;
}

/* The MPI name of the code's class, or NULL for a class this file does not list. */
const char *rma_mpi_error_class_name(int code) {
    const struct class_row *row = class_row_of(code);
    return row ? row->name : NULL;
}

int rma_mpi_error_string(int code, char *buf, int cap, int *len) {
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    int rc = MPI_Error_string(code, s, &n);
    if (rc) return rc;
    if (n > cap) n = cap;
    memcpy(buf, s, (size_t)n);
    *len = n;
    return 0;
}

/* ---- datatypes and ops ----------------------------------------------------------- */

static int basic_of(int code, MPI_Datatype *dt) {
    switch (code) {
    case 0: *dt = MPI_INT8_T; return 0;
    case 1: *dt = MPI_INT16_T; return 0;
    case 2: *dt = MPI_INT32_T; return 0;
    case 3: *dt = MPI_INT64_T; return 0;
    case 4: *dt = MPI_UINT8_T; return 0;
    case 5: *dt = MPI_UINT16_T; return 0;
    case 6: *dt = MPI_UINT32_T; return 0;
    case 7: *dt = MPI_UINT64_T; return 0;
    case 8: *dt = MPI_AINT; return 0;
    case 9: *dt = sizeof(size_t) == 8 ? MPI_UINT64_T : MPI_UINT32_T; return 0;
    case 10: *dt = MPI_FLOAT; return 0;
    case 11: *dt = MPI_DOUBLE; return 0;
    case 12: *dt = MPI_C_FLOAT_COMPLEX; return 0;
    case 13: *dt = MPI_C_DOUBLE_COMPLEX; return 0;
    case 14: *dt = MPI_C_BOOL; return 0;
    case 15: *dt = MPI_BYTE; return 0;
    case 16: *dt = MPI_FLOAT_INT; return 0;
    case 17: *dt = MPI_DOUBLE_INT; return 0;
    case 18: *dt = MPI_LONG_INT; return 0;
    case 19: *dt = MPI_2INT; return 0;
    case 20: *dt = MPI_SHORT_INT; return 0;
    case 21: *dt = MPI_LONG_DOUBLE; return 0;
    case 22: *dt = MPI_LONG_DOUBLE_INT; return 0;
    default: return RMA_MPI_EBADCODE;
    }
}

/* The ops by rma's code, in rma_core::Op's order: a table, so that the accumulate
 * family's hot path maps a code with one bounds check and one load. (Open MPI's
 * handles are addresses of its op objects, MPICH's are integers; both are constant
 * initializers.) */
static const MPI_Op OPS[] = {MPI_SUM,  MPI_PROD, MPI_MAX,    MPI_MIN,    MPI_LAND,
                             MPI_LOR,  MPI_LXOR, MPI_BAND,   MPI_BOR,    MPI_BXOR,
                             MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};

static inline int op_of(int code, MPI_Op *op) {
    if ((unsigned) code >= sizeof OPS / sizeof OPS[0]) return RMA_MPI_EBADCODE;
    *op = OPS[code];
    return 0;
}

int rma_mpi_basic(int code, intptr_t *dt) {
    MPI_Datatype t;
    int rc = basic_of(code, &t);
    if (rc == 0) *dt = H(t);
    return rc;
}

int rma_mpi_type_extent(intptr_t dt, int64_t *lb, int64_t *extent) {
    MPI_Aint l = 0, e = 0;
    int rc = MPI_Type_get_extent(TYPE(dt), &l, &e);
    *lb = (int64_t)l;
    *extent = (int64_t)e;
    return rc;
}

/* Commits `t` into `*out`, or frees it on failure. */
static int commit(MPI_Datatype t, intptr_t *out) {
    int rc = MPI_Type_commit(&t);
    if (rc) {
        MPI_Type_free(&t);
        return rc;
    }
    *out = H(t);
    return 0;
}

/* `count` blocks of `blocklen` elements of `basic`, `stride` bytes apart, the first
 * `shift` bytes from the target displacement; committed. */
int rma_mpi_type_hvector(int basic, int count, int blocklen, int64_t stride, int64_t shift,
                         intptr_t *out) {
    MPI_Datatype b, v, s;
    if (basic_of(basic, &b)) return RMA_MPI_EBADCODE;
    int rc = MPI_Type_create_hvector(count, blocklen, (MPI_Aint)stride, b, &v);
    if (rc) return rc;
    if (shift == 0) return commit(v, out);
    int one = 1;
    MPI_Aint disp = (MPI_Aint)shift;
    rc = MPI_Type_create_hindexed(1, &one, &disp, v, &s);
    MPI_Type_free(&v);
    if (rc) return rc;
    return commit(s, out);
}

/* `n` blocks of `blocklens[i]` elements of `basic` at byte displacements `displs[i]`;
 * committed. */
int rma_mpi_type_hindexed(int basic, int n, const int *blocklens, const int64_t *displs,
                          intptr_t *out) {
    MPI_Datatype b, t;
    if (basic_of(basic, &b)) return RMA_MPI_EBADCODE;
    MPI_Aint *d = malloc(sizeof(MPI_Aint) * (size_t)(n > 0 ? n : 1));
    if (!d) return RMA_MPI_ENOMEM;
    for (int i = 0; i < n; i++) d[i] = (MPI_Aint)displs[i];
    int rc = MPI_Type_create_hindexed(n, blocklens, d, b, &t);
    free(d);
    if (rc) return rc;
    return commit(t, out);
}

int rma_mpi_type_free(intptr_t dt) {
    MPI_Datatype t = TYPE(dt);
    return MPI_Type_free(&t);
}

/* ---- windows --------------------------------------------------------------------- */

static int make_info(int n, const char *const *keys, const char *const *vals, MPI_Info *info) {
    *info = MPI_INFO_NULL;
    if (n == 0) return 0;
    int rc = MPI_Info_create(info);
    for (int i = 0; rc == 0 && i < n; i++) rc = MPI_Info_set(*info, keys[i], vals[i]);
    if (rc && *info != MPI_INFO_NULL) MPI_Info_free(info);
    return rc;
}

static void drop_info(MPI_Info *info) {
    if (*info != MPI_INFO_NULL) MPI_Info_free(info);
}

int rma_mpi_win_allocate(intptr_t comm, int64_t size, int disp_unit, int ninfo,
                         const char *const *keys, const char *const *vals, void **base,
                         intptr_t *win) {
    MPI_Info info;
    MPI_Win w;
    int rc = make_info(ninfo, keys, vals, &info);
    if (rc) return rc;
    rc = MPI_Win_allocate((MPI_Aint)size, disp_unit, info, COMM(comm), base, &w);
    drop_info(&info);
    if (rc) return rc;
    *win = H(w);
    return MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
}

int rma_mpi_win_allocate_shared(intptr_t comm, int64_t size, int disp_unit, int ninfo,
                                const char *const *keys, const char *const *vals,
                                void **base, intptr_t *win) {
    MPI_Info info;
    MPI_Win w;
    int rc = make_info(ninfo, keys, vals, &info);
    if (rc) return rc;
    rc = MPI_Win_allocate_shared((MPI_Aint)size, disp_unit, info, COMM(comm), base, &w);
    drop_info(&info);
    if (rc) return rc;
    *win = H(w);
    return MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
}

int rma_mpi_win_create_dynamic(intptr_t comm, int ninfo, const char *const *keys,
                                const char *const *vals, intptr_t *win) {
    MPI_Info info;
    MPI_Win w;
    int rc = make_info(ninfo, keys, vals, &info);
    if (rc) return rc;
    rc = MPI_Win_create_dynamic(info, COMM(comm), &w);
    drop_info(&info);
    if (rc) return rc;
    *win = H(w);
    return MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
}

int rma_mpi_win_attach(intptr_t win, void *base, int64_t size) {
    return MPI_Win_attach(WIN(win), base, (MPI_Aint)size);
}

int rma_mpi_win_detach(intptr_t win, void *base) { return MPI_Win_detach(WIN(win), base); }

/* MPI_Get_address: the displacement that reaches `p` in a dynamic window. */
int rma_mpi_get_address(const void *p, int64_t *addr) {
    MPI_Aint a = 0;
    int rc = MPI_Get_address(p, &a);
    *addr = (int64_t)a;
    return rc;
}

int rma_mpi_win_shared_query(intptr_t win, int rank, int64_t *size, int *disp_unit,
                             void **base) {
    MPI_Aint s = 0;
    int rc = MPI_Win_shared_query(WIN(win), rank, &s, disp_unit, base);
    *size = (int64_t)s;
    return rc;
}

/* The number of ranks of `comm` on this rank's node (MPI_Comm_split_type with
 * MPI_COMM_TYPE_SHARED; collective over `comm`). */
int rma_mpi_node_size(intptr_t comm, int *size) {
    MPI_Comm node;
    int rc = MPI_Comm_split_type(COMM(comm), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc) return rc;
    rc = MPI_Comm_size(node, size);
    int rc2 = MPI_Comm_free(&node);
    return rc ? rc : rc2;
}

int rma_mpi_win_create(intptr_t comm, void *base, int64_t size, int disp_unit, int ninfo,
                       const char *const *keys, const char *const *vals, intptr_t *win) {
    MPI_Info info;
    MPI_Win w;
    int rc = make_info(ninfo, keys, vals, &info);
    if (rc) return rc;
    rc = MPI_Win_create(base, (MPI_Aint)size, disp_unit, info, COMM(comm), &w);
    drop_info(&info);
    if (rc) return rc;
    *win = H(w);
    return MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
}

int rma_mpi_win_free(intptr_t win) {
    MPI_Win w = WIN(win);
    return MPI_Win_free(&w);
}

/* ---- RMA calls ------------------------------------------------------------------- */

int rma_mpi_put(const void *o, int oc, intptr_t odt, int rank, int64_t disp, int tc,
                intptr_t tdt, intptr_t win) {
    return MPI_Put(o, oc, TYPE(odt), rank, (MPI_Aint)disp, tc, TYPE(tdt), WIN(win));
}

int rma_mpi_accumulate(const void *o, int oc, intptr_t odt, int rank, int64_t disp, int tc,
                       intptr_t tdt, int opc, intptr_t win) {
    MPI_Op op;
    if (op_of(opc, &op)) return RMA_MPI_EBADCODE;
    return MPI_Accumulate(o, oc, TYPE(odt), rank, (MPI_Aint)disp, tc, TYPE(tdt), op, WIN(win));
}

int rma_mpi_get(void *o, int oc, intptr_t odt, int rank, int64_t disp, int tc, intptr_t tdt,
                intptr_t win) {
    return MPI_Get(o, oc, TYPE(odt), rank, (MPI_Aint)disp, tc, TYPE(tdt), WIN(win));
}

int rma_mpi_get_accumulate(const void *o, int oc, intptr_t odt, void *r, int rc_, intptr_t rdt,
                           int rank, int64_t disp, int tc, intptr_t tdt, int opc, intptr_t win) {
    MPI_Op op;
    if (op_of(opc, &op)) return RMA_MPI_EBADCODE;
    return MPI_Get_accumulate(o, oc, TYPE(odt), r, rc_, TYPE(rdt), rank, (MPI_Aint)disp, tc,
                              TYPE(tdt), op, WIN(win));
}

int rma_mpi_fetch_and_op(const void *o, void *r, intptr_t dt, int rank, int64_t disp, int opc,
                         intptr_t win) {
    MPI_Op op;
    if (op_of(opc, &op)) return RMA_MPI_EBADCODE;
    return MPI_Fetch_and_op(o, r, TYPE(dt), rank, (MPI_Aint)disp, op, WIN(win));
}

int rma_mpi_compare_and_swap(const void *o, const void *c, void *r, intptr_t dt, int rank,
                             int64_t disp, intptr_t win) {
    return MPI_Compare_and_swap(o, c, r, TYPE(dt), rank, (MPI_Aint)disp, WIN(win));
}

int rma_mpi_rput(const void *o, int oc, intptr_t odt, int rank, int64_t disp, int tc,
                 intptr_t tdt, intptr_t win, intptr_t *req) {
    MPI_Request q;
    int rc = MPI_Rput(o, oc, TYPE(odt), rank, (MPI_Aint)disp, tc, TYPE(tdt), WIN(win), &q);
    if (rc == 0) *req = H(q);
    return rc;
}

int rma_mpi_rget(void *o, int oc, intptr_t odt, int rank, int64_t disp, int tc, intptr_t tdt,
                 intptr_t win, intptr_t *req) {
    MPI_Request q;
    int rc = MPI_Rget(o, oc, TYPE(odt), rank, (MPI_Aint)disp, tc, TYPE(tdt), WIN(win), &q);
    if (rc == 0) *req = H(q);
    return rc;
}

int rma_mpi_raccumulate(const void *o, int oc, intptr_t odt, int rank, int64_t disp, int tc,
                        intptr_t tdt, int opc, intptr_t win, intptr_t *req) {
    MPI_Op op;
    MPI_Request q;
    if (op_of(opc, &op)) return RMA_MPI_EBADCODE;
    int rc = MPI_Raccumulate(o, oc, TYPE(odt), rank, (MPI_Aint)disp, tc, TYPE(tdt), op,
                             WIN(win), &q);
    if (rc == 0) *req = H(q);
    return rc;
}

int rma_mpi_rget_accumulate(const void *o, int oc, intptr_t odt, void *r, int rc_,
                            intptr_t rdt, int rank, int64_t disp, int tc, intptr_t tdt, int opc,
                            intptr_t win, intptr_t *req) {
    MPI_Op op;
    MPI_Request q;
    if (op_of(opc, &op)) return RMA_MPI_EBADCODE;
    int rc = MPI_Rget_accumulate(o, oc, TYPE(odt), r, rc_, TYPE(rdt), rank, (MPI_Aint)disp, tc,
                                 TYPE(tdt), op, WIN(win), &q);
    if (rc == 0) *req = H(q);
    return rc;
}

int rma_mpi_wait(intptr_t *req) {
    MPI_Request q = (MPI_Request)(*req);
    int rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
    *req = H(q);
    return rc;
}

int rma_mpi_test(intptr_t *req, int *flag) {
    MPI_Request q = (MPI_Request)(*req);
    int rc = MPI_Test(&q, flag, MPI_STATUS_IGNORE);
    *req = H(q);
    return rc;
}

/* ---- synchronization ------------------------------------------------------------- */

/* rma_core::Assert bits -> MPI_MODE_* */
static int mode_of(int bits, int *mode) {
    int m = 0;
    if (bits & ~31) return RMA_MPI_EBADCODE;
    if (bits & 1) m |= MPI_MODE_NOCHECK;
    if (bits & 2) m |= MPI_MODE_NOSTORE;
    if (bits & 4) m |= MPI_MODE_NOPUT;
    if (bits & 8) m |= MPI_MODE_NOPRECEDE;
    if (bits & 16) m |= MPI_MODE_NOSUCCEED;
    *mode = m;
    return 0;
}

int rma_mpi_win_fence(int bits, intptr_t win) {
    int m;
    if (mode_of(bits, &m)) return RMA_MPI_EBADCODE;
    return MPI_Win_fence(m, WIN(win));
}

int rma_mpi_win_lock(int exclusive, int rank, int bits, intptr_t win) {
    int m;
    if (mode_of(bits, &m)) return RMA_MPI_EBADCODE;
    return MPI_Win_lock(exclusive ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, rank, m, WIN(win));
}

int rma_mpi_win_unlock(int rank, intptr_t win) { return MPI_Win_unlock(rank, WIN(win)); }

int rma_mpi_win_lock_all(int bits, intptr_t win) {
    int m;
    if (mode_of(bits, &m)) return RMA_MPI_EBADCODE;
    return MPI_Win_lock_all(m, WIN(win));
}

int rma_mpi_win_unlock_all(intptr_t win) { return MPI_Win_unlock_all(WIN(win)); }

/* Test hook: the next `n` MPI_Win_flush calls through the shim fail with MPI_ERR_OTHER
   without reaching the library, as a flush the library could not complete would; the
   calls before it stay issued, and the library completes them at a later
   synchronization (rma-mpi's tests of what a failed flush leaves behind). */
static _Atomic int fail_flushes;

void rma_mpi_test_fail_flushes(int n) { atomic_store(&fail_flushes, n); }

int rma_mpi_win_flush(int rank, intptr_t win) {
    if (atomic_load_explicit(&fail_flushes, memory_order_relaxed) > 0 &&
        atomic_fetch_sub(&fail_flushes, 1) > 0)
        return MPI_ERR_OTHER;
    return MPI_Win_flush(rank, WIN(win));
}

int rma_mpi_win_flush_all(intptr_t win) { return MPI_Win_flush_all(WIN(win)); }

int rma_mpi_win_flush_local(int rank, intptr_t win) { return MPI_Win_flush_local(rank, WIN(win)); }

int rma_mpi_win_flush_local_all(intptr_t win) { return MPI_Win_flush_local_all(WIN(win)); }

int rma_mpi_win_sync(intptr_t win) { return MPI_Win_sync(WIN(win)); }

/* The group of the window's ranks listed in `ranks`, in that order. */
static int group_of(intptr_t win, const int *ranks, int n, MPI_Group *out) {
    MPI_Group all;
    int rc = MPI_Win_get_group(WIN(win), &all);
    if (rc) return rc;
    rc = MPI_Group_incl(all, n, ranks, out);
    MPI_Group_free(&all);
    return rc;
}

int rma_mpi_win_post(const int *ranks, int n, int bits, intptr_t win) {
    int m;
    MPI_Group g;
    if (mode_of(bits, &m)) return RMA_MPI_EBADCODE;
    int rc = group_of(win, ranks, n, &g);
    if (rc) return rc;
    rc = MPI_Win_post(g, m, WIN(win));
    MPI_Group_free(&g);
    return rc;
}

int rma_mpi_win_start(const int *ranks, int n, int bits, intptr_t win) {
    int m;
    MPI_Group g;
    if (mode_of(bits, &m)) return RMA_MPI_EBADCODE;
    int rc = group_of(win, ranks, n, &g);
    if (rc) return rc;
    rc = MPI_Win_start(g, m, WIN(win));
    MPI_Group_free(&g);
    return rc;
}

int rma_mpi_win_complete(intptr_t win) { return MPI_Win_complete(WIN(win)); }

int rma_mpi_win_wait(intptr_t win) { return MPI_Win_wait(WIN(win)); }

int rma_mpi_win_test(intptr_t win, int *flag) { return MPI_Win_test(WIN(win), flag); }
