//! Ported from MPICH `test/mpi/rma/rget_unlock.c`: rget requests issued in a
//! lock_all (NOCHECK) epoch may be completed after unlock_all (rule 15). Every rank
//! reads its right neighbour's window (over memory the neighbour created it on) one
//! element per request, closes the epoch, and only then waits for the requests: the
//! results are all there. The buffer is then reused, and (our addition) later epochs
//! leave the reused buffer alone.
//!
//! Adapted: MPICH reuses the result buffer *before* waiting, to catch an unlock_all
//! that leaves gets outstanding; in rma a request keeps its result buffer borrowed, so
//! that order does not compile, and the port waits after the epoch instead.

use rma_win::{Assert, Info, Rank, Request, Result, Window, World};

const N: usize = 128;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let right = (me + 1) % world.size();
    let trg = Rank::new(right as u32);
    let mut exposed = vec![me as i32; N];
    let mut win = Window::create(world, &mut exposed, &crate::create_info(world, info))?;
    let mut local = vec![-1i32; N];
    win.lock_all(Assert::NOCHECK)?;
    let reqs = local
        .chunks_mut(1)
        .enumerate()
        .map(|(i, c)| win.rget(c, trg, i as i64))
        .collect::<Result<Vec<_>>>()?;
    win.unlock_all()?;
    Request::wait_all(reqs)?;
    assert!(
        local.iter().all(|&v| v == right as i32),
        "rget results after the epoch: {local:?}"
    );
    local.iter_mut().for_each(|v| *v = -2);
    win.lock_all(Assert::NOCHECK)?;
    win.flush_all()?;
    win.unlock_all()?;
    world.barrier()?;
    assert!(local.iter().all(|&v| v == -2), "the reused buffer changed");
    win.free()
}
