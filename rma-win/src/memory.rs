//! Where a window's memory lives and how its epochs synchronize: rma's shared memory
//! (rma-shm: lock words, post and complete counters in the window's sync area), or a
//! system MPI library's windows (rma-mpi), where the same primitives are built on a
//! small control window.
//!
//! # The MPI side
//!
//! rma's calls return with their results in place and their origin buffers free, which
//! MPI grants only inside passive-target epochs. So both MPI windows of an rma window —
//! the data window (MPI displacement unit 1: rma passes byte offsets) and the control
//! window — stay inside `MPI_Win_lock_all(MPI_MODE_NOCHECK)` from creation to free,
//! and rma's own epochs are built over them:
//!
//! - fence: `MPI_Win_flush_all` on the data window, then `MPI_Barrier`;
//! - lock / unlock: a fair reader-writer ticket lock per rank in the control window
//!   (next ticket, ticket served, readers inside), taken with MPI's fetch_and_op on
//!   32-bit integers (which every library handles), released after `MPI_Win_flush`
//!   of the data window; requests are served in arrival order, as on rma-shm;
//! - post / start / complete / wait: per-pair counters in the control window,
//!   incremented by the poster (completer) with fetch_and_op and polled by the waiter;
//!   a rank that drops the window without freeing it sets its LEFT word, and a wait
//!   for its post or complete then ends with PROC_FAILED;
//! - local access: `MPI_Win_sync` around loads and stores of the local window (MPI's
//!   unified memory model).
//!
//! A waiter polls with MPI calls (so libraries whose targets need progress still make
//! it), yielding at first and then sleeping up to a millisecond between polls, so
//! waiting ranks leave the cores to ranks doing work.

use rma_core::{Assert, BasicType, Disp, Error, Op, Rank, Result};
use rma_mpi::{MpiWindow, Target};
use rma_shm::{reached, Flavor, Liveness, WindowMemory};
use std::sync::Arc;
use std::time::Duration;

/// The shape of one rank's window, as every rank sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Window size in bytes.
    pub(crate) len: usize,
    /// Displacement unit.
    pub(crate) disp_unit: usize,
    /// Address of the window's first byte in its owner's address space (alignment
    /// checks: a created window may start unaligned).
    pub(crate) addr: usize,
}

/// A window's memory and epoch primitives.
#[derive(Debug)]
pub(crate) enum Memory<'w> {
    Shm {
        mem: Arc<WindowMemory>,
        liveness: Liveness,
        /// A window created over a caller's buffer (every launch mode): see
        /// [`Shadow`].
        shadow: Option<Shadow<'w>>,
    },
    Mpi(Arc<MpiSide<'w>>),
}

