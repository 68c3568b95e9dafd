//! Ported from MPICH `test/mpi/rma/atomic_rmw_fop.c`: two origins (rank 0 with many
//! calls, rank 1 with few) run Fetch_and_op SUM 1 on the same single element of rank
//! 2 at the same time. The element ends at the total number of calls, and no value is
//! fetched twice: (stronger than MPICH, which checks only that the two origins fetched
//! disjoint values) the fetched values of both origins together are exactly
//! 0, 1, ..., total-1. Repeated over several rounds.
//!
//! Adapted: the MPICH test uses lock_all with a flush after each call only to get an
//! epoch and complete each call; here each round is one fence epoch (Fetch_and_op
//! returns the fetched value when it returns), and the results are exchanged with a
//! gather through a scratch window instead of a send/receive.

use rma_win::{Assert, Info, Op, Rank, Result, Window, World};

fn rounds() -> usize {
    crate::scaled(15)
}
fn many() -> usize {
    crate::scaled(10_000)
}
fn few() -> usize {
    crate::scaled(1000)
}
const DEST: usize = 2;

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let calls = match me {
        0 => many(),
        1 => few(),
        _ => 0,
    };
    let mut win = Window::allocate::<i32>(world, if me == DEST { 1 } else { 0 }, info)?;
    for round in 0..rounds() {
        if me == DEST {
            win.write_local(0, &[0i32])?;
        }
        win.fence(Assert::NONE)?;
        let mut fetched = Vec::with_capacity(calls);
        for _ in 0..calls {
            fetched.push(win.fetch_and_op(1i32, Rank::new(DEST as u32), 0, Op::Sum)?);
        }
        win.fence(Assert::NONE)?;
        let total = (many() + few()) as i32;
        if me == DEST {
            assert_eq!(
                win.local_vec::<i32>()?,
                vec![total],
                "round {round}: final value"
            );
        }
        let mut all: Vec<i32> = super::gather_all(world, info, &fetched, many())?
            .into_iter()
            .flatten()
            .collect();
        all.sort_unstable();
        assert!(
            all.iter().copied().eq(0..total),
            "round {round}: fetched values are not 0..{total} each once"
        );
    }
    win.fence(Assert::NOSUCCEED)?;
    win.free()
}
