//! Soak: 4 ranks mix every RMA call (put, get, accumulate, get_accumulate,
//! fetch_and_op, compare_and_swap and the request forms) on random derived layouts with
//! random ops, epoch after epoch, cycling through fence, lock_all (+ flush),
//! lock (exclusive, sometimes shared) and PSCW epochs; after every epoch every rank
//! compares its whole window, and every value it fetched, with a model.
//!
//! # Determinism
//! Every random choice comes from splitmix64 seeded by (seed, epoch, origin), so every
//! rank generates what every other rank does and runs the whole model locally. The
//! traffic is designed so the outcome is exact despite concurrency:
//! - each window has one **own region** per origin, touched by that origin only: puts,
//!   gets, every accumulate op, get_accumulate, fetch_and_op, compare_and_swap. Within
//!   one synchronization interval (up to the next flush of that target, unlock or
//!   closing sync) an element is touched either by accumulate-family calls only (which
//!   docs/semantics.md rule 11 orders, so the model applies them in program order), or by
//!   one put, or by gets only; so every value, fetched or final, is exact;
//! - a **SUM region** that every origin updates with SUM (and reads with NO_OP) and an
//!   **XOR region** likewise with BXOR: commutative, so the final values are exact.
//!   SUM addends are non-negative, so a value fetched from the SUM region lies between
//!   (start of epoch + this origin's earlier addends) and (end of epoch - this origin's
//!   addends from this call on).
//!
//! Calls to the null rank are mixed in; their result buffers must stay untouched, as
//! must every result-buffer slot outside the result layout.
//!
//! # Duration
//! [`ci_epochs()`] epochs by default; with `RMA_SOAK_SECS=N` it runs until N seconds have
//! passed, every rank deciding at epoch ends through an all-gather, so all agree on the
//! epoch count. Rank 0 prints the epochs, calls and time to stderr. Mind the
//! harness's limits for long runs: nextest's default profile kills a test after 120 s,
//! and in process mode the launcher kills the ranks after 100 s, so runs longer than
//! about 90 s work in thread mode only, with the test binary run directly
//! (`RMA_SOAK_SECS=600 target/release/deps/conformance-<hash> --exact atomic::threads::own_soak`).

use rma_win::{
    Assert, BasicType, Buffer, BufferMut, Datatype, Group, Info, LockType, Op, Order, Rank,
    Request, Result, Target, Window, World,
};
use std::time::{Duration, Instant};

/// Ranks the case runs on.
const P: usize = 4;
/// Elements of each origin's own region.
const OWN: usize = 48;
/// Elements of the SUM region.
const SUM_LEN: usize = 32;
/// Elements of the XOR region.
const XOR_LEN: usize = 32;
const SUM_BASE: usize = P * OWN;
const XOR_BASE: usize = SUM_BASE + SUM_LEN;
/// Window elements per rank.
const WIN: usize = XOR_BASE + XOR_LEN;
/// Epochs of a default (CI) run.
fn ci_epochs() -> u64 {
    crate::scaled(2000)
}
/// Environment variable: run for this many seconds instead of [`ci_epochs()`] epochs.
pub(crate) const ENV_SECS: &str = "RMA_SOAK_SECS";
const SEED: u64 = 0x50a4_2024_d1ce_f00d;
/// What result buffers hold before a call; slots the call must not write keep it.
const SENTINEL: i64 = 0x5a5a_5a5a_5a5a_5a5a;

// ---- randomness --------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(parts: &[u64]) -> Rng {
        let mut r = Rng(SEED);
        for &p in parts {
            r.0 ^= p.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            r.next();
        }
        r
    }

    /// splitmix64.
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }

    /// A value for an own-region operand: mostly small, sometimes any.
    fn value(&mut self) -> i64 {
        match self.below(10) {
            0..=5 => self.range(0, 18) as i64 - 9,
            6..=8 => self.range(0, 2000) as i64 - 1000,
            _ => self.next() as i64,
        }
    }

    /// A divisor of `n` (`n > 0`).
    fn divisor(&mut self, n: usize) -> usize {
        let ds: Vec<usize> = (1..=n).filter(|d| n % d == 0).collect();
        self.pick(&ds)
    }
}

// ---- layouts -----------------------------------------------------------------------

/// How a layout is built; the element offsets are computed here by hand, independently
/// of rma-datatype.
#[derive(Debug, Clone)]
enum Shape {
    /// The predefined i64, `count` of them.
    Plain,
    Contig(usize),
    Vector {
        count: usize,
        bl: usize,
        stride: isize,
    },
    Hvector {
        count: usize,
        bl: usize,
        stride_bytes: isize,
    },
    Indexed {
        bls: Vec<usize>,
        disps: Vec<isize>,
    },
    IndexedBlock {
        bl: usize,
        disps: Vec<isize>,
    },
    Subarray {
        sizes: [usize; 2],
        subs: [usize; 2],
        starts: [usize; 2],
        fortran: bool,
    },
}

/// `count` instances of a datatype, with the element offsets (units of i64) of its type
/// map in order.
#[derive(Debug, Clone)]
struct Layout {
    shape: Shape,
    count: usize,
    idx: Vec<isize>,
}

