//! Flattening, pack/unpack, overlap and window checks, against hand-written cases and
//! against a naive reference model that expands every element one by one.

use proptest::prelude::*;
use rma_core::{ErrorClass, Layout, Rank};
use rma_datatype::{BasicType, Datatype, Order, TypeMap};

fn t(b: BasicType) -> Datatype {
    Datatype::basic(b)
}

fn runs(m: &TypeMap) -> Vec<(isize, usize)> {
    m.runs().map(|r| (r.offset, r.len)).collect()
}

// ---------------------------------------------------------------------------------
// Reference model: a datatype as the tree of its constructor calls, expanded naively.

#[derive(Clone, Debug)]
enum Ref {
    Basic(BasicType),
    Contig(usize, Box<Ref>),
    Vector {
        count: usize,
        blocklen: usize,
        stride: isize,
        bytes: bool,
        old: Box<Ref>,
    },
    Indexed {
        blocks: Vec<(usize, isize)>,
        bytes: bool,
        same_len: bool,
        old: Box<Ref>,
    },
    Struct(Vec<(usize, isize, Ref)>),
    Resized(isize, isize, Box<Ref>),
    Subarray {
        dims: Vec<(usize, usize, usize)>,
        fortran: bool,
        old: Box<Ref>,
    },
}

/// A naively expanded datatype: every element and the bounds, computed instance by
/// instance with MPI's rules.
#[derive(Clone, Debug)]
struct Flat {
    /// (basic type, byte offset) in type-map order.
    elems: Vec<(BasicType, isize)>,
    lb: isize,
    ub: isize,
    /// Has any entry (data or explicit bound).
    bounded: bool,
    /// Bounds are explicit (resized/subarray).
    sticky: bool,
    align: usize,
}

impl Flat {
    fn extent(&self) -> isize {
        self.ub - self.lb
    }

    /// Places instances of children at displacements, in order.
    fn combine(parts: Vec<(&Flat, isize)>, pad: bool) -> Flat {
        let mut elems = Vec::new();
        type Bounds = Option<(isize, isize)>;
        let (mut all, mut sticky): (Bounds, Bounds) = (None, None);
        let mut align = 1;
        let join = |a: Option<(isize, isize)>, lo: isize, hi: isize| {
            Some(a.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))))
        };
        for (c, d) in parts {
            elems.extend(c.elems.iter().map(|&(b, o)| (b, o + d)));
            if c.bounded {
                all = join(all, c.lb + d, c.ub + d);
                if c.sticky {
                    sticky = join(sticky, c.lb + d, c.ub + d);
                }
            }
            if !c.elems.is_empty() {
                align = align.max(c.align);
            }
        }
        let is_sticky = sticky.is_some();
        let bounds = if is_sticky { sticky } else { all };
        let (lb, mut ub) = bounds.unwrap_or((0, 0));
        if pad && !is_sticky && bounds.is_some() {
            let a = align as isize;
            ub = lb + (ub - lb + a - 1).div_euclid(a) * a;
        }
        Flat {
            elems,
            lb,
            ub,
            bounded: bounds.is_some(),
            sticky: is_sticky,
            align,
        }
    }

    fn size(&self) -> usize {
        self.elems.iter().map(|(b, _)| b.size()).sum()
    }

    fn true_bounds(&self) -> (isize, isize) {
        let lo = self.elems.iter().map(|&(_, o)| o).min();
        let hi = self.elems.iter().map(|&(b, o)| o + b.size() as isize).max();
        match (lo, hi) {
            (Some(lo), Some(hi)) => (lo, hi - lo),
            _ => (0, 0),
        }
    }

    /// The merged byte runs of `count` instances.
    fn runs(&self, count: usize) -> Vec<(isize, usize)> {
        let mut out: Vec<(isize, usize)> = Vec::new();
        for i in 0..count as isize {
            for &(b, o) in &self.elems {
                let o = o + i * self.extent();
                match out.last_mut() {
                    Some((s, l)) if *s + *l as isize == o => *l += b.size(),
                    _ => out.push((o, b.size())),
                }
            }
        }
        out
    }
}

