//! [`Direct`]: one target's window memory, reachable by load and store from this
//! rank, together with its atomicity domain — everything a call on that target needs,
//! resolved once.
//!
//! A transport that applies calls in place (rma-shm's atomic transport) builds one per
//! call; a target handle of rma-win asks for one when it is made and keeps it for the
//! epoch, so its calls skip the transport's dispatch, the domain's construction and
//! the target lookup. The methods are safe: each checks that its bytes lie inside the
//! memory and, for atomics, that the element is aligned, and panics otherwise (the
//! callers refuse such calls first with a typed error, so a panic here is a logic
//! error of the caller, never undefined behaviour).

use crate::atomic::{self, atomic_align, Domain};
use crate::shared;
use rma_core::{BasicType, Op, Result};

/// One target's window memory and its atomicity domain, as this rank reaches them
/// (see the module docs). Keys of the domain are byte offsets from the start of the
/// memory, as every other accumulate-family access to the window uses them.
#[derive(Debug, Clone, Copy)]
pub struct Direct<'a> {
    base: *mut u8,
    len: usize,
    dom: Domain<'a>,
}

// SAFETY: `Direct` is a pointer into window memory that every rank (thread or process)
// may access at once; every access through it is an atomic operation (crate::shared,
// crate::atomic), so sharing it between threads, or moving it to another, adds no data
// race. The memory outlives 'a (the constructor's contract).
unsafe impl Send for Direct<'_> {}
// SAFETY: as for Send: `&Direct` allows only atomic accesses.
unsafe impl Sync for Direct<'_> {}

