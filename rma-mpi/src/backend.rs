//! A system MPI library as an rma backend ([`rma_core::Backend`]): a [`MpiWorld`] creates
//! [`EpochWindow`]s, each an rma window built over two MPI windows, with rma's epochs
//! built on MPI's passive-target calls.
//!
//! rma's calls return with their results in place and their origin buffers free, which
//! MPI grants only inside passive-target epochs. So both MPI windows of an rma window —
//! the data window (MPI displacement unit 1: rma passes byte offsets) and the control
//! window — stay inside `MPI_Win_lock_all(MPI_MODE_NOCHECK)` from creation to free,
//! and rma's own epochs are built over them:
//!
//! - fence: `MPI_Win_flush_all` on the data window, then the agreement on a fence of
//!   that window (a barrier that only the same window's fence matches);
//! - lock / unlock: a fair reader-writer ticket lock per rank in the control window
//!   (next ticket, ticket served, readers inside), taken with MPI's fetch_and_op on
//!   32-bit integers (which every library handles), released after `MPI_Win_flush`
//!   of the data window; requests are served in arrival order, as on rma-shm;
//! - post / start / complete / wait: per-pair counters in the control window,
//!   incremented by the poster (completer) with an accumulate and polled by the
//!   waiter; a rank that drops the window without freeing it sets its LEFT word, and a
//!   wait for its post or complete then ends with PROC_FAILED;
//! - local access: `MPI_Win_sync` around loads and stores of the local window (MPI's
//!   unified memory model).
//!
//! `rma-win` validates every call before it gets here (ranks, ranges, types, ops, the
//! epoch), so the data calls go straight to MPI: the epoch checks of [`MpiWindow`]'s
//! own API are not repeated ([`crate::transport`]'s `Trusted`).
//!
//! A waiter polls with MPI calls (so libraries whose targets need progress still make
//! it), yielding at first and then sleeping up to a millisecond between polls, so
//! waiting ranks leave the cores to ranks doing work.

use crate::agree::Entry;
use crate::target::MpiTarget;
use crate::transport::Trusted;
use crate::window::{MpiTargetSpec, MpiWindow};
use crate::world::MpiWorld;
use rma_core::{
    reached, region_covers, region_word, Assert, Backend, BasicType, Disp, Epochs, Error, Flavor,
    Info, LaunchMode, Op, Rank, Regions, Result, Services, Shape, WinInfo, REGIONS,
};
use rma_ops::Shadow;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// The transport of every window of an MPI world.
pub const MPI_TRANSPORT: &str = "mpi";

impl Services for MpiWorld {
    fn rank(&self) -> usize {
        MpiWorld::rank(self)
    }
    fn size(&self) -> usize {
        MpiWorld::size(self)
    }
    fn mode(&self) -> LaunchMode {
        LaunchMode::Mpi
    }
    fn barrier(&self) -> Result<()> {
        MpiWorld::barrier(self)
    }
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        MpiWorld::allgather(self, mine)
    }
    /// The launcher ends the job when a rank dies, so no peer is ever seen dead here.
    fn check_peers(&self) -> Result<()> {
        Ok(())
    }
    /// A word that stays zero: the launcher ends the job when a rank dies.
    fn failure_word(&self) -> &AtomicU32 {
        static WHOLE: AtomicU32 = AtomicU32::new(0);
        &WHOLE
    }
    fn check_failed(&self) -> Result<()> {
        Ok(())
    }
}

/// `Ok` when `info` names no transport or the mpi one.
fn check_transport(info: &WinInfo) -> Result<()> {
    match info.transport.as_deref() {
        None | Some(MPI_TRANSPORT) => Ok(()),
        Some(other) => Err(Error::Flavor {
            reason: format!(
                "under an MPI launcher every window uses the {MPI_TRANSPORT} transport: the \
                 {other} transport runs only in rma's own worlds; use rma_transport=mpi or \
                 name no transport"
            ),
        }),
    }
}

impl Backend for MpiWorld {
    type Window<'w> = EpochWindow<'w>;

    fn allocate(
        &self,
        len: usize,
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<EpochWindow<'_>> {
        check_transport(parsed)?;
        // displacement unit 1 on the MPI side: rma passes byte offsets
        let data = MpiWindow::allocate(self, len, 1, info)?;
        EpochWindow::new(self, None, data, disp_unit)
    }

