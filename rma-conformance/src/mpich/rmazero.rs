//! Ported from MPICH `test/mpi/rma/rmazero.c` (its fence part): zero-count calls are
//! valid and do nothing. In fence epochs every rank issues to rank 0 a put, get,
//! accumulate (with `i32` and with a contiguous-of-two-`i32` datatype) and
//! get_accumulate of count 0, each followed by a fence; every call succeeds, rank 0's
//! window (displacement unit 8, as in MPICH) is unchanged, and no buffer is written.
//! (A zero-count Fetch_and_op or Compare_and_swap cannot be expressed.)
//!
//! Not ported: the passive-target and request-based parts, which rma does not have yet.
//! MPICH also loops over many communicators; here the world.

use rma_win::{Assert, Buffer, BufferMut, Datatype, Info, Op, Rank, Result, Target, Window, World};

const WIN: usize = 256;
const COUNT: usize = 16;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank() as i32;
    let pattern: Vec<i32> = (0..WIN as i32).map(|i| me * 1000 + i).collect();
    let mut win = Window::allocate_bytes(world, WIN * 4, 8, info)?;
    win.write_local(0, &pattern)?;
    let origin: Vec<i32> = (0..COUNT as i32).map(|i| 7 + i).collect();
    let sentinel = vec![-5i32; COUNT];
    let mut result = sentinel.clone();
    let int = Datatype::of::<i32>();
    let mut pair = Datatype::contiguous(2, &int)?;
    pair.commit();
    let target = Rank::new(0);

    win.fence(Assert::NONE)?;
    win.put(&origin[..0], target, 0)?;
    win.put_with(
        Buffer::typed(&origin, 0, &int),
        Target::new(target, 0, 0, &int),
    )?;
    win.fence(Assert::NONE)?;
    win.get(&mut result[..0], target, 0)?;
    win.get_with(
        BufferMut::typed(&mut result, 0, &int)?,
        Target::new(target, 0, 0, &int),
    )?;
    assert_eq!(result, sentinel, "a zero-count get wrote the result");
    win.fence(Assert::NONE)?;
    win.accumulate(&origin[..0], target, 0, Op::Sum)?;
    win.accumulate_with(
        Buffer::typed(&origin, 0, &int),
        Target::new(target, 0, 0, &int),
        Op::Sum,
    )?;
    win.fence(Assert::NONE)?;
    win.accumulate_with(
        Buffer::typed(&origin, 0, &pair),
        Target::new(target, 0, 0, &pair),
        Op::Sum,
    )?;
    win.fence(Assert::NONE)?;
    win.get_accumulate(&origin[..0], &mut result[..0], target, 0, Op::Sum)?;
    win.get_accumulate_with(
        Some(Buffer::typed(&origin, 0, &int)),
        BufferMut::typed(&mut result, 0, &int)?,
        Target::new(target, 0, 0, &int),
        Op::Sum,
    )?;
    assert_eq!(
        result, sentinel,
        "a zero-count get_accumulate wrote the result"
    );
    win.fence(Assert::NONE)?;

    assert_eq!(
        win.local_vec::<i32>()?,
        pattern,
        "a zero-count call changed a window"
    );
    win.free()
}
