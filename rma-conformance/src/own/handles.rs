//! Epochs as values and target handles (`lock_all_epoch`, `lock_epoch`, `fence_epoch`,
//! `start_epoch` / `post_epoch`, `TargetHandle`): every handle call with exact results,
//! on every transport and launch mode; the runtime calls that would end a guarded epoch
//! are refused; a dropped guard ends what it can.

use crate::{create_info, expect_class, scaled};
use rma_win::{Assert, ErrorClass, Group, Info, LockType, Op, Rank, Result, Window, World};

/// A ticket counter and a histogram under one lock_all epoch, through handles: every
/// rank's tickets are distinct and cover 0..n*p exactly; sums, bitwise ops, swap,
/// compare-and-swap and put/get each leave exact values.
pub(crate) fn lock_all_handles(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let n = scaled(200u64);
    // element 0: ticket counter; 1..=p: per-rank sums; p+1: OR of bits; p+2: XOR;
    // p+3: CAS slot; p+4..p+4+p: one put slot per rank
    let len = 2 * p + 4;
    let win = Window::allocate::<u64>(world, len, info)?;
    win.fence(Assert::NONE)?; // zeroed on every rank before anyone adds
    let epoch = win.lock_all_epoch(Assert::NONE)?;
    let zero = epoch.target(Rank::new(0))?;
    let mut tickets = Vec::with_capacity(n as usize);
    for i in 0..n {
        tickets.push(zero.fetch_add(1u64, 0)?);
        zero.add(&[i + 1], (1 + me) as i64)?;
    }
    zero.fetch_or(1u64 << me, (p + 1) as i64)?;
    zero.fetch_xor(0b11u64 << me, (p + 2) as i64)?;
    // exactly one rank wins the CAS from 0 to its rank + 1 (a 4-byte element at the
    // start of the slot: Open MPI 4's osc/rdma crashes on 8-byte compare-and-swap, a
    // defect rma-mpi refuses to run into)
    let won = zero.compare_and_swap(me as u32 + 1, 0u32, (p + 3) as i64)? == 0;
    zero.put(&[me as u64 * 10 + 7], (p + 4 + me) as i64)?;
    zero.flush()?;
    let mut back = [0u64];
    zero.get(&mut back, (p + 4 + me) as i64)?;
    assert_eq!(
        back[0],
        me as u64 * 10 + 7,
        "rank {me}: its own put, read back"
    );
    epoch.unlock()?;
    assert!(tickets.windows(2).all(|w| w[0] < w[1]), "tickets increase");
    let wins = world.allgather(&[u8::from(won)])?;
    assert_eq!(
        wins.iter().filter(|w| w == &&[1u8]).count(),
        1,
        "exactly one rank won the compare-and-swap"
    );
    win.fence(Assert::NONE)?;
    if me == 0 {
        let got = win.local_vec::<u64>()?;
        let total = n * p as u64;
        assert_eq!(got[0], total, "every fetch_add counted once");
        for r in 0..p {
            assert_eq!(got[1 + r], n * (n + 1) / 2, "rank {r}'s sum");
            assert_eq!(got[p + 4 + r], r as u64 * 10 + 7, "rank {r}'s put");
        }
        let all: u64 = (0..p).map(|r| 1u64 << r).fold(0, |a, b| a | b);
        assert_eq!(got[p + 1], all, "OR of every rank's bit");
        let xor = (0..p).map(|r| 0b11u64 << r).fold(0, |a, b| a ^ b);
        assert_eq!(got[p + 2], xor, "XOR of every rank's bits");
        let mut mark = [0u32];
        win.read_local(2 * (p + 3), &mut mark)?; // the slot's first 4 bytes
        assert!(
            (1..=p as u32).contains(&mark[0]),
            "the CAS winner's mark {mark:?}"
        );
    }
    win.fence(Assert::NONE)?;
    Ok(())
}

