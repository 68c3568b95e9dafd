//! rma's shared-memory worlds as an rma backend ([`rma_core::Backend`]): a [`ShmWorld`]
//! creates [`ShmWindow`]s, which carry the window's memory, its epoch primitives
//! (lock words, post and complete counters in the window's sync area) and one of the
//! two transports, `atomic` or `queued`.

use crate::world::Collective;
use crate::{AtomicTransport, Liveness, MemoryOptions, QueuedTransport, ShmWorld, WindowMemory};
use rma_core::{Backend, Error, Flavor, Info, LaunchMode, Result, Services, Shape, WinInfo};
use rma_ops::Shadow;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// The transports of windows in rma's own worlds.
pub const TRANSPORTS: &[&str] = &["atomic", "queued"];

/// Which of the two transports a window uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Atomic,
    Queued,
}

/// One window on rma's shared memory: its transport, its memory and the liveness of
/// its world's ranks.
#[derive(Debug)]
pub struct ShmWindow<'w> {
    /// Before `mem`: the queued transport's progress thread stops (dropping joins it)
    /// before the memory it writes into goes.
    transport: ShmTransport,
    mem: Arc<WindowMemory>,
    liveness: Liveness,
    /// A window created over a caller's buffer: the copy it exposes (after `mem`, so
    /// the mappings go first; leaked unless [`rma_core::Epochs::free`] put it back).
    shadow: Option<Shadow<'w>>,
}

#[derive(Debug)]
enum ShmTransport {
    Atomic(AtomicTransport),
    Queued(QueuedTransport),
    /// After [`rma_core::Epochs::free`] set this rank's free mark: a peer may pass its
    /// own free once every mark is set and drop its window and the memory a created
    /// window exposed, whatever this rank's free returned; a data call now could reach
    /// freed memory, so every one is refused.
    Freed(Freed),
}

/// The transport of a freed window: refuses every call (class WIN).
#[derive(Debug)]
struct Freed {
    name: &'static str,
    /// The free returned `Ok` (every rank passed it); `false` while it failed after
    /// this rank's mark was set, when only another free may follow.
    done: bool,
}

impl Freed {
    fn refuse<T>(&self) -> Result<T> {
        Err(Error::InvalidWindow {
            reason: if self.done {
                "the window was freed".into()
            } else {
                "the window's free failed after this rank entered it (peers may have \
                 released their memory since): only another free may follow"
                    .into()
            },
        })
    }
}

impl rma_core::Transport for Freed {
    fn name(&self) -> &'static str {
        self.name
    }
    fn put(&self, _: rma_core::Access<'_>, _: &[u8]) -> Result<()> {
        self.refuse()
    }
    fn get(&self, _: rma_core::Access<'_>, _: &mut [u8]) -> Result<()> {
        self.refuse()
    }
    fn accumulate(
        &self,
        _: rma_core::Access<'_>,
        _: rma_core::BasicType,
        _: rma_core::Op,
        _: &[u8],
    ) -> Result<()> {
        self.refuse()
    }
    fn get_accumulate(
        &self,
        _: rma_core::Access<'_>,
        _: rma_core::BasicType,
        _: rma_core::Op,
        _: &[u8],
        _: &mut [u8],
    ) -> Result<()> {
        self.refuse()
    }
    fn fetch_and_op(
        &self,
        _: rma_core::Rank,
        _: usize,
        _: rma_core::BasicType,
        _: rma_core::Op,
        _: &[u8],
        _: &mut [u8],
    ) -> Result<()> {
        self.refuse()
    }
    fn compare_and_swap(
        &self,
        _: rma_core::Rank,
        _: usize,
        _: rma_core::BasicType,
        _: &[u8],
        _: &[u8],
        _: &mut [u8],
    ) -> Result<()> {
        self.refuse()
    }
    fn flush(&self, _: rma_core::Rank) -> Result<()> {
        self.refuse()
    }
    fn flush_all(&self) -> Result<()> {
        self.refuse()
    }
}