    /// MPI_Win_create_dynamic over an arena of `capacity` bytes per rank; each rank's
    /// region table lives in the control window, where origins read it before a call.
    fn create_dynamic(
        &self,
        capacity: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<EpochWindow<'_>> {
        check_transport(parsed)?;
        let data = MpiWindow::create_dynamic(self, capacity, info)?;
        EpochWindow::new(self, None, data, 1)
    }

    /// MPI_Win_allocate_shared; class RMA_SHARED where the world spans several nodes
    /// ([`MpiWindow::allocate_shared`]).
    fn allocate_shared(
        &self,
        len: usize,
        disp_unit: usize,
        contiguous: bool,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<EpochWindow<'_>> {
        check_transport(parsed)?;
        let data = MpiWindow::allocate_shared(self, len, 1, contiguous, info)?;
        EpochWindow::new(self, None, data, disp_unit)
    }

    fn create<'w>(
        &'w self,
        buf: &'w mut [u8],
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<EpochWindow<'w>> {
        check_transport(parsed)?;
        let len = buf.len();
        let (shadow, base) = Shadow::new(buf);
        // SAFETY: `base` points to `len` bytes of the shadow's heap buffer, which the
        // EpochWindow built below owns and keeps (a Vec's heap memory does not move)
        // until it has freed the MPI window, and leaks if that free does not happen;
        // nothing else reaches those bytes meanwhile. If building the EpochWindow
        // fails, the MpiWindow is dropped (freed) before the shadow.
        let data = unsafe { MpiWindow::create_raw(self, base, len, 1, info)? };
        EpochWindow::new(self, Some(shadow), data, disp_unit)
    }
}

impl rma_core::Memory for EpochWindow<'_> {
    fn shapes(&self) -> Vec<Shape> {
        self.shapes.clone()
    }
    fn flavor(&self) -> Flavor {
        self.data().flavor()
    }
    fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        // let the library apply calls that wait for this rank, then make them visible
        // to the loads
        self.world.progress()?;
        self.data().sync()?;
        self.data().read_local(offset, out)
    }
    fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.data().sync()?;
        self.data().write_local(offset, data)?;
        self.data().sync()
    }
    fn sync(&self) -> Result<()> {
        self.data().sync()
    }
    fn attach(&self, data: &[u8]) -> Result<usize> {
        if self.data().flavor() != Flavor::Dynamic {
            return Err(Error::Flavor {
                reason: "attach needs a dynamic window (Window::create_dynamic)".into(),
            });
        }
        let mut regions = self
            .regions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (slot, at) = regions.place(data.len(), self.data().local_len())?;
        self.data().write_local(at, data)?;
        self.data().attach_region(at, data.len())?;
        // published only once attached: origins read the table before each call
        if let Err(e) = self.set_table(slot, region_word(at, data.len())) {
            let _ = self.data().detach_region(at);
            return Err(e);
        }
        regions.insert(slot, at, data.len());
        Ok(at)
    }
    fn detach(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        if self.data().flavor() != Flavor::Dynamic {
            return Err(Error::Flavor {
                reason: "detach needs a dynamic window (Window::create_dynamic)".into(),
            });
        }
        let mut regions = self
            .regions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let slot = regions.remove(offset, out.len())?;
        // unpublished first: origins that read the table from now on refuse the region;
        // if a step fails, the region stays attached and recorded (nothing changed)
        let len = out.len();
        let undone = |e: Error, regions: &mut Regions| {
            let _ = self.set_table(slot, region_word(offset, len));
            regions.insert(slot, offset, len);
            e
        };
        if let Err(e) = self.set_table(slot, 0) {
            return Err(undone(e, &mut regions));
        }
        // the contents first, while every step can still be undone
        if let Err(e) = rma_core::Memory::read_local(self, offset, out) {
            return Err(undone(e, &mut regions));
        }
        if let Err(e) = self.data().detach_region(offset) {
            return Err(undone(e, &mut regions));
        }
        Ok(())
    }
    fn attached(&self, rank: usize, start: usize, end: usize) -> Result<bool> {
        if self.data().flavor() != Flavor::Dynamic {
            return Ok(true);
        }
        // one element-atomic read of the target's table (get_accumulate NO_OP on u64,
        // atomic with the owner's REPLACE accumulates: no torn entries)
        let mut table = [0u8; 8 * REGIONS];
        self.ctl.get_accumulate(
            BasicType::U64,
            Op::NoOp,
            &[],
            &mut table,
            MpiTargetSpec::contiguous(Rank::new(rank as u32), self.table as Disp),
        )?;
        Ok(table.chunks_exact(8).any(|w| {
            region_covers(
                u64::from_ne_bytes(w.try_into().unwrap_or_default()),
                start,
                end,
            )
        }))
    }
    fn shared_segment(&self, rank: usize) -> Option<rma_core::RawSegment<'_>> {
        let shape = self.shapes.get(rank)?;
        let ptr = self.data().shared_ptr(rank)?;
        // an empty part may have no address: any non-null aligned one will do
        let ptr = if shape.len == 0 {
            std::ptr::NonNull::<u64>::dangling().as_ptr().cast::<u8>()
        } else {
            ptr
        };
        // SAFETY: MPI_Win_shared_query gave `ptr` for the rank's part, at least its
        // length rounded up to 64 bytes (asked of the library so), mapped in this
        // process until the data window is freed, which happens only when this
        // EpochWindow drops (it outlives the borrow of `self`). Under an MPI
        // launcher each rank is a process of its own with one rma-win window object
        // per window, which is neither Send nor Sync: the views and this rank's plain
        // read_local/write_local copies run on that one thread, never at the same
        // time. The library's writes come from other processes (or, for this rank's
        // own calls, from MPI calls this thread makes), outside Rust's memory model.
        Some(unsafe { rma_core::RawSegment::new(ptr, shape.len, shape.disp_unit) })
    }
}

