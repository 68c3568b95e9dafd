//! MPI reduction operations for rma: which op applies to which type, and kernels that
//! apply them, plainly or element-wise atomically.
//!
//! - [`check`] and [`check_cas_type`]: the op x type table of docs/semantics.md rules 1, 2
//!   and 7, returning errors of class OP or TYPE.
//! - [`Element`]: the scalar meaning of every op on every basic type, the reference
//!   model the other kernels are tested against.
//! - [`apply`], [`apply_raw`], [`apply_bytes`]: non-atomic apply over contiguous
//!   elements, one monomorphic loop per op so the compiler vectorises it — for local
//!   buffers only, never for memory another rank can reach.
//! - [`shared`]: copies and element-wise apply over window memory, where every access
//!   is an atomic on an aligned 8-byte word, so that nothing another rank does at the
//!   same time is a data race under Rust's memory model (see the module docs).
//! - [`atomic`]: element-wise atomic fetch-and-op, compare-and-swap, accumulate and
//!   get-accumulate over raw pointers into shared memory, with a strategy that depends
//!   on the basic type alone (see the module docs).
//!
//! Stated semantics beyond the MPI text:
//! - Integer SUM and PROD wrap on overflow (two's complement), as C compilers do in
//!   practice for MPI implementations.
//! - MAX and MIN on floating point propagate NaN: if either operand is NaN the result
//!   is NaN (the target's if it is one). Between equal values the target keeps its own.
//! - MAXLOC and MINLOC: on equal values the smaller index wins (docs/semantics.md rule 5);
//!   values that compare unordered keep the target's value, with the smaller index.
//! - Logical ops on integers treat non-zero as true and produce 0 or 1.
//! - `long double` (x86-64's x87 extended format) SUM and PROD run on the x87 unit,
//!   rounded as C rounds them; on other targets they are outside the op table (class
//!   OP), while REPLACE, NO_OP, MAX, MIN and the pair's MAXLOC/MINLOC work everywhere.
//!
//! Unsafe code here is limited to the raw-pointer kernels, each an `unsafe fn` with a
//! `# Safety` section; callers (rma-shm) check bounds and alignment once and call them.
//!
//! # Nomenclature
//! - **origin** value: the operand supplied by the calling rank.
//! - **target** value: the element in window memory the op combines into.
//! - **element**: one value of a basic type (a MAXLOC pair counts as one element).

mod apply;
pub mod atomic;
mod check;
pub mod direct;
mod element;
pub mod plain;
mod shadow;
pub mod shared;
mod x87;

pub use apply::{apply, apply_bytes, apply_raw, apply_strided_raw};
pub use check::{check, check_cas_type, op_allowed_in, op_defined_on};
pub use direct::{flush_fence, Direct};
pub use element::Element;
pub use plain::Plain;
pub use rma_core::{BasicType, Op, RmaCall};
pub use shadow::Shadow;

#[doc(hidden)]
pub mod __private {
    pub use rma_core::BasicType;
    pub use rma_datatype::{
        Byte, Complex32, Complex64, DoubleInt, FloatInt, LongDouble, LongDoubleInt, LongInt,
        ShortInt, TwoInt,
    };
}
