//! Ported from MPICH `test/mpi/errors/rma/win_sync_lock_pt.c`: locking rank 0 a second
//! time while this rank already holds a (shared, NOCHECK) lock on it fails with class
//! RMA_SYNC (rule 16), and changes nothing: the first lock still holds (a get under it
//! works and reads the right value), one unlock ends it, and no window changed.
//!
//! Adapted: the window is allocated; the get and the check that the epoch ended are
//! our additions.

use crate::expect_class;
use rma_win::{Assert, ErrorClass, Info, LockType, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let zero = Rank::new(0);
    let mut win = Window::allocate::<i32>(world, 1, info)?;
    win.write_local(0, &[100 + me as i32])?;
    world.barrier()?;
    win.lock(LockType::Shared, zero, Assert::NOCHECK)?;
    expect_class(
        win.lock(LockType::Shared, zero, Assert::NOCHECK),
        ErrorClass::RmaSync,
    );
    expect_class(
        win.lock(LockType::Exclusive, zero, Assert::NONE),
        ErrorClass::RmaSync,
    );
    let mut got = [0i32];
    win.get(&mut got, zero, 0)?;
    win.unlock(zero)?;
    assert_eq!(got[0], 100, "get under the first lock");
    // one unlock ended the epoch
    expect_class(win.unlock(zero), ErrorClass::RmaSync);
    expect_class(win.get(&mut got, zero, 0), ErrorClass::RmaSync);
    world.barrier()?;
    assert_eq!(
        win.local_vec::<i32>()?,
        vec![100 + me as i32],
        "window changed"
    );
    win.free()
}