impl Layout {
    fn lo(&self) -> isize {
        self.idx.iter().copied().min().unwrap_or(0)
    }

    fn hi(&self) -> isize {
        self.idx.iter().copied().max().map_or(0, |m| m + 1)
    }

    fn is_plain(&self) -> bool {
        matches!(self.shape, Shape::Plain)
    }

    fn describe(&self) -> String {
        format!("{:?} x{}", self.shape, self.count)
    }

    fn build(&self) -> Result<Datatype> {
        let i64t = Datatype::basic(BasicType::I64);
        let mut d = match &self.shape {
            Shape::Plain => return Ok(i64t),
            Shape::Contig(m) => Datatype::contiguous(*m, &i64t)?,
            Shape::Vector { count, bl, stride } => Datatype::vector(*count, *bl, *stride, &i64t)?,
            Shape::Hvector {
                count,
                bl,
                stride_bytes,
            } => Datatype::hvector(*count, *bl, *stride_bytes, &i64t)?,
            Shape::Indexed { bls, disps } => Datatype::indexed(bls, disps, &i64t)?,
            Shape::IndexedBlock { bl, disps } => Datatype::indexed_block(*bl, disps, &i64t)?,
            Shape::Subarray {
                sizes,
                subs,
                starts,
                fortran,
            } => {
                let order = if *fortran { Order::Fortran } else { Order::C };
                Datatype::subarray(sizes, subs, starts, order, &i64t)?
            }
        };
        d.commit();
        Ok(d)
    }
}

/// Non-overlapping blocks of the given lengths at random gaps (first gap included),
/// listed in a random order: (blocklens, disps).
fn scatter_blocks(rng: &mut Rng, lens: &[usize]) -> (Vec<usize>, Vec<isize>) {
    let mut at = rng.range(0, 2) as isize;
    let mut blocks = vec![];
    for &l in lens {
        blocks.push((l, at));
        at += (l + rng.range(0, 2)) as isize;
    }
    rng.shuffle(&mut blocks);
    blocks.into_iter().unzip()
}

/// A random layout of exactly `n` elements whose data spans at most `max_span`
/// elements; `neg_ok` allows offsets below 0 (target side, compensated by the
/// displacement).
fn gen_layout(rng: &mut Rng, n: usize, max_span: usize, neg_ok: bool) -> Layout {
    let plain = Layout {
        shape: Shape::Plain,
        count: n,
        idx: (0..n as isize).collect(),
    };
    for _ in 0..4 {
        let k = rng.divisor(n).min(4);
        let k = if n % k == 0 { k } else { 1 };
        let m = n / k;
        // one instance: shape, offsets, extent (elements)
        let (shape, one, extent): (Shape, Vec<isize>, isize) = match rng.below(8) {
            0 => return plain,
            1 => (Shape::Contig(m), (0..m as isize).collect(), m as isize),
            2 | 3 => {
                let bl = rng.divisor(m);
                let count = m / bl;
                let mut stride = (bl + rng.range(0, 3)) as isize;
                if neg_ok && count > 1 && rng.chance(30) {
                    stride = -stride;
                }
                let mut one = vec![];
                for j in 0..count as isize {
                    one.extend((0..bl as isize).map(|e| j * stride + e));
                }
                let ext = one.iter().max().unwrap_or(&0) + 1 - one.iter().min().unwrap_or(&0);
                let shape = if rng.chance(50) {
                    Shape::Vector { count, bl, stride }
                } else {
                    Shape::Hvector {
                        count,
                        bl,
                        stride_bytes: stride * 8,
                    }
                };
                (shape, one, ext)
            }
            4 | 5 => {
                let blocks = rng.range(1, m.min(4));
                let mut lens = vec![1; blocks];
                for _ in blocks..m {
                    let b = rng.below(blocks);
                    lens[b] += 1;
                }
                let (bls, disps) = scatter_blocks(rng, &lens);
                let one = blocks_offsets(&bls, &disps);
                let ext = extent_of(&one);
                (Shape::Indexed { bls, disps }, one, ext)
            }
            6 => {
                let bl = rng.divisor(m);
                let (bls, disps) = scatter_blocks(rng, &vec![bl; m / bl]);
                let one = blocks_offsets(&bls, &disps);
                let ext = extent_of(&one);
                (Shape::IndexedBlock { bl, disps }, one, ext)
            }
            _ => {
                let r = rng.divisor(m);
                let c = m / r;
                let subs = [r, c];
                let sizes = [r + rng.range(0, 2), c + rng.range(0, 2)];
                let starts = [rng.range(0, sizes[0] - r), rng.range(0, sizes[1] - c)];
                let fortran = rng.chance(50);
                let mut one = vec![];
                if fortran {
                    // dimension 0 varies fastest: (i0, i1) at i0 + i1 * sizes[0]
                    for i1 in 0..subs[1] {
                        for i0 in 0..subs[0] {
                            one.push(((starts[0] + i0) + (starts[1] + i1) * sizes[0]) as isize);
                        }
                    }
                } else {
                    for i0 in 0..subs[0] {
                        for i1 in 0..subs[1] {
                            one.push(((starts[0] + i0) * sizes[1] + (starts[1] + i1)) as isize);
                        }
                    }
                }
                let shape = Shape::Subarray {
                    sizes,
                    subs,
                    starts,
                    fortran,
                };
                (shape, one, (sizes[0] * sizes[1]) as isize)
            }
        };
        let mut idx = Vec::with_capacity(n);
        for i in 0..k as isize {
            idx.extend(one.iter().map(|&o| o + i * extent));
        }
        let l = Layout {
            shape,
            count: k,
            idx,
        };
        if (l.hi() - l.lo()) as usize <= max_span && (neg_ok || l.lo() >= 0) {
            return l;
        }
    }
    plain
}

