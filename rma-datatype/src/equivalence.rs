//! [`Equivalence`]: Rust types with an MPI datatype, the value types rma defines for
//! MPI's complex and pair types, and byte views of slices of them.
//!
//! This is the crate's only module with `unsafe` code: reinterpreting a slice of
//! values as bytes and back. Everything it relies on is the [`Equivalence`] contract.
#![allow(unsafe_code)]

pub use crate::long_double::{LongDouble, LongDoubleInt};
use crate::Datatype;
use rma_core::{BasicType, Error, Result};
use std::fmt;
use std::mem::{align_of, offset_of, size_of, size_of_val};

/// A Rust type whose values are laid out exactly as an MPI datatype describes, so a
/// slice of it can be handed to RMA calls as bytes.
///
/// Implemented here for the primitive integers and floats, `bool`, [`Byte`],
/// [`Complex32`], [`Complex64`], the MAXLOC/MINLOC pair types ([`FloatInt`],
/// [`DoubleInt`], [`LongInt`], [`TwoInt`], [`ShortInt`]) and arrays `[T; N]` of any
/// of these.
///
/// # Safety
///
/// The byte views ([`bytes_of`], [`bytes_of_mut`], [`copy_from_bytes`]) trust this
/// contract; breaking it is undefined behaviour. An implementor guarantees:
///
/// 1. **Every byte is initialised.** No value of `Self` has padding or otherwise
///    uninitialised bytes (no implicit padding between or after fields: add explicit
///    padding fields instead, as [`DoubleInt`] does; no `MaybeUninit`, no unions).
///    (`Copy` already rules out interior mutability.)
/// 2. **The datatype is the layout.** `datatype()` returns a datatype with lower bound
///    0 and extent `size_of::<Self>()` whose type map covers every byte of
///    `0..size_of::<Self>()` exactly once, each field with the basic type of that field,
///    so that consecutive values in a slice are consecutive instances.
/// 3. **Byte patterns.** If `ANY_BIT_PATTERN` is `true` (the default), every sequence
///    of `size_of::<Self>()` bytes is a valid value of `Self`. Otherwise (as for
///    `bool`, or a type holding a reference or an enum), `ANY_BIT_PATTERN` is `false`
///    and `from_bytes` is overridden to build a valid value from any such bytes,
///    validating or normalising them, and never creating an invalid value on the way.
/// 4. **`BASIC`.** If `BASIC` is `Some(b)`, `size_of::<Self>() == b.size()` and
///    `datatype()` is `Datatype::basic(b)`.
pub unsafe trait Equivalence: Copy + Send + Sync + 'static {
    /// The basic type, for types that are one basic element (primitives, complex,
    /// pairs, [`Byte`]); `None` for composite types (arrays, user structs).
    const BASIC: Option<BasicType>;

    /// Whether every byte pattern of `size_of::<Self>()` bytes is a valid value (see
    /// the safety contract). `false` disables [`bytes_of_mut`] for the type.
    const ANY_BIT_PATTERN: bool = true;

    /// The datatype describing one value (committed).
    fn datatype() -> Datatype;

    /// A value read from exactly `size_of::<Self>()` bytes (`None` for any other
    /// length). The default reads the bytes as they are, which the contract allows
    /// only when `ANY_BIT_PATTERN` is `true`; for a correct-length input an
    /// implementation always returns `Some`.
    fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != size_of::<Self>() {
            return None;
        }
        // SAFETY: `bytes` holds exactly `size_of::<Self>()` initialised bytes, read
        // unaligned; by the `Equivalence` contract (rule 3) every such byte pattern
        // is a valid `Self` unless the implementor overrode this method.
        Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<Self>()) })
    }
}

/// The bytes of a slice of values, in memory order (native endianness).
pub fn bytes_of<T: Equivalence>(values: &[T]) -> &[u8] {
    // SAFETY: `values` is a valid slice, so its `size_of_val` bytes lie in one
    // allocation and number at most isize::MAX; `u8` needs no alignment; every byte
    // of a `T` is initialised (Equivalence rule 1) and, `T` being `Copy`, has no
    // interior mutability, so the bytes may be read for the shared borrow's lifetime.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) }
}

