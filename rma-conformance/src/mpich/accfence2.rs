//! Ported from MPICH `test/mpi/rma/accfence2.c`: every rank accumulates the same
//! integer array into rank 0's window with SUM inside one fence epoch; rank 0 then
//! holds each value times the number of ranks. Repeated over several sizes.

use rma_win::{Assert, Info, Op, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let p = world.size() as i32;
    for count in [1usize, 7, 100, 4096, 65536] {
        let win = Window::allocate::<i32>(world, if world.rank() == 0 { count } else { 0 }, info)?;
        let origin: Vec<i32> = (0..count as i32).collect();
        win.fence(Assert::NONE)?;
        win.accumulate(&origin, Rank::new(0), 0, Op::Sum)?;
        win.fence(Assert::NONE)?;
        if world.rank() == 0 {
            let got: Vec<i32> = win.local_vec()?;
            for (i, v) in got.iter().enumerate() {
                assert_eq!(*v, i as i32 * p, "count {count}, element {i}");
            }
        }
        let mut win = win;
        win.free()?;
    }
    Ok(())
}
