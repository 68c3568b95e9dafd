//! The road every RMA call takes once its target is resolved.
//!
//! A [`Road`] is one target of one origin's open epoch, resolved once: the target's
//! index, that an epoch covers it, its window shape (length, displacement unit,
//! address for alignment), whether this origin holds it exclusively, whether the
//! epoch is active-target (its calls are recorded as pending for the closing fence),
//! and the backend's fast path to it where the backend offers one
//! ([`rma_backends::Fast`]: on rma's atomic transport the target's memory and
//! atomicity domain, so a call goes straight to the atomic kernel; a backend from
//! outside rma offers its own through `Transport::fast_path`).
//!
//! Every entry point resolves a road and then runs the same code:
//!
//! - a [`crate::TargetHandle`] resolves its road when it is made (once per epoch);
//! - the window's typed calls ([`Window::put`], [`Window::accumulate`], ...), its
//!   element calls for callers that know the element type only at run time
//!   ([`Window::accumulate_elements`], the C interface), and the MPI-faithful forms
//!   for predefined, contiguous buffers ([`Window::put_with`], ...) resolve one per
//!   call from the passive-target epoch's per-target state (a couple of loads:
//!   [`Road::passive`]); anything else (an active-target epoch, a derived datatype, a
//!   dynamic or checked window, an error to report) takes the general path, which
//!   checks everything and reports what is wrong.
//!
//! What is written here once: the displacement-to-offset rule with its range and
//! alignment checks ([`Road::offset`]), and the element rule — one element of at
//! most 8 bytes travels as bits to the backend's single-element call, anything else
//! as bytes ([`one_element`]).
// errors are built lazily on the hot path (`Error` has drop glue): see window/mod.rs
#![allow(clippy::unnecessary_lazy_evaluations)]

use crate::window::{bits_of, Window};
use rma_backends::Fast;
use rma_core::{
    Access, BasicType, Contiguous, Disp, Error, FastPath, Layout, Op, Rank, Result, Shape,
    Transport,
};
use rma_datatype::Equivalence;
use rma_ops::atomic::atomic_align;
use std::sync::atomic::Ordering;

/// One target of this origin's open epoch, resolved once (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Road<'e> {
    pub(crate) rank: Rank,
    /// A dynamic window's target: offsets come from addresses, ranges from regions.
    pub(crate) dynamic: bool,
    /// The target's window shape; a dynamic window's road keeps a length of 0, so
    /// every call takes the cold path of [`Road::offset`], which checks regions.
    shape: Shape,
    pub(crate) exclusive: bool,
    /// An active-target epoch (fence, start): calls are recorded as pending for the
    /// closing fence's checks.
    pub(crate) active: bool,
    /// The backend's fast path to this target, where it offers one (rma's own).
    pub(crate) fast: Option<Fast<'e>>,
    /// A fast path that a backend from outside rma offers (`Transport::fast_path`),
    /// tried where `fast` is `None` (kept apart so that rma's own pay nothing for it).
    ext: Option<&'e dyn FastPath>,
    /// The world's failure word (`Window::failed`), kept here: every call reads it.
    failed: &'e std::sync::atomic::AtomicU32,
}

/// The bits of a call's origin when it is one element of `basic` of at most 8 bytes
/// (the backends' single-element calls take it as bits); `None` otherwise. `origin`
/// is the caller's elements (`T` of `basic`'s size: a typed call) or their bytes (a
/// call that knows the type only at run time); the choice folds at compile time.
#[inline(always)]
pub(crate) fn one_element<T: Equivalence>(basic: BasicType, origin: &[T]) -> Option<u64> {
    if std::mem::size_of::<T>() == basic.size() {
        match origin {
            [x] if basic.size() <= 8 => Some(bits_of(x)),
            _ => None,
        }
    } else {
        let data = rma_datatype::bytes_of(origin);
        (data.len() == basic.size() && data.len() <= 8).then(|| rma_core::bits_from_bytes(data))
    }
}