impl ShmWorld {
    /// The transport a window of `flavor` with this info uses: the one the info names
    /// (RMA_FLAVOR where it cannot serve: `atomic` over a created window with ranks as
    /// processes, whose copy no other process can reach), else `queued` for a created
    /// window with ranks as processes and `atomic` everywhere else.
    fn transport_for(&self, info: &WinInfo, flavor: Flavor) -> Result<Kind> {
        let processes_create = self.mode() == crate::ShmMode::Processes && flavor == Flavor::Create;
        match info.transport.as_deref() {
            None if processes_create => Ok(Kind::Queued),
            None | Some("atomic") if !processes_create => Ok(Kind::Atomic),
            Some("atomic") | None => Err(Error::Flavor {
                reason: "with ranks as processes a window created over a caller's buffer \
                         cannot use the atomic transport (other processes cannot reach this \
                         process's memory); use rma_transport=queued or Window::allocate"
                    .into(),
            }),
            Some("queued") => Ok(Kind::Queued),
            Some(other) => Err(Error::UnknownTransport {
                name: other.to_owned(),
                available: TRANSPORTS.join(", "),
            }),
        }
    }

    /// Collectively creates a window over `len` bytes at `ptr` that other ranks'
    /// calls update in place (MPI_Win_create for a C interface): with ranks as
    /// processes the queued transport's progress thread applies them, with ranks as
    /// threads the atomic transport; nothing is copied.
    ///
    /// # Safety
    /// Exactly [`WindowMemory::create`]'s contract, for the life of the returned
    /// window (a window dropped without its free included).
    pub unsafe fn create_in_place(
        &self,
        ptr: *mut u8,
        len: usize,
        disp_unit: usize,
        parsed: &WinInfo,
    ) -> Result<ShmWindow<'_>> {
        let kind = self.transport_for(parsed, Flavor::Create)?;
        let opts = MemoryOptions {
            queues: kind == Kind::Queued,
        };
        // SAFETY: forwarded from this function's contract.
        let mem = unsafe { WindowMemory::create(self, ptr, len, disp_unit, opts)? };
        self.window(kind, mem, None)
    }

    /// A window whose memory `make` allocates (every flavor but create), on the
    /// transport the info asks for.
    fn allocated(
        &self,
        parsed: &WinInfo,
        flavor: Flavor,
        make: impl FnOnce(MemoryOptions) -> Result<WindowMemory>,
    ) -> Result<ShmWindow<'_>> {
        let kind = self.transport_for(parsed, flavor)?;
        let mem = make(MemoryOptions {
            queues: kind == Kind::Queued,
        })?;
        self.window(kind, mem, None)
    }

    fn window<'w>(
        &self,
        kind: Kind,
        mem: WindowMemory,
        shadow: Option<Shadow<'w>>,
    ) -> Result<ShmWindow<'w>> {
        let mem = Arc::new(mem);
        let liveness = self.liveness();
        let transport = match kind {
            Kind::Atomic => ShmTransport::Atomic(AtomicTransport::new(mem.clone())?),
            Kind::Queued => {
                ShmTransport::Queued(QueuedTransport::new(mem.clone(), liveness.clone())?)
            }
        };
        Ok(ShmWindow {
            transport,
            mem,
            liveness,
            shadow,
        })
    }
}

impl Services for ShmWorld {
    fn rank(&self) -> usize {
        ShmWorld::rank(self)
    }
    fn size(&self) -> usize {
        ShmWorld::size(self)
    }
    fn mode(&self) -> LaunchMode {
        match ShmWorld::mode(self) {
            crate::ShmMode::Processes => LaunchMode::Processes,
            crate::ShmMode::Threads => LaunchMode::Threads,
        }
    }
    fn barrier(&self) -> Result<()> {
        ShmWorld::barrier(self)
    }
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        ShmWorld::allgather(self, mine)
    }
    fn check_peers(&self) -> Result<()> {
        ShmWorld::check_peers(self)
    }
    fn failure_word(&self) -> &AtomicU32 {
        ShmWorld::failure_word(self)
    }
    fn check_failed(&self) -> Result<()> {
        ShmWorld::check_failed(self)
    }
}

