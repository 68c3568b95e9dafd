//! Derived datatypes on origin, target and result sides, checked element by element
//! against index arithmetic written out by hand.

use rma_datatype::{DoubleInt, Order};
use rma_win::{
    Assert, BasicType, Buffer, BufferMut, Datatype, Info, Op, Rank, Result, Target, Window, World,
};

fn commit(mut d: Datatype) -> Datatype {
    d.commit();
    d
}

/// Rank r writes to rank r+1: origin = every other i32 of a 2n buffer (vector), target
/// = blocks of 2 in reverse block order (indexed); then accumulates through a subarray
/// origin onto an hvector target; then reads back through yet another layout.
pub(crate) fn derived_both_sides(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let right = Rank::new(((me + 1) % p) as u32);
    let left = (me + p - 1) % p;
    let i32t = Datatype::basic(BasicType::I32);
    const N: usize = 64; // elements moved
    let win = Window::allocate::<i32>(world, 4 * N, info)?;

    // put: origin vector(N, 1, 2), target indexed blocks of 2 in reverse order
    let origin: Vec<i32> = (0..2 * N as i32).map(|i| i * 1000 + me as i32).collect();
    let ovec = commit(Datatype::vector(N, 1, 2, &i32t)?);
    let blocks = N / 2;
    let disps: Vec<isize> = (0..blocks)
        .map(|b| (2 * (blocks - 1 - b)) as isize)
        .collect();
    let tidx = commit(Datatype::indexed(&vec![2; blocks], &disps, &i32t)?);
    win.fence(Assert::NONE)?;
    win.put_with(
        Buffer::typed(&origin, 1, &ovec),
        Target::new(right, 0, 1, &tidx),
    )?;
    win.fence(Assert::NONE)?;
    let local: Vec<i32> = win.local_vec()?;
    for k in 0..N {
        // k-th origin element = origin[2k]; k-th target slot: block k/2 at 2*(blocks-1-k/2) + k%2
        let slot = 2 * (blocks - 1 - k / 2) + k % 2;
        assert_eq!(
            local[slot],
            (2 * k as i32) * 1000 + left as i32,
            "put element {k}"
        );
    }

    // accumulate: origin = 8x8 subarray [2..6) x [1..7) of a 8x8 C-order array,
    // target = hvector of 4 blocks of 6 i32 with a 40-byte stride, at disp 100
    let arr: Vec<i32> = (0..64).collect();
    let sub = commit(Datatype::subarray(
        &[8, 8],
        &[4, 6],
        &[2, 1],
        Order::C,
        &i32t,
    )?);
    let hv = commit(Datatype::hvector(4, 6, 40, &i32t)?);
    win.accumulate_with(
        Buffer::typed(&arr, 1, &sub),
        Target::new(right, 100, 1, &hv),
        Op::Sum,
    )?;
    win.accumulate_with(
        Buffer::typed(&arr, 1, &sub),
        Target::new(right, 100, 1, &hv),
        Op::Sum,
    )?;
    win.fence(Assert::NONE)?;
    let local: Vec<i32> = win.local_vec()?;
    for row in 0..4 {
        for col in 0..6 {
            let src = (2 + row) * 8 + (1 + col);
            let dst = 100 + row * 10 + col;
            assert_eq!(local[dst], 2 * src as i32, "accumulate row {row} col {col}");
        }
        // the gap between blocks is untouched
        for gap in 6..10 {
            assert_eq!(local[100 + row * 10 + gap], 0, "gap {row}/{gap}");
        }
    }

    // get back my left neighbour's... no: read my right neighbour's hvector region into
    // a contiguous buffer with a contiguous(24) result type
    let mut back = vec![0i32; 24];
    let c24 = commit(Datatype::contiguous(24, &i32t)?);
    win.get_with(
        BufferMut::typed(&mut back, 1, &c24)?,
        Target::new(right, 100, 1, &hv),
    )?;
    win.fence(Assert::NONE)?;
    for (k, v) in back.iter().enumerate() {
        let (row, col) = (k / 6, k % 6);
        assert_eq!(*v, 2 * ((2 + row) * 8 + 1 + col) as i32, "get element {k}");
    }
    let mut win = win;
    win.free()
}

