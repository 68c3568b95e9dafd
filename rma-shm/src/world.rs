//! A world: N ranks on one node that share a small control segment holding a barrier,
//! a bootstrap all-gather area and one liveness slot per rank.
//!
//! The same code serves both launch modes: ranks as processes started by `rmarun` (or
//! [`crate::launch::spawn`]), which find the segment through environment variables, and
//! ranks as threads of one process ([`run_threads`]).

use crate::segment::Segment;
use crate::sys;
use rma_core::{Error, Rank, Result};
use std::cell::Cell;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Environment variable naming the world segment of a process rank.
pub const ENV_WORLD: &str = "RMA_WORLD";
/// Environment variable holding a process rank's index.
pub const ENV_RANK: &str = "RMA_RANK";
/// Environment variable holding the world size.
pub const ENV_SIZE: &str = "RMA_SIZE";
/// Environment variable holding the world's admission key (32 hex digits): the
/// launcher makes one per world, gives it to the ranks it starts and keeps it in the
/// world's control segment; a process without it cannot take a rank's place.
pub const ENV_KEY: &str = "RMA_WORLD_KEY";

const MAGIC: u64 = 0x726d_615f_776f_726c; // "rma_worl"

pub use crate::park::{liveness_interval, ENV_LIVENESS_MS};

pub use rma_core::ENV_STALL_MS;

/// The stall bound ([`ENV_STALL_MS`], `RMA_STALL_MS`, default 5 s; rma-core's
/// [`rma_core::stall_limit`]) of the waits here: how long a wait tolerates shared state
/// that is implausible and does not change — a lock whose turn belongs to a ticket
/// nobody holds, readers nobody claims to be, a queued-transport target that took every
/// request but never answers — before it ends in [`Error::Stalled`]. A legitimately
/// long wait (a lock held for minutes by a live rank, a peer that posts late) is not
/// timed: only state no honest rank leaves behind for more than an instant. Liveness is
/// checked every [`ENV_LIVENESS_MS`] as before. [`ShmWorld::set_stall_bound`] overrides it
/// for one world's epoch and queued-transport waits; the chunk-lock waits of the
/// atomicity domain (rma-ops) always use [`ENV_STALL_MS`].
pub fn stall_bound() -> Duration {
    rma_core::stall_limit()
}

/// Bytes each rank may contribute to one all-gather.
pub const GATHER_BYTES: usize = 248;
const GATHER_SLOT: usize = GATHER_BYTES + 8;

/// How the ranks of a world run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShmMode {
    /// One process per rank.
    Processes,
    /// One thread per rank, in one process.
    Threads,
}

/// A collective call of a world, as its ranks compare them.
///
/// Every call that waits for every rank of a world (a barrier, an all-gather, a
/// window's creation, fence or free) is counted per rank, and the n-th collective call
/// of every rank must be the same call, as MPI requires of collectives on one
/// communicator. MPI leaves a mismatch to hang; here each rank records in its slot the
/// call it entered last (its number, whether the rank still waits in it, and what it
/// is: [`Slot::entry`]), and every wait that depends on another rank reads that
/// record at its liveness checks ([`liveness_interval`]):
///
/// - a barrier (which the all-gather, a window's creation and a fence are built on)
///   whose last arriver finds another call in some rank's record, or whose waiter
///   finds a rank that entered another call as its n-th or went past its n-th without
///   this one: the ranks are out of step;
/// - a window's free waiting for a rank's free mark in the window, when that rank
///   entered another call as its n-th (or went past it without freeing or dropping
///   this window): out of step;
/// - a wait for a lock, a post or a complete of a rank that waits inside a collective
///   call this rank has not entered yet: each waits for the other.
///
/// Then the world is *broken*: the rank that found it records what it found and sets
/// the failure word ([`FAILED_MISMATCH`]), and every collective, wait and RMA call of
/// the world fails at once with class PROC_FAILED naming a rank out of step, as under
/// MPI (rma-mpi's agreement). A rank merely late is waited for. A window's calls are
/// matched per window: a fence on window 2 never matches a barrier, a fence on
/// window 3 or window 2's free.
///
/// A window dropped without its free enters its free without waiting for the others
/// ([`Collective::Drop`], matched as the free of that window), as `MPI_Win_free` at the
/// drop of an rma-mpi window does: a peer freeing the window passes, a peer that meets
/// the drop in another call (a fence) finds the ranks out of step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Collective {
    /// [`ShmWorld::barrier`].
    Barrier,
    /// [`ShmWorld::allgather`] (and the calls built on it: split, dup).
    Allgather,
    /// The creation of a window: its number in the world (creation order, from 0).
    Create(u64),
    /// A fence on a window.
    Fence(u64),
    /// The free of a window.
    Free(u64),
    /// A window dropped without its free: entered as its free, without waiting.
    Drop(u64),
}

/// Bits of a window number in a [`Collective`]'s code (numbers are compared modulo
/// 2^28: windows that far apart in creation order are never confused in practice, and a
/// confusion could only hide a mismatch, never make one).
const WIN_BITS: u32 = 28;
const WIN_MASK: u32 = (1 << WIN_BITS) - 1;
/// In a rank's [`Slot::entry`]: the rank waits inside the call.
const INSIDE: u64 = 1 << 31;

impl Collective {
    /// The call as 31 bits: kind, then the window number.
    #[inline]
    fn code(self) -> u32 {
        let (kind, win) = match self {
            Collective::Barrier => (1, 0),
            Collective::Allgather => (2, 0),
            Collective::Create(w) => (3, w),
            Collective::Fence(w) => (4, w),
            Collective::Free(w) => (5, w),
            Collective::Drop(w) => (6, w),
        };
        kind << WIN_BITS | (win as u32 & WIN_MASK)
    }

    fn from_code(code: u32) -> Option<Collective> {
        let win = u64::from(code & WIN_MASK);
        Some(match code >> WIN_BITS {
            1 => Collective::Barrier,
            2 => Collective::Allgather,
            3 => Collective::Create(win),
            4 => Collective::Fence(win),
            5 => Collective::Free(win),
            6 => Collective::Drop(win),
            _ => return None,
        })
    }

    /// The code the ranks compare: a window's drop is its free.
    #[inline]
    fn matched(code: u32) -> u32 {
        if code >> WIN_BITS == 6 {
            5 << WIN_BITS | (code & WIN_MASK)
        } else {
            code
        }
    }
}

impl std::fmt::Display for Collective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Collective::Barrier => f.write_str("a barrier"),
            Collective::Allgather => f.write_str("an all-gather"),
            Collective::Create(w) => write!(f, "the creation of window {w}"),
            Collective::Fence(w) => write!(f, "a fence on window {w}"),
            Collective::Free(w) => write!(f, "the free of window {w}"),
            Collective::Drop(w) => write!(
                f,
                "the free of window {w} as it dropped without being freed (an early \
                 return, such as an error passed on with `?`)"
            ),
        }
    }
}

/// The entry of the collective call `what` after entry `last` (`waits`: the rank
/// waits inside it).
#[inline]
fn next_entry(last: u64, what: Collective, waits: bool) -> u64 {
    let seq = entry_seq(last).wrapping_add(1);
    u64::from(seq) << 32 | if waits { INSIDE } else { 0 } | u64::from(what.code())
}

/// The number of the collective call in entry `e`.
#[inline]
fn entry_seq(e: u64) -> u32 {
    (e >> 32) as u32
}

/// The call in entry `e` ([`Collective::code`]).
#[inline]
fn entry_code(e: u64) -> u32 {
    (e & (INSIDE - 1)) as u32
}

/// Whether call number `a` comes after call number `b` (numbers wrap).
#[inline]
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// Whether two entries are the same collective call.
#[inline]
fn same_call(a: u64, b: u64) -> bool {
    entry_seq(a) == entry_seq(b)
        && Collective::matched(entry_code(a)) == Collective::matched(entry_code(b))
}

/// "a fence on window 2 (its collective call 7 on this world)".
fn describe(e: u64) -> String {
    match Collective::from_code(entry_code(e)) {
        _ if e == 0 => "no collective call yet".to_owned(),
        Some(c) => format!("{c} (its collective call {} on this world)", entry_seq(e)),
        None => format!("an unknown call (code {:#x})", entry_code(e)),
    }
}

/// What a rank found when it broke a world ([`Header::broken`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finding {
    /// Another rank entered another collective call as the one this rank entered.
    OutOfStep = 1,
    /// This rank waits for another (a lock, a post, a complete) that waits inside a
    /// collective call this rank has not entered.
    Deadlock = 2,
}

/// The life state of a rank, as recorded in its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum RankState {
    NotAttached = 0,
    Alive = 1,
    Exited = 2,
    Dead = 3,
}

#[repr(C, align(64))]
struct Padded(AtomicU32);

#[repr(C)]
struct Header {
    magic: AtomicU64,
    size: AtomicU32,
    attached: AtomicU32,
    abort: AtomicU32,
    /// Counts departures, so the first rank to leave can be named as the cause.
    departures: AtomicU32,
    /// The admission key ([`ENV_KEY`]); zero for a world of threads, which no process
    /// can join.
    key: [AtomicU64; 2],
    /// Set by the launcher once it has started every rank's process: ranks that join
    /// before sleep on it instead of waiting for their peers (and checking their
    /// liveness) while the launcher still needs the CPU to start the rest.
    started: AtomicU32,
    /// Zero while the world is whole; `rank + 1` once that rank is known dead (set by
    /// whoever learns it first: the launcher, a peer's liveness check, a panicking
    /// thread rank), [`FAILED_CORRUPT`] once a rank found the world's control state
    /// corrupt. Every RMA call reads it (one relaxed load), so calls fail once the
    /// world has, even on a transport that never waits.
    failed: AtomicU32,
    /// Once the ranks were found out of step in their collective calls
    /// ([`FAILED_MISMATCH`]): who found it and about whom (`finder + 1`, `other + 1 <<
    /// 16`, the finding `<< 32`), then what each had entered (the finder's
    /// [`Collective`] code, the other's `<< 32`), for the error every rank then gets.
    /// Written once, by the first rank to find it, before the failure word.
    broken: [AtomicU64; 2],
    bar_count: Padded,
    bar_gen: Padded,
    /// Ranks asleep (or about to sleep) on `bar_gen`: the last arriver makes the
    /// wake-up system call only when there is someone to wake.
    bar_sleepers: Padded,
}