fn blocks_offsets(bls: &[usize], disps: &[isize]) -> Vec<isize> {
    let mut v = vec![];
    for (&l, &d) in bls.iter().zip(disps) {
        v.extend((0..l as isize).map(|e| d + e));
    }
    v
}

/// Extent of an indexed type: upper bound minus lower bound of its data.
fn extent_of(offsets: &[isize]) -> isize {
    offsets.iter().max().unwrap_or(&0) + 1 - offsets.iter().min().unwrap_or(&0)
}

// ---- calls and steps ---------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Put,
    Get,
    Acc(Op),
    GetAcc(Op),
    Fop(Op),
    Cas,
    RPut,
    RGet,
    RAcc(Op),
    RGetAcc(Op),
}

impl Kind {
    fn fetches(self) -> bool {
        matches!(
            self,
            Kind::Get | Kind::GetAcc(_) | Kind::Fop(_) | Kind::Cas | Kind::RGet | Kind::RGetAcc(_)
        )
    }

    fn has_origin(self) -> bool {
        match self {
            Kind::Get | Kind::RGet => false,
            Kind::GetAcc(op) | Kind::RGetAcc(op) | Kind::Fop(op) => op != Op::NoOp,
            _ => true,
        }
    }

    fn op(self) -> Op {
        match self {
            Kind::Put | Kind::RPut | Kind::Cas => Op::Replace,
            Kind::Get | Kind::RGet => Op::NoOp,
            Kind::Acc(o) | Kind::GetAcc(o) | Kind::Fop(o) | Kind::RAcc(o) | Kind::RGetAcc(o) => o,
        }
    }

    /// The class for the conflict rules of own regions.
    fn class(self) -> u8 {
        match self {
            Kind::Put | Kind::RPut => PUT,
            Kind::Get | Kind::RGet => GOT,
            _ => ACC,
        }
    }
}

const CLEAN: u8 = 0;
const ACC: u8 = 1;
const PUT: u8 = 2;
const GOT: u8 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Region {
    Own,
    Sum,
    Xor,
}

/// What the k-th fetched element must be.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Exact(i64),
    /// SUM region element `e`: between start + mine_before and end - (mine - mine_before).
    SumBound {
        e: usize,
        mine_before: i64,
    },
    Any,
}

/// How a request is completed.
#[derive(Debug, Clone, Copy)]
enum Completion {
    Wait,
    TestLoop,
    Defer,
}

#[derive(Debug, Clone)]
struct Call {
    kind: Kind,
    /// `None`: the null rank.
    target: Option<usize>,
    region: Region,
    disp: usize,
    tl: Layout,
    /// Origin layout over `origin` (also used for fetch_and_op / cas: one element).
    ol: Layout,
    origin: Vec<i64>,
    /// Result layout and the length of the result buffer.
    rl: Layout,
    rlen: usize,
    compare: i64,
    expect: Vec<Expect>,
    /// Typed convenience form rather than the `_with` form, where one exists.
    typed: bool,
    completion: Completion,
}

impl Call {
    fn describe(&self) -> String {
        format!(
            "{:?} to {} {:?} region disp {} target {} origin {} result {}",
            self.kind,
            self.target.map_or("NULL".to_owned(), |t| t.to_string()),
            self.region,
            self.disp,
            self.tl.describe(),
            self.ol.describe(),
            self.rl.describe()
        )
    }
}

#[derive(Debug, Clone)]
enum Step {
    Call(Box<Call>),
    Fence(Assert),
    LockAll(Assert),
    UnlockAll,
    Lock(LockType, usize),
    Unlock(usize),
    Flush(usize),
    FlushAll,
    FlushLocal(usize),
    FlushLocalAll,
    Post(Vec<usize>),
    Start(Vec<usize>),
    Complete,
    WaitPost,
    /// Complete the deferred requests.
    WaitRequests,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Fence,
    LockAll,
    Lock,
    Pscw,
}

const MODES: [Mode; 4] = [Mode::Fence, Mode::LockAll, Mode::Lock, Mode::Pscw];

// ---- the model ---------------------------------------------------------------------