fn flatten(r: &Ref) -> Flat {
    match r {
        Ref::Basic(b) => Flat {
            elems: vec![(*b, 0)],
            lb: 0,
            ub: b.size() as isize,
            bounded: true,
            sticky: false,
            align: b.align(),
        },
        Ref::Contig(n, old) => {
            let c = flatten(old);
            let parts = (0..*n as isize).map(|i| (&c, i * c.extent())).collect();
            Flat::combine(parts, false)
        }
        Ref::Vector {
            count,
            blocklen,
            stride,
            bytes,
            old,
        } => {
            let c = flatten(old);
            let step = if *bytes { *stride } else { stride * c.extent() };
            let mut parts = Vec::new();
            for i in 0..*count as isize {
                for j in 0..*blocklen as isize {
                    parts.push((&c, i * step + j * c.extent()));
                }
            }
            Flat::combine(parts, false)
        }
        Ref::Indexed {
            blocks, bytes, old, ..
        } => {
            let c = flatten(old);
            let mut parts = Vec::new();
            for &(bl, d) in blocks {
                let d = if *bytes { d } else { d * c.extent() };
                for j in 0..bl as isize {
                    parts.push((&c, d + j * c.extent()));
                }
            }
            Flat::combine(parts, false)
        }
        Ref::Struct(members) => {
            let cs: Vec<Flat> = members.iter().map(|(_, _, r)| flatten(r)).collect();
            let mut parts = Vec::new();
            for ((bl, d, _), c) in members.iter().zip(&cs) {
                for j in 0..*bl as isize {
                    parts.push((c, d + j * c.extent()));
                }
            }
            Flat::combine(parts, true)
        }
        Ref::Resized(lb, ext, old) => Flat {
            lb: *lb,
            ub: lb + ext,
            bounded: true,
            sticky: true,
            ..flatten(old)
        },
        Ref::Subarray { dims, fortran, old } => {
            let c = flatten(old);
            // Element strides, slowest dimension first, in storage order.
            let order: Vec<usize> = if *fortran {
                (0..dims.len()).rev().collect()
            } else {
                (0..dims.len()).collect()
            };
            let mut stride = vec![0isize; dims.len()];
            let mut s = c.extent();
            for &d in order.iter().rev() {
                stride[d] = s;
                s *= dims[d].0 as isize;
            }
            // Enumerate indices with the fastest dimension innermost.
            let mut parts = Vec::new();
            let mut idx = vec![0usize; dims.len()];
            let total: usize = dims.iter().map(|d| d.1).product();
            for _ in 0..total {
                let disp: isize = (0..dims.len())
                    .map(|d| (dims[d].2 + idx[d]) as isize * stride[d])
                    .sum();
                parts.push((&c, disp));
                for &d in order.iter().rev() {
                    idx[d] += 1;
                    if idx[d] < dims[d].1 {
                        break;
                    }
                    idx[d] = 0;
                }
            }
            let f = Flat::combine(parts, false);
            Flat {
                lb: 0,
                ub: s,
                bounded: true,
                sticky: true,
                ..f
            }
        }
    }
}

fn build(r: &Ref) -> Datatype {
    match r {
        Ref::Basic(b) => t(*b),
        Ref::Contig(n, old) => Datatype::contiguous(*n, &build(old)).unwrap(),
        Ref::Vector {
            count,
            blocklen,
            stride,
            bytes,
            old,
        } => {
            let o = build(old);
            if *bytes {
                Datatype::hvector(*count, *blocklen, *stride, &o).unwrap()
            } else {
                Datatype::vector(*count, *blocklen, *stride, &o).unwrap()
            }
        }
        Ref::Indexed {
            blocks,
            bytes,
            same_len,
            old,
        } => {
            let o = build(old);
            let lens: Vec<usize> = blocks.iter().map(|b| b.0).collect();
            let disps: Vec<isize> = blocks.iter().map(|b| b.1).collect();
            match (*bytes, *same_len && !blocks.is_empty()) {
                (false, false) => Datatype::indexed(&lens, &disps, &o),
                (true, false) => Datatype::hindexed(&lens, &disps, &o),
                (false, true) => Datatype::indexed_block(lens[0], &disps, &o),
                (true, true) => Datatype::hindexed_block(lens[0], &disps, &o),
            }
            .unwrap()
        }
        Ref::Struct(members) => {
            let lens: Vec<usize> = members.iter().map(|m| m.0).collect();
            let disps: Vec<isize> = members.iter().map(|m| m.1).collect();
            let types: Vec<Datatype> = members.iter().map(|m| build(&m.2)).collect();
            Datatype::structure(&lens, &disps, &types).unwrap()
        }
        Ref::Resized(lb, ext, old) => Datatype::resized(&build(old), *lb, *ext).unwrap(),
        Ref::Subarray { dims, fortran, old } => {
            let sizes: Vec<usize> = dims.iter().map(|d| d.0).collect();
            let subs: Vec<usize> = dims.iter().map(|d| d.1).collect();
            let starts: Vec<usize> = dims.iter().map(|d| d.2).collect();
            let order = if *fortran { Order::Fortran } else { Order::C };
            Datatype::subarray(&sizes, &subs, &starts, order, &build(old)).unwrap()
        }
    }
}

