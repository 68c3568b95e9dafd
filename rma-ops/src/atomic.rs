//! Element-wise atomic kernels over raw pointers into shared memory, and the atomicity
//! domain that lets bulk accumulates run without a read-modify-write instruction per
//! element.
//!
//! # The atomicity domain of a window (docs/design.md decision 3)
//!
//! Every accumulate-family update of a window goes through one [`Domain`]: a table of
//! chunk locks (one word per 16 KiB chunk of the window, hashed into the table) and one
//! announcement slot per origin. The mechanism for an element depends on its basic type
//! and on how many elements the call touches, never on the op, and the two mechanisms
//! exclude each other:
//!
//! - **Small updates** (one element, or a few) of a type of 1, 2, 4 or 8 bytes use one
//!   hardware atomic per element: native read-modify-write where the CPU has it
//!   (add on 8-byte integers; and, or, xor; swap for REPLACE on 8 bytes; an atomic
//!   load for NO_OP), a compare-and-swap loop for everything else. Before, the origin
//!   *announces* the chunk in its slot (an atomic swap, which is a full fence) and
//!   checks that no bulk update holds the chunk's lock; after, it clears the slot.
//!   Origins contending on one element share nothing else, so they run at the rate of
//!   the bare atomic.
//! - **Bulk updates** (and every update of a type wider than 8 bytes, and MPI_BYTE updates of
//!   more than one byte: see `bulk_path`) take the chunk's lock, wait
//!   until no origin announces that chunk, and then update element by element with
//!   relaxed loads and stores, no read-modify-write instruction per element.
//!
//! The announce-then-check of a small update and the lock-then-check of a bulk update
//! are a Dekker pair under sequentially consistent atomics: at least one side sees the
//! other, so a bulk update never interleaves with a single-element atomic on the same
//! element (MPI's element-wise atomicity). Locks and slots record the holder's process
//! id where processes share the domain, so a waiter takes over from a holder that was
//! killed inside its critical section (the element it was updating may be torn; the
//! dead peer is reported by the next synchronization).
//!
//! # Rust's memory model
//!
//! Every access to window memory, here and in [`crate::shared`], is an atomic on the
//! aligned 8-byte word holding the element (narrow elements are spliced into their
//! word with a compare-and-swap): no access is ever non-atomic, and no two racing
//! atomics differ in size, so even a program MPI calls erroneous (a put racing an
//! accumulate on the same element) reads unspecified values, never undefined
//! behaviour. The domain gives MPI's atomicity on top of that.
//!
//! Read-modify-writes are `AcqRel`, atomic reads `Acquire`; locks and slots use
//! `SeqCst` where they form the Dekker pair and `Release` when let go.

use crate::element::Element;
use crate::shared;
use rma_core::{BasicType, Error, Op, Result, TypeClass};
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

/// How single elements of a basic type are updated atomically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// A hardware atomic word of this many bytes (1, 2, 4 or 8).
    Native(usize),
    /// The chunk lock of the [`Domain`] around a word-wise read and write.
    ChunkLock,
}

/// The single-element mechanism of `basic` (a function of the type alone).
pub const fn strategy(basic: BasicType) -> Strategy {
    match basic.size() {
        n @ (1 | 2 | 4 | 8) => Strategy::Native(n),
        _ => Strategy::ChunkLock,
    }
}

/// The alignment a target element of `basic` needs for the atomic kernels: its size for
/// native words; for lock-protected elements their type alignment up to a word (the
/// kernels move them in word atomics, and an MPI library may place a window's memory
/// at 8 bytes only, as Open MPI does, while `long double` aligns to 16).
pub const fn atomic_align(basic: BasicType) -> usize {
    match strategy(basic) {
        Strategy::Native(n) => n,
        Strategy::ChunkLock => {
            if basic.align() < shared::WORD {
                basic.align()
            } else {
                shared::WORD
            }
        }
    }
}

/// log2 of the bytes of window one chunk lock covers.
pub const CHUNK_SHIFT: u32 = 14;
/// The most chunk locks a domain may have (slots encode a lock index in 10 bits).
pub const MAX_CHUNK_LOCKS: usize = 1024;
/// Updates of at least this many bytes take the bulk path (a chunk lock and word-wise
/// loops) rather than one atomic per element.
pub const BULK_BYTES: usize = 64;

/// Whether an update of `bytes` bytes of `basic` takes the bulk path (the chunk lock):
/// from [`BULK_BYTES`] on, and for MPI_BYTE from two bytes on. MPI makes accumulates
/// atomic per basic element, for MPI_BYTE per byte; but programs move small structs
/// (a pointer and a rank) with MPI_BYTE accumulates and read them back with MPI_BYTE
/// get-accumulates, and expect the call applied whole, as C MPIs do. Under the chunk
/// lock a call within one 16 KiB chunk is applied whole against every other such call.
#[inline(always)]
fn bulk_path(basic: BasicType, bytes: usize) -> bool {
    bytes >= BULK_BYTES || (basic == BasicType::Byte && bytes > 1)
}

