//! Every op x basic type through a window, checked against the scalar model
//! (`rma_ops::apply_bytes`, itself tested against an independent reference in
//! rma-ops' tests).

use rma_core::rng::SplitMix64;
use rma_win::{
    Assert, BasicType, Buffer, BufferMut, Datatype, Info, Op, Rank, Result, Target, Window, World,
};

/// A deterministic element of `basic`, chosen so that every op's fold is exact and
/// independent of the order (small integers, no NaN).
pub(crate) fn value(basic: BasicType, seed: u64) -> Vec<u8> {
    let x = SplitMix64::new(seed).next_u64();
    let small = (x % 7) as i64 - 3; // -3..=3
    let size = basic.size();
    use BasicType::*;
    match basic {
        F32 => (small as f32).to_ne_bytes().to_vec(),
        F64 => (small as f64).to_ne_bytes().to_vec(),
        C32 => [(small as f32).to_ne_bytes(), ((x % 3) as f32).to_ne_bytes()].concat(),
        C64 => [(small as f64).to_ne_bytes(), ((x % 3) as f64).to_ne_bytes()].concat(),
        Bool => vec![(x % 2) as u8],
        LongDouble => long_double(small as f64),
        FloatInt | DoubleInt | LongInt | TwoInt | ShortInt | LongDoubleInt => {
            let mut b = vec![0u8; size];
            let v = match basic {
                FloatInt => (small as f32).to_ne_bytes().to_vec(),
                DoubleInt => (small as f64).to_ne_bytes().to_vec(),
                LongInt => small.to_ne_bytes().to_vec(),
                TwoInt => (small as i32).to_ne_bytes().to_vec(),
                LongDoubleInt => long_double(small as f64),
                _ => (small as i16).to_ne_bytes().to_vec(),
            };
            b[..v.len()].copy_from_slice(&v);
            let off = basic.pair_index_offset().unwrap_or(4);
            b[off..off + 4].copy_from_slice(&((seed % 5) as i32).to_ne_bytes());
            b
        }
        _ => x.to_ne_bytes()[..size].to_vec(),
    }
}

/// The 16 bytes of `v` as a `long double` (padding zero).
fn long_double(v: f64) -> Vec<u8> {
    rma_win::LongDouble::from_f64(v)
        .to_bits()
        .to_le_bytes()
        .to_vec()
}

fn ops_for(basic: BasicType) -> Vec<Op> {
    Op::ALL
        .into_iter()
        .filter(|op| rma_ops::check(*op, basic, rma_win::RmaCall::Accumulate).is_ok())
        .collect()
}

/// Clears what carries no value: pair padding, and the sign of floating-point zeros
/// (the order of a concurrent fold may make a zero product -0.0 or +0.0).
fn clear_padding(basic: BasicType, b: &mut [u8]) {
    match basic {
        BasicType::ShortInt => b[2..4].fill(0),
        BasicType::DoubleInt | BasicType::LongInt => b[12..16].fill(0),
        BasicType::LongDouble => b[10..16].fill(0),
        BasicType::LongDoubleInt => {
            b[10..16].fill(0);
            b[20..32].fill(0);
        }
        _ => {}
    }
    if matches!(basic, BasicType::LongDouble | BasicType::LongDoubleInt)
        && b[..10] == long_double(-0.0)[..10]
    {
        b[..10].fill(0);
    }
    let floats: &[(usize, usize)] = match basic {
        BasicType::F32 | BasicType::FloatInt => &[(0, 4)],
        BasicType::C32 => &[(0, 4), (4, 4)],
        BasicType::F64 | BasicType::DoubleInt => &[(0, 8)],
        BasicType::C64 => &[(0, 8), (8, 8)],
        _ => &[],
    };
    for &(off, len) in floats {
        let neg_zero: &[u8] = if len == 4 {
            &(-0.0f32).to_ne_bytes()
        } else {
            &(-0.0f64).to_ne_bytes()
        };
        if &b[off..off + len] == neg_zero {
            b[off..off + len].fill(0);
        }
    }
}