impl Backend for ShmWorld {
    type Window<'w> = ShmWindow<'w>;

    fn allocate(
        &self,
        len: usize,
        disp_unit: usize,
        _info: &Info,
        parsed: &WinInfo,
    ) -> Result<ShmWindow<'_>> {
        self.allocated(parsed, Flavor::Allocate, |opts| {
            WindowMemory::allocate(self, len, disp_unit, opts)
        })
    }

    /// Each rank's part is a segment of the window (a region table, then `capacity`
    /// bytes that attach hands out), on either transport.
    fn create_dynamic(
        &self,
        capacity: usize,
        _info: &Info,
        parsed: &WinInfo,
    ) -> Result<ShmWindow<'_>> {
        self.allocated(parsed, Flavor::Dynamic, |opts| {
            WindowMemory::create_dynamic(self, capacity, opts)
        })
    }

    /// Every rank of an rma-shm world reaches every segment (threads share the
    /// process; processes map the same /dev/shm segments), so every world can have
    /// shared windows, on either transport.
    fn allocate_shared(
        &self,
        len: usize,
        disp_unit: usize,
        contiguous: bool,
        _info: &Info,
        parsed: &WinInfo,
    ) -> Result<ShmWindow<'_>> {
        self.allocated(parsed, Flavor::Shared, |opts| {
            WindowMemory::allocate_shared(self, len, disp_unit, contiguous, opts)
        })
    }

    /// Every rank of an rma-shm world maps what it is given; the window is direct, on
    /// the atomic transport unless the info names `queued`.
    unsafe fn create_mapped(
        &self,
        len: usize,
        disp_unit: usize,
        peers: &[usize],
        _info: &Info,
        parsed: &WinInfo,
    ) -> Result<ShmWindow<'_>> {
        self.allocated(parsed, Flavor::Shared, |opts| {
            // SAFETY: forwarded from this function's contract (Backend::create_mapped).
            unsafe { WindowMemory::create_mapped(self, len, disp_unit, peers, opts) }
        })
    }

    /// With ranks as processes the queued transport's progress thread applies other
    /// ranks' calls, with ranks as threads the atomic transport (ShmWorld::create_in_place).
    unsafe fn create_in_place(
        &self,
        ptr: *mut u8,
        len: usize,
        disp_unit: usize,
        _info: &Info,
        parsed: &WinInfo,
    ) -> Result<ShmWindow<'_>> {
        // SAFETY: forwarded from this function's contract (Backend::create_in_place),
        // which rma-win's Window::create_in_place details for this backend.
        unsafe { ShmWorld::create_in_place(self, ptr, len, disp_unit, parsed) }
    }

    fn create<'w>(
        &'w self,
        buf: &'w mut [u8],
        disp_unit: usize,
        _info: &Info,
        parsed: &WinInfo,
    ) -> Result<ShmWindow<'w>> {
        let kind = self.transport_for(parsed, Flavor::Create)?;
        let opts = MemoryOptions {
            queues: kind == Kind::Queued,
        };
        let len = buf.len();
        // Other ranks' calls write into the window (threads directly, the queued
        // transport's progress thread for processes): expose a copy that outlives a
        // window dropped or forgotten without its free, never `buf`.
        let (shadow, base) = Shadow::new(buf);
        // SAFETY: `base` points to `len` bytes of the shadow's heap buffer (64-byte
        // aligned, whole words past the end), which the window holds and which is freed
        // only after the collective free put it back (leaked otherwise: `mem::forget`
        // of the window leaks it too); nothing else reaches those bytes meanwhile, and
        // the window's accesses are word atomics.
        let mem = unsafe { WindowMemory::create(self, base, len, disp_unit, opts)? };
        self.window(kind, mem, Some(shadow))
    }
}