/// One origin's announcement slot, alone on an aligned pair of cache lines (CPUs fetch
/// lines in adjacent pairs, so one line would still be shared with the next origin's):
/// 0 when idle, otherwise `owner << 10 | chunk lock index` while the origin updates
/// that chunk with atomics.
#[repr(C, align(128))]
#[derive(Debug, Default)]
pub struct Slot(AtomicU32);

/// Bytes of a [`Slot`].
pub const SLOT_BYTES: usize = 128;

const _: () = assert!(std::mem::size_of::<Slot>() == SLOT_BYTES);

/// The atomicity domain of one window on one target: chunk locks and the origins'
/// announcement slots, wherever the caller keeps them (a shared segment for processes,
/// the heap for threads). Every origin of the window uses the same tables, each through
/// its own slot `me`.
#[derive(Debug, Clone, Copy)]
pub struct Domain<'a> {
    chunks: &'a [AtomicU32],
    mask: usize,
    slots: &'a [Slot],
    me: usize,
    /// What this origin writes into lock words and its slot (non-zero, below 2^22): its
    /// process id where processes share the tables.
    owner: u32,
    /// Whether a recorded holder still exists; `None` where holders cannot die while
    /// holding (threads of one process).
    alive: Option<fn(u32) -> bool>,
}

/// Heap-allocated domain tables, for origins that are threads of one process.
#[derive(Debug)]
pub struct HeapDomain {
    chunks: Box<[AtomicU32]>,
    slots: Box<[Slot]>,
}

impl HeapDomain {
    /// Tables for `origins` origins and `locks` chunk locks (rounded up to a power of
    /// two, at most [`MAX_CHUNK_LOCKS`]).
    pub fn new(origins: usize, locks: usize) -> HeapDomain {
        let locks = locks.clamp(1, MAX_CHUNK_LOCKS).next_power_of_two();
        HeapDomain {
            chunks: (0..locks).map(|_| AtomicU32::new(0)).collect(),
            slots: (0..origins.max(1)).map(|_| Slot::default()).collect(),
        }
    }

    /// The domain as seen by origin `me` (< `origins`).
    pub fn domain(&self, me: usize) -> Result<Domain<'_>> {
        Domain::new(&self.chunks, &self.slots, me)
    }
}

