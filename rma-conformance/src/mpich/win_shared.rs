//! Ported from MPICH `test/mpi/rma/win_shared.c`, `win_shared_noncontig.c`,
//! `win_shared_noncontig_put.c` and `win_shared_zerobyte.c`: shared windows
//! (MPI_Win_allocate_shared) with load/store access through MPI_Win_shared_query.
//!
//! - `win_shared`: every rank writes its part with local stores; after a sync and a
//!   barrier every rank reads every part from rank NULL's base (the lowest nonempty
//!   part), which needs the parts contiguous.
//! - `win_shared_noncontig`: the same with `alloc_shared_noncontig`, each part read
//!   through its own query.
//! - `win_shared_noncontig_put`: even ranks expose a part, odd ones none; each even
//!   rank puts into the next even rank's part under fences; every rank checks every
//!   part by load, and that the odd ranks' parts are empty.
//! - `win_shared_zerobyte`: only the first and last ranks expose memory; a store by
//!   rank 0 into its own part is seen by all, the last rank's part stays zero.
//!
//! Adapted: MPICH's tests split off a node communicator first; every rma world that
//! has shared windows is one node, so the ports use the world. Loads and stores go
//! through rma's typed views, not raw pointers. Element counts are smaller (and
//! scaled down under MPI, where each fence costs microseconds); the base-address
//! checks are our additions, as are the is-empty checks where C compares to NULL.

use crate::{scaled, shared_window};
use rma_win::{Assert, Info, Rank, Result, World};

const ELEM_PER_PROC: usize = 1024;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let Some(mut win) = shared_window::<i32>(world, ELEM_PER_PROC, info)? else {
        return Ok(());
    };
    let (me, n) = (world.rank(), world.size());
    let base = win.shared_query(Rank::NULL)?;
    let mine = win.shared_query(Rank::new(me as u32))?;
    assert_eq!(base.len(), ELEM_PER_PROC * 4, "rank NULL's part");
    assert_eq!(base.rank(), 0, "rank NULL gives the lowest nonempty part");
    assert_eq!(
        mine.addr() - base.addr(),
        me * ELEM_PER_PROC * 4,
        "contiguous parts (4096 bytes is a whole number of 64-byte lines)"
    );
    win.lock_all(Assert::NOCHECK)?;
    let view = mine.view::<i32>()?;
    let values: Vec<i32> = (0..ELEM_PER_PROC as i32).collect();
    view.write(0, &values)?;
    win.sync()?;
    world.barrier()?;
    win.sync()?;
    // the whole window as one run of elements from the absolute base: every part
    for r in 0..n {
        let part = win.shared_query(Rank::new(r as u32))?;
        assert_eq!(part.addr(), base.addr() + r * ELEM_PER_PROC * 4);
        let v = part.view::<i32>()?;
        let mut got = vec![0i32; ELEM_PER_PROC];
        v.read(0, &mut got)?;
        assert_eq!(got, values, "rank {r}'s part as rank {me} loads it");
    }
    win.unlock_all()?;
    win.free()
}

pub(crate) fn run_noncontig(world: &World, info: &Info) -> Result<()> {
    let info = info.clone().with("alloc_shared_noncontig", "true");
    let Some(mut win) = shared_window::<i32>(world, ELEM_PER_PROC, &info)? else {
        return Ok(());
    };
    assert_eq!(win.info().get("alloc_shared_noncontig"), Some("true"));
    win.lock_all(Assert::NOCHECK)?;
    let mine = win
        .shared_query(Rank::new(world.rank() as u32))?
        .view::<i32>()?;
    for i in 0..ELEM_PER_PROC {
        mine.store(i, i as i32)?;
    }
    win.sync()?;
    world.barrier()?;
    win.sync()?;
    for r in 0..world.size() {
        let part = win.shared_query(Rank::new(r as u32))?;
        assert_eq!(part.len(), ELEM_PER_PROC * 4);
        assert_eq!(part.disp_unit(), 4);
        let v = part.view::<i32>()?;
        for j in 0..ELEM_PER_PROC {
            assert_eq!(v.load(j)?, j as i32, "rank {r} index {j}");
        }
    }
    win.unlock_all()?;
    win.free()
}

pub(crate) fn run_noncontig_put(world: &World, info: &Info) -> Result<()> {
    let info = info.clone().with("alloc_shared_noncontig", "true");
    let (me, n) = (world.rank(), world.size());
    let count = if me % 2 == 0 { ELEM_PER_PROC } else { 0 };
    let Some(mut win) = shared_window::<i32>(world, count, &info)? else {
        return Ok(());
    };
    let target = if me + 2 > n { 0 } else { (me + 2) % n };
    for i in 0..scaled(ELEM_PER_PROC) {
        win.fence(Assert::NOPRECEDE)?;
        if me % 2 == 0 {
            win.put(&[i as i32], Rank::new(target as u32), i as i64)?;
        }
        win.fence(Assert::NOSUCCEED)?;
    }
    world.barrier()?;
    win.sync()?;
    for r in 0..n {
        let part = win.shared_query(Rank::new(r as u32))?;
        if r % 2 == 0 {
            assert_eq!(part.len(), ELEM_PER_PROC * 4);
            let v = part.view::<i32>()?;
            for j in 0..scaled(ELEM_PER_PROC) {
                assert_eq!(v.load(j)?, j as i32, "rank {r} index {j}");
            }
        } else {
            assert!(part.is_empty(), "rank {r} exposed nothing");
            assert!(part.view::<i32>()?.is_empty());
        }
    }
    win.free()
}

pub(crate) fn run_zerobyte(world: &World, info: &Info) -> Result<()> {
    let (me, n) = (world.rank(), world.size());
    let count = if me == 0 || me == n - 1 { 16 } else { 0 };
    let Some(mut win) = shared_window::<i32>(world, count, info)? else {
        return Ok(());
    };
    let abs = win.shared_query(Rank::NULL)?;
    assert_eq!((abs.rank(), abs.len()), (0, 64), "the lowest nonempty part");
    let bases: Vec<_> = (0..n)
        .map(|r| win.shared_query(Rank::new(r as u32)))
        .collect::<Result<_>>()?;
    for (r, b) in bases.iter().enumerate() {
        assert_eq!(b.len(), if r == 0 || r == n - 1 { 64 } else { 0 });
    }
    win.lock_all(Assert::NOCHECK)?;
    let mine = bases[me].view::<i32>()?;
    mine.write(0, &vec![0; count])?;
    win.sync()?;
    world.barrier()?;
    win.sync()?;
    if me == 0 {
        bases[0].view::<i32>()?.store(0, 1)?;
    }
    win.sync()?;
    world.barrier()?;
    win.sync()?;
    assert_eq!(bases[0].view::<i32>()?.load(0)?, 1, "rank 0's store");
    assert_eq!(
        bases[n - 1].view::<i32>()?.load(0)?,
        0,
        "the last rank's part"
    );
    win.unlock_all()?;
    win.free()
}
