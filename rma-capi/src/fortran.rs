//! MPI's Fortran binding over the C interface, for what one-sided programs use and
//! what else a Fortran MPI program commonly calls (collectives of every kind, the
//! program's own reduction operations, probes and persistent requests, topologies,
//! communicator and group constructors, names and attributes): the routines a program
//! reaches through `include 'mpif.h'` or `use mpi` (see `include/mpif.h` and
//! `fortran/mpi.f90`), compiled with `bin/rmafort`.
//!
//! # Calling convention
//!
//! Each routine is the external procedure gfortran calls for `CALL MPI_XXX(...)`: the
//! name in lower case with one trailing underscore, every argument by reference, the
//! error code written to the last `INTEGER` argument (`IERROR`). A `CHARACTER` argument
//! adds a hidden length after all the others, in the order of the strings, as a
//! `size_t` (gfortran 8 and later, ifx and flang do so). Each routine calls the C
//! entry point of the same name, so the C error handlers apply unchanged.
//!
//! - **Handles** are the C ints themselves (`MPI_Fint` is `int`): no translation.
//! - **Status**: an `INTEGER` array of `MPI_STATUS_SIZE` ([`STATUS_SIZE`]) with the
//!   layout of C's `MPI_Status` (six ints), so it is passed to C as is; the indices
//!   `MPI_SOURCE`, `MPI_TAG` and `MPI_ERROR` are the field positions.
//! - **LOGICAL** results (flags) are written as a default `LOGICAL` (4 bytes): 1 for
//!   `.TRUE.`, 0 for `.FALSE.`, which is gfortran's representation (and one ifx reads
//!   as true). A `LOGICAL` argument going in is true unless it is 0 (gfortran's
//!   `.TRUE.` is 1, ifx's -1, `.FALSE.` 0 in both), and a `LOGICAL` array going in
//!   (MPI_CART_CREATE's PERIODS, MPI_CART_SUB's REMAIN_DIMS) is passed to C as it is:
//!   C reads each of its ints as a flag, any value but 0 being true, which is the
//!   same reading.
//! - **Indices** into an array of requests (MPI_WAITANY, MPI_TESTANY, MPI_WAITSOME,
//!   MPI_TESTSOME) count from 1, C's from 0: the routines add 1 (MPI_UNDEFINED stays).
//! - **Attributes** (MPI_COMM_GET_ATTR, MPI_WIN_GET_ATTR) are
//!   `INTEGER(KIND=MPI_ADDRESS_KIND)` values: for a predefined attribute whose C value
//!   points to an int or an `MPI_Aint` (MPI_TAG_UB, MPI_UNIVERSE_SIZE, MPI_WIN_SIZE,
//!   MPI_WIN_DISP_UNIT ...), the value pointed to; for MPI_WIN_BASE and attributes a C
//!   part of the program set, the C value, an address (MPI 3.1, section 17.2.7).
//! - **User functions**: MPI_OP_CREATE's USER_FN is a subroutine
//!   `USER_FN(INVEC, INOUTVEC, LEN, DATATYPE)`, every argument by reference, which is
//!   the C `MPI_User_function`'s own shape (C calls it with pointers to its length and
//!   datatype): the procedure goes to C as it is.
//! - **Strings** going in lose their trailing blanks (info keys and values also their
//!   leading ones, as MPI says) and end at a NUL if they hold one; strings coming out
//!   are cut to the Fortran variable's length and padded with blanks.
//! - **Addresses** (`INTEGER(KIND=MPI_ADDRESS_KIND)`) are `MPI_Aint` (`isize`); a
//!   `TYPE(C_PTR)` is an address of the same size, so the `_CPTR` forms of
//!   MPI_ALLOC_MEM, MPI_WIN_ALLOCATE(_SHARED) and MPI_WIN_SHARED_QUERY are the same
//!   routines under a second name (the `mpi` module makes them one generic name).
//!
//! # Sentinels
//!
//! `MPI_BOTTOM`, `MPI_IN_PLACE`, `MPI_STATUS_IGNORE`, `MPI_STATUSES_IGNORE`,
//! `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` are Fortran variables (the last two arrays
//! of one INTEGER, so that they can stand where an INTEGER array goes), each alone in
//! a common block of its own ([`SENTINELS`] names them; `include/mpif-constants.h`
//! declares them, generated from that table). This library defines a symbol of the
//! same name and size for each block. When a program declares the block, the linker
//! gives the program's copy to everyone: the program's symbol is exported and
//! interposes the library's, and the address the program passes for `MPI_BOTTOM` is
//! the address of that one copy. A routine here recognises a
//! sentinel by address: the argument equals the address `dlsym(RTLD_DEFAULT, symbol)`
//! resolves (the copy every module of the process uses), or this library's own copy
//! (the one in use when the program has none). It then hands C its own sentinel
//! (`NULL` for MPI_BOTTOM, `(void *)-1` for MPI_IN_PLACE, `(MPI_Status *)1` for the
//! ignored statuses, `(int *)2` for MPI_UNWEIGHTED, `(int *)3` for
//! MPI_WEIGHTS_EMPTY). Rust never reads or writes these blocks: only their addresses
//! matter, and a program that assigns to them (it must not) changes nothing here.

// The routines are MPI's, with the arguments the standard gives them.
#![allow(clippy::too_many_arguments)]

use crate::p2p::MpiStatus;
use crate::{coll, comm, dtype, env, nbc, op, p2p, tool, topo, win};
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// Fortran's `MPI_STATUS_SIZE`: the number of `INTEGER`s in a status, C's
/// `MPI_Status` seen as ints.
pub const STATUS_SIZE: usize = 6;

const _: () =
    assert!(std::mem::size_of::<MpiStatus>() == STATUS_SIZE * std::mem::size_of::<c_int>());
const _: () = assert!(std::mem::align_of::<MpiStatus>() <= std::mem::align_of::<c_int>());

/// The storage of a sentinel's common block: `N` ints whose address alone matters.
#[repr(transparent)]
pub struct Sentinel<const N: usize>(UnsafeCell<[c_int; N]>);

// SAFETY: no Rust code reads or writes the cell (only its address is taken); a
// Fortran program may write it, which UnsafeCell permits, and nothing here observes it.
unsafe impl<const N: usize> Sync for Sentinel<N> {}

impl<const N: usize> Sentinel<N> {
    const fn new() -> Sentinel<N> {
        Sentinel(UnsafeCell::new([0; N]))
    }

    fn addr(&self) -> usize {
        self.0.get() as usize
    }
}

impl<const N: usize> std::fmt::Debug for Sentinel<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sentinel({:#x})", self.addr())
    }
}

macro_rules! sentinels {
    ($($id:ident: $n:expr, $sym:literal, $decl:literal;)*) => {
        $(
            #[export_name = $sym]
            pub static $id: Sentinel<{ $n }> = Sentinel::new();
        )*

        /// The Fortran sentinels: their declaration in Fortran (name and shape) and
        /// their common block's symbol (the block's name in lower case with a trailing
        /// underscore). `include/mpif-constants.h` is generated from this table.
        pub const SENTINELS: &[(&str, &str)] = &[$(($decl, $sym)),*];

        /// Addresses of the sentinels: (this library's copy, the copy the process
        /// resolves), in the order of [`SENTINELS`].
        fn sentinel_addrs() -> &'static [(usize, usize)] {
            static A: OnceLock<Vec<(usize, usize)>> = OnceLock::new();
            A.get_or_init(|| vec![$({
                let own = $id.addr();
                let name = concat!($sym, "\0");
                let name = CStr::from_bytes_with_nul(name.as_bytes()).unwrap_or(c"");
                // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name has no
                // other precondition; the result is used only as a number.
                let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
                (own, if found == 0 { own } else { found })
            }),*])
        }
    };
}

sentinels! {
    BOTTOM: 1, "rma_mpi_bottom_", "MPI_BOTTOM";
    IN_PLACE: 1, "rma_mpi_in_place_", "MPI_IN_PLACE";
    STATUS_IGNORE: STATUS_SIZE, "rma_mpi_status_ignore_", "MPI_STATUS_IGNORE(MPI_STATUS_SIZE)";
    STATUSES_IGNORE: STATUS_SIZE, "rma_mpi_statuses_ignore_", "MPI_STATUSES_IGNORE(MPI_STATUS_SIZE,1)";
    UNWEIGHTED: 1, "rma_mpi_unweighted_", "MPI_UNWEIGHTED(1)";
    WEIGHTS_EMPTY: 1, "rma_mpi_weights_empty_", "MPI_WEIGHTS_EMPTY(1)";
}

/// Indices into [`SENTINELS`].
const S_BOTTOM: usize = 0;
const S_IN_PLACE: usize = 1;
const S_STATUS_IGNORE: usize = 2;
const S_STATUSES_IGNORE: usize = 3;
const S_UNWEIGHTED: usize = 4;
const S_WEIGHTS_EMPTY: usize = 5;

/// Whether `p` is the address of sentinel `i`.
fn is_sentinel<T>(p: *const T, i: usize) -> bool {
    let a = p as usize;
    let (own, found) = sentinel_addrs()[i];
    a != 0 && (a == own || a == found)
}

/// A choice buffer as C takes it: MPI_BOTTOM and MPI_IN_PLACE become C's values.
fn buf(p: *const c_void) -> *const c_void {
    if is_sentinel(p, S_BOTTOM) {
        std::ptr::null()
    } else if is_sentinel(p, S_IN_PLACE) {
        std::ptr::without_provenance(usize::MAX)
    } else {
        p
    }
}

/// [`buf`] for a buffer C writes.
fn buf_mut(p: *mut c_void) -> *mut c_void {
    buf(p).cast_mut()
}

/// A status argument as C takes it: the ignored statuses become C's.
fn status(p: *mut c_int) -> *mut MpiStatus {
    if is_sentinel(p, S_STATUS_IGNORE) || is_sentinel(p, S_STATUSES_IGNORE) {
        std::ptr::without_provenance_mut(1)
    } else {
        p.cast()
    }
}

