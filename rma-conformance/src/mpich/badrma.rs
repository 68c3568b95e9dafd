//! Ported from MPICH `test/mpi/rma/badrma.c`: calls that move no data are valid
//! whatever their datatypes, because no datatype matching is enforced on them. Rank 0
//! issues put, get, accumulate (SUM) and get_accumulate (SUM) to rank 1 with every
//! combination of zero counts and zero-size datatypes (a contiguous type of zero
//! `i32`) against `i32`, a contiguous-of-one-`i32` type and `f64` on the other sides,
//! including mismatched ones; and, where the origin (or result) holds no data, again
//! with an empty buffer in its place (MPICH's NULL). Every call succeeds, and no
//! window or buffer changes.

use rma_win::{
    Assert, Buffer, BufferMut, Datatype, ErrorClass, Info, Op, Rank, Result, Target, Window, World,
};

const N: usize = 100;

struct Bufs {
    origin: Vec<i32>,
    result: Vec<i32>,
}

fn bytes(v: &[i32]) -> &[u8] {
    rma_datatype::bytes_of(v)
}

fn bytes_mut(v: &mut [i32]) -> &mut [u8] {
    rma_datatype::bytes_of_mut(v).expect("i32 takes any bytes")
}

/// One MPICH `do_test`: every call must succeed.
fn calls(
    win: &Window<'_>,
    b: &mut Bufs,
    (oc, ot): (usize, &Datatype),
    (rc, rt): (usize, &Datatype),
    (tc, tt): (usize, &Datatype),
) -> Result<()> {
    let peer = Rank::new(1);
    let target = || Target::new(peer, 0, tc, tt);
    let what = format!("origin {oc} x {ot:?}, result {rc} x {rt:?}, target {tc} x {tt:?}");
    let ok = |r: Result<()>, call: &str| {
        if let Err(e) = r {
            panic!("{call} with {what}: {e} ({})", e.class());
        }
    };
    ok(
        win.put_with(Buffer::new(bytes(&b.origin), oc, ot), target()),
        "put",
    );
    ok(
        win.get_with(BufferMut::new(bytes_mut(&mut b.origin), oc, ot), target()),
        "get",
    );
    ok(
        win.accumulate_with(Buffer::new(bytes(&b.origin), oc, ot), target(), Op::Sum),
        "accumulate",
    );
    ok(
        win.get_accumulate_with(
            Some(Buffer::new(bytes(&b.origin), oc, ot)),
            BufferMut::new(bytes_mut(&mut b.result), rc, rt),
            target(),
            Op::Sum,
        ),
        "get_accumulate",
    );
    if oc == 0 || ot.size() == 0 {
        ok(
            win.put_with(Buffer::new(&[], oc, ot), target()),
            "put (no buffer)",
        );
        ok(
            win.get_with(BufferMut::new(&mut [], oc, ot), target()),
            "get (no buffer)",
        );
        ok(
            win.accumulate_with(Buffer::new(&[], oc, ot), target(), Op::Sum),
            "accumulate (no buffer)",
        );
        ok(
            win.get_accumulate_with(
                Some(Buffer::new(&[], oc, ot)),
                BufferMut::new(bytes_mut(&mut b.result), rc, rt),
                target(),
                Op::Sum,
            ),
            "get_accumulate (no origin buffer)",
        );
        if rc == 0 || rt.size() == 0 {
            ok(
                win.get_accumulate_with(
                    Some(Buffer::new(&[], oc, ot)),
                    BufferMut::new(&mut [], rc, rt),
                    target(),
                    Op::Sum,
                ),
                "get_accumulate (no buffers)",
            );
        }
    }
    Ok(())
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank() as i32;
    let int = Datatype::of::<i32>();
    let mut empty = Datatype::contiguous(0, &int)?;
    empty.commit();
    let mut one = Datatype::contiguous(1, &int)?;
    one.commit();
    let double = Datatype::of::<f64>();
    let types = [&empty, &one, &int, &double];
    let nonempty = &types[1..];

    let pattern: Vec<i32> = (0..N as i32).map(|i| me * 1000 + i).collect();
    let mut win = Window::allocate::<i32>(world, N, info)?;
    win.write_local(0, &pattern)?;
    let mut b = Bufs {
        origin: (0..N as i32).map(|i| 5 + i).collect(),
        result: vec![-1; N],
    };
    let (origin0, result0) = (b.origin.clone(), b.result.clone());

    win.fence(Assert::NONE)?;
    if me == 0 {
        let z = &empty;
        // zero counts
        for &o in &types {
            for &r in &types {
                for &t in &types {
                    calls(&win, &mut b, (0, o), (0, r), (0, t))?;
                }
            }
        }
        // one zero-size type with a non-zero count
        for &x in nonempty {
            for &y in nonempty {
                calls(&win, &mut b, (1, z), (0, x), (0, y))?;
                calls(&win, &mut b, (0, x), (1, z), (0, y))?;
                calls(&win, &mut b, (0, x), (0, y), (1, z))?;
            }
        }
        // two zero-size types with non-zero counts
        for &x in nonempty {
            for (a, c) in [(1, 1), (1, 2), (2, 1)] {
                calls(&win, &mut b, (a, z), (c, z), (0, x))?;
                calls(&win, &mut b, (a, z), (0, x), (c, z))?;
                calls(&win, &mut b, (0, x), (a, z), (c, z))?;
            }
        }
        // three zero-size types
        for a in 1..=2 {
            for c in 1..=2 {
                for d in 1..=2 {
                    calls(&win, &mut b, (a, z), (c, z), (d, z))?;
                }
            }
        }
    }
    win.fence(Assert::NONE)?;
    assert_eq!(b.origin, origin0, "an empty call wrote the origin buffer");
    assert_eq!(b.result, result0, "an empty call wrote the result buffer");
    assert_eq!(
        win.local_vec::<i32>()?,
        pattern,
        "an empty call changed a window"
    );
    // what makes these calls legal is that they are empty: the same mismatch with data
    // is a TYPE error, and changes nothing either
    if me == 0 {
        let f = [1.5f64];
        let r = win.put_with(Buffer::of(&f), Target::new(Rank::new(1), 0, 2, &int));
        crate::expect_class(r, ErrorClass::Type);
    }
    win.fence(Assert::NONE)?;
    assert_eq!(
        win.local_vec::<i32>()?,
        pattern,
        "a rejected call changed a window"
    );
    win.free()
}
