//! Windows on worlds split from the world (`World::split`, `dup`, `create`,
//! `translate_ranks`), on every transport and launch mode: ranks numbered within the
//! sub-world; windows of overlapping sub-worlds used at once; one sub-world's
//! collectives never waiting for another's; PSCW groups relative to the window's
//! world; rank translation; misuse refused.

use crate::{expect_class, or_refused, scaled, shared_window, sub_world};
use rma_win::{
    Assert, DoubleInt, ErrorClass, Group, Info, LaunchMode, Op, Rank, Result, SplitType, Window,
    World,
};

/// Two overlapping splits (halves by parity and by position), each with a window
/// holding a counter, used at once: every rank adds into rank 0 of each of its
/// sub-worlds through lock_all; the counts are exact, and each sub-world's ranks,
/// sizes and translations are the ones MPI_Comm_split gives.
pub(crate) fn overlapping(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    // parity, numbered in reverse order of world rank (key = -rank)
    let Some(odd) = sub_world(world, Some(me as u32 % 2), -(me as i32))? else {
        return Ok(());
    };
    let lower = world
        .split(Some(u32::from(me >= p / 2)), 0)?
        .expect("a color");
    let dup = world.dup()?;
    let odd_members: Vec<usize> = (0..p).filter(|r| r % 2 == me % 2).rev().collect();
    assert_eq!(odd.size(), odd_members.len());
    assert_eq!(odd_members[odd.rank()], me, "numbered by key, then rank");
    assert_eq!(
        odd.translate_ranks(&(0..odd.size()).collect::<Vec<_>>(), world)?,
        odd_members.iter().map(|&r| Some(r)).collect::<Vec<_>>()
    );
    assert_eq!((dup.size(), dup.rank()), (p, me));
    let base = if me >= p / 2 { p / 2 } else { 0 };
    assert_eq!(world.translate_ranks(&[me], &lower)?, [Some(me - base)]);
    // ranks of the other half are not in `lower`
    let other = if me >= p / 2 { 0 } else { p - 1 };
    assert_eq!(world.translate_ranks(&[other], &lower)?, [None]);
    let a = Window::allocate::<u64>(&odd, 1, info)?;
    let b = Window::allocate::<u64>(&lower, 1, info)?;
    let c = Window::allocate::<u64>(&dup, 1, info)?;
    a.fence(Assert::NONE)?;
    b.fence(Assert::NONE)?;
    c.fence(Assert::NONE)?;
    a.lock_all(Assert::NONE)?;
    b.lock_all(Assert::NONE)?;
    c.lock_all(Assert::NONE)?;
    let n = scaled(200u64);
    for _ in 0..n {
        a.accumulate(&[1u64], Rank::new(0), 0, Op::Sum)?;
        b.fetch_and_op(1u64, Rank::new(0), 0, Op::Sum)?;
        c.accumulate(&[1u64], Rank::new(0), 0, Op::Sum)?;
    }
    a.unlock_all()?;
    b.unlock_all()?;
    c.unlock_all()?;
    // each window's fence involves its own world's ranks only
    a.fence(Assert::NONE)?;
    b.fence(Assert::NONE)?;
    c.fence(Assert::NONE)?;
    if odd.rank() == 0 {
        assert_eq!(
            a.local_vec::<u64>()?,
            [n * odd.size() as u64],
            "parity window"
        );
    }
    if lower.rank() == 0 {
        assert_eq!(
            b.local_vec::<u64>()?,
            [n * lower.size() as u64],
            "half window"
        );
    }
    if dup.rank() == 0 {
        assert_eq!(c.local_vec::<u64>()?, [n * p as u64], "dup window");
    }
    world.barrier()?;
    let (mut a, mut b, mut c) = (a, b, c);
    a.free()?;
    b.free()?;
    c.free()
}

