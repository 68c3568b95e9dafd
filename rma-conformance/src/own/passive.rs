//! Passive target and PSCW: exclusive locks exclude (across processes too), shared
//! locks and lock_all, flush completes at the target, fairness under contention, PSCW
//! rings, and the RMA_SYNC misuses of docs/semantics.md rule 16.

use crate::expect_class;
use rma_win::{Assert, ErrorClass, Group, Info, LockType, Op, Rank, Result, Window, World};

/// Every rank increments rank 0's counter with a plain get + put under an exclusive
/// lock: the count is exact only if the lock excludes.
pub(crate) fn exclusive_lock_excludes(world: &World, info: &Info) -> Result<()> {
    fn rounds() -> u64 {
        crate::scaled(300)
    }
    let zero = Rank::new(0);
    let mut win = Window::allocate::<u64>(world, 1, info)?;
    world.barrier()?;
    for _ in 0..rounds() {
        win.lock(LockType::Exclusive, zero, Assert::NONE)?;
        let mut v = [0u64];
        win.get(&mut v, zero, 0)?;
        win.flush(zero)?;
        v[0] += 1;
        win.put(&v, zero, 0)?;
        win.unlock(zero)?;
    }
    world.barrier()?;
    if world.rank() == 0 {
        win.lock(LockType::Shared, zero, Assert::NONE)?;
        let mut v = [0u64];
        win.get(&mut v, zero, 0)?;
        win.unlock(zero)?;
        assert_eq!(
            v[0],
            rounds() * world.size() as u64,
            "an exclusive lock let two origins in"
        );
    }
    world.barrier()?;
    win.free()
}

/// Under lock_all every rank accumulates into every other and flushes; after a barrier
/// every window holds the exact sum. Also the request-based calls.
pub(crate) fn lock_all_flush_and_requests(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let mut win = Window::allocate::<i64>(world, p, info)?;
    win.lock_all(Assert::NONE)?;
    for t in 0..p {
        win.accumulate(&[me as i64 + 1], Rank::new(t as u32), me as i64, Op::Sum)?;
        let one = [1i64];
        let req = win.raccumulate(&one, Rank::new(t as u32), me as i64, Op::Sum)?;
        req.wait()?;
    }
    win.flush_all()?;
    win.unlock_all()?;
    world.barrier()?;
    let got: Vec<i64> = win.local_vec()?;
    let expect: Vec<i64> = (0..p as i64).map(|r| r + 2).collect();
    assert_eq!(got, expect);
    world.barrier()?;
    // rget / rget_accumulate under a shared lock to the right neighbour
    let right = Rank::new(((me + 1) % p) as u32);
    win.lock(LockType::Shared, right, Assert::NONE)?;
    let mut back = vec![0i64; p];
    let req = win.rget(&mut back, right, 0)?;
    req.wait()?;
    assert_eq!(back, expect);
    let mut old = vec![0i64; p];
    let zeros = vec![0i64; p];
    let mut reqs = vec![win.rget_accumulate(&zeros, &mut old, right, 0, Op::Sum)?];
    assert!(rma_win::Request::test_all(&mut reqs)?);
    rma_win::Request::wait_all(reqs)?;
    assert_eq!(old, expect);
    win.unlock(right)?;
    world.barrier()?;
    win.free()
}

/// Post/start/complete/wait in a ring: each rank exposes to its left neighbour and
/// accesses its right one; start comes before post on half the ranks.
pub(crate) fn pscw_ring(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let (left, right) = ((me + p - 1) % p, (me + 1) % p);
    let mut win = Window::allocate::<u64>(world, 1, info)?;
    let (exposed_to, access) = (Group::new(&[left])?, Group::new(&[right])?);
    for round in 1..=50u64 {
        if me % 2 == 0 {
            win.start(&access, Assert::NONE)?;
            win.post(&exposed_to, Assert::NONE)?;
        } else {
            win.post(&exposed_to, Assert::NONE)?;
            win.start(&access, Assert::NONE)?;
        }
        win.accumulate(&[1u64], Rank::new(right as u32), 0, Op::Sum)?;
        win.complete()?;
        win.wait()?;
        let mut v = [0u64];
        win.read_local(0, &mut v)?;
        assert_eq!(
            v[0], round,
            "round {round}: my left neighbour's accumulate is visible after wait"
        );
    }
    win.free()
}

