//! Scalar semantics of every op on every basic type: the reference the vectorised and
//! atomic kernels are built from and tested against.

use rma_core::{BasicType, Op};
use rma_datatype::{
    Byte, Complex32, Complex64, DoubleInt, FloatInt, LongDouble, LongDoubleInt, LongInt, ShortInt,
    TwoInt,
};

/// A Rust type holding one element of a basic type, with the scalar meaning of every op.
///
/// Elements travel through memory as [`Element::Raw`], a plain type for which every bit
/// pattern is valid, so that a kernel never materialises an invalid value (a `bool`
/// read from a window holding 2 becomes `true`, never undefined behaviour).
pub trait Element: Copy + PartialEq + Send + Sync + std::fmt::Debug + 'static {
    /// The basic type this Rust type stands for.
    const BASIC: BasicType;
    /// The in-memory representation; every bit pattern of it is valid.
    type Raw: Copy;
    /// Reads an element from its representation (normalising where needed).
    fn from_raw(raw: Self::Raw) -> Self;
    /// The element's representation.
    fn to_raw(self) -> Self::Raw;
    /// The element's bits zero-extended to 64 (elements of at most 8 bytes; used by the
    /// native-atomic kernels). Wider elements return 0 and are never asked.
    fn to_bits(self) -> u64;
    /// The element from its bits (inverse of [`Element::to_bits`]).
    fn from_bits(bits: u64) -> Self;
    /// `op(target, origin)`: the new target value. `op` must be valid for the type
    /// (checked by [`crate::check`]); an op outside the table leaves `target` as it is.
    fn combine(op: Op, target: Self, origin: Self) -> Self;
}

macro_rules! int_element {
    ($t:ty, $basic:ident, $bits:ty) => {
        impl Element for $t {
            const BASIC: BasicType = BasicType::$basic;
            type Raw = $t;
            #[inline(always)]
            fn from_raw(raw: $t) -> $t {
                raw
            }
            #[inline(always)]
            fn to_raw(self) -> $t {
                self
            }
            #[inline(always)]
            fn to_bits(self) -> u64 {
                self as $bits as u64
            }
            #[inline(always)]
            fn from_bits(bits: u64) -> $t {
                bits as $bits as $t
            }
            #[inline(always)]
            fn combine(op: Op, a: $t, b: $t) -> $t {
                match op {
                    Op::Sum => a.wrapping_add(b),
                    Op::Prod => a.wrapping_mul(b),
                    Op::Max => a.max(b),
                    Op::Min => a.min(b),
                    Op::Land => ((a != 0) && (b != 0)) as $t,
                    Op::Lor => ((a != 0) || (b != 0)) as $t,
                    Op::Lxor => ((a != 0) != (b != 0)) as $t,
                    Op::Band => a & b,
                    Op::Bor => a | b,
                    Op::Bxor => a ^ b,
                    Op::Replace => b,
                    Op::NoOp | Op::MaxLoc | Op::MinLoc => a,
                }
            }
        }
    };
}

int_element!(i8, I8, u8);
int_element!(i16, I16, u16);
int_element!(i32, I32, u32);
int_element!(i64, I64, u64);
int_element!(u8, U8, u8);
int_element!(u16, U16, u16);
int_element!(u32, U32, u32);
int_element!(u64, U64, u64);
int_element!(isize, Isize, usize);
int_element!(usize, Usize, usize);

/// MAX (`op` is Max) or MIN of two floating-point values with the rule below; the
/// caller says which is NaN.
#[inline(always)]
fn float_max_min<T: PartialOrd>(op: Op, a: T, b: T, a_nan: bool, b_nan: bool) -> T {
    let origin_wins = if op == Op::Max { b > a } else { b < a };
    if a_nan {
        a
    } else if b_nan || origin_wins {
        b
    } else {
        a
    }
}

/// MAX and MIN on floating point: if either operand is NaN the result is NaN (the
/// target's NaN if it is one, else the origin's), so a NaN is never silently dropped;
/// between equal values (including -0.0 and +0.0) the target keeps its value.
macro_rules! float_element {
    ($t:ty, $basic:ident, $bits:ty) => {
        impl Element for $t {
            const BASIC: BasicType = BasicType::$basic;
            type Raw = $t;
            #[inline(always)]
            fn from_raw(raw: $t) -> $t {
                raw
            }
            #[inline(always)]
            fn to_raw(self) -> $t {
                self
            }
            #[inline(always)]
            fn to_bits(self) -> u64 {
                <$t>::to_bits(self) as u64
            }
            #[inline(always)]
            fn from_bits(bits: u64) -> $t {
                <$t>::from_bits(bits as $bits)
            }
            #[inline(always)]
            fn combine(op: Op, a: $t, b: $t) -> $t {
                match op {
                    Op::Sum => a + b,
                    Op::Prod => a * b,
                    Op::Max | Op::Min => float_max_min(op, a, b, a.is_nan(), b.is_nan()),
                    Op::Replace => b,
                    _ => a,
                }
            }
        }
    };
}

float_element!(f32, F32, u32);
float_element!(f64, F64, u64);

