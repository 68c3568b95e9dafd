//! The backend seam, seen from the recording backend's log: rma-win validates every
//! call before a backend sees it (a refused call never reaches it, so a backend is
//! never asked to undo anything), calls it once per RMA call, and builds fence, locks
//! and free from the primitives rma-core's contract names.

use rma_conformance::recording::{self, Call};
use rma_win::{Assert, ErrorClass, Info, LockType, Op, Rank, Window};

/// The calls rank `rank` made, as (what, peer) pairs, without window creation (the
/// backend's allocate, and the allgather in which the ranks compare their conflict
/// checking modes; this test makes no other allgather).
fn made_by(calls: &[Call], rank: usize) -> Vec<(&'static str, Option<usize>)> {
    calls
        .iter()
        .filter(|c| c.rank == rank && c.what != "allocate" && c.what != "allgather")
        .map(|c| (c.what, c.peer))
        .collect()
}

#[test]
fn refused_calls_never_reach_the_backend_and_valid_ones_reach_it_once() {
    let (results, log) = recording::run_threads(2, |world| -> rma_win::Result<()> {
        // displacement unit 0: refused on every rank before anything collective
        let refused = Window::allocate_bytes(&world, 8, 0, &Info::new());
        assert_eq!(refused.unwrap_err().class(), ErrorClass::Disp);
        let win = Window::allocate::<u64>(&world, 4, &Info::new())?;
        if world.rank() == 0 {
            let err = |r: rma_win::Result<()>| r.unwrap_err().class();
            // no epoch: RMA_SYNC
            assert_eq!(err(win.put(&[1u64], Rank::new(1), 0)), ErrorClass::RmaSync);
            win.lock(LockType::Exclusive, Rank::new(1), Assert::NONE)?;
            // past the end, a rank outside the world, a misaligned accumulate
            assert_eq!(err(win.put(&[1u64], Rank::new(1), 4)), ErrorClass::RmaRange);
            assert_eq!(err(win.put(&[1u64], Rank::new(2), 0)), ErrorClass::Rank);
            win.put(&[5u64], Rank::new(1), 1)?;
            win.accumulate(&[2u64], Rank::new(1), 1, Op::Sum)?;
            assert_eq!(win.fetch_and_op(0u64, Rank::new(1), 1, Op::NoOp)?, 7);
            win.unlock(Rank::new(1))?;
        }
        win.fence(Assert::NONE)?;
        Ok(())
    });
    for r in results {
        r.unwrap();
    }
    let calls = log.calls();
    let zero = made_by(&calls, 0);
    assert_eq!(
        zero,
        [
            ("acquire_lock", Some(1)),
            ("put", Some(1)),
            ("accumulate", Some(1)),
            ("fetch_and_op", Some(1)),
            ("flush", Some(1)),
            ("release_lock", Some(1)),
            ("flush_all", None),
            ("barrier", None),
        ],
        "rank 0's calls as the backend saw them"
    );
    assert_eq!(
        made_by(&calls, 1),
        [("flush_all", None), ("barrier", None)],
        "rank 1 only fenced"
    );
    // the refused allocation never reached the backend: one window on each rank
    let allocations: Vec<_> = calls.iter().filter(|c| c.what == "allocate").collect();
    assert_eq!(allocations.len(), 2, "{allocations:?}");
    assert!(allocations.iter().all(|c| c.bytes == 32), "{allocations:?}");
}

#[test]
fn a_created_window_gives_its_contents_back_at_free_only() {
    let (results, _log) = recording::run_threads(2, |world| -> rma_win::Result<[u64; 2]> {
        let mut freed = [1u64, 2];
        let mut win = Window::create(&world, &mut freed, &Info::new())?;
        win.fence(Assert::NONE)?;
        let peer = Rank::new((1 - world.rank()) as u32);
        win.accumulate(&[10u64], peer, 0, Op::Sum)?;
        win.fence(Assert::NONE)?;
        win.free()?;
        drop(win);
        let mut dropped = [1u64, 2];
        let win = Window::create(&world, &mut dropped, &Info::new())?;
        win.fence(Assert::NONE)?;
        win.accumulate(&[10u64], peer, 0, Op::Sum)?;
        win.fence(Assert::NONE)?;
        drop(win); // without free: the buffer keeps its old contents
        assert_eq!(dropped, [1, 2]);
        Ok(freed)
    });
    for r in results {
        assert_eq!(r.unwrap(), [11, 2]);
    }
}

#[test]
fn a_panicking_rank_is_a_dead_peer_to_the_others() {
    let outcome = std::panic::catch_unwind(|| {
        recording::run_threads(2, |world| -> rma_win::Result<()> {
            let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
            if world.rank() == 1 {
                panic!("rank 1 fails on purpose");
            }
            let e = win.fence(Assert::NONE).unwrap_err();
            assert_eq!(e.class(), ErrorClass::ProcFailed, "{e}");
            Ok(())
        })
    });
    // rank 1's panic is resumed once rank 0 has seen it as a dead peer and returned
    assert!(outcome.is_err());
}