impl Memory<'_> {
    /// Every rank's window shape.
    pub(crate) fn shapes(&self) -> Vec<Shape> {
        match self {
            Memory::Shm { mem, .. } => (0..mem.ranks())
                .map(|r| Shape {
                    len: mem.len_of(r),
                    disp_unit: mem.disp_unit_of(r),
                    addr: mem.base_addr(r),
                })
                .collect(),
            Memory::Mpi(m) => m.shapes.clone(),
        }
    }

    pub(crate) fn flavor(&self) -> Flavor {
        match self {
            Memory::Shm { mem, .. } => mem.flavor(),
            Memory::Mpi(m) => match m.data().flavor() {
                rma_mpi::Flavor::Allocate => Flavor::Allocate,
                rma_mpi::Flavor::Create => Flavor::Create,
            },
        }
    }

    /// After the collective free: a created window's copy
    /// goes back into the caller's buffer. Under MPI that happens when the MPI window
    /// is freed, as the window drops.
    pub(crate) fn copy_back(&mut self) {
        if let Memory::Shm {
            shadow: Some(sh), ..
        } = self
        {
            sh.copy_back();
        }
    }

    pub(crate) fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        match self {
            Memory::Shm { mem, .. } => mem.read_local(offset, out),
            Memory::Mpi(m) => {
                // let the library apply calls that wait for this rank, then make them
                // visible to the loads
                m.progress()?;
                m.data().sync()?;
                m.data().read_local(offset, out)
            }
        }
    }

    pub(crate) fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        match self {
            Memory::Shm { mem, .. } => mem.write_local(offset, data),
            Memory::Mpi(m) => {
                m.data().sync()?;
                m.data().write_local(offset, data)?;
                m.data().sync()
            }
        }
    }

    /// Takes `target`'s lock (shared or exclusive), waiting until it is granted.
    pub(crate) fn acquire_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        match self {
            Memory::Shm { mem, liveness, .. } => mem.acquire_lock(target, exclusive, liveness),
            Memory::Mpi(m) => m.acquire_lock(target, exclusive),
        }
    }

    /// Releases `target`'s lock; every call to it must be complete.
    pub(crate) fn release_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        match self {
            Memory::Shm { mem, .. } => mem.release_lock(target, exclusive),
            Memory::Mpi(m) => m.release_lock(target, exclusive),
        }
    }

    /// Tells `origin` that this rank's window is exposed to it (post).
    pub(crate) fn post_to(&self, origin: usize) -> Result<()> {
        match self {
            Memory::Shm { mem, .. } => {
                mem.post_to(origin);
                Ok(())
            }
            Memory::Mpi(m) => {
                m.data().sync()?; // local stores before the post are visible to the origin
                m.add(origin, m.posted(m.me), 1)
            }
        }
    }

    /// Waits until `target` has posted to this rank `want` times in all.
    pub(crate) fn wait_posted(&self, target: usize, want: u32) -> Result<()> {
        match self {
            Memory::Shm { mem, liveness, .. } => mem.wait_posted(target, want, liveness),
            Memory::Mpi(m) => m.wait_for(m.posted(target), want, target, "post"),
        }
    }

    /// Tells `target` that this rank's access epoch to it is complete; every call to
    /// it must be complete.
    pub(crate) fn complete_to(&self, target: usize) -> Result<()> {
        match self {
            Memory::Shm { mem, .. } => {
                mem.complete_to(target);
                Ok(())
            }
            Memory::Mpi(m) => m.add(target, m.completed(m.me), 1),
        }
    }

    /// Waits until `origin` has completed to this rank `want` times in all.
    pub(crate) fn wait_completed(&self, origin: usize, want: u32) -> Result<()> {
        match self {
            Memory::Shm { mem, liveness, .. } => mem.wait_completed(origin, want, liveness),
            Memory::Mpi(m) => {
                m.wait_for(m.completed(origin), want, origin, "complete")?;
                m.data().sync()
            }
        }
    }

    /// Whether `origin` has completed to this rank `want` times in all; never blocks.
    pub(crate) fn has_completed(&self, origin: usize, want: u32) -> Result<bool> {
        match self {
            Memory::Shm { mem, .. } => mem.has_completed(origin, want),
            Memory::Mpi(m) => {
                let done = m.counted(m.completed(origin), want, origin, "complete")?;
                if done {
                    m.data().sync()?;
                }
                Ok(done)
            }
        }
    }

    /// `Err(ProcFailed)` if a peer died (rma worlds; MPI's launcher ends the job).
    pub(crate) fn check_peers(&self) -> Result<()> {
        match self {
            Memory::Shm { liveness, .. } => liveness.check(),
            Memory::Mpi(_) => Ok(()),
        }
    }

    /// Synchronizes this rank's view of its window with other ranks' (MPI_Win_sync).
    pub(crate) fn sync(&self) -> Result<()> {
        match self {
            Memory::Shm { .. } => {
                std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
            Memory::Mpi(m) => m.data().sync(),
        }
    }
}

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
pub(crate) struct MpiSide<'w> {
    /// The data window; `None` only while dropping (it is freed first).
    window: Option<MpiWindow<'w>>,
    ctl: MpiWindow<'w>,
    world: &'w rma_mpi::World,
    me: usize,
    ranks: usize,
    shapes: Vec<Shape>,
    /// A created window's memory: see [`Shadow`].
    shadow: Option<Shadow<'w>>,
    /// Set by [`Window::free`](crate::Window::free): the MPI free as the memory drops
    /// is then reported as a free, not as a window dropped without one.
    freed: std::sync::atomic::AtomicBool,
}

/// The memory a window created over a caller's buffer really exposes when other ranks
/// could otherwise write into the buffer itself: a 64-byte aligned heap copy, copied
/// back into the buffer once every rank is done with the window (a collective free).
///
/// - Under MPI: MPICH 4.0 does not reach windows created at addresses that are not
///   16-byte aligned (calls land elsewhere, fetches return other memory, the process
///   gets corrupted; reproduced in C with a heap buffer at offset 8).
/// - On rma's shared memory, in every launch mode: other ranks write into the window's
///   memory (threads directly, the queued transport's progress thread for processes).
///   Were that the caller's buffer, a window dropped or forgotten without its
///   collective free (an early `?` return, `mem::forget`) would end the borrow while
///   they still write: a use after free or a data race in safe code. A copy that is
///   never copied back is leaked instead, so late writes land in memory nobody else
///   uses.
///
/// The buffer is reachable only through the window while it lives, so the copy is not
/// observable — except that the window's alignment is the copy's, which rma's
/// alignment checks use, and that a window dropped without being freed leaves the
/// buffer as it was.
pub(crate) struct Shadow<'w> {
    heap: Vec<u8>,
    pad: usize,
    buf: &'w mut [u8],
    returned: bool,
}

