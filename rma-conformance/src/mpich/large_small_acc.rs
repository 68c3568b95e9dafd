//! Ported from MPICH `test/mpi/rma/large_small_acc.c`: accumulate ordering holds for a
//! large call followed by small ones on overlapping elements. In one fence epoch rank
//! 0 replaces all 8192 `u64` of rank 1's window with 1, then element 0 with 2, then
//! elements 1..3 with 3 (all with accumulate REPLACE); rank 1 then holds
//! `[2, 3, 3, 1, 1, ...]`. Repeated with a fresh window each time.

use rma_win::{Assert, Info, Op, Rank, Result, Window, World};

const N: usize = 8192;
const LOOPS: usize = 5;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let ones = vec![1u64; N];
    for round in 0..LOOPS {
        let mut win = Window::allocate::<u64>(world, N, info)?;
        win.fence(Assert::NONE)?;
        if me == 0 {
            let peer = Rank::new(1);
            win.accumulate(&ones, peer, 0, Op::Replace)?;
            win.accumulate(&[2u64], peer, 0, Op::Replace)?;
            win.accumulate(&[3u64, 3], peer, 1, Op::Replace)?;
        }
        win.fence(Assert::NONE)?;
        let got: Vec<u64> = win.local_vec()?;
        for (i, v) in got.iter().enumerate() {
            let want = match (me, i) {
                (0, _) => 0,
                (_, 0) => 2,
                (_, 1 | 2) => 3,
                _ => 1,
            };
            assert_eq!(*v, want, "round {round}: rank {me} element {i}");
        }
        win.free()?;
    }
    Ok(())
}
