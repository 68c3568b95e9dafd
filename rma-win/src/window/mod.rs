//! [`Window`]: creation, free, fence and epoch tracking, local access, and every RMA
//! call, validated here before a transport sees it.
// `Error` has drop glue (some variants own strings), so building one eagerly with
// `ok_or` costs a construction and a drop on every successful call (callgrind showed
// it on the hot path): errors are built lazily here, whatever clippy thinks.
#![allow(clippy::unnecessary_lazy_evaluations)]

mod calls;
mod checks;
mod create;
mod requests;
mod typed;

use crate::buffers::{Buffer, BufferMut, Dt, Resolved, Target};
use crate::epoch_state::EpochCell;
use crate::request::Request;
use crate::world::World;
use rma_backends::AnyWindow;
use rma_core::{
    Access, Backend, BasicType, Disp, Error, Flavor, Info, Layout, Memory, Op, Rank, Result,
    RmaCall, Shape, Transport, WinInfo,
};
use rma_datatype::{Datatype, Equivalence};
use rma_ops::atomic::atomic_align;
use std::marker::PhantomData;

/// A window's memory model (MPI_WIN_MODEL): whether RMA calls and local loads and
/// stores see one copy of the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[doc(alias = "MPI_WIN_MODEL")]
pub enum MemoryModel {
    /// One copy (MPI_WIN_UNIFIED): calls and local accesses meet in the same memory
    /// once synchronized.
    #[doc(alias = "MPI_WIN_UNIFIED")]
    Unified,
    /// A public and a private copy, reconciled at synchronization (MPI_WIN_SEPARATE);
    /// no rma backend uses it.
    #[doc(alias = "MPI_WIN_SEPARATE")]
    Separate,
}

/// A window: memory each rank of a world exposes to the others, with the calls that
/// read, write and combine into it.
///
/// Created collectively by every rank ([`Window::allocate`], [`Window::create`]), used
/// by its rank's thread (it borrows its rank's `World`, so it stays on that thread:
/// neither `Send` nor `Sync`), freed collectively ([`Window::free`]). Every call
/// checks its arguments and the epoch state before any byte moves; a call refused by
/// those checks has changed nothing. A call that fails later, on a peer's death or a
/// stalled chunk lock (PROC_FAILED, INTERN), may have applied part of its data.
#[doc(alias = "MPI_Win")]
pub struct Window<'w> {
    pub(crate) world: &'w World,
    /// The backend's window: its memory, epoch primitives and transport.
    pub(crate) win: AnyWindow<'w>,
    /// This rank and the number of ranks, fixed at creation (every index into
    /// `shapes` and the epoch state is checked against these, whatever a
    /// backend's world answers later).
    rank: usize,
    ranks: usize,
    /// Every rank's window shape, fixed at creation.
    pub(crate) shapes: Box<[Shape]>,
    pub(crate) info: WinInfo,
    /// A dynamic window (MPI_Win_create_dynamic): displacements are addresses, and
    /// every target range must lie in a region its target attached.
    pub(crate) dynamic: bool,
    /// This window's identity in the process (a dynamic window's regions name it).
    pub(crate) id: u64,
    /// This rank's epochs on the window (epoch_state.rs), with what every call reads
    /// of them without borrowing them.
    pub(crate) epochs: EpochCell,
    /// The world's failure word ([`World::failure_word`]): every call reads it (one
    /// relaxed load, sync/mod.rs `fast_target` and `begin_as`).
    pub(crate) failed: &'w std::sync::atomic::AtomicU32,
    /// The conflict checker of a checked window (`rma_check`, `RMA_CHECK`); `win` is
    /// then its wrapper around the backend's window.
    pub(crate) check: Option<std::sync::Arc<dyn crate::check::Hooks + 'w>>,
    pub(crate) _borrow: PhantomData<&'w mut [u8]>,
}

