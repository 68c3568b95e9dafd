//! The conflict checker (`rma_check=conflicts`): one epoch per conflict class of the
//! standard, each reported with class RMA_CONFLICT by at least one rank (the one that
//! compares last), and the patterns MPI allows, which never report, with their
//! results exact.

use crate::{expect_class, scaled};
use rma_win::{
    Assert, Cmp, Datatype, ErrorClass, Group, Info, LockType, Op, Rank, Result, SignalOp, Target,
    Window, World,
};

/// `info` with the checker on in `mode`.
fn checked(info: &Info, mode: &str) -> Info {
    info.clone().with("rma_check", mode)
}

/// How many ranks got an RMA_CONFLICT from `r` (any other error fails the case); the
/// message of this rank's report, if any, must name the bytes and a call site here.
fn reports(world: &World, r: Result<()>) -> Result<usize> {
    let found = match r {
        Ok(()) => false,
        Err(e) if e.class() == ErrorClass::RmaConflict => {
            let msg = e.to_string();
            assert!(
                msg.contains("check.rs:") && msg.contains("bytes ") && msg.contains("rank "),
                "a report names the ranks, call sites and bytes: {msg}"
            );
            true
        }
        Err(e) => return Err(e),
    };
    let all = world.allgather(&[u8::from(found)])?;
    Ok(all.iter().filter(|f| f.first() == Some(&1)).count())
}