/// Every rank accumulates its value into element `op` of rank 0 and of its right
/// neighbour, for every op valid on every type, in one fence epoch; the targets then
/// hold the fold of all values (order-independent ops) or one of them (REPLACE).
pub(crate) fn concurrent_fold(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    for basic in BasicType::ALL {
        let dt = Datatype::basic(basic);
        let ops = ops_for(basic);
        let size = basic.size();
        let win = Window::allocate_bytes(world, ops.len() * size, size, info)?;
        let init = |i: usize| value(basic, 500 + i as u64);
        for i in 0..ops.len() {
            win.write_local(i * size, &init(i))?;
        }
        win.fence(Assert::NONE)?;
        for (i, op) in ops.iter().enumerate() {
            let v = value(basic, (me * 31 + i) as u64);
            let mut targets = vec![0, (me + 1) % p];
            targets.dedup();
            for target in targets {
                win.accumulate_with(
                    Buffer::new(&v, 1, &dt),
                    Target::new(target, i as i64, 1, &dt),
                    *op,
                )?;
            }
        }
        win.fence(Assert::NONE)?;
        // which ranks contributed to my elements
        let contributors: Vec<usize> = (0..p)
            .filter(|&r| {
                let neighbour = (r + 1) % p;
                (me == 0) || neighbour == me
            })
            .collect();
        let mut mine = vec![0u8; ops.len() * size];
        win.read_local(0, &mut mine)?;
        for (i, op) in ops.iter().enumerate() {
            let mut actual = mine[i * size..(i + 1) * size].to_vec();
            clear_padding(basic, &mut actual);
            if *op == Op::Replace {
                let candidates: Vec<Vec<u8>> = contributors
                    .iter()
                    .map(|&r| {
                        let mut v = value(basic, (r * 31 + i) as u64);
                        clear_padding(basic, &mut v);
                        v
                    })
                    .collect();
                assert!(
                    candidates.contains(&actual),
                    "REPLACE on {basic}: {actual:?} is none of {candidates:?}"
                );
                continue;
            }
            let mut expect = init(i);
            for &r in &contributors {
                rma_ops::apply_bytes(basic, *op, &mut expect, &value(basic, (r * 31 + i) as u64));
            }
            clear_padding(basic, &mut expect);
            assert_eq!(
                actual, expect,
                "{op} on {basic} at rank {me}, contributors {contributors:?}"
            );
        }
        let mut win = win;
        win.free()?;
    }
    Ok(())
}

/// Rank 0 applies fetch_and_op and get_accumulate with every op (NO_OP included) on
/// every type to rank 1, one after another: each fetched value is exactly the state
/// before that call.
pub(crate) fn sequential_fetch(world: &World, info: &Info) -> Result<()> {
    for basic in BasicType::ALL {
        let dt = Datatype::basic(basic);
        let size = basic.size();
        let win = Window::allocate_bytes(world, 2 * size, size, info)?;
        let init = value(basic, 99);
        win.write_local(0, &init)?;
        win.write_local(size, &init)?;
        win.fence(Assert::NONE)?;
        if world.rank() == 0 {
            let mut model = init.clone();
            let ops: Vec<Op> = Op::ALL
                .into_iter()
                .filter(|op| rma_ops::check(*op, basic, rma_win::RmaCall::FetchAndOp).is_ok())
                .collect();
            for (k, op) in ops.iter().enumerate() {
                let v = value(basic, 7 + k as u64);
                // fetch_and_op on element 0
                let mut old = vec![0u8; size];
                win.fetch_and_op_with(&v, &mut old, &dt, Rank::new(1), 0, *op)?;
                let (mut o, mut m) = (old.clone(), model.clone());
                clear_padding(basic, &mut o);
                clear_padding(basic, &mut m);
                assert_eq!(o, m, "fetch_and_op {op} on {basic} fetched");
                // get_accumulate on element 1, which has seen the same history
                let mut old2 = vec![0u8; size];
                let origin = (*op != Op::NoOp).then(|| Buffer::new(&v, 1, &dt));
                win.get_accumulate_with(
                    origin,
                    BufferMut::new(&mut old2, 1, &dt),
                    Target::new(Rank::new(1), 1, 1, &dt),
                    *op,
                )?;
                clear_padding(basic, &mut old2);
                assert_eq!(old2, m, "get_accumulate {op} on {basic} fetched");
                rma_ops::apply_bytes(basic, *op, &mut model, &v);
            }
            let mut now = vec![0u8; 2 * size];
            win.get_with(
                BufferMut::new(&mut now, 2, &dt),
                Target::new(Rank::new(1), 0, 2, &dt),
            )?;
            for half in now.chunks_exact_mut(size) {
                clear_padding(basic, half);
                let mut m = model.clone();
                clear_padding(basic, &mut m);
                assert_eq!(half, &m[..], "final value on {basic}");
            }
        }
        win.fence(Assert::NONE)?;
        let mut win = win;
        win.free()?;
    }
    Ok(())
}