impl std::fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("rank", &self.rank)
            .field("ranks", &self.ranks)
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
    /// This rank.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Window};
    /// let ranks = rma_win::run_threads(2, |world| -> rma_win::Result<usize> {
    ///     let win = Window::allocate::<u8>(&world, 1, &Info::new())?;
    ///     assert_eq!(win.rank(), world.rank());
    ///     Ok(win.rank())
    /// })?;
    /// assert_eq!(ranks.into_iter().collect::<rma_win::Result<Vec<_>>>()?, [0, 1]);
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks in the window's group.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     assert_eq!(win.size(), 3);
    ///     // a ring: each rank puts its rank into its right neighbour's window
    ///     let (me, n) = (win.rank(), win.size());
    ///     win.fence(Assert::NONE)?;
    ///     win.put(&[me as u64], Rank::new(((me + 1) % n) as u32), 0)?;
    ///     win.fence(Assert::NONE)?;
    ///     assert_eq!(win.local_vec::<u64>()?, [((me + n - 1) % n) as u64]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn size(&self) -> usize {
        self.ranks
    }

    /// The name of the transport in use.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     assert!(rma_win::TRANSPORTS.contains(&win.transport_name()));
    ///     // the `rma_transport` info key asks for one
    ///     let info = Info::new().with("rma_transport", "queued");
    ///     let queued = Window::allocate::<u64>(&world, 1, &info)?;
    ///     assert_eq!(queued.transport_name(), "queued");
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn transport_name(&self) -> &'static str {
        self.win.name()
    }

    /// How the memory was obtained.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Flavor, Info, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let allocated = Window::allocate::<u64>(&world, 4, &Info::new())?;
    ///     assert_eq!(allocated.flavor(), Flavor::Allocate);
    ///     let mut buf = [0u64; 4];
    ///     let created = Window::create(&world, &mut buf, &Info::new())?;
    ///     assert_eq!(created.flavor(), Flavor::Create);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias("MPI_Win_get_attr", "MPI_WIN_CREATE_FLAVOR"))]
    pub fn flavor(&self) -> Flavor {
        self.win.flavor()
    }

    /// The effective value of every info key rma knows (MPI_Win_get_info).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let given = Info::new().with("accumulate_ops", "same_op");
    ///     let win = Window::allocate::<u64>(&world, 1, &given)?;
    ///     let info = win.info();
    ///     assert_eq!(info.get("accumulate_ops"), Some("same_op"));
    ///     assert_eq!(info.get("no_locks"), Some("false")); // keys not given: their defaults
    ///     assert_eq!(info.get("rma_transport"), Some(win.transport_name()));
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_get_info")]
    pub fn info(&self) -> Info {
        self.info.to_info()
    }

    /// Changes the window's info hints (MPI_Win_set_info) and returns the keys it
    /// ignored. Every key rma knows is validated first, as at the window's creation,
    /// and a refusal changes nothing: a bad value is an error of class INFO, and an
    /// `rma_transport` that names neither the window's own transport nor any other of
    /// rma's is an error of class ARG listing them. `mpi_accumulate_granularity` (a hint
    /// rma only reports) takes the new value. The other keys rma knows fix how the
    /// window was built (its transport, layout and accumulate ordering, which calls
    /// already issued rely on), so a new value for them is ignored, as MPI allows for
    /// any hint: the returned list names them, [`Window::info`] keeps reporting the
    /// values in effect, and a `tracing` warning says so. Keys rma does not know are
    /// ignored too (and listed).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{ErrorClass, Info, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let ignored = win.set_info(
    ///         &Info::new().with("mpi_accumulate_granularity", "64").with("no_locks", "true"),
    ///     )?;
    ///     assert_eq!(ignored, ["no_locks"]); // fixed at creation
    ///     assert_eq!(win.info().get("mpi_accumulate_granularity"), Some("64"));
    ///     assert_eq!(win.info().get("no_locks"), Some("false"));
    ///     let bad = win.set_info(&Info::new().with("no_locks", "maybe")).unwrap_err();
    ///     assert_eq!(bad.class(), ErrorClass::Info);
    ///     // another transport is ignored (fixed at creation); no transport at all is ARG
    ///     let other = if win.transport_name() == "queued" { "atomic" } else { "queued" };
    ///     assert_eq!(win.set_info(&Info::new().with("rma_transport", other))?, ["rma_transport"]);
    ///     let bad = win.set_info(&Info::new().with("rma_transport", "carrier-pigeon"));
    ///     assert_eq!(bad.unwrap_err().class(), ErrorClass::Arg);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_set_info")]
    pub fn set_info(&mut self, info: &Info) -> Result<Vec<String>> {
        self.check_alive()?;
        let asked = WinInfo::from_info(info)?;
        if let Some(name) = asked.transport.as_deref() {
            // refused as at creation (class ARG), though the window keeps its own
            if name != self.transport_name() {
                rma_backends::known_transport(name)?;
            }
        }
        let (now, wanted) = (self.info.to_info(), asked.to_info());
        let mut ignored = Vec::new();
        for (key, _) in info.iter() {
            let took = key == "mpi_accumulate_granularity";
            let same = now.get(key) == wanted.get(key) && now.get(key).is_some();
            if !took && !same {
                ignored.push(key.to_owned());
            }
        }
        if info.get("mpi_accumulate_granularity").is_some() {
            self.info.accumulate_granularity = asked.accumulate_granularity;
        }
        if !ignored.is_empty() {
            tracing::warn!(
                keys = ?ignored,
                "set_info: these keys keep their values from the window's creation (or are \
                 not rma's); the hints in effect are unchanged"
            );
        }
        Ok(ignored)
    }

    /// The world the window was made on: its ranks are the window's, and
    /// [`World::translate_ranks`] maps them to another world's.
    pub fn world(&self) -> &'w World {
        self.world
    }

    /// The group of ranks the window spans (MPI_Win_get_group): ranks `0..size()`,
    /// numbered as the window numbers them.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u8>(&world, 1, &Info::new())?;
    ///     assert_eq!(win.group().ranks(), [0, 1, 2]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_get_group")]
    pub fn group(&self) -> crate::Group {
        crate::Group::first(self.ranks)
    }

    /// The window's memory model (the MPI_WIN_MODEL attribute): always
    /// [`MemoryModel::Unified`]. rma's own transports apply calls to the one copy of
    /// the memory that loads and stores see, and under MPI rma keeps the window in a
    /// passive epoch and synchronizes it (MPI_Win_sync) around every local access,
    /// which is what the unified model promises. [`Window::sync`] orders this rank's
    /// loads and stores with other ranks' calls, as MPI_Win_sync does.
    #[doc(alias("MPI_Win_get_attr", "MPI_WIN_MODEL"))]
    pub fn memory_model(&self) -> MemoryModel {
        MemoryModel::Unified
    }

    /// The address of this rank's window memory in this process (the MPI_WIN_BASE
    /// attribute), for arithmetic only (alignment, comparing windows); 0 where the
    /// backend keeps no address, and for a dynamic window (MPI_BOTTOM: its
    /// displacements are addresses, [`crate::Region::disp`]). Read and write the memory through
    /// [`Window::read_local`], [`Window::write_local`] and, for shared windows,
    /// [`Window::shared_query`].
    #[doc(alias("MPI_Win_get_attr", "MPI_WIN_BASE"))]
    pub fn base_addr(&self) -> usize {
        if self.dynamic {
            return 0; // MPI_BOTTOM: a dynamic window's displacements are addresses
        }
        self.shapes[self.rank].addr
    }

    /// The parsed info.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new().with("no_locks", "true"))?;
    ///     assert!(win.win_info().no_locks);
    ///     assert!(!win.win_info().same_size); // not given: the default
    ///     assert_eq!(win.win_info().transport.as_deref(), Some(win.transport_name()));
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn win_info(&self) -> &WinInfo {
        &self.info
    }

    /// This rank's window size in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     // ranks may expose different sizes: rank r has r + 1 elements of u32
    ///     let win = Window::allocate::<u32>(&world, world.rank() + 1, &Info::new())?;
    ///     assert_eq!(win.local_len(), 4 * (world.rank() + 1));
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias("MPI_Win_get_attr", "MPI_WIN_SIZE"))]
    pub fn local_len(&self) -> usize {
        self.shapes[self.rank()].len
    }

    /// The window size of `rank` in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{ErrorClass, Info, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     // rank r has r + 1 elements of u32
    ///     let win = Window::allocate::<u32>(&world, world.rank() + 1, &Info::new())?;
    ///     assert_eq!((win.len_of(0)?, win.len_of(1)?), (4, 8));
    ///     assert_eq!(win.len_of(2).unwrap_err().class(), ErrorClass::Rank); // no rank 2
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn len_of(&self, rank: usize) -> Result<usize> {
        self.check_rank(rank_of(rank))?;
        Ok(self.shapes[rank].len)
    }

    /// The displacement unit of `rank`.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     // each rank picks its own displacement unit
    ///     let unit = if world.rank() == 0 { 8 } else { 4 };
    ///     let win = Window::allocate_bytes(&world, 32, unit, &Info::new())?;
    ///     assert_eq!((win.disp_unit_of(0)?, win.disp_unit_of(1)?), (8, 4));
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         win.put(&[5u32], Rank::new(1), 2)?; // 2 units of 4 bytes: byte 8 of rank 1
    ///     }
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 1 {
    ///         assert_eq!(win.local_vec::<u32>()?, [0, 0, 5, 0, 0, 0, 0, 0]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias("MPI_Win_get_attr", "MPI_WIN_DISP_UNIT"))]
    pub fn disp_unit_of(&self, rank: usize) -> Result<usize> {
        self.check_rank(rank_of(rank))?;
        Ok(self.shapes[rank].disp_unit)
    }

    // ---- local access -------------------------------------------------------------

    /// Copies elements of this rank's window, starting at element `first` (in units of
    /// `T`), into `out`.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i32>(&world, 4, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 1 {
    ///         win.put(&[7i32, 8], Rank::new(0), 2)?;
    ///     }
    ///     win.fence(Assert::NONE)?; // the put is complete at rank 0: read after this fence
    ///     if win.rank() == 0 {
    ///         let mut out = [0i32; 2];
    ///         win.read_local(2, &mut out)?; // elements 2 and 3
    ///         assert_eq!(out, [7, 8]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    pub fn read_local<T: Equivalence>(&self, first: usize, out: &mut [T]) -> Result<()> {
        self.note_site();
        self.check_alive()?;
        let size = std::mem::size_of::<T>();
        let offset = first
            .checked_mul(size)
            .ok_or_else(|| Error::CountOverflow {
                count: first,
                what: "elements",
            })?;
        let len = std::mem::size_of_val(out);
        match rma_datatype::bytes_of_mut(out) {
            // every bit pattern is a T: read straight into the caller's buffer
            Some(dst) => self.win.read_local(offset, dst)?,
            None => {
                let mut bytes = vec![0u8; len];
                self.win.read_local(offset, &mut bytes)?;
                rma_datatype::copy_from_bytes(out, &bytes)?;
            }
        }
        match &self.check {
            Some(c) => c.local(false, offset, len),
            None => Ok(()),
        }
    }

    /// Notes the caller's location for a checked window's records (callers are
    /// `#[track_caller]` public calls).
    #[inline]
    #[track_caller]
    pub(crate) fn note_site(&self) {
        if self.check.is_some() {
            crate::check::set_site(std::panic::Location::caller());
        }
    }

    /// Copies `data` into this rank's window starting at element `first` (in units of
    /// `T`).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
    ///     win.write_local(0, &[win.rank() as u64, 42])?; // before the fence that exposes it
    ///     win.fence(Assert::NONE)?;
    ///     let peer = 1 - win.rank();
    ///     let mut got = [0u64; 2];
    ///     win.get(&mut got, Rank::new(peer as u32), 0)?;
    ///     win.fence(Assert::NONE)?;
    ///     assert_eq!(got, [peer as u64, 42]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    pub fn write_local<T: Equivalence>(&self, first: usize, data: &[T]) -> Result<()> {
        self.note_site();
        self.check_alive()?;
        let size = std::mem::size_of::<T>();
        let offset = first
            .checked_mul(size)
            .ok_or_else(|| Error::CountOverflow {
                count: first,
                what: "elements",
            })?;
        let data = rma_datatype::bytes_of(data);
        self.win.write_local(offset, data)?;
        match &self.check {
            Some(c) => c.local(true, offset, data.len()),
            None => Ok(()),
        }
    }

    /// This rank's whole window as elements of `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 3, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     win.accumulate(&[1u64, 2, 3], Rank::new(0), 0, Op::Sum)?;
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u64>()?, [2, 4, 6]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    pub fn local_vec<T: Equivalence + Default>(&self) -> Result<Vec<T>> {
        let n = self.local_len() / std::mem::size_of::<T>().max(1);
        let mut v = vec![T::default(); n];
        self.read_local(0, &mut v)?;
        Ok(v)
    }
}

