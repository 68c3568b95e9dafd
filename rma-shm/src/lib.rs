//! The shared-memory substrate of rma and its transports.
//!
//! - **Segments** ([`segment`]): named files in /dev/shm, owner-only (0600), created
//!   exclusively (an existing name is never reused), backing store reserved at creation
//!   so a full /dev/shm is an error, not a SIGBUS.
//! - **Worlds** ([`ShmWorld`]): N ranks on one node sharing a control segment with a
//!   barrier, a bootstrap all-gather and liveness slots. Ranks are processes started by
//!   `rmarun` ([`launch`]) or threads of one process ([`run_threads`]) — the same code
//!   either way. Waits spin briefly, then sleep on a futex, and notice a dead or exited
//!   peer within tens of milliseconds. Every rank records the collective call it
//!   entered last (barrier, all-gather, a window's creation, fence, free or drop), so
//!   ranks that entered different ones, or that wait for each other across one, get
//!   PROC_FAILED instead of a silent match or a hang (the world is then broken, as
//!   under MPI).
//! - **Window memory** ([`WindowMemory`]): one segment per rank, mapped by every rank;
//!   segment names are removed as soon as every rank has mapped them, so a crash leaves
//!   nothing behind.
//! - **The atomic transport** ([`AtomicTransport`]): the origin applies every call in
//!   the target's memory with `rma-ops`' atomic kernels.
//!
//! # Hostile processes of the same user
//!
//! Segments are owner-only, so other users cannot open them; a process of the same user
//! can (while a segment still has its name), and it can ptrace or kill the ranks anyway. rma treats what such a process writes into shared memory as
//! untrusted input: a segment is mapped no larger than `fstat` says it is, headers are
//! validated against what their creator announced, every position, length, counter and
//! lock word read from shared memory is checked before use, and no wait on shared state
//! is endless (state no rank could produce is an error of class INTERN at once; state
//! that is merely unclaimed ends in `Error::Stalled` after `RMA_STALL_MS`; a world whose
//! control state was found corrupt is marked failed, so every rank learns it).
//!
//! What rma does not promise: that a rank survives a segment being *shrunk*
//! (`ftruncate`) after it was mapped. The pages past the new end leave every mapping,
//! and the next access to one raises SIGBUS in whichever rank makes it; that rank dies
//! and its peers get PROC_FAILED. The shrink cannot be prevented for files named in
//! /dev/shm: file seals (`F_SEAL_SHRINK`) are for memfd files only (a shmem file
//! created by name is born sealed against new seals). Segments made as sealed memfds
//! and handed to the peers by fd passing (over a Unix socket from the launcher, or by
//! opening `/proc/<pid>/fd/<n>` of the creator) would close this, at the cost of a new
//! bootstrap and naming scheme for worlds and windows; that change is not made.
//! Catching the SIGBUS and jumping out of the faulting access is not sound in Rust, so
//! it is not attempted either.
//!
//! Unsafe code lives in three layers: the OS wrappers (`sys`), the mappings
//! (`segment`, `world`, `winmem`: raw pointers, never references to shared bytes, only
//! to atomics), and the transport, which checks bounds once per run and calls the
//! kernels.
//!
//! # Nomenclature
//! - **world**: the set of ranks started together; **rank**: one member.
//! - **segment**: a named shared-memory file mapped by several ranks.
//! - **window memory**: the bytes each rank exposes, plus a control area (lock table).

// Under `--cfg loom` only the ring protocol is built, over loom's atomics, for the
// model-checking tests; everything that maps real shared memory is left out.
#[cfg(not(loom))]
mod atomic;
#[cfg(not(loom))]
mod backend;
#[cfg(not(loom))]
mod epochs;
#[cfg(not(loom))]
pub mod launch;
#[cfg(not(loom))]
mod park;
#[cfg(not(loom))]
mod queued;
pub mod ring;
#[cfg(not(loom))]
pub mod segment;
#[cfg(all(test, not(loom)))]
mod stall_tests;
mod sync;
#[cfg(not(loom))]
mod sys;
#[cfg(not(loom))]
mod timeline;
#[cfg(not(loom))]
pub mod trace;
#[cfg(not(loom))]
mod winmem;
#[cfg(not(loom))]
mod world;

#[cfg(not(loom))]
pub use atomic::AtomicTransport;
#[cfg(not(loom))]
pub use backend::{ShmWindow, TRANSPORTS};
#[cfg(not(loom))]
pub use epochs::reached;
#[cfg(not(loom))]
pub use queued::QueuedTransport;
#[cfg(not(loom))]
pub use winmem::{Flavor, MemoryOptions, WindowMemory};
#[cfg(not(loom))]
pub use world::{
    liveness_interval, run_threads, stall_bound, AbortHandle, Liveness, ShmMode, ShmWorld, ENV_KEY,
    ENV_LIVENESS_MS, ENV_RANK, ENV_SIZE, ENV_STALL_MS, ENV_WORLD, GATHER_BYTES, MAX_RANKS,
};
