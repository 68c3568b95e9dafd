//! [`MpiWindow`] as an [`rma_core::Transport`]: the data calls of one window, in the
//! shape `rma-win` drives its transports.
//!
//! The trait's contract asks that a call's results be in place and its origin buffer
//! free when it returns. put and accumulate keep a copy of their origin until a flush
//! completes them; fetching calls complete with MPI_Win_flush of their target. MPI
//! allows both only in passive-target epochs, so every call here needs one covering
//! the target — `rma-win` opens `lock_all` once and keeps it, building its own epochs
//! on flush and barriers — and is refused with class RMA_SYNC otherwise.
//!
//! Atomicity (contract rule 1): accumulate, get_accumulate, fetch_and_op and
//! compare_and_swap all map to MPI's accumulate family with the same predefined
//! datatype, which MPI makes mutually atomic per element whatever the op. Ordering
//! (rule 2): MPI's default `accumulate_ordering` is also `rar,raw,war,waw`, and the
//! window passes a weaker one through to MPI. Completion (rule 4): flush and
//! flush_all are MPI_Win_flush and MPI_Win_flush_all.

use crate::epoch::Mode;
use crate::window::{MpiWindow, Spot};
use rma_core::{Access, BasicType, Op, Rank, Result, Transport};

/// Where `at` lands. A contiguous layout goes to MPI as a plain count of the basic
/// type, not as a derived datatype (no type to build and free per call).
fn spot<'l>(at: &Access<'l>) -> Spot<'l> {
    let layout = match at.layout.as_contiguous() {
        Some(_) => None,
        None => Some(at.layout),
    };
    Spot {
        rank: at.target,
        byte: at.base,
        layout,
    }
}

/// An [`MpiWindow`] whose caller already checked everything (rma-win, through
/// [`crate::EpochWindow`]): its data calls go to MPI without the window's own epoch
/// checks. The caller keeps every target inside a passive-target epoch (the
/// EpochWindow's NOCHECK lock_all), so calls complete as passive ones.
pub(crate) struct Trusted<'a, 'w>(pub(crate) &'a MpiWindow<'w>);

impl Transport for Trusted<'_, '_> {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn put(&self, at: Access<'_>, data: &[u8]) -> Result<()> {
        self.0.put_at(spot(&at), data, Mode::Passive)
    }

    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()> {
        self.0.get_at(spot(&at), out)
    }

    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        self.0
            .accumulate_at(spot(&at), basic, op, data, Mode::Passive)
    }

    fn get_accumulate(
        &self,
        at: Access<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.0.get_accumulate_at(spot(&at), basic, op, data, out)
    }

    fn fetch_and_op(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.0
            .fetch_and_op_at(target, offset, basic, op, origin, out)
    }

    fn compare_and_swap(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.0
            .compare_and_swap_at(target, offset, basic, origin, compare, out)
    }

    fn flush(&self, target: Rank) -> Result<()> {
        let r = self.0.world().c_rank(target)?;
        self.0.flush_rank_now(r, false, false)
    }

    fn flush_all(&self) -> Result<()> {
        self.0.flush_every_now(false)
    }
}

/// The window's own API as a transport: each call first checks that a
/// passive-target epoch of this window covers its target (class RMA_SYNC otherwise).
impl Transport for MpiWindow<'_> {
    fn name(&self) -> &'static str {
        "mpi"
    }

    fn put(&self, at: Access<'_>, data: &[u8]) -> Result<()> {
        self.need_passive(at.target, "put")?;
        Trusted(self).put(at, data)
    }

    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()> {
        self.need_passive(at.target, "get")?;
        Trusted(self).get(at, out)
    }

    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        self.need_passive(at.target, "accumulate")?;
        Trusted(self).accumulate(at, basic, op, data)
    }

    fn get_accumulate(
        &self,
        at: Access<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.need_passive(at.target, "get_accumulate")?;
        Trusted(self).get_accumulate(at, basic, op, data, out)
    }

    fn fetch_and_op(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.need_passive(target, "fetch_and_op")?;
        Trusted(self).fetch_and_op(target, offset, basic, op, origin, out)
    }

    fn compare_and_swap(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.need_passive(target, "compare_and_swap")?;
        Trusted(self).compare_and_swap(target, offset, basic, origin, compare, out)
    }

    fn flush(&self, target: Rank) -> Result<()> {
        MpiWindow::flush(self, target)
    }

    fn flush_all(&self) -> Result<()> {
        MpiWindow::flush_all(self)
    }
}
