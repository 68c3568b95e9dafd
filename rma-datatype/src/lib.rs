//! MPI derived datatypes for rma.
//!
//! A one-sided call names its data as (buffer, count, datatype) at the origin and
//! (displacement, count, datatype) at the target. This crate provides the datatypes:
//! the predefined basic types (MAXLOC/MINLOC pair types included), the derived-type
//! constructors (contiguous, vector, hvector, indexed, hindexed, indexed_block,
//! hindexed_block, struct, subarray, resized, dup), commit, size and bounds, the
//! flattening of `count` instances into a [`TypeMap`] of byte runs that transports
//! walk (it implements [`rma_core::Layout`]), type-signature matching, the
//! accumulate-family type rules, overlap and window-fit checks, pack and unpack, and
//! [`Equivalence`], which ties Rust types to datatypes.
//!
//! ```
//! use rma_datatype::{BasicType, Datatype};
//!
//! // Every other f64 of a 1000-element row: 8000 bytes of data spread over 15992.
//! let f64_t = Datatype::basic(BasicType::F64);
//! let mut column = Datatype::vector(1000, 1, 2, &f64_t)?;
//! column.commit();
//! assert_eq!((column.size(), column.extent()), (8000, 15992));
//! let map = column.type_map(1)?;
//! assert_eq!(map.run_count(), 1000);
//! assert!(map.node_count() <= 2); // one repeat over one run, not 1000 entries
//! map.check_no_overlap()?;
//! // Signatures compare element sequences, not layouts.
//! rma_datatype::check_signatures("put", (&column, 1), (&f64_t, 1000))?;
//! # Ok::<(), rma_core::Error>(())
//! ```
//!
//! Design choices:
//! - **Flatten once, compactly.** Each constructor flattens the new type into a small
//!   tree of byte runs (runs, repeats with a stride, sequences) that shares its
//!   children's trees through `Arc`s and normalises as it goes (back-to-back copies of
//!   a run become one run; a repeat of a repeat that continues its progression becomes
//!   one repeat). A regular layout costs O(nesting depth) memory however many elements
//!   it has; only explicit index lists cost O(list length).
//! - **Summaries instead of walks.** Every tree node caches its size, merged run count,
//!   span and first/last byte, so bounds, run counts, window-fit and most overlap
//!   checks never enumerate the runs; overlap falls back to sorting only for the
//!   subtrees whose pieces interleave.
//! - **Checked arithmetic.** Every size, bound and offset is computed with checked
//!   arithmetic when a type is built; an overflow is an [`Error::CountOverflow`]
//!   (class COUNT), never a wrapped offset. Walkers may then wrap intermediate sums
//!   safely (see `node.rs`).
//! - **MPI bounds semantics.** `lb`/`ub` follow MPI: the extremes of the entries,
//!   with explicit bounds set by [`Datatype::resized`] (and [`Datatype::subarray`])
//!   taking precedence and propagating to enclosing types; a struct's extent is padded
//!   to its largest component alignment unless such explicit bounds are present.
//!   `true_lb`/`true_extent` always describe the data bytes.
//! - **Errors are values.** Bad constructor arguments are [`rma_core::Error`]s of
//!   class ARG, TYPE or COUNT, never panics.
//! - **`unsafe` in one place.** Only the `equivalence` module (byte views of
//!   `Equivalence` slices) uses `unsafe`, each block argued from the trait's
//!   contract. The rest of the crate cannot (`deny(unsafe_code)`, which that module
//!   alone lifts; `forbid` would not allow the exception).
//!
//! # Nomenclature
//! - **basic type**: a predefined element type ([`BasicType`]); a MAXLOC pair such as
//!   `DoubleInt` is one basic type.
//! - **type map**: the sequence of (basic type, byte displacement) entries a datatype
//!   describes; flattened to byte runs it is a [`TypeMap`].
//! - **type signature**: the type map's sequence of basic types alone ([`Signature`]).
//!   Put/get need equal signatures at origin and target; the accumulate family also
//!   needs a single basic type.
//! - **size**: bytes of data in one instance. **extent**: `ub - lb`, the step between
//!   consecutive instances of a datatype. **true extent**: the span of the data bytes.
//! - **displacement**: a byte offset (the constructors named `h...` and `structure`
//!   take bytes; `vector`, `indexed` and `indexed_block` count in extents of the old
//!   type). The window's **displacement unit** scales the *target displacement* of an
//!   RMA call, not these.
//! - **origin** / **target**: the rank issuing a call / the rank whose window it
//!   reaches; the target datatype must not overlap itself and must fit in the window.
//! - **commit**: marks a datatype ready for communication; RMA calls refuse
//!   uncommitted types.
#![deny(unsafe_code)]
#![doc(test(attr(deny(warnings))))]

mod datatype;
mod equivalence;
mod long_double;
mod node;
mod signature;
mod typemap;

pub use datatype::{Datatype, Order};
pub use equivalence::{
    bytes_of, bytes_of_mut, copy_from_bytes, copy_to_bytes, Byte, Complex32, Complex64, DoubleInt,
    Equivalence, FloatInt, LongDouble, LongDoubleInt, LongInt, ShortInt, TwoInt,
};
pub use rma_core::BasicType;
/// `#[derive(Equivalence)]` for a `#[repr(C)]` struct whose fields all have one type
/// (the `rma-derive` crate; its generated code names `rma_win` unless the struct says
/// `#[equivalence(crate = "rma_datatype")]`).
pub use rma_derive::Equivalence;
pub use signature::{check_accumulate_types, check_signatures, Signature};
pub use typemap::TypeMap;

#[doc(no_inline)]
pub use rma_core::Error;
