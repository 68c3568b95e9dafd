//! The compact flattened form of a type map: a small tree of byte runs.
//!
//! A [`Node`] describes a sequence of byte runs in type-map order:
//!
//! - `Run { off, len }`: `len > 0` bytes at `off`;
//! - `Rep { off, rep }`: `rep.count >= 2` copies of `rep.body`, copy `i` shifted by
//!   `off + i * rep.stride`;
//! - `Seq { off, seq }`: the items of `seq` one after the other, all shifted by `off`;
//! - `Empty`: no bytes.
//!
//! Every node that is not a `Run` keeps its children behind an `Arc`, so shifting a
//! node (which every constructor does to place a child at a displacement) is O(1) and
//! a child type map is shared, never copied, by the types built from it. Each `Rep` and
//! `Seq` caches an [`Info`] summary (size, merged run count, first and last byte, span,
//! node count, depth), so the questions asked of a whole map are answered without
//! walking it.
//!
//! # Arithmetic
//!
//! Nodes are only built through [`run`], [`shift`], [`repeat`] and [`seq`], which
//! compute every summary with checked arithmetic and refuse a node whose span does
//! not fit in `isize`. Every byte offset the tree can produce lies inside that span,
//! so the walkers below may use wrapping arithmetic on the partial sums (a base
//! shifted by a stride multiple may leave `isize` on the way, but the final offset,
//! computed modulo 2^N, is exact because its true value fits).

use rma_core::Run;
use std::sync::Arc;

/// The deepest node tree a datatype constructor may produce. Walkers recurse over
/// depth, so this bounds their stack use; a type nested deeper is refused.
pub(crate) const MAX_DEPTH: u32 = 200;

/// The deepest tree the builders produce at all: a datatype's tree plus the levels
/// [`crate::Datatype::type_map`] adds on top.
const HARD_DEPTH: u32 = MAX_DEPTH + 8;

/// Why a node could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BuildError {
    /// A size, offset or count left its integer type.
    Overflow,
    /// The tree would be deeper than the builders allow.
    TooDeep,
}

type Built = Result<Node, BuildError>;

/// Summary of a non-empty node, offsets relative to the node's own origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Info {
    /// Bytes described (sum of run lengths).
    pub(crate) size: usize,
    /// Runs after merging adjacent ones.
    pub(crate) runs: u64,
    /// Start of the first run in type-map order.
    pub(crate) first: isize,
    /// End of the last run in type-map order.
    pub(crate) last_end: isize,
    /// Lowest byte offset covered.
    pub(crate) lo: isize,
    /// One past the highest byte offset covered.
    pub(crate) hi: isize,
    /// Logical node count (shared subtrees counted once per use).
    pub(crate) nodes: usize,
    /// Depth of the tree (a run has depth 1).
    pub(crate) depth: u32,
}

impl Info {
    /// The same summary moved by `d` bytes (already validated at construction).
    fn shifted(self, d: isize) -> Info {
        Info {
            first: self.first.wrapping_add(d),
            last_end: self.last_end.wrapping_add(d),
            lo: self.lo.wrapping_add(d),
            hi: self.hi.wrapping_add(d),
            ..self
        }
    }
}

/// A flattened type map (see the module docs).
#[derive(Clone, Debug)]
pub(crate) enum Node {
    /// No bytes.
    Empty,
    /// `len > 0` bytes at `off`.
    Run { off: isize, len: usize },
    /// `rep.count >= 2` copies of `rep.body`.
    Rep { off: isize, rep: Arc<Rep> },
    /// At least two non-empty items.
    Seq { off: isize, seq: Arc<Seq> },
}

/// The shared part of a [`Node::Rep`].
#[derive(Debug)]
pub(crate) struct Rep {
    pub(crate) count: usize,
    pub(crate) stride: isize,
    pub(crate) body: Node,
    info: Info,
}

/// The shared part of a [`Node::Seq`].
#[derive(Debug)]
pub(crate) struct Seq {
    pub(crate) items: Box<[Node]>,
    info: Info,
}

fn add(a: isize, b: isize) -> Result<isize, BuildError> {
    a.checked_add(b).ok_or(BuildError::Overflow)
}

