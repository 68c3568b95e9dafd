//! Ported from MPICH `test/mpi/errors/rma/win_sync_lock_fence.c`, the part fence can
//! express: once the fence epoch has ended, an RMA call fails with class RMA_SYNC
//! until the next fence opens one. MPICH ends the fence epoch by taking and releasing
//! a lock inside it; rma has no locks yet, so the epoch is ended by a fence asserting
//! NOSUCCEED (which closes it without opening the next). The refused call changes
//! nothing; a following fence opens a new epoch in which the same call succeeds.

use rma_win::{Assert, ErrorClass, Info, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank() as i32;
    let mut win = Window::allocate::<i32>(world, 1, info)?;
    win.write_local(0, &[7 + me])?;
    let root = Rank::new(0);
    win.fence(Assert::NONE)?;
    let mut got = [-1i32];
    win.get(&mut got, root, 0)?;
    assert_eq!(got, [7]);
    win.fence(Assert::NOSUCCEED)?;
    let mut again = [-1i32];
    crate::expect_class(win.get(&mut again, root, 0), ErrorClass::RmaSync);
    crate::expect_class(win.put(&[99i32], root, 0), ErrorClass::RmaSync);
    assert_eq!(again, [-1], "a refused get wrote the result");
    world.barrier()?;
    assert_eq!(
        win.local_vec::<i32>()?,
        vec![7 + me],
        "a refused call changed a window"
    );
    win.fence(Assert::NOPRECEDE)?;
    win.get(&mut again, root, 0)?;
    assert_eq!(again, [7]);
    win.fence(Assert::NONE)?;
    win.free()
}
