//! Ported from MPICH `test/mpi/errors/rma/win_sync_free_pt.c`: freeing a window while
//! holding a (shared, NOCHECK) lock on rank 0 fails with class RMA_SYNC (rule 16), and
//! changes nothing: the window is still alive and the lock still held (a get under it
//! reads the right value, unlock succeeds), no window changed, and after the unlock
//! the free succeeds. Also with lock_all (our addition).
//!
//! Adapted: the window is allocated; the ranks all lock rank 0 at once, as in MPICH.

use crate::expect_class;
use rma_win::{Assert, ErrorClass, Info, LockType, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let zero = Rank::new(0);
    let mut win = Window::allocate::<i32>(world, 1, info)?;
    win.write_local(0, &[100 + me as i32])?;
    world.barrier()?;
    win.lock(LockType::Shared, zero, Assert::NOCHECK)?;
    expect_class(win.free(), ErrorClass::RmaSync);
    let mut got = [0i32];
    win.get(&mut got, zero, 0)?;
    win.unlock(zero)?;
    assert_eq!(got[0], 100, "get after the refused free");
    win.lock_all(Assert::NONE)?;
    expect_class(win.free(), ErrorClass::RmaSync);
    let right = Rank::new(((me + 1) % world.size()) as u32);
    win.get(&mut got, right, 0)?;
    win.unlock_all()?;
    assert_eq!(
        got[0],
        100 + ((me + 1) % world.size()) as i32,
        "get under lock_all after the refused free"
    );
    world.barrier()?;
    assert_eq!(
        win.local_vec::<i32>()?,
        vec![100 + me as i32],
        "window changed"
    );
    win.free()
}