impl<'a> Domain<'a> {
    /// A domain over `chunks` (a power of two of at most [`MAX_CHUNK_LOCKS`] words) and
    /// `slots` (one per origin), used by origin `me`.
    #[inline]
    pub fn new(chunks: &'a [AtomicU32], slots: &'a [Slot], me: usize) -> Result<Domain<'a>> {
        if chunks.is_empty() || !chunks.len().is_power_of_two() || chunks.len() > MAX_CHUNK_LOCKS {
            return Err(bad_table(chunks.len()));
        }
        if me >= slots.len() {
            return Err(no_slot(me, slots.len()));
        }
        Ok(Domain {
            mask: chunks.len() - 1,
            chunks,
            slots,
            me,
            owner: 1,
            alive: None,
        })
    }

    /// A domain shared by processes: this origin records `owner` (its process id,
    /// non-zero, below 2^22), and a waiter that has waited long asks `alive(holder)`.
    #[inline]
    pub fn with_owner(
        chunks: &'a [AtomicU32],
        slots: &'a [Slot],
        me: usize,
        owner: u32,
        alive: fn(u32) -> bool,
    ) -> Result<Domain<'a>> {
        let mut d = Domain::new(chunks, slots, me)?;
        if owner == 0 || owner >= 1 << 22 {
            return Err(bad_owner(owner));
        }
        d.owner = owner;
        d.alive = Some(alive);
        Ok(d)
    }

    /// [`Domain::with_owner`] without the checks, for a caller that validated the tables
    /// once (at window creation) and builds a domain on every call: `chunks` is a power
    /// of two of at most [`MAX_CHUNK_LOCKS`] words, `me < slots.len()`, `owner` in
    /// 1..2^22. Breaking that is a logic error (a panic on indexing, or origins that
    /// do not see each other), never undefined behaviour; debug builds assert it.
    #[inline(always)]
    pub fn trusted(
        chunks: &'a [AtomicU32],
        slots: &'a [Slot],
        me: usize,
        owner: u32,
        alive: fn(u32) -> bool,
    ) -> Domain<'a> {
        debug_assert!(chunks.len().is_power_of_two() && chunks.len() <= MAX_CHUNK_LOCKS);
        debug_assert!(me < slots.len() && owner != 0 && owner < 1 << 22);
        Domain {
            mask: chunks.len().wrapping_sub(1),
            chunks,
            slots,
            me,
            owner,
            alive: Some(alive),
        }
    }

    /// The chunk lock index of the element at byte `key` of the window.
    #[inline(always)]
    fn index(&self, key: usize) -> usize {
        (key >> CHUNK_SHIFT) & self.mask
    }

    /// Whether a holder recorded as `owner` has died (never, for threads).
    #[cold]
    fn holder_dead(&self, owner: u32) -> bool {
        self.alive.is_some_and(|alive| owner != 0 && !alive(owner))
    }

    /// Announces that this origin updates chunk lock `idx` with atomics, once no bulk
    /// update holds it. If the slot is already in use (another thread updating through
    /// the same slot), takes the chunk lock instead, with every announcement drained
    /// (that thread's included): the atomic then runs under the lock, which is as safe.
    #[inline(always)]
    fn announce(&self, idx: usize) -> Result<Claim<'a>> {
        let slot = &self.slots[self.me].0;
        let tag = self.owner << 10 | idx as u32;
        loop {
            if slot.compare_exchange(0, tag, SeqCst, Relaxed).is_err() {
                return Ok(Claim::Locked {
                    _lock: self.lock(idx, true)?,
                });
            }
            if self.chunks[idx].load(SeqCst) == 0 {
                return Ok(Claim::Announced {
                    _slot: Announced { slot },
                });
            }
            slot.store(0, Release);
            self.wait_unlocked(idx)?;
        }
    }

    /// Claims the element of `size` bytes at window byte `key` for a single-element
    /// update: announced for a native atomic (up to 8 bytes), its chunk lock with the
    /// announcements drained for a wider element (updated word by word).
    #[inline(always)]
    fn claim_element(&self, key: usize, size: usize) -> Result<Claim<'a>> {
        let idx = self.index(key);
        if size <= 8 {
            self.announce(idx)
        } else {
            Ok(Claim::Locked {
                _lock: self.lock(idx, true)?,
            })
        }
    }

    #[cold]
    fn wait_unlocked(&self, idx: usize) -> Result<()> {
        let word = &self.chunks[idx];
        let mut wait = Waiter::new();
        loop {
            let holder = word.load(Relaxed);
            if holder == 0 {
                return Ok(());
            }
            if wait.pause(stalled("a chunk lock", holder))?
                && self.holder_dead(holder)
                && word.compare_exchange(holder, 0, Acquire, Relaxed).is_ok()
            {
                return Ok(());
            }
        }
    }

    /// Takes chunk lock `idx`; with `drain`, also waits until no other origin announces
    /// it (needed before bulk loops over elements of native-atomic types).
    fn lock(&self, idx: usize, drain: bool) -> Result<ChunkGuard<'a>> {
        let word = &self.chunks[idx];
        let mut wait = Waiter::new();
        loop {
            if word.load(Relaxed) == 0
                && word
                    .compare_exchange(0, self.owner, SeqCst, Relaxed)
                    .is_ok()
            {
                break;
            }
            // a critical section lasts nanoseconds to microseconds: after a while, ask
            // whether the holder still exists
            let holder = word.load(Relaxed);
            if wait.pause(stalled("a chunk lock", holder))?
                && self.holder_dead(holder)
                && word
                    .compare_exchange(holder, self.owner, SeqCst, Relaxed)
                    .is_ok()
            {
                break;
            }
        }
        let guard = ChunkGuard { word };
        if drain {
            // this origin's own slot too: another thread may be announcing through it
            // (the caller itself never is, while it takes a lock); an error releases
            // the lock (the guard drops)
            for slot in self.slots {
                self.drain(&slot.0, idx)?;
            }
        }
        Ok(guard)
    }

    /// Waits until `slot` does not announce chunk lock `idx`.
    #[inline]
    fn drain(&self, slot: &AtomicU32, idx: usize) -> Result<()> {
        let mut wait = Waiter::new();
        loop {
            let v = slot.load(SeqCst);
            if v == 0 || (v & 1023) as usize != idx {
                return Ok(());
            }
            if wait.pause(stalled("an announcement of a chunk", v >> 10))?
                && self.holder_dead(v >> 10)
            {
                let _ = slot.compare_exchange(v, 0, SeqCst, Relaxed);
            }
        }
    }

    /// Calls `f(first, count)` for each group of the `n` elements of `size` bytes at
    /// window bytes `key..` that share a chunk (an element belongs to the chunk of its
    /// first byte), holding that chunk's lock with other origins' atomics drained.
    #[inline]
    fn bulk(
        &self,
        key: usize,
        size: usize,
        n: usize,
        mut f: impl FnMut(usize, usize),
    ) -> Result<()> {
        let mut i = 0;
        while i < n {
            let start = key + i * size;
            let boundary = ((start >> CHUNK_SHIFT) + 1) << CHUNK_SHIFT;
            let count = (boundary - start).div_ceil(size).min(n - i);
            let _guard = self.lock(self.index(start), true)?;
            f(i, count);
            i += count;
        }
        Ok(())
    }
}

