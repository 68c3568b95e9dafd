//! Ported from MPICH `test/mpi/rma/rmanull.c` (its fence part): the null rank
//! ([`Rank::NULL`], MPI_PROC_NULL) is a valid target for every call, and a call to it
//! does nothing. Inside fence epochs every rank issues put, get, accumulate,
//! get_accumulate, fetch_and_op and compare_and_swap to the null rank, each followed
//! by a fence; every call and fence succeeds, no window changes, and no result buffer
//! is written.
//!
//! Not ported: the passive-target (lock/unlock) and request-based (Rput, Rget, ...)
//! parts, which rma does not have yet. MPICH also loops over many communicators; here
//! the world.

use rma_win::{Assert, Buffer, BufferMut, Datatype, Info, Op, Rank, Result, Target, Window, World};

const WIN: usize = 256;
const COUNT: usize = 16;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank() as i32;
    let pattern: Vec<i32> = (0..WIN as i32).map(|i| me * 1000 + i).collect();
    let mut win = Window::allocate::<i32>(world, WIN, info)?;
    win.write_local(0, &pattern)?;
    let origin: Vec<i32> = (0..COUNT as i32).map(|i| 7 + i).collect();
    let sentinel = vec![-5i32; COUNT];
    let int = Datatype::of::<i32>();
    let null = Rank::NULL;

    win.fence(Assert::NONE)?;
    // put
    win.put(&origin, null, 0)?;
    win.put_with(Buffer::of(&origin), Target::new(null, 0, COUNT, &int))?;
    win.fence(Assert::NONE)?;
    // get
    let mut result = sentinel.clone();
    win.get(&mut result, null, 0)?;
    assert_eq!(result, sentinel, "get from the null rank wrote the result");
    win.get_with(
        BufferMut::typed(&mut result, COUNT, &int)?,
        Target::new(null, 0, COUNT, &int),
    )?;
    assert_eq!(
        result, sentinel,
        "get_with from the null rank wrote the result"
    );
    win.fence(Assert::NONE)?;
    // accumulate
    win.accumulate(&origin, null, 0, Op::Sum)?;
    win.fence(Assert::NONE)?;
    // get_accumulate
    win.get_accumulate(&origin, &mut result, null, 0, Op::Sum)?;
    assert_eq!(
        result, sentinel,
        "get_accumulate with the null rank wrote the result"
    );
    win.fence(Assert::NONE)?;
    // fetch_and_op
    let mut one = [-5i32];
    win.fetch_and_op(origin[0], null, 0, Op::Sum)?;
    win.fetch_and_op_with(
        rma_datatype::bytes_of(&origin[..1]),
        rma_datatype::bytes_of_mut(&mut one).expect("i32 takes any bytes"),
        &int,
        null,
        0,
        Op::Sum,
    )?;
    assert_eq!(
        one,
        [-5],
        "fetch_and_op with the null rank wrote the result"
    );
    win.fence(Assert::NONE)?;
    // compare_and_swap
    win.compare_and_swap(origin[0], me, null, 0)?;
    win.compare_and_swap_with(
        rma_datatype::bytes_of(&origin[..1]),
        rma_datatype::bytes_of(&[me]),
        rma_datatype::bytes_of_mut(&mut one).expect("i32 takes any bytes"),
        &int,
        null,
        0,
    )?;
    assert_eq!(
        one,
        [-5],
        "compare_and_swap with the null rank wrote the result"
    );
    win.fence(Assert::NONE)?;

    assert_eq!(
        win.local_vec::<i32>()?,
        pattern,
        "a null-rank call changed a window"
    );
    win.free()
}
