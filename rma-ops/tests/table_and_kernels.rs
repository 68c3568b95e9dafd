//! Every (op, type) pair: accepted ones computed by every kernel against the scalar
//! reference model on random data; rejected ones return the right error class.

mod common;

use common::{random_element, reference, same_value, Rng};
use proptest::prelude::*;
use rma_core::{BasicType, ErrorClass, Op, RmaCall};
use rma_ops::atomic::{self, HeapDomain};

/// docs/semantics.md rule 2, written out by type name, independently of `op_defined_on`.
fn allowed_by_table(op: Op, t: BasicType) -> bool {
    let name = t.name();
    let int = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"].contains(&name);
    let addr = ["isize", "usize"].contains(&name);
    let float = ["f32", "f64", "long_double"].contains(&name);
    // long double arithmetic is the x87 unit's
    let arith_float = float && (name != "long_double" || cfg!(target_arch = "x86_64"));
    let complex = ["complex_f32", "complex_f64"].contains(&name);
    let pair = [
        "float_int",
        "double_int",
        "long_int",
        "2int",
        "short_int",
        "long_double_int",
    ]
    .contains(&name);
    match op {
        Op::Max | Op::Min => int || addr || float,
        Op::Sum | Op::Prod => int || addr || arith_float || complex,
        Op::Land | Op::Lor | Op::Lxor => int || name == "bool",
        Op::Band | Op::Bor | Op::Bxor => int || addr || name == "byte",
        Op::MaxLoc | Op::MinLoc => pair,
        Op::Replace | Op::NoOp => true,
    }
}

#[test]
fn op_type_table_matches_semantics_rule_2() {
    let mut accepted = 0;
    for call in [
        RmaCall::Accumulate,
        RmaCall::GetAccumulate,
        RmaCall::FetchAndOp,
    ] {
        for op in Op::ALL {
            for t in BasicType::ALL {
                let r = rma_ops::check(op, t, call);
                let expect =
                    allowed_by_table(op, t) && !(op == Op::NoOp && call == RmaCall::Accumulate);
                match r {
                    Ok(()) => {
                        assert!(expect, "{op} on {t} in {call} was accepted");
                        accepted += 1;
                    }
                    Err(e) => {
                        assert!(!expect, "{op} on {t} in {call} was rejected: {e}");
                        assert_eq!(e.class(), ErrorClass::Op, "{op} on {t} in {call}");
                    }
                }
            }
        }
    }
    // 3 calls; NO_OP is refused only in accumulate
    assert!(accepted > 200, "{accepted}");
}

#[test]
fn no_op_rejected_in_accumulate_with_its_own_variant() {
    let e = rma_ops::check(Op::NoOp, BasicType::I32, RmaCall::Accumulate).unwrap_err();
    assert!(
        matches!(e, rma_core::Error::OpNotForCall { op: Op::NoOp, .. }),
        "{e:?}"
    );
    let e = rma_ops::check(Op::Sum, BasicType::Bool, RmaCall::Accumulate).unwrap_err();
    assert!(matches!(e, rma_core::Error::OpNotForType { .. }), "{e:?}");
}

#[test]
fn cas_types() {
    for t in BasicType::ALL {
        let ok = rma_ops::check_cas_type(t).is_ok();
        let expect = ![
            "f32",
            "f64",
            "complex_f32",
            "complex_f64",
            "float_int",
            "double_int",
            "long_int",
            "2int",
            "short_int",
            "long_double",
            "long_double_int",
        ]
        .contains(&t.name());
        assert_eq!(ok, expect, "{t}");
        if !ok {
            assert_eq!(
                rma_ops::check_cas_type(t).unwrap_err().class(),
                ErrorClass::Type
            );
        }
    }
}

/// An aligned heap buffer standing in for window memory.
struct Mem(Vec<u64>);

impl Mem {
    fn from(bytes: &[u8]) -> Mem {
        let mut m = Mem(vec![0u64; bytes.len().div_ceil(8) + 2]);
        m.bytes_mut()[..bytes.len()].copy_from_slice(bytes);
        m
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.0.len() * 8;
        // SAFETY: a u64 buffer viewed as its bytes, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast::<u8>(), len) }
    }
    fn ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr().cast()
    }
}