/// The pacing of a wait on a word another origin holds: the policy of every wait in
/// rma (`rma_core::wait`: a few dozen spins, then up to 1 ms more on free cores or a
/// few yields when oversubscribed), then sleeps of 50 µs (no futex word here; a
/// stopped holder does not cost a core), and gives up with [`Error::Stalled`] after
/// [`rma_core::stall_limit`].
struct Waiter {
    pace: rma_core::wait::Backoff,
    pauses: u32,
    since: Option<std::time::Instant>,
}

impl Waiter {
    #[inline(always)]
    fn new() -> Waiter {
        Waiter {
            pace: rma_core::wait::Backoff::new(),
            pauses: 0,
            since: None,
        }
    }

    /// Pauses once, paced as every wait of rma is (rma_core::wait: spin on free cores,
    /// yield when oversubscribed, then sleep 50 µs at a time). `Ok(true)` every 1024
    /// pauses, and every 16 once sleeping: time to ask whether the holder died.
    #[inline]
    fn pause(&mut self, stalled: impl FnOnce(u64) -> Error) -> Result<bool> {
        self.pauses = self.pauses.wrapping_add(1);
        if self.pace.step() != rma_core::wait::Step::Park {
            return Ok(self.pauses % 1024 == 0);
        }
        self.slow(stalled)
    }

    #[cold]
    fn slow(&mut self, stalled: impl FnOnce(u64) -> Error) -> Result<bool> {
        let since = *self.since.get_or_insert_with(std::time::Instant::now);
        let waited = since.elapsed();
        if waited > rma_core::stall_limit() {
            return Err(stalled(waited.as_millis() as u64));
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
        Ok(self.pauses % 16 == 0)
    }
}

#[cold]
fn stalled(what: &str, holder: u32) -> impl FnOnce(u64) -> Error + '_ {
    move |waited_ms| Error::Stalled {
        what: format!("{what} held by owner {holder} (a process id, or 1 for threads)"),
        waited_ms,
    }
}

#[cold]
fn bad_table(len: usize) -> Error {
    Error::arg(format!(
        "a chunk lock table needs a power-of-two number of words up to {MAX_CHUNK_LOCKS}, got {len}"
    ))
}

#[cold]
fn no_slot(me: usize, slots: usize) -> Error {
    Error::arg(format!(
        "origin {me} has no announcement slot (the domain has {slots})"
    ))
}

#[cold]
fn bad_owner(owner: u32) -> Error {
    Error::arg(format!(
        "a domain owner must be a process id in 1..2^22, got {owner}"
    ))
}

/// What a single-element update holds: its announcement, or (when its slot was busy)
/// the chunk lock.
enum Claim<'a> {
    /// Held for its drop, which clears the announcement.
    Announced { _slot: Announced<'a> },
    /// Held for its drop, which releases the lock.
    Locked { _lock: ChunkGuard<'a> },
}

/// This origin's announcement; cleared on drop.
struct Announced<'a> {
    slot: &'a AtomicU32,
}

impl Drop for Announced<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.slot.store(0, Release);
    }
}

/// A held chunk lock; released on drop.
struct ChunkGuard<'a> {
    word: &'a AtomicU32,
}

impl Drop for ChunkGuard<'_> {
    fn drop(&mut self) {
        self.word.store(0, Release);
    }
}

/// Whether `op` on `T` has a native read-modify-write instruction (integer add; and,
/// or, xor on integers and bytes).
#[inline(always)]
fn native_class<T: Element>() -> (bool, bool) {
    let class = T::BASIC.class();
    let int = matches!(class, TypeClass::Integer | TypeClass::Address);
    (int, int || class == TypeClass::Byte)
}

/// Fetch-and-op on an 8-byte element: one native atomic, or a CAS loop.
///
/// # Safety
/// `p` is an aligned word of window memory ([`crate::shared`]'s contract).
#[inline(always)]
unsafe fn fop64<T: Element>(op: Op, p: *mut u8, origin: T) -> T {
    debug_assert!(p as usize % 8 == 0, "fop64 on a misaligned word");
    // SAFETY: forwarded from this function's contract.
    let a = unsafe { shared::atomic(p.cast()) };
    let o = origin.to_bits();
    let (int, bitwise) = native_class::<T>();
    let old = match op {
        Op::Sum if int => a.fetch_add(o, AcqRel),
        Op::Band if bitwise => a.fetch_and(o, AcqRel),
        Op::Bor if bitwise => a.fetch_or(o, AcqRel),
        Op::Bxor if bitwise => a.fetch_xor(o, AcqRel),
        Op::Replace => a.swap(o, AcqRel),
        Op::NoOp => a.load(Acquire),
        _ => {
            let mut cur = a.load(Relaxed);
            loop {
                let new = T::combine(op, T::from_bits(cur), origin).to_bits();
                match a.compare_exchange_weak(cur, new, AcqRel, Relaxed) {
                    Ok(v) => break v,
                    Err(v) => cur = v,
                }
            }
        }
    };
    T::from_bits(old)
}

