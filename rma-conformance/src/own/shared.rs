//! Shared windows (`Window::allocate_shared`, `shared_query`, typed views), on every
//! transport and launch mode: every RMA call on a shared window with exact results,
//! seen through views; views of every rank's part used by every rank at once with exact
//! counts and flag-ordered data; every misuse refused with its class and nothing
//! changed.

use crate::{expect_class, scaled, shared_window};
use rma_win::{Assert, ErrorClass, Info, LockType, Op, Rank, Result, Window, World};

/// Every RMA call on a shared window (through the MPI-faithful calls and a target
/// handle), each result checked through rank 0's part as a view, and the views'
/// stores seen by the RMA calls.
pub(crate) fn every_call(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    // rank 0's part: 0 counter (fetch_and_op), 1 CAS slot, 2..2+p put slots,
    // 2+p..2+2p accumulate slots, 2+2p handle counter, 3+2p a value stored by view
    let len = 2 * p + 4;
    let Some(win) = shared_window::<u64>(world, len, info)? else {
        return Ok(());
    };
    let zero = Rank::new(0);
    let part0 = win.shared_query(zero)?.view::<u64>()?;
    if me == 0 {
        part0.store(3 + 2 * p, 4242)?; // a load/store write, read back by RMA below
    }
    world.barrier()?;
    win.lock_all(Assert::NONE)?;
    let rounds = scaled(100u64);
    for i in 0..rounds {
        win.fetch_and_op(1u64, zero, 0, Op::Sum)?;
        win.accumulate(&[i + 1], zero, (2 + p + me) as i64, Op::Sum)?;
    }
    let mut old = [0u64];
    win.get_accumulate(&[0u64], &mut old, zero, (2 + p + me) as i64, Op::NoOp)?;
    assert_eq!(
        old[0],
        rounds * (rounds + 1) / 2,
        "rank {me}'s own sum, fetched"
    );
    let won = win.compare_and_swap(me as u64 + 1, 0u64, zero, 1)? == 0;
    win.put(&[me as u64 * 3 + 1], zero, (2 + me) as i64)?;
    win.flush(zero)?;
    let mut seen = [0u64];
    win.get(&mut seen, zero, (3 + 2 * p) as i64)?;
    win.flush(zero)?;
    assert_eq!(seen[0], 4242, "a view's store, read by get");
    let req = win.rget_accumulate(&[5u64], &mut old, zero, (2 + 2 * p) as i64, Op::Sum)?;
    req.wait()?;
    win.unlock_all()?;
    {
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        let h = epoch.target(zero)?;
        h.fetch_add(7u64, (2 + 2 * p) as i64)?;
        h.flush()?;
        epoch.unlock()?;
    }
    let wins = world.allgather(&[u8::from(won)])?;
    assert_eq!(
        wins.iter().filter(|w| w == &&[1u8]).count(),
        1,
        "one CAS winner"
    );
    world.barrier()?;
    win.sync()?;
    // every rank checks rank 0's part by load
    assert_eq!(
        part0.load(0)?,
        rounds * p as u64,
        "every fetch_and_op counted"
    );
    let cas = part0.load(1)?;
    assert!((1..=p as u64).contains(&cas), "the CAS slot holds a winner");
    for r in 0..p {
        assert_eq!(part0.load(2 + r)?, r as u64 * 3 + 1, "rank {r}'s put");
        assert_eq!(
            part0.load(2 + p + r)?,
            rounds * (rounds + 1) / 2,
            "rank {r}'s accumulates"
        );
    }
    assert_eq!(
        part0.load(2 + 2 * p)?,
        12 * p as u64,
        "request and handle adds"
    );
    world.barrier()?;
    let mut win = win;
    win.free()
}