impl<'e> Road<'e> {
    /// Resolves `rank` through the window's epoch checks: in the window, covered by
    /// the open epoch (waiting for its post in a start epoch), not the null rank
    /// (class RANK). `active`: the epoch is fence or start.
    pub(crate) fn new(win: &'e Window<'_>, rank: Rank, active: bool) -> Result<Road<'e>> {
        let t = win
            .begin("target", rank)?
            .ok_or_else(|| Error::InvalidRank {
                rank,
                size: win.size(),
            })?;
        Ok(Road {
            fast: win.win.fast(rank),
            ext: win.win.plugged_fast(rank),
            ..Road::at(win, t, rank, active)
        })
    }

    /// The road of target index `t` (of `rank`), whose epoch the caller has checked
    /// (the general path, after `begin`), without a fast path: the displacement rule
    /// ([`Road::offset`]) and the calls through the backend's transport.
    pub(crate) fn at(win: &'e Window<'_>, t: usize, rank: Rank, active: bool) -> Road<'e> {
        Road {
            rank,
            dynamic: win.dynamic,
            shape: Shape {
                len: if win.dynamic { 0 } else { win.shapes[t].len },
                ..win.shapes[t]
            },
            exclusive: win.exclusive_on(t),
            active,
            fast: None,
            ext: None,
            failed: win.failed,
        }
    }

    /// The road of a call to `rank` that a passive-target epoch of this origin covers,
    /// in a world with no dead rank, on a window that is neither dynamic nor checked:
    /// a couple of loads. `None` otherwise: the caller takes the general path, which
    /// checks everything and reports what is wrong.
    #[inline(always)]
    pub(crate) fn passive(win: &'e Window<'_>, rank: Rank) -> Option<Road<'e>> {
        // (never for a dynamic or checked window: its fast bits stay clear)
        let t = win.fast_target(rank)?;
        Some(Road {
            rank,
            dynamic: false,
            shape: win.shapes[t],
            exclusive: win.exclusive_on(t),
            active: false,
            // resolved per call: a few loads on the atomic transport; on the mpi
            // transport a handful of lookups, which spare the call the general path's
            // placement (a quarter of its instructions, benches/results)
            fast: win.win.fast(rank),
            ext: None,
            failed: win.failed,
        })
    }

    /// `Err` (PROC_FAILED naming the dead rank, or INTERN) once a rank of the world
    /// died: one relaxed load.
    #[inline(always)]
    pub(crate) fn live(&self, win: &Window<'_>) -> Result<()> {
        if self.failed.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        win.check_world()
    }

    /// The byte offset of `bytes` at `disp`, inside the target's window and, for an
    /// element of `atomic` type, aligned for its atomics (the one displacement rule).
    #[inline(always)]
    pub(crate) fn offset(
        &self,
        win: &Window<'_>,
        call: &'static str,
        disp: Disp,
        bytes: usize,
        atomic: Option<BasicType>,
    ) -> Result<usize> {
        let unit = self.shape.disp_unit;
        let Ok(d) = usize::try_from(disp) else {
            return self.off_range(win, call, disp, 0, bytes, atomic);
        };
        let off = d.checked_mul(unit).ok_or_else(|| Error::DispOverflow {
            disp,
            disp_unit: unit,
        })?;
        match off.checked_add(bytes) {
            Some(end) if end <= self.shape.len => {}
            _ => return self.off_range(win, call, disp, off, bytes, atomic),
        }
        Self::aligned(call, disp, off, atomic, &self.shape)
    }

    /// `off` (of `shape`'s window) for `atomic`'s atomics: aligned, or class DISP.
    #[inline(always)]
    fn aligned(
        call: &'static str,
        disp: Disp,
        off: usize,
        atomic: Option<BasicType>,
        shape: &Shape,
    ) -> Result<usize> {
        if let Some(basic) = atomic {
            let align = atomic_align(basic);
            if shape.addr.wrapping_add(off) % align != 0 {
                return Err(Error::Misaligned {
                    call,
                    basic,
                    align,
                    disp,
                    disp_unit: shape.disp_unit,
                    offset: off,
                });
            }
        }
        Ok(off)
    }

    /// A range [`Road::offset`] did not take: a dynamic window's call (whose `disp` is
    /// an address, and whose bytes must lie in one region the target attached), or one
    /// outside the window (class RMA_RANGE).
    #[cold]
    #[inline(never)]
    fn off_range(
        &self,
        win: &Window<'_>,
        call: &'static str,
        disp: Disp,
        off: usize,
        bytes: usize,
        atomic: Option<BasicType>,
    ) -> Result<usize> {
        if !self.dynamic && disp < 0 {
            return Err(Error::NegativeDisp { disp });
        }
        if !self.dynamic {
            return Err(Error::OutOfWindow {
                rank: self.rank,
                start: off as i128,
                end: off as i128 + bytes as i128,
                window_len: self.shape.len,
            });
        }
        let t = self.rank.index().unwrap_or(usize::MAX); // checked when made
        let shape = win.shapes[t];
        let off = win.byte_offset(t, disp)?;
        match off.checked_add(bytes) {
            Some(end) if end <= shape.len => win.check_attached(t, off, end)?,
            _ => {
                return Err(Error::NotAttached {
                    rank: self.rank,
                    start: disp as i128,
                    end: disp as i128 + bytes as i128,
                })
            }
        }
        Self::aligned(call, disp, off, atomic, &shape)
    }

    /// Records an issued call for an active-target epoch's closing fence.
    #[inline(always)]
    pub(crate) fn issued(&self, win: &Window<'_>) {
        if self.active {
            win.issued();
        }
    }

    /// Notes the caller for a checked window's records: a checked window has no fast
    /// path, so a road with one never pays for this.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn note_site(&self, win: &Window<'_>) {
        if self.fast.is_none() && self.ext.is_none() {
            win.note_site();
        }
    }

    #[inline(always)]
    pub(crate) fn access<'l>(&self, base: usize, layout: &'l dyn Layout) -> Access<'l> {
        Access {
            target: self.rank,
            base,
            layout,
            exclusive: self.exclusive,
        }
    }

    // ---- the calls, at an offset `offset` checked ---------------------------------

    /// put of `data` at byte `off`.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn put(&self, win: &Window<'_>, off: usize, data: &[u8]) -> Result<()> {
        self.live(win)?;
        match (&self.fast, self.ext) {
            (Some(f), _) => f.put(off, data)?,
            (None, Some(d)) => d.put(off, data)?,
            (None, None) => {
                win.note_site();
                win.win
                    .put(self.access(off, &Contiguous(data.len())), data)?
            }
        }
        self.issued(win);
        Ok(())
    }

    /// get into `out` from byte `off`, complete when it returns.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn get(&self, win: &Window<'_>, off: usize, out: &mut [u8]) -> Result<()> {
        self.live(win)?;
        match (&self.fast, self.ext) {
            (Some(f), _) => f.get(off, out)?,
            (None, Some(d)) => d.get(off, out)?,
            (None, None) => {
                win.note_site();
                win.win.get(self.access(off, &Contiguous(out.len())), out)?
            }
        }
        self.issued(win);
        Ok(())
    }

    /// accumulate of `origin`, whole elements of `basic` (op checked), at byte `off`.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn accumulate<T: Equivalence>(
        &self,
        win: &Window<'_>,
        off: usize,
        basic: BasicType,
        op: Op,
        origin: &[T],
    ) -> Result<()> {
        self.live(win)?;
        match (one_element(basic, origin), &self.fast, self.ext) {
            (Some(bits), Some(f), _) => f.accumulate_bits(off, self.exclusive, basic, op, bits)?,
            (Some(bits), None, Some(d)) => {
                d.accumulate_bits(off, self.exclusive, basic, op, bits)?
            }
            (Some(bits), None, None) => {
                win.note_site();
                win.win
                    .accumulate_bits(self.rank, off, self.exclusive, basic, op, bits)?
            }
            (None, _, _) => {
                win.note_site();
                let data = rma_datatype::bytes_of(origin);
                let layout = Contiguous(data.len());
                win.win
                    .accumulate(self.access(off, &layout), basic, op, data)?
            }
        }
        self.issued(win);
        Ok(())
    }

    /// get_accumulate at byte `off`: `out` (whole elements of `basic`) receives the old
    /// values, `data` (as long as `out`, or empty for NO_OP) is combined in with `op`
    /// (checked). One element of at most 8 bytes is a fetch-and-op.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn get_accumulate(
        &self,
        win: &Window<'_>,
        off: usize,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        if out.len() == basic.size() && out.len() <= 8 {
            let bits = if op == Op::NoOp {
                0
            } else {
                rma_core::bits_from_bytes(data)
            };
            let old = self.fetch_and_op(win, off, basic, op, bits)?;
            rma_core::bytes_from_bits(old, out);
            return Ok(());
        }
        self.live(win)?;
        win.note_site();
        let layout = Contiguous(out.len());
        win.win
            .get_accumulate(self.access(off, &layout), basic, op, data, out)?;
        self.issued(win);
        Ok(())
    }

    /// fetch_and_op on the element of `basic` (at most 8 bytes, op checked) at byte
    /// `off`, as bits: the old value.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn fetch_and_op(
        &self,
        win: &Window<'_>,
        off: usize,
        basic: BasicType,
        op: Op,
        bits: u64,
    ) -> Result<u64> {
        self.live(win)?;
        let old = match (&self.fast, self.ext) {
            (Some(f), _) => f.fetch_and_op_bits(off, basic, op, bits)?,
            (None, Some(d)) => d.fetch_and_op_bits(off, basic, op, bits)?,
            (None, None) => {
                win.note_site();
                win.win.fetch_and_op_bits(self.rank, off, basic, op, bits)?
            }
        };
        self.issued(win);
        Ok(old)
    }

    /// compare_and_swap on the element of `basic` (at most 8 bytes, type checked) at
    /// byte `off`, as bits: the old value.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn compare_and_swap(
        &self,
        win: &Window<'_>,
        off: usize,
        basic: BasicType,
        value: u64,
        compare: u64,
    ) -> Result<u64> {
        self.live(win)?;
        let old = match (&self.fast, self.ext) {
            (Some(f), _) => f.compare_and_swap_bits(off, basic, value, compare)?,
            (None, Some(d)) => d.compare_and_swap_bits(off, basic, value, compare)?,
            (None, None) => {
                win.note_site();
                win.win
                    .compare_and_swap_bits(self.rank, off, basic, value, compare)?
            }
        };
        self.issued(win);
        Ok(old)
    }

    /// Completes every call to this target at origin and target (the epoch checked
    /// by the caller).
    #[inline(always)]
    pub(crate) fn flush(&self, win: &Window<'_>) -> Result<()> {
        self.live(win)?;
        match (&self.fast, self.ext) {
            (Some(f), _) => f.flush(),
            (None, Some(d)) => d.flush(),
            (None, None) => win.win.flush(self.rank),
        }
    }
}
