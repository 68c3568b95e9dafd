//! [`TargetHandle`]: one target of an epoch guard, checked once; its calls check only
//! what varies per call (the displacement's range, and alignment where the element
//! type needs it) and go straight to the backend.
//!
//! What a handle resolved when it was made: the target's index and that the epoch
//! covers it (waiting for its post in a start epoch), its window length, displacement
//! unit and address (for alignment), and whether this origin holds it exclusively;
//! and the backend's fast path to the target ([`rma_backends::Fast`]): on the atomic
//! transport the target's memory and atomicity domain ([`rma_ops::Direct`]), so a call
//! goes from the handle straight to the atomic kernel — no backend dispatch, no
//! per-call domain or target lookup — and a flush is only a fence; on the mpi
//! transport the MPI target resolved once (rma-mpi's `MpiTarget`), so a call goes to
//! MPI with no placement or derived datatype, and a fetching call and its flush take
//! one turn of the world's gate.
//! What the types settle at compile time: [`TargetHandle::fetch_add`] and
//! [`TargetHandle::add`] take [`Numeric`] elements (integers and floats, where SUM is
//! defined), the bitwise calls take [`Integer`] elements, compare-and-swap takes
//! [`CasElement`]s. The general forms with an `Op` stay, with their run-time check.
//!
//! What a handle still checks on every call: that no rank of the world has died (one
//! relaxed load, as every call does).
// errors are built lazily on the hot path (`Error` has drop glue): see window/mod.rs
#![allow(clippy::unnecessary_lazy_evaluations)]

use crate::request::Request;
use crate::road::Road;
use crate::window::{bits_of, single_basic, value_of, Window};
use rma_core::{BasicType, Disp, Error, Op, Rank, Result, RmaCall};
use rma_datatype::Equivalence;

mod sealed {
    pub trait Sealed {}
}

/// Element types SUM (and PROD, MAX, MIN) is defined on: the integers and the floats.
///
/// # Examples
///
/// ```
/// use rma_win::{Assert, Info, Numeric, Rank, TargetHandle, Window};
///
/// // one function for every element type an atomic addition is defined on
/// fn bump<T: Numeric>(h: &TargetHandle<'_, '_>, by: T) -> rma_win::Result<T> {
///     h.fetch_add(by, 0)
/// }
/// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
///     let win = Window::allocate::<f64>(&world, 1, &Info::new())?;
///     let epoch = win.fence_epoch(Assert::NONE)?;
///     let h = epoch.target(Rank::new(0))?;
///     assert_eq!((bump(&h, 1.5f64)?, bump(&h, 1.0f64)?), (0.0, 1.5));
///     epoch.end(Assert::NONE)
/// })?.into_iter().collect::<rma_win::Result<()>>()?;
/// # Ok::<(), rma_win::Error>(())
/// ```
pub trait Numeric: Equivalence + sealed::Sealed {}

/// Element types the bitwise ops (BAND, BOR, BXOR) are defined on: the integers.
///
/// # Examples
///
/// ```
/// use rma_win::{Assert, Info, Integer, Rank, TargetHandle, Window};
///
/// // sets the bits of `flags` in the target's element 0; returns the bits before
/// fn raise<T: Integer>(h: &TargetHandle<'_, '_>, flags: T) -> rma_win::Result<T> {
///     h.fetch_or(flags, 0)
/// }
/// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
///     let win = Window::allocate::<u16>(&world, 1, &Info::new())?;
///     let epoch = win.fence_epoch(Assert::NONE)?;
///     let h = epoch.target(Rank::new(0))?;
///     assert_eq!((raise(&h, 0b100u16)?, raise(&h, 0b001u16)?), (0, 0b100));
///     epoch.end(Assert::NONE)
/// })?.into_iter().collect::<rma_win::Result<()>>()?;
/// # Ok::<(), rma_win::Error>(())
/// ```
pub trait Integer: Numeric {}

