//! Window memory as Rust's memory model sees it: every access is an atomic operation
//! on an aligned 8-byte word.
//!
//! Other ranks may touch a window's memory at any time — legitimately (different
//! elements of one word), or in a program MPI calls erroneous (conflicting accesses in
//! one epoch). With ranks as threads, Rust's rules apply whatever MPI says: a
//! non-atomic access that races another access is undefined behaviour, and so are
//! racing atomic accesses of different sizes where one of them writes. So rma touches
//! window memory only through this module and the single-element kernels of
//! [`crate::atomic`], and all of them use [`AtomicU64`] on the aligned word holding the
//! bytes:
//!
//! - whole words are loaded and stored with relaxed atomics (plain `mov`s on x86-64);
//! - bytes at the edges of a range, and elements narrower than 8 bytes, are read from
//!   their word and written back by splicing them into it with a compare-and-swap, so
//!   the word's other bytes — which another rank may be writing at the same time,
//!   legitimately — are never overwritten;
//! - 16-byte elements are two words (their atomicity comes from the chunk lock).
//!
//! A conflicting program therefore sees unspecified values (a lost update, a mix of
//! two puts), as MPI says, and never undefined behaviour. Ordering comes from the
//! epochs' synchronization (release/acquire on lock words, barriers and counters),
//! which orders relaxed accesses as it ordered plain ones.
//!
//! # The contract of every function here
//! The memory `[p, p + len)` lies inside an allocation (a mapped segment, a heap
//! buffer) that also holds every whole 8-byte aligned word overlapping it, valid for
//! the call, and every access to those words by anyone goes through this module or
//! [`crate::atomic`] (window memory). Local buffers (the `&[u8]` / `&mut [u8]`
//! arguments) are ordinary Rust memory.

use crate::element::Element;
use rma_core::Op;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

/// Bytes of the word every window access goes through.
pub const WORD: usize = 8;

/// The word holding byte `p`, and `p`'s offset in it.
#[inline(always)]
pub(crate) fn word_of(p: *const u8) -> (*mut u64, usize) {
    let a = p as usize;
    // `map_addr` keeps the pointer's provenance
    (
        p.map_addr(|a| a & !(WORD - 1)).cast_mut().cast(),
        a & (WORD - 1),
    )
}

/// # Safety
/// `w` is an aligned word of window memory (the module contract).
#[inline(always)]
pub(crate) unsafe fn atomic<'a>(w: *mut u64) -> &'a AtomicU64 {
    // SAFETY: aligned and valid (the caller's contract); every access to it is
    // atomic (the module contract), so an `&AtomicU64` over it is sound.
    unsafe { AtomicU64::from_ptr(w) }
}

/// The shift of the `s` bytes at offset `k` of a word, as an integer in native order.
#[inline(always)]
pub(crate) const fn shift(k: usize, s: usize) -> u32 {
    if cfg!(target_endian = "little") {
        (8 * k) as u32
    } else {
        (8 * (WORD - k - s)) as u32
    }
}

#[inline(always)]
pub(crate) const fn mask(s: usize) -> u64 {
    if s >= WORD {
        !0
    } else {
        (1u64 << (8 * s)) - 1
    }
}

/// Loads the `s` bytes (1 to 8) at `p`, which lie in one word, as an integer in native
/// order (zero-extended).
///
/// # Safety
/// The module contract, for `s` bytes at `p`, which must not cross a word boundary.
#[inline(always)]
pub unsafe fn load_bits(p: *const u8, s: usize) -> u64 {
    let (w, k) = word_of(p);
    // SAFETY: forwarded.
    let v = unsafe { atomic(w) }.load(Relaxed);
    if s == WORD {
        v
    } else {
        (v >> shift(k, s)) & mask(s)
    }
}

/// Stores `bits` as the `s` bytes (1 to 8) at `p`, which lie in one word; the word's
/// other bytes are kept, whoever writes them meanwhile.
///
/// # Safety
/// As for [`load_bits`].
#[inline(always)]
pub unsafe fn store_bits(p: *mut u8, s: usize, bits: u64) {
    let (w, k) = word_of(p);
    // SAFETY: forwarded.
    let a = unsafe { atomic(w) };
    if s == WORD {
        a.store(bits, Relaxed);
        return;
    }
    let m = mask(s) << shift(k, s);
    let put = (bits << shift(k, s)) & m;
    let mut cur = a.load(Relaxed);
    while let Err(v) = a.compare_exchange_weak(cur, (cur & !m) | put, Relaxed, Relaxed) {
        cur = v;
    }
}

