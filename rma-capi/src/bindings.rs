//! Language interoperability (MPI 3.1 section 17.2): handles between C and Fortran,
//! statuses between C, Fortran and Fortran 2008.
//!
//! rma's handles are ints and MPI_Fint is int, so a Fortran handle is the C handle:
//! every `MPI_Xxx_c2f` and `MPI_Xxx_f2c` is the identity (for valid and null
//! handles alike, as MPI asks). A Fortran status is the C status read as
//! MPI_F_STATUS_SIZE integers (MPI_SOURCE, MPI_TAG and MPI_ERROR at MPI_F_SOURCE,
//! MPI_F_TAG and MPI_F_ERROR: 0, 1 and 2), and the Fortran 2008 status
//! (MPI_F08_status) has the C status's layout.

use crate::p2p::MpiStatus;
use crate::{code, fail, raise, On};
use std::ffi::c_int;

// written out one by one (not by a macro): build.rs reads their signatures to
// give them PMPI_ names

#[no_mangle]
pub extern "C" fn MPI_Comm_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Comm_f2c(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Errhandler_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Errhandler_f2c(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_File_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_File_f2c(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Group_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Group_f2c(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Info_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Info_f2c(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Message_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Message_f2c(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Op_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Op_f2c(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Request_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Request_f2c(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Type_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Type_f2c(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Win_c2f(handle: c_int) -> c_int {
    handle
}

#[no_mangle]
pub extern "C" fn MPI_Win_f2c(handle: c_int) -> c_int {
    handle
}

/// MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE, as mpi.h defines them.
const IGNORE: usize = 1;

/// Copies one status's bytes, refusing null and MPI_STATUS_IGNORE on either side.
///
/// # Safety
/// `from` and `to` are null, MPI_STATUS_IGNORE, or valid for a status's bytes.
unsafe fn copy_status(name: &str, from: *const MpiStatus, to: *mut MpiStatus) -> c_int {
    for (p, what) in [
        (from as usize, "the status read"),
        (to as usize, "the status written"),
    ] {
        if p == 0 || p == IGNORE {
            let why = if p == 0 { "NULL" } else { "MPI_STATUS_IGNORE" };
            return raise(name, On::World, fail(code::ARG, format!("{what} is {why}")));
        }
    }
    // SAFETY: the caller's contract: both point to a status (the Fortran ones are
    // MPI_F_STATUS_SIZE integers, the same bytes); copy, as they may overlap.
    unsafe { std::ptr::copy(from, to, 1) };
    0
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_c2f(c: *const MpiStatus, f: *mut c_int) -> c_int {
    // SAFETY: MPI's contract: a C status and MPI_F_STATUS_SIZE integers.
    unsafe { copy_status("MPI_Status_c2f", c, f.cast()) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f2c(f: *const c_int, c: *mut MpiStatus) -> c_int {
    // SAFETY: MPI's contract: MPI_F_STATUS_SIZE integers and a C status.
    unsafe { copy_status("MPI_Status_f2c", f.cast(), c) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_c2f08(c: *const MpiStatus, f08: *mut MpiStatus) -> c_int {
    // SAFETY: MPI's contract: a C status and an MPI_F08_status (the same layout).
    unsafe { copy_status("MPI_Status_c2f08", c, f08) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_f082c(f08: *const MpiStatus, c: *mut MpiStatus) -> c_int {
    // SAFETY: MPI's contract: an MPI_F08_status (the C layout) and a C status.
    unsafe { copy_status("MPI_Status_f082c", f08, c) }
}
