//! The contract between `rma-win` and a backend: everything a window needs from
//! whatever provides its ranks, memory and synchronization, as one family of traits.
//!
//! `rma-win` keeps the one epoch state machine and every check a user can get wrong
//! (ranks, displacements, datatypes, ops, ranges, alignment, epoch state); a backend
//! only does what it is told, and may assume what each trait lists. The family:
//!
//! - [`Services`]: the world's ranks and collectives (barrier, all-gather) and the
//!   liveness of its peers;
//! - [`Memory`]: a window's shape on every rank, how it was obtained, and this rank's
//!   local access to it;
//! - [`Epochs`]: the synchronization primitives epochs are built from (locks, post and
//!   complete counters, the window's own free);
//! - [`Transport`]: the data calls;
//! - [`Backend`]: a world that creates windows, statically typed (no allocation or
//!   indirect call per RMA call); [`DynBackend`] is the same behind a `Box`, for
//!   backends plugged in from outside the crates that ship with rma.
//!
//! rma ships two backends: rma-shm's shared-memory worlds (with the `atomic` and
//! `queued` transports) and rma-mpi's system MPI library (the `mpi` transport);
//! rma-backends puts them behind one enum. A new backend implements [`Backend`] and
//! reaches `rma-win` through [`DynBackend`] without any change to `rma-win`.

use crate::{Info, Result, Transport, WinInfo};
use std::sync::atomic::AtomicU32;

/// How a window's memory was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[doc(alias = "MPI_WIN_CREATE_FLAVOR")]
pub enum Flavor {
    /// The window's memory was allocated for it (MPI_Win_allocate).
    #[doc(alias = "MPI_WIN_FLAVOR_ALLOCATE")]
    Allocate,
    /// Memory the caller owns (MPI_Win_create).
    #[doc(alias = "MPI_WIN_FLAVOR_CREATE")]
    Create,
    /// Memory allocated for it that every rank also reaches by load and store
    /// (MPI_Win_allocate_shared).
    #[doc(alias = "MPI_WIN_FLAVOR_SHARED")]
    Shared,
    /// No memory at creation; each rank attaches and detaches regions later
    /// (MPI_Win_create_dynamic).
    #[doc(alias = "MPI_WIN_FLAVOR_DYNAMIC")]
    Dynamic,
}

impl std::fmt::Display for Flavor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Flavor::Allocate => "allocate",
            Flavor::Create => "create",
            Flavor::Shared => "shared",
            Flavor::Dynamic => "dynamic",
        })
    }
}

/// One rank's part of a shared window as this rank reaches it by load and store
/// (MPI_Win_shared_query's answer): a pointer, a length and a displacement unit. It
/// carries a promise, made by whoever built it ([`RawSegment::new`] is `unsafe`),
/// that lets `rma-win` build safe views over it.
#[derive(Clone, Copy, Debug)]
pub struct RawSegment<'a> {
    ptr: *mut u8,
    len: usize,
    disp_unit: usize,
    _memory: std::marker::PhantomData<&'a ()>,
}

impl<'a> RawSegment<'a> {
    /// The segment of `len` bytes at `ptr`, with displacement unit `disp_unit`.
    ///
    /// # Safety
    /// For all of `'a`: `ptr` is valid for reads and writes of `len` bytes, inside an
    /// allocation that holds every whole aligned 8-byte word overlapping them (for
    /// `len == 0` it may be dangling but must be non-null and 8-aligned); and every
    /// access to those words from this process that may run at the same time as an
    /// access through the segment (on another thread: by another rank, or through
    /// another segment of the same memory) is an atomic access to the whole aligned
    /// word (rma-ops' `shared` and `atomic` kernels), so that no access through the
    /// segment can be a data race under Rust's memory model. Accesses from other
    /// processes, such as an MPI library's, are outside Rust's model and may be plain.
    #[allow(unsafe_code)] // a constructor whose callers make the promise above
    pub unsafe fn new(ptr: *mut u8, len: usize, disp_unit: usize) -> RawSegment<'a> {
        RawSegment {
            ptr,
            len,
            disp_unit,
            _memory: std::marker::PhantomData,
        }
    }

    /// The first byte (valid as [`RawSegment::new`] promised).
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the segment is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The displacement unit its owner gave.
    pub fn disp_unit(&self) -> usize {
        self.disp_unit
    }
}

/// How the ranks of a world run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaunchMode {
    /// One process per rank, started by `rmarun`, sharing memory on one node.
    Processes,
    /// One thread per rank, in one process.
    Threads,
    /// One process per rank, started by an MPI launcher: windows use the `mpi`
    /// transport (the system MPI library's RMA), on one node or several.
    Mpi,
}