impl<'a> Direct<'a> {
    /// The target memory `[base, base + len)` with its domain `dom`.
    ///
    /// # Safety
    /// For all of `'a`: `base` is valid for reads and writes of `len` bytes, inside an
    /// allocation that holds every whole aligned 8-byte word overlapping them
    /// ([`crate::shared`]'s contract); every access to that memory by anyone goes
    /// through [`crate::shared`] or [`crate::atomic`]; and every accumulate-family
    /// access to it uses the tables of `dom` with byte offsets from `base` as keys.
    #[inline(always)]
    pub unsafe fn new(base: *mut u8, len: usize, dom: Domain<'a>) -> Direct<'a> {
        Direct { base, len, dom }
    }

    /// The memory's length in bytes.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the memory is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The memory's first byte (for alignment arithmetic; never dereferenced by a
    /// caller without its own contract).
    #[inline(always)]
    pub fn addr(&self) -> usize {
        self.base as usize
    }

    /// A pointer to `n` bytes at `off`, checked to lie inside the memory.
    #[inline(always)]
    fn at(&self, off: usize, n: usize) -> *mut u8 {
        if off.checked_add(n).is_none_or(|end| end > self.len) {
            broken("bytes outside the target window");
        }
        // SAFETY: off + n <= len: inside the memory (the constructor's contract).
        unsafe { self.base.add(off) }
    }

    /// A pointer to the element of type `basic` at `off`: inside the memory, aligned
    /// for its atomic (the bits forms of `crate::atomic` refuse elements wider than 8
    /// bytes themselves).
    #[inline(always)]
    fn element(&self, off: usize, basic: BasicType) -> *mut u8 {
        let p = self.at(off, basic.size());
        if (p as usize) % atomic_align(basic) != 0 {
            broken("element not aligned for its atomic");
        }
        p
    }

    /// [`atomic::fetch_and_op_bits`] on the element at `off`: the old value.
    #[inline(always)]
    pub fn fetch_and_op_bits(
        &self,
        off: usize,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<u64> {
        let p = self.element(off, basic);
        // SAFETY: one aligned element of at most 8 bytes inside the memory (checked by
        // `element`); the constructor's contract gives validity, the word rule and the
        // shared domain with offset keys.
        unsafe { atomic::fetch_and_op_bits(basic, op, p, off, &self.dom, origin) }
    }

    /// [`atomic::fetch_and_op`] on the element at `off`, of any width, as bytes: the
    /// old value goes to `out`.
    #[inline]
    pub fn fetch_and_op(
        &self,
        off: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        let p = self.element(off, basic);
        // SAFETY: one aligned element inside the memory (checked by `element`); the
        // constructor's contract gives the rest.
        unsafe { atomic::fetch_and_op(basic, op, p, off, &self.dom, origin, out) }
    }

    /// [`atomic::compare_and_swap`] on the element at `off`, of any width, as bytes.
    #[inline]
    pub fn compare_and_swap(
        &self,
        off: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        let p = self.element(off, basic);
        // SAFETY: as in `fetch_and_op`.
        unsafe { atomic::compare_and_swap(basic, p, off, &self.dom, origin, compare, out) }
    }

    /// [`atomic::compare_and_swap_bits`] on the element at `off`: the old value.
    #[inline(always)]
    pub fn compare_and_swap_bits(
        &self,
        off: usize,
        basic: BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64> {
        let p = self.element(off, basic);
        // SAFETY: as in `fetch_and_op_bits`.
        unsafe { atomic::compare_and_swap_bits(basic, p, off, &self.dom, origin, compare) }
    }

    /// Combines `origin` into the element at `off` with `op`, atomically. `exclusive`:
    /// this origin holds an exclusive lock on the target, so no other origin accesses
    /// the window and the element is updated without an announcement.
    #[inline(always)]
    pub fn accumulate_bits(
        &self,
        off: usize,
        exclusive: bool,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<()> {
        let p = self.element(off, basic);
        if exclusive {
            let mut bytes = [0u8; 8];
            rma_core::bytes_from_bits(origin, &mut bytes[..basic.size()]);
            crate::with_element!(basic, T => {
                // SAFETY: one aligned element inside the memory; its accesses are word
                // atomics (crate::shared); under an exclusive lock no other origin
                // accumulates into the window, so no claim is needed.
                unsafe { shared::apply::<T>(op, p, bytes.as_ptr(), 1) }
            });
            return Ok(());
        }
        // SAFETY: as in `fetch_and_op_bits`; the fetched value is dropped.
        unsafe { atomic::fetch_and_op_bits(basic, op, p, off, &self.dom, origin) }.map(drop)
    }

    /// Element-wise atomic accumulate of the packed elements `data` at `off`
    /// ([`atomic::accumulate`]).
    #[inline]
    pub fn accumulate(&self, off: usize, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        let p = self.at(off, data.len());
        if (p as usize) % atomic_align(basic) != 0 {
            broken("elements not aligned for their atomics");
        }
        // SAFETY: the elements lie inside the memory, aligned (checked above); the
        // constructor's contract gives the rest. `atomic::accumulate` checks that the
        // length is a multiple of the element size.
        unsafe { atomic::accumulate(basic, op, p, off, &self.dom, data) }
    }

    /// Writes `data` at `off` (MPI_Put's effect, word atomics).
    #[inline(always)]
    pub fn put(&self, off: usize, data: &[u8]) {
        let p = self.at(off, data.len());
        // SAFETY: inside the memory (checked); the word rule is the constructor's.
        unsafe { shared::copy_in(p, data) }
    }

    /// Reads `out.len()` bytes at `off` (MPI_Get's effect, word atomics).
    #[inline(always)]
    pub fn get(&self, off: usize, out: &mut [u8]) {
        let p = self.at(off, out.len());
        // SAFETY: as in `put`.
        unsafe { shared::copy_out(p, out) }
    }
}

/// What a flush of calls applied in place owes: order. They completed when they
/// returned, but puts and gets are relaxed word accesses; an `AcqRel` fence makes the
/// calls before a flush happen before those after it, for every rank that flushes too
/// (fence-to-fence synchronization). No instruction on x86-64.
#[inline(always)]
pub fn flush_fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::AcqRel);
}

#[cold]
#[inline(never)]
fn broken(what: &str) -> ! {
    panic!("rma-ops Direct: {what} (the caller should have refused this call)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomic::HeapDomain;
    use std::sync::atomic::AtomicU64;

    fn with_direct(words: usize, f: impl FnOnce(Direct<'_>, &[AtomicU64])) {
        let mem: Vec<AtomicU64> = (0..words).map(|_| AtomicU64::new(0)).collect();
        let tables = HeapDomain::new(2, 16);
        let dom = tables.domain(0).unwrap();
        // SAFETY: `mem` is whole words, lives for the closure, and is only accessed
        // through atomics (the Direct's kernels and the test's own atomic loads).
        let d = unsafe { Direct::new(mem.as_ptr() as *mut u8, words * 8, dom) };
        f(d, &mem);
    }

    #[test]
    fn calls_apply_in_place() {
        with_direct(4, |d, mem| {
            let old = d.fetch_and_op_bits(0, BasicType::I64, Op::Sum, 5).unwrap();
            assert_eq!(old, 0);
            assert_eq!(
                d.fetch_and_op_bits(0, BasicType::I64, Op::Sum, 2).unwrap(),
                5
            );
            assert_eq!(d.compare_and_swap_bits(8, BasicType::I64, 9, 0).unwrap(), 0);
            assert_eq!(d.compare_and_swap_bits(8, BasicType::I64, 1, 0).unwrap(), 9);
            d.accumulate_bits(16, false, BasicType::I32, Op::Sum, 3)
                .unwrap();
            d.accumulate_bits(16, true, BasicType::I32, Op::Sum, 4)
                .unwrap();
            d.put(24, &7u64.to_ne_bytes());
            let mut out = [0u8; 8];
            d.get(24, &mut out);
            assert_eq!(u64::from_ne_bytes(out), 7);
            let vals: Vec<u64> = mem
                .iter()
                .map(|w| w.load(std::sync::atomic::Ordering::Relaxed))
                .collect();
            assert_eq!(vals[0], 7);
            assert_eq!(vals[1], 9);
            assert_eq!(vals[2] as u32, 7);
            d.accumulate(
                0,
                BasicType::I64,
                Op::Sum,
                &[1u64.to_ne_bytes(), 1u64.to_ne_bytes()].concat(),
            )
            .unwrap();
            assert_eq!(mem[0].load(std::sync::atomic::Ordering::Relaxed), 8);
            assert_eq!(mem[1].load(std::sync::atomic::Ordering::Relaxed), 10);
        });
    }

    #[test]
    #[should_panic(expected = "outside the target window")]
    fn out_of_range_panics() {
        with_direct(1, |d, _| {
            drop(d.fetch_and_op_bits(8, BasicType::I64, Op::Sum, 1))
        });
    }

    #[test]
    #[should_panic(expected = "not aligned")]
    fn misaligned_panics() {
        with_direct(2, |d, _| {
            drop(d.fetch_and_op_bits(4, BasicType::I64, Op::Sum, 1))
        });
    }

    #[test]
    #[should_panic(expected = "outside the target window")]
    fn put_past_the_end_panics() {
        with_direct(1, |d, _| d.put(4, &[0u8; 8]));
    }
}
