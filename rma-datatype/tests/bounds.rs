//! Size, bounds and extents of every constructor against hand-computed values, and the
//! errors constructors return for bad arguments.

use rma_core::ErrorClass;
use rma_datatype::{BasicType, Datatype, Order};

fn t(b: BasicType) -> Datatype {
    Datatype::basic(b)
}

/// (size, lb, extent, true_lb, true_extent)
fn shape(d: &Datatype) -> (usize, isize, isize, isize, isize) {
    assert_eq!(d.ub(), d.lb() + d.extent(), "{d:?}");
    (d.size(), d.lb(), d.extent(), d.true_lb(), d.true_extent())
}

#[test]
fn basic_types() {
    for b in BasicType::ALL {
        let d = t(b);
        let n = b.size() as isize;
        assert_eq!(shape(&d), (b.size(), 0, n, 0, n), "{b}");
        assert_eq!(d.predefined(), Some(b));
        assert_eq!(d.basic_type(), Some(b));
        assert_eq!(d.element_count(), 1);
        assert!(d.is_committed());
        assert_eq!(d, t(b), "one shared handle per basic type");
    }
}

#[test]
fn contiguous() {
    let d = Datatype::contiguous(3, &t(BasicType::I32)).unwrap();
    assert_eq!(shape(&d), (12, 0, 12, 0, 12));
    assert_eq!(d.element_count(), 3);
    assert_eq!(d.predefined(), None);
    assert!(!d.is_committed());
    let e = Datatype::contiguous(0, &t(BasicType::I32)).unwrap();
    assert_eq!(shape(&e), (0, 0, 0, 0, 0));
    assert_eq!(
        e.basic_type(),
        Some(BasicType::I32),
        "empty types report their old type"
    );
    let one = Datatype::contiguous(1, &t(BasicType::F64)).unwrap();
    assert_eq!(one.predefined(), None, "contiguous(1) is derived");
}

#[test]
fn vector_and_hvector() {
    let f64_t = t(BasicType::F64);
    // Blocks of 16 bytes at 0, 32, 64.
    let d = Datatype::vector(3, 2, 4, &f64_t).unwrap();
    assert_eq!(shape(&d), (48, 0, 80, 0, 80));
    // Negative stride: blocks at 0, -16, -32.
    let d = Datatype::vector(3, 1, -2, &f64_t).unwrap();
    assert_eq!(shape(&d), (24, -32, 40, -32, 40));
    // Bytes 0..3 and 5..8.
    let d = Datatype::hvector(2, 3, 5, &t(BasicType::U8)).unwrap();
    assert_eq!(shape(&d), (6, 0, 8, 0, 8));
    // Zero stride: three copies of the same i32.
    let d = Datatype::hvector(3, 1, 0, &t(BasicType::I32)).unwrap();
    assert_eq!(shape(&d), (12, 0, 4, 0, 4));
    // Zero count or zero blocklen: empty.
    for d in [
        Datatype::vector(0, 2, 3, &f64_t).unwrap(),
        Datatype::vector(3, 0, 3, &f64_t).unwrap(),
    ] {
        assert_eq!(shape(&d), (0, 0, 0, 0, 0));
    }
}

#[test]
fn indexed_family() {
    // i16 blocks: 2 at 3 extents (bytes 6..10), 1 at -1 (bytes -2..0).
    let d = Datatype::indexed(&[2, 1], &[3, -1], &t(BasicType::I16)).unwrap();
    assert_eq!(shape(&d), (6, -2, 12, -2, 12));
    let d = Datatype::hindexed(&[1, 2], &[10, 0], &t(BasicType::I32)).unwrap();
    assert_eq!(shape(&d), (12, 0, 14, 0, 14));
    // u16 blocks of 2 at extents 0, 5, 1: bytes 0..4, 10..14, 2..6.
    let d = Datatype::indexed_block(2, &[0, 5, 1], &t(BasicType::U16)).unwrap();
    assert_eq!(shape(&d), (12, 0, 14, 0, 14));
    let d = Datatype::hindexed_block(1, &[8, 0], &t(BasicType::F64)).unwrap();
    assert_eq!(shape(&d), (16, 0, 16, 0, 16));
    // A zero-length block does not widen the bounds.
    let d = Datatype::indexed(&[1, 0], &[0, 100], &t(BasicType::I32)).unwrap();
    assert_eq!(shape(&d), (4, 0, 4, 0, 4));
    let d = Datatype::indexed(&[], &[], &t(BasicType::I32)).unwrap();
    assert_eq!(shape(&d), (0, 0, 0, 0, 0));
    assert_eq!(d.basic_type(), Some(BasicType::I32));
}

