//! Element-wise atomic kernels over raw pointers into shared memory.
//!
//! # Strategy (DESIGN.md decision 3)
//!
//! The mechanism that makes an element update atomic depends on the element's basic
//! type only, never on the op, so that SUM, REPLACE and NO_OP on one element are
//! mutually atomic:
//!
//! - **Elements of 1, 2, 4 or 8 bytes** use one hardware atomic word of that width:
//!   native read-modify-write where the CPU has it (integer add, and, or, xor; swap for
//!   REPLACE; an atomic load for NO_OP), a compare-and-swap loop for everything else
//!   (floating point, PROD, MAX/MIN, logical ops, MAXLOC/MINLOC on 8-byte pairs,
//!   complex f32). The element must be aligned to its size ([`atomic_align`]).
//! - **Elements of 16 bytes** (complex f64, DOUBLE_INT, LONG_INT) take a lock from a
//!   striped lock table that the caller provides ([`StripeLocks`]), chosen by the
//!   element's byte offset in its window, so every process picks the same lock for the
//!   same element wherever its mapping lies. Reads (NO_OP) take the lock too. A 16-byte
//!   CAS would be faster on x86-64 but is not available in stable Rust without inline
//!   assembly, and a lock table works on every platform.
//!
//! Read-modify-writes are `AcqRel`, atomic reads `Acquire`; stripe locks are acquired
//! with `Acquire` and released with `Release`.

use crate::element::Element;
use rma_core::{BasicType, Error, Op, Result, TypeClass};
use std::hint::spin_loop;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8};

/// How elements of a basic type are updated atomically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// A hardware atomic word of this many bytes (1, 2, 4 or 8).
    Native(usize),
    /// A lock from a [`StripeLocks`] table around a plain read and write.
    StripeLock,
}

/// The atomicity mechanism of `basic` (a function of the type alone).
pub const fn strategy(basic: BasicType) -> Strategy {
    match basic.size() {
        16 => Strategy::StripeLock,
        n => Strategy::Native(n),
    }
}

/// The alignment a target element of `basic` needs for the atomic kernels: its size for
/// native words, its type alignment for lock-protected elements.
pub const fn atomic_align(basic: BasicType) -> usize {
    match strategy(basic) {
        Strategy::Native(n) => n,
        Strategy::StripeLock => basic.align(),
    }
}

/// A table of spin locks for elements wider than a native atomic word.
///
/// The words live wherever the caller puts them: in a shared segment for processes, on
/// the heap for threads. Every participant must use the same table for the same window.
/// A lock is held only around one element's read-modify-write; waiters spin briefly,
/// then yield the CPU.
#[derive(Debug, Clone, Copy)]
pub struct StripeLocks<'a> {
    words: &'a [AtomicU32],
    mask: usize,
    /// What a holder writes into a lock word (non-zero): its process id where
    /// processes share the table.
    owner: u32,
    /// Whether the holder recorded in a word still exists; `None` where holders cannot
    /// die while holding (threads of one process).
    alive: Option<fn(u32) -> bool>,
}

impl<'a> StripeLocks<'a> {
    /// A table over `words`, whose length must be a non-zero power of two.
    pub fn new(words: &'a [AtomicU32]) -> Result<StripeLocks<'a>> {
        if words.is_empty() || !words.len().is_power_of_two() {
            return Err(Error::arg(format!(
                "a stripe lock table needs a power-of-two number of words, got {}",
                words.len()
            )));
        }
        Ok(StripeLocks {
            mask: words.len() - 1,
            words,
            owner: 1,
            alive: None,
        })
    }

    /// A table shared by processes: a holder writes `owner` (its process id, non-zero)
    /// into the word, and a waiter that has waited long asks `alive(holder)`; a lock
    /// whose holder died inside its critical section (killed during a 16-byte update)
    /// is taken over instead of waited for forever. The element it was updating may
    /// then be torn; the dead peer is reported by the next synchronization.
    pub fn with_owner(
        words: &'a [AtomicU32],
        owner: u32,
        alive: fn(u32) -> bool,
    ) -> Result<StripeLocks<'a>> {
        let mut t = StripeLocks::new(words)?;
        t.owner = owner.max(1);
        t.alive = Some(alive);
        Ok(t)
    }

    /// A fresh heap table of `n` unlocked words (`n` rounded up to a power of two).
    pub fn heap_table(n: usize) -> Box<[AtomicU32]> {
        (0..n.max(1).next_power_of_two())
            .map(|_| AtomicU32::new(0))
            .collect()
    }