#[repr(C, align(64))]
struct Slot {
    pid: AtomicU32,
    state: AtomicU32,
    /// Order of departure (1 = first to leave), 0 while present.
    departed: AtomicU32,
    /// The barrier this rank is in or last passed: the generation it saw on arrival,
    /// plus one (so 0 means none yet). The last arriver checks every rank's before it
    /// releases the others, so a count overwritten by someone else cannot end a barrier
    /// early.
    arrived: AtomicU32,
    /// Worlds split from this one that this rank still holds: a rank that left this
    /// world (dropped it) while it holds one is not gone from that one.
    children: AtomicU32,
    /// Set once the rank's thread has returned (ranks as threads): it is gone from
    /// every world split from this one, whatever it still holds (a sub-world it
    /// leaked).
    finished: AtomicU32,
    /// The world this rank offers to the members of a group ([`ShmWorld::create_group`],
    /// this rank being the group's first): the random tag in its control segment's
    /// name, then the key of the call (written last; 0: no offer).
    offer_tag: AtomicU64,
    offer_key: AtomicU64,
    /// The pid in the offered world's name (its maker's).
    offer_pid: AtomicU32,
    /// This rank's answer to the last group offer it took: the call's key when it
    /// joined the offered world, the key with its low bit cleared when it could not.
    ack_key: AtomicU64,
    /// The collective call of this world the rank entered last ([`Collective`]):
    /// how many it has entered (high 32 bits), [`INSIDE`] while it waits in it (a
    /// barrier passed keeps the bit: no peer can be waiting for it), and what it is (the
    /// low bits). Written by the rank alone; peers that wait for it
    /// read it to tell a slow rank from one that can never come (module
    /// [`Collective`]).
    entry: AtomicU64,
}

/// [`Header::failed`] once the control state was found corrupt.
/// The header's `abort` word when a rank, not the launcher, asked for it.
const ABORT_BY_RANK: u32 = 2;
const FAILED_CORRUPT: u32 = u32::MAX;
/// [`Header::failed`] once the ranks were found out of step in their collective calls
/// (the world is *broken*: [`Collective`]).
const FAILED_MISMATCH: u32 = u32::MAX - 1;

const HEADER_LEN: usize = 256;
const SLOT_LEN: usize = 64;
const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_LEN);
const _: () = assert!(std::mem::size_of::<Slot>() == SLOT_LEN);
/// The largest world rma accepts.
pub const MAX_RANKS: usize = 4096;

fn segment_len(size: usize) -> usize {
    HEADER_LEN + size * (SLOT_LEN + GATHER_SLOT)
}

/// The control segment of a world, mapped.
#[derive(Debug)]
pub(crate) struct Control {
    seg: Segment,
    size: usize,
    name: String,
    /// This process's stall bound for the world in ms ([`ShmWorld::set_stall_bound`]); 0:
    /// [`stall_bound`].
    stall_ms: AtomicU64,
    /// The world this one was split from ([`ShmWorld::split`]), whose slots a rank's
    /// liveness is also read from: a rank that left the parent world (a thread rank
    /// whose closure returned while it had forgotten this sub-world, a process gone)
    /// is gone from this one too.
    parent: Option<Parent>,
}

/// A sub-world's parent control segment and where its ranks sit in it.
#[derive(Debug)]
struct Parent {
    ctl: Arc<Control>,
    /// Parent rank of each rank of the sub-world.
    ranks: Box<[usize]>,
}

// SAFETY: the mapping is accessed only through atomics (header, slots, gather words);
// the raw pointer inside `Segment` is stable for the mapping's lifetime.
unsafe impl Send for Control {}
// SAFETY: as above; all shared state is atomic.
unsafe impl Sync for Control {}

/// How many fresh names a new world tries before it gives up: a name is taken only if
/// someone guessed 64 random bits (or /dev/urandom is unreadable and the fallback's
/// clock was predicted).
pub(crate) const NAME_ATTEMPTS: usize = 16;

impl Control {
    /// Creates the control segment of a new world of `size` ranks under a fresh name,
    /// trying other fresh names if one is taken; processes may join it with `key`
    /// (`[0, 0]`: none may).
    pub(crate) fn create(size: usize, key: [u64; 2]) -> Result<Control> {
        Self::create_named(fresh_name, size, key)
    }

    /// [`Control::create`] under the first free name of `names`.
    fn create_named(names: impl FnMut() -> String, size: usize, key: [u64; 2]) -> Result<Control> {
        if size == 0 || size > MAX_RANKS {
            return Err(Error::arg(format!(
                "a world needs 1 to {MAX_RANKS} ranks, got {size}"
            )));
        }
        let seg = Segment::create_unique(names, segment_len(size), NAME_ATTEMPTS)?;
        let c = Control {
            name: seg.name().to_owned(),
            seg,
            size,
            stall_ms: AtomicU64::new(0),
            parent: None,
        };
        let h = c.header();
        h.size.store(size as u32, Ordering::Relaxed);
        h.key[0].store(key[0], Ordering::Relaxed);
        h.key[1].store(key[1], Ordering::Relaxed);
        // publishes the size and the key to whoever sees the magic
        h.magic.store(MAGIC, Ordering::Release);
        Ok(c)
    }

    /// The world's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether `key` is this world's admission key (never for a world without one).
    fn admits(&self, key: [u64; 2]) -> bool {
        let h = self.header();
        let stored = [
            h.key[0].load(Ordering::Relaxed),
            h.key[1].load(Ordering::Relaxed),
        ];
        // no early exit on the first differing word
        stored != [0, 0] && ((stored[0] ^ key[0]) | (stored[1] ^ key[1])) == 0
    }

    /// The launcher has started every rank's process: ranks waiting in
    /// [`Control::wait_started`] go on.
    pub(crate) fn set_started(&self) {
        self.header().started.store(1, Ordering::Release);
        sys::futex_wake_all(&self.header().started);
    }

    /// Sleeps until the launcher has started every rank (or has given up: an error).
    /// Costs no CPU while it waits; if the launcher dies, so does this process
    /// (PR_SET_PDEATHSIG).
    fn wait_started(&self) -> Result<()> {
        let h = self.header();
        while h.started.load(Ordering::Acquire) == 0 {
            if h.abort.load(Ordering::Acquire) != 0 {
                return Err(Error::ProcFailed {
                    rank: Rank::NULL,
                    reason: "the launcher aborted the world while starting it".into(),
                });
            }
            sys::futex_wait(&h.started, 0, Duration::from_millis(50));
        }
        Ok(())
    }

    /// Maps an existing control segment and validates its header.
    pub(crate) fn open(name: &str, size: usize) -> Result<Control> {
        if size == 0 || size > MAX_RANKS {
            return Err(Error::arg(format!(
                "a world needs 1 to {MAX_RANKS} ranks, got {size}"
            )));
        }
        let seg = Segment::open(name, segment_len(size))?;
        let c = Control {
            seg,
            size,
            name: name.to_owned(),
            stall_ms: AtomicU64::new(0),
            parent: None,
        };
        let (magic, stored) = (
            c.header().magic.load(Ordering::Acquire),
            c.header().size.load(Ordering::Relaxed) as usize,
        );
        if magic != MAGIC || stored != size {
            return Err(Error::Internal {
                reason: format!("world segment {name} is not an rma world of {size} ranks (magic {magic:#x}, size {stored})"),
            });
        }
        Ok(c)
    }

    fn header(&self) -> &Header {
        // SAFETY: the segment is at least HEADER_LEN bytes, page-aligned, and Header
        // holds only atomics, so a shared reference to it is sound even while other
        // processes update it.
        unsafe { &*self.seg.as_ptr().cast::<Header>() }
    }

    fn slot(&self, rank: usize) -> &Slot {
        assert!(rank < self.size, "rma-shm: slot index out of range");
        // SAFETY: `rank < size`, so the slot lies inside the segment (segment_len), is
        // 64-byte aligned (page-aligned base + 256 + 64k) and holds only atomics.
        unsafe {
            &*self
                .seg
                .as_ptr()
                .add(HEADER_LEN + rank * SLOT_LEN)
                .cast::<Slot>()
        }
    }

    fn gather_word(&self, rank: usize, word: usize) -> &AtomicU64 {
        assert!(
            rank < self.size && word < GATHER_SLOT / 8,
            "rma-shm: gather index out of range"
        );
        let off = HEADER_LEN + self.size * SLOT_LEN + rank * GATHER_SLOT + word * 8;
        // SAFETY: the offset lies inside the segment (checked above against
        // segment_len), is 8-aligned, and the word is only accessed atomically.
        unsafe { &*self.seg.as_ptr().add(off).cast::<AtomicU64>() }
    }

