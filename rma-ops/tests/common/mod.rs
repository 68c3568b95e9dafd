//! Test support: a scalar reference model of every op written on bytes, independently
//! of `Element::combine`, and a small deterministic generator of element values.
#![allow(dead_code, unreachable_pub)]

use rma_core::rng::SplitMix64;
use rma_core::{BasicType, Op, TypeClass};
use rma_datatype::LongDouble;

/// The 16 bytes of `v` as a `long double`.
pub fn ld_bytes(v: f64) -> Vec<u8> {
    LongDouble::from_f64(v).to_bits().to_le_bytes().to_vec()
}

fn ld_at(b: &[u8], off: usize) -> f64 {
    let mut raw = [0u8; 16];
    raw[..10].copy_from_slice(&b[off..off + 10]);
    LongDouble::from_bits(u128::from_le_bytes(raw)).to_f64()
}

/// Deterministic test data: [`SplitMix64`].
pub type Rng = SplitMix64;

/// One random element of `basic`, as its bytes. Floats are small integers or halves
/// (occasionally NaN, infinities, signed zeros); pair values come from a small range so
/// that ties happen; bools are 0 or 1.
pub fn random_element(basic: BasicType, rng: &mut Rng) -> Vec<u8> {
    let size = basic.size();
    let special_f64 = |rng: &mut Rng| -> f64 {
        match rng.below(16) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => -0.0,
            3 => 0.0,
            _ => (rng.below(2001) as f64 - 1000.0) / 2.0,
        }
    };
    match basic.class() {
        TypeClass::Integer | TypeClass::Address | TypeClass::Byte => {
            let v = match rng.below(4) {
                0 => rng.below(5),                // small, 0 included
                1 => rng.below(5).wrapping_neg(), // small negative
                _ => rng.next_u64(),
            };
            v.to_ne_bytes()[..size].to_vec()
        }
        TypeClass::Logical => vec![rng.below(2) as u8],
        TypeClass::Float => match basic {
            BasicType::F32 => (special_f64(rng) as f32).to_ne_bytes().to_vec(),
            BasicType::LongDouble => ld_bytes(special_f64(rng)),
            _ => special_f64(rng).to_ne_bytes().to_vec(),
        },
        TypeClass::Complex => {
            let (re, im) = (
                (rng.below(41) as f64 - 20.0) / 4.0,
                (rng.below(41) as f64 - 20.0) / 4.0,
            );
            if basic == BasicType::C32 {
                [(re as f32).to_ne_bytes(), (im as f32).to_ne_bytes()].concat()
            } else {
                [re.to_ne_bytes(), im.to_ne_bytes()].concat()
            }
        }
        TypeClass::Pair => {
            let mut out = vec![0u8; size];
            let v = rng.below(7) as i64 - 3;
            let val: Vec<u8> = match basic {
                BasicType::FloatInt => (v as f32).to_ne_bytes().to_vec(),
                BasicType::DoubleInt => (v as f64).to_ne_bytes().to_vec(),
                BasicType::LongInt => v.to_ne_bytes().to_vec(),
                BasicType::TwoInt => (v as i32).to_ne_bytes().to_vec(),
                BasicType::ShortInt => (v as i16).to_ne_bytes().to_vec(),
                BasicType::LongDoubleInt => ld_bytes(v as f64),
                _ => unreachable!(),
            };
            out[..val.len()].copy_from_slice(&val);
            let idx = rng.below(9) as i32;
            let off = basic.pair_index_offset().unwrap();
            out[off..off + 4].copy_from_slice(&idx.to_ne_bytes());
            out
        }
    }
}

fn int_of(basic: BasicType, b: &[u8]) -> i128 {
    let mut buf = [0u8; 16];
    buf[..b.len()].copy_from_slice(b);
    let raw = u128::from_ne_bytes(buf);
    let bits = 8 * b.len() as u32;
    if basic.is_signed_integer() && bits < 128 && (raw >> (bits - 1)) & 1 == 1 {
        (raw | (!0u128 << bits)) as i128
    } else {
        raw as i128
    }
}

fn int_bytes(v: i128, size: usize) -> Vec<u8> {
    (v as u128).to_ne_bytes()[..size].to_vec()
}

fn f64_at(b: &[u8], off: usize) -> f64 {
    f64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}
fn f32_at(b: &[u8], off: usize) -> f32 {
    f32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}

fn fmax(a: f64, b: f64, max: bool) -> f64 {
    if a.is_nan() {
        return a;
    }
    if b.is_nan() {
        return b;
    }
    if (max && b > a) || (!max && b < a) {
        b
    } else {
        a
    }
}