fn basic_strategy() -> impl Strategy<Value = BasicType> {
    prop::sample::select(vec![
        BasicType::U8,
        BasicType::I16,
        BasicType::I32,
        BasicType::F64,
        BasicType::DoubleInt,
        BasicType::ShortInt,
    ])
}

fn ref_strategy() -> impl Strategy<Value = Ref> {
    let leaf = basic_strategy().prop_map(Ref::Basic);
    leaf.prop_recursive(3, 64, 4, |inner| {
        let boxed = inner.clone().prop_map(Box::new);
        prop_oneof![
            (0usize..4, boxed.clone()).prop_map(|(n, old)| Ref::Contig(n, old)),
            (
                0usize..4,
                0usize..3,
                -5isize..6,
                any::<bool>(),
                boxed.clone()
            )
                .prop_map(|(count, blocklen, stride, bytes, old)| Ref::Vector {
                    count,
                    blocklen,
                    stride,
                    bytes,
                    old
                }),
            (
                prop::collection::vec((0usize..3, -12isize..12), 0..5),
                any::<bool>(),
                any::<bool>(),
                boxed.clone()
            )
                .prop_map(|(mut blocks, bytes, same_len, old)| {
                    if same_len {
                        let l = blocks.first().map_or(0, |b| b.0);
                        blocks.iter_mut().for_each(|b| b.0 = l);
                    }
                    Ref::Indexed {
                        blocks,
                        bytes,
                        same_len,
                        old,
                    }
                }),
            prop::collection::vec((0usize..3, -16isize..32, inner.clone()), 0..4)
                .prop_map(Ref::Struct),
            (-8isize..8, 0isize..40, boxed.clone())
                .prop_map(|(lb, ext, old)| Ref::Resized(lb, ext, old)),
            (
                prop::collection::vec((1usize..4, 0usize..4, 0usize..4), 1..4),
                any::<bool>(),
                boxed
            )
                .prop_map(|(dims, fortran, old)| {
                    let dims = dims
                        .into_iter()
                        .map(|(size, sub, start)| {
                            let sub = sub.min(size);
                            (size, sub, start.min(size - sub))
                        })
                        .collect();
                    Ref::Subarray { dims, fortran, old }
                }),
        ]
    })
}

/// Naive overlap check: does any byte appear in two elements?
fn naive_overlaps(flat: &Flat) -> bool {
    let mut spans: Vec<(isize, isize)> = flat
        .elems
        .iter()
        .map(|&(b, o)| (o, o + b.size() as isize))
        .collect();
    spans.sort();
    spans.windows(2).any(|w| w[1].0 < w[0].1)
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8 | 1).collect()
}