/// Element types compare-and-swap takes: integers, `bool`, [`rma_datatype::Byte`].
///
/// # Examples
///
/// ```
/// use rma_win::{Assert, Info, Rank, Window};
/// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
///     let win = Window::allocate::<bool>(&world, 1, &Info::new())?;
///     let epoch = win.fence_epoch(Assert::NONE)?;
///     // a `bool` claim: exactly one rank turns `false` into `true`
///     let was = epoch.target(Rank::new(0))?.compare_and_swap(true, false, 0)?;
///     epoch.end(Assert::NONE)?;
///     let claims = world.allgather_value(!was)?;
///     assert_eq!(claims.iter().filter(|&&c| c).count(), 1);
///     Ok(())
/// })?.into_iter().collect::<rma_win::Result<()>>()?;
/// # Ok::<(), rma_win::Error>(())
/// ```
pub trait CasElement: Equivalence + sealed::Sealed {}

/// Element types a hardware atomic of their own width holds (1, 2, 4 or 8 bytes):
/// integers, floats, `bool`, [`rma_datatype::Byte`]; what a shared window's typed
/// views ([`crate::SharedView`]) take.
///
/// # Examples
///
/// ```
/// use rma_win::{AtomicElement, Info, Rank, SharedView, Window};
///
/// // the largest element of a view, each loaded atomically
/// fn max_of<T: AtomicElement + PartialOrd>(v: &SharedView<'_, T>) -> rma_win::Result<T> {
///     let mut best = v.load(0)?;
///     for i in 1..v.len() {
///         let x = v.load(i)?;
///         if x > best { best = x; }
///     }
///     Ok(best)
/// }
/// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
///     let win = Window::allocate_shared::<i16>(&world, 2, &Info::new())?;
///     let zero = win.shared_query(Rank::new(0))?.view::<i16>()?;
///     zero.store(world.rank(), 10 - 3 * world.rank() as i16)?;
///     world.barrier()?;
///     assert_eq!(max_of(&zero)?, 10);
///     Ok(())
/// })?.into_iter().collect::<rma_win::Result<()>>()?;
/// # Ok::<(), rma_win::Error>(())
/// ```
pub trait AtomicElement: Equivalence + sealed::Sealed {}

macro_rules! elements {
    (integer: $($i:ty),*; float: $($f:ty),*; other_cas: $($c:ty),*) => {
        $(impl sealed::Sealed for $i {} impl Numeric for $i {} impl Integer for $i {}
          impl CasElement for $i {} impl AtomicElement for $i {})*
        $(impl sealed::Sealed for $f {} impl Numeric for $f {} impl AtomicElement for $f {})*
        $(impl sealed::Sealed for $c {} impl CasElement for $c {} impl AtomicElement for $c {})*
    };
}

elements! {
    integer: i8, i16, i32, i64, u8, u16, u32, u64, isize, usize;
    float: f32, f64;
    other_cas: bool, rma_datatype::Byte
}

/// One target of an epoch guard (see the module docs); made by the guard's `target`.
/// It borrows the guard, so it cannot outlive the epoch.
///
/// # Examples
///
/// ```
/// use rma_win::{Assert, Info, Rank, Window};
/// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
///     let win = Window::allocate::<u64>(&world, 3, &Info::new())?;
///     let epoch = win.fence_epoch(Assert::NONE)?;
///     let zero = epoch.target(Rank::new(0))?; // rank and epoch checked once, here
///     let me = world.rank() as u64;
///     zero.add(&[1u64], 0)?; // both ranks add into element 0
///     zero.put(&[10 + me], 1 + me as i64)?; // each rank writes its own element
///     epoch.end(Assert::NONE)?;
///     if me == 0 {
///         assert_eq!(win.local_vec::<u64>()?, [2, 10, 11]);
///     }
///     Ok(())
/// })?.into_iter().collect::<rma_win::Result<()>>()?;
/// # Ok::<(), rma_win::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TargetHandle<'e, 'w> {
    pub(crate) win: &'e Window<'w>,
    /// The target, resolved once ([`Road`]): every call below takes it.
    pub(crate) road: Road<'e>,
}