/// A sub-world's collectives never wait for ranks outside it: the first half runs
/// fences, barriers and PSCW epochs (groups numbered in the sub-world) while the
/// second half is held in a world barrier until the first half is done.
pub(crate) fn independent(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let first = me < p / 2;
    let Some(half) = sub_world(world, Some(u32::from(first)), 0)? else {
        return Ok(());
    };
    if first {
        let win = Window::allocate::<u64>(&half, 2, info)?;
        let q = half.size();
        let (r, next, prev) = (
            half.rank(),
            (half.rank() + 1) % q,
            (half.rank() + q - 1) % q,
        );
        for round in 0..scaled(50u64) {
            win.fence(Assert::NONE)?;
            half.barrier()?;
            // ring by PSCW: post to the previous rank, start on the next (sub-world ranks)
            win.post(&Group::new(&[prev])?, Assert::NONE)?;
            win.start(&Group::new(&[next])?, Assert::NONE)?;
            win.put(&[round * 100 + r as u64], Rank::new(next as u32), 0)?;
            win.complete()?;
            win.wait()?;
            let got = win.local_vec::<u64>()?;
            assert_eq!(got[0], round * 100 + prev as u64, "round {round}");
        }
        win.fence(Assert::NONE)?;
        let mut win = win;
        win.free()?;
    }
    // the second half waits here while the first half works in its own world
    world.barrier()?;
    Ok(())
}

/// Worlds made by their members alone (`create_group`): the odd ranks and the even
/// ranks each make a world at once, in reverse rank order, twice in a row with the
/// same group and tag (matched in order); each world's window counts exactly its
/// members' adds; a rank outside the group, or a group rank outside the world, is
/// refused before anything is shared.
pub(crate) fn create_group(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let mine: Vec<usize> = (0..p).filter(|r| r % 2 == me % 2).rev().collect();
    let group = Group::new(&mine)?;
    for round in 0..2u64 {
        let sub = match world.create_group(&group, 7) {
            Err(e) if !world.backend().builtin() => {
                assert_eq!(e.class(), ErrorClass::RmaFlavor);
                return world.barrier();
            }
            r => r?,
        };
        assert_eq!(sub.size(), mine.len());
        assert_eq!(mine[sub.rank()], me, "numbered in the group's order");
        assert_eq!(
            sub.translate_ranks(&(0..sub.size()).collect::<Vec<_>>(), world)?,
            mine.iter().map(|&r| Some(r)).collect::<Vec<_>>()
        );
        let win = Window::allocate::<u64>(&sub, 1, info)?;
        win.fence(Assert::NONE)?;
        win.accumulate(&[round + 1], Rank::new(0), 0, Op::Sum)?;
        win.fence(Assert::NONE)?;
        if sub.rank() == 0 {
            assert_eq!(win.local_vec::<u64>()?, [(round + 1) * mine.len() as u64]);
        }
        let mut win = win;
        win.free()?;
    }
    let others: Vec<usize> = (0..p).filter(|r| r % 2 != me % 2).collect();
    if !others.is_empty() {
        expect_class(
            world.create_group(&Group::new(&others)?, 7),
            ErrorClass::Arg,
        );
    }
    expect_class(
        world.create_group(&Group::new(&[me, p])?, 7),
        ErrorClass::Rank,
    );
    world.barrier()
}

