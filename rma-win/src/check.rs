//! The conflict checker (`rma_check` info key, `RMA_CHECK` environment variable).
//!
//! MPI calls two accesses to overlapping bytes of one window *conflicting* when they
//! come from different origins (the target's own loads and stores count as an origin),
//! no synchronization orders them, and they are not both reads or both
//! accumulate-family calls with the same basic type and compatible ops; a program that
//! makes them is erroneous. A checked window records every access and compares them
//! where they meet: in a log at the target.
//!
//! **Time.** Each target's log holds a counter, its *clock*: every stamp is one atomic
//! fetch-and-add on it (through the window's own transport), so stamps at one target
//! are unique and ordered as the stamping calls were. An RMA call is stamped when it
//! is issued; it is *complete* when a synchronization of its origin completes it
//! (flush, unlock, the closing call of an access epoch) and is stamped again then; a
//! fence stamps the calls of the epoch it closes after every rank has entered it and
//! before any leaves it. In a passive-target epoch a fetching call is stamped
//! complete when it returns (rma delivers its result then); a call that fails leaves
//! no record. Two calls overlap in time when each was issued before the
//! other completed. A call issued after another completed, and after something ordered
//! it behind that completion (a barrier, a flag, an unlock and lock), has a later
//! stamp: it never overlaps. A local load or store through [`crate::Window::read_local`]
//! or [`crate::Window::write_local`] is one stamp: it conflicts with remote calls in
//! flight at that moment (windows are in the unified memory model).
//!
//! **Exchange.** At the synchronization that completes them, an origin appends its
//! calls' records to each target's log (a ring of slots, which are ticks of the same
//! clock; a writer clears the slot's tag, then writes the payload, then the tag, each
//! flushed, and a reader accepts a record only with the tag read the same before and
//! after the payload), then reads the
//! records in the slots from its oldest call's issue stamp (a record in an earlier
//! slot completed before that call began) up to the clock at the read, and compares.
//! Of two conflicting calls, the origin that synchronizes later finds the pair; when
//! both append at once, the one that reads later sees the other (each writes before
//! it reads). The synchronization then fails with
//! class RMA_CONFLICT naming both ranks, both call sites, the bytes and the rule (or,
//! in `conflicts_log` mode, logs it and succeeds).
//!
//! **PSCW.** The calls of different origins in one exposure epoch are unordered
//! however they fell in time, so their records are marked, and the target's wait
//! (or the test that ends the epoch) reads its own log from its post's stamp and
//! compares every pair of marked records regardless of their stamps.
//!
//! What it does not see: accesses through a shared window's raw memory
//! ([`crate::SharedView`] loads and stores), pairs from one origin (MPI leaves their
//! order to `accumulate_ordering` and to flushes, which the transport keeps), and pairs
//! that were unsynchronized but did not overlap in time in this run (outside one
//! exposure epoch). A ring that
//! wraps before a reader got to it is reported once (tracing, warn).

use rma_backends::AnyWindow;
use rma_core::{
    Access, BasicType, CheckMode, Contiguous, Epochs, Error, Memory, Op, Rank, Result, Shape,
    Transport,
};
use std::cell::Cell;
use std::panic::Location;
use std::sync::{Mutex, PoisonError};

/// Slots of each rank's log.
const SLOTS: usize = 2048;
/// Complete records a target's list holds before they go to its log without waiting
/// for a synchronization.
const EARLY: usize = 256;
/// Bytes of a record's payload.
const PAYLOAD: usize = 160;
/// Runs a record holds (a call with more runs takes several records).
const RUNS: usize = 4;
/// Bytes of a call site's file name kept (its tail).
const FILE: usize = 64;
/// Byte offsets in a log: the clock (whose ticks are also the ring's slots), the
/// tags, the payloads.
const CLOCK: usize = 0;
const TAGS: usize = 64;
const PAYLOADS: usize = TAGS + 8 * SLOTS;
/// A rank's log, in bytes.
pub(crate) const LOG_BYTES: usize = PAYLOADS + PAYLOAD * SLOTS;

thread_local! {
    /// The call site of the public call being made on this thread, for its record.
    static SITE: Cell<Option<&'static Location<'static>>> = const { Cell::new(None) };
}

/// Notes `site` as the call site of the call now being made (public entry points of
/// checked windows call this with their `#[track_caller]` location).
#[inline]
pub(crate) fn set_site(site: &'static Location<'static>) {
    SITE.with(|s| s.set(Some(site)));
}

/// A slot's tag: its slot number plus one (0: never written) and the origin of its
/// record, which a reader needs before fetching the payload.
fn tag(slot: u64, origin: usize) -> u64 {
    ((slot + 1) & ((1 << 48) - 1)) | ((origin as u64) << 48)
}

/// The slot and origin a tag names (`None`: never written).
fn untag(tag: u64) -> (Option<u64>, usize) {
    let slot = tag & ((1 << 48) - 1);
    (slot.checked_sub(1), (tag >> 48) as usize)
}

/// What an access does to its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// get.
    Read = 1,
    /// put.
    Write = 2,
    /// accumulate, get_accumulate, fetch_and_op, compare_and_swap.
    Acc = 3,
    /// The target's own load through the window.
    LocalRead = 4,
    /// The target's own store through the window.
    LocalWrite = 5,
}

impl Kind {
    fn from_u8(k: u8) -> Option<Kind> {
        Some(match k {
            1 => Kind::Read,
            2 => Kind::Write,
            3 => Kind::Acc,
            4 => Kind::LocalRead,
            5 => Kind::LocalWrite,
            _ => return None,
        })
    }
}

/// A record's byte ranges: one without an allocation (the common call).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Runs {
    One((u64, u64)),
    Many(Vec<(u64, u64)>),
}

impl Runs {
    fn as_slice(&self) -> &[(u64, u64)] {
        match self {
            Runs::One(r) => std::slice::from_ref(r),
            Runs::Many(v) => v,
        }
    }

    #[cfg(test)]
    fn of(v: &[(u64, u64)]) -> Runs {
        match v {
            [one] => Runs::One(*one),
            _ => Runs::Many(v.to_vec()),
        }
    }

    /// These runs and `r`.
    fn with(this: Option<Runs>, r: (u64, u64)) -> Runs {
        match this {
            None => Runs::One(r),
            Some(Runs::One(a)) => Runs::Many(vec![a, r]),
            Some(Runs::Many(mut v)) => {
                v.push(r);
                Runs::Many(v)
            }
        }
    }
}

