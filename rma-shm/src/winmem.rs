//! Window memory: one segment per rank holding a control area (header, the chunk-lock
//! table of the atomic kernels, and, for queued windows, the rings and counters of the
//! queued transport) and, for allocated windows, the data; every rank maps every peer's
//! segment. Layouts are `#[repr(C)]`, hold offsets not addresses, and are validated
//! when a peer's segment is opened.

use crate::ring::{ring_cap, RingCtl, CTL_LEN};
use crate::segment::Segment;
use crate::world::{random_u64, Collective, ShmMode, ShmWorld, NAME_ATTEMPTS};
use rma_core::{Error, Rank, Result};
use rma_ops::atomic::{Domain, Slot, MAX_CHUNK_LOCKS, SLOT_BYTES};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

const MAGIC: u64 = 0x726d_615f_7769_6e64; // "rma_wind"
/// Chunk locks per window segment (the atomicity domain's lock table).
const CHUNK_LOCKS: usize = MAX_CHUNK_LOCKS;
const HEADER_LEN: usize = 128;
const CHUNK_LOCKS_OFFSET: usize = 4096;
/// Where the synchronization area starts (page-aligned): the passive-target lock and
/// the post/complete counters of active-target epochs.
const SYNC_OFFSET: usize = 8192;
const _: () = assert!(CHUNK_LOCKS_OFFSET + CHUNK_LOCKS * 4 <= SYNC_OFFSET);
const LOCK_LEN: usize = 64;
const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_LEN);
const PAGE: usize = 4096;
/// Bytes of one ring (control block and data) in a window over `ranks` ranks.
fn ring_len(ranks: usize) -> usize {
    CTL_LEN + ring_cap(ranks)
}
const PAIR_LEN: usize = 64;
const BELL_LEN: usize = 64;

#[repr(C)]
struct Header {
    magic: AtomicU64,
    data_offset: AtomicU64,
    data_len: AtomicU64,
    disp_unit: AtomicU64,
    chunk_locks: AtomicU64,
    queue_offset: AtomicU64,
    queue_len: AtomicU64,
    ranks: AtomicU64,
}

/// The target's doorbell: origins ring it after enqueuing; its progress engine sleeps
/// on it.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct Doorbell {
    pub(crate) bell: AtomicU32,
    pub(crate) sleeping: AtomicU32,
    /// Set when the owner's window is gone: origins waiting on it give up.
    pub(crate) closed: AtomicU32,
}

/// Per (origin, target) completion state, in the target's segment, slot `origin`.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct PairCtl {
    /// The sequence number of the last operation from `origin` fully applied.
    pub(crate) applied: AtomicU64,
    /// Bumped when `applied` changes (the origin's futex word).
    pub(crate) signal: AtomicU32,
    /// Set by an origin about to sleep on `signal`.
    pub(crate) waiting: AtomicU32,
    /// Set if a message from `origin` was rejected as malformed.
    pub(crate) rejected: AtomicU32,
}

const _: () = assert!(std::mem::size_of::<Doorbell>() == BELL_LEN);
const _: () = assert!(std::mem::size_of::<PairCtl>() == PAIR_LEN);

/// Where the origins' lock claims start, from the sync area's start: after the lock
/// block and the `posted[ranks]` and `completed[ranks]` counters (u32 each).
fn claims_offset(ranks: usize) -> Option<usize> {
    LOCK_LEN.checked_add(ranks.checked_mul(8)?)
}

/// Where the origins' announcement slots start, from the sync area's start: after the
/// lock block, the epoch counters and the lock claims (`claims[ranks]`, u64 each).
fn slots_offset(ranks: usize) -> Option<usize> {
    let raw = claims_offset(ranks)?.checked_add(ranks.checked_mul(8)?)?;
    raw.checked_add(SLOT_BYTES - 1)
        .map(|v| v & !(SLOT_BYTES - 1))
}

/// Turn lines of a window's passive-target lock: a power of two at least the ranks,
/// so that the tickets outstanding at once (at most one per rank) have lines of their
/// own and the line of a ticket does not change when the u32 tickets wrap.
fn turn_lines(ranks: usize) -> Option<usize> {
    ranks.max(1).checked_next_power_of_two()
}

/// Where the turn lines start, from the sync area's start: after the announcement
/// slots (64-aligned, as SLOT_BYTES is a multiple of 64).
fn turns_offset(ranks: usize) -> Option<usize> {
    slots_offset(ranks)?.checked_add(ranks.checked_mul(SLOT_BYTES)?)
}

/// Bytes of the synchronization area for `ranks` ranks: the lock block, the epoch
/// counters, the lock claims, one announcement slot (SLOT_BYTES) per origin, then the
/// lock's turn lines (TURN_LEN each): 210 to 270 bytes per rank in all.
fn sync_len(ranks: usize) -> Option<usize> {
    let raw = turns_offset(ranks)?.checked_add(turn_lines(ranks)?.checked_mul(TURN_LEN)?)?;
    raw.checked_add(PAGE - 1).map(|v| v & !(PAGE - 1))
}

/// Where the queue area starts for `ranks` ranks (page-aligned).
fn queue_offset(ranks: usize) -> Option<usize> {
    SYNC_OFFSET.checked_add(sync_len(ranks)?)
}

/// The passive-target lock of a window: a ticket lock with reader counting, fair
/// (first come, first served) for shared and exclusive requests alike, whose waiters
/// wait on turn lines of their own ([`TurnLine`]); and the sleeper counts of the waits
/// on this rank's synchronization words. The ticket being served is not stored: it is
/// the latest ticket handed to a turn line ([`WindowMemory::served`]), so a handoff
/// writes one line, not this one too.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct LockWord {
    /// The next ticket to hand out.
    pub(crate) next: AtomicU32,
    /// Unused (kept so that the words below keep their offsets).
    _reserved: AtomicU32,
    /// Shared holders inside.
    pub(crate) readers: AtomicU32,
    /// [`FREEING`] once this rank has entered the window's collective free (epochs.rs
    /// `free_barrier`), [`DROPPED`] once it dropped the window without it (epochs.rs
    /// `depart`); 0 before. Written by its owner only, never cleared.
    pub(crate) freeing: AtomicU32,
    /// Waiters asleep on `readers` (an exclusive holder waiting for readers to leave).
    pub(crate) drain_sleepers: AtomicU32,
    /// Waiters asleep on this rank's post / complete counters (only this rank waits on
    /// them).
    pub(crate) epoch_sleepers: AtomicU32,
    /// Waiters asleep on `freeing`.
    pub(crate) free_sleepers: AtomicU32,
}

/// [`LockWord::freeing`]: the rank entered the window's free.
pub(crate) const FREEING: u32 = 1;
/// [`LockWord::freeing`]: the rank dropped the window without freeing it.
pub(crate) const DROPPED: u32 = 2;