impl<'e, 'w> TargetHandle<'e, 'w> {
    /// Checks `rank` once: in the window, covered by the window's open epoch (waiting
    /// for its post in a start epoch), not the null rank.
    pub(crate) fn new(win: &'e Window<'w>, rank: Rank, active: bool) -> Result<Self> {
        Ok(TargetHandle {
            win,
            road: Road::new(win, rank, active)?,
        })
    }

    /// The target rank.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let epoch = win.lock_all_epoch(Assert::NONE)?;
    ///     let peer = epoch.target(Rank::new(1 - world.rank() as u32))?;
    ///     assert_eq!(peer.rank().index(), Some(1 - world.rank()));
    ///     epoch.unlock()
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn rank(&self) -> Rank {
        self.road.rank
    }

    #[inline(always)]
    pub(crate) fn live(&self) -> Result<()> {
        self.road.live(self.win)
    }

    /// The byte offset of `bytes` at `disp` ([`Road::offset`]).
    #[inline(always)]
    pub(crate) fn offset(
        &self,
        call: &'static str,
        disp: Disp,
        bytes: usize,
        atomic: Option<BasicType>,
    ) -> Result<usize> {
        self.road.offset(self.win, call, disp, bytes, atomic)
    }

    #[inline(always)]
    pub(crate) fn issued(&self) {
        self.road.issued(self.win)
    }