/// Copies `src` into window memory at `dst`.
///
/// # Safety
/// The module contract for `src.len()` bytes at `dst`.
pub unsafe fn copy_in(dst: *mut u8, src: &[u8]) {
    let n = src.len();
    let (_, k) = word_of(dst);
    // head: the bytes before the first aligned word, spliced into their word
    let head = if k == 0 { 0 } else { (WORD - k).min(n) };
    if head > 0 {
        let mut bytes = [0u8; WORD];
        bytes[..head].copy_from_slice(&src[..head]);
        // SAFETY: the bytes dst..dst + head lie in one word (k + head <= WORD).
        unsafe { store_bits(dst, head, bytes_bits(&bytes, head)) };
    }
    let words = (n - head) / WORD;
    // SAFETY: dst + head is word-aligned and `words` words from it are in the range;
    // `src[head..]` holds as many bytes.
    unsafe { store_words(dst.add(head).cast(), src[head..].as_ptr(), words) };
    let i = head + WORD * words;
    if i < n {
        let take = n - i;
        let mut bytes = [0u8; WORD];
        bytes[..take].copy_from_slice(&src[i..]);
        // SAFETY: the tail starts a word and is shorter than one.
        unsafe { store_bits(dst.add(i), take, bytes_bits(&bytes, take)) };
    }
}

/// Copies window memory at `src` into `out`.
///
/// # Safety
/// The module contract for `out.len()` bytes at `src`.
pub unsafe fn copy_out(src: *const u8, out: &mut [u8]) {
    let n = out.len();
    let (_, k) = word_of(src);
    let head = if k == 0 { 0 } else { (WORD - k).min(n) };
    if head > 0 {
        // SAFETY: the bytes lie in one word.
        let v = unsafe { load_bits(src, head) };
        out[..head].copy_from_slice(&bits_bytes(v, head)[..head]);
    }
    let words = (n - head) / WORD;
    // SAFETY: src + head is word-aligned and `words` words from it are in the range;
    // `out[head..]` has room for them.
    unsafe { load_words(src.add(head).cast(), out[head..].as_mut_ptr(), words) };
    let i = head + WORD * words;
    if i < n {
        let take = n - i;
        // SAFETY: the tail starts a word and is shorter than one.
        let v = unsafe { load_bits(src.add(i), take) };
        out[i..].copy_from_slice(&bits_bytes(v, take)[..take]);
    }
}

/// The part of `[at, at + n)` whose bytes go through whole words of the allocation
/// `[lo, hi)`, as byte offsets from `at`: `(m0, m1)` with `0 <= m0 <= m1 <= n`. The
/// bytes before `m0` and from `m1` on lie in words that stick out of the allocation.
#[inline]
fn whole_words_of(at: usize, n: usize, lo: usize, hi: usize) -> (usize, usize) {
    let lo8 = lo.next_multiple_of(WORD);
    let hi8 = hi & !(WORD - 1);
    let end = at + n;
    let m0 = lo8.clamp(at, end);
    let m1 = hi8.clamp(m0, end);
    (m0 - at, m1 - at)
}

/// Copies `src` into window memory at `dst`, where the window's memory is the
/// allocation `[lo, hi)` (any alignment, any length, `[dst, dst + src.len())` inside
/// it): the bytes in whole 8-byte words of the allocation are stored as [`copy_in`]
/// stores them, and the bytes of a word that sticks out of it (at most 7 at either
/// end) one by one with relaxed `AtomicU8` stores. Which of the two a byte gets
/// depends only on its address and the allocation, never on the call, so every byte
/// is always accessed at one size.
///
/// # Safety
/// `[lo, hi)` is one allocation valid for the call, `[dst, dst + src.len())` lies
/// inside it, and every access to its bytes by anyone goes through this function,
/// [`copy_out_within`] with the same `[lo, hi)`, or (only for the bytes of whole
/// words) the rest of this module and [`crate::atomic`].
pub unsafe fn copy_in_within(dst: *mut u8, src: &[u8], lo: *const u8, hi: *const u8) {
    let n = src.len();
    let (m0, m1) = whole_words_of(dst as usize, n, lo as usize, hi as usize);
    let byte = |i: usize| {
        // SAFETY: byte `i < n` of the range lies in the allocation (the contract) and
        // is accessed only at this size (the contract: it is not in a whole word).
        unsafe { std::sync::atomic::AtomicU8::from_ptr(dst.add(i)) }.store(src[i], Relaxed)
    };
    (0..m0).for_each(byte);
    if m1 > m0 {
        // SAFETY: every word overlapping `[dst + m0, dst + m1)` is a whole word of the
        // allocation, so the module contract holds for it.
        unsafe { copy_in(dst.add(m0), &src[m0..m1]) };
    }
    (m1..n).for_each(byte);
}