    pub(crate) fn set_state(&self, rank: usize, state: RankState) {
        if matches!(state, RankState::Exited | RankState::Dead) {
            let order = self.header().departures.fetch_add(1, Ordering::AcqRel) + 1;
            let _ = self.slot(rank).departed.compare_exchange(
                0,
                order,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
        }
        self.slot(rank).state.store(state as u32, Ordering::Release);
        if state == RankState::Dead {
            self.mark_failed(rank as u32 + 1);
        }
        // wake anyone sleeping in the barrier so they notice
        sys::futex_wake_all(&self.header().bar_gen.0);
    }

    /// Records that the world has failed (`rank + 1` of a dead rank, or
    /// [`FAILED_CORRUPT`]); the first cause recorded stays.
    pub(crate) fn mark_failed(&self, cause: u32) {
        let _ =
            self.header()
                .failed
                .compare_exchange(0, cause, Ordering::AcqRel, Ordering::Relaxed);
        sys::futex_wake_all(&self.header().bar_gen.0);
    }

    /// The world's failure word ([`Header::failed`]).
    pub(crate) fn failed_word(&self) -> &AtomicU32 {
        &self.header().failed
    }

    /// The error a nonzero failure word stands for (`Ok` while it is zero), as rank
    /// `me` reports it.
    fn failure_of(&self, me: usize, word: u32) -> Result<()> {
        match word {
            0 => Ok(()),
            FAILED_MISMATCH => Err(self.broken_error(me)),
            FAILED_CORRUPT => Err(Error::Internal {
                reason: format!(
                    "world {}: a rank found the world's shared control state corrupt (another process wrote into it)",
                    self.name
                ),
            }),
            r if (r as usize) <= self.size => Err(Error::ProcFailed {
                rank: Rank::new(r - 1),
                reason: "it died".into(),
            }),
            other => Err(Error::Internal {
                reason: format!(
                    "world {}: the world's failure word holds {other:#x}, which names no rank",
                    self.name
                ),
            }),
        }
    }

    /// The stall bound of this world's waits in this process.
    pub(crate) fn stall_bound(&self) -> Duration {
        match self.stall_ms.load(Ordering::Relaxed) {
            0 => stall_bound(),
            ms => Duration::from_millis(ms),
        }
    }

    /// Marks the control state corrupt (waking every waiter) and returns the error.
    fn corrupt(&self, what: String) -> Error {
        self.mark_failed(FAILED_CORRUPT);
        Error::Internal {
            reason: format!(
                "world {}: {what} (another process wrote into the world's control state)",
                self.name
            ),
        }
    }

    pub(crate) fn state(&self, rank: usize) -> u32 {
        self.slot(rank).state.load(Ordering::Acquire)
    }

    pub(crate) fn attach(&self, rank: usize, pid: u32) {
        self.slot(rank).pid.store(pid, Ordering::Relaxed);
        self.slot(rank)
            .state
            .store(RankState::Alive as u32, Ordering::Release);
        self.header().attached.fetch_add(1, Ordering::AcqRel);
    }

    /// Attaches `rank` unless some process already claimed it: the claim is one
    /// compare-and-swap on the slot's pid, so of two processes started with the same
    /// rank exactly one joins. False if the rank was taken (or has already left).
    pub(crate) fn try_attach(&self, rank: usize, pid: u32) -> bool {
        let slot = self.slot(rank);
        if pid == 0
            || slot
                .pid
                .compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return false;
        }
        if slot
            .state
            .compare_exchange(
                RankState::NotAttached as u32,
                RankState::Alive as u32,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            return false;
        }
        self.header().attached.fetch_add(1, Ordering::AcqRel);
        true
    }

    pub(crate) fn attached(&self) -> usize {
        self.header().attached.load(Ordering::Acquire) as usize
    }

    /// A rank asks the launcher to end the job ([`ShmWorld::abort_job`]).
    pub(crate) fn request_abort(&self) {
        let _ = self.header().abort.compare_exchange(
            0,
            ABORT_BY_RANK,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        sys::futex_wake_all(&self.header().bar_gen.0);
    }

    /// Whether a rank asked the launcher to end the job.
    pub(crate) fn abort_requested(&self) -> bool {
        self.header().abort.load(Ordering::Acquire) == ABORT_BY_RANK
    }

    pub(crate) fn set_abort(&self) {
        self.header().abort.store(1, Ordering::Release);
        sys::futex_wake_all(&self.header().bar_gen.0);
    }

    pub(crate) fn unlink(&self) {
        self.seg.unlink();
    }

    /// Whether the launcher aborted this world (or the one it was split from), or a
    /// rank asked it to.
    fn aborted(&self) -> bool {
        self.header().abort.load(Ordering::Acquire) != 0
            || self.parent.as_ref().is_some_and(|p| p.ctl.aborted())
    }

    /// The first peer found dead or gone, as an error naming it.
    pub(crate) fn check_peers(&self, me: usize, mode: ShmMode) -> Result<()> {
        if self.aborted() {
            return Err(Error::ProcFailed {
                rank: Rank::NULL,
                reason: "the launcher aborted the world".into(),
            });
        }
        let failed = self.header().failed.load(Ordering::Acquire);
        if failed == FAILED_CORRUPT || failed == FAILED_MISMATCH {
            return self.failure_of(me, failed);
        }
        // name the cause: a dead rank before one that merely left, and among those the
        // first to go (the others usually left because of it)
        let mut worst: Option<(u32, u32, usize, String)> = None;
        for r in (0..self.size).filter(|&r| r != me) {
            if let Some((severity, order, reason)) = self.fault_of(r, mode) {
                if worst
                    .as_ref()
                    .is_none_or(|w| (severity, order) < (w.0, w.1))
                {
                    worst = Some((severity, order, r, reason));
                }
            }
        }
        match worst {
            Some((severity, _, r, reason)) => {
                if severity == 0 {
                    // dead: calls that never wait learn it from the failure word
                    self.mark_failed(r as u32 + 1);
                }
                Err(Error::ProcFailed {
                    rank: Rank::new(r as u32),
                    reason,
                })
            }
            None => self.failure_of(me, failed),
        }
    }

    /// What is wrong with rank `r`, if anything: (0 = dead, 1 = exited; the order it
    /// departed in; why).
    fn fault_of(&self, r: usize, mode: ShmMode) -> Option<(u32, u32, String)> {
        self.fault_seen(r, mode, false)
    }

    /// [`Control::fault_of`], asked for a world split from this one (`from_child`): a
    /// rank that left this world but still holds a world split from it (and, as a
    /// thread, has not returned) is not gone from that one.
    fn fault_seen(&self, r: usize, mode: ShmMode, from_child: bool) -> Option<(u32, u32, String)> {
        let slot = self.slot(r);
        let state = slot.state.load(Ordering::Acquire);
        let order = slot.departed.load(Ordering::Acquire);
        // a rank that left this world but holds a world split from it is still in that
        // one (its liveness is then read further up, and from its process)
        let still_in_child = from_child && slot.children.load(Ordering::Acquire) > 0;
        if state == RankState::Dead as u32 {
            Some((0, order, "it died".to_owned()))
        } else if from_child && slot.finished.load(Ordering::Acquire) != 0 {
            Some((
                1,
                order,
                "its thread returned while this rank still waits for it".to_owned(),
            ))
        } else if state == RankState::Exited as u32 && !still_in_child {
            Some((
                1,
                order,
                "it exited while this rank still waits for it".to_owned(),
            ))
        } else if mode == ShmMode::Processes
            && state != RankState::NotAttached as u32
            && !sys::pid_alive(slot.pid.load(Ordering::Relaxed))
        {
            let pid = slot.pid.load(Ordering::Relaxed);
            Some((0, 0, format!("its process {pid} is gone")))
        } else {
            // alive here: in a sub-world, also alive in the world it came from
            let p = self.parent.as_ref()?;
            let (severity, order, why) = p.ctl.fault_seen(*p.ranks.get(r)?, mode, true)?;
            Some((
                severity,
                order,
                format!("{why} (seen in the world this one was split from)"),
            ))
        }
    }

    /// `Err(ProcFailed)` if rank `r` alone is dead or gone (or the launcher aborted the
    /// world): for waits on one peer's word, which other peers' departures must not
    /// cut short.
    pub(crate) fn check_rank(&self, me: usize, r: usize, mode: ShmMode) -> Result<()> {
        self.check_broken(me)?;
        if self.aborted() {
            return Err(Error::ProcFailed {
                rank: Rank::NULL,
                reason: "the launcher aborted the world".into(),
            });
        }
        match self.fault_of(r, mode) {
            Some((severity, _, reason)) => {
                if severity == 0 {
                    self.mark_failed(r as u32 + 1);
                }
                Err(Error::ProcFailed {
                    rank: Rank::new(r as u32),
                    reason,
                })
            }
            None => Ok(()),
        }
    }
}

impl Control {
    /// Enters `what` as rank `me`'s next collective call of this world ([`Collective`]);
    /// `waits`: the rank waits inside it until [`Control::leave`]. Returns the entry.
    pub(crate) fn enter(&self, me: usize, what: Collective, waits: bool) -> u64 {
        let word = &self.slot(me).entry;
        let e = next_entry(word.load(Ordering::Relaxed), what, waits);
        // Release: a peer that reads this entry also sees what the rank did before it
        // (a lock it released, a free mark it set)
        word.store(e, Ordering::Release);
        e
    }

    /// Rank `me` no longer waits inside the call it entered as `entry`.
    pub(crate) fn leave(&self, me: usize, entry: u64) {
        self.slot(me)
            .entry
            .store(entry & !INSIDE, Ordering::Release);
    }

    /// Rank `me`'s last entry.
    pub(crate) fn own_entry(&self, me: usize) -> u64 {
        self.slot(me).entry.load(Ordering::Relaxed)
    }

    /// `Err` (class PROC_FAILED) once the world is broken ([`Collective`]).
    #[inline]
    pub(crate) fn check_broken(&self, me: usize) -> Result<()> {
        // (the finding, not the failure word: a world that had failed otherwise first
        // keeps that cause there, and is broken all the same)
        if self.header().broken[0].load(Ordering::Acquire) != 0 {
            return Err(self.broken_error(me));
        }
        Ok(())
    }

    /// For rank `me`, waiting in the collective call it entered as `mine`, about rank
    /// `r` that has not arrived in it: `Ok` while `r` may still come (it has not
    /// reached this call's number yet, or has entered this very call); otherwise, if
    /// `arrived` (asked after `r`'s entry was read, so it sees what `r` did before)
    /// does not say that `r` arrived after all, the world is broken and its error
    /// returned.
    pub(crate) fn audit_arrival(
        &self,
        me: usize,
        mine: u64,
        r: usize,
        arrived: impl FnOnce() -> bool,
    ) -> Result<()> {
        let theirs = self.slot(r).entry.load(Ordering::Acquire);
        if after(entry_seq(mine), entry_seq(theirs)) || same_call(theirs, mine) || arrived() {
            return Ok(());
        }
        Err(self.break_up(me, mine, r, theirs, Finding::OutOfStep, ""))
    }

    /// Rank `r`'s entry if `r` waits inside a collective call of this world that rank
    /// `me` has not entered yet: then `r` can do nothing until `me` enters it.
    pub(crate) fn blocked_on(&self, me: usize, r: usize) -> Option<u64> {
        let mine = self.own_entry(me);
        let theirs = self.slot(r).entry.load(Ordering::Acquire);
        (theirs & INSIDE != 0 && after(entry_seq(theirs), entry_seq(mine))).then_some(theirs)
    }