/// Where the waiter holding ticket `t` of a window's lock waits: the line
/// `t mod turn_lines`. The rank that ends the turn before `t` stores `t` into `go`,
/// and wakes the line only if its waiter announced itself in `sleepers`. One waiter per
/// line at a time, so a handoff moves one cache line between two ranks, however many
/// wait.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct TurnLine {
    /// The last ticket whose turn was handed to this line.
    pub(crate) go: AtomicU32,
    /// 1 while this line's waiter sleeps on `go`.
    pub(crate) sleepers: AtomicU32,
    /// 1 if the turn in `go` was handed on by an exclusive holder's release: no reader
    /// can be inside then (readers enter only on their own turn), so an exclusive
    /// request need not look at `readers`.
    pub(crate) drained: AtomicU32,
}

const TURN_LEN: usize = 64;
const _: () = assert!(std::mem::size_of::<TurnLine>() == TURN_LEN);
const _: () = assert!(SLOT_BYTES % TURN_LEN == 0);

// What an origin says about its part in a window's passive-target lock: its claim,
// one word per (origin, lock owner) in the origin's sync area (`WindowMemory::lock_claim`),
// written only by that origin. The ticket is in the high 32 bits, the state
// (`CLAIM_*`) in the low ones. Waiters compare the lock word with the claims to tell a
// lock that is merely held (a live rank claims the turn or a read) from one that no
// rank can ever release (a ticket or a reader nobody claims): see epochs.rs.

/// No part in the lock.
pub(crate) const CLAIM_NONE: u32 = 0;
/// Holds a ticket and waits for its turn.
pub(crate) const CLAIM_WAITING: u32 = 1;
/// Has the turn (its ticket is served) and holds, or waits for readers to leave to
/// hold, the lock exclusively.
pub(crate) const CLAIM_EXCLUSIVE: u32 = 2;
/// Is counted in `readers` (claimed before entering, cleared after leaving).
pub(crate) const CLAIM_SHARED: u32 = 3;

const _: () = assert!(std::mem::size_of::<LockWord>() == LOCK_LEN);

/// Bytes of the queue area for `ranks` ranks: doorbell, pair slots, request rings
/// (incoming, one per origin) and reply rings (incoming, one per target).
fn queue_len(ranks: usize) -> Option<usize> {
    let rings = ranks.checked_mul(2)?.checked_mul(ring_len(ranks))?;
    let raw = BELL_LEN + ranks.checked_mul(PAIR_LEN)? + rings;
    raw.checked_add(PAGE - 1).map(|v| v & !(PAGE - 1))
}

pub use rma_core::Flavor;

use rma_core::{region_covers, region_word, Regions, REGIONS};

/// Bytes of the region table at the start of a dynamic window's data area.
const TABLE_LEN: usize = REGIONS * 8;

/// One rank's window as seen from this rank.
#[derive(Debug)]
struct Peer {
    /// Keeps the mapping alive (one per process, shared by ranks as threads).
    seg: Arc<Segment>,
    /// The data, or null where this rank cannot reach it (another process's private
    /// memory).
    data: *mut u8,
    /// The data's address in its owner's process (for alignment arithmetic: equal to
    /// `data` where this rank maps it, the owner's buffer address for a window created
    /// over another process's private memory).
    owner_addr: usize,
    len: usize,
    disp_unit: usize,
}

/// The window memory of every rank, mapped into this rank.
#[derive(Debug)]
pub struct WindowMemory {
    /// The window's number in its world (creation order, from 0; the same on every
    /// rank): its collective calls are matched by it ([`Collective`]).
    id: u64,
    rank: usize,
    flavor: Flavor,
    /// A contiguous shared window's data segment (every rank's part), kept mapped.
    #[allow(dead_code)] // held for its mapping
    data_seg: Option<Arc<Segment>>,
    /// A dynamic window's regions attached on this rank: (table slot, offset, length).
    regions: std::sync::Mutex<Regions>,
    queues: bool,
    direct: bool,
    peers: Vec<Peer>,
    /// Where the announcement slots start in every segment (SYNC_OFFSET +
    /// slots_offset(ranks), computed once).
    slots_at: usize,
    /// This process's id, written into chunk locks and announcement slots (read once:
    /// getpid is a system call, and the domain is reached on every accumulate).
    pid: u32,
    /// Work this rank does while it waits in the window's synchronization (the queued
    /// transport's engine draining its request rings, which a peer that holds the lock
    /// or owes a complete may need); set once by the transport.
    helper: std::sync::OnceLock<std::sync::Weak<dyn Helper>>,
}

/// Work a rank can do while it waits in a window's synchronization ([`WindowMemory`]'s
/// waits call it between checks, and start spinning anew when it did something).
pub(crate) trait Helper: Send + Sync + std::fmt::Debug {
    /// Does a bounded amount of pending work; whether there was any.
    fn help(&self) -> bool;
}

// SAFETY: the raw pointers point into mappings owned by `peers[*].seg` (or, for created
// windows, into buffers their owners lend for the window's whole life); all access
// through them follows the kernels' contracts, and the mappings are valid from any
// thread.
unsafe impl Send for WindowMemory {}
// SAFETY: as above; no method hands out references to the mapped data bytes.
unsafe impl Sync for WindowMemory {}

fn header(seg: &Segment) -> &Header {
    // SAFETY: every window segment is at least SYNC_OFFSET + PAGE bytes and page-aligned;
    // Header holds only atomics, so a shared reference is sound while peers update it.
    unsafe { &*seg.as_ptr().cast::<Header>() }
}

pub(crate) fn chunk_locks(seg: &Segment) -> &[AtomicU32] {
    // SAFETY: the table lies inside the control area (const-asserted above), is 4-byte
    // aligned, and holds only atomics.
    unsafe {
        std::slice::from_raw_parts(
            seg.as_ptr().add(CHUNK_LOCKS_OFFSET).cast::<AtomicU32>(),
            CHUNK_LOCKS,
        )
    }
}

/// The first byte of a creation record: how this rank's part went.
const CREATED: u8 = 1;
/// This rank could not create its part for want of memory (class NO_MEM).
const FAILED_NO_MEM: u8 = 2;
/// This rank could not create its part for another reason.
const FAILED_OTHER: u8 = 0;

fn status_of(r: &Result<Arc<Segment>>) -> u8 {
    match r {
        Ok(_) => CREATED,
        Err(e) if e.class() == rma_core::ErrorClass::NoMem => FAILED_NO_MEM,
        Err(_) => FAILED_OTHER,
    }
}

/// A rank's creation record: its status, window size, displacement unit, buffer
/// address (created windows) and the random tag in its segment's name.
fn encode(status: u8, len: usize, disp_unit: usize, addr: usize, tag: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(33);
    v.push(status);
    v.extend_from_slice(&(len as u64).to_ne_bytes());
    v.extend_from_slice(&(disp_unit as u64).to_ne_bytes());
    v.extend_from_slice(&(addr as u64).to_ne_bytes());
    v.extend_from_slice(&tag.to_ne_bytes());
    v
}

