//! [`Window`]: creation, free, fence and epoch tracking, local access, and every RMA
//! call, validated here before a transport sees it.
// `Error` has drop glue (some variants own strings), so building one eagerly with
// `ok_or` costs a construction and a drop on every successful call (callgrind showed
// it on the hot path): errors are built lazily here, whatever clippy thinks.
#![allow(clippy::unnecessary_lazy_evaluations)]

use crate::buffers::{Buffer, BufferMut, Dt, Resolved, Target};
use crate::request::Request;
use crate::sync::Epochs;
use crate::world::World;
use rma_backends::AnyWindow;
use rma_core::{
    Access, Backend, BasicType, Contiguous, Disp, Error, Flavor, Info, Layout, Memory, Op, Rank,
    Result, RmaCall, Shape, Transport, WinInfo,
};
use rma_datatype::{Datatype, Equivalence};
use rma_ops::atomic::atomic_align;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

/// A window: memory each rank of a world exposes to the others, with the calls that
/// read, write and combine into it.
///
/// Created collectively by every rank ([`Window::allocate`], [`Window::create`]), used
/// by its rank's thread (it borrows its rank's `World`, so it stays on that thread:
/// neither `Send` nor `Sync`), freed collectively ([`Window::free`]). Every call
/// checks its arguments and the epoch state before any byte moves; a call refused by
/// those checks has changed nothing. A call that fails later, on a peer's death or a
/// stalled chunk lock (PROC_FAILED, INTERN), may have applied part of its data.
pub struct Window<'w> {
    pub(crate) world: &'w World,
    /// The backend's window: its memory, epoch primitives and transport.
    pub(crate) win: AnyWindow<'w>,
    /// Every rank's window shape, fixed at creation.
    pub(crate) shapes: Box<[Shape]>,
    pub(crate) info: WinInfo,
    pub(crate) epochs: RefCell<Epochs>,
    /// Per target, what the calls' fast path needs from `epochs` (sync.rs `HELD`,
    /// `EXCLUSIVE`), kept in step by every lock and unlock.
    pub(crate) fast: Box<[Cell<u8>]>,
    /// The world's failure word ([`World::failure_word`]): every call reads it (one
    /// relaxed load, sync.rs `fast_target` and `begin_as`).
    pub(crate) failed: &'w std::sync::atomic::AtomicU32,
    pub(crate) _borrow: PhantomData<&'w mut [u8]>,
}

impl std::fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("rank", &self.world.rank())
            .field("ranks", &self.world.size())
            .field("bytes", &self.local_len())
            .field("transport", &self.win.name())
            .field("epochs", &self.epochs.borrow())
            .finish()
    }
}

fn rank_of(r: usize) -> Rank {
    Rank::new(r as u32)
}

impl<'w> Window<'w> {
    /// Collectively allocates a window of `count` elements of `T` on this rank, in
    /// shared memory, zero-filled, with `disp_unit = size_of::<T>()` (MPI_Win_allocate).
    ///
    /// # Transport
    ///
    /// The info key `rma_transport` names the window's transport, else the
    /// `RMA_TRANSPORT` environment variable, else the launch mode's default: `atomic`,
    /// or `mpi` under an MPI launcher. [`Window::info`] reports the one in effect.
    ///
    /// - A transport named in the info is a request, honoured or refused: naming one
    ///   that cannot serve this window (`atomic` or `queued` under an MPI launcher,
    ///   `mpi` outside one) is an error of class RMA_FLAVOR that says why and which
    ///   transports would. Every rank (given the same info, as a collective call
    ///   needs) gets it before anything collective runs, so nothing changes: the same
    ///   call with another name, or none, works.
    /// - `RMA_TRANSPORT` is a process-wide default, not a request: where the transport
    ///   it names cannot serve this window, the window uses the launch mode's default
    ///   and a `tracing` warning says which and why.
    /// - A name that is no transport, in the info or the environment, is an error of
    ///   class ARG listing the transports.
    ///
    /// The same rule, with one more refusal, holds for [`Window::create`];
    /// [`chosen_transport`](crate::chosen_transport) applies it (docs/design.md
    /// decision 14).
    pub fn allocate<T: Equivalence>(
        world: &'w World,
        count: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let size = std::mem::size_of::<T>();
        let bytes = count
            .checked_mul(size)
            .ok_or_else(|| Error::CountOverflow {
                count,
                what: "window elements",
            })?;
        Self::allocate_bytes(world, bytes, size.max(1), info)
    }