    /// Rank `me` (last entry `mine`) found rank `r` (entry `theirs`) out of step
    /// (`finding`; `waits_for` says what `me` waits for in a deadlock): records it
    /// (the first finding stays), breaks the world and returns the error.
    #[cold]
    pub(crate) fn break_up(
        &self,
        me: usize,
        mine: u64,
        r: usize,
        theirs: u64,
        finding: Finding,
        waits_for: &str,
    ) -> Error {
        let h = self.header();
        let who = (me as u64 + 1) | (r as u64 + 1) << 16 | (finding as u64) << 32;
        if h.broken[0]
            .compare_exchange(0, who, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            let what = u64::from(entry_code(mine)) | u64::from(entry_code(theirs)) << 32;
            h.broken[1].store(what, Ordering::Release);
        }
        self.mark_failed(FAILED_MISMATCH);
        let found = match finding {
            Finding::OutOfStep => format!(
                "the ranks entered different collective calls of world {}, which can never \
                 complete together (this rank, {me}, entered {}; rank {r} entered {})",
                self.name,
                describe(mine),
                describe(theirs)
            ),
            Finding::Deadlock => format!(
                "this rank ({me}) waits for rank {r} ({waits_for}), and rank {r} waits in \
                 {}, which this rank has not entered (its last collective call was {}): \
                 neither can go on",
                describe(theirs),
                describe(mine)
            ),
        };
        Error::ProcFailed {
            rank: Rank::new(r as u32),
            reason: format!("{found}; {BROKEN}"),
        }
    }

    /// The error of a broken world, as rank `me` reports it.
    #[cold]
    fn broken_error(&self, me: usize) -> Error {
        let h = self.header();
        let who = h.broken[0].load(Ordering::Acquire);
        let what = h.broken[1].load(Ordering::Acquire);
        let (a, b) = ((who & 0xffff) as usize, (who >> 16 & 0xffff) as usize);
        if a == 0 || b == 0 || a > self.size || b > self.size {
            return Error::ProcFailed {
                rank: Rank::NULL,
                reason: format!("the ranks' collective calls are out of step; {BROKEN}"),
            };
        }
        let (a, b) = (a - 1, b - 1);
        let call = |code: u64| {
            Collective::from_code(code as u32)
                .map_or_else(|| "an unknown call".to_owned(), |c| c.to_string())
        };
        let (ca, cb) = (call(what & 0xffff_ffff), call(what >> 32));
        let found = if who >> 32 == Finding::Deadlock as u64 {
            format!(
                "rank {a} waited for rank {b} (a lock, a post or a complete), while rank {b} \
                 waited in {cb}, a collective call rank {a} had not entered (rank {a}'s last \
                 was {ca}): neither could go on"
            )
        } else {
            format!(
                "the ranks entered different collective calls of world {}, which can never \
                 complete together (rank {a} entered {ca}; rank {b} entered {cb})",
                self.name
            )
        };
        Error::ProcFailed {
            rank: Rank::new(if me == b { a } else { b } as u32),
            reason: format!("{found}; {BROKEN}"),
        }
    }

    /// The world's barrier, entered by rank `me` as the collective call `what`
    /// ([`ShmWorld::barrier`]'s docs; [`Collective`] for the matching). The matching costs
    /// a store next to the arrival's (same line), and the last arriver reads every
    /// rank's entry beside its arrival (same lines).
    pub(crate) fn barrier(&self, me: usize, mode: ShmMode, what: Collective) -> Result<()> {
        self.check_broken(me)?;
        let h = self.header();
        let slot = self.slot(me);
        let entry = next_entry(slot.entry.load(Ordering::Relaxed), what, true);
        let gen = h.bar_gen.0.load(Ordering::Acquire);
        // both published to the last arriver by the count's release sequence; the
        // entry (Release) to a peer that audits its own wait, with what came before
        slot.entry.store(entry, Ordering::Release);
        slot.arrived.store(gen.wrapping_add(1), Ordering::Relaxed);
        let r = self.barrier_as(me, mode, entry, gen);
        // A barrier passed needed every rank, so its entry, still marked inside, can
        // never name a call a peer has not entered (`blocked_on` compares numbers):
        // only a failed one is left, at the cost of a store
        if r.is_err() {
            self.leave(me, entry);
        }
        r
    }

    fn barrier_as(&self, me: usize, mode: ShmMode, entry: u64, gen: u32) -> Result<()> {
        let h = self.header();
        let n = self.size;
        let count = h.bar_count.0.fetch_add(1, Ordering::AcqRel) as usize;
        if count >= n {
            return Err(self.corrupt(format!(
                "the barrier count says {} ranks arrived in a world of {n}",
                count + 1
            )));
        }
        if count == n - 1 {
            // every rank is here (the count says): each must have arrived at this
            // barrier, in the same collective call
            let mut odd = None;
            for r in 0..n {
                let slot = self.slot(r);
                if slot.arrived.load(Ordering::Relaxed) != gen.wrapping_add(1) {
                    return Err(self.corrupt(format!(
                        "the barrier count says every rank arrived, but rank {r} has not"
                    )));
                }
                let theirs = slot.entry.load(Ordering::Relaxed);
                if odd.is_none() && !same_call(theirs, entry) {
                    odd = Some((r, theirs));
                }
            }
            let verdict = match odd {
                // broken before the release: the released ranks see it
                Some((r, theirs)) => {
                    Err(self.break_up(me, entry, r, theirs, Finding::OutOfStep, ""))
                }
                None => self.check_broken(me),
            };
            h.bar_count.0.store(0, Ordering::Relaxed);
            h.bar_gen.0.fetch_add(1, Ordering::SeqCst);
            if h.bar_sleepers.0.load(Ordering::SeqCst) != 0 {
                sys::futex_wake_all(&h.bar_gen.0);
            }
            return verdict;
        }
        let released = || h.bar_gen.0.load(Ordering::Acquire) != gen;
        let r = crate::park::wait_on(
            &h.bar_gen.0,
            &h.bar_sleepers.0,
            |_| Ok(released()),
            || {
                self.check_peers(me, mode)?;
                // a rank that entered another call in this one's place never comes
                for r in (0..n).filter(|&r| r != me) {
                    self.audit_arrival(me, entry, r, || {
                        released()
                            || self.slot(r).arrived.load(Ordering::Acquire) == gen.wrapping_add(1)
                    })?;
                }
                Ok(())
            },
            || false,
        );
        fence(Ordering::SeqCst);
        r?;
        // released: by the last arriver, after every rank arrived at this barrier (and
        // before this rank arrives at the next, no rank can pass another)
        let now = h.bar_gen.0.load(Ordering::Acquire);
        if now != gen.wrapping_add(1) {
            return Err(self.corrupt(format!(
                "the barrier generation went from {gen} to {now} while this rank waited"
            )));
        }
        for r in 0..n {
            let a = self.slot(r).arrived.load(Ordering::Relaxed);
            if a != gen.wrapping_add(1) && a != gen.wrapping_add(2) {
                return Err(self.corrupt(format!(
                    "the barrier released this rank before rank {r} arrived"
                )));
            }
        }
        // the last arriver found the ranks in different calls (or the world broke
        // meanwhile)
        self.check_broken(me)
    }
}

/// The end of every broken world's error.
const BROKEN: &str = "the world is broken: its collectives, waits and RMA calls now fail at \
                      once, and its windows are left unfreed";

/// Checks whether this rank's peers are alive; cheap to clone, usable from any thread.
#[derive(Clone, Debug)]
pub struct Liveness {
    ctl: Arc<Control>,
    rank: usize,
    mode: ShmMode,
}

impl Liveness {
    /// `Err(ProcFailed)` naming the first peer found dead or gone.
    pub fn check(&self) -> Result<()> {
        self.ctl.check_peers(self.rank, self.mode)
    }

    /// `Err(ProcFailed)` if peer `r` is dead or gone (or the world is broken); other
    /// peers are not looked at.
    pub fn check_rank(&self, r: usize) -> Result<()> {
        self.ctl.check_rank(self.rank, r, self.mode)
    }

    /// The world's barrier as the collective call `what` (a window's fence).
    pub(crate) fn barrier(&self, what: Collective) -> Result<()> {
        self.ctl.barrier(self.rank, self.mode, what)
    }

    /// [`Control::enter`] for this rank.
    pub(crate) fn enter(&self, what: Collective, waits: bool) -> u64 {
        self.ctl.enter(self.rank, what, waits)
    }

    /// [`Control::leave`] for this rank.
    pub(crate) fn leave(&self, entry: u64) {
        self.ctl.leave(self.rank, entry)
    }

    /// [`Control::check_broken`] for this rank.
    pub(crate) fn check_broken(&self) -> Result<()> {
        self.ctl.check_broken(self.rank)
    }

    /// [`Control::audit_arrival`] for this rank.
    pub(crate) fn audit_arrival(
        &self,
        mine: u64,
        r: usize,
        arrived: impl FnOnce() -> bool,
    ) -> Result<()> {
        self.ctl.audit_arrival(self.rank, mine, r, arrived)
    }

    /// [`Control::blocked_on`] for this rank.
    pub(crate) fn blocked_on(&self, r: usize) -> Option<u64> {
        self.ctl.blocked_on(self.rank, r)
    }

    /// This rank waits for rank `r` (`waits_for`), which waits in the collective call
    /// it entered as `theirs` (from [`Liveness::blocked_on`]): breaks the world
    /// ([`Collective`]) and returns its error.
    pub(crate) fn deadlock(&self, r: usize, theirs: u64, waits_for: &str) -> Error {
        let mine = self.ctl.own_entry(self.rank);
        self.ctl
            .break_up(self.rank, mine, r, theirs, Finding::Deadlock, waits_for)
    }

    /// How long a wait tolerates implausible shared state that does not change
    /// ([`ENV_STALL_MS`], or [`ShmWorld::set_stall_bound`]).
    pub fn stall_bound(&self) -> Duration {
        self.ctl.stall_bound()
    }
}

/// One rank's handle on its world.
///
/// A `ShmWorld` is owned by one rank (one process, or one thread in thread mode); it is
/// `Send` but not `Sync`.
#[derive(Debug)]
pub struct ShmWorld {
    ctl: Arc<Control>,
    rank: usize,
    mode: ShmMode,
    next_window: Cell<u64>,
    exited: Cell<bool>,
    /// How many [`ShmWorld::create_group`] calls this rank made per (members, tag): the
    /// calls' keys, so that calls with the same members and tag match in order.
    group_calls: std::cell::RefCell<std::collections::HashMap<(Vec<usize>, u32), u64>>,
}

/// Asks a world's launcher to end the job ([`ShmWorld::abort_handle`]): only atomics on
/// the world's control segment, so it may be used from any thread while the world
/// itself is busy elsewhere.
#[derive(Clone)]
pub struct AbortHandle(Arc<Control>);

impl AbortHandle {
    /// Asks the launcher to end every rank of the job at once.
    #[doc(alias = "MPI_Abort")]
    pub fn abort(&self) {
        self.0.request_abort();
    }
}

impl std::fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AbortHandle")
    }
}