/// Exclusive lock epochs through a handle: a non-atomic read-modify-write (get, add
/// one, put) under the lock loses no update.
pub(crate) fn lock_handles(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let n = scaled(100u64);
    let win = Window::allocate::<u64>(world, 1, info)?;
    win.fence(Assert::NONE)?;
    for _ in 0..n {
        let epoch = win.lock_epoch(LockType::Exclusive, Rank::new(0), Assert::NONE)?;
        let h = epoch.target(Rank::new(0))?;
        let mut v = [0u64];
        h.get(&mut v, 0)?;
        h.put(&[v[0] + 1], 0)?;
        epoch.unlock()?;
    }
    // a handle of a lock epoch reaches its target only, and no other lock opens under
    // the guard (its unlock would clear the guard's epoch state)
    if p > 1 {
        let epoch = win.lock_epoch(LockType::Shared, Rank::new(0), Assert::NONE)?;
        expect_class(epoch.target(Rank::new(1)).map(drop), ErrorClass::RmaSync);
        expect_class(
            win.lock(LockType::Exclusive, Rank::new(1), Assert::NONE),
            ErrorClass::RmaSync,
        );
        expect_class(
            win.lock_epoch(LockType::Shared, Rank::new(1), Assert::NONE)
                .map(drop),
            ErrorClass::RmaSync,
        );
        epoch.unlock()?;
    }
    win.fence(Assert::NONE)?;
    if me == 0 {
        assert_eq!(win.local_vec::<u64>()?[0], n * p as u64, "no update lost");
    }
    win.fence(Assert::NONE)?;
    Ok(())
}

/// Fence epochs as values, chained: each epoch's puts are visible after the next
/// fence; a handle of each; NOSUCCEED closes the chain.
pub(crate) fn fence_handles(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let right = Rank::new(((me + 1) % p) as u32);
    let left = ((me + p - 1) % p) as u64;
    let mut buf = vec![0u64; 5];
    let mut win = Window::create(world, &mut buf, &create_info(world, info))?;
    let mut epoch = win.fence_epoch(Assert::NONE)?;
    for round in 0..4u64 {
        let h = epoch.target(right)?;
        h.put(&[100 * round + me as u64], round as i64)?;
        h.add(&[1u64], 4)?;
        epoch = epoch.fence(Assert::NONE)?;
        let mut got = [0u64; 5];
        win.read_local(0, &mut got)?;
        // element `round` is written in this epoch only (the adds of element 4 from a
        // neighbour already in the next epoch may land at any time)
        assert_eq!(got[round as usize], 100 * round + left, "round {round}");
    }
    // the guarded epoch cannot be ended behind the guard's back
    expect_class(win.fence(Assert::NONE), ErrorClass::RmaSync);
    epoch.end(Assert::NONE)?;
    win.free()?;
    drop(win);
    assert_eq!(
        buf,
        [left, 100 + left, 200 + left, 300 + left, 4],
        "free copied it back"
    );
    Ok(())
}

/// Post/start epochs as values on a ring: each rank exposes to its left neighbour and
/// accesses its right one; a start-epoch handle waits for the post.
pub(crate) fn pscw_handles(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let right = (me + 1) % p;
    let left = (me + p - 1) % p;
    let win = Window::allocate::<u64>(world, 2, info)?;
    for round in 1..=3u64 {
        let exposed = win.post_epoch(&Group::new(&[left])?, Assert::NONE)?;
        let access = win.start_epoch(&Group::new(&[right])?, Assert::NONE)?;
        let h = access.target(Rank::new(right as u32))?;
        h.add(&[round], 0)?;
        h.put(&[me as u64 + 10 * round], 1)?;
        // an access-epoch handle completes at complete(), not with flush
        expect_class(h.flush(), ErrorClass::RmaSync);
        access.complete()?;
        // the exposure epoch cannot be ended behind the guard's back
        expect_class(win.wait(), ErrorClass::RmaSync);
        exposed.wait()?;
        let mut got = [0u64; 2];
        win.read_local(0, &mut got)?;
        assert_eq!(got, [round * (round + 1) / 2, left as u64 + 10 * round]);
    }
    win.fence(Assert::NONE)?;
    Ok(())
}