impl std::fmt::Display for LaunchMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LaunchMode::Processes => "processes",
            LaunchMode::Threads => "threads",
            LaunchMode::Mpi => "mpi",
        })
    }
}

/// The shape of one rank's window, as every rank sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Window size in bytes.
    pub len: usize,
    /// Displacement unit.
    pub disp_unit: usize,
    /// Address of the window's first byte in its owner's address space, for alignment
    /// checks: an element at byte `o` is aligned to `a` when `(addr + o) % a == 0`. A
    /// backend whose memory has no alignment constraint reports 0.
    pub addr: usize,
}

/// A world's ranks and collectives.
///
/// Every method is called by the rank's own thread. A backend may assume that the
/// ranks call the collectives ([`Services::barrier`], [`Services::allgather`]) in the
/// same order; when they do not, it must return an error (or end the job) rather than
/// hang.
pub trait Services: std::fmt::Debug {
    /// This rank's index.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// How the ranks run.
    fn mode(&self) -> LaunchMode;

    /// Blocks until every rank has called it; everything any rank wrote before it
    /// happens-before everything every rank does after it. A peer that died or left
    /// makes it fail with class PROC_FAILED within bounded time, never hang.
    fn barrier(&self) -> Result<()>;

    /// Every rank contributes `mine`; every rank receives every contribution, indexed
    /// by rank. Fails as [`Services::barrier`] does.
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>>;

    /// `Err` (class PROC_FAILED naming a dead peer) if a peer is known dead.
    fn check_peers(&self) -> Result<()>;

    /// A word that stays zero while the world is healthy and becomes nonzero once a
    /// rank is known dead or the world's shared state corrupt. `rma-win` reads it with
    /// one relaxed load on every RMA call, and calls [`Services::check_failed`] when
    /// it is nonzero.
    fn failure_word(&self) -> &AtomicU32;

    /// `Ok` while the failure word is zero, else the error it stands for.
    fn check_failed(&self) -> Result<()>;
}

/// A window's memory: its shape on every rank and this rank's local access.
///
/// Local access may race with other ranks' RMA calls (an erroneous program in MPI's
/// terms); the bytes read are then unspecified, never undefined behaviour.
pub trait Memory {
    /// Every rank's window shape, indexed by rank; fixed at creation.
    fn shapes(&self) -> Vec<Shape>;

    /// How the window's memory was obtained.
    fn flavor(&self) -> Flavor;

    /// Copies `out.len()` bytes of this rank's window from byte `offset`. The range is
    /// not checked by `rma-win`: the backend refuses one outside the window (class
    /// RMA_RANGE).
    fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()>;

    /// Copies `data` into this rank's window at byte `offset` (range as for
    /// [`Memory::read_local`]).
    fn write_local(&self, offset: usize, data: &[u8]) -> Result<()>;

    /// Synchronizes this rank's view of its window with other ranks' (MPI_Win_sync).
    fn sync(&self) -> Result<()>;

    /// `rank`'s part of a window of flavor [`Flavor::Shared`], as this rank reaches it
    /// by load and store (MPI_Win_shared_query); `None` for other flavors, for a rank
    /// outside the window, and for a freed window. A backend without shared windows
    /// keeps the default.
    fn shared_segment(&self, rank: usize) -> Option<RawSegment<'_>> {
        let _ = rank;
        None
    }

    /// Attaches a region of `data.len()` bytes, holding a copy of `data`, to this
    /// rank's part of a dynamic window (MPI_Win_attach); returns its byte offset in
    /// that part, which [`Shape::addr`] turns into the address other ranks target. The
    /// region is published only once its bytes are in place. Errors: class
    /// RMA_ATTACH where no room or table slot is left; RMA_FLAVOR for a window that is
    /// not dynamic (the default).
    fn attach(&self, data: &[u8]) -> Result<usize> {
        let _ = data;
        Err(crate::Error::Flavor {
            reason: "attach needs a dynamic window (Window::create_dynamic)".into(),
        })
    }

    /// Detaches the region that starts at byte `offset` of this rank's part
    /// (MPI_Win_detach), after copying its bytes into `out` (as long as the region).
    /// Errors: RMA_ATTACH for an offset where no region starts or an `out` of another
    /// length; RMA_FLAVOR as for [`Memory::attach`].
    fn detach(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let _ = (offset, out);
        Err(crate::Error::Flavor {
            reason: "detach needs a dynamic window (Window::create_dynamic)".into(),
        })
    }

    /// Whether bytes `[start, end)` of `rank`'s part lie inside one region `rank` has
    /// attached (dynamic windows); true for every range inside a window of another
    /// flavor. Racing an attach or detach of that region, the answer may be either.
    /// An error when the answer cannot be had (a dead peer, under MPI).
    fn attached(&self, rank: usize, start: usize, end: usize) -> Result<bool> {
        let _ = (rank, start, end);
        Ok(true)
    }
}

