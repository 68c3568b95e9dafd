//! The other forms of a call: request-based calls, many calls completed by one flush,
//! a PSCW ring, and the `Transport` trait with an indexed layout.

use super::check::{ensure, expect_class, i64s, rank, read, to_i64s, Check, Ctx};
use rma_core::{Access, Assert, BasicType, ErrorClass, LockType, Op, Transport};
use rma_datatype::Datatype;
use rma_mpi::{MpiTargetSpec, MpiWindow, MpiWorld};

/// rput / rget / raccumulate / rget_accumulate with wait and test.
pub(super) fn request_forms(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    let next = rank((r + 1) % n);
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mine = [r as i64 * 100, r as i64 * 100 + 1];
    win.rput(&i64s(&mine), MpiTargetSpec::contiguous(next, 60))
        .ctx("rput")?
        .wait()
        .ctx("wait rput")?;
    win.flush(next).ctx("flush")?;
    let back = win
        .rget(16, MpiTargetSpec::contiguous(next, 60))
        .ctx("rget")?
        .wait()
        .ctx("wait rget")?;
    ensure!(to_i64s(&back) == mine, "rget read {:?}", to_i64s(&back));
    // a derived target type: slots 100 and 102 of `next`, through a stride-2 vector
    // (MPICH 4.0 completes such an Rget's request before writing the result; the
    // request flushes before handing it out)
    let spread = [r as i64 + 7, -1, r as i64 + 9];
    win.put(&i64s(&spread), MpiTargetSpec::contiguous(next, 100))
        .ctx("put")?;
    win.flush(next).ctx("flush")?;
    let mut every_other = Datatype::vector(2, 1, 2, &Datatype::of::<i64>()).ctx("vector")?;
    every_other.commit();
    let layout = every_other.type_map(1).ctx("type_map")?;
    let picked = win
        .rget(16, MpiTargetSpec::with_layout(next, 100, &layout))
        .ctx("strided rget")?
        .wait()
        .ctx("wait strided rget")?;
    ensure!(
        to_i64s(&picked) == [r as i64 + 7, r as i64 + 9],
        "strided rget read {:?}",
        to_i64s(&picked)
    );
    let mut acc = win
        .raccumulate(
            BasicType::I64,
            Op::Sum,
            &i64s(&[1, 1]),
            MpiTargetSpec::contiguous(rank(0), 62),
        )
        .ctx("raccumulate")?;
    while !acc.test().ctx("test")? {
        std::thread::yield_now();
    }
    ensure!(
        acc.wait().ctx("wait")?.is_empty(),
        "raccumulate fetched bytes"
    );
    let fetched = win
        .rget_accumulate(
            BasicType::I64,
            Op::Sum,
            &i64s(&[10]),
            MpiTargetSpec::contiguous(rank(0), 62),
        )
        .ctx("rget_accumulate")?
        .wait()
        .ctx("wait rget_accumulate")?;
    ensure!(
        fetched.len() == 8 && to_i64s(&fetched)[0] <= 11 * n as i64,
        "rget_accumulate fetched {fetched:?}"
    );
    win.flush_all().ctx("flush_all")?;
    win.flush_local_all().ctx("flush_local_all")?;
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 62, 2)?;
    ensure!(
        got == [11 * n as i64, n as i64],
        "request-form accumulates: {got:?}"
    );
    world.barrier().ctx("barrier")
}

/// More accumulates without a flush than the window keeps origin copies for (16 Ki):
/// it completes them on its own along the way, and the sum comes out exact. One rank
/// calls (with 4 ranks on 2 cores, MPICH's calls wait for the target to be scheduled).
pub(super) fn many_calls_one_flush(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    const CALLS: i64 = 17_000;
    let caller = world.size() - 1;
    if world.rank() == caller {
        win.lock(LockType::Shared, rank(0), Assert::NONE)
            .ctx("lock")?;
        for _ in 0..CALLS {
            let one = i64s(&[1]);
            win.accumulate(
                BasicType::I64,
                Op::Sum,
                &one,
                MpiTargetSpec::contiguous(rank(0), 104),
            )
            .ctx("accumulate")?;
        }
        win.flush(rank(0)).ctx("flush")?;
        win.unlock(rank(0)).ctx("unlock")?;
    }
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 104, 1)?[0];
    ensure!(got == CALLS, "{CALLS} accumulates summed to {got}");
    world.barrier().ctx("barrier")
}

/// Post/start/complete/wait in a ring: each rank exposes to its predecessor and
/// accesses its successor; odd ranks poll with test instead of waiting.
pub(super) fn pscw_ring(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    let (prev, next) = ((r + n - 1) % n, (r + 1) % n);
    win.post(&[rank(prev)], Assert::NONE).ctx("post")?;
    win.start(&[rank(next)], Assert::NONE).ctx("start")?;
    win.put(
        &i64s(&[r as i64]),
        MpiTargetSpec::contiguous(rank(next), 66),
    )
    .ctx("put")?;
    for _ in 0..2 {
        win.accumulate(
            BasicType::I64,
            Op::Sum,
            &i64s(&[1]),
            MpiTargetSpec::contiguous(rank(next), 67),
        )
        .ctx("accumulate")?;
    }
    expect_class(
        win.fetch_and_op(
            BasicType::I64,
            Op::Sum,
            &[0; 8],
            &mut [0; 8],
            rank(next),
            68,
        ),
        ErrorClass::RmaSync,
        "fetch_and_op in PSCW",
    )?;
    win.complete().ctx("complete")?;
    if r % 2 == 0 {
        win.wait().ctx("wait")?;
    } else {
        while !win.test().ctx("test")? {
            std::thread::yield_now();
        }
    }
    let mut got = [0u8; 16];
    win.read_local(66 * 8, &mut got).ctx("read_local")?;
    ensure!(
        to_i64s(&got) == [prev as i64, 2],
        "PSCW ring: {:?}",
        to_i64s(&got)
    );
    world.barrier().ctx("barrier")
}

/// The Transport trait as rma-win drives it: byte offsets and an indexed layout under
/// a passive epoch; refused outside one.
pub(super) fn transport_calls(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    let n = world.size() as i64;
    let mut indexed = Datatype::indexed(&[1, 2], &[0, 3], &Datatype::of::<i64>()).ctx("indexed")?;
    indexed.commit();
    let layout = indexed.type_map(1).ctx("type_map")?;
    let at = Access {
        target: rank(0),
        base: 72 * 8,
        layout: &layout,
        exclusive: false,
    };
    expect_class(
        Transport::accumulate(&*win, at, BasicType::I64, Op::Sum, &i64s(&[1, 1, 1])),
        ErrorClass::RmaSync,
        "transport outside an epoch",
    )?;
    win.lock_all(Assert::NOCHECK).ctx("lock_all")?;
    let t: &dyn Transport = &*win;
    ensure!(t.name() == "mpi", "transport name {}", t.name());
    let mut old = [0u8; 8];
    t.fetch_and_op(
        rank(0),
        70 * 8,
        BasicType::I64,
        Op::Sum,
        &1i64.to_ne_bytes(),
        &mut old,
    )
    .ctx("transport fetch_and_op")?;
    t.accumulate(at, BasicType::I64, Op::Sum, &i64s(&[1, 1, 1]))
        .ctx("transport accumulate")?;
    t.flush(rank(0)).ctx("transport flush")?;
    t.flush_all().ctx("transport flush_all")?;
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 70, 7)?;
    ensure!(got == [n, 0, n, 0, 0, n, n], "transport calls: {got:?}");
    world.barrier().ctx("barrier")
}