    /// Collectively allocates a window of `len` bytes with displacement unit
    /// `disp_unit` (MPI_Win_allocate). The transport is chosen as for
    /// [`Window::allocate`].
    pub fn allocate_bytes(
        world: &'w World,
        len: usize,
        disp_unit: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_allocate", len, disp_unit).entered();
        let parsed = WinInfo::from_info(info)?;
        if disp_unit == 0 {
            return Err(Error::InvalidDispUnit { disp_unit });
        }
        let win = world.inner.allocate(len, disp_unit, info, &parsed)?;
        Ok(Self::finish(world, win, parsed))
    }

    /// Collectively creates a window over `buf`, memory this rank owns, with
    /// `disp_unit = size_of::<T>()` (MPI_Win_create). The window borrows `buf` until it
    /// is dropped; meanwhile read and write it through [`Window::read_local`] and
    /// [`Window::write_local`].
    ///
    /// # Transport
    ///
    /// Chosen as for [`Window::allocate`] (the info key `rma_transport`, else the
    /// `RMA_TRANSPORT` environment variable, else the launch mode's default), with one
    /// more limit. With ranks as processes the window exposes a copy in this process's
    /// private memory (below), which no other process can reach directly, so the
    /// atomic transport cannot serve it (docs/design.md decision 6):
    ///
    /// - naming `atomic` in the info is an error of class RMA_FLAVOR saying so, and
    ///   that `queued`, naming no transport, or [`Window::allocate`] would work; every
    ///   rank gets it before anything collective runs, so nothing changes (as for
    ///   [`Window::allocate`]);
    /// - naming no transport gives the queued transport (as MPICH falls back to active
    ///   messages), also where `RMA_TRANSPORT=atomic`, which then logs a `tracing`
    ///   warning;
    /// - naming `queued` gives the queued transport.
    ///
    /// With ranks as threads every transport works; under an MPI launcher the window
    /// uses the `mpi` transport. [`Window::info`] reports the transport in effect.
    ///
    /// # Memory
    ///
    /// In every launch mode and on every transport the window exposes an aligned copy
    /// of `buf` that goes back into `buf` at [`Window::free`] (under MPI: when the
    /// window drops): other ranks then never write into `buf` itself, even if this
    /// rank drops, leaks or `mem::forget`s the window. A window dropped without `free`
    /// leaves `buf` as it was; one forgotten leaks its copy.
    pub fn create<T: Equivalence>(
        world: &'w World,
        buf: &'w mut [T],
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_create", len = std::mem::size_of_val(buf)).entered();
        let parsed = WinInfo::from_info(info)?;
        let disp_unit = std::mem::size_of::<T>().max(1);
        let bytes = rma_datatype::bytes_of_mut(buf).ok_or_else(|| {
            Error::arg(format!(
                "a window over {} could be left holding invalid values; create it over a type for which every byte pattern is valid",
                std::any::type_name::<T>()
            ))
        })?;
        let win = world.inner.create(bytes, disp_unit, info, &parsed)?;
        Ok(Self::finish(world, win, parsed))
    }

    fn finish(world: &'w World, win: AnyWindow<'w>, mut info: WinInfo) -> Window<'w> {
        info.transport = Some(win.name().to_owned());
        Window {
            world,
            shapes: win.shapes().into_boxed_slice(),
            win,
            info,
            epochs: RefCell::new(Epochs::new(world.size())),
            fast: (0..world.size()).map(|_| Cell::new(0)).collect(),
            failed: world.failure_word(),
            _borrow: PhantomData,
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.world.rank()
    }

    /// The number of ranks in the window's group.
    pub fn size(&self) -> usize {
        self.world.size()
    }