/// The synchronization primitives `rma-win` builds every epoch from.
///
/// `rma-win` tracks which epochs are open and refuses every misuse (class RMA_SYNC)
/// before calling these, so a backend may assume:
///
/// - ranks are in the window's group, never the null rank;
/// - a lock is released only by the origin that holds it, with the kind it was taken
///   with, after every call to the target was flushed;
/// - the `want` counts passed to the waits are the cumulative number of posts
///   (completes) this rank consumed from that peer, so a counter that only grows is
///   enough (comparisons must survive wrap-around: `want` is a `u32` that wraps);
/// - `complete_to(t)` follows a flush of every call to `t`.
///
/// No wait may hang on a peer that died, left or corrupted shared state: it ends with
/// an error (class PROC_FAILED naming the peer, class INTERN for state no rank could
/// produce). A wait for a live peer lasts as long as that peer keeps the lock or
/// delays its post or complete, as in MPI.
pub trait Epochs {
    /// Takes `target`'s lock, shared or exclusive, waiting until it is granted.
    /// Requests should be served in arrival order (no starvation).
    fn acquire_lock(&self, target: usize, exclusive: bool) -> Result<()>;

    /// Releases `target`'s lock.
    fn release_lock(&self, target: usize, exclusive: bool) -> Result<()>;

    /// Tells `origin` that this rank's window is exposed to it (one post); local
    /// stores made before it are visible to `origin` after its matching wait.
    fn post_to(&self, origin: usize) -> Result<()>;

    /// Waits until `target` has posted to this rank `want` times in all.
    fn wait_posted(&self, target: usize, want: u32) -> Result<()>;

    /// Tells `target` that this rank's access epoch to it is complete.
    fn complete_to(&self, target: usize) -> Result<()>;

    /// Waits until `origin` has completed to this rank `want` times in all; its calls
    /// are then visible in this rank's window.
    fn wait_completed(&self, origin: usize, want: u32) -> Result<()>;

    /// Whether `origin` has completed to this rank `want` times in all; never blocks.
    fn has_completed(&self, origin: usize, want: u32) -> Result<bool>;

    /// `Err` (class PROC_FAILED) if a peer of the window is known dead.
    fn check_peers(&self) -> Result<()>;

    /// The collective part of a fence on this window (`rma-win`'s fence is a flush of
    /// every call, then this), called by every rank with no other epoch open: a
    /// barrier of the window's ranks that only a fence on this same window matches —
    /// never a world barrier or all-gather, nor another window's fence, free or
    /// creation — and that fails on every rank it reaches (class PROC_FAILED, as for a
    /// peer that left) when the ranks entered different collective calls, rather than
    /// matching them or hanging. `None`, the default: the backend has no such barrier,
    /// and `rma-win` uses the world's ([`Services::barrier`]), which a world barrier on
    /// another rank matches.
    fn fence_barrier(&self) -> Option<Result<()>> {
        None
    }

    /// The window's collective free, called by every rank with no epoch open and every
    /// call complete (again, by a rank whose earlier call returned an error). Once it
    /// succeeded, the window must refuse further use (class WIN) or stay sound under
    /// it: the window is a public type, and a peer past its free may drop the memory
    /// it exposed. It synchronizes on this window only (a peer in a world
    /// barrier, or freeing another window, must not match it: it must fail, rather
    /// than hang, when the ranks entered different collective calls) and, for a created
    /// window, puts the window's contents back into the caller's buffer once no rank
    /// can reach them. A backend may also defer the collective part to the window's
    /// drop, as long as a rank that frees and a rank that only drops make the same
    /// collective calls.
    fn free(&mut self) -> Result<()>;

    /// Whether a window dropped without [`Epochs::free`] must end its epochs (release
    /// its locks, complete its access epoch) and then [`Epochs::depart`]: backends
    /// whose drop makes a collective call that peers still waiting for this rank
    /// would never reach, or tells the peers that this rank left the window (after
    /// which a lock it still held could never be released). `false` by default.
    fn leaves_on_drop(&self) -> bool {
        false
    }

