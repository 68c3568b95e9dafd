//! The arguments of the MPI-faithful calls: an origin or result buffer with its count
//! and datatype, and a target description.
// `Error` has drop glue (some variants own strings), so building one eagerly with
// `ok_or` costs a construction and a drop on every successful call (callgrind showed
// it on the hot path): errors are built lazily here, whatever clippy thinks.
#![allow(clippy::unnecessary_lazy_evaluations)]

use rma_core::{BasicType, Disp, Error, Layout, Rank, Result, Run};
use rma_datatype::{Datatype, Equivalence, TypeMap};
use std::borrow::Cow;
use std::sync::OnceLock;

/// The committed predefined datatype of `b`, shared (no allocation per call).
pub(crate) fn basic_datatype(b: BasicType) -> &'static Datatype {
    static TABLE: OnceLock<Vec<Datatype>> = OnceLock::new();
    &TABLE.get_or_init(|| BasicType::ALL.iter().map(|b| Datatype::basic(*b)).collect())[b as usize]
}

/// A datatype argument: borrowed, or made for a Rust type.
#[derive(Debug, Clone)]
pub(crate) enum Dt<'a> {
    Ref(&'a Datatype),
    Owned(Datatype),
}

impl Dt<'_> {
    pub(crate) fn get(&self) -> &Datatype {
        match self {
            Dt::Ref(d) => d,
            Dt::Owned(d) => d,
        }
    }

    pub(crate) fn of<T: Equivalence>() -> Dt<'static> {
        match T::BASIC {
            Some(b) => Dt::Ref(basic_datatype(b)),
            None => Dt::Owned(T::datatype()),
        }
    }
}

/// An origin buffer: bytes, a count and a datatype (MPI's origin_addr, origin_count,
/// origin_datatype). The datatype's offsets are relative to the start of `data`.
#[derive(Debug, Clone)]
pub struct Buffer<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) count: usize,
    pub(crate) dt: Dt<'a>,
}

impl<'a> Buffer<'a> {
    /// `count` instances of `datatype` laid over `data`.
    pub fn new(data: &'a [u8], count: usize, datatype: &'a Datatype) -> Buffer<'a> {
        Buffer {
            data,
            count,
            dt: Dt::Ref(datatype),
        }
    }

    /// `count` instances of `datatype` laid over a typed slice (a derived layout over
    /// `values`, whose basic type should match `T`'s).
    pub fn typed<T: Equivalence>(
        values: &'a [T],
        count: usize,
        datatype: &'a Datatype,
    ) -> Buffer<'a> {
        Buffer::new(rma_datatype::bytes_of(values), count, datatype)
    }

    /// All of `values`, contiguous.
    pub fn of<T: Equivalence>(values: &'a [T]) -> Buffer<'a> {
        Buffer {
            data: rma_datatype::bytes_of(values),
            count: values.len(),
            dt: Dt::of::<T>(),
        }
    }
}

/// A result buffer (MPI's result_addr, result_count, result_datatype).
#[derive(Debug)]
pub struct BufferMut<'a> {
    pub(crate) data: &'a mut [u8],
    pub(crate) count: usize,
    pub(crate) dt: Dt<'a>,
}

impl<'a> BufferMut<'a> {
    /// `count` instances of `datatype` laid over `data`.
    pub fn new(data: &'a mut [u8], count: usize, datatype: &'a Datatype) -> BufferMut<'a> {
        BufferMut {
            data,
            count,
            dt: Dt::Ref(datatype),
        }
    }

    /// `count` instances of `datatype` laid over a typed slice whose every bit pattern
    /// is valid (not `bool`: use a byte buffer and convert).
    pub fn typed<T: Equivalence>(
        values: &'a mut [T],
        count: usize,
        datatype: &'a Datatype,
    ) -> Result<BufferMut<'a>> {
        let data = rma_datatype::bytes_of_mut(values).ok_or_else(|| {
            Error::arg(format!(
                "{} cannot receive arbitrary bytes; use a byte buffer",
                std::any::type_name::<T>()
            ))
        })?;
        Ok(BufferMut::new(data, count, datatype))
    }
}

/// Where a call lands: target rank, displacement (in the target's disp_unit), count
/// and datatype (MPI's target_rank, target_disp, target_count, target_datatype).
#[derive(Debug, Clone)]
pub struct Target<'a> {
    pub(crate) rank: Rank,
    pub(crate) disp: Disp,
    pub(crate) count: usize,
    pub(crate) dt: Dt<'a>,
}