/// compare_and_swap's op in a record (it replaces, as REPLACE does).
const CAS: u8 = 0xFE;

/// One access.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rec {
    origin: u32,
    kind: Kind,
    basic: u8,
    op: u8,
    /// Byte ranges `[start, end)` of the target's window.
    runs: Runs,
    issued: u64,
    completed: u64,
    line: u32,
    col: u32,
    file: std::borrow::Cow<'static, str>,
    /// Made in a PSCW access epoch: for the target it completes only at its wait
    /// (every origin's calls in one exposure epoch are unordered with each other).
    exposure: bool,
}

/// The bit of a record's kind byte that marks a call of a PSCW access epoch.
const EXPOSURE: u8 = 0x80;

impl Rec {
    fn encode(&self, runs: &[(u64, u64)], out: &mut [u8; PAYLOAD]) {
        out.fill(0);
        out[0..4].copy_from_slice(&self.origin.to_le_bytes());
        out[4] = self.kind as u8 | if self.exposure { EXPOSURE } else { 0 };
        out[5] = self.basic;
        out[6] = self.op;
        out[7] = runs.len() as u8;
        out[8..16].copy_from_slice(&self.issued.to_le_bytes());
        out[16..24].copy_from_slice(&self.completed.to_le_bytes());
        out[24..28].copy_from_slice(&self.line.to_le_bytes());
        out[28..32].copy_from_slice(&self.col.to_le_bytes());
        for (i, (a, b)) in runs.iter().enumerate() {
            out[32 + 16 * i..40 + 16 * i].copy_from_slice(&a.to_le_bytes());
            out[40 + 16 * i..48 + 16 * i].copy_from_slice(&b.to_le_bytes());
        }
        let f = self.file.as_bytes();
        let tail = &f[f.len().saturating_sub(FILE)..];
        out[96..96 + tail.len()].copy_from_slice(tail);
    }

    fn decode(b: &[u8]) -> Option<Rec> {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let n = usize::from(b[7]).min(RUNS);
        let file = &b[96..96 + FILE];
        let len = file.iter().position(|&c| c == 0).unwrap_or(FILE);
        Some(Rec {
            origin: u32_at(0),
            kind: Kind::from_u8(b[4] & !EXPOSURE)?,
            basic: b[5],
            op: b[6],
            runs: match n {
                1 => Runs::One((u64_at(32), u64_at(40))),
                _ => Runs::Many(
                    (0..n)
                        .map(|i| (u64_at(32 + 16 * i), u64_at(40 + 16 * i)))
                        .collect(),
                ),
            },
            issued: u64_at(8),
            completed: u64_at(16),
            line: u32_at(24),
            col: u32_at(28),
            file: String::from_utf8_lossy(&file[..len]).into_owned().into(),
            exposure: b[4] & EXPOSURE != 0,
        })
    }

    fn reads(&self) -> bool {
        match self.kind {
            Kind::Read | Kind::LocalRead => true,
            Kind::Acc => self.op == Op::NoOp as u8,
            Kind::Write | Kind::LocalWrite => false,
        }
    }

    fn describe(&self, target: usize) -> String {
        let what = match self.kind {
            Kind::Read => "get".to_string(),
            Kind::Write => "put".to_string(),
            Kind::LocalRead => "local load (read_local)".to_string(),
            Kind::LocalWrite => "local store (write_local)".to_string(),
            Kind::Acc => format!(
                "accumulate-family call ({} on {})",
                op_name(self.op),
                basic_name(self.basic)
            ),
        };
        let site = if self.line == 0 {
            "an unknown call site".to_string()
        } else {
            format!("{}:{}:{}", self.file, self.line, self.col)
        };
        if matches!(self.kind, Kind::LocalRead | Kind::LocalWrite) {
            format!("rank {}'s {what} at {site}", self.origin)
        } else {
            format!("rank {}'s {what} to rank {target} at {site}", self.origin)
        }
    }
}

fn op_name(op: u8) -> &'static str {
    if op == CAS {
        return "MPI_COMPARE_AND_SWAP";
    }
    Op::ALL
        .iter()
        .find(|o| **o as u8 == op)
        .map_or("an unknown op", |o| o.mpi_name())
}

fn basic_name(b: u8) -> &'static str {
    BasicType::ALL
        .get(usize::from(b))
        .map_or("an unknown type", |t| t.name())
}

/// How two records are compared.
#[derive(Clone, Copy, Debug)]
struct How {
    /// Only calls that overlapped in time conflict (`false`: the calls of one PSCW
    /// exposure epoch, unordered whenever they ran).
    timed: bool,
    /// The window's `accumulate_ops` is `same_op`: NO_OP mixes with no other op.
    same_op: bool,
}

/// Whether two accesses to overlapping bytes are allowed to overlap in time, and if
/// not, the rule they break.
fn rule(a: &Rec, b: &Rec, same_op: bool) -> Option<&'static str> {
    if a.reads() && b.reads() {
        return None;
    }
    if a.kind == Kind::Acc && b.kind == Kind::Acc {
        if a.basic != b.basic {
            return Some("concurrent accumulate-family calls to one location must use the same basic datatype");
        }
        let no_op = Op::NoOp as u8;
        let replace = |o: u8| o == Op::Replace as u8 || o == CAS;
        if a.op == b.op || (replace(a.op) && replace(b.op)) {
            return None;
        }
        if same_op {
            return Some("concurrent accumulate-family calls to one location must use the same op (accumulate_ops=same_op: NO_OP included)");
        }
        if a.op == no_op || b.op == no_op {
            return None;
        }
        return Some("concurrent accumulate-family calls to one location must use the same op or NO_OP (accumulate_ops=same_op_no_op)");
    }
    if a.kind == Kind::Acc || b.kind == Kind::Acc {
        return Some("an accumulate-family call and a put, get or local access to one location conflict unless ordered by a synchronization");
    }
    if matches!(a.kind, Kind::LocalRead | Kind::LocalWrite)
        || matches!(b.kind, Kind::LocalRead | Kind::LocalWrite)
    {
        return Some("a local load or store and an RMA call that writes, or a local store and an RMA call that reads, to one location conflict unless ordered by a synchronization");
    }
    Some("a put and another put or a get to one location conflict unless ordered by a synchronization")
}