fn apply(op: Op, t: i64, o: i64) -> i64 {
    match op {
        Op::Sum => t.wrapping_add(o),
        Op::Prod => t.wrapping_mul(o),
        Op::Max => t.max(o),
        Op::Min => t.min(o),
        Op::Land => ((t != 0) && (o != 0)) as i64,
        Op::Lor => ((t != 0) || (o != 0)) as i64,
        Op::Lxor => ((t != 0) != (o != 0)) as i64,
        Op::Band => t & o,
        Op::Bor => t | o,
        Op::Bxor => t ^ o,
        Op::Replace => o,
        Op::NoOp => t,
        other => unreachable!("{other:?} is never generated"),
    }
}

const OWN_OPS: [Op; 11] = [
    Op::Sum,
    Op::Prod,
    Op::Max,
    Op::Min,
    Op::Land,
    Op::Lor,
    Op::Lxor,
    Op::Band,
    Op::Bor,
    Op::Bxor,
    Op::Replace,
];

/// Generates one origin's steps of one epoch, applying each call to the model as it
/// goes (`model[target][element]`).
struct Gen<'a> {
    rng: Rng,
    origin: usize,
    model: &'a mut [Vec<i64>],
    /// Per target, per own-region element: CLEAN, ACC, PUT or GOT in the current
    /// synchronization interval.
    track: Vec<[u8; OWN]>,
    /// Per target, per SUM element: this origin's addends so far this epoch.
    mine: &'a mut [Vec<i64>],
    steps: Vec<Step>,
    calls: u64,
}

impl Gen<'_> {
    fn reset(&mut self, t: Option<usize>) {
        match t {
            Some(t) => self.track[t] = [CLEAN; OWN],
            None => self.track.iter_mut().for_each(|r| *r = [CLEAN; OWN]),
        }
    }

    fn push(&mut self, s: Step) {
        match &s {
            Step::Flush(t) | Step::Unlock(t) => self.reset(Some(*t)),
            Step::Fence(_) | Step::FlushAll | Step::UnlockAll | Step::Complete => self.reset(None),
            _ => {}
        }
        self.steps.push(s);
    }

    /// One random call to one of `targets` (or the null rank); request forms when
    /// `passive`. Skipped if no conflict-free choice is found.
    fn call(&mut self, targets: &[usize], passive: bool) {
        for _ in 0..6 {
            if let Some(c) = self.try_call(targets, passive) {
                self.calls += 1;
                self.steps.push(Step::Call(Box::new(c)));
                return;
            }
        }
    }

    fn try_call(&mut self, targets: &[usize], passive: bool) -> Option<Call> {
        let rng = &mut self.rng;
        let target = if rng.chance(7) {
            None
        } else {
            Some(rng.pick(targets))
        };
        let region = match rng.below(20) {
            0..=11 => Region::Own,
            12..=16 => Region::Sum,
            _ => Region::Xor,
        };
        let req = passive && rng.chance(35);
        let kind = match region {
            Region::Own => {
                let op = rng.pick(&OWN_OPS);
                let fop = if rng.chance(15) { Op::NoOp } else { op };
                match (rng.below(6), req) {
                    (0, false) => Kind::Put,
                    (0, true) => Kind::RPut,
                    (1, false) => Kind::Get,
                    (1, true) => Kind::RGet,
                    (2, false) => Kind::Acc(op),
                    (2, true) => Kind::RAcc(op),
                    (3, false) => Kind::GetAcc(fop),
                    (3, true) => Kind::RGetAcc(fop),
                    (4, _) => Kind::Fop(fop),
                    _ => Kind::Cas,
                }
            }
            Region::Sum | Region::Xor => {
                let op = if region == Region::Sum {
                    Op::Sum
                } else {
                    Op::Bxor
                };
                let fop = if rng.chance(20) { Op::NoOp } else { op };
                match (rng.below(3), req) {
                    (0, false) => Kind::Acc(op),
                    (0, true) => Kind::RAcc(op),
                    (1, false) => Kind::GetAcc(fop),
                    (1, true) => Kind::RGetAcc(fop),
                    _ => Kind::Fop(fop),
                }
            }
        };
        let (rbase, rlen) = match region {
            Region::Own => (self.origin * OWN, OWN),
            Region::Sum => (SUM_BASE, SUM_LEN),
            Region::Xor => (XOR_BASE, XOR_LEN),
        };
        let single = matches!(kind, Kind::Fop(_) | Kind::Cas);
        let n = if single {
            1
        } else if rng.chance(70) {
            rng.range(1, 8)
        } else {
            rng.range(9, 16)
        };
        let tl = if single {
            // fetch_and_op and compare_and_swap take one predefined element
            Layout {
                shape: Shape::Plain,
                count: 1,
                idx: vec![0],
            }
        } else {
            gen_layout(rng, n, rlen, true)
        };
        let span = (tl.hi() - tl.lo()) as usize;
        // data at [rbase, rbase + rlen), displacement >= 0
        let min_x = (tl.lo() - rbase as isize).max(0) as usize;
        if min_x > rlen - span {
            return None;
        }
        let disp = (rbase as isize - tl.lo() + rng.range(min_x, rlen - span) as isize) as usize;
        let elems: Vec<usize> = tl
            .idx
            .iter()
            .map(|&i| (disp as isize + i) as usize)
            .collect();
        if let (Region::Own, Some(t)) = (region, target) {
            let class = kind.class();
            let ok = elems.iter().all(|&e| {
                let s = self.track[t][e - rbase];
                s == CLEAN || s == class
            });
            if !ok || (class == PUT && elems.iter().any(|&e| self.track[t][e - rbase] != CLEAN)) {
                return None;
            }
            for &e in &elems {
                self.track[t][e - rbase] = class;
            }
        }
        let rng = &mut self.rng;
        let ol = if single || !rng.chance(60) {
            gen_layout(rng, n, n, false)
        } else {
            gen_layout(rng, n, 3 * n + 4, false)
        };
        let mut origin = vec![0i64; ol.hi() as usize + rng.below(2)];
        if kind.has_origin() {
            for &i in &ol.idx {
                origin[i as usize] = match region {
                    Region::Own => rng.value(),
                    Region::Sum => rng.range(0, 999) as i64,
                    Region::Xor => rng.next() as i64,
                };
            }
        } else if !single {
            origin.clear();
        }
        let rl = if !kind.fetches() {
            Layout {
                shape: Shape::Plain,
                count: 0,
                idx: vec![],
            }
        } else if single || !rng.chance(60) {
            gen_layout(rng, n, n, false)
        } else {
            gen_layout(rng, n, 3 * n + 4, false)
        };
        let result_len = if kind.fetches() {
            rl.hi() as usize + rng.below(3)
        } else {
            0
        };
        let typed = rng.chance(50);
        let completion = match rng.below(3) {
            0 => Completion::Wait,
            1 => Completion::TestLoop,
            _ => Completion::Defer,
        };
        let mut compare = 0;
        let mut expect = vec![Expect::Any; if kind.fetches() { n } else { 0 }];
        if let Some(t) = target {
            let op = kind.op();
            for (k, &e) in elems.iter().enumerate() {
                let old = self.model[t][e];
                let o = origin.get(ol.idx[k] as usize).copied().unwrap_or(0);
                match region {
                    Region::Own => {
                        if kind.fetches() {
                            expect[k] = Expect::Exact(old);
                        }
                        self.model[t][e] = if kind == Kind::Cas {
                            compare = if rng.chance(50) {
                                old
                            } else {
                                old ^ (1 + rng.below(7) as i64)
                            };
                            if old == compare {
                                o
                            } else {
                                old
                            }
                        } else {
                            apply(op, old, o)
                        };
                    }
                    Region::Sum => {
                        let m = &mut self.mine[t][e - SUM_BASE];
                        if kind.fetches() {
                            expect[k] = Expect::SumBound { e, mine_before: *m };
                        }
                        if op == Op::Sum {
                            *m += o;
                            self.model[t][e] += o;
                        }
                    }
                    Region::Xor => self.model[t][e] = apply(op, old, o),
                }
            }
        }
        Some(Call {
            kind,
            target,
            region,
            disp,
            tl,
            ol,
            origin,
            rl,
            rlen: result_len,
            compare,
            expect,
            typed,
            completion,
        })
    }
}