fn to_isize(n: usize) -> Result<isize, BuildError> {
    isize::try_from(n).map_err(|_| BuildError::Overflow)
}

impl Node {
    /// The node's summary in its parent's coordinates; `None` if empty.
    pub(crate) fn info(&self) -> Option<Info> {
        match self {
            Node::Empty => None,
            Node::Run { off, len } => Some(Info {
                size: *len,
                runs: 1,
                first: *off,
                // Validated by `run`.
                last_end: off.wrapping_add(*len as isize),
                lo: *off,
                hi: off.wrapping_add(*len as isize),
                nodes: 1,
                depth: 1,
            }),
            Node::Rep { off, rep } => Some(rep.info.shifted(*off)),
            Node::Seq { off, seq } => Some(seq.info.shifted(*off)),
        }
    }

    /// Bytes described.
    pub(crate) fn size(&self) -> usize {
        self.info().map_or(0, |i| i.size)
    }

    /// Whether the node describes no bytes.
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Node::Empty)
    }
}

/// `len` bytes at `off` (empty if `len == 0`).
pub(crate) fn run(off: isize, len: usize) -> Built {
    if len == 0 {
        return Ok(Node::Empty);
    }
    add(off, to_isize(len)?)?;
    Ok(Node::Run { off, len })
}

/// `node` moved by `d` bytes.
pub(crate) fn shift(node: &Node, d: isize) -> Built {
    if d == 0 {
        return Ok(node.clone());
    }
    Ok(match node {
        Node::Empty => Node::Empty,
        Node::Run { off, len } => return run(add(*off, d)?, *len),
        Node::Rep { off, rep } => {
            let off = add(*off, d)?;
            add(rep.info.lo, off)?;
            add(rep.info.hi, off)?;
            Node::Rep {
                off,
                rep: rep.clone(),
            }
        }
        Node::Seq { off, seq } => {
            let off = add(*off, d)?;
            add(seq.info.lo, off)?;
            add(seq.info.hi, off)?;
            Node::Seq {
                off,
                seq: seq.clone(),
            }
        }
    })
}

/// `count` copies of `body`, copy `i` moved by `i * stride` bytes.
pub(crate) fn repeat(count: usize, stride: isize, body: &Node) -> Built {
    if count == 0 || body.is_empty() {
        return Ok(Node::Empty);
    }
    if count == 1 {
        return Ok(body.clone());
    }
    match body {
        // Back-to-back copies of one run are one longer run.
        Node::Run { off, len } if to_isize(*len) == Ok(stride) => {
            return run(*off, len.checked_mul(count).ok_or(BuildError::Overflow)?);
        }
        // Copies of a repeat that each continue the inner progression are one repeat.
        Node::Rep { off, rep }
            if to_isize(rep.count)
                .ok()
                .and_then(|c| c.checked_mul(rep.stride))
                == Some(stride) =>
        {
            let n = count.checked_mul(rep.count).ok_or(BuildError::Overflow)?;
            return shift(&repeat(n, rep.stride, &rep.body)?, *off);
        }
        _ => {}
    }
    let Some(b) = body.info() else {
        return Ok(Node::Empty);
    };
    let span = to_isize(count - 1)?
        .checked_mul(stride)
        .ok_or(BuildError::Overflow)?;
    let size = b.size.checked_mul(count).ok_or(BuildError::Overflow)?;
    let joins = if b.first.checked_add(stride) == Some(b.last_end) {
        count as u64 - 1
    } else {
        0
    };
    let runs = b
        .runs
        .checked_mul(count as u64)
        .ok_or(BuildError::Overflow)?
        - joins;
    let depth = b.depth + 1;
    if depth > HARD_DEPTH {
        return Err(BuildError::TooDeep);
    }
    let info = Info {
        size,
        runs,
        first: b.first,
        last_end: add(b.last_end, span)?,
        lo: add(b.lo, span.min(0))?,
        hi: add(b.hi, span.max(0))?,
        nodes: b.nodes.saturating_add(1),
        depth,
    };
    Ok(Node::Rep {
        off: 0,
        rep: Arc::new(Rep {
            count,
            stride,
            body: body.clone(),
            info,
        }),
    })
}