/// compare_and_swap on every type it accepts: every rank tries to swap rank 0's element
/// from its initial value (0) to its own; exactly one fetches 0 (the winner), and every
/// other fetches the winner's value.
pub(crate) fn cas_every_type(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    for basic in BasicType::ALL
        .into_iter()
        .filter(|b| rma_ops::check_cas_type(*b).is_ok())
    {
        let dt = Datatype::basic(basic);
        let size = basic.size();
        // distinct values per rank, distinct from the initial 0 (bool has only two
        // values: there only rank 0 takes part)
        let mine: Vec<u8> = if basic == BasicType::Bool {
            vec![1]
        } else {
            ((me + 1) as u64).to_ne_bytes()[..size].to_vec()
        };
        let win = Window::allocate_bytes(world, 8 + p * size, size, info)?;
        win.fence(Assert::NONE)?;
        let compare = vec![0u8; size];
        let mut old = vec![0u8; size];
        let takes_part = basic != BasicType::Bool || me == 0;
        if takes_part {
            win.compare_and_swap_with(&mine, &compare, &mut old, &dt, Rank::new(0), 0)?;
        }
        // publish what I fetched to rank 0 (slot me+1)
        if takes_part {
            win.put_with(
                Buffer::new(&old, 1, &dt),
                Target::new(Rank::new(0), (1 + me) as i64, 1, &dt),
            )?;
        }
        win.fence(Assert::NONE)?;
        if me == 0 {
            let mut all = vec![0u8; (p + 1) * size];
            win.read_local(0, &mut all)?;
            let winner_value = all[..size].to_vec();
            let fetched: Vec<&[u8]> = (0..p)
                .filter(|r| basic != BasicType::Bool || *r == 0)
                .map(|r| &all[(r + 1) * size..(r + 2) * size])
                .collect();
            let zeros = fetched.iter().filter(|f| f.iter().all(|b| *b == 0)).count();
            assert_eq!(zeros, 1, "{basic}: exactly one CAS saw the initial value");
            for f in &fetched {
                assert!(
                    f.iter().all(|b| *b == 0) || *f == &winner_value[..],
                    "{basic}: a loser fetched {f:?}, winner wrote {winner_value:?}"
                );
            }
        }
        let mut win = win;
        win.free()?;
    }
    Ok(())
}

/// Every call with the origin as its own target, in fence epochs.
pub(crate) fn self_target(world: &World, info: &Info) -> Result<()> {
    let me = Rank::new(world.rank() as u32);
    let win = Window::allocate::<i64>(world, 16, info)?;
    win.fence(Assert::NONE)?;
    win.put(&[1i64, 2, 3, 4], me, 0)?;
    win.accumulate(&[10i64, 10, 10, 10], me, 0, Op::Sum)?;
    let mut got = [0i64; 4];
    win.get(&mut got, me, 0)?;
    assert_eq!(got, [11, 12, 13, 14]);
    let mut fetched = [0i64; 4];
    win.get_accumulate(&[100i64; 4], &mut fetched, me, 0, Op::Max)?;
    assert_eq!(fetched, [11, 12, 13, 14]);
    assert_eq!(win.fetch_and_op(5i64, me, 0, Op::Sum)?, 100);
    assert_eq!(win.compare_and_swap(7i64, 105, me, 0)?, 105);
    assert_eq!(
        win.compare_and_swap(9i64, 105, me, 0)?,
        7,
        "second CAS compares against 7"
    );
    assert_eq!(win.fetch_and_op(0i64, me, 0, Op::NoOp)?, 7);
    win.fence(Assert::NONE)?;
    let local: Vec<i64> = win.local_vec()?;
    assert_eq!(&local[..4], &[7, 100, 100, 100]);
    assert!(local[4..].iter().all(|v| *v == 0));
    let mut win = win;
    win.free()
}