impl rma_core::Memory for ShmWindow<'_> {
    fn shapes(&self) -> Vec<Shape> {
        (0..self.mem.ranks())
            .map(|r| Shape {
                len: self.mem.len_of(r),
                disp_unit: self.mem.disp_unit_of(r),
                addr: self.mem.base_addr(r),
            })
            .collect()
    }
    fn flavor(&self) -> Flavor {
        self.mem.flavor()
    }
    fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        // progress first, as MPI's local reads do: on the queued transport this rank
        // applies what waits in its request rings (a bounded amount), so a rank
        // polling its own memory for a peer's update (a signal) does not depend on its
        // progress thread being scheduled
        self.mem.help();
        self.mem.read_local(offset, out)
    }
    fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.mem.write_local(offset, data)
    }
    fn sync(&self) -> Result<()> {
        // the window is unified: a full fence orders this rank's loads and stores
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
    fn attach(&self, data: &[u8]) -> Result<usize> {
        self.check_live()?;
        if self.mem.flavor() != Flavor::Dynamic {
            return Err(Error::Flavor {
                reason: "attach needs a dynamic window (Window::create_dynamic)".into(),
            });
        }
        self.mem.attach(data)
    }
    fn detach(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check_live()?;
        if self.mem.flavor() != Flavor::Dynamic {
            return Err(Error::Flavor {
                reason: "detach needs a dynamic window (Window::create_dynamic)".into(),
            });
        }
        self.mem.detach(offset, out)
    }
    fn attached(&self, rank: usize, start: usize, end: usize) -> Result<bool> {
        Ok(self.mem.flavor() != Flavor::Dynamic || self.mem.attached(rank, start, end))
    }
    fn shared_segment(&self, rank: usize) -> Option<rma_core::RawSegment<'_>> {
        if self.mem.flavor() != Flavor::Shared
            || rank >= self.mem.ranks()
            || matches!(self.transport, ShmTransport::Freed(_))
        {
            return None;
        }
        let ptr = self.mem.data_ptr(rank);
        // SAFETY: a shared window's data lies in segments this window keeps mapped
        // (`self.mem`, borrowed for the segment's life), `len_of(rank)` bytes at `ptr`
        // inside whole words of the mapping (winmem.rs sizes every part in whole
        // words, and a mapping is page-granular); every access rma makes to it from
        // this process is a word atomic (rma-ops' kernels, read_local/write_local).
        // The pointer is non-null and 64-aligned even for an empty part.
        Some(unsafe {
            rma_core::RawSegment::new(ptr, self.mem.len_of(rank), self.mem.disp_unit_of(rank))
        })
    }
}

impl ShmWindow<'_> {
    /// `target`'s window memory and atomicity domain, where this rank applies calls in
    /// place (the atomic transport): what a target handle keeps for its epoch. `None`
    /// for the queued transport, a freed window, or a rank outside the window.
    #[inline]
    pub fn direct(&self, target: rma_core::Rank) -> Option<rma_ops::Direct<'_>> {
        match &self.transport {
            ShmTransport::Atomic(t) if target.index().is_some_and(|i| i < self.mem.ranks()) => {
                Some(t.direct(target))
            }
            _ => None,
        }
    }

    /// `Err` (class WIN) once the window was freed.
    fn check_live(&self) -> Result<()> {
        match &self.transport {
            ShmTransport::Freed(f) => f.refuse(),
            _ => Ok(()),
        }
    }
}

