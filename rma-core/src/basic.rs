use std::fmt;

/// A predefined basic type: the unit an accumulate operation applies to.
///
/// The MAXLOC/MINLOC pair types count as one basic type each (as in MPI), with the
/// layout of the C struct of the same name on this platform, padding included:
///
/// | variant | C layout | size | align |
/// |---|---|---|---|
/// | `FloatInt` | `{ float; int; }` | 8 | 4 |
/// | `DoubleInt` | `{ double; int; }` | 16 | 8 |
/// | `LongInt` | `{ long; int; }` | 16 | 8 |
/// | `TwoInt` | `{ int; int; }` | 8 | 4 |
/// | `ShortInt` | `{ short; int; }` | 8 | 4 |
/// | `LongDoubleInt` | `{ long double; int; }` | 32 | 16 |
///
/// (`long` is 64-bit on the LP64 platforms rma supports.)
///
/// `LongDouble` is C's `long double` of x86-64: the x87 80-bit extended format in 16
/// bytes (6 of them padding), aligned to 16. Its arithmetic (SUM, PROD) runs on the x87
/// unit, so on other targets only the ops that move or compare values apply to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum BasicType {
    /// `i8` (MPI_INT8_T).
    #[doc(alias = "MPI_INT8_T")]
    I8,
    /// `i16` (MPI_INT16_T).
    #[doc(alias = "MPI_INT16_T")]
    I16,
    /// `i32` (MPI_INT32_T).
    #[doc(alias = "MPI_INT32_T")]
    I32,
    /// `i64` (MPI_INT64_T).
    #[doc(alias = "MPI_INT64_T")]
    I64,
    /// `u8` (MPI_UINT8_T).
    #[doc(alias = "MPI_UINT8_T")]
    U8,
    /// `u16` (MPI_UINT16_T).
    #[doc(alias = "MPI_UINT16_T")]
    U16,
    /// `u32` (MPI_UINT32_T).
    #[doc(alias = "MPI_UINT32_T")]
    U32,
    /// `u64` (MPI_UINT64_T).
    #[doc(alias = "MPI_UINT64_T")]
    U64,
    /// `isize`, the signed address-sized integer (MPI_AINT).
    #[doc(alias = "MPI_AINT")]
    Isize,
    /// `usize`, an unsigned address-sized integer.
    Usize,
    /// `f32` (MPI_FLOAT).
    #[doc(alias = "MPI_FLOAT")]
    F32,
    /// `f64` (MPI_DOUBLE).
    #[doc(alias = "MPI_DOUBLE")]
    F64,
    /// Complex of two `f32` (MPI_C_FLOAT_COMPLEX).
    #[doc(alias = "MPI_C_FLOAT_COMPLEX")]
    C32,
    /// Complex of two `f64` (MPI_C_DOUBLE_COMPLEX).
    #[doc(alias = "MPI_C_DOUBLE_COMPLEX")]
    C64,
    /// `bool`, one byte holding 0 or 1 (MPI_C_BOOL).
    #[doc(alias = "MPI_C_BOOL")]
    Bool,
    /// An uninterpreted byte (MPI_BYTE).
    #[doc(alias = "MPI_BYTE")]
    Byte,
    /// `{ f32 value; i32 index; }` (MPI_FLOAT_INT).
    #[doc(alias = "MPI_FLOAT_INT")]
    FloatInt,
    /// `{ f64 value; i32 index; }` (MPI_DOUBLE_INT).
    #[doc(alias = "MPI_DOUBLE_INT")]
    DoubleInt,
    /// `{ i64 value; i32 index; }` (MPI_LONG_INT).
    #[doc(alias = "MPI_LONG_INT")]
    LongInt,
    /// `{ i32 value; i32 index; }` (MPI_2INT).
    #[doc(alias = "MPI_2INT")]
    TwoInt,
    /// `{ i16 value; i32 index; }` (MPI_SHORT_INT).
    #[doc(alias = "MPI_SHORT_INT")]
    ShortInt,
    /// C's `long double` on x86-64, the x87 80-bit extended format in 16 bytes
    /// (MPI_LONG_DOUBLE).
    #[doc(alias = "MPI_LONG_DOUBLE")]
    LongDouble,
    /// `{ long double value; i32 index; }` (MPI_LONG_DOUBLE_INT).
    #[doc(alias = "MPI_LONG_DOUBLE_INT")]
    LongDoubleInt,
}

/// The class of a basic type, as the op x type table of docs/semantics.md rule 2 uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    /// Fixed-width integers, signed or not.
    Integer,
    /// Address-sized integers (`isize`, `usize`).
    Address,
    /// `f32`, `f64`.
    Float,
    /// Complex `f32` and `f64`.
    Complex,
    /// `bool`.
    Logical,
    /// MPI_BYTE.
    Byte,
    /// The MAXLOC/MINLOC (value, index) pairs.
    Pair,
}