    /// Notes the caller for a checked window's records ([`Road::note_site`]).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn note_site(&self) {
        self.road.note_site(self.win)
    }

    /// Writes `origin` at `disp` (MPI_Put).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let me = world.rank() as u64;
    ///     epoch.target(Rank::new(0))?.put(&[10 + me], me as i64)?; // element `me` of rank 0
    ///     epoch.end(Assert::NONE)?;
    ///     if me == 0 {
    ///         assert_eq!(win.local_vec::<u64>()?, [10, 11]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline(always)]
    #[track_caller]
    #[doc(alias = "MPI_Put")]
    pub fn put<T: Equivalence>(&self, origin: &[T], disp: Disp) -> Result<()> {
        let data = rma_datatype::bytes_of(origin);
        if data.is_empty() {
            return Ok(());
        }
        let off = self.offset("put", disp, data.len(), None)?;
        self.road.put(self.win, off, data)
    }

    /// Reads `result.len()` elements at `disp` (MPI_Get); the values are in place when
    /// it returns.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u32>(&world, 2, &Info::new())?;
    ///     let me = world.rank() as u32;
    ///     win.write_local(0, &[me, 100 + me])?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let mut got = [0u32; 2];
    ///     epoch.target(Rank::new(1 - me))?.get(&mut got, 0)?; // the peer's two elements
    ///     epoch.end(Assert::NONE)?;
    ///     assert_eq!(got, [1 - me, 101 - me]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline(always)]
    #[track_caller]
    #[doc(alias = "MPI_Get")]
    pub fn get<T: Equivalence>(&self, result: &mut [T], disp: Disp) -> Result<()> {
        let n = std::mem::size_of_val(result);
        if n == 0 {
            return Ok(());
        }
        let off = self.offset("get", disp, n, None)?;
        match rma_datatype::bytes_of_mut(result) {
            Some(out) => self.road.get(self.win, off, out),
            None => {
                // a type not every byte pattern of which is valid (bool): through bytes
                let mut bytes = vec![0u8; n];
                self.road.get(self.win, off, &mut bytes)?;
                rma_datatype::copy_from_bytes(result, &bytes)
            }
        }
    }

    /// [`TargetHandle::get`] as a request (MPI_Rget): `result` stays borrowed until
    /// the request is dropped or waited on. Passive-target epochs only (class RMA_SYNC
    /// otherwise).
    ///
    /// The result cannot be read before the request is done with:
    /// ```compile_fail
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let epoch = win.lock_all_epoch(Assert::NONE)?;
    ///     let h = epoch.target(Rank::new(0))?;
    ///     let mut out = [0u64];
    ///     let req = h.rget(&mut out, 0)?;
    ///     let v = out[0]; // error[E0503]: cannot use `out` because it was mutably borrowed
    ///     req.wait()?;
    ///     epoch.unlock()
    /// })?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let epoch = win.lock_all_epoch(Assert::NONE)?;
    ///     let mine = epoch.target(Rank::new(world.rank() as u32))?; // each rank its own window
    ///     mine.put(&[5u64], 0)?;
    ///     mine.flush()?;
    ///     let mut out = [0u64];
    ///     mine.rget(&mut out, 0)?.wait()?; // `out` is readable once the request is waited on
    ///     assert_eq!(out, [5]);
    ///     epoch.unlock()
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Rget")]
    pub fn rget<'b, T: Equivalence>(
        &'b self,
        result: &'b mut [T],
        disp: Disp,
    ) -> Result<Request<'b>> {
        self.note_site();
        if self.road.active {
            return Err(Error::sync(
                "rget",
                "request-based calls need a passive-target epoch (a lock or lock_all epoch)",
            ));
        }
        self.get(result, disp)?;
        Ok(Request::completed())
    }

    /// Combines `origin` into the elements at `disp` with `op`, element-wise
    /// atomically (MPI_Accumulate); the op is checked against the element type at run
    /// time ([`TargetHandle::add`] needs no check).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i64>(&world, 2, &Info::new())?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let zero = epoch.target(Rank::new(0))?;
    ///     zero.accumulate(&[1i64], 0, Op::Sum)?;
    ///     zero.accumulate(&[10 * world.rank() as i64], 1, Op::Max)?;
    ///     epoch.end(Assert::NONE)?;
    ///     if world.rank() == 0 {
    ///         assert_eq!(win.local_vec::<i64>()?, [2, 10]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline]
    #[track_caller]
    #[doc(alias = "MPI_Accumulate")]
    pub fn accumulate<T: Equivalence>(&self, origin: &[T], disp: Disp, op: Op) -> Result<()> {
        let Some(basic) = T::BASIC else {
            // a composite element (an array, a derived struct): the window's general
            // path, which resolves its datatype
            return self.win.accumulate(origin, self.road.rank, disp, op);
        };
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        self.acc(origin, disp, basic, op)
    }

    /// Adds `origin` element-wise into the elements at `disp` (MPI_Accumulate with
    /// MPI_SUM), atomically per element.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<f64>(&world, 3, &Info::new())?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     epoch.target(Rank::new(0))?.add(&[1.0, 2.0, 3.0], 0)?;
    ///     epoch.end(Assert::NONE)?;
    ///     if world.rank() == 0 {
    ///         assert_eq!(win.local_vec::<f64>()?, [2.0, 4.0, 6.0]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline(always)]
    #[track_caller]
    #[doc(alias("MPI_Accumulate", "MPI_SUM"))]
    pub fn add<T: Numeric>(&self, origin: &[T], disp: Disp) -> Result<()> {
        match T::BASIC {
            Some(basic) => self.acc(origin, disp, basic, Op::Sum),
            None => self.win.accumulate(origin, self.road.rank, disp, Op::Sum),
        }
    }

    // always inlined: the one-element path is a handful of checks before the
    // transport's call, and a call frame around it costs as much again
    #[inline(always)]
    #[track_caller]
    fn acc<T: Equivalence>(
        &self,
        origin: &[T],
        disp: Disp,
        basic: BasicType,
        op: Op,
    ) -> Result<()> {
        let data = rma_datatype::bytes_of(origin);
        if data.is_empty() {
            return Ok(());
        }
        let off = self.offset("accumulate", disp, data.len(), Some(basic))?;
        self.road.accumulate(self.win, off, basic, op, origin)
    }

    /// Fetches the element at `disp` and combines `origin` into it with `op`,
    /// atomically; returns the old value (MPI_Fetch_and_op). The op is checked at run
    /// time; the named forms ([`TargetHandle::fetch_add`], ...) need no check.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i64>(&world, 1, &Info::new())?;
    ///     win.write_local(0, &[5i64])?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let peer = epoch.target(Rank::new(1 - world.rank() as u32))?;
    ///     let old = peer.fetch_and_op(3i64, 0, Op::Prod)?;
    ///     epoch.end(Assert::NONE)?;
    ///     assert_eq!((old, win.local_vec::<i64>()?), (5, vec![15]));
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline]
    #[track_caller]
    #[doc(alias = "MPI_Fetch_and_op")]
    pub fn fetch_and_op<T: Equivalence>(&self, origin: T, disp: Disp, op: Op) -> Result<T> {
        let basic = single_basic::<T>("fetch_and_op")?;
        rma_ops::check(op, basic, RmaCall::FetchAndOp)?;
        if basic.size() > 8 {
            return self.win.fetch_and_op(origin, self.road.rank, disp, op);
        }
        self.fop(origin, disp, basic, op)
    }

    #[inline(always)]
    #[track_caller]
    fn fop<T: Equivalence>(&self, origin: T, disp: Disp, basic: BasicType, op: Op) -> Result<T> {
        let off = self.offset("fetch_and_op", disp, basic.size(), Some(basic))?;
        let old = self
            .road
            .fetch_and_op(self.win, off, basic, op, bits_of(&origin))?;
        value_of(basic, old)
    }

    /// The basic type of a [`Numeric`] or [`CasElement`] type (all of them are one).
    #[inline]
    fn basic<T: Equivalence>(call: &'static str) -> Result<BasicType> {
        single_basic::<T>(call)
    }

    /// Atomically adds `value` to the element at `disp`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let ticket = epoch.target(Rank::new(0))?.fetch_add(1u64, 0)?;
    ///     epoch.end(Assert::NONE)?;
    ///     let mut tickets = world.allgather_value(ticket)?;
    ///     tickets.sort();
    ///     assert_eq!(tickets, [0, 1, 2]); // each rank drew a different one
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline(always)]
    #[track_caller]
    #[doc(alias("MPI_Fetch_and_op", "MPI_SUM"))]
    pub fn fetch_add<T: Numeric>(&self, value: T, disp: Disp) -> Result<T> {
        self.fop(value, disp, Self::basic::<T>("fetch_add")?, Op::Sum)
    }

    /// Atomically ORs `value` into the element at `disp`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u8>(&world, 1, &Info::new())?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let bit = 1u8 << world.rank();
    ///     let before = epoch.target(Rank::new(0))?.fetch_or(bit, 0)?;
    ///     epoch.end(Assert::NONE)?;
    ///     assert_eq!(before & bit, 0); // no one else sets this rank's bit
    ///     if world.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u8>()?, [0b11]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline]
    #[track_caller]
    #[doc(alias("MPI_Fetch_and_op", "MPI_BOR"))]
    pub fn fetch_or<T: Integer>(&self, value: T, disp: Disp) -> Result<T> {
        self.fop(value, disp, Self::basic::<T>("fetch_or")?, Op::Bor)
    }

    /// Atomically ANDs `value` into the element at `disp`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u32>(&world, 1, &Info::new())?;
    ///     win.write_local(0, &[0b1111u32])?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let bit = 1u32 << world.rank();
    ///     let before = epoch.target(Rank::new(0))?.fetch_and(!bit, 0)?; // clears this rank's bit
    ///     epoch.end(Assert::NONE)?;
    ///     assert_ne!(before & bit, 0);
    ///     if world.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u32>()?, [0b1100]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline]
    #[track_caller]
    #[doc(alias("MPI_Fetch_and_op", "MPI_BAND"))]
    pub fn fetch_and<T: Integer>(&self, value: T, disp: Disp) -> Result<T> {
        self.fop(value, disp, Self::basic::<T>("fetch_and")?, Op::Band)
    }

    /// Atomically XORs `value` into the element at `disp`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let h = epoch.target(Rank::new(0))?;
    ///     assert_eq!(h.fetch_xor(0b101u64, 0)?, 0);
    ///     assert_eq!(h.fetch_xor(0b110u64, 0)?, 0b101); // toggles bits 1 and 2
    ///     assert_eq!(h.fetch::<u64>(0)?, 0b011);
    ///     epoch.end(Assert::NONE)
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline]
    #[track_caller]
    #[doc(alias("MPI_Fetch_and_op", "MPI_BXOR"))]
    pub fn fetch_xor<T: Integer>(&self, value: T, disp: Disp) -> Result<T> {
        self.fop(value, disp, Self::basic::<T>("fetch_xor")?, Op::Bxor)
    }

    /// Atomically reads the element at `disp` (MPI_Fetch_and_op with MPI_NO_OP).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i32>(&world, 1, &Info::new())?;
    ///     if world.rank() == 0 {
    ///         win.write_local(0, &[-7i32])?;
    ///     }
    ///     let epoch = win.fence_epoch(Assert::NONE)?; // orders the store before the fetch
    ///     let seen: i32 = epoch.target(Rank::new(0))?.fetch(0)?;
    ///     epoch.end(Assert::NONE)?;
    ///     assert_eq!(seen, -7);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline]
    #[track_caller]
    #[doc(alias("MPI_Fetch_and_op", "MPI_NO_OP"))]
    pub fn fetch<T: Equivalence + Default>(&self, disp: Disp) -> Result<T> {
        self.fetch_and_op(T::default(), disp, Op::NoOp)
    }

    /// Atomically replaces the element at `disp` with `value`; returns the old value
    /// (MPI_Fetch_and_op with MPI_REPLACE).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<f32>(&world, 1, &Info::new())?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let peer = epoch.target(Rank::new(1 - world.rank() as u32))?;
    ///     assert_eq!(peer.swap(2.5f32, 0)?, 0.0);
    ///     assert_eq!(peer.swap(4.0f32, 0)?, 2.5);
    ///     epoch.end(Assert::NONE)?;
    ///     assert_eq!(win.local_vec::<f32>()?, [4.0]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline]
    #[track_caller]
    #[doc(alias("MPI_Fetch_and_op", "MPI_REPLACE"))]
    pub fn swap<T: Equivalence>(&self, value: T, disp: Disp) -> Result<T> {
        self.fetch_and_op(value, disp, Op::Replace)
    }

    /// Atomically replaces the element at `disp` with `value` if it equals `compare`;
    /// returns the old value (MPI_Compare_and_swap).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let me = world.rank() as u64;
    ///     // every rank tries to put its number + 1 where 0 is; one of them finds 0
    ///     let old = epoch.target(Rank::new(0))?.compare_and_swap(me + 1, 0, 0)?;
    ///     epoch.end(Assert::NONE)?;
    ///     let winners = world.allgather_value(old == 0)?;
    ///     assert_eq!(winners.iter().filter(|&&won| won).count(), 1);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline]
    #[track_caller]
    #[doc(alias = "MPI_Compare_and_swap")]
    pub fn compare_and_swap<T: CasElement>(&self, value: T, compare: T, disp: Disp) -> Result<T> {
        let basic = Self::basic::<T>("compare_and_swap")?;
        let off = self.offset("compare_and_swap", disp, basic.size(), Some(basic))?;
        let (v, c) = (bits_of(&value), bits_of(&compare));
        let old = self.road.compare_and_swap(self.win, off, basic, v, c)?;
        value_of(basic, old)
    }

    /// The MPI calls a C program makes on this handle's target, straight through the
    /// library ([`rma_backends::CCalls`], all unsafe), for benchmarks that compare
    /// rma's per-call cost with the library's own in one process; `None` unless the
    /// window is on the mpi transport, in a passive-target epoch, not dynamic, and
    /// its MPI calls take no lock (rma-mpi's `MpiTarget::c_calls`). Not part of rma's
    /// API: only with the `bench-hooks` feature.
    #[cfg(feature = "bench-hooks")]
    #[doc(hidden)]
    pub fn c_calls(&self) -> Option<rma_backends::CCalls<'e>> {
        match &self.road.fast {
            Some(f) if !self.road.active && !self.road.dynamic => f.c_calls(),
            _ => None,
        }
    }

    /// Completes every call to this target at origin and target (MPI_Win_flush).
    /// Passive-target epochs only (class RMA_SYNC otherwise: fence and complete
    /// complete active-target calls).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
    ///     let epoch = win.lock_all_epoch(Assert::NONE)?;
    ///     let zero = epoch.target(Rank::new(0))?;
    ///     let mine = world.rank() as i64; // each rank its own element: no conflict
    ///     zero.add(&[1u64], mine)?;
    ///     zero.flush()?; // complete at rank 0: this rank's next get sees it
    ///     let mut seen = [0u64];
    ///     zero.get(&mut seen, mine)?;
    ///     assert_eq!(seen[0], 1);
    ///     epoch.unlock()
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline(always)]
    #[doc(alias = "MPI_Win_flush")]
    pub fn flush(&self) -> Result<()> {
        if self.road.active {
            return Err(Error::sync(
                "flush",
                "flush needs a passive-target epoch; this handle's epoch completes its calls at its fence or complete",
            ));
        }
        self.road.flush(self.win)
    }
}

