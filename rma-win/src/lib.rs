//! Windows, epochs and RMA calls: the layer users program against.
//!
//! - [`Window`]: allocate (shared memory) or create (memory the caller owns), free,
//!   fence, local access, and every RMA call: put, get, accumulate, get_accumulate,
//!   fetch_and_op, compare_and_swap.
//! - **Two API levels, one path.** Typed conveniences over slices of `T: Equivalence`
//!   (`win.accumulate(&a, rank, disp, Op::Sum)`) and the MPI-faithful forms with a
//!   count and datatype on each side ([`Buffer`], [`BufferMut`], [`Target`];
//!   `win.accumulate_with(...)`) share the same validation and transport code.
//! - **Validation above, trust below.** Rank, displacement, count, datatypes, op,
//!   range, alignment, overlap and epoch state are checked here, before a transport is
//!   called; a call that returns an error has changed nothing.
//! - **Transport per window, chosen at run time**: the `rma_transport` info key, else
//!   the `RMA_TRANSPORT` environment variable, else `atomic`. Under an MPI launcher
//!   (`mpiexec`, `mpirun`; the `mpi` feature) every window uses the `mpi` transport:
//!   the same program runs across nodes on the system MPI library's RMA.
//!
//! ```
//! use rma_win::{Assert, Info, Op, Rank, Window};
//!
//! // 4 ranks as threads here; the same program runs as 4 processes under `rmarun -n 4`,
//! // and under `mpiexec -n 4` when built with the `mpi` feature.
//! let results = rma_win::launch(4, |world| -> rma_win::Result<i64> {
//!     let win = Window::allocate::<i64>(&world, 8, &Info::new())?;
//!     win.fence(Assert::NONE)?;
//!     win.accumulate(&[1, 2], Rank::new(0), 0, Op::Sum)?; // element-wise atomic
//!     let ticket = win.fetch_and_op(1i64, Rank::new(0), 7, Op::Sum)?; // old value
//!     win.fence(Assert::NONE)?;
//!     Ok(ticket)
//! })?;
//! let mut tickets: Vec<i64> = results.into_iter().collect::<Result<_, _>>()?;
//! tickets.sort();
//! assert_eq!(tickets, [0, 1, 2, 3]); // each rank got a distinct ticket
//! # Ok::<(), rma_win::Error>(())
//! ```
//!
//! # Nomenclature
//! - **rank**, **origin**, **target**, **window**, **epoch**, **displacement unit**,
//!   **type map**: as in rma-core's documentation.
//! - **fence epoch**: the span between two fences in which every rank may issue calls
//!   to every other (active target).

mod buffers;
mod memory;
mod request;
mod sync;
mod transport;
mod window;
mod world;

pub use buffers::{Buffer, BufferMut, Target};
pub use request::Request;
pub use rma_core::{
    Assert, BasicType, Error, ErrorClass, Info, LockType, Op, Rank, Result, RmaCall,
};
pub use rma_datatype::{
    Complex32, Complex64, Datatype, DoubleInt, Equivalence, FloatInt, LongInt, Order, ShortInt,
    TwoInt,
};
pub use rma_shm::Flavor;
pub use sync::Group;
pub use transport::{chosen_transport, ENV_TRANSPORT, MPI_TRANSPORT, TRANSPORTS};
pub use window::Window;
pub use world::{launch, run_threads, LaunchMode, World};