impl Epochs for EpochWindow<'_> {
    /// Takes a ticket, waits for its turn, then (exclusive) waits for the shared
    /// holders to leave, or (shared) enters and passes the turn on at once.
    fn acquire_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        let ticket = self.fop(target, NEXT, Op::Sum, 1)? as u32;
        self.poll(|| Ok(self.read(target, SERVING)? == ticket))?;
        if exclusive {
            self.poll(|| Ok(self.read(target, READERS)? == 0))
        } else {
            self.add(target, READERS, 1)?;
            self.add(target, SERVING, 1)
        }
    }

    fn release_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        if exclusive {
            self.add(target, SERVING, 1)
        } else {
            self.add(target, READERS, -1)
        }
    }

    fn post_to(&self, origin: usize) -> Result<()> {
        self.data().sync()?; // local stores before the post are visible to the origin
        self.add(origin, self.posted(self.me), 1)
    }

    fn wait_posted(&self, target: usize, want: u32) -> Result<()> {
        self.wait_for(self.posted(target), want, target, "post")
    }

    fn complete_to(&self, target: usize) -> Result<()> {
        self.add(target, self.completed(self.me), 1)
    }

    fn wait_completed(&self, origin: usize, want: u32) -> Result<()> {
        self.wait_for(self.completed(origin), want, origin, "complete")?;
        self.data().sync()
    }

    fn has_completed(&self, origin: usize, want: u32) -> Result<bool> {
        let done = self.counted(self.completed(origin), want, origin, "complete")?;
        if done {
            self.data().sync()?;
        }
        Ok(done)
    }

    /// MPI's launcher ends the job when a rank dies.
    fn check_peers(&self) -> Result<()> {
        Ok(())
    }

    /// The agreement on a fence of the data window, which is a barrier itself (as the
    /// world's barrier is): only a fence on this same window matches it, where the
    /// world's barrier would match a peer's barrier; a peer in a barrier or in another
    /// window's fence or free breaks the world (PROC_FAILED on every rank).
    fn fence_barrier(&self) -> Option<Result<()>> {
        let _one = self.world.collective();
        Some(self.world.agree(Entry::Fence(self.data().number())))
    }

    /// Every rank's epochs are over. `MPI_Win_free`, the window's own collective,
    /// happens as the window drops, so that a rank that frees and one that only drops
    /// its window make the same collective calls; marking the window freed makes that
    /// free report as one.
    fn free(&mut self) -> Result<()> {
        self.freed.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// A dropped window's MPI free is collective: a peer waiting for this rank's post
    /// or complete would never reach it. Not on a broken world, where the free is
    /// skipped and every wait fails anyway (nothing may wait for peers that stopped
    /// making MPI calls).
    fn leaves_on_drop(&self) -> bool {
        !self.world.is_broken()
    }

    /// Sets this rank's own LEFT word (one call, whatever the ranks), so that a wait
    /// for this rank's post or complete ends with an error instead of waiting for a
    /// rank that sits in the window's free. Its completes were flushed before, so they
    /// are visible first.
    fn depart(&self) {
        let _ = self.add(self.me, LEFT, 1);
    }
}

macro_rules! trusted {
    ($self:expr, $t:ident => $call:expr) => {{
        let $t = Trusted($self.data());
        $call
    }};
}