/// Complex SUM and PROD in the textbook form; REPLACE; the rest leaves the target.
macro_rules! complex_element {
    ($t:ident, $basic:ident, $bits:tt) => {
        impl Element for $t {
            const BASIC: BasicType = BasicType::$basic;
            type Raw = $t;
            #[inline(always)]
            fn from_raw(raw: $t) -> $t {
                raw
            }
            #[inline(always)]
            fn to_raw(self) -> $t {
                self
            }
            complex_element!(@bits $t, $bits);
            #[inline(always)]
            fn combine(op: Op, a: $t, b: $t) -> $t {
                match op {
                    Op::Sum => $t {
                        re: a.re + b.re,
                        im: a.im + b.im,
                    },
                    Op::Prod => $t {
                        re: a.re * b.re - a.im * b.im,
                        im: a.re * b.im + a.im * b.re,
                    },
                    Op::Replace => b,
                    _ => a,
                }
            }
        }
    };
    // 8-byte complex: one atomic word holding the element's bytes in memory order (as
    // an AtomicU64 over the element reads them, on either endianness)
    (@bits $t:ident, narrow) => {
        #[inline(always)]
        fn to_bits(self) -> u64 {
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&self.re.to_ne_bytes());
            b[4..].copy_from_slice(&self.im.to_ne_bytes());
            u64::from_ne_bytes(b)
        }
        #[inline(always)]
        fn from_bits(bits: u64) -> $t {
            let b = bits.to_ne_bytes();
            $t {
                re: f32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
                im: f32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
            }
        }
    };
    // 16-byte complex: lock-protected, never handled as bits
    (@bits $t:ident, wide) => {
        fn to_bits(self) -> u64 {
            0
        }
        fn from_bits(_: u64) -> $t {
            $t::default()
        }
    };
}

complex_element!(Complex32, C32, narrow);
complex_element!(Complex64, C64, wide);