    /// Tells the peers this rank dropped the window without freeing it, so that a
    /// wait for its post or complete ends with PROC_FAILED naming it. Called after
    /// its epochs were ended, only where [`Epochs::leaves_on_drop`] said so.
    fn depart(&self) {}
}

/// Whether counter value `now` has reached `want` (wrapping u32 arithmetic): the
/// comparison of every post / complete counter of an [`Epochs`] implementation.
pub fn reached(now: u32, want: u32) -> bool {
    (now.wrapping_sub(want) as i32) >= 0
}

/// Everything one window of a backend provides.
pub trait BackendWindow: Transport + Memory + Epochs + std::fmt::Debug {}

impl<T: Transport + Memory + Epochs + std::fmt::Debug> BackendWindow for T {}

/// A world that creates windows: the static form of a backend (in the spirit of
/// wgpu-hal's `Api`: concrete types, so the data path costs no indirect call).
///
/// `info` is the window's info as the user passed it (keys a backend understands
/// beyond rma's, such as an MPI library's, may be forwarded); `parsed` is rma's view of
/// it, already checked. `parsed.transport` names the transport the window must use, or
/// is `None` for the backend's default; a backend that cannot serve the named one
/// refuses with class RMA_FLAVOR, and names unknown to it with class ARG. Either
/// refusal happens on every rank before anything collective, so it changes nothing.
pub trait Backend: Services {
    /// One window of this backend.
    type Window<'w>: BackendWindow
    where
        Self: 'w;

