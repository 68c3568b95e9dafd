//! A chunk lock of the atomicity domain held by a live holder that never lets go (a
//! process stopped with SIGSTOP or in a debugger, or a lock word another process
//! overwrote with a live pid): the accumulate waiting for it ends in
//! `Error::Stalled` (class INTERN) after `RMA_STALL_MS`, on both transports, instead
//! of spinning forever. (A dead holder is taken over: see winmem.rs's tests.)

use crate::winmem::{MemoryOptions, WindowMemory};
use rma_core::{Access, BasicType, Contiguous, Error, ErrorClass, Op, Rank, Result, Transport};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The stall bound these tests run with (nextest runs each test in its own process,
/// so it is read here first; under plain `cargo test` the default may be in force,
/// and the test only takes longer).
fn short_stall() {
    std::env::set_var(rma_core::ENV_STALL_MS, "300");
}

/// A bulk accumulate (8 f64: takes the chunk lock).
fn bulk() -> (Contiguous, Vec<u8>) {
    (
        Contiguous(64),
        [1.0f64; 8].iter().flat_map(|v| v.to_ne_bytes()).collect(),
    )
}

fn access(layout: &Contiguous, target: usize) -> Access<'_> {
    Access {
        target: Rank::new(target as u32),
        base: 0,
        layout,
        exclusive: false,
    }
}

fn expect_stalled(r: &Result<Duration>) {
    match r {
        Err(e @ Error::Stalled { .. }) => assert_eq!(e.class(), ErrorClass::Intern),
        other => panic!("expected a stalled error, got {other:?}"),
    }
}

#[test]
fn a_chunk_lock_held_by_a_live_holder_is_a_stalled_error_atomic() {
    short_stall();
    let out = crate::run_threads(2, |world| -> Result<Duration> {
        let mem = Arc::new(WindowMemory::allocate(
            &world,
            64,
            8,
            MemoryOptions { queues: false },
        )?);
        let t = crate::AtomicTransport::new(mem.clone())?;
        world.barrier()?;
        if world.rank() == 0 {
            // a live process (this one) "holds" the chunk of rank 1's element 0
            mem.chunk_lock_word(1, 0)
                .store(std::process::id(), Ordering::Release);
        }
        world.barrier()?;
        let mut r = Ok(Duration::ZERO);
        if world.rank() == 0 {
            let (layout, data) = bulk();
            let started = Instant::now();
            r = t
                .accumulate(access(&layout, 1), BasicType::F64, Op::Sum, &data)
                .map(|()| started.elapsed());
            if r.is_err() {
                let waited = started.elapsed();
                assert!(waited < Duration::from_secs(20), "waited {waited:?}");
            }
            // the window is unchanged: the stalled call applied nothing
            let mut v = [0u8; 8];
            t.get(access(&Contiguous(8), 1), &mut v)?;
            assert_eq!(f64::from_ne_bytes(v), 0.0);
            mem.chunk_lock_word(1, 0).store(0, Ordering::Release);
        }
        world.barrier()?;
        r
    })
    .expect("run_threads");
    expect_stalled(&out[0]);
}

#[test]
fn a_chunk_lock_held_by_a_live_holder_is_a_stalled_error_queued() {
    short_stall();
    let out = crate::run_threads(2, |world| -> Result<()> {
        let mem = Arc::new(WindowMemory::allocate(
            &world,
            64,
            8,
            MemoryOptions { queues: true },
        )?);
        let t = crate::QueuedTransport::new(mem.clone(), world.liveness())?;
        world.barrier()?;
        if world.rank() == 1 {
            // rank 1's own progress engine will find its chunk held
            mem.chunk_lock_word(1, 0)
                .store(std::process::id(), Ordering::Release);
        }
        world.barrier()?;
        let mut r = Ok(());
        if world.rank() == 0 {
            let (layout, data) = bulk();
            r = t
                .accumulate(access(&layout, 1), BasicType::F64, Op::Sum, &data)
                .and_then(|()| t.flush(Rank::new(1)));
        }
        world.barrier()?;
        r
    })
    .expect("run_threads");
    let e = out[0]
        .as_ref()
        .expect_err("the stalled accumulate must fail at the origin");
    assert_eq!(e.class(), ErrorClass::Intern, "{e}");
    assert!(
        e.to_string().contains("chunk lock"),
        "the error names the cause: {e}"
    );
}