#[test]
fn a_backend_that_misreports_shapes_is_an_error_not_a_panic() {
    let (results, _log) = recording::run_threads_dropping_a_shape(2, |world| {
        Window::allocate::<u64>(&world, 4, &Info::new()).map(drop)
    });
    for r in results {
        let e = r.unwrap_err();
        assert_eq!(e.class(), ErrorClass::Intern, "{e}");
        assert!(
            e.to_string().contains("1 window shapes for a world of 2"),
            "{e}"
        );
    }
}

/// The shipped backends are public, so their own windows must stay sound without
/// rma-win's checks: a shared-memory window used after its free is refused (class WIN)
/// instead of writing into memory a peer may have freed (review finding: a created
/// window's copy is freed when its owner drops the window).
#[test]
fn a_backend_window_used_after_its_free_is_refused() {
    use rma_core::{Access, Backend, Contiguous, Epochs, Transport, WinInfo};
    let results = rma_win::run_threads(2, |world| -> rma_win::Result<()> {
        let mut buf = vec![0u8; 64];
        let parsed = WinInfo::from_info(&Info::new())?;
        let mut win = world.backend().create(&mut buf, 1, &Info::new(), &parsed)?;
        win.free()?;
        let peer = Rank::new((1 - world.rank()) as u32);
        let at = Access {
            target: peer,
            base: 0,
            layout: &Contiguous(8),
            exclusive: false,
        };
        assert_eq!(
            win.put(at, &[0xAA; 8]).unwrap_err().class(),
            ErrorClass::Win
        );
        assert_eq!(
            win.acquire_lock(1, true).unwrap_err().class(),
            ErrorClass::Win
        );
        assert_eq!(win.free().unwrap_err().class(), ErrorClass::Win);
        drop(win);
        world.barrier()
    })
    .unwrap();
    for r in results {
        r.unwrap();
    }
}

/// A window's free is the window's own collective on the recording backend too: a peer
/// in a world barrier does not match it (review finding), both get PROC_FAILED.
#[test]
fn a_free_against_a_barrier_is_an_error_on_both_ranks() {
    let (results, _log) = recording::run_threads(2, |world| -> rma_win::Result<()> {
        let mut win = Window::allocate::<u64>(&world, 1, &Info::new())?;
        if world.rank() == 0 {
            win.free()
        } else {
            world.barrier()
        }
    });
    for r in results {
        let e = r.unwrap_err();
        assert_eq!(e.class(), ErrorClass::ProcFailed, "{e}");
        assert!(e.to_string().contains("different collectives"), "{e}");
    }
}

/// A backend from outside rma offers target handles a fast path
/// (`Transport::fast_path`): a handle's calls go there, resolved once, with the same
/// checks before them and the same results; a refused call reaches neither road.
#[test]
fn a_plugged_backends_fast_path_serves_target_handles() {
    let (results, log) =
        recording::run_threads_with_fast_paths(2, |world| -> rma_win::Result<()> {
            let win = Window::allocate::<u64>(&world, 4, &Info::new())?;
            world.barrier()?;
            if world.rank() == 0 {
                let epoch = win.lock_all_epoch(Assert::NONE)?;
                let h = epoch.target(Rank::new(1))?;
                h.put(&[5u64], 1)?;
                h.add(&[2u64], 1)?;
                assert_eq!(h.fetch_add(1u64, 1)?, 7);
                assert_eq!(h.compare_and_swap(9u64, 8u64, 1)?, 8);
                let mut back = [0u64];
                h.get(&mut back, 1)?;
                assert_eq!(back, [9]);
                // refused before any road: past the window's end
                assert_eq!(h.put(&[1u64], 4).unwrap_err().class(), ErrorClass::RmaRange);
                h.flush()?;
                epoch.unlock()?;
            }
            world.barrier()?;
            if world.rank() == 1 {
                assert_eq!(win.local_vec::<u64>()?, [0, 9, 0, 0]);
            }
            world.barrier()?;
            Ok(())
        });
    results
        .into_iter()
        .collect::<rma_win::Result<Vec<_>>>()
        .unwrap();
    let calls = log.calls();
    let rank0: Vec<&'static str> = made_by(&calls, 0).into_iter().map(|(w, _)| w).collect();
    for fast in [
        "fast put",
        "fast accumulate",
        "fast fetch_and_op",
        "fast compare_and_swap",
        "fast get",
        "fast flush",
    ] {
        assert_eq!(
            rank0.iter().filter(|w| **w == fast).count(),
            1,
            "{fast} once in {rank0:?}"
        );
    }
    // no data call of rank 0 took the transport's road
    for slow in [
        "put",
        "accumulate",
        "fetch_and_op",
        "compare_and_swap",
        "get",
        "flush",
    ] {
        assert!(!rank0.contains(&slow), "{slow} in {rank0:?}");
    }
}