/// A target handle that defers its additions and sends them at its flush, as MPI
/// permits for non-fetching calls until the next synchronization: consecutive
/// additions to adjacent elements become one bulk accumulate, which rma's transports
/// apply with vectorised kernels (each element still atomically), and a run is sent
/// as soon as an addition does not extend it. Order is kept: runs go out in the order
/// they were started, so additions from this origin take effect in program order.
///
/// Made by [`TargetHandle::batched`]. The additions are complete, at origin and
/// target, when [`BatchedAdd::flush`] returns; dropping the batch sends what is
/// pending (an error is then logged, since a drop cannot return it), and the batch
/// borrows its epoch, so the epoch cannot end before.
///
/// ```
/// use rma_win::{Assert, Info, Rank, Window};
/// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
///     let win = Window::allocate::<f64>(&world, 64, &Info::new())?;
///     win.fence(Assert::NONE)?; // zeroed everywhere before anyone adds
///     let epoch = win.lock_all_epoch(Assert::NONE)?;
///     let mut hist = epoch.target(Rank::new(0))?.batched::<f64>();
///     for bin in 0..64 {
///         hist.add(1.0, bin)?; // deferred; adjacent bins become one call
///     }
///     hist.flush()?; // sent and complete
///     drop(hist);
///     epoch.unlock()?;
///     win.fence(Assert::NONE)?;
///     if world.rank() == 0 {
///         assert!(win.local_vec::<f64>()?.iter().all(|&v| v == 2.0));
///     }
///     win.fence(Assert::NONE)
/// })?
/// .into_iter()
/// .collect::<rma_win::Result<Vec<_>>>()?; // every rank's result
/// # Ok::<(), rma_win::Error>(())
/// ```
pub struct BatchedAdd<'e, 'w, T: Numeric> {
    handle: TargetHandle<'e, 'w>,
    basic: BasicType,
    /// The run being built: its first displacement and its values.
    start: Disp,
    run: Vec<T>,
}