/// Reference: the new target bytes after `op(target, origin)` on one element.
pub fn reference(basic: BasicType, op: Op, target: &[u8], origin: &[u8]) -> Vec<u8> {
    let size = basic.size();
    match op {
        Op::Replace => return origin.to_vec(),
        Op::NoOp => return target.to_vec(),
        _ => {}
    }
    match basic.class() {
        TypeClass::Integer | TypeClass::Address | TypeClass::Byte => {
            let (a, b) = (int_of(basic, target), int_of(basic, origin));
            let v = match op {
                Op::Sum => a.wrapping_add(b),
                Op::Prod => a.wrapping_mul(b),
                Op::Max => a.max(b),
                Op::Min => a.min(b),
                Op::Land => ((a != 0) & (b != 0)) as i128,
                Op::Lor => ((a != 0) | (b != 0)) as i128,
                Op::Lxor => ((a != 0) ^ (b != 0)) as i128,
                Op::Band => a & b,
                Op::Bor => a | b,
                Op::Bxor => a ^ b,
                _ => panic!("{op} on {basic}"),
            };
            int_bytes(v, size)
        }
        TypeClass::Logical => {
            let (a, b) = (target[0] != 0, origin[0] != 0);
            vec![match op {
                Op::Land => a & b,
                Op::Lor => a | b,
                Op::Lxor => a ^ b,
                _ => panic!("{op} on bool"),
            } as u8]
        }
        TypeClass::Float => {
            // long double: the test values (small halves) and one op on them are exact
            // in f64, so f64 arithmetic is the reference
            let (a, b) = match basic {
                BasicType::F32 => (f32_at(target, 0) as f64, f32_at(origin, 0) as f64),
                BasicType::LongDouble => (ld_at(target, 0), ld_at(origin, 0)),
                _ => (f64_at(target, 0), f64_at(origin, 0)),
            };
            let v = match op {
                Op::Sum => a + b,
                Op::Prod => a * b,
                Op::Max => fmax(a, b, true),
                Op::Min => fmax(a, b, false),
                _ => panic!("{op} on {basic}"),
            };
            match basic {
                // small test values: f32 arithmetic done in f64 rounds the same way
                BasicType::F32 => (v as f32).to_ne_bytes().to_vec(),
                BasicType::LongDouble => ld_bytes(v),
                _ => v.to_ne_bytes().to_vec(),
            }
        }
        TypeClass::Complex => {
            let h = size / 2;
            let get = |b: &[u8], o| {
                if h == 4 {
                    f32_at(b, o) as f64
                } else {
                    f64_at(b, o)
                }
            };
            let (ar, ai, br, bi) = (
                get(target, 0),
                get(target, h),
                get(origin, 0),
                get(origin, h),
            );
            let (r, i) = match op {
                Op::Sum => (ar + br, ai + bi),
                Op::Prod => (ar * br - ai * bi, ar * bi + ai * br),
                _ => panic!("{op} on {basic}"),
            };
            if h == 4 {
                [(r as f32).to_ne_bytes(), (i as f32).to_ne_bytes()].concat()
            } else {
                [r.to_ne_bytes(), i.to_ne_bytes()].concat()
            }
        }
        TypeClass::Pair => {
            let off = basic.pair_index_offset().unwrap();
            let idx = |b: &[u8]| i32::from_ne_bytes(b[off..off + 4].try_into().unwrap());
            let val = |b: &[u8]| -> f64 {
                match basic {
                    BasicType::FloatInt => f32_at(b, 0) as f64,
                    BasicType::DoubleInt => f64_at(b, 0),
                    BasicType::LongInt => i64::from_ne_bytes(b[..8].try_into().unwrap()) as f64,
                    BasicType::TwoInt => i32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
                    BasicType::ShortInt => i16::from_ne_bytes(b[..2].try_into().unwrap()) as f64,
                    BasicType::LongDoubleInt => ld_at(b, 0),
                    _ => unreachable!(),
                }
            };
            let (u, i, v, j) = (val(target), idx(target), val(origin), idx(origin));
            let origin_wins = if op == Op::MaxLoc { v > u } else { v < u };
            let target_wins = if op == Op::MaxLoc { u > v } else { u < v };
            let mut out = if origin_wins {
                origin.to_vec()
            } else {
                target.to_vec()
            };
            if !origin_wins && !target_wins {
                out[off..off + 4].copy_from_slice(&i.min(j).to_ne_bytes());
            }
            // padding is not part of the value
            zero_padding(basic, &mut out);
            out
        }
    }
}

/// Clears the padding bytes of an element (they carry no value).
pub fn zero_padding(basic: BasicType, b: &mut [u8]) {
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
}

/// Byte equality that treats any two NaNs as equal and ignores pair padding.
pub fn same_value(basic: BasicType, a: &[u8], b: &[u8]) -> bool {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    zero_padding(basic, &mut a);
    zero_padding(basic, &mut b);
    if a == b {
        return true;
    }
    match basic {
        BasicType::F64 => f64_at(&a, 0).is_nan() && f64_at(&b, 0).is_nan(),
        BasicType::F32 => f32_at(&a, 0).is_nan() && f32_at(&b, 0).is_nan(),
        BasicType::LongDouble => ld_at(&a, 0).is_nan() && ld_at(&b, 0).is_nan(),
        _ => false,
    }
}