proptest! {
    // 1000 cases in CI; RMA_FUZZ_CASES=N runs N (the long fuzzing run by hand)
    #![proptest_config(ProptestConfig { cases: fuzz_cases(1000), ..ProptestConfig::default() })]

    #[test]
    fn matches_reference_model(r in ref_strategy(), count in 0usize..3) {
        let d = build(&r);
        let f = flatten(&r);
        prop_assert_eq!(d.size(), f.size());
        prop_assert_eq!((d.lb(), d.ub(), d.extent()), (f.lb, f.ub, f.extent()));
        prop_assert_eq!((d.true_lb(), d.true_extent()), f.true_bounds());
        prop_assert_eq!(d.element_count(), f.elems.len());
        if !f.elems.is_empty() {
            let first = f.elems[0].0;
            let uniform = f.elems.iter().all(|e| e.0 == first);
            prop_assert_eq!(d.basic_type(), uniform.then_some(first));
        }

        let m = d.type_map(count).unwrap();
        let expected = f.runs(count);
        prop_assert_eq!(runs(&m), expected.clone());
        prop_assert_eq!(m.run_count(), expected.len() as u64);
        prop_assert_eq!(m.size(), count * f.size());
        let mut via_layout = Vec::new();
        m.for_each_run(&mut |r| via_layout.push((r.offset, r.len)));
        prop_assert_eq!(via_layout, expected.clone());
        let span = expected.iter().map(|r| r.0).min().zip(expected.iter().map(|r| r.0 + r.1 as isize).max());
        prop_assert_eq!(m.span(), span);
        prop_assert_eq!(
            m.as_contiguous(),
            match expected.as_slice() { [(0, len)] => Some(*len), _ => None }
        );

        // Overlap, judged on one instance and on `count` instances.
        prop_assert_eq!(d.type_map(1).unwrap().check_no_overlap().is_err(), naive_overlaps(&f));
        let mut fc = f.clone();
        let ext = f.extent();
        fc.elems = (0..count as isize)
            .flat_map(|i| f.elems.iter().map(move |&(b, o)| (b, o + i * ext)))
            .collect();
        match m.check_no_overlap() {
            Ok(()) => prop_assert!(!naive_overlaps(&fc)),
            Err(e) => {
                prop_assert!(naive_overlaps(&fc));
                let rma_core::Error::OverlappingTarget { offset } = e else {
                    return Err(TestCaseError::fail(format!("wrong error {e:?}")));
                };
                let covering = fc.elems.iter()
                    .filter(|&&(b, o)| o <= offset && offset < o + b.size() as isize)
                    .count();
                prop_assert!(covering >= 2, "byte {} is covered {} times", offset, covering);
            }
        }

        // Pack and unpack against a naive gather, with the buffer shifted so that a
        // negative lower bound still lands inside it.
        if let Some((lo, hi)) = m.span() {
            let shift = (-lo).max(0);
            let len = (hi + shift) as usize;
            let shifted = Datatype::hindexed(&[1], &[shift], &d).unwrap();
            let sm = shifted.type_map(count).unwrap();
            let src = pattern(len);
            let mut packed = vec![0u8; sm.size()];
            sm.pack(&src, &mut packed).unwrap();
            let mut naive = Vec::new();
            for &(o, l) in &expected {
                let o = (o + shift) as usize;
                naive.extend_from_slice(&src[o..o + l]);
            }
            prop_assert_eq!(&packed, &naive);
            if sm.check_no_overlap().is_ok() {
                let mut back = vec![0u8; len];
                sm.unpack(&packed, &mut back).unwrap();
                let mut covered = vec![false; len];
                for &(o, l) in &expected {
                    let o = (o + shift) as usize;
                    covered[o..o + l].iter_mut().for_each(|c| *c = true);
                }
                for i in 0..len {
                    prop_assert_eq!(back[i], if covered[i] { src[i] } else { 0 }, "byte {}", i);
                }
            }
            // One byte short is refused, and nothing is written.
            let mut small = vec![0u8; len - 1];
            prop_assert_eq!(
                sm.unpack(&packed, &mut small).unwrap_err().class(),
                ErrorClass::Buffer
            );
            prop_assert!(small.iter().all(|&b| b == 0));
        }

        // Signature: equal to that of a struct listing the same elements anywhere.
        let lens = vec![1usize; f.elems.len()];
        let disps: Vec<isize> = (0..f.elems.len() as isize).map(|i| i * 16).collect();
        let types: Vec<Datatype> = f.elems.iter().map(|e| t(e.0)).collect();
        let listed = Datatype::structure(&lens, &disps, &types).unwrap();
        prop_assert!(d.signature(1).matches(&listed.signature(1)));
        prop_assert!(listed.signature(1).matches(&d.signature(1)));
        prop_assert_eq!(d.signature(count).element_count(), (count * f.elems.len()) as u64);
        if let Some(last) = types.last() {
            // One element fewer, or one element changed, does not match.
            let shorter = Datatype::structure(&lens[1..], &disps[1..], &types[1..]).unwrap();
            prop_assert!(!d.signature(1).matches(&shorter.signature(1)));
            let other = if last.basic_type() == Some(BasicType::U8) { BasicType::I16 } else { BasicType::U8 };
            let mut changed = types.clone();
            *changed.last_mut().unwrap() = t(other);
            let changed = Datatype::structure(&lens, &disps, &changed).unwrap();
            prop_assert!(!d.signature(1).matches(&changed.signature(1)));
        }
    }

    #[test]
    fn regular_vectors_pack_like_memcpy_per_block(
        count in 1usize..200,
        blocklen in 1usize..5,
        gap in 0usize..4,
        negative in any::<bool>(),
    ) {
        let stride = (blocklen + gap) as isize * if negative { -1 } else { 1 };
        let d = Datatype::vector(count, blocklen, stride, &t(BasicType::I32)).unwrap();
        let m = d.type_map(1).unwrap();
        prop_assert!(m.node_count() <= 2, "{:?}", m);
        // Blocks touching in ascending order merge; in descending order they do not.
        let merged = gap == 0 && !negative || count == 1;
        prop_assert_eq!(m.run_count(), if merged { 1 } else { count as u64 });
        m.check_no_overlap().unwrap();
        let (lo, hi) = m.span().unwrap();
        let shifted = Datatype::hindexed(&[1], &[-lo], &d).unwrap().type_map(1).unwrap();
        let src = pattern((hi - lo) as usize);
        let mut packed = vec![0u8; m.size()];
        shifted.pack(&src, &mut packed).unwrap();
        for i in 0..count {
            let block = (i as isize * stride * 4 - lo) as usize;
            let got = &packed[i * blocklen * 4..(i + 1) * blocklen * 4];
            prop_assert_eq!(got, &src[block..block + blocklen * 4]);
        }
    }
}

