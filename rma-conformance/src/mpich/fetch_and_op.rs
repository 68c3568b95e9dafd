//! Ported from MPICH `test/mpi/rma/fetch_and_op.c`, which MPICH compiles once per
//! element type; here one generic body, registered once per type (`fetch_and_op_i8`
//! ... `fetch_and_op_f64`). Fetch_and_op with SUM and NO_OP on one element:
//!
//! - **self**: a rank adds 1 to its own element repeatedly; the fetched values count
//!   up from 0 and the element ends at the number of calls;
//! - **neighbor**: each rank adds 1 to its right neighbour's element; the fetched
//!   values count up (each element has one writer) and every element ends at the
//!   number of calls;
//! - **contention**: every rank but 0 adds 1 to the same element of rank 0; the
//!   element ends at the total, and (our addition) the fetched values of all ranks
//!   together are exactly 0, 1, ..., total-1, each once, which an update lost or
//!   applied twice would break;
//! - **all-to-all**: in each round, opened by a NOPRECEDE fence and closed by a
//!   NOSUCCEED one, every rank adds its rank number to element `rank` of every rank's
//!   window; round `i` fetches `i * rank`;
//! - **NO_OP**, neighbour and self: fetches return the element and leave it unchanged.
//!
//! Then the same again the way MPICH does it, with passive-target epochs: self,
//! neighbour and contention with every call in its own exclusive lock on the target;
//! all-to-all rounds each in one lock_all epoch (closed by unlock_all, then a barrier),
//! and again with a flush after every call; NO_OP to the neighbour and to oneself, each
//! call in an exclusive lock. Final values are read under an exclusive lock on oneself.
//!
//! Adapted: the fence versions of self, neighbour, contention and NO_OP are ours (MPICH
//! has only locked ones; it has a fence all-to-all like ours); integer
//! sums wrap (the 8-bit counts here overflow), so expected values are computed with
//! wrapping arithmetic; every float value involved is a small integer, hence exact.
//! The passive-target phases run fewer calls (`lock_iter()`) than the fence ones.

use rma_win::{Assert, Equivalence, Info, LockType, Op, Rank, Result, Window, World};
use std::fmt::Debug;

