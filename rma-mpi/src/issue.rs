//! The byte-level RMA calls of [`MpiWindow`], where both API levels (the public calls
//! and the [`rma_core::Transport`] impl) end: each places its target layout, issues the
//! MPI call and completes it as the epoch allows (see `pending.rs`): put and accumulate
//! keep a copy of their origin for a later synchronization, fetching calls flush
//! their target.

use crate::epoch::Mode;
use crate::pending::{copy_landed, Landing};
use crate::window::{MpiWindow, Spot};
use rma_core::{BasicType, Error, Op, Rank, Result, RmaCall};
use rma_mpi_sys::{Api, Call, Handle};
use std::ffi::c_int;

impl MpiWindow<'_> {
    /// Completes a fetching call to `rank` with MPI_Win_flush, which also completes
    /// every earlier call to it, at origin and target: the results are in place and
    /// the target is clean.
    ///
    /// A flush rather than a request and MPI_Wait: MPICH 4.0's shared-memory path
    /// completes the request of an Rget whose target datatype is derived before it has
    /// written the origin buffer (the bytes arrive at the next flush; valgrind shows
    /// the write into the freed buffer). The flush is where they arrive.
    fn complete_fetch(&self, rank: c_int) -> Result<()> {
        self.flush_rank_now(rank, false, true)
    }

    /// put of `data` at `spot`.
    pub(crate) fn put_at(&self, spot: Spot<'_>, data: &[u8], mode: Mode) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let p = self.placement(spot, data.len(), BasicType::Byte)?;
        let (ty, n) = (
            self.world.basic_handle(BasicType::Byte)?,
            c_len(data.len())?,
        );
        let call =
            Call::new("MPI_Put")
                .rank(spot.rank)
                .placed(p.range, (p.disp, p.disp_unit), data.len());
        self.issue_copied(p.rank, data, mode, call, |api, origin| {
            // SAFETY: `origin` holds `n` bytes, kept until a synchronization completes
            // the put; the placement's type and the window are live.
            unsafe {
                (api.put)(
                    origin.cast(),
                    n,
                    ty,
                    p.rank,
                    p.disp,
                    p.count,
                    p.ty,
                    self.win,
                )
            }
        })
    }

    /// get of `spot` into `out`; passive epochs only.
    pub(crate) fn get_at(&self, spot: Spot<'_>, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let p = self.placement(spot, out.len(), BasicType::Byte)?;
        let (ty, n) = (self.world.basic_handle(BasicType::Byte)?, c_len(out.len())?);
        let (len, win) = (out.len(), self.win);
        let call = || {
            Call::new("MPI_Get")
                .rank(spot.rank)
                .placed(p.range, (p.disp, p.disp_unit), len)
        };
        self.fetch_flushed(
            p.rank,
            self.pending.mark(p.rank),
            len,
            call,
            |api, dst| {
                // SAFETY: the landing holds `n` bytes and outlives the call (kept by the
                // window, or left to MPI if the flush fails); the placement's type and
                // the window are live.
                unsafe { (api.get)(dst.cast(), n, ty, p.rank, p.disp, p.count, p.ty, win) }
            },
            // SAFETY: the get's `len` bytes, complete.
            |l| unsafe { copy_landed(l, out) },
        )
    }

    /// Completes the fetching calls issued into `land` ([`MpiWindow::complete_fetch`])
    /// and copies their result from byte `at` into `out`; if the flush fails, the
    /// landing is left to MPI, which may still write it.
    fn complete_into(&self, rank: c_int, land: Landing, at: usize, out: &mut [u8]) -> Result<()> {
        let done = self.complete_fetch(rank);
        if done.is_ok() {
            land.take(at, out);
        }
        land.settle(done.is_ok());
        done
    }

    /// accumulate of `data` into `spot`.
    pub(crate) fn accumulate_at(
        &self,
        spot: Spot<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        mode: Mode,
    ) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        if self.split(basic, data.len()) {
            return self.each_element(spot, data.len(), basic, |one, r| {
                self.accumulate_at(one, basic, op, &data[r], mode)
            });
        }
        let p = self.placement(spot, data.len(), basic)?;
        let (ty, n) = (
            self.world.basic_handle(basic)?,
            c_len(data.len() / basic.size())?,
        );
        let call = Call::new("MPI_Accumulate")
            .rank(spot.rank)
            .typed(basic, Some(op))
            .placed(p.range, (p.disp, p.disp_unit), data.len());
        self.issue_copied(p.rank, data, mode, call, |api, origin| {
            // SAFETY: `origin` holds `n` elements, kept until a synchronization completes
            // the call; the placement's type and the window are live.
            unsafe {
                (api.accumulate)(
                    origin.cast(),
                    n,
                    ty,
                    p.rank,
                    p.disp,
                    p.count,
                    p.ty,
                    op as c_int,
                    self.win,
                )
            }
        })
    }

    /// get_accumulate at `spot`; passive epochs only. `data` is empty or as long as
    /// `out` (empty only for NO_OP).
    pub(crate) fn get_accumulate_at(
        &self,
        spot: Spot<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        rma_ops::check(op, basic, RmaCall::GetAccumulate)?;
        check_fetch_lengths(op, data.len(), out.len())?;
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        let r = self.world.c_rank(spot.rank)?;
        let len = out.len();
        if !self.split(basic, len) {
            // one call and its flush in one turn, into the window's landing: the
            // result, then the origin (zeros for NO_OP's empty one)
            let p = self.placement(spot, len, basic)?;
            let (ty, n) = (self.world.basic_handle(basic)?, c_len(len / basic.size())?);
            let call = || {
                Call::new("MPI_Get_accumulate")
                    .rank(spot.rank)
                    .typed(basic, Some(op))
                    .placed(p.range, (p.disp, p.disp_unit), len)
            };
            let win = self.win;
            return self.fetch_flushed(
                r,
                self.pending.mark(r),
                2 * len,
                call,
                |api, l| {
                    // SAFETY: the landing holds 2 * len bytes with no reference to it:
                    // the result's `n` elements, then the origin's; it outlives the call
                    // (see `fetch_flushed`); the placement's type and the window are live.
                    unsafe {
                        let o = l.add(len);
                        std::ptr::write_bytes(o, 0, len);
                        std::ptr::copy_nonoverlapping(data.as_ptr(), o, data.len());
                        get_accumulate_raw(api, (o, l, n, ty), &p, op, win)
                    }
                },
                // SAFETY: the result's `len` bytes, complete.
                |l| unsafe { copy_landed(l, out) },
            );
        }
        // one call per element (a library guard), all completed by one flush, into a
        // landing of this call's: the result, then the origin
        let mut land = Landing::new(2 * len);
        land.put(len, data);
        let (res, org) = (land.ptr(), land.ptr().wrapping_add(len));
        let issued = self.each_element(spot, len, basic, |one, i| {
            let e = i.end - i.start;
            // inside the landing: `i` lies in 0..len
            let (o, d) = (org.wrapping_add(i.start), res.wrapping_add(i.start));
            self.issue_get_accumulate(one, basic, op, o, d, e)
        });
        // complete even after a failed element: the earlier ones write the landing
        let completed = self.complete_into(r, land, 0, out);
        issued.and(completed)
    }

    /// Issues MPI_Get_accumulate at `spot` of `len` bytes from `data` into `out`, both
    /// in a [`Landing`] that the caller completes before reading it or letting it go.
    fn issue_get_accumulate(
        &self,
        spot: Spot<'_>,
        basic: BasicType,
        op: Op,
        data: *const u8,
        out: *mut u8,
        len: usize,
    ) -> Result<()> {
        let p = self.placement(spot, len, basic)?;
        let (ty, n) = (self.world.basic_handle(basic)?, c_len(len / basic.size())?);
        let win = self.win;
        // SAFETY: `data` and `out` hold `n` elements each in a landing that outlives
        // the call (the caller's contract); the placement's type and the window are live.
        let rc = self
            .world
            .mpi(|api| unsafe { get_accumulate_raw(api, (data, out, n, ty), &p, op, win) });
        let call = Call::new("MPI_Get_accumulate")
            .rank(spot.rank)
            .typed(basic, Some(op))
            .placed(p.range, (p.disp, p.disp_unit), len);
        self.world.check(rc, call)
    }

    /// The displacement of the element at `byte` of `rank`'s window, checked to lie
    /// inside it and at a multiple of its disp_unit.
    fn element_disp(&self, rank: Rank, byte: usize, basic: BasicType) -> Result<i64> {
        let peer = self.peer(rank)?;
        let end = byte as i128 + basic.size() as i128;
        if end > peer.len as i128 {
            return Err(Error::OutOfWindow {
                rank,
                start: byte as i128,
                end,
                window_len: peer.len,
            });
        }
        if byte % peer.disp_unit != 0 {
            return Err(Error::Flavor {
                reason: format!(
                    "byte {byte} of {rank}'s window is not a multiple of its disp_unit {}; \
                     MPI reaches single elements only at whole displacements (create windows \
                     for rma-win with disp_unit 1)",
                    peer.disp_unit
                ),
            });
        }
        Ok((byte / peer.disp_unit) as i64 + peer.base as i64)
    }

    /// Whether a call on `bytes` bytes of `basic` goes one element per MPI call.
    pub(crate) fn split(&self, basic: BasicType, bytes: usize) -> bool {
        self.world.guards().split(basic, bytes)
    }

    /// The byte offsets of the elements of `spot` in `rank`'s window, in type-map
    /// order, after checking the whole region as one call would.
    fn element_offsets(
        &self,
        spot: Spot<'_>,
        bytes: usize,
        basic: BasicType,
    ) -> Result<Vec<usize>> {
        drop(self.placement(spot, bytes, basic)?);
        let e = basic.size();
        let mut out = Vec::with_capacity(bytes / e);
        let mut run = |offset: isize, len: usize| {
            // in range: the placement above checked every run against the window
            let first = (spot.byte as isize + offset) as usize;
            out.extend((0..len / e).map(|k| first + k * e));
        };
        match spot.layout {
            None => run(0, bytes),
            Some(l) => l.for_each_run(&mut |r| run(r.offset, r.len)),
        }
        Ok(out)
    }

    /// Calls `f(element spot, index)` for each element of `spot`.
    fn each_element(
        &self,
        spot: Spot<'_>,
        bytes: usize,
        basic: BasicType,
        mut f: impl FnMut(Spot<'_>, std::ops::Range<usize>) -> Result<()>,
    ) -> Result<()> {
        let e = basic.size();
        for (i, byte) in self
            .element_offsets(spot, bytes, basic)?
            .into_iter()
            .enumerate()
        {
            let one = Spot {
                rank: spot.rank,
                byte,
                layout: None,
            };
            f(one, i * e..(i + 1) * e)?;
        }
        Ok(())
    }

    /// fetch_and_op on the element at `byte`; passive epochs only.
    pub(crate) fn fetch_and_op_at(
        &self,
        rank: Rank,
        byte: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        check_fetch_and_op(basic, op, origin, out)?;
        let disp = self.element_disp(rank, byte, basic)?;
        if self.world.guards().fetch_and_op_as_get_accumulate(basic) {
            let one = Spot {
                rank,
                byte,
                layout: None,
            };
            return self.get_accumulate_at(one, basic, op, origin, out);
        }
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        let (ty, r) = (self.world.basic_handle(basic)?, self.world.c_rank(rank)?);
        // the origin (zeros for NO_OP's empty one), then the result
        let e = basic.size();
        let call = || {
            Call::new("MPI_Fetch_and_op")
                .rank(rank)
                .typed(basic, Some(op))
        };
        let win = self.win;
        self.fetch_flushed(
            r,
            self.pending.mark(r),
            2 * e,
            call,
            |api, l| {
                // SAFETY: the landing holds 2 * e bytes with no reference to it: the
                // origin (one element, checked above) goes first, the result comes back
                // after it; it outlives the call (see `fetch_flushed`).
                unsafe {
                    std::ptr::write_bytes(l, 0, e);
                    std::ptr::copy_nonoverlapping(origin.as_ptr(), l, origin.len());
                    (api.fetch_and_op)(l.cast(), l.add(e).cast(), ty, r, disp, op as c_int, win)
                }
            },
            // SAFETY: the result's `e` bytes after the origin, complete.
            |l| unsafe { copy_landed(l.add(e), out) },
        )
    }

    /// compare_and_swap on the element at `byte`; passive epochs only.
    pub(crate) fn compare_and_swap_at(
        &self,
        rank: Rank,
        byte: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        check_compare_and_swap(basic, origin, compare, out)?;
        self.world.guards().check_cas(basic, self.flavor)?;
        let disp = self.element_disp(rank, byte, basic)?;
        let (ty, r) = (self.world.basic_handle(basic)?, self.world.c_rank(rank)?);
        let call = || {
            Call::new("MPI_Compare_and_swap")
                .rank(rank)
                .typed(basic, None)
        };
        // origin, compare, result
        let (e, win) = (basic.size(), self.win);
        self.fetch_flushed(
            r,
            self.pending.mark(r),
            3 * e,
            call,
            |api, l| {
                // SAFETY: the landing holds three elements (checked above) with no
                // reference to it, and outlives the call (see `fetch_flushed`).
                unsafe {
                    std::ptr::copy_nonoverlapping(origin.as_ptr(), l, e);
                    std::ptr::copy_nonoverlapping(compare.as_ptr(), l.add(e), e);
                    let (c, d) = (l.add(e), l.add(2 * e));
                    (api.compare_and_swap)(l.cast(), c.cast(), d.cast(), ty, r, disp, win)
                }
            },
            // SAFETY: the result's `e` bytes after origin and compare, complete.
            |l| unsafe { copy_landed(l.add(2 * e), out) },
        )
    }
}

