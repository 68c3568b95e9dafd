//! Type signatures, `check_signatures` and `check_accumulate_types` (docs/semantics.md rule
//! 3), with the error class of every refusal.

use rma_core::{Error, ErrorClass};
use rma_datatype::{check_accumulate_types, check_signatures, BasicType, Datatype};
use std::time::Instant;

fn t(b: BasicType) -> Datatype {
    Datatype::basic(b)
}

fn committed(mut d: Datatype) -> Datatype {
    d.commit();
    d
}

fn int_double() -> Datatype {
    committed(
        Datatype::structure(&[1, 1], &[0, 8], &[t(BasicType::I32), t(BasicType::F64)]).unwrap(),
    )
}

#[test]
fn one_basic_type_compares_counts() {
    let f64_t = t(BasicType::F64);
    let v = committed(Datatype::vector(3, 1, 2, &f64_t).unwrap());
    let s = v.signature(2);
    assert_eq!(
        (s.element_count(), s.basic_type()),
        (6, Some(BasicType::F64))
    );
    assert_eq!(s.to_string(), "6 x f64");
    assert!(s.matches(&f64_t.signature(6)));
    assert!(!s.matches(&f64_t.signature(5)));
    assert!(
        !s.matches(&t(BasicType::I64).signature(6)),
        "same size, other type"
    );
    assert_eq!(f64_t.signature(0).to_string(), "0 elements");
    assert!(f64_t.signature(0).matches(&t(BasicType::I8).signature(0)));
    // A pair type is one element.
    let pairs = Datatype::vector(4, 1, 3, &t(BasicType::DoubleInt)).unwrap();
    assert_eq!(pairs.signature(1).to_string(), "4 x double_int");
}

#[test]
fn mixed_signatures_compare_sequences() {
    let s = int_double();
    let a = Datatype::contiguous(3, &s).unwrap();
    // Same sequence (i32, f64) x 3 spelled differently: as a struct of six members.
    let i32_t = t(BasicType::I32);
    let f64_t = t(BasicType::F64);
    let b = Datatype::structure(
        &[1, 1, 1, 1, 1, 1],
        &[100, 0, 8, 40, 200, 16],
        &[
            i32_t.clone(),
            f64_t.clone(),
            i32_t.clone(),
            f64_t.clone(),
            i32_t.clone(),
            f64_t.clone(),
        ],
    )
    .unwrap();
    assert!(a.signature(1).matches(&b.signature(1)));
    assert!(a.signature(2).matches(&s.signature(6)));
    assert!(a.signature(1).matches(&b.signature(1)));
    // Swapped order: same counts, different sequence.
    let swapped = Datatype::structure(&[1, 1], &[0, 8], &[f64_t.clone(), i32_t.clone()]).unwrap();
    assert!(!s.signature(3).matches(&swapped.signature(3)));
    let text = a.signature(1).to_string();
    assert!(
        text.starts_with("mixed, 6 elements: 1 x i32, 1 x f64"),
        "{text}"
    );
    assert!(text.ends_with(", ..."), "{text}");
    // Runs of one type merge across pieces: i32 x 2 then (i32, f64).
    let c = Datatype::structure(&[2, 1], &[0, 16], &[i32_t.clone(), s.clone()]).unwrap();
    assert_eq!(
        c.signature(1).to_string(),
        "mixed, 4 elements: 3 x i32, 1 x f64"
    );
    assert_eq!(c.signature(1).basic_type(), None);
}

#[test]
fn large_mixed_signatures_stream() {
    // Two million elements in two different nestings: compared by streaming, in
    // memory bounded by nesting depth.
    let s = int_double();
    let a = Datatype::contiguous(1_000_000, &s).unwrap();
    let b = Datatype::contiguous(500_000, &Datatype::contiguous(2, &s).unwrap()).unwrap();
    let start = Instant::now();
    assert!(a.signature(1).matches(&b.signature(1)));
    let one_more =
        Datatype::structure(&[1, 1], &[0, 32_000_000], &[b.clone(), t(BasicType::I32)]).unwrap();
    let a2 =
        Datatype::structure(&[1, 1], &[0, 32_000_000], &[a.clone(), t(BasicType::F64)]).unwrap();
    assert!(
        !a2.signature(1).matches(&one_more.signature(1)),
        "differs in the last element"
    );
    assert!(start.elapsed().as_secs() < 5);
}

#[test]
fn check_signatures_errors() {
    let f64_t = t(BasicType::F64);
    let v = committed(Datatype::vector(3, 1, 2, &f64_t).unwrap());
    check_signatures("put", (&v, 2), (&f64_t, 6)).unwrap();
    let e = check_signatures("put", (&v, 2), (&f64_t, 5)).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Type);
    let Error::SignatureMismatch {
        call,
        origin,
        target,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(
        (*call, origin.as_str(), target.as_str()),
        ("put", "origin: 6 x f64", "5 x f64")
    );
    let text = e.to_string();
    assert!(
        text.contains("(origin: 6 x f64 vs target: 5 x f64)")
            && text.contains("same sequence of basic types"),
        "{text}"
    );
    let uncommitted = Datatype::contiguous(6, &f64_t).unwrap();
    let e = check_signatures("get", (&f64_t, 6), (&uncommitted, 1)).unwrap_err();
    assert!(matches!(e, Error::InvalidDatatype { .. }), "{e:?}");
}

