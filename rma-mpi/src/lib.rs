//! rma over a system MPI library: windows whose calls are MPI's own RMA, so that an
//! rma program can run across nodes on MPICH or Open MPI.
//!
//! [`MpiWorld`] initializes MPI (`MPI_Init_thread`, `MPI_THREAD_MULTIPLE`) and offers
//! rank, size, barrier and all-gather; [`MpiWindow`] is an MPI window
//! (`MPI_Win_allocate` or `MPI_Win_create`) with every RMA call — put, get,
//! accumulate, get_accumulate, fetch_and_op, compare_and_swap, their request-based
//! forms ([`MpiRequest`]) — and every synchronization call (fence, lock/unlock,
//! lock_all/unlock_all, the flush family, sync, post/start/complete/wait/test). It
//! implements [`rma_core::Transport`], so `rma-win` can drive it like its shared-memory
//! transports.
//!
//! Design choices:
//! - **No MPI at build time unless asked.** The crate always compiles; only the `mpi`
//!   feature makes `rma-mpi-sys`, the thin layer under this crate, compile its C shim
//!   (`rma-mpi-sys/csrc/shim.c`) with each MPI compiler wrapper it finds (`RMA_MPICC`,
//!   else `mpicc.mpich`, `mpicc.openmpi`, `mpicc`). Without it, [`MpiWorld::init`] returns
//!   an error of class RMA_FLAVOR.
//! - **A stable C ABI, chosen at run time.** The shim passes only integers and
//!   pointers (MPI handles as `intptr_t`; basic types, ops and assertion bits as rma's
//!   codes), so one Rust build serves MPICH's ABI (int handles) and Open MPI's
//!   (pointers). Each library's shim is a shared object loaded when MPI is
//!   initialized, picked by the launcher's environment, so the same binary runs under
//!   `mpiexec.mpich` and `mpirun.openmpi`. rma-mpi-sys loads it, maps MPI's error
//!   classes, knows the launchers and the libraries' defects; this crate re-exports
//!   the parts of it its users name ([`launcher`], [`built_shims`], [`Library`], the
//!   `ENV_*` variables).
//! - **Validation before MPI.** Ranks, target ranges (against every peer's window
//!   size, gathered at creation), element sizes, op x type validity and the epoch are
//!   checked here; MPI's own errors come back (`MPI_ERRORS_RETURN`) as
//!   [`rma_core::Error`]s of the MPI error class the library raised.
//! - **No dangling buffers.** MPI may read an origin buffer or write a result until the
//!   call completes; every call here either completes before it returns, or runs over
//!   buffers the window or [`MpiRequest`] owns (and leaks rather than frees if MPI might
//!   still use them).
//! - **Known library defects are avoided**, not hit: calls a library is known to get
//!   wrong are issued another way with the same semantics, or refused with class
//!   RMA_FLAVOR where no such way exists (8-byte compare_and_swap on Open MPI 4's
//!   osc/rdma crashes the target: [`MpiWorld::cas64_blocked`]); see `rma_win::guide::mpi_defects`.
//!
//! # Nomenclature
//! - **rank**: a process's index in `MPI_COMM_WORLD`; [`rma_core::Rank::NULL`] plays
//!   MPI_PROC_NULL.
//! - **origin** / **target**: the rank issuing an RMA call / the rank whose window it
//!   reaches.
//! - **window**: memory each rank exposes, created collectively.
//! - **epoch**: the span between synchronization calls in which RMA calls may be
//!   issued (access) or received (exposure); **passive target** epochs (lock,
//!   lock_all) need nothing from the target, **active target** ones (fence,
//!   post/start/complete/wait) synchronize with it.
//! - **displacement unit**: the byte multiplier of a target displacement, chosen by
//!   the target at window creation.
//! - **layout**: the byte runs of the target elements relative to the displacement
//!   ([`rma_core::Layout`], which `rma-datatype`'s type maps implement); here they
//!   become MPI derived datatypes.
//!
//! ```no_run
//! use rma_core::{Assert, BasicType, Info, Op, Rank};
//! use rma_mpi::{MpiWindow, MpiTargetSpec, MpiWorld};
//!
//! # fn main() -> rma_core::Result<()> {
//! let world = MpiWorld::init()?; // under `mpiexec -n 4`
//! let mut win = MpiWindow::allocate(&world, 8, 8, &Info::new())?;
//! win.lock_all(Assert::NONE)?;
//! let mut old = [0u8; 8];
//! win.fetch_and_op(BasicType::I64, Op::Sum, &1i64.to_ne_bytes(), &mut old, Rank::new(0), 0)?;
//! win.unlock_all()?;
//! world.barrier()?;
//! win.free()?;
//! # Ok(()) }
//! ```

mod agree;
mod backend;
mod calls;
#[cfg(feature = "bench-hooks")]
mod ccalls;
mod datatype;
mod epoch;
mod issue;
mod pending;
mod request;
mod sync;
mod target;
mod transport;
mod window;
mod world;

pub use agree::ABORT_CODE;
pub use backend::{EpochWindow, MPI_TRANSPORT};
#[cfg(feature = "bench-hooks")]
pub use ccalls::CCalls;
#[doc(hidden)]
pub use pending::abandoned_landings;
pub use request::MpiRequest;
pub use target::MpiTarget;
pub use window::{Flavor, MpiTargetSpec, MpiWindow};
pub use world::{MpiWorld, ThreadLevel, ENV_PROGRESS, ENV_THREAD, FINALIZE_ABORT_CODE};

pub use rma_mpi_sys::launcher;
pub use rma_mpi_sys::{built_shims, Library, ENV_LIBRARY, ENV_NO_GUARDS, ENV_SHIM};