    fn lock(&self, key: usize) -> StripeGuard<'a> {
        let word = &self.words[(key >> 4) & self.mask];
        let mut spins = 0u32;
        loop {
            if word.load(Relaxed) == 0
                && word
                    .compare_exchange_weak(0, self.owner, Acquire, Relaxed)
                    .is_ok()
            {
                return StripeGuard { word };
            }
            spins = spins.wrapping_add(1);
            if spins < 64 {
                spin_loop();
                continue;
            }
            std::thread::yield_now();
            // a critical section lasts nanoseconds: after ~a thousand yields, ask
            // whether the holder still exists
            if spins % 1024 == 0 {
                if let Some(alive) = self.alive {
                    let holder = word.load(Relaxed);
                    if holder != 0
                        && !alive(holder)
                        && word
                            .compare_exchange(holder, self.owner, Acquire, Relaxed)
                            .is_ok()
                    {
                        return StripeGuard { word };
                    }
                }
            }
        }
    }
}

struct StripeGuard<'a> {
    word: &'a AtomicU32,
}

impl Drop for StripeGuard<'_> {
    fn drop(&mut self) {
        self.word.store(0, Release);
    }
}

macro_rules! native_word {
    ($fop:ident, $cas:ident, $atomic:ty, $w:ty) => {
        /// # Safety
        /// `p` is valid for atomic access of this width, aligned to it, and every
        /// concurrent access to it is atomic.
        #[inline(always)]
        unsafe fn $fop<T: Element>(op: Op, p: *mut u8, origin: T) -> T {
            // SAFETY: forwarded from this function's contract.
            let a = unsafe { <$atomic>::from_ptr(p.cast::<$w>()) };
            let o = origin.to_bits() as $w;
            let class = T::BASIC.class();
            let int = matches!(class, TypeClass::Integer | TypeClass::Address);
            let bitwise = int || class == TypeClass::Byte;
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
                        let new = T::combine(op, T::from_bits(cur as u64), origin).to_bits() as $w;
                        match a.compare_exchange_weak(cur, new, AcqRel, Relaxed) {
                            Ok(v) => break v,
                            Err(v) => cur = v,
                        }
                    }
                }
            };
            T::from_bits(old as u64)
        }

        /// # Safety
        /// As for the fetch-op kernel of this width.
        #[inline(always)]
        unsafe fn $cas<T: Element>(p: *mut u8, origin: T, compare: T) -> T {
            // SAFETY: forwarded from this function's contract.
            let a = unsafe { <$atomic>::from_ptr(p.cast::<$w>()) };
            let (o, c) = (origin.to_bits() as $w, compare.to_bits() as $w);
            if T::BASIC == BasicType::Bool {
                // Compare values, not bytes: a window byte of 2 is `true`.
                let mut cur = a.load(Acquire);
                loop {
                    if T::from_bits(cur as u64) != compare {
                        return T::from_bits(cur as u64);
                    }
                    match a.compare_exchange_weak(cur, o, AcqRel, Acquire) {
                        Ok(v) => return T::from_bits(v as u64),
                        Err(v) => cur = v,
                    }
                }
            }
            match a.compare_exchange(c, o, AcqRel, Acquire) {
                Ok(v) | Err(v) => T::from_bits(v as u64),
            }
        }
    };
}

native_word!(fop8, cas8, AtomicU8, u8);
native_word!(fop16, cas16, AtomicU16, u16);
native_word!(fop32, cas32, AtomicU32, u32);
native_word!(fop64, cas64, AtomicU64, u64);

/// One element's atomic fetch-and-op; returns the old value.
///
/// # Safety
/// `p` points to an element of `T` in memory valid for reads and writes, aligned to
/// [`atomic_align`]`(T::BASIC)`, and every concurrent access to it goes through these
/// kernels with the same `locks` table and the same `key` (its byte offset in its
/// window).
#[inline(always)]
pub unsafe fn fetch_op_element<T: Element>(
    op: Op,
    p: *mut u8,
    key: usize,
    locks: &StripeLocks<'_>,
    origin: T,
) -> T {
    // SAFETY: (every arm) the width matches `T`'s size and the contract above gives
    // validity, alignment and atomic-only concurrent access.
    unsafe {
        match std::mem::size_of::<T>() {
            1 => fop8(op, p, origin),
            2 => fop16(op, p, origin),
            4 => fop32(op, p, origin),
            8 => fop64(op, p, origin),
            _ => {
                let _guard = locks.lock(key);
                let slot = p.cast::<T::Raw>();
                let old = T::from_raw(slot.read_unaligned());
                if op != Op::NoOp {
                    slot.write_unaligned(T::combine(op, old, origin).to_raw());
                }
                old
            }
        }
    }
}