/// The bytes of a mutable slice of values, or `None` if some byte pattern is not a
/// valid `T` (`T::ANY_BIT_PATTERN` is `false`, e.g. `bool`); use [`copy_from_bytes`]
/// for those.
pub fn bytes_of_mut<T: Equivalence>(values: &mut [T]) -> Option<&mut [u8]> {
    if !T::ANY_BIT_PATTERN {
        return None;
    }
    // SAFETY: as in `bytes_of`, the bytes are one initialised allocation of
    // `size_of_val` bytes, and the exclusive borrow of `values` is moved into the
    // result, so nothing else reads or writes them meanwhile. Any bytes written
    // through the view leave a valid `T` behind because `T::ANY_BIT_PATTERN` is true
    // (Equivalence rule 3).
    Some(unsafe {
        std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), size_of_val(values))
    })
}

/// Copies `src.len()` bytes into the values of `dst`, which must take exactly that
/// many bytes (else [`Error::BufferTooSmall`] if `src` is short, class ARG if long).
///
/// For types where not every byte pattern is valid, each value goes through
/// [`Equivalence::from_bytes`]: a `bool` becomes `byte != 0`, and no invalid `bool`
/// is ever stored.
pub fn copy_from_bytes<T: Equivalence>(dst: &mut [T], src: &[u8]) -> Result<()> {
    let needed = size_of_val(dst);
    if src.len() < needed {
        return Err(Error::BufferTooSmall {
            which: "source",
            needed,
            got: src.len(),
        });
    }
    if src.len() > needed {
        return Err(Error::arg(format!(
            "copy_from_bytes: {} bytes do not fill {} values of {} bytes exactly",
            src.len(),
            dst.len(),
            size_of::<T>()
        )));
    }
    if let Some(bytes) = bytes_of_mut(dst) {
        bytes.copy_from_slice(src);
        return Ok(());
    }
    let size = size_of::<T>();
    if size == 0 {
        return Ok(());
    }
    for (d, chunk) in dst.iter_mut().zip(src.chunks_exact(size)) {
        *d = T::from_bytes(chunk).ok_or_else(|| Error::Internal {
            reason: format!(
                "Equivalence::from_bytes of {} returned None for a correct-length input",
                std::any::type_name::<T>()
            ),
        })?;
    }
    Ok(())
}

/// Copies the bytes of `src` into `dst`, which must be exactly as long (else
/// [`Error::BufferTooSmall`] if short, class ARG if long).
pub fn copy_to_bytes<T: Equivalence>(dst: &mut [u8], src: &[T]) -> Result<()> {
    let bytes = bytes_of(src);
    if dst.len() < bytes.len() {
        return Err(Error::BufferTooSmall {
            which: "destination",
            needed: bytes.len(),
            got: dst.len(),
        });
    }
    if dst.len() > bytes.len() {
        return Err(Error::arg(format!(
            "copy_to_bytes: {} values take {} bytes, not {}",
            src.len(),
            bytes.len(),
            dst.len()
        )));
    }
    dst.copy_from_slice(bytes);
    Ok(())
}

macro_rules! basic_equivalence {
    ($($t:ty => $b:ident),* $(,)?) => {$(
        const _: () = assert!(
            size_of::<$t>() == BasicType::$b.size() && align_of::<$t>() == BasicType::$b.align()
        );
        // SAFETY: a padding-free type (a primitive, or a `repr(C)`/`repr(transparent)`
        // struct of primitives whose size equals the sum of its fields, pinned by the
        // `const` assertions in this module) in which every byte pattern is a valid
        // value, described by the basic type of the same size.
        unsafe impl Equivalence for $t {
            const BASIC: Option<BasicType> = Some(BasicType::$b);
            fn datatype() -> Datatype {
                Datatype::basic(BasicType::$b)
            }
        }
    )*};
}

basic_equivalence! {
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    isize => Isize, usize => Usize, f32 => F32, f64 => F64,
    Byte => Byte, Complex32 => C32, Complex64 => C64,
    FloatInt => FloatInt, DoubleInt => DoubleInt, LongInt => LongInt,
    TwoInt => TwoInt, ShortInt => ShortInt,
    LongDouble => LongDouble, LongDoubleInt => LongDoubleInt,
}