/// A guard dropped without being ended: a passive epoch is unlocked (the next
/// lock_all works), a fence epoch stays open for the window's next fence; runtime calls
/// that would end a guarded epoch are refused while it lives; bad targets are refused.
pub(crate) fn dropped_guards(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let win = Window::allocate::<u64>(world, 1, info)?;
    win.fence(Assert::NONE)?;
    {
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        expect_class(win.unlock_all(), ErrorClass::RmaSync);
        expect_class(
            win.lock_all_epoch(Assert::NONE).map(drop),
            ErrorClass::RmaSync,
        );
        expect_class(
            epoch.target(Rank::new(p as u32)).map(drop),
            ErrorClass::Rank,
        );
        expect_class(epoch.target(Rank::NULL).map(drop), ErrorClass::Rank);
        let h = epoch.target(Rank::new(0))?;
        expect_class(h.put(&[1u64], 1), ErrorClass::RmaRange);
        expect_class(h.put(&[1u64], -1), ErrorClass::Disp);
        h.add(&[1u64], 0)?;
        // dropped here: unlocked
    }
    let epoch = win.lock_all_epoch(Assert::NONE)?;
    epoch.unlock()?;
    world.barrier()?;
    {
        let epoch = win.fence_epoch(Assert::NONE)?;
        epoch.target(Rank::new(0))?.add(&[1u64], 0)?;
        // no other access epoch may open under the guard (it would end the fence
        // epoch behind its handles' back)
        expect_class(
            win.lock_epoch(LockType::Shared, Rank::new(0), Assert::NONE)
                .map(drop),
            ErrorClass::RmaSync,
        );
        expect_class(
            win.lock(LockType::Shared, Rank::new(0), Assert::NONE),
            ErrorClass::RmaSync,
        );
        // dropped without its fence: the epoch stays open for win.fence
    }
    win.fence(Assert::NONE)?;
    if me == 0 {
        assert_eq!(win.local_vec::<u64>()?[0], 2 * p as u64);
    }
    expect_class(
        win.fence_epoch(Assert::NOSUCCEED).map(drop),
        ErrorClass::Assert,
    );
    win.fence(Assert::NONE)?;
    Ok(())
}

/// Handle calls on elements of every width and on floats, in a byte window
/// (displacement unit 1): each transport's fast path, and its fallbacks (a library
/// defect rma-mpi works around, such as MPICH's UCX path issuing a float
/// fetch_and_op as a get_accumulate), give exact sums.
pub(crate) fn element_type_handles(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let n = scaled(40u64).min(60); // i8 sums stay below 128 with up to 2 additions each
    let win = Window::allocate::<u8>(world, 64, info)?;
    win.fence(Assert::NONE)?;
    let epoch = win.lock_all_epoch(Assert::NONE)?;
    let zero = epoch.target(Rank::new(0))?;
    let mut counts = Vec::with_capacity(n as usize);
    for _ in 0..n {
        zero.fetch_add(1.5f64, 0)?; // bytes 0..8
        counts.push(zero.fetch_add(1i16, 8)?); // bytes 8..10
        zero.add(&[0.5f32], 12)?; // bytes 12..16
        zero.add(&[2u16], 16)?; // bytes 16..18
        zero.fetch_add(1u32, 20)?; // bytes 20..24
    }
    if me < 2 {
        zero.fetch_add(1i8, 24)?;
    }
    // one rank swaps a 4-byte slot from 0 to its mark
    let won = zero.compare_and_swap(me as i32 + 1, 0i32, 28)? == 0;
    zero.flush()?;
    let mut f = [0f64];
    zero.get(&mut f, 0)?;
    assert!(
        f[0] >= 1.5 * n as f64,
        "rank {me}: at least its own additions"
    );
    epoch.unlock()?;
    assert!(
        counts.windows(2).all(|w| w[0] < w[1]),
        "i16 tickets increase"
    );
    let wins = world.allgather(&[u8::from(won)])?;
    assert_eq!(
        wins.iter().filter(|w| w == &&[1u8]).count(),
        1,
        "one CAS winner"
    );
    win.fence(Assert::NONE)?;
    if me == 0 {
        let total = n * p as u64;
        let (mut f64s, mut i16s, mut f32s) = ([0f64], [0i16], [0f32]);
        let (mut u16s, mut u32s, mut i8s, mut i32s) = ([0u16], [0u32], [0i8], [0i32]);
        // read_local takes an index in elements of the type read
        win.read_local(0, &mut f64s)?;
        win.read_local(4, &mut i16s)?;
        win.read_local(3, &mut f32s)?;
        win.read_local(8, &mut u16s)?;
        win.read_local(5, &mut u32s)?;
        win.read_local(24, &mut i8s)?;
        win.read_local(7, &mut i32s)?;
        assert_eq!(f64s[0], 1.5 * total as f64, "f64 fetch_add");
        assert_eq!(i16s[0] as u64, total, "i16 fetch_add");
        assert_eq!(f32s[0], 0.5 * total as f32, "f32 add");
        assert_eq!(u16s[0] as u64, 2 * total, "u16 add");
        assert_eq!(u32s[0] as u64, total, "u32 fetch_add");
        assert_eq!(i8s[0] as usize, p.min(2), "i8 fetch_add");
        assert!((1..=p as i32).contains(&i32s[0]), "the CAS winner's mark");
    }
    win.fence(Assert::NONE)?;
    Ok(())
}