#[test]
fn structure_pads_to_alignment() {
    // { f64; i32 } -> 12 bytes of data, extent 16 as in C.
    let d = Datatype::structure(&[1, 1], &[0, 8], &[t(BasicType::F64), t(BasicType::I32)]).unwrap();
    assert_eq!(shape(&d), (12, 0, 16, 0, 12));
    assert_eq!(d.basic_type(), None);
    assert_eq!(d.element_count(), 2);
    // { i8; i16 at 1 } -> data 0..3, alignment 2 -> extent 4.
    let d = Datatype::structure(&[1, 1], &[0, 1], &[t(BasicType::I8), t(BasicType::I16)]).unwrap();
    assert_eq!(shape(&d), (3, 0, 4, 0, 3));
    // { u8; f64 at 1 } -> data 0..9, alignment 8 -> extent 16.
    let d = Datatype::structure(&[1, 1], &[0, 1], &[t(BasicType::U8), t(BasicType::F64)]).unwrap();
    assert_eq!(shape(&d), (9, 0, 16, 0, 9));
    // Other constructors do not pad: contiguous of 3 bytes of u8 at an odd offset.
    let d = Datatype::hindexed(&[3], &[1], &t(BasicType::U8)).unwrap();
    assert_eq!(shape(&d), (3, 1, 3, 1, 3));
    // Nested: the padded extent is what the enclosing type steps by.
    let s = Datatype::structure(&[1, 1], &[0, 8], &[t(BasicType::F64), t(BasicType::I32)]).unwrap();
    let d = Datatype::contiguous(3, &s).unwrap();
    assert_eq!(shape(&d), (36, 0, 48, 0, 44));
    // Empty struct.
    let d = Datatype::structure(&[], &[], &[]).unwrap();
    assert_eq!(shape(&d), (0, 0, 0, 0, 0));
    assert_eq!(d.basic_type(), None);
    // One basic type in a struct is still one basic type.
    let d =
        Datatype::structure(&[2, 1], &[0, 16], &[t(BasicType::I32), t(BasicType::I32)]).unwrap();
    assert_eq!(d.basic_type(), Some(BasicType::I32));
    assert_eq!(shape(&d), (12, 0, 20, 0, 20));
}

#[test]
fn resized_bounds_propagate() {
    let i32_t = t(BasicType::I32);
    let r = Datatype::resized(&i32_t, -4, 16).unwrap();
    assert_eq!(shape(&r), (4, -4, 16, 0, 4));
    // Instances at 0 and 16: data 0..4 and 16..20, bounds -4..28.
    let d = Datatype::contiguous(2, &r).unwrap();
    assert_eq!(shape(&d), (8, -4, 32, 0, 20));
    // Explicit bounds take precedence over the data of other struct members, and turn
    // off padding (MPI's LB/UB markers).
    let r8 = Datatype::resized(&i32_t, 0, 8).unwrap();
    let d = Datatype::structure(&[1, 1], &[0, 100], &[r8.clone(), t(BasicType::F64)]).unwrap();
    assert_eq!(shape(&d), (12, 0, 8, 0, 108));
    // A resized type without data still has bounds.
    let empty = Datatype::contiguous(0, &i32_t).unwrap();
    let spacer = Datatype::resized(&empty, 0, 8).unwrap();
    let d = Datatype::contiguous(3, &spacer).unwrap();
    assert_eq!(shape(&d), (0, 0, 24, 0, 0));
    // Shrinking the extent below the data makes instances overlap.
    let pair = Datatype::contiguous(2, &i32_t).unwrap();
    let r = Datatype::resized(&pair, 0, 4).unwrap();
    let d = Datatype::contiguous(3, &r).unwrap();
    assert_eq!(shape(&d), (24, 0, 12, 0, 16));
    assert!(d.type_map(1).unwrap().check_no_overlap().is_err());
}

