//! `long double` arithmetic on the x87 unit (x86-64).

use rma_datatype::LongDouble;

/// One x87 binary op: `fld` both operands, combine, `fstp` the result, rounded as C's
/// `long double` arithmetic rounds (the x87 control word Linux sets and Rust never
/// changes: 64-bit precision, round to nearest).
#[cfg(target_arch = "x86_64")]
macro_rules! x87_op {
    ($name:ident, $insn:literal) => {
        #[inline]
        pub(crate) fn $name(a: LongDouble, b: LongDouble) -> LongDouble {
            let (x, y) = (a.to_bits().to_le_bytes(), b.to_bits().to_le_bytes());
            let mut out = [0u8; 16];
            // SAFETY: the three pointers are to local 16-byte arrays of which `fld
            // tbyte` reads and `fstp tbyte` writes the first 10 bytes; the x87 register
            // stack is empty at the block's start (the x86-64 ABI; Rust generates no
            // x87 code) and left empty (two loads, one pop in the op, one in the
            // store), and every x87 register is declared clobbered.
            unsafe {
                std::arch::asm!(
                    "fld tbyte ptr [{a}]",
                    "fld tbyte ptr [{b}]",
                    $insn,
                    "fstp tbyte ptr [{o}]",
                    a = in(reg) x.as_ptr(),
                    b = in(reg) y.as_ptr(),
                    o = in(reg) out.as_mut_ptr(),
                    out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                    out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                    options(nostack),
                );
            }
            LongDouble::from_bits(u128::from_le_bytes(out))
        }
    };
}

#[cfg(target_arch = "x86_64")]
x87_op!(add, "faddp st(1), st");
#[cfg(target_arch = "x86_64")]
x87_op!(mul, "fmulp st(1), st");

/// Elsewhere SUM and PROD on `long double` are refused by the op table
/// (`crate::check`); the element kernels leave the target as it is, as for any op
/// outside the table.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn add(a: LongDouble, _: LongDouble) -> LongDouble {
    a
}
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn mul(a: LongDouble, _: LongDouble) -> LongDouble {
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x87_arithmetic_keeps_64_bits() {
        let one = LongDouble::from_f64(1.0);
        let tiny = LongDouble::from_bits(0x3fc0_8000_0000_0000_0000); // 2^-63
                                                                      // exact in long double, lost in double
        let sum = add(one, tiny);
        assert_eq!(sum.to_bits(), 0x3fff_8000_0000_0000_0001);
        assert_eq!(
            mul(LongDouble::from_f64(3.0), LongDouble::from_f64(-0.5)).to_f64(),
            -1.5
        );
        assert_eq!(
            mul(LongDouble::from_f64(1e308), LongDouble::from_f64(10.0)).to_f64(),
            f64::INFINITY
        );
    }
}
