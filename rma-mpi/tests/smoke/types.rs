//! Every basic type through accumulate, fetch_and_op, get_accumulate and
//! compare_and_swap.

use super::check::{ensure, i64s, ran, rank, read, Check, Ctx};
use rma_core::{Assert, BasicType, Op, TypeClass};
use rma_mpi::{MpiTargetSpec, MpiWindow, MpiWorld};

/// The 16 bytes of `v` as a `long double`.
fn long_double(v: i64) -> [u8; 16] {
    rma_datatype::LongDouble::from_f64(v as f64)
        .to_bits()
        .to_le_bytes()
}

/// rma's element bytes for `v` as `basic` (numbers), or the pair (v, index).
fn element(basic: BasicType, v: i64, index: i32) -> Vec<u8> {
    use BasicType::*;
    let pair = |mut b: Vec<u8>, pad: usize| {
        b.extend(std::iter::repeat_n(0u8, pad));
        b.extend(index.to_ne_bytes());
        b.resize(basic.size(), 0);
        b
    };
    match basic {
        I8 | U8 | Bool | Byte => vec![v as u8],
        I16 | U16 => (v as i16).to_ne_bytes().to_vec(),
        I32 | U32 => (v as i32).to_ne_bytes().to_vec(),
        I64 | U64 | Isize | Usize => v.to_ne_bytes().to_vec(),
        F32 => (v as f32).to_ne_bytes().to_vec(),
        F64 => (v as f64).to_ne_bytes().to_vec(),
        C32 => [(v as f32).to_ne_bytes(), 0f32.to_ne_bytes()].concat(),
        C64 => [(v as f64).to_ne_bytes(), 0f64.to_ne_bytes()].concat(),
        FloatInt => pair((v as f32).to_ne_bytes().to_vec(), 0),
        DoubleInt => pair((v as f64).to_ne_bytes().to_vec(), 0),
        LongInt => pair(v.to_ne_bytes().to_vec(), 0),
        TwoInt => pair((v as i32).to_ne_bytes().to_vec(), 0),
        ShortInt => pair((v as i16).to_ne_bytes().to_vec(), 2),
        LongDouble => long_double(v).to_vec(),
        LongDoubleInt => pair(long_double(v).to_vec(), 0),
    }
}

/// What each rank contributes to `basic`'s slot, the op, and the expected result.
fn contribution(basic: BasicType, r: usize, n: usize) -> (Op, Vec<u8>, Vec<u8>) {
    match basic.class() {
        TypeClass::Logical => (Op::Lor, vec![u8::from(r == n - 1)], vec![1]),
        TypeClass::Byte => {
            let all = (0..n).fold(0u8, |acc, q| acc | (1 << (q % 8)));
            (Op::Bor, vec![1 << (r % 8)], vec![all])
        }
        TypeClass::Pair => (
            Op::MaxLoc,
            element(basic, r as i64 + 1, r as i32),
            element(basic, n as i64, n as i32 - 1),
        ),
        _ => (Op::Sum, element(basic, 1, 0), element(basic, n as i64, 0)),
    }
}

/// Per basic type, one accumulate, one fetch_and_op and one get_accumulate (SUM, LOR,
/// BOR or MAXLOC) from every rank into rank 0, each call into its own area, and one
/// compare_and_swap per type it accepts: checks rma's BasicType -> MPI datatype
/// mapping for every type in all four calls (each in a 32-byte slot, the largest
/// basic type's size).
pub(super) fn every_basic_type(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    let (r, n) = (world.rank(), world.size());
    let types = BasicType::ALL.len();
    const WORDS: usize = BasicType::MAX_SIZE / 8;
    let disp = |call: usize, i: usize| 128 + (WORDS * (call * types + i)) as i64;
    let mut done = vec![[false; 4]; types];
    let mut swapped = vec![Vec::new(); types];
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    for (i, basic) in BasicType::ALL.into_iter().enumerate() {
        let (op, data, _) = contribution(basic, r, n);
        let (at, mut out) = (
            |c| MpiTargetSpec::contiguous(rank(0), disp(c, i)),
            vec![0u8; basic.size()],
        );
        done[i][0] = ran(
            win.accumulate(basic, op, &data, at(0)),
            format!("accumulate {op} on {basic}"),
        )?;
        done[i][1] = ran(
            win.fetch_and_op(basic, op, &data, &mut out, rank(0), disp(1, i)),
            format!("fetch_and_op {op} on {basic}"),
        )?;
        done[i][2] = ran(
            win.get_accumulate(basic, op, &data, &mut out, at(2)),
            format!("get_accumulate {op} on {basic}"),
        )?;
        if rma_ops::check_cas_type(basic).is_ok() {
            let value = if basic == BasicType::Bool {
                1
            } else {
                r as i64 + 1
            };
            let (zero, new) = (vec![0u8; basic.size()], element(basic, value, 0));
            done[i][3] = ran(
                win.compare_and_swap(basic, &new, &zero, &mut out, rank(0), disp(3, i)),
                format!("compare_and_swap on {basic}"),
            )?;
            swapped[i] = out;
        }
    }
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let all = i64s(&read(win, 0, disp(0, 0), WORDS * 4 * types)?);
    let mut wrong = Vec::new();
    for (call, name) in ["accumulate", "fetch_and_op", "get_accumulate"]
        .into_iter()
        .enumerate()
    {
        for (i, basic) in BasicType::ALL.into_iter().enumerate() {
            let (op, _, want) = contribution(basic, r, n);
            let at = BasicType::MAX_SIZE * (call * types + i);
            let got = &all[at..at + basic.size()];
            if done[i][call] && got != want {
                wrong.push(format!(
                    "{name} {op} on {basic}: got {got:?}, want {want:?}"
                ));
            }
        }
    }
    for (i, basic) in BasicType::ALL.into_iter().enumerate() {
        if done[i][3] {
            let at = BasicType::MAX_SIZE * (3 * types + i);
            check_one_swap_won(
                world,
                basic,
                &swapped[i],
                &all[at..at + basic.size()],
                &mut wrong,
            )?;
        }
    }
    ensure!(wrong.is_empty(), "{}", wrong.join("; "));
    world.barrier().ctx("barrier")
}

/// Every rank swapped zero for its own value: exactly one rank read zero, and
/// everybody else and the target hold the winner's value.
fn check_one_swap_won(
    world: &MpiWorld,
    basic: BasicType,
    mine: &[u8],
    target: &[u8],
    wrong: &mut Vec<String>,
) -> Check {
    let fetched = world.allgather(mine).ctx("allgather")?;
    let zero = vec![0u8; basic.size()];
    let winners = fetched.iter().filter(|f| **f == zero).count();
    let others_agree = fetched.iter().all(|f| *f == zero || f == target);
    if winners != 1 || !others_agree || target == zero {
        wrong.push(format!(
            "compare_and_swap on {basic}: fetched {fetched:?}, target {target:?}"
        ));
    }
    Ok(())
}