impl<'w> Shadow<'w> {
    /// A copy of `buf`, and the address of its first byte.
    pub(crate) fn new(buf: &'w mut [u8]) -> (Shadow<'w>, *mut u8) {
        // 64-byte aligned, and whole 8-byte words past the end: window memory is
        // accessed in aligned words (rma_ops::shared)
        let mut heap = vec![0u8; buf.len() + 128];
        let pad = (64 - heap.as_ptr() as usize % 64) % 64;
        heap[pad..pad + buf.len()].copy_from_slice(buf);
        let base = heap[pad..].as_mut_ptr();
        let returned = false;
        (
            Shadow {
                heap,
                pad,
                buf,
                returned,
            },
            base,
        )
    }

    /// Copies the window's memory back into the buffer. Only once no rank can reach
    /// the copy any more (after the collective free); afterwards the copy is freed
    /// with the shadow instead of leaked.
    pub(crate) fn copy_back(&mut self) {
        let n = self.buf.len();
        let src = self.heap[self.pad..self.pad + n].as_ptr();
        // SAFETY: `src` is `n` bytes of the heap copy, which holds whole aligned words
        // around them (64-byte aligned start, 128 bytes of slack); the window's other
        // accesses to it were word atomics, and so is this copy (rma_ops::shared).
        unsafe { rma_ops::shared::copy_out(src, self.buf) };
        self.returned = true;
    }
}

impl Drop for Shadow<'_> {
    fn drop(&mut self) {
        if !self.returned {
            // other ranks may still write into it: keep it for the process's life
            std::mem::forget(std::mem::take(&mut self.heap));
        }
    }
}

impl std::fmt::Debug for Shadow<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shadow")
            .field("len", &self.buf.len())
            .field("returned", &self.returned)
            .finish()
    }
}

impl Drop for MpiSide<'_> {
    fn drop(&mut self) {
        // Free the MPI window (collectively) first: nothing reaches the copy after it.
        // If it was not freed (the free failed, or the ranks entered different
        // collectives and the window was leaked), other ranks may still write into the
        // copy: it stays leaked (`Shadow`'s drop) and the buffer keeps its old contents.
        // While panicking the MPI window leaks itself and reports no error: the same.
        let explicit = self.freed.load(std::sync::atomic::Ordering::Relaxed);
        let freed = match self.window.take() {
            Some(w) if !std::thread::panicking() => {
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

impl std::fmt::Debug for MpiSide<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiSide")
            .field("data", &self.window)
            .field("ranks", &self.ranks)
            .finish()
    }
}

impl<'w> MpiSide<'w> {
    /// Completes a freshly created data window (displacement unit 1) whose ranks use
    /// `disp_unit`: the control window, the lock_all epochs, every rank's shape.
    ///
    /// `shadow` is declared before `data`: on an early return parameters drop in
    /// reverse order, so the MPI window is freed before the memory it exposes.
    pub(crate) fn new(
        world: &'w rma_mpi::World,
        shadow: Option<Shadow<'w>>,
        mut data: MpiWindow<'w>,
        disp_unit: usize,
    ) -> Result<MpiSide<'w>> {
        let ranks = world.size();
        let words = HEAD_WORDS + 2 * ranks;
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
        Ok(MpiSide {
            window: Some(data),
            ctl,
            world,
            me: world.rank(),
            ranks,
            shapes,
            shadow,
            freed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The data window.
    pub(crate) fn data(&self) -> &MpiWindow<'w> {
        self.window
            .as_ref()
            .expect("the data window lives until MpiSide drops")
    }

    fn posted(&self, from: usize) -> usize {
        HEAD_WORDS + from
    }

    fn completed(&self, from: usize) -> usize {
        HEAD_WORDS + self.ranks + from
    }

    /// This rank drops the window without freeing it: sets its own LEFT word (one
    /// call, whatever the ranks), so that a wait for this rank's post or complete
    /// ends with an error instead of waiting for a rank that sits in the window's
    /// free. Its completes were flushed before, so they are visible first.
    /// Whether the world broke (its ranks entered different collectives).
    pub(crate) fn broken(&self) -> bool {
        self.world.is_broken()
    }

    /// [`Window::free`](crate::Window::free) was called: every rank's epochs are over.
    pub(crate) fn mark_freed(&self) {
        self.freed.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn depart(&self) {
        let _ = self.add(self.me, LEFT, 1);
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

    fn progress(&self) -> Result<()> {
        self.world.progress()
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
            Target::contiguous(Rank::new(target as u32), word as Disp),
        )?;
        self.ctl.flush(Rank::new(target as u32))
    }

    fn read(&self, target: usize, word: usize) -> Result<u32> {
        Ok(self.fop(target, word, Op::NoOp, 0)? as u32)
    }

    /// Polls until `probe` says done: yields for the first few polls, then sleeps,
    /// doubling up to 1 ms. Ends with the world's error if the world breaks meanwhile
    /// (ranks entered different collectives: rma_mpi's `World::barrier`).
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
}
