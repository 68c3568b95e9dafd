//! Ported from MPICH `test/mpi/errors/rma/win_sync_free_at.c`: freeing a window while
//! an active-target epoch has uncompleted calls fails with class RMA_SYNC. Every rank
//! gets one element from every rank and then tries to free the window: refused, and
//! the window is unchanged and still usable (the fetched values are right, and more
//! calls can follow). After a fence completes the calls, the free succeeds; a freed
//! window refuses further use with class WIN.
//!
//! Adapted: MPICH opens the epoch with post/start (PSCW); here with a fence, the only
//! active-target synchronization rma has so far.

use rma_win::{Assert, ErrorClass, Info, Op, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let mut win = Window::allocate::<i32>(world, 2, info)?;
    win.write_local(0, &[100 + me as i32, 0])?;
    win.fence(Assert::NONE)?;
    let mut got = vec![-1i32; n];
    for (i, g) in got.iter_mut().enumerate() {
        win.get(std::slice::from_mut(g), Rank::new(i as u32), 0)?;
    }
    crate::expect_class(win.free(), ErrorClass::RmaSync);
    // unchanged and usable: each rank adds 1 to its right neighbour's second element
    // (not the one the others may still be reading)
    let want: Vec<i32> = (0..n as i32).map(|i| 100 + i).collect();
    assert_eq!(got, want, "fetched values");
    win.accumulate(&[1i32], Rank::new(((me + 1) % n) as u32), 1, Op::Sum)?;
    win.fence(Assert::NONE)?;
    assert_eq!(
        win.local_vec::<i32>()?,
        vec![100 + me as i32, 1],
        "window after the refused free"
    );
    win.free()?;
    crate::expect_class(win.fence(Assert::NONE), ErrorClass::Win);
    crate::expect_class(win.free(), ErrorClass::Win);
    Ok(())
}