fn decode(b: &[u8]) -> Option<(u8, usize, usize, usize, u64)> {
    if b.len() != 33 {
        return None;
    }
    let word =
        |i: usize| u64::from_ne_bytes(b[1 + 8 * i..9 + 8 * i].try_into().unwrap_or_default());
    Some((
        b[0],
        word(0) as usize,
        word(1) as usize,
        word(2) as usize,
        word(3),
    ))
}

/// What a window needs besides its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryOptions {
    /// Rings and counters for the queued transport.
    pub queues: bool,
}

impl WindowMemory {
    /// Collectively allocates a window of `len` bytes on this rank in a shared segment
    /// (MPI_Win_allocate). Every rank must call it; if any rank fails, all return an
    /// error (this rank's own, or one naming the failed rank).
    pub fn allocate(
        world: &ShmWorld,
        len: usize,
        disp_unit: usize,
        opts: MemoryOptions,
    ) -> Result<WindowMemory> {
        Self::build(
            world,
            Flavor::Allocate,
            len,
            disp_unit,
            None,
            opts,
            false,
            None,
        )
    }

    /// Collectively creates a dynamic window (MPI_Win_create_dynamic) whose regions may
    /// hold `capacity` bytes at once on this rank: each rank's segment holds a table
    /// of [`REGIONS`] region slots, which every rank reads, and `capacity` bytes that
    /// [`WindowMemory::attach`] hands out. The memory stays mapped until the window
    /// drops, so a late access to a detached region reaches window memory, never
    /// freed memory.
    pub fn create_dynamic(
        world: &ShmWorld,
        capacity: usize,
        opts: MemoryOptions,
    ) -> Result<WindowMemory> {
        let len = capacity
            .checked_add(TABLE_LEN)
            .ok_or_else(|| Error::NoMem {
                reason: format!("a dynamic window of {capacity} bytes"),
            })?;
        let mut mem = Self::build(world, Flavor::Dynamic, len, 1, None, opts, false, None)?;
        for p in &mut mem.peers {
            // SAFETY: every part is TABLE_LEN + capacity bytes (validated against the
            // header): the data proper starts past the table.
            p.data = unsafe { p.data.add(TABLE_LEN) };
            p.len -= TABLE_LEN;
        }
        // a region's address is its owner's (the one attach hands out), which with
        // ranks as processes differs from where this process maps the part
        let own = mem.peers[mem.rank].data as u64;
        let all = world.allgather_as(Collective::Create(mem.id), &own.to_ne_bytes())?;
        for (r, b) in all.iter().enumerate() {
            let addr = b
                .as_slice()
                .try_into()
                .map(u64::from_ne_bytes)
                .map_err(|_| Error::Internal {
                    reason: format!("rank {r} sent a malformed dynamic window address"),
                })?;
            mem.peers[r].owner_addr = addr as usize;
        }
        Ok(mem)
    }

    /// The region table of `rank`'s part of a dynamic window: [`REGIONS`] words, each
    /// 0 (free) or [`region_word`] of a region attached there.
    /// `None` for a window that is not dynamic or a rank outside it.
    fn region_table(&self, rank: usize) -> Option<&[AtomicU64]> {
        if self.flavor != Flavor::Dynamic || rank >= self.peers.len() {
            return None;
        }
        // SAFETY: a dynamic window's part starts with TABLE_LEN bytes of table words
        // (create_dynamic moved `data` past them), inside the mapped segment,
        // 8-aligned (the data area is page-aligned), accessed only atomically.
        Some(unsafe {
            std::slice::from_raw_parts(
                self.peers[rank].data.sub(TABLE_LEN).cast::<AtomicU64>(),
                REGIONS,
            )
        })
    }

    fn own_table(&self) -> Result<&[AtomicU64]> {
        self.region_table(self.rank).ok_or_else(|| Error::Flavor {
            reason: "attach and detach need a dynamic window".into(),
        })
    }

    /// Attaches a region holding a copy of `data` to this rank's part (MPI_Win_attach):
    /// the first gap that fits (64-byte aligned), published in a free table slot once
    /// its bytes are in place. Its byte offset in the part. Class RMA_ATTACH when no
    /// gap or no slot is left.
    pub fn attach(&self, data: &[u8]) -> Result<usize> {
        let table = self.own_table()?;
        let mut regions = self
            .regions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (slot, at) = regions.place(data.len(), self.peers[self.rank].len)?;
        if !data.is_empty() {
            // SAFETY: at + len <= capacity (`place`): inside this rank's part, whose
            // words are accessed only by word atomics.
            unsafe { rma_ops::shared::copy_in(self.peers[self.rank].data.add(at), data) };
        }
        table[slot].store(region_word(at, data.len()), Ordering::SeqCst);
        regions.insert(slot, at, data.len());
        Ok(at)
    }

    /// Detaches the region at byte `offset` of this rank's part (MPI_Win_detach): its
    /// slot is cleared (later calls to it fail their range check), then its bytes are
    /// copied into `out`. Class RMA_ATTACH where no region of `out.len()` bytes starts
    /// at `offset`.
    pub fn detach(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let table = self.own_table()?;
        let mut regions = self
            .regions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let slot = regions.remove(offset, out.len())?;
        table[slot].store(0, Ordering::SeqCst);
        if !out.is_empty() {
            // SAFETY: the region lay inside this rank's part (as in `attach`).
            unsafe { rma_ops::shared::copy_out(self.peers[self.rank].data.add(offset), out) };
        }
        Ok(())
    }

    /// Whether bytes `[start, end)` of `rank`'s part lie in one region it attached
    /// (false for a window that is not dynamic or a rank outside it).
    pub fn attached(&self, rank: usize, start: usize, end: usize) -> bool {
        self.region_table(rank).is_some_and(|t| {
            t.iter()
                .any(|w| region_covers(w.load(Ordering::Acquire), start, end))
        })
    }

    /// Collectively allocates a shared window of `len` bytes on this rank
    /// (MPI_Win_allocate_shared): as [`WindowMemory::allocate`], with every rank's part
    /// reachable by load and store from every rank (every rank maps every part).
    /// With `contiguous` the parts lie in one segment, in rank order, each starting at
    /// [`rma_core::shared_offset`]; otherwise each rank's part is page-aligned in a
    /// segment of its own.
    pub fn allocate_shared(
        world: &ShmWorld,
        len: usize,
        disp_unit: usize,
        contiguous: bool,
        opts: MemoryOptions,
    ) -> Result<WindowMemory> {
        Self::build(
            world,
            Flavor::Shared,
            len,
            disp_unit,
            None,
            opts,
            contiguous,
            None,
        )
    }

