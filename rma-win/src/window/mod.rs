//! [`Window`]: creation, free, fence and epoch tracking, local access, and every RMA
//! call, validated here before a transport sees it.
// `Error` has drop glue (some variants own strings), so building one eagerly with
// `ok_or` costs a construction and a drop on every successful call (callgrind showed
// it on the hot path): errors are built lazily here, whatever clippy thinks.
#![allow(clippy::unnecessary_lazy_evaluations)]

mod calls;
mod checks;
mod requests;
mod typed;

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

/// A window's memory model (MPI_WIN_MODEL): whether RMA calls and local loads and
/// stores see one copy of the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryModel {
    /// One copy (MPI_WIN_UNIFIED): calls and local accesses meet in the same memory
    /// once synchronized.
    Unified,
    /// A public and a private copy, reconciled at synchronization (MPI_WIN_SEPARATE);
    /// no rma backend uses it.
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
pub struct Window<'w> {
    pub(crate) world: &'w World,
    /// The backend's window: its memory, epoch primitives and transport.
    pub(crate) win: AnyWindow<'w>,
    /// This rank and the number of ranks, fixed at creation (every index into
    /// `shapes`, `fast` and the epoch state is checked against these, whatever a
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
    pub(crate) epochs: RefCell<Epochs>,
    /// Per target, what the calls' fast path needs from `epochs` (sync.rs `HELD`,
    /// `EXCLUSIVE`), kept in step by every lock and unlock.
    pub(crate) fast: Box<[Cell<u8>]>,
    /// The world's failure word ([`World::failure_word`]): every call reads it (one
    /// relaxed load, sync.rs `fast_target` and `begin_as`).
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