/// Epoch-wide choices every rank makes alike.
#[derive(Debug)]
struct EpochPlan {
    mode: Mode,
    /// Fence: assertion of each fence (first opens, last closes).
    fences: Vec<Assert>,
    /// PSCW: each origin's access group.
    access: Vec<Vec<usize>>,
}

fn plan(epoch: u64) -> EpochPlan {
    let mut rng = Rng::new(&[epoch, u64::MAX]);
    let mode = MODES[(epoch % MODES.len() as u64) as usize];
    let phases = rng.range(1, 3);
    let mut fences = vec![if rng.chance(50) {
        Assert::NOPRECEDE
    } else {
        Assert::NONE
    }];
    for _ in 1..phases {
        fences.push(if rng.chance(30) {
            Assert::NOSTORE
        } else {
            Assert::NONE
        });
    }
    fences.push(if rng.chance(50) {
        Assert::NOSUCCEED | Assert::NOSTORE
    } else {
        Assert::NOSUCCEED
    });
    let access = (0..P)
        .map(|_| {
            let mut all: Vec<usize> = (0..P).collect();
            rng.shuffle(&mut all);
            all.truncate(rng.range(1, 3));
            all
        })
        .collect();
    EpochPlan {
        mode,
        fences,
        access,
    }
}

/// Generates origin `o`'s steps of epoch `epoch`, applying its calls to the model.
fn generate(
    epoch: u64,
    o: usize,
    plan: &EpochPlan,
    model: &mut [Vec<i64>],
    mine: &mut [Vec<i64>],
) -> (Vec<Step>, u64) {
    let mut g = Gen {
        rng: Rng::new(&[epoch, o as u64]),
        origin: o,
        model,
        track: vec![[CLEAN; OWN]; P],
        mine,
        steps: vec![],
        calls: 0,
    };
    let all: Vec<usize> = (0..P).collect();
    match plan.mode {
        Mode::Fence => {
            for (i, &a) in plan.fences.iter().enumerate() {
                g.push(Step::Fence(a));
                if i + 1 < plan.fences.len() {
                    for _ in 0..g.rng.range(3, 9) {
                        g.call(&all, false);
                    }
                }
            }
        }
        Mode::LockAll => {
            let a = if g.rng.chance(30) {
                Assert::NOCHECK
            } else {
                Assert::NONE
            };
            g.push(Step::LockAll(a));
            for _ in 0..g.rng.range(6, 16) {
                g.call(&all, true);
                match g.rng.below(12) {
                    0 | 1 => {
                        let t = g.rng.below(P);
                        g.push(Step::Flush(t));
                    }
                    2 => g.push(Step::FlushAll),
                    3 => {
                        let t = g.rng.below(P);
                        g.push(Step::FlushLocal(t));
                    }
                    4 => g.push(Step::FlushLocalAll),
                    5 => g.push(Step::WaitRequests),
                    _ => {}
                }
            }
            if g.rng.chance(50) {
                g.push(Step::WaitRequests);
            }
            g.push(Step::UnlockAll);
        }
        Mode::Lock => {
            let mut order = all.clone();
            g.rng.shuffle(&mut order);
            order.truncate(g.rng.range(1, P));
            for t in order {
                let kind = if g.rng.chance(80) {
                    LockType::Exclusive
                } else {
                    LockType::Shared
                };
                g.push(Step::Lock(kind, t));
                for _ in 0..g.rng.range(2, 6) {
                    g.call(&[t], true);
                    if g.rng.chance(20) {
                        g.push(Step::Flush(t));
                    } else if g.rng.chance(10) {
                        g.push(Step::FlushLocal(t));
                    }
                }
                if g.rng.chance(50) {
                    g.push(Step::WaitRequests);
                }
                g.push(Step::Unlock(t));
            }
        }
        Mode::Pscw => {
            let exposed: Vec<usize> = (0..P).filter(|&x| plan.access[x].contains(&o)).collect();
            let access = plan.access[o].clone();
            let post_first = g.rng.chance(50);
            if post_first && !exposed.is_empty() {
                g.push(Step::Post(exposed.clone()));
            }
            g.push(Step::Start(access.clone()));
            if !post_first && !exposed.is_empty() {
                g.push(Step::Post(exposed.clone()));
            }
            for _ in 0..g.rng.range(3, 9) {
                g.call(&access, false);
            }
            g.push(Step::Complete);
            if !exposed.is_empty() {
                g.push(Step::WaitPost);
            }
        }
    }
    let calls = g.calls;
    (g.steps, calls)
}