/// One fence epoch in which rank 1 runs `a` and rank 2 runs `b` on rank 0's window;
/// whether some rank reported a conflict at the fence that closes it.
fn fence_pair(
    world: &World,
    win: &Window<'_>,
    a: impl Fn(&Window<'_>) -> Result<()>,
    b: impl Fn(&Window<'_>) -> Result<()>,
) -> Result<bool> {
    win.fence(Assert::NONE)?;
    match world.rank() {
        1 => a(win)?,
        2 => b(win)?,
        _ => {}
    }
    Ok(reports(world, win.fence(Assert::NONE))? > 0)
}

/// Every conflict class, each in an epoch of its own, reported.
pub(crate) fn conflicts(world: &World, info: &Info) -> Result<()> {
    let mut win = Window::allocate::<i64>(world, 16, &checked(info, "conflicts"))?;
    let zero = Rank::new(0);
    let put = |w: &Window<'_>| w.put(&[7i64], zero, 0);
    let get = |w: &Window<'_>| {
        let mut x = [0i64];
        w.get(&mut x, zero, 0)
    };
    let sum = |w: &Window<'_>| w.accumulate(&[1i64], zero, 0, Op::Sum);
    let max = |w: &Window<'_>| w.accumulate(&[1i64], zero, 0, Op::Max);
    let other_type = |w: &Window<'_>| w.accumulate(&[1u64], zero, 0, Op::Sum);
    let fetch_sum = |w: &Window<'_>| w.fetch_and_op(1i64, zero, 0, Op::Sum).map(drop);
    // on 32-bit elements: Open MPI 4's osc/rdma crashes on 8-byte compare_and_swap,
    // which rma's mpi transport refuses there
    let fetch_sum32 = |w: &Window<'_>| w.fetch_and_op(1i32, zero, 0, Op::Sum).map(drop);
    let cas = |w: &Window<'_>| w.compare_and_swap(1i32, 0i32, zero, 0).map(drop);
    let get_acc = |w: &Window<'_>| {
        let mut old = [0i64];
        w.get_accumulate(&[1i64], &mut old, zero, 0, Op::Sum)
    };
    let cases: [(&str, bool); 10] = [
        ("put and put", fence_pair(world, &win, put, put)?),
        ("put and get", fence_pair(world, &win, put, get)?),
        ("put and accumulate", fence_pair(world, &win, put, sum)?),
        ("get and accumulate", fence_pair(world, &win, get, sum)?),
        (
            "fetch_and_op (SUM) and compare_and_swap",
            fence_pair(world, &win, fetch_sum32, cas)?,
        ),
        (
            "get_accumulate and put",
            fence_pair(world, &win, get_acc, put)?,
        ),
        (
            "fetch_and_op and an accumulate of another type",
            fence_pair(world, &win, fetch_sum, other_type)?,
        ),
        (
            "accumulates with different ops",
            fence_pair(world, &win, sum, max)?,
        ),
        (
            "accumulates with different basic types",
            fence_pair(world, &win, sum, other_type)?,
        ),
        (
            "an overlapping part of a strided put",
            fence_pair(
                world,
                &win,
                |w| {
                    let mut every_other = Datatype::vector(2, 1, 2, &Datatype::of::<i64>())?;
                    every_other.commit();
                    w.put_with(
                        rma_win::Buffer::of(&[1i64, 2]),
                        Target::new(zero, 2, 1, &every_other),
                    )
                },
                |w| w.put(&[9i64], zero, 4), // element 4: the strided put's second
            )?,
        ),
    ];
    for (what, found) in cases {
        assert!(found, "{what} in one fence epoch was not reported");
    }

    // passive target: rank 1's put and rank 2's get overlap in time for sure (both
    // are issued before either is flushed)
    win.lock_all(Assert::NONE)?;
    if world.rank() == 1 {
        win.put(&[3i64], zero, 8)?;
    }
    world.barrier()?;
    if world.rank() == 2 {
        let mut x = [0i64];
        win.get(&mut x, zero, 8)?;
    }
    world.barrier()?;
    let flushed = win.flush(zero);
    assert!(
        reports(world, flushed)? > 0,
        "a put and a get in flight together under lock_all were not reported"
    );
    win.unlock_all()?;

    // generalized active target: ranks 1 and 2 put to one element of rank 0 in
    // access epochs of one exposure epoch, whenever each runs: reported at the
    // target's wait (or at a complete that saw the other)
    let origins = Group::new(&[1, 2])?;
    let only_zero = Group::new(&[0])?;
    let completed = match world.rank() {
        0 => {
            win.post(&origins, Assert::NONE)?;
            win.wait()
        }
        1 | 2 => {
            win.start(&only_zero, Assert::NONE)?;
            win.put(&[world.rank() as i64], zero, 3)?;
            win.complete()
        }
        _ => Ok(()),
    };
    assert!(
        reports(world, completed)? > 0,
        "two puts in one PSCW exposure epoch were not reported"
    );
    // the same with every rank exposed and accessing at once, each origin calling
    // start before post (its post must not lose its access epoch's marks)
    let found = match world.rank() {
        0 => {
            win.post(&origins, Assert::NONE)?;
            win.start(&origins, Assert::NONE)?;
            let completed = win.complete();
            let waited = win.wait();
            completed.and(waited)
        }
        1 | 2 => {
            win.start(&only_zero, Assert::NONE)?;
            win.post(&only_zero, Assert::NONE)?;
            win.put(&[world.rank() as i64], zero, 6)?;
            let completed = win.complete();
            let waited = win.wait();
            completed.and(waited)
        }
        _ => Ok(()),
    };
    assert!(
        reports(world, found)? > 0,
        "two puts in one PSCW exposure epoch (start before post) were not reported"
    );

    // the target's own store in its exposure epoch, beside an origin's put there
    let only_one = Group::new(&[1])?;
    let found = match world.rank() {
        0 => {
            win.post(&only_one, Assert::NONE)?;
            let stored = win.write_local(9, &[5i64]);
            let waited = win.wait();
            stored.and(waited)
        }
        1 => {
            win.start(&only_zero, Assert::NONE)?;
            win.put(&[1i64], zero, 9)?;
            win.complete()
        }
        _ => Ok(()),
    };
    assert!(
        reports(world, found)? > 0,
        "a local store in an exposure epoch beside an origin's put was not reported"
    );

    // through target handles under lock_all: a put and a fetch_add in flight together
    {
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        let h = epoch.target(zero)?;
        if world.rank() == 1 {
            h.put(&[1i64], 5)?;
        }
        world.barrier()?;
        if world.rank() == 2 {
            h.fetch_add(1i64, 5)?;
        }
        world.barrier()?;
        let flushed = h.flush();
        assert!(
            reports(world, flushed)? > 0,
            "a handle's put and another's fetch_add in flight together were not reported"
        );
        epoch.unlock()?;
    }

    // a local store and a load while a put to the same bytes is in flight
    for load in [false, true] {
        win.lock_all(Assert::NONE)?;
        if world.rank() == 1 {
            win.put(&[5i64], zero, 12)?;
        }
        world.barrier()?;
        let local = if world.rank() == 0 {
            if load {
                win.read_local(12, &mut [0i64])
            } else {
                win.write_local(12, &[6i64])
            }
        } else {
            Ok(())
        };
        world.barrier()?;
        let flushed = win.flush(zero);
        let n = reports(world, local)? + reports(world, flushed)?;
        assert!(
            n > 0,
            "a local access (load {load}) during a put was not reported"
        );
        win.unlock_all()?;
    }
    // a conflict found by a closing call still closes its epoch: the shared locks
    // are released, so the exclusive locks after them are granted
    win.lock(LockType::Shared, zero, Assert::NONE)?;
    if world.rank() > 0 {
        win.put(&[world.rank() as i64], zero, 14)?;
    }
    world.barrier()?;
    let unlocked = win.unlock(zero);
    assert!(
        reports(world, unlocked)? > 0,
        "puts under two shared locks were not reported"
    );
    win.lock(LockType::Exclusive, zero, Assert::NONE)?;
    win.put(&[1i64], zero, 15)?;
    win.unlock(zero)?;
    world.barrier()?;
    win.free()?;

    // accumulate_ops=same_op: SUM and NO_OP to one element conflict
    let same_op = checked(info, "conflicts").with("accumulate_ops", "same_op");
    let mut strict = Window::allocate::<i64>(world, 1, &same_op)?;
    let noop = |w: &Window<'_>| w.fetch_and_op(0i64, zero, 0, Op::NoOp).map(drop);
    assert!(
        fence_pair(world, &strict, sum, noop)?,
        "SUM and NO_OP under accumulate_ops=same_op were not reported"
    );
    assert!(
        !fence_pair(world, &strict, sum, sum)?,
        "SUM with SUM under accumulate_ops=same_op was reported"
    );
    strict.fence(Assert::NONE)?;
    strict.free()?;

    // a rank that gives a mode and ranks that give none: refused on every rank
    let mixed = if world.rank() == 0 {
        checked(info, "conflicts")
    } else {
        info.clone()
    };
    expect_class(Window::allocate::<i64>(world, 1, &mixed), ErrorClass::Info);
    world.barrier()
}

