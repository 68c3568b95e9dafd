//! Ported from MPICH `test/mpi/rma/wrma_flush_get.c`, which MPICH builds five times
//! (`put_flush_get`, `acc_flush_get`, `gacc_flush_get`, `fop_flush_get`,
//! `cas_flush_get`); here one body registered once per write-like call
//! (`wrma_flush_get_put` ... `_cas`). It checks that flush completes a call *at the
//! target*: under lock_all, in every round the target (rank 0) resets its element to
//! 0, the origin (rank 1) writes a new value to it with the call under test and flushes,
//! and only then (after a barrier) the checker (rank 2) gets the element: it must see
//! the new value. For the fetching calls the origin also checks it fetched 0;
//! compare_and_swap compares with 0, so it always swaps.
//!
//! Adapted: MPICH synchronizes origin and checker with send/recv; here with a barrier.
//! 1000 rounds instead of 10000.

use rma_win::{Assert, Info, Op, Rank, Result, Window, World};

fn iter() -> i32 {
    crate::scaled(1000)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Call {
    Put,
    Acc,
    Gacc,
    Fop,
    Cas,
}

fn body(world: &World, info: &Info, call: Call) -> Result<()> {
    let me = world.rank();
    let (target, origin, checker) = (0, 1, 2);
    let t = Rank::new(target as u32);
    let mut win = Window::allocate::<i32>(world, 1, info)?;
    win.lock_all(Assert::NONE)?;
    for x in 0..iter() {
        if me == target {
            win.write_local(0, &[0i32])?;
            win.sync()?;
        }
        world.barrier()?;
        let val = 1 + x;
        if me == origin {
            let fetched = match call {
                Call::Put => {
                    win.put(&[val], t, 0)?;
                    None
                }
                Call::Acc => {
                    win.accumulate(&[val], t, 0, Op::Replace)?;
                    None
                }
                Call::Gacc => {
                    let mut r = [-1i32];
                    win.get_accumulate(&[val], &mut r, t, 0, Op::Replace)?;
                    Some(r[0])
                }
                Call::Fop => Some(win.fetch_and_op(val, t, 0, Op::Replace)?),
                Call::Cas => Some(win.compare_and_swap(val, 0, t, 0)?),
            };
            win.flush(t)?;
            if let Some(f) = fetched {
                assert_eq!(f, 0, "round {x}: the origin fetched");
            }
        }
        world.barrier()?;
        if me == checker {
            let mut got = [-1i32];
            win.get(&mut got, t, 0)?;
            win.flush(t)?;
            assert_eq!(got[0], val, "round {x}: the checker's get after the flush");
        }
        world.barrier()?;
    }
    win.unlock_all()?;
    world.barrier()?;
    win.free()
}

pub(crate) fn run_put(w: &World, i: &Info) -> Result<()> {
    body(w, i, Call::Put)
}
pub(crate) fn run_acc(w: &World, i: &Info) -> Result<()> {
    body(w, i, Call::Acc)
}
pub(crate) fn run_gacc(w: &World, i: &Info) -> Result<()> {
    body(w, i, Call::Gacc)
}
pub(crate) fn run_fop(w: &World, i: &Info) -> Result<()> {
    body(w, i, Call::Fop)
}
pub(crate) fn run_cas(w: &World, i: &Info) -> Result<()> {
    body(w, i, Call::Cas)
}
