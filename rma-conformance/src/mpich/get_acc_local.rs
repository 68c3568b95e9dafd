//! Ported from MPICH `test/mpi/rma/get_acc_local.c`: get_accumulate to oneself (rule
//! 19) under a shared lock on oneself, one call per epoch: each adds 3 to a counter in
//! a window created over the rank's own variable and fetches the old value, which must
//! be 3 times the number of earlier calls; the variable ends at 3 times the number of
//! calls.
//!
//! Adapted: MPICH runs it on one process; here every rank of two does it at once, each
//! on its own window, and the final value is read back through the borrowed variable
//! once the window is gone.

use rma_win::{Assert, Info, LockType, Op, Rank, Result, Window, World};

fn niter() -> i32 {
    crate::scaled(1000)
}
const ACC: i32 = 3;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = Rank::new(world.rank() as u32);
    let mut counter = [0i32];
    {
        let mut win = Window::create(world, &mut counter, &crate::create_info(world, info))?;
        for i in 0..niter() {
            let mut out = [-1i32];
            win.lock(LockType::Shared, me, Assert::NONE)?;
            win.get_accumulate(&[ACC], &mut out, me, 0, Op::Sum)?;
            win.unlock(me)?;
            assert_eq!(out[0], ACC * i, "call {i} fetched");
        }
        win.free()?;
    }
    assert_eq!(counter[0], ACC * niter(), "final counter");
    Ok(())
}
