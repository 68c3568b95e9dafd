//! The queued transport: active messages. The origin enqueues each call (header, target
//! runs, payload) on a ring in shared memory toward the target; the target's progress
//! engine applies it to its own memory with the same atomic kernels and lock table as
//! the atomic transport (one atomicity domain, docs/design.md decision 3) and replies with
//! fetched data on a ring toward the origin.
//!
//! - **Rings.** One request ring per (origin, target) pair, in the target's segment, and
//!   one reply ring per pair, in the origin's. Each is single-producer single-consumer;
//!   a per-origin drain lock in the target keeps one consumer at a time, so requests
//!   from one origin are applied in the order they were sent (strict
//!   `accumulate_ordering` holds for every setting).
//! - **Streaming.** A call whose runs and payload exceed one record travels as several
//!   self-contained chunks (runs with their payload); target layouts of any size and
//!   payloads of any length stream through a fixed-size ring.
//! - **Progress.** Each rank runs a progress thread per queued window that drains its
//!   request rings; it spins while the node has free cores (`rma_core::wait`), then
//!   sleeps on the rank's doorbell (a futex),
//!   and origins ring it after enqueuing. Every wait of the origin (ring space, replies,
//!   flush) also drains this rank's own request rings, so progress never depends on
//!   the progress thread being scheduled.
//! - **Completion.** Puts and accumulates return once enqueued; `flush(target)` waits
//!   until the target reports the origin's last call applied. Gets and fetching calls
//!   return with their results.
//! - **Hostile input.** Every header, run and length read from a ring is validated
//!   against the window before use, and never causes an access outside the window.
//!   Honest origins never send a malformed record (rma-win validates every call), so
//!   a malformed record or a corrupt ring means another process wrote into the rings:
//!   the target rejects that origin for good (its rejection flag, which says what was
//!   corrupt) and stops draining its ring; every wait of the origin toward that target
//!   (a fetch's replies, ring space, flush) and every later call fails with class
//!   INTERN naming the target. Each end of a ring keeps its own record of the position
//!   it moves, so a record removed, skipped or invented by moving the other end's
//!   position is an error too; and a target that took every request of an origin but
//!   answers none (a request rewritten into one that needs no answer) ends the
//!   origin's wait in `Error::Stalled` after `RMA_STALL_MS`. Nothing waits forever.

mod engine;
mod message;
mod rings;
#[cfg(test)]
mod tests;

use self::engine::Engine;
use self::message::{
    Hdr, FLAG_LAST, HDR, REJECT_MESSAGE, REJECT_REPLY_RING, REJECT_RING, REJECT_STALLED, RUN,
    TAG_ACC, TAG_CAS, TAG_FOP, TAG_GACC, TAG_GET, TAG_PUT, TAG_REJECT, TAG_REPLY,
};
use self::rings::{ring, wake_producer};
use crate::sys;
use crate::winmem::WindowMemory;
use crate::world::Liveness;
use rma_core::wait::{Backoff, Step};
use rma_core::{Access, BasicType, Contiguous, Error, Layout, Op, Rank, Result, Run, Transport};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The queued transport over one window.
#[derive(Debug)]
pub struct QueuedTransport {
    engine: Arc<Engine>,
    progress: Option<JoinHandle<()>>,
    /// Counts the progress thread in the waits' spin-or-park policy.
    _counted: rma_core::wait::ProgressThread,
    /// Per target: the sequence number of the last call sent.
    sent: Vec<AtomicU64>,
    /// Per target, used under `calls`: where this rank left the tail of its request
    /// ring to it and the head of the reply ring from it (each end's own record of the
    /// position it alone moves, so a position moved by someone else is caught).
    req_tails: Vec<AtomicU64>,
    reply_heads: Vec<AtomicU64>,
    /// Serializes this rank's calls on the window (a window is used by one thread; this
    /// keeps the rings single-producer even if that is violated).
    calls: Mutex<()>,
}