/// A weights argument of the distributed-graph routines as C takes it: MPI_UNWEIGHTED
/// and MPI_WEIGHTS_EMPTY become mpi.h's `(int *)2` and `(int *)3`.
fn weights(p: *const c_int) -> *const c_int {
    if is_sentinel(p, S_UNWEIGHTED) {
        std::ptr::without_provenance(2)
    } else if is_sentinel(p, S_WEIGHTS_EMPTY) {
        std::ptr::without_provenance(3)
    } else {
        p
    }
}

/// [`weights`] for an array C writes.
fn weights_mut(p: *mut c_int) -> *mut c_int {
    weights(p).cast_mut()
}

/// A Fortran index into an array of requests (from 1) for C's (from 0); MPI_UNDEFINED
/// (and any other negative value) stays itself.
fn index_out(i: c_int) -> c_int {
    if i >= 0 {
        i + 1
    } else {
        i
    }
}

/// Reads an argument passed by reference.
///
/// # Safety
/// `p` is valid for reading a `T` (Fortran passes every argument so).
unsafe fn rd<T: Copy>(p: *const T) -> T {
    // SAFETY: the caller's contract; Fortran data need not be aligned for Rust (a
    // common block may place an INTEGER(8) at an odd multiple of 4).
    unsafe { p.read_unaligned() }
}

/// Stores `rc` in IERROR.
///
/// # Safety
/// `ierror` is null or valid for writing an int.
unsafe fn done(ierror: *mut c_int, rc: c_int) {
    if !ierror.is_null() {
        // SAFETY: the caller's contract.
        unsafe { ierror.write_unaligned(rc) };
    }
}

/// Stores a C flag in a default LOGICAL.
///
/// # Safety
/// `p` is valid for writing an int.
unsafe fn put_logical(p: *mut c_int, v: c_int) {
    // SAFETY: the caller's contract.
    unsafe { p.write_unaligned(c_int::from(v != 0)) };
}

/// Reads a default LOGICAL argument as a C flag: 0 for `.FALSE.`, 1 for anything else.
///
/// # Safety
/// `p` is valid for reading an int.
unsafe fn get_logical(p: *const c_int) -> c_int {
    // SAFETY: the caller's contract.
    c_int::from(unsafe { rd(p) } != 0)
}

/// A Fortran string argument (`len` bytes at `s`) as a C string: trailing blanks
/// dropped, and leading ones if `both`; cut at a NUL.
///
/// # Safety
/// `s` is valid for reading `len` bytes.
unsafe fn str_in(s: *const c_char, len: usize, both: bool) -> CString {
    let bytes: &[u8] = if len == 0 || s.is_null() {
        &[]
    } else {
        // SAFETY: the caller's contract: the string's `len` bytes.
        unsafe { std::slice::from_raw_parts(s.cast::<u8>(), len) }
    };
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    let start = if both {
        bytes[..end].iter().position(|&b| b != b' ').unwrap_or(end)
    } else {
        0
    };
    CString::new(&bytes[start..end]).unwrap_or_default()
}

/// Copies the NUL-terminated contents of `src` into a Fortran string of `len` bytes
/// at `dst`, cut to fit and padded with blanks; the number of bytes copied.
///
/// # Safety
/// `dst` is valid for writing `len` bytes.
unsafe fn str_out(src: &[u8], dst: *mut c_char, len: usize) -> c_int {
    let text = src.split(|&b| b == 0).next().unwrap_or(&[]);
    let n = text.len().min(len);
    if len > 0 && !dst.is_null() {
        // SAFETY: the caller's contract: `len` writable bytes; n <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), dst.cast::<u8>(), n);
            std::ptr::write_bytes(dst.cast::<u8>().add(n), b' ', len - n);
        }
    }
    n as c_int
}

/// Room for any string the C interface returns (its longest, MPI_MAX_INFO_VAL, is
/// 1024 characters, and the NUL).
const STR_ROOM: usize = 1025;