// ---- execution ---------------------------------------------------------------------

fn rank(t: Option<usize>) -> Rank {
    t.map_or(Rank::NULL, |t| Rank::new(t as u32))
}

/// The datatypes of one call, built before the epoch runs (requests borrow them).
struct Built {
    t: Datatype,
    o: Datatype,
    r: Datatype,
}

fn bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// Issues one call; a request is completed now or pushed to `pending`.
fn issue<'b>(
    win: &'b Window<'_>,
    c: &'b Call,
    b: &'b Built,
    res: &'b mut [i64],
    pending: &mut Vec<Request<'b>>,
) -> Result<()> {
    let r = rank(c.target);
    let disp = c.disp as i64;
    let plain = c.tl.is_plain() && c.ol.is_plain() && (!c.kind.fetches() || c.rl.is_plain());
    let typed = c.typed && plain;
    let target = Target::new(r, disp, c.tl.count, &b.t);
    let origin = Buffer::typed(&c.origin, c.ol.count, &b.o);
    let n = c.tl.idx.len();
    let req = match c.kind {
        Kind::Put if typed => return win.put(&c.origin[..n], r, disp),
        Kind::Put => return win.put_with(origin, target),
        Kind::Get if typed => return win.get(&mut res[..n], r, disp),
        Kind::Get => return win.get_with(BufferMut::typed(res, c.rl.count, &b.r)?, target),
        Kind::Acc(op) if typed => return win.accumulate(&c.origin[..n], r, disp, op),
        Kind::Acc(op) => return win.accumulate_with(origin, target, op),
        Kind::GetAcc(op) if typed => {
            let o = if op == Op::NoOp {
                &[][..]
            } else {
                &c.origin[..n]
            };
            return win.get_accumulate(o, &mut res[..n], r, disp, op);
        }
        Kind::GetAcc(op) => {
            let o = (op != Op::NoOp).then_some(origin);
            let result = BufferMut::typed(res, c.rl.count, &b.r)?;
            return win.get_accumulate_with(o, result, target, op);
        }
        Kind::Fop(op) => {
            let o = c.origin.get(c.ol.idx[0] as usize).copied().unwrap_or(0);
            let at = c.rl.idx[0] as usize;
            if c.typed {
                let old = win.fetch_and_op(o, r, disp, op)?;
                if c.target.is_some() {
                    res[at] = old;
                }
                return Ok(());
            }
            let mut out = bytes(&res[at..at + 1]);
            let ob = if op == Op::NoOp { vec![] } else { bytes(&[o]) };
            win.fetch_and_op_with(&ob, &mut out, &b.t, r, disp, op)?;
            res[at] = i64::from_ne_bytes(out[..8].try_into().unwrap_or_default());
            return Ok(());
        }
        Kind::Cas => {
            let o = c.origin[c.ol.idx[0] as usize];
            let at = c.rl.idx[0] as usize;
            if c.typed {
                let old = win.compare_and_swap(o, c.compare, r, disp)?;
                if c.target.is_some() {
                    res[at] = old;
                }
                return Ok(());
            }
            let mut out = bytes(&res[at..at + 1]);
            win.compare_and_swap_with(&bytes(&[o]), &bytes(&[c.compare]), &mut out, &b.t, r, disp)?;
            res[at] = i64::from_ne_bytes(out[..8].try_into().unwrap_or_default());
            return Ok(());
        }
        Kind::RPut if typed => win.rput(&c.origin[..n], r, disp)?,
        Kind::RPut => win.rput_with(origin, target)?,
        Kind::RGet if typed => win.rget(&mut res[..n], r, disp)?,
        Kind::RGet => win.rget_with(BufferMut::typed(res, c.rl.count, &b.r)?, target)?,
        Kind::RAcc(op) if typed => win.raccumulate(&c.origin[..n], r, disp, op)?,
        Kind::RAcc(op) => win.raccumulate_with(origin, target, op)?,
        Kind::RGetAcc(op) if typed && op != Op::NoOp => {
            win.rget_accumulate(&c.origin[..n], &mut res[..n], r, disp, op)?
        }
        Kind::RGetAcc(op) => {
            let o = (op != Op::NoOp).then_some(origin);
            let result = BufferMut::typed(res, c.rl.count, &b.r)?;
            win.rget_accumulate_with(o, result, target, op)?
        }
    };
    let mut req = req;
    match c.completion {
        Completion::Wait => req.wait(),
        Completion::TestLoop => {
            while !req.test()? {
                std::thread::yield_now();
            }
            req.wait()
        }
        Completion::Defer => {
            pending.push(req);
            Ok(())
        }
    }
}