    /// The name of the transport in use.
    pub fn transport_name(&self) -> &'static str {
        self.win.name()
    }

    /// How the memory was obtained.
    pub fn flavor(&self) -> Flavor {
        self.win.flavor()
    }

    /// The effective value of every info key rma knows (MPI_Win_get_info).
    pub fn info(&self) -> Info {
        self.info.to_info()
    }

    /// The parsed info.
    pub fn win_info(&self) -> &WinInfo {
        &self.info
    }

    /// This rank's window size in bytes.
    pub fn local_len(&self) -> usize {
        self.shapes[self.rank()].len
    }

    /// The window size of `rank` in bytes.
    pub fn len_of(&self, rank: usize) -> Result<usize> {
        self.check_rank(rank_of(rank))?;
        Ok(self.shapes[rank].len)
    }

    /// The displacement unit of `rank`.
    pub fn disp_unit_of(&self, rank: usize) -> Result<usize> {
        self.check_rank(rank_of(rank))?;
        Ok(self.shapes[rank].disp_unit)
    }

    // ---- local access -------------------------------------------------------------

    /// Copies elements of this rank's window, starting at element `first` (in units of
    /// `T`), into `out`.
    pub fn read_local<T: Equivalence>(&self, first: usize, out: &mut [T]) -> Result<()> {
        self.check_alive()?;
        let size = std::mem::size_of::<T>();
        let offset = first
            .checked_mul(size)
            .ok_or_else(|| Error::CountOverflow {
                count: first,
                what: "elements",
            })?;
        let mut bytes = vec![0u8; std::mem::size_of_val(out)];
        self.win.read_local(offset, &mut bytes)?;
        rma_datatype::copy_from_bytes(out, &bytes)
    }

    /// Copies `data` into this rank's window starting at element `first` (in units of
    /// `T`).
    pub fn write_local<T: Equivalence>(&self, first: usize, data: &[T]) -> Result<()> {
        self.check_alive()?;
        let size = std::mem::size_of::<T>();
        let offset = first
            .checked_mul(size)
            .ok_or_else(|| Error::CountOverflow {
                count: first,
                what: "elements",
            })?;
        self.win.write_local(offset, rma_datatype::bytes_of(data))
    }

    /// This rank's whole window as elements of `T`.
    pub fn local_vec<T: Equivalence + Default>(&self) -> Result<Vec<T>> {
        let n = self.local_len() / std::mem::size_of::<T>().max(1);
        let mut v = vec![T::default(); n];
        self.read_local(0, &mut v)?;
        Ok(v)
    }

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

    /// The byte offset of `disp` in `target`'s window.
    fn byte_offset(&self, target: usize, disp: Disp) -> Result<usize> {
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
    fn target_layout(
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

    /// Checks shared by every call with a local buffer, in order: alive, rank, epoch,
    /// committed datatypes. `Ok(None)` when the call moves nothing (zero count or
    /// zero-size types on both sides, docs/semantics.md rule 18); otherwise `Ok(Some(t))`
    /// with `t` the target index, `None` for the null rank.
    fn prologue(
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

    /// The typed calls' fast path: `bytes` contiguous bytes at `disp` of a target that
    /// a passive-target epoch of this origin covers, inside its window and aligned to
    /// `align`. `None` if any of that does not hold or nothing would move: the general
    /// path then checks everything and reports what is wrong.
    #[inline]
    fn fast_run(
        &self,
        rank: Rank,
        disp: Disp,
        bytes: usize,
        align: usize,
    ) -> Option<(usize, usize)> {
        let t = self.fast_target(rank)?;
        let base = usize::try_from(disp)
            .ok()?
            .checked_mul(self.shapes[t].disp_unit)?;
        let end = base.checked_add(bytes)?;
        (bytes > 0 && end <= self.shapes[t].len && self.aligned_at(t, base, align))
            .then_some((t, base))
    }

    /// [`Window::fast_run`] for one element of `basic` of at most 8 bytes (the calls
    /// that pass elements as bits).
    #[inline]
    fn fast_element(&self, rank: Rank, disp: Disp, basic: BasicType) -> Option<(usize, usize)> {
        let size = basic.size();
        if size > 8 {
            return None;
        }
        self.fast_run(rank, disp, size, atomic_align(basic))
    }

    /// Whether byte `offset` of `t`'s window lies at an address aligned to `align` (a
    /// window created over a caller's buffer may itself start unaligned).
    #[inline]
    fn aligned_at(&self, t: usize, offset: usize, align: usize) -> bool {
        self.shapes[t].addr.wrapping_add(offset) % align == 0
    }

    /// The transport's view of a call to target `t`.
    fn access<'l>(&self, t: usize, rank: Rank, base: usize, layout: &'l dyn Layout) -> Access<'l> {
        Access {
            target: rank,
            base,
            layout,
            exclusive: self.exclusive_on(t),
        }
    }

    // ---- RMA calls: MPI-faithful forms ---------------------------------------------

    /// Writes `origin` into the target layout (MPI_Put). Not atomic, not ordered.
    pub fn put_with(&self, origin: Buffer<'_>, target: Target<'_>) -> Result<()> {
        let _span = tracing::trace_span!("put", target = target.rank.raw()).entered();
        let Some(t) = self.prologue("put", Some((&origin.dt, origin.count)), &target)? else {
            return Ok(());
        };
        let Some(t) = t else { return Ok(()) };
        check_signatures(
            "put",
            (&origin.dt, origin.count),
            (&target.dt, target.count),
        )?;
        let (base, layout) = self.target_layout(t, &target, true, None)?;
        let olayout = Resolved::of(origin.dt.get(), origin.count)?;
        let data = olayout.packed("origin", origin.data)?;
        self.win
            .put(self.access(t, target.rank, base, &layout), &data)?;
        self.issued();
        Ok(())
    }

    /// Reads the target layout into `result` (MPI_Get). The values are in `result` when
    /// the call returns (a stronger guarantee than MPI's, which waits for the next
    /// synchronization).
    pub fn get_with(&self, result: BufferMut<'_>, target: Target<'_>) -> Result<()> {
        let _span = tracing::trace_span!("get", target = target.rank.raw()).entered();
        let Some(t) = self.prologue("get", Some((&result.dt, result.count)), &target)? else {
            return Ok(());
        };
        let Some(t) = t else { return Ok(()) };
        check_signatures(
            "get",
            (&result.dt, result.count),
            (&target.dt, target.count),
        )?;
        let (base, layout) = self.target_layout(t, &target, false, None)?;
        let rlayout = Resolved::of(result.dt.get(), result.count)?;
        rlayout.check_result("result", result.data.len())?;
        self.fetch_into(&rlayout, result.data, layout.size(), |out| {
            self.win
                .get(self.access(t, target.rank, base, &layout), out)
        })?;
        self.issued();
        Ok(())
    }

    /// Combines `origin` into the target layout with `op`, element-wise atomically
    /// (MPI_Accumulate). NO_OP is refused (class OP). Every target element must be
    /// aligned for an atomic of its type (class DISP otherwise; see
    /// [`Window::accumulate`]).
    pub fn accumulate_with(&self, origin: Buffer<'_>, target: Target<'_>, op: Op) -> Result<()> {
        let _span =
            tracing::trace_span!("accumulate", target = target.rank.raw(), op = op.mpi_name())
                .entered();
        if op == Op::NoOp {
            return Err(Error::OpNotForCall {
                op,
                call: RmaCall::Accumulate,
            });
        }
        let Some(t) = self.prologue("accumulate", Some((&origin.dt, origin.count)), &target)?
        else {
            return Ok(());
        };
        let basic = accumulate_types(
            "accumulate",
            Some((&origin.dt, origin.count)),
            (&target.dt, target.count),
            None,
        )?;
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        let Some(t) = t else { return Ok(()) };
        let (base, layout) = self.target_layout(t, &target, true, Some(("accumulate", basic)))?;
        let olayout = Resolved::of(origin.dt.get(), origin.count)?;
        let data = olayout.packed("origin", origin.data)?;
        self.win
            .accumulate(self.access(t, target.rank, base, &layout), basic, op, &data)?;
        self.issued();
        Ok(())
    }

    /// Fetches the target layout into `result` and combines `origin` into it with `op`,
    /// each element in one atomic step (MPI_Get_accumulate). With NO_OP, `origin` may be
    /// `None`.
    pub fn get_accumulate_with(
        &self,
        origin: Option<Buffer<'_>>,
        result: BufferMut<'_>,
        target: Target<'_>,
        op: Op,
    ) -> Result<()> {
        let _span = tracing::trace_span!(
            "get_accumulate",
            target = target.rank.raw(),
            op = op.mpi_name()
        )
        .entered();
        if origin.is_none() && op != Op::NoOp {
            return Err(Error::arg(format!(
                "get_accumulate with {op} needs an origin buffer (only MPI_NO_OP reads without one); pass one"
            )));
        }
        let origin = if op == Op::NoOp { None } else { origin };
        if let Some(o) = &origin {
            o.dt.get().check_committed()?;
        }
        let Some(t) = self.prologue("get_accumulate", Some((&result.dt, result.count)), &target)?
        else {
            return Ok(());
        };
        let basic = accumulate_types(
            "get_accumulate",
            origin.as_ref().map(|o| (&o.dt, o.count)),
            (&target.dt, target.count),
            Some((&result.dt, result.count)),
        )?;
        rma_ops::check(op, basic, RmaCall::GetAccumulate)?;
        let Some(t) = t else { return Ok(()) };
        let (base, layout) =
            self.target_layout(t, &target, op != Op::NoOp, Some(("get_accumulate", basic)))?;
        let data = match &origin {
            Some(o) => Resolved::of(o.dt.get(), o.count)?.packed("origin", o.data)?,
            None => std::borrow::Cow::Borrowed(&[][..]),
        };
        let rlayout = Resolved::of(result.dt.get(), result.count)?;
        rlayout.check_result("result", result.data.len())?;
        self.fetch_into(&rlayout, result.data, layout.size(), |out| {
            self.win.get_accumulate(
                self.access(t, target.rank, base, &layout),
                basic,
                op,
                &data,
                out,
            )
        })?;
        self.issued();
        Ok(())
    }

    /// One element of the predefined `datatype`: `result` receives the target value,
    /// then `origin` is combined into it with `op`, atomically (MPI_Fetch_and_op).
    /// `origin` is ignored for NO_OP.
    pub fn fetch_and_op_with(
        &self,
        origin: &[u8],
        result: &mut [u8],
        datatype: &Datatype,
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let basic = datatype.predefined().ok_or_else(|| Error::TypeNotAllowed {
            call: "fetch_and_op",
            found: format!("{datatype:?}"),
            reason: "it takes one element of a predefined type",
        })?;
        self.fop_core(basic, origin, result, rank, disp, op)
    }

    /// One element of the predefined `datatype`: `result` receives the target value;
    /// the target becomes `origin` if it equalled `compare`, atomically
    /// (MPI_Compare_and_swap).
    pub fn compare_and_swap_with(
        &self,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        datatype: &Datatype,
        rank: Rank,
        disp: Disp,
    ) -> Result<()> {
        let basic = datatype.predefined().ok_or_else(|| Error::TypeNotAllowed {
            call: "compare_and_swap",
            found: format!("{datatype:?}"),
            reason: "it takes one element of a predefined type",
        })?;
        self.cas_core(basic, origin, compare, result, rank, disp)
    }

    fn element_offset(
        &self,
        call: &'static str,
        t: usize,
        basic: BasicType,
        disp: Disp,
    ) -> Result<usize> {
        let offset = self.byte_offset(t, disp)?;
        let len = self.shapes[t].len;
        if offset.checked_add(basic.size()).is_none_or(|end| end > len) {
            return Err(Error::OutOfWindow {
                rank: rank_of(t),
                start: offset as i128,
                end: offset as i128 + basic.size() as i128,
                window_len: len,
            });
        }
        let align = atomic_align(basic);
        if !self.aligned_at(t, offset, align) {
            return Err(Error::Misaligned {
                call,
                basic,
                align,
                disp,
                disp_unit: self.shapes[t].disp_unit,
                offset,
            });
        }
        Ok(offset)
    }

    fn fop_core(
        &self,
        basic: BasicType,
        origin: &[u8],
        result: &mut [u8],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let _span =
            tracing::trace_span!("fetch_and_op", target = rank.raw(), op = op.mpi_name()).entered();
        let t = self.begin("fetch_and_op", rank)?;
        rma_ops::check(op, basic, RmaCall::FetchAndOp)?;
        let size = basic.size();
        if op != Op::NoOp && origin.len() < size {
            return Err(Error::BufferTooSmall {
                which: "origin",
                needed: size,
                got: origin.len(),
            });
        }
        if result.len() < size {
            return Err(Error::BufferTooSmall {
                which: "result",
                needed: size,
                got: result.len(),
            });
        }
        let Some(t) = t else { return Ok(()) };
        let offset = self.element_offset("fetch_and_op", t, basic, disp)?;
        let origin = if op == Op::NoOp {
            &[][..]
        } else {
            &origin[..size]
        };
        self.win
            .fetch_and_op(rank, offset, basic, op, origin, &mut result[..size])?;
        self.issued();
        Ok(())
    }

    fn cas_core(
        &self,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        rank: Rank,
        disp: Disp,
    ) -> Result<()> {
        let _span = tracing::trace_span!("compare_and_swap", target = rank.raw()).entered();
        let t = self.begin("compare_and_swap", rank)?;
        rma_ops::check_cas_type(basic)?;
        let size = basic.size();
        for (which, len) in [
            ("origin", origin.len()),
            ("compare", compare.len()),
            ("result", result.len()),
        ] {
            if len < size {
                return Err(Error::BufferTooSmall {
                    which,
                    needed: size,
                    got: len,
                });
            }
        }
        let Some(t) = t else { return Ok(()) };
        let offset = self.element_offset("compare_and_swap", t, basic, disp)?;
        self.win.compare_and_swap(
            rank,
            offset,
            basic,
            &origin[..size],
            &compare[..size],
            &mut result[..size],
        )?;
        self.issued();
        Ok(())
    }

    /// Runs `fetch(out)` where `out` receives `packed_len` bytes in target type-map
    /// order, then scatters them into `result` by its layout. Contiguous results are
    /// written in place. (`fetch` fails only when a peer died; the result is then
    /// unspecified.)
    fn fetch_into(
        &self,
        rlayout: &Resolved,
        result: &mut [u8],
        packed_len: usize,
        fetch: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        if rlayout.as_contiguous() == Some(packed_len) {
            return fetch(&mut result[..packed_len]);
        }
        let mut scratch = vec![0u8; packed_len];
        fetch(&mut scratch)?;
        rlayout.unpack(&scratch, result)
    }

    // ---- RMA calls: typed conveniences ---------------------------------------------

    /// Writes `origin` to `rank`'s window starting at displacement `disp` (MPI_Put of
    /// `origin.len()` elements of `T`).
    pub fn put<T: Equivalence>(&self, origin: &[T], rank: Rank, disp: Disp) -> Result<()> {
        let data = rma_datatype::bytes_of(origin);
        if let Some((t, base)) = self.fast_run(rank, disp, data.len(), 1) {
            let _span = tracing::trace_span!("put", target = rank.raw()).entered();
            return self
                .win
                .put(self.access(t, rank, base, &Contiguous(data.len())), data);
        }
        self.put_with(
            Buffer::of(origin),
            Target::of::<T>(rank, disp, origin.len()),
        )
    }

    /// Reads `result.len()` elements of `T` from `rank`'s window at `disp` (MPI_Get).
    pub fn get<T: Equivalence>(&self, result: &mut [T], rank: Rank, disp: Disp) -> Result<()> {
        let n = result.len();
        let bytes = std::mem::size_of_val(result);
        if let Some((t, base)) = self.fast_run(rank, disp, bytes, 1) {
            if let Some(out) = rma_datatype::bytes_of_mut(result) {
                let _span = tracing::trace_span!("get", target = rank.raw()).entered();
                return self
                    .win
                    .get(self.access(t, rank, base, &Contiguous(bytes)), out);
            }
        }
        self.typed_result(result, |buf| {
            self.get_with(buf, Target::of::<T>(rank, disp, n))
        })
    }

    /// Combines `origin` into `rank`'s window at `disp` with `op` (MPI_Accumulate).
    ///
    /// **Alignment.** Every target element must be aligned for an atomic of its type
    /// (its size up to 8 bytes, its type alignment for 16-byte types): a displacement
    /// that puts one elsewhere is refused with class DISP, naming the alignment, the
    /// displacement and the byte offset. MPI leaves alignment to the user; rma is
    /// stricter because its atomics work on aligned words (docs/semantics.md rule 3).
    /// put and get take any displacement.
    pub fn accumulate<T: Equivalence>(
        &self,
        origin: &[T],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let data = rma_datatype::bytes_of(origin);
        if let Some(basic) =
            T::BASIC.filter(|&b| rma_ops::check(op, b, RmaCall::Accumulate).is_ok())
        {
            if let Some((t, base)) = self.fast_run(rank, disp, data.len(), atomic_align(basic)) {
                let _span =
                    tracing::trace_span!("accumulate", target = rank.raw(), op = op.mpi_name())
                        .entered();
                if let [one] = origin {
                    if basic.size() <= 8 {
                        let exclusive = self.exclusive_on(t);
                        return self.win.accumulate_bits(
                            rank,
                            base,
                            exclusive,
                            basic,
                            op,
                            bits_of(one),
                        );
                    }
                }
                let layout = Contiguous(data.len());
                return self
                    .win
                    .accumulate(self.access(t, rank, base, &layout), basic, op, data);
            }
        }
        self.accumulate_with(
            Buffer::of(origin),
            Target::of::<T>(rank, disp, origin.len()),
            op,
        )
    }

    /// Fetches `result.len()` elements at `disp` into `result` and combines `origin`
    /// into them with `op` (MPI_Get_accumulate). For NO_OP pass an empty `origin`.
    ///
    /// Every target element must be aligned for an atomic of its type (class DISP
    /// otherwise; see [`Window::accumulate`], "Alignment").
    pub fn get_accumulate<T: Equivalence>(
        &self,
        origin: &[T],
        result: &mut [T],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let n = result.len();
        let bytes = std::mem::size_of_val(result);
        let data = if op == Op::NoOp {
            &[][..]
        } else {
            rma_datatype::bytes_of(origin)
        };
        if let Some(basic) = T::BASIC
            .filter(|&b| rma_ops::check(op, b, RmaCall::GetAccumulate).is_ok())
            .filter(|_| op == Op::NoOp || data.len() == bytes)
        {
            if let Some((t, base)) = self.fast_run(rank, disp, bytes, atomic_align(basic)) {
                if let Some(out) = rma_datatype::bytes_of_mut(result) {
                    let _span = tracing::trace_span!(
                        "get_accumulate",
                        target = rank.raw(),
                        op = op.mpi_name()
                    )
                    .entered();
                    let layout = Contiguous(bytes);
                    return self.win.get_accumulate(
                        self.access(t, rank, base, &layout),
                        basic,
                        op,
                        data,
                        out,
                    );
                }
            }
        }
        let o = (op != Op::NoOp).then(|| Buffer::of(origin));
        self.typed_result(result, |buf| {
            self.get_accumulate_with(o, buf, Target::of::<T>(rank, disp, n), op)
        })
    }

    /// Atomically fetches the element at `disp` and combines `origin` into it with `op`;
    /// returns the old value (MPI_Fetch_and_op).
    ///
    /// Every target element must be aligned for an atomic of its type (class DISP
    /// otherwise; see [`Window::accumulate`], "Alignment").
    pub fn fetch_and_op<T: Equivalence>(
        &self,
        origin: T,
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<T> {
        let basic = single_basic::<T>("fetch_and_op")?;
        if let Some((_, offset)) = self.fast_element(rank, disp, basic) {
            if rma_ops::check(op, basic, RmaCall::FetchAndOp).is_ok() {
                let _span =
                    tracing::trace_span!("fetch_and_op", target = rank.raw(), op = op.mpi_name())
                        .entered();
                let bits = bits_of(&origin);
                let old = self.win.fetch_and_op_bits(rank, offset, basic, op, bits)?;
                return value_of(basic, old);
            }
        }
        let mut out = [0u8; 16];
        let size = basic.size();
        self.fop_core(
            basic,
            rma_datatype::bytes_of(std::slice::from_ref(&origin)),
            &mut out[..size],
            rank,
            disp,
            op,
        )?;
        from_bytes(&out[..size])
    }

    /// Atomically replaces the element at `disp` with `origin` if it equals `compare`;
    /// returns the old value (MPI_Compare_and_swap).
    ///
    /// Every target element must be aligned for an atomic of its type (class DISP
    /// otherwise; see [`Window::accumulate`], "Alignment").
    pub fn compare_and_swap<T: Equivalence>(
        &self,
        origin: T,
        compare: T,
        rank: Rank,
        disp: Disp,
    ) -> Result<T> {
        let basic = single_basic::<T>("compare_and_swap")?;
        if let Some((_, offset)) = self.fast_element(rank, disp, basic) {
            if rma_ops::check_cas_type(basic).is_ok() {
                let _span = tracing::trace_span!("compare_and_swap", target = rank.raw()).entered();
                let (o, c) = (bits_of(&origin), bits_of(&compare));
                let old = self.win.compare_and_swap_bits(rank, offset, basic, o, c)?;
                return value_of(basic, old);
            }
        }
        let mut out = [0u8; 16];
        let size = basic.size();
        self.cas_core(
            basic,
            rma_datatype::bytes_of(std::slice::from_ref(&origin)),
            rma_datatype::bytes_of(std::slice::from_ref(&compare)),
            &mut out[..size],
            rank,
            disp,
        )?;
        from_bytes(&out[..size])
    }

    // ---- request-based calls ------------------------------------------------------

    /// Checks the passive-target epoch a request-based call needs.
    fn request_epoch(&self, call: &'static str, rank: Rank) -> Result<()> {
        self.begin_as(call, rank, true).map(|_| ())
    }

    /// [`Window::put_with`] returning a request (MPI_Rput); valid in passive-target
    /// epochs only. The request keeps `origin` borrowed.
    pub fn rput_with<'b>(&'b self, origin: Buffer<'b>, target: Target<'_>) -> Result<Request<'b>> {
        self.request_epoch("rput", target.rank)?;
        self.put_with(origin, target)?;
        Ok(Request::completed())
    }

    /// [`Window::get_with`] returning a request (MPI_Rget). The request keeps `result`
    /// borrowed.
    pub fn rget_with<'b>(
        &'b self,
        result: BufferMut<'b>,
        target: Target<'_>,
    ) -> Result<Request<'b>> {
        self.request_epoch("rget", target.rank)?;
        self.get_with(result, target)?;
        Ok(Request::completed())
    }

    /// [`Window::accumulate_with`] returning a request (MPI_Raccumulate).
    pub fn raccumulate_with<'b>(
        &'b self,
        origin: Buffer<'b>,
        target: Target<'_>,
        op: Op,
    ) -> Result<Request<'b>> {
        self.request_epoch("raccumulate", target.rank)?;
        self.accumulate_with(origin, target, op)?;
        Ok(Request::completed())
    }

    /// [`Window::get_accumulate_with`] returning a request (MPI_Rget_accumulate).
    pub fn rget_accumulate_with<'b>(
        &'b self,
        origin: Option<Buffer<'b>>,
        result: BufferMut<'b>,
        target: Target<'_>,
        op: Op,
    ) -> Result<Request<'b>> {
        self.request_epoch("rget_accumulate", target.rank)?;
        self.get_accumulate_with(origin, result, target, op)?;
        Ok(Request::completed())
    }

    /// [`Window::put`] returning a request (MPI_Rput).
    pub fn rput<'b, T: Equivalence>(
        &'b self,
        origin: &'b [T],
        rank: Rank,
        disp: Disp,
    ) -> Result<Request<'b>> {
        self.request_epoch("rput", rank)?;
        self.put(origin, rank, disp)?;
        Ok(Request::completed())
    }

    /// [`Window::get`] returning a request (MPI_Rget).
    pub fn rget<'b, T: Equivalence>(
        &'b self,
        result: &'b mut [T],
        rank: Rank,
        disp: Disp,
    ) -> Result<Request<'b>> {
        self.request_epoch("rget", rank)?;
        self.get(result, rank, disp)?;
        Ok(Request::completed())
    }

    /// [`Window::accumulate`] returning a request (MPI_Raccumulate).
    pub fn raccumulate<'b, T: Equivalence>(
        &'b self,
        origin: &'b [T],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<Request<'b>> {
        self.request_epoch("raccumulate", rank)?;
        self.accumulate(origin, rank, disp, op)?;
        Ok(Request::completed())
    }

    /// [`Window::get_accumulate`] returning a request (MPI_Rget_accumulate).
    pub fn rget_accumulate<'b, T: Equivalence>(
        &'b self,
        origin: &'b [T],
        result: &'b mut [T],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<Request<'b>> {
        self.request_epoch("rget_accumulate", rank)?;
        self.get_accumulate(origin, result, rank, disp, op)?;
        Ok(Request::completed())
    }

    /// Runs a call that writes into a typed result, through a byte buffer when `T`
    /// cannot take arbitrary bytes (`bool`).
    fn typed_result<T: Equivalence>(
        &self,
        result: &mut [T],
        call: impl FnOnce(BufferMut<'_>) -> Result<()>,
    ) -> Result<()> {
        let n = result.len();
        let dt = Dt::of::<T>();
        if T::ANY_BIT_PATTERN {
            let bytes = rma_datatype::bytes_of_mut(result).ok_or_else(|| Error::Internal {
                reason: "ANY_BIT_PATTERN type refused a byte view".into(),
            })?;
            return call(BufferMut {
                data: bytes,
                count: n,
                dt,
            });
        }
        let mut bytes = vec![0u8; std::mem::size_of_val(result)];
        call(BufferMut {
            data: &mut bytes,
            count: n,
            dt,
        })?;
        rma_datatype::copy_from_bytes(result, &bytes)
    }
}