/// The element types the test runs for: a value made from a small integer (wrapping
/// for integers, exact for floats) and a sortable key of its bits.
trait Elem: Equivalence + Default + PartialEq + Debug {
    fn of(k: i64) -> Self;
    fn key(self) -> u64;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn of(k: i64) -> $t {
                k as $t
            }
            fn key(self) -> u64 {
                self as u64
            }
        }
    )*};
}
int_elem!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Elem for f32 {
    fn of(k: i64) -> f32 {
        k as f32
    }
    fn key(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Elem for f64 {
    fn of(k: i64) -> f64 {
        k as f64
    }
    fn key(self) -> u64 {
        self.to_bits()
    }
}

/// Calls per rank in the self, neighbour and contention phases.
fn iter() -> i64 {
    crate::scaled(5000)
}
/// Rounds of the all-to-all phase (two fences each).
fn rounds() -> i64 {
    crate::scaled(100)
}
/// Calls per rank in the passive-target phases (one lock epoch each, or per round).
fn lock_iter() -> i64 {
    crate::scaled(300)
}

/// Between fences: sets this rank's whole window to `v`.
fn reset<T: Elem>(win: &Window<'_>, n: usize, v: T) -> Result<()> {
    win.write_local(0, &vec![v; n])
}

fn body<T: Elem>(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let one = T::of(1);
    let mut win = Window::allocate::<T>(world, n, info)?;
    let own = me;
    let right = (me + 1) % n;

    // self
    win.fence(Assert::NONE)?;
    for i in 0..iter() {
        let old = win.fetch_and_op(one, own, 0, Op::Sum)?;
        assert_eq!(old, T::of(i), "self: call {i} fetched");
    }
    win.fence(Assert::NONE)?;
    assert_eq!(win.local_vec::<T>()?[0], T::of(iter()), "self: final value");
    reset(&win, n, T::of(0))?;

    // neighbour
    win.fence(Assert::NONE)?;
    for i in 0..iter() {
        let old = win.fetch_and_op(one, right, 0, Op::Sum)?;
        assert_eq!(old, T::of(i), "neighbour {right}: call {i} fetched");
    }
    win.fence(Assert::NONE)?;
    let got = win.local_vec::<T>()?;
    assert_eq!(got[0], T::of(iter()), "neighbour: final value");
    assert!(
        got[1..].iter().all(|v| *v == T::of(0)),
        "neighbour: other elements {got:?}"
    );
    reset(&win, n, T::of(0))?;

    // contention
    win.fence(Assert::NONE)?;
    let mut fetched = Vec::new();
    if me != 0 {
        for _ in 0..iter() {
            fetched.push(win.fetch_and_op(one, Rank::new(0), 0, Op::Sum)?);
        }
    }
    win.fence(Assert::NONE)?;
    let total = iter() * (n as i64 - 1);
    if me == 0 {
        assert_eq!(
            win.local_vec::<T>()?[0],
            T::of(total),
            "contention: final value"
        );
    }
    let mut all: Vec<u64> = super::gather_all(world, info, &fetched, iter() as usize)?
        .into_iter()
        .flatten()
        .map(T::key)
        .collect();
    all.sort_unstable();
    let mut want: Vec<u64> = (0..total).map(|k| T::of(k).key()).collect();
    want.sort_unstable();
    assert!(
        all == want,
        "contention: the fetched values are not 0..{total} each once"
    );
    reset(&win, n, T::of(0))?;

    // all-to-all, one fence epoch per round
    win.fence(Assert::NONE)?;
    let mine = T::of(me as i64);
    for i in 0..rounds() {
        win.fence(Assert::NOPRECEDE)?;
        let mut results = vec![T::of(-1); n];
        for (j, r) in results.iter_mut().enumerate() {
            *r = win.fetch_and_op(mine, j, me as i64, Op::Sum)?;
        }
        win.fence(Assert::NOSUCCEED)?;
        for (j, r) in results.iter().enumerate() {
            assert_eq!(
                *r,
                T::of(i * me as i64),
                "all-to-all round {i}: from rank {j}"
            );
        }
    }
    let got = win.local_vec::<T>()?;
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, T::of(rounds() * i as i64), "all-to-all: element {i}");
    }

    // NO_OP, neighbour then self: every element holds the owner's rank
    reset(&win, n, T::of(me as i64))?;
    win.fence(Assert::NONE)?;
    for target in [right, me] {
        for i in 0..iter() {
            let got = win.fetch_and_op(T::of(-7), target, 0, Op::NoOp)?;
            assert_eq!(got, T::of(target as i64), "NO_OP to {target}: call {i}");
        }
    }
    win.fence(Assert::NONE)?;
    let got = win.local_vec::<T>()?;
    assert!(
        got.iter().all(|v| *v == T::of(me as i64)),
        "NO_OP changed the window: {got:?}"
    );
    win.fence(Assert::NOSUCCEED)?;
    lock_phases::<T>(world, info, &win)?;
    win.free()
}

/// This rank's window, read under an exclusive lock on itself.
fn read_own<T: Elem>(win: &Window<'_>, me: usize) -> Result<Vec<T>> {
    let own = me;
    win.lock(LockType::Exclusive, own, Assert::NONE)?;
    let v = win.local_vec::<T>()?;
    win.unlock(own)?;
    Ok(v)
}

/// Between barriers: sets this rank's whole window to `v` under a lock on itself.
fn reset_locked<T: Elem>(world: &World, win: &Window<'_>, n: usize, v: T) -> Result<()> {
    world.barrier()?;
    let own = Rank::new(world.rank() as u32);
    win.lock(LockType::Exclusive, own, Assert::NONE)?;
    reset(win, n, v)?;
    win.unlock(own)?;
    world.barrier()
}

/// One fetch_and_op in its own exclusive lock epoch on `target`.
fn locked_fop<T: Elem>(win: &Window<'_>, v: T, target: usize, disp: i64, op: Op) -> Result<T> {
    let t = target;
    win.lock(LockType::Exclusive, t, Assert::NONE)?;
    let old = win.fetch_and_op(v, t, disp, op)?;
    win.unlock(t)?;
    Ok(old)
}

