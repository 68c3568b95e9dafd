//! Ported from MPICH `test/mpi/rma/reqops.c`: the request-based calls (rput, rget,
//! raccumulate, rget_accumulate) against one window that only rank 0 exposes.
//!
//! - **null rank**: all four calls to the null rank inside lock_all return requests
//!   that are already complete (rule 17) and are waited for after unlock_all;
//! - **third-party rings through rank 0**, under a shared lock every rank holds on rank
//!   0: the ranks take turns, and each turn swaps its rank number into rank 0's element
//!   and reads back the previous holder's, which is always the rank before it in the
//!   ring — once with rget_accumulate REPLACE, once with rget + put, once with rget +
//!   accumulate REPLACE (each followed by a flush);
//! - **where the requests are completed**: four requests (one per call) issued under
//!   lock_all and waited for inside the epoch, after unlock_all, inside the next
//!   lock_all epoch, and inside a fence epoch. Every rank writes the same values in one
//!   round, so the window and the fetched values are exact.
//!
//! Adapted: MPICH passes a token along the ring with send/recv; here each turn is
//! separated by barriers. Our addition: rget_accumulate is followed by a flush too, as
//! rule 15 says only a flush or unlock makes the update visible to the next rank.

use rma_win::{Assert, Info, LockType, Op, Rank, Request, Result, Window, World};

fn iter() -> i32 {
    crate::scaled(100)
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let zero = Rank::new(0);
    let mut win = Window::allocate::<i32>(world, if me == 0 { 4 } else { 0 }, info)?;
    if me == 0 {
        win.write_local(0, &[n as i32 - 1])?;
    }
    world.barrier()?;

    // null-rank requests: complete at once, waited for after the epoch
    {
        let vals = [1i32, 2, 3, 4];
        let mut res = [-5i32];
        let mut got = [-6i32];
        win.lock_all(Assert::NONE)?;
        let mut reqs = vec![
            win.rget_accumulate(&vals[..1], &mut res, Rank::NULL, 0, Op::Replace)?,
            win.rget(&mut got, Rank::NULL, 1)?,
            win.rput(&vals[2..3], Rank::NULL, 2)?,
            win.raccumulate(&vals[3..], Rank::NULL, 3, Op::Replace)?,
        ];
        for (i, r) in reqs.iter_mut().enumerate() {
            assert!(r.test()?, "null-rank request {i} is not complete");
        }
        win.unlock_all()?;
        Request::wait_all(reqs)?;
        assert_eq!((res, got), ([-5], [-6]), "a null-rank call wrote a result");
    }
    world.barrier()?;

    // three rings of third-party calls through rank 0
    win.lock(LockType::Shared, zero, Assert::NONE)?;
    for ring in 0..3 {
        if ring > 0 {
            world.barrier()?;
            if me == 0 {
                win.write_local(0, &[n as i32 - 1])?;
                win.sync()?;
            }
            world.barrier()?;
        }
        for i in 0..iter() {
            for turn in 0..n {
                if turn == me {
                    let mine = [me as i32];
                    let mut prev = [-1i32];
                    match ring {
                        0 => {
                            win.rget_accumulate(&mine, &mut prev, zero, 0, Op::Replace)?
                                .wait()?;
                        }
                        1 => {
                            win.rget(&mut prev, zero, 0)?.wait()?;
                            win.put(&mine, zero, 0)?;
                        }
                        _ => {
                            win.rget(&mut prev, zero, 0)?.wait()?;
                            win.accumulate(&mine, zero, 0, Op::Replace)?;
                        }
                    }
                    win.flush(zero)?;
                    let want = ((me + n - 1) % n) as i32;
                    assert_eq!(prev[0], want, "ring {ring}, round {i}: fetched");
                }
                world.barrier()?;
            }
        }
    }
    win.unlock(zero)?;
    world.barrier()?;
    if me == 0 {
        assert_eq!(win.local_vec::<i32>()?[0], n as i32 - 1, "after the rings");
        win.write_local(0, &[0i32, 500, 0, 0])?;
    }
    world.barrier()?;

    // four requests per round, completed in four different places; in round k every
    // rank writes 10k+1 into element 0 (rget_accumulate), 10k+2 into element 2 (rput)
    // and 10k+3 into element 3 (raccumulate); element 1 is only read
    for k in 1..=4i32 {
        let (v0, v2, v3) = ([10 * k + 1], [10 * k + 2], [10 * k + 3]);
        let mut old0 = [-1i32];
        let mut got1 = [-1i32];
        win.lock_all(Assert::NONE)?;
        let reqs = vec![
            win.rget_accumulate(&v0, &mut old0, zero, 0, Op::Replace)?,
            win.rget(&mut got1, zero, 1)?,
            win.rput(&v2, zero, 2)?,
            win.raccumulate(&v3, zero, 3, Op::Replace)?,
        ];
        match k {
            1 => {
                Request::wait_all(reqs)?;
                win.unlock_all()?;
            }
            2 => {
                win.unlock_all()?;
                Request::wait_all(reqs)?;
            }
            3 => {
                win.unlock_all()?;
                win.lock_all(Assert::NONE)?;
                Request::wait_all(reqs)?;
                win.unlock_all()?;
            }
            _ => {
                win.unlock_all()?;
                win.fence(Assert::NONE)?;
                Request::wait_all(reqs)?;
                win.fence(Assert::NONE)?;
            }
        }
        let before = if k == 1 { 0 } else { 10 * (k - 1) + 1 };
        assert!(
            old0[0] == before || old0[0] == v0[0],
            "round {k}: rget_accumulate fetched {}",
            old0[0]
        );
        assert_eq!(got1[0], 500, "round {k}: rget of the untouched element");
        world.barrier()?;
        if me == 0 {
            assert_eq!(
                win.local_vec::<i32>()?,
                vec![v0[0], 500, v2[0], v3[0]],
                "round {k}: rank 0's window"
            );
        }
        world.barrier()?;
    }
    win.free()
}
