//! Ported from MPICH `test/mpi/rma/atomic_rmw_cas.c`: two origins race
//! Compare_and_swap on the same element of rank 2, which starts at 0. Rank 0 swaps
//! 0 -> 1, rank 1 swaps 1 -> 0. Only two outcomes are possible: rank 0 first (both
//! swap: rank 0 fetches 0, rank 1 fetches 1, the element ends at 0) or rank 1 first
//! (only rank 0 swaps: both fetch 0, the element ends at 1). Anything else means a
//! swap was not atomic.
//!
//! Adapted: MPICH runs 10000 rounds of one element, each round a lock_all epoch with a
//! flush between barriers. Here a round is one fence epoch over a window of many
//! elements, which the origins sweep from opposite ends (so both orders occur in every
//! round, and the two meet on some element), keeping the number of fences small.
//! Results are gathered through a scratch window instead of MPI_Gather.

use rma_win::{Assert, Info, Rank, Result, Window, World};

fn rounds() -> usize {
    crate::scaled(20)
}
const ELEMS: usize = 20000;
const DEST: usize = 2;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let mut win = Window::allocate::<i32>(world, if me == DEST { ELEMS } else { 0 }, info)?;
    let dest = Rank::new(DEST as u32);
    for round in 0..rounds() {
        if me == DEST {
            win.write_local(0, &vec![0i32; ELEMS])?;
        }
        win.fence(Assert::NONE)?;
        let mut fetched = vec![0i32; if me == DEST { 0 } else { ELEMS }];
        // rank 0 sweeps up, rank 1 down: each wins the elements it reaches first, and
        // they race where they cross
        let (origin, compare) = if me == 0 { (1, 0) } else { (0, 1) };
        for step in 0..fetched.len() {
            let k = if me == 0 { step } else { ELEMS - 1 - step };
            fetched[k] = win.compare_and_swap(origin, compare, dest, k as i64)?;
        }
        win.fence(Assert::NONE)?;
        let mine: Vec<i32> = if me == DEST {
            win.local_vec()?
        } else {
            fetched
        };
        let all = super::gather_all(world, info, &mine, ELEMS)?;
        assert!(all.iter().all(|v| v.len() == ELEMS));
        let outcomes = all[DEST].iter().zip(&all[0]).zip(&all[1]);
        for (k, ((t, a), b)) in outcomes.enumerate() {
            let outcome = (*t, *a, *b);
            assert!(
                outcome == (0, 0, 1) || outcome == (1, 0, 0),
                "round {round}, element {k}: (target, rank 0 fetched, rank 1 fetched) = {outcome:?}"
            );
        }
    }
    win.fence(Assert::NOSUCCEED)?;
    win.free()
}