impl ShmWorld {
    /// Joins the world named by the environment (`RMA_WORLD`, `RMA_RANK`, `RMA_SIZE`),
    /// as a process started by `rmarun`. `Ok(None)` if the variables are not set.
    pub fn from_env() -> Result<Option<ShmWorld>> {
        let Ok(name) = std::env::var(ENV_WORLD) else {
            return Ok(None);
        };
        let parse = |key: &str| -> Result<usize> {
            std::env::var(key)
                .ok()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| {
                    Error::arg(format!(
                        "{ENV_WORLD} is set but {key} is missing or not a number"
                    ))
                })
        };
        let (rank, size) = (parse(ENV_RANK)?, parse(ENV_SIZE)?);
        if rank >= size {
            return Err(Error::InvalidRank {
                rank: Rank::new(rank as u32),
                size,
            });
        }
        if !valid_name(&name) {
            return Err(Error::arg(format!(
                "{ENV_WORLD}={name:?} is not an rma world name"
            )));
        }
        let key = std::env::var(ENV_KEY)
            .ok()
            .and_then(|k| parse_key(&k))
            .ok_or_else(|| {
                Error::arg(format!(
                    "{ENV_WORLD} is set but {ENV_KEY} is missing or malformed: only the \
                     processes a world's launcher (rmarun) started may join it"
                ))
            })?;
        let ctl = Control::open(&name, size)?;
        // checked before the rank's slot is claimed: a process that lacks the key takes
        // no place
        if !ctl.admits(key) {
            return Err(Error::arg(format!(
                "rank {rank} of world {name}: wrong {ENV_KEY}; only the processes the \
                 world's launcher started may join it"
            )));
        }
        if !ctl.try_attach(rank, std::process::id()) {
            return Err(Error::arg(format!(
                "rank {rank} of world {name} has already joined"
            )));
        }
        ctl.wait_started()?;
        // every rank of a world runs on this node: the waits' spin-or-park policy
        rma_core::wait::note_ranks(ctl.size);
        Ok(Some(ShmWorld {
            ctl: Arc::new(ctl),
            rank,
            mode: ShmMode::Processes,
            next_window: Cell::new(0),
            exited: Cell::new(false),
            group_calls: Default::default(),
        }))
    }

    /// A world of one rank, this process, started without a launcher: what MPI calls
    /// a singleton start (`./program` run without rmarun). The control segment's name
    /// is removed at once (the mapping stays), so nothing of it outlives the process.
    pub fn singleton() -> Result<ShmWorld> {
        // what killed worlds of this user left behind goes first
        Segment::sweep_stale();
        let ctl = Control::create(1, fresh_key())?;
        ctl.unlink();
        ctl.set_started();
        if !ctl.try_attach(0, std::process::id()) {
            return Err(Error::arg(
                "the singleton world's only rank could not join it",
            ));
        }
        rma_core::wait::note_ranks(1);
        Ok(ShmWorld {
            ctl: Arc::new(ctl),
            rank: 0,
            mode: ShmMode::Processes,
            next_window: Cell::new(0),
            exited: Cell::new(false),
            group_calls: Default::default(),
        })
    }

    /// Asks the launcher to end every rank of the job at once (MPI_Abort): the
    /// launcher kills the other ranks as soon as it sees the request, whatever this
    /// rank's exit status, 0 included. The others' waits meanwhile fail as for an
    /// aborted world.
    pub fn abort_job(&self) {
        self.ctl.request_abort();
    }

    /// A handle that asks for the same from any thread, at any time, without the
    /// world ([`ShmWorld::abort_job`]; it keeps the control segment mapped).
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle(self.ctl.clone())
    }

    /// This rank's index.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.ctl.size
    }

    /// How the ranks run.
    pub fn mode(&self) -> ShmMode {
        self.mode
    }

    /// The world's name (the prefix of every segment it creates).
    pub fn name(&self) -> &str {
        &self.ctl.name
    }

    /// An identifier for the next collectively created object (windows): every rank
    /// creates them in the same order, so the counters agree.
    pub fn next_object_id(&self) -> u64 {
        let id = self.next_window.get();
        self.next_window.set(id + 1);
        id
    }

    /// Blocks until every rank has called `barrier`; everything written before it by
    /// any rank happens-before everything after it on every rank. A dead or exited
    /// peer makes it return [`Error::ProcFailed`] within tens of milliseconds.
    ///
    /// The count and generation live in shared memory, so another process could
    /// overwrite them; every rank records the barrier it arrives at, the last arriver
    /// checks that every rank has arrived before it releases them, and the released
    /// check that the generation moved by exactly one with every rank arrived. A count
    /// or generation that does not add up is an error of class INTERN on every rank
    /// (the world is marked failed), never an early release.
    ///
    /// It matches only other ranks' barriers: a rank that entered another collective
    /// call in its place (a window's fence or free, an all-gather) makes it fail on
    /// every rank with class PROC_FAILED, and breaks the world (as under MPI: its
    /// collectives, waits and RMA calls then fail at once).
    pub fn barrier(&self) -> Result<()> {
        self.ctl.barrier(self.rank, self.mode, Collective::Barrier)
    }

    /// Every rank contributes up to [`GATHER_BYTES`] bytes; every rank receives all
    /// contributions, indexed by rank.
    pub fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.allgather_as(Collective::Allgather, mine)
    }

    /// [`ShmWorld::allgather`] as the collective call `what` (window creation).
    pub(crate) fn allgather_as(&self, what: Collective, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        if mine.len() > GATHER_BYTES {
            return Err(Error::arg(format!(
                "allgather takes at most {GATHER_BYTES} bytes, got {}",
                mine.len()
            )));
        }
        let mut padded = [0u8; GATHER_SLOT];
        padded[..8].copy_from_slice(&(mine.len() as u64).to_ne_bytes());
        padded[8..8 + mine.len()].copy_from_slice(mine);
        for (w, chunk) in padded.chunks_exact(8).enumerate() {
            self.ctl.gather_word(self.rank, w).store(
                u64::from_ne_bytes(chunk.try_into().unwrap_or_default()),
                Ordering::Relaxed,
            );
        }
        self.ctl.barrier(self.rank, self.mode, what)?;
        let mut out = Vec::with_capacity(self.size());
        for r in 0..self.size() {
            let mut buf = [0u8; GATHER_SLOT];
            for (w, chunk) in buf.chunks_exact_mut(8).enumerate() {
                chunk.copy_from_slice(
                    &self
                        .ctl
                        .gather_word(r, w)
                        .load(Ordering::Relaxed)
                        .to_ne_bytes(),
                );
            }
            let len = u64::from_ne_bytes(buf[..8].try_into().unwrap_or_default()) as usize;
            if len > GATHER_BYTES {
                return Err(Error::Internal {
                    reason: format!("corrupt all-gather slot of rank {r}: length {len}"),
                });
            }
            out.push(buf[8..8 + len].to_vec());
        }
        // nobody may overwrite a slot before everyone has read it
        self.ctl.barrier(self.rank, self.mode, what)?;
        Ok(out)
    }

    /// Checks that every peer is still alive.
    pub fn check_peers(&self) -> Result<()> {
        self.ctl.check_peers(self.rank, self.mode)
    }

    /// Collectively splits this world (MPI_Comm_split): the ranks that give the same
    /// `color` form a new world, numbered by `key` and then by their rank here; a rank
    /// giving `None` (MPI_UNDEFINED) joins none and gets `Ok(None)`. Every rank of this
    /// world must call it. The new world has a control segment of its own, so its
    /// collectives never wait for ranks outside it, and worlds split from one world
    /// (overlapping or not) live side by side; a rank is alive in it while it is alive
    /// here too.
    ///
    /// Errors: those of this world's all-gather (PROC_FAILED for a dead peer); NO_MEM
    /// (for every rank of the group) if its control segment cannot be made.
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<ShmWorld>> {
        let mut rec = Vec::with_capacity(9);
        rec.push(u8::from(color.is_some()));
        rec.extend_from_slice(&color.unwrap_or(0).to_ne_bytes());
        rec.extend_from_slice(&key.to_ne_bytes());
        let all = self.allgather(&rec)?;
        let mut parsed = Vec::with_capacity(all.len());
        for (r, b) in all.iter().enumerate() {
            if b.len() != 9 {
                return Err(self
                    .ctl
                    .corrupt(format!("rank {r}'s split record has {} bytes", b.len())));
            }
            let c = u32::from_ne_bytes(b[1..5].try_into().unwrap_or_default());
            let k = i32::from_ne_bytes(b[5..9].try_into().unwrap_or_default());
            parsed.push(((b[0] == 1).then_some(c), k));
        }
        let mut members: Vec<usize> = match color {
            Some(c) => (0..all.len()).filter(|&r| parsed[r].0 == Some(c)).collect(),
            None => Vec::new(),
        };
        members.sort_by_key(|&r| (parsed[r].1, r));
        let Some((ctl, me)) = form(&members, self.rank, &|b: &[u8]| self.allgather(b))? else {
            return Ok(None);
        };
        Ok(Some(self.adopt(ctl, members, me)))
    }

    /// The world of the ranks `members` (ranks of this world, in the new world's
    /// order), made by them alone (MPI_Comm_create_group): only the members call it,
    /// with the same `members` and `tag`; the other ranks take no part. The first
    /// member makes the new world's control segment and offers its name in its slot of
    /// this world; the others take it from there. Calls with the same members and tag
    /// are matched in order.
    ///
    /// Errors: ARG if this rank is not a member or a member repeats; RANK for a member
    /// outside this world; PROC_FAILED if the first member dies or leaves before it
    /// offers the world, or a member before it joins; NO_MEM.
    pub fn create_group(&self, members: &[usize], tag: u32) -> Result<ShmWorld> {
        let n = self.size();
        if let Some(&bad) = members.iter().find(|&&r| r >= n) {
            return Err(Error::InvalidRank {
                rank: Rank::new(bad as u32),
                size: n,
            });
        }
        let me = members
            .iter()
            .position(|&r| r == self.rank)
            .ok_or_else(|| Error::arg("create_group: this rank is not one of the members"))?;
        if (1..members.len()).any(|i| members[..i].contains(&members[i])) {
            return Err(Error::arg("create_group: a member appears twice"));
        }
        // the call's key: the members, the tag and how many such calls came before
        let seq = {
            let mut calls = self.group_calls.borrow_mut();
            let c = calls.entry((members.to_vec(), tag)).or_insert(0);
            *c += 1;
            *c
        };
        let mut key = 0xcbf2_9ce4_8422_2325u64;
        for v in members
            .iter()
            .map(|&r| r as u64)
            .chain([u64::from(tag), seq])
        {
            key = (key ^ v).wrapping_mul(0x0100_0000_01b3);
        }
        let key = key | 1; // never 0 (no offer); key & !1 is a member's failure
        let leader = members[0];
        let offer = self.ctl.slot(leader);
        // a fixed-length name (nested groups do not grow it): the first member's pid
        // (offered with the name), a random tag, the call's key
        let name_of = |pid: u32, t: u64| format!("rma-{pid}-{t:016x}-g{key:016x}");
        // every member acknowledges the offer in its own slot: `key` when it joined,
        // `key & !1` when it could not; the first member waits for them all, so an
        // offer is never withdrawn while a member still looks for it
        let ack = |ok: bool| {
            self.ctl
                .slot(self.rank)
                .ack_key
                .store(if ok { key } else { key & !1 }, Ordering::Release)
        };
        if me == 0 {
            let tag_cell = std::cell::Cell::new(0u64);
            let made = Control::create_named(
                || {
                    tag_cell.set(random_u64() | 1);
                    name_of(std::process::id(), tag_cell.get())
                },
                members.len(),
                [0, 0],
            )
            .and_then(|ctl| {
                if ctl.try_attach(0, std::process::id()) {
                    Ok(ctl)
                } else {
                    ctl.unlink();
                    Err(Error::Internal {
                        reason: "a fresh world's first slot was taken".into(),
                    })
                }
            });
            // the offer: the tag (0: the world could not be made), then the key
            offer.offer_tag.store(
                made.as_ref().map_or(0, |_| tag_cell.get()),
                Ordering::Relaxed,
            );
            offer.offer_pid.store(std::process::id(), Ordering::Relaxed);
            offer.offer_key.store(key, Ordering::Release);
            let acked = |r: &usize| {
                let a = self.ctl.slot(*r).ack_key.load(Ordering::Acquire);
                a == key || a == key & !1
            };
            let waited = self.wait_group(members, || members[1..].iter().all(acked));
            offer.offer_key.store(0, Ordering::Release);
            let ctl = made?;
            ctl.unlink();
            let failed = members[1..]
                .iter()
                .find(|&&r| self.ctl.slot(r).ack_key.load(Ordering::Acquire) != key);
            if let Some(&r) = failed.filter(|_| waited.is_ok()) {
                // members that joined see rank 0 of the new world gone
                ctl.set_state(0, RankState::Exited);
                return Err(Error::ProcFailed {
                    rank: Rank::new(r as u32),
                    reason: "it could not join the group's world".into(),
                });
            }
            if let Err(e) = waited {
                ctl.set_state(0, RankState::Exited);
                return Err(e);
            }
            return Ok(self.adopt(ctl, members.to_vec(), 0));
        }
        // every member is watched: one that dies before the offer comes fails the call
        self.wait_group(members, || offer.offer_key.load(Ordering::Acquire) == key)?;
        let t = offer.offer_tag.load(Ordering::Relaxed);
        let pid = offer.offer_pid.load(Ordering::Relaxed);
        let joined = if t == 0 {
            Err(Error::ProcFailed {
                rank: Rank::new(leader as u32),
                reason: "it could not make the group's world".into(),
            })
        } else {
            Control::open(&name_of(pid, t), members.len()).and_then(|ctl| {
                if ctl.try_attach(me, std::process::id()) {
                    Ok(ctl)
                } else {
                    Err(Error::Internal {
                        reason: format!("rank {me} of the group's world was already taken"),
                    })
                }
            })
        };
        ack(joined.is_ok());
        Ok(self.adopt(joined?, members.to_vec(), me))
    }

    /// Polls `done` (yielding, then sleeping up to 1 ms) while the `watch` ranks of
    /// this world are alive: PROC_FAILED once one is dead or gone.
    fn wait_group(&self, watch: &[usize], mut done: impl FnMut() -> bool) -> Result<()> {
        let mut pause = Duration::from_micros(1);
        while !done() {
            for &r in watch.iter().filter(|&&r| r != self.rank) {
                self.ctl.check_rank(self.rank, r, self.mode)?;
            }
            if pause < Duration::from_micros(50) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(pause);
            }
            pause = (pause * 2).min(Duration::from_millis(1));
        }
        Ok(())
    }

    /// The world over `ctl` (joined as `rank`) split from this one, whose members are
    /// this world's ranks `members`.
    fn adopt(&self, mut ctl: Control, members: Vec<usize>, rank: usize) -> ShmWorld {
        ctl.parent = Some(Parent {
            ctl: self.ctl.clone(),
            ranks: members.into_boxed_slice(),
        });
        // until the sub-world drops, this rank is not gone from it even if it leaves
        // this world (drops it) first, as under MPI
        self.ctl
            .slot(self.rank)
            .children
            .fetch_add(1, Ordering::AcqRel);
        ShmWorld {
            ctl: Arc::new(ctl),
            rank,
            mode: self.mode,
            next_window: Cell::new(0),
            exited: Cell::new(false),
            group_calls: Default::default(),
        }
    }

    /// A world of processes on this node that another library started and connects —
    /// the ranks of an MPI node communicator under `mpiexec` or `srun` — on rma's
    /// shared memory: this process is rank `rank` of `size`, and `exchange` is an
    /// all-gather over exactly those processes (each contributes a few bytes and gets
    /// every rank's contribution, in rank order). Rank 0 makes the world's control
    /// segment and names it through `exchange`; the others map it. Collective: every
    /// rank calls it, with the same `size`.
    ///
    /// The world needs `exchange` only while it forms: from then on its collectives,
    /// windows and liveness checks are rma's own, as for processes started by
    /// `rmarun`. No launcher of rma's watches it: [`ShmWorld::abort_job`] makes
    /// every peer's next wait fail, and ending the job is the starting library's
    /// (MPI_Abort on its world).
    ///
    /// Errors: ARG if `rank >= size` or `size` is 0 or above [`MAX_RANKS`]; NO_MEM if
    /// the segment cannot be made; PROC_FAILED if a rank could not join; `exchange`'s.
    pub fn over(rank: usize, size: usize, exchange: Exchange<'_>) -> Result<ShmWorld> {
        if size == 0 || size > MAX_RANKS || rank >= size {
            return Err(Error::arg(format!(
                "rank {rank} of a world of {size} ranks (1 to {MAX_RANKS})"
            )));
        }
        // what killed worlds of this user left behind goes first (no rmarun reaps
        // a node world's segments)
        if rank == 0 {
            Segment::sweep_stale();
        }
        let members: Vec<usize> = (0..size).collect();
        let Some((ctl, me)) = form(&members, rank, exchange)? else {
            return Err(Error::Internal {
                reason: "a rank of a node world was left out of it".into(),
            });
        };
        ctl.set_started();
        rma_core::wait::note_ranks(size);
        Ok(ShmWorld {
            ctl: Arc::new(ctl),
            rank: me,
            mode: ShmMode::Processes,
            next_window: Cell::new(0),
            exited: Cell::new(false),
            group_calls: Default::default(),
        })
    }

    /// A copy of this world with collectives of its own (MPI_Comm_dup): the same
    /// ranks, in the same order. Collective.
    pub fn dup(&self) -> Result<ShmWorld> {
        self.split(Some(0), 0)?.ok_or_else(|| Error::Internal {
            reason: "a dup left this rank out".into(),
        })
    }

    /// The world's failure word: zero while no rank is known dead and the world's
    /// control state is sound. It lives in shared memory and is set by whoever learns
    /// of a death first (the launcher, a rank's liveness check, a panicking rank of
    /// threads), so a per-call check is one relaxed load of it; on nonzero,
    /// [`ShmWorld::check_failed`] says what happened.
    pub fn failure_word(&self) -> &AtomicU32 {
        self.ctl.failed_word()
    }

    /// `Ok` while the failure word is zero; otherwise [`Error::ProcFailed`] naming the
    /// dead rank, or [`Error::Internal`] if a rank found the control state corrupt.
    pub fn check_failed(&self) -> Result<()> {
        if self.ctl.failed_word().load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        self.ctl.check_peers(self.rank, self.mode)
    }

    /// Sets how long this process's waits in this world tolerate implausible shared
    /// state that does not change (otherwise [`ENV_STALL_MS`]; at least 1 ms). In a
    /// world of threads every rank shares the setting.
    pub fn set_stall_bound(&self, bound: Duration) {
        let ms = bound.as_millis().clamp(1, u128::from(u64::MAX)) as u64;
        self.ctl.stall_ms.store(ms, Ordering::Relaxed);
    }

    /// A handle that checks the peers' liveness from any thread (for progress engines
    /// and transports that wait on peers).
    pub fn liveness(&self) -> Liveness {
        Liveness {
            ctl: self.ctl.clone(),
            rank: self.rank,
            mode: self.mode,
        }
    }

    /// Marks this rank as finished: peers still waiting for it get an error instead of
    /// waiting forever. Called on drop.
    fn leave(&self, state: RankState) {
        if !self.exited.replace(true) {
            self.ctl.set_state(self.rank, state);
        }
    }
}

