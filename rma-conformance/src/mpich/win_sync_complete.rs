//! Ported from MPICH `test/mpi/errors/rma/win_sync_complete.c`: complete with no start
//! epoch open fails with class RMA_SYNC (rule 16), and changes nothing: the windows
//! keep their contents, no epoch was opened or closed (a second complete fails too,
//! and a regular PSCW epoch works afterwards), and the window can be freed.
//!
//! Adapted: the window is allocated; the follow-up epoch is our addition.

use crate::expect_class;
use rma_win::{Assert, ErrorClass, Group, Info, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let mut win = Window::allocate::<i32>(world, 1, info)?;
    win.write_local(0, &[100 + me as i32])?;
    world.barrier()?;
    expect_class(win.complete(), ErrorClass::RmaSync);
    expect_class(win.complete(), ErrorClass::RmaSync);
    world.barrier()?;
    assert_eq!(
        win.local_vec::<i32>()?,
        vec![100 + me as i32],
        "window changed"
    );
    // the epoch state is untouched: a full PSCW ring still works
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    win.post(&Group::new(&[left])?, Assert::NONE)?;
    win.start(&Group::new(&[right])?, Assert::NONE)?;
    let mut got = [0i32];
    win.get(&mut got, Rank::new(right as u32), 0)?;
    win.complete()?;
    win.wait()?;
    assert_eq!(got[0], 100 + right as i32, "get in the follow-up epoch");
    expect_class(win.complete(), ErrorClass::RmaSync);
    win.free()
}
