//! Ranks as `usize`: every call that takes a rank takes `impl Into<Rank>`, so the
//! indices `World::rank()` and `World::size()` give go in as they are, and an index no
//! window has is refused with class RANK (never taken for the null rank).

use rma_win::{Assert, ErrorClass, Info, LockType, Op, Rank, Window};

#[test]
fn usize_ranks_reach_the_same_targets_as_rank_values() {
    let results = rma_win::run_threads(3, |world| -> rma_win::Result<u64> {
        let (me, p) = (world.rank(), world.size());
        let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
        win.fence(Assert::NONE)?;
        let right = (me + 1) % p;
        win.accumulate(&[1u64], right, 0, Op::Sum)?;
        win.accumulate(&[10u64], Rank::new(right as u32), 0, Op::Sum)?;
        win.fence(Assert::NONE)?;
        win.lock(LockType::Shared, me, Assert::NONE)?;
        let mine = win.fetch_and_op(0u64, me, 0, Op::NoOp)?;
        win.unlock(me)?;
        // an index past every rank: RANK, not the null rank's silent no-op
        let e = win
            .lock(LockType::Shared, usize::MAX, Assert::NONE)
            .unwrap_err();
        assert_eq!(e.class(), ErrorClass::Rank, "{e}");
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        assert_eq!(epoch.target(me)?.fetch::<u64>(0)?, mine);
        epoch.unlock()?;
        win.fence(Assert::NONE)?;
        Ok(mine)
    })
    .unwrap();
    for r in results {
        assert_eq!(r.unwrap(), 11);
    }
}