impl<T: Numeric> std::fmt::Debug for BatchedAdd<'_, '_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchedAdd")
            .field("target", &self.handle.road.rank)
            .field("pending", &self.run.len())
            .finish()
    }
}

/// The longest run a batch builds before it sends it (elements).
const BATCH_RUN: usize = 4096;

impl<'e, 'w> TargetHandle<'e, 'w> {
    /// A batch of additions of `T` elements to this target (see [`BatchedAdd`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u32>(&world, 4, &Info::new())?;
    ///     let epoch = win.fence_epoch(Assert::NONE)?;
    ///     let mut batch = epoch.target(Rank::new(0))?.batched::<u32>();
    ///     for i in 0..4 {
    ///         batch.add(1, i)?; // one run: sent as one accumulate of 4 elements
    ///     }
    ///     batch.flush()?;
    ///     drop(batch);
    ///     epoch.end(Assert::NONE)?;
    ///     if world.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u32>()?, [2; 4]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn batched<T: Numeric>(&self) -> BatchedAdd<'e, 'w, T> {
        BatchedAdd {
            handle: *self,
            // every Numeric type is one basic type (BASIC is Some)
            basic: T::BASIC.unwrap_or(BasicType::Byte),
            start: 0,
            run: Vec::new(),
        }
    }
}