/// Copies window memory at `src` into `out`, as [`copy_in_within`] stores it.
///
/// # Safety
/// As for [`copy_in_within`], for `[src, src + out.len())`.
pub unsafe fn copy_out_within(src: *const u8, out: &mut [u8], lo: *const u8, hi: *const u8) {
    let n = out.len();
    let (m0, m1) = whole_words_of(src as usize, n, lo as usize, hi as usize);
    for i in (0..m0).chain(m1..n) {
        // SAFETY: as in `copy_in_within`.
        out[i] =
            unsafe { std::sync::atomic::AtomicU8::from_ptr(src.add(i).cast_mut()) }.load(Relaxed);
    }
    if m1 > m0 {
        // SAFETY: as in `copy_in_within`.
        unsafe { copy_out(src.add(m0), &mut out[m0..m1]) };
    }
}

/// The integer (native order, as [`load_bits`] returns it) of the first `s` bytes.
#[inline(always)]
fn bytes_bits(bytes: &[u8; WORD], s: usize) -> u64 {
    let v = u64::from_ne_bytes(*bytes);
    if s == WORD {
        return v;
    }
    if cfg!(target_endian = "little") {
        v & mask(s)
    } else {
        v >> (8 * (WORD - s))
    }
}

/// The bytes (first `s` of the array) of an integer as [`load_bits`] returns it.
#[inline(always)]
fn bits_bytes(v: u64, s: usize) -> [u8; WORD] {
    if cfg!(target_endian = "little") || s == WORD {
        v.to_ne_bytes()
    } else {
        (v << (8 * (WORD - s))).to_ne_bytes()
    }
}

/// Whether whole 16-byte aligned blocks may be moved with SSE (`movdqa`): on x86-64
/// CPUs with AVX, Intel and AMD document that an aligned 16-byte SSE load or store is
/// one atomic access; each 8-byte word in it is then accessed atomically too, which is
/// what the Rust code the instruction stands for (two relaxed `AtomicU64` accesses)
/// does.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn sse_blocks() -> bool {
    std::arch::is_x86_feature_detected!("avx")
}

/// 64-byte steps of the SSE loops.
const STEP: usize = 64;

/// One 64-byte step loop over 16-byte blocks: `$ld` loads from `$from`, `$st` stores
/// to `$to`, `$steps` times (`$steps > 0`). The loop counter changes the flags (so no
/// `preserves_flags`); no stack is used.
#[cfg(target_arch = "x86_64")]
macro_rules! sse_steps {
    ($ld:literal, $st:literal, $from:expr, $to:expr, $steps:expr) => {
        std::arch::asm!(
            "2:",
            concat!($ld, " {a}, [{f}]"),
            concat!($ld, " {b}, [{f} + 16]"),
            concat!($ld, " {c}, [{f} + 32]"),
            concat!($ld, " {d}, [{f} + 48]"),
            concat!($st, " [{t}], {a}"),
            concat!($st, " [{t} + 16], {b}"),
            concat!($st, " [{t} + 32], {c}"),
            concat!($st, " [{t} + 48], {d}"),
            "add {f}, 64",
            "add {t}, 64",
            "dec {k}",
            "jnz 2b",
            f = inout(reg) $from => _,
            t = inout(reg) $to => _,
            k = inout(reg) $steps => _,
            a = out(xmm_reg) _,
            b = out(xmm_reg) _,
            c = out(xmm_reg) _,
            d = out(xmm_reg) _,
            options(nostack),
        )
    };
}

