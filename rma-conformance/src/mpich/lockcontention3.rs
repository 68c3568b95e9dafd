//! Ported from MPICH `test/mpi/rma/lockcontention3.c`: exclusive-lock contention on a
//! rank that has locked its own window. For each of 15 kinds of access, rank 0 (the
//! primary) takes an exclusive lock on itself, fills its window with `window[i] = i`,
//! lets the others go, holds the lock a little longer and releases it; meanwhile rank 1
//! (the partner) asks for an exclusive lock on rank 0, which must wait, then does the
//! accesses and unlocks. The kinds: one short put / accumulate (SUM) / get; the same
//! through a strided vector type (7 ints, stride 11) and as 7 single-element calls;
//! one long (512-int) call of each; and 4 medium (127-int) calls of each spread apart.
//! Rank 1 checks what it got; rank 0 checks its whole window: the elements written
//! hold exactly the expected values, and (our addition) every other element still
//! holds its index, which also shows the accesses did not land before the primary's
//! own writes under its lock.
//!
//! Adapted: MPICH coordinates with messages and delays with a message ring; here with
//! barriers (one before the partner asks for the lock, one after it is done) and a short
//! sleep of the primary while it holds the lock. Run on 4 ranks instead of 8; ranks 2
//! and 3 only take part in the barriers.

use rma_win::{
    Assert, Buffer, BufferMut, Datatype, Info, LockType, Op, Rank, Result, Target, Window, World,
};
use std::time::Duration;

const KINDS: usize = 15;
const SIZE: usize = 2048;
const OFF1: usize = 7;
const OFF2: usize = 83;
const OFF3: usize = 157;
const PUT_VAL: i32 = 0xdcba97;
const ACC_VAL: i32 = 10771134;
const STRIDE: usize = 11;
const VEC: usize = 7;
const LONG: usize = 512;
const MED: usize = 127;
const MEDS: usize = 4;

/// The partner's accesses for `kind`, issued inside its lock; gets land in `got`.
/// Returns the (index in `got`, expected value) pairs to check after the unlock.
fn access(
    win: &Window<'_>,
    kind: usize,
    vt: &Datatype,
    got: &mut [i32],
) -> Result<Vec<(usize, i32)>> {
    let primary = Rank::new(0);
    let mut src: Vec<i32> = (0..SIZE as i32).map(|j| -j).collect();
    let mut expect = vec![];
    match kind {
        0 => {
            src[0] = PUT_VAL;
            win.put(&src[..1], primary, OFF1 as i64)?;
        }
        1 => {
            src[0] = ACC_VAL;
            win.accumulate(&src[..1], primary, OFF2 as i64, Op::Sum)?;
        }
        2 => {
            win.get(&mut got[..1], primary, OFF3 as i64)?;
            expect.push((0, OFF3 as i32));
        }
        3..=8 => {
            // 3, 6: put; 4, 7: accumulate; 5, 8: get. 3..=5 through the vector type.
            let what = (kind - 3) % 3;
            let off = [OFF1, OFF2, OFF3][what];
            for j in 0..VEC {
                match what {
                    0 => src[j * STRIDE] = PUT_VAL + j as i32,
                    1 => src[j * STRIDE] = ACC_VAL + j as i32,
                    _ => expect.push((j * STRIDE, (OFF3 + j * STRIDE) as i32)),
                }
            }
            if kind <= 5 {
                let t = Target::new(primary, off as i64, 1, vt);
                match what {
                    0 => win.put_with(Buffer::typed(&src, 1, vt), t)?,
                    1 => win.accumulate_with(Buffer::typed(&src, 1, vt), t, Op::Sum)?,
                    _ => win.get_with(BufferMut::typed(got, 1, vt)?, t)?,
                }
            } else {
                for j in 0..VEC {
                    let (at, d) = (j * STRIDE, (off + j * STRIDE) as i64);
                    match what {
                        0 => win.put(&src[at..=at], primary, d)?,
                        1 => win.accumulate(&src[at..=at], primary, d, Op::Sum)?,
                        _ => win.get(&mut got[at..=at], primary, d)?,
                    }
                }
            }
        }
        9..=11 => {
            for (j, s) in src.iter_mut().take(LONG).enumerate() {
                *s = j as i32;
            }
            match kind {
                9 => win.put(&src[..LONG], primary, OFF1 as i64)?,
                10 => win.accumulate(&src[..LONG], primary, OFF2 as i64, Op::Sum)?,
                _ => {
                    win.get(&mut got[..LONG], primary, OFF3 as i64)?;
                    expect.extend((0..LONG).map(|j| (j, (OFF3 + j) as i32)));
                }
            }
        }
        _ => {
            for j in 0..MEDS {
                let spread = j * 2 * MED;
                let extra = if kind == 13 { ACC_VAL } else { 0 };
                let block = &mut src[j * MED..(j + 1) * MED];
                for (k, s) in block.iter_mut().enumerate() {
                    *s = (spread + k) as i32 + extra;
                }
                let block = &src[j * MED..(j + 1) * MED];
                match kind {
                    12 => win.put(block, primary, (OFF1 + spread) as i64)?,
                    13 => win.accumulate(block, primary, (OFF2 + spread) as i64, Op::Sum)?,
                    _ => {
                        let into = &mut got[j * MED..(j + 1) * MED];
                        win.get(into, primary, (OFF3 + spread) as i64)?;
                        expect.extend((0..MED).map(|k| (j * MED + k, (OFF3 + spread + k) as i32)));
                    }
                }
            }
        }
    }
    Ok(expect)
}

