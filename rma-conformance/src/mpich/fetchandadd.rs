//! Ported from MPICH `test/mpi/rma/fetchandadd.c`, the non-scalable fetch-and-add
//! counter of "Using MPI-2" (fig. 6.12): rank 0's window holds one slot per rank; to
//! take a number, rank r, under an exclusive lock on rank 0, adds 1 to slot r and gets
//! every other slot with one indexed datatype that skips slot r, then adds up what it
//! got and the count it keeps of its own increments. Every rank but 0 takes numbers
//! repeatedly; all the numbers taken, over all ranks, must be exactly 0, 1, ..., total-1
//! (MPICH checks that the sorted numbers are consecutive; we also check they start at
//! 0 and that rank 0's slots end at the right counts).
//!
//! Adapted: 4 ranks instead of 7, 200 numbers per rank instead of 20, and the numbers
//! are gathered through a window (`gather_all`) instead of MPI_Gather.

use rma_win::{
    Assert, BufferMut, Datatype, Info, LockType, Op, Rank, Result, Target, Window, World,
};

fn ntimes() -> usize {
    crate::scaled(200)
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let zero = Rank::new(0);
    let mut win = Window::allocate::<i32>(world, if me == 0 { n } else { 0 }, info)?;
    world.barrier()?;
    let mut taken = Vec::with_capacity(ntimes());
    if me != 0 {
        let mut others = Datatype::indexed(
            &[me, n - me - 1],
            &[0, me as isize + 1],
            &Datatype::of::<i32>(),
        )?;
        others.commit();
        let mut slots = vec![0i32; n];
        for mine in 0..ntimes() as i32 {
            win.lock(LockType::Exclusive, zero, Assert::NONE)?;
            win.accumulate(&[1i32], zero, me as i64, Op::Sum)?;
            win.get_with(
                BufferMut::typed(&mut slots, 1, &others)?,
                Target::new(zero, 0, 1, &others),
            )?;
            win.unlock(zero)?;
            slots[me] = mine;
            taken.push(slots.iter().sum::<i32>());
        }
    }
    world.barrier()?;
    if me == 0 {
        let mut want = vec![ntimes() as i32; n];
        want[0] = 0;
        assert_eq!(win.local_vec::<i32>()?, want, "the counter's slots");
    }
    let mut all: Vec<i32> = super::gather_all(world, info, &taken, ntimes())?
        .into_iter()
        .flatten()
        .collect();
    all.sort_unstable();
    let total = (ntimes() * (n - 1)) as i32;
    assert_eq!(all, (0..total).collect::<Vec<_>>(), "the numbers taken");
    win.free()
}