/// Fetch-and-op on an element of 1, 2 or 4 bytes, aligned to its size: an atomic on
/// the 8-byte word holding it (every window access is a word access, so no two racing
/// atomics ever differ in size): native and / or / xor with the other bytes masked
/// out, a CAS loop splicing the new value in for everything else.
///
/// # Safety
/// `p` is an element of window memory aligned to its size ([`crate::shared`]).
#[inline(always)]
unsafe fn fop_narrow<T: Element>(op: Op, p: *mut u8, origin: T) -> T {
    let s = std::mem::size_of::<T>();
    debug_assert!(
        p as usize % s == 0,
        "a narrow atomic on a misaligned element"
    );
    let (w, k) = shared::word_of(p);
    // SAFETY: the word holding an aligned narrow element (the contract).
    let a = unsafe { shared::atomic(w) };
    let (sh, m) = (shared::shift(k, s), shared::mask(s));
    let o = (origin.to_bits() & m) << sh;
    let (_, bitwise) = native_class::<T>();
    let old = match op {
        Op::Band if bitwise => a.fetch_and(o | !(m << sh), AcqRel),
        Op::Bor if bitwise => a.fetch_or(o, AcqRel),
        Op::Bxor if bitwise => a.fetch_xor(o, AcqRel),
        Op::NoOp => a.load(Acquire),
        _ => {
            let mut cur = a.load(Relaxed);
            loop {
                let v = if op == Op::Replace {
                    origin
                } else {
                    T::combine(op, T::from_bits((cur >> sh) & m), origin)
                };
                let new = (cur & !(m << sh)) | ((v.to_bits() & m) << sh);
                match a.compare_exchange_weak(cur, new, AcqRel, Relaxed) {
                    Ok(v) => break v,
                    Err(v) => cur = v,
                }
            }
        }
    };
    T::from_bits((old >> sh) & m)
}

/// Compare-and-swap on an element of 1, 2, 4 or 8 bytes aligned to its size, through
/// its word. Bytes are compared, except for booleans, whose values are (a window byte
/// of 2 is `true`).
///
/// # Safety
/// As for [`fop_narrow`].
#[inline(always)]
unsafe fn cas_word<T: Element>(p: *mut u8, origin: T, compare: T) -> T {
    let s = std::mem::size_of::<T>();
    debug_assert!(p as usize % s == 0, "a word CAS on a misaligned element");
    let (w, k) = shared::word_of(p);
    // SAFETY: the word holding an aligned element of at most 8 bytes (the contract).
    let a = unsafe { shared::atomic(w) };
    let (sh, m) = (shared::shift(k, s), shared::mask(s));
    let (o, c) = (origin.to_bits() & m, compare.to_bits() & m);
    if s == 8 && T::BASIC != BasicType::Bool {
        return match a.compare_exchange(c, o, AcqRel, Acquire) {
            Ok(v) | Err(v) => T::from_bits(v),
        };
    }
    let mut cur = a.load(Acquire);
    loop {
        let bits = (cur >> sh) & m;
        let equal = if T::BASIC == BasicType::Bool {
            T::from_bits(bits) == compare
        } else {
            bits == c
        };
        if !equal {
            return T::from_bits(bits);
        }
        match a.compare_exchange_weak(cur, (cur & !(m << sh)) | (o << sh), AcqRel, Acquire) {
            Ok(_) => return T::from_bits(bits),
            Err(v) => cur = v,
        }
    }
}

/// One element's atomic fetch-and-op; returns the old value.
///
/// # Safety
/// `p` points to an element of `T` in window memory valid for reads and writes,
/// aligned to [`atomic_align`]`(T::BASIC)`, inside an allocation that holds the whole
/// aligned words around it ([`crate::shared`]'s contract); every concurrent access to
/// it is a word atomic (this module or [`crate::shared`]), and every concurrent
/// accumulate-family access uses the same [`Domain`] tables and the same `key` (its
/// byte offset in its window).
#[inline(always)]
pub unsafe fn fetch_op_element<T: Element>(
    op: Op,
    p: *mut u8,
    key: usize,
    dom: &Domain<'_>,
    origin: T,
) -> Result<T> {
    let _claim = dom.claim_element(key, std::mem::size_of::<T>())?;
    // SAFETY: (every arm) the width matches `T`'s size and the contract above gives
    // validity and alignment; the claim (an announcement, or the chunk lock for wide
    // elements) excludes bulk loops over this element, so concurrent accesses
    // are atomic (or, for wide elements, serialized by the lock).
    Ok(unsafe {
        match std::mem::size_of::<T>() {
            1 | 2 | 4 => fop_narrow(op, p, origin),
            8 => fop64(op, p, origin),
            _ => {
                let old = shared::load::<T>(p);
                if op != Op::NoOp {
                    shared::store::<T>(p, T::combine(op, old, origin));
                }
                old
            }
        }
    })
}