/// Of two outcomes, the one to report: the first error, but a failure other than a
/// conflict before a conflict (it says more about what went wrong).
fn worse(a: Result<()>, b: Result<()>) -> Result<()> {
    match (&a, &b) {
        (Ok(()), _) => b,
        (Err(x), Err(y))
            if x.class() == rma_core::ErrorClass::RmaConflict
                && y.class() != rma_core::ErrorClass::RmaConflict =>
        {
            b
        }
        _ => a,
    }
}

/// The first byte range the two records share.
fn overlap(a: &Rec, b: &Rec) -> Option<(u64, u64)> {
    a.runs.as_slice().iter().find_map(|&(s, e)| {
        b.runs.as_slice().iter().find_map(|&(t, f)| {
            let (lo, hi) = (s.max(t), e.min(f));
            (lo < hi).then_some((lo, hi))
        })
    })
}

/// The report of `mine` and `other` at `target`, if they conflict.
fn conflict(target: usize, mine: &Rec, other: &Rec, how: How) -> Option<String> {
    if mine.origin == other.origin {
        return None;
    }
    if how.timed && !(other.issued < mine.completed && mine.issued < other.completed) {
        return None;
    }
    let (lo, hi) = overlap(mine, other)?;
    let why = rule(mine, other, how.same_op)?;
    Some(format!(
        "{} and {} both touch bytes {lo}..{hi} of rank {target}'s window with no synchronization between them: {why}",
        other.describe(target),
        mine.describe(target),
    ))
}

/// The records this rank has made and not yet appended.
#[derive(Default)]
struct State {
    /// Per target: calls issued and not yet complete.
    open: Vec<Vec<Rec>>,
    /// Per target: calls complete and not yet appended.
    done: Vec<Vec<Rec>>,
    /// A fence is closing the epoch: its flush does not complete the calls (the fence
    /// stamps them once every rank has entered it).
    in_fence: bool,
    /// An active-target epoch (fence, start) is open: every call completes at its
    /// closing call, as MPI has it. In a passive-target epoch a fetching call is
    /// complete when it returns (rma delivers its result in place).
    active: bool,
    /// A PSCW access epoch (start) is open: its calls are marked as such.
    started: bool,
    /// This rank's clock when its open exposure epoch (post) began.
    exposure: Option<u64>,
    /// What an exchange made between synchronizations found (records of fetching
    /// calls appended early so that a long passive epoch keeps a bounded list),
    /// returned by the next synchronization.
    deferred: Option<Error>,
    warned: bool,
}

/// A checked window's log and records; shared by the window and its transport wrapper.
pub(crate) struct Checker<'w> {
    /// The logs' window.
    log: Mutex<AnyWindow<'w>>,
    /// The logs' window was freed (it stays in place until the checker drops, so that
    /// its collective drop comes after the checked window's on every rank, whether a
    /// rank freed the window or only dropped it).
    freed: std::sync::atomic::AtomicBool,
    /// The window's `accumulate_ops` is `same_op`.
    same_op: bool,
    me: usize,
    mode: CheckMode,
    state: Mutex<State>,
}

impl std::fmt::Debug for Checker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker").field("mode", &self.mode).finish()
    }
}