/// One element's atomic compare-and-swap; returns the old value.
///
/// # Safety
/// As for [`fetch_op_element`].
#[inline(always)]
pub unsafe fn cas_element<T: Element>(
    p: *mut u8,
    key: usize,
    locks: &StripeLocks<'_>,
    origin: T,
    compare: T,
) -> T {
    // SAFETY: (every arm) as in `fetch_op_element`.
    unsafe {
        match std::mem::size_of::<T>() {
            1 => cas8(p, origin, compare),
            2 => cas16(p, origin, compare),
            4 => cas32(p, origin, compare),
            8 => cas64(p, origin, compare),
            _ => {
                let _guard = locks.lock(key);
                let slot = p.cast::<T::Raw>();
                let old = T::from_raw(slot.read_unaligned());
                if old == compare {
                    slot.write_unaligned(origin.to_raw());
                }
                old
            }
        }
    }
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
        broken(what);
    }
    len / size
}

#[cold]
#[inline(never)]
fn broken(what: &str) -> ! {
    panic!("rma-ops: {what} is not a whole number of elements (a bug in the caller's validation)")
}

/// Atomic fetch-and-op on one element of `basic` at `target`: `result` receives the old
/// value, then `origin` is combined in with `op` (`origin` is ignored for NO_OP).
///
/// # Safety
/// `target` points to one element of `basic` valid for reads and writes and aligned to
/// [`atomic_align`]`(basic)`; every concurrent access to it goes through this module
/// with the same `locks` table and `key` (its byte offset in its window). `origin`
/// (unless the op is NO_OP) and `result` are each one element long.
pub unsafe fn fetch_and_op(
    basic: BasicType,
    op: Op,
    target: *mut u8,
    key: usize,
    locks: &StripeLocks<'_>,
    origin: &[u8],
    result: &mut [u8],
) {
    crate::with_element!(basic, T => {
        let o: T = if op == Op::NoOp { read_elem::<T>(result, 0) } else { read_elem::<T>(origin, 0) };
        // SAFETY: forwarded from this function's contract.
        let old = unsafe { fetch_op_element::<T>(op, target, key, locks, o) };
        write_elem(result, 0, old);
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
    locks: &StripeLocks<'_>,
    origin: &[u8],
    compare: &[u8],
    result: &mut [u8],
) {
    crate::with_element!(basic, T => {
        let (o, c) = (read_elem::<T>(origin, 0), read_elem::<T>(compare, 0));
        // SAFETY: forwarded from this function's contract.
        let old = unsafe { cas_element::<T>(target, key, locks, o, c) };
        write_elem(result, 0, old);
    })
}

/// Element-wise atomic accumulate of the packed elements `src` into the contiguous
/// elements starting at `target` (element `i` at `target + i * size`, key
/// `key + i * size`).
///
/// # Safety
/// `target` is valid for reads and writes of `src.len()` bytes, aligned to
/// [`atomic_align`]`(basic)`; every concurrent access to those elements goes through
/// this module with the same `locks` and keys. `src.len()` is a multiple of the size.
pub unsafe fn accumulate(
    basic: BasicType,
    op: Op,
    target: *mut u8,
    key: usize,
    locks: &StripeLocks<'_>,
    src: &[u8],
) {
    let n = check_len(basic, "accumulate data", src.len());
    let size = basic.size();
    crate::with_element!(basic, T => {
        for i in 0..n {
            // SAFETY: element `i` lies inside the region of the contract.
            unsafe {
                fetch_op_element::<T>(op, target.add(i * size), key + i * size, locks, read_elem::<T>(src, i));
            }
        }
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
    locks: &StripeLocks<'_>,
    src: &[u8],
    result: &mut [u8],
) {
    let n = check_len(basic, "get_accumulate result", result.len());
    let size = basic.size();
    crate::with_element!(basic, T => {
        for i in 0..n {
            let o = if op == Op::NoOp { read_elem::<T>(result, i) } else { read_elem::<T>(src, i) };
            // SAFETY: element `i` lies inside the region of the contract.
            let old = unsafe { fetch_op_element::<T>(op, target.add(i * size), key + i * size, locks, o) };
            write_elem(result, i, old);
        }
    })
}