impl BasicType {
    /// Every basic type, in declaration order.
    pub const ALL: [BasicType; 23] = [
        BasicType::I8,
        BasicType::I16,
        BasicType::I32,
        BasicType::I64,
        BasicType::U8,
        BasicType::U16,
        BasicType::U32,
        BasicType::U64,
        BasicType::Isize,
        BasicType::Usize,
        BasicType::F32,
        BasicType::F64,
        BasicType::C32,
        BasicType::C64,
        BasicType::Bool,
        BasicType::Byte,
        BasicType::FloatInt,
        BasicType::DoubleInt,
        BasicType::LongInt,
        BasicType::TwoInt,
        BasicType::ShortInt,
        BasicType::LongDouble,
        BasicType::LongDoubleInt,
    ];

    /// The largest [`BasicType::size`] (for stack buffers of one element).
    pub const MAX_SIZE: usize = 32;

    /// Size in bytes, padding of pair types included.
    pub const fn size(self) -> usize {
        use BasicType::*;
        match self {
            I8 | U8 | Bool | Byte => 1,
            I16 | U16 => 2,
            I32 | U32 | F32 => 4,
            I64 | U64 | F64 | C32 => 8,
            Isize | Usize => std::mem::size_of::<usize>(),
            C64 => 16,
            FloatInt | TwoInt | ShortInt => 8,
            DoubleInt | LongInt => 16,
            LongDouble => 16,
            LongDoubleInt => 32,
        }
    }

    /// Required alignment in bytes (that of the matching Rust/C type).
    pub const fn align(self) -> usize {
        use BasicType::*;
        match self {
            I8 | U8 | Bool | Byte => 1,
            I16 | U16 => 2,
            I32 | U32 | F32 | C32 => 4,
            I64 | U64 | F64 | C64 => 8,
            Isize | Usize => std::mem::align_of::<usize>(),
            FloatInt | TwoInt | ShortInt => 4,
            DoubleInt | LongInt => 8,
            LongDouble | LongDoubleInt => 16,
        }
    }

    /// The type's class for the op x type table.
    pub const fn class(self) -> TypeClass {
        use BasicType::*;
        match self {
            I8 | I16 | I32 | I64 | U8 | U16 | U32 | U64 => TypeClass::Integer,
            Isize | Usize => TypeClass::Address,
            F32 | F64 | LongDouble => TypeClass::Float,
            C32 | C64 => TypeClass::Complex,
            Bool => TypeClass::Logical,
            Byte => TypeClass::Byte,
            FloatInt | DoubleInt | LongInt | TwoInt | ShortInt | LongDoubleInt => TypeClass::Pair,
        }
    }

    /// Whether this is a signed integer type (fixed-width or address-sized).
    pub const fn is_signed_integer(self) -> bool {
        matches!(
            self,
            BasicType::I8 | BasicType::I16 | BasicType::I32 | BasicType::I64 | BasicType::Isize
        )
    }

    /// Whether this is one of the MAXLOC/MINLOC pair types.
    pub const fn is_pair(self) -> bool {
        matches!(self.class(), TypeClass::Pair)
    }

    /// For a pair type: the byte offset of the index (an `i32`) inside the pair.
    pub const fn pair_index_offset(self) -> Option<usize> {
        match self {
            BasicType::FloatInt | BasicType::TwoInt | BasicType::ShortInt => Some(4),
            BasicType::DoubleInt | BasicType::LongInt => Some(8),
            BasicType::LongDoubleInt => Some(16),
            _ => None,
        }
    }

    /// The short Rust-flavoured name used in messages (`"i32"`, `"double_int"`).
    pub const fn name(self) -> &'static str {
        use BasicType::*;
        match self {
            I8 => "i8",
            I16 => "i16",
            I32 => "i32",
            I64 => "i64",
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            Isize => "isize",
            Usize => "usize",
            F32 => "f32",
            F64 => "f64",
            C32 => "complex_f32",
            C64 => "complex_f64",
            Bool => "bool",
            Byte => "byte",
            FloatInt => "float_int",
            DoubleInt => "double_int",
            LongInt => "long_int",
            TwoInt => "2int",
            ShortInt => "short_int",
            LongDouble => "long_double",
            LongDoubleInt => "long_double_int",
        }
    }

    /// The basic type with this `#[repr(u8)]` discriminant (for decoding wire headers).
    pub fn from_u8(raw: u8) -> Option<BasicType> {
        BasicType::ALL.get(raw as usize).copied()
    }
}

impl fmt::Display for BasicType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discriminants_round_trip() {
        for (i, t) in BasicType::ALL.iter().enumerate() {
            assert_eq!(*t as u8 as usize, i);
            assert_eq!(BasicType::from_u8(i as u8), Some(*t));
        }
        assert_eq!(BasicType::from_u8(23), None);
    }

    #[test]
    fn max_size_is_the_largest() {
        assert_eq!(
            BasicType::ALL.iter().map(|t| t.size()).max(),
            Some(BasicType::MAX_SIZE)
        );
    }

    #[test]
    fn alignment_divides_size() {
        for t in BasicType::ALL {
            assert_eq!(t.size() % t.align(), 0, "{t}");
        }
    }
}