impl<'w> Checker<'w> {
    pub(crate) fn new(
        log: AnyWindow<'w>,
        me: usize,
        size: usize,
        mode: CheckMode,
        same_op: bool,
    ) -> Checker<'w> {
        Checker {
            log: Mutex::new(log),
            freed: std::sync::atomic::AtomicBool::new(false),
            same_op,
            me,
            mode,
            state: Mutex::new(State {
                open: vec![Vec::new(); size],
                done: vec![Vec::new(); size],
                ..State::default()
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `f` on the logs' window (class WIN once it was freed).
    fn with_log<T>(&self, f: impl FnOnce(&AnyWindow<'w>) -> Result<T>) -> Result<T> {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if self.freed.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::InvalidWindow {
                reason: "the window was freed".into(),
            });
        }
        f(&log)
    }

    /// A fresh stamp of `target`'s clock (`n` ticks taken; the first returned).
    fn tick(&self, target: usize, n: u64) -> Result<u64> {
        self.with_log(|l| tick(l, target, n))
    }

    fn site() -> (u32, u32, std::borrow::Cow<'static, str>) {
        match SITE.with(Cell::get) {
            Some(l) => (l.line(), l.column(), l.file().into()),
            None => (0, 0, "".into()),
        }
    }

    /// Records an RMA call about to be issued to `target` over `runs`.
    fn record(&self, target: Rank, kind: Kind, basic: BasicType, op: u8, runs: Runs) -> Result<()> {
        let t = target.index().unwrap_or(0);
        let issued = self.tick(t, 1)?;
        let (line, col, file) = Self::site();
        let mut st = self.state();
        let rec = Rec {
            origin: self.me as u32,
            kind,
            basic: basic as u8,
            op,
            runs,
            issued,
            completed: u64::MAX,
            line,
            col,
            file,
            exposure: st.started,
        };
        if let Some(v) = st.open.get_mut(t) {
            v.push(rec);
        }
        Ok(())
    }

    /// After the call just recorded for `target` returned `r`: a call that failed
    /// left nothing (its `n` records go); in a passive-target epoch a fetching call
    /// is complete when it returns (rma's calls deliver their results in place), so
    /// it is stamped complete now. In an active-target epoch it completes at the
    /// closing call, as MPI says: nothing but that call orders it for the others.
    fn settle<T>(&self, target: Rank, n: usize, fetching: bool, r: Result<T>) -> Result<T> {
        let t = target.index().unwrap_or(0);
        match &r {
            Err(_) => {
                let mut st = self.state();
                let open = &mut st.open[t];
                open.truncate(open.len().saturating_sub(n));
            }
            Ok(_) if fetching && n > 0 && !self.state().active => {
                let now = self.tick(t, 1);
                let mut st = self.state();
                match (st.open[t].pop(), now) {
                    (Some(mut rec), Ok(now)) => {
                        rec.completed = now;
                        st.done[t].push(rec);
                        if st.done[t].len() >= EARLY {
                            // complete calls go to the log now (a passive epoch of
                            // gets needs no flush); what that finds waits for the
                            // next synchronization
                            drop(st);
                            if let Err(e) = self.append_and_check(t, false) {
                                self.state().deferred.get_or_insert(e);
                            }
                        }
                    }
                    // the call succeeded and delivered its result; its record goes
                    // (the log's failure shows at the next synchronization, which
                    // needs the log too)
                    (_, Err(e)) => tracing::warn!("rma_check: a record was lost: {e}"),
                    (None, Ok(_)) => {}
                }
            }
            Ok(_) => {}
        }
        r
    }

    fn record_at(&self, at: &Access<'_>, kind: Kind, basic: BasicType, op: u8) -> Result<usize> {
        let mut runs = None;
        at.layout.for_each_run(&mut |r| {
            let start = (at.base as i64 + r.offset as i64).max(0) as u64;
            runs = Some(Runs::with(runs.take(), (start, start + r.len as u64)));
        });
        match runs {
            Some(runs) => self.record(at.target, kind, basic, op, runs).map(|()| 1),
            None => Ok(0),
        }
    }

    /// A local load (`write: false`) or store of `len` bytes at byte `offset` of this
    /// rank's window, checked against the calls in flight at this moment; its error
    /// is the conflict found.
    pub(crate) fn local(&self, write: bool, offset: usize, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let now = self.tick(self.me, 2)?;
        let (line, col, file) = Self::site();
        let mut st = self.state();
        let rec = Rec {
            origin: self.me as u32,
            kind: if write {
                Kind::LocalWrite
            } else {
                Kind::LocalRead
            },
            basic: BasicType::Byte as u8,
            op: 0,
            runs: Runs::One((offset as u64, (offset + len) as u64)),
            issued: now,
            completed: now + 1,
            line,
            col,
            file,
            // in an exposure epoch, a local access is compared with every origin's
            // calls of the epoch at its wait, whenever they ran
            exposure: st.exposure.is_some(),
        };
        st.done[self.me].push(rec);
        drop(st);
        self.append_and_check(self.me, false)
    }

    /// Completes the calls to `target` (every target for `None`) after a
    /// synchronization completed them, appends and checks them.
    pub(crate) fn completed(&self, target: Option<usize>) -> Result<()> {
        let (ts, deferred) = {
            let mut st = self.state();
            if st.in_fence {
                return Ok(());
            }
            let ts: Vec<usize> = match target {
                Some(_) => Vec::new(),
                None => (0..st.open.len())
                    .filter(|&t| !st.open[t].is_empty() || !st.done[t].is_empty())
                    .collect(),
            };
            (ts, st.deferred.take())
        };
        let mut first = deferred.map_or(Ok(()), Err);
        if let Some(t) = target {
            return worse(first, self.append_and_check(t, true));
        }
        for t in ts {
            first = worse(first, self.append_and_check(t, true));
        }
        first
    }

    /// Stamps the open calls to `t` complete.
    fn stamp(&self, t: usize) -> Result<()> {
        if self.state().open.get(t).is_none_or(Vec::is_empty) {
            return Ok(());
        }
        let now = self.tick(t, 1)?;
        let mut st = self.state();
        let mut open = std::mem::take(&mut st.open[t]);
        open.iter_mut().for_each(|r| r.completed = now);
        st.done[t].append(&mut open);
        Ok(())
    }

    /// An exposure epoch (post) begins: its clock now is where the calls of the
    /// epoch's origins will be found.
    pub(crate) fn exposure_begins(&self) -> Result<()> {
        let now = self.tick(self.me, 0)?;
        self.state().exposure = Some(now);
        Ok(())
    }

    /// The exposure epoch ended (wait, or test that found it over): every origin
    /// has completed and appended its calls to this rank's log. MPI leaves the calls
    /// of different origins in one exposure epoch unordered, however they fell in
    /// time, so each pair of them that touches the same bytes is compared.
    pub(crate) fn exposure_ends(&self) -> Result<()> {
        let Some(from) = self.state().exposure.take() else {
            return Ok(());
        };
        let me = Rank::new(self.me as u32);
        let calls: Vec<Rec> = self.with_log(|l| {
            let now = tick(l, self.me, 0)?;
            let from = self.still_in_ring(self.me, from, now);
            // the target's own start-epoch calls to itself count too
            self.read(l, me, from, now, true)
        })?;
        let calls: Vec<&Rec> = calls.iter().filter(|r| r.exposure).collect();
        let mut reports = Vec::new();
        for (i, a) in calls.iter().enumerate() {
            for b in &calls[i + 1..] {
                if let Some(msg) = conflict(self.me, b, a, self.how(false)) {
                    reports.push(msg);
                }
            }
        }
        self.verdict(&reports)
    }

    /// A fence begins: its flush leaves the calls open.
    pub(crate) fn fence_begins(&self, on: bool) {
        self.state().in_fence = on;
    }

    /// A fence's barrier has passed: every rank has entered it and none has left.
    /// Stamps every call of the epoch, waits for every rank to have done so (the
    /// stamps lie between the epochs), then appends and checks, and waits for every
    /// rank to be done with the logs.
    pub(crate) fn fence_passed(&self, barrier: &dyn Fn() -> Result<()>) -> Result<()> {
        let (ts, deferred) = {
            let mut st = self.state();
            st.in_fence = false;
            let ts: Vec<usize> = (0..st.open.len())
                .filter(|&t| !st.open[t].is_empty() || !st.done[t].is_empty())
                .collect();
            (ts, st.deferred.take())
        };
        let mut first = deferred.map_or(Ok(()), Err);
        for &t in &ts {
            if let Err(e) = self.stamp(t) {
                first = worse(first, Err(e));
            }
        }
        barrier()?;
        for t in ts {
            first = worse(first, self.append_and_check(t, false));
        }
        // no rank leaves the fence (and perhaps drops the window, and its log with
        // it) while another still reads its log
        barrier()?;
        first
    }

    /// Appends the completed records for `t` to its log and checks them against the
    /// records appended since the oldest of them was issued.
    fn append_and_check(&self, t: usize, complete_open: bool) -> Result<()> {
        // the logs' window is held for the whole exchange (one lock, not one a call)
        self.with_log(|l| self.append_and_check_on(l, t, complete_open))
    }

    fn append_and_check_on(&self, l: &AnyWindow<'w>, t: usize, complete_open: bool) -> Result<()> {
        let (mut mine, mut fresh) = {
            let mut st = self.state();
            let done = std::mem::take(&mut st.done[t]);
            let open = if complete_open {
                std::mem::take(&mut st.open[t])
            } else {
                Vec::new()
            };
            (done, open)
        };
        if mine.is_empty() && fresh.is_empty() {
            return Ok(());
        }
        let target = Rank::new(t as u32);
        let records = |v: &[Rec]| {
            v.iter()
                .map(|r| r.runs.as_slice().len().div_ceil(RUNS))
                .sum::<usize>()
        };
        let k = (records(&mine) + records(&fresh)) as u64;
        // the slots are ticks of the clock: a record's slot is at or after the stamp
        // that completed its call; calls completed by the synchronization now ending
        // take the first slot as that stamp
        let first = tick(l, t, k.max(1))?;
        mine.extend(fresh.drain(..).map(|mut r| {
            r.completed = first;
            r
        }));
        // payloads, then (flushed) their tags, each in one or two puts; a batch larger
        // than the ring keeps its last SLOTS records
        let skip = k.saturating_sub(SLOTS as u64);
        if skip > 0 {
            self.warn_once(t);
        }
        let (start, n) = (first + skip, (k - skip) as usize);
        let mut one = [0u8; PAYLOAD];
        // the slots' old tags go first: a reader that read one before sees it change
        // (it would otherwise take this payload for the old record)
        if n == 1 {
            put(l, target, TAGS + 8 * (start as usize % SLOTS), &[0; 8])?;
        } else {
            let zeros = vec![0u8; 8 * n];
            ranged(start, n, |slot, i, len| {
                put(l, target, TAGS + 8 * slot, &zeros[8 * i..8 * (i + len)])
            })?;
        }
        l.flush(target)?;
        if k == 1 {
            // the common case: one record, no buffer to allocate
            mine[0].encode(mine[0].runs.as_slice(), &mut one);
            put(
                l,
                target,
                PAYLOADS + PAYLOAD * (start as usize % SLOTS),
                &one,
            )?;
            l.flush(target)?;
            let tag = tag(start, self.me).to_le_bytes();
            put(l, target, TAGS + 8 * (start as usize % SLOTS), &tag)?;
        } else {
            let mut pay = Vec::with_capacity(PAYLOAD * (k as usize));
            for r in &mine {
                for runs in r.runs.as_slice().chunks(RUNS) {
                    r.encode(runs, &mut one);
                    pay.extend_from_slice(&one);
                }
            }
            let pay = &pay[PAYLOAD * skip as usize..];
            ranged(start, n, |slot, i, len| {
                put(
                    l,
                    target,
                    PAYLOADS + PAYLOAD * slot,
                    &pay[PAYLOAD * i..PAYLOAD * (i + len)],
                )
            })?;
            l.flush(target)?;
            let tags: Vec<u8> = (0..n as u64)
                .flat_map(|i| tag(start + i, self.me).to_le_bytes())
                .collect();
            ranged(start, n, |slot, i, len| {
                put(l, target, TAGS + 8 * slot, &tags[8 * i..8 * (i + len)])
            })?;
        }
        l.flush(target)?;
        // the records that may overlap in time: those in slots after the oldest issue
        // stamp (one in an earlier slot completed before that stamp), up to the clock
        // now (of two origins appending at once, the one that reads later sees the
        // other's record: each writes before it reads)
        let now = tick(l, t, 0)?;
        let from = mine
            .iter()
            .map(|r| r.issued)
            .min()
            .unwrap_or(first)
            .min(first);
        let from = self.still_in_ring(t, from, now);
        let others = self.read(l, target, from, now, false)?;
        let mut reports = Vec::new();
        for o in &others {
            for m in &mine {
                if let Some(msg) = conflict(t, m, o, self.how(true)) {
                    reports.push(msg);
                }
            }
        }
        // the lists' memory serves the next calls
        mine.clear();
        {
            let mut st = self.state();
            if st.done[t].is_empty() {
                st.done[t] = mine;
            }
            if st.open[t].is_empty() {
                st.open[t] = fresh;
            }
        }
        self.verdict(&reports)
    }

    /// The outcome of a comparison that found `reports`: the first as an
    /// RMA_CONFLICT error, or (`conflicts_log`) each logged and success.
    fn verdict(&self, reports: &[String]) -> Result<()> {
        match (reports.first(), self.mode) {
            (None, _) => Ok(()),
            (Some(_), CheckMode::ConflictsLog) => {
                for r in reports {
                    tracing::warn!("RMA conflict: {r}");
                }
                Ok(())
            }
            (Some(first), _) => {
                let more = match reports.len() {
                    1 => String::new(),
                    n => format!(" (and {} more)", n - 1),
                };
                Err(Error::Conflict {
                    reason: format!("{first}{more}"),
                })
            }
        }
    }

    /// How this window's records are compared (`timed`: see [`How`]).
    fn how(&self, timed: bool) -> How {
        How {
            timed,
            same_op: self.same_op,
        }
    }

    /// The first slot of `t`'s log still to be read for records from slot `from` on
    /// when its clock reads `now`: the ring keeps the last [`SLOTS`] (older ones are
    /// overwritten, which is warned of once).
    fn still_in_ring(&self, t: usize, from: u64, now: u64) -> u64 {
        if now - from > SLOTS as u64 {
            self.warn_once(t);
            now - SLOTS as u64
        } else {
            from
        }
    }

    fn warn_once(&self, t: usize) {
        let mut st = self.state();
        if !std::mem::replace(&mut st.warned, true) {
            tracing::warn!(
                "rma_check: rank {t}'s conflict log wrapped before every record was compared; some conflicts may go unreported"
            );
        }
    }

    /// The records of other origins in slots `from..to` of `target`'s log whose tags
    /// read the same before and after their payloads.
    fn read(
        &self,
        l: &AnyWindow<'w>,
        target: Rank,
        from: u64,
        to: u64,
        with_mine: bool,
    ) -> Result<Vec<Rec>> {
        let n = (to - from) as usize;
        if n == 0 {
            return Ok(Vec::new());
        }
        let tags_into = |buf: &mut [u8]| {
            ranged(from, n, |slot, i, len| {
                get(l, target, TAGS + 8 * slot, &mut buf[8 * i..8 * (i + len)])
            })
        };
        let tag_at = |b: &[u8], i: usize| {
            u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]))
        };
        // a stack buffer for the usual few slots
        let (mut small, mut big) = ([0u8; 8 * 32], Vec::new());
        let before: &mut [u8] = if n <= 32 {
            &mut small[..8 * n]
        } else {
            big.resize(8 * n, 0);
            &mut big
        };
        tags_into(before)?;
        // slots holding another origin's record (a tag names its slot and origin)
        let other = |i: usize| {
            let (slot, origin) = untag(tag_at(before, i));
            slot == Some(from + i as u64) && (with_mine || origin != self.me)
        };
        let (Some(lo), Some(hi)) = ((0..n).find(|&i| other(i)), (0..n).rev().find(|&i| other(i)))
        else {
            return Ok(Vec::new());
        };
        let wanted: Vec<usize> = (lo..=hi).filter(|&i| other(i)).collect();
        let m = hi + 1 - lo;
        let mut pay = vec![0u8; PAYLOAD * m];
        ranged(from + lo as u64, m, |slot, i, len| {
            get(
                l,
                target,
                PAYLOADS + PAYLOAD * slot,
                &mut pay[PAYLOAD * i..PAYLOAD * (i + len)],
            )
        })?;
        let mut after = vec![0u8; 8 * n];
        tags_into(&mut after)?;
        if wanted
            .iter()
            .any(|&i| tag_at(&after, i) != tag_at(before, i))
        {
            // a slot rewritten while it was read: the ring went round under the reader
            self.warn_once(target.index().unwrap_or(0));
        }
        Ok(wanted
            .into_iter()
            .filter(|&i| tag_at(&after, i) == tag_at(before, i))
            .filter_map(|i| Rec::decode(&pay[PAYLOAD * (i - lo)..PAYLOAD * (i - lo + 1)]))
            .collect())
    }

    /// Frees the logs' window (collective); later calls fail with class WIN.
    fn free(&self) -> Result<()> {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if self.freed.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        // freed in place: it drops with the checker, after the checked window (see
        // `freed`)
        log.free()?;
        self.freed.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// A fresh stamp of `target`'s clock in the logs' window `l` (`n` ticks taken; the
/// first returned).
fn tick(l: &AnyWindow<'_>, target: usize, n: u64) -> Result<u64> {
    l.fetch_and_op_bits(Rank::new(target as u32), CLOCK, BasicType::U64, Op::Sum, n)
}

/// `data` to byte `byte` of `target`'s log.
fn put(l: &AnyWindow<'_>, target: Rank, byte: usize, data: &[u8]) -> Result<()> {
    let at = Access {
        target,
        base: byte,
        layout: &Contiguous(data.len()),
        exclusive: false,
    };
    l.put(at, data)
}

/// Bytes from byte `byte` of `target`'s log into `out`.
fn get(l: &AnyWindow<'_>, target: Rank, byte: usize, out: &mut [u8]) -> Result<()> {
    let at = Access {
        target,
        base: byte,
        layout: &Contiguous(out.len()),
        exclusive: false,
    };
    l.get(at, out)
}

/// Calls `f(slot, index, len)` for the one or two contiguous pieces of the ring
/// that slots `from..from + n` occupy.
fn ranged(from: u64, n: usize, mut f: impl FnMut(usize, usize, usize) -> Result<()>) -> Result<()> {
    let start = from as usize % SLOTS;
    let first = n.min(SLOTS - start);
    f(start, 0, first)?;
    if first < n {
        f(0, first, n - first)?;
    }
    Ok(())
}

/// What a [`crate::Window`] asks of its checker (a trait object, so that the window
/// stays covariant in its world's lifetime).
pub(crate) trait Hooks: std::fmt::Debug {
    /// See [`Checker::local`].
    fn local(&self, write: bool, offset: usize, len: usize) -> Result<()>;
    /// See [`Checker::fence_begins`].
    fn fence_begins(&self, on: bool);
    /// See [`Checker::fence_passed`].
    fn fence_passed(&self, barrier: &dyn Fn() -> Result<()>) -> Result<()>;
    /// An active-target access epoch opens or closes (`start`: a PSCW one).
    fn active_epoch(&self, on: bool, start: bool);
    /// See [`Checker::exposure_begins`].
    fn exposure_begins(&self) -> Result<()>;
    /// See [`Checker::exposure_ends`].
    fn exposure_ends(&self) -> Result<()>;
}

impl Hooks for Checker<'_> {
    fn local(&self, write: bool, offset: usize, len: usize) -> Result<()> {
        Checker::local(self, write, offset, len)
    }
    fn fence_begins(&self, on: bool) {
        Checker::fence_begins(self, on)
    }
    fn fence_passed(&self, barrier: &dyn Fn() -> Result<()>) -> Result<()> {
        Checker::fence_passed(self, barrier)
    }
    fn active_epoch(&self, on: bool, start: bool) {
        let mut st = self.state();
        st.active = on;
        st.started = on && start;
    }
    fn exposure_begins(&self) -> Result<()> {
        Checker::exposure_begins(self)
    }
    fn exposure_ends(&self) -> Result<()> {
        Checker::exposure_ends(self)
    }
}