impl<'a> Target<'a> {
    /// `count` instances of `datatype` at displacement `disp` of `rank`'s window.
    pub fn new(
        rank: impl Into<Rank>,
        disp: Disp,
        count: usize,
        datatype: &'a Datatype,
    ) -> Target<'a> {
        let rank: Rank = rank.into();
        Target {
            rank,
            disp,
            count,
            dt: Dt::Ref(datatype),
        }
    }

    /// `count` contiguous elements of `T` at displacement `disp` of `rank`'s window.
    pub fn of<T: Equivalence>(rank: impl Into<Rank>, disp: Disp, count: usize) -> Target<'static> {
        let rank: Rank = rank.into();
        Target {
            rank,
            disp,
            count,
            dt: Dt::of::<T>(),
        }
    }
}

/// A resolved layout: one contiguous run, or a flattened type map.
pub(crate) enum Resolved {
    Contig(usize),
    Map(TypeMap),
}

impl Resolved {
    /// The layout of `count` instances of `dt`.
    pub(crate) fn of(dt: &Datatype, count: usize) -> Result<Resolved> {
        if let Some(b) = dt.predefined() {
            return b
                .size()
                .checked_mul(count)
                .map(Resolved::Contig)
                .ok_or_else(|| Error::CountOverflow {
                    count,
                    what: "elements",
                });
        }
        let map = dt.type_map(count)?;
        Ok(match map.as_contiguous() {
            Some(n) => Resolved::Contig(n),
            None => Resolved::Map(map),
        })
    }

    /// The span `(lo, hi)` of the data, if any.
    pub(crate) fn span(&self) -> Option<(isize, isize)> {
        match self {
            Resolved::Contig(0) => None,
            Resolved::Contig(n) => Some((0, *n as isize)),
            Resolved::Map(m) => m.span(),
        }
    }

    /// Bytes of the origin buffer in type-map order: borrowed when contiguous.
    pub(crate) fn packed<'b>(&self, which: &'static str, data: &'b [u8]) -> Result<Cow<'b, [u8]>> {
        match self {
            Resolved::Contig(n) => {
                data.get(..*n)
                    .map(Cow::Borrowed)
                    .ok_or_else(|| Error::BufferTooSmall {
                        which,
                        needed: *n,
                        got: data.len(),
                    })
            }
            Resolved::Map(m) => {
                m.check_buffer(which, data.len())?;
                let mut out = vec![0u8; m.size()];
                m.pack(data, &mut out)?;
                Ok(Cow::Owned(out))
            }
        }
    }

    /// Checks that a result buffer of `len` bytes holds this layout.
    pub(crate) fn check_result(&self, which: &'static str, len: usize) -> Result<()> {
        match self {
            Resolved::Contig(n) if *n > len => Err(Error::BufferTooSmall {
                which,
                needed: *n,
                got: len,
            }),
            Resolved::Contig(_) => Ok(()),
            Resolved::Map(m) => m.check_buffer(which, len),
        }
    }

    /// Scatters packed bytes into a result buffer (already checked).
    pub(crate) fn unpack(&self, packed: &[u8], into: &mut [u8]) -> Result<()> {
        match self {
            Resolved::Contig(n) => {
                into[..*n].copy_from_slice(&packed[..*n]);
                Ok(())
            }
            Resolved::Map(m) => m.unpack(packed, into),
        }
    }
}

impl Layout for Resolved {
    fn size(&self) -> usize {
        match self {
            Resolved::Contig(n) => *n,
            Resolved::Map(m) => m.size(),
        }
    }

    fn for_each_run(&self, f: &mut dyn FnMut(Run)) {
        match self {
            Resolved::Contig(0) => {}
            Resolved::Contig(n) => f(Run { offset: 0, len: *n }),
            Resolved::Map(m) => m.for_each_run(f),
        }
    }

    fn as_contiguous(&self) -> Option<usize> {
        match self {
            Resolved::Contig(n) => Some(*n),
            Resolved::Map(m) => m.as_contiguous(),
        }
    }

    fn as_strided(&self) -> Option<rma_core::Strided> {
        match self {
            Resolved::Contig(_) => None,
            Resolved::Map(m) => m.as_strided(),
        }
    }
}