/// Completes deferred requests, in one of several ways.
fn complete_all(pending: &mut Vec<Request<'_>>, how: usize) -> Result<()> {
    match how % 3 {
        0 => Request::wait_all(pending.drain(..)),
        1 => {
            while Request::wait_any(pending)?.is_some() {}
            Ok(())
        }
        _ => {
            while !Request::test_all(pending)? {
                std::thread::yield_now();
            }
            Request::wait_all(pending.drain(..))
        }
    }
}

/// Runs this rank's steps of one epoch; returns the result buffers, one per step.
fn run_epoch(win: &Window<'_>, steps: &[Step], epoch: u64) -> Result<Vec<Vec<i64>>> {
    let me = win.rank();
    let built: Vec<Option<Built>> = steps
        .iter()
        .map(|s| match s {
            Step::Call(c) => Ok(Some(Built {
                t: c.tl.build()?,
                o: c.ol.build()?,
                r: c.rl.build()?,
            })),
            _ => Ok(None),
        })
        .collect::<Result<_>>()?;
    let mut results: Vec<Vec<i64>> = steps
        .iter()
        .map(|s| match s {
            Step::Call(c) => vec![SENTINEL; c.rlen],
            _ => vec![],
        })
        .collect();
    let mut pending: Vec<Request<'_>> = vec![];
    let mut waits = 0;
    for (i, ((s, b), res)) in steps.iter().zip(&built).zip(results.iter_mut()).enumerate() {
        let context = |e: &rma_win::Error| {
            eprintln!(
                "soak: rank {me} epoch {epoch} step {i} ({s:?}): {e} ({})",
                e.class()
            );
        };
        let r = match (s, b) {
            (Step::Call(c), Some(b)) => issue(win, c, b, res, &mut pending),
            (Step::Fence(a), _) => win.fence(*a),
            (Step::LockAll(a), _) => win.lock_all(*a),
            (Step::UnlockAll, _) => win.unlock_all(),
            (Step::Lock(k, t), _) => win.lock(*k, rank(Some(*t)), Assert::NONE),
            (Step::Unlock(t), _) => win.unlock(rank(Some(*t))),
            (Step::Flush(t), _) => win.flush(rank(Some(*t))),
            (Step::FlushAll, _) => win.flush_all(),
            (Step::FlushLocal(t), _) => win.flush_local(rank(Some(*t))),
            (Step::FlushLocalAll, _) => win.flush_local_all(),
            (Step::Post(g), _) => win.post(&Group::new(g)?, Assert::NONE),
            (Step::Start(g), _) => win.start(&Group::new(g)?, Assert::NONE),
            (Step::Complete, _) => win.complete(),
            (Step::WaitPost, _) => {
                // test a while, then wait (which notices a dead origin; test only
                // says "not yet")
                let mut done = false;
                for _ in 0..if i % 2 == 0 { 0 } else { 2000 } {
                    done = win.test()?;
                    if done {
                        break;
                    }
                    std::thread::yield_now();
                }
                if done {
                    Ok(())
                } else {
                    win.wait()
                }
            }
            (Step::WaitRequests, _) => {
                waits += 1;
                complete_all(&mut pending, waits)
            }
            (Step::Call(_), None) => unreachable!("every call has its datatypes"),
        };
        r.inspect_err(context)?;
    }
    // requests may complete after the epoch closed (rule 15)
    complete_all(&mut pending, epoch as usize)?;
    drop(pending);
    Ok(results)
}

