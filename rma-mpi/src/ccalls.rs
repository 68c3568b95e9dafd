//! Benchmark-only hooks (the `bench-hooks` feature): an MPI window's target's calls
//! as a C program makes them, straight through the library, to compare rma's
//! per-call cost with the library's own in one process. Not part of rma's API.

use crate::target::MpiTarget;
use crate::window::MpiWindow;
use crate::world::MpiWorld;
use rma_core::{BasicType, Op};
use rma_mpi_sys::{Api, Handle};
use std::ffi::c_int;

/// The MPI calls a C program makes on one target, straight through the library: no
/// check, no copy, no bookkeeping of rma's. For benchmarks that compare rma's
/// per-call cost with the library's own in one process, timing the two in
/// alternating blocks so that both see the same machine speed (`rma-bench`'s
/// `pair` rows). They go through rma's C shim, as rma's calls do: one jump per call,
/// and the op table for accumulates. Not part of rma's API; made by
/// [`MpiTarget::c_calls`].
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct CCalls<'a> {
    api: &'static Api,
    win: Handle,
    r: c_int,
    double: Handle,
    long: Handle,
    /// The window the calls go to stays alive (and its handle valid) for `'a`.
    _window: std::marker::PhantomData<&'a MpiWindow<'a>>,
}

impl std::fmt::Debug for CCalls<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CCalls").field("rank", &self.r).finish()
    }
}

impl<'a> MpiTarget<'a> {
    /// The C program's calls on this target ([`CCalls`]); `None` unless this thread's
    /// MPI calls on the window take no lock now (the owner's turn with no progress
    /// thread: rma's own calls would otherwise be serialized with the progress
    /// thread's, and these are not), or where the datatypes cannot be looked up. Not
    /// part of rma's API.
    #[doc(hidden)]
    pub fn c_calls(&self) -> Option<CCalls<'a>> {
        let world = self.w.world();
        if !MpiWorld::turn_is_free(self.w.pending.turned()) {
            return None;
        }
        Some(CCalls {
            api: world.api(),
            win: self.w.handle(),
            r: self.r,
            double: world.basic_handle(BasicType::F64).ok()?,
            long: world.basic_handle(BasicType::I64).ok()?,
            _window: std::marker::PhantomData,
        })
    }
}

/// Each call's return code is MPI's. Safety contract of every call: a passive-target
/// epoch of the window covers the target; the window is not dynamic, and `disp` (in
/// the window's displacement units) addresses an 8-byte element inside the target's
/// window, aligned for it; the buffers hold one element each and stay valid, and
/// `result` unread, until the next [`CCalls::flush`] returns; the calling thread is
/// the one that made these calls ([`MpiTarget::c_calls`]: the thread that initialized
/// MPI), and no other thread calls MPI meanwhile: no progress thread was started
/// since, and no rma call on the window runs on another thread.
#[doc(hidden)]
impl CCalls<'_> {
    /// MPI_Put of one MPI_DOUBLE.
    ///
    /// # Safety
    /// See the impl's docs.
    #[inline]
    pub unsafe fn put(&self, origin: *const f64, disp: i64) -> c_int {
        let (ty, r, win) = (self.double, self.r, self.win);
        // SAFETY: the caller's contract.
        unsafe { (self.api.put)(origin.cast(), 1, ty, r, disp, 1, ty, win) }
    }

    /// MPI_Get of one MPI_DOUBLE.
    ///
    /// # Safety
    /// See the impl's docs.
    #[inline]
    pub unsafe fn get(&self, result: *mut f64, disp: i64) -> c_int {
        let (ty, r, win) = (self.double, self.r, self.win);
        // SAFETY: the caller's contract.
        unsafe { (self.api.get)(result.cast(), 1, ty, r, disp, 1, ty, win) }
    }

    /// MPI_Accumulate of one MPI_DOUBLE with MPI_SUM.
    ///
    /// # Safety
    /// See the impl's docs.
    #[inline]
    pub unsafe fn accumulate(&self, origin: *const f64, disp: i64) -> c_int {
        let (ty, r, win) = (self.double, self.r, self.win);
        let sum = Op::Sum as c_int;
        // SAFETY: the caller's contract.
        unsafe { (self.api.accumulate)(origin.cast(), 1, ty, r, disp, 1, ty, sum, win) }
    }

    /// MPI_Fetch_and_op of one MPI_INT64_T (MPI_LONG on LP64) with MPI_SUM.
    ///
    /// # Safety
    /// See the impl's docs.
    #[inline]
    pub unsafe fn fetch_add(&self, origin: *const i64, result: *mut i64, disp: i64) -> c_int {
        let (ty, r, win) = (self.long, self.r, self.win);
        let sum = Op::Sum as c_int;
        // SAFETY: the caller's contract.
        unsafe { (self.api.fetch_and_op)(origin.cast(), result.cast(), ty, r, disp, sum, win) }
    }

    /// MPI_Win_flush of the target.
    ///
    /// # Safety
    /// See the impl's docs.
    #[inline]
    pub unsafe fn flush(&self) -> c_int {
        // SAFETY: the caller's contract.
        unsafe { (self.api.win_flush)(self.r, self.win) }
    }
}
