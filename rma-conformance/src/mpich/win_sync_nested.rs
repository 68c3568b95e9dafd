//! Ported from MPICH `test/mpi/errors/rma/win_sync_nested.c`: inside a start epoch
//! (every rank posts to and starts on the whole world, then gets one element from
//! every rank), a second start fails with class RMA_SYNC; after complete, a second
//! complete fails with RMA_SYNC as well (rule 16). Neither changes anything: the
//! gets of the epoch fetch the right values, the first complete and the wait succeed,
//! and no window changed.
//!
//! Adapted: the window is allocated and holds a per-rank value, so the gets can be
//! checked.

use crate::expect_class;
use rma_win::{Assert, ErrorClass, Group, Info, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let all = Group::new(&(0..n).collect::<Vec<_>>())?;
    let mut win = Window::allocate::<i32>(world, 1, info)?;
    win.write_local(0, &[100 + me as i32])?;
    world.barrier()?;
    win.post(&all, Assert::NONE)?;
    win.start(&all, Assert::NONE)?;
    let mut got = vec![-1i32; n];
    for (i, g) in got.iter_mut().enumerate() {
        win.get(std::slice::from_mut(g), Rank::new(i as u32), 0)?;
    }
    expect_class(win.start(&all, Assert::NONE), ErrorClass::RmaSync);
    win.complete()?;
    expect_class(win.complete(), ErrorClass::RmaSync);
    win.wait()?;
    let want: Vec<i32> = (0..n as i32).map(|i| 100 + i).collect();
    assert_eq!(got, want, "gets of the epoch");
    world.barrier()?;
    assert_eq!(
        win.local_vec::<i32>()?,
        vec![100 + me as i32],
        "window changed"
    );
    win.free()
}