/// The bits of one value of a basic type of at most 8 bytes.
#[inline]
pub(crate) fn bits_of<T: Equivalence>(value: &T) -> u64 {
    rma_core::bits_from_bytes(rma_datatype::bytes_of(std::slice::from_ref(value)))
}

/// The value of `basic` (the `T` of a typed call) whose bits are `bits`.
#[inline]
pub(crate) fn value_of<T: Equivalence>(basic: BasicType, bits: u64) -> Result<T> {
    let mut out = [0u8; 8];
    let size = basic.size();
    rma_core::bytes_from_bits(bits, &mut out[..size]);
    from_bytes(&out[..size])
}

pub(crate) fn single_basic<T: Equivalence>(call: &'static str) -> Result<BasicType> {
    T::BASIC.ok_or_else(|| Error::TypeNotAllowed {
        call,
        found: std::any::type_name::<T>().to_owned(),
        reason: "it takes one element of a predefined type",
    })
}

#[inline]
fn from_bytes<T: Equivalence>(bytes: &[u8]) -> Result<T> {
    T::from_bytes(bytes).ok_or_else(wrong_size)
}

#[cold]
fn wrong_size() -> Error {
    Error::Internal {
        reason: "a fetched element has the wrong size".into(),
    }
}

fn is_empty(dt: &Dt<'_>, count: usize) -> bool {
    count == 0 || dt.get().size() == 0
}

/// The type and byte length of a call whose local buffer and target are the same
/// predefined type and count, the local buffer holding them all: such a call takes
/// its target's road ([`Window::road_at`]); `None` for anything else.
#[inline(always)]
fn same_run(
    local: (&Dt<'_>, usize),
    have: usize,
    target: &Target<'_>,
) -> Option<(BasicType, usize)> {
    let b = local.0.get().predefined()?;
    if target.dt.get().predefined() != Some(b) || local.1 != target.count {
        return None;
    }
    let n = b.size().checked_mul(local.1)?;
    (n <= have).then_some((b, n))
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
