//! Dynamic windows (`Window::create_dynamic`, `attach`, `detach`), on every transport
//! and launch mode: every call on regions of every rank with exact results; regions
//! detached and attached again while others keep working; every misuse refused with
//! its class and nothing changed.

use crate::{dynamic_window, expect_class, scaled};
use rma_win::{Assert, ErrorClass, Group, Info, Op, Rank, Result, Window, World};

fn addrs(world: &World, disp: i64) -> Result<Vec<i64>> {
    Ok(world
        .allgather(&disp.to_ne_bytes())?
        .iter()
        .map(|b| i64::from_ne_bytes(b.as_slice().try_into().unwrap_or_default()))
        .collect())
}

/// Every rank attaches a region of `2 + p` u64; every rank then puts, gets,
/// accumulates, fetches and compares-and-swaps into every rank's region, through the
/// window's calls and a target handle; each region's contents come back exact.
pub(crate) fn every_call(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let Some(win) = dynamic_window(world, info)? else {
        return Ok(());
    };
    // [counter, CAS slot, put slot per rank...]
    let region = win.attach(vec![0u64; 2 + p])?;
    assert_eq!(region.len(), 2 + p);
    let at = addrs(world, region.disp())?;
    let n = scaled(100u64);
    win.lock_all(Assert::NONE)?;
    for (r, &a) in at.iter().enumerate() {
        let t = Rank::new(r as u32);
        for _ in 0..n {
            win.accumulate(&[1u64], t, a, Op::Sum)?;
        }
        win.fetch_and_op(1u64, t, a, Op::Sum)?;
        // a 4-byte CAS in the slot's first half (Open MPI 4's osc/rdma crashes on
        // 8-byte ones, which rma-mpi refuses)
        win.compare_and_swap(me as u32 + 1, 0u32, t, a + 8)?;
        win.put(&[me as u64 * 10 + r as u64], t, a + 8 * (2 + me) as i64)?;
        win.flush(t)?;
        let mut back = [0u64];
        win.get(&mut back, t, a + 8 * (2 + me) as i64)?;
        assert_eq!(back, [me as u64 * 10 + r as u64]);
        let mut old = [0u64];
        win.get_accumulate(&[0u64], &mut old, t, a, Op::NoOp)?;
        assert!(old[0] > n, "my own adds at rank {r} are visible");
    }
    win.unlock_all()?;
    {
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        for (r, &a) in at.iter().enumerate() {
            let h = epoch.target(Rank::new(r as u32))?;
            h.fetch_add(1u64, a)?;
            expect_class(
                h.fetch_add(1u64, a + 8 * (2 + p) as i64),
                ErrorClass::RmaRange,
            );
        }
        epoch.unlock()?;
    }
    world.barrier()?;
    let got = win.detach(region)?;
    assert_eq!(
        got[0],
        (n + 2) * p as u64,
        "every add to rank {me}'s counter"
    );
    let winner = u32::from_ne_bytes(got[1].to_ne_bytes()[..4].try_into().unwrap_or_default());
    assert!((1..=p as u32).contains(&winner), "one CAS winner");
    for (r, v) in got[2..].iter().enumerate() {
        assert_eq!(*v, r as u64 * 10 + me as u64, "rank {r}'s put");
    }
    world.barrier()?;
    let mut win = win;
    win.free()
}

