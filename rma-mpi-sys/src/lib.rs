//! The thin layer under `rma-mpi`: rma's C shim over a system MPI library (MPICH or
//! Open MPI), loaded at run time, and what reading it takes — the function table,
//! MPI error classes, which launcher started the process, and the libraries' known
//! defects. No windows, no epochs, no collectives: those are rma-mpi's.
//!
//! - **The shim** (`csrc/shim.c`): a stable C ABI of plain integers and pointers (MPI
//!   handles as `intptr_t`; basic types, ops and assertion bits as rma's own codes),
//!   so that one Rust build serves MPICH's ABI (int handles) and Open MPI's
//!   (pointers). With the `mpi` feature (rma-mpi's `mpi` feature turns it on),
//!   build.rs compiles it with each MPI compiler wrapper it finds (`RMA_MPICC`, else
//!   `mpicc.mpich`, `mpicc.openmpi`, `mpicc`) into one shared object per library.
//!   Without it the crate still compiles, and [`api`] is an error of class
//!   RMA_FLAVOR.
//! - **Loading** ([`api`], [`Api`]): the shim matching the launcher this process runs
//!   under ([`launcher_library`]; [`ENV_LIBRARY`] when the launcher does not tell,
//!   [`ENV_SHIM`] to load another) is `dlopen`ed once per process, which loads its MPI
//!   library, and every function is resolved by name and the shim's ABI version
//!   checked before any is called.
//! - **Errors** ([`Call`]): an MPI error code comes back as the [`rma_core::Error`] of
//!   the MPI error class the library raised, with the library's own message.
//! - **Defects** ([`Guards`]): what this process's library is known to get wrong, and
//!   whether a call is refused (class RMA_FLAVOR) or issued another way;
//!   [`ENV_NO_GUARDS`] lifts the refusals.
//! - **Launching** ([`launcher`]): the MPI launch configurations rma's test suites run
//!   in.
//!
//! Every function of [`Api`] is `unsafe`: its contract is the MPI call it wraps, and
//! rma-mpi's `World` and `MpiWindow` are the safe layer over it.

mod defects;
mod error;
mod ffi;
pub mod launcher;

pub use defects::{Guards, ENV_NO_GUARDS};
pub use error::Call;
pub use ffi::{
    api, api_for_process, built_shims, launcher_library, process_library, Api, Handle, Library,
    ENV_LIBRARY, ENV_SHIM,
};
