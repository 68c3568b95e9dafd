//! Windows, epochs and RMA calls: the layer users program against.
//!
//! - [`Window`]: allocate (shared memory), create (memory the caller owns) or
//!   allocate_shared (memory every rank also reaches by load and store:
//!   [`Window::shared_query`] gives a rank's part as a [`SharedSegment`], whose typed
//!   [`SharedView`]s load, store and update elements with hardware atomics), free,
//!   fence, local access, every RMA call (put, get, accumulate, get_accumulate,
//!   fetch_and_op, compare_and_swap) on every flavor, and the window's attributes
//!   (flavor, group, memory model, base address, size and unit of every rank, info
//!   with [`Window::set_info`]).
//! - **Two API levels, one path.** Typed conveniences over slices of `T: Equivalence`
//!   (`win.accumulate(&a, rank, disp, Op::Sum)`) and the MPI-faithful forms with a
//!   count and datatype on each side ([`Buffer`], [`BufferMut`], [`Target`];
//!   `win.accumulate_with(...)`) share the same validation and transport code.
//! - **Validation above, trust below.** Rank, displacement, count, datatypes, op,
//!   range, alignment, overlap and epoch state are checked here, before a transport is
//!   called; a call that returns an error has changed nothing.
//! - **One backend seam.** This crate keeps the one epoch state machine and every
//!   check, and programs against rma-core's backend traits (`Services`, `Memory`,
//!   `Epochs`, `Transport`, `Backend`); its code names no backend. The shipped ones
//!   (rma's shared memory, a system MPI library) come through rma-backends' enums;
//!   any other through [`World::from_backend`].
//! - **Transport per window, chosen at run time**: the `rma_transport` info key, else
//!   the `RMA_TRANSPORT` environment variable, else `atomic`. Under an MPI launcher
//!   (`mpiexec`, `mpirun`; the `mpi` feature) every window uses the `mpi` transport:
//!   the same program runs across nodes on the system MPI library's RMA. With ranks as
//!   processes a window created over a caller's buffer uses `queued`. A transport the
//!   info names is honoured or refused with RMA_FLAVOR (saying why and what works);
//!   the environment's is a default that falls back, with a warning
//!   ([`chosen_transport`]).
//!
//! ```
//! use rma_win::{Assert, Info, Op, Rank, Window};
//!
//! // 4 ranks as threads here; the same program runs as 4 processes under `rmarun -n 4`,
//! // and under `mpiexec -n 4` when built with the `mpi` feature.
//! let results = rma_win::launch(4, |world| -> rma_win::Result<i64> {
//!     let win = Window::allocate::<i64>(&world, 8, &Info::new())?;
//!     win.fence(Assert::NONE)?;
//!     win.accumulate(&[1i64, 2], Rank::new(0), 0, Op::Sum)?; // element-wise atomic
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
//! # Soundness: what safe code can and cannot do
//!
//! No sequence of calls to this crate's safe API causes undefined behaviour, whatever
//! the program does wrong in MPI's terms and however it lets go of its objects. The
//! rules that make it so:
//!
//! - **Windows never expose memory the caller can free.** [`Window::allocate`] memory
//!   belongs to the window's shared segments. [`Window::create`] exposes a copy of the
//!   caller's buffer (in every launch mode and on every transport), copied back by the
//!   collective [`Window::free`]. A window dropped without `free` leaves the buffer as
//!   it was; one leaked (`mem::forget`, `Box::leak`, a panic that never unwinds past
//!   it) leaks its copy, so other ranks' late writes land in memory nobody else uses.
//! - **`free` synchronizes on this window only** (the backend's own collective: rma's
//!   shared memory waits for every rank's free mark in the window's segments, MPI frees
//!   the MPI window), so a peer calling [`World::barrier`] (or freeing another window)
//!   never lets one rank release memory the peer still writes.
//! - **Collective window calls are matched per window**: a fence matches only a fence
//!   on the same window, a free only that window's free (or its drop, which counts as
//!   the dropping rank's free), never another window's calls or the world's barrier or
//!   all-gather. Ranks that enter different collective calls get PROC_FAILED within
//!   the liveness interval instead of a silent match or a hang, and so do a rank
//!   waiting for a lock, post or complete and the peer that owes it while that peer
//!   waits in a collective call the first has not entered; the world is then broken
//!   (its collectives, waits and calls fail at once), as under MPI
//!   ([`guide::reliability`]).
//! - **Window memory is touched only by atomics.** With ranks as threads Rust's memory
//!   model applies, whatever MPI says about conflicting accesses: every put, get,
//!   accumulate and local access reaches window memory through aligned 8-byte atomic
//!   words (`rma_ops::shared`), so a program MPI calls erroneous reads unspecified
//!   values, never undefined behaviour. No Rust reference is ever formed over window
//!   memory.
//! - **Lifetimes tie everything to its world**: a `Window<'w>` borrows its `World` (the
//!   world cannot be dropped first); a [`Request`] borrows its buffers and completes
//!   eagerly, so dropping or forgetting it early is harmless.
//!
//! ```compile_fail
//! use rma_win::{Assert, Info, Window};
//! rma_win::launch(1, |world| -> rma_win::Result<()> {
//!     let win = Window::allocate::<u64>(&world, 8, &Info::new())?;
//!     drop(world); // error[E0505]: cannot move out of `world` because it is borrowed
//!     win.fence(Assert::NONE)
//! })?;
//! # Ok::<(), rma_win::Error>(())
//! ```
//! (The same program without the `drop` compiles and runs:)
//! ```
//! use rma_win::{Assert, Info, Window};
//! rma_win::launch(1, |world| -> rma_win::Result<()> {
//!     let win = Window::allocate::<u64>(&world, 8, &Info::new())?;
//!     win.fence(Assert::NONE)
//! })?
//! .into_iter()
//! .collect::<rma_win::Result<Vec<_>>>()?; // every rank's result
//! # Ok::<(), rma_win::Error>(())
//! ```
//! - **Panics inside an epoch** leave locks held; the other ranks see the panicking rank
//!   as dead (class PROC_FAILED) in their next wait, or take over its chunk locks.
//!
//! Faults of other processes (a peer that dies, stops, or writes garbage into shared
//! segments) are errors within bounded time, not hangs: [`guide::reliability`] says
//! what is detected, in what time, and what is not.
//!
//! # Your own element types: `#[derive(Equivalence)]`
//!
//! A `#[repr(C)]` struct whose fields all have one `Equivalence` type can be an
//! element of windows and buffers without an `unsafe impl`:
//!
//! ```
//! use rma_win::{Assert, Equivalence, Info, Op, Rank, Window};
//!
//! #[repr(C)]
//! #[derive(Clone, Copy, Default, Equivalence)]
//! struct Point { x: f64, y: f64, z: f64 }
//!
//! let sums = rma_win::run_threads(2, |world| -> rma_win::Result<[f64; 3]> {
//!     let win = Window::allocate::<Point>(&world, 1, &Info::new())?;
//!     win.fence(Assert::NONE)?;
//!     win.accumulate(&[Point { x: 1.0, y: 2.0, z: 3.0 }], Rank::new(0), 0, Op::Sum)?;
//!     win.fence(Assert::NONE)?;
//!     let mut p = [Point::default()];
//!     win.get(&mut p, Rank::new(0), 0)?;
//!     win.fence(Assert::NONE)?;
//!     Ok([p[0].x, p[0].y, p[0].z])
//! })?;
//! assert!(sums.into_iter().all(|s| s.unwrap() == [2.0, 4.0, 6.0]));
//! # Ok::<(), rma_win::Error>(())
//! ```
//!
//! A one-field newtype takes its field's basic type, so single-element calls such as
//! `fetch_and_op` and `Op::MaxLoc` work on it; the typed shortcuts of target handles
//! (`fetch_add`, `add`) stay for rma's own numeric types (use `accumulate` with
//! `Op::Sum` there).
//!
//! What it refuses, at compile time (the doctests below fail to compile; the message of
//! each was checked by hand, as rustdoc cannot pin it). Fields of different types
//! (describe such a struct with `Datatype::structure` in an `unsafe impl` of your own):
//! ```compile_fail
//! #[repr(C)]
//! #[derive(Clone, Copy, rma_win::Equivalence)]
//! struct Mixed { value: f64, index: i32 } // error: every field must have the same type
//! ```
//! References and pointers, whose bytes mean nothing in another rank:
//! ```compile_fail
//! #[repr(C)]
//! #[derive(Clone, Copy, rma_win::Equivalence)]
//! struct Refs { a: &'static u64, b: &'static u64 } // error: a field is a reference
//! ```
//! Rust's default layout, which may reorder fields:
//! ```compile_fail
//! #[derive(Clone, Copy, rma_win::Equivalence)]
//! struct NoRepr { a: u32, b: u32 } // error: the struct needs #[repr(C)]
//! ```
//! Macros in a field type (the same text could mean different types):
//! ```compile_fail
//! #[repr(C)]
//! #[derive(Clone, Copy, rma_win::Equivalence)]
//! struct Macro { a: [u8; line!() as usize], b: [u8; line!() as usize] } // error: macro
//! ```
//! Padding, checked on the real layout:
//! ```compile_fail
//! #[repr(C, align(16))]
//! #[derive(Clone, Copy, rma_win::Equivalence)]
//! struct Padded { a: f64 } // error: Padded has padding
//! ```
//! (The same struct without `align(16)` compiles:)
//! ```
//! #[repr(C)]
//! #[derive(Clone, Copy, rma_win::Equivalence)]
//! struct Padded { a: f64 }
//! ```
//!
//! # Finding races: the conflict checker
//!
//! Set a window's `rma_check` info key to `conflicts` (or `RMA_CHECK=conflicts` for
//! every window) and the synchronization that finds two conflicting accesses (MPI's
//! erroneous programs) fails with class RMA_CONFLICT, naming both ranks and both call
//! sites: [`guide::checker`].
//!
//! # The manual
//!
//! [`guide`] has a page per topic: getting started, epochs and target handles, window
//! flavors, building blocks, transports, rmarun, mpiexec and existing MPI programs,
//! the C and Fortran interface, reliability, tracing, every `RMA_*` variable.
//!
//! # Nomenclature
//! - **rank**, **origin**, **target**, **window**, **epoch**, **displacement unit**,
//!   **type map**: as in rma-core's documentation.
//! - **fence epoch**: the span between two fences in which every rank may issue calls
//!   to every other (active target).