impl<T: Numeric> BatchedAdd<'_, '_, T> {
    /// Adds `value` to the element at `disp`, later (at the latest at
    /// [`BatchedAdd::flush`]). The displacement is checked now (range, alignment), so
    /// a refused addition is reported here and changes nothing. When this addition
    /// does not extend the pending run, that run is sent first; if sending it fails (a
    /// peer died, class PROC_FAILED), the error is returned here, the run's additions
    /// may have been applied in part, and this addition is not recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, ErrorClass, Info, Rank, Window};
    /// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i64>(&world, 8, &Info::new())?;
    ///     let epoch = win.lock_all_epoch(Assert::NONE)?;
    ///     let mut batch = epoch.target(Rank::new(0))?.batched::<i64>();
    ///     batch.add(1, 0)?;
    ///     batch.add(1, 1)?; // extends the run 0..1: still pending
    ///     batch.add(5, 6)?; // does not: 0..2 is sent first
    ///     let past_end = batch.add(1, 8).unwrap_err(); // refused now, recorded nowhere
    ///     assert_eq!(past_end.class(), ErrorClass::RmaRange);
    ///     batch.flush()?;
    ///     drop(batch);
    ///     epoch.unlock()?;
    ///     assert_eq!(win.local_vec::<i64>()?, [1, 1, 0, 0, 0, 0, 5, 0]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[inline]
    #[track_caller]
    #[doc(alias = "MPI_Accumulate")]
    pub fn add(&mut self, value: T, disp: Disp) -> Result<()> {
        self.handle.note_site();
        let size = std::mem::size_of::<T>();
        self.handle
            .offset("accumulate", disp, size, Some(self.basic))?;
        let next = self.start.checked_add(self.run.len() as Disp);
        if self.run.is_empty() || next != Some(disp) || self.run.len() >= BATCH_RUN {
            self.send()?;
            self.start = disp;
        }
        self.run.push(value);
        Ok(())
    }