impl Drop for ShmWorld {
    fn drop(&mut self) {
        let state = if std::thread::panicking() {
            RankState::Dead
        } else {
            RankState::Exited
        };
        self.leave(state);
        if let Some(p) = &self.ctl.parent {
            if let Some(&r) = p.ranks.get(self.rank) {
                p.ctl.slot(r).children.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

/// An all-gather of bytes among the ranks forming a world (`ShmWorld::over`'s
/// exchange): every rank's bytes, in rank order.
pub(crate) type Exchange<'a> = &'a dyn Fn(&[u8]) -> Result<Vec<Vec<u8>>>;

/// Forms the control segment of a new world whose ranks are `members` (in the new
/// world's order), ranks of an outer rank space in which this rank is `me_outer`:
/// the first member makes the segment and offers its name through `exchange` (an
/// all-gather over every rank of the outer space, members or not), the others open it
/// and take their slots, and a second exchange tells every rank whether its group
/// made it (the name is then removed). The segment and this rank's index in it;
/// `None` for a rank that is no member. The outer space is a world's ranks
/// ([`ShmWorld::split`]) or another library's communicator ([`ShmWorld::over`]).
fn form(
    members: &[usize],
    me_outer: usize,
    exchange: Exchange<'_>,
) -> Result<Option<(Control, usize)>> {
    // the group's first rank makes its control segment and names it to the others
    let leader = members.first() == Some(&me_outer);
    let made = leader.then(|| Control::create(members.len(), [0, 0]));
    let mut offer = vec![match &made {
        None => 0u8,
        Some(Ok(_)) => 1,
        Some(Err(e)) if e.class() == rma_core::ErrorClass::NoMem => 2,
        Some(Err(_)) => 3,
    }];
    if let Some(Ok(c)) = &made {
        offer.extend_from_slice(c.name().as_bytes());
    }
    let offers = match exchange(&offer) {
        Ok(o) => o,
        Err(e) => {
            if let Some(Ok(c)) = &made {
                c.unlink();
            }
            return Err(e);
        }
    };
    // this rank's part, if it is in a group: the control segment, made or opened
    let mine: Option<Result<(Control, usize)>> = members.first().map(|&first| {
        let me = members.iter().position(|&r| r == me_outer).unwrap_or(0);
        let ctl = match made {
            Some(own) => own,
            None => match offers.get(first).and_then(|o| o.split_first()) {
                Some((1, name)) => std::str::from_utf8(name)
                    .ok()
                    .filter(|n| valid_name(n))
                    .ok_or_else(|| Error::Internal {
                        reason: format!("rank {first} offered a malformed world name"),
                    })
                    .and_then(|n| Control::open(n, members.len())),
                Some((2, _)) => Err(Error::NoMem {
                    reason: format!(
                        "rank {first} could not make the control segment of a world of {}",
                        members.len()
                    ),
                }),
                _ => Err(Error::ProcFailed {
                    rank: Rank::new(first as u32),
                    reason: "it could not make the control segment of the split world".into(),
                }),
            },
        };
        ctl.map(|c| (c, me))
    });
    let mine = mine.map(|r| {
        r.and_then(|(c, me)| {
            if c.try_attach(me, std::process::id()) {
                Ok((c, me))
            } else {
                Err(Error::Internal {
                    reason: format!("rank {me} of the split world was already taken"),
                })
            }
        })
    });
    // every rank has opened (or failed to): the names can go, and every rank learns
    // whether its group made it
    let ok = [u8::from(!matches!(mine, Some(Err(_))))];
    let synced = exchange(&ok);
    if let Some(Ok((c, 0))) = &mine {
        c.unlink();
    }
    let synced = synced?;
    let Some(mine) = mine else {
        return Ok(None);
    };
    let (ctl, me) = mine?;
    // a rank the exchange did not answer for counts as one that could not join
    let joined = |r: usize| synced.get(r).and_then(|s| s.first()) == Some(&1);
    if let Some(&bad) = members.iter().find(|&&r| !joined(r)) {
        return Err(Error::ProcFailed {
            rank: Rank::new(bad as u32),
            reason: "it could not join the split world".into(),
        });
    }
    Ok(Some((ctl, me)))
}

/// Whether `name` looks like a segment name rma made (no path separators).
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 200
        && name.starts_with("rma-")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A fresh admission key for a world of processes ([`ENV_KEY`]), never `[0, 0]`.
pub(crate) fn fresh_key() -> [u64; 2] {
    let key = [random_u64(), random_u64()];
    if key == [0, 0] {
        [1, 0]
    } else {
        key
    }
}

/// A key as the launcher writes it in the environment: 32 hex digits.
pub(crate) fn format_key(key: [u64; 2]) -> String {
    format!("{:016x}{:016x}", key[0], key[1])
}

/// The key in `text` (exactly 32 hex digits).
fn parse_key(text: &str) -> Option<[u64; 2]> {
    if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let word = |r: std::ops::Range<usize>| u64::from_str_radix(text.get(r)?, 16).ok();
    Some([word(0..16)?, word(16..32)?])
}

/// 64 random bits: from /dev/urandom, else (if it cannot be read) a mix of the clock,
/// the pid and a per-process counter, which is unique but may be guessed.
pub(crate) fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    urandom_u64().unwrap_or_else(|| {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        mix(t ^ (u64::from(std::process::id()) << 32), n)
    })
}

fn mix(nanos: u64, counter: u64) -> u64 {
    (nanos ^ counter.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

/// 64 bits from the kernel's random source, if it can be read.
fn urandom_u64() -> Option<u64> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .ok()?;
    Some(u64::from_ne_bytes(bytes))
}

/// The name of a world of process `pid`: `rma-<pid>-<16 hex digits>`, the digits being
/// `random` when there is one, else a mix of the clock and `counter`. Every name has
/// the same shape, so one world's name is never a prefix of another's (the launcher
/// removes leftovers by prefix).
fn compose_name(pid: u32, random: Option<u64>, counter: u64, nanos: u64) -> String {
    let tag = random.unwrap_or_else(|| mix(nanos, counter));
    format!("rma-{pid}-{tag:016x}")
}

/// A fresh world name: the pid and 64 bits from /dev/urandom, so that other local
/// users cannot guess it (falling back to a mix of the clock and a per-process
/// counter if /dev/urandom cannot be read). Uniqueness does not rest on the name
/// alone: segments are created exclusively, so a clash is never a reuse (the world
/// tries another name).
pub(crate) fn fresh_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    compose_name(std::process::id(), urandom_u64(), n, t)
}

/// Runs `f` on `n` ranks, each a thread of this process with its own [`ShmWorld`] handle,
/// and returns their results in rank order.
///
/// If a rank panics, the others see it as dead (their waits return
/// [`Error::ProcFailed`]), and the first panic is resumed once all threads have ended.
pub fn run_threads<R, F>(n: usize, f: F) -> Result<Vec<R>>
where
    R: Send,
    F: Fn(ShmWorld) -> R + Sync,
{
    // what killed worlds of this user left behind goes first
    Segment::sweep_stale();
    let ctl = Arc::new(Control::create(n, [0, 0])?);
    rma_core::wait::note_ranks(n);
    // every thread shares this one mapping: the name is no longer needed
    ctl.unlink();
    for r in 0..n {
        ctl.attach(r, std::process::id());
    }
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|rank| {
                let (ctl, f) = (ctl.clone(), &f);
                std::thread::Builder::new()
                    .name(format!("rma-rank-{rank}"))
                    .spawn_scoped(s, move || {
                        let world = ShmWorld {
                            ctl: ctl.clone(),
                            rank,
                            mode: ShmMode::Threads,
                            next_window: Cell::new(0),
                            exited: Cell::new(false),
                            group_calls: Default::default(),
                        };
                        let out = f(world);
                        // gone from every sub-world too, even one it leaked
                        ctl.slot(rank).finished.store(1, Ordering::Release);
                        out
                    })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.map(|h| h.join()))
            .collect::<Vec<_>>()
    });
    let mut out = Vec::with_capacity(n);
    let mut panic = None;
    for r in results {
        match r {
            Ok(Ok(v)) => out.push(v),
            Ok(Err(p)) => {
                panic.get_or_insert(p);
            }
            Err(e) => {
                return Err(Error::Os {
                    context: "spawning a rank thread".into(),
                    source: e,
                })
            }
        }
    }
    if let Some(p) = panic {
        std::panic::resume_unwind(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on another thread; panics if it has not returned within 60 s (a hang
    /// fails the test instead of blocking the run).
    fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("still waiting after 60 s (a hang)")
    }

    /// Every collective call reads back from its code; a window's drop matches its
    /// free and nothing else, and no two kinds or windows match.
    #[test]
    fn collective_codes_round_trip_and_a_drop_matches_only_its_free() {
        let all = [
            Collective::Barrier,
            Collective::Allgather,
            Collective::Create(3),
            Collective::Fence(3),
            Collective::Free(3),
            Collective::Drop(3),
            Collective::Fence(4),
            Collective::Free(4),
        ];
        let at = |seq: u64, c: Collective| seq << 32 | u64::from(c.code());
        for a in all {
            assert_eq!(Collective::from_code(a.code()), Some(a));
            for b in all {
                let matched = a == b
                    || matches!(
                        (a, b),
                        (Collective::Free(x), Collective::Drop(y))
                            | (Collective::Drop(x), Collective::Free(y)) if x == y
                    );
                assert_eq!(same_call(at(7, a), at(7, b)), matched, "{a:?} {b:?}");
                // another call number never matches, and waiting inside does not count
                assert!(!same_call(at(7, a), at(8, a)));
                assert!(same_call(at(7, a) | INSIDE, at(7, a)));
            }
        }
        assert!(after(0, u32::MAX) && !after(u32::MAX, 0) && !after(5, 5));
    }

    /// Two ranks in a barrier while the third enters an all-gather (which used to
    /// match the barrier, then wait forever in its second step): every rank's call
    /// fails with PROC_FAILED at once, and the world stays broken.
    #[test]
    fn a_barrier_against_an_all_gather_breaks_the_world() {
        let out = within(|| {
            run_threads(3, |world| -> (Result<()>, Result<()>) {
                let first = if world.rank() == 2 {
                    world.allgather(&[1]).map(drop)
                } else {
                    world.barrier()
                };
                (first, world.barrier())
            })
            .unwrap()
        });
        for (rank, (first, then)) in out.into_iter().enumerate() {
            let e = first.expect_err("a barrier matched an all-gather");
            assert_eq!(
                e.class(),
                rma_core::ErrorClass::ProcFailed,
                "rank {rank}: {e}"
            );
            assert!(e.to_string().contains("different collective calls"), "{e}");
            let e = then.expect_err("a barrier of the broken world");
            assert_eq!(
                e.class(),
                rma_core::ErrorClass::ProcFailed,
                "rank {rank}: {e}"
            );
        }
    }

    /// A rank late to a barrier by many liveness checks is waited for: only a rank
    /// found in another collective call ends a wait.
    #[test]
    fn a_rank_late_to_a_barrier_is_waited_for() {
        let late = 10 * liveness_interval();
        let out = within(move || {
            run_threads(3, |world| -> Result<()> {
                for round in 0..3 {
                    if world.rank() == round {
                        std::thread::sleep(late);
                    }
                    world.barrier()?;
                    world.allgather(&[round as u8])?;
                }
                Ok(())
            })
            .unwrap()
        });
        assert!(out.iter().all(|r| r.is_ok()), "{out:?}");
    }

    /// A rank that drops its world while it holds a world split from it stays in the
    /// sub-world (as under MPI): the sub-world's collectives still work.
    #[test]
    fn a_sub_world_outlives_the_world_it_came_from() {
        let out = run_threads(3, |world| -> Result<usize> {
            let sub = world
                .split(Some(0), -(world.rank() as i32))?
                .expect("a color");
            drop(world);
            sub.barrier()?;
            let all = sub.allgather(&[sub.rank() as u8])?;
            Ok(all.len())
        })
        .unwrap();
        assert!(out.iter().all(|r| matches!(r, Ok(3))), "{out:?}");
    }

    /// The same two levels down: a rank that dropped the middle world and leaked the
    /// innermost one, then returned, is gone from the innermost one too.
    #[test]
    fn a_leaked_grandchild_world_of_a_returned_thread_is_left() {
        let out = run_threads(2, |world| -> Result<()> {
            let mid = world.split(Some(0), 0)?.expect("a color");
            let inner = mid.split(Some(0), 0)?.expect("a color");
            drop(mid);
            if world.rank() == 0 {
                std::mem::forget(inner);
                return Ok(());
            }
            inner.barrier()
        })
        .unwrap();
        assert!(out[0].is_ok());
        let e = out[1].as_ref().unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::ProcFailed, "{e}");
    }

    /// Members of a group make its world alone, twice with the same members and tag
    /// (matched in order), while the other ranks make one of their own.
    #[test]
    fn groups_make_their_worlds_alone() {
        let out = run_threads(4, |world| -> Result<Vec<usize>> {
            let mine: Vec<usize> = (0..4).filter(|r| r % 2 == world.rank() % 2).rev().collect();
            let mut sizes = Vec::new();
            for _ in 0..2 {
                let g = world.create_group(&mine, 3)?;
                g.barrier()?;
                sizes.push(g.size() * 10 + g.rank());
            }
            Ok(sizes)
        })
        .unwrap();
        let got: Vec<Vec<usize>> = out.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(
            got,
            [vec![21, 21], vec![21, 21], vec![20, 20], vec![20, 20]]
        );
    }

    /// A rank whose thread returns while it leaked a sub-world is gone from it: a peer
    /// waiting in the sub-world's barrier gets PROC_FAILED, not a hang.
    #[test]
    fn a_leaked_sub_world_of_a_returned_thread_is_left() {
        let out = run_threads(2, |world| -> Result<()> {
            let sub = world.split(Some(0), 0)?.expect("a color");
            if world.rank() == 0 {
                std::mem::forget(sub);
                return Ok(());
            }
            sub.barrier()
        })
        .unwrap();
        assert!(out[0].is_ok());
        let e = out[1].as_ref().unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::ProcFailed, "{e}");
    }

    /// Another process sets the barrier count as if every rank but one had arrived.
    /// That used to release the next rank to arrive at once, before the others; now
    /// the rank that sees the count lie fails, and so do the others (the count can no
    /// longer add up), all with class INTERN, and the world is marked failed.
    #[test]
    fn a_corrupt_barrier_count_is_an_error_not_an_early_release() {
        let first_done = std::sync::atomic::AtomicBool::new(false);
        let out = run_threads(3, |world| -> (Result<()>, Result<()>) {
            let setup = world.barrier();
            if world.rank() == 0 {
                world.ctl.header().bar_count.0.store(2, Ordering::SeqCst);
                let r = world.barrier();
                first_done.store(true, Ordering::SeqCst);
                (setup.and(r), world.check_failed())
            } else {
                while !first_done.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                (setup.and(world.barrier()), world.check_failed())
            }
        })
        .unwrap();
        for (rank, (r, failed)) in out.into_iter().enumerate() {
            let e = r.expect_err("a barrier the count lied about");
            assert_eq!(e.class(), rma_core::ErrorClass::Intern, "rank {rank}: {e}");
            assert_eq!(failed.unwrap_err().class(), rma_core::ErrorClass::Intern);
        }
    }

    /// Another process moves the barrier generation on (by one, as a release would,
    /// or by several) while two ranks wait for the third: they used to leave the
    /// barrier without it; now they fail with class INTERN.
    #[test]
    fn a_barrier_generation_moved_by_someone_else_is_an_error() {
        for bump in [1, 5] {
            let returned = AtomicU32::new(0);
            let out = run_threads(3, |world| -> Result<()> {
                world.barrier()?;
                let h = world.ctl.header();
                if world.rank() == 2 {
                    // the other two are inside: both counted, both asleep or about to be
                    while h.bar_count.0.load(Ordering::SeqCst) != 2 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    h.bar_gen.0.fetch_add(bump, Ordering::SeqCst);
                    sys::futex_wake_all(&h.bar_gen.0);
                    // this rank never arrives: it stays until the others have returned
                    while returned.load(Ordering::SeqCst) < 2 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    return world.check_failed();
                }
                let r = world.barrier();
                returned.fetch_add(1, Ordering::SeqCst);
                r
            })
            .unwrap();
            for r in &out {
                let e = r.as_ref().expect_err("released without rank 2");
                assert_eq!(e.class(), rma_core::ErrorClass::Intern, "bump {bump}: {e}");
            }
        }
    }

    /// A world whose fresh name someone took first starts under another fresh name,
    /// and leaves the squatter's file alone; only when every name it tries is taken
    /// does it fail, creating nothing.
    #[test]
    fn a_taken_world_name_is_retried_with_a_fresh_one() {
        let squat = |name: &str| std::fs::write(format!("/dev/shm/{name}"), b"squatter").unwrap();
        let untouched =
            |name: &str| std::fs::read(format!("/dev/shm/{name}")).is_ok_and(|b| b == b"squatter");
        let taken = fresh_name();
        squat(&taken);
        let mut names = std::iter::once(taken.clone()).chain(std::iter::repeat_with(fresh_name));
        let ctl = Control::create_named(|| names.next().unwrap_or_default(), 2, [7, 9]).unwrap();
        assert_ne!(ctl.name(), taken);
        assert!(ctl
            .name()
            .starts_with(&format!("rma-{}-", std::process::id())));
        assert!(ctl.admits([7, 9]) && !ctl.admits([7, 8]) && !ctl.admits([0, 0]));
        assert!(untouched(&taken));
        ctl.unlink();
        let all: Vec<String> = (0..NAME_ATTEMPTS).map(|_| fresh_name()).collect();
        for n in &all {
            squat(n);
        }
        let mut names = all.iter().cloned();
        let e = Control::create_named(|| names.next().unwrap_or_default(), 2, [1, 1]).unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::Intern, "{e}");
        assert!(e.to_string().contains("already exists"), "{e}");
        for n in all.iter().chain([&taken]) {
            assert!(untouched(n), "{n}");
            std::fs::remove_file(format!("/dev/shm/{n}")).unwrap();
        }
        // a world of threads has no key: no process is admitted
        let threads = Control::create(1, [0, 0]).unwrap();
        threads.unlink();
        assert!(!threads.admits([0, 0]));
    }

