//! Windows on worlds split from the world (`World::split`, `dup`, `create`,
//! `translate_ranks`), on every transport and launch mode: ranks numbered within the
//! sub-world; windows of overlapping sub-worlds used at once; one sub-world's
//! collectives never waiting for another's; PSCW groups relative to the window's
//! world; rank translation; misuse refused.

use crate::{expect_class, scaled, sub_world};
use rma_win::{Assert, ErrorClass, Group, Info, Op, Rank, Result, Window, World};

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