impl QueuedTransport {
    /// The transport over `mem` (which must have queues), with a progress thread.
    pub fn new(mem: Arc<WindowMemory>, liveness: Liveness) -> Result<QueuedTransport> {
        if !mem.has_queues() {
            return Err(Error::Internal {
                reason: "the queued transport needs a window created with queues".into(),
            });
        }
        let n = mem.ranks();
        let me = mem.rank();
        let engine = Arc::new(Engine::new(mem, me, liveness));
        // the rank's own waits in the window's synchronization drain its rings too
        let helper: std::sync::Weak<dyn crate::winmem::Helper> = Arc::downgrade(&engine) as _;
        engine.mem.set_helper(helper);
        let runner = engine.clone();
        let progress = std::thread::Builder::new()
            .name(format!("rma-progress-{me}"))
            .spawn(move || runner.run())
            .map_err(|e| Error::Os {
                context: "starting the progress thread".into(),
                source: e,
            })?;
        Ok(QueuedTransport {
            engine,
            progress: Some(progress),
            _counted: rma_core::wait::ProgressThread::start(),
            sent: (0..n).map(|_| AtomicU64::new(0)).collect(),
            req_tails: (0..n).map(|_| AtomicU64::new(0)).collect(),
            reply_heads: (0..n).map(|_| AtomicU64::new(0)).collect(),
            calls: Mutex::new(()),
        })
    }

    fn mem(&self) -> &WindowMemory {
        &self.engine.mem
    }

    fn index(&self, target: Rank) -> usize {
        match target.index() {
            Some(i) if i < self.mem().ranks() => i,
            _ => panic!("rma-shm queued transport: target rank outside the window (rma-win should have refused it)"),
        }
    }

    /// Waits until `ready()` holds, driving this rank's own engine, sleeping on `word`
    /// (with `flag` raised) after a short spin, checking that the target still takes
    /// this rank's calls (its rejection flag), its liveness and window, and that the
    /// rings are as this rank left them and the target makes progress
    /// ([`QueuedTransport::audit`]). `ready` may have effects (push a record, consume
    /// replies): it is not called again once it has returned `Ok(true)` or an error.
    fn wait(
        &self,
        target: usize,
        word: &AtomicU32,
        flag: &AtomicU32,
        mut ready: impl FnMut() -> Result<bool>,
    ) -> Result<()> {
        let pair = self.mem().pair(target, self.mem().rank());
        let mut pace = Backoff::new();
        let mut last_check = Instant::now();
        let mut progress = Progress::default();
        loop {
            if ready()? {
                return Ok(());
            }
            if self.engine.poll_once(true) {
                pace.reset();
                continue;
            }
            if pace.step() != Step::Park {
                continue;
            }
            let code = pair.rejected.load(Ordering::SeqCst);
            if code != 0 {
                // take what is there first: a rejection's reply says why
                if ready()? {
                    return Ok(());
                }
                return Err(rejected_error(target, code));
            }
            let seen = word.load(Ordering::SeqCst);
            flag.store(1, Ordering::SeqCst);
            // `ready` may act (push a record): once it says yes, never call it again
            let done = ready();
            if matches!(done, Ok(false)) {
                sys::futex_wait(word, seen, Duration::from_millis(2));
            }
            flag.store(0, Ordering::SeqCst);
            if done? {
                return Ok(());
            }
            if last_check.elapsed() > crate::world::liveness_interval() {
                last_check = Instant::now();
                self.engine.liveness.check()?;
                if self.mem().doorbell(target).closed.load(Ordering::Acquire) != 0 {
                    return Err(Error::InvalidWindow {
                        reason: format!(
                            "rank {target} dropped the window while this rank still waits on it"
                        ),
                    });
                }
                self.audit(target, &mut progress)?;
            }
        }
    }

    /// Between a wait's sleeps: the request ring's tail must be where this rank left it
    /// (a record removed by someone else would never be answered), and a target that
    /// has taken every request of this rank must answer (a reply, an applied count)
    /// within the stall bound ([`crate::ENV_STALL_MS`]) of showing its last progress: a
    /// request rewritten in the ring into one that needs no answer is never answered.
    fn audit(&self, target: usize, progress: &mut Progress) -> Result<()> {
        let me = self.mem().rank();
        let requests = ring(self.mem(), target, me);
        let mine = self.req_tails[target].load(Ordering::Relaxed);
        let tail = requests.ctl().tail.load(Ordering::Acquire);
        if tail != mine {
            // the same at two checks a liveness interval apart (a push by another
            // thread of this rank, against the rules, differs only for an instant)
            if progress.tail_differs == Some((tail, mine)) {
                return Err(Error::Internal {
                    reason: format!(
                        "the request ring from this rank to rank {target} is corrupt: its tail is {tail} where this rank left {mine} (another process wrote into it)"
                    ),
                });
            }
            progress.tail_differs = Some((tail, mine));
            return Ok(());
        }
        progress.tail_differs = None;
        let pair = self.mem().pair(target, me);
        let replies = ring(self.mem(), me, self.mem().ranks() + target);
        let consumed = requests.consumed_to();
        let seen = [
            consumed,
            u64::from(replies.ctl().pushed.load(Ordering::Acquire)),
            u64::from(pair.signal.load(Ordering::Acquire)),
            pair.applied.load(Ordering::Acquire),
        ];
        let now = Instant::now();
        if progress.seen != Some(seen) || consumed != mine {
            // progress, or requests not taken yet (a busy target): not stalled
            progress.seen = Some(seen);
            progress.since = now;
            return Ok(());
        }
        let bound = self.engine.liveness.stall_bound();
        if now.duration_since(progress.since) >= bound {
            return Err(Error::Stalled {
                what: format!(
                    "rank {target}'s answer to this rank's requests (it took them all but answered none: a request was altered in its ring, or its progress stopped)"
                ),
                waited_ms: now.duration_since(progress.since).as_millis() as u64,
            });
        }
        Ok(())
    }

