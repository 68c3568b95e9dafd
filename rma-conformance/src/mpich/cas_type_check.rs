//! Ported from MPICH `test/mpi/errors/rma/cas_type_check.c`: Compare_and_swap accepts
//! exactly the integer, address-sized, byte and logical types; floating point and
//! derived datatypes are TYPE errors (and, per our rule 7, so are complex and pair
//! types). For each type, every rank repeatedly swaps on the single element of rank 0
//! in one fence epoch (opened with NOPRECEDE, closed with NOSUCCEED): accepted types
//! always fetch the element (zero, compared with zero and replaced by zero, so the
//! races leave it zero); rejected types fail with class TYPE every time, leaving the
//! result buffer and the element untouched (their origin is non-zero and their compare
//! matches, so a swap that slipped through would show).
//!
//! Adapted: the C types map to their Rust equivalents (char and signed char to `i8`,
//! `long`/`long long` and MPI_OFFSET/MPI_COUNT to `i64`, MPI_AINT to `isize`); the
//! derived type is a contiguous type of 4 bytes, plus a duplicate of `i32`. Also
//! checked through the typed form for `i32`, `f32` and `f64`.

use rma_win::{Assert, BasicType, Datatype, ErrorClass, Info, Rank, Result, Window, World};

fn iter() -> usize {
    crate::scaled(10000)
}

fn one_type(world: &World, info: &Info, dt: &Datatype, accepted: bool) -> Result<()> {
    let size = dt.size();
    let mut win = Window::allocate_bytes(world, size, size, info)?;
    let origin = vec![if accepted { 0u8 } else { 0x11 }; size];
    let compare = vec![0u8; size];
    let root = Rank::new(0);
    win.fence(Assert::NOPRECEDE)?;
    for i in 0..iter() {
        let mut result = vec![0xA5u8; size];
        let r = win.compare_and_swap_with(&origin, &compare, &mut result, dt, root, 0);
        if accepted {
            if let Err(e) = r {
                panic!("{dt:?}, call {i}: refused: {e} ({})", e.class());
            }
            assert_eq!(result, compare, "{dt:?}, call {i}: fetched");
        } else {
            crate::expect_class(r, ErrorClass::Type);
            assert!(
                result.iter().all(|b| *b == 0xA5),
                "{dt:?}: a refused call wrote the result"
            );
        }
    }
    win.fence(Assert::NOSUCCEED)?;
    let mut local = vec![0xFFu8; size];
    win.read_local(0, &mut local)?;
    assert!(
        local.iter().all(|b| *b == 0),
        "{dt:?}: window now {local:?}"
    );
    win.free()
}

pub(crate) fn run(world: &World, info: &Info) -> Result<()> {
    use BasicType::*;
    for b in [
        I8, I16, I32, I64, U8, U16, U32, U64, Isize, Usize, Byte, Bool,
    ] {
        one_type(world, info, &Datatype::basic(b), true)?;
    }
    for b in [
        F32, F64, C32, C64, FloatInt, DoubleInt, LongInt, TwoInt, ShortInt,
    ] {
        one_type(world, info, &Datatype::basic(b), false)?;
    }
    let mut four_bytes = Datatype::contiguous(4, &Datatype::basic(Byte))?;
    four_bytes.commit();
    one_type(world, info, &four_bytes, false)?;
    one_type(world, info, &Datatype::basic(I32).dup(), false)?;

    // the typed form
    let mut win = Window::allocate::<f64>(world, 1, info)?;
    win.fence(Assert::NONE)?;
    let root = Rank::new(0);
    assert_eq!(win.compare_and_swap(0i32, 0, root, 0)?, 0);
    crate::expect_class(win.compare_and_swap(1.0f32, 0.0, root, 0), ErrorClass::Type);
    crate::expect_class(win.compare_and_swap(1.0f64, 0.0, root, 0), ErrorClass::Type);
    win.fence(Assert::NONE)?;
    assert_eq!(win.local_vec::<f64>()?, vec![0.0]);
    win.free()
}