#[test]
fn subarray_c_and_fortran() {
    let f64_t = t(BasicType::F64);
    // 4 x 5 array, rows 1..3, columns 2..5, row-major: row stride 40 bytes.
    let d = Datatype::subarray(&[4, 5], &[2, 3], &[1, 2], Order::C, &f64_t).unwrap();
    assert_eq!(shape(&d), (48, 0, 160, 56, 64));
    let runs: Vec<_> = d
        .type_map(1)
        .unwrap()
        .runs()
        .map(|r| (r.offset, r.len))
        .collect();
    assert_eq!(runs, vec![(56, 24), (96, 24)]);
    // Column-major: column stride 32 bytes; columns 2..5 of rows 1..3.
    let d = Datatype::subarray(&[4, 5], &[2, 3], &[1, 2], Order::Fortran, &f64_t).unwrap();
    assert_eq!(shape(&d), (48, 0, 160, 72, 80));
    let runs: Vec<_> = d
        .type_map(1)
        .unwrap()
        .runs()
        .map(|r| (r.offset, r.len))
        .collect();
    assert_eq!(runs, vec![(72, 16), (104, 16), (136, 16)]);
    // 3-D, C order, i32: strides 4, 16, 48; start offset 48 + 16 + 4 = 68.
    let d = Datatype::subarray(
        &[2, 3, 4],
        &[1, 2, 2],
        &[1, 1, 1],
        Order::C,
        &t(BasicType::I32),
    )
    .unwrap();
    assert_eq!(shape(&d), (16, 0, 96, 68, 24));
    // Consecutive instances are consecutive arrays.
    let m = d.type_map(2).unwrap();
    assert_eq!(m.span(), Some((68, 96 + 92)));
    // The whole array is one run.
    let d = Datatype::subarray(&[3, 4], &[3, 4], &[0, 0], Order::C, &f64_t).unwrap();
    assert_eq!(d.type_map(1).unwrap().run_count(), 1);
    assert_eq!(shape(&d), (96, 0, 96, 0, 96));
}

#[test]
fn nested_and_dup() {
    let i32_t = t(BasicType::I32);
    // inner: bytes 0..4 and 8..12, extent 12; outer instances 36 bytes apart.
    let inner = Datatype::vector(2, 1, 2, &i32_t).unwrap();
    assert_eq!(shape(&inner), (8, 0, 12, 0, 12));
    let d = Datatype::vector(2, 1, 3, &inner).unwrap();
    assert_eq!(shape(&d), (16, 0, 48, 0, 48));
    let runs: Vec<_> = d
        .type_map(1)
        .unwrap()
        .runs()
        .map(|r| (r.offset, r.len))
        .collect();
    assert_eq!(runs, vec![(0, 4), (8, 4), (36, 4), (44, 4)]);

    let mut c = d.clone();
    assert_eq!(c, d);
    c.commit();
    assert!(d.is_committed(), "clones are handles to one datatype");
    let dup = d.dup();
    assert_ne!(dup, d);
    assert!(dup.is_committed(), "dup of a committed type is committed");
    assert_eq!(shape(&dup), shape(&d));
    let pdup = i32_t.dup();
    assert_eq!(pdup.predefined(), None);
    assert_eq!(pdup.basic_type(), Some(BasicType::I32));
    assert!(pdup.is_committed());
    let fresh = Datatype::contiguous(2, &i32_t).unwrap();
    assert!(!fresh.dup().is_committed());
}

#[test]
fn commit_state() {
    let mut d = Datatype::contiguous(2, &t(BasicType::I32)).unwrap();
    let e = d.check_committed().unwrap_err();
    assert_eq!(e.class(), ErrorClass::Type);
    assert!(e.to_string().contains("not committed"), "{e}");
    d.commit();
    d.commit();
    assert!(d.check_committed().is_ok());
    assert!(t(BasicType::F64).check_committed().is_ok());
}

#[test]
fn debug_is_concise() {
    let d = Datatype::vector(1_000_000, 1, 2, &t(BasicType::F64)).unwrap();
    let s = format!("{d:?}");
    assert!(
        s.contains("vector") && s.contains("8000000") && s.len() < 100,
        "{s}"
    );
    assert_eq!(format!("{:?}", t(BasicType::F64)), "Datatype::basic(f64)");
}

