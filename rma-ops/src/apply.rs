//! Non-atomic apply over contiguous elements, written so the compiler vectorises it.
//!
//! These kernels are for memory no other thread or process can touch during the call:
//! an origin's own buffers, packed data. Window memory, which other ranks may reach at
//! any time, is never updated with them: see [`crate::shared`] (word atomics).

use crate::element::Element;
use rma_core::{BasicType, Op};

/// `dst[i] = op(dst[i], src[i])` for `i < min(dst.len(), src.len())`.
///
/// The op is matched once, outside the loop, so each loop body is a fixed scalar
/// function the compiler vectorises (with AVX2 where the CPU has it).
///
/// ```
/// use rma_core::Op;
/// let mut b = [1.0f64, 2.0, 3.0];
/// rma_ops::apply(Op::Sum, &mut b, &[0.5, 0.5, 0.5]);
/// assert_eq!(b, [1.5, 2.5, 3.5]);
/// ```
pub fn apply<T: Element>(op: Op, dst: &mut [T], src: &[T]) {
    let n = dst.len().min(src.len());
    // SAFETY: `dst` and `src` hold at least `n` elements each and cannot overlap (one
    // is borrowed mutably); nothing else accesses `dst` meanwhile; the kernel writes
    // only values of `T` (results of `combine`, through `to_raw`).
    unsafe { apply_raw::<T>(op, dst.as_mut_ptr().cast(), src.as_ptr().cast(), n) }
}

#[inline(always)]
unsafe fn plain_loop<T: Element>(dst: *mut u8, src: *const u8, n: usize, f: impl Fn(T, T) -> T) {
    let d = dst.cast::<T::Raw>();
    let s = src.cast::<T::Raw>();
    for i in 0..n {
        // SAFETY: the caller guarantees `n` elements are readable at `src` and readable
        // and writable at `dst` (see `apply_raw`); unaligned access is allowed.
        unsafe {
            let a = T::from_raw(d.add(i).read_unaligned());
            let b = T::from_raw(s.add(i).read_unaligned());
            d.add(i).write_unaligned(f(a, b).to_raw());
        }
    }
}

/// The same loop compiled for AVX2 (twice the vector width of the x86-64 baseline).
///
/// # Safety
/// The CPU supports AVX2; otherwise as [`plain_loop`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2_loop<T: Element>(dst: *mut u8, src: *const u8, n: usize, f: impl Fn(T, T) -> T) {
    // SAFETY: forwarded from this function's contract.
    unsafe { plain_loop(dst, src, n, f) }
}

/// Elements below which the AVX2 dispatch is not worth its check.
const AVX2_MIN: usize = 16;

#[inline(always)]
unsafe fn raw_loop<T: Element>(dst: *mut u8, src: *const u8, n: usize, f: impl Fn(T, T) -> T) {
    #[cfg(target_arch = "x86_64")]
    if n >= AVX2_MIN && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above); the rest is the caller's
        // contract, forwarded.
        return unsafe { avx2_loop(dst, src, n, f) };
    }
    // SAFETY: forwarded from the caller's contract.
    unsafe { plain_loop(dst, src, n, f) }
}

/// [`apply`] over raw memory: `n` elements of `T` at `dst` combined with `n` at `src`.
///
/// Values are read through [`Element::Raw`], so any bytes in either region are valid
/// input. Neither pointer needs to be aligned.
///
/// # Safety
/// `src` must be valid for reads and `dst` for reads and writes of
/// `n * size_of::<T>()` bytes, the two regions must not overlap unless they are equal,
/// and no other thread or process may access `dst` during the call (window memory
/// never qualifies: use [`crate::shared::apply`]).
pub unsafe fn apply_raw<T: Element>(op: Op, dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: (every arm) forwarded from this function's contract.
    unsafe {
        match op {
            Op::Sum => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Sum, a, b)),
            Op::Prod => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Prod, a, b)),
            Op::Max => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Max, a, b)),
            Op::Min => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Min, a, b)),
            Op::Land => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Land, a, b)),
            Op::Lor => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Lor, a, b)),
            Op::Lxor => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Lxor, a, b)),
            Op::Band => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Band, a, b)),
            Op::Bor => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Bor, a, b)),
            Op::Bxor => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::Bxor, a, b)),
            Op::MaxLoc => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::MaxLoc, a, b)),
            Op::MinLoc => raw_loop::<T>(dst, src, n, |a, b| T::combine(Op::MinLoc, a, b)),
            Op::Replace => raw_loop::<T>(dst, src, n, |_, b| b),
            Op::NoOp => {}
        }
    }
}

