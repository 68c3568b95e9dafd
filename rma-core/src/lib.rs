//! Vocabulary and contracts shared by every rma crate.
//!
//! rma is MPI-style one-sided communication for Rust. This crate holds the words every
//! layer speaks and nothing that moves bytes: ranks and displacements, the error type
//! with its MPI error classes, window info keys, assertion flags and lock types, the
//! closed sets of predefined basic types and reduction operations, and the
//! [`Transport`] trait that the shared-memory transports implement and `rma-win`
//! composes.
//!
//! Design choices:
//! - **Closed vocabularies.** [`BasicType`] and [`Op`] are plain enums: MPI has no
//!   user-defined ops in RMA and a fixed set of predefined types, so a `match` can be
//!   exhaustive and a transport can carry either as one byte.
//! - **One error type.** [`Error`] carries every MPI error class a call can raise, with
//!   the context needed to fix the call; [`Error::class`] gives the class for matching.
//!   Every layer returns it, so nothing is lost in conversions between crates.
//! - **Validation above, trust below.** Everything a user can get wrong is checked
//!   before a [`Transport`] is called; the trait documents what it may assume.
//! - No `unsafe` here.
//!
//! # Nomenclature
//! - **rank**: the index of a process (or thread, in thread launch mode) in the world
//!   or in a window's group; [`Rank::NULL`] targets nobody (MPI_PROC_NULL's role).
//! - **origin**: the rank that issues an RMA call. **target**: the rank whose window
//!   memory the call reads or updates. They may be the same rank.
//! - **window**: memory a rank exposes to the others, created collectively.
//! - **epoch**: the span between synchronization calls (fence, lock/unlock, post/start/
//!   complete/wait) in which RMA calls may be issued (access epoch) or received
//!   (exposure epoch).
//! - **displacement unit**: the byte multiplier for a target displacement chosen by the
//!   target at window creation; byte offset = disp x disp_unit.
//! - **type map**: the sequence of (basic type, byte offset) pairs a datatype describes;
//!   its **signature** is the sequence of basic types alone.
// one `unsafe fn` (RawSegment::new, a promise its callers make) and no unsafe
// block: `deny` rather than `forbid` so that one item can opt out
#![deny(unsafe_code)]

mod assert;
mod backend;
mod basic;
mod error;
mod info;
mod limits;
mod op;
mod rank;
mod regions;
mod transport;
pub mod wait;

pub mod rng;

pub use assert::{Assert, LockType};
pub use backend::{
    reached, shared_offset, Backend, BackendWindow, DynBackend, Epochs, Flavor, LaunchMode, Memory,
    RawSegment, Services, Shape, DYNAMIC_BYTES,
};
pub use basic::{BasicType, TypeClass};
pub use error::{Error, ErrorClass, Result};
pub use info::{AccOps, AccOrdering, CheckMode, Info, WinInfo};
pub use limits::{stall_limit, ENV_STALL_MS};
pub use op::{Op, RmaCall};
pub use rank::{Count, Disp, Rank};
pub use regions::{region_covers, region_word, Regions, REGIONS};
pub use transport::{
    bits_from_bytes, bytes_from_bits, Access, Contiguous, FastPath, Layout, Run, Strided, Transport,
};