rma_core::forward_transport!(['w] EpochWindow<'w>, trusted);

/// Control words of each rank: the lock's next ticket, the ticket being served, the
/// shared holders inside, and whether the rank left (dropped the window without
/// freeing it); then one posted and one completed counter per peer.
const NEXT: usize = 0;
const SERVING: usize = 1;
const READERS: usize = 2;
const LEFT: usize = 3;
const HEAD_WORDS: usize = 4;

/// An rma window over MPI: the data window and the control window, both kept in a
/// NOCHECK lock_all epoch for their whole life.
pub struct EpochWindow<'w> {
    /// The data window; `None` only while dropping (it is freed first).
    window: Option<MpiWindow<'w>>,
    ctl: MpiWindow<'w>,
    /// A dynamic window's regions on this rank (their table is in `ctl`, from word
    /// `table`: [`REGIONS`] u64 entries).
    regions: std::sync::Mutex<Regions>,
    table: usize,
    world: &'w MpiWorld,
    me: usize,
    ranks: usize,
    shapes: Vec<Shape>,
    /// A created window's memory: see [`Shadow`].
    shadow: Option<Shadow<'w>>,
    /// Set by [`Epochs::free`]: the MPI free as the window drops is then reported as a
    /// free, not as a window dropped without one.
    freed: std::sync::atomic::AtomicBool,
}

impl Drop for EpochWindow<'_> {
    fn drop(&mut self) {
        // Free the MPI window (collectively) first: nothing reaches the copy after it.
        // If it was not freed (the free failed, or the ranks entered different
        // collectives and the window was leaked), other ranks may still write into the
        // copy: it stays leaked (`Shadow`'s drop) and the buffer keeps its old contents.
        // While panicking the MPI window leaks itself and reports no error: the same.
        let explicit = self.freed.load(std::sync::atomic::Ordering::Relaxed);
        // MPI frees a dynamic window's attached regions with it, but Open MPI 4's
        // osc/ucx segfaults in MPI_Win_free when any are left: the free detaches them
        // (once every rank agreed to free, so no peer's epoch still reaches them)
        let left = self
            .regions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain();
        let freed = match self.window.take() {
            Some(mut w) if !std::thread::panicking() => {
                w.detach_at_free(left);
                if explicit { w.free() } else { w.free_on_drop() }.is_ok()
            }
            _ => false,
        };
        if freed {
            if let Some(sh) = self.shadow.as_mut() {
                sh.copy_back();
            }
        }
    }
}

impl std::fmt::Debug for EpochWindow<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EpochWindow")
            .field("data", &self.window)
            .field("ranks", &self.ranks)
            .finish()
    }
}

