//! The RMA calls, each checked exactly: the all-gather, a fence epoch with a ring of
//! puts and a strided accumulate, a counter under exclusive locks, fetch_and_op
//! tickets, compare_and_swap counters, get_accumulate and the pair types.

use super::check::{ensure, expect_class, i64s, ran, rank, read, to_i64s, Check, Ctx, N};
use rma_core::{Assert, BasicType, ErrorClass, LockType, Op};
use rma_datatype::Datatype;
use rma_mpi::{MpiTargetSpec, MpiWindow, MpiWorld};

pub(super) fn check_allgather(world: &MpiWorld) -> Check {
    let mine = vec![world.rank() as u8; world.rank()];
    let all = world.allgather(&mine).ctx("allgather")?;
    for (r, got) in all.iter().enumerate() {
        ensure!(*got == vec![r as u8; r], "allgather slot {r}: {got:?}");
    }
    Ok(())
}

/// Fence epoch: a ring of puts and an accumulate SUM over a strided target layout
/// (every 3rd slot) into rank 0; a get there is refused (results come at the fence).
pub(super) fn fence_put_and_strided_accumulate(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    let mut vector = Datatype::vector(5, 1, 3, &Datatype::of::<i64>()).ctx("vector")?;
    vector.commit();
    let layout = vector.type_map(1).ctx("type_map")?;
    win.fence(Assert::NOPRECEDE).ctx("fence")?;
    win.put(
        &i64s(&[(r as i64 + 1) * 10]),
        MpiTargetSpec::contiguous(rank((r + 1) % n), r as i64),
    )
    .ctx("put")?;
    win.accumulate(
        BasicType::I64,
        Op::Sum,
        &i64s(&[1, 2, 3, 4, 5]),
        MpiTargetSpec::with_layout(rank(0), 16, &layout),
    )
    .ctx("strided accumulate")?;
    expect_class(
        win.get(&mut [0u8; 8], MpiTargetSpec::contiguous(rank(0), 0)),
        ErrorClass::RmaSync,
        "get in a fence epoch",
    )?;
    win.fence(Assert::NOSUCCEED).ctx("fence")?;
    let prev = (r + n - 1) % n;
    let mut slot = [0u8; 8];
    win.read_local(prev * 8, &mut slot).ctx("read_local")?;
    ensure!(
        to_i64s(&slot) == [(prev as i64 + 1) * 10],
        "ring put: {:?}",
        to_i64s(&slot)
    );
    if r == 0 {
        let mut area = [0u8; 8 * 15];
        win.read_local(16 * 8, &mut area).ctx("read_local")?;
        let got = to_i64s(&area);
        for (i, v) in got.iter().enumerate() {
            let want = if i % 3 == 0 {
                n as i64 * (i as i64 / 3 + 1)
            } else {
                0
            };
            ensure!(
                *v == want,
                "strided accumulate slot {}: {v}, want {want}",
                16 + i
            );
        }
    }
    Ok(())
}

/// Read-modify-write of one slot under an exclusive lock, N times per rank: exactly
/// n * N if the lock excludes.
pub(super) fn exclusive_lock_counter(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    for _ in 0..N {
        win.lock(LockType::Exclusive, rank(0), Assert::NONE)
            .ctx("lock exclusive")?;
        let mut cur = [0u8; 8];
        win.get(&mut cur, MpiTargetSpec::contiguous(rank(0), 40))
            .ctx("get")?;
        let next = i64::from_ne_bytes(cur) + 1;
        win.put(&next.to_ne_bytes(), MpiTargetSpec::contiguous(rank(0), 40))
            .ctx("put")?;
        win.unlock(rank(0)).ctx("unlock")?;
    }
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 40, 1)?[0];
    ensure!(
        got == world.size() as i64 * N,
        "exclusive-lock counter {got}, want {}",
        world.size() as i64 * N
    );
    Ok(())
}

/// fetch_and_op SUM +1, N times per rank under lock_all: the old values over all ranks
/// are exactly 0..n*N.
pub(super) fn fetch_and_op_tickets(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut tickets = Vec::new();
    for _ in 0..N {
        let mut old = [0u8; 8];
        win.fetch_and_op(
            BasicType::I64,
            Op::Sum,
            &1i64.to_ne_bytes(),
            &mut old,
            rank(0),
            41,
        )
        .ctx("fetch_and_op")?;
        tickets.push(i64::from_ne_bytes(old));
    }
    win.unlock_all().ctx("unlock_all")?;
    let mut all: Vec<i64> = world
        .allgather(&i64s(&tickets))
        .ctx("allgather")?
        .iter()
        .flat_map(|b| to_i64s(b))
        .collect();
    all.sort_unstable();
    let total = world.size() as i64 * N;
    ensure!(
        all == (0..total).collect::<Vec<_>>(),
        "tickets are not 0..{total}"
    );
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut now = [0u8; 8];
    win.fetch_and_op(BasicType::I64, Op::NoOp, &[], &mut now, rank(0), 41)
        .ctx("fetch_and_op NO_OP")?;
    win.unlock_all().ctx("unlock_all")?;
    ensure!(
        i64::from_ne_bytes(now) == total,
        "NO_OP read {}",
        i64::from_ne_bytes(now)
    );
    world.barrier().ctx("barrier")
}

