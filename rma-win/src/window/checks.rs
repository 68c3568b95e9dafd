//! The checks every call shares: rank, displacement, target layout (fit, overlap,
//! alignment), the prologue of the MPI-faithful forms, and the typed calls' fast path.

use super::*;
use crate::road::Road;

impl<'w> Window<'w> {
    /// `Ok(None)` for the null rank, `Ok(Some(index))` for a rank of the group.
    pub(crate) fn check_rank(&self, rank: Rank) -> Result<Option<usize>> {
        match rank.index() {
            None => Ok(None),
            Some(i) if i < self.size() => Ok(Some(i)),
            Some(_) => Err(Error::InvalidRank {
                rank,
                size: self.size(),
            }),
        }
    }

    /// The byte offset of `disp` in `target`'s window (for a dynamic window, `disp` is
    /// an address in the target's part, where its `Shape::addr` is offset 0).
    pub(crate) fn byte_offset(&self, target: usize, disp: Disp) -> Result<usize> {
        if self.dynamic {
            let base = self.shapes[target].addr as i128;
            return usize::try_from(disp as i128 - base).map_err(|_| Error::NotAttached {
                rank: rank_of(target),
                start: disp as i128,
                end: disp as i128,
            });
        }
        if disp < 0 {
            return Err(Error::NegativeDisp { disp });
        }
        let unit = self.shapes[target].disp_unit;
        (disp as u64)
            .checked_mul(unit as u64)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| Error::DispOverflow {
                disp,
                disp_unit: unit,
            })
    }

    /// Target-side checks: displacement, overlap (if writing), fit, alignment (for the
    /// accumulate family). Returns the byte base and the layout.
    pub(crate) fn target_layout(
        &self,
        t: usize,
        target: &Target<'_>,
        writes: bool,
        atomic: Option<(&'static str, BasicType)>,
    ) -> Result<(usize, Resolved)> {
        let base = self.byte_offset(t, target.disp)?;
        let layout = Resolved::of(target.dt.get(), target.count)?;
        if let Resolved::Map(m) = &layout {
            if writes {
                m.check_no_overlap()?;
            }
            m.check_fits(base, self.shapes[t].len, rank_of(t))?;
        } else if let Some((_, hi)) = layout.span() {
            let len = self.shapes[t].len;
            if base.checked_add(hi as usize).is_none_or(|end| end > len) {
                return Err(Error::OutOfWindow {
                    rank: rank_of(t),
                    start: base as i128,
                    end: base as i128 + hi as i128,
                    window_len: len,
                });
            }
        }
        if let (true, Some((lo, hi))) = (self.dynamic, layout.span()) {
            // inside the part (checked above): now inside one attached region
            let (start, end) = ((base as isize + lo) as usize, (base as isize + hi) as usize);
            self.check_attached(t, start, end)?;
        }
        if let Some((call, basic)) = atomic {
            let align = atomic_align(basic);
            let mut bad = None;
            match layout.as_strided() {
                // every run starts at first + i * stride: aligned if both terms are
                Some(st) if st.stride.unsigned_abs() % align == 0 => {
                    let first = (base as isize + st.offset) as usize;
                    if !self.aligned_at(t, first, align) {
                        bad = Some(first);
                    }
                }
                _ => layout.for_each_run(&mut |r| {
                    let at = (base as isize + r.offset) as usize;
                    if bad.is_none() && !self.aligned_at(t, at, align) {
                        bad = Some(at);
                    }
                }),
            }
            if let Some(offset) = bad {
                return Err(Error::Misaligned {
                    call,
                    basic,
                    align,
                    disp: target.disp,
                    disp_unit: self.shapes[t].disp_unit,
                    offset,
                });
            }
        }
        Ok((base, layout))
    }

    /// For a dynamic window, `Err` (class RMA_RANGE) unless bytes `[start, end)` of
    /// `t`'s part lie inside one region `t` attached.
    #[inline]
    pub(crate) fn check_attached(&self, t: usize, start: usize, end: usize) -> Result<()> {
        if !self.dynamic || self.win.attached(t, start, end)? {
            return Ok(());
        }
        let base = self.shapes[t].addr as i128;
        Err(Error::NotAttached {
            rank: rank_of(t),
            start: base + start as i128,
            end: base + end as i128,
        })
    }

    /// Checks shared by every call with a local buffer, in order: alive, rank, epoch,
    /// committed datatypes. `Ok(None)` when the call moves nothing (zero count or
    /// zero-size types on both sides, docs/semantics.md rule 18); otherwise `Ok(Some(t))`
    /// with `t` the target index, `None` for the null rank.
    pub(crate) fn prologue(
        &self,
        call: &'static str,
        local: Option<(&Dt<'_>, usize)>,
        target: &Target<'_>,
    ) -> Result<Option<Option<usize>>> {
        let t = self.begin(call, target.rank)?;
        if let Some((dt, _)) = local {
            dt.get().check_committed()?;
        }
        target.dt.get().check_committed()?;
        let local_empty = local.is_none_or(|(dt, count)| is_empty(dt, count));
        if local_empty && is_empty(&target.dt, target.count) {
            return Ok(None);
        }
        Ok(Some(t))
    }

    /// Runs `call` on the road of a call of `bytes` contiguous bytes at `disp` of
    /// `rank` (aligned for `atomic`'s atomics) and its byte offset, where a
    /// passive-target epoch of this origin covers the target and the bytes lie in its
    /// window ([`Road::passive`], [`Road::offset`]). `None` if any of that does not
    /// hold or nothing would move: the general path then checks everything and
    /// reports what is wrong. (The closure's `None` and the road's own refusals
    /// thus stay apart from the call's result, which the caller returns as it is.)
    ///
    /// When it is `None` for want of a passive epoch the caller's location is noted
    /// for a checked window's records (a checked window never takes this road), so the
    /// calls that try it first pay nothing for the checker when they take it.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn road_at<R>(
        &self,
        name: &'static str,
        rank: Rank,
        disp: Disp,
        bytes: usize,
        atomic: Option<BasicType>,
        call: impl FnOnce(&Road<'_>, usize) -> R,
    ) -> Option<R> {
        let Some(road) = Road::passive(self, rank) else {
            self.note_site();
            return None;
        };
        if bytes == 0 {
            return None;
        }
        let off = road.offset(self, name, disp, bytes, atomic).ok()?;
        Some(call(&road, off))
    }

    /// [`Window::road_at`] for one element of `basic` of at most 8 bytes (the calls
    /// that pass elements as bits).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn element_road<R>(
        &self,
        name: &'static str,
        rank: Rank,
        disp: Disp,
        basic: BasicType,
        call: impl FnOnce(&Road<'_>, usize) -> R,
    ) -> Option<R> {
        if basic.size() > 8 {
            self.note_site();
            return None;
        }
        self.road_at(name, rank, disp, basic.size(), Some(basic), call)
    }

    /// Whether byte `offset` of `t`'s window lies at an address aligned to `align` (a
    /// window created over a caller's buffer may itself start unaligned).
    #[inline]
    pub(crate) fn aligned_at(&self, t: usize, offset: usize, align: usize) -> bool {
        self.shapes[t].addr.wrapping_add(offset) % align == 0
    }

    /// The transport's view of a call to target `t`.
    pub(crate) fn access<'l>(
        &self,
        t: usize,
        rank: Rank,
        base: usize,
        layout: &'l dyn Layout,
    ) -> Access<'l> {
        Access {
            target: rank,
            base,
            layout,
            exclusive: self.exclusive_on(t),
        }
    }
}
