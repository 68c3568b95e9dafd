//! Ported from MPICH `test/mpi/rma/compare_and_swap.c`: Compare_and_swap on one `i32`
//! per rank, stepping the value from `i` to `i + 1` with compare `i`:
//!
//! - **self**: each rank on its own element; every call finds `i` and swaps;
//! - **neighbor**: each rank on its right neighbour's element (one writer per
//!   element); same;
//! - **contention**: every rank but 0 runs the same sequence on rank 0's element at
//!   once. Whatever the interleaving the element ends at the number of steps, and (our
//!   addition) exactly that many calls succeed in total, each step `i -> i + 1` won by
//!   exactly one rank, which a non-atomic swap would break.
//!
//! Adapted: the MPICH test wraps every call in an exclusive lock only to get an epoch;
//! here each phase is one fence epoch, with the resets between fences.

use rma_win::{Assert, Info, Rank, Result, Window, World};

const ITER: i32 = 5000;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let mut win = Window::allocate::<i32>(world, 1, info)?;

    for (phase, target) in [("self", me), ("neighbour", (me + 1) % n)] {
        win.fence(Assert::NONE)?;
        for i in 0..ITER {
            let old = win.compare_and_swap(i + 1, i, Rank::new(target as u32), 0)?;
            assert_eq!(old, i, "{phase}: call {i} on rank {target}");
        }
        win.fence(Assert::NONE)?;
        assert_eq!(win.local_vec::<i32>()?, vec![ITER], "{phase}: final value");
        win.write_local(0, &[0i32])?;
    }

    win.fence(Assert::NONE)?;
    let mut wins = 0u32;
    if me != 0 {
        for i in 0..ITER {
            let old = win.compare_and_swap(i + 1, i, Rank::new(0), 0)?;
            assert!(
                old >= i && old <= ITER,
                "contention: call {i} fetched {old}"
            );
            if old == i {
                wins += 1;
            }
        }
    }
    win.fence(Assert::NONE)?;
    if me == 0 {
        assert_eq!(
            win.local_vec::<i32>()?,
            vec![ITER],
            "contention: final value"
        );
    }
    let total: u32 = world
        .allgather(&wins.to_le_bytes())?
        .iter()
        .map(|b| u32::from_le_bytes(b[..4].try_into().expect("4 bytes")))
        .sum();
    assert_eq!(
        total, ITER as u32,
        "contention: successful swaps over all ranks"
    );
    win.free()
}