    /// Collectively allocates `len` zeroed bytes on this rank with displacement unit
    /// `disp_unit` (nonzero; `rma-win` checked it).
    fn allocate(
        &self,
        len: usize,
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Self::Window<'_>>;

    /// Collectively creates a window over `buf`, which the window borrows for `'w`.
    /// Other ranks must never write into `buf` after the window is dropped or leaked
    /// without its free (`mem::forget` ends no borrow): expose a copy, put back by
    /// [`Epochs::free`], where peers write into window memory.
    fn create<'w>(
        &'w self,
        buf: &'w mut [u8],
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Self::Window<'w>>;

    /// Collectively allocates a shared window (MPI_Win_allocate_shared): as
    /// [`Backend::allocate`], with every rank's memory also reachable by load and store
    /// from every rank ([`Memory::shared_segment`]). With `contiguous`, the ranks'
    /// parts follow each other in rank order in every rank's address space, each
    /// starting at the previous one's start plus its length rounded up to a multiple
    /// of 64 bytes (so no two ranks' parts share a cache line). A backend whose ranks
    /// cannot all share memory refuses with class RMA_SHARED, on every rank, before
    /// anything else collective; the default refuses with class RMA_FLAVOR (no shared
    /// windows at all).
    fn allocate_shared(
        &self,
        len: usize,
        disp_unit: usize,
        contiguous: bool,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Self::Window<'_>> {
        let _ = (len, disp_unit, contiguous, info, parsed);
        Err(crate::Error::Flavor {
            reason: "this backend has no shared windows; use allocate (and RMA calls) instead"
                .into(),
        })
    }

    /// Collectively creates a window over memory that every rank already reaches by
    /// load and store (MPI_Win_create over the memory of a shared window): this rank
    /// exposes `len` bytes at `peers[rank]`, and `peers[r]` is where rank r's memory
    /// lies in this process. The window copies nothing and frees nothing. The default
    /// refuses with class RMA_FLAVOR.
    ///
    /// # Safety
    /// `peers` has one entry per rank; for every rank r with a nonzero length,
    /// `peers[r]` is 8-byte aligned and valid for reads and writes of rank r's length
    /// rounded up to whole 8-byte words, in this process, for the whole life of the
    /// returned window; every access to that memory while the window lives is a word
    /// atomic or made by code outside Rust (a C program's own loads and stores).
    #[allow(unsafe_code)] // a constructor whose callers make the promise above
    unsafe fn create_mapped(
        &self,
        len: usize,
        disp_unit: usize,
        peers: &[usize],
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Self::Window<'_>> {
        let _ = (len, disp_unit, peers, info, parsed);
        Err(crate::Error::Flavor {
            reason: "this backend cannot expose memory another window already shares".into(),
        })
    }

    /// Collectively creates a window over `len` bytes at `ptr`, memory the program
    /// owns (MPI_Win_create for a C interface), that other ranks' calls update in
    /// place, copying nothing: the unified model over the program's own memory. The
    /// default refuses with class RMA_FLAVOR.
    ///
    /// # Safety
    /// `ptr` is 8-byte aligned and valid for reads and writes of `len` bytes rounded up
    /// to whole 8-byte words until no rank can reach them any more (rma-win's
    /// `Window::create_in_place` says when that is for rma's backends; another backend
    /// documents its own); every access to them meanwhile is a word atomic or made by
    /// code outside Rust, kept apart from the window's calls by MPI's synchronization.
    ///
    /// Like [`Backend::create_mapped`], it has no [`DynBackend`] form: rma-win reaches
    /// it for rma's own backends (rma-capi's MPI_Win_create), and a backend plugged in
    /// with `World::from_backend` refuses with class RMA_FLAVOR there.
    #[allow(unsafe_code)] // a constructor whose callers make the promise above
    unsafe fn create_in_place(
        &self,
        ptr: *mut u8,
        len: usize,
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Self::Window<'_>> {
        let _ = (ptr, len, disp_unit, info, parsed);
        Err(crate::Error::Flavor {
            reason: "this backend cannot expose memory in place".into(),
        })
    }

    /// Collectively creates a dynamic window (MPI_Win_create_dynamic): no memory yet;
    /// each rank attaches regions later ([`Memory::attach`]), up to `capacity` bytes at
    /// once. Its shapes report `capacity` as each rank's length, displacement unit 1,
    /// and in `addr` the address that byte offset 0 of the rank's part has as a target
    /// displacement (targets are addressed by address, as MPI_Get_address gives it).
    /// The default refuses with class RMA_FLAVOR.
    fn create_dynamic(
        &self,
        capacity: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Self::Window<'_>> {
        let _ = (capacity, info, parsed);
        Err(crate::Error::Flavor {
            reason: "this backend has no dynamic windows; use allocate instead".into(),
        })
    }
}

/// The default capacity of each rank's part of a dynamic window: the bytes its
/// attached regions may hold at once (`rma_dynamic_bytes` info key).
pub const DYNAMIC_BYTES: usize = 1 << 20;

/// Where rank `rank`'s part starts in a contiguous shared window whose ranks have the
/// lengths `lens` ([`Backend::allocate_shared`]'s layout): the sum of the earlier
/// lengths, each rounded up to 64 bytes. None on overflow.
pub fn shared_offset(lens: &[usize], rank: usize) -> Option<usize> {
    lens.get(..rank)?
        .iter()
        .try_fold(0usize, |acc, &l| acc.checked_add(l.checked_add(63)? & !63))
}

/// [`Backend`] behind a `Box`: how a backend from outside rma's own crates reaches
/// `rma-win` (`rma_win::World::from_backend`). Every [`Backend`] is one.
pub trait DynBackend: Services {
    /// [`Backend::allocate`], boxed.
    fn allocate_dyn(
        &self,
        len: usize,
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Box<dyn BackendWindow + '_>>;

    /// [`Backend::create`], boxed.
    fn create_dyn<'w>(
        &'w self,
        buf: &'w mut [u8],
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Box<dyn BackendWindow + 'w>>;

    /// [`Backend::create_dynamic`], boxed.
    fn create_dynamic_dyn(
        &self,
        capacity: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Box<dyn BackendWindow + '_>>;

    /// [`Backend::allocate_shared`], boxed.
    fn allocate_shared_dyn(
        &self,
        len: usize,
        disp_unit: usize,
        contiguous: bool,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Box<dyn BackendWindow + '_>>;
}

impl<B: Backend> DynBackend for B {
    fn create_dynamic_dyn(
        &self,
        capacity: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Box<dyn BackendWindow + '_>> {
        Ok(Box::new(self.create_dynamic(capacity, info, parsed)?))
    }

    fn allocate_shared_dyn(
        &self,
        len: usize,
        disp_unit: usize,
        contiguous: bool,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Box<dyn BackendWindow + '_>> {
        Ok(Box::new(self.allocate_shared(
            len, disp_unit, contiguous, info, parsed,
        )?))
    }

    fn allocate_dyn(
        &self,
        len: usize,
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Box<dyn BackendWindow + '_>> {
        Ok(Box::new(self.allocate(len, disp_unit, info, parsed)?))
    }

    fn create_dyn<'w>(
        &'w self,
        buf: &'w mut [u8],
        disp_unit: usize,
        info: &Info,
        parsed: &WinInfo,
    ) -> Result<Box<dyn BackendWindow + 'w>> {
        Ok(Box::new(self.create(buf, disp_unit, info, parsed)?))
    }
}
