//! What a window's calls leave for a later synchronization: the origin copies MPI may
//! still read, and which targets have calls that only a flush completes.
//!
//! put and accumulate copy their origin data and return as soon as MPI has the call
//! (MPI_Put, MPI_Accumulate), without waiting for it: the copy is the origin buffer
//! until a synchronization completes the call, and then it is dropped. Fetching calls
//! (get, get_accumulate, fetch_and_op, compare_and_swap) complete with MPI_Win_flush of
//! their target, which also completes every earlier call to it; a target that nothing
//! has been issued to since is *clean*, and flushing it again is skipped. One call
//! plus one flush is what a C program makes; this keeps the transport at that.
//!
//! The copies live in [`Copies`], which the window updates in the same turn of the
//! world as the MPI call they belong to ([`MpiWorld::mpi_turned`]): a call and
//! its copy, or a flush and the release of the copies it completed, are one step for
//! every other thread, so a flush drops exactly the copies of the calls issued before
//! it. Small copies are cut from per-target chunks that a synchronization recycles,
//! so a put or accumulate allocates nothing in the steady state.
//!
//! The dirty marks are atomics read without the turn (a flush of a clean target
//! takes no lock). A call marks its target *after* MPI has it; a flush clears the
//! mark inside its turn, *before* calling MPI. A mark set between the flush's read
//! and its clearing belongs to a call whose turn ended before the flush's began (or,
//! at MPI_THREAD_MULTIPLE, whose MPI call returned before the flush's was made), so
//! the flush completes that call too; a mark set later survives the flush.

use crate::world::{MpiWorld, Turned};
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

/// Copies kept in a passive-target epoch before the window completes them all locally
/// (MPI_Win_flush_local_all), so that a long run of calls without a flush leaves MPI a
/// bounded number of calls in flight and holds bounded memory. Counted where copies
/// leave the fast path (a copy that starts a chunk, a copy of more than 8 bytes), so
/// each target may hold up to one chunk's worth (512 one-element copies, in the 4 KiB
/// it keeps anyway) more, uncounted: the bound is 16 Ki + 512 per target, at most.
const MAX_COPIES: usize = 16 * 1024;
/// Bytes held likewise, in large copies and in chunks beyond each target's first.
const MAX_BYTES: usize = 64 << 20;
/// The size of the chunks small copies are cut from.
const CHUNK: usize = 4096;
/// Copies larger than this get an allocation of their own.
const SMALL: usize = 256;
/// Each copy in a chunk starts at a multiple of this (any basic type's alignment);
/// a copy of at most 8 bytes at a multiple of 8 (its element's alignment at most).
const ALIGN: usize = 16;
/// Chunks a target keeps for its next calls when its copies are dropped (128 KiB):
/// a long run of calls between flushes reuses warm memory instead of allocating.
const KEEP: usize = 32;

/// The unit of a chunk's alignment (a fallback layout).
#[repr(C, align(16))]
struct Block([u8; ALIGN]);

/// Memory handed to MPI as origin buffers: owned through a raw pointer, never through
/// a Box or reference while MPI may read it (a `&mut` over a whole chunk, or moving a
/// Box, would claim every byte of it afresh, including the bytes of copies MPI still
/// reads). Freed on drop; [`Pending::leak`] forgets it instead.
struct Raw {
    ptr: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
}

