//! `Equivalence`: datatypes of Rust types, pair-type layouts, byte views and bool
//! normalisation.

use rma_core::ErrorClass;
use rma_datatype::{
    bytes_of, bytes_of_mut, copy_from_bytes, copy_to_bytes, BasicType, Byte, Complex32, Complex64,
    Datatype, DoubleInt, Equivalence, FloatInt, LongInt, ShortInt, TwoInt,
};
use std::mem::size_of;

fn check_basic<T: Equivalence>(b: BasicType) {
    let d = Datatype::of::<T>();
    assert_eq!(T::BASIC, Some(b));
    assert_eq!(d.predefined(), Some(b));
    assert_eq!(
        (d.size(), d.extent(), d.lb()),
        (size_of::<T>(), size_of::<T>() as isize, 0)
    );
}

#[test]
fn basic_equivalences() {
    check_basic::<i8>(BasicType::I8);
    check_basic::<i16>(BasicType::I16);
    check_basic::<i32>(BasicType::I32);
    check_basic::<i64>(BasicType::I64);
    check_basic::<u8>(BasicType::U8);
    check_basic::<u16>(BasicType::U16);
    check_basic::<u32>(BasicType::U32);
    check_basic::<u64>(BasicType::U64);
    check_basic::<isize>(BasicType::Isize);
    check_basic::<usize>(BasicType::Usize);
    check_basic::<f32>(BasicType::F32);
    check_basic::<f64>(BasicType::F64);
    check_basic::<bool>(BasicType::Bool);
    check_basic::<Byte>(BasicType::Byte);
    check_basic::<Complex32>(BasicType::C32);
    check_basic::<Complex64>(BasicType::C64);
    check_basic::<FloatInt>(BasicType::FloatInt);
    check_basic::<DoubleInt>(BasicType::DoubleInt);
    check_basic::<LongInt>(BasicType::LongInt);
    check_basic::<TwoInt>(BasicType::TwoInt);
    check_basic::<ShortInt>(BasicType::ShortInt);
}

