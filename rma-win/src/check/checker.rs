//! The checker of one window: the logs (a ring of slots at each rank, stamped by
//! its clock), the records this rank has made and not yet appended, the exchange
//! that appends and compares them at each synchronization, and what a window asks
//! of its checker ([`Hooks`]).

use super::record::{conflict, How, Kind, Rec, Runs, PAYLOAD, RUNS};
use rma_backends::AnyWindow;
use rma_core::{
    Access, BasicType, CheckMode, Contiguous, Epochs as _, Error, Op, Rank, Result, Transport,
};
use std::cell::Cell;
use std::panic::Location;
use std::sync::{Mutex, PoisonError};

/// Slots of each rank's log.
const SLOTS: usize = 2048;
/// Complete records a target's list holds before they go to its log without waiting
/// for a synchronization.
const EARLY: usize = 256;
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
    pub(super) fn with_log<T>(&self, f: impl FnOnce(&AnyWindow<'w>) -> Result<T>) -> Result<T> {
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
    pub(super) fn record(
        &self,
        target: Rank,
        kind: Kind,
        basic: BasicType,
        op: u8,
        runs: Runs,
    ) -> Result<()> {
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
    pub(super) fn settle<T>(
        &self,
        target: Rank,
        n: usize,
        fetching: bool,
        r: Result<T>,
    ) -> Result<T> {
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

    pub(super) fn record_at(
        &self,
        at: &Access<'_>,
        kind: Kind,
        basic: BasicType,
        op: u8,
    ) -> Result<usize> {
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
    pub(super) fn stamp(&self, t: usize) -> Result<()> {
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
    pub(super) fn free(&self) -> Result<()> {
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