impl Raw {
    /// `len` (> 0) zeroed bytes aligned to [`ALIGN`].
    fn new(len: usize) -> Raw {
        // a length no allocation can have (within ALIGN of isize::MAX) fails as an
        // allocation does, never with a smaller block that callers would overrun
        let layout = match std::alloc::Layout::from_size_align(len.max(1), ALIGN) {
            Ok(l) => l,
            Err(_) => std::alloc::handle_alloc_error(std::alloc::Layout::new::<Block>()),
        };
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        match std::ptr::NonNull::new(ptr) {
            Some(ptr) => Raw { ptr, layout },
            None => std::alloc::handle_alloc_error(layout),
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: allocated in `Raw::new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: `Raw` owns its allocation, as a Box would; the bytes are plain data.
unsafe impl Send for Raw {}

/// The copies of calls to one target.
///
/// The fast path (a copy of at most 8 bytes that fits in the chunk being cut) moves a
/// bump pointer and counts nothing: its copies take 8 bytes each, so a chunk's count
/// follows from its bytes once it is left. Everything else happens out of line
/// ([`Slab::keep_other`]), which counts in `extra` what the window's bound and
/// [`Slab::reset`]'s trimming look at.
#[derive(Default)]
struct Slab {
    /// Chunks of CHUNK bytes; their addresses do not move when the list grows.
    chunks: Vec<Raw>,
    /// The chunk being cut.
    chunk: usize,
    /// The address of its next free byte (a multiple of 8) and its end; both 0 while
    /// no chunk is being cut. Addresses, not pointers: no reference is ever made from
    /// them, and the slab stays Send.
    next: usize,
    end: usize,
    /// The address of the first chunk (0 while there is none): where `next` starts
    /// after a reset.
    first: usize,
    /// Copies larger than [`SMALL`].
    big: Vec<Raw>,
    /// Bytes of the chunk being cut that copies made out of line took (with their
    /// padding): the rest up to `next` is the fast path's, 8 bytes a copy.
    cold: usize,
    /// What was counted since the last reset.
    extra: Extra,
}

/// A slab's (or a window's) counted copies: those made out of line and those of the
/// chunks left since the last reset, and the bytes of the large copies and of the
/// chunks beyond the first. Bytes are counted only with a copy, so `copies == 0`
/// means nothing was counted.
#[derive(Default, Clone, Copy, PartialEq, Debug)]
struct Extra {
    copies: usize,
    bytes: usize,
}

impl Extra {
    fn add(&mut self, o: Extra) {
        self.copies += o.copies;
        self.bytes += o.bytes;
    }

    fn sub(&mut self, o: Extra) {
        self.copies -= o.copies;
        self.bytes -= o.bytes;
    }

    /// Whether a window holding this much should complete its calls.
    fn full(&self) -> bool {
        self.copies >= MAX_COPIES || self.bytes >= MAX_BYTES
    }
}

impl Slab {
    /// A place for `data` that stays put until [`Slab::reset`]; its address, and what
    /// this copy added beyond the fast path (nothing, on the fast path). A copy of at
    /// most 8 bytes takes an 8-byte slot ([`Slab::keep_word`]); a longer one goes to
    /// [`Slab::keep_other`].
    #[inline]
    fn keep(&mut self, data: &[u8]) -> (*const u8, Extra) {
        if data.len() > 8 {
            return self.keep_other(data);
        }
        let mut word = [0u8; 8];
        word[..data.len()].copy_from_slice(data);
        self.keep_word(word)
    }

    /// [`Slab::keep`] of 8 bytes given by value (a one-element put or accumulate): a
    /// bounds check and one store on the fast path.
    #[inline]
    fn keep_word(&mut self, word: [u8; 8]) -> (*const u8, Extra) {
        debug_assert!(self.next <= self.end);
        let at = self.next;
        if self.end - at >= 8 {
            self.next = at + 8;
            let dst = at as *mut u8;
            // SAFETY: `at..at + 8` lies in the chunk being cut (`end - at >= 8`), and
            // belongs to no other copy (within a chunk `next` only moves forward, and a
            // chunk is cut again only after a reset, when its copies are complete); it is
            // written through the chunk's raw pointer, which no reference covers, so the
            // other copies' pointers (which MPI may be reading) stay valid.
            unsafe { dst.cast::<[u8; 8]>().write_unaligned(word) };
            return (dst.cast_const(), Extra::default());
        }
        self.keep_other(&word)
    }

    /// [`Slab::keep`] for a copy larger than 8 bytes, or one that does not fit in the
    /// chunk being cut.
    #[cold]
    #[inline(never)]
    fn keep_other(&mut self, data: &[u8]) -> (*const u8, Extra) {
        let mut added = Extra {
            copies: 1,
            bytes: 0,
        };
        if data.len() > SMALL {
            let copy = Raw::new(data.len());
            // SAFETY: `copy` holds `data.len()` bytes, written through its own pointer
            // before anyone else has it.
            unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), copy.ptr.as_ptr(), data.len());
            }
            let at = copy.ptr.as_ptr().cast_const();
            self.big.push(copy);
            added.bytes = data.len();
            self.extra.add(added);
            return (at, added);
        }
        let align = if data.len() <= 8 { 8 } else { ALIGN };
        let mut at = self.next.next_multiple_of(align);
        let mut from = self.next;
        if self.end == 0 || at + data.len() > self.end {
            if self.end != 0 {
                // the chunk being cut is left: its fast-path copies are counted now
                added.copies += (self.next - (self.end - CHUNK) - self.cold) / 8;
            }
            // the next chunk, or the first one ever (`end == 0`: a reset keeps chunk 0)
            let chunk = if self.end == 0 { 0 } else { self.chunk + 1 };
            if chunk == self.chunks.len() {
                self.chunks.push(Raw::new(CHUNK));
                self.first = self.chunks[0].ptr.as_ptr() as usize;
            }
            if chunk > 0 {
                added.bytes = CHUNK;
            }
            self.chunk = chunk;
            at = self.chunks[chunk].ptr.as_ptr() as usize;
            self.end = at + CHUNK;
            (from, self.cold) = (at, 0);
        }
        // the next copy starts at a multiple of 8 (the fast path's precondition)
        self.next = (at + data.len()).next_multiple_of(8).min(self.end);
        self.cold += self.next - from;
        let dst = at as *mut u8;
        // SAFETY: `at..at + data.len()` lies in chunk `self.chunk` (a fresh chunk holds
        // CHUNK >= SMALL bytes; otherwise checked against `end` above) and belongs to no
        // other copy; written through the chunk's raw pointer, as in `keep`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        self.extra.add(added);
        (dst.cast_const(), added)
    }

    /// Whether copies wait in this slab.
    fn in_use(&self) -> bool {
        self.next != self.first || self.extra.copies != 0
    }

    /// Forgets the copies (their calls are complete); keeps up to [`KEEP`] chunks for
    /// the next, the first of them being cut again. What was counted, for the
    /// window's count.
    ///
    /// A slab that only took fast-path copies since its last reset is still cutting
    /// its first chunk with nothing counted (any other copy is counted), so moving
    /// `next` back is all it needs.
    #[inline(always)]
    fn reset(&mut self) -> Extra {
        self.next = self.first;
        let extra = self.extra;
        if extra.copies != 0 {
            self.reset_counted();
        }
        extra
    }

    /// The rest of [`Slab::reset`] after copies that were counted: frees the large
    /// copies and the chunks beyond [`KEEP`], and starts over at the first chunk.
    #[cold]
    #[inline(never)]
    fn reset_counted(&mut self) {
        self.chunks.truncate(KEEP);
        self.big.clear();
        self.extra = Extra::default();
        self.chunk = 0;
        self.end = if self.first == 0 {
            0
        } else {
            self.first + CHUNK
        };
        self.cold = 0;
    }
}

/// Where a fetching call's result lands (and its origin and compare values wait):
/// memory rma owns, not the caller's, so that a call whose completion failed can be
/// left to MPI for good. MPI may still write a result after a failed MPI_Win_flush
/// (the operation was issued; the library may complete it at a later flush,
/// unlock_all or free, or on its own), and neither a caller's `&mut [u8]` nor a stack
/// array can outlive the call that failed; a landing can: [`Landing::abandon`]
/// forgets it. On success the caller copies the result out.
pub(crate) struct Landing(Raw);

/// Landings this process left to MPI ([`Landing::abandon`]).
static ABANDONED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many times this process has left a call's buffers to the MPI library because
/// the call was issued and its completion failed (memory kept until a later
/// synchronization of the target completes the call, or for good, rather than freed
/// while the library may write it). For tests and diagnostics.
#[doc(hidden)]
pub fn abandoned_landings() -> usize {
    ABANDONED.load(Ordering::Relaxed)
}

impl Landing {
    /// `len` (> 0) zeroed bytes, aligned to 16.
    pub(crate) fn new(len: usize) -> Landing {
        Landing(Raw::new(len))
    }

    /// The first byte, for MPI.
    #[inline(always)]
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.0.ptr.as_ptr()
    }

    /// Copies `data` to byte `at` (before the call that reads it is issued).
    pub(crate) fn put(&mut self, at: usize, data: &[u8]) {
        assert!(
            at + data.len() <= self.0.layout.size(),
            "inside the landing"
        );
        // SAFETY: in bounds (asserted); no MPI call uses the landing yet, and no
        // reference to it exists.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr().add(at), data.len()) };
    }

    /// Copies the bytes from `at` into `out`, after a synchronization completed every
    /// call that wrote them.
    #[inline(always)]
    pub(crate) fn take(&self, at: usize, out: &mut [u8]) {
        assert!(at + out.len() <= self.0.layout.size(), "inside the landing");
        // SAFETY: in bounds (asserted); the calls writing it are complete, so nothing
        // writes it meanwhile; `out` is a distinct local slice.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr().add(at), out.as_mut_ptr(), out.len()) };
    }

    /// Leaves the memory to MPI for the rest of the process: a call that may write or
    /// read it was issued and could not be completed.
    #[cold]
    pub(crate) fn abandon(self) {
        ABANDONED.fetch_add(1, Ordering::Relaxed);
        std::mem::forget(self);
    }

    /// Drops the landing if `completed`, else abandons it.
    pub(crate) fn settle(self, completed: bool) {
        if !completed {
            self.abandon();
        }
    }
}

/// Copies `out.len()` bytes of a landing from `from` into `out` (an 8-byte result as
/// one load and store).
///
/// # Safety
/// `from` points into a landing with `out.len()` bytes from it, written by calls that
/// are complete, with no reference to them.
#[inline(always)]
pub(crate) unsafe fn copy_landed(from: *const u8, out: &mut [u8]) {
    match <&mut [u8; 8]>::try_from(&mut *out) {
        // SAFETY: the caller's contract, for 8 bytes.
        Ok(word) => *word = unsafe { from.cast::<[u8; 8]>().read_unaligned() },
        // SAFETY: the caller's contract; `out` is distinct local memory.
        Err(_) => unsafe { std::ptr::copy_nonoverlapping(from, out.as_mut_ptr(), out.len()) },
    }
}

/// The largest landing a window keeps between fetching calls of its target handles;
/// a larger call gets one of its own.
const SCRATCH_MAX: usize = 64 << 10;
/// The size of a window's first kept landing.
const SCRATCH_MIN: usize = 64;

/// The origin copies of one window, by target; updated only in the world's turn.
pub(crate) struct Copies {
    slabs: Box<[Slab]>,
    /// The slabs' [`Extra`]s, summed.
    extra: Extra,
    /// The landing fetching calls use, one turn at a time (see [`Landing`]): reused by
    /// the next turn when the flush succeeded, abandoned when it failed.
    scratch: Option<Landing>,
    /// Its address and size (0 and 0 while there is none), for the fast path.
    /// Addresses, not pointers: no reference is made from them, and Copies stays Send.
    scratch_at: usize,
    scratch_len: usize,
    /// The address of this turn's landing; 0 while this turn's call took none.
    turn_at: usize,
    /// A landing larger than [`SCRATCH_MAX`], for this turn's call only.
    oversize: Option<Landing>,
    /// Landings of calls whose flush failed, by target: left to MPI until a later
    /// synchronization of that target succeeds (which completes the calls), or for
    /// good if the window is leaked.
    abandoned: Vec<(c_int, Landing)>,
}

impl Copies {
    pub(crate) fn new(size: usize) -> Copies {
        Copies {
            slabs: (0..size).map(|_| Slab::default()).collect(),
            extra: Extra::default(),
            scratch: None,
            scratch_at: 0,
            scratch_len: 0,
            turn_at: 0,
            oversize: None,
            abandoned: Vec::new(),
        }
    }

    /// A landing of at least `len` bytes, 16-byte aligned, for the fetching call
    /// issued in this turn (see `MpiWindow::flush_rank_after`): the window's kept one
    /// (grown up to [`SCRATCH_MAX`]), or one for this turn only.
    /// Valid until the turn ends with [`Copies::landed`] or
    /// [`Copies::abandon_landing`].
    #[inline(always)]
    pub(crate) fn landing(&mut self, len: usize) -> *mut u8 {
        if len <= self.scratch_len {
            self.turn_at = self.scratch_at;
            // the kept landing's pointer, its provenance exposed when it was made
            return std::ptr::with_exposed_provenance_mut(self.scratch_at);
        }
        self.landing_cold(len)
    }

    #[cold]
    #[inline(never)]
    fn landing_cold(&mut self, len: usize) -> *mut u8 {
        let l = if len > SCRATCH_MAX {
            self.oversize.insert(Landing::new(len))
        } else {
            // the kept landing is not in use (its last call completed): replace it
            let size = len.next_power_of_two().max(SCRATCH_MIN);
            let l = self.scratch.insert(Landing::new(size));
            (self.scratch_at, self.scratch_len) = (l.ptr().expose_provenance(), size);
            l
        };
        self.turn_at = l.ptr().expose_provenance();
        l.ptr()
    }

    /// This turn's landing, as [`Copies::landing`] gave it (null if the turn took
    /// none).
    #[inline(always)]
    pub(crate) fn turn_landing(&self) -> *const u8 {
        std::ptr::with_exposed_provenance(self.turn_at)
    }

    /// The turn's fetching call completed (or was never issued): its landing may be
    /// used again.
    #[inline(always)]
    pub(crate) fn landed(&mut self) {
        self.turn_at = 0;
        if self.oversize.is_some() {
            self.oversize = None;
        }
    }

    /// The turn's fetching call to `rank` was issued and its flush failed: MPI may
    /// still write the landing, so it is kept aside until a later synchronization of
    /// `rank` completes the call ([`Copies::release`]), and the next call gets a new
    /// one.
    #[cold]
    pub(crate) fn abandon_landing(&mut self, rank: c_int) {
        if std::mem::take(&mut self.turn_at) == 0 {
            return; // this turn's call used no landing
        }
        let l = if let Some(l) = self.oversize.take() {
            l
        } else if let Some(l) = self.scratch.take() {
            (self.scratch_at, self.scratch_len) = (0, 0);
            l
        } else {
            return;
        };
        ABANDONED.fetch_add(1, Ordering::Relaxed);
        self.abandoned.push((rank, l));
    }

    /// Keeps a copy of `data`, the origin of a call to `rank` about to be issued in
    /// this turn; its address, and `true` when the window holds enough copies that it
    /// should complete them. A rank outside the window is a caller's error; its copy
    /// goes with the last rank's.
    #[inline]
    pub(crate) fn keep(&mut self, rank: c_int, data: &[u8]) -> (*const u8, bool) {
        let Some(slab) = self.slabs.get_mut(rank as usize) else {
            return self.keep_stray(data);
        };
        let (at, added) = slab.keep(data);
        if added.copies == 0 {
            return (at, false);
        }
        self.extra.add(added);
        (at, self.extra.full())
    }

    /// [`Copies::keep`] of one element of `size` (at most 8) bytes given as bits
    /// (zero-extended, as [`rma_core::bytes_from_bits`] takes them): the copy is one
    /// 8-byte word whose first `size` bytes are the element's.
    #[inline]
    pub(crate) fn keep_bits(&mut self, rank: c_int, bits: u64, size: usize) -> (*const u8, bool) {
        // the element's bytes first, in memory order
        let word = if cfg!(target_endian = "little") {
            bits.to_le_bytes()
        } else {
            (bits << (8 * (8 - size.clamp(1, 8)))).to_be_bytes()
        };
        self.keep(rank, &word)
    }

    /// [`Copies::keep`] for a rank outside the window: with the last rank's (a slab
    /// of its own if there is none, as after [`Pending::leak`]).
    #[cold]
    fn keep_stray(&mut self, data: &[u8]) -> (*const u8, bool) {
        if self.slabs.is_empty() {
            self.slabs = vec![Slab::default()].into_boxed_slice();
        }
        self.keep(self.slabs.len() as c_int - 1, data)
    }

    /// Whether copies wait for their calls to complete.
    fn any(&self) -> bool {
        self.slabs.iter().any(Slab::in_use)
    }

    /// Drops the copies of calls to `rank` (every rank for `None`): a synchronization
    /// in this turn has completed them.
    #[inline(always)]
    pub(crate) fn release(&mut self, rank: Option<c_int>) {
        if !self.abandoned.is_empty() {
            self.release_abandoned(rank);
        }
        match rank {
            Some(r) => {
                if let Some(s) = self.slabs.get_mut(r as usize) {
                    let extra = s.reset();
                    if extra.copies != 0 {
                        self.extra.sub(extra);
                    }
                }
            }
            None => {
                self.slabs.iter_mut().for_each(|s| {
                    s.reset();
                });
                self.extra = Extra::default();
            }
        }
    }

    /// Frees the landings of calls to `rank` (every rank for `None`) whose flush
    /// failed: the synchronization in this turn has completed those calls.
    #[cold]
    #[inline(never)]
    fn release_abandoned(&mut self, rank: Option<c_int>) {
        match rank {
            Some(r) => self.abandoned.retain(|(t, _)| *t != r),
            None => self.abandoned.clear(),
        }
    }
}

/// The origin copies and dirty targets of one window.
pub(crate) struct Pending {
    copies: Turned<Copies>,
    /// Per target rank: a call to it waits for a flush to complete at the target.
    dirty: Box<[AtomicBool]>,
    /// The mark of a rank outside the window (a caller's error, whose MPI call fails
    /// before anything is marked): never read for a rank of the window.
    stray: AtomicBool,
}

/// One target's dirty mark (see the module docs); a target handle keeps its own.
#[derive(Clone, Copy)]
pub(crate) struct Mark<'a>(&'a AtomicBool);

impl Mark<'_> {
    /// Marks the target as having a call that a flush must complete at the target.
    #[inline]
    pub(crate) fn set(self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether the target is marked (read without a turn, for skipping a flush).
    #[inline]
    pub(crate) fn is_set(self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Whether this is the same mark as `other`.
    pub(crate) fn is(self, other: Mark<'_>) -> bool {
        std::ptr::eq(self.0, other.0)
    }

    /// Clears the mark; whether it was set. Called in a turn, before the flush's MPI
    /// call (see the module docs for why a plain read and store suffice).
    #[inline]
    pub(crate) fn take(self) -> bool {
        let was = self.is_set();
        if was {
            self.0.store(false, Ordering::Release);
        }
        was
    }
}

impl Pending {
    pub(crate) fn new(world: &MpiWorld) -> Pending {
        let size = world.size();
        Pending {
            copies: world.turned(Copies::new(size)),
            dirty: (0..size).map(|_| AtomicBool::new(false)).collect(),
            stray: AtomicBool::new(false),
        }
    }

    /// The copies, for [`MpiWorld::mpi_turned`].
    pub(crate) fn turned(&self) -> &Turned<Copies> {
        &self.copies
    }

    /// `rank`'s dirty mark.
    #[inline]
    pub(crate) fn mark(&self, rank: c_int) -> Mark<'_> {
        Mark(self.dirty.get(rank as usize).unwrap_or(&self.stray))
    }

    /// Whether any rank is marked.
    pub(crate) fn any_dirty(&self) -> bool {
        self.dirty.iter().any(|d| d.load(Ordering::Acquire))
    }

    /// Clears every rank's mark; whether any was set.
    pub(crate) fn take_all_dirty(&self) -> bool {
        self.dirty
            .iter()
            .fold(false, |any, d| d.swap(false, Ordering::AcqRel) | any)
    }

    /// Sets every mark back after a flush of every rank failed.
    pub(crate) fn restore_all_dirty(&self) {
        self.dirty
            .iter()
            .for_each(|d| d.store(true, Ordering::Release));
    }

    /// Whether copies wait for their calls to complete.
    pub(crate) fn has_copies(&mut self) -> bool {
        self.copies.get_mut().any()
    }

    /// After a closing synchronization of every epoch (fence, complete, unlock_all,
    /// or unlock of `rank`): drops the copies and the marks it covered.
    pub(crate) fn closed(&mut self, rank: Option<c_int>) {
        self.copies.get_mut().release(rank);
        match rank {
            Some(r) => {
                self.mark(r).take();
            }
            None => {
                self.take_all_dirty();
            }
        }
    }

    /// Keeps every copy alive for the rest of the process: MPI may still read them
    /// (the window could not be freed).
    pub(crate) fn leak(&mut self) {
        let c = self.copies.get_mut();
        std::mem::forget(std::mem::take(&mut c.slabs));
        std::mem::forget(std::mem::take(&mut c.abandoned));
        c.extra = Extra::default();
    }
}

#[cfg(test)]
mod tests {
    use super::{Copies, Extra, Slab, ALIGN, CHUNK, KEEP, MAX_BYTES, MAX_COPIES, SMALL};

    /// The bytes at `at`, read back.
    fn read(at: *const u8, n: usize) -> Vec<u8> {
        // SAFETY: the tests read copies still kept (their chunks are alive).
        unsafe { std::slice::from_raw_parts(at, n) }.to_vec()
    }

    #[test]
    fn copies_stay_put_aligned_and_intact_until_their_target_is_released() {
        let mut c = Copies::new(3);
        let mut kept = Vec::new();
        for i in 0..2000u32 {
            let data: Vec<u8> = (0..(i % 300) as usize)
                .map(|b| (b as u32 ^ i) as u8)
                .collect();
            let (at, full) = c.keep((i % 2 + 1) as i32, &data);
            assert!(!full);
            let align = if data.len() <= 8 { 8 } else { ALIGN };
            assert_eq!(at as usize % align, 0, "copy {i} aligned");
            kept.push((at, data));
        }
        for (at, data) in &kept {
            assert_eq!(&read(*at, data.len()), data, "no copy overwrote another");
        }
        assert!(!c.slabs[0].in_use() && c.slabs[2].in_use());
        c.release(Some(1));
        assert!(!c.slabs[1].in_use(), "rank 1's copies dropped");
        assert_eq!(c.extra, c.slabs[2].extra, "rank 2's counts stay");
        for (at, data) in kept.iter().skip(1).step_by(2) {
            assert_eq!(&read(*at, data.len()), data);
        }
        c.release(None);
        assert_eq!(c.extra, Extra::default());
        assert!(!c.any());
        assert!(c
            .slabs
            .iter()
            .all(|s| s.chunks.len() <= KEEP && s.big.is_empty()));
    }

    #[test]
    fn a_copy_that_does_not_fit_starts_the_next_chunk() {
        let mut s = Slab::default();
        let a = s.keep(&[1; SMALL]).0;
        let mut last = a;
        for _ in 0..CHUNK / SMALL {
            last = s.keep(&[2; SMALL]).0;
        }
        assert_eq!(s.chunks.len(), 2);
        assert_eq!(read(a, SMALL), vec![1; SMALL]);
        assert_eq!(read(last, SMALL), vec![2; SMALL]);
        let counted = s.reset();
        assert_eq!(counted.copies, CHUNK / SMALL + 1, "every copy counted");
        assert_eq!(counted.bytes, CHUNK, "the second chunk's bytes");
        assert_eq!(
            s.keep(&[3; 8]).0 as usize,
            s.chunks[0].ptr.as_ptr() as usize,
            "recycled"
        );
    }

    /// An element kept as bits reads back as the bytes `bytes_from_bits` makes.
    #[test]
    fn bits_keep_the_element_bytes_first() {
        let mut c = Copies::new(1);
        for (bits, size) in [
            (0x0102u64, 2),
            (0xA1, 1),
            (0x0102_0304, 4),
            (u64::MAX - 5, 8),
        ] {
            let mut want = [0u8; 8];
            rma_core::bytes_from_bits(bits, &mut want[..size]);
            let (at, full) = c.keep_bits(0, bits, size);
            assert!(!full);
            assert_eq!(
                read(at, size),
                want[..size].to_vec(),
                "{bits:#x} in {size} bytes"
            );
        }
    }

    /// Fast-path copies are counted when their chunk is left, mixed copies exactly.
    #[test]
    fn chunks_left_count_their_copies() {
        let mut s = Slab::default();
        let mut n = 0;
        // one chunk of 8-byte copies with a few medium ones between them, then one
        // copy that starts the next chunk
        while s.chunk == 0 {
            let len = if n % 50 == 7 { 24 } else { 8 };
            s.keep(&vec![n as u8; len]);
            n += 1;
        }
        assert_eq!(s.extra.copies, n, "{n} copies kept, all counted");
    }

    #[test]
    fn the_bound_asks_for_completion() {
        let mut c = Copies::new(2);
        let mut n = 0;
        while !c.keep((n % 2) as i32, &[0; 1]).1 {
            n += 1;
            assert!(n <= MAX_COPIES + CHUNK / 8 * 2, "no completion asked");
        }
        assert!(n + 1 >= MAX_COPIES, "asked after {n} copies");
        c.release(None);
        let mut n = 0;
        while !c.keep(0, &[0; SMALL + 1]).1 {
            n += 1;
            assert!(n <= MAX_COPIES, "no completion asked for large copies");
        }
        assert_eq!(n + 1, (MAX_BYTES / (SMALL + 1)).min(MAX_COPIES));
    }

    /// After a counted reset, fast-path copies alone still show (a fence checks for
    /// copies this way), and a second round starts at the first chunk again.
    #[test]
    fn fast_copies_after_a_counted_reset_show_and_recycle() {
        let mut c = Copies::new(1);
        let first = c.keep(0, &[1; 8]).0; // the first copy ever: counted
        c.release(Some(0));
        assert!(!c.any());
        for round in 0..2 {
            let at = c.keep_bits(0, 7, 8).0;
            assert_eq!(at, first, "round {round} starts at the first chunk");
            assert!(c.any(), "a fast-path copy is seen");
            assert_eq!(c.slabs[0].extra, Extra::default(), "and not counted");
            c.release(Some(0));
            assert!(!c.any());
        }
    }

    /// A copy for a rank outside the window goes with the last rank's, and one made
    /// after the slabs were forgotten gets a slab of its own.
    #[test]
    fn stray_copies_have_a_place() {
        let mut c = Copies::new(2);
        let at = c.keep(9, &[5; 8]).0;
        assert_eq!(read(at, 8), vec![5; 8]);
        assert!(c.slabs[1].in_use());
        c.slabs = Box::new([]);
        let at = c.keep(0, &[6; 8]).0;
        assert_eq!(read(at, 8), vec![6; 8]);
    }
}