#[test]
fn bad_arguments() {
    let i32_t = t(BasicType::I32);
    let class = |r: rma_core::Result<Datatype>| r.unwrap_err().class();
    assert_eq!(
        class(Datatype::indexed(&[1, 2], &[0], &i32_t)),
        ErrorClass::Arg
    );
    assert_eq!(
        class(Datatype::hindexed(&[1], &[0, 4], &i32_t)),
        ErrorClass::Arg
    );
    assert_eq!(
        class(Datatype::structure(
            &[1],
            &[0],
            &[i32_t.clone(), i32_t.clone()]
        )),
        ErrorClass::Arg
    );
    assert_eq!(
        class(Datatype::structure(
            &[1, 1],
            &[0],
            std::slice::from_ref(&i32_t)
        )),
        ErrorClass::Arg
    );
    assert_eq!(
        class(Datatype::subarray(&[], &[], &[], Order::C, &i32_t)),
        ErrorClass::Arg
    );
    assert_eq!(
        class(Datatype::subarray(&[4], &[5], &[0], Order::C, &i32_t)),
        ErrorClass::Arg
    );
    assert_eq!(
        class(Datatype::subarray(&[4], &[2], &[3], Order::C, &i32_t)),
        ErrorClass::Arg
    );
    assert_eq!(
        class(Datatype::subarray(
            &[4],
            &[2],
            &[usize::MAX],
            Order::C,
            &i32_t
        )),
        ErrorClass::Arg
    );
    assert_eq!(
        class(Datatype::subarray(&[4, 4], &[2], &[0, 0], Order::C, &i32_t)),
        ErrorClass::Arg
    );
}

#[test]
fn overflow_is_a_count_error() {
    let f64_t = t(BasicType::F64);
    let class = |r: rma_core::Result<Datatype>| r.unwrap_err().class();
    assert_eq!(
        class(Datatype::contiguous(usize::MAX / 4, &f64_t)),
        ErrorClass::Count
    );
    assert_eq!(
        class(Datatype::vector(usize::MAX, 1, 2, &f64_t)),
        ErrorClass::Count
    );
    assert_eq!(
        class(Datatype::vector(2, 1, isize::MAX, &f64_t)),
        ErrorClass::Count
    );
    assert_eq!(
        class(Datatype::hvector(3, 1, isize::MAX / 2 + 1, &f64_t)),
        ErrorClass::Count
    );
    assert_eq!(
        class(Datatype::indexed(&[1], &[isize::MIN], &f64_t)),
        ErrorClass::Count
    );
    assert_eq!(
        class(Datatype::hindexed(&[1], &[isize::MAX - 3], &f64_t)),
        ErrorClass::Count
    );
    assert_eq!(
        class(Datatype::resized(&f64_t, isize::MAX, 1)),
        ErrorClass::Count
    );
    assert_eq!(
        class(Datatype::subarray(
            &[usize::MAX, 4],
            &[1, 1],
            &[0, 0],
            Order::C,
            &f64_t
        )),
        ErrorClass::Count
    );
    let big = Datatype::contiguous(1 << 40, &f64_t).unwrap();
    assert_eq!(
        big.type_map(1 << 30).unwrap_err().class(),
        ErrorClass::Count
    );
    // Size overflows even though the span would not: zero stride.
    let z = Datatype::hvector(usize::MAX / 2, 1, 0, &f64_t);
    assert_eq!(class(z), ErrorClass::Count);
}

#[test]
fn nesting_depth_is_bounded() {
    // Each level nests the previous type in a struct of 17 members (too many to be
    // inlined into the parent), so the tree gets one level deeper each time; the crate
    // refuses trees its walkers would need unbounded stack for.
    let u8_t = t(BasicType::U8);
    let mut d = u8_t.clone();
    let mut refused = None;
    let blocklens = [1usize; 17];
    let disps: Vec<isize> = (0..17).map(|i| i * 100_000).collect();
    for level in 0..1000 {
        let mut types = vec![u8_t.clone(); 17];
        types[0] = d.clone();
        match Datatype::structure(&blocklens, &disps, &types) {
            Ok(next) => d = next,
            Err(e) => {
                refused = Some((level, e));
                break;
            }
        }
    }
    let (level, e) = refused.expect("deep nesting must be refused");
    assert!(level > 50, "refused too early, at {level}");
    assert_eq!(e.class(), ErrorClass::Type);
    // What was built still works.
    let m = d.type_map(2).unwrap();
    let mut buf = vec![0u8; m.span().unwrap().1 as usize];
    let packed = vec![7u8; m.size()];
    m.unpack(&packed, &mut buf).unwrap();
}