/// A checked window's transport: every call is recorded with the [`Checker`] before
/// it goes to the window's own backend, and every synchronization the backend sees
/// completes, appends and checks the calls it covers.
pub(crate) struct Checked<'w> {
    pub(crate) inner: AnyWindow<'w>,
    pub(crate) checker: std::sync::Arc<Checker<'w>>,
}

impl std::fmt::Debug for Checked<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checked")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<'w> Checked<'w> {
    /// `call` on the inner window, recorded as `kind` over `at`'s runs.
    fn at<T>(
        &self,
        at: &Access<'_>,
        kind: Kind,
        basic: BasicType,
        op: u8,
        fetching: bool,
        call: impl FnOnce(&AnyWindow<'w>) -> Result<T>,
    ) -> Result<T> {
        let n = self.checker.record_at(at, kind, basic, op)?;
        let r = call(&self.inner);
        self.checker.settle(at.target, n, fetching, r)
    }

    /// `call` on the inner window, recorded as an accumulate-family call with `op`
    /// on the one element of `basic` at byte `offset` of `target`.
    fn element<T>(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: u8,
        fetching: bool,
        call: impl FnOnce(&AnyWindow<'w>) -> Result<T>,
    ) -> Result<T> {
        let span = Runs::One((offset as u64, (offset + basic.size()) as u64));
        self.checker.record(target, Kind::Acc, basic, op, span)?;
        let r = call(&self.inner);
        self.checker.settle(target, 1, fetching, r)
    }
}

impl Transport for Checked<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn put(&self, at: Access<'_>, data: &[u8]) -> Result<()> {
        self.at(&at, Kind::Write, BasicType::Byte, 0, false, |w| {
            w.put(at, data)
        })
    }
    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()> {
        self.at(&at, Kind::Read, BasicType::Byte, 0, true, |w| {
            w.get(at, out)
        })
    }
    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        self.at(&at, Kind::Acc, basic, op as u8, false, |w| {
            w.accumulate(at, basic, op, data)
        })
    }
    fn get_accumulate(
        &self,
        at: Access<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.at(&at, Kind::Acc, basic, op as u8, true, |w| {
            w.get_accumulate(at, basic, op, data, out)
        })
    }
    fn fetch_and_op(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.element(target, offset, basic, op as u8, true, |w| {
            w.fetch_and_op(target, offset, basic, op, origin, out)
        })
    }
    fn compare_and_swap(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.element(target, offset, basic, CAS, true, |w| {
            w.compare_and_swap(target, offset, basic, origin, compare, out)
        })
    }
    fn fetch_and_op_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<u64> {
        self.element(target, offset, basic, op as u8, true, |w| {
            w.fetch_and_op_bits(target, offset, basic, op, origin)
        })
    }
    fn compare_and_swap_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64> {
        self.element(target, offset, basic, CAS, true, |w| {
            w.compare_and_swap_bits(target, offset, basic, origin, compare)
        })
    }
    fn accumulate_bits(
        &self,
        target: Rank,
        offset: usize,
        exclusive: bool,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<()> {
        self.element(target, offset, basic, op as u8, false, |w| {
            w.accumulate_bits(target, offset, exclusive, basic, op, origin)
        })
    }
    fn put_signal(
        &self,
        at: Access<'_>,
        data: &[u8],
        signal: usize,
        op: Op,
        value: u64,
    ) -> Result<()> {
        // as the trait's default makes it (put, flush, signal), with the calls the
        // flush completed stamped complete before the signal can be seen: a target
        // that saw the signal may read the data at once
        let n = self
            .checker
            .record_at(&at, Kind::Write, BasicType::Byte, 0)?;
        let put = self.inner.put(at, data);
        self.checker.settle(at.target, n, false, put)?;
        self.inner.flush(at.target)?;
        self.checker.stamp(at.target.index().unwrap_or(0))?;
        self.element(at.target, signal, BasicType::U64, op as u8, false, |w| {
            w.accumulate_bits(at.target, signal, at.exclusive, BasicType::U64, op, value)
        })
    }
    fn flush(&self, target: Rank) -> Result<()> {
        self.inner.flush(target)?;
        self.checker.completed(target.index())
    }
    fn flush_all(&self) -> Result<()> {
        self.inner.flush_all()?;
        self.checker.completed(None)
    }
}