/// Checks the result buffers of this rank's calls of `epoch`.
fn check_results(
    epoch: u64,
    mode: Mode,
    steps: &[Step],
    results: &[Vec<i64>],
    start: &[Vec<i64>],
    end: &[Vec<i64>],
    mine: &[Vec<i64>],
) {
    for (i, (s, res)) in steps.iter().zip(results).enumerate() {
        let Step::Call(c) = s else { continue };
        let mut want = vec![SENTINEL; res.len()];
        if c.target.is_some() {
            for (k, &slot) in c.rl.idx.iter().enumerate() {
                let got = res[slot as usize];
                let ok = match c.expect[k] {
                    Expect::Exact(v) => got == v,
                    Expect::Any => true,
                    Expect::SumBound { e, mine_before } => {
                        let t = c.target.unwrap_or(0);
                        let lo = start[t][e] + mine_before;
                        let hi = end[t][e] - (mine[t][e - SUM_BASE] - mine_before);
                        if !(lo..=hi).contains(&got) {
                            panic!(
                                "soak epoch {epoch} ({mode:?}) step {i}: {}: fetched element {k} \
                                 (window element {e}) = {got}, outside [{lo}, {hi}]",
                                c.describe()
                            );
                        }
                        true
                    }
                };
                assert!(
                    ok,
                    "soak epoch {epoch} ({mode:?}) step {i}: {}: fetched element {k} (result slot \
                     {slot}, window element {}) = {got}, model says {:?}",
                    c.describe(),
                    c.disp as isize + c.tl.idx[k],
                    c.expect[k]
                );
                want[slot as usize] = got;
            }
        }
        for (slot, (&g, &w)) in res.iter().zip(&want).enumerate() {
            assert_eq!(
                g,
                w,
                "soak epoch {epoch} ({mode:?}) step {i}: {}: result slot {slot} outside the \
                 result layout (or of a null-rank call) was written",
                c.describe()
            );
        }
    }
}

fn region_of(e: usize) -> String {
    if e < SUM_BASE {
        format!("own region of rank {} index {}", e / OWN, e % OWN)
    } else if e < XOR_BASE {
        format!("SUM region index {}", e - SUM_BASE)
    } else {
        format!("XOR region index {}", e - XOR_BASE)
    }
}

/// The soak case (see the module documentation).
pub(crate) fn soak(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    assert_eq!(p, P, "the soak runs on {P} ranks");
    let secs: Option<u64> = std::env::var(ENV_SECS).ok().and_then(|s| s.parse().ok());
    let mut win = Window::allocate::<i64>(world, WIN, info)?;
    let mut model = vec![vec![0i64; WIN]; P];
    let began = Instant::now();
    let (mut epoch, mut calls, mut own_calls) = (0u64, 0u64, 0u64);
    let mut per_mode = [0u64; 4];
    world.barrier()?;
    loop {
        let plan = plan(epoch);
        let start = model.clone();
        let mut mine = vec![vec![0i64; SUM_LEN]; P];
        let mut my_steps = vec![];
        for o in 0..P {
            let mut scratch = vec![vec![0i64; SUM_LEN]; P];
            let m = if o == me { &mut mine } else { &mut scratch };
            let (steps, n) = generate(epoch, o, &plan, &mut model, m);
            calls += n;
            if o == me {
                own_calls += n;
                my_steps = steps;
            }
        }
        let results = run_epoch(&win, &my_steps, epoch)?;
        world.barrier()?;
        let local: Vec<i64> = win.local_vec()?;
        let stop = match secs {
            Some(s) => began.elapsed() >= Duration::from_secs(s),
            None => epoch + 1 >= ci_epochs(),
        };
        // also the barrier after which others may write my window again
        let votes = world.allgather(&[stop as u8])?;
        let mismatches: Vec<String> = local
            .iter()
            .zip(&model[me])
            .enumerate()
            .filter(|(_, (g, w))| g != w)
            .take(8)
            .map(|(e, (g, w))| format!("{} (element {e}): got {g}, model {w}", region_of(e)))
            .collect();
        assert!(
            mismatches.is_empty(),
            "soak: rank {me}, epoch {epoch} ({:?}), transport {}: window differs from the model:\n  {}",
            plan.mode,
            win.transport_name(),
            mismatches.join("\n  ")
        );
        check_results(epoch, plan.mode, &my_steps, &results, &start, &model, &mine);
        per_mode[MODES.iter().position(|m| *m == plan.mode).unwrap_or(0)] += 1;
        epoch += 1;
        if votes.iter().any(|v| v.first() == Some(&1)) {
            break;
        }
    }
    if me == 0 {
        eprintln!(
            "soak: transport {}, {:?} mode: {epoch} epochs (fence/lock_all/lock/pscw {per_mode:?}), \
             {calls} calls ({own_calls} by rank 0), {:.2} s",
            win.transport_name(),
            world.mode(),
            began.elapsed().as_secs_f64()
        );
    }
    world.barrier()?;
    win.free()
}
