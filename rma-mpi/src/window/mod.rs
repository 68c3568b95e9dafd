//! [`MpiWindow`]: an MPI window (allocated, shared, dynamic, or created over the
//! caller's memory), its local memory and the RMA calls on it.
//!
//! This file holds the window itself: every rank's size and displacement unit, the
//! local copies, where a call lands, how a call keeps its origin copy, and the free;
//! `create` makes windows in each flavor. Its calls are the crate's other modules':
//! `calls` (the public RMA calls), `issue` (where both API levels end), `sync`
//! (synchronization), `target` (resolved targets), `transport` (rma-core's
//! `Transport`).

mod create;

use crate::agree::Entry;
use crate::datatype::{place, Placement, Region};
use crate::epoch::{Mode, MpiEpochs};
use crate::pending::{Copies, Mark, Pending};
use crate::world::MpiWorld;
use rma_core::{BasicType, Disp, Error, Layout, Rank, Result};
use rma_mpi_sys::{Api, Call, Handle};
use std::ffi::c_int;
use std::marker::PhantomData;

pub use rma_core::Flavor;

/// Where a call lands: a target rank, a displacement in units of the target window's
/// disp_unit, and the layout of the target elements relative to it (contiguous when
/// `None`, as many bytes as the origin holds).
#[derive(Clone, Copy)]
pub struct MpiTargetSpec<'l> {
    /// The target rank; [`Rank::NULL`] makes the call do nothing (MPI_PROC_NULL).
    pub rank: Rank,
    /// The target displacement.
    pub disp: Disp,
    /// The target layout, as byte runs relative to the displacement.
    pub layout: Option<&'l dyn Layout>,
}

impl<'l> MpiTargetSpec<'l> {
    /// Contiguous elements at `disp` of `rank`'s window.
    pub fn contiguous(rank: Rank, disp: Disp) -> MpiTargetSpec<'l> {
        MpiTargetSpec {
            rank,
            disp,
            layout: None,
        }
    }

    /// Elements laid out by `layout` (strided, indexed, ...) from `disp` on.
    pub fn with_layout(rank: Rank, disp: Disp, layout: &'l dyn Layout) -> MpiTargetSpec<'l> {
        MpiTargetSpec {
            rank,
            disp,
            layout: Some(layout),
        }
    }
}

impl std::fmt::Debug for MpiTargetSpec<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiTargetSpec")
            .field("rank", &self.rank)
            .field("disp", &self.disp)
            .field("layout_bytes", &self.layout.map(|l| l.size()))
            .finish()
    }
}

/// A byte-addressed target region with its layout, as both API levels resolve it.
#[derive(Clone, Copy)]
pub(crate) struct Spot<'l> {
    pub(crate) rank: Rank,
    pub(crate) byte: usize,
    pub(crate) layout: Option<&'l dyn Layout>,
}

/// One rank's size and displacement unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Peer {
    pub(crate) len: usize,
    pub(crate) disp_unit: usize,
    /// The MPI displacement of byte 0 of the rank's window: 0, except for a dynamic
    /// window, whose displacements are addresses (its arena's, MPI_Get_address).
    pub(crate) base: usize,
}

