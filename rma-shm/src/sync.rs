//! The atomics the ring protocol uses: std's, or loom's when model-checking
//! (`RUSTFLAGS="--cfg loom"`), so the protocol is checked on heap memory.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