/// Moves `n` words between window memory at the word-aligned `window` and the local
/// bytes at `local` (`8 * n` bytes, any alignment): into the window when `TO_WINDOW`,
/// out of it otherwise. Each window word is a relaxed atomic access; on x86-64 with
/// AVX the 16-byte aligned middle moves in SSE blocks, each `movdqa` one atomic 16-byte
/// access standing for two relaxed word accesses (`sse_blocks`).
///
/// # Safety
/// The module contract for `8 * n` bytes at `window`, which is 8-byte aligned; `local`
/// is valid for reads (`TO_WINDOW`) or writes of `8 * n` bytes and is not window memory.
#[inline]
unsafe fn move_words<const TO_WINDOW: bool>(window: *mut u64, local: *mut u8, n: usize) {
    // SAFETY: (the closure's callers) word `i < n` of both regions.
    let word = |i: usize| unsafe {
        let (w, l) = (atomic(window.add(i)), local.add(8 * i).cast::<u64>());
        if TO_WINDOW {
            w.store(l.read_unaligned(), Relaxed);
        } else {
            l.write_unaligned(w.load(Relaxed));
        }
    };
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    if n >= 16 && sse_blocks() {
        if (window as usize) % 16 != 0 {
            word(0);
            i = 1;
        }
        let steps = (8 * (n - i)) / STEP;
        // SAFETY: `window + i` is 16-byte aligned and `steps * 64` bytes from it are in
        // the range (the contract; `n - i >= 15` words, so `steps >= 1`); `local + 8 i`
        // holds as many. The window side uses `movdqa` (atomic 16-byte accesses), the
        // local side `movdqu`.
        unsafe {
            let (w, l) = (window.add(i), local.add(8 * i));
            if TO_WINDOW {
                sse_steps!("movdqu", "movdqa", l, w, steps);
            } else {
                sse_steps!("movdqa", "movdqu", w, l, steps);
            }
        }
        i += steps * STEP / 8;
    }
    (i..n).for_each(word);
}

/// Loads `n` words of window memory at `src` into the local bytes at `out`.
///
/// # Safety
/// As for [`move_words`].
#[inline]
unsafe fn load_words(src: *const u64, out: *mut u8, n: usize) {
    // SAFETY: forwarded.
    unsafe { move_words::<false>(src.cast_mut(), out, n) }
}

/// Stores `n` words from the local bytes at `src` into window memory at `dst`.
///
/// # Safety
/// As for [`move_words`].
#[inline]
unsafe fn store_words(dst: *mut u64, src: *const u8, n: usize) {
    // SAFETY: forwarded; `move_words` only reads `local` when storing into the window.
    unsafe { move_words::<true>(dst, src.cast_mut(), n) }
}

/// Loads one element of window memory. An element of 1, 2, 4 or 8 bytes aligned to its
/// size is one word access; any other is copied word by word (its atomicity, where MPI
/// asks for it, comes from the chunk lock).
///
/// # Safety
/// The module contract for one element at `p`.
#[inline(always)]
pub unsafe fn load<T: Element>(p: *const u8) -> T {
    let s = std::mem::size_of::<T>();
    if s <= WORD && s.is_power_of_two() && (p as usize) % s == 0 {
        // SAFETY: an aligned element of at most a word lies in one word.
        return T::from_bits(unsafe { load_bits(p, s) });
    }
    let mut raw = std::mem::MaybeUninit::<T::Raw>::uninit();
    // SAFETY: `raw` is `s` writable bytes; every byte is written by `copy_out` before
    // it is read, and `Raw` accepts every bit pattern.
    unsafe {
        let out = std::slice::from_raw_parts_mut(raw.as_mut_ptr().cast::<u8>(), s);
        copy_out(p, out);
        T::from_raw(raw.assume_init())
    }
}

/// Stores one element into window memory (see [`load`]).
///
/// # Safety
/// The module contract for one element at `p`.
#[inline(always)]
pub unsafe fn store<T: Element>(p: *mut u8, v: T) {
    let s = std::mem::size_of::<T>();
    if s <= WORD && s.is_power_of_two() && (p as usize) % s == 0 {
        // SAFETY: an aligned element of at most a word lies in one word.
        return unsafe { store_bits(p, s, v.to_bits()) };
    }
    let raw = v.to_raw();
    // SAFETY: `raw` is `s` initialized bytes of a plain value (`Raw` has no padding:
    // every bit pattern is valid, and it is the element's exact representation).
    let bytes = unsafe { std::slice::from_raw_parts((&raw as *const T::Raw).cast::<u8>(), s) };
    // SAFETY: forwarded.
    unsafe { copy_in(p, bytes) }
}

