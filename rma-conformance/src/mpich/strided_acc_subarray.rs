//! Ported from MPICH `test/mpi/rma/strided_acc_subarray.c`: every rank accumulates
//! (SUM), ten times, the top-left 512x512 block of its 1024x1024 `f64` array into the
//! same block of its right neighbour's window, describing the block on both sides with
//! a C-order subarray datatype. The block ends at `-1 + 10 * (1 + left neighbour's
//! rank)`; every other element stays `-1`.
//!
//! Adapted: the MPICH test takes an exclusive lock per call only to get an epoch; here
//! the ten calls share one fence epoch. The window has displacement unit 1, as in
//! MPICH.

use rma_datatype::Order;
use rma_win::{Assert, Buffer, Datatype, Info, Op, Rank, Result, Target, Window, World};

const X: usize = 1024;
const Y: usize = 1024;
const SUB_X: usize = 512;
const SUB_Y: usize = 512;
const ITER: usize = 10;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let peer = Rank::new(((me + 1) % n) as u32);
    let left = (me + n - 1) % n;
    let src = vec![1.0 + me as f64; X * Y];
    let mut win = Window::allocate_bytes(world, X * Y * 8, 1, info)?;
    win.write_local(0, &vec![-1.0f64; X * Y])?;
    win.fence(Assert::NONE)?;
    for _ in 0..ITER {
        let double = Datatype::of::<f64>();
        let mut src_type =
            Datatype::subarray(&[X, Y], &[SUB_X, SUB_Y], &[0, 0], Order::C, &double)?;
        src_type.commit();
        let mut dst_type =
            Datatype::subarray(&[X, Y], &[SUB_X, SUB_Y], &[0, 0], Order::C, &double)?;
        dst_type.commit();
        win.accumulate_with(
            Buffer::typed(&src, 1, &src_type),
            Target::new(peer, 0, 1, &dst_type),
            Op::Sum,
        )?;
    }
    win.fence(Assert::NONE)?;
    let got: Vec<f64> = win.local_vec()?;
    let block = -1.0 + ITER as f64 * (1.0 + left as f64);
    for j in 0..Y {
        for i in 0..X {
            let want = if i < SUB_X && j < SUB_Y { block } else { -1.0 };
            assert_eq!(got[i + j * X], want, "row {j}, column {i}");
        }
    }
    win.free()
}
