//! Ported from MPICH `test/mpi/rma/get_accumulate.c`, which
//! MPICH compiles once per element type and once with a derived datatype; here one
//! generic body registered per variant (`get_accumulate_i16`, `_i32`, `_i64`, `_f64`,
//! and `_derived`, which passes a committed contiguous-of-one-`i32` datatype on the
//! origin, result and target sides).
//!
//! All-to-all Get_accumulate with SUM: every rank's window has one block of `count`
//! elements per rank. In each round, opened by a NOPRECEDE fence and closed by a
//! NOSUCCEED one, every rank adds `count` copies of its rank number into block `rank`
//! of every rank's window and fetches the old block; in round `i` the fetched block is
//! all `i * rank`, and after the rounds block `r` of every window is all `rounds * r`.
//! Runs for a short and a long block (5 and 1000 elements).
//!
//! The passive-target phases, for both block lengths, each call in its own exclusive
//! lock on the target unless said otherwise:
//!
//! - **self** and **neighbour**: a block of ones added into one's own / the right
//!   neighbour's first block again and again; the window ends at the number of calls,
//!   and (our addition) call `i` fetches a block of `i`s;
//! - **contention**: every rank but 0 adds ones into rank 0's first block; it ends at
//!   the total, and (our addition) every fetched block is uniform (the lock makes the
//!   whole call atomic) and the fetched values over all ranks are exactly 0, 1, ...,
//!   total-1;
//! - **all-to-all** as above, but each round in one lock_all epoch closed by
//!   unlock_all and a barrier, once without and once with a flush after every call;
//! - **NO_OP** to the neighbour and to oneself: the fetched block is the owner's rank
//!   and nothing changes, with no origin buffer, with an origin of count 0, and (our
//!   addition) through the typed form with an empty origin.
//!
//! Adapted: MPICH's third NO_OP form passes MPI_DATATYPE_NULL as the origin type,
//! which has no counterpart (no origin buffer at all is our closest); the
//! passive-target phases run `lock_iter()` calls. Final values are read under an
//! exclusive lock on oneself, as MPICH does.

use rma_win::{
    Assert, Buffer, BufferMut, Datatype, Equivalence, Info, LockType, Op, Rank, Result, Target,
    Window, World,
};
use std::fmt::Debug;

trait Elem: Equivalence + Default + PartialEq + Debug + Copy {
    fn of(k: i64) -> Self;
    fn int(self) -> i64;
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn of(k: i64) -> $t {
                k as $t
            }
            fn int(self) -> i64 {
                self as i64
            }
        }
    )*};
}
elem!(i16, i32, i64, f64);

fn rounds() -> i64 {
    crate::scaled(100)
}
/// Calls per rank in the passive-target phases.
fn lock_iter() -> i64 {
    crate::scaled(100)
}

fn body<T: Elem>(world: &World, info: &Info, derived: bool) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let dt = if derived {
        let mut d = Datatype::contiguous(1, &Datatype::of::<T>())?;
        d.commit();
        Some(d)
    } else {
        None
    };
    for count in [5usize, 1000] {
        let mut win = Window::allocate::<T>(world, n * count, info)?;
        let val = vec![T::of(me as i64); count];
        let mut res = vec![T::of(-1); n * count];
        win.fence(Assert::NONE)?;
        for i in 0..rounds() {
            res.iter_mut().for_each(|r| *r = T::of(-1));
            win.fence(Assert::NOPRECEDE)?;
            for (j, block) in res.chunks_mut(count).enumerate() {
                let rank = j;
                let disp = (me * count) as i64;
                match &dt {
                    None => win.get_accumulate(&val, block, rank, disp, Op::Sum)?,
                    Some(d) => win.get_accumulate_with(
                        Some(Buffer::typed(&val, count, d)),
                        BufferMut::typed(block, count, d)?,
                        Target::new(rank, disp, count, d),
                        Op::Sum,
                    )?,
                }
            }
            win.fence(Assert::NOSUCCEED)?;
            for (j, block) in res.chunks(count).enumerate() {
                for (c, v) in block.iter().enumerate() {
                    assert_eq!(
                        *v,
                        T::of(i * me as i64),
                        "count {count}, round {i}: element {c} fetched from rank {j}"
                    );
                }
            }
        }
        let got = win.local_vec::<T>()?;
        for (k, v) in got.iter().enumerate() {
            let from = (k / count) as i64;
            assert_eq!(*v, T::of(rounds() * from), "count {count}: element {k}");
        }
        win.fence(Assert::NOSUCCEED)?;
        let basic = Datatype::of::<T>();
        let p = Passive {
            world,
            info,
            win: &win,
            count,
            dt: dt.as_ref().unwrap_or(&basic),
        };
        p.run::<T>()?;
        win.free()?;
    }
    Ok(())
}

/// The passive-target phases on one window of `n` blocks of `count`.
struct Passive<'a, 'w> {
    world: &'a World,
    info: &'a Info,
    win: &'a Window<'w>,
    count: usize,
    /// The datatype of every side: `T`'s, or the derived one.
    dt: &'a Datatype,
}

impl Passive<'_, '_> {
    /// get_accumulate of `val` (`None`: NO_OP without an origin) into `target`'s block
    /// at `disp`, in its own exclusive lock epoch; returns the fetched block.
    fn locked<T: Elem>(
        &self,
        val: Option<&[T]>,
        target: usize,
        disp: i64,
        op: Op,
    ) -> Result<Vec<T>> {
        let t = target;
        let mut res = vec![T::of(-1); self.count];
        self.win.lock(LockType::Exclusive, t, Assert::NONE)?;
        self.win.get_accumulate_with(
            val.map(|v| Buffer::typed(v, self.count, self.dt)),
            BufferMut::typed(&mut res, self.count, self.dt)?,
            Target::new(t, disp, self.count, self.dt),
            op,
        )?;
        self.win.unlock(t)?;
        Ok(res)
    }