const _: () = assert!(size_of::<bool>() == 1);

// SAFETY: a `bool` is one initialised byte (0 or 1), described by `BasicType::Bool`.
// Not every byte pattern is a `bool`, so `ANY_BIT_PATTERN` is false and `from_bytes`
// normalises any byte to `byte != 0`.
unsafe impl Equivalence for bool {
    const BASIC: Option<BasicType> = Some(BasicType::Bool);
    const ANY_BIT_PATTERN: bool = false;

    fn datatype() -> Datatype {
        Datatype::basic(BasicType::Bool)
    }

    fn from_bytes(bytes: &[u8]) -> Option<bool> {
        match bytes {
            [b] => Some(*b != 0),
            _ => None,
        }
    }
}

// SAFETY: an array has no padding between or after its elements (its size is
// N x size_of::<T>()), each element upholds the contract, and `contiguous(N, T)`
// describes N consecutive instances of T's datatype with extent size_of::<T>(), so
// the array's extent is its size. Byte patterns are valid exactly when they are for
// T, and `from_bytes` defers to `T::from_bytes` per element.
unsafe impl<T: Equivalence, const N: usize> Equivalence for [T; N] {
    const BASIC: Option<BasicType> = None;
    const ANY_BIT_PATTERN: bool = T::ANY_BIT_PATTERN;

    fn datatype() -> Datatype {
        match Datatype::contiguous(N, &T::datatype()) {
            Ok(mut d) => {
                d.commit();
                d
            }
            Err(e) => broken_equivalence(std::any::type_name::<T>(), &e),
        }
    }

    fn from_bytes(bytes: &[u8]) -> Option<[T; N]> {
        let size = size_of::<T>();
        if bytes.len() != size_of::<[T; N]>() {
            return None;
        }
        let mut values = Vec::with_capacity(N);
        for i in 0..N {
            values.push(T::from_bytes(&bytes[i * size..(i + 1) * size])?);
        }
        values.try_into().ok()
    }
}

#[cold]
#[inline(never)]
fn broken_equivalence(type_name: &str, e: &Error) -> ! {
    panic!("rma-datatype: the Equivalence impl of {type_name} breaks its contract: {e}")
}

/// An uninterpreted byte (MPI_BYTE): only REPLACE, NO_OP and the bitwise ops apply.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[doc(alias = "MPI_BYTE")]
pub struct Byte(pub u8);

/// A complex number of two `f32` (MPI_C_FLOAT_COMPLEX).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[doc(alias = "MPI_C_FLOAT_COMPLEX")]
pub struct Complex32 {
    /// Real part.
    pub re: f32,
    /// Imaginary part.
    pub im: f32,
}

/// A complex number of two `f64` (MPI_C_DOUBLE_COMPLEX).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[doc(alias = "MPI_C_DOUBLE_COMPLEX")]
pub struct Complex64 {
    /// Real part.
    pub re: f64,
    /// Imaginary part.
    pub im: f64,
}

const _: () = assert!(offset_of!(Complex32, im) == 4 && size_of::<Complex32>() == 8);
const _: () = assert!(offset_of!(Complex64, im) == 8 && size_of::<Complex64>() == 16);

macro_rules! pair_impls {
    ($($name:ident: $v:ty => $basic:ident),* $(,)?) => {$(
        impl PartialEq for $name {
            /// Compares value and index; padding is ignored.
            fn eq(&self, other: &$name) -> bool {
                self.value == other.value && self.index == other.index
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("value", &self.value)
                    .field("index", &self.index)
                    .finish()
            }
        }

        impl From<($v, i32)> for $name {
            fn from((value, index): ($v, i32)) -> $name {
                $name::new(value, index)
            }
        }

        const _: () = {
            assert!(size_of::<$name>() == BasicType::$basic.size());
            assert!(align_of::<$name>() == BasicType::$basic.align());
            assert!(offset_of!($name, value) == 0);
            assert!(offset_of!($name, index) + 4 <= size_of::<$name>());
            match BasicType::$basic.pair_index_offset() {
                Some(o) => assert!(o == offset_of!($name, index)),
                None => panic!("not a pair type"),
            }
        };
    )*};
}