/// The routines that only hand their arguments on: each calls the C entry point of
/// the same name with every argument translated by its kind and writes the result
/// code to IERROR (the last argument, after those listed). One line a routine:
/// `mpi_xxx_ => module::MPI_Xxx(argument: kind, ...);`, with the C function's
/// arguments in its order. The kinds, by what Fortran passes (a reference to the
/// argument) and what C receives:
///
/// - `int`: an INTEGER (a count, rank, tag, handle ...), `*const c_int`: its value.
/// - `aint`: an `INTEGER(KIND=MPI_ADDRESS_KIND)`, `*const isize`: its value.
/// - `logical`: a default LOGICAL going in, `*const c_int`: C's flag
///   ([`get_logical`]).
/// - `arr`: an INTEGER array (counts, displacements, ranks, handles) C reads,
///   `*const c_int`: as it is; also a LOGICAL array (MPI_CART_CREATE's PERIODS,
///   MPI_CART_SUB's REMAIN_DIMS), whose ints C reads as flags, a LOGICAL's reading.
/// - `out`: an INTEGER (or array) C writes, or reads and writes (an INOUT handle),
///   `*mut c_int`: as it is.
/// - `aint_arr`, `aint_out`: the same for `INTEGER(KIND=MPI_ADDRESS_KIND)`, `isize`.
/// - `in_buf`: a choice buffer C reads (or whose address alone it takes),
///   `*const c_void`: [`buf`] (MPI_BOTTOM, MPI_IN_PLACE).
/// - `out_buf`: a choice buffer C writes (or reads and writes), `*mut c_void`:
///   [`buf_mut`].
/// - `addr_out`: an address-sized variable (`INTEGER(KIND=MPI_ADDRESS_KIND)` or
///   `TYPE(C_PTR)`) that C stores an address in, `*mut c_void`: as it is.
/// - `status`: an INTEGER array of MPI_STATUS_SIZE C writes, laid out as C's
///   `MPI_Status` (or one (MPI_STATUS_SIZE, COUNT), COUNT C statuses in a row),
///   `*mut c_int`: [`status`] (MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE).
/// - `weights`, `weights_out`: a weights array of the distributed-graph routines,
///   `*const c_int` / `*mut c_int`: [`weights`] / [`weights_mut`] (MPI_UNWEIGHTED,
///   MPI_WEIGHTS_EMPTY).
/// - `triplets`: an INTEGER array (3, N), N triplets in a row, `*const c_int`: C's
///   `int ranges[][3]`.
macro_rules! fortran {
    (@ty int) => { *const c_int };
    (@ty aint) => { *const isize };
    (@ty logical) => { *const c_int };
    (@ty arr) => { *const c_int };
    (@ty out) => { *mut c_int };
    (@ty aint_arr) => { *const isize };
    (@ty aint_out) => { *mut isize };
    (@ty in_buf) => { *const c_void };
    (@ty out_buf) => { *mut c_void };
    (@ty addr_out) => { *mut c_void };
    (@ty status) => { *mut c_int };
    (@ty weights) => { *const c_int };
    (@ty weights_out) => { *mut c_int };
    (@ty triplets) => { *const c_int };

    (@arg int $a:ident) => { rd($a) };
    (@arg aint $a:ident) => { rd($a) };
    (@arg logical $a:ident) => { get_logical($a) };
    (@arg arr $a:ident) => { $a };
    (@arg out $a:ident) => { $a };
    (@arg aint_arr $a:ident) => { $a };
    (@arg aint_out $a:ident) => { $a };
    (@arg in_buf $a:ident) => { buf($a) };
    (@arg out_buf $a:ident) => { buf_mut($a) };
    (@arg addr_out $a:ident) => { $a };
    (@arg status $a:ident) => { status($a) };
    (@arg weights $a:ident) => { weights($a) };
    (@arg weights_out $a:ident) => { weights_mut($a) };
    (@arg triplets $a:ident) => { $a.cast() };

    ($(
        $(#[$attr:meta])*
        $f:ident => $m:ident::$c:ident($($a:ident: $k:ident),* $(,)?);
    )*) => {$(
        $(#[$attr])*
        #[no_mangle]
        pub unsafe extern "C" fn $f($($a: fortran!(@ty $k),)* ierror: *mut c_int) {
            // SAFETY: Fortran passes every argument by reference (gfortran's
            // convention), so each `int`, `aint` and `logical` is readable for `rd`
            // and `get_logical`, IERROR writable for `done`; the other kinds are
            // pointers C receives as the program gave them (the sentinels replaced by
            // C's own), to arrays and buffers of the sizes the call's other arguments
            // give, and for a nonblocking or persistent call left alone until its
            // request completes or is freed: MPI's contract, which the program keeps
            // as a C program would. C writes only through the pointers it is given
            // to write (`out`, `aint_out`, `addr_out`, `out_buf`, `status`,
            // `weights_out`). The functions of `c` have mpi.h's signatures.
            unsafe { done(ierror, $m::$c($(fortran!(@arg $k $a)),*)) }
        }
    )*};
}

/// MPI_COMM_SET_NAME and MPI_COMM_GET_NAME, and their likes for the other objects
/// with names (`set, get => C's set, C's get`): the object's handle, then the name, a
/// Fortran string with its hidden length, going in without its trailing blanks or
/// coming out cut to the variable and padded ([`str_in`], [`string_result`]).
macro_rules! object_names {
    ($($set:ident, $get:ident => $cset:path, $cget:path;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $set(
            obj: *const c_int,
            name: *const c_char,
            ierror: *mut c_int,
            name_len: usize,
        ) {
            // SAFETY: the handle is readable; NAME is a Fortran string of the hidden
            // length; IERROR is writable.
            unsafe {
                let name = str_in(name, name_len, false);
                done(ierror, $cset(rd(obj), name.as_ptr()))
            }
        }

        #[no_mangle]
        pub unsafe extern "C" fn $get(
            obj: *const c_int,
            name: *mut c_char,
            resultlen: *mut c_int,
            ierror: *mut c_int,
            name_len: usize,
        ) {
            // SAFETY: the handle is readable; the C routine writes at most
            // MPI_MAX_OBJECT_NAME (128) bytes into a STR_ROOM buffer; NAME has the
            // hidden length Fortran passes, RESULTLEN and IERROR are writable.
            unsafe {
                let o = rd(obj);
                string_result(|s, n| $cget(o, s, n), name, name_len, resultlen, ierror)
            }
        }
    )*};
}

/// C functions reached by their exported names, with mpi.h's signatures, rather than
/// through the module that defines them: those rma refused when this binding was
/// written (each reports MPI_ERR_UNSUPPORTED_OPERATION: `src/refused.rs`) and the
/// neighborhood collectives, new in the C interface. The Fortran routine does what the
/// C function does, refusal or not, wherever it is defined.
mod c {
    use crate::p2p::MpiStatus;
    use std::ffi::{c_int, c_void};

    extern "C" {
        pub(super) fn MPI_Testany(
            count: c_int,
            requests: *mut c_int,
            index: *mut c_int,
            flag: *mut c_int,
            status: *mut MpiStatus,
        ) -> c_int;
        pub(super) fn MPI_Testsome(
            incount: c_int,
            requests: *mut c_int,
            outcount: *mut c_int,
            indices: *mut c_int,
            statuses: *mut MpiStatus,
        ) -> c_int;
        pub(super) fn MPI_Waitsome(
            incount: c_int,
            requests: *mut c_int,
            outcount: *mut c_int,
            indices: *mut c_int,
            statuses: *mut MpiStatus,
        ) -> c_int;
        pub(super) fn MPI_Cancel(request: *mut c_int) -> c_int;
        pub(super) fn MPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) -> c_int;
        pub(super) fn MPI_Iscan(
            sendbuf: *const c_void,
            recvbuf: *mut c_void,
            count: c_int,
            datatype: c_int,
            op: c_int,
            comm: c_int,
            request: *mut c_int,
        ) -> c_int;
        pub(super) fn MPI_Iexscan(
            sendbuf: *const c_void,
            recvbuf: *mut c_void,
            count: c_int,
            datatype: c_int,
            op: c_int,
            comm: c_int,
            request: *mut c_int,
        ) -> c_int;
        pub(super) fn MPI_Neighbor_allgather(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: c_int,
            comm: c_int,
        ) -> c_int;
        pub(super) fn MPI_Ineighbor_allgather(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: c_int,
            comm: c_int,
            request: *mut c_int,
        ) -> c_int;
        pub(super) fn MPI_Neighbor_allgatherv(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcounts: *const c_int,
            displs: *const c_int,
            recvtype: c_int,
            comm: c_int,
        ) -> c_int;
        pub(super) fn MPI_Ineighbor_allgatherv(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcounts: *const c_int,
            displs: *const c_int,
            recvtype: c_int,
            comm: c_int,
            request: *mut c_int,
        ) -> c_int;
        pub(super) fn MPI_Neighbor_alltoall(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: c_int,
            comm: c_int,
        ) -> c_int;
        pub(super) fn MPI_Ineighbor_alltoall(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: c_int,
            comm: c_int,
            request: *mut c_int,
        ) -> c_int;
        pub(super) fn MPI_Neighbor_alltoallv(
            sendbuf: *const c_void,
            sendcounts: *const c_int,
            sdispls: *const c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcounts: *const c_int,
            rdispls: *const c_int,
            recvtype: c_int,
            comm: c_int,
        ) -> c_int;
        pub(super) fn MPI_Ineighbor_alltoallv(
            sendbuf: *const c_void,
            sendcounts: *const c_int,
            sdispls: *const c_int,
            sendtype: c_int,
            recvbuf: *mut c_void,
            recvcounts: *const c_int,
            rdispls: *const c_int,
            recvtype: c_int,
            comm: c_int,
            request: *mut c_int,
        ) -> c_int;
        pub(super) fn MPI_Neighbor_alltoallw(
            sendbuf: *const c_void,
            sendcounts: *const c_int,
            sdispls: *const isize,
            sendtypes: *const c_int,
            recvbuf: *mut c_void,
            recvcounts: *const c_int,
            rdispls: *const isize,
            recvtypes: *const c_int,
            comm: c_int,
        ) -> c_int;
        pub(super) fn MPI_Ineighbor_alltoallw(
            sendbuf: *const c_void,
            sendcounts: *const c_int,
            sdispls: *const isize,
            sendtypes: *const c_int,
            recvbuf: *mut c_void,
            recvcounts: *const c_int,
            rdispls: *const isize,
            recvtypes: *const c_int,
            comm: c_int,
            request: *mut c_int,
        ) -> c_int;
    }
}

// ---- the environment --------------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn mpi_init_(ierror: *mut c_int) {
    // SAFETY: MPI_Init takes null argc/argv; IERROR is Fortran's, writable.
    unsafe {
        done(
            ierror,
            env::MPI_Init(std::ptr::null_mut(), std::ptr::null_mut()),
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_init_thread_(
    required: *const c_int,
    provided: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: by-reference arguments, PROVIDED writable; argc/argv may be null.
    unsafe {
        let rc = env::MPI_Init_thread(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            rd(required),
            provided,
        );
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_initialized_(flag: *mut c_int, ierror: *mut c_int) {
    let mut f = 0;
    // SAFETY: `f` is a local int; FLAG is a writable LOGICAL, IERROR an int.
    unsafe {
        let rc = env::MPI_Initialized(&mut f);
        put_logical(flag, f);
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_finalized_(flag: *mut c_int, ierror: *mut c_int) {
    let mut f = 0;
    // SAFETY: `f` is a local int; FLAG is a writable LOGICAL, IERROR an int.
    unsafe {
        let rc = env::MPI_Finalized(&mut f);
        put_logical(flag, f);
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_is_thread_main_(flag: *mut c_int, ierror: *mut c_int) {
    let mut f = 0;
    // SAFETY: `f` is a local int; FLAG is a writable LOGICAL, IERROR an int.
    unsafe {
        let rc = env::MPI_Is_thread_main(&mut f);
        put_logical(flag, f);
        done(ierror, rc)
    }
}

fortran! {
    mpi_query_thread_ => env::MPI_Query_thread(provided: out);
    mpi_finalize_ => env::MPI_Finalize();
    mpi_abort_ => env::MPI_Abort(comm: int, errorcode: int);
}

#[no_mangle]
pub extern "C" fn mpi_wtime_() -> f64 {
    env::MPI_Wtime()
}

#[no_mangle]
pub extern "C" fn mpi_wtick_() -> f64 {
    env::MPI_Wtick()
}

/// MPI_PCONTROL(LEVEL): no IERROR in Fortran.
#[no_mangle]
pub unsafe extern "C" fn mpi_pcontrol_(level: *const c_int) {
    // SAFETY: LEVEL is readable.
    let level = unsafe { rd(level) };
    tool::MPI_Pcontrol(level);
}

fortran! {
    mpi_get_version_ => env::MPI_Get_version(version: out, subversion: out);
}

/// The Fortran form of a C routine that writes a string and its length.
///
/// # Safety
/// `f` writes at most [`STR_ROOM`] bytes to its first argument and an int to its
/// second; `out` is valid for `out_len` bytes, `resultlen` and `ierror` for an int.
unsafe fn string_result(
    f: impl FnOnce(*mut c_char, *mut c_int) -> c_int,
    out: *mut c_char,
    out_len: usize,
    resultlen: *mut c_int,
    ierror: *mut c_int,
) {
    let mut s = [0u8; STR_ROOM];
    let mut n = 0;
    let rc = f(s.as_mut_ptr().cast(), &mut n);
    // SAFETY: the caller's contract for `out`, `resultlen` and `ierror`.
    unsafe {
        if rc == 0 {
            resultlen.write_unaligned(str_out(&s, out, out_len));
        }
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_get_processor_name_(
    name: *mut c_char,
    resultlen: *mut c_int,
    ierror: *mut c_int,
    name_len: usize,
) {
    // SAFETY: the C routine writes at most MPI_MAX_PROCESSOR_NAME (256) bytes into a
    // STR_ROOM buffer; NAME has the hidden length Fortran passes.
    unsafe {
        string_result(
            |s, n| env::MPI_Get_processor_name(s, n),
            name,
            name_len,
            resultlen,
            ierror,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_get_library_version_(
    version: *mut c_char,
    resultlen: *mut c_int,
    ierror: *mut c_int,
    version_len: usize,
) {
    // SAFETY: the C routine writes at most MPI_MAX_LIBRARY_VERSION_STRING (256) bytes
    // into a STR_ROOM buffer; VERSION has the hidden length Fortran passes.
    unsafe {
        string_result(
            |s, n| env::MPI_Get_library_version(s, n),
            version,
            version_len,
            resultlen,
            ierror,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_error_string_(
    errorcode: *const c_int,
    string: *mut c_char,
    resultlen: *mut c_int,
    ierror: *mut c_int,
    string_len: usize,
) {
    // SAFETY: ERRORCODE is readable; the C routine writes at most MPI_MAX_ERROR_STRING
    // (512) bytes into a STR_ROOM buffer; STRING has the hidden length Fortran passes.
    unsafe {
        let code = rd(errorcode);
        string_result(
            |s, n| env::MPI_Error_string(code, s, n),
            string,
            string_len,
            resultlen,
            ierror,
        )
    }
}

fortran! {
    mpi_error_class_ => env::MPI_Error_class(errorcode: int, errorclass: out);
    mpi_alloc_mem_ => env::MPI_Alloc_mem(size: aint, info: int, baseptr: addr_out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_alloc_mem_cptr_(
    size: *const isize,
    info: *const c_int,
    baseptr: *mut c_void,
    ierror: *mut c_int,
) {
    // SAFETY: as mpi_alloc_mem_, whose arguments these are.
    unsafe { mpi_alloc_mem_(size, info, baseptr, ierror) }
}

fortran! {
    mpi_free_mem_ => env::MPI_Free_mem(base: out_buf);
    mpi_get_address_ => dtype::MPI_Get_address(location: in_buf, address: aint_out);
}

/// MPI_F_SYNC_REG: does nothing, but the compiler, which cannot see that, must assume
/// that the call reads and writes `buf`, so it keeps no copy of it in registers across
/// the call (MPI's cure for window memory that one-sided calls change behind the
/// compiler's back).
#[no_mangle]
pub extern "C" fn mpi_f_sync_reg_(_buf: *mut c_void) {}

// ---- error handlers ---------------------------------------------------------------

fortran! {
    mpi_comm_set_errhandler_ => comm::MPI_Comm_set_errhandler(comm: int, errhandler: int);
    mpi_win_set_errhandler_ => win::MPI_Win_set_errhandler(win: int, errhandler: int);
    mpi_comm_get_errhandler_ => comm::MPI_Comm_get_errhandler(comm: int, errhandler: out);
    mpi_win_get_errhandler_ => win::MPI_Win_get_errhandler(win: int, errhandler: out);
    mpi_errhandler_free_ => comm::MPI_Errhandler_free(errhandler: out);
}

// ---- communicators and groups -----------------------------------------------------

fortran! {
    mpi_comm_rank_ => comm::MPI_Comm_rank(comm: int, rank: out);
    mpi_comm_size_ => comm::MPI_Comm_size(comm: int, size: out);
    mpi_comm_split_ => comm::MPI_Comm_split(comm: int, color: int, key: int, newcomm: out);
    mpi_comm_split_type_ => comm::MPI_Comm_split_type(
        comm: int, split_type: int, key: int, info: int, newcomm: out);
    mpi_comm_dup_ => comm::MPI_Comm_dup(comm: int, newcomm: out);
    mpi_comm_free_ => comm::MPI_Comm_free(comm: out);
    mpi_comm_group_ => comm::MPI_Comm_group(comm: int, group: out);
    mpi_comm_compare_ => comm::MPI_Comm_compare(comm1: int, comm2: int, result: out);
    mpi_group_size_ => comm::MPI_Group_size(group: int, size: out);
    mpi_group_rank_ => comm::MPI_Group_rank(group: int, rank: out);
    mpi_group_free_ => comm::MPI_Group_free(group: out);
    mpi_group_incl_ => comm::MPI_Group_incl(group: int, n: int, ranks: arr, newgroup: out);
    mpi_group_excl_ => comm::MPI_Group_excl(group: int, n: int, ranks: arr, newgroup: out);
    mpi_group_translate_ranks_ => comm::MPI_Group_translate_ranks(
        group1: int, n: int, ranks1: arr, group2: int, ranks2: out);
    mpi_comm_create_ => comm::MPI_Comm_create(comm: int, group: int, newcomm: out);
    mpi_comm_create_group_ => comm::MPI_Comm_create_group(
        comm: int, group: int, tag: int, newcomm: out);
    mpi_comm_remote_size_ => comm::MPI_Comm_remote_size(comm: int, size: out);
    mpi_intercomm_create_ => comm::MPI_Intercomm_create(
        local_comm: int, local_leader: int, peer_comm: int, remote_leader: int, tag: int,
        newintercomm: out);
    mpi_group_union_ => comm::MPI_Group_union(group1: int, group2: int, newgroup: out);
    mpi_group_intersection_ => comm::MPI_Group_intersection(
        group1: int, group2: int, newgroup: out);
    mpi_group_difference_ => comm::MPI_Group_difference(group1: int, group2: int, newgroup: out);
    mpi_group_compare_ => comm::MPI_Group_compare(group1: int, group2: int, result: out);
    mpi_comm_call_errhandler_ => comm::MPI_Comm_call_errhandler(comm: int, errorcode: int);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_comm_test_inter_(
    comm: *const c_int,
    flag: *mut c_int,
    ierror: *mut c_int,
) {
    let mut f = 0;
    // SAFETY: COMM readable, FLAG a writable LOGICAL; `f` a local int.
    unsafe {
        let rc = comm::MPI_Comm_test_inter(rd(comm), &mut f);
        if rc == 0 {
            put_logical(flag, f);
        }
        done(ierror, rc)
    }
}

fortran! {
    mpi_intercomm_merge_ => comm::MPI_Intercomm_merge(
        intercomm: int, high: logical, newintracomm: out);
}

object_names! {
    mpi_comm_set_name_, mpi_comm_get_name_ => comm::MPI_Comm_set_name, comm::MPI_Comm_get_name;
}

/// Which object an attribute belongs to, for [`attr_value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AttrOf {
    Comm,
    Win,
}

/// mpi.h's predefined communicator attributes, MPI_TAG_UB (11) to MPI_LASTUSEDCODE
/// (17), whose C values point to an int.
const COMM_INT_ATTRS: std::ops::RangeInclusive<c_int> = 11..=17;
/// mpi.h's MPI_WIN_SIZE, whose C value points to an MPI_Aint.
const WIN_SIZE: c_int = 2;
/// mpi.h's MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR and MPI_WIN_MODEL, whose C values
/// point to an int.
const WIN_INT_ATTRS: std::ops::RangeInclusive<c_int> = 3..=5;

/// The Fortran value of attribute `keyval` whose C value is `v`: what `v` points to for
/// a predefined attribute that C gives as a pointer to an int or an MPI_Aint, `v`
/// itself (an address) for the others (MPI_WIN_BASE, the program's own).
///
/// # Safety
/// `v` is the value C's MPI_Comm_get_attr or MPI_Win_get_attr gave for `keyval` of
/// an object of kind `of`.
unsafe fn attr_value(of: AttrOf, keyval: c_int, v: *const c_void) -> isize {
    // SAFETY: the caller's contract: for these keyvals C's value points to the library's
    // int or MPI_Aint.
    unsafe {
        match of {
            AttrOf::Comm if COMM_INT_ATTRS.contains(&keyval) => {
                v.cast::<c_int>().read_unaligned() as isize
            }
            AttrOf::Win if keyval == WIN_SIZE => v.cast::<isize>().read_unaligned(),
            AttrOf::Win if WIN_INT_ATTRS.contains(&keyval) => {
                v.cast::<c_int>().read_unaligned() as isize
            }
            _ => v as isize,
        }
    }
}

/// MPI_COMM_GET_ATTR and MPI_WIN_GET_ATTR over C's `get`.
///
/// # Safety
/// `get` is C's MPI_Comm_get_attr (`of` Comm) or MPI_Win_get_attr (`of` Win); the
/// other arguments are Fortran's: HANDLE and KEYVAL readable, ATTRIBUTE_VAL a writable
/// INTEGER(KIND=MPI_ADDRESS_KIND), FLAG a writable LOGICAL.
unsafe fn get_attr(
    of: AttrOf,
    get: unsafe extern "C" fn(c_int, c_int, *mut c_void, *mut c_int) -> c_int,
    handle: *const c_int,
    keyval: *const c_int,
    attribute_val: *mut isize,
    flag: *mut c_int,
    ierror: *mut c_int,
) {
    let mut v: *mut c_void = std::ptr::null_mut();
    let mut f = 0;
    // SAFETY: the caller's contract; C stores a pointer in `v` and a flag in `f`.
    unsafe {
        let k = rd(keyval);
        let rc = get(rd(handle), k, (&raw mut v).cast(), &mut f);
        if rc == 0 {
            put_logical(flag, f);
            if f != 0 {
                attribute_val.write_unaligned(attr_value(of, k, v));
            }
        }
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_comm_get_attr_(
    comm: *const c_int,
    comm_keyval: *const c_int,
    attribute_val: *mut isize,
    flag: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: Fortran's arguments, as `get_attr` requires them; C's MPI_Comm_get_attr.
    unsafe {
        get_attr(
            AttrOf::Comm,
            comm::MPI_Comm_get_attr,
            comm,
            comm_keyval,
            attribute_val,
            flag,
            ierror,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_group_range_incl_(
    group: *const c_int,
    n: *const c_int,
    ranges: *const c_int,
    newgroup: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: by-reference arguments; RANGES is an INTEGER array (3, N), i.e. N
    // triplets in a row, C's `int ranges[][3]`.
    unsafe {
        let rc = comm::MPI_Group_range_incl(rd(group), rd(n), ranges.cast(), newgroup);
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_group_range_excl_(
    group: *const c_int,
    n: *const c_int,
    ranges: *const c_int,
    newgroup: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: by-reference arguments; RANGES is an INTEGER array (3, N), i.e. N
    // triplets in a row, C's `int ranges[][3]`.
    unsafe {
        let rc = comm::MPI_Group_range_excl(rd(group), rd(n), ranges.cast(), newgroup);
        done(ierror, rc)
    }
}

// ---- topologies -------------------------------------------------------------------

fortran! {
    mpi_cartdim_get_ => topo::MPI_Cartdim_get(comm: int, ndims: out);
    mpi_topo_test_ => topo::MPI_Topo_test(comm: int, status: out);
    mpi_dims_create_ => topo::MPI_Dims_create(nnodes: int, ndims: int, dims: out);
    mpi_cart_create_ => topo::MPI_Cart_create(
        comm_old: int, ndims: int, dims: arr, periods: arr, reorder: logical, comm_cart: out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_cart_get_(
    comm: *const c_int,
    maxdims: *const c_int,
    dims: *mut c_int,
    periods: *mut c_int,
    coords: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: by-reference arguments; DIMS, PERIODS (LOGICALs) and COORDS hold
    // MAXDIMS elements each, of which C writes the first min(MAXDIMS, ndims), the
    // flags into `p`, which has MAXDIMS.
    unsafe {
        let (c, max) = (rd(comm), rd(maxdims));
        let mut p = vec![0; usize::try_from(max).unwrap_or(0)];
        let rc = topo::MPI_Cart_get(c, max, dims, p.as_mut_ptr(), coords);
        let mut nd = 0;
        // the communicator MPI_Cart_get just read: Cartdim_get cannot fail on it
        if rc == 0 && topo::MPI_Cartdim_get(c, &mut nd) == 0 {
            for (i, &f) in p.iter().enumerate().take(usize::try_from(nd).unwrap_or(0)) {
                put_logical(periods.add(i), f);
            }
        }
        done(ierror, rc)
    }
}

fortran! {
    mpi_cart_coords_ => topo::MPI_Cart_coords(comm: int, rank: int, maxdims: int, coords: out);
    mpi_cart_rank_ => topo::MPI_Cart_rank(comm: int, coords: arr, rank: out);
    mpi_cart_shift_ => topo::MPI_Cart_shift(
        comm: int, direction: int, disp: int, rank_source: out, rank_dest: out);
    mpi_cart_sub_ => topo::MPI_Cart_sub(comm: int, remain_dims: arr, newcomm: out);
    mpi_dist_graph_create_adjacent_ => topo::MPI_Dist_graph_create_adjacent(
        comm_old: int, indegree: int, sources: arr, sourceweights: weights, outdegree: int,
        destinations: arr, destweights: weights, info: int, reorder: logical, comm_dist_graph: out);
    mpi_dist_graph_create_ => topo::MPI_Dist_graph_create(
        comm_old: int, n: int, sources: arr, degrees: arr, destinations: arr, edge_weights: weights,
        info: int, reorder: logical, comm_dist_graph: out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_dist_graph_neighbors_count_(
    comm: *const c_int,
    indegree: *mut c_int,
    outdegree: *mut c_int,
    weighted: *mut c_int,
    ierror: *mut c_int,
) {
    let mut f = 0;
    // SAFETY: COMM readable; the degrees writable INTEGERs, WEIGHTED a LOGICAL; `f` a
    // local int.
    unsafe {
        let rc = topo::MPI_Dist_graph_neighbors_count(rd(comm), indegree, outdegree, &mut f);
        if rc == 0 {
            put_logical(weighted, f);
        }
        done(ierror, rc)
    }
}

fortran! {
    mpi_dist_graph_neighbors_ => topo::MPI_Dist_graph_neighbors(
        comm: int, maxindegree: int, sources: out, sourceweights: weights_out, maxoutdegree: int,
        destinations: out, destweights: weights_out);
}

// ---- collectives ------------------------------------------------------------------

fortran! {
    mpi_barrier_ => coll::MPI_Barrier(comm: int);
    mpi_bcast_ => coll::MPI_Bcast(buffer: out_buf, count: int, datatype: int, root: int, comm: int);
    mpi_reduce_ => coll::MPI_Reduce(
        sendbuf: in_buf, recvbuf: out_buf, count: int, datatype: int, op: int, root: int,
        comm: int);
    mpi_allreduce_ => coll::MPI_Allreduce(
        sendbuf: in_buf, recvbuf: out_buf, count: int, datatype: int, op: int, comm: int);
    mpi_gather_ => coll::MPI_Gather(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, root: int, comm: int);
    mpi_allgather_ => coll::MPI_Allgather(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, comm: int);
    mpi_scatter_ => coll::MPI_Scatter(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, root: int, comm: int);
    mpi_gatherv_ => coll::MPI_Gatherv(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcounts: arr,
        displs: arr, recvtype: int, root: int, comm: int);
    mpi_scatterv_ => coll::MPI_Scatterv(
        sendbuf: in_buf, sendcounts: arr, displs: arr, sendtype: int, recvbuf: out_buf,
        recvcount: int, recvtype: int, root: int, comm: int);
    mpi_allgatherv_ => coll::MPI_Allgatherv(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcounts: arr,
        displs: arr, recvtype: int, comm: int);
    mpi_alltoall_ => coll::MPI_Alltoall(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, comm: int);
    mpi_alltoallv_ => coll::MPI_Alltoallv(
        sendbuf: in_buf, sendcounts: arr, sdispls: arr, sendtype: int, recvbuf: out_buf,
        recvcounts: arr, rdispls: arr, recvtype: int, comm: int);
    mpi_alltoallw_ => nbc::MPI_Alltoallw(
        sendbuf: in_buf, sendcounts: arr, sdispls: arr, sendtypes: arr, recvbuf: out_buf,
        recvcounts: arr, rdispls: arr, recvtypes: arr, comm: int);
    mpi_scan_ => coll::MPI_Scan(
        sendbuf: in_buf, recvbuf: out_buf, count: int, datatype: int, op: int, comm: int);
    mpi_exscan_ => coll::MPI_Exscan(
        sendbuf: in_buf, recvbuf: out_buf, count: int, datatype: int, op: int, comm: int);
    mpi_reduce_scatter_ => coll::MPI_Reduce_scatter(
        sendbuf: in_buf, recvbuf: out_buf, recvcounts: arr, datatype: int, op: int, comm: int);
    mpi_reduce_scatter_block_ => coll::MPI_Reduce_scatter_block(
        sendbuf: in_buf, recvbuf: out_buf, recvcount: int, datatype: int, op: int, comm: int);
}

// ---- nonblocking collectives ------------------------------------------------------

fortran! {
    mpi_ibarrier_ => nbc::MPI_Ibarrier(comm: int, request: out);
    mpi_ibcast_ => nbc::MPI_Ibcast(
        buffer: out_buf, count: int, datatype: int, root: int, comm: int, request: out);
    mpi_iallreduce_ => nbc::MPI_Iallreduce(
        sendbuf: in_buf, recvbuf: out_buf, count: int, datatype: int, op: int, comm: int,
        request: out);
    mpi_ireduce_ => nbc::MPI_Ireduce(
        sendbuf: in_buf, recvbuf: out_buf, count: int, datatype: int, op: int, root: int, comm: int,
        request: out);
    mpi_igather_ => nbc::MPI_Igather(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, root: int, comm: int, request: out);
    mpi_igatherv_ => nbc::MPI_Igatherv(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcounts: arr,
        displs: arr, recvtype: int, root: int, comm: int, request: out);
    mpi_iallgather_ => nbc::MPI_Iallgather(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, comm: int, request: out);
    mpi_iallgatherv_ => nbc::MPI_Iallgatherv(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcounts: arr,
        displs: arr, recvtype: int, comm: int, request: out);
    mpi_iscatter_ => nbc::MPI_Iscatter(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, root: int, comm: int, request: out);
    mpi_iscatterv_ => nbc::MPI_Iscatterv(
        sendbuf: in_buf, sendcounts: arr, displs: arr, sendtype: int, recvbuf: out_buf,
        recvcount: int, recvtype: int, root: int, comm: int, request: out);
    mpi_ialltoall_ => nbc::MPI_Ialltoall(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, comm: int, request: out);
    mpi_ialltoallv_ => nbc::MPI_Ialltoallv(
        sendbuf: in_buf, sendcounts: arr, sdispls: arr, sendtype: int, recvbuf: out_buf,
        recvcounts: arr, rdispls: arr, recvtype: int, comm: int, request: out);
    mpi_ialltoallw_ => nbc::MPI_Ialltoallw(
        sendbuf: in_buf, sendcounts: arr, sdispls: arr, sendtypes: arr, recvbuf: out_buf,
        recvcounts: arr, rdispls: arr, recvtypes: arr, comm: int, request: out);
    mpi_ireduce_scatter_ => nbc::MPI_Ireduce_scatter(
        sendbuf: in_buf, recvbuf: out_buf, recvcounts: arr, datatype: int, op: int, comm: int,
        request: out);
    mpi_ireduce_scatter_block_ => nbc::MPI_Ireduce_scatter_block(
        sendbuf: in_buf, recvbuf: out_buf, recvcount: int, datatype: int, op: int, comm: int,
        request: out);
    mpi_iscan_ => c::MPI_Iscan(
        sendbuf: in_buf, recvbuf: out_buf, count: int, datatype: int, op: int, comm: int,
        request: out);
    mpi_iexscan_ => c::MPI_Iexscan(
        sendbuf: in_buf, recvbuf: out_buf, count: int, datatype: int, op: int, comm: int,
        request: out);
}

// ---- neighborhood collectives ----------------------------------------------------

fortran! {
    mpi_neighbor_allgather_ => c::MPI_Neighbor_allgather(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, comm: int);
    mpi_ineighbor_allgather_ => c::MPI_Ineighbor_allgather(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, comm: int, request: out);
    mpi_neighbor_allgatherv_ => c::MPI_Neighbor_allgatherv(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcounts: arr,
        displs: arr, recvtype: int, comm: int);
    mpi_ineighbor_allgatherv_ => c::MPI_Ineighbor_allgatherv(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcounts: arr,
        displs: arr, recvtype: int, comm: int, request: out);
    mpi_neighbor_alltoall_ => c::MPI_Neighbor_alltoall(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, comm: int);
    mpi_ineighbor_alltoall_ => c::MPI_Ineighbor_alltoall(
        sendbuf: in_buf, sendcount: int, sendtype: int, recvbuf: out_buf, recvcount: int,
        recvtype: int, comm: int, request: out);
    mpi_neighbor_alltoallv_ => c::MPI_Neighbor_alltoallv(
        sendbuf: in_buf, sendcounts: arr, sdispls: arr, sendtype: int, recvbuf: out_buf,
        recvcounts: arr, rdispls: arr, recvtype: int, comm: int);
    mpi_ineighbor_alltoallv_ => c::MPI_Ineighbor_alltoallv(
        sendbuf: in_buf, sendcounts: arr, sdispls: arr, sendtype: int, recvbuf: out_buf,
        recvcounts: arr, rdispls: arr, recvtype: int, comm: int, request: out);
    mpi_neighbor_alltoallw_ => c::MPI_Neighbor_alltoallw(
        sendbuf: in_buf, sendcounts: arr, sdispls: aint_arr, sendtypes: arr, recvbuf: out_buf,
        recvcounts: arr, rdispls: aint_arr, recvtypes: arr, comm: int);
    mpi_ineighbor_alltoallw_ => c::MPI_Ineighbor_alltoallw(
        sendbuf: in_buf, sendcounts: arr, sdispls: aint_arr, sendtypes: arr, recvbuf: out_buf,
        recvcounts: arr, rdispls: aint_arr, recvtypes: arr, comm: int, request: out);
}

// ---- the program's own reduction operations ---------------------------------------

/// The Fortran MPI_User_function, `SUBROUTINE USER_FN(INVEC, INOUTVEC, LEN,
/// DATATYPE)`: every argument by reference, as C's `MPI_User_function` takes them.
type UserFunction = unsafe extern "C-unwind" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_int);

#[no_mangle]
pub unsafe extern "C" fn mpi_op_create_(
    user_fn: Option<UserFunction>,
    commute: *const c_int,
    op: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: USER_FN is the address of the program's subroutine (Fortran passes a
    // procedure so), which C calls with pointers to the vectors, the length and the
    // datatype: the by-reference arguments it takes. COMMUTE is a LOGICAL, OP a
    // writable INTEGER.
    unsafe { done(ierror, op::MPI_Op_create(user_fn, get_logical(commute), op)) }
}

fortran! {
    mpi_op_free_ => op::MPI_Op_free(op: out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_op_commutative_(
    op: *const c_int,
    commute: *mut c_int,
    ierror: *mut c_int,
) {
    let mut f = 0;
    // SAFETY: OP readable, COMMUTE a writable LOGICAL; `f` a local int.
    unsafe {
        let rc = op::MPI_Op_commutative(rd(op), &mut f);
        if rc == 0 {
            put_logical(commute, f);
        }
        done(ierror, rc)
    }
}

fortran! {
    mpi_reduce_local_ => op::MPI_Reduce_local(
        inbuf: in_buf, inoutbuf: out_buf, count: int, datatype: int, op: int);
}

// ---- point to point ---------------------------------------------------------------

fortran! {
    mpi_send_ => p2p::MPI_Send(
        buffer: in_buf, count: int, datatype: int, dest: int, tag: int, comm: int);
    mpi_recv_ => p2p::MPI_Recv(
        buffer: out_buf, count: int, datatype: int, source: int, tag: int, comm: int, st: status);
    mpi_sendrecv_ => p2p::MPI_Sendrecv(
        sendbuf: in_buf, sendcount: int, sendtype: int, dest: int, sendtag: int, recvbuf: out_buf,
        recvcount: int, recvtype: int, source: int, recvtag: int, comm: int, st: status);
    mpi_isend_ => p2p::MPI_Isend(
        buffer: in_buf, count: int, datatype: int, dest: int, tag: int, comm: int, request: out);
    mpi_irecv_ => p2p::MPI_Irecv(
        buffer: out_buf, count: int, datatype: int, source: int, tag: int, comm: int, request: out);
    mpi_wait_ => p2p::MPI_Wait(request: out, st: status);
    mpi_waitall_ => p2p::MPI_Waitall(count: int, requests: out, statuses: status);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_test_(
    request: *mut c_int,
    flag: *mut c_int,
    st: *mut c_int,
    ierror: *mut c_int,
) {
    let mut f = 0;
    // SAFETY: REQUEST is a writable INTEGER, FLAG a LOGICAL; STATUS is
    // MPI_STATUS_SIZE INTEGERs laid out as C's MPI_Status, or MPI_STATUS_IGNORE.
    unsafe {
        let rc = p2p::MPI_Test(request, &mut f, status(st));
        put_logical(flag, f);
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_get_count_(
    st: *const c_int,
    datatype: *const c_int,
    count: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: STATUS is MPI_STATUS_SIZE INTEGERs laid out as C's MPI_Status; COUNT
    // is a writable INTEGER.
    unsafe {
        let rc = p2p::MPI_Get_count(st.cast::<MpiStatus>(), rd(datatype), count);
        done(ierror, rc)
    }
}

fortran! {
    mpi_probe_ => p2p::MPI_Probe(source: int, tag: int, comm: int, st: status);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_iprobe_(
    source: *const c_int,
    tag: *const c_int,
    comm: *const c_int,
    flag: *mut c_int,
    st: *mut c_int,
    ierror: *mut c_int,
) {
    let mut f = 0;
    // SAFETY: by-reference arguments, FLAG a writable LOGICAL; STATUS is
    // MPI_STATUS_SIZE INTEGERs laid out as C's MPI_Status, or MPI_STATUS_IGNORE.
    unsafe {
        let rc = p2p::MPI_Iprobe(rd(source), rd(tag), rd(comm), &mut f, status(st));
        if rc == 0 {
            put_logical(flag, f);
        }
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_waitany_(
    count: *const c_int,
    requests: *mut c_int,
    index: *mut c_int,
    st: *mut c_int,
    ierror: *mut c_int,
) {
    let mut i = 0;
    // SAFETY: REQUESTS holds COUNT INTEGERs, INDEX is writable; STATUS is
    // MPI_STATUS_SIZE INTEGERs laid out as C's MPI_Status, or MPI_STATUS_IGNORE.
    unsafe {
        let rc = p2p::MPI_Waitany(rd(count), requests, &mut i, status(st));
        if rc == 0 {
            index.write_unaligned(index_out(i));
        }
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_testall_(
    count: *const c_int,
    requests: *mut c_int,
    flag: *mut c_int,
    statuses: *mut c_int,
    ierror: *mut c_int,
) {
    let mut f = 0;
    // SAFETY: REQUESTS holds COUNT INTEGERs, FLAG is a writable LOGICAL; STATUSES is
    // an (MPI_STATUS_SIZE, COUNT) array, i.e. COUNT C statuses in a row, or
    // MPI_STATUSES_IGNORE.
    unsafe {
        let rc = p2p::MPI_Testall(rd(count), requests, &mut f, status(statuses));
        if rc == 0 {
            put_logical(flag, f);
        }
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_testany_(
    count: *const c_int,
    requests: *mut c_int,
    index: *mut c_int,
    flag: *mut c_int,
    st: *mut c_int,
    ierror: *mut c_int,
) {
    let (mut i, mut f) = (0, 0);
    // SAFETY: REQUESTS holds COUNT INTEGERs, INDEX and FLAG (a LOGICAL) are writable;
    // STATUS is MPI_STATUS_SIZE INTEGERs laid out as C's MPI_Status, or
    // MPI_STATUS_IGNORE; the C function has mpi.h's signature, which `c` declares.
    unsafe {
        let rc = c::MPI_Testany(rd(count), requests, &mut i, &mut f, status(st));
        if rc == 0 {
            index.write_unaligned(index_out(i));
            put_logical(flag, f);
        }
        done(ierror, rc)
    }
}

/// MPI_WAITSOME and MPI_TESTSOME, over C's function `f`: the indices it writes made
/// Fortran's.
///
/// # Safety
/// As those routines': REQUESTS and INDICES hold INCOUNT INTEGERs, OUTCOUNT is
/// writable, STATUSES is INCOUNT statuses or MPI_STATUSES_IGNORE; `f` is C's
/// MPI_Waitsome or MPI_Testsome.
unsafe fn some(
    f: unsafe extern "C" fn(c_int, *mut c_int, *mut c_int, *mut c_int, *mut MpiStatus) -> c_int,
    incount: *const c_int,
    requests: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut c_int,
    ierror: *mut c_int,
) {
    let mut n = 0;
    // SAFETY: the caller's contract; C writes `n` indices (or none, `n` being
    // MPI_UNDEFINED), at most INCOUNT.
    unsafe {
        let rc = f(rd(incount), requests, &mut n, indices, status(statuses));
        if rc == 0 {
            outcount.write_unaligned(n);
            for k in 0..usize::try_from(n).unwrap_or(0) {
                let p = indices.add(k);
                p.write_unaligned(index_out(p.read_unaligned()));
            }
        }
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_waitsome_(
    incount: *const c_int,
    requests: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: Fortran's arguments, as `some` requires them; C's MPI_Waitsome.
    unsafe {
        some(
            c::MPI_Waitsome,
            incount,
            requests,
            outcount,
            indices,
            statuses,
            ierror,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_testsome_(
    incount: *const c_int,
    requests: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: Fortran's arguments, as `some` requires them; C's MPI_Testsome.
    unsafe {
        some(
            c::MPI_Testsome,
            incount,
            requests,
            outcount,
            indices,
            statuses,
            ierror,
        )
    }
}

fortran! {
    mpi_send_init_ => p2p::MPI_Send_init(
        buffer: in_buf, count: int, datatype: int, dest: int, tag: int, comm: int, request: out);
    mpi_recv_init_ => p2p::MPI_Recv_init(
        buffer: out_buf, count: int, datatype: int, source: int, tag: int, comm: int, request: out);
    mpi_start_ => p2p::MPI_Start(request: out);
    mpi_cancel_ => c::MPI_Cancel(request: out);
    mpi_startall_ => p2p::MPI_Startall(count: int, requests: out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_test_cancelled_(
    st: *const c_int,
    flag: *mut c_int,
    ierror: *mut c_int,
) {
    let mut f = 0;
    // SAFETY: STATUS is MPI_STATUS_SIZE INTEGERs laid out as C's MPI_Status, FLAG a
    // writable LOGICAL; the C function has mpi.h's signature, which `c` declares.
    unsafe {
        let rc = c::MPI_Test_cancelled(st.cast::<MpiStatus>(), &mut f);
        if rc == 0 {
            put_logical(flag, f);
        }
        done(ierror, rc)
    }
}

fortran! {
    mpi_request_free_ => p2p::MPI_Request_free(request: out);
}

// ---- datatypes --------------------------------------------------------------------

fortran! {
    mpi_type_contiguous_ => dtype::MPI_Type_contiguous(count: int, oldtype: int, newtype: out);
    mpi_type_vector_ => dtype::MPI_Type_vector(
        count: int, blocklength: int, stride: int, oldtype: int, newtype: out);
    mpi_type_dup_ => dtype::MPI_Type_dup(oldtype: int, newtype: out);
    mpi_type_commit_ => dtype::MPI_Type_commit(datatype: out);
    mpi_type_free_ => dtype::MPI_Type_free(datatype: out);
    mpi_type_size_ => dtype::MPI_Type_size(datatype: int, size: out);
    mpi_type_create_hvector_ => dtype::MPI_Type_create_hvector(
        count: int, blocklength: int, stride: aint, oldtype: int, newtype: out);
    mpi_type_indexed_ => dtype::MPI_Type_indexed(
        count: int, blocklengths: arr, displacements: arr, oldtype: int, newtype: out);
    mpi_type_create_hindexed_ => dtype::MPI_Type_create_hindexed(
        count: int, blocklengths: arr, displacements: aint_arr, oldtype: int, newtype: out);
    mpi_type_create_indexed_block_ => dtype::MPI_Type_create_indexed_block(
        count: int, blocklength: int, displacements: arr, oldtype: int, newtype: out);
    mpi_type_create_hindexed_block_ => dtype::MPI_Type_create_hindexed_block(
        count: int, blocklength: int, displacements: aint_arr, oldtype: int, newtype: out);
    mpi_type_create_struct_ => dtype::MPI_Type_create_struct(
        count: int, blocklengths: arr, displacements: aint_arr, types: arr, newtype: out);
    mpi_type_create_subarray_ => dtype::MPI_Type_create_subarray(
        ndims: int, sizes: arr, subsizes: arr, starts: arr, order: int, oldtype: int, newtype: out);
    mpi_type_create_resized_ => dtype::MPI_Type_create_resized(
        oldtype: int, lb: aint, extent: aint, newtype: out);
    mpi_type_get_extent_ => dtype::MPI_Type_get_extent(
        datatype: int, lb: aint_out, extent: aint_out);
    mpi_type_get_true_extent_ => dtype::MPI_Type_get_true_extent(
        datatype: int, true_lb: aint_out, true_extent: aint_out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_type_hvector_(
    count: *const c_int,
    blocklength: *const c_int,
    stride: *const c_int,
    oldtype: *const c_int,
    newtype: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: by-reference arguments, NEWTYPE writable. MPI-1's Fortran routine takes
    // the stride as a default INTEGER (MPI_TYPE_CREATE_HVECTOR an address).
    unsafe {
        let rc = dtype::MPI_Type_hvector(
            rd(count),
            rd(blocklength),
            rd(stride) as isize,
            rd(oldtype),
            newtype,
        );
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_type_hindexed_(
    count: *const c_int,
    blocklengths: *const c_int,
    displacements: *const c_int,
    oldtype: *const c_int,
    newtype: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: by-reference arguments; the arrays hold COUNT INTEGERs each. MPI-1's
    // Fortran routine takes the displacements as default INTEGERs (bytes), which C
    // takes as addresses.
    unsafe {
        let n = rd(count);
        let d: Vec<isize> = (0..usize::try_from(n).unwrap_or(0))
            .map(|i| rd(displacements.add(i)) as isize)
            .collect();
        let rc = dtype::MPI_Type_hindexed(n, blocklengths, d.as_ptr(), rd(oldtype), newtype);
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_type_size_x_(
    datatype: *const c_int,
    size: *mut i64,
    ierror: *mut c_int,
) {
    let mut n = 0;
    // SAFETY: DATATYPE readable, SIZE a writable INTEGER(KIND=MPI_COUNT_KIND).
    unsafe {
        let rc = dtype::MPI_Type_size_x(rd(datatype), &mut n);
        if rc == 0 {
            size.write_unaligned(n);
        }
        done(ierror, rc)
    }
}

fortran! {
    mpi_type_get_envelope_ => dtype::MPI_Type_get_envelope(
        datatype: int, num_integers: out, num_addresses: out, num_datatypes: out, combiner: out);
    mpi_type_get_contents_ => dtype::MPI_Type_get_contents(
        datatype: int, max_integers: int, max_addresses: int, max_datatypes: int,
        array_of_integers: out, array_of_addresses: aint_out, array_of_datatypes: out);
}

object_names! {
    mpi_type_set_name_, mpi_type_get_name_ => dtype::MPI_Type_set_name, dtype::MPI_Type_get_name;
}

#[no_mangle]
pub unsafe extern "C" fn mpi_aint_add_(base: *const isize, disp: *const isize) -> isize {
    // SAFETY: both INTEGER(KIND=MPI_ADDRESS_KIND) arguments are readable.
    unsafe { dtype::MPI_Aint_add(rd(base), rd(disp)) }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_aint_diff_(addr1: *const isize, addr2: *const isize) -> isize {
    // SAFETY: both INTEGER(KIND=MPI_ADDRESS_KIND) arguments are readable.
    unsafe { dtype::MPI_Aint_diff(rd(addr1), rd(addr2)) }
}

// ---- info -------------------------------------------------------------------------

fortran! {
    mpi_info_create_ => env::MPI_Info_create(info: out);
    mpi_info_free_ => env::MPI_Info_free(info: out);
    mpi_info_dup_ => env::MPI_Info_dup(info: int, newinfo: out);
    mpi_info_get_nkeys_ => env::MPI_Info_get_nkeys(info: int, nkeys: out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_info_set_(
    info: *const c_int,
    key: *const c_char,
    value: *const c_char,
    ierror: *mut c_int,
    key_len: usize,
    value_len: usize,
) {
    // SAFETY: INFO readable; KEY and VALUE are Fortran strings of the hidden lengths.
    unsafe {
        let k = str_in(key, key_len, true);
        let v = str_in(value, value_len, true);
        done(ierror, env::MPI_Info_set(rd(info), k.as_ptr(), v.as_ptr()))
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_info_delete_(
    info: *const c_int,
    key: *const c_char,
    ierror: *mut c_int,
    key_len: usize,
) {
    // SAFETY: INFO readable; KEY is a Fortran string of the hidden length.
    unsafe {
        let k = str_in(key, key_len, true);
        done(ierror, env::MPI_Info_delete(rd(info), k.as_ptr()))
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_info_get_(
    info: *const c_int,
    key: *const c_char,
    valuelen: *const c_int,
    value: *mut c_char,
    flag: *mut c_int,
    ierror: *mut c_int,
    key_len: usize,
    value_len: usize,
) {
    // SAFETY: INFO and VALUELEN readable, FLAG a writable LOGICAL; KEY and VALUE are
    // Fortran strings of the hidden lengths; C writes at most `n` + 1 bytes into a
    // buffer of `n` + 1.
    unsafe {
        let k = str_in(key, key_len, true);
        // never more than VALUE can take
        let n = usize::try_from(rd(valuelen)).unwrap_or(0).min(value_len);
        let mut v = vec![0u8; n + 1];
        let mut f = 0;
        let rc = env::MPI_Info_get(
            rd(info),
            k.as_ptr(),
            n as c_int,
            v.as_mut_ptr().cast(),
            &mut f,
        );
        if rc == 0 {
            put_logical(flag, f);
            if f != 0 {
                str_out(&v, value, value_len);
            }
        }
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_info_get_valuelen_(
    info: *const c_int,
    key: *const c_char,
    valuelen: *mut c_int,
    flag: *mut c_int,
    ierror: *mut c_int,
    key_len: usize,
) {
    // SAFETY: INFO readable, VALUELEN a writable INTEGER, FLAG a LOGICAL; KEY is a
    // Fortran string of the hidden length.
    unsafe {
        let k = str_in(key, key_len, true);
        let mut f = 0;
        let rc = env::MPI_Info_get_valuelen(rd(info), k.as_ptr(), valuelen, &mut f);
        if rc == 0 {
            put_logical(flag, f);
        }
        done(ierror, rc)
    }
}

#[no_mangle]
pub unsafe extern "C" fn mpi_info_get_nthkey_(
    info: *const c_int,
    n: *const c_int,
    key: *mut c_char,
    ierror: *mut c_int,
    key_len: usize,
) {
    let mut k = [0u8; STR_ROOM];
    // SAFETY: INFO and N readable; C writes at most MPI_MAX_INFO_KEY + 1 (256) bytes
    // into a STR_ROOM buffer; KEY is a Fortran string of the hidden length.
    unsafe {
        let rc = env::MPI_Info_get_nthkey(rd(info), rd(n), k.as_mut_ptr().cast());
        if rc == 0 {
            str_out(&k, key, key_len);
        }
        done(ierror, rc)
    }
}

// ---- windows ----------------------------------------------------------------------

fortran! {
    mpi_win_create_ => win::MPI_Win_create(
        base: out_buf, size: aint, disp_unit: int, info: int, comm: int, win: out);
    mpi_win_allocate_ => win::MPI_Win_allocate(
        size: aint, disp_unit: int, info: int, comm: int, baseptr: addr_out, win: out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_win_allocate_cptr_(
    size: *const isize,
    disp_unit: *const c_int,
    info: *const c_int,
    comm: *const c_int,
    baseptr: *mut c_void,
    win: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: as mpi_win_allocate_, whose arguments these are.
    unsafe { mpi_win_allocate_(size, disp_unit, info, comm, baseptr, win, ierror) }
}

fortran! {
    mpi_win_allocate_shared_ => win::MPI_Win_allocate_shared(
        size: aint, disp_unit: int, info: int, comm: int, baseptr: addr_out, win: out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_win_allocate_shared_cptr_(
    size: *const isize,
    disp_unit: *const c_int,
    info: *const c_int,
    comm: *const c_int,
    baseptr: *mut c_void,
    win: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: as mpi_win_allocate_shared_, whose arguments these are.
    unsafe { mpi_win_allocate_shared_(size, disp_unit, info, comm, baseptr, win, ierror) }
}

fortran! {
    mpi_win_shared_query_ => win::MPI_Win_shared_query(
        win: int, rank: int, size: aint_out, disp_unit: out, baseptr: addr_out);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_win_shared_query_cptr_(
    win: *const c_int,
    rank: *const c_int,
    size: *mut isize,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
    ierror: *mut c_int,
) {
    // SAFETY: as mpi_win_shared_query_, whose arguments these are.
    unsafe { mpi_win_shared_query_(win, rank, size, disp_unit, baseptr, ierror) }
}

fortran! {
    mpi_win_create_dynamic_ => win::MPI_Win_create_dynamic(info: int, comm: int, win: out);
    mpi_win_free_ => win::MPI_Win_free(win: out);
    mpi_win_get_group_ => win::MPI_Win_get_group(win: int, group: out);
    mpi_win_get_info_ => win::MPI_Win_get_info(win: int, info_used: out);
    mpi_win_attach_ => win::MPI_Win_attach(win: int, base: out_buf, size: aint);
    mpi_win_detach_ => win::MPI_Win_detach(win: int, base: in_buf);
    mpi_win_set_info_ => win::MPI_Win_set_info(win: int, info: int);
    mpi_win_fence_ => win::MPI_Win_fence(assert: int, win: int);
    mpi_win_start_ => win::MPI_Win_start(group: int, assert: int, win: int);
    mpi_win_post_ => win::MPI_Win_post(group: int, assert: int, win: int);
    mpi_win_complete_ => win::MPI_Win_complete(win: int);
    mpi_win_wait_ => win::MPI_Win_wait(win: int);
    mpi_win_lock_ => win::MPI_Win_lock(lock_type: int, rank: int, assert: int, win: int);
    mpi_win_unlock_ => win::MPI_Win_unlock(rank: int, win: int);
    mpi_win_lock_all_ => win::MPI_Win_lock_all(assert: int, win: int);
    mpi_win_unlock_all_ => win::MPI_Win_unlock_all(win: int);
    mpi_win_flush_ => win::MPI_Win_flush(rank: int, win: int);
    mpi_win_flush_all_ => win::MPI_Win_flush_all(win: int);
    mpi_win_flush_local_ => win::MPI_Win_flush_local(rank: int, win: int);
    mpi_win_flush_local_all_ => win::MPI_Win_flush_local_all(win: int);
    mpi_win_sync_ => win::MPI_Win_sync(win: int);
}

#[no_mangle]
pub unsafe extern "C" fn mpi_win_test_(win: *const c_int, flag: *mut c_int, ierror: *mut c_int) {
    let mut f = 0;
    // SAFETY: WIN readable, FLAG a writable LOGICAL; `f` a local int.
    unsafe {
        let rc = win::MPI_Win_test(rd(win), &mut f);
        put_logical(flag, f);
        done(ierror, rc)
    }
}

fortran! {
    mpi_win_call_errhandler_ => win::MPI_Win_call_errhandler(win: int, errorcode: int);
}

object_names! {
    mpi_win_set_name_, mpi_win_get_name_ => win::MPI_Win_set_name, win::MPI_Win_get_name;
}

#[no_mangle]
pub unsafe extern "C" fn mpi_win_get_attr_(
    win: *const c_int,
    win_keyval: *const c_int,
    attribute_val: *mut isize,
    flag: *mut c_int,
    ierror: *mut c_int,
) {
    // SAFETY: Fortran's arguments, as `get_attr` requires them; C's MPI_Win_get_attr.
    unsafe {
        get_attr(
            AttrOf::Win,
            win::MPI_Win_get_attr,
            win,
            win_keyval,
            attribute_val,
            flag,
            ierror,
        )
    }
}

// ---- one-sided communication ------------------------------------------------------

fortran! {
    mpi_put_ => win::MPI_Put(
        origin_addr: in_buf, origin_count: int, origin_datatype: int, target_rank: int,
        target_disp: aint, target_count: int, target_datatype: int, win: int);
    mpi_get_ => win::MPI_Get(
        origin_addr: out_buf, origin_count: int, origin_datatype: int, target_rank: int,
        target_disp: aint, target_count: int, target_datatype: int, win: int);
    mpi_accumulate_ => win::MPI_Accumulate(
        origin_addr: in_buf, origin_count: int, origin_datatype: int, target_rank: int,
        target_disp: aint, target_count: int, target_datatype: int, op: int, win: int);
    mpi_get_accumulate_ => win::MPI_Get_accumulate(
        origin_addr: in_buf, origin_count: int, origin_datatype: int, result_addr: out_buf,
        result_count: int, result_datatype: int, target_rank: int, target_disp: aint,
        target_count: int, target_datatype: int, op: int, win: int);
    mpi_fetch_and_op_ => win::MPI_Fetch_and_op(
        origin_addr: in_buf, result_addr: out_buf, datatype: int, target_rank: int,
        target_disp: aint, op: int, win: int);
    mpi_compare_and_swap_ => win::MPI_Compare_and_swap(
        origin_addr: in_buf, compare_addr: in_buf, result_addr: out_buf, datatype: int,
        target_rank: int, target_disp: aint, win: int);
    mpi_rput_ => win::MPI_Rput(
        origin_addr: in_buf, origin_count: int, origin_datatype: int, target_rank: int,
        target_disp: aint, target_count: int, target_datatype: int, win: int, request: out);
    mpi_rget_ => win::MPI_Rget(
        origin_addr: out_buf, origin_count: int, origin_datatype: int, target_rank: int,
        target_disp: aint, target_count: int, target_datatype: int, win: int, request: out);
    mpi_raccumulate_ => win::MPI_Raccumulate(
        origin_addr: in_buf, origin_count: int, origin_datatype: int, target_rank: int,
        target_disp: aint, target_count: int, target_datatype: int, op: int, win: int,
        request: out);
    mpi_rget_accumulate_ => win::MPI_Rget_accumulate(
        origin_addr: in_buf, origin_count: int, origin_datatype: int, result_addr: out_buf,
        result_count: int, result_datatype: int, target_rank: int, target_disp: aint,
        target_count: int, target_datatype: int, op: int, win: int, request: out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_going_in_lose_their_blanks_and_coming_out_get_them() {
        let s = b"  no_locks   ";
        // SAFETY: `s` is the string with its length.
        let c = unsafe { str_in(s.as_ptr().cast(), s.len(), true) };
        assert_eq!(c.as_bytes(), b"no_locks");
        // SAFETY: as above.
        let c = unsafe { str_in(s.as_ptr().cast(), s.len(), false) };
        assert_eq!(c.as_bytes(), b"  no_locks");
        // SAFETY: a zero length reads nothing.
        let c = unsafe { str_in(std::ptr::null(), 0, true) };
        assert_eq!(c.as_bytes(), b"");
        let mut out = [0u8; 6];
        // SAFETY: `out` is 6 writable bytes.
        let n = unsafe { str_out(b"abc\0zzz", out.as_mut_ptr().cast(), out.len()) };
        assert_eq!((n, &out), (3, b"abc   "));
        // SAFETY: as above.
        let n = unsafe { str_out(b"abcdefgh\0", out.as_mut_ptr().cast(), out.len()) };
        assert_eq!((n, &out), (6, b"abcdef"));
    }

    #[test]
    fn sentinels_become_c_values_and_other_addresses_pass() {
        let b = BOTTOM.addr() as *const c_void;
        let p = IN_PLACE.addr() as *const c_void;
        assert!(buf(b).is_null());
        assert_eq!(buf(p) as isize, -1);
        let s = STATUS_IGNORE.addr() as *mut c_int;
        let ss = STATUSES_IGNORE.addr() as *mut c_int;
        assert_eq!(status(s) as usize, 1);
        assert_eq!(status(ss) as usize, 1);
        let mut x = [0 as c_int; STATUS_SIZE];
        assert_eq!(status(x.as_mut_ptr()) as usize, x.as_ptr() as usize);
        assert_eq!(buf(x.as_ptr().cast()) as usize, x.as_ptr() as usize);
        assert_eq!(SENTINELS.len(), 6);
        let u = UNWEIGHTED.addr() as *const c_int;
        let e = WEIGHTS_EMPTY.addr() as *const c_int;
        assert_eq!(weights(u) as usize, 2);
        assert_eq!(weights(e) as usize, 3);
        assert_eq!(weights(x.as_ptr()) as usize, x.as_ptr() as usize);
        assert_eq!(weights_mut(u.cast_mut()) as usize, 2);
    }

    #[test]
    fn indices_count_from_one_and_undefined_stays() {
        assert_eq!(index_out(0), 1);
        assert_eq!(index_out(4), 5);
        assert_eq!(index_out(comm::UNDEFINED), comm::UNDEFINED);
    }

    /// The keyvals `attr_value` knows are mpi.h's.
    #[test]
    fn the_predefined_attributes_are_mpi_h_s() {
        let h = include_str!("../include/mpi.h");
        let def = |name: &str| -> c_int {
            let l = h
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(name))
                .unwrap_or_else(|| panic!("mpi.h defines {name}"));
            l.split_whitespace().nth(2).unwrap().parse().unwrap()
        };
        assert_eq!(COMM_INT_ATTRS, def("MPI_TAG_UB")..=def("MPI_LASTUSEDCODE"));
        for n in [
            "MPI_HOST",
            "MPI_IO",
            "MPI_WTIME_IS_GLOBAL",
            "MPI_UNIVERSE_SIZE",
            "MPI_APPNUM",
        ] {
            assert!(COMM_INT_ATTRS.contains(&def(n)), "{n}");
        }
        assert_eq!(WIN_SIZE, def("MPI_WIN_SIZE"));
        assert_eq!(
            WIN_INT_ATTRS,
            def("MPI_WIN_DISP_UNIT")..=def("MPI_WIN_MODEL")
        );
        assert_eq!(def("MPI_WIN_CREATE_FLAVOR"), def("MPI_WIN_DISP_UNIT") + 1);
        let base = def("MPI_WIN_BASE");
        assert!(base != WIN_SIZE && !WIN_INT_ATTRS.contains(&base));
        // a pointer to an int and to an MPI_Aint, read as Fortran's values
        let (i, a): (c_int, isize) = (32767, 1 << 40);
        // SAFETY: the pointers are to `i` and `a`, of the types those keyvals give.
        unsafe {
            let tag_ub = def("MPI_TAG_UB");
            assert_eq!(
                attr_value(AttrOf::Comm, tag_ub, (&raw const i).cast()),
                32767
            );
            assert_eq!(
                attr_value(AttrOf::Win, WIN_SIZE, (&raw const a).cast()),
                1 << 40
            );
            assert_eq!(attr_value(AttrOf::Win, 3, (&raw const i).cast()), 32767);
            let p = (&raw const a).cast::<c_void>();
            assert_eq!(attr_value(AttrOf::Win, base, p), p as isize);
            assert_eq!(attr_value(AttrOf::Comm, 100, p), p as isize);
        }
    }
}
