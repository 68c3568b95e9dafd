//! Ported from MPICH `test/mpi/errors/rma/win_sync_lock_at.c`: inside an active-target
//! epoch (every rank posts to and starts on the whole world and gets one element from
//! every rank), locking rank 0 fails with class RMA_SYNC (rule 16), and changes
//! nothing: the epoch's gets are right, complete and wait succeed, no lock was taken
//! (unlock then fails, and an exclusive lock can be had afterwards), and no window
//! changed.
//!
//! Adapted: the window is allocated and holds a per-rank value; the checks after the
//! epoch are our additions.

use crate::expect_class;
use rma_win::{Assert, ErrorClass, Group, Info, LockType, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let zero = Rank::new(0);
    let all = Group::new(&(0..n).collect::<Vec<_>>())?;
    let mut win = Window::allocate::<i32>(world, 1, info)?;
    win.write_local(0, &[100 + me as i32])?;
    world.barrier()?;
    win.post(&all, Assert::NONE)?;
    win.start(&all, Assert::NONE)?;
    let mut got = vec![-1i32; n];
    for (i, g) in got.iter_mut().enumerate() {
        win.get(std::slice::from_mut(g), i, 0)?;
    }
    expect_class(
        win.lock(LockType::Shared, zero, Assert::NOCHECK),
        ErrorClass::RmaSync,
    );
    expect_class(win.lock_all(Assert::NONE), ErrorClass::RmaSync);
    win.complete()?;
    win.wait()?;
    let want: Vec<i32> = (0..n as i32).map(|i| 100 + i).collect();
    assert_eq!(got, want, "gets of the epoch");
    expect_class(win.unlock(zero), ErrorClass::RmaSync);
    world.barrier()?;
    win.lock(LockType::Exclusive, zero, Assert::NONE)?;
    win.unlock(zero)?;
    world.barrier()?;
    assert_eq!(
        win.local_vec::<i32>()?,
        vec![100 + me as i32],
        "window changed"
    );
    win.free()
}