/// The bytes of a window of `count` elements of `T`, and its displacement unit (the
/// element's size, at least 1).
fn window_bytes<T>(count: usize) -> Result<(usize, usize)> {
    let size = std::mem::size_of::<T>();
    let bytes = count
        .checked_mul(size)
        .ok_or_else(|| Error::CountOverflow {
            count,
            what: "window elements",
        })?;
    Ok((bytes, size.max(1)))
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
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 2, &Info::new())?; // zero-filled
    ///     win.fence(Assert::NONE)?;
    ///     // each rank writes rank + 1 into element `rank` of rank 0's window
    ///     win.put(&[win.rank() as u64 + 1], Rank::new(0), win.rank() as i64)?;
    ///     win.fence(Assert::NONE)?;
    ///     let expected: [u64; 2] = if win.rank() == 0 { [1, 2] } else { [0, 0] };
    ///     assert_eq!(win.local_vec::<u64>()?, expected);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn allocate<T: Equivalence>(
        world: &'w World,
        count: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let (bytes, unit) = window_bytes::<T>(count)?;
        Self::allocate_bytes(world, bytes, unit, info)
    }

    /// Collectively allocates a window of `len` bytes with displacement unit
    /// `disp_unit` (MPI_Win_allocate). The transport is chosen as for
    /// [`Window::allocate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_bytes(&world, 64, 8, &Info::new())?; // 64 bytes, unit 8
    ///     assert_eq!((win.local_len(), win.disp_unit_of(win.rank())?), (64, 8));
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 1 {
    ///         win.put(&[7u64], Rank::new(0), 3)?; // displacement 3: byte 24
    ///     }
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         let mut v = [0u64];
    ///         win.read_local(3, &mut v)?; // element 3 of u64: byte 24
    ///         assert_eq!(v, [7]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
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
        Self::finish(world, win, parsed)
    }

    /// Collectively allocates a shared window of `count` elements of `T` on this rank,
    /// zero-filled, with `disp_unit = size_of::<T>()` (MPI_Win_allocate_shared): a
    /// window like [`Window::allocate`]'s, whose every part each rank also reaches by
    /// load and store through [`Window::shared_query`].
    ///
    /// **Layout.** By default the parts are contiguous: in every rank's address space
    /// rank `r + 1`'s part starts where rank `r`'s starts plus its length rounded up
    /// to a multiple of 64 bytes (a cache line, so no two ranks' parts share one;
    /// [`rma_core::shared_offset`](crate::backend::shared_offset) computes it). The
    /// info key `alloc_shared_noncontig=true` lets each part lie apart, each
    /// page-aligned (MPI's hint for memory placed near its owner).
    ///
    /// **Where.** With ranks as threads or processes started by `rmarun`, every world
    /// can have shared windows, on the atomic and the queued transport. Under an MPI
    /// launcher the window is MPI_Win_allocate_shared's, which MPI offers only among
    /// ranks of one node: where the world spans several, every rank gets class
    /// RMA_SHARED and no window is made. Every RMA call works on a shared window, as on
    /// any other.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<f64>(&world, 3, &Info::new())?;
    ///     let (a, b) = (win.shared_query(Rank::new(0))?, win.shared_query(Rank::new(1))?);
    ///     assert_eq!(b.addr() - a.addr(), 64); // 24 bytes, rounded up to a cache line
    ///     if world.rank() == 1 {
    ///         a.view::<f64>()?.store(2, 0.5)?; // a store into rank 0's part
    ///     }
    ///     world.barrier()?;
    ///     win.sync()?;
    ///     assert_eq!(a.view::<f64>()?.load(2)?, 0.5);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn allocate_shared<T: Equivalence>(
        world: &'w World,
        count: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let (bytes, unit) = window_bytes::<T>(count)?;
        Self::allocate_shared_bytes(world, bytes, unit, info)
    }

    /// Collectively allocates a shared window of `len` bytes with displacement unit
    /// `disp_unit` (MPI_Win_allocate_shared); see [`Window::allocate_shared`].
    pub fn allocate_shared_bytes(
        world: &'w World,
        len: usize,
        disp_unit: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_allocate_shared", len, disp_unit).entered();
        let parsed = WinInfo::from_info(info)?;
        if disp_unit == 0 {
            return Err(Error::InvalidDispUnit { disp_unit });
        }
        let contiguous = !parsed.alloc_shared_noncontig;
        let win = world
            .inner
            .allocate_shared(len, disp_unit, contiguous, info, &parsed)?;
        Self::finish(world, win, parsed)
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
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut buf = [10i64, 20];
    ///     let mut win = Window::create(&world, &mut buf, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     win.accumulate(&[1i64, 1], Rank::new(0), 0, Op::Sum)?;
    ///     win.fence(Assert::NONE)?;
    ///     win.free()?; // the window's contents go back into `buf`
    ///     drop(win);
    ///     let expected = if world.rank() == 0 { [12, 22] } else { [10, 20] };
    ///     assert_eq!(buf, expected);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
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
        Self::finish(world, win, parsed)
    }

    /// Collectively creates a window over memory every rank already reaches by load and
    /// store, for a C interface exposing, with MPI_Win_create, memory that lies in a
    /// shared window (MPI_Win_allocate_shared): this rank exposes `len` bytes at
    /// `peers[rank]`, and `peers[r]` is where rank r's memory lies in this process.
    /// Other ranks' calls land in that memory directly (the unified model); the window
    /// copies nothing and frees nothing. Backends without shared memory refuse with
    /// class RMA_FLAVOR. Rust programs use [`Window::allocate_shared`] instead.
    ///
    /// # Safety
    /// `peers` has one entry per rank; for every rank r with a nonzero length,
    /// `peers[r]` is 8-byte aligned and valid for reads and writes of rank r's length
    /// rounded up to whole 8-byte words, in this process, for the whole life of the
    /// returned window (a window dropped without its free included). Every access to
    /// that memory is as [`Window::create_in_place`] requires: word atomics (rma's own
    /// windows), or a C program's loads and stores under the terms given there, never a
    /// Rust reference.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let shared = Window::allocate_shared::<u64>(&world, 4, &Info::new())?;
    ///     let peers: Vec<usize> = (0..world.size())
    ///         .map(|r| Ok(shared.shared_query(Rank::new(r as u32))?.addr()))
    ///         .collect::<rma_win::Result<_>>()?;
    ///     // SAFETY: every address is a rank's part of `shared` (8-aligned, whole words),
    ///     // which outlives `mapped`; all access goes through the two windows.
    ///     let mut mapped =
    ///         unsafe { Window::create_mapped(&world, 32, 8, &peers, &Info::new())? };
    ///     mapped.lock_all(rma_win::Assert::NONE)?;
    ///     mapped.accumulate(&[1u64], Rank::new(0), 2, rma_win::Op::Sum)?;
    ///     mapped.unlock_all()?;
    ///     world.barrier()?;
    ///     // the sums landed in the shared window's memory itself
    ///     let part = shared.shared_query(Rank::new(0))?.view::<u64>()?;
    ///     assert_eq!(part.load(2)?, 3);
    ///     mapped.free()?;
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[allow(unsafe_code)] // a constructor whose callers make the promise above
    pub unsafe fn create_mapped(
        world: &'w World,
        len: usize,
        disp_unit: usize,
        peers: &[usize],
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_create_mapped", len).entered();
        let parsed = WinInfo::from_info(info)?;
        if disp_unit == 0 {
            return Err(Error::InvalidDispUnit { disp_unit });
        }
        let rma_backends::AnyWorld::Shm(shm) = &world.inner else {
            return Err(Error::Flavor {
                reason: "only rma's shared-memory worlds can expose memory another window \
                         already shares"
                    .into(),
            });
        };
        let mut chosen = parsed.clone();
        // the transport of a window whose memory every rank reaches: as for a shared one
        chosen.transport = Some(rma_backends::chosen_transport(
            &parsed,
            rma_core::Services::mode(&world.inner),
            Flavor::Shared,
        )?);
        // SAFETY: forwarded from this function's contract.
        let win = AnyWindow::Shm(unsafe {
            rma_core::Backend::create_mapped(shm, len, disp_unit, peers, info, &chosen)?
        });
        Self::finish(world, win, parsed)
    }

    /// Collectively creates a window over `len` bytes at `ptr` that other ranks'
    /// calls update in place, for a C interface exposing a program's own memory with
    /// MPI_Win_create: with ranks as processes the queued transport's progress thread
    /// of this rank applies them, with ranks as threads the origins do; nothing is
    /// copied, and a flush at the origin means the update is in this memory (the
    /// unified model). Backends other than rma's shared memory refuse with class
    /// RMA_FLAVOR. Rust programs use [`Window::create`], which borrows a slice.
    ///
    /// # Safety
    /// `ptr` is 8-byte aligned (a misaligned one is refused: class ARG on its rank,
    /// and every other rank's call fails naming that rank) and valid
    /// for reads and writes of `len` bytes rounded up to whole 8-byte words from this
    /// call until no rank can reach them any more, which is:
    ///
    /// - once this rank's [`Window::free`] has returned `Ok`: every other rank has
    ///   then entered its free of this window or dropped its window, so no call
    ///   reaches the memory any more, and this rank's progress thread (the queued
    ///   transport's) has stopped;
    /// - else, with ranks as processes, once this rank's window has been dropped: the
    ///   drop stops the progress thread, which is what applies the other ranks' calls
    ///   here (no other process maps the memory);
    /// - else, with ranks as threads, once this rank's window has been dropped and
    ///   every other rank's window of this creation is gone too (freed, dropped, or
    ///   forgotten): until then their calls write the memory directly;
    /// - never, for a window that is leaked (`mem::forget`, a reference cycle) without
    ///   a successful free: the memory must then stay valid for the rest of the
    ///   process (a progress thread, or other ranks, may still write it).
    ///
    /// Until then rma reads and writes those words with word atomics only; every other
    /// access to them is a word atomic too, never a Rust reference, except
    /// a C program's own loads and stores, for which the caller answers: kept apart from
    /// the window's calls to the same bytes by MPI's synchronization, and, for other
    /// bytes of a word a call updates meanwhile, relying on the hardware (x86-64,
    /// aarch64) keeping byte stores and word atomics coherent, as any MPI over shared
    /// memory does. A `len` that is not a whole number of words has the bytes of its
    /// last word past `len` read and written back atomically: they must belong to
    /// nothing accessed meanwhile.
    #[allow(unsafe_code)] // a constructor whose callers make the promise above
    pub unsafe fn create_in_place(
        world: &'w World,
        ptr: *mut u8,
        len: usize,
        disp_unit: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_create_in_place", len).entered();
        let parsed = WinInfo::from_info(info)?;
        if disp_unit == 0 {
            return Err(Error::InvalidDispUnit { disp_unit });
        }
        let rma_backends::AnyWorld::Shm(shm) = &world.inner else {
            return Err(Error::Flavor {
                reason: "only rma's shared-memory worlds can expose memory in place".into(),
            });
        };
        let mut chosen = parsed.clone();
        chosen.transport = Some(rma_backends::chosen_transport(
            &parsed,
            rma_core::Services::mode(&world.inner),
            Flavor::Create,
        )?);
        // SAFETY: forwarded from this function's contract.
        let win = AnyWindow::Shm(unsafe { shm.create_in_place(ptr, len, disp_unit, &chosen)? });
        Self::finish(world, win, parsed)
    }

    /// The window over the backend's `win`. A backend whose shapes do not cover the
    /// world's ranks (one from outside rma, with a bug) is refused with class INTERN
    /// instead of panicking on a later index.
    pub(crate) fn finish(
        world: &'w World,
        win: AnyWindow<'w>,
        mut info: WinInfo,
    ) -> Result<Window<'w>> {
        let shapes = win.shapes().into_boxed_slice();
        let (rank, ranks) = (world.rank(), world.size());
        if shapes.len() != ranks || rank >= ranks {
            return Err(Error::Internal {
                reason: format!(
                    "the {} backend reported {} window shapes for a world of {ranks} ranks (rank {rank})",
                    win.name(),
                    shapes.len(),
                ),
            });
        }
        // byte offsets are computed as isize (datatype runs may have negative offsets)
        if let Some(big) = shapes.iter().find(|s| s.len > isize::MAX as usize) {
            return Err(Error::Internal {
                reason: format!(
                    "the {} backend reported a window of {} bytes, more than isize::MAX",
                    win.name(),
                    big.len
                ),
            });
        }
        info.transport = Some(win.name().to_owned());
        let (win, check) = crate::check::wrap(world, win, &mut info)?;
        let dynamic = win.flavor() == Flavor::Dynamic;
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Ok(Window {
            dynamic,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            world,
            rank,
            ranks,
            shapes,
            win,
            info,
            epochs: RefCell::new(Epochs::new(ranks)),
            fast: (0..ranks).map(|_| Cell::new(0)).collect(),
            failed: world.failure_word(),
            check,
            _borrow: PhantomData,
        })
    }

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
    pub fn group(&self) -> crate::Group {
        crate::Group::first(self.ranks)
    }

    /// The window's memory model (the MPI_WIN_MODEL attribute): always
    /// [`MemoryModel::Unified`]. rma's own transports apply calls to the one copy of
    /// the memory that loads and stores see, and under MPI rma keeps the window in a
    /// passive epoch and synchronizes it (MPI_Win_sync) around every local access,
    /// which is what the unified model promises. [`Window::sync`] orders this rank's
    /// loads and stores with other ranks' calls, as MPI_Win_sync does.
    pub fn memory_model(&self) -> MemoryModel {
        MemoryModel::Unified
    }

    /// The address of this rank's window memory in this process (the MPI_WIN_BASE
    /// attribute), for arithmetic only (alignment, comparing windows); 0 where the
    /// backend keeps no address, and for a dynamic window (MPI_BOTTOM: its
    /// displacements are addresses, [`crate::Region::disp`]). Read and write the memory through
    /// [`Window::read_local`], [`Window::write_local`] and, for shared windows,
    /// [`Window::shared_query`].
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