/// An MPI window over this world: memory each rank exposes, with MPI's RMA calls and
/// synchronization.
///
/// Created and freed collectively by every rank. Data calls take `&self` and may come
/// from any thread (MPI_THREAD_MULTIPLE, or serialized by the [`MpiWorld`]); the calls
/// that open or close epochs take `&mut self`, so no data call runs while an epoch
/// changes, and a [`MpiRequest`](crate::MpiRequest) borrows the window until it completes.
///
/// Every call checks what MPI would leave undefined — ranks, the target range against
/// the target's window size, element sizes, op x type validity, the epoch — before
/// the library sees it; such an error has changed nothing. Errors the library raises
/// keep its MPI error class.
///
/// Completion: put and accumulate copy their origin data and return once MPI has the
/// call; the window keeps the copy until a synchronization completes the call (a
/// flush of the target, the closing call of the epoch; in a passive-target epoch at
/// most a bounded number are kept before MPI_Win_flush_local_all completes them).
/// Fetching calls (get, get_accumulate, fetch_and_op, compare_and_swap) need a
/// passive-target epoch and complete with MPI_Win_flush of their target before they
/// return, so their results are in place; a flush of a target with nothing issued to
/// it since is then skipped (see `pending.rs`). In an active-target epoch (fence,
/// start) fetching calls are refused (class RMA_SYNC), since MPI delivers their
/// results only at the closing call.
#[doc(alias = "MPI_Win")]
pub struct MpiWindow<'a> {
    pub(crate) world: &'a MpiWorld,
    pub(crate) win: Handle,
    base: *mut u8,
    len: usize,
    /// Bytes from `base` that belong to the allocation holding the window (`len` or
    /// more: the 64-byte lines asked of the library, a buffer's capacity, the rest of
    /// a dynamic window's arena). The local copies take whole words inside it as
    /// words, and the bytes of a word that sticks out one by one.
    extent: usize,
    disp_unit: usize,
    pub(crate) flavor: Flavor,
    peers: Box<[Peer]>,
    /// A shared window's parts: every rank's first byte in this process
    /// (MPI_Win_shared_query); empty for other flavors.
    shared: Box<[usize]>,
    /// A dynamic window's arena (the memory regions are attached from; `base` points
    /// into it, 64-byte aligned) and its MPI address; leaked if the window cannot be
    /// freed, as MPI may still reach it.
    arena: Option<Vec<u64>>,
    arena_addr: usize,
    /// Regions still attached when the window is freed: detached after the free's
    /// agreement, before MPI_Win_free.
    regions_left: Vec<usize>,
    pub(crate) epochs: MpiEpochs,
    /// Origin copies MPI may still read, and the targets a flush must complete.
    pub(crate) pending: Pending,
    /// The buffer a window created by [`MpiWindow::create`] exposes.
    owned: Option<Vec<u8>>,
    freed: bool,
    /// The window's number in its world (the agreement before its fences and free).
    number: u32,
    _borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: `base` points to the window's memory, which MPI (allocate) or this window
// (create) owns for the window's life and which is only reached through MPI calls and
// the bounds-checked, word-atomic copies of read_local/write_local (so two threads
// copying at once is no data race); every MPI call may come from
// any thread, because the MpiWorld required MPI_THREAD_MULTIPLE or serializes calls
// itself, or (a world below SERIALIZED, asked for) refuses every call from a thread
// other than the initializing one before MPI sees it; the epoch state changes only
// under `&mut self`; `pending` is atomics and state updated in the world's turn.
unsafe impl Send for MpiWindow<'_> {}
// SAFETY: as for Send: shared access only issues MPI calls (thread-safe, see above),
// copies local window memory with atomic accesses (read_local/write_local), reads the
// epoch state (not written while shared) and updates `pending` (atomics, and copies
// and landings only in the world's turn).
unsafe impl Sync for MpiWindow<'_> {}

impl std::fmt::Debug for MpiWindow<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiWindow")
            .field("rank", &self.world.rank())
            .field("len", &self.len)
            .field("disp_unit", &self.disp_unit)
            .field("flavor", &self.flavor)
            .field("epochs", &self.epochs)
            .finish()
    }
}

impl<'a> MpiWindow<'a> {
    /// `rank`'s part of this shared window in this process: its first byte, or `None`
    /// for another flavor or a rank outside the window. It holds
    /// [`MpiWindow::len_of`]`(rank)` bytes (within the 64-byte multiple the rank
    /// asked the library for).
    #[doc(alias = "MPI_Win_shared_query")]
    pub fn shared_ptr(&self, rank: usize) -> Option<*mut u8> {
        self.shared.get(rank).map(|&p| p as *mut u8)
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.world.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.world.size()
    }