impl<'w> EpochWindow<'w> {
    /// `rank` of this window resolved once, for data calls that rma-win has already
    /// checked (its target handles): see [`MpiTarget`]. Class RANK for a rank outside
    /// the window.
    pub fn target(&self, rank: rma_core::Rank) -> Result<MpiTarget<'_>> {
        MpiTarget::new(self.data(), rank)
    }

    /// Completes a freshly created data window (displacement unit 1) whose ranks use
    /// `disp_unit`: the control window, the lock_all epochs, every rank's shape.
    ///
    /// `shadow` is declared before `data`: on an early return parameters drop in
    /// reverse order, so the MPI window is freed before the memory it exposes.
    fn new(
        world: &'w MpiWorld,
        shadow: Option<Shadow<'w>>,
        mut data: MpiWindow<'w>,
        disp_unit: usize,
    ) -> Result<EpochWindow<'w>> {
        let ranks = world.size();
        let table = HEAD_WORDS + 2 * ranks;
        let words = table
            + if data.flavor() == Flavor::Dynamic {
                2 * REGIONS
            } else {
                0
            };
        let mut ctl = MpiWindow::allocate(world, 4 * words, 4, &rma_core::Info::new())?;
        data.lock_all(Assert::NOCHECK)?;
        ctl.lock_all(Assert::NOCHECK)?;
        let mut mine = [0u8; 16];
        mine[..8].copy_from_slice(&(disp_unit as u64).to_le_bytes());
        mine[8..].copy_from_slice(&(data.local_ptr() as usize as u64).to_le_bytes());
        let all = world.allgather(&mine)?;
        let mut shapes = Vec::with_capacity(ranks);
        for (r, bytes) in all.iter().enumerate() {
            let word = |i: usize| {
                bytes
                    .get(8 * i..8 * i + 8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes)
                    .ok_or_else(|| Error::arg(format!("rank {r} sent a malformed window shape")))
            };
            shapes.push(Shape {
                len: data.len_of(Rank::new(r as u32))?,
                disp_unit: word(0)? as usize,
                addr: word(1)? as usize,
            });
        }
        Ok(EpochWindow {
            window: Some(data),
            ctl,
            regions: std::sync::Mutex::new(Regions::default()),
            table,
            world,
            me: world.rank(),
            ranks,
            shapes,
            shadow,
            freed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Writes `word` into this rank's region-table slot `slot` with an accumulate
    /// (REPLACE on u64), complete when it returns: element-atomic with the origins'
    /// reads of the table ([`rma_core::Memory::attached`]).
    fn set_table(&self, slot: usize, word: u64) -> Result<()> {
        let me = Rank::new(self.me as u32);
        self.ctl.accumulate(
            BasicType::U64,
            Op::Replace,
            &word.to_ne_bytes(),
            MpiTargetSpec::contiguous(me, (self.table + 2 * slot) as Disp),
        )?;
        self.ctl.flush(me)
    }

    /// The data window.
    fn data(&self) -> &MpiWindow<'w> {
        self.window
            .as_ref()
            .expect("the data window lives until EpochWindow drops")
    }

    fn posted(&self, from: usize) -> usize {
        HEAD_WORDS + from
    }

    fn completed(&self, from: usize) -> usize {
        HEAD_WORDS + self.ranks + from
    }

    /// Whether this rank's control word `word` reached `want`, written by `peer` (its
    /// post or complete, `what`); PROC_FAILED naming `peer` if it is short and `peer`
    /// left. The counter is read again after LEFT is seen: a peer's last adds were
    /// flushed before it set LEFT, so a counter short then will stay short.
    fn counted(&self, word: usize, want: u32, peer: usize, what: &str) -> Result<bool> {
        if reached(self.read(self.me, word)?, want) {
            return Ok(true);
        }
        if self.read(peer, LEFT)? == 0 {
            return Ok(false);
        }
        if reached(self.read(self.me, word)?, want) {
            return Ok(true);
        }
        Err(Error::ProcFailed {
            rank: Rank::new(peer as u32),
            reason: format!(
                "it dropped the window without freeing it (an early return?) while this rank \
                 waits for its {what}"
            ),
        })
    }

    /// fetch_and_op on control word `word` of `target`: the old value.
    fn fop(&self, target: usize, word: usize, op: Op, value: i32) -> Result<i32> {
        let origin = value.to_ne_bytes();
        let src: &[u8] = if op == Op::NoOp { &[] } else { &origin };
        let mut out = [0u8; 4];
        self.ctl.fetch_and_op(
            BasicType::I32,
            op,
            src,
            &mut out,
            Rank::new(target as u32),
            word as Disp,
        )?;
        Ok(i32::from_ne_bytes(out))
    }

    /// Adds `value` to control word `word` of `target`, complete at the target when
    /// this returns.
    fn add(&self, target: usize, word: usize, value: i32) -> Result<()> {
        let v = value.to_ne_bytes();
        self.ctl.accumulate(
            BasicType::I32,
            Op::Sum,
            &v,
            MpiTargetSpec::contiguous(Rank::new(target as u32), word as Disp),
        )?;
        self.ctl.flush(Rank::new(target as u32))
    }

    fn read(&self, target: usize, word: usize) -> Result<u32> {
        Ok(self.fop(target, word, Op::NoOp, 0)? as u32)
    }

    /// Polls until `probe` says done: yields for the first few polls, then sleeps,
    /// doubling up to 1 ms. Ends with the world's error if the world breaks meanwhile
    /// (ranks entered different collectives: rma_mpi's `MpiWorld::barrier`).
    fn poll(&self, mut probe: impl FnMut() -> Result<bool>) -> Result<()> {
        let (mut pause, mut yields) = (Duration::from_micros(2), 0);
        while !probe()? {
            self.world.check_broken()?;
            if yields < 8 {
                yields += 1;
                std::thread::yield_now();
            } else {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(1));
            }
        }
        Ok(())
    }

    /// Waits until control word `word` of this rank reaches `want`, written by `peer`
    /// (its post or complete, `what`); ends with an error if `peer` left the window.
    fn wait_for(&self, word: usize, want: u32, peer: usize, what: &str) -> Result<()> {
        self.poll(|| self.counted(word, want, peer, what))
    }
}