    /// An error if `target` stopped taking this rank's calls (a rejection stays: see
    /// [`REJECT_MESSAGE`]).
    fn check_rejected(&self, target: usize) -> Result<()> {
        match self
            .mem()
            .pair(target, self.mem().rank())
            .rejected
            .load(Ordering::SeqCst)
        {
            0 => Ok(()),
            code => Err(rejected_error(target, code)),
        }
    }

    /// Pushes one request record to `target`, waiting for space (and draining replies
    /// into `sink` meanwhile).
    fn push(
        &self,
        target: usize,
        tag: u32,
        parts: &[&[u8]],
        sink: &mut ReplySink<'_>,
    ) -> Result<()> {
        let r = ring(self.mem(), target, self.mem().rank());
        let ctl = r.ctl();
        let mut pushed = false;
        let mut first = true;
        let mut tail = self.req_tails[target].load(Ordering::Relaxed);
        self.wait(target, &ctl.popped, &ctl.producer_waiting, || {
            if !first {
                self.drain_replies(target, sink)?;
            }
            first = false;
            pushed = r.try_push_from(&mut tail, tag, parts).map_err(corrupt)?;
            if pushed {
                self.req_tails[target].store(tail, Ordering::Relaxed);
            }
            Ok(pushed)
        })?;
        let bell = self.mem().doorbell(target);
        bell.bell.fetch_add(1, Ordering::SeqCst);
        if bell.sleeping.load(Ordering::SeqCst) != 0 {
            sys::futex_wake_all(&bell.bell);
        }
        Ok(())
    }

    /// Consumes the replies waiting from `target` into `sink`.
    fn drain_replies(&self, target: usize, sink: &mut ReplySink<'_>) -> Result<()> {
        if sink.expected == sink.received {
            return Ok(());
        }
        let r = ring(self.mem(), self.mem().rank(), self.mem().ranks() + target);
        while sink.expected > sink.received {
            let mut head = self.reply_heads[target].load(Ordering::Relaxed);
            let popped = r.try_pop_from(&mut head, &mut sink.scratch);
            self.reply_heads[target].store(head, Ordering::Relaxed);
            match popped.map_err(corrupt)? {
                None => break,
                Some(tag) => {
                    wake_producer(r.ctl());
                    sink.accept(tag, target)?;
                }
            }
        }
        Ok(())
    }

