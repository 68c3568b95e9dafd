//! Kernel throughput: non-atomic vs element-wise atomic accumulate, and pack of a
//! strided layout vs memcpy of the same bytes.
#![allow(missing_docs)] // criterion_group! generates an undocumented pub fn

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rma_core::{BasicType, Op};
use rma_datatype::{bytes_of, bytes_of_mut, Datatype};
use rma_ops::atomic::{self, StripeLocks};

const SIZES: [usize; 4] = [512, 4096, 32768, 262_144];

fn apply_sum(c: &mut Criterion) {
    let words = StripeLocks::heap_table(1024);
    let locks = StripeLocks::new(&words).expect("power of two");
    let mut group = c.benchmark_group("apply_sum");
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        let src_f: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let mut dst_f = vec![0f64; n];
        group.bench_with_input(BenchmarkId::new("f64/plain", n), &n, |b, _| {
            b.iter(|| rma_ops::apply(Op::Sum, black_box(&mut dst_f), black_box(&src_f)))
        });
        group.bench_with_input(BenchmarkId::new("f64/atomic", n), &n, |b, _| {
            let dst = bytes_of_mut(&mut dst_f)
                .expect("f64 takes any bytes")
                .as_mut_ptr();
            let src = bytes_of(&src_f);
            // SAFETY: `dst` points to n private, 8-aligned f64s that only this loop touches.
            b.iter(|| unsafe {
                atomic::accumulate(BasicType::F64, Op::Sum, dst, 0, &locks, black_box(src))
            })
        });
        let src_i: Vec<i64> = (0..n as i64).collect();
        let mut dst_i = vec![0i64; n];
        group.bench_with_input(BenchmarkId::new("i64/plain", n), &n, |b, _| {
            b.iter(|| rma_ops::apply(Op::Sum, black_box(&mut dst_i), black_box(&src_i)))
        });
        group.bench_with_input(BenchmarkId::new("i64/atomic", n), &n, |b, _| {
            let dst = bytes_of_mut(&mut dst_i)
                .expect("i64 takes any bytes")
                .as_mut_ptr();
            let src = bytes_of(&src_i);
            // SAFETY: as above, for i64.
            b.iter(|| unsafe {
                atomic::accumulate(BasicType::I64, Op::Sum, dst, 0, &locks, black_box(src))
            })
        });
    }
    group.finish();
}

fn pack(c: &mut Criterion) {
    let f64t = Datatype::basic(BasicType::F64);
    let mut group = c.benchmark_group("pack");
    for n in SIZES {
        let mut vector = Datatype::vector(n, 1, 2, &f64t).expect("valid vector");
        vector.commit();
        let map = vector.type_map(1).expect("valid map");
        let src = vec![1u8; 16 * n];
        let mut dst = vec![0u8; 8 * n];
        group.throughput(Throughput::Bytes(8 * n as u64));
        group.bench_with_input(BenchmarkId::new("vector_f64/pack", n), &n, |b, _| {
            b.iter(|| {
                map.pack(black_box(&src), black_box(&mut dst))
                    .expect("fits")
            })
        });
        group.bench_with_input(BenchmarkId::new("vector_f64/memcpy", n), &n, |b, _| {
            b.iter(|| black_box(&mut dst).copy_from_slice(black_box(&src[..8 * n])))
        });
    }
    group.finish();
}

criterion_group! {
    name = kernels;
    config = Criterion::default().sample_size(30).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = apply_sum, pack
}
criterion_main!(kernels);
