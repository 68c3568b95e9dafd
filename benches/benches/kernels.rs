//! Kernel throughput, no window and no transport involved:
//!
//! - `apply_{sum,replace,max}/{f64,i64}`: the plain vectorisable `rma_ops::apply`, the
//!   atomic accumulate a transport runs on shared memory (`rma_ops::atomic::accumulate`,
//!   whose bulk path is a plain loop under a chunk lock) and the element-wise atomic
//!   kernel (`rma_ops::atomic::fetch_op_element` per element), same op, same buffers;
//! - `pack/vector_f64`: `TypeMap::pack` and `TypeMap::unpack` of a stride-2 f64 layout
//!   next to a memcpy of the same number of bytes.
//!
//! Every group compares its kernels side by side: `BenchmarkId::new(kernel, elements)`.
//!
//! Every buffer is placed at a chosen offset in its 4 KiB page ([`Placed`]): sources at
//! 0, destinations at 2048. Left to the allocator, memcpy-shaped kernels (plain
//! REPLACE, the memcpy baseline) become a lottery: on this machine (AMD EPYC, KVM,
//! glibc 2.36) memcpy of 4 KiB and more runs at ~3 GB/s instead of 30-50 GB/s when the
//! destination lies 8 or 16 bytes past the source modulo 4 KiB, and glibc's malloc puts
//! two same-sized power-of-two buffers allocated one after the other exactly 16 bytes
//! apart modulo 4 KiB. `pack/vector_f64/memcpy_skew16` measures that case on purpose.
#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rma_core::{BasicType, Op};
use rma_datatype::{bytes_of, bytes_of_mut, Datatype, Equivalence};
use rma_ops::atomic::{self, HeapDomain};
use rma_ops::Element;
use std::time::Duration;

/// `len` elements, the `i`-th from `f(i)`, the first at byte `page_offset` of a 4 KiB
/// page, so that the distance between two buffers modulo 4 KiB is chosen, not left to
/// the allocator (see the module docs).
struct Placed<T> {
    buf: Vec<T>,
    start: usize,
    len: usize,
}

impl<T> Placed<T> {
    fn new(len: usize, page_offset: usize, f: impl FnMut(usize) -> T) -> Placed<T> {
        let size = std::mem::size_of::<T>();
        assert!(page_offset < PAGE && page_offset % size == 0);
        let buf: Vec<T> = (0..len + PAGE / size).map(f).collect();
        let at = buf.as_ptr() as usize % PAGE;
        let start = (page_offset + PAGE - at) % PAGE / size;
        Placed { buf, start, len }
    }

    fn get(&self) -> &[T] {
        &self.buf[self.start..self.start + self.len]
    }

    fn get_mut(&mut self) -> &mut [T] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

const PAGE: usize = 4096;

/// Elements per call: inside L1, inside L2, about L2-sized (256 KiB of f64).
const SIZES: [usize; 3] = [512, 4096, 32768];

/// `op` on `T` over each of [`SIZES`], three ways:
/// - `plain`: `rma_ops::apply`, no atomicity;
/// - `atomic`: `rma_ops::atomic::accumulate`, what a transport runs on a window (at
///   these sizes the bulk path: a chunk lock, other origins drained, a plain loop);
/// - `element_wise`: one `fetch_op_element` per element, the single-element mechanism
///   (announce the chunk, one native atomic read-modify-write).
fn apply_kernels<T: Element + Equivalence + Default>(
    c: &mut Criterion,
    op: Op,
    op_name: &str,
    from_index: fn(usize) -> T,
) {
    // the domain of a window with 2 origins, seen by origin 0
    let tables = HeapDomain::new(2, 64);
    let dom = tables.domain(0).expect("origin 0 of 2");
    let basic = <T as Element>::BASIC;
    let size = std::mem::size_of::<T>();
    let mut group = c.benchmark_group(format!("apply_{op_name}/{}", std::any::type_name::<T>()));
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        let src = Placed::new(n, 0, from_index);
        let mut dst = Placed::new(n, PAGE / 2, |_| T::default());
        group.bench_with_input(BenchmarkId::new("plain", n), &n, |b, _| {
            b.iter(|| rma_ops::apply(op, black_box(dst.get_mut()), black_box(src.get())))
        });
        group.bench_with_input(BenchmarkId::new("atomic", n), &n, |b, _| {
            let dst = bytes_of_mut(dst.get_mut())
                .expect("f64 and i64 take any bytes")
                .as_mut_ptr();
            let src = bytes_of(src.get());
            // SAFETY: `dst` points to n private f64s or i64s, aligned to their size (a
            // Vec of them) as `atomic_align` asks, that only this loop touches, through
            // this module and this domain; `src` holds exactly n elements.
            b.iter(|| unsafe { atomic::accumulate(basic, op, dst, 0, &dom, black_box(src)) })
        });
        group.bench_with_input(BenchmarkId::new("element_wise", n), &n, |b, _| {
            let dst = bytes_of_mut(dst.get_mut())
                .expect("f64 and i64 take any bytes")
                .as_mut_ptr();
            let src = src.get();
            b.iter(|| {
                for (i, &x) in black_box(src).iter().enumerate() {
                    // SAFETY: element i of the n private, aligned elements at `dst`
                    // (i < n), accessed only through this module and this domain, with
                    // its byte offset as the key.
                    unsafe {
                        atomic::fetch_op_element(op, dst.add(i * size), i * size, &dom, x)
                            .expect("a kernel stalled")
                    };
                }
            })
        });
    }
    group.finish();
}

