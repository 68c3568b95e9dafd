//! [`Datatype`]: predefined and derived datatypes, their bounds and constructors.
// `Error` has drop glue (some variants own strings), so building one eagerly with
// `ok_or` costs a construction and a drop on every successful call (callgrind showed
// it on the hot path): errors are built lazily here, whatever clippy thinks.
#![allow(clippy::unnecessary_lazy_evaluations)]

use crate::node::{self, BuildError, Node, MAX_DEPTH};
use crate::signature::{Sig, SigBuilder, SigSeq, Signature};
use crate::{Equivalence, TypeMap};
use rma_core::{BasicType, Error, Result};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Storage order of a multi-dimensional array, for [`Datatype::subarray`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Row-major: the last dimension varies fastest (MPI_ORDER_C).
    #[doc(alias = "MPI_ORDER_C")]
    C,
    /// Column-major: the first dimension varies fastest (MPI_ORDER_FORTRAN).
    #[doc(alias = "MPI_ORDER_FORTRAN")]
    Fortran,
}

/// Which basic types a type map holds: a join semilattice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Basics {
    None,
    One(BasicType),
    Mixed,
}

impl Basics {
    fn join(self, other: Basics) -> Basics {
        match (self, other) {
            (Basics::None, x) | (x, Basics::None) => x,
            (Basics::One(a), Basics::One(b)) if a == b => Basics::One(a),
            _ => Basics::Mixed,
        }
    }
}

/// An MPI datatype: a layout of basic elements relative to a buffer's start.
///
/// A `Datatype` is a cheap handle (an `Arc`); clones refer to the same datatype, so
/// committing one commits all of them, as with MPI handles. Two handles are equal
/// (`==`) when they refer to the same datatype; [`Datatype::basic`] hands out one
/// shared handle per basic type. Use [`Datatype::dup`] for a distinct copy.
///
/// Every constructor flattens the new type at once into a compact tree of byte runs
/// (shared with the types it was built from), so [`Datatype::type_map`] is cheap and
/// never proportional to the element count of a regular layout.
#[derive(Clone)]
#[doc(alias = "MPI_Datatype")]
pub struct Datatype(Arc<Inner>);

struct Inner {
    /// The constructor, for `Debug`.
    ctor: &'static str,
    predefined: Option<BasicType>,
    committed: AtomicBool,
    size: usize,
    elements: usize,
    lb: isize,
    ub: isize,
    extent: isize,
    true_lb: isize,
    true_ub: isize,
    /// Whether the type map has any entry (data or an explicit bound); an unbounded
    /// type (no entries) does not widen the bounds of the types built from it.
    bounded: bool,
    /// Whether the bounds come from explicit markers (resized, subarray) somewhere in
    /// the type; a struct holding such a type is not padded to alignment.
    sticky: bool,
    /// Largest alignment among the basic components.
    align: usize,
    /// Basic types present in the type map.
    map_basics: Basics,
    /// What `basic_type` reports: `map_basics`, or for a type without data, the basic
    /// types of the types it was built from.
    basics: Basics,
    /// The flattened type map of one instance.
    map: Node,
    sig: SigSeq,
}

impl Inner {
    fn duplicate(&self, ctor: &'static str) -> Inner {
        Inner {
            ctor,
            predefined: None,
            committed: AtomicBool::new(self.committed.load(Ordering::Acquire)),
            map: self.map.clone(),
            sig: self.sig.clone(),
            ..*self
        }
    }
}

fn build_err(e: BuildError, count: usize, what: &'static str, ctor: &'static str) -> Error {
    match e {
        BuildError::Overflow => Error::CountOverflow { count, what },
        BuildError::TooDeep => Error::datatype(format!(
            "{ctor}: the datatype would be nested more than {MAX_DEPTH} levels deep"
        )),
    }
}

/// Bounds `b` of one instance, widened over the positions of a nested repetition
/// (innermost level first) and moved by `disp`. Every count is at least 1.
fn spread(b: (isize, isize), levels: &[(usize, isize)], disp: isize) -> Option<(isize, isize)> {
    let (mut lo, mut hi) = b;
    for &(n, stride) in levels {
        let span = isize::try_from(n - 1).ok()?.checked_mul(stride)?;
        lo = lo.checked_add(span.min(0))?;
        hi = hi.checked_add(span.max(0))?;
    }
    Some((lo.checked_add(disp)?, hi.checked_add(disp)?))
}