/// The bits of one value of a basic type of at most 8 bytes.
#[inline]
fn bits_of<T: Equivalence>(value: &T) -> u64 {
    rma_core::bits_from_bytes(rma_datatype::bytes_of(std::slice::from_ref(value)))
}

/// The value of `basic` (the `T` of a typed call) whose bits are `bits`.
#[inline]
fn value_of<T: Equivalence>(basic: BasicType, bits: u64) -> Result<T> {
    let mut out = [0u8; 8];
    let size = basic.size();
    rma_core::bytes_from_bits(bits, &mut out[..size]);
    from_bytes(&out[..size])
}

fn single_basic<T: Equivalence>(call: &'static str) -> Result<BasicType> {
    T::BASIC.ok_or_else(|| Error::TypeNotAllowed {
        call,
        found: std::any::type_name::<T>().to_owned(),
        reason: "it takes one element of a predefined type",
    })
}

fn from_bytes<T: Equivalence>(bytes: &[u8]) -> Result<T> {
    T::from_bytes(bytes).ok_or_else(|| Error::Internal {
        reason: "a fetched element has the wrong size".into(),
    })
}

fn is_empty(dt: &Dt<'_>, count: usize) -> bool {
    count == 0 || dt.get().size() == 0
}

fn check_signatures(call: &'static str, a: (&Dt<'_>, usize), b: (&Dt<'_>, usize)) -> Result<()> {
    let (da, db) = (a.0.get(), b.0.get());
    if let (Some(x), Some(y)) = (da.predefined(), db.predefined()) {
        if x == y && a.1 == b.1 {
            return Ok(());
        }
    }
    rma_datatype::check_signatures(call, (da, a.1), (db, b.1))
}

fn accumulate_types(
    call: &'static str,
    origin: Option<(&Dt<'_>, usize)>,
    target: (&Dt<'_>, usize),
    result: Option<(&Dt<'_>, usize)>,
) -> Result<BasicType> {
    let pre = |s: Option<(&Dt<'_>, usize)>| s.map(|(d, c)| (d.get().predefined(), c));
    let t = (target.0.get().predefined(), target.1);
    // fast path: every side predefined, same type and count
    if let Some(b) = t.0 {
        let same =
            |s: Option<(Option<BasicType>, usize)>| s.is_none_or(|(p, c)| p == Some(b) && c == t.1);
        if same(pre(origin)) && same(pre(result)) {
            return Ok(b);
        }
    }
    rma_datatype::check_accumulate_types(
        call,
        origin.map(|(d, c)| (d.get(), c)),
        (target.0.get(), target.1),
        result.map(|(d, c)| (d.get(), c)),
    )
}