/// Handles through an operation the type system cannot settle: the general forms
/// still check the op at run time.
pub(crate) fn handle_op_checks(world: &World, info: &Info) -> Result<()> {
    let win = Window::allocate::<f64>(world, 2, info)?;
    let epoch = win.lock_all_epoch(Assert::NONE)?;
    let h = epoch.target(Rank::new(0))?;
    expect_class(h.fetch_and_op(1.0f64, 0, Op::Bor), ErrorClass::Op);
    expect_class(h.accumulate(&[1.0f64], 0, Op::NoOp), ErrorClass::Op);
    expect_class(h.fetch_and_op(1.0f64, 0, Op::MaxLoc), ErrorClass::Op);
    h.accumulate(&[2.5f64], 1, Op::Max)?;
    epoch.unlock()?;
    win.fence(Assert::NONE)?;
    if world.rank() == 0 {
        assert_eq!(
            win.local_vec::<f64>()?,
            [0.0, 2.5],
            "a refused call changed nothing"
        );
    }
    win.fence(Assert::NONE)?;
    Ok(())
}

/// Batched additions through a handle: runs of adjacent elements, jumps, runs longer
/// than one batch run, in a lock_all epoch (flushed) and in fence epochs (sent by the
/// batch's drop, completed by the fence); every element's total is exact.
pub(crate) fn batched_adds(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let len = 10_000usize;
    let win = Window::allocate::<i64>(world, len, info)?;
    win.fence(Assert::NONE)?;
    // the pattern every rank adds: element i gets (i % 7) + 1, visited in an order
    // with long adjacent runs and jumps
    let order: Vec<usize> = (0..len / 2).chain((len / 2..len).rev()).collect();
    {
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        let mut batch = epoch.target(Rank::new(0))?.batched::<i64>();
        for &i in &order {
            batch.add((i % 7) as i64 + 1, i as i64)?;
        }
        // a refused addition reports at once and leaves the batch as it was
        expect_class(batch.add(1, len as i64), ErrorClass::RmaRange);
        batch.flush()?;
        drop(batch);
        epoch.unlock()?;
    }
    let epoch = win.fence_epoch(Assert::NONE)?;
    {
        let mut batch = epoch
            .target(Rank::new(((me + 1) % p) as u32))?
            .batched::<i64>();
        for i in (0..len).step_by(3) {
            batch.add(1000, i as i64)?;
        }
        // dropped: the pending run is sent, the fence completes it
    }
    epoch.end(Assert::NONE)?;
    let got = win.local_vec::<i64>()?;
    for (i, v) in got.iter().enumerate() {
        let from_lock_all = if me == 0 {
            p as i64 * ((i % 7) as i64 + 1)
        } else {
            0
        };
        let from_fence = if i % 3 == 0 { 1000 } else { 0 };
        assert_eq!(*v, from_lock_all + from_fence, "rank {me} element {i}");
    }
    win.fence(Assert::NONE)?;
    Ok(())
}
