//! Ported from MPICH `test/mpi/rma/derived_acc_flush_local.c`: many accumulates with
//! a large derived origin datatype, each followed by flush_local, in one shared-lock
//! epoch. The origin is a vector of blocks of 199 ones with stride 200 (one element
//! skipped per block); the target is the same number of contiguous ints (type maps
//! differ, signatures match, rule 3). First rank 1, then rank 2 does it to rank 0;
//! after the unlock and a barrier rank 0's first elements each hold the number of
//! calls exactly, and (our addition) the elements past them are still 0.
//!
//! Adapted: 100 blocks and 100 calls instead of 5000 blocks and 500 calls, to stay
//! fast; the window is allocated, not created over user memory.

use rma_win::{Assert, Buffer, Datatype, Info, LockType, Op, Rank, Result, Target, Window, World};

const BLOCKS: usize = 100;
const STRIDE: usize = 200;
const DATA: usize = BLOCKS * STRIDE;
const ELEMS: usize = DATA - BLOCKS;
fn ops() -> i32 {
    crate::scaled(100)
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let zero = Rank::new(0);
    let mut win = Window::allocate::<i32>(world, DATA, info)?;
    let origin = vec![1i32; DATA];
    let mut vt = Datatype::vector(BLOCKS, STRIDE - 1, STRIDE as isize, &Datatype::of::<i32>())?;
    vt.commit();
    for writer in [1, 2] {
        if me == writer {
            win.lock(LockType::Shared, zero, Assert::NONE)?;
            for _ in 0..ops() {
                win.accumulate_with(
                    Buffer::typed(&origin, 1, &vt),
                    Target::of::<i32>(zero, 0, ELEMS),
                    Op::Sum,
                )?;
                win.flush_local(zero)?;
            }
            win.unlock(zero)?;
        }
        world.barrier()?;
        if me == 0 {
            let got = win.local_vec::<i32>()?;
            for (i, g) in got.iter().enumerate() {
                let want = if i < ELEMS { ops() } else { 0 };
                assert_eq!(*g, want, "writer {writer}: element {i}");
            }
            win.write_local(0, &vec![0i32; DATA])?;
        }
        world.barrier()?;
    }
    win.free()
}
