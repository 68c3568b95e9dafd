//! The soak's random call generator: every rank generates every origin's steps of an
//! epoch from the seed and applies their calls to the model as it goes.

use super::model::{
    apply, Call, Completion, Expect, Kind, Layout, Mode, Region, Shape, Step, CLEAN, MODES, PUT,
};
use super::{OWN, P, SEED, SUM_BASE, SUM_LEN, XOR_BASE, XOR_LEN};
use rma_core::rng::SplitMix64;
use rma_win::{Assert, LockType, Op};

// ---- randomness --------------------------------------------------------------------

/// splitmix64 ([`SplitMix64`]) with the choices the generator makes.
#[derive(Debug, Clone)]
struct Rng(SplitMix64);

impl Rng {
    /// The generator seeded by [`SEED`] and then each of `parts`.
    fn new(parts: &[u64]) -> Rng {
        let mut r = SplitMix64::new(SEED);
        for &p in parts {
            r.absorb(p);
        }
        Rng(r)
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
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

// ---- random layouts ----------------------------------------------------------------

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

// ---- steps of an epoch --------------------------------------------------------------

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
pub(super) struct EpochPlan {
    pub(super) mode: Mode,
    /// Fence: assertion of each fence (first opens, last closes).
    fences: Vec<Assert>,
    /// PSCW: each origin's access group.
    access: Vec<Vec<usize>>,
}

pub(super) fn plan(epoch: u64) -> EpochPlan {
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
pub(super) fn generate(
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