/// `op(target, origin)` as the apply kernels define it (REPLACE takes the origin).
#[inline(always)]
fn combine<T: Element>(op: Op, a: T, b: T) -> T {
    if op == Op::Replace {
        b
    } else {
        T::combine(op, a, b)
    }
}

/// Window words staged per step of a bulk apply (4 KiB: stays in L1).
const STAGE_WORDS: usize = 512;

/// Bytes below which a bulk apply goes element by element.
const STAGE_MIN: usize = 128;

/// SUM over 64-byte steps of 16-byte aligned window memory, fused: `movdqa` loads of
/// the target (one atomic 16-byte access each, standing for two relaxed word loads, as
/// in `load_words`), unaligned loads of the local origin, the packed add, `movdqa`
/// stores back (two relaxed word stores each). Lanes never cross an element.
macro_rules! fused_sum {
    ($name:ident, $add:literal) => {
        /// # Safety
        /// `dst` is 16-byte aligned window memory (the module contract) for
        /// `64 * steps` bytes, `steps > 0`; `src` is local and readable for as many.
        #[cfg(target_arch = "x86_64")]
        #[inline]
        unsafe fn $name(dst: *mut u8, src: *const u8, steps: usize) {
            // SAFETY: the function's contract; the loop changes the flags (no
            // `preserves_flags`) and uses no stack.
            unsafe {
                std::arch::asm!(
                    "2:",
                    "movdqa {a}, [{t}]",
                    "movdqa {b}, [{t} + 16]",
                    "movdqa {c}, [{t} + 32]",
                    "movdqa {d}, [{t} + 48]",
                    "movdqu {e}, [{s}]",
                    "movdqu {f}, [{s} + 16]",
                    "movdqu {g}, [{s} + 32]",
                    "movdqu {h}, [{s} + 48]",
                    concat!($add, " {a}, {e}"),
                    concat!($add, " {b}, {f}"),
                    concat!($add, " {c}, {g}"),
                    concat!($add, " {d}, {h}"),
                    "movdqa [{t}], {a}",
                    "movdqa [{t} + 16], {b}",
                    "movdqa [{t} + 32], {c}",
                    "movdqa [{t} + 48], {d}",
                    "add {t}, 64",
                    "add {s}, 64",
                    "dec {k}",
                    "jnz 2b",
                    t = inout(reg) dst => _,
                    s = inout(reg) src => _,
                    k = inout(reg) steps => _,
                    a = out(xmm_reg) _,
                    b = out(xmm_reg) _,
                    c = out(xmm_reg) _,
                    d = out(xmm_reg) _,
                    e = out(xmm_reg) _,
                    f = out(xmm_reg) _,
                    g = out(xmm_reg) _,
                    h = out(xmm_reg) _,
                    options(nostack),
                );
            }
        }
    };
}

fused_sum!(sum_f64, "addpd");
fused_sum!(sum_f32, "addps");
fused_sum!(sum_i64, "paddq");
fused_sum!(sum_i32, "paddd");
fused_sum!(sum_i16, "paddw");
fused_sum!(sum_i8, "paddb");

/// The fused SUM kernel for `basic`, where its SUM is a lane-wise packed add
/// (wrapping integers, IEEE floats; complex numbers add part by part).
#[cfg(target_arch = "x86_64")]
fn fused_sum_for(basic: rma_core::BasicType) -> Option<unsafe fn(*mut u8, *const u8, usize)> {
    use rma_core::BasicType::*;
    Some(match basic {
        F64 | C64 => sum_f64,
        F32 | C32 => sum_f32,
        I64 | U64 => sum_i64,
        Isize | Usize if std::mem::size_of::<usize>() == 8 => sum_i64,
        I32 | U32 => sum_i32,
        I16 | U16 => sum_i16,
        I8 | U8 => sum_i8,
        _ => return None,
    })
}