/// One element's atomic compare-and-swap; returns the old value.
///
/// # Safety
/// As for [`fetch_op_element`].
#[inline(always)]
pub unsafe fn cas_element<T: Element>(
    p: *mut u8,
    key: usize,
    dom: &Domain<'_>,
    origin: T,
    compare: T,
) -> Result<T> {
    let _claim = dom.claim_element(key, std::mem::size_of::<T>())?;
    // SAFETY: (every arm) as in `fetch_op_element`.
    Ok(unsafe {
        match std::mem::size_of::<T>() {
            1 | 2 | 4 | 8 => cas_word(p, origin, compare),
            _ => {
                let old = shared::load::<T>(p);
                if old == compare {
                    shared::store::<T>(p, origin);
                }
                old
            }
        }
    })
}

#[inline(always)]
fn read_elem<T: Element>(bytes: &[u8], i: usize) -> T {
    let size = std::mem::size_of::<T>();
    assert!(
        bytes.len() >= (i + 1) * size,
        "rma-ops: element read past its buffer"
    );
    // SAFETY: the bounds were checked above; `Raw` accepts every bit pattern and the
    // read is unaligned.
    T::from_raw(unsafe {
        bytes
            .as_ptr()
            .add(i * size)
            .cast::<T::Raw>()
            .read_unaligned()
    })
}

#[inline(always)]
fn write_elem<T: Element>(bytes: &mut [u8], i: usize, v: T) {
    let size = std::mem::size_of::<T>();
    assert!(
        bytes.len() >= (i + 1) * size,
        "rma-ops: element write past its buffer"
    );
    // SAFETY: the bounds were checked above and the write is unaligned.
    unsafe {
        bytes
            .as_mut_ptr()
            .add(i * size)
            .cast::<T::Raw>()
            .write_unaligned(v.to_raw())
    }
}

fn check_len(basic: BasicType, what: &'static str, len: usize) -> usize {
    let size = basic.size();
    if len % size != 0 {
        broken_len(what);
    }
    len / size
}

#[cold]
#[inline(never)]
fn broken_len(what: &str) -> ! {
    broken(&format!("{what} is not a whole number of elements"))
}

#[cold]
#[inline(never)]
fn broken(what: &str) -> ! {
    panic!("rma-ops: {what} (a bug in the caller's validation)")
}

/// Atomic fetch-and-op on one element of `basic` at `target`: `result` receives the old
/// value, then `origin` is combined in with `op` (`origin` is ignored for NO_OP).
///
/// # Safety
/// `target` points to one element of `basic` in window memory valid for reads and
/// writes and aligned to [`atomic_align`]`(basic)`, inside an allocation that holds the
/// whole aligned 8-byte words around it ([`crate::shared`]'s contract: every access to
/// those words is a word atomic); every concurrent accumulate-family access to it uses
/// the same [`Domain`] tables and `key` (its byte offset in its window). `origin`
/// (unless the op is NO_OP) and `result` are each one element long.
pub unsafe fn fetch_and_op(
    basic: BasicType,
    op: Op,
    target: *mut u8,
    key: usize,
    dom: &Domain<'_>,
    origin: &[u8],
    result: &mut [u8],
) -> Result<()> {
    crate::with_element!(basic, T => {
        let o: T = if op == Op::NoOp { read_elem::<T>(result, 0) } else { read_elem::<T>(origin, 0) };
        // SAFETY: forwarded from this function's contract.
        let old = unsafe { fetch_op_element::<T>(op, target, key, dom, o) }?;
        write_elem(result, 0, old);
        Ok(())
    })
}

/// Atomic compare-and-swap on one element: `result` receives the old value; the element
/// becomes `origin` if it equalled `compare`.
///
/// # Safety
/// As for [`fetch_and_op`]; `origin`, `compare` and `result` are one element each.
pub unsafe fn compare_and_swap(
    basic: BasicType,
    target: *mut u8,
    key: usize,
    dom: &Domain<'_>,
    origin: &[u8],
    compare: &[u8],
    result: &mut [u8],
) -> Result<()> {
    crate::with_element!(basic, T => {
        let (o, c) = (read_elem::<T>(origin, 0), read_elem::<T>(compare, 0));
        // SAFETY: forwarded from this function's contract.
        let old = unsafe { cas_element::<T>(target, key, dom, o, c) }?;
        write_elem(result, 0, old);
        Ok(())
    })
}