/// The phases MPICH runs with passive-target synchronization.
fn lock_phases<T: Elem>(world: &World, info: &Info, win: &Window<'_>) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let one = T::of(1);
    let right = (me + 1) % n;
    reset_locked(world, win, n, T::of(0))?;

    // self and neighbour, a lock per call
    for (phase, target) in [("locked self", me), ("locked neighbour", right)] {
        for i in 0..lock_iter() {
            let old = locked_fop(win, one, target, 0, Op::Sum)?;
            assert_eq!(old, T::of(i), "{phase}: call {i} fetched");
        }
        world.barrier()?;
        let got = read_own::<T>(win, me)?;
        assert_eq!(got[0], T::of(lock_iter()), "{phase}: final value");
        reset_locked(world, win, n, T::of(0))?;
    }

    // contention, a lock per call
    let mut fetched = Vec::new();
    if me != 0 {
        for _ in 0..lock_iter() {
            fetched.push(locked_fop(win, one, 0, 0, Op::Sum)?);
        }
    }
    world.barrier()?;
    let total = lock_iter() * (n as i64 - 1);
    if me == 0 {
        let got = read_own::<T>(win, me)?;
        assert_eq!(got[0], T::of(total), "locked contention: final value");
    }
    let mut all: Vec<u64> = super::gather_all(world, info, &fetched, lock_iter() as usize)?
        .into_iter()
        .flatten()
        .map(T::key)
        .collect();
    all.sort_unstable();
    let mut want: Vec<u64> = (0..total).map(|k| T::of(k).key()).collect();
    want.sort_unstable();
    assert!(
        all == want,
        "locked contention: the fetched values are not 0..{total} each once"
    );
    reset_locked(world, win, n, T::of(0))?;

    // all-to-all, one lock_all epoch per round, without and with a flush per call
    let mine = T::of(me as i64);
    for flush in [false, true] {
        for i in 0..rounds() {
            let mut results = vec![T::of(-1); n];
            win.lock_all(Assert::NONE)?;
            for (j, r) in results.iter_mut().enumerate() {
                let t = j;
                *r = win.fetch_and_op(mine, t, me as i64, Op::Sum)?;
                if flush {
                    win.flush(t)?;
                }
            }
            win.unlock_all()?;
            world.barrier()?;
            for (j, r) in results.iter().enumerate() {
                assert_eq!(
                    *r,
                    T::of(i * me as i64),
                    "lock_all (flush: {flush}) round {i}: from rank {j}"
                );
            }
        }
        let got = read_own::<T>(win, me)?;
        for (i, v) in got.iter().enumerate() {
            assert_eq!(
                *v,
                T::of(rounds() * i as i64),
                "lock_all (flush: {flush}): element {i}"
            );
        }
        reset_locked(world, win, n, T::of(0))?;
    }

    // NO_OP, neighbour then self, a lock per call
    reset_locked(world, win, n, T::of(me as i64))?;
    for target in [right, me] {
        for i in 0..lock_iter() {
            let got = locked_fop(win, T::of(-7), target, 0, Op::NoOp)?;
            assert_eq!(
                got,
                T::of(target as i64),
                "locked NO_OP to {target}: call {i}"
            );
        }
    }
    world.barrier()?;
    let got = read_own::<T>(win, me)?;
    assert!(
        got.iter().all(|v| *v == T::of(me as i64)),
        "locked NO_OP changed the window: {got:?}"
    );
    world.barrier()
}

pub(crate) fn run_i8(w: &World, i: &Info) -> Result<()> {
    body::<i8>(w, i)
}
pub(crate) fn run_i16(w: &World, i: &Info) -> Result<()> {
    body::<i16>(w, i)
}
pub(crate) fn run_i32(w: &World, i: &Info) -> Result<()> {
    body::<i32>(w, i)
}
pub(crate) fn run_i64(w: &World, i: &Info) -> Result<()> {
    body::<i64>(w, i)
}
pub(crate) fn run_u8(w: &World, i: &Info) -> Result<()> {
    body::<u8>(w, i)
}
pub(crate) fn run_u16(w: &World, i: &Info) -> Result<()> {
    body::<u16>(w, i)
}
pub(crate) fn run_u32(w: &World, i: &Info) -> Result<()> {
    body::<u32>(w, i)
}
pub(crate) fn run_u64(w: &World, i: &Info) -> Result<()> {
    body::<u64>(w, i)
}
pub(crate) fn run_f32(w: &World, i: &Info) -> Result<()> {
    body::<f32>(w, i)
}
pub(crate) fn run_f64(w: &World, i: &Info) -> Result<()> {
    body::<f64>(w, i)
}