/// MPI_Get_accumulate of `n` elements of `ty` from `origin` into `result`, at `p` of
/// `win`.
///
/// # Safety
/// `origin` and `result` hold `n` elements each and stay valid until a synchronization
/// completes the call; `p`'s type and `win` are live.
unsafe fn get_accumulate_raw(
    api: &Api,
    (origin, result, n, ty): (*const u8, *mut u8, c_int, Handle),
    p: &crate::datatype::Placement,
    op: Op,
    win: Handle,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        (api.get_accumulate)(
            origin.cast(),
            n,
            ty,
            result.cast(),
            n,
            ty,
            p.rank,
            p.disp,
            p.count,
            p.ty,
            op as c_int,
            win,
        )
    }
}

pub(crate) fn c_len(n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| Error::CountOverflow {
        count: n,
        what: "elements in one MPI call",
    })
}

/// Checks a fetch_and_op's op, type and buffers: one element each (the origin may be
/// empty for NO_OP).
pub(crate) fn check_fetch_and_op(
    basic: BasicType,
    op: Op,
    origin: &[u8],
    out: &[u8],
) -> Result<()> {
    rma_ops::check(op, basic, RmaCall::FetchAndOp)?;
    let n = basic.size();
    if origin.len() != n && !(op == Op::NoOp && origin.is_empty()) {
        return Err(element_len("origin", n, origin.len()));
    }
    if out.len() != n {
        return Err(element_len("result", n, out.len()));
    }
    Ok(())
}