impl Element for bool {
    const BASIC: BasicType = BasicType::Bool;
    type Raw = u8;
    #[inline(always)]
    fn from_raw(raw: u8) -> bool {
        raw != 0
    }
    #[inline(always)]
    fn to_raw(self) -> u8 {
        self as u8
    }
    #[inline(always)]
    fn to_bits(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> bool {
        bits as u8 != 0
    }
    #[inline(always)]
    fn combine(op: Op, a: bool, b: bool) -> bool {
        match op {
            Op::Land => a && b,
            Op::Lor => a || b,
            Op::Lxor => a != b,
            Op::Replace => b,
            _ => a,
        }
    }
}

impl Element for Byte {
    const BASIC: BasicType = BasicType::Byte;
    type Raw = u8;
    #[inline(always)]
    fn from_raw(raw: u8) -> Byte {
        Byte(raw)
    }
    #[inline(always)]
    fn to_raw(self) -> u8 {
        self.0
    }
    #[inline(always)]
    fn to_bits(self) -> u64 {
        self.0 as u64
    }
    #[inline(always)]
    fn from_bits(bits: u64) -> Byte {
        Byte(bits as u8)
    }
    #[inline(always)]
    fn combine(op: Op, a: Byte, b: Byte) -> Byte {
        match op {
            Op::Band => Byte(a.0 & b.0),
            Op::Bor => Byte(a.0 | b.0),
            Op::Bxor => Byte(a.0 ^ b.0),
            Op::Replace => b,
            _ => a,
        }
    }
}

/// MAXLOC/MINLOC (docs/semantics.md rule 5): the larger (smaller) value wins with its index;
/// on equal values the smaller index wins. Values that compare unordered (a NaN in a
/// float pair) keep the target's value, with the smaller index.
#[inline(always)]
fn loc<V: PartialOrd + Copy>(op: Op, a: (V, i32), b: (V, i32)) -> (V, i32) {
    let (u, i) = a;
    let (v, j) = b;
    let origin_wins = match op {
        Op::MaxLoc => v > u,
        Op::MinLoc => v < u,
        _ => return a,
    };
    let target_wins = match op {
        Op::MaxLoc => u > v,
        _ => u < v,
    };
    if origin_wins {
        (v, j)
    } else if target_wins {
        (u, i)
    } else {
        (u, i.min(j))
    }
}

macro_rules! pair_element {
    ($t:ident, $basic:ident, $v:ty, narrow) => {
        impl Element for $t {
            const BASIC: BasicType = BasicType::$basic;
            type Raw = $t;
            #[inline(always)]
            fn from_raw(raw: $t) -> $t {
                raw
            }
            #[inline(always)]
            fn to_raw(self) -> $t {
                self
            }
            #[inline(always)]
            fn to_bits(self) -> u64 {
                let mut b = [0u8; 8];
                let v = self.value.to_ne_bytes();
                b[..v.len()].copy_from_slice(&v);
                b[4..].copy_from_slice(&self.index.to_ne_bytes());
                u64::from_ne_bytes(b)
            }
            #[inline(always)]
            fn from_bits(bits: u64) -> $t {
                let b = bits.to_ne_bytes();
                let mut v = [0u8; std::mem::size_of::<$v>()];
                let n = v.len();
                v.copy_from_slice(&b[..n]);
                let mut i = [0u8; 4];
                i.copy_from_slice(&b[4..]);
                $t::new(<$v>::from_ne_bytes(v), i32::from_ne_bytes(i))
            }
            #[inline(always)]
            fn combine(op: Op, a: $t, b: $t) -> $t {
                match op {
                    Op::MaxLoc | Op::MinLoc => {
                        let (v, i) = loc(op, (a.value, a.index), (b.value, b.index));
                        $t::new(v, i)
                    }
                    Op::Replace => b,
                    _ => a,
                }
            }
        }
    };
    ($t:ident, $basic:ident, $v:ty, wide) => {
        impl Element for $t {
            const BASIC: BasicType = BasicType::$basic;
            type Raw = $t;
            #[inline(always)]
            fn from_raw(raw: $t) -> $t {
                raw
            }
            #[inline(always)]
            fn to_raw(self) -> $t {
                self
            }
            fn to_bits(self) -> u64 {
                0
            }
            fn from_bits(_: u64) -> $t {
                $t::default()
            }
            #[inline(always)]
            fn combine(op: Op, a: $t, b: $t) -> $t {
                match op {
                    Op::MaxLoc | Op::MinLoc => {
                        let (v, i) = loc(op, (a.value, a.index), (b.value, b.index));
                        $t::new(v, i)
                    }
                    Op::Replace => b,
                    _ => a,
                }
            }
        }
    };
}

pair_element!(FloatInt, FloatInt, f32, narrow);
pair_element!(TwoInt, TwoInt, i32, narrow);
pair_element!(ShortInt, ShortInt, i16, narrow);
pair_element!(DoubleInt, DoubleInt, f64, wide);
pair_element!(LongInt, LongInt, i64, wide);
pair_element!(LongDoubleInt, LongDoubleInt, LongDouble, wide);

/// `long double`: SUM and PROD on the x87 unit (rma-ops's `x87` module); MAX and MIN as for the
/// other floats (a NaN wins, the target keeps its value between equals).
impl Element for LongDouble {
    const BASIC: BasicType = BasicType::LongDouble;
    type Raw = LongDouble;
    #[inline(always)]
    fn from_raw(raw: LongDouble) -> LongDouble {
        raw
    }
    #[inline(always)]
    fn to_raw(self) -> LongDouble {
        self
    }
    fn to_bits(self) -> u64 {
        0
    }
    fn from_bits(_: u64) -> LongDouble {
        LongDouble::default()
    }
    #[inline]
    fn combine(op: Op, a: LongDouble, b: LongDouble) -> LongDouble {
        match op {
            Op::Sum => crate::x87::add(a, b),
            Op::Prod => crate::x87::mul(a, b),
            Op::Max | Op::Min => float_max_min(op, a, b, a.is_nan(), b.is_nan()),
            Op::Replace => b,
            _ => a,
        }
    }
}

/// Runs `$body` with `$T` bound to the Rust element type of `$basic`.
#[macro_export]
#[doc(hidden)]
macro_rules! with_element {
    ($basic:expr, $T:ident => $body:expr) => {{
        use $crate::__private as __p;
        match $basic {
            __p::BasicType::I8 => {
                type $T = i8;
                $body
            }
            __p::BasicType::I16 => {
                type $T = i16;
                $body
            }
            __p::BasicType::I32 => {
                type $T = i32;
                $body
            }
            __p::BasicType::I64 => {
                type $T = i64;
                $body
            }
            __p::BasicType::U8 => {
                type $T = u8;
                $body
            }
            __p::BasicType::U16 => {
                type $T = u16;
                $body
            }
            __p::BasicType::U32 => {
                type $T = u32;
                $body
            }
            __p::BasicType::U64 => {
                type $T = u64;
                $body
            }
            __p::BasicType::Isize => {
                type $T = isize;
                $body
            }
            __p::BasicType::Usize => {
                type $T = usize;
                $body
            }
            __p::BasicType::F32 => {
                type $T = f32;
                $body
            }
            __p::BasicType::F64 => {
                type $T = f64;
                $body
            }
            __p::BasicType::C32 => {
                type $T = __p::Complex32;
                $body
            }
            __p::BasicType::C64 => {
                type $T = __p::Complex64;
                $body
            }
            __p::BasicType::Bool => {
                type $T = bool;
                $body
            }
            __p::BasicType::Byte => {
                type $T = __p::Byte;
                $body
            }
            __p::BasicType::FloatInt => {
                type $T = __p::FloatInt;
                $body
            }
            __p::BasicType::DoubleInt => {
                type $T = __p::DoubleInt;
                $body
            }
            __p::BasicType::LongInt => {
                type $T = __p::LongInt;
                $body
            }
            __p::BasicType::TwoInt => {
                type $T = __p::TwoInt;
                $body
            }
            __p::BasicType::ShortInt => {
                type $T = __p::ShortInt;
                $body
            }
            __p::BasicType::LongDouble => {
                type $T = __p::LongDouble;
                $body
            }
            __p::BasicType::LongDoubleInt => {
                type $T = __p::LongDoubleInt;
                $body
            }
        }
    }};
}