/// Regions come and go: each round every rank detaches its region and attaches a new
/// one (a different address for each round while rounds' regions overlap in time);
/// calls to the old address are refused, to the new one land.
pub(crate) fn churn(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let Some(win) = dynamic_window(world, info)? else {
        return Ok(());
    };
    let next = Rank::new(((me + 1) % p) as u32);
    let mut region = win.attach(vec![0u64; 4])?;
    for round in 1..=scaled(20u64) {
        let at = addrs(world, region.disp())?;
        win.lock_all(Assert::NONE)?;
        win.accumulate(&[round], next, at[(me + 1) % p] + 8, Op::Sum)?;
        win.unlock_all()?;
        world.barrier()?;
        // a fresh region (attached before the old one goes: another place)
        let fresh = win.attach(vec![round; 4])?;
        let got = win.detach(std::mem::replace(&mut region, fresh))?;
        // made last round holding round - 1 everywhere; the left neighbour added round
        let base = round - 1;
        assert_eq!(got, [base, base + round, base, base], "round {round}");
        world.barrier()?;
        // the old address is gone
        win.lock_all(Assert::NONE)?;
        expect_class(
            win.put(&[9u64], next, at[(me + 1) % p]),
            ErrorClass::RmaRange,
        );
        win.unlock_all()?;
        world.barrier()?;
    }
    win.detach(region)?;
    let mut win = win;
    win.free()
}

/// Misuse, each refused with its class and nothing changed.
pub(crate) fn misuse(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let plain = Window::allocate::<u64>(world, 1, info)?;
    expect_class(plain.attach(vec![1u64]), ErrorClass::RmaFlavor);
    let info = info.clone().with("rma_dynamic_bytes", "4096");
    let Some(win) = dynamic_window(world, &info)? else {
        return Ok(());
    };
    assert_eq!(win.info().get("rma_dynamic_bytes"), Some("4096"));
    let a = win.attach(vec![7u64; 8])?; // 64 bytes
    let b = win.attach(vec![8u64; 8])?;
    // no room: 4096 bytes in all
    expect_class(win.attach(vec![0u8; 4096]), ErrorClass::RmaAttach);
    // another window's region
    let other = dynamic_window(world, &info)?.expect("made above");
    let foreign = other.attach(vec![1u64])?;
    // refused, and the region handed back unchanged: its own window detaches it
    let foreign = match win.detach(foreign) {
        Err(e) => {
            assert_eq!(e.error.class(), ErrorClass::RmaAttach);
            e.region
        }
        Ok(v) => panic!("detached another window's region: {v:?}"),
    };
    assert_eq!(other.detach(foreign)?, [1]);
    expect_class(win.attach(Vec::<u64>::new()), ErrorClass::Arg);
    let at = addrs(world, a.disp())?;
    let bt = addrs(world, b.disp())?;
    let peer = (me + 1) % p;
    let t = Rank::new(peer as u32);
    win.lock_all(Assert::NONE)?;
    // before, past, and across two regions; a zero or small address
    expect_class(win.put(&[1u64], t, at[peer] - 8), ErrorClass::RmaRange);
    expect_class(win.put(&[1u64; 2], t, at[peer] + 56), ErrorClass::RmaRange);
    if bt[peer] == at[peer] + 64 {
        expect_class(win.put(&[1u64; 9], t, at[peer]), ErrorClass::RmaRange);
    }
    expect_class(win.fetch_and_op(1u64, t, 0, Op::Sum), ErrorClass::RmaRange);
    expect_class(
        win.accumulate(&[1u64], t, 16, Op::Sum),
        ErrorClass::RmaRange,
    );
    win.unlock_all()?;
    // detach while this rank's exposure epoch is open
    let ranks: Vec<usize> = (0..p).collect();
    win.post(&Group::new(&ranks)?, Assert::NONE)?;
    win.start(&Group::new(&ranks)?, Assert::NONE)?;
    win.complete()?;
    let b = match win.detach(b) {
        Err(e) => {
            assert_eq!(e.error.class(), ErrorClass::RmaSync);
            e.region
        }
        Ok(v) => panic!("detached during an exposure epoch: {v:?}"),
    };
    win.wait()?;
    world.barrier()?;
    assert_eq!(win.detach(a)?, [7; 8], "refused calls changed nothing");
    assert_eq!(
        win.detach(b)?,
        [8; 8],
        "the region a refused detach handed back"
    );
    world.barrier()?;
    let (mut win, mut other, mut plain) = (win, other, plain);
    other.free()?;
    win.free()?;
    expect_class(win.attach(vec![1u64]), ErrorClass::Win);
    plain.free()
}