fn apply(c: &mut Criterion) {
    apply_kernels::<f64>(c, Op::Sum, "sum", |i| i as f64);
    apply_kernels::<i64>(c, Op::Sum, "sum", |i| i as i64);
    apply_kernels::<f64>(c, Op::Replace, "replace", |i| i as f64);
    apply_kernels::<i64>(c, Op::Replace, "replace", |i| i as i64);
    apply_kernels::<f64>(c, Op::Max, "max", |i| i as f64);
    apply_kernels::<i64>(c, Op::Max, "max", |i| i as i64);
}

/// Pack (strided to contiguous) and unpack (contiguous to strided) of `n` f64 at
/// stride 2, `vector(n, 1, 2, f64)`, vs `copy_from_slice` of the same 8n bytes.
fn pack(c: &mut Criterion) {
    let f64t = Datatype::basic(BasicType::F64);
    let mut group = c.benchmark_group("pack/vector_f64");
    for n in SIZES {
        let mut vector = Datatype::vector(n, 1, 2, &f64t).expect("valid vector");
        vector.commit();
        let map = vector.type_map(1).expect("valid map");
        let mut strided = Placed::new(16 * n, 0, |_| 1u8);
        let mut packed = Placed::new(8 * n, PAGE / 2, |_| 0u8);
        let mut skewed = Placed::new(8 * n, 16, |_| 0u8);
        group.throughput(Throughput::Bytes(8 * n as u64));
        group.bench_with_input(BenchmarkId::new("pack", n), &n, |b, _| {
            let (src, dst) = (strided.get(), packed.get_mut());
            b.iter(|| {
                map.pack(black_box(src), black_box(&mut *dst))
                    .expect("fits")
            })
        });
        group.bench_with_input(BenchmarkId::new("unpack", n), &n, |b, _| {
            let (src, dst) = (packed.get(), strided.get_mut());
            b.iter(|| {
                map.unpack(black_box(src), black_box(&mut *dst))
                    .expect("fits")
            })
        });
        group.bench_with_input(BenchmarkId::new("memcpy", n), &n, |b, _| {
            let (src, dst) = (&strided.get()[..8 * n], packed.get_mut());
            b.iter(|| black_box(&mut *dst).copy_from_slice(black_box(src)))
        });
        // the destination 16 bytes past the source modulo 4 KiB
        group.bench_with_input(BenchmarkId::new("memcpy_skew16", n), &n, |b, _| {
            let (src, dst) = (&strided.get()[..8 * n], skewed.get_mut());
            b.iter(|| black_box(&mut *dst).copy_from_slice(black_box(src)))
        });
    }
    group.finish();
}

criterion_group! {
    name = kernels;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = apply, pack
}
criterion_main!(kernels);