impl rma_core::Epochs for ShmWindow<'_> {
    fn acquire_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        self.check_live()?;
        self.mem.acquire_lock(target, exclusive, &self.liveness)
    }
    fn release_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        self.mem.release_lock(target, exclusive)
    }
    fn post_to(&self, origin: usize) -> Result<()> {
        self.check_live()?;
        self.mem.post_to(origin);
        Ok(())
    }
    fn wait_posted(&self, target: usize, want: u32) -> Result<()> {
        self.mem.wait_posted(target, want, &self.liveness)
    }
    fn complete_to(&self, target: usize) -> Result<()> {
        self.check_live()?;
        self.mem.complete_to(target);
        Ok(())
    }
    fn wait_completed(&self, origin: usize, want: u32) -> Result<()> {
        self.mem.wait_completed(origin, want, &self.liveness)
    }
    fn has_completed(&self, origin: usize, want: u32) -> Result<bool> {
        self.mem.has_completed(origin, want)
    }
    fn check_peers(&self) -> Result<()> {
        self.liveness.check()
    }
    /// The collective part of a fence: the world's barrier entered as a fence on this
    /// window, so that only a fence on this same window matches it (a peer in a
    /// barrier, an all-gather or another window's call makes every rank's call fail
    /// with PROC_FAILED and breaks the world, rma-shm's `Collective`).
    #[inline]
    fn fence_barrier(&self) -> Option<Result<()>> {
        // (also on a freed window: a barrier touches only the world's control segment)
        Some(self.liveness.barrier(Collective::Fence(self.mem.id())))
    }

    /// The window's own synchronization: every rank marks the window as being freed in
    /// its segment and waits for every rank's mark (or the mark of a rank that dropped
    /// it, [`ShmWindow`]'s drop). A world collective could be matched by a peer's
    /// barrier or all-gather while that peer still uses the window, and a created
    /// window's copy would then go back under its writes. A rank that entered another
    /// collective call in its place makes it fail (PROC_FAILED; the world is broken,
    /// rma-shm's `Collective`).
    ///
    /// Once this rank's mark is set, every data call and lock of this window is
    /// refused (class WIN), also when the free fails: the backend is public, so
    /// rma-win's own `freed` flag is not the only caller, and a peer past its free may
    /// drop the memory it exposed. After a failure only another free may follow; a
    /// created window's copy goes back into the buffer only when a free succeeds (it is
    /// leaked otherwise).
    fn free(&mut self) -> Result<()> {
        if let ShmTransport::Freed(f) = &self.transport {
            if f.done {
                return Err(Error::InvalidWindow {
                    reason: "the window was freed".into(),
                });
            }
        }
        let name = rma_core::Transport::name(self);
        let r = self.mem.free_barrier(&self.liveness);
        if r.is_ok() || self.mem.free_marked() {
            // the queued transport's progress thread stops here (dropping joins it):
            // every rank is past its last call, or this rank is and the others may be
            self.transport = ShmTransport::Freed(Freed {
                name,
                done: r.is_ok(),
            });
        }
        r?;
        if let Some(sh) = self.shadow.as_mut() {
            sh.copy_back();
        }
        Ok(())
    }

    /// A window dropped without its free releases this rank's locks and completes its
    /// access epoch first (rma-win does), since its drop tells the peers it left
    /// ([`ShmWindow`]'s drop): a lock it held would otherwise stay held by a rank that
    /// can no longer release it.
    fn leaves_on_drop(&self) -> bool {
        !matches!(self.transport, ShmTransport::Freed(_))
    }
}

impl Drop for ShmWindow<'_> {
    /// A window dropped without its free (or whose free failed before this rank
    /// marked it) tells the peers that this rank left it ([`WindowMemory::depart`]):
    /// its drop counts as its part of the window's free, a peer waiting for its lock,
    /// post or complete gets PROC_FAILED, and the drop is entered as this rank's next
    /// collective call of the world, as `MPI_Win_free` at an rma-mpi window's drop is.
    /// It never waits. Also while the thread panics: a rank that catches the panic
    /// and goes on must not leave peers waiting for a window that is gone.
    fn drop(&mut self) {
        if !matches!(self.transport, ShmTransport::Freed(_)) {
            self.mem.depart(&self.liveness);
        }
    }
}

macro_rules! dispatch {
    ($self:expr, $t:ident => $call:expr) => {
        match &$self.transport {
            ShmTransport::Atomic($t) => $call,
            ShmTransport::Queued($t) => $call,
            ShmTransport::Freed($t) => $call,
        }
    };
}

rma_core::forward_transport!(['w] ShmWindow<'w>, dispatch);