    /// Between barriers, under an exclusive lock on itself: returns this rank's window
    /// and, with `Some`, sets all of it to that value.
    fn own<T: Elem>(&self, reset: Option<T>) -> Result<Vec<T>> {
        self.world.barrier()?;
        let me = Rank::new(self.world.rank() as u32);
        self.win.lock(LockType::Exclusive, me, Assert::NONE)?;
        let v = self.win.local_vec::<T>()?;
        if let Some(r) = reset {
            self.win.write_local(0, &vec![r; v.len()])?;
        }
        self.win.unlock(me)?;
        self.world.barrier()?;
        Ok(v)
    }

    fn run<T: Elem>(&self) -> Result<()> {
        let (me, n, count) = (self.world.rank(), self.world.size(), self.count);
        let right = (me + 1) % n;
        let ones = vec![T::of(1); count];
        let block = |v: &[T], k: i64| v.iter().all(|x| *x == T::of(k));
        self.own(Some(T::of(0)))?;

        for (phase, target) in [("self", me), ("neighbour", right)] {
            for i in 0..lock_iter() {
                let got = self.locked(Some(&ones), target, 0, Op::Sum)?;
                assert!(
                    block(&got, i),
                    "count {count}, locked {phase}: call {i} fetched {got:?}"
                );
            }
            let w = self.own(Some(T::of(0)))?;
            assert!(
                block(&w[..count], lock_iter()),
                "count {count}, locked {phase}: final block"
            );
            assert!(
                block(&w[count..], 0),
                "count {count}, locked {phase}: other blocks"
            );
        }

        let mut firsts = vec![];
        if me != 0 {
            for i in 0..lock_iter() {
                let got = self.locked(Some(&ones), 0, 0, Op::Sum)?;
                assert!(
                    block(&got, got[0].int()),
                    "count {count}, locked contention: call {i} fetched a mixed block"
                );
                firsts.push(got[0].int());
            }
        }
        let w = self.own(Some(T::of(0)))?;
        let total = lock_iter() * (n as i64 - 1);
        if me == 0 {
            assert!(
                block(&w[..count], total),
                "count {count}, locked contention: final"
            );
        }
        let mut all: Vec<i64> =
            super::gather_all(self.world, self.info, &firsts, lock_iter() as usize)?
                .into_iter()
                .flatten()
                .collect();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..total).collect::<Vec<_>>(),
            "count {count}, locked contention: fetched values"
        );

        let mine = vec![T::of(me as i64); count];
        for flush in [false, true] {
            for i in 0..rounds() {
                let mut res = vec![T::of(-1); n * count];
                self.win.lock_all(Assert::NONE)?;
                for (j, r) in res.chunks_mut(count).enumerate() {
                    let t = j;
                    self.win.get_accumulate_with(
                        Some(Buffer::typed(&mine, count, self.dt)),
                        BufferMut::typed(r, count, self.dt)?,
                        Target::new(t, (me * count) as i64, count, self.dt),
                        Op::Sum,
                    )?;
                    if flush {
                        self.win.flush(t)?;
                    }
                }
                self.win.unlock_all()?;
                self.world.barrier()?;
                assert!(
                    block(&res, i * me as i64),
                    "count {count}, lock_all (flush: {flush}) round {i}: fetched {res:?}"
                );
            }
            let w = self.own(Some(T::of(0)))?;
            for (k, v) in w.iter().enumerate() {
                let from = (k / count) as i64;
                assert_eq!(
                    *v,
                    T::of(rounds() * from),
                    "count {count}, lock_all (flush: {flush}): element {k}"
                );
            }
        }

        self.own(Some(T::of(me as i64)))?;
        let empty: [T; 0] = [];
        for target in [right, me] {
            let t = target;
            for i in 0..lock_iter() {
                let a = self.locked::<T>(None, target, 0, Op::NoOp)?;
                let mut b = vec![T::of(-1); count];
                let mut c = vec![T::of(-1); count];
                self.win.lock(LockType::Exclusive, t, Assert::NONE)?;
                self.win.get_accumulate_with(
                    Some(Buffer::typed(&empty, 0, self.dt)),
                    BufferMut::typed(&mut b, count, self.dt)?,
                    Target::new(t, 0, count, self.dt),
                    Op::NoOp,
                )?;
                self.win.get_accumulate(&empty, &mut c, t, 0, Op::NoOp)?;
                self.win.unlock(t)?;
                for (form, got) in [("no origin", &a), ("origin count 0", &b), ("typed", &c)] {
                    assert!(
                        block(got, target as i64),
                        "count {count}, NO_OP ({form}) to {target}: call {i} fetched {got:?}"
                    );
                }
            }
        }
        let w = self.own::<T>(None)?;
        assert!(
            block(&w, me as i64),
            "count {count}: NO_OP changed the window"
        );
        Ok(())
    }
}

pub(crate) fn run_i16(w: &World, i: &Info) -> Result<()> {
    body::<i16>(w, i, false)
}
pub(crate) fn run_i32(w: &World, i: &Info) -> Result<()> {
    body::<i32>(w, i, false)
}
pub(crate) fn run_i64(w: &World, i: &Info) -> Result<()> {
    body::<i64>(w, i, false)
}
pub(crate) fn run_f64(w: &World, i: &Info) -> Result<()> {
    body::<f64>(w, i, false)
}
pub(crate) fn run_derived(w: &World, i: &Info) -> Result<()> {
    body::<i32>(w, i, true)
}