    /// The world the window belongs to.
    pub fn world(&self) -> &'a MpiWorld {
        self.world
    }

    /// How the memory was obtained.
    #[doc(alias("MPI_Win_get_attr", "MPI_WIN_CREATE_FLAVOR"))]
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The local window's size in bytes.
    #[doc(alias("MPI_Win_get_attr", "MPI_WIN_SIZE"))]
    pub fn local_len(&self) -> usize {
        self.len
    }

    /// The local window's displacement unit.
    #[doc(alias("MPI_Win_get_attr", "MPI_WIN_DISP_UNIT"))]
    pub fn disp_unit(&self) -> usize {
        self.disp_unit
    }

    /// The local window's base address. Other ranks may write this memory at any
    /// time an epoch allows; read and write it through [`MpiWindow::read_local`] and
    /// [`MpiWindow::write_local`]. Accesses of your own through this pointer must
    /// follow MPI's rules and, while another thread may use the window, be atomic
    /// word accesses like rma's (`rma_ops::shared`): a plain copy racing another
    /// thread's `read_local` or `write_local` is a data race.
    #[doc(alias("MPI_Win_get_attr", "MPI_WIN_BASE"))]
    pub fn local_ptr(&self) -> *mut u8 {
        self.base
    }

    pub(crate) fn peer(&self, rank: Rank) -> Result<Peer> {
        let i = self.world.c_rank(rank)? as usize;
        Ok(self.peers[i])
    }

    /// The size in bytes of `rank`'s window.
    pub fn len_of(&self, rank: Rank) -> Result<usize> {
        Ok(self.peer(rank)?.len)
    }

    /// The displacement unit of `rank`'s window.
    pub fn disp_unit_of(&self, rank: Rank) -> Result<usize> {
        Ok(self.peer(rank)?.disp_unit)
    }

    fn local_range(&self, offset: usize, n: usize) -> Result<()> {
        match offset.checked_add(n) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::OutOfWindow {
                rank: Rank::new(self.rank() as u32),
                start: offset as i128,
                end: offset as i128 + n as i128,
                window_len: self.len,
            }),
        }
    }

    /// Copies `out.len()` bytes of the local window from byte `offset`. Bytes another
    /// rank writes concurrently (an erroneous conflict in MPI) read as unspecified
    /// values. Safe beside any other thread's calls: every access to the window's
    /// memory from Rust is word-atomic (see [`MpiWindow::write_local`]).
    pub fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.local_range(offset, out.len())?;
        if out.is_empty() {
            return Ok(()); // `base` may be null for an empty window
        }
        // SAFETY: `offset + out.len() <= len <= extent` (checked), so the source lies in
        // the allocation `[base, base + extent)`, which lives as long as `self`; `out`
        // is a distinct local slice. Every access to that memory from Rust goes through
        // `copy_in_within` / `copy_out_within` with these bounds (here and in
        // `write_local`; no reference to it is ever made), so two threads' copies are
        // atomic accesses of one size per byte and never a data race; the library's
        // own writes (a put applied in this process by a progress thread) are foreign
        // code's, which may race only as MPI calls erroneous, making bytes
        // unspecified, never the access out of bounds.
        unsafe {
            rma_ops::shared::copy_out_within(
                self.base.add(offset),
                out,
                self.base,
                self.base.add(self.extent),
            )
        };
        Ok(())
    }

    /// Copies `data` into the local window at byte `offset`. Use it where MPI allows
    /// local stores (outside exposure epochs, or with the window synchronized).
    ///
    /// `MpiWindow` is `Sync`, so two threads may copy at once: each 8-byte word of the
    /// window is stored with one atomic access (the bytes at the edges of the range
    /// are spliced into their word with a compare-and-swap), so a concurrent
    /// [`MpiWindow::read_local`] sees every whole word either before or after, never
    /// torn, and never a data race in Rust's sense.
    pub fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.local_range(offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: as in `read_local`, writing instead of reading.
        unsafe {
            rma_ops::shared::copy_in_within(
                self.base.add(offset),
                data,
                self.base,
                self.base.add(self.extent),
            )
        };
        Ok(())
    }

    /// The byte offset of `disp` in `rank`'s window.
    pub(crate) fn byte_of(&self, rank: Rank, disp: Disp) -> Result<usize> {
        let du = self.peer(rank)?.disp_unit;
        let disp_u = u64::try_from(disp).map_err(|_| Error::NegativeDisp { disp })?;
        disp_u
            .checked_mul(du as u64)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or(Error::DispOverflow {
                disp,
                disp_unit: du,
            })
    }

    pub(crate) fn spot<'l>(&self, t: MpiTargetSpec<'l>) -> Result<Spot<'l>> {
        Ok(Spot {
            rank: t.rank,
            byte: self.byte_of(t.rank, t.disp)?,
            layout: t.layout,
        })
    }

    /// The epoch index of `rank`, checked against the group.
    pub(crate) fn index(&self, rank: Rank) -> Result<usize> {
        Ok(self.world.c_rank(rank)? as usize)
    }

    pub(crate) fn mode(&self, rank: Rank, call: &'static str) -> Result<Mode> {
        self.epochs.mode(self.index(rank)?, call)
    }

    pub(crate) fn need_passive(&self, rank: Rank, call: &'static str) -> Result<()> {
        self.epochs.need_passive(self.index(rank)?, call)
    }

    pub(crate) fn placement(
        &self,
        spot: Spot<'_>,
        bytes: usize,
        basic: BasicType,
    ) -> Result<Placement<'a>> {
        let peer = self.peer(spot.rank)?;
        let region = Region {
            rank: spot.rank,
            byte: spot.byte,
            layout: spot.layout,
            window_len: peer.len,
            disp_unit: peer.disp_unit,
            base: peer.base,
        };
        place(self.world, region, bytes, basic)
    }

    /// Issues a call whose origin is a copy of `data` (`issue` gets the copy's
    /// address) and keeps the copy until a synchronization completes the call. In a
    /// passive-target epoch the target is marked for the next flush, and when the
    /// window holds too many copies they are all completed locally here.
    pub(crate) fn issue_copied(
        &self,
        rank: c_int,
        data: &[u8],
        mode: Mode,
        call: Call,
        issue: impl FnOnce(&Api, *const u8) -> c_int,
    ) -> Result<()> {
        let mark = self.pending.mark(rank);
        let keep = |c: &mut Copies| c.keep(rank, data);
        self.issue_copied_lazy(mark, keep, mode, || call, issue)
    }

    /// [`MpiWindow::issue_copied`] with the error context built only if the call fails,
    /// the target's dirty mark given (a target handle keeps it), and the copy made by
    /// `keep` ([`Copies::keep`] or [`Copies::keep_bits`] for the call's target).
    /// `issue` runs in the world's turn with the copy kept in the same turn; it must
    /// make its MPI call through the `Api` it is given.
    #[inline(always)]
    pub(crate) fn issue_copied_lazy(
        &self,
        mark: Mark<'_>,
        keep: impl FnOnce(&mut Copies) -> (*const u8, bool),
        mode: Mode,
        call: impl FnOnce() -> Call,
        issue: impl FnOnce(&Api, *const u8) -> c_int,
    ) -> Result<()> {
        let mut full = false;
        let rc = self.world.mpi_turned(
            self.pending.turned(),
            #[inline(always)]
            |api, copies| {
                let (origin, f) = keep(copies);
                full = f;
                issue(api, origin)
            },
        );
        if rc != 0 {
            return self.issue_failed(rc, call);
        }
        if mode == Mode::Passive {
            mark.set();
            if full {
                return self.flush_every_now(true);
            }
        }
        Ok(())
    }

    /// The error of a call [`MpiWindow::issue_copied_lazy`] issued (MPI returned `rc`).
    #[cold]
    #[inline(never)]
    fn issue_failed(&self, rc: c_int, call: impl FnOnce() -> Call) -> Result<()> {
        self.world.check(rc, call())
    }

    /// `Ok` unless calls issued after a fence still wait for the fence that completes
    /// them: another kind of epoch may not start over them (and their origin copies
    /// must stay alive until that fence).
    pub(crate) fn check_fence_drained(&mut self, call: &'static str) -> Result<()> {
        if self.epochs.fence_open() && self.pending.has_copies() {
            return Err(Error::sync(
                call,
                "calls issued since the last fence are completed only by the next fence; fence first",
            ));
        }
        Ok(())
    }

    pub(crate) fn handle(&self) -> Handle {
        self.win
    }

    /// Collectively frees the window (MPI_Win_free), first closing the epochs this rank
    /// still holds (unlock, unlock_all, complete, wait). Returns the buffer of a window
    /// made by [`MpiWindow::create`]; `None` otherwise.
    #[doc(alias = "MPI_Win_free")]
    pub fn free(mut self) -> Result<Option<Vec<u8>>> {
        self.release(false)
    }

    /// [`MpiWindow::free`] for a wrapper's own `Drop`: the same collective, but a
    /// mismatch names it as a window dropped without being freed (an early return),
    /// as a drop of this window would. The error says whether MPI freed it.
    #[doc(alias = "MPI_Win_free")]
    pub fn free_on_drop(mut self) -> Result<Option<Vec<u8>>> {
        self.release(true)
    }

    /// The window's number in its world, counting from 0 in creation order (the same
    /// on every rank); error messages about collectives name windows by it.
    pub fn number(&self) -> u32 {
        self.number
    }

    fn close_epochs(&mut self) -> Result<()> {
        let (ranks, all) = self.epochs.held();
        for r in ranks {
            self.unlock(Rank::new(r as u32))?;
        }
        if all {
            self.unlock_all()?;
        }
        let (access, exposure) = self.epochs.pscw();
        if access {
            self.complete()?;
        }
        if exposure {
            self.wait()?;
        }
        Ok(())
    }

    fn release(&mut self, dropped: bool) -> Result<Option<Vec<u8>>> {
        if std::mem::replace(&mut self.freed, true) {
            return Ok(None);
        }
        let closed = self.close_epochs();
        let rc = {
            let _one = self.world.collective();
            let entry = Entry::Free {
                win: self.number,
                dropped,
            };
            if let Err(e) = self.world.agree(entry) {
                // the ranks are not all freeing it: never free it, keep its memory
                std::mem::forget(self.owned.take());
                std::mem::forget(self.arena.take());
                self.pending.leak();
                return Err(e);
            }
            for offset in std::mem::take(&mut self.regions_left) {
                let _ = self.detach_region(offset);
            }
            // SAFETY: the window is live and freed once (guarded by `freed`); no
            // request borrows it (`&mut self`).
            self.world.mpi(|api| unsafe { (api.win_free)(self.win) })
        };
        if rc != 0 {
            // MPI may still reach the memory: keep it (and the origin copies) forever
            std::mem::forget(self.owned.take());
            std::mem::forget(self.arena.take());
            self.pending.leak();
            self.world.check(rc, Call::new("MPI_Win_free"))?;
        }
        self.pending.closed(None);
        closed?;
        Ok(self.owned.take())
    }
}

impl Drop for MpiWindow<'_> {
    /// Frees the window like [`MpiWindow::free`], ignoring errors. Collective: every
    /// rank must drop (or free) its window. A rank that drops it while the others
    /// entered another collective (it returned early, say through `?`) does not wait
    /// for them: the agreement before the free fails on every rank, the window is
    /// leaked, and the job ends when the process exits ([`MpiWorld::barrier`]).
    ///
    /// While the thread panics the window is leaked instead (MPI_Win_free would wait
    /// for ranks that may never free theirs); the [`MpiWorld`] then aborts the job.
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.freed = true;
            std::mem::forget(self.owned.take());
            std::mem::forget(self.arena.take());
            self.pending.leak();
            return;
        }
        let _ = self.release(true);
    }
}