/// The patterns MPI allows never report, and their results are exact.
pub(crate) fn allowed(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let mut win = Window::allocate::<i64>(world, 64, &checked(info, "conflicts"))?;
    let zero = Rank::new(0);
    let rounds = scaled(200i64).max(4);
    assert_eq!(win.info().get("rma_check"), Some("conflicts"));

    // accumulates with one op and type, NO_OP reads among them, REPLACE with REPLACE
    win.fence(Assert::NONE)?;
    for _ in 0..rounds {
        win.accumulate(&[1i64], zero, 0, Op::Sum)?;
        win.accumulate(&[me as i64], zero, 1, Op::Replace)?;
    }
    win.fence(Assert::NONE)?;
    win.lock_all(Assert::NONE)?;
    for _ in 0..rounds {
        win.fetch_and_op(1i64, zero, 2, Op::Sum)?;
        win.fetch_and_op(0i64, zero, 2, Op::NoOp)?;
        win.flush(zero)?;
    }
    // gets with gets, and disjoint puts (each rank its own element, also interleaved
    // through a vector type)
    let mut x = [0i64];
    win.get(&mut x, zero, 0)?;
    win.put(&[me as i64 + 100], zero, 10 + me as i64)?;
    let mut stride = Datatype::vector(2, 1, p as isize, &Datatype::of::<i64>())?;
    stride.commit();
    win.put_with(
        rma_win::Buffer::of(&[me as i64, me as i64]),
        Target::new(zero, 20 + me as i64, 1, &stride),
    )?;
    win.flush_all()?;
    win.unlock_all()?;
    // a fetching call is complete when it returns (rma delivers results in place):
    // a put ordered after it by a barrier does not conflict with it
    win.lock_all(Assert::NONE)?;
    if me == 1 {
        win.fetch_and_op(1i64, zero, 50, Op::Sum)?;
    }
    world.barrier()?;
    if me == 2 {
        win.put(&[5i64], zero, 50)?;
        win.flush(zero)?;
    }
    world.barrier()?;
    win.unlock_all()?;

    // put-with-signal: the target reads the data as soon as it sees the signal,
    // before the origin's unlock
    if me <= 1 {
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        if me == 1 {
            epoch
                .target(zero)?
                .put_signal(&[7i64, 8], 60, 62, 1, SignalOp::Set)?;
        } else {
            win.wait_until(62, Cmp::Eq, 1)?;
            let mut data = [0i64; 2];
            win.read_local(60, &mut data)?;
            assert_eq!(data, [7, 8], "the data a signal announced");
        }
        epoch.unlock()?;
    }
    world.barrier()?;

    // ordered by synchronization: a put, then a fence, then everyone's get
    win.fence(Assert::NONE)?;
    if me == 1 {
        win.put(&[42i64], zero, 40)?;
    }
    win.fence(Assert::NONE)?;
    let mut got = [0i64];
    win.get(&mut got, zero, 40)?;
    win.fence(Assert::NONE)?;
    assert_eq!(got, [42]);
    // passive: put + flush, a barrier, then the others' gets and puts
    win.lock_all(Assert::NONE)?;
    if me == 1 {
        win.put(&[43i64], zero, 41)?;
        win.flush(zero)?;
    }
    world.barrier()?;
    let mut got = [0i64];
    win.get(&mut got, zero, 41)?;
    win.flush(zero)?;
    assert_eq!(got, [43]);
    world.barrier()?;
    if me == 2 {
        win.put(&[44i64], zero, 41)?;
        win.flush(zero)?;
    }
    win.unlock_all()?;
    // exclusive locks serialize puts to one element; a local store before the fence
    // that opens the epoch of the remote reads
    for _ in 0..scaled(20).max(2) {
        win.lock(LockType::Exclusive, zero, Assert::NONE)?;
        win.put(&[me as i64], zero, 42)?;
        win.unlock(zero)?;
    }
    if me == 0 {
        win.write_local(43, &[77i64])?;
    }
    win.fence(Assert::NONE)?;
    let mut got = [0i64];
    win.get(&mut got, zero, 43)?;
    win.fence(Assert::NONE)?;
    assert_eq!(got, [77]);

    // PSCW orders them: rank 1's exposure-epoch put, then (after rank 0's wait and a
    // new post) rank 2's put to the same element
    for origin in [1usize, 2] {
        let only = Group::new(&[origin])?;
        if me == 0 {
            win.post(&only, Assert::NONE)?;
            win.wait()?;
        } else if me == origin {
            win.start(&Group::new(&[0])?, Assert::NONE)?;
            win.put(&[origin as i64], zero, 44)?;
            win.complete()?;
        }
        world.barrier()?;
    }

    // exact results of the above
    world.barrier()?;
    if me == 0 {
        let mut v = [0i64; 64];
        win.read_local(0, &mut v)?;
        assert_eq!(v[0], rounds * p as i64, "SUM accumulates");
        assert!((v[1] as usize) < p, "REPLACE leaves one rank's value");
        assert_eq!(v[2], rounds * p as i64, "fetch_and_op SUM");
        for r in 0..p {
            assert_eq!(v[10 + r], r as i64 + 100, "disjoint puts");
            assert_eq!(
                [v[20 + r], v[20 + r + p]],
                [r as i64, r as i64],
                "strided puts"
            );
        }
        assert_eq!(v[41], 44);
        assert_eq!(v[44], 2, "PSCW-ordered puts, rank 2 last");
    }
    world.barrier()?;
    win.free()?;

    // conflicts_log: the race is logged, the fence succeeds; a bad mode is refused
    let mut logged = Window::allocate::<i64>(world, 1, &checked(info, "conflicts_log"))?;
    logged.fence(Assert::NONE)?;
    if me != 0 {
        logged.put(&[1i64], zero, 0)?;
    }
    logged.fence(Assert::NONE)?;
    logged.free()?;
    expect_class(
        Window::allocate::<i64>(world, 1, &checked(info, "sometimes")),
        ErrorClass::Info,
    );
    Ok(())
}