/// Misuse: a group naming a rank outside the world, translation against an unrelated
/// world, a rank outside the world, a target rank outside a sub-world's window, and
/// a PSCW group outside it: each refused with its class, nothing changed.
pub(crate) fn misuse(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    expect_class(world.create(&Group::new(&[0, p])?), ErrorClass::Rank);
    let Some(pair) = sub_world(world, Some(0), 0)? else {
        return Ok(());
    };
    expect_class(pair.translate_ranks(&[p], world), ErrorClass::Rank);
    let solo = world.create(&Group::new(&[0])?)?;
    assert_eq!(solo.is_some(), me == 0);
    if let Some(s) = &solo {
        assert_eq!((s.size(), s.rank()), (1, 0));
        assert_eq!(s.translate_ranks(&[0], world)?, [Some(0)]);
    }
    let win = Window::allocate::<u64>(&pair, 1, info)?;
    win.fence(Assert::NONE)?;
    expect_class(win.put(&[1u64], Rank::new(p as u32), 0), ErrorClass::Rank);
    expect_class(win.post(&Group::new(&[p])?, Assert::NONE), ErrorClass::Rank);
    win.fence(Assert::NONE)?;
    assert_eq!(
        win.local_vec::<u64>()?,
        [0],
        "refused calls changed nothing"
    );
    assert_eq!(win.group().ranks(), (0..p).collect::<Vec<_>>());
    assert_eq!(
        win.world().translate_ranks(&[me], world)?,
        [Some(me)],
        "a dup-like split keeps the order"
    );
    let mut win = win;
    win.free()
}

/// The typed collectives (`World::broadcast`, `allgather_values`, `allreduce`, and
/// their one-value forms) on every backend: slices longer than one round of rma's
/// shared-memory all-gather, exact sums, MAXLOC on a pair type, and misuse (counts
/// that differ: COUNT on every rank; REPLACE, an op not defined on the type, a root
/// outside the world: refused before anything collective).
pub(crate) fn collectives(world: &World, _info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let want: Vec<u64> = (0..100).map(|i| i * 3 + 1).collect();
    let mut big = if me == 1 { want.clone() } else { vec![0; 100] };
    world.broadcast(1, &mut big)?;
    assert_eq!(big, want, "800 bytes: four rounds on rma's shared memory");
    assert_eq!(
        world.broadcast_value(p - 1, me as i32 * 5)?,
        (p as i32 - 1) * 5
    );
    let all = world.allgather_values(&[me as u16, 7])?;
    let expect: Vec<u16> = (0..p).flat_map(|r| [r as u16, 7]).collect();
    assert_eq!(all, expect);
    let offsets = world.allgather_value(me as i64 * 1000 - 1)?;
    assert_eq!(
        offsets,
        (0..p).map(|r| r as i64 * 1000 - 1).collect::<Vec<_>>()
    );
    // 40 f64 (320 bytes), sums of small integers: exact
    let mut v: Vec<f64> = (0..40).map(|i| (i * (me + 1)) as f64).collect();
    world.allreduce(&mut v, Op::Sum)?;
    let ranks_sum = (p * (p + 1) / 2) as f64;
    assert_eq!(v, (0..40).map(|i| i as f64 * ranks_sum).collect::<Vec<_>>());
    assert_eq!(
        world.allreduce_value(me as u32 ^ 5, Op::Max)?,
        (0..p as u32).map(|r| r ^ 5).max().unwrap_or(0)
    );
    assert_eq!(
        world.allreduce_value(!(1u8 << me), Op::Band)?,
        !((1u8 << p) - 1)
    );
    let best = world.allreduce_value(DoubleInt::new((me % 2) as f64, me as i32), Op::MaxLoc)?;
    assert_eq!(
        (best.value, best.index),
        (1.0, 1),
        "MAXLOC keeps the lowest index of the maximum"
    );
    // misuse
    let mut uneven = vec![0u8; 1 + usize::from(me == 0)];
    expect_class(world.broadcast(0, &mut uneven), ErrorClass::Count);
    assert_eq!(uneven[0], 0, "a refused broadcast leaves the buffer");
    expect_class(
        world.allgather_values(&vec![1u32; me + 1]),
        ErrorClass::Count,
    );
    expect_class(world.allreduce_value(1u32, Op::Replace), ErrorClass::Op);
    expect_class(world.allreduce_value(1.0f64, Op::Band), ErrorClass::Op);
    expect_class(world.broadcast_value(p, 0u8), ErrorClass::Rank);
    let root = usize::from(me != 0);
    expect_class(world.broadcast_value(root, 0u8), ErrorClass::Arg);
    let op = if me == 0 { Op::Sum } else { Op::Max };
    expect_class(world.allreduce_value(1u32, op), ErrorClass::Arg);
    // the world still agrees after the refusals
    assert_eq!(world.allreduce_value(1u64, Op::Sum)?, p as u64);
    world.barrier()
}

