//! [`MpiTarget`]: one target of a window, resolved once for calls that a caller has
//! already checked (rma-win's target handles): its MPI rank, window length and
//! displacement unit, and the byte datatype. A call whose bytes start at a whole
//! displacement goes to MPI with no placement, no derived datatype and no error context
//! built unless it fails; a fetching call and its flush share one turn of the
//! world's gate. Anything else (a byte offset between displacements, a library
//! defect rma works around, a call outside the window) takes the window's general
//! path, which gives the same result or the same typed error.

use crate::epoch::Mode;
use crate::pending::{copy_landed, Mark};
use crate::sync::no_call;
use crate::transport::Trusted;
use crate::window::{MpiWindow, Spot};
use rma_core::{BasicType, Op, Rank, Result, Transport};
use rma_mpi_sys::{Api, Call, Handle};
use std::ffi::c_int;

/// One target of a window (see the module docs). Made by
/// [`crate::EpochWindow::target`]; its calls assume what the backend seam lets every
/// data call assume: a passive-target epoch of this window covers the target (rma's
/// epochs run over MPI's passive target), and the op suits the element type.
#[derive(Clone, Copy)]
pub struct MpiTarget<'a> {
    pub(crate) w: &'a MpiWindow<'a>,
    rank: Rank,
    pub(crate) r: c_int,
    len: usize,
    unit: usize,
    /// `unit - 1` and log2 of `unit` when it is a power of two (no division on the
    /// hot path); else all ones and 0, which lets only byte 0 through `whole` (the
    /// rest of such a window takes the general path).
    mask: usize,
    shift: u32,
    /// The MPI displacement of byte 0 (a dynamic window's arena address; else 0).
    base: i64,
    /// The target's dirty mark in the window (no lookup per call).
    mark: Mark<'a>,
    byte_ty: Handle,
}

impl std::fmt::Debug for MpiTarget<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiTarget")
            .field("rank", &self.rank)
            .field("len", &self.len)
            .field("disp_unit", &self.unit)
            .finish()
    }
}

impl<'a> MpiWindow<'a> {
    /// A target handle for `rank` on this window directly (rma-win's handles come
    /// from [`crate::EpochWindow::target`]): for rma-mpi's own tests. A passive-target
    /// epoch must cover `rank` now (class RMA_SYNC otherwise); it stays open while the
    /// handle borrows the window, since closing it takes `&mut self`. Not part of
    /// rma's API.
    #[doc(hidden)]
    pub fn target_handle(&'a self, rank: Rank) -> Result<MpiTarget<'a>> {
        self.need_passive(rank, "target_handle")?;
        MpiTarget::new(self, rank)
    }
}

impl<'a> MpiTarget<'a> {
    pub(crate) fn new(w: &'a MpiWindow<'a>, rank: Rank) -> Result<MpiTarget<'a>> {
        let r = w.world().c_rank(rank)?;
        let unit = w.disp_unit_of(rank)?.max(1);
        let (mask, shift) = if unit.is_power_of_two() {
            (unit - 1, unit.trailing_zeros())
        } else {
            (usize::MAX, 0)
        };
        Ok(MpiTarget {
            w,
            rank,
            r,
            len: w.len_of(rank)?,
            unit,
            mask,
            shift,
            base: w.peer(rank)?.base as i64,
            mark: w.pending.mark(r),
            byte_ty: w.world().basic_handle(BasicType::Byte)?,
        })
    }

    /// The displacement and count of `n` bytes at `byte`, where they lie inside the
    /// target window and start at a whole displacement; `None` sends the call down the
    /// general path.
    #[inline(always)]
    fn whole(&self, byte: usize, n: usize) -> Option<(i64, c_int)> {
        let end = byte.checked_add(n)?;
        if byte & self.mask != 0 || end > self.len {
            return None;
        }
        let n = c_int::try_from(n).ok()?;
        Some(((byte >> self.shift) as i64 + self.base, n))
    }