/// Element-wise atomic accumulate of the packed elements `src` into the contiguous
/// elements starting at `target` (element `i` at `target + i * size`, key
/// `key + i * size`).
///
/// # Safety
/// `target` is window memory valid for reads and writes of `src.len()` bytes, aligned
/// to [`atomic_align`]`(basic)`, inside an allocation that holds the whole aligned
/// 8-byte words around them ([`crate::shared`]'s contract); every concurrent
/// accumulate-family access to those elements uses the same [`Domain`] tables and keys. `src.len()` is a multiple of the size.
pub unsafe fn accumulate(
    basic: BasicType,
    op: Op,
    target: *mut u8,
    key: usize,
    dom: &Domain<'_>,
    src: &[u8],
) -> Result<()> {
    let n = check_len(basic, "accumulate data", src.len());
    let size = basic.size();
    crate::with_element!(basic, T => {
        if bulk_path(basic, src.len()) {
            return dom.bulk(key, size, n, |i, count| {
                // SAFETY: elements i..i + count lie inside the region of the contract
                // and inside `src`; their accesses are word atomics (crate::shared); the
                // chunk lock with announcements drained excludes every other
                // accumulate-family access to them (element-wise atomicity).
                unsafe { shared::apply::<T>(op, target.add(i * size), src.as_ptr().add(i * size), count) }
            });
        }
        for i in 0..n {
            // SAFETY: element `i` lies inside the region of the contract.
            unsafe {
                fetch_op_element::<T>(op, target.add(i * size), key + i * size, dom, read_elem::<T>(src, i))?;
            }
        }
        Ok(())
    })
}

/// Element-wise atomic get-accumulate: for each element, `result` receives the old
/// value and `src` is combined in with `op`, in one atomic step. For NO_OP `src` may be
/// empty; the element count is `result.len() / size`.
///
/// # Safety
/// As for [`accumulate`], over `result.len()` bytes at `target`; `src` is as long as
/// `result` unless the op is NO_OP.
pub unsafe fn get_accumulate(
    basic: BasicType,
    op: Op,
    target: *mut u8,
    key: usize,
    dom: &Domain<'_>,
    src: &[u8],
    result: &mut [u8],
) -> Result<()> {
    let n = check_len(basic, "get_accumulate result", result.len());
    let size = basic.size();
    if op != Op::NoOp && src.len() != result.len() {
        broken("get_accumulate data does not match the result");
    }
    crate::with_element!(basic, T => {
        if bulk_path(basic, result.len()) {
            let out = result.as_mut_ptr();
            return dom.bulk(key, size, n, |i, count| {
                let (t, bytes) = (i * size, count * size);
                // SAFETY: elements i..i + count lie inside the region of the contract,
                // `result` and (unless NO_OP) `src`, which are local and distinct from
                // the target; word atomics (crate::shared) under the chunk lock with
                // announcements drained, as in `accumulate`.
                unsafe {
                    shared::copy_out(target.add(t), std::slice::from_raw_parts_mut(out.add(t), bytes));
                    if op != Op::NoOp {
                        shared::apply::<T>(op, target.add(t), src.as_ptr().add(t), count);
                    }
                }
            });
        }
        for i in 0..n {
            let o = if op == Op::NoOp { read_elem::<T>(result, i) } else { read_elem::<T>(src, i) };
            // SAFETY: element `i` lies inside the region of the contract.
            let old = unsafe { fetch_op_element::<T>(op, target.add(i * size), key + i * size, dom, o) }?;
            write_elem(result, i, old);
        }
        Ok(())
    })
}

/// Element-wise atomic accumulate of the packed elements `src` into a strided target:
/// `count` blocks of `len` bytes, block `b` at `target + b * stride` (window key
/// `key + b * stride`), `0 < len <= stride`. Blocks are applied a chunk's worth at a
/// time under its lock with announcements drained (as for a bulk [`accumulate`]).
///
/// # Safety
/// Every block is window memory valid for reads and writes, aligned to
/// [`atomic_align`]`(basic)`, inside an allocation that holds the whole aligned 8-byte
/// words around it ([`crate::shared`]'s contract); every concurrent accumulate-family
/// access to them uses the same [`Domain`] tables and keys; `src.len() == count * len`, a multiple of
/// the size.
#[allow(clippy::too_many_arguments)]
pub unsafe fn accumulate_strided(
    basic: BasicType,
    op: Op,
    target: *mut u8,
    key: usize,
    stride: usize,
    len: usize,
    count: usize,
    dom: &Domain<'_>,
    src: &[u8],
) -> Result<()> {
    let size = basic.size();
    if len == 0 || len > stride || len % size != 0 || src.len() != count * len {
        broken("strided accumulate data does not match its layout");
    }
    crate::with_element!(basic, T => {
        let mut b = 0;
        while b < count {
            let k = key + b * stride;
            let boundary = ((k >> CHUNK_SHIFT) + 1) << CHUNK_SHIFT;
            // SAFETY: (both branches) blocks b.. lie inside the region of the contract
            // and `src`; the chunk lock with announcements drained excludes every
            // other accumulate-family access to their elements.
            unsafe {
                if k + len > boundary {
                    // this block crosses a chunk boundary: split it by element
                    accumulate(basic, op, target.add(b * stride), k, dom, &src[b * len..(b + 1) * len])?;
                    b += 1;
                    continue;
                }
                // blocks b..b + m lie wholly inside this chunk
                let m = ((boundary - k - len) / stride + 1).min(count - b);
                let _guard = dom.lock(dom.index(k), true)?;
                shared::apply_strided::<T>(op, target.add(b * stride), stride, src.as_ptr().add(b * len), m, len / size);
                b += m;
            }
        }
        Ok(())
    })
}