fn join_bounds(a: Option<(isize, isize)>, b: (isize, isize)) -> Option<(isize, isize)> {
    Some(match a {
        None => b,
        Some((lo, hi)) => (lo.min(b.0), hi.max(b.1)),
    })
}

/// Accumulates the blocks of a derived type.
struct Parts {
    ctor: &'static str,
    /// Count reported by an overflow error.
    count: usize,
    what: &'static str,
    items: Vec<Node>,
    /// Bounds over every bounded block.
    marks: Option<(isize, isize)>,
    /// Bounds over the blocks with explicit bounds only; when present they are the
    /// type's bounds (MPI's LB/UB markers take precedence over data).
    sticky_marks: Option<(isize, isize)>,
    data: Option<(isize, isize)>,
    size: usize,
    elements: usize,
    sticky: bool,
    align: usize,
    map_basics: Basics,
    declared: Basics,
    sig: SigBuilder,
    /// The last block built: (child, levels, unshifted node), reused when the next
    /// block repeats the same child the same way (indexed_block, equal blocklens).
    last: Option<LastBlock>,
}

/// A block as built by [`Parts::add`] before it is moved to its displacement.
struct LastBlock {
    child: *const Inner,
    levels: Vec<(usize, isize)>,
    node: Node,
}

impl Parts {
    fn new(ctor: &'static str, count: usize, what: &'static str) -> Parts {
        Parts {
            ctor,
            count,
            what,
            items: Vec::new(),
            marks: None,
            sticky_marks: None,
            data: None,
            size: 0,
            elements: 0,
            sticky: false,
            align: 1,
            map_basics: Basics::None,
            declared: Basics::None,
            sig: SigBuilder::default(),
            last: None,
        }
    }

    fn overflow(&self) -> Error {
        Error::CountOverflow {
            count: self.count,
            what: self.what,
        }
    }

    fn err(&self, e: BuildError) -> Error {
        build_err(e, self.count, self.what, self.ctor)
    }

    /// Places the instances of `child` at `disp + sum(i_k * stride_k)` for
    /// `i_k < n_k`, over `levels = [(n_k, stride_k)]`, innermost first, in type-map
    /// order.
    fn add(&mut self, child: &Datatype, levels: &[(usize, isize)], disp: isize) -> Result<()> {
        let c = &*child.0;
        self.declared = self.declared.join(c.basics);
        let n = levels
            .iter()
            .try_fold(1usize, |a, &(k, _)| a.checked_mul(k))
            .ok_or_else(|| self.overflow())?;
        if n == 0 {
            return Ok(());
        }
        let key = Arc::as_ptr(&child.0);
        let block = match &self.last {
            Some(last) if last.child == key && last.levels == levels => last.node.clone(),
            _ => {
                let mut node = c.map.clone();
                for &(k, stride) in levels {
                    node = node::repeat(k, stride, &node).map_err(|e| self.err(e))?;
                }
                self.last = Some(LastBlock {
                    child: key,
                    levels: levels.to_vec(),
                    node: node.clone(),
                });
                node
            }
        };
        let placed = node::shift(&block, disp).map_err(|e| self.err(e))?;
        self.items.push(placed);
        if c.bounded {
            let b = spread((c.lb, c.ub), levels, disp).ok_or_else(|| self.overflow())?;
            self.marks = join_bounds(self.marks, b);
            if c.sticky {
                self.sticky = true;
                self.sticky_marks = join_bounds(self.sticky_marks, b);
            }
        }
        if c.size > 0 {
            let b = spread((c.true_lb, c.true_ub), levels, disp).ok_or_else(|| self.overflow())?;
            self.data = join_bounds(self.data, b);
            self.map_basics = self.map_basics.join(c.map_basics);
            self.align = self.align.max(c.align);
        }
        self.size = n
            .checked_mul(c.size)
            .and_then(|b| self.size.checked_add(b))
            .ok_or_else(|| self.overflow())?;
        self.elements = n
            .checked_mul(c.elements)
            .and_then(|e| self.elements.checked_add(e))
            .ok_or_else(|| self.overflow())?;
        self.sig.push_repeat(n as u128, &c.sig);
        Ok(())
    }

