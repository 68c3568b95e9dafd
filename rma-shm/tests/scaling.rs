//! Many ranks as threads: windows over 256 ranks build (one mapping per segment per
//! process), the passive-target lock stays exclusive and fair under that many waiters
//! on a machine with far fewer cores, and a window's control state per rank grows
//! linearly in the ranks (a few hundred bytes per peer without queues).

#![cfg(not(loom))]

use rma_shm::{run_threads, MemoryOptions, ShmWorld, WindowMemory};
use std::sync::atomic::{AtomicU64, Ordering};

/// Every rank takes rank 0's lock exclusively `iters` times and increments a plain
/// counter under it with a load and a store (no atomic read-modify-write): any two
/// holders at once lose an increment, so the final count proves mutual exclusion.
/// Readers in between check that no writer is inside while they are.
fn exclusive_count(n: usize, iters: u64, queues: bool) {
    let counter = AtomicU64::new(0);
    let writers_inside = AtomicU64::new(0);
    let out = run_threads(n, |w: ShmWorld| -> rma_core::Result<()> {
        let mem = WindowMemory::allocate(&w, 64, 8, MemoryOptions { queues })?;
        let live = w.liveness();
        w.barrier()?;
        for i in 0..iters {
            let exclusive = (i + w.rank() as u64) % 4 != 0;
            mem.acquire_lock(0, exclusive, &live)?;
            if exclusive {
                assert_eq!(writers_inside.fetch_add(1, Ordering::SeqCst), 0);
                let v = counter.load(Ordering::Relaxed);
                std::hint::spin_loop();
                counter.store(v + 1, Ordering::Relaxed);
                writers_inside.fetch_sub(1, Ordering::SeqCst);
            } else {
                assert_eq!(
                    writers_inside.load(Ordering::SeqCst),
                    0,
                    "a reader beside a writer"
                );
            }
            mem.release_lock(0, exclusive)?;
        }
        w.barrier()
    })
    .unwrap();
    for (r, o) in out.iter().enumerate() {
        o.as_ref().unwrap_or_else(|e| panic!("rank {r}: {e}"));
    }
    let writes: u64 = (0..n as u64)
        .map(|r| (0..iters).filter(|i| (i + r) % 4 != 0).count() as u64)
        .sum();
    assert_eq!(counter.load(Ordering::SeqCst), writes, "{n} ranks");
}

#[test]
fn the_lock_is_exclusive_at_2_to_256_ranks() {
    for (n, iters) in [(2, 50_000), (3, 20_000), (8, 5000), (33, 500), (256, 40)] {
        exclusive_count(n, iters, false);
    }
}

#[test]
fn windows_over_256_ranks_build_with_and_without_queues() {
    for queues in [false, true] {
        let out = run_threads(256, |w: ShmWorld| -> rma_core::Result<usize> {
            let mem = WindowMemory::allocate(&w, 4096, 8, MemoryOptions { queues })?;
            w.barrier()?;
            Ok(mem.ranks())
        })
        .unwrap();
        assert!(out.iter().all(|r| matches!(r, Ok(256))), "queues {queues}");
    }
}

#[test]
fn control_state_per_rank_is_linear_in_the_ranks() {
    let per_peer = |n: usize, q: bool| {
        let at = |n| WindowMemory::control_bytes(n, q).unwrap() as f64;
        // the growth from n/2 to n ranks, per added peer (the fixed part cancels)
        (at(n) - at(n / 2)) / (n / 2) as f64
    };
    for n in [4, 16, 64, 256, 1024] {
        let atomic = per_peer(n, false);
        let queued = per_peer(n, true);
        eprintln!(
            "{n:>5} ranks: {:>8} B per rank without queues ({atomic:.0} B per added peer), {:>9} B with ({queued:.0} B per added peer)",
            WindowMemory::control_bytes(n, false).unwrap(),
            WindowMemory::control_bytes(n, true).unwrap()
        );
        // pages are whole, so small steps can round up to one more page
        assert!(
            atomic <= 400.0 + 4096.0 / (n / 2) as f64,
            "{n} ranks: {atomic} B per peer"
        );
        assert!(queued <= 2.0 * (64.0 * 1024.0 + 256.0) + 400.0 + 4096.0 / (n / 2) as f64);
    }
    // past the ring floor the queued state per peer is constant too: linear, not more
    let q = |n| WindowMemory::control_bytes(n, true).unwrap();
    assert!(q(1024) <= 2 * q(512) + 4096);
}