/// Child sequences this short are inlined into their parent, so that their runs can
/// merge with the neighbours'; longer ones stay shared.
const INLINE_SEQ: usize = 16;

/// The items one after the other.
pub(crate) fn seq(items: Vec<Node>) -> Built {
    let mut out: Vec<Node> = Vec::with_capacity(items.len());
    fn push(out: &mut Vec<Node>, node: Node) -> Result<(), BuildError> {
        match (out.last_mut(), &node) {
            (_, Node::Empty) => {}
            (Some(Node::Run { off, len }), Node::Run { off: o2, len: l2 })
                if off.checked_add(*len as isize) == Some(*o2) =>
            {
                *len = len.checked_add(*l2).ok_or(BuildError::Overflow)?;
                to_isize(*len)?;
            }
            _ => out.push(node),
        }
        Ok(())
    }
    for node in items {
        match &node {
            Node::Seq { off, seq } if seq.items.len() <= INLINE_SEQ => {
                for item in seq.items.iter() {
                    push(&mut out, shift(item, *off)?)?;
                }
            }
            _ => push(&mut out, node)?,
        }
    }
    match out.len() {
        0 => return Ok(Node::Empty),
        1 => return Ok(out.pop().unwrap_or(Node::Empty)),
        _ => {}
    }
    let mut acc: Option<Info> = None;
    for item in &out {
        let Some(i) = item.info() else { continue };
        acc = Some(match acc {
            None => Info {
                nodes: i.nodes.saturating_add(1),
                depth: i.depth + 1,
                ..i
            },
            Some(a) => Info {
                size: a.size.checked_add(i.size).ok_or(BuildError::Overflow)?,
                runs: a.runs + i.runs - u64::from(a.last_end == i.first),
                first: a.first,
                last_end: i.last_end,
                lo: a.lo.min(i.lo),
                hi: a.hi.max(i.hi),
                nodes: a.nodes.saturating_add(i.nodes),
                depth: a.depth.max(i.depth + 1),
            },
        });
    }
    let Some(info) = acc else {
        return Ok(Node::Empty);
    };
    if info.depth > HARD_DEPTH {
        return Err(BuildError::TooDeep);
    }
    Ok(Node::Seq {
        off: 0,
        seq: Arc::new(Seq {
            items: out.into_boxed_slice(),
            info,
        }),
    })
}

// ---------------------------------------------------------------------------------
// Walking

enum Frame<'a> {
    Items {
        items: &'a [Node],
        base: isize,
        next: usize,
    },
    Rep {
        rep: &'a Rep,
        base: isize,
        next: usize,
    },
}

/// The runs of a node in type-map order, not merged.
pub(crate) struct RawRuns<'a> {
    stack: Vec<Frame<'a>>,
}

impl<'a> RawRuns<'a> {
    pub(crate) fn new(node: &'a Node, base: isize) -> RawRuns<'a> {
        RawRuns {
            stack: vec![Frame::Items {
                items: std::slice::from_ref(node),
                base,
                next: 0,
            }],
        }
    }
}

impl Iterator for RawRuns<'_> {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        loop {
            let (node, base) = match self.stack.last_mut()? {
                Frame::Items { items, base, next } => {
                    let Some(node) = items.get(*next) else {
                        self.stack.pop();
                        continue;
                    };
                    *next += 1;
                    (node, *base)
                }
                Frame::Rep { rep, base, next } => {
                    if *next == rep.count {
                        self.stack.pop();
                        continue;
                    }
                    let b = base.wrapping_add((*next as isize).wrapping_mul(rep.stride));
                    *next += 1;
                    if let Node::Run { off, len } = rep.body {
                        return Some(Run {
                            offset: b.wrapping_add(off),
                            len,
                        });
                    }
                    (&rep.body, b)
                }
            };
            match node {
                Node::Empty => {}
                Node::Run { off, len } => {
                    return Some(Run {
                        offset: base.wrapping_add(*off),
                        len: *len,
                    })
                }
                Node::Rep { off, rep } => self.stack.push(Frame::Rep {
                    rep,
                    base: base.wrapping_add(*off),
                    next: 0,
                }),
                Node::Seq { off, seq } => self.stack.push(Frame::Items {
                    items: &seq.items,
                    base: base.wrapping_add(*off),
                    next: 0,
                }),
            }
        }
    }
}