/// Many calls between synchronizations: the log wraps and no allowed pattern reports.
pub(crate) fn long_run(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let mut win = Window::allocate::<i64>(world, 8, &checked(info, "conflicts"))?;
    let n = scaled(3000i64).max(10);
    win.lock_all(Assert::NONE)?;
    for i in 0..n {
        let t = Rank::new(((me + 1 + i as usize) % p) as u32);
        win.accumulate(&[1i64], t, 0, Op::Sum)?;
        if i % 7 == 0 {
            win.flush(t)?;
        }
    }
    win.flush_all()?;
    win.unlock_all()?;
    // a long passive epoch of gets and no flush (each complete when it returns: their
    // records go to the logs along the way), beside the others' accumulates to
    // another element
    win.lock_all(Assert::NONE)?;
    let mut x = [0i64];
    for i in 0..n {
        let t = Rank::new(((me + 1 + i as usize) % p) as u32);
        win.get(&mut x, t, 1)?;
    }
    win.unlock_all()?;
    world.barrier()?;
    let mut v = [0i64];
    win.read_local(0, &mut v)?;
    let total = world.allgather(&v[0].to_le_bytes())?;
    let sum: i64 = total
        .iter()
        .map(|b| i64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])))
        .sum();
    assert_eq!(sum, n * p as i64);
    world.barrier()?;
    win.free()
}
