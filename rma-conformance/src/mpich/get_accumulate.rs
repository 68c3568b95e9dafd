//! Ported from MPICH `test/mpi/rma/get_accumulate.c` (its fence phases only), which
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
//! Not ported: the self, neighbour, contention, lock-all and NO_OP phases, which use
//! passive-target synchronization.

use rma_win::{
    Assert, Buffer, BufferMut, Datatype, Equivalence, Info, Op, Rank, Result, Target, Window, World,
};
use std::fmt::Debug;

trait Elem: Equivalence + Default + PartialEq + Debug {
    fn of(k: i64) -> Self;
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn of(k: i64) -> $t {
                k as $t
            }
        }
    )*};
}
elem!(i16, i32, i64, f64);

const ROUNDS: i64 = 100;

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
        for i in 0..ROUNDS {
            res.iter_mut().for_each(|r| *r = T::of(-1));
            win.fence(Assert::NOPRECEDE)?;
            for (j, block) in res.chunks_mut(count).enumerate() {
                let rank = Rank::new(j as u32);
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
            assert_eq!(*v, T::of(ROUNDS * from), "count {count}: element {k}");
        }
        win.free()?;
    }
    Ok(())
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