    /// Sends one call as chunks; for fetching calls waits for every reply.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        tag: u32,
        target: usize,
        base: usize,
        basic: BasicType,
        op: Op,
        layout: &dyn Layout,
        data: &[u8],
        out: Option<&mut [u8]>,
    ) -> Result<()> {
        let _serial = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        self.check_rejected(target)?;
        let seq = self.sent[target].load(Ordering::Relaxed) + 1;
        let fetching = out.is_some();
        let mut sink = ReplySink {
            out,
            pos: 0,
            expected: 0,
            received: 0,
            seq,
            scratch: Vec::new(),
        };
        let max = ring(self.mem(), target, self.mem().rank()).max_record();
        let elem = if matches!(tag, TAG_PUT | TAG_GET) {
            1
        } else {
            basic.size()
        };
        let carries = matches!(tag, TAG_PUT | TAG_ACC) || (tag == TAG_GACC && op != Op::NoOp);
        // chunk state
        let mut runs: Vec<u8> = Vec::with_capacity(max);
        let mut nruns = 0u32;
        let mut chunk_data = 0usize; // bytes of runs in this chunk
        let mut data_pos = 0usize; // where this chunk's payload starts in `data`
        let mut err: Option<Error> = None;
        // fetch_and_op and compare_and_swap are one element in one chunk: their payload
        // is the whole of `data` (origin, and compare for CAS)
        let single = matches!(tag, TAG_FOP | TAG_CAS);
        let send = |runs: &mut Vec<u8>,
                    nruns: &mut u32,
                    chunk_data: &mut usize,
                    data_pos: &mut usize,
                    last: bool,
                    sink: &mut ReplySink<'_>|
         -> Result<()> {
            let payload: &[u8] = if single {
                data
            } else if carries {
                &data[*data_pos..*data_pos + *chunk_data]
            } else {
                &[]
            };
            let h = Hdr {
                seq,
                basic: basic as u8,
                op: op as u8,
                flags: if last { FLAG_LAST } else { 0 },
                nruns: *nruns,
                base: base as u64,
                data_len: payload.len() as u32,
            }
            .encode();
            self.push(target, tag, &[&h, runs, payload], sink)?;
            if fetching {
                sink.expected += 1;
            }
            *data_pos += *chunk_data;
            runs.clear();
            *nruns = 0;
            *chunk_data = 0;
            Ok(())
        };
        layout.for_each_run(&mut |Run { offset, len }| {
            let (mut off, mut left) = (offset, len);
            while left > 0 && err.is_none() {
                let used = HDR + runs.len() + chunk_data;
                let room = max.saturating_sub(used + RUN);
                let piece = left.min(room / elem * elem);
                if piece == 0 {
                    if let Err(e) = send(
                        &mut runs,
                        &mut nruns,
                        &mut chunk_data,
                        &mut data_pos,
                        false,
                        &mut sink,
                    ) {
                        err = Some(e);
                    }
                    continue;
                }
                runs.extend_from_slice(&(off as i64).to_ne_bytes());
                runs.extend_from_slice(&(piece as u64).to_ne_bytes());
                nruns += 1;
                chunk_data += piece;
                off += piece as isize;
                left -= piece;
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        send(
            &mut runs,
            &mut nruns,
            &mut chunk_data,
            &mut data_pos,
            true,
            &mut sink,
        )?;
        self.sent[target].store(seq, Ordering::Relaxed);
        if fetching {
            let r = ring(self.mem(), self.mem().rank(), self.mem().ranks() + target);
            let ctl = r.ctl();
            self.wait(target, &ctl.pushed, &ctl.consumer_waiting, || {
                self.drain_replies(target, &mut sink)?;
                Ok(sink.received == sink.expected)
            })?;
            if sink.pos != sink.out.as_ref().map_or(0, |o| o.len()) {
                return Err(Error::Internal {
                    reason: format!(
                        "rank {target} replied with {} bytes where {} were expected",
                        sink.pos,
                        sink.out.as_ref().map_or(0, |o| o.len())
                    ),
                });
            }
        }
        Ok(())
    }
}

fn corrupt(e: crate::ring::RingError) -> Error {
    Error::Internal {
        reason: format!("a queued-transport ring is corrupt: {e:?}"),
    }
}

/// The error of an origin whose target stopped taking its calls (`REJECT_*` code).
#[cold]
fn rejected_error(target: usize, code: u32) -> Error {
    let what = match code {
        REJECT_MESSAGE => "it received a malformed request record from this rank".to_owned(),
        REJECT_RING => {
            "the request ring from this rank is corrupt (its positions or a record's length)"
                .to_owned()
        }
        REJECT_REPLY_RING => "the reply ring toward this rank is corrupt".to_owned(),
        REJECT_STALLED => format!(
            "it could not apply a call from this rank: a chunk lock of its window stayed held past the stall bound ({} ms, RMA_STALL_MS; its holder is stopped, or the lock word is corrupt)",
            rma_core::stall_limit().as_millis()
        ),
        other => format!("its rejection flag holds {other}"),
    };
    Error::Internal {
        reason: format!(
            "rank {target} stopped taking calls from this rank: {what} (another process wrote into the window's rings); calls to rank {target} on this window fail from now on"
        ),
    }
}

/// What an origin's wait last saw of its target's progress, and since when.
struct Progress {
    seen: Option<[u64; 4]>,
    since: Instant,
    /// The request ring's tail and this rank's record of it, when they differed at the
    /// last check.
    tail_differs: Option<(u64, u64)>,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            seen: None,
            since: Instant::now(),
            tail_differs: None,
        }
    }
}

/// Where the replies of the call in flight go.
struct ReplySink<'a> {
    out: Option<&'a mut [u8]>,
    pos: usize,
    expected: u64,
    received: u64,
    seq: u64,
    scratch: Vec<u8>,
}