    /// The datatype; a struct (`pad`) without explicit bounds has its extent rounded
    /// up to its largest component alignment, like a C struct.
    fn finish(self, pad: bool) -> Result<Datatype> {
        let (count, what) = (self.count, self.what);
        let overflow = || Error::CountOverflow { count, what };
        let map = node::seq(self.items).map_err(|e| build_err(e, count, what, self.ctor))?;
        if map.info().is_some_and(|i| i.depth > MAX_DEPTH) {
            return Err(build_err(BuildError::TooDeep, count, what, self.ctor));
        }
        debug_assert_eq!(map.info().map(|i| (i.lo, i.hi)), self.data);
        debug_assert_eq!(map.size(), self.size);
        let marks = if self.sticky {
            self.sticky_marks
        } else {
            self.marks
        };
        let (lb, mut ub) = marks.unwrap_or((0, 0));
        if pad && !self.sticky && self.marks.is_some() {
            let align = isize::try_from(self.align).map_err(|_| overflow())?;
            let ext = ub.checked_sub(lb).ok_or_else(overflow)?;
            let rem = ext.rem_euclid(align);
            if rem != 0 {
                ub = ub.checked_add(align - rem).ok_or_else(overflow)?;
            }
        }
        let extent = ub.checked_sub(lb).ok_or_else(overflow)?;
        let (true_lb, true_ub) = self.data.unwrap_or((0, 0));
        true_ub.checked_sub(true_lb).ok_or_else(overflow)?;
        Ok(Datatype(Arc::new(Inner {
            ctor: self.ctor,
            predefined: None,
            committed: AtomicBool::new(false),
            size: self.size,
            elements: self.elements,
            lb,
            ub,
            extent,
            true_lb,
            true_ub,
            bounded: self.marks.is_some(),
            sticky: self.sticky,
            align: self.align,
            map_basics: self.map_basics,
            basics: if self.size > 0 {
                self.map_basics
            } else {
                self.declared
            },
            map,
            sig: self.sig.finish(),
        })))
    }
}

fn check_lengths(ctor: &'static str, a: (&str, usize), b: (&str, usize)) -> Result<()> {
    if a.1 == b.1 {
        Ok(())
    } else {
        Err(Error::arg(format!(
            "{ctor}: {} has {} entries but {} has {}",
            a.0, a.1, b.0, b.1
        )))
    }
}

/// `disp` extents of `old`, in bytes.
fn times_extent(what: &'static str, disp: isize, old: &Datatype) -> Result<isize> {
    disp.checked_mul(old.extent())
        .ok_or_else(|| Error::CountOverflow {
            count: disp.unsigned_abs(),
            what,
        })
}

fn predefined_table() -> &'static [Datatype] {
    static TABLE: OnceLock<Vec<Datatype>> = OnceLock::new();
    TABLE.get_or_init(|| {
        BasicType::ALL
            .iter()
            .map(|&b| {
                let size = b.size();
                let end = size as isize;
                Datatype(Arc::new(Inner {
                    ctor: b.name(),
                    predefined: Some(b),
                    committed: AtomicBool::new(true),
                    size,
                    elements: 1,
                    lb: 0,
                    ub: end,
                    extent: end,
                    true_lb: 0,
                    true_ub: end,
                    bounded: true,
                    sticky: false,
                    align: b.align(),
                    map_basics: Basics::One(b),
                    basics: Basics::One(b),
                    map: Node::Run { off: 0, len: size },
                    sig: Arc::from([Sig::Elems(b, 1)]),
                }))
            })
            .collect()
    })
}

impl Datatype {
    /// The predefined datatype of a basic type: committed, lower bound 0, extent equal
    /// to its size. Every call for the same basic type returns the same handle.
    pub fn basic(b: BasicType) -> Datatype {
        predefined_table()[b as usize].clone()
    }

    /// The datatype of a Rust type, `T::datatype()`.
    pub fn of<T: Equivalence>() -> Datatype {
        T::datatype()
    }

    /// `count` instances of `old`, each `old.extent()` bytes after the previous
    /// (MPI_Type_contiguous).
    #[doc(alias = "MPI_Type_contiguous")]
    pub fn contiguous(count: usize, old: &Datatype) -> Result<Datatype> {
        let mut p = Parts::new("contiguous", count, "contiguous elements");
        p.add(old, &[(count, old.extent())], 0)?;
        p.finish(false)
    }

    /// `count` blocks of `blocklen` instances of `old`, block starts `stride` extents
    /// of `old` apart (MPI_Type_vector). The stride may be zero or negative.
    #[doc(alias = "MPI_Type_vector")]
    pub fn vector(
        count: usize,
        blocklen: usize,
        stride: isize,
        old: &Datatype,
    ) -> Result<Datatype> {
        let stride_bytes = times_extent("vector stride", stride, old)?;
        Self::strided("vector", count, blocklen, stride_bytes, old)
    }