/// MAXLOC over a vector of DOUBLE_INT pairs (a pair counts as one basic type): every
/// rank offers, per element, a value that ties across ranks for even elements; the
/// smallest index must win ties.
pub(crate) fn pair_vector_maxloc(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    const N: usize = 32;
    let pair = Datatype::basic(BasicType::DoubleInt);
    let tv = commit(Datatype::vector(N, 1, 2, &pair)?);
    let win = Window::allocate::<DoubleInt>(world, 2 * N, info)?;
    let offer: Vec<DoubleInt> = (0..N)
        .map(|k| {
            let v = if k % 2 == 0 {
                5.0
            } else {
                (me * 10 + k) as f64
            };
            DoubleInt::new(v, (p - me) as i32 * 100 + k as i32)
        })
        .collect();
    win.fence(Assert::NONE)?;
    win.accumulate_with(
        Buffer::of(&offer),
        Target::new(Rank::new(0), 0, 1, &tv),
        Op::MaxLoc,
    )?;
    win.fence(Assert::NONE)?;
    if me == 0 {
        let got: Vec<DoubleInt> = win.local_vec()?;
        for k in 0..N {
            let g = got[2 * k];
            if k % 2 == 0 {
                // all ranks tie at 5.0; rank p-1 has the smallest index (100 + k)
                assert_eq!((g.value, g.index), (5.0, 100 + k as i32), "tie at {k}");
            } else {
                let r = p - 1;
                assert_eq!(
                    (g.value, g.index),
                    ((r * 10 + k) as f64, (p - r) as i32 * 100 + k as i32),
                    "max at {k}"
                );
            }
            assert_eq!(
                (got[2 * k + 1].value, got[2 * k + 1].index),
                (0.0, 0),
                "gap {k} untouched"
            );
        }
    }
    let mut win = win;
    win.free()
}

/// get_accumulate with a strided result layout, a contiguous origin and an indexed
/// target: the result receives the old values at the result's strided slots.
pub(crate) fn get_accumulate_derived_result(world: &World, info: &Info) -> Result<()> {
    let me = world.rank();
    let f64t = Datatype::basic(BasicType::F64);
    let win = Window::allocate::<f64>(world, 64, info)?;
    let init: Vec<f64> = (0..64).map(|i| (i * 2) as f64).collect();
    win.write_local(0, &init)?;
    let tidx = commit(Datatype::indexed(&[3, 2, 3], &[40, 5, 20], &f64t)?);
    let rvec = commit(Datatype::vector(8, 1, 3, &f64t)?);
    let target_slots = [40usize, 41, 42, 5, 6, 20, 21, 22];
    win.fence(Assert::NONE)?;
    if me == 0 {
        let origin = [1.0f64; 8];
        let mut result = vec![-1.0f64; 24];
        win.get_accumulate_with(
            Some(Buffer::of(&origin)),
            BufferMut::typed(&mut result, 1, &rvec)?,
            Target::new(Rank::new(1), 0, 1, &tidx),
            Op::Sum,
        )?;
        for (k, slot) in target_slots.iter().enumerate() {
            assert_eq!(result[3 * k], (slot * 2) as f64, "fetched element {k}");
            assert_eq!(
                (result[3 * k + 1], result[3 * k + 2]),
                (-1.0, -1.0),
                "result gaps untouched"
            );
        }
    }
    win.fence(Assert::NONE)?;
    if me == 1 {
        let local: Vec<f64> = win.local_vec()?;
        for (i, v) in local.iter().enumerate() {
            let bumped = target_slots.contains(&i);
            assert_eq!(
                *v,
                (i * 2) as f64 + if bumped { 1.0 } else { 0.0 },
                "element {i}"
            );
        }
    }
    let mut win = win;
    win.free()
}

/// A strided target of 100 000 blocks (described compactly) receives accumulates from
/// both ranks; every other element is updated, the rest untouched.
pub(crate) fn large_strided(world: &World, info: &Info) -> Result<()> {
    const N: usize = 100_000;
    let i64t = Datatype::basic(BasicType::I64);
    let tv = commit(Datatype::vector(N, 1, 2, &i64t)?);
    let win = Window::allocate::<i64>(world, 2 * N, info)?;
    let origin: Vec<i64> = (0..N as i64).collect();
    win.fence(Assert::NONE)?;
    win.accumulate_with(
        Buffer::of(&origin),
        Target::new(Rank::new(0), 0, 1, &tv),
        Op::Sum,
    )?;
    win.fence(Assert::NONE)?;
    if world.rank() == 0 {
        let local: Vec<i64> = win.local_vec()?;
        let p = world.size() as i64;
        for k in 0..N {
            assert_eq!(local[2 * k], k as i64 * p);
            assert_eq!(local[2 * k + 1], 0);
        }
    }
    let mut win = win;
    win.free()
}
