//! Ported from MPICH `test/mpi/rma/compare_and_swap.c`: Compare_and_swap on one `i32`
//! per rank, stepping the value from `i` to `i + 1` with compare `i`:
//!
//! - **self**: each rank on its own element; every call finds `i` and swaps;
//! - **neighbor**: each rank on its right neighbour's element (one writer per
//!   element); same;
//! - **contention**: every rank but 0 runs the same sequence on rank 0's element at
//!   once. Whatever the interleaving the element ends at the number of steps, and (our
//!   addition) exactly that many calls succeed in total, each step `i -> i + 1` won by
//!   exactly one rank, which a non-atomic swap would break.
//!
//! Each phase runs twice: once in one fence epoch (our version, with the resets between
//! fences), and once as MPICH does it, every call in its own exclusive lock epoch on the
//! target, with barriers around the resets and final values read under an exclusive
//! lock on oneself. The locked phases run fewer calls (`lock_iter()`).

use rma_win::{Assert, Info, LockType, Rank, Result, Window, World};

fn iter() -> i32 {
    crate::scaled(5000)
}
fn lock_iter() -> i32 {
    crate::scaled(300)
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let mut win = Window::allocate::<i32>(world, 1, info)?;

    for (phase, target) in [("self", me), ("neighbour", (me + 1) % n)] {
        win.fence(Assert::NONE)?;
        for i in 0..iter() {
            let old = win.compare_and_swap(i + 1, i, target, 0)?;
            assert_eq!(old, i, "{phase}: call {i} on rank {target}");
        }
        win.fence(Assert::NONE)?;
        assert_eq!(
            win.local_vec::<i32>()?,
            vec![iter()],
            "{phase}: final value"
        );
        win.write_local(0, &[0i32])?;
    }

    win.fence(Assert::NONE)?;
    let mut wins = 0u32;
    if me != 0 {
        for i in 0..iter() {
            let old = win.compare_and_swap(i + 1, i, Rank::new(0), 0)?;
            assert!(
                old >= i && old <= iter(),
                "contention: call {i} fetched {old}"
            );
            if old == i {
                wins += 1;
            }
        }
    }
    win.fence(Assert::NONE)?;
    if me == 0 {
        assert_eq!(
            win.local_vec::<i32>()?,
            vec![iter()],
            "contention: final value"
        );
    }
    let total: u32 = world
        .allgather(&wins.to_le_bytes())?
        .iter()
        .map(|b| u32::from_le_bytes(b[..4].try_into().expect("4 bytes")))
        .sum();
    assert_eq!(
        total,
        iter() as u32,
        "contention: successful swaps over all ranks"
    );
    win.fence(Assert::NOSUCCEED)?;
    locked(world, &win)?;
    win.free()
}

/// One compare_and_swap in its own exclusive lock epoch on `target`.
fn locked_cas(win: &Window<'_>, next: i32, cmp: i32, target: usize) -> Result<i32> {
    let t = target;
    win.lock(LockType::Exclusive, t, Assert::NONE)?;
    let old = win.compare_and_swap(next, cmp, t, 0)?;
    win.unlock(t)?;
    Ok(old)
}

/// This rank's element, read (or reset, with `Some`) under an exclusive lock on itself.
fn own_value(world: &World, win: &Window<'_>, reset: Option<i32>) -> Result<i32> {
    let own = Rank::new(world.rank() as u32);
    win.lock(LockType::Exclusive, own, Assert::NONE)?;
    let v = win.local_vec::<i32>()?[0];
    if let Some(r) = reset {
        win.write_local(0, &[r])?;
    }
    win.unlock(own)?;
    Ok(v)
}

/// The phases as MPICH runs them: every call in an exclusive lock on its target.
fn locked(world: &World, win: &Window<'_>) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    world.barrier()?;
    own_value(world, win, Some(0))?;
    world.barrier()?;
    for (phase, target) in [("locked self", me), ("locked neighbour", (me + 1) % n)] {
        for i in 0..lock_iter() {
            let old = locked_cas(win, i + 1, i, target)?;
            assert_eq!(old, i, "{phase}: call {i} on rank {target}");
        }
        world.barrier()?;
        let v = own_value(world, win, Some(0))?;
        assert_eq!(v, lock_iter(), "{phase}: final value");
        world.barrier()?;
    }
    let mut wins = 0u32;
    if me != 0 {
        for i in 0..lock_iter() {
            let old = locked_cas(win, i + 1, i, 0)?;
            assert!(
                old >= i && old <= lock_iter(),
                "locked contention: call {i} fetched {old}"
            );
            wins += u32::from(old == i);
        }
    }
    world.barrier()?;
    if me == 0 {
        let v = own_value(world, win, None)?;
        assert_eq!(v, lock_iter(), "locked contention: final value");
    }
    let total: u32 = world
        .allgather(&wins.to_le_bytes())?
        .iter()
        .map(|b| u32::from_le_bytes(b[..4].try_into().expect("4 bytes")))
        .sum();
    assert_eq!(
        total,
        lock_iter() as u32,
        "locked contention: successful swaps over all ranks"
    );
    world.barrier()
}
