//! The functions of MPI 3.1 that rma does not implement, exported all the same so
//! that programs link: each reports MPI_ERR_UNSUPPORTED_OPERATION, never a silent
//! success. build.rs generates them from `src/mpi31.txt`, for the names no source
//! file defines (implementing one elsewhere in the crate removes its refusal).
//!
//! How each reports the error:
//! - most, through the error handler of the communicator or window they are given
//!   (MPI_COMM_WORLD's when they take none), as any failed call does;
//! - the I/O functions (`MPI_File_*`, `MPI_Register_datarep`) return the class: the
//!   default error handler of files is MPI_ERRORS_RETURN, and rma has no file object
//!   to attach another to;
//! - the tool-interface functions (`MPI_T_*`) return an MPI_T error code, as that
//!   interface does for every error (it never calls error handlers).

#![allow(clippy::too_many_arguments)]

use crate::{code, fail, raise, On};
use std::ffi::c_int;

/// The names of the refused functions, one a line.
pub const REFUSED: &str = include_str!(concat!(env!("OUT_DIR"), "/refused.txt"));

fn message(name: &str) -> String {
    format!("{name} is not implemented by rma (see rma_win::guide::c_and_fortran, \"Refused functions\")")
}

/// Reports the refusal of `name` through the handler of `on`.
pub(crate) fn refuse(name: &str, on: On) -> c_int {
    raise(name, on, fail(code::UNSUPPORTED, message(name)))
}

/// The refusal of an I/O function: the class, as MPI_ERRORS_RETURN gives it.
pub(crate) fn refuse_file(_name: &str) -> c_int {
    code::UNSUPPORTED
}

/// The refusal of a tool-interface function: an MPI_T error code.
pub(crate) fn refuse_tool(name: &str) -> c_int {
    crate::tool::refused(name)
}

include!(concat!(env!("OUT_DIR"), "/refused.rs"));
