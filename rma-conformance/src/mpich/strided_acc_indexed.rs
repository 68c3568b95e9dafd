//! Ported from MPICH `test/mpi/rma/strided_acc_indexed.c`: every rank accumulates
//! (SUM) the top-left 8x8 block of its 16x16 `f64` array into the same block of its
//! right neighbour's window, describing the block on both sides with an indexed
//! datatype (8 blocks of 8 elements, one per row). The block ends at
//! `-1 + (1 + left neighbour's rank)`; every other element stays `-1`.
//!
//! Adapted: the MPICH test takes an exclusive lock on the neighbour only to get an
//! epoch; here one fence epoch. Its ABSOLUTE variant (an hindexed origin type of
//! absolute addresses over MPI_BOTTOM) becomes a second pass whose origin type is
//! hindexed with byte displacements from the start of the buffer.
//! The window has displacement unit 1, as in MPICH.

use rma_win::{Assert, Buffer, Datatype, Info, Op, Rank, Result, Target, Window, World};

const X: usize = 16;
const Y: usize = 16;
const SUB_X: usize = 8;
const SUB_Y: usize = 8;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let peer = Rank::new(((me + 1) % n) as u32);
    let left = (me + n - 1) % n;
    let src = vec![1.0 + me as f64; X * Y];
    let double = Datatype::of::<f64>();
    let lens = [SUB_X; SUB_Y];
    let disps: Vec<isize> = (0..SUB_Y).map(|j| (j * X) as isize).collect();
    let byte_disps: Vec<isize> = disps.iter().map(|d| d * 8).collect();
    let mut dst_type = Datatype::indexed(&lens, &disps, &double)?;
    dst_type.commit();
    let mut indexed = Datatype::indexed(&lens, &disps, &double)?;
    indexed.commit();
    let mut hindexed = Datatype::hindexed(&lens, &byte_disps, &double)?;
    hindexed.commit();

    for (pass, src_type) in [("indexed", &indexed), ("hindexed", &hindexed)] {
        let mut win = Window::allocate_bytes(world, X * Y * 8, 1, info)?;
        win.write_local(0, &vec![-1.0f64; X * Y])?;
        win.fence(Assert::NONE)?;
        win.accumulate_with(
            Buffer::typed(&src, 1, src_type),
            Target::new(peer, 0, 1, &dst_type),
            Op::Sum,
        )?;
        win.fence(Assert::NONE)?;
        let got: Vec<f64> = win.local_vec()?;
        for j in 0..Y {
            for i in 0..X {
                let want = if i < SUB_X && j < SUB_Y {
                    -1.0 + (1.0 + left as f64)
                } else {
                    -1.0
                };
                assert_eq!(got[i + j * X], want, "{pass}: row {j}, column {i}");
            }
        }
        win.free()?;
    }
    Ok(())
}
