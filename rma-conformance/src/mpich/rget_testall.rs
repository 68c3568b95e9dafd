//! Ported from MPICH `test/mpi/rma/rget_testall.c`: two rget requests under lock_all,
//! completed by polling `Request::test_all` until it reports both done; the results
//! are the two values rank 0 stored in its window (under an exclusive lock on itself)
//! and polling reports no error.
//!
//! Adapted: MPI_Testall's statuses have no counterpart; the Result of test_all plays
//! their role.

use rma_win::{Assert, Info, LockType, Rank, Request, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = Rank::new(world.rank() as u32);
    let mut win = Window::allocate::<i32>(world, 2, info)?;
    win.lock(LockType::Exclusive, me, Assert::NONE)?;
    win.write_local(0, &[1i32, 2])?;
    win.unlock(me)?;
    world.barrier()?;
    win.lock_all(Assert::NONE)?;
    let (mut a, mut b) = ([0i32], [0i32]);
    {
        let mut reqs = vec![
            win.rget(&mut a, Rank::new(0), 0)?,
            win.rget(&mut b, Rank::new(0), 1)?,
        ];
        let mut polls = 0u32;
        while !Request::test_all(&mut reqs)? {
            polls += 1;
            assert!(polls < 10_000_000, "test_all never reported completion");
            std::thread::yield_now();
            world.check_peers()?;
        }
        Request::wait_all(reqs)?;
    }
    assert_eq!((a[0], b[0]), (1, 2), "rget results");
    win.unlock_all()?;
    world.barrier()?;
    win.free()
}
