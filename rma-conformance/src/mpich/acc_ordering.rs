//! Ported from MPICH `test/mpi/rma/acc_ordering.c`: accumulates from one origin to the
//! same target elements are applied in program order under the default
//! `accumulate_ordering`, across ops. The last rank sends two accumulates of
//! (value, index) pairs ([`TwoInt`], MPI_2INT) to rank 0 in one fence epoch, for one
//! pair and for a whole array:
//!
//! 1. default ordering, REPLACE `a` then REPLACE `b`: rank 0 holds `b`;
//! 2. `accumulate_ordering = none`, the same: rank 0 holds `a` or `b` (each element
//!    one or the other, never a mix of their fields);
//! 3. default ordering, MAXLOC `b` then REPLACE `a` onto zeros: `a`; and REPLACE `b`
//!    then MINLOC `a` onto (INT_MAX, INT_MAX): `a` (as `a < b`).
//!
//! Adapted: windows are allocated with displacement unit 1 (as MPICH creates them) and
//! reset with `write_local` between fences.

use rma_datatype::TwoInt;
use rma_win::{Assert, Info, Op, Rank, Result, Window, World};

const LEN: usize = 8192 / std::mem::size_of::<TwoInt>();

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let n = world.size();
    let last = n - 1;
    let a = TwoInt::new(n as i32, last as i32);
    let b = TwoInt::new(n as i32 + 1, n as i32);
    let aa = vec![a; LEN];
    let bb = vec![b; LEN];
    let bytes = std::mem::size_of::<TwoInt>() * LEN;
    let root = Rank::new(0);

    // One epoch: the last rank sends `first` with `op1`, then `second` with `op2`, to
    // the first `len` pairs of rank 0, which start at `init`. Returns rank 0's window.
    let pair_epoch = |win: &Window<'_>,
                      init: TwoInt,
                      len: usize,
                      (first, op1): (&[TwoInt], Op),
                      (second, op2): (&[TwoInt], Op)|
     -> Result<Vec<TwoInt>> {
        if me == 0 {
            win.write_local(0, &vec![init; LEN])?;
        }
        win.fence(Assert::NONE)?;
        if me == last {
            win.accumulate(&first[..len], root, 0, op1)?;
            win.accumulate(&second[..len], root, 0, op2)?;
        }
        win.fence(Assert::NONE)?;
        win.local_vec::<TwoInt>()
    };
    let zero = TwoInt::new(0, 0);
    let check =
        |got: &[TwoInt], len: usize, init: TwoInt, ok: &dyn Fn(&TwoInt) -> bool, what: &str| {
            if me != 0 {
                return;
            }
            for (i, v) in got.iter().enumerate() {
                if i < len {
                    assert!(ok(v), "{what}: pair {i} is {v:?}");
                } else {
                    assert_eq!(*v, init, "{what}: pair {i} beyond the target was touched");
                }
            }
        };

    // 1. default ordering
    let mut win = Window::allocate_bytes(world, bytes, 1, info)?;
    for len in [1, LEN] {
        let got = pair_epoch(&win, zero, len, (&aa, Op::Replace), (&bb, Op::Replace))?;
        check(
            &got,
            len,
            zero,
            &|v| *v == b,
            "default ordering, REPLACE then REPLACE",
        );
    }
    win.free()?;

    // 2. no ordering
    let none = info.clone().with("accumulate_ordering", "none");
    let mut win = Window::allocate_bytes(world, bytes, 1, &none)?;
    assert_eq!(win.info().get("accumulate_ordering"), Some("none"));
    for len in [1, LEN] {
        let got = pair_epoch(&win, zero, len, (&aa, Op::Replace), (&bb, Op::Replace))?;
        check(
            &got,
            len,
            zero,
            &|v| *v == a || *v == b,
            "no ordering, REPLACE then REPLACE",
        );
    }
    win.free()?;

    // 3. mixed ops, default ordering
    let mut win = Window::allocate_bytes(world, bytes, 1, info)?;
    for len in [1, LEN] {
        let got = pair_epoch(&win, zero, len, (&bb, Op::MaxLoc), (&aa, Op::Replace))?;
        check(&got, len, zero, &|v| *v == a, "MAXLOC then REPLACE");
    }
    let top = TwoInt::new(i32::MAX, i32::MAX);
    for len in [1, LEN] {
        let got = pair_epoch(&win, top, len, (&bb, Op::Replace), (&aa, Op::MinLoc))?;
        check(&got, len, top, &|v| *v == a, "REPLACE then MINLOC");
    }
    win.free()
}