    /// `count` blocks of `blocklen` instances of `old`, block starts `stride_bytes`
    /// bytes apart (MPI_Type_create_hvector).
    #[doc(alias = "MPI_Type_create_hvector")]
    pub fn hvector(
        count: usize,
        blocklen: usize,
        stride_bytes: isize,
        old: &Datatype,
    ) -> Result<Datatype> {
        Self::strided("hvector", count, blocklen, stride_bytes, old)
    }

    fn strided(
        ctor: &'static str,
        count: usize,
        blocklen: usize,
        stride_bytes: isize,
        old: &Datatype,
    ) -> Result<Datatype> {
        let mut p = Parts::new(ctor, count, "vector blocks");
        p.add(old, &[(blocklen, old.extent()), (count, stride_bytes)], 0)?;
        p.finish(false)
    }

    /// Blocks of `blocklens[i]` instances of `old` at `disps[i]` extents of `old`
    /// (MPI_Type_indexed). The slices must have equal lengths (else class ARG).
    #[doc(alias = "MPI_Type_indexed")]
    pub fn indexed(blocklens: &[usize], disps: &[isize], old: &Datatype) -> Result<Datatype> {
        check_lengths(
            "indexed",
            ("blocklens", blocklens.len()),
            ("disps", disps.len()),
        )?;
        let bytes = disps
            .iter()
            .map(|&d| times_extent("indexed displacement", d, old))
            .collect::<Result<Vec<isize>>>()?;
        Self::blocks("indexed", blocklens.iter().copied(), &bytes, old)
    }

    /// Blocks of `blocklens[i]` instances of `old` at `disps_bytes[i]` bytes
    /// (MPI_Type_create_hindexed).
    #[doc(alias = "MPI_Type_create_hindexed")]
    pub fn hindexed(
        blocklens: &[usize],
        disps_bytes: &[isize],
        old: &Datatype,
    ) -> Result<Datatype> {
        check_lengths(
            "hindexed",
            ("blocklens", blocklens.len()),
            ("disps_bytes", disps_bytes.len()),
        )?;
        Self::blocks("hindexed", blocklens.iter().copied(), disps_bytes, old)
    }

    /// Blocks of `blocklen` instances of `old` at `disps[i]` extents of `old`
    /// (MPI_Type_create_indexed_block).
    #[doc(alias = "MPI_Type_create_indexed_block")]
    pub fn indexed_block(blocklen: usize, disps: &[isize], old: &Datatype) -> Result<Datatype> {
        let bytes = disps
            .iter()
            .map(|&d| times_extent("indexed displacement", d, old))
            .collect::<Result<Vec<isize>>>()?;
        Self::blocks("indexed_block", std::iter::repeat(blocklen), &bytes, old)
    }

    /// Blocks of `blocklen` instances of `old` at `disps_bytes[i]` bytes
    /// (MPI_Type_create_hindexed_block).
    #[doc(alias = "MPI_Type_create_hindexed_block")]
    pub fn hindexed_block(
        blocklen: usize,
        disps_bytes: &[isize],
        old: &Datatype,
    ) -> Result<Datatype> {
        Self::blocks(
            "hindexed_block",
            std::iter::repeat(blocklen),
            disps_bytes,
            old,
        )
    }

    fn blocks(
        ctor: &'static str,
        blocklens: impl Iterator<Item = usize>,
        disps_bytes: &[isize],
        old: &Datatype,
    ) -> Result<Datatype> {
        let mut p = Parts::new(ctor, disps_bytes.len(), "indexed blocks");
        p.items.reserve(disps_bytes.len());
        p.declared = p.declared.join(old.0.basics);
        for (bl, &d) in blocklens.zip(disps_bytes) {
            p.add(old, &[(bl, old.extent())], d)?;
        }
        p.finish(false)
    }

