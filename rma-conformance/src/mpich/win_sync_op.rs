//! Ported from MPICH `test/mpi/errors/rma/win_sync_op.c`: an RMA call on a window with
//! no access epoch open (no fence yet) fails with class RMA_SYNC. Extended to every
//! call (get, put, accumulate, get_accumulate, fetch_and_op, compare_and_swap), to the
//! MPI-faithful forms, and to the null rank (MPI requires null-rank calls, too, to be
//! inside an epoch). Each refused call changes nothing: no window and no result
//! buffer. The window can then be freed (nothing was issued).

use rma_win::{
    Assert, BufferMut, Datatype, ErrorClass, Info, Op, Rank, Result, Target, Window, World,
};

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank() as i32;
    let n = world.size();
    let mut win = Window::allocate::<i32>(world, 4, info)?;
    let pattern = [me * 10, me * 10 + 1, me * 10 + 2, me * 10 + 3];
    win.write_local(0, &pattern)?;
    // make sure every rank has written its pattern before anyone could (wrongly) touch it
    world.barrier()?;
    let int = Datatype::of::<i32>();
    let sync = ErrorClass::RmaSync;
    let right = Rank::new(((world.rank() + 1) % n) as u32);
    for target in [Rank::new(0), right, Rank::NULL] {
        let mut result = [-9i32; 4];
        crate::expect_class(win.get(&mut result, target, 0), sync);
        crate::expect_class(
            win.get_with(
                BufferMut::typed(&mut result, 4, &int)?,
                Target::new(target, 0, 4, &int),
            ),
            sync,
        );
        crate::expect_class(win.put(&[1, 2, 3, 4], target, 0), sync);
        crate::expect_class(win.accumulate(&[1, 2, 3, 4], target, 0, Op::Sum), sync);
        crate::expect_class(
            win.get_accumulate(&[1, 2, 3, 4], &mut result, target, 0, Op::Sum),
            sync,
        );
        crate::expect_class(
            win.get_accumulate(&[], &mut result, target, 0, Op::NoOp),
            sync,
        );
        crate::expect_class(win.fetch_and_op(1i32, target, 0, Op::Sum), sync);
        crate::expect_class(win.compare_and_swap(1i32, 0, target, 0), sync);
        assert_eq!(result, [-9; 4], "a refused call wrote the result buffer");
    }
    world.barrier()?;
    assert_eq!(
        win.local_vec::<i32>()?,
        pattern,
        "a refused call changed a window"
    );
    // nothing was issued, so the window can be freed without a fence
    win.free()?;
    crate::expect_class(win.fence(Assert::NONE), ErrorClass::Win);
    Ok(())
}