impl Memory for Checked<'_> {
    fn shapes(&self) -> Vec<Shape> {
        self.inner.shapes()
    }
    fn flavor(&self) -> rma_core::Flavor {
        self.inner.flavor()
    }
    fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.inner.read_local(offset, out)
    }
    fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.inner.write_local(offset, data)
    }
    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }
    fn shared_segment(&self, rank: usize) -> Option<rma_core::RawSegment<'_>> {
        self.inner.shared_segment(rank)
    }
    fn attach(&self, data: &[u8]) -> Result<usize> {
        self.inner.attach(data)
    }
    fn detach(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.inner.detach(offset, out)
    }
    fn attached(&self, rank: usize, start: usize, end: usize) -> Result<bool> {
        self.inner.attached(rank, start, end)
    }
}

impl Epochs for Checked<'_> {
    fn acquire_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        self.inner.acquire_lock(target, exclusive)
    }
    fn release_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        self.inner.release_lock(target, exclusive)
    }
    fn post_to(&self, origin: usize) -> Result<()> {
        self.inner.post_to(origin)
    }
    fn wait_posted(&self, target: usize, want: u32) -> Result<()> {
        self.inner.wait_posted(target, want)
    }
    fn complete_to(&self, target: usize) -> Result<()> {
        self.inner.complete_to(target)
    }
    fn wait_completed(&self, origin: usize, want: u32) -> Result<()> {
        self.inner.wait_completed(origin, want)
    }
    fn has_completed(&self, origin: usize, want: u32) -> Result<bool> {
        self.inner.has_completed(origin, want)
    }
    fn check_peers(&self) -> Result<()> {
        Epochs::check_peers(&self.inner)
    }
    fn fence_barrier(&self) -> Option<Result<()>> {
        self.inner.fence_barrier()
    }
    fn free(&mut self) -> Result<()> {
        // the logs only once the window itself is freed: a refused free leaves both
        self.inner.free()?;
        self.checker.free()
    }
    fn leaves_on_drop(&self) -> bool {
        self.inner.leaves_on_drop()
    }
    fn depart(&self) {
        self.inner.depart();
        let _ = self.checker.with_log(|l| {
            l.depart();
            Ok(())
        });
    }
}