fn int_bytes(basic: BasicType, v: i64) -> Vec<u8> {
    match basic {
        BasicType::I32 => (v as i32).to_ne_bytes().to_vec(),
        _ => v.to_ne_bytes().to_vec(),
    }
}

fn int_of(b: &[u8]) -> i64 {
    match b.len() {
        4 => i32::from_ne_bytes(b.try_into().unwrap_or_default()) as i64,
        _ => i64::from_ne_bytes(b.try_into().unwrap_or_default()),
    }
}

/// A counter incremented by compare_and_swap loops, N times per rank: exactly n * N.
fn cas_counter(world: &MpiWorld, win: &mut MpiWindow<'_>, basic: BasicType, disp: i64) -> Check {
    let size = basic.size();
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut cur = vec![0u8; size];
    win.fetch_and_op(basic, Op::NoOp, &[], &mut cur, rank(0), disp)
        .ctx("fetch NO_OP")?;
    for _ in 0..N {
        loop {
            let (expect, mut old) = (int_of(&cur), vec![0u8; size]);
            let new = int_bytes(basic, expect + 1);
            win.compare_and_swap(basic, &new, &cur, &mut old, rank(0), disp)
                .ctx("compare_and_swap")?;
            if int_of(&old) == expect {
                cur = new;
                break;
            }
            cur = old;
        }
    }
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let all = read(win, 0, disp, 1)?;
    let got = int_of(&i64s(&all)[..size]);
    ensure!(got == world.size() as i64 * N, "{basic} CAS counter {got}");
    Ok(())
}

pub(super) fn compare_and_swap_counters(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    cas_counter(world, win, BasicType::I32, 42)?;
    if world.cas64_blocked() {
        win.lock_all(Assert::NONE).ctx("lock_all")?;
        let r = win.compare_and_swap(BasicType::I64, &[0; 8], &[0; 8], &mut [0; 8], rank(0), 43);
        win.unlock_all().ctx("unlock_all")?;
        expect_class(
            r,
            ErrorClass::RmaFlavor,
            "8-byte CAS on a library known to crash",
        )
    } else {
        cas_counter(world, win, BasicType::I64, 43)
    }
}

fn pair_f64(value: f64, index: i32) -> Vec<u8> {
    let mut b = value.to_ne_bytes().to_vec();
    b.extend(index.to_ne_bytes());
    b.extend([0u8; 4]);
    b
}

/// get_accumulate SUM from every rank into rank 0 (the fetched values per slot are
/// exactly 0..n), a NO_OP read, and MAXLOC / MINLOC on DOUBLE_INT.
pub(super) fn get_accumulate_and_pairs(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut out = [0u8; 32];
    win.get_accumulate(
        BasicType::I64,
        Op::Sum,
        &i64s(&[1, 1, 1, 1]),
        &mut out,
        MpiTargetSpec::contiguous(rank(0), 44),
    )
    .ctx("get_accumulate")?;
    let maxloc = win.accumulate(
        BasicType::DoubleInt,
        Op::MaxLoc,
        &pair_f64(r as f64 + 1.0, r as i32),
        MpiTargetSpec::contiguous(rank(0), 48),
    );
    let minloc = win.accumulate(
        BasicType::DoubleInt,
        Op::MinLoc,
        &pair_f64(-(r as f64) - 1.0, r as i32),
        MpiTargetSpec::contiguous(rank(0), 50),
    );
    let pairs_ran = ran(maxloc, "accumulate MPI_MAXLOC on double_int".into())?
        & ran(minloc, "accumulate MPI_MINLOC on double_int".into())?;
    win.unlock_all().ctx("unlock_all")?;
    let fetched: Vec<Vec<i64>> = world
        .allgather(&out)
        .ctx("allgather")?
        .iter()
        .map(|b| to_i64s(b))
        .collect();
    for slot in 0..4 {
        let mut seen: Vec<i64> = fetched.iter().map(|f| f[slot]).collect();
        seen.sort_unstable();
        ensure!(
            seen == (0..n as i64).collect::<Vec<_>>(),
            "get_accumulate fetched {seen:?} in slot {slot}"
        );
    }
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let mut now = [0u8; 32];
    win.get_accumulate(
        BasicType::I64,
        Op::NoOp,
        &[],
        &mut now,
        MpiTargetSpec::contiguous(rank(0), 44),
    )
    .ctx("get_accumulate NO_OP")?;
    let mut pairs = [0u8; 32];
    win.get_accumulate(
        BasicType::DoubleInt,
        Op::NoOp,
        &[],
        &mut pairs,
        MpiTargetSpec::contiguous(rank(0), 48),
    )
    .ctx("fetch pairs")?;
    win.unlock_all().ctx("unlock_all")?;
    ensure!(
        to_i64s(&now) == [n as i64; 4],
        "after get_accumulate: {:?}",
        to_i64s(&now)
    );
    ensure!(
        !pairs_ran || pairs[..16] == pair_f64(n as f64, n as i32 - 1)[..],
        "MAXLOC result {:?}",
        &pairs[..16]
    );
    ensure!(
        !pairs_ran || pairs[16..] == pair_f64(-(n as f64), n as i32 - 1)[..],
        "MINLOC result {:?}",
        &pairs[16..]
    );
    world.barrier().ctx("barrier")
}