#[inline(always)]
unsafe fn strided_loop<T: Element>(
    dst: *mut u8,
    stride: usize,
    src: *const u8,
    blocks: usize,
    per_block: usize,
    f: impl Fn(T, T) -> T + Copy,
) {
    let size = std::mem::size_of::<T>();
    if per_block == 1 {
        let s = src.cast::<T::Raw>();
        // SAFETY: the caller guarantees block `b` (one element at dst + b * stride) is
        // readable and writable and that `blocks` elements are readable at `src` (see
        // `apply_strided_raw`); unaligned access is allowed.
        let one = |b: usize| unsafe {
            let d = dst.add(b * stride).cast::<T::Raw>();
            let a = T::from_raw(d.read_unaligned());
            d.write_unaligned(f(a, T::from_raw(s.add(b).read_unaligned())).to_raw());
        };
        // four independent elements per step keep the loads and stores in flight
        let mut b = 0;
        while b + 4 <= blocks {
            one(b);
            one(b + 1);
            one(b + 2);
            one(b + 3);
            b += 4;
        }
        while b < blocks {
            one(b);
            b += 1;
        }
        return;
    }
    for b in 0..blocks {
        // SAFETY: as above, for the `per_block` elements of block `b`.
        unsafe {
            raw_loop::<T>(
                dst.add(b * stride),
                src.add(b * per_block * size),
                per_block,
                f,
            )
        }
    }
}

/// [`apply_raw`] over a strided target: `blocks` blocks of `per_block` elements, block
/// `b` at `dst + b * stride`, combined with the packed elements at `src` in order.
///
/// # Safety
/// Every block is valid for reads and writes and `blocks * per_block` elements are
/// valid for reads at `src`; blocks do not overlap each other or `src`; and no other
/// thread or process accesses the blocks during the call (as for [`apply_raw`]).
pub unsafe fn apply_strided_raw<T: Element>(
    op: Op,
    dst: *mut u8,
    stride: usize,
    src: *const u8,
    blocks: usize,
    per_block: usize,
) {
    let (d, s, b, p) = (dst, stride, src, blocks);
    // SAFETY: (every arm) forwarded from this function's contract.
    unsafe {
        match op {
            Op::Sum => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Sum, a, b)),
            Op::Prod => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Prod, a, b)),
            Op::Max => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Max, a, b)),
            Op::Min => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Min, a, b)),
            Op::Land => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Land, a, b)),
            Op::Lor => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Lor, a, b)),
            Op::Lxor => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Lxor, a, b)),
            Op::Band => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Band, a, b)),
            Op::Bor => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Bor, a, b)),
            Op::Bxor => strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::Bxor, a, b)),
            Op::MaxLoc => {
                strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::MaxLoc, a, b))
            }
            Op::MinLoc => {
                strided_loop::<T>(d, s, b, p, per_block, |a, b| T::combine(Op::MinLoc, a, b))
            }
            Op::Replace => strided_loop::<T>(d, s, b, p, per_block, |_, b| b),
            Op::NoOp => {}
        }
    }
}

/// [`apply`] on packed bytes of `basic`: `dst` and `src` hold the same whole number of
/// elements (extra trailing bytes of the longer one are ignored).
///
/// ```
/// use rma_core::{BasicType, Op};
/// let mut dst = 5i32.to_ne_bytes();
/// rma_ops::apply_bytes(BasicType::I32, Op::Max, &mut dst, &9i32.to_ne_bytes());
/// assert_eq!(i32::from_ne_bytes(dst), 9);
/// ```
pub fn apply_bytes(basic: BasicType, op: Op, dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len()) / basic.size();
    crate::with_element!(basic, T => {
        // SAFETY: both slices hold at least `n` elements' bytes, `dst` is borrowed
        // mutably so nothing else accesses it, and a `&mut` cannot overlap `src`.
        unsafe { apply_raw::<T>(op, dst.as_mut_ptr(), src.as_ptr(), n) }
    })
}