    /// Collectively creates a window over `len` bytes at `ptr`, memory this rank owns
    /// (MPI_Win_create). With ranks as threads every rank can reach it directly; with
    /// ranks as processes only its owner can ([`WindowMemory::direct`] is false), so
    /// such a window needs the queued transport (`opts.queues`).
    ///
    /// # Safety
    /// `ptr` must be 8-byte aligned (a misaligned one is refused: class ARG on its
    /// rank, and every other rank's call fails naming that rank) and
    /// valid for reads and writes of `len` bytes rounded up to a whole number of
    /// 8-byte words, for the whole life of the returned value (and for as long as any
    /// peer may still reach it: a window dropped without its collective free must
    /// leave the memory in place). The window's calls read and write whole aligned
    /// words, with word atomics only (`rma_ops::shared`); while it lives every other
    /// access to those words must be a word atomic too, never through a Rust
    /// reference, with one exception the caller answers for: memory a program outside
    /// Rust (C, through MPI_Win_create) also loads and stores. That program keeps its
    /// own accesses apart from the window's calls to the same bytes as MPI requires
    /// (by synchronization), and its plain stores to *other* bytes of a word a call
    /// updates at the same time rely on the hardware keeping byte stores and word
    /// atomics coherent (x86-64 and aarch64 do), not on the C or Rust memory model, as
    /// with any MPI over shared memory. If `len` is not a whole number of words, the
    /// bytes of the last word past `len` are read and written back atomically too, so
    /// they must belong to nothing else that is accessed meanwhile.
    pub unsafe fn create(
        world: &ShmWorld,
        ptr: *mut u8,
        len: usize,
        disp_unit: usize,
        opts: MemoryOptions,
    ) -> Result<WindowMemory> {
        Self::build(
            world,
            Flavor::Create,
            len,
            disp_unit,
            Some(ptr),
            opts,
            false,
            None,
        )
    }

    /// Collectively creates a window over memory every rank already reaches by load
    /// and store (MPI_Win_create over memory of a shared window): this rank's `len`
    /// bytes are at `peers[rank]`, and rank r's at `peers[r]` in this process, as each
    /// rank passes them. The window is direct (the atomic transport serves it with
    /// ranks as processes) and never copies or frees the memory.
    ///
    /// # Safety
    /// `peers` has one entry per rank; for every rank r with a nonzero length,
    /// `peers[r]` is 8-byte aligned and valid for reads and writes of rank r's length
    /// rounded up to whole 8-byte words, in this process, for the whole life of the
    /// returned value, and every access to those words while it lives is a word atomic
    /// (`rma_ops::shared`) or made by code outside Rust (a C program's own loads and
    /// stores, as with a shared window's memory).
    pub unsafe fn create_mapped(
        world: &ShmWorld,
        len: usize,
        disp_unit: usize,
        peers: &[usize],
        opts: MemoryOptions,
    ) -> Result<WindowMemory> {
        if peers.len() != world.size() {
            return Err(Error::arg(format!(
                "a mapped window needs {} addresses, one per rank, got {}",
                world.size(),
                peers.len()
            )));
        }
        Self::build(
            world,
            Flavor::Create,
            len,
            disp_unit,
            Some(peers[world.rank()] as *mut u8),
            opts,
            false,
            Some(peers),
        )
    }