// ---------------------------------------------------------------------------------
/// Cases for the property-test fuzzers: `RMA_FUZZ_CASES` or the CI default.
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("RMA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// Hand-written cases.

#[test]
fn contiguous_layouts_are_one_run() {
    let m = t(BasicType::F64).type_map(10).unwrap();
    assert_eq!(m.as_contiguous(), Some(80));
    assert_eq!(runs(&m), vec![(0, 80)]);
    let d = Datatype::contiguous(1 << 30, &t(BasicType::U8)).unwrap();
    let m = d.type_map(1).unwrap();
    assert_eq!(
        (m.run_count(), m.node_count(), m.as_contiguous()),
        (1, 1, Some(1 << 30))
    );
    let m = d.type_map(4).unwrap();
    assert_eq!(m.as_contiguous(), Some(4 << 30));
    // A vector whose blocks touch is contiguous too.
    let d = Datatype::vector(1000, 4, 4, &t(BasicType::I32)).unwrap();
    assert_eq!(d.type_map(3).unwrap().as_contiguous(), Some(48_000));
    // Not at offset 0: one run, but not "contiguous".
    let d = Datatype::hindexed(&[4], &[8], &t(BasicType::U8)).unwrap();
    let m = d.type_map(1).unwrap();
    assert_eq!((m.run_count(), m.as_contiguous()), (1, None));
    // Empty.
    let m = t(BasicType::U8).type_map(0).unwrap();
    assert!(m.is_empty());
    assert_eq!(
        (m.size(), m.run_count(), m.span(), m.as_contiguous()),
        (0, 0, None, None)
    );
    assert_eq!(m.runs().count(), 0);
}

#[test]
fn a_million_blocks_stay_small() {
    let d = Datatype::vector(1_000_000, 1, 2, &t(BasicType::F64)).unwrap();
    let m = d.type_map(1).unwrap();
    assert_eq!(m.run_count(), 1_000_000);
    assert_eq!(m.size(), 8_000_000);
    assert!(m.node_count() <= 2, "{m:?}");
    m.check_no_overlap().unwrap();
    assert_eq!(m.runs().count(), 1_000_000);
    // Several instances, nested vectors, subarrays: still a handful of nodes.
    assert!(d.type_map(7).unwrap().node_count() <= 3);
    let plane = Datatype::subarray(
        &[1000, 1000, 1000],
        &[1000, 1000, 1],
        &[0, 0, 5],
        Order::C,
        &t(BasicType::F64),
    )
    .unwrap();
    let m = plane.type_map(1).unwrap();
    assert_eq!(m.run_count(), 1_000_000);
    assert!(m.node_count() <= 3, "{m:?}");
    m.check_no_overlap().unwrap();
    m.check_fits(0, 8_000_000_000, Rank::new(0)).unwrap();
    // indexed_block shares one block node across all displacements. Each block is
    // two instances of runs at 0, 8, 16 (extent 20): 0, 8, 16..24, 28, 36.
    let disps: Vec<isize> = (0..10_000).map(|i| i * 100).collect();
    let v = Datatype::vector(3, 1, 2, &t(BasicType::I32)).unwrap();
    let m = Datatype::indexed_block(2, &disps, &v)
        .unwrap()
        .type_map(1)
        .unwrap();
    assert_eq!(m.run_count(), 50_000);
    assert_eq!(m.runs().count(), 50_000);
}

#[test]
fn runs_merge_across_instances() {
    // Instance runs at 0, 8, 16 (4 bytes each); extent 20, so instance 1's first run
    // (20) continues instance 0's last (16..20).
    let d = Datatype::vector(3, 1, 2, &t(BasicType::I32)).unwrap();
    let m = d.type_map(2).unwrap();
    assert_eq!(runs(&m), vec![(0, 4), (8, 4), (16, 8), (28, 4), (36, 4)]);
    assert_eq!(m.run_count(), 5);
}

#[test]
fn negative_strides_run_backwards() {
    let d = Datatype::vector(3, 1, -2, &t(BasicType::F64)).unwrap();
    let m = d.type_map(1).unwrap();
    assert_eq!(runs(&m), vec![(0, 8), (-16, 8), (-32, 8)]);
    assert_eq!(m.span(), Some((-32, 8)));
    m.check_no_overlap().unwrap();
    // Unpacking needs the buffer to start at the lower bound: the error says the
    // layout reaches 32 bytes before the buffer (not that 40 bytes are too few for 40)
    let mut buf = vec![0u8; 40];
    let e = m.unpack(&[1; 24], &mut buf).unwrap_err();
    assert!(
        matches!(
            e,
            rma_core::Error::BufferUnderrun {
                which: "origin",
                below: 32
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.class(), ErrorClass::Buffer);
    assert!(e.to_string().contains("32 bytes before"), "{e}");
    let shifted = Datatype::hindexed(&[1], &[32], &d)
        .unwrap()
        .type_map(1)
        .unwrap();
    let packed: Vec<u8> = (1..=24).collect();
    shifted.unpack(&packed, &mut buf).unwrap();
    assert_eq!(&buf[32..40], &packed[0..8]);
    assert_eq!(&buf[16..24], &packed[8..16]);
    assert_eq!(&buf[0..8], &packed[16..24]);
    assert!(buf[8..16].iter().chain(&buf[24..32]).all(|&b| b == 0));
}

#[test]
fn pack_unpack_round_trip_struct() {
    // { f64 at 0; i32 at 8 } x 3 with padding bytes 12..16 untouched.
    let s = Datatype::structure(&[1, 1], &[0, 8], &[t(BasicType::F64), t(BasicType::I32)]).unwrap();
    let m = s.type_map(3).unwrap();
    assert_eq!(runs(&m), vec![(0, 12), (16, 12), (32, 12)]);
    let src = pattern(48);
    let mut packed = vec![0u8; 36];
    m.pack(&src, &mut packed).unwrap();
    let mut back = vec![0u8; 48];
    m.unpack(&packed, &mut back).unwrap();
    for i in 0..48 {
        let covered = i % 16 < 12;
        assert_eq!(back[i], if covered { src[i] } else { 0 }, "byte {i}");
    }
}

#[test]
fn pack_checks_lengths() {
    let d = Datatype::vector(2, 1, 2, &t(BasicType::I32)).unwrap();
    let m = d.type_map(1).unwrap();
    let src = [1u8; 12];
    let mut dst = [0u8; 8];
    let e = m.pack(&src[..11], &mut dst).unwrap_err();
    assert!(
        matches!(
            e,
            rma_core::Error::BufferTooSmall {
                which: "origin",
                needed: 12,
                got: 11
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        m.pack(&src, &mut [0u8; 7]).unwrap_err().class(),
        ErrorClass::Buffer
    );
    assert_eq!(
        m.pack(&src, &mut [0u8; 9]).unwrap_err().class(),
        ErrorClass::Arg
    );
    assert_eq!(
        m.unpack(&[0u8; 9], &mut [0u8; 12]).unwrap_err().class(),
        ErrorClass::Arg
    );
    assert_eq!(dst, [0; 8]);
    let e = m.check_buffer("result", 4).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("the result buffer holds 4 bytes but ")
            && text.contains("pass a buffer of at least"),
        "{e}"
    );
    m.check_buffer("result", 12).unwrap();
}

#[test]
fn overlap_detection() {
    let i32_t = t(BasicType::I32);
    let overlap_at = |d: &Datatype| match d.type_map(1).unwrap().check_no_overlap() {
        Ok(()) => None,
        Err(rma_core::Error::OverlappingTarget { offset }) => Some(offset),
        Err(e) => panic!("wrong error {e:?}"),
    };
    // Stride smaller than the block: block 1 starts 4 bytes into block 0.
    assert_eq!(
        overlap_at(&Datatype::vector(3, 2, 1, &i32_t).unwrap()),
        Some(4)
    );
    // Same with a negative stride: block 1 ends inside block 0.
    assert_eq!(
        overlap_at(&Datatype::vector(3, 2, -1, &i32_t).unwrap()),
        Some(0)
    );
    assert_eq!(
        overlap_at(&Datatype::hvector(2, 1, 0, &i32_t).unwrap()),
        Some(0)
    );
    // Duplicate displacements.
    assert_eq!(
        overlap_at(&Datatype::indexed(&[1, 1, 1], &[0, 3, 3], &i32_t).unwrap()),
        Some(12)
    );
    assert_eq!(
        overlap_at(&Datatype::indexed_block(2, &[0, 5, 1], &t(BasicType::U16)).unwrap()),
        Some(2)
    );
    // Disjoint, in any order and with negative strides.
    assert_eq!(
        overlap_at(&Datatype::indexed(&[1, 2], &[5, 0], &i32_t).unwrap()),
        None
    );
    assert_eq!(
        overlap_at(&Datatype::vector(4, 1, -2, &t(BasicType::F64)).unwrap()),
        None
    );
    assert_eq!(
        overlap_at(&Datatype::vector(4, 2, -2, &t(BasicType::F64)).unwrap()),
        None
    );
    // Two interleaved vectors in a struct do not overlap; shifted by one element they do.
    let v = Datatype::vector(100, 1, 2, &i32_t).unwrap();
    let s = Datatype::structure(&[1, 1], &[0, 4], &[v.clone(), v.clone()]).unwrap();
    assert_eq!(overlap_at(&s), None);
    let s = Datatype::structure(&[1, 1], &[0, 8], &[v.clone(), v]).unwrap();
    assert_eq!(overlap_at(&s), Some(8));
    // Instances of a type whose extent is smaller than its data overlap.
    let r = Datatype::resized(&Datatype::contiguous(2, &i32_t).unwrap(), 0, 4).unwrap();
    assert!(r.type_map(1).unwrap().check_no_overlap().is_ok());
    let e = r.type_map(2).unwrap().check_no_overlap().unwrap_err();
    assert_eq!(e.class(), ErrorClass::Type);
}

#[test]
fn window_fit() {
    let d = Datatype::vector(3, 1, -2, &t(BasicType::F64)).unwrap();
    let m = d.type_map(1).unwrap();
    // Bytes [-32, 8) relative to the base.
    m.check_fits(32, 40, Rank::new(1)).unwrap();
    let e = m.check_fits(31, 40, Rank::new(1)).unwrap_err();
    assert_eq!(e.class(), ErrorClass::RmaRange);
    assert!(
        matches!(
            e,
            rma_core::Error::OutOfWindow {
                start: -1,
                end: 39,
                window_len: 40,
                ..
            }
        ),
        "{e:?}"
    );
    let e = m.check_fits(33, 40, Rank::new(1)).unwrap_err();
    assert!(
        matches!(
            e,
            rma_core::Error::OutOfWindow {
                start: 1,
                end: 41,
                ..
            }
        ),
        "{e:?}"
    );
    // Huge bases do not wrap.
    let e = m
        .check_fits(usize::MAX, usize::MAX, Rank::new(0))
        .unwrap_err();
    assert!(matches!(e, rma_core::Error::OutOfWindow { end, .. } if end > usize::MAX as i128));
    // An empty layout fits anywhere.
    t(BasicType::F64)
        .type_map(0)
        .unwrap()
        .check_fits(100, 0, Rank::new(0))
        .unwrap();
}