/// The passive-target and PSCW misuses of rule 16, each refused with RMA_SYNC and
/// changing nothing.
pub(crate) fn sync_misuse(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let other = Rank::new((1 - me) as u32);
    let mut win = Window::allocate::<i32>(world, 4, info)?;
    let g = Group::new(&[1 - me])?;
    expect_class(win.unlock(other), ErrorClass::RmaSync); // unlock without lock
    expect_class(win.unlock_all(), ErrorClass::RmaSync);
    expect_class(win.flush(other), ErrorClass::RmaSync); // flush outside a passive epoch
    expect_class(win.flush_local_all(), ErrorClass::RmaSync);
    expect_class(win.complete(), ErrorClass::RmaSync); // complete without start
    expect_class(win.wait(), ErrorClass::RmaSync); // wait without post
    expect_class(win.test(), ErrorClass::RmaSync);
    expect_class(
        win.lock(LockType::Shared, other, Assert::NOPUT),
        ErrorClass::Assert,
    );
    win.lock(LockType::Shared, other, Assert::NONE)?;
    expect_class(
        win.lock(LockType::Exclusive, other, Assert::NONE),
        ErrorClass::RmaSync,
    ); // twice
    expect_class(win.lock_all(Assert::NONE), ErrorClass::RmaSync);
    expect_class(win.fence(Assert::NONE), ErrorClass::RmaSync); // fence inside lock
    expect_class(win.start(&g, Assert::NONE), ErrorClass::RmaSync);
    expect_class(win.free(), ErrorClass::RmaSync); // free with an epoch open
    let mut r = [0i32];
    expect_class(
        win.get(&mut r, Rank::new(me as u32), 0),
        ErrorClass::RmaSync,
    ); // not locked
    win.unlock(other)?;
    win.start(&g, Assert::NONE)?;
    expect_class(win.start(&g, Assert::NONE), ErrorClass::RmaSync); // nested start
    expect_class(
        win.lock(LockType::Shared, other, Assert::NONE),
        ErrorClass::RmaSync,
    ); // lock in start
    expect_class(win.rput(&[1i32], other, 0), ErrorClass::RmaSync); // requests need passive
    win.post(&g, Assert::NONE)?;
    expect_class(win.post(&g, Assert::NONE), ErrorClass::RmaSync);
    win.put(&[5i32], other, 1)?;
    win.complete()?;
    win.wait()?;
    let mut v = [0i32; 4];
    win.read_local(0, &mut v)?;
    assert_eq!(v, [0, 5, 0, 0], "exactly the accepted put landed");
    expect_class(Group::new(&[0, 0]), ErrorClass::Arg);
    expect_class(win.post(&Group::new(&[7])?, Assert::NONE), ErrorClass::Rank);
    world.barrier()?;
    win.free()
}

/// Every rank contends for an exclusive lock on rank 0 for the same stretch of time;
/// the lock serves requests in arrival order, so every rank gets a share of the
/// acquisitions (no starvation). Each acquisition also bumps a counter under the lock,
/// which must come out exact.
///
/// Shares are compared among the ranks that reach rank 0 remotely, whose cycles cost
/// the same. Rank 0's own cycles are local and may be far cheaper: over MPICH with 4
/// ranks on 2 cores a remote call waits for the target to be scheduled (milliseconds),
/// so rank 0 legitimately takes the lock many times while a remote rank travels between
/// its unlock and its next request (seen in CI: `[1056, 20, 21, 20]`). Rank 0 must
/// still get the lock, and every remote rank must get at least a tenth of the remote
/// ranks' mean share — on a node with a core per rank; with more ranks than cores,
/// at least one acquisition (the scheduler sets the rates there).
pub(crate) fn lock_contention_is_fair(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let zero = Rank::new(0);
    let mut win = Window::allocate::<u64>(world, 1 + p, info)?;
    world.barrier()?;
    let until = std::time::Instant::now() + std::time::Duration::from_millis(400);
    let mut mine = 0u64;
    while std::time::Instant::now() < until {
        win.lock(LockType::Exclusive, zero, Assert::NONE)?;
        let mut v = [0u64];
        win.get(&mut v, zero, 0)?;
        win.flush(zero)?;
        win.put(&[v[0] + 1], zero, 0)?;
        win.unlock(zero)?;
        mine += 1;
    }
    // publish my count in slot 1 + me
    win.lock(LockType::Shared, zero, Assert::NONE)?;
    win.put(&[mine], zero, 1 + me as i64)?;
    win.unlock(zero)?;
    world.barrier()?;
    if me == 0 {
        let v: Vec<u64> = win.local_vec()?;
        let counts = &v[1..];
        let total: u64 = counts.iter().sum();
        assert_eq!(v[0], total, "the counter under the exclusive lock is exact");
        assert!(counts[0] > 0, "rank 0 starved ({counts:?})");
        let remote = &counts[1..];
        let mean = remote.iter().sum::<u64>() / remote.len().max(1) as u64;
        // With more ranks than cores a remote rank's rate is the scheduler's: one can
        // sit descheduled between its unlock and its next request while another cycles
        // (seen in CI over MPICH without its shared-memory path: [25, 24, 24, 903]). The
        // queue cannot be bypassed, so there every rank must still get the lock; with
        // a core per rank, every share must be at least a tenth of the mean.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let oversubscribed = p > cores;
        for (r, c) in remote.iter().enumerate() {
            assert!(
                *c > 0 && (oversubscribed || *c * 10 >= mean),
                "rank {} starved: {c} of {total} acquisitions ({counts:?})",
                r + 1
            );
        }
    }
    world.barrier()?;
    win.free()
}