    /// Blocks of `blocklens[i]` instances of `types[i]` at `disps_bytes[i]` bytes
    /// (MPI_Type_create_struct). The three slices must have equal lengths (else class
    /// ARG).
    ///
    /// Unless a component carries explicit bounds (from [`Datatype::resized`] or
    /// [`Datatype::subarray`]), the extent is rounded up to the largest alignment of
    /// the basic components, as a C compiler pads a struct; so the struct of an `f64`
    /// at 0 and an `i32` at 8 has extent 16, and `count` of them step like a C array.
    #[doc(alias = "MPI_Type_create_struct")]
    pub fn structure(
        blocklens: &[usize],
        disps_bytes: &[isize],
        types: &[Datatype],
    ) -> Result<Datatype> {
        check_lengths(
            "structure",
            ("blocklens", blocklens.len()),
            ("disps_bytes", disps_bytes.len()),
        )?;
        check_lengths(
            "structure",
            ("blocklens", blocklens.len()),
            ("types", types.len()),
        )?;
        let mut p = Parts::new("structure", blocklens.len(), "struct blocks");
        for ((&bl, &d), t) in blocklens.iter().zip(disps_bytes).zip(types) {
            p.add(t, &[(bl, t.extent())], d)?;
        }
        p.finish(true)
    }

    /// The `subsizes` block starting at `starts` of an array of `sizes` elements of
    /// `old`, stored in `order` (MPI_Type_create_subarray).
    ///
    /// The type spans the whole array: lower bound 0 and extent
    /// `product(sizes) x old.extent()`, with data only at the block, so consecutive
    /// instances are consecutive arrays. Requires at least one dimension, slices of
    /// equal lengths, and `starts[i] + subsizes[i] <= sizes[i]` (else class ARG).
    #[doc(alias = "MPI_Type_create_subarray")]
    pub fn subarray(
        sizes: &[usize],
        subsizes: &[usize],
        starts: &[usize],
        order: Order,
        old: &Datatype,
    ) -> Result<Datatype> {
        const CTOR: &str = "subarray";
        if sizes.is_empty() {
            return Err(Error::arg("subarray: needs at least one dimension"));
        }
        check_lengths(CTOR, ("sizes", sizes.len()), ("subsizes", subsizes.len()))?;
        check_lengths(CTOR, ("sizes", sizes.len()), ("starts", starts.len()))?;
        for (d, ((&size, &sub), &start)) in sizes.iter().zip(subsizes).zip(starts).enumerate() {
            if start.checked_add(sub).is_none_or(|end| end > size) {
                return Err(Error::arg(format!(
                    "subarray: dimension {d}: start {start} + subsize {sub} exceeds size {size}; start + subsize must be at most size"
                )));
            }
        }
        let overflow = || Error::CountOverflow {
            count: sizes.iter().fold(1usize, |a, &s| a.saturating_mul(s)),
            what: "subarray elements",
        };
        // Dimensions from fastest-varying to slowest.
        let dims: Vec<usize> = match order {
            Order::C => (0..sizes.len()).rev().collect(),
            Order::Fortran => (0..sizes.len()).collect(),
        };
        let mut levels = Vec::with_capacity(dims.len());
        let mut stride = old.extent();
        let mut disp: isize = 0;
        for &d in &dims {
            let start = isize::try_from(starts[d]).map_err(|_| overflow())?;
            disp = start
                .checked_mul(stride)
                .and_then(|s| disp.checked_add(s))
                .ok_or_else(overflow)?;
            levels.push((subsizes[d], stride));
            stride = isize::try_from(sizes[d])
                .ok()
                .and_then(|s| s.checked_mul(stride))
                .ok_or_else(overflow)?;
        }
        let mut p = Parts::new(
            CTOR,
            sizes.iter().fold(1usize, |a, &s| a.saturating_mul(s)),
            "subarray elements",
        );
        p.add(old, &levels, disp)?;
        let t = p.finish(false)?;
        // `stride` is now product(sizes) x old extent: the whole array.
        t.with_bounds(CTOR, 0, stride)
    }

    /// `old` with lower bound `lb` and extent `extent` (MPI_Type_create_resized); the
    /// data is unchanged. These bounds are explicit: they propagate to the types built
    /// from this one, and a struct holding it is not padded.
    #[doc(alias = "MPI_Type_create_resized")]
    pub fn resized(old: &Datatype, lb: isize, extent: isize) -> Result<Datatype> {
        old.with_bounds("resized", lb, extent)
    }

    fn with_bounds(&self, ctor: &'static str, lb: isize, extent: isize) -> Result<Datatype> {
        let ub = lb.checked_add(extent).ok_or_else(|| Error::CountOverflow {
            count: extent.unsigned_abs(),
            what: "bytes of resized extent",
        })?;
        let mut inner = self.0.duplicate(ctor);
        inner.committed = AtomicBool::new(false);
        inner.lb = lb;
        inner.ub = ub;
        inner.extent = extent;
        inner.bounded = true;
        inner.sticky = true;
        Ok(Datatype(Arc::new(inner)))
    }