/// [`crate::apply_raw`] for window memory: `n` elements of `T` at `dst` (window memory,
/// aligned as for [`load`]) combined with `n` packed local elements at `src`, with
/// word atomics only: SUM of the common types is one fused SSE loop (x86-64 with AVX);
/// everything else loads the range's whole words into a local buffer (SSE blocks),
/// combines there with the vectorised kernel and stores them back; partial words at
/// the edges are updated element by element. Not atomic per element with respect to
/// other updates: the caller excludes those (a chunk lock, an exclusive lock).
///
/// # Safety
/// The module contract for `n * size_of::<T>()` bytes at `dst`; `src` is valid for
/// reads of as many bytes and is not window memory.
pub unsafe fn apply<T: Element>(op: Op, dst: *mut u8, src: *const u8, n: usize) {
    if op == Op::NoOp || n == 0 {
        return;
    }
    let s = std::mem::size_of::<T>();
    let sp = src.cast::<T::Raw>();
    // SAFETY: (all below) element `i < n` is inside both regions of the contract.
    let one = |i: usize| unsafe {
        let p = dst.add(i * s);
        store::<T>(
            p,
            combine(op, load::<T>(p), T::from_raw(sp.add(i).read_unaligned())),
        );
    };
    let aligned = (dst as usize) % s.min(WORD) == 0 && (s % WORD == 0 || WORD % s == 0);
    if !aligned || n * s < STAGE_MIN {
        (0..n).for_each(one);
        return;
    }
    // narrow elements before the first whole word, one at a time
    let head = if s >= WORD {
        0
    } else {
        (((WORD - (dst as usize) % WORD) % WORD) / s).min(n)
    };
    (0..head).for_each(one);
    // then as many elements as fill whole words
    let whole = head + ((n - head) * s / WORD) * WORD / s;
    let mut i = head;
    #[cfg(target_arch = "x86_64")]
    if let (Op::Sum, Some(kernel), true) = (op, fused_sum_for(T::BASIC), sse_blocks()) {
        while i < whole && (dst as usize + i * s) % 16 != 0 {
            one(i);
            i += 1;
        }
        let steps = (whole - i) * s / 64;
        if steps > 0 {
            // SAFETY: dst + i * s is 16-byte aligned and the `64 * steps` bytes from it
            // are whole elements of the range; `src` holds the same elements.
            unsafe { kernel(dst.add(i * s), src.add(i * s), steps) };
            i += steps * 64 / s;
        }
        (i..n).for_each(one);
        return;
    }
    let per_step = STAGE_WORDS * WORD / s;
    let mut stage = std::mem::MaybeUninit::<[u64; STAGE_WORDS]>::uninit();
    let local = stage.as_mut_ptr().cast::<u8>();
    while i < whole {
        let m = (whole - i).min(per_step);
        let words = m * s / WORD;
        // SAFETY: dst + i * s is word-aligned here and the `words` words from it are
        // inside the range; the stage has room for them and `load_words` writes them
        // all before the kernel reads them; `src` holds the `m` elements; the plain
        // kernel runs on the local stage only.
        unsafe {
            load_words(dst.add(i * s).cast(), local, words);
            crate::apply_raw::<T>(op, local, src.add(i * s), m);
            store_words(dst.add(i * s).cast(), local, words);
        }
        i += m;
    }
    (whole..n).for_each(one);
}