/// Views of every rank's part, used by every rank at once: fetch_add counters give
/// exact totals, compare-and-swap elects one winner per part, narrow elements that
/// share a word keep each rank's bits, and data stored before a flag (release) is
/// seen by whoever loads the flag (acquire).
pub(crate) fn views_concurrently(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    // per part: u64 [0] counter, [1] CAS winner, [2] data, [3] flag; then p u8 bytes
    let words = 4 + p.div_ceil(8);
    let Some(win) = shared_window::<u64>(world, words, info)? else {
        return Ok(());
    };
    let parts: Vec<_> = (0..p)
        .map(|r| win.shared_query(Rank::new(r as u32)))
        .collect::<Result<_>>()?;
    let views: Vec<_> = parts
        .iter()
        .map(|s| s.view::<u64>())
        .collect::<Result<_>>()?;
    let bytes: Vec<_> = parts
        .iter()
        .map(|s| s.view::<u8>())
        .collect::<Result<_>>()?;
    world.barrier()?;
    let n = scaled(20_000u64);
    for i in 0..n {
        let r = (me + i as usize) % p;
        views[r].fetch_add(0, 1)?;
    }
    for (r, v) in views.iter().enumerate() {
        let _ = v.compare_and_swap(1, me as u64 + 1, 0)?;
        // each rank's own byte of every part, in words other ranks update at once
        bytes[r].fetch_or(32 + me, 1 << (me % 8))?;
        bytes[r].fetch_add(32 + me, 2)?;
    }
    // data then flag into the next rank's part; that rank waits for its flag
    let next = (me + 1) % p;
    views[next].store(2, 1000 + me as u64)?;
    views[next].store(3, 1)?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while views[me].load(3)? == 0 {
        assert!(std::time::Instant::now() < deadline, "flag never came");
        std::thread::yield_now();
    }
    let prev = (me + p - 1) % p;
    assert_eq!(
        views[me].load(2)?,
        1000 + prev as u64,
        "data stored before the flag"
    );
    world.barrier()?;
    for (r, v) in views.iter().enumerate() {
        // each i of every rank's loop reaches every part once over the ranks
        assert_eq!(v.load(0)?, n, "part {r}'s counter");
        let w = v.load(1)?;
        assert!((1..=p as u64).contains(&w), "part {r} has one CAS winner");
        for q in 0..p {
            assert_eq!(
                bytes[r].load(32 + q)?,
                (1u8 << (q % 8)) + 2,
                "rank {q}'s byte of part {r}"
            );
        }
    }
    world.barrier()?;
    let mut win = win;
    win.free()
}

/// Misuse of shared windows and their views, each refused with its class, and nothing
/// changed by a refused call.
pub(crate) fn misuse(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let plain = Window::allocate::<u64>(world, 2, info)?;
    expect_class(plain.shared_query(Rank::new(0)), ErrorClass::RmaFlavor);
    let Some(mut win) = shared_window::<u32>(world, 3, info)? else {
        return Ok(());
    };
    expect_class(win.shared_query(Rank::new(p as u32)), ErrorClass::Rank);
    let part = win.shared_query(Rank::new(me as u32))?;
    assert_eq!((part.len(), part.disp_unit()), (12, 4));
    let v = part.view::<u32>()?;
    v.write(0, &[1, 2, 3])?;
    expect_class(v.load(3), ErrorClass::RmaRange);
    expect_class(v.store(3, 9), ErrorClass::RmaRange);
    expect_class(v.fetch_add(usize::MAX, 1), ErrorClass::RmaRange);
    expect_class(v.write(2, &[7, 7]), ErrorClass::RmaRange);
    let mut two = [0u32; 2];
    expect_class(v.read(2, &mut two), ErrorClass::RmaRange);
    expect_class(part.write_bytes(10, &[1, 2, 3]), ErrorClass::RmaRange);
    // a view of wider elements holds the whole ones that fit: one u64 of 12 bytes
    let wide = part.view::<u64>()?;
    assert_eq!(wide.len(), 1);
    expect_class(wide.load(1), ErrorClass::RmaRange);
    let mut all = [0u32; 3];
    v.read(0, &mut all)?;
    assert_eq!(all, [1, 2, 3], "refused calls changed nothing");
    expect_class(
        win.set_info(&Info::new().with("accumulate_ordering", "sideways")),
        ErrorClass::Info,
    );
    world.barrier()?;
    win.lock(LockType::Shared, Rank::new(0), Assert::NONE)?;
    win.unlock(Rank::new(0))?;
    world.barrier()?;
    win.free()?;
    expect_class(win.shared_query(Rank::new(0)), ErrorClass::Win);
    let mut plain = plain;
    plain.free()
}
