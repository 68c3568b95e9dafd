//! C's `long double` on x86-64 (MPI_LONG_DOUBLE) and its MAXLOC/MINLOC pair.
//!
//! The value is the x87 80-bit extended format (64-bit significand with an explicit
//! integer bit, 15-bit exponent, sign) in the low 10 bytes of a 16-byte, 16-aligned
//! slot; the other 6 bytes are padding, which C leaves undefined and rma ignores.
//! Conversion from and to `f64` and comparison are done in software and work on every
//! target; SUM and PROD run on the x87 unit, in rma-ops, on x86-64 only.

use std::cmp::Ordering;
use std::fmt;

/// C's `long double` of x86-64 (MPI_LONG_DOUBLE): an x87 80-bit extended value in 16
/// bytes. Every byte pattern is a value; `==` and the order compare values as C does
/// (`+0 == -0`, a NaN equals nothing) and ignore the 6 padding bytes.
#[repr(C, align(16))]
#[derive(Clone, Copy, Default)]
#[doc(alias = "MPI_LONG_DOUBLE")]
pub struct LongDouble {
    bytes: [u8; 16],
}

const EXP_MAX: u16 = 0x7fff;
const BIAS: i32 = 16383;

impl LongDouble {
    /// The value with these 80 bits (the low 80 bits of `bits`: significand in bits
    /// 0-63, exponent in 64-78, sign in 79).
    pub const fn from_bits(bits: u128) -> LongDouble {
        let all = bits.to_le_bytes();
        let mut bytes = [0u8; 16];
        let mut i = 0;
        while i < 10 {
            bytes[i] = all[i];
            i += 1;
        }
        LongDouble { bytes }
    }

    /// The value's 80 bits (see [`LongDouble::from_bits`]); padding is not included.
    pub const fn to_bits(self) -> u128 {
        let mut all = [0u8; 16];
        let mut i = 0;
        while i < 10 {
            all[i] = self.bytes[i];
            i += 1;
        }
        u128::from_le_bytes(all)
    }

    fn parts(self) -> (bool, u16, u64) {
        let b = self.to_bits();
        ((b >> 79) & 1 == 1, ((b >> 64) as u16) & EXP_MAX, b as u64)
    }

    fn from_parts(neg: bool, exp: u16, mant: u64) -> LongDouble {
        LongDouble::from_bits(((neg as u128) << 79) | ((exp as u128) << 64) | mant as u128)
    }

    /// The `f64` value, exactly (every `f64` is a `long double`).
    pub fn from_f64(x: f64) -> LongDouble {
        let bits = x.to_bits();
        let neg = bits >> 63 == 1;
        let e = ((bits >> 52) & 0x7ff) as i32;
        let f = bits & ((1 << 52) - 1);
        match (e, f) {
            (0x7ff, _) => LongDouble::from_parts(neg, EXP_MAX, (1 << 63) | (f << 11)),
            (0, 0) => LongDouble::from_parts(neg, 0, 0),
            (0, _) => {
                // subnormal: f * 2^-1074, normalized so the top bit is the integer bit
                let lz = f.leading_zeros() as i32;
                let exp = BIAS + 63 - lz - 1074;
                LongDouble::from_parts(neg, exp as u16, f << lz)
            }
            _ => LongDouble::from_parts(neg, (e - 1023 + BIAS) as u16, (1 << 63) | (f << 11)),
        }
    }

    /// The nearest `f64` (ties to even), infinities and NaNs kept.
    pub fn to_f64(self) -> f64 {
        let (neg, e, mant) = self.parts();
        let sign = (neg as u64) << 63;
        if e == EXP_MAX {
            if mant << 1 == 0 {
                return f64::from_bits(sign | 0x7ff0_0000_0000_0000);
            }
            let payload = (mant >> 11) & ((1 << 52) - 1);
            return f64::from_bits(sign | 0x7ff8_0000_0000_0000 | payload);
        }
        if mant == 0 {
            return f64::from_bits(sign);
        }
        // unbiased exponent of bit 63 (denormals use the smallest exponent)
        let lz = mant.leading_zeros() as i32;
        let mut exp = (e.max(1) as i32) - BIAS - lz;
        let m = mant << lz;
        let inf = f64::from_bits(sign | 0x7ff0_0000_0000_0000);
        if exp > 1023 {
            return inf;
        }
        let round = |m: u64, shift: u32| -> u64 {
            if shift >= 65 {
                return 0;
            }
            if shift == 64 {
                return (m > 1 << 63) as u64;
            }
            let q = m >> shift;
            let rem = m & ((1u64 << shift) - 1);
            let half = 1u64 << (shift - 1);
            q + (rem > half || (rem == half && q & 1 == 1)) as u64
        };
        if exp >= -1022 {
            let mut q = round(m, 11);
            if q == 1 << 53 {
                q >>= 1;
                exp += 1;
                if exp > 1023 {
                    return inf;
                }
            }
            return f64::from_bits(sign | (((exp + 1023) as u64) << 52) | (q & ((1 << 52) - 1)));
        }
        // subnormal result: units of 2^-1074 (a carry into bit 52 is the smallest normal)
        let shift = (-exp - 1011) as u32;
        f64::from_bits(sign | round(m, shift))
    }