/// [`apply`] over a strided target: `blocks` blocks of `per_block` elements, block `b`
/// at `dst + b * stride`, combined with the packed elements at `src` in order.
///
/// # Safety
/// As for [`apply`], for every block.
pub unsafe fn apply_strided<T: Element>(
    op: Op,
    dst: *mut u8,
    stride: usize,
    src: *const u8,
    blocks: usize,
    per_block: usize,
) {
    let size = std::mem::size_of::<T>();
    if per_block == 1 && op != Op::NoOp {
        let sp = src.cast::<T::Raw>();
        for b in 0..blocks {
            // SAFETY: element `b` of the layout and of `src` (the contract).
            unsafe {
                let p = dst.add(b * stride);
                store::<T>(
                    p,
                    combine(op, load::<T>(p), T::from_raw(sp.add(b).read_unaligned())),
                );
            }
        }
        return;
    }
    for b in 0..blocks {
        // SAFETY: block `b` and its packed elements are inside the contract's regions.
        unsafe {
            apply::<T>(
                op,
                dst.add(b * stride),
                src.add(b * per_block * size),
                per_block,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A heap buffer of whole words, as window memory.
    fn words(n: usize) -> Vec<u64> {
        vec![0u64; n]
    }

    #[test]
    fn copies_at_every_offset_and_length_keep_the_neighbours() {
        for off in 0..16 {
            for len in 0..40 {
                let mut w = words(8);
                let base = w.as_mut_ptr().cast::<u8>();
                // SAFETY: 64 bytes of words; off + len <= 56.
                unsafe { copy_in(base, &[0xee; 64]) };
                let src: Vec<u8> = (0..len as u8).map(|b| b + 1).collect();
                // SAFETY: as above.
                unsafe { copy_in(base.add(off), &src) };
                let mut all = [0u8; 64];
                // SAFETY: as above.
                unsafe { copy_out(base, &mut all) };
                for (i, &b) in all.iter().enumerate() {
                    let want = if i >= off && i < off + len {
                        src[i - off]
                    } else {
                        0xee
                    };
                    assert_eq!(b, want, "off {off} len {len} byte {i}");
                }
                let mut back = vec![0u8; len];
                // SAFETY: as above.
                unsafe { copy_out(base.add(off), &mut back) };
                assert_eq!(back, src);
            }
        }
    }

    #[test]
    fn bounded_copies_split_at_the_allocations_whole_words() {
        assert_eq!(whole_words_of(0x1003, 20, 0x1003, 0x1017), (5, 13));
        assert_eq!(whole_words_of(0x1003, 2, 0x1003, 0x1006), (2, 2));
        assert_eq!(whole_words_of(0x1008, 16, 0x1008, 0x1018), (0, 16));
        // an allocation inside one word: every byte one by one
        assert_eq!(whole_words_of(0x1001, 3, 0x1001, 0x1004), (3, 3));
        for lo in 0..8 {
            for hi in lo..40 {
                for off in lo..=hi {
                    for len in 0..=(hi - off).min(20) {
                        let mut w = words(6);
                        let base = w.as_mut_ptr().cast::<u8>();
                        // SAFETY: 48 bytes of words, reached through this module only.
                        unsafe { copy_in(base, &[0xee; 48]) };
                        let (l, h) = (base.wrapping_add(lo), base.wrapping_add(hi));
                        let src: Vec<u8> = (0..len as u8).map(|b| b + 1).collect();
                        // SAFETY: [off, off + len) lies in [lo, hi), inside the words.
                        unsafe { copy_in_within(base.add(off), &src, l, h) };
                        let mut back = vec![0u8; len];
                        // SAFETY: as above.
                        unsafe { copy_out_within(base.add(off), &mut back, l, h) };
                        assert_eq!(back, src, "lo {lo} hi {hi} off {off} len {len}");
                        let mut all = [0u8; 48];
                        // SAFETY: the whole buffer.
                        unsafe { copy_out(base, &mut all) };
                        for (i, &b) in all.iter().enumerate() {
                            let inside = i >= off && i < off + len;
                            let want = if inside { src[i - off] } else { 0xee };
                            assert_eq!(b, want, "lo {lo} hi {hi} off {off} len {len} byte {i}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn apply_narrow_elements_at_every_offset() {
        for first in 0..8usize {
            for n in 0..20usize {
                let mut w = words(8);
                let base = w.as_mut_ptr().cast::<u8>();
                // SAFETY: 64 bytes of words.
                unsafe { copy_in(base, &[7u8; 64]) };
                let src: Vec<u16> = (0..n as u16).collect();
                let p = 2 * first;
                // SAFETY: elements stay inside the 64 bytes, aligned to 2.
                unsafe { apply::<u16>(Op::Sum, base.add(p), src.as_ptr().cast(), n) };
                let mut all = [0u8; 64];
                // SAFETY: as above.
                unsafe { copy_out(base, &mut all) };
                for e in 0..32 {
                    let v = u16::from_ne_bytes([all[2 * e], all[2 * e + 1]]);
                    let want = if e >= first && e < first + n {
                        0x0707 + (e - first) as u16
                    } else {
                        0x0707
                    };
                    assert_eq!(v, want, "first {first} n {n} element {e}");
                }
            }
        }
    }

    #[test]
    fn long_copies_and_applies_take_the_block_path() {
        // lengths and offsets around the 16-word and 64-byte steps of the SSE loops
        for off in [0usize, 1, 7, 8, 15, 16] {
            for len in [127usize, 128, 129, 200, 1000, 4096 + 3] {
                let mut w = words(700);
                let base = w.as_mut_ptr().cast::<u8>();
                let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                // SAFETY: off + len < 5600 bytes of words.
                unsafe { copy_in(base.add(off), &src) };
                let mut back = vec![0u8; len + 2];
                // SAFETY: as above.
                unsafe { copy_out(base.add(off), &mut back[1..len + 1]) };
                assert_eq!(&back[1..len + 1], &src[..], "off {off} len {len}");
                let mut edge = [0u8; 1];
                if off > 0 {
                    // SAFETY: as above.
                    unsafe { copy_out(base.add(off - 1), &mut edge) };
                    assert_eq!(edge[0], 0, "byte before, off {off} len {len}");
                }
                // SAFETY: as above.
                unsafe { copy_out(base.add(off + len), &mut edge) };
                assert_eq!(edge[0], 0, "byte after, off {off} len {len}");
            }
        }
        for first in [0usize, 1, 3] {
            for n in [100usize, 513, 1500] {
                let mut w = words(1600);
                let base = w.as_mut_ptr().cast::<u8>();
                let ones = vec![1.5f64; n];
                // SAFETY: (first + n) * 8 <= 12800 bytes of words, aligned to 8.
                unsafe {
                    apply::<f64>(Op::Sum, base.add(8 * first), ones.as_ptr().cast(), n);
                    apply::<f64>(Op::Sum, base.add(8 * first), ones.as_ptr().cast(), n);
                }
                for e in 0..(first + n + 2) {
                    // SAFETY: as above.
                    let v = unsafe { load::<f64>(base.add(8 * e)) };
                    let want = if e >= first && e < first + n {
                        3.0
                    } else {
                        0.0
                    };
                    assert_eq!(v, want, "first {first} n {n} element {e}");
                }
                let c = vec![rma_datatype::Complex64 { re: 1.0, im: 2.0 }; n / 2];
                // SAFETY: 16-byte elements, 8-aligned, inside the words.
                unsafe {
                    apply::<rma_datatype::Complex64>(
                        Op::Replace,
                        base.add(8 * first),
                        c.as_ptr().cast(),
                        n / 2,
                    )
                };
                // SAFETY: as above.
                let last = unsafe {
                    load::<rma_datatype::Complex64>(base.add(8 * first + 16 * (n / 2 - 1)))
                };
                assert_eq!((last.re, last.im), (1.0, 2.0));
            }
        }
    }

    #[test]
    fn long_narrow_applies_fused_and_staged() {
        for first in [0usize, 1, 3, 5] {
            let n = 1000;
            let mut w = words(300);
            let base = w.as_mut_ptr().cast::<u8>();
            let inc: Vec<u16> = (0..n as u16).collect();
            let big: Vec<i32> = (0..n as i32).map(|v| v - 500).collect();
            // SAFETY: 2 * (first + n) and 4 * (first + n) < 2400 bytes of words;
            // elements aligned to their size.
            unsafe {
                apply::<u16>(Op::Sum, base.add(2 * first), inc.as_ptr().cast(), n);
                apply::<u16>(Op::Sum, base.add(2 * first), inc.as_ptr().cast(), n);
            }
            for e in 0..(first + n + 3) {
                // SAFETY: as above.
                let v = unsafe { load::<u16>(base.add(2 * e)) };
                let want = if e >= first && e < first + n {
                    2 * (e - first) as u16
                } else {
                    0
                };
                assert_eq!(v, want, "u16 sum: first {first} element {e}");
            }
            let mut w = words(600);
            let base = w.as_mut_ptr().cast::<u8>();
            // SAFETY: as above.
            unsafe { apply::<i32>(Op::Max, base.add(4 * first), big.as_ptr().cast(), n) };
            for e in 0..(first + n + 3) {
                // SAFETY: as above.
                let v = unsafe { load::<i32>(base.add(4 * e)) };
                let want = if e >= first && e < first + n {
                    (e - first) as i32 - 500
                } else {
                    0
                };
                assert_eq!(v, want.max(0), "i32 max: first {first} element {e}");
            }
        }
    }

    #[test]
    fn elements_load_and_store() {
        let mut w = words(4);
        let base = w.as_mut_ptr().cast::<u8>();
        // SAFETY: 32 bytes of words; each element aligned to its size (or 8 for 16).
        unsafe {
            store::<i32>(base.add(4), -5);
            store::<u8>(base.add(1), 9);
            store::<f64>(base.add(8), 2.5);
            store::<rma_datatype::Complex64>(
                base.add(16),
                rma_datatype::Complex64 { re: 1.0, im: -1.0 },
            );
            assert_eq!(load::<i32>(base.add(4)), -5);
            assert_eq!(load::<u8>(base.add(1)), 9);
            assert_eq!(load::<u8>(base), 0);
            assert_eq!(load::<f64>(base.add(8)), 2.5);
            assert_eq!(load::<rma_datatype::Complex64>(base.add(16)).im, -1.0);
        }
    }
}
