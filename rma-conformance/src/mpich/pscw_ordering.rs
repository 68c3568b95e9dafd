//! Ported from MPICH `test/mpi/rma/pscw_ordering.c`: generalized active-target
//! synchronization where start comes before post (rule 14). Even ranks access odd
//! ones and are accessed by them: in the first exchange evens call start(odds) before
//! post(odds), odds post(evens) before start(evens), and every rank puts its rank
//! number into its own slot at each target. Start must not wait for the post, or the
//! evens and odds would wait for each other. In the second exchange evens work among
//! evens and odds among odds (each rank also targets itself). Afterwards every rank's
//! window holds `i` in slot `i`.
//!
//! Adapted: groups are `Group::new` over world ranks; the initial fill (under a shared
//! lock on oneself, as in MPICH) is followed by nothing else, since the post orders it
//! before any put.

use rma_win::{Assert, Group, Info, LockType, Rank, Result, Window, World};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let evens: Vec<usize> = (0..n).step_by(2).collect();
    let odds: Vec<usize> = (1..n).step_by(2).collect();
    let (even_g, odd_g) = (Group::new(&evens)?, Group::new(&odds)?);
    let mut win = Window::allocate::<i32>(world, n, info)?;
    let own = Rank::new(me as u32);
    win.lock(LockType::Shared, own, Assert::NONE)?;
    win.write_local(0, &vec![-1i32; n])?;
    win.unlock(own)?;

    let put_all = |targets: &[usize]| -> Result<()> {
        for &t in targets {
            win.put(&[me as i32], Rank::new(t as u32), me as i64)?;
        }
        Ok(())
    };
    // odd/even exchange: the evens start before they post
    if me % 2 == 0 {
        win.start(&odd_g, Assert::NONE)?;
        win.post(&odd_g, Assert::NONE)?;
        put_all(&odds)?;
    } else {
        win.post(&even_g, Assert::NONE)?;
        win.start(&even_g, Assert::NONE)?;
        put_all(&evens)?;
    }
    win.complete()?;
    win.wait()?;
    // even/even and odd/odd exchange
    let (g, members) = if me % 2 == 0 {
        (&even_g, &evens)
    } else {
        (&odd_g, &odds)
    };
    win.post(g, Assert::NONE)?;
    win.start(g, Assert::NONE)?;
    put_all(members)?;
    win.complete()?;
    win.wait()?;

    let want: Vec<i32> = (0..n as i32).collect();
    assert_eq!(win.local_vec::<i32>()?, want, "slots after both exchanges");
    world.barrier()?;
    win.free()
}
