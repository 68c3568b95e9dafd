//! A window created over a rank's buffer with ranks as threads: the other threads
//! write into an aligned copy that goes back into the buffer at the collective free,
//! never into the buffer itself, so a rank that drops its window early (an error
//! path's `?`, `mem::forget`) gets its buffer back untouched while the others still
//! write. Before the copy, that was a data race reachable from safe code.

use rma_win::{run_threads, Assert, Info, Op, Rank, Result, Window, World};

const RANKS: usize = 4;
const CALLS: u64 = 2000;

/// Every rank adds 1 to slot 0 of every rank's created window; after `free` each
/// buffer holds the sum.
fn free_copies_back(world: &World) -> Result<()> {
    let mut buf = vec![0u64; 4];
    {
        let mut win = Window::create(world, &mut buf, &Info::new())?;
        win.fence(Assert::NONE)?;
        for r in 0..world.size() {
            win.accumulate(&[1u64], Rank::new(r as u32), 0, Op::Sum)?;
        }
        win.fence(Assert::NONE)?;
        win.free()?;
    }
    assert_eq!(
        buf,
        [RANKS as u64, 0, 0, 0],
        "the window's memory came back"
    );
    Ok(())
}

/// Rank 0 drops its window right away, without the free; the others then accumulate
/// into rank 0's window. Rank 0's buffer must stay as it was.
fn early_drop_leaves_the_buffer(world: &World) -> Result<()> {
    let me = world.rank();
    let mut buf = vec![7u64; 4];
    let win = Window::create(world, &mut buf, &Info::new())?;
    world.barrier()?;
    if me == 0 {
        drop(win);
    } else {
        win.lock_all(Assert::NONE)?;
        for _ in 0..CALLS {
            win.accumulate(&[1u64, 1], Rank::new(0), 1, Op::Sum)?;
        }
        win.unlock_all()?;
        drop(win); // leaving without the free as well
    }
    world.barrier()?;
    assert_eq!(buf, [7u64; 4], "rank {me}'s buffer is untouched");
    Ok(())
}

#[test]
fn created_windows_with_ranks_as_threads() {
    let results = run_threads(RANKS, |world| {
        free_copies_back(&world)?;
        early_drop_leaves_the_buffer(&world)
    })
    .expect("threads ran");
    for (r, res) in results.into_iter().enumerate() {
        res.unwrap_or_else(|e| panic!("rank {r}: {e}"));
    }
}