    /// Whether the value is a NaN.
    pub fn is_nan(self) -> bool {
        let (_, e, mant) = self.parts();
        e == EXP_MAX && mant << 1 != 0
    }

    /// The magnitude as an ordered key (for values that are not NaN).
    fn magnitude(self) -> u128 {
        let (_, e, mant) = self.parts();
        if mant == 0 {
            0
        } else {
            ((e as u128) << 64) | mant as u128
        }
    }
}

impl PartialEq for LongDouble {
    fn eq(&self, other: &LongDouble) -> bool {
        self.partial_cmp(other) == Some(Ordering::Equal)
    }
}

impl PartialOrd for LongDouble {
    fn partial_cmp(&self, other: &LongDouble) -> Option<Ordering> {
        if self.is_nan() || other.is_nan() {
            return None;
        }
        let (a, b) = (self.magnitude(), other.magnitude());
        let (sa, sb) = (self.parts().0 && a != 0, other.parts().0 && b != 0);
        Some(match (sa, sb) {
            (false, false) => a.cmp(&b),
            (true, true) => b.cmp(&a),
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
        })
    }
}

impl fmt::Debug for LongDouble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "LongDouble({:?} ~ {:#022x})",
            self.to_f64(),
            self.to_bits()
        )
    }
}

impl From<f64> for LongDouble {
    fn from(x: f64) -> LongDouble {
        LongDouble::from_f64(x)
    }
}

/// `{ long double value; i32 index; }` (MPI_LONG_DOUBLE_INT on x86-64): a MAXLOC/MINLOC
/// pair, 32 bytes, aligned to 16, one basic element. The 12 trailing padding bytes are
/// an explicit private field, zero when built with `new` and ignored by `==`.
#[repr(C, align(16))]
#[derive(Clone, Copy, Default)]
#[doc(alias = "MPI_LONG_DOUBLE_INT")]
pub struct LongDoubleInt {
    /// The value compared.
    pub value: LongDouble,
    /// The index carried along.
    pub index: i32,
    _pad: [u32; 3],
}

impl LongDoubleInt {
    /// The pair `(value, index)`.
    pub const fn new(value: LongDouble, index: i32) -> LongDoubleInt {
        LongDoubleInt {
            value,
            index,
            _pad: [0; 3],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f64_round_trips_exactly() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            1e300,
            -1e-300,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            123456.789,
        ] {
            let l = LongDouble::from_f64(x);
            assert_eq!(l.to_f64().to_bits(), x.to_bits(), "{x}");
        }
        assert!(LongDouble::from_f64(f64::NAN).is_nan());
        assert!(LongDouble::from_f64(f64::NAN).to_f64().is_nan());
    }

    #[test]
    fn known_encodings() {
        // 1.0: exponent 16383, integer bit set
        assert_eq!(
            LongDouble::from_f64(1.0).to_bits(),
            0x3fff_8000_0000_0000_0000
        );
        assert_eq!(
            LongDouble::from_f64(-2.0).to_bits(),
            0xc000_8000_0000_0000_0000
        );
        // 1 + 2^-63 is a long double, not a double: rounds to 1.0 (tie to even)
        let just_above = LongDouble::from_bits(0x3fff_8000_0000_0000_0001);
        assert_eq!(just_above.to_f64(), 1.0);
        assert!(just_above > LongDouble::from_f64(1.0));
        // 1 + 3 * 2^-54 (three quarters of an f64 unit) rounds up to 1 + 2^-52
        let up = LongDouble::from_bits(0x3fff_8000_0000_0000_0600);
        assert_eq!(up.to_f64(), 1.0 + f64::EPSILON);
        // 1 + 2^-53 (half a unit, 1.0 even) rounds down; 1 + 3 * 2^-53 ties up to even
        assert_eq!(
            LongDouble::from_bits(0x3fff_8000_0000_0000_0400).to_f64(),
            1.0
        );
        assert_eq!(
            LongDouble::from_bits(0x3fff_8000_0000_0000_0c00).to_f64(),
            1.0 + 2.0 * f64::EPSILON
        );
    }

    #[test]
    fn order_is_c_order() {
        let v = |x: f64| LongDouble::from_f64(x);
        assert!(v(-1.0) < v(0.0) && v(0.0) < v(1e-310) && v(1.0) < v(2.0));
        assert!(v(-3.0) < v(-2.0));
        assert_eq!(v(0.0), v(-0.0));
        assert_ne!(v(f64::NAN), v(f64::NAN));
        assert_eq!(v(f64::NAN).partial_cmp(&v(1.0)), None);
    }
}