    #[allow(clippy::too_many_arguments)] // one builder behind every public constructor
    fn build(
        world: &ShmWorld,
        flavor: Flavor,
        len: usize,
        disp_unit: usize,
        user: Option<*mut u8>,
        opts: MemoryOptions,
        contiguous: bool,
        mapped: Option<&[usize]>,
    ) -> Result<WindowMemory> {
        // where each rank's data lives: in its own segment (allocated, and shared
        // windows laid out noncontiguously), in one segment for all (contiguous
        // shared windows), or in the creator's buffer (created windows)
        let in_segment = match flavor {
            Flavor::Allocate | Flavor::Dynamic => true,
            Flavor::Shared => !contiguous,
            Flavor::Create => false,
        };
        let id = world.next_object_id();
        let (rank, ranks) = (world.rank(), world.size());
        // a segment's name ends in a random tag of its creator's, which the peers learn
        // from its creation record: a name that follows from the world's name, the id
        // and the rank alone could be taken first by anyone who sees the world's name
        // (/dev/shm is listed to every user), and the window would fail
        let name_of = |r: usize, tag: u64| format!("{}-{tag:016x}-w{id}-r{r}", world.name());
        let tag = std::cell::Cell::new(0u64);
        let qlen = if opts.queues {
            queue_len(ranks)
        } else {
            Some(0)
        };
        let qoff = queue_offset(ranks);
        let data_offset = qlen
            .zip(qoff)
            .and_then(|(q, o)| o.checked_add(q))
            .map(|end| end.max(SYNC_OFFSET + PAGE));
        let seg_len = if in_segment {
            // whole words past the data: window memory is accessed in aligned words
            data_offset
                .and_then(|d| d.checked_add(len))
                .and_then(|e| e.checked_add(rma_ops::shared::WORD - 1))
                .map(|e| e & !(rma_ops::shared::WORD - 1))
        } else {
            data_offset
        };
        let mine = if disp_unit == 0 {
            Err(Error::InvalidDispUnit { disp_unit })
        } else if user.is_some_and(|p| len > 0 && p as usize % rma_ops::shared::WORD != 0) {
            // the caller's promise broken; refused before any access (every rank learns
            // of it below, as of any rank's failure here)
            Err(Error::arg(format!(
                "window memory at {:p} is not {}-byte aligned",
                user.unwrap_or(std::ptr::null_mut()),
                rma_ops::shared::WORD
            )))
        } else {
            seg_len
                .ok_or_else(|| Error::NoMem {
                    reason: format!("a window of {len} bytes"),
                })
                .and_then(|l| {
                    let fresh = || {
                        tag.set(random_u64());
                        name_of(rank, tag.get())
                    };
                    Segment::create_unique(fresh, l, NAME_ATTEMPTS).map(Segment::share)
                })
        };
        if let (Ok(seg), Some(doff), Some(q)) = (&mine, data_offset, qlen) {
            let h = header(seg);
            let stored_data_offset = if in_segment { doff } else { 0 };
            h.data_offset
                .store(stored_data_offset as u64, Ordering::Relaxed);
            h.data_len.store(len as u64, Ordering::Relaxed);
            h.disp_unit.store(disp_unit as u64, Ordering::Relaxed);
            h.chunk_locks.store(CHUNK_LOCKS as u64, Ordering::Relaxed);
            h.queue_offset.store(
                if opts.queues {
                    qoff.unwrap_or(0) as u64
                } else {
                    0
                },
                Ordering::Relaxed,
            );
            h.queue_len.store(q as u64, Ordering::Relaxed);
            h.ranks.store(ranks as u64, Ordering::Relaxed);
            h.magic.store(MAGIC, Ordering::Release);
        }
        let addr = user.map(|p| p as usize).unwrap_or(0);
        let all = world.allgather_as(
            Collective::Create(id),
            &encode(status_of(&mine), len, disp_unit, addr, tag.get()),
        );
        let cleanup = |seg: &Result<Arc<Segment>>| {
            if let Ok(s) = seg {
                s.unlink();
            }
        };
        let all = match all {
            Ok(a) => a,
            Err(e) => {
                cleanup(&mine);
                return Err(e);
            }
        };
        let mut infos: Vec<(u8, usize, usize, usize, u64)> = Vec::with_capacity(all.len());
        for (r, b) in all.iter().enumerate() {
            match decode(b) {
                Some(i) => infos.push(i),
                None => {
                    cleanup(&mine);
                    return Err(Error::Internal {
                        reason: format!("corrupt window creation record from rank {r}"),
                    });
                }
            }
        }
        let mine = mine?;
        if let Some(bad) = infos.iter().position(|i| i.0 != CREATED) {
            mine.unlink();
            // a peer out of memory makes the window fail for want of memory on every
            // rank (the same class everywhere), naming the rank that ran out
            return Err(if infos[bad].0 == FAILED_NO_MEM {
                Error::NoMem {
                    reason: format!(
                        "rank {bad} could not reserve its {} bytes of the window",
                        infos[bad].1
                    ),
                }
            } else {
                Error::ProcFailed {
                    rank: Rank::new(bad as u32),
                    reason: "it could not create its part of the window".into(),
                }
            });
        }
        let direct =
            flavor != Flavor::Create || world.mode() == ShmMode::Threads || mapped.is_some();
        // a contiguous shared window's data: one segment rank 0 creates for all
        let (data_seg, mut failure) = if flavor == Flavor::Shared && contiguous {
            let lens: Vec<usize> = infos.iter().map(|i| i.1).collect();
            match Self::shared_data(world, id, &format!("{}-w{id}-d", world.name()), &lens) {
                Ok((Ok(seg), offsets)) => (Some((seg, offsets)), None),
                // this rank could not map it: the all-gather below tells the others
                Ok((Err(e), _)) => (None, Some(e)),
                Err(e) => {
                    mine.unlink();
                    return Err(e);
                }
            }
        } else {
            (None, None)
        };
        let mut peers = Vec::with_capacity(infos.len());
        for (r, &(_, plen, pdu, paddr, ptag)) in infos.iter().enumerate() {
            let reach = match (&data_seg, user) {
                (Some((seg, offsets)), _) => {
                    // SAFETY: offsets[r] + the rank's length (rounded up to whole
                    // words) lies inside the data segment, which shared_data sized so.
                    unsafe { seg.as_ptr().add(offsets[r]) as usize }
                }
                (None, _) if mapped.is_some() => mapped.map_or(0, |m| m[r]),
                (None, Some(p)) if r == rank => p as usize,
                _ => paddr,
            };
            let reach = if direct || r == rank { reach } else { 0 };
            match Segment::open_shared(&name_of(r, ptag), SYNC_OFFSET + PAGE)
                .and_then(|seg| Self::peer(seg, in_segment, plen, pdu, reach, ranks, opts))
            {
                Ok(mut p) => {
                    if flavor == Flavor::Create {
                        p.owner_addr = paddr;
                    }
                    peers.push(p)
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        // every rank has mapped every segment (or failed): the names can go
        let synced = world.allgather_as(Collective::Create(id), &[failure.is_none() as u8]);
        mine.unlink();
        if let Some((seg, _)) = &data_seg {
            seg.unlink();
        }
        if let Some(e) = failure {
            return Err(e);
        }
        if let Some(bad) = synced?.iter().position(|v| v.first() != Some(&1)) {
            return Err(Error::ProcFailed {
                rank: Rank::new(bad as u32),
                reason: "it could not map the window's segments".into(),
            });
        }
        Ok(WindowMemory {
            id,
            rank,
            flavor,
            data_seg: data_seg.map(|(seg, _)| seg),
            regions: std::sync::Mutex::new(Regions::default()),
            queues: opts.queues,
            direct,
            peers,
            slots_at: SYNC_OFFSET
                + slots_offset(ranks).ok_or_else(|| Error::NoMem {
                    reason: format!("a window over {ranks} ranks"),
                })?,
            helper: std::sync::OnceLock::new(),
            pid: match std::process::id() {
                pid @ 1..0x40_0000 => pid,
                pid => {
                    return Err(Error::Internal {
                        reason: format!("process id {pid} does not fit a lock word's 22 bits"),
                    })
                }
            },
        })
    }

    /// The data segment of a contiguous shared window whose ranks have the lengths
    /// `lens`, named `name`: rank 0 creates it, every rank maps it. Returns it with the
    /// offset of each rank's part ([`rma_core::shared_offset`]). Collective; fails on
    /// every rank alike (the outer error) if rank 0 could not create it; a failure of
    /// this rank alone to map it is the inner error, which the caller must report to
    /// the others through its next all-gather rather than return at once.
    #[allow(clippy::type_complexity)]
    fn shared_data(
        world: &ShmWorld,
        id: u64,
        name: &str,
        lens: &[usize],
    ) -> Result<(Result<Arc<Segment>>, Vec<usize>)> {
        let ranks = lens.len();
        let offsets: Option<Vec<usize>> = (0..=ranks)
            .map(|r| rma_core::shared_offset(lens, r))
            .collect();
        let offsets = offsets.ok_or_else(|| Error::NoMem {
            reason: format!("a shared window of {lens:?} bytes per rank overflows"),
        })?;
        // whole 64-byte parts, at least one (a mapping is never empty)
        let total = offsets[ranks].max(64);
        let tag = std::cell::Cell::new(0u64);
        let full = |t: u64| format!("{name}-{t:016x}");
        let mine = if world.rank() == 0 {
            let fresh = || {
                tag.set(random_u64());
                full(tag.get())
            };
            Some(Segment::create_unique(fresh, total, NAME_ATTEMPTS).map(Segment::share))
        } else {
            None
        };
        let status = match &mine {
            Some(r) => status_of(r),
            None => CREATED,
        };
        let mut rec = vec![status];
        rec.extend_from_slice(&tag.get().to_ne_bytes());
        let all = world.allgather_as(Collective::Create(id), &rec);
        let unlink = || {
            if let Some(Ok(s)) = &mine {
                s.unlink();
            }
        };
        let all = all.inspect_err(|_| unlink())?;
        let root = &all[0];
        if root.len() != 9 {
            unlink();
            return Err(Error::Internal {
                reason: "corrupt shared-window record from rank 0".into(),
            });
        }
        match root[0] {
            CREATED => {}
            FAILED_NO_MEM => {
                return Err(Error::NoMem {
                    reason: format!("rank 0 could not reserve the shared window's {total} bytes"),
                })
            }
            _ => {
                return Err(mine.and_then(Result::err).unwrap_or(Error::ProcFailed {
                    rank: Rank::new(0),
                    reason: "it could not create the shared window's segment".into(),
                }))
            }
        }
        let root_tag = u64::from_ne_bytes(root[1..9].try_into().unwrap_or_default());
        let seg = match mine {
            Some(Ok(s)) => Ok(s),
            _ => Segment::open_shared(&full(root_tag), total),
        };
        Ok((seg, offsets))
    }

    /// Validates a peer's segment header against what it announced.
    fn peer(
        seg: Arc<Segment>,
        in_segment: bool,
        len: usize,
        disp_unit: usize,
        addr: usize,
        ranks: usize,
        opts: MemoryOptions,
    ) -> Result<Peer> {
        let h = header(&seg);
        let corrupt = |what: &str| Error::Internal {
            reason: format!("window segment {} is corrupt: {what}", seg.name()),
        };
        if h.magic.load(Ordering::Acquire) != MAGIC {
            return Err(corrupt("bad magic"));
        }
        let word = |a: &AtomicU64| a.load(Ordering::Relaxed) as usize;
        let (off, dlen, du, st) = (
            word(&h.data_offset),
            word(&h.data_len),
            word(&h.disp_unit),
            word(&h.chunk_locks),
        );
        let (qoff, qlen, n) = (word(&h.queue_offset), word(&h.queue_len), word(&h.ranks));
        if dlen != len || du != disp_unit || st != CHUNK_LOCKS || n != ranks {
            return Err(corrupt("header disagrees with the creation record"));
        }
        if opts.queues {
            let expect = queue_len(ranks).ok_or_else(|| corrupt("queue area size overflows"))?;
            if Some(qoff) != queue_offset(ranks)
                || qlen != expect
                || qoff.checked_add(qlen).is_none_or(|e| e > seg.len())
            {
                return Err(corrupt("queue area outside the segment"));
            }
        }
        let sync_end = queue_offset(ranks).ok_or_else(|| corrupt("sync area size overflows"))?;
        if sync_end > seg.len() {
            return Err(corrupt("sync area outside the segment"));
        }
        let data = if in_segment {
            if off < sync_end + qlen || off.checked_add(len).is_none_or(|end| end > seg.len()) {
                return Err(corrupt("data area outside the segment"));
            }
            // SAFETY: off + len <= seg.len(), checked just above.
            unsafe { seg.as_ptr().add(off) }
        } else {
            addr as *mut u8
        };
        Ok(Peer {
            seg,
            data,
            owner_addr: data as usize,
            len,
            disp_unit,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The window's number in its world (creation order, from 0; the same on every
    /// rank).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Chunk lock `idx` of `rank`'s window (tests write hostile values into it).
    #[cfg(test)]
    pub(crate) fn chunk_lock_word(&self, rank: usize, idx: usize) -> &AtomicU32 {
        &chunk_locks(&self.peers[rank].seg)[idx]
    }

    /// How the memory was obtained.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// Whether every rank can reach every rank's data directly (false for a window
    /// created over private memory with ranks as processes).
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// Registers the work this rank does while it waits in the window's
    /// synchronization (at most once; later calls are ignored).
    pub(crate) fn set_helper(&self, helper: std::sync::Weak<dyn Helper>) {
        let _ = self.helper.set(helper);
    }

    /// Does the registered helper's work once; whether there was any.
    #[inline]
    pub(crate) fn help(&self) -> bool {
        match self.helper.get() {
            None => false,
            Some(h) => h.upgrade().is_some_and(|h| h.help()),
        }
    }

    /// Whether the segments hold the queued transport's rings.
    pub fn has_queues(&self) -> bool {
        self.queues
    }

    /// Bytes of shared memory each rank's segment holds besides the window's data (its
    /// header, chunk-lock table, synchronization area and, with queues, the rings) in
    /// a window over `ranks` ranks; None if that overflows. Grows linearly in the ranks:
    /// 210 to 270 bytes per peer without queues, two rings per peer with them.
    pub fn control_bytes(ranks: usize, queues: bool) -> Option<usize> {
        let q = if queues { queue_len(ranks)? } else { 0 };
        queue_offset(ranks)?.checked_add(q)
    }

    /// The address of `rank`'s window start in its owner's address space, for
    /// alignment arithmetic only: an element's alignment is that of its real address,
    /// and a window created over a caller's buffer may start anywhere. (For allocated
    /// windows, any mapping's address has the same alignment: the data is page-aligned.)
    pub fn base_addr(&self, rank: usize) -> usize {
        self.peers[rank].owner_addr
    }

    /// The window size of `rank` in bytes.
    pub fn len_of(&self, rank: usize) -> usize {
        self.peers[rank].len
    }

    /// The displacement unit of `rank`.
    pub fn disp_unit_of(&self, rank: usize) -> usize {
        self.peers[rank].disp_unit
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.peers.len()
    }

    /// The first data byte of `rank`'s window in this rank's mapping (null where this
    /// rank cannot reach it).
    pub(crate) fn data_ptr(&self, rank: usize) -> *mut u8 {
        self.peers[rank].data
    }

    /// The atomicity domain of `rank`'s window, used through announcement slot `slot`
    /// (< ranks; each slot has one user at a time: the origin of that rank in the
    /// atomic transport, the drainer of that origin's ring in the queued transport).
    #[inline]
    pub(crate) fn domain(&self, rank: usize, slot: usize) -> Domain<'_> {
        // processes share the tables: record the holder's pid so a waiter can take over
        // from a holder that was killed inside its critical section
        let seg = &self.peers[rank].seg;
        let n = self.peers.len();
        let off = self.slots_at;
        // SAFETY: the slots lie inside the sync area, which was sized for `n` ranks at
        // creation and validated when the segment was opened (sync_len); the offset is
        // SLOT_BYTES-aligned within a page-aligned mapping, and Slot holds only an atomic.
        let slots = unsafe { std::slice::from_raw_parts(seg.as_ptr().add(off).cast::<Slot>(), n) };
        // the table has CHUNK_LOCKS words (a power of two), `slot` < ranks is the callers'
        // contract, and the pid (below 2^22 on Linux) was checked at creation
        Domain::trusted(
            chunk_locks(seg),
            slots,
            slot,
            self.pid,
            crate::sys::pid_alive,
        )
    }

    fn queue_base(&self, rank: usize) -> *mut u8 {
        assert!(
            self.queues,
            "rma-shm: queue area of a window without queues"
        );
        let off = queue_offset(self.ranks()).unwrap_or_else(|| unreachable_layout());
        // SAFETY: validated at creation: queue_offset + queue_len <= segment length.
        unsafe { self.peers[rank].seg.as_ptr().add(off) }
    }

    /// The doorbell of `rank`.
    pub(crate) fn doorbell(&self, rank: usize) -> &Doorbell {
        // SAFETY: the doorbell is the first 64 bytes of the queue area (inside the
        // segment, 64-aligned) and holds only atomics.
        unsafe { &*self.queue_base(rank).cast::<Doorbell>() }
    }

    /// The completion slot of `origin` in `target`'s segment.
    pub(crate) fn pair(&self, target: usize, origin: usize) -> &PairCtl {
        assert!(origin < self.ranks(), "rma-shm: pair index out of range");
        // SAFETY: slot `origin` < ranks lies inside the queue area (queue_len), is
        // 64-aligned and holds only atomics.
        unsafe {
            &*self
                .queue_base(target)
                .add(BELL_LEN + origin * PAIR_LEN)
                .cast::<PairCtl>()
        }
    }

    /// Ring `index` of `owner`'s segment: request rings are `0..ranks` (from each
    /// origin), reply rings `ranks..2*ranks` (from each target). Returns the control
    /// block and the data area's first byte; the data area is `ring_cap(ranks)` bytes.
    pub(crate) fn ring(&self, owner: usize, index: usize) -> (&RingCtl, *mut u8) {
        let n = self.ranks();
        assert!(index < 2 * n, "rma-shm: ring index out of range");
        let off = BELL_LEN + n * PAIR_LEN + index * ring_len(n);
        // SAFETY: ring `index` < 2 * ranks lies inside the queue area (queue_len); its
        // control block is 64-aligned (BELL_LEN, PAIR_LEN and ring_len are multiples
        // of 64) and holds only atomics and padding; the data area follows it.
        unsafe {
            let base = self.queue_base(owner).add(off);
            (&*base.cast::<RingCtl>(), base.add(CTL_LEN))
        }
    }

    /// The passive-target lock of `rank`'s window.
    pub(crate) fn lock_word(&self, rank: usize) -> &LockWord {
        // SAFETY: the lock block is the first 64 bytes of the sync area, inside every
        // segment (segments are at least SYNC_OFFSET + PAGE bytes; the sync area was
        // sized for `ranks` at creation and validated), 64-aligned, atomics only.
        unsafe {
            &*self.peers[rank]
                .seg
                .as_ptr()
                .add(SYNC_OFFSET)
                .cast::<LockWord>()
        }
    }

    /// In `owner`'s segment: the turn line of lock ticket `ticket` ([`TurnLine`]).
    pub(crate) fn turn_line(&self, owner: usize, ticket: u32) -> &TurnLine {
        let n = self.ranks();
        let lines = turn_lines(n).unwrap_or_else(|| unreachable_layout());
        let off = SYNC_OFFSET
            + turns_offset(n).unwrap_or_else(|| unreachable_layout())
            + (ticket as usize & (lines - 1)) * TURN_LEN;
        // SAFETY: the index is below turn_lines(ranks), so the line lies inside the
        // sync area (turns_offset + TURN_LEN * turn_lines <= sync_len, validated at
        // creation); 64-aligned (SYNC_OFFSET and turns_offset are); atomics only.
        unsafe { &*self.peers[owner].seg.as_ptr().add(off).cast::<TurnLine>() }
    }

    /// The ticket being served by `owner`'s lock: the latest ticket handed to one of its
    /// turn lines (at most `next`; lines never handed a turn hold 0, which counts as
    /// ticket 0 handed at the start). An error of class INTERN if a line holds a ticket
    /// past `next` (someone overwrote it).
    pub(crate) fn served(&self, owner: usize, next: u32) -> Result<u32> {
        let lines = turn_lines(self.ranks()).unwrap_or_else(|| unreachable_layout());
        let mut behind = u32::MAX;
        for i in 0..lines {
            let go = self.turn_line(owner, i as u32).go.load(Ordering::Acquire);
            let d = next.wrapping_sub(go);
            if (d as i32) < 0 {
                return Err(Error::Internal {
                    reason: format!(
                        "the passive-target lock of rank {owner}'s window is corrupt: a turn line holds ticket {go}, past the next ticket ({next}) (another process wrote into it)"
                    ),
                });
            }
            behind = behind.min(d);
        }
        Ok(next.wrapping_sub(behind))
    }

    /// The claim of `origin` on `owner`'s lock (see [`CLAIM_WAITING`]), kept in
    /// `origin`'s own segment (word `owner` of its claims): only `origin` writes it, so
    /// the line stays in its cache while it takes and releases locks, and the waiters
    /// that audit the lock read it only at their liveness checks.
    pub(crate) fn lock_claim(&self, owner: usize, origin: usize) -> &AtomicU64 {
        let n = self.ranks();
        assert!(owner < n, "rma-shm: lock claim index out of range");
        let off =
            SYNC_OFFSET + claims_offset(n).unwrap_or_else(|| unreachable_layout()) + owner * 8;
        // SAFETY: `owner` < ranks, so the claim lies inside the sync area
        // (claims_offset + 8 * ranks <= slots_offset <= sync_len, validated at
        // creation); 8-aligned (SYNC_OFFSET, LOCK_LEN and 8 * ranks are); atomics only.
        unsafe { &*self.peers[origin].seg.as_ptr().add(off).cast::<AtomicU64>() }
    }

    /// In `owner`'s segment: how many times `other` posted to `owner` (`posted`) or
    /// completed an access epoch to it (`!posted`).
    pub(crate) fn epoch_counter(&self, owner: usize, other: usize, posted: bool) -> &AtomicU32 {
        let n = self.ranks();
        assert!(other < n, "rma-shm: epoch counter index out of range");
        let off = SYNC_OFFSET + LOCK_LEN + (if posted { 0 } else { n } + other) * 4;
        // SAFETY: `other` < ranks, so the counter lies inside the sync area
        // (LOCK_LEN + 8 * ranks <= sync_len); 4-aligned; atomics only.
        unsafe { &*self.peers[owner].seg.as_ptr().add(off).cast::<AtomicU32>() }
    }

    /// Copies `out.len()` bytes at byte `offset` of this rank's own window into `out`.
    pub fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check_local(offset, out.len())?;
        // SAFETY: bounds checked; this rank's own data is always reachable and its
        // memory holds whole aligned words (segments are page-aligned and padded to a
        // word, created windows expose a padded heap copy); the copy is made of word
        // atomics (rma_ops::shared), as is every other access to window memory, so
        // peers writing meanwhile is no data race (in an MPI-erroneous program the
        // bytes are unspecified).
        unsafe { rma_ops::shared::copy_out(self.data_ptr(self.rank).add(offset), out) };
        Ok(())
    }

    /// Copies `data` to byte `offset` of this rank's own window.
    pub fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check_local(offset, data.len())?;
        // SAFETY: as in `read_local`, writing instead of reading.
        unsafe { rma_ops::shared::copy_in(self.data_ptr(self.rank).add(offset), data) };
        Ok(())
    }

    fn check_local(&self, offset: usize, len: usize) -> Result<()> {
        let window_len = self.len_of(self.rank);
        if offset.checked_add(len).is_none_or(|end| end > window_len) {
            return Err(Error::OutOfWindow {
                rank: Rank::new(self.rank as u32),
                start: offset as i128,
                end: offset as i128 + len as i128,
                window_len,
            });
        }
        Ok(())
    }
}

#[cold]
fn unreachable_layout() -> ! {
    panic!("rma-shm: the control area layout was validated when the window was built")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rma_core::ErrorClass;

    /// A hostile peer takes part in window creation with a segment whose header lies
    /// (wrong magic, sizes that disagree with what it announced, a data area outside
    /// the segment): the honest rank gets an error, never a mapping it would read out
    /// of bounds.
    #[test]
    fn a_lying_segment_header_is_refused() {
        type Lie = fn(&Header);
        let lies: [(&str, Lie); 5] = [
            ("the truth (control: must be accepted)", |_| {}),
            ("bad magic", |h| {
                h.magic.store(0xdead_beef, Ordering::Release)
            }),
            ("data_len disagrees", |h| {
                h.data_len.store(1 << 40, Ordering::Relaxed)
            }),
            ("data area outside the segment", |h| {
                h.data_offset.store(1 << 40, Ordering::Relaxed)
            }),
            ("rank count disagrees", |h| {
                h.ranks.store(77, Ordering::Relaxed)
            }),
        ];
        for (what, lie) in lies {
            let out = crate::run_threads(2, |world| -> Result<()> {
                if world.rank() == 0 {
                    return WindowMemory::allocate(
                        &world,
                        4096,
                        8,
                        MemoryOptions { queues: false },
                    )
                    .map(|_| ());
                }
                // the hostile rank: an honest-looking segment and record, then the lie
                let id = world.next_object_id();
                let tag = 0x0123_4567_89ab_cdefu64;
                let name = format!("{}-{tag:016x}-w{id}-r1", world.name());
                let seg = Segment::create(&name, SYNC_OFFSET + 2 * PAGE + 4096)?;
                let h = header(&seg);
                h.data_offset
                    .store((SYNC_OFFSET + 2 * PAGE) as u64, Ordering::Relaxed);
                h.data_len.store(4096, Ordering::Relaxed);
                h.disp_unit.store(8, Ordering::Relaxed);
                h.chunk_locks.store(CHUNK_LOCKS as u64, Ordering::Relaxed);
                h.ranks.store(2, Ordering::Relaxed);
                h.magic.store(MAGIC, Ordering::Release);
                lie(h);
                world.allgather_as(Collective::Create(id), &encode(CREATED, 4096, 8, 0, tag))?;
                world.allgather_as(Collective::Create(id), &[1])?;
                seg.unlink();
                Ok(())
            })
            .unwrap();
            if what.starts_with("the truth") {
                assert!(out[0].is_ok(), "{what}: {:?}", out[0]);
                continue;
            }
            let e = out[0].as_ref().expect_err(what);
            assert_eq!(e.class(), ErrorClass::Intern, "{what}: {e}");
        }
    }

    /// A process killed inside a 16-byte element update leaves its chunk lock held;
    /// the next accumulate on that chunk takes the lock over instead of waiting
    /// forever.
    #[test]
    fn a_chunk_lock_left_by_a_dead_process_is_taken_over() {
        use rma_core::{Access, BasicType, Op, Rank, Transport};
        let mut gone = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let dead_pid = gone.id();
        gone.wait().expect("wait true");
        let out = crate::run_threads(1, |world| -> Result<[f64; 2]> {
            let mem = std::sync::Arc::new(WindowMemory::allocate(
                &world,
                64,
                16,
                MemoryOptions { queues: false },
            )?);
            // the dead process "holds" the chunk of element 0
            chunk_locks(&mem.peers[0].seg)[0].store(dead_pid, Ordering::Release);
            let t = crate::AtomicTransport::new(mem.clone())?;
            let layout = rma_core::Contiguous(16);
            let one: Vec<u8> = [1.0f64.to_ne_bytes(), 2.0f64.to_ne_bytes()].concat();
            t.accumulate(
                Access {
                    target: Rank::new(0),
                    base: 0,
                    layout: &layout,
                    exclusive: false,
                },
                BasicType::C64,
                Op::Sum,
                &one,
            )?;
            let mut v = [0u8; 16];
            mem.read_local(0, &mut v)?;
            let re = f64::from_ne_bytes(v[..8].try_into().unwrap_or_default());
            let im = f64::from_ne_bytes(v[8..].try_into().unwrap_or_default());
            Ok([re, im])
        })
        .unwrap();
        assert_eq!(out[0].as_ref().unwrap(), &[1.0, 2.0]);
    }

    /// A process killed between its announcement and the end of a single-element
    /// update leaves its slot announcing a chunk; a bulk accumulate on that chunk clears
    /// the dead announcement instead of waiting forever.
    #[test]
    fn an_announcement_left_by_a_dead_process_is_cleared() {
        use rma_core::{Access, BasicType, Op, Rank, Transport};
        let mut gone = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let dead_pid = gone.id();
        gone.wait().expect("wait true");
        let out = crate::run_threads(2, |world| -> Result<f64> {
            let mem = std::sync::Arc::new(WindowMemory::allocate(
                &world,
                256,
                8,
                MemoryOptions { queues: false },
            )?);
            world.barrier()?;
            if world.rank() == 0 {
                // rank 1's slot says a dead process updates chunk 0 of rank 0's window
                // SAFETY: slot 1 lies inside rank 0's sync area (slots_at + SLOT_BYTES
                // < sync_len for 2 ranks), aligned, and holds an atomic.
                let slot = unsafe {
                    &*mem.peers[0]
                        .seg
                        .as_ptr()
                        .add(mem.slots_at + SLOT_BYTES)
                        .cast::<AtomicU32>()
                };
                slot.store(dead_pid << 10, Ordering::SeqCst);
                let t = crate::AtomicTransport::new(mem.clone())?;
                let data: Vec<u8> = (0..16).flat_map(|_| 1.0f64.to_ne_bytes()).collect();
                t.accumulate(
                    Access {
                        target: Rank::new(0),
                        base: 0,
                        layout: &rma_core::Contiguous(data.len()),
                        exclusive: false,
                    },
                    BasicType::F64,
                    Op::Sum,
                    &data,
                )?;
            }
            world.barrier()?;
            let mut v = [0u8; 8];
            mem.read_local(15 * 8, &mut v)?;
            Ok(f64::from_ne_bytes(v))
        })
        .unwrap();
        assert_eq!(out[0].as_ref().unwrap(), &1.0);
    }
}