impl ReplySink<'_> {
    fn accept(&mut self, tag: u32, target: usize) -> Result<()> {
        let msg = &self.scratch;
        let seq = msg.get(..8).map(|b| {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            u64::from_ne_bytes(w)
        });
        if seq != Some(self.seq) {
            return Err(Error::Internal {
                reason: format!(
                    "rank {target} sent a reply for call {seq:?} while call {} is in flight",
                    self.seq
                ),
            });
        }
        if tag == TAG_REJECT {
            return Err(Error::Internal {
                reason: format!(
                    "rank {target} rejected this call: {}",
                    String::from_utf8_lossy(&msg[8..])
                ),
            });
        }
        if tag != TAG_REPLY {
            return Err(Error::Internal {
                reason: format!("unknown reply tag {tag} from rank {target}"),
            });
        }
        let data = &msg[8..];
        let out = self.out.as_deref_mut().unwrap_or_default();
        let end = self
            .pos
            .checked_add(data.len())
            .filter(|e| *e <= out.len())
            .ok_or_else(|| Error::Internal {
                reason: format!("rank {target} replied with more data than was asked for"),
            })?;
        out[self.pos..end].copy_from_slice(data);
        self.pos = end;
        self.received += 1;
        Ok(())
    }
}

impl Transport for QueuedTransport {
    fn name(&self) -> &'static str {
        "queued"
    }

    fn put(&self, at: Access<'_>, data: &[u8]) -> Result<()> {
        let t = self.index(at.target);
        self.call(
            TAG_PUT,
            t,
            at.base,
            BasicType::Byte,
            Op::Replace,
            at.layout,
            data,
            None,
        )
    }

    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()> {
        let t = self.index(at.target);
        self.call(
            TAG_GET,
            t,
            at.base,
            BasicType::Byte,
            Op::NoOp,
            at.layout,
            &[],
            Some(out),
        )
    }

    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        let t = self.index(at.target);
        self.call(TAG_ACC, t, at.base, basic, op, at.layout, data, None)
    }

    fn get_accumulate(
        &self,
        at: Access<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        let t = self.index(at.target);
        self.call(TAG_GACC, t, at.base, basic, op, at.layout, data, Some(out))
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
        let t = self.index(target);
        let data = if op == Op::NoOp { &[][..] } else { origin };
        self.call(
            TAG_FOP,
            t,
            offset,
            basic,
            op,
            &Contiguous(basic.size()),
            data,
            Some(out),
        )
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
        let t = self.index(target);
        let mut both = Vec::with_capacity(2 * basic.size());
        both.extend_from_slice(origin);
        both.extend_from_slice(compare);
        self.call(
            TAG_CAS,
            t,
            offset,
            basic,
            Op::Replace,
            &Contiguous(basic.size()),
            &both,
            Some(out),
        )
    }

    // One origin's calls are applied in the order sent, by one drainer at a time, and
    // the engine fences with release before every accumulate-family call it applies
    // (engine.rs `apply`): the put's bytes are in target memory, ordered before the
    // signal's update, with no flush in between.
    fn put_signal(
        &self,
        at: Access<'_>,
        data: &[u8],
        signal: usize,
        op: Op,
        value: u64,
    ) -> Result<()> {
        self.put(at, data)?;
        self.accumulate_bits(at.target, signal, at.exclusive, BasicType::U64, op, value)
    }

    fn flush(&self, target: Rank) -> Result<()> {
        let t = self.index(target);
        let want = self.sent[t].load(Ordering::Relaxed);
        let pair = self.mem().pair(t, self.mem().rank());
        self.wait(t, &pair.signal, &pair.waiting, || {
            let applied = pair.applied.load(Ordering::Acquire);
            // (one call of slack: a second thread's call may be applied before it
            // records its sequence number)
            let sent = self.sent[t].load(Ordering::Relaxed);
            if applied > sent.saturating_add(1) {
                return Err(Error::Internal {
                    reason: format!(
                        "rank {t} says call {applied} of this rank was applied, but this rank sent {sent} (another process wrote into its counters)"
                    ),
                });
            }
            Ok(applied >= want)
        })?;
        self.check_rejected(t)
    }

    fn flush_all(&self) -> Result<()> {
        for t in 0..self.mem().ranks() {
            if self.sent[t].load(Ordering::Relaxed) > 0 {
                self.flush(Rank::new(t as u32))?;
            }
        }
        Ok(())
    }
}

impl Drop for QueuedTransport {
    fn drop(&mut self) {
        let me = self.mem().rank();
        let bell = self.mem().doorbell(me);
        bell.closed.store(1, Ordering::Release);
        self.engine.stop.store(true, Ordering::Release);
        bell.bell.fetch_add(1, Ordering::SeqCst);
        sys::futex_wake_all(&bell.bell);
        if let Some(h) = self.progress.take() {
            let _ = h.join();
        }
    }
}