    /// A new datatype with the same type map (MPI_Type_dup). A duplicate of a
    /// committed type is committed; a duplicate of a predefined type is derived
    /// ([`Datatype::predefined`] is `None`).
    #[doc(alias = "MPI_Type_dup")]
    pub fn dup(&self) -> Datatype {
        Datatype(Arc::new(self.0.duplicate("dup")))
    }

    /// Commits the datatype (MPI_Type_commit), so RMA calls accept it. Idempotent;
    /// predefined types are always committed. Commits every clone of this handle.
    #[doc(alias = "MPI_Type_commit")]
    pub fn commit(&mut self) {
        self.0.committed.store(true, Ordering::Release);
    }

    /// Whether the datatype has been committed.
    pub fn is_committed(&self) -> bool {
        self.0.committed.load(Ordering::Acquire)
    }

    /// `Ok` if committed, else [`Error::InvalidDatatype`] (class TYPE).
    pub fn check_committed(&self) -> Result<()> {
        if self.is_committed() {
            Ok(())
        } else {
            Err(Error::datatype(format!(
                "{self:?} is not committed; call commit() on it before use in a call"
            )))
        }
    }

    /// Bytes of data in one instance (the sum of its basic elements' sizes).
    #[doc(alias = "MPI_Type_size")]
    pub fn size(&self) -> usize {
        self.0.size
    }

    /// Lower bound (MPI semantics): the lowest `displacement + lb` over the placed
    /// instances of the old types; if some of them carry explicit bounds (from
    /// [`Datatype::resized`] or [`Datatype::subarray`]), over those only, as MPI's
    /// LB markers take precedence. 0 for a type without entries.
    #[doc(alias = "MPI_Type_get_extent")]
    pub fn lb(&self) -> isize {
        self.0.lb
    }

    /// Upper bound: `lb() + extent()`; computed like [`Datatype::lb`] from the
    /// instances' upper bounds, then for a struct padded to alignment.
    pub fn ub(&self) -> isize {
        self.0.ub
    }

    /// Extent: `ub() - lb()`, the step between consecutive instances.
    #[doc(alias = "MPI_Type_get_extent")]
    pub fn extent(&self) -> isize {
        self.0.extent
    }

    /// The lowest byte offset holding data, ignoring explicit bounds (0 if empty).
    #[doc(alias = "MPI_Type_get_true_extent")]
    pub fn true_lb(&self) -> isize {
        self.0.true_lb
    }

    /// The span from the lowest to one past the highest byte holding data (0 if
    /// empty).
    #[doc(alias = "MPI_Type_get_true_extent")]
    pub fn true_extent(&self) -> isize {
        // Checked when the type was built.
        self.0.true_ub.wrapping_sub(self.0.true_lb)
    }

    /// `Some(b)` only for [`Datatype::basic`]`(b)`; every derived type (a `dup` or a
    /// `contiguous(1, ..)` of a predefined type included) gives `None`.
    pub fn predefined(&self) -> Option<BasicType> {
        self.0.predefined
    }

    /// `Some(b)` if every basic element of the type is a `b` (a pair type counts as
    /// one basic element). For a type without data (zero counts), the basic type the
    /// constructors were given, if they agree; `None` for a mix.
    pub fn basic_type(&self) -> Option<BasicType> {
        match self.0.basics {
            Basics::One(b) => Some(b),
            _ => None,
        }
    }

    /// Number of basic elements in one instance.
    pub fn element_count(&self) -> usize {
        self.0.elements
    }

    /// The flattened layout of `count` consecutive instances, instance `i` at
    /// `i x extent()` bytes. Errors with [`Error::CountOverflow`] if the layout's span
    /// leaves the address space.
    pub fn type_map(&self, count: usize) -> Result<TypeMap> {
        node::repeat(count, self.0.extent, &self.0.map)
            .map(TypeMap::new)
            .map_err(|e| build_err(e, count, "datatype instances", self.0.ctor))
    }

    /// The type signature of `count` instances.
    pub fn signature(&self, count: usize) -> Signature {
        Signature::new(count, &self.0.sig)
    }
}

impl PartialEq for Datatype {
    fn eq(&self, other: &Datatype) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Datatype {}

impl fmt::Debug for Datatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &*self.0;
        match i.predefined {
            Some(b) => write!(f, "Datatype::basic({b})"),
            None => write!(
                f,
                "Datatype::{}(size {}, lb {}, extent {})",
                i.ctor, i.size, i.lb, i.extent
            ),
        }
    }
}