/// Checks a compare_and_swap's type and buffers: one element each.
pub(crate) fn check_compare_and_swap(
    basic: BasicType,
    origin: &[u8],
    compare: &[u8],
    out: &[u8],
) -> Result<()> {
    rma_ops::check_cas_type(basic)?;
    let n = basic.size();
    for (which, len) in [
        ("origin", origin.len()),
        ("compare", compare.len()),
        ("result", out.len()),
    ] {
        if len != n {
            return Err(element_len(which, n, len));
        }
    }
    Ok(())
}

/// The error for a buffer that does not hold exactly one element of `needed` bytes.
fn element_len(which: &'static str, needed: usize, got: usize) -> Error {
    if got < needed {
        Error::BufferTooSmall { which, needed, got }
    } else {
        Error::arg(format!(
            "the {which} buffer holds {got} bytes, one element is {needed}"
        ))
    }
}

/// `Ok` if a get_accumulate's origin is as long as its result, or empty for NO_OP.
pub(crate) fn check_fetch_lengths(op: Op, data: usize, out: usize) -> Result<()> {
    if data == out || (op == Op::NoOp && data == 0) {
        Ok(())
    } else {
        Err(Error::arg(format!(
            "the origin holds {data} bytes and the result {out}; they must match (or the origin be empty for NO_OP)"
        )))
    }
}