fn check_all_kernels(basic: BasicType, op: Op, n: usize, seed: u64) {
    let size = basic.size();
    let mut rng = Rng::new(seed);
    let target: Vec<u8> = (0..n)
        .flat_map(|_| random_element(basic, &mut rng))
        .collect();
    let origin: Vec<u8> = (0..n)
        .flat_map(|_| random_element(basic, &mut rng))
        .collect();
    let expect: Vec<u8> = (0..n)
        .flat_map(|i| {
            let r = i * size..(i + 1) * size;
            reference(basic, op, &target[r.clone()], &origin[r])
        })
        .collect();
    let agree = |what: &str, got: &[u8]| {
        for i in 0..n {
            let r = i * size..(i + 1) * size;
            assert!(
                same_value(basic, &got[r.clone()], &expect[r.clone()]),
                "{what}: {op} on {basic} element {i}: target {:?} origin {:?} got {:?} expected {:?}",
                &target[r.clone()], &origin[r.clone()], &got[r.clone()], &expect[r]
            );
        }
    };

    // non-atomic, on bytes
    let mut dst = target.clone();
    rma_ops::apply_bytes(basic, op, &mut dst, &origin);
    agree("apply_bytes", &dst);

    let tables = HeapDomain::new(1, 64);
    let locks = tables.domain(0).unwrap();
    if op != Op::NoOp {
        // element-wise atomic accumulate
        let mut mem = Mem::from(&target);
        // SAFETY: `mem` is an 8-aligned private buffer of at least n elements.
        unsafe {
            atomic::accumulate(basic, op, mem.ptr(), 0, &locks, &origin).expect("a kernel stalled")
        };
        agree("atomic::accumulate", &mem.bytes_mut()[..n * size]);
    }
    if op != Op::NoOp && n > 0 {
        // strided bulk accumulate into every other element; the gaps must not change
        let filler: Vec<u8> = (0..n)
            .flat_map(|_| random_element(basic, &mut rng))
            .collect();
        let wide: Vec<u8> = (0..n)
            .flat_map(|i| {
                let r = i * size..(i + 1) * size;
                [&target[r.clone()], &filler[r]].concat()
            })
            .collect();
        let mut mem = Mem::from(&wide);
        // SAFETY: `mem` is an 8-aligned private buffer of 2n elements; the blocks are
        // element i at 2 i.
        unsafe {
            atomic::accumulate_strided(basic, op, mem.ptr(), 0, 2 * size, size, n, &locks, &origin)
                .expect("a kernel stalled")
        };
        let got = mem.bytes_mut()[..2 * n * size].to_vec();
        let (even, odd): (Vec<_>, Vec<_>) =
            got.chunks(size).enumerate().partition(|(i, _)| i % 2 == 0);
        let even: Vec<u8> = even.into_iter().flat_map(|(_, c)| c.to_vec()).collect();
        let odd: Vec<u8> = odd.into_iter().flat_map(|(_, c)| c.to_vec()).collect();
        agree("atomic::accumulate_strided", &even);
        assert_eq!(odd, filler, "accumulate_strided wrote between its blocks");
    }
    // get_accumulate: new values and fetched old values
    let mut mem = Mem::from(&target);
    let mut result = vec![0u8; n * size];
    let src: &[u8] = if op == Op::NoOp { &[] } else { &origin };
    // SAFETY: as above.
    unsafe {
        atomic::get_accumulate(basic, op, mem.ptr(), 0, &locks, src, &mut result)
            .expect("a kernel stalled")
    };
    agree("atomic::get_accumulate", &mem.bytes_mut()[..n * size]);
    for i in 0..n {
        let r = i * size..(i + 1) * size;
        assert!(
            same_value(basic, &result[r.clone()], &target[r]),
            "get_accumulate fetched {op} {basic} #{i}"
        );
    }
    // fetch_and_op, element by element
    let mut mem = Mem::from(&target);
    for i in 0..n {
        let r = i * size..(i + 1) * size;
        let mut old = vec![0u8; size];
        // SAFETY: element i of the aligned private buffer.
        unsafe {
            atomic::fetch_and_op(
                basic,
                op,
                mem.ptr().add(i * size),
                i * size,
                &locks,
                &origin[r.clone()],
                &mut old,
            )
            .expect("a kernel stalled")
        };
        assert!(
            same_value(basic, &old, &target[r]),
            "fetch_and_op fetched {op} {basic} #{i}"
        );
    }
    agree("atomic::fetch_and_op", &mem.bytes_mut()[..n * size]);
}