/// Node worlds (`World::split_shared`, `split_type`): the ranks that share memory,
/// with a shared window and an exact counter on it. Threads and rmarun's processes
/// are one node (or runs of `RMA_NODE_RANKS` ranks when that is set); under MPI the
/// node world runs on rma's shared memory, and `SplitType::SharedMpi` keeps one on
/// the library; a plugged backend refuses (RMA_FLAVOR).
pub(crate) fn node(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let Some(node) = or_refused(world, world.split_shared(), false)? else {
        return Ok(());
    };
    let per_node = std::env::var("RMA_NODE_RANKS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(p);
    if world.mode() != LaunchMode::Mpi || std::env::var_os("RMA_NODE_RANKS").is_some() {
        assert_eq!(node.size(), per_node.min(p - me / per_node * per_node));
        assert_eq!(node.rank(), me % per_node);
    }
    assert_eq!(node.translate_ranks(&[node.rank()], world)?, [Some(me)]);
    // the node world's own transports: the info's, unless it names the MPI library's
    let node_info = if world.mode() == LaunchMode::Mpi {
        Info::new()
    } else {
        info.clone()
    };
    check_node(world, &node, &node_info)?;
    if world.mode() == LaunchMode::Mpi {
        assert_eq!(
            node.mode(),
            LaunchMode::Processes,
            "a node world on rma's shared memory"
        );
        let on_mpi = world.split_type(SplitType::SharedMpi, 0)?;
        assert_eq!(on_mpi.mode(), LaunchMode::Mpi);
        assert_eq!(on_mpi.size(), node.size());
        // Open MPI's osc/rdma may not serve windows of split worlds (refused alike on
        // every rank): the node world on rma's shared memory is what serves them there
        if let Err(e) = Window::allocate::<u64>(&on_mpi, 1, info).map(drop) {
            assert_eq!(e.class(), ErrorClass::RmaFlavor, "{e}");
        }
    }
    world.barrier()
}

/// A shared window on `node` whose ranks each own 4 cells, read by every rank through
/// views, and a counter every rank adds into.
fn check_node(world: &World, node: &World, info: &Info) -> Result<()> {
    let me = node.rank();
    let Some(win) = shared_window::<u64>(node, 4, info)? else {
        return Ok(());
    };
    let mine = win.shared_query(Rank::new(me as u32))?.view::<u64>()?;
    for i in 0..4 {
        mine.store(i, (world.rank() * 4 + i) as u64)?;
    }
    win.sync()?;
    node.barrier()?;
    win.sync()?;
    let mut seen = Vec::new();
    for r in 0..node.size() {
        let mut cells = [0u64; 4];
        win.shared_query(Rank::new(r as u32))?
            .view::<u64>()?
            .read(0, &mut cells)?;
        seen.extend(cells);
    }
    let firsts = node.allgather_value(world.rank() as u64)?;
    let expect: Vec<u64> = firsts
        .iter()
        .flat_map(|&w| (0..4).map(move |i| w * 4 + i))
        .collect();
    assert_eq!(seen, expect);
    let counter = Window::allocate::<u64>(node, 1, info)?;
    counter.lock_all(Assert::NONE)?;
    let n = scaled(300u64);
    for _ in 0..n {
        counter.fetch_and_op(1u64, Rank::new(0), 0, Op::Sum)?;
    }
    counter.unlock_all()?;
    node.barrier()?;
    if me == 0 {
        assert_eq!(counter.local_vec::<u64>()?, [n * node.size() as u64]);
    }
    node.barrier()
}