#[test]
fn accumulate_types() {
    let f64_t = t(BasicType::F64);
    let i32_t = t(BasicType::I32);
    let v = committed(Datatype::vector(3, 1, 2, &f64_t).unwrap());
    // Vector origin onto contiguous target is fine; the basic type is returned.
    assert_eq!(
        check_accumulate_types("accumulate", Some((&v, 2)), (&f64_t, 6), None).unwrap(),
        BasicType::F64
    );
    assert_eq!(
        check_accumulate_types("get_accumulate", None, (&v, 1), Some((&f64_t, 3))).unwrap(),
        BasicType::F64
    );
    // Pair types in derived types are one basic type each.
    let pairs = committed(Datatype::vector(4, 1, 2, &t(BasicType::DoubleInt)).unwrap());
    assert_eq!(
        check_accumulate_types(
            "accumulate",
            Some((&t(BasicType::DoubleInt), 4)),
            (&pairs, 1),
            None
        )
        .unwrap(),
        BasicType::DoubleInt
    );
    // A struct of one basic type is fine.
    let same =
        committed(Datatype::structure(&[1, 2], &[0, 8], &[i32_t.clone(), i32_t.clone()]).unwrap());
    check_accumulate_types("accumulate", Some((&i32_t, 3)), (&same, 1), None).unwrap();

    let class_and = |r: rma_core::Result<BasicType>| {
        let e = r.unwrap_err();
        assert_eq!(e.class(), ErrorClass::Type, "{e:?}");
        e
    };
    // Mixed basic types.
    let mixed = int_double();
    let e = class_and(check_accumulate_types(
        "accumulate",
        Some((&mixed, 1)),
        (&mixed, 1),
        None,
    ));
    assert!(
        matches!(
            e,
            Error::MixedBasicTypes {
                which: "target",
                ..
            }
        ),
        "{e:?}"
    );
    let e = class_and(check_accumulate_types(
        "accumulate",
        Some((&mixed, 1)),
        (&f64_t, 2),
        None,
    ));
    assert!(
        matches!(
            e,
            Error::MixedBasicTypes {
                which: "origin",
                ..
            }
        ),
        "{e:?}"
    );
    let e = class_and(check_accumulate_types(
        "get_accumulate",
        Some((&f64_t, 2)),
        (&f64_t, 2),
        Some((&mixed, 1)),
    ));
    assert!(
        matches!(
            e,
            Error::MixedBasicTypes {
                which: "result",
                ..
            }
        ),
        "{e:?}"
    );
    // Different basic types, even of the same size.
    let e = class_and(check_accumulate_types(
        "accumulate",
        Some((&t(BasicType::I64), 6)),
        (&v, 2),
        None,
    ));
    assert!(
        matches!(
            e,
            Error::BasicTypeMismatch {
                which: "origin",
                expected: BasicType::F64,
                found: BasicType::I64,
                ..
            }
        ),
        "{e:?}"
    );
    let e = class_and(check_accumulate_types(
        "get_accumulate",
        None,
        (&v, 2),
        Some((&i32_t, 6)),
    ));
    assert!(
        matches!(
            e,
            Error::BasicTypeMismatch {
                which: "result",
                ..
            }
        ),
        "{e:?}"
    );
    // Different element counts.
    let e = class_and(check_accumulate_types(
        "accumulate",
        Some((&f64_t, 5)),
        (&v, 2),
        None,
    ));
    assert!(matches!(e, Error::SignatureMismatch { .. }), "{e:?}");
    let e = class_and(check_accumulate_types(
        "get_accumulate",
        Some((&f64_t, 6)),
        (&v, 2),
        Some((&f64_t, 7)),
    ));
    assert!(matches!(e, Error::SignatureMismatch { .. }), "{e:?}");
    // Uncommitted, on any side.
    let raw = Datatype::contiguous(6, &f64_t).unwrap();
    for r in [
        check_accumulate_types("accumulate", Some((&raw, 1)), (&f64_t, 6), None),
        check_accumulate_types("accumulate", Some((&f64_t, 6)), (&raw, 1), None),
        check_accumulate_types("get_accumulate", None, (&f64_t, 6), Some((&raw, 1))),
    ] {
        let e = class_and(r);
        assert!(matches!(e, Error::InvalidDatatype { .. }), "{e:?}");
    }
    // Zero elements at the target: a no-op, with the target's basic type.
    assert_eq!(
        check_accumulate_types("accumulate", Some((&i32_t, 0)), (&f64_t, 0), None).unwrap(),
        BasicType::F64
    );
    let empty = committed(Datatype::contiguous(0, &i32_t).unwrap());
    assert_eq!(
        check_accumulate_types("accumulate", Some((&mixed, 0)), (&empty, 5), None).unwrap(),
        BasicType::I32
    );
}