fn accepted_pairs() -> Vec<(BasicType, Op)> {
    let mut v = vec![];
    for t in BasicType::ALL {
        for op in Op::ALL {
            if rma_ops::check(op, t, RmaCall::GetAccumulate).is_ok() {
                v.push((t, op));
            }
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn every_accepted_pair_matches_the_reference(seed in any::<u64>(), n in 0usize..70) {
        for (t, op) in accepted_pairs() {
            check_all_kernels(t, op, n, seed);
        }
    }

    #[test]
    fn compare_and_swap_matches_the_reference(seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let tables = HeapDomain::new(1, 8);
        let locks = tables.domain(0).unwrap();
        for t in BasicType::ALL.into_iter().filter(|t| rma_ops::check_cas_type(*t).is_ok()) {
            let target = random_element(t, &mut rng);
            let origin = random_element(t, &mut rng);
            // half the time compare equal to the target
            let compare = if rng.below(2) == 0 { target.clone() } else { random_element(t, &mut rng) };
            let mut mem = Mem::from(&target);
            let mut old = vec![0u8; t.size()];
            // SAFETY: aligned private buffer of one element.
            unsafe { atomic::compare_and_swap(t, mem.ptr(), 0, &locks, &origin, &compare, &mut old).expect("a kernel stalled") };
            prop_assert_eq!(&old, &target);
            let now = &mem.bytes_mut()[..t.size()];
            let equal = if t == BasicType::Bool { (target[0] != 0) == (compare[0] != 0) } else { target == compare };
            prop_assert_eq!(now, if equal { &origin[..] } else { &target[..] }, "{}", t);
        }
    }
}

#[test]
fn typed_apply_agrees_with_bytes() {
    let mut a = [1i64, -2, 3, i64::MAX];
    rma_ops::apply(Op::Sum, &mut a, &[1, 1, 1, 1]);
    assert_eq!(a, [2, -1, 4, i64::MIN]);
    let mut f = [1.0f64, f64::NAN, 3.0];
    rma_ops::apply(Op::Max, &mut f, &[2.0, 0.0, f64::NAN]);
    assert_eq!(f[0], 2.0);
    assert!(
        f[1].is_nan() && f[2].is_nan(),
        "MAX propagates NaN from either side"
    );
    let mut m = [
        rma_datatype::DoubleInt::new(1.0, 5),
        rma_datatype::DoubleInt::new(1.0, 2),
    ];
    rma_ops::apply(
        Op::MaxLoc,
        &mut m,
        &[
            rma_datatype::DoubleInt::new(1.0, 3),
            rma_datatype::DoubleInt::new(0.5, 0),
        ],
    );
    assert_eq!(
        (m[0].value, m[0].index),
        (1.0, 3),
        "tie takes the smaller index"
    );
    assert_eq!((m[1].value, m[1].index), (1.0, 2));
    let mut b = [true, false, true];
    rma_ops::apply(Op::Lxor, &mut b, &[true, true, false]);
    assert_eq!(b, [false, true, true]);
}

#[test]
fn nan_in_min_and_max_from_either_side() {
    for op in [Op::Max, Op::Min] {
        let mut t = [f32::NAN, 1.0];
        rma_ops::apply(op, &mut t, &[1.0, f32::NAN]);
        assert!(t[0].is_nan() && t[1].is_nan(), "{op}");
    }
    // -0.0 vs +0.0 are equal: the target keeps its own
    let mut z = [-0.0f64];
    rma_ops::apply(Op::Max, &mut z, &[0.0]);
    assert!(z[0].is_sign_negative());
}

#[test]
fn bool_bytes_other_than_0_and_1_read_as_true() {
    let mut dst = [2u8, 0, 7];
    rma_ops::apply_bytes(BasicType::Bool, Op::Land, &mut dst, &[1, 1, 0]);
    assert_eq!(dst, [1, 0, 0]);
}