#[test]
fn arrays_are_contiguous() {
    let d = Datatype::of::<[f64; 3]>();
    assert_eq!((d.size(), d.extent()), (24, 24));
    assert_eq!(d.basic_type(), Some(BasicType::F64));
    assert_eq!(d.predefined(), None);
    assert!(d.is_committed());
    assert_eq!(<[f64; 3]>::BASIC, None);
    assert_eq!(Datatype::of::<[[u16; 2]; 5]>().element_count(), 10);
    let v = [[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
    assert_eq!(bytes_of(&v).len(), 48);
    let mut w = [[0.0f64; 3]; 2];
    copy_from_bytes(&mut w, bytes_of(&v)).unwrap();
    assert_eq!(v, w);
    let mut flags = [[false; 2]; 2];
    copy_from_bytes(&mut flags, &[0, 3, 1, 0]).unwrap();
    assert_eq!(flags, [[false, true], [true, false]]);
    assert!(bytes_of_mut(&mut flags).is_none());
}

#[test]
fn pair_layouts() {
    let p = DoubleInt::new(1.5, -7);
    let b = bytes_of(std::slice::from_ref(&p));
    assert_eq!(b.len(), 16);
    assert_eq!(&b[0..8], &1.5f64.to_ne_bytes());
    assert_eq!(&b[8..12], &(-7i32).to_ne_bytes());
    assert_eq!(&b[12..16], &[0; 4], "padding is zero");
    let s = ShortInt::new(3, 9);
    let b = bytes_of(std::slice::from_ref(&s));
    assert_eq!(&b[0..2], &3i16.to_ne_bytes());
    assert_eq!(&b[2..4], &[0, 0]);
    assert_eq!(&b[4..8], &9i32.to_ne_bytes());
    let l = LongInt::new(i64::MIN, 1);
    assert_eq!(
        &bytes_of(std::slice::from_ref(&l))[8..12],
        &1i32.to_ne_bytes()
    );
    let f = FloatInt::new(2.5, 4);
    assert_eq!(
        &bytes_of(std::slice::from_ref(&f))[4..8],
        &4i32.to_ne_bytes()
    );
    let two = TwoInt::new(5, 6);
    assert_eq!((two.value, two.index), (5, 6));
    for (b, off) in [
        (BasicType::FloatInt, 4),
        (BasicType::DoubleInt, 8),
        (BasicType::LongInt, 8),
        (BasicType::TwoInt, 4),
        (BasicType::ShortInt, 4),
    ] {
        assert_eq!(b.pair_index_offset(), Some(off));
    }
    // Equality ignores padding bytes, which another process may have left non-zero.
    let mut raw = bytes_of(std::slice::from_ref(&p)).to_vec();
    raw[12..16].copy_from_slice(&[0xff; 4]);
    let mut q = [DoubleInt::default()];
    copy_from_bytes(&mut q, &raw).unwrap();
    assert_eq!(q[0], p);
    assert_eq!(format!("{:?}", q[0]), "DoubleInt { value: 1.5, index: -7 }");
    assert_eq!(DoubleInt::from((1.5, -7)), p);
    assert_eq!(ShortInt::default(), ShortInt::new(0, 0));
}

#[test]
fn bool_is_normalised() {
    let mut flags = [true; 5];
    assert!(
        bytes_of_mut(&mut flags).is_none(),
        "no writable byte view of bool"
    );
    copy_from_bytes(&mut flags, &[0, 1, 2, 0x80, 0xff]).unwrap();
    assert_eq!(flags, [false, true, true, true, true]);
    assert_eq!(bytes_of(&flags), &[0, 1, 1, 1, 1]);
    assert_eq!(bool::from_bytes(&[7]), Some(true));
    assert_eq!(bool::from_bytes(&[]), None);
    assert_eq!(bool::from_bytes(&[0, 0]), None);
}

#[test]
fn byte_views_and_length_checks() {
    let v = [1u32, 0x0102_0304];
    let b = bytes_of(&v);
    assert_eq!(&b[4..8], &0x0102_0304u32.to_ne_bytes());
    let mut w = [0u32; 2];
    bytes_of_mut(&mut w).unwrap().copy_from_slice(b);
    assert_eq!(v, w);
    let e = copy_from_bytes(&mut w, &b[..7]).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Buffer);
    let e = copy_from_bytes(&mut w, &[0; 9]).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Arg);
    assert_eq!(w, v, "a refused copy changes nothing");
    let mut out = [0u8; 8];
    copy_to_bytes(&mut out, &v).unwrap();
    assert_eq!(out, b);
    assert_eq!(
        copy_to_bytes(&mut out[..7], &v).unwrap_err().class(),
        ErrorClass::Buffer
    );
    let c = [Complex64 { re: 1.0, im: -2.0 }];
    assert_eq!(&bytes_of(&c)[8..16], &(-2.0f64).to_ne_bytes());
    assert_eq!(i32::from_bytes(&5i32.to_ne_bytes()), Some(5));
    assert_eq!(i32::from_bytes(&[0; 3]), None);
    let empty: [u64; 0] = [];
    assert!(bytes_of(&empty).is_empty());
}

/// A user type: a C struct without implicit padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Particle {
    pos: [f64; 2],
    id: i32,
    flags: u32,
}

// SAFETY: `Particle` is `repr(C)` with fields at 0 (16 bytes), 16 and 20, 24 bytes in
// all, so it has no padding; every byte pattern is a valid value (floats and
// integers); the datatype below lists exactly these fields with extent 24.
unsafe impl Equivalence for Particle {
    const BASIC: Option<BasicType> = None;
    fn datatype() -> Datatype {
        let mut d = Datatype::structure(
            &[2, 1, 1],
            &[0, 16, 20],
            &[
                Datatype::basic(BasicType::F64),
                Datatype::basic(BasicType::I32),
                Datatype::basic(BasicType::U32),
            ],
        )
        .expect("valid struct");
        d.commit();
        d
    }
}

#[test]
fn user_struct() {
    let d = Datatype::of::<Particle>();
    assert_eq!((d.size(), d.extent()), (24, 24));
    assert_eq!(d.extent() as usize, size_of::<Particle>());
    let ps = [
        Particle {
            pos: [1.0, 2.0],
            id: 3,
            flags: 4,
        },
        Particle {
            pos: [5.0, 6.0],
            id: 7,
            flags: 8,
        },
    ];
    // The type map of two values covers the slice's bytes exactly.
    let m = d.type_map(2).unwrap();
    assert_eq!(m.as_contiguous(), Some(48));
    let mut packed = vec![0u8; 48];
    m.pack(bytes_of(&ps), &mut packed).unwrap();
    let mut back = [Particle {
        pos: [0.0; 2],
        id: 0,
        flags: 0,
    }; 2];
    copy_from_bytes(&mut back, &packed).unwrap();
    assert_eq!(back, ps);
}
