//! The shared-memory substrate of rma and its transports.
//!
//! - **Segments** ([`segment`]): named files in /dev/shm, owner-only (0600), created
//!   exclusively (an existing name is never reused), backing store reserved at creation
//!   so a full /dev/shm is an error, not a SIGBUS.
//! - **Worlds** ([`World`]): N ranks on one node sharing a control segment with a
//!   barrier, a bootstrap all-gather and liveness slots. Ranks are processes started by
//!   `rmarun` ([`launch`]) or threads of one process ([`run_threads`]) — the same code
//!   either way. Waits spin briefly, then sleep on a futex, and notice a dead or exited
//!   peer within tens of milliseconds.
//! - **Window memory** ([`WindowMemory`]): one segment per rank, mapped by every rank;
//!   segment names are removed as soon as every rank has mapped them, so a crash leaves
//!   nothing behind.
//! - **The atomic transport** ([`AtomicTransport`]): the origin applies every call in
//!   the target's memory with `rma-ops`' atomic kernels.
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
mod epochs;
#[cfg(not(loom))]
pub mod launch;
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
mod winmem;
#[cfg(not(loom))]
mod world;

#[cfg(not(loom))]
pub use atomic::AtomicTransport;
#[cfg(not(loom))]
pub use epochs::reached;
#[cfg(not(loom))]
pub use queued::QueuedTransport;
#[cfg(not(loom))]
pub use winmem::{Flavor, MemoryOptions, WindowMemory};
#[cfg(not(loom))]
pub use world::{
    liveness_interval, run_threads, stall_bound, LaunchMode, Liveness, World, ENV_KEY,
    ENV_LIVENESS_MS, ENV_RANK, ENV_SIZE, ENV_STALL_MS, ENV_WORLD, GATHER_BYTES, MAX_RANKS,
};
