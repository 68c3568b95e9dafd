//! Ported from MPICH `test/mpi/errors/rma/win_sync_unlock.c`: unlocking a rank this
//! rank has not locked fails with class RMA_SYNC (rule 16), and changes nothing: no
//! window changed, and (our addition) the lock of rank 0 can still be taken,
//! exclusively, and released, after which a second unlock fails again.
//!
//! Adapted: the window is allocated.

use crate::expect_class;
use rma_win::{Assert, ErrorClass, Info, LockType, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let zero = Rank::new(0);
    let mut win = Window::allocate::<i32>(world, 1, info)?;
    win.write_local(0, &[100 + me as i32])?;
    world.barrier()?;
    expect_class(win.unlock(zero), ErrorClass::RmaSync);
    world.barrier()?;
    assert_eq!(
        win.local_vec::<i32>()?,
        vec![100 + me as i32],
        "window changed"
    );
    // a refused unlock released nothing and left no epoch: taking the lock works
    win.lock(LockType::Exclusive, zero, Assert::NONE)?;
    let mut got = [0i32];
    win.get(&mut got, zero, 0)?;
    win.unlock(zero)?;
    assert_eq!(got[0], 100, "get under the lock");
    expect_class(win.unlock(zero), ErrorClass::RmaSync);
    world.barrier()?;
    win.free()
}