    /// Sends the run being built (one accumulate; none when empty). A checked
    /// window records it at the caller's site: the `add` that ends the run or the
    /// `flush`.
    #[track_caller]
    fn send(&mut self) -> Result<()> {
        if self.run.is_empty() {
            return Ok(());
        }
        let r = self.handle.acc(&self.run, self.start, self.basic, Op::Sum);
        self.run.clear();
        r
    }

    /// Sends every pending addition and, in a passive-target epoch, completes them at
    /// origin and target (MPI_Win_flush); in a fence or start epoch they complete at
    /// the epoch's closing fence or complete, as every call there does.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<f64>(&world, 4, &Info::new())?;
    ///     let epoch = win.lock_all_epoch(Assert::NONE)?;
    ///     let zero = epoch.target(Rank::new(0))?;
    ///     let mine = 2 * world.rank() as i64; // each rank its own two elements
    ///     let mut batch = zero.batched::<f64>();
    ///     batch.add(0.5, mine)?;
    ///     batch.add(0.25, mine + 1)?;
    ///     batch.flush()?; // sent, and complete at rank 0
    ///     let mut seen = [0.0f64; 2];
    ///     zero.get(&mut seen, mine)?;
    ///     assert_eq!(seen, [0.5, 0.25]);
    ///     drop(batch);
    ///     epoch.unlock()
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Win_flush")]
    pub fn flush(&mut self) -> Result<()> {
        self.send()?;
        if self.handle.road.active {
            return Ok(());
        }
        self.handle.flush()
    }
}

impl<T: Numeric> Drop for BatchedAdd<'_, '_, T> {
    fn drop(&mut self) {
        if !self.run.is_empty() && !std::thread::panicking() {
            if let Err(e) = self.send() {
                tracing::error!(
                    "a batch's pending additions failed at its drop: {e} ({})",
                    e.class()
                );
            }
        }
    }
}