pair_impls! {
    FloatInt: f32 => FloatInt,
    DoubleInt: f64 => DoubleInt,
    LongInt: i64 => LongInt,
    TwoInt: i32 => TwoInt,
    ShortInt: i16 => ShortInt,
    LongDoubleInt: LongDouble => LongDoubleInt,
}

const _: () = assert!(offset_of!(DoubleInt, _pad) == 12 && offset_of!(LongInt, _pad) == 12);
const _: () = assert!(offset_of!(ShortInt, _pad) == 2);

/// `{ f32 value; i32 index; }` (MPI_FLOAT_INT): a MAXLOC/MINLOC pair, 8 bytes, one
/// basic element.
#[repr(C)]
#[derive(Clone, Copy, Default)]
#[doc(alias = "MPI_FLOAT_INT")]
pub struct FloatInt {
    /// The value compared.
    pub value: f32,
    /// The index carried along.
    pub index: i32,
}

impl FloatInt {
    /// The pair `(value, index)`.
    pub const fn new(value: f32, index: i32) -> FloatInt {
        FloatInt { value, index }
    }
}

/// `{ f64 value; i32 index; }` (MPI_DOUBLE_INT): a MAXLOC/MINLOC pair, 16 bytes, one
/// basic element. The 4 trailing padding bytes are an explicit private field, zero
/// when built with `new`, ignored by `==`, so every byte is initialised.
#[repr(C)]
#[derive(Clone, Copy, Default)]
#[doc(alias = "MPI_DOUBLE_INT")]
pub struct DoubleInt {
    /// The value compared.
    pub value: f64,
    /// The index carried along.
    pub index: i32,
    _pad: u32,
}

impl DoubleInt {
    /// The pair `(value, index)`.
    pub const fn new(value: f64, index: i32) -> DoubleInt {
        DoubleInt {
            value,
            index,
            _pad: 0,
        }
    }
}

/// `{ i64 value; i32 index; }` (MPI_LONG_INT on LP64): a MAXLOC/MINLOC pair, 16
/// bytes, one basic element. Trailing padding is an explicit private field, as in
/// [`DoubleInt`].
#[repr(C)]
#[derive(Clone, Copy, Default, Eq)]
#[doc(alias = "MPI_LONG_INT")]
pub struct LongInt {
    /// The value compared.
    pub value: i64,
    /// The index carried along.
    pub index: i32,
    _pad: u32,
}

impl LongInt {
    /// The pair `(value, index)`.
    pub const fn new(value: i64, index: i32) -> LongInt {
        LongInt {
            value,
            index,
            _pad: 0,
        }
    }
}

/// `{ i32 value; i32 index; }` (MPI_2INT): a MAXLOC/MINLOC pair, 8 bytes, one basic
/// element.
#[repr(C)]
#[derive(Clone, Copy, Default, Eq)]
#[doc(alias = "MPI_2INT")]
pub struct TwoInt {
    /// The value compared.
    pub value: i32,
    /// The index carried along.
    pub index: i32,
}

impl TwoInt {
    /// The pair `(value, index)`.
    pub const fn new(value: i32, index: i32) -> TwoInt {
        TwoInt { value, index }
    }
}

/// `{ i16 value; i32 index; }` (MPI_SHORT_INT): a MAXLOC/MINLOC pair, 8 bytes, one
/// basic element. The 2 padding bytes after `value` are an explicit private field, as
/// in [`DoubleInt`].
#[repr(C)]
#[derive(Clone, Copy, Default, Eq)]
#[doc(alias = "MPI_SHORT_INT")]
pub struct ShortInt {
    /// The value compared.
    pub value: i16,
    _pad: u16,
    /// The index carried along.
    pub index: i32,
}

impl ShortInt {
    /// The pair `(value, index)`.
    pub const fn new(value: i16, index: i32) -> ShortInt {
        ShortInt {
            value,
            _pad: 0,
            index,
        }
    }
}