/// The mode a window's creation asks for: its info key, else the environment.
fn mode_of(info: &rma_core::WinInfo) -> Result<Option<CheckMode>> {
    if let Some(m) = info.check {
        return Ok(Some(m));
    }
    match std::env::var(CheckMode::ENV) {
        Ok(v) => CheckMode::parse(CheckMode::ENV, &v).map(Some),
        Err(_) => Ok(None),
    }
}

/// The backend window `win` of a new window, wrapped in a checker when its info or
/// the environment asks for one. Collective: the ranks compare their modes first, on
/// every creation (no mode counts as off; a rank whose mode differs, or fails to
/// parse, makes every rank fail with class INFO), then allocate the logs' window;
/// `info.check` then says the mode in effect. On error `win` is freed.
pub(crate) fn wrap<'w>(
    world: &'w crate::World,
    mut win: AnyWindow<'w>,
    info: &mut rma_core::WinInfo,
) -> Result<(AnyWindow<'w>, Option<std::sync::Arc<dyn Hooks + 'w>>)> {
    use rma_core::{Backend, Services};
    // every creation compares the ranks' modes (no mode counts as off): a rank that
    // skipped the comparison while others made it would leave them in a collective
    // it never enters
    let mode = match mode_of(info) {
        Ok(m) => Ok(m.unwrap_or(CheckMode::Off)),
        Err(e) => Err(e),
    };
    let code = match &mode {
        Ok(m) => *m as u8 + 1,
        Err(_) => 0,
    };
    let agreed = match world.inner.allgather(&[code]) {
        Err(e) => Err(e),
        Ok(all) if all.iter().all(|c| c.first() == Some(&code)) => mode,
        Ok(all) => Err(mode.err().unwrap_or_else(|| Error::InvalidInfo {
            key: rma_core::WinInfo::CHECK_KEY.into(),
            value: format!(
                "{:?}",
                all.iter().map(|c| c.first().copied()).collect::<Vec<_>>()
            ),
            reason:
                "every rank must give the window the same rma_check mode (info key or RMA_CHECK)"
                    .into(),
        })),
    };
    let mode = match agreed {
        Ok(CheckMode::Off) => return Ok((win, None)),
        Ok(m) => {
            // the window's info reports the mode in effect, also one RMA_CHECK set
            info.check = Some(m);
            m
        }
        Err(e) => {
            let _ = win.free();
            return Err(e);
        }
    };
    let parsed = rma_core::WinInfo {
        transport: info.transport.clone(),
        check: Some(CheckMode::Off),
        ..rma_core::WinInfo::default()
    };
    let log = match world
        .inner
        .allocate(LOG_BYTES, 1, &rma_core::Info::new(), &parsed)
    {
        Ok(l) => l,
        Err(e) => {
            let _ = win.free();
            return Err(e);
        }
    };
    let same_op = info.accumulate_ops == rma_core::AccOps::SameOp;
    let checker = std::sync::Arc::new(Checker::new(log, world.rank(), world.size(), mode, same_op));
    let wrapped = AnyWindow::Dyn(Box::new(Checked {
        inner: win,
        checker: std::sync::Arc::clone(&checker),
    }));
    Ok((wrapped, Some(checker as std::sync::Arc<dyn Hooks + 'w>)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMED: How = How {
        timed: true,
        same_op: false,
    };
    const UNTIMED: How = How {
        timed: false,
        same_op: false,
    };

    fn rec(origin: u32, kind: Kind, op: Op, runs: &[(u64, u64)], t: (u64, u64)) -> Rec {
        Rec {
            origin,
            kind,
            basic: BasicType::I64 as u8,
            op: op as u8,
            runs: Runs::of(runs),
            issued: t.0,
            completed: t.1,
            line: 7,
            col: 3,
            file: "src/x.rs".into(),
            exposure: false,
        }
    }

    #[test]
    fn a_record_survives_its_encoding() {
        for exposure in [false, true] {
            let mut r = rec(3, Kind::Acc, Op::Sum, &[(0, 8), (16, 24)], (5, 9));
            r.exposure = exposure;
            let mut b = [0u8; PAYLOAD];
            r.encode(r.runs.as_slice(), &mut b);
            assert_eq!(Rec::decode(&b), Some(r));
        }
    }

    #[test]
    fn the_rules_of_the_standard() {
        use Kind::*;
        let at = |o, k, op| rec(o, k, op, &[(0, 8)], (1, 10));
        let pairs = [
            (at(0, Write, Op::Sum), at(1, Write, Op::Sum), true),
            (at(0, Write, Op::Sum), at(1, Read, Op::Sum), true),
            (at(0, Read, Op::Sum), at(1, Read, Op::Sum), false),
            (at(0, Acc, Op::Sum), at(1, Acc, Op::Sum), false),
            (at(0, Acc, Op::Sum), at(1, Acc, Op::NoOp), false),
            (at(0, Acc, Op::Sum), at(1, Acc, Op::Max), true),
            (at(0, Acc, Op::Replace), at(1, Acc, Op::Replace), false),
            (at(0, Acc, Op::Sum), at(1, Write, Op::Sum), true),
            (at(0, Acc, Op::Sum), at(1, Read, Op::Sum), true),
            (at(0, Acc, Op::NoOp), at(1, Read, Op::Sum), false),
            (at(0, LocalWrite, Op::Sum), at(1, Read, Op::Sum), true),
            (at(0, LocalRead, Op::Sum), at(1, Read, Op::Sum), false),
            (at(0, Write, Op::Sum), at(0, Write, Op::Sum), false), // one origin
        ];
        for (a, b, conflicts) in pairs {
            assert_eq!(
                conflict(0, &a, &b, TIMED).is_some(),
                conflicts,
                "{a:?} vs {b:?}"
            );
        }
        // accumulate_ops=same_op: NO_OP mixes with no other op
        let same_op = How {
            same_op: true,
            ..TIMED
        };
        let sum_noop = (at(0, Acc, Op::Sum), at(1, Acc, Op::NoOp));
        assert!(conflict(0, &sum_noop.0, &sum_noop.1, same_op).is_some());
        assert!(conflict(0, &at(0, Acc, Op::Sum), &at(1, Acc, Op::Sum), same_op).is_none());
        assert!(conflict(0, &at(0, Acc, Op::NoOp), &at(1, Acc, Op::NoOp), same_op).is_none());
        let mut other_type = at(1, Acc, Op::Sum);
        other_type.basic = BasicType::F64 as u8;
        assert!(conflict(0, &at(0, Acc, Op::Sum), &other_type, TIMED).is_some());
    }

    #[test]
    fn only_overlap_in_bytes_and_time_conflicts() {
        let a = rec(0, Kind::Write, Op::Sum, &[(0, 8)], (1, 5));
        assert!(conflict(
            0,
            &a,
            &rec(1, Kind::Write, Op::Sum, &[(8, 16)], (1, 5)),
            TIMED
        )
        .is_none());
        assert!(conflict(
            0,
            &a,
            &rec(1, Kind::Write, Op::Sum, &[(4, 12)], (5, 9)),
            TIMED
        )
        .is_none());
        let msg = conflict(
            0,
            &a,
            &rec(1, Kind::Write, Op::Sum, &[(4, 12)], (4, 9)),
            TIMED,
        )
        .unwrap();
        assert!(
            msg.contains("bytes 4..8") && msg.contains("src/x.rs:7:3"),
            "{msg}"
        );
        // untimed (one PSCW exposure epoch): apart in time, still a conflict
        let later = rec(1, Kind::Write, Op::Sum, &[(4, 12)], (5, 9));
        assert!(conflict(0, &a, &later, UNTIMED).is_some());
        assert!(conflict(
            0,
            &a,
            &rec(1, Kind::Write, Op::Sum, &[(8, 16)], (5, 9)),
            UNTIMED
        )
        .is_none());
    }
}
