//! [`Plain`]: a shared window's part as a rank reaches it by load and store, outside
//! RMA calls: every access a hardware atomic on the aligned word holding it, with no
//! atomicity domain (MPI gives such accesses no atomicity with RMA calls). rma-win's
//! shared-window views are built on it.

use crate::atomic;
use crate::shared;
use rma_core::{BasicType, Op, RawSegment};

/// A shared window's part, reachable by load and store (see the module docs). The
/// methods are safe: each checks that its bytes lie inside the part and, for
/// element atomics, that the element is aligned to its size, and panics otherwise
/// (callers refuse such accesses first with a typed error, so a panic here is a logic
/// error of the caller, never undefined behaviour).
#[derive(Debug, Clone, Copy)]
pub struct Plain<'a> {
    seg: RawSegment<'a>,
}

impl<'a> Plain<'a> {
    /// Access to `seg`; its constructor's promise is what makes the accesses sound.
    pub fn new(seg: RawSegment<'a>) -> Plain<'a> {
        Plain { seg }
    }

    /// The part's length in bytes.
    pub fn len(&self) -> usize {
        self.seg.len()
    }

    /// Whether the part is empty.
    pub fn is_empty(&self) -> bool {
        self.seg.is_empty()
    }

    /// A pointer to `n` bytes at `off`, checked to lie inside the part.
    #[inline(always)]
    fn at(&self, off: usize, n: usize) -> *mut u8 {
        if off.checked_add(n).is_none_or(|end| end > self.seg.len()) {
            broken("bytes outside the shared part");
        }
        // SAFETY: off + n <= len: inside the part (RawSegment's contract), or one past
        // its end for n == 0, which nothing dereferences.
        unsafe { self.seg.ptr().add(off) }
    }

    /// A pointer to an element of `size` (1, 2, 4 or 8) bytes at `off`, in the part
    /// and aligned to its size (so inside one word).
    #[inline(always)]
    fn element(&self, off: usize, size: usize) -> *mut u8 {
        if !matches!(size, 1 | 2 | 4 | 8) {
            broken("an element of no atomic width");
        }
        let p = self.at(off, size);
        if (p as usize) % size != 0 {
            broken("element not aligned to its size");
        }
        p
    }

    /// The `size` bytes at `off` as bits in native order (a relaxed word load).
    #[inline]
    pub fn load_bits(&self, off: usize, size: usize) -> u64 {
        let p = self.element(off, size);
        // SAFETY: an aligned element inside the part, within one word; the part's
        // words are reached only by word atomics (RawSegment's contract).
        unsafe { shared::load_bits(p, size) }
    }

    /// Stores `bits` as the `size` bytes at `off` (a relaxed word store, or a CAS
    /// splicing a narrow element into its word).
    #[inline]
    pub fn store_bits(&self, off: usize, size: usize, bits: u64) {
        let p = self.element(off, size);
        // SAFETY: as in `load_bits`.
        unsafe { shared::store_bits(p, size, bits) }
    }

    /// Fetch-and-op on the element of `basic` at `off` by its hardware atomic alone
    /// ([`atomic::fetch_and_op_plain_bits`]); the old value's bits.
    #[inline]
    pub fn fetch_and_op_bits(&self, off: usize, basic: BasicType, op: Op, bits: u64) -> u64 {
        let p = self.element(off, basic.size());
        // SAFETY: as in `load_bits`; `basic` is at most 8 bytes (`element` checked).
        unsafe { atomic::fetch_and_op_plain_bits(basic, op, p, bits) }
    }

    /// Compare-and-swap on the element of `basic` at `off`
    /// ([`atomic::compare_and_swap_plain_bits`]); the old value's bits.
    #[inline]
    pub fn compare_and_swap_bits(
        &self,
        off: usize,
        basic: BasicType,
        value: u64,
        compare: u64,
    ) -> u64 {
        let p = self.element(off, basic.size());
        // SAFETY: as in `fetch_and_op_bits`.
        unsafe { atomic::compare_and_swap_plain_bits(basic, p, value, compare) }
    }

    /// Copies `out.len()` bytes at `off` into `out`, word by word.
    pub fn read(&self, off: usize, out: &mut [u8]) {
        let p = self.at(off, out.len());
        if !out.is_empty() {
            // SAFETY: inside the part (checked); the word rule is RawSegment's.
            unsafe { shared::copy_out(p, out) }
        }
    }

    /// Copies `data` to `off`, word by word (other bytes of the words it touches are
    /// kept, whoever writes them meanwhile).
    pub fn write(&self, off: usize, data: &[u8]) {
        let p = self.at(off, data.len());
        if !data.is_empty() {
            // SAFETY: as in `read`.
            unsafe { shared::copy_in(p, data) }
        }
    }
}

#[cold]
#[inline(never)]
fn broken(what: &str) -> ! {
    panic!("rma-ops Plain: {what} (the caller should have refused this access)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn narrow_elements_share_a_word_without_clobbering() {
        let words = [AtomicU64::new(0), AtomicU64::new(0)];
        // SAFETY: two live words, reached only through atomics while `p` lives.
        let seg = unsafe { RawSegment::new(words.as_ptr() as *mut u8, 16, 1) };
        let p = Plain::new(seg);
        p.store_bits(0, 1, 0xab);
        p.store_bits(2, 2, 0x1234);
        assert_eq!(p.fetch_and_op_bits(4, BasicType::U32, Op::Sum, 5), 0);
        assert_eq!(p.fetch_and_op_bits(4, BasicType::U32, Op::Sum, 5), 5);
        assert_eq!(p.load_bits(0, 1), 0xab);
        assert_eq!(p.load_bits(2, 2), 0x1234);
        assert_eq!(p.compare_and_swap_bits(8, BasicType::U64, 7, 0), 0);
        assert_eq!(p.compare_and_swap_bits(8, BasicType::U64, 9, 0), 7);
        let mut out = [0u8; 16];
        p.read(0, &mut out);
        assert_eq!(out[0], 0xab);
        assert_eq!(u64::from_ne_bytes(out[8..].try_into().unwrap()), 7);
    }

    #[test]
    #[should_panic(expected = "outside the shared part")]
    fn out_of_range_panics() {
        let words = [AtomicU64::new(0)];
        // SAFETY: as above.
        let seg = unsafe { RawSegment::new(words.as_ptr() as *mut u8, 8, 1) };
        Plain::new(seg).load_bits(8, 1);
    }
}