    #[test]
    fn keys_are_32_hex_digits() {
        let k = fresh_key();
        assert_ne!(k, [0, 0]);
        assert_eq!(parse_key(&format_key(k)), Some(k));
        assert_eq!(format_key([1, 2]), "00000000000000010000000000000002");
        for bad in [
            "",
            "0",
            "xyz",
            &"0".repeat(31),
            &"0".repeat(33),
            &"g".repeat(32),
        ] {
            assert_eq!(parse_key(bad), None, "{bad:?}");
        }
        assert_ne!(fresh_key(), fresh_key());
    }

    /// A rank that joins while the launcher is still starting others sleeps until the
    /// launcher says every rank is started (it used to go straight into its first
    /// wait, whose liveness checks took the CPU the launcher needed), and gives up
    /// with an error if the launcher aborts the world instead.
    #[test]
    fn joined_ranks_wait_until_every_rank_is_started() {
        let ctl = Control::create(2, [1, 1]).unwrap();
        ctl.unlink();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let r = ctl.wait_started();
                done.store(true, Ordering::SeqCst);
                r
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(
                !done.load(Ordering::SeqCst),
                "went on before every rank started"
            );
            ctl.set_started();
            assert!(waiter.join().unwrap().is_ok());
        });
        let aborted = Control::create(2, [1, 1]).unwrap();
        aborted.unlink();
        aborted.set_abort();
        let e = aborted.wait_started().unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::ProcFailed, "{e}");
    }

    #[test]
    fn names_carry_the_random_part_or_fall_back_to_the_mix() {
        let r = 0x0123_4567_89ab_cdef;
        assert_eq!(compose_name(42, Some(r), 7, 99), "rma-42-0123456789abcdef");
        // fallback: same shape, and the counter changes it
        let (a, b) = (compose_name(42, None, 0, 99), compose_name(42, None, 1, 99));
        assert_ne!(a, b);
        for n in [&a, &b] {
            assert!(valid_name(n) && n.len() == "rma-42-".len() + 16, "{n}");
        }
        // names from this process: pid, then 16 hex digits that come from urandom
        let (x, y) = (fresh_name(), fresh_name());
        assert_ne!(x, y);
        let prefix = format!("rma-{}-", std::process::id());
        for n in [&x, &y] {
            let tail = n.strip_prefix(&prefix).unwrap();
            assert_eq!(tail.len(), 16, "{n}");
            assert!(u64::from_str_radix(tail, 16).is_ok(), "{n}");
        }
        assert!(urandom_u64().is_some(), "/dev/urandom is readable here");
    }
}
