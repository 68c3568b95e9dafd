//! Running the soak's steps on a window, and checking what the calls fetched against
//! the model.

use super::model::{Call, Completion, Expect, Kind, Mode, Step};
use super::{SENTINEL, SUM_BASE};
use rma_win::{
    Assert, Buffer, BufferMut, Datatype, Group, Op, PassiveEpoch, Rank, Request, Result, Target,
    Window,
};

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

/// Issues one call; a request is completed now or pushed to `pending`. Inside a
/// lock_all epoch opened as a guard (`guard`), calls with plain layouts to a real rank go
/// through a target handle instead of the window.
fn issue<'b>(
    win: &'b Window<'_>,
    guard: Option<&PassiveEpoch<'_, '_>>,
    c: &'b Call,
    b: &'b Built,
    res: &'b mut [i64],
    pending: &mut Vec<Request<'b>>,
) -> Result<()> {
    let r = rank(c.target);
    let disp = c.disp as i64;
    let plain = c.tl.is_plain() && c.ol.is_plain() && (!c.kind.fetches() || c.rl.is_plain());
    let typed = c.typed && plain;
    if let (Some(epoch), Some(_), true) = (guard, c.target, plain) {
        let n = c.tl.idx.len();
        let h = epoch.target(r)?;
        match c.kind {
            Kind::Put => return h.put(&c.origin[..n], disp),
            Kind::Get => return h.get(&mut res[..n], disp),
            Kind::Acc(op) => return h.accumulate(&c.origin[..n], disp, op),
            Kind::Fop(op) => {
                let o = c.origin.get(c.ol.idx[0] as usize).copied().unwrap_or(0);
                res[c.rl.idx[0] as usize] = h.fetch_and_op(o, disp, op)?;
                return Ok(());
            }
            Kind::Cas => {
                let o = c.origin[c.ol.idx[0] as usize];
                res[c.rl.idx[0] as usize] = h.compare_and_swap(o, c.compare, disp)?;
                return Ok(());
            }
            _ => {}
        }
    }
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
pub(super) fn run_epoch(win: &Window<'_>, steps: &[Step], epoch: u64) -> Result<Vec<Vec<i64>>> {
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
    // every other epoch opens its lock_all epochs as guards and sends plain calls
    // through target handles (the handle API under the same model and checks)
    let guarded = epoch % 2 == 1;
    let mut guard: Option<PassiveEpoch<'_, '_>> = None;
    let mut waits = 0;
    for (i, ((s, b), res)) in steps.iter().zip(&built).zip(results.iter_mut()).enumerate() {
        let context = |e: &rma_win::Error| {
            eprintln!(
                "soak: rank {me} epoch {epoch} step {i} ({s:?}): {e} ({})",
                e.class()
            );
        };
        let r = match (s, b) {
            (Step::Call(c), Some(b)) => issue(win, guard.as_ref(), c, b, res, &mut pending),
            (Step::Fence(a), _) => win.fence(*a),
            (Step::LockAll(a), _) if guarded => win.lock_all_epoch(*a).map(|g| guard = Some(g)),
            (Step::LockAll(a), _) => win.lock_all(*a),
            (Step::UnlockAll, _) => match guard.take() {
                Some(g) => g.unlock(),
                None => win.unlock_all(),
            },
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
pub(super) fn check_results(
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