/// The primary's window after `kind`: every element its index, except those written.
fn expected_window(kind: usize) -> Vec<i32> {
    let mut w: Vec<i32> = (0..SIZE as i32).collect();
    match kind {
        0 => w[OFF1] = PUT_VAL,
        1 => w[OFF2] += ACC_VAL,
        3 | 6 => (0..VEC).for_each(|j| w[OFF1 + j * STRIDE] = PUT_VAL + j as i32),
        4 | 7 => (0..VEC).for_each(|j| w[OFF2 + j * STRIDE] += ACC_VAL + j as i32),
        9 => (0..LONG).for_each(|j| w[OFF1 + j] = j as i32),
        10 => (0..LONG).for_each(|j| w[OFF2 + j] += j as i32),
        12 | 13 => {
            for j in 0..MEDS {
                for k in 0..MED {
                    let v = (j * 2 * MED + k) as i32;
                    if kind == 12 {
                        w[OFF1 + j * 2 * MED + k] = v;
                    } else {
                        w[OFF2 + j * 2 * MED + k] += v + ACC_VAL;
                    }
                }
            }
        }
        _ => {} // gets leave the window alone
    }
    w
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let primary = Rank::new(0);
    let mut vt = Datatype::vector(VEC, 1, STRIDE as isize, &Datatype::of::<i32>())?;
    vt.commit();
    let mut win = Window::allocate::<i32>(world, if me == 0 { SIZE } else { 0 }, info)?;
    for kind in 0..KINDS {
        match me {
            0 => {
                win.lock(LockType::Exclusive, primary, Assert::NONE)?;
                let init: Vec<i32> = (0..SIZE as i32).collect();
                win.write_local(0, &init)?;
                world.barrier()?;
                // hold the lock while the partner asks for it
                std::thread::sleep(Duration::from_millis(2));
                win.unlock(primary)?;
                world.barrier()?;
                let got = win.local_vec::<i32>()?;
                let want = expected_window(kind);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(g, w, "kind {kind}: primary's element {i}");
                }
            }
            1 => {
                world.barrier()?;
                let mut got = vec![i32::MIN; SIZE];
                win.lock(LockType::Exclusive, primary, Assert::NONE)?;
                let expect = access(&win, kind, &vt, &mut got)?;
                win.unlock(primary)?;
                for (i, want) in expect {
                    assert_eq!(got[i], want, "kind {kind}: fetched element {i}");
                }
                world.barrier()?;
            }
            _ => {
                world.barrier()?;
                world.barrier()?;
            }
        }
    }
    win.free()
}