    fn spot(&self, byte: usize) -> Spot<'static> {
        Spot {
            rank: self.rank,
            byte,
            layout: None,
        }
    }

    /// The fetching call `issue` and its flush in one turn, into a landing of `len`
    /// bytes ([`MpiWindow::fetch_flushed`]).
    #[inline(always)]
    fn fetch_then_flush<R>(
        &self,
        name: &'static str,
        len: usize,
        issue: impl FnOnce(&Api, *mut u8) -> c_int,
        land: impl FnOnce(*const u8) -> R,
    ) -> Result<R> {
        let rank = self.rank;
        let call = move || Call::new(name).rank(rank);
        self.w
            .fetch_flushed(self.r, self.mark, len, call, issue, land)
    }

    /// MPI_Put of `data` at byte `byte`; the origin is copied and kept until a flush.
    #[inline(always)]
    #[doc(alias = "MPI_Put")]
    pub fn put(&self, byte: usize, data: &[u8]) -> Result<()> {
        let Some((disp, n)) = self.whole(byte, data.len()) else {
            return self.w.put_at(self.spot(byte), data, Mode::Passive);
        };
        if n == 0 {
            return Ok(());
        }
        let (ty, r, win) = (self.byte_ty, self.r, self.w.handle());
        self.w.issue_copied_lazy(
            self.mark,
            #[inline(always)]
            |c| c.keep(r, data),
            Mode::Passive,
            || Call::new("MPI_Put").rank(self.rank),
            #[inline(always)]
            |api, origin| {
                // SAFETY: `origin` holds `n` bytes, kept until a synchronization
                // completes the put; `disp` and `n` lie inside the target window.
                unsafe { (api.put)(origin.cast(), n, ty, r, disp, n, ty, win) }
            },
        )
    }

    /// MPI_Get of `out.len()` bytes at byte `byte`, completed (flushed) before it
    /// returns.
    #[inline(always)]
    #[doc(alias = "MPI_Get")]
    pub fn get(&self, byte: usize, out: &mut [u8]) -> Result<()> {
        let Some((disp, n)) = self.whole(byte, out.len()) else {
            return self.w.get_at(self.spot(byte), out);
        };
        if n == 0 {
            return Ok(());
        }
        let (ty, r, win) = (self.byte_ty, self.r, self.w.handle());
        self.fetch_then_flush(
            "MPI_Get",
            out.len(),
            #[inline(always)]
            |api, dst| {
                // SAFETY: the landing holds `n` bytes and outlives the call (kept by the
                // window, or left to MPI if the flush fails); `disp` and `n` lie inside
                // the target window.
                unsafe { (api.get)(dst.cast(), n, ty, r, disp, n, ty, win) }
            },
            #[inline(always)]
            |l| {
                // SAFETY: the landing holds the get's `n` bytes, complete (`land`'s
                // contract); `out` is a distinct local slice of as many.
                unsafe { copy_landed(l, out) }
            },
        )
    }

    /// MPI_Fetch_and_op on the element of `basic` (at most 8 bytes) at byte `byte`,
    /// with the origin and result as bits (zero-extended); flushed before it returns.
    #[inline(always)]
    #[doc(alias = "MPI_Fetch_and_op")]
    pub fn fetch_and_op_bits(
        &self,
        byte: usize,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<u64> {
        let size = basic.size();
        let guards = self.w.world().guards();
        let whole = self.whole(byte, size);
        if size > 8
            || whole.is_none()
            || guards.refuses_accumulate(basic, op, self.w.flavor)
            || guards.fetch_and_op_as_get_accumulate(basic)
        {
            return self.general_fop(byte, basic, op, origin);
        }
        let ty = self.w.world().basic_handle(basic)?;
        let (disp, r, win) = (whole.map_or(0, |w| w.0), self.r, self.w.handle());
        let mut src = [0u8; 8];
        rma_core::bytes_from_bits(origin, &mut src[..size]);
        let old = self.fetch_then_flush(
            "MPI_Fetch_and_op",
            16,
            #[inline(always)]
            |api, l| {
                // SAFETY: the landing holds 16 bytes, 16-byte aligned, with no reference
                // to it: the origin goes in its first word, the result comes back in
                // its second; it outlives the call (see `fetch_then_flush`); the
                // element lies inside the target window.
                unsafe {
                    l.cast::<[u8; 8]>().write(src);
                    let d = l.add(8);
                    (api.fetch_and_op)(l.cast(), d.cast(), ty, r, disp, op as c_int, win)
                }
            },
            #[inline(always)]
            // SAFETY: the result's 8 bytes at byte 8 of the landing, complete.
            |l| unsafe { l.add(8).cast::<[u8; 8]>().read() },
        )?;
        Ok(rma_core::bits_from_bytes(&old[..size]))
    }

    /// The window's general path (the Transport trait's bits form over it), which
    /// checks the guards.
    #[cold]
    #[inline(never)]
    fn general_fop(&self, byte: usize, basic: BasicType, op: Op, origin: u64) -> Result<u64> {
        Trusted(self.w).fetch_and_op_bits(self.rank, byte, basic, op, origin)
    }

    /// MPI_Compare_and_swap on the element of `basic` (at most 8 bytes) at byte
    /// `byte`, as bits; flushed before it returns.
    #[inline(always)]
    #[doc(alias = "MPI_Compare_and_swap")]
    pub fn compare_and_swap_bits(
        &self,
        byte: usize,
        basic: BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64> {
        let size = basic.size();
        let whole = self.whole(byte, size);
        if size > 8 || whole.is_none() {
            return Trusted(self.w).compare_and_swap_bits(self.rank, byte, basic, origin, compare);
        }
        self.w.world().guards().check_cas(basic, self.w.flavor())?;
        let ty = self.w.world().basic_handle(basic)?;
        let (disp, r, win) = (whole.map_or(0, |w| w.0), self.r, self.w.handle());
        let (mut o, mut c) = ([0u8; 8], [0u8; 8]);
        rma_core::bytes_from_bits(origin, &mut o[..size]);
        rma_core::bytes_from_bits(compare, &mut c[..size]);
        let old = self.fetch_then_flush(
            "MPI_Compare_and_swap",
            24,
            #[inline(always)]
            |api, l| {
                // SAFETY: as in `fetch_and_op_bits`, with 24 bytes: origin, compare,
                // result.
                unsafe {
                    l.cast::<[u8; 8]>().write(o);
                    let (cp, d) = (l.add(8), l.add(16));
                    cp.cast::<[u8; 8]>().write(c);
                    (api.compare_and_swap)(l.cast(), cp.cast(), d.cast(), ty, r, disp, win)
                }
            },
            #[inline(always)]
            // SAFETY: the result's 8 bytes at byte 16 of the landing, complete.
            |l| unsafe { l.add(16).cast::<[u8; 8]>().read() },
        )?;
        Ok(rma_core::bits_from_bytes(&old[..size]))
    }

    /// MPI_Accumulate of one element of `basic` (at most 8 bytes), given as bits, into
    /// the element at byte `byte`; the origin is copied and kept until a flush.
    #[inline(always)]
    #[doc(alias = "MPI_Accumulate")]
    pub fn accumulate_bits(
        &self,
        byte: usize,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<()> {
        let size = basic.size();
        let whole = self.whole(byte, size);
        let guards = self.w.world().guards();
        let refused = size > 8 || guards.refuses_accumulate(basic, op, self.w.flavor);
        let (Some((disp, _)), false) = (whole, refused) else {
            return self.general_acc(byte, basic, op, origin);
        };
        let ty = self.w.world().basic_handle(basic)?;
        let (r, win) = (self.r, self.w.handle());
        self.w.issue_copied_lazy(
            self.mark,
            #[inline(always)]
            |c| c.keep_bits(r, origin, size),
            Mode::Passive,
            || {
                Call::new("MPI_Accumulate")
                    .rank(self.rank)
                    .typed(basic, Some(op))
            },
            #[inline(always)]
            |api, origin| {
                // SAFETY: `origin` holds one element, kept until a synchronization
                // completes the call; the element lies inside the target window.
                unsafe { (api.accumulate)(origin.cast(), 1, ty, r, disp, 1, ty, op as c_int, win) }
            },
        )
    }

    /// [`MpiTarget::accumulate_bits`] where a library defect may refuse the call, or
    /// the element is not at a whole displacement: the window's general path, with
    /// its checks.
    #[cold]
    #[inline(never)]
    fn general_acc(&self, byte: usize, basic: BasicType, op: Op, origin: u64) -> Result<()> {
        Trusted(self.w).accumulate_bits(self.rank, byte, false, basic, op, origin)
    }

    /// MPI_Win_flush of the target, skipped when no call to it is incomplete.
    #[inline(always)]
    #[doc(alias = "MPI_Win_flush")]
    pub fn flush(&self) -> Result<()> {
        self.w
            .flush_rank_after(self.r, self.mark, false, false, no_call, |_, _| 0, |_| ())?;
        Ok(())
    }
}