/// The runs of a node in type-map order, adjacent runs merged.
pub(crate) struct Runs<'a> {
    raw: RawRuns<'a>,
    pending: Option<Run>,
}

impl<'a> Runs<'a> {
    pub(crate) fn new(node: &'a Node) -> Runs<'a> {
        Runs {
            raw: RawRuns::new(node, 0),
            pending: None,
        }
    }
}

impl Iterator for Runs<'_> {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        loop {
            let Some(r) = self.raw.next() else {
                return self.pending.take();
            };
            match &mut self.pending {
                Some(p) if p.offset.wrapping_add(p.len as isize) == r.offset => p.len += r.len,
                Some(p) => {
                    let out = *p;
                    *p = r;
                    return Some(out);
                }
                None => self.pending = Some(r),
            }
        }
    }
}

/// Calls `f` with the runs of `node` (moved by `base`) in type-map order, merging
/// adjacent runs through `pending`; the caller flushes `pending` at the end. The
/// recursive form of [`Runs`], faster for whole-map walks.
pub(crate) fn for_each_run(
    node: &Node,
    base: isize,
    pending: &mut Option<Run>,
    f: &mut dyn FnMut(Run),
) {
    #[inline]
    fn emit(r: Run, pending: &mut Option<Run>, f: &mut dyn FnMut(Run)) {
        match pending {
            Some(p) if p.offset.wrapping_add(p.len as isize) == r.offset => p.len += r.len,
            Some(p) => f(std::mem::replace(p, r)),
            None => *pending = Some(r),
        }
    }
    match node {
        Node::Empty => {}
        Node::Run { off, len } => emit(
            Run {
                offset: base.wrapping_add(*off),
                len: *len,
            },
            pending,
            f,
        ),
        Node::Rep { off, rep } => {
            let mut b = base.wrapping_add(*off);
            if let Node::Run { off: boff, len } = rep.body {
                // Copies of one run never touch each other (that would have been
                // normalised into one run), so only the first can merge with what
                // came before.
                b = b.wrapping_add(boff);
                emit(Run { offset: b, len }, pending, f);
                for _ in 1..rep.count {
                    b = b.wrapping_add(rep.stride);
                    f(std::mem::replace(
                        pending.get_or_insert(Run { offset: b, len }),
                        Run { offset: b, len },
                    ));
                }
            } else {
                for _ in 0..rep.count {
                    for_each_run(&rep.body, b, pending, f);
                    b = b.wrapping_add(rep.stride);
                }
            }
        }
        Node::Seq { off, seq } => {
            let b = base.wrapping_add(*off);
            for item in seq.items.iter() {
                for_each_run(item, b, pending, f);
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Pack and unpack. The caller has checked that every run lies inside the strided
// buffer and that the packed buffer is exactly `size` bytes, so offsets are
// non-negative and in bounds here (slice indexing still checks).

/// Copies `count` runs of `N` bytes, `stride` apart, from `src` into `dst` (packed).
fn gather_fixed<const N: usize>(src: &[u8], dst: &mut [u8], start: isize, stride: isize) {
    let mut s = start;
    for chunk in dst.chunks_exact_mut(N) {
        let i = s as usize;
        chunk.copy_from_slice(&src[i..i + N]);
        s = s.wrapping_add(stride);
    }
}

fn scatter_fixed<const N: usize>(src: &[u8], dst: &mut [u8], start: isize, stride: isize) {
    let mut s = start;
    for chunk in src.chunks_exact(N) {
        let i = s as usize;
        dst[i..i + N].copy_from_slice(chunk);
        s = s.wrapping_add(stride);
    }
}

fn gather_any(src: &[u8], dst: &mut [u8], start: isize, stride: isize, len: usize) {
    let mut s = start;
    for chunk in dst.chunks_exact_mut(len) {
        let i = s as usize;
        chunk.copy_from_slice(&src[i..i + len]);
        s = s.wrapping_add(stride);
    }
}

fn scatter_any(src: &[u8], dst: &mut [u8], start: isize, stride: isize, len: usize) {
    let mut s = start;
    for chunk in src.chunks_exact(len) {
        let i = s as usize;
        dst[i..i + len].copy_from_slice(chunk);
        s = s.wrapping_add(stride);
    }
}

/// Packs the runs of `node` (moved by `base`) from `src` into `dst[*pos..]`.
pub(crate) fn pack(node: &Node, base: isize, src: &[u8], dst: &mut [u8], pos: &mut usize) {
    match node {
        Node::Empty => {}
        Node::Run { off, len } => {
            let s = base.wrapping_add(*off) as usize;
            dst[*pos..*pos + len].copy_from_slice(&src[s..s + len]);
            *pos += len;
        }
        Node::Rep { off, rep } => {
            let base = base.wrapping_add(*off);
            if let Node::Run { off: boff, len } = rep.body {
                let total = len * rep.count;
                let out = &mut dst[*pos..*pos + total];
                let start = base.wrapping_add(boff);
                match len {
                    1 => gather_fixed::<1>(src, out, start, rep.stride),
                    2 => gather_fixed::<2>(src, out, start, rep.stride),
                    4 => gather_fixed::<4>(src, out, start, rep.stride),
                    8 => gather_fixed::<8>(src, out, start, rep.stride),
                    16 => gather_fixed::<16>(src, out, start, rep.stride),
                    _ => gather_any(src, out, start, rep.stride, len),
                }
                *pos += total;
            } else {
                let mut b = base;
                for _ in 0..rep.count {
                    pack(&rep.body, b, src, dst, pos);
                    b = b.wrapping_add(rep.stride);
                }
            }
        }
        Node::Seq { off, seq } => {
            let base = base.wrapping_add(*off);
            for item in seq.items.iter() {
                pack(item, base, src, dst, pos);
            }
        }
    }
}

/// Unpacks `src[*pos..]` into the runs of `node` (moved by `base`) in `dst`.
pub(crate) fn unpack(node: &Node, base: isize, src: &[u8], pos: &mut usize, dst: &mut [u8]) {
    match node {
        Node::Empty => {}
        Node::Run { off, len } => {
            let d = base.wrapping_add(*off) as usize;
            dst[d..d + len].copy_from_slice(&src[*pos..*pos + len]);
            *pos += len;
        }
        Node::Rep { off, rep } => {
            let base = base.wrapping_add(*off);
            if let Node::Run { off: boff, len } = rep.body {
                let total = len * rep.count;
                let input = &src[*pos..*pos + total];
                let start = base.wrapping_add(boff);
                match len {
                    1 => scatter_fixed::<1>(input, dst, start, rep.stride),
                    2 => scatter_fixed::<2>(input, dst, start, rep.stride),
                    4 => scatter_fixed::<4>(input, dst, start, rep.stride),
                    8 => scatter_fixed::<8>(input, dst, start, rep.stride),
                    16 => scatter_fixed::<16>(input, dst, start, rep.stride),
                    _ => scatter_any(input, dst, start, rep.stride, len),
                }
                *pos += total;
            } else {
                let mut b = base;
                for _ in 0..rep.count {
                    unpack(&rep.body, b, src, pos, dst);
                    b = b.wrapping_add(rep.stride);
                }
            }
        }
        Node::Seq { off, seq } => {
            let base = base.wrapping_add(*off);
            for item in seq.items.iter() {
                unpack(item, base, src, pos, dst);
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Overlap

/// `Err(offset)` with a byte covered twice if `node` (moved by `base`) overlaps itself.
///
/// Regular repeats are decided from their summaries: copies of a self-disjoint body
/// whose span fits in the stride cannot meet. Only what that cannot decide (an
/// interleaved repeat, a sequence whose items' spans intersect) is enumerated and
/// sorted, and only that subtree.
pub(crate) fn find_overlap(node: &Node, base: isize) -> Result<(), isize> {
    match node {
        Node::Empty | Node::Run { .. } => Ok(()),
        Node::Rep { off, rep } => {
            let origin = base.wrapping_add(*off);
            find_overlap(&rep.body, origin)?;
            let Some(b) = rep.body.info() else {
                return Ok(());
            };
            let span = b.hi.wrapping_sub(b.lo) as usize;
            if rep.stride.unsigned_abs() >= span {
                return Ok(());
            }
            if let Node::Run { off: boff, .. } = rep.body {
                // Copies of one run closer than its length: copy 1 starts inside copy
                // 0 (positive stride) or ends inside it (negative or zero stride).
                let start = origin.wrapping_add(boff);
                return Err(if rep.stride > 0 {
                    start.wrapping_add(rep.stride)
                } else {
                    start
                });
            }
            by_sorting(node, base)
        }
        Node::Seq { off, seq } => {
            let origin = base.wrapping_add(*off);
            let mut spans = Vec::with_capacity(seq.items.len());
            for item in seq.items.iter() {
                find_overlap(item, origin)?;
                if let Some(i) = item.info() {
                    spans.push((i.lo, i.hi));
                }
            }
            spans.sort_unstable();
            if spans.windows(2).all(|w| w[0].1 <= w[1].0) {
                Ok(())
            } else {
                by_sorting(node, base)
            }
        }
    }
}

/// The fallback: every run of `node` (moved by `base`), sorted by offset.
fn by_sorting(node: &Node, base: isize) -> Result<(), isize> {
    let mut runs: Vec<Run> = RawRuns::new(node, base).collect();
    runs.sort_unstable_by_key(|r| r.offset);
    let mut end = isize::MIN;
    for r in runs {
        if r.offset < end {
            return Err(r.offset);
        }
        end = r.offset.wrapping_add(r.len as isize);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(n: &Node) -> Vec<(isize, usize)> {
        Runs::new(n).map(|r| (r.offset, r.len)).collect()
    }

    #[test]
    fn repeat_of_adjacent_runs_collapses() {
        let r = run(4, 8).unwrap();
        let n = repeat(1 << 20, 8, &r).unwrap();
        assert!(matches!(n, Node::Run { off: 4, len } if len == 8 << 20));
    }

    #[test]
    fn nested_repeat_continuing_the_progression_merges() {
        let inner = repeat(3, 16, &run(0, 8).unwrap()).unwrap();
        let outer = repeat(5, 48, &inner).unwrap();
        match &outer {
            Node::Rep { rep, .. } => assert_eq!((rep.count, rep.stride), (15, 16)),
            other => panic!("not merged: {other:?}"),
        }
        assert_eq!(outer.info().unwrap().runs, 15);
    }

    #[test]
    fn run_count_accounts_for_joins_across_nodes() {
        // [0,4) [8,12) then [12,16): the second item continues the first's last run.
        let a = repeat(2, 8, &run(0, 4).unwrap()).unwrap();
        let s = seq(vec![a, run(12, 4).unwrap()]).unwrap();
        assert_eq!(runs(&s), vec![(0, 4), (8, 8)]);
        assert_eq!(s.info().unwrap().runs, 2);
    }

    #[test]
    fn overflowing_span_is_refused() {
        let r = run(0, 8).unwrap();
        assert_eq!(
            repeat(usize::MAX / 2, 16, &r).unwrap_err(),
            BuildError::Overflow
        );
        assert_eq!(shift(&r, isize::MAX - 4).unwrap_err(), BuildError::Overflow);
    }

    #[test]
    fn interleaved_repeat_needs_sorting_but_is_disjoint() {
        // Body: [0,1) [2,3); copies 1 apart interleave without overlapping.
        let body = seq(vec![run(0, 1).unwrap(), run(2, 1).unwrap()]).unwrap();
        let n = repeat(2, 1, &body).unwrap();
        assert_eq!(find_overlap(&n, 0), Ok(()));
        let n = repeat(3, 1, &body).unwrap();
        assert_eq!(find_overlap(&n, 0), Err(2));
    }
}