/// [`fetch_and_op`] on one element of at most 8 bytes, given and returned as its bits
/// (zero-extended, as [`Element::to_bits`]): no byte buffers on the typed calls' path.
///
/// # Safety
/// As for [`fetch_and_op`]; `basic` is at most 8 bytes.
#[inline]
pub unsafe fn fetch_and_op_bits(
    basic: BasicType,
    op: Op,
    target: *mut u8,
    key: usize,
    dom: &Domain<'_>,
    origin: u64,
) -> Result<u64> {
    if basic.size() > 8 {
        broken("a 16-byte element passed as bits");
    }
    crate::with_element!(basic, T => {
        // SAFETY: forwarded from this function's contract.
        let old = unsafe { fetch_op_element::<T>(op, target, key, dom, <T as Element>::from_bits(origin)) }?;
        Ok(Element::to_bits(old))
    })
}

/// Fetch-and-op on one element of 1, 2, 4 or 8 bytes by its hardware atomic alone,
/// with no [`Domain`]: for load/store access to shared memory outside RMA calls
/// (rma-win's shared-window views). It is atomic with respect to every other
/// single-element atomic on the element (this function, [`fetch_op_element`],
/// [`cas_element`], [`compare_and_swap_plain_bits`]), not with respect to a bulk
/// update under a chunk lock (MPI gives load/store no atomicity with RMA calls at all).
/// Returns the old value's bits.
///
/// # Safety
/// `target` points to an element of `basic` valid for reads and writes, aligned to its
/// size, inside an allocation that holds the whole aligned word around it, and every
/// concurrent access to that word is a word atomic ([`crate::shared`]'s contract).
#[inline]
pub unsafe fn fetch_and_op_plain_bits(
    basic: BasicType,
    op: Op,
    target: *mut u8,
    origin: u64,
) -> u64 {
    if basic.size() > 8 {
        broken("a 16-byte element passed as bits");
    }
    crate::with_element!(basic, T => {
        let o = <T as Element>::from_bits(origin);
        // SAFETY: forwarded from this function's contract (size 1, 2, 4 or 8, aligned).
        let old = unsafe {
            if std::mem::size_of::<T>() == 8 { fop64::<T>(op, target, o) } else { fop_narrow::<T>(op, target, o) }
        };
        Element::to_bits(old)
    })
}

/// Compare-and-swap on one element of 1, 2, 4 or 8 bytes by its hardware atomic alone
/// (see [`fetch_and_op_plain_bits`]); returns the old value's bits.
///
/// # Safety
/// As for [`fetch_and_op_plain_bits`].
#[inline]
pub unsafe fn compare_and_swap_plain_bits(
    basic: BasicType,
    target: *mut u8,
    origin: u64,
    compare: u64,
) -> u64 {
    if basic.size() > 8 {
        broken("a 16-byte element passed as bits");
    }
    crate::with_element!(basic, T => {
        let (o, c) = (<T as Element>::from_bits(origin), <T as Element>::from_bits(compare));
        // SAFETY: forwarded from this function's contract.
        Element::to_bits(unsafe { cas_word::<T>(target, o, c) })
    })
}

/// [`compare_and_swap`] on one element of at most 8 bytes, as bits (see
/// [`fetch_and_op_bits`]).
///
/// # Safety
/// As for [`fetch_and_op`]; `basic` is at most 8 bytes.
#[inline]
pub unsafe fn compare_and_swap_bits(
    basic: BasicType,
    target: *mut u8,
    key: usize,
    dom: &Domain<'_>,
    origin: u64,
    compare: u64,
) -> Result<u64> {
    if basic.size() > 8 {
        broken("a 16-byte element passed as bits");
    }
    crate::with_element!(basic, T => {
        // SAFETY: forwarded from this function's contract.
        let (o, c) = (<T as Element>::from_bits(origin), <T as Element>::from_bits(compare));
        // SAFETY: forwarded from this function's contract.
        Ok(Element::to_bits(unsafe { cas_element::<T>(target, key, dom, o, c) }?))
    })
}