// four `unsafe fn`s, each marked `allow(unsafe_code)`: SharedSegment::as_mut_ptr,
// Window::create_mapped and create_in_place (constructors for a C interface), and
// World::from_raw_mpi_comm, whose contracts their callers keep; the constructors'
// bodies are one unsafe block each, forwarding that contract. With the `rsmpi`
// feature, World::from_rsmpi reads an rsmpi handle's bits (one block, its SAFETY
// argument there). `deny` rather than `forbid` so those items can
// opt out
#![deny(unsafe_code)]
// docs.rs (`--cfg docsrs`, nightly) marks the items of the `async` and `rsmpi` features
#![cfg_attr(docsrs, feature(doc_cfg))]

mod blocks;
mod buffers;
mod check;
mod dynamic;
mod epoch_state;
mod guard;
mod handle;
mod request;
mod road;
mod shared;
mod sync;
mod window;
mod world;

pub mod guide;

pub use blocks::counter::{Counter, CounterOptions};
#[cfg(feature = "async")]
pub use blocks::mutex::LockFuture;
pub use blocks::mutex::{Mutex, MutexGuard};
#[cfg(feature = "async")]
pub use blocks::signal::SignalWait;
pub use blocks::signal::{Cmp, SignalOp};
pub use buffers::{Buffer, BufferMut, Target};
pub use dynamic::{DetachError, Region};
pub use guard::{FenceEpoch, PassiveEpoch, PostEpoch, StartEpoch};
pub use handle::{AtomicElement, BatchedAdd, CasElement, Integer, Numeric, TargetHandle};
pub use request::Request;
pub use rma_backends::{
    chosen_transport, init_tracing, launcher, ENV_TRANSPORT, MPI_TRANSPORT, TRANSPORTS,
};
pub use rma_core::{
    Assert, BasicType, Error, ErrorClass, Flavor, Info, LockType, Op, Rank, Result, RmaCall,
};
pub use rma_datatype::{
    Complex32, Complex64, Datatype, DoubleInt, Equivalence, FloatInt, LongDouble, LongDoubleInt,
    LongInt, Order, ShortInt, TwoInt,
};
pub use shared::{SharedSegment, SharedView};
pub use sync::Group;

/// The backend contract (rma-core's traits) and the enums rma-win holds, for writing
/// a backend of your own ([`World::from_backend`]).
pub mod backend {
    #[cfg(feature = "bench-hooks")]
    #[doc(hidden)]
    pub use rma_backends::CCalls;
    pub use rma_backends::{
        liveness_interval, AbortHandle, AnyWindow, AnyWorld, Segment, ENV_LIVENESS_MS,
    };
    pub use rma_core::{
        reached, shared_offset, Access, Backend, BackendWindow, Contiguous, DynBackend, Epochs,
        FastPath, Layout, Memory, RawSegment, Run, Services, Shape, Strided, Transport, WinInfo,
    };
}
pub use window::{MemoryModel, Window};
pub use world::{launch, run_threads, LaunchMode, SplitType, World};
