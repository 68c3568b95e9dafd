//! Model-checks the ring protocol with loom on heap memory: every interleaving of one
//! producer and one consumer (within loom's bounds) delivers every record intact and in
//! order, and no data byte is read while it is being written (loom's UnsafeCell tracks
//! each byte). Run with `RUSTFLAGS="--cfg loom" cargo test -p rma-shm --test loom_ring`
//! (`cargo xtask test-all` does).
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use rma_shm::ring::{Ring, RingCtl, RingMem};

/// A 64-byte data area, one tracked cell per byte.
#[derive(Clone)]
struct LoomMem(Arc<Vec<UnsafeCell<u8>>>);

impl LoomMem {
    fn new(cap: usize) -> LoomMem {
        LoomMem(Arc::new((0..cap).map(|_| UnsafeCell::new(0)).collect()))
    }
}

impl RingMem for LoomMem {
    fn cap(&self) -> usize {
        self.0.len()
    }
    fn write(&self, off: usize, src: &[u8]) {
        for (i, b) in src.iter().enumerate() {
            // SAFETY: loom checks that no other thread accesses this cell concurrently;
            // that is exactly what the test verifies.
            self.0[off + i].with_mut(|p| unsafe { *p = *b });
        }
    }
    fn read(&self, off: usize, dst: &mut [u8]) {
        for (i, d) in dst.iter_mut().enumerate() {
            // SAFETY: as in `write`.
            *d = self.0[off + i].with(|p| unsafe { *p });
        }
    }
}

/// Records of `n` bytes with recognisable contents.
fn record(k: u8, n: usize) -> Vec<u8> {
    (0..n as u8).map(|i| i.wrapping_mul(31) ^ k).collect()
}

fn run(sizes: &'static [usize]) {
    // bounded preemptions keep the search to seconds while still covering every
    // ordering of the protocol's few shared accesses that a bug would need
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(move || {
        let ctl = Arc::new(RingCtl::new());
        let mem = LoomMem::new(64);
        let (pctl, pmem) = (ctl.clone(), mem.clone());
        let producer = loom::thread::spawn(move || {
            let ring = Ring::new(&pctl, pmem);
            for (k, &n) in sizes.iter().enumerate() {
                let rec = record(k as u8, n);
                while !ring.try_push(k as u32, &[&rec]).expect("ring intact") {
                    loom::thread::yield_now();
                }
            }
        });
        let ring = Ring::new(&ctl, mem);
        let mut out = Vec::new();
        for (k, &n) in sizes.iter().enumerate() {
            let tag = loop {
                match ring.try_pop(&mut out).expect("ring intact") {
                    Some(t) => break t,
                    None => loom::thread::yield_now(),
                }
            };
            assert_eq!(tag as usize, k, "records arrive in order");
            assert_eq!(out, record(k as u8, n), "record {k} intact");
        }
        producer.join().expect("producer");
        assert!(ring.is_empty());
    });
}

#[test]
fn records_arrive_whole_and_in_order() {
    // 64-byte ring, records of at most 8 bytes (16 with their header): the fourth
    // record fills the ring, the fifth must wait for the consumer to free space and
    // reuses the bytes the first one occupied.
    run(&[8, 3, 8, 8, 8]);
}

#[test]
fn empty_and_odd_sized_records() {
    // the 7-byte record ends 8 bytes short of the end: the next 8-byte record does
    // not fit there and wraps behind a pad header
    run(&[0, 1, 7, 8, 8]);
}
