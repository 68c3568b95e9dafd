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

use crate::ring::{ring_cap, Ring, RingCtl, RingMem};
use crate::sys;
use crate::winmem::WindowMemory;
use crate::world::Liveness;
use rma_core::wait::{Backoff, Step};
use rma_core::{
    Access, BasicType, Contiguous, Error, Layout, Op, Rank, Result, RmaCall, Run, Transport,
};
use rma_ops::atomic::{self, atomic_align};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const TAG_PUT: u32 = 1;
const TAG_GET: u32 = 2;
const TAG_ACC: u32 = 3;
const TAG_GACC: u32 = 4;
const TAG_FOP: u32 = 5;
const TAG_CAS: u32 = 6;
const TAG_REPLY: u32 = 16;
const TAG_REJECT: u32 = 17;
/// Why a target stopped taking calls from an origin ([`crate::winmem::PairCtl`]'s
/// `rejected`; 0 while it takes them). Honest origins never send a malformed record
/// (rma-win validates every call first), so a rejection means another process wrote
/// into the rings: the target ignores that origin's ring from then on, and every wait
/// and call of the origin toward it fails.
const REJECT_MESSAGE: u32 = 1;
/// The request ring from the origin is corrupt (positions, a record's length).
const REJECT_RING: u32 = 2;
/// The reply ring toward the origin is corrupt: a reply could not be sent.
const REJECT_REPLY_RING: u32 = 3;
/// A request could not be applied: a chunk lock of the target's window stayed held
/// past the stall bound (its holder stopped, or the lock word is corrupt).
const REJECT_STALLED: u32 = 4;
const HDR: usize = 32;
const RUN: usize = 16;
const FLAG_LAST: u8 = 1;

/// A request chunk's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hdr {
    pub(crate) seq: u64,
    pub(crate) basic: u8,
    pub(crate) op: u8,
    pub(crate) flags: u8,
    pub(crate) nruns: u32,
    pub(crate) base: u64,
    pub(crate) data_len: u32,
}

impl Hdr {
    pub(crate) fn encode(&self) -> [u8; HDR] {
        let mut b = [0u8; HDR];
        b[..8].copy_from_slice(&self.seq.to_ne_bytes());
        b[8] = self.basic;
        b[9] = self.op;
        b[10] = self.flags;
        b[12..16].copy_from_slice(&self.nruns.to_ne_bytes());
        b[16..24].copy_from_slice(&self.base.to_ne_bytes());
        b[24..28].copy_from_slice(&self.data_len.to_ne_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Hdr> {
        let b: &[u8; HDR] = b.get(..HDR)?.try_into().ok()?;
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_ne_bytes(w)
        };
        Some(Hdr {
            seq: u64_at(0),
            basic: b[8],
            op: b[9],
            flags: b[10],
            nruns: u32_at(12),
            base: u64_at(16),
            data_len: u32_at(24),
        })
    }
}

/// A validated request: what to do, where, with which bytes. Every run lies inside the
/// target window (`start + len <= window_len`).
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) tag: u32,
    pub(crate) hdr: Hdr,
    pub(crate) basic: BasicType,
    pub(crate) op: Op,
    /// (absolute byte offset in the window, length)
    pub(crate) runs: Vec<(usize, usize)>,
    pub(crate) data: &'a [u8],
    /// Bytes the reply carries (0 for put and accumulate).
    pub(crate) reply_len: usize,
}

/// Decodes and validates one request record against a window of `window_len` bytes
/// whose start lies at address `base_addr` in this process (for element alignment).
/// Every failure is an error string; nothing is touched.
pub(crate) fn decode_request(
    tag: u32,
    msg: &[u8],
    window_len: usize,
    base_addr: usize,
) -> std::result::Result<Request<'_>, String> {
    let hdr = Hdr::decode(msg).ok_or("record shorter than a header")?;
    if !matches!(
        tag,
        TAG_PUT | TAG_GET | TAG_ACC | TAG_GACC | TAG_FOP | TAG_CAS
    ) {
        return Err(format!("unknown request tag {tag}"));
    }
    let basic =
        BasicType::from_u8(hdr.basic).ok_or_else(|| format!("unknown basic type {}", hdr.basic))?;
    let op = Op::from_u8(hdr.op).ok_or_else(|| format!("unknown op {}", hdr.op))?;
    let nruns = hdr.nruns as usize;
    let runs_end = nruns
        .checked_mul(RUN)
        .and_then(|r| r.checked_add(HDR))
        .ok_or("run count overflows")?;
    let data_len = hdr.data_len as usize;
    if runs_end.checked_add(data_len) != Some(msg.len()) {
        return Err(format!(
            "record of {} bytes does not hold {nruns} runs and {data_len} data bytes",
            msg.len()
        ));
    }
    let base = usize::try_from(hdr.base).map_err(|_| "base offset overflows")?;
    let mut runs = Vec::with_capacity(nruns);
    let mut total = 0usize;
    for i in 0..nruns {
        let r = &msg[HDR + i * RUN..HDR + (i + 1) * RUN];
        let mut w = [0u8; 8];
        w.copy_from_slice(&r[..8]);
        let off = i64::from_ne_bytes(w);
        w.copy_from_slice(&r[8..]);
        let len = u64::from_ne_bytes(w);
        let start = (base as i128) + off as i128;
        let end = start + len as i128;
        if start < 0 || end > window_len as i128 {
            return Err(format!(
                "run [{start}, {end}) outside the window of {window_len} bytes"
            ));
        }
        let (start, len) = (start as usize, len as usize);
        total = total.checked_add(len).ok_or("run lengths overflow")?;
        runs.push((start, len));
    }
    let atomic = matches!(tag, TAG_ACC | TAG_GACC | TAG_FOP | TAG_CAS);
    if atomic {
        let (size, align) = (basic.size(), atomic_align(basic));
        // alignment is that of the real address: a window created over a caller's
        // buffer may start anywhere
        if runs
            .iter()
            .any(|&(s, l)| base_addr.wrapping_add(s) % align != 0 || l % size != 0)
        {
            return Err(format!("runs not aligned to whole {basic} elements"));
        }
        let call = match tag {
            TAG_ACC => RmaCall::Accumulate,
            TAG_GACC => RmaCall::GetAccumulate,
            _ => RmaCall::FetchAndOp,
        };
        if tag == TAG_CAS {
            rma_ops::check_cas_type(basic).map_err(|e| e.to_string())?;
        } else {
            rma_ops::check(op, basic, call).map_err(|e| e.to_string())?;
        }
        if matches!(tag, TAG_FOP | TAG_CAS) && (nruns != 1 || total != size) {
            return Err("fetch_and_op and compare_and_swap take exactly one element".into());
        }
    }
    let expect_data = match tag {
        TAG_PUT | TAG_ACC => total,
        TAG_GET => 0,
        TAG_GACC | TAG_FOP if op == Op::NoOp => 0,
        TAG_GACC | TAG_FOP => total,
        _ => 2 * total, // CAS: origin and compare
    };
    if data_len != expect_data {
        return Err(format!(
            "{data_len} data bytes where {expect_data} are needed"
        ));
    }
    let reply_len = if matches!(tag, TAG_PUT | TAG_ACC) {
        0
    } else {
        total
    };
    Ok(Request {
        tag,
        hdr,
        basic,
        op,
        runs,
        data: &msg[runs_end..],
        reply_len,
    })
}

/// A ring's data area in a mapped segment: its first byte and length.
struct ShmRingMem(*mut u8, usize);

impl RingMem for ShmRingMem {
    fn cap(&self) -> usize {
        self.1
    }
    fn write(&self, off: usize, src: &[u8]) {
        assert!(
            off.checked_add(src.len()).is_some_and(|e| e <= self.1),
            "rma-shm: ring write out of bounds"
        );
        // SAFETY: the data area is `self.1` bytes inside a live mapping (validated at window
        // creation), the range is inside it (asserted), and the ring protocol gives the
        // producer exclusive use of the bytes it writes.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.0.add(off), src.len()) }
    }
    fn read(&self, off: usize, dst: &mut [u8]) {
        assert!(
            off.checked_add(dst.len()).is_some_and(|e| e <= self.1),
            "rma-shm: ring read out of bounds"
        );
        // SAFETY: as in `write`; the consumer reads bytes the producer published.
        unsafe { std::ptr::copy_nonoverlapping(self.0.add(off), dst.as_mut_ptr(), dst.len()) }
    }
}

fn ring(mem: &WindowMemory, owner: usize, index: usize) -> Ring<'_, ShmRingMem> {
    let (ctl, data) = mem.ring(owner, index);
    Ring::new(ctl, ShmRingMem(data, ring_cap(mem.ranks())))
}

fn wake_consumer(ctl: &RingCtl) {
    if ctl.consumer_waiting.load(Ordering::SeqCst) != 0 {
        sys::futex_wake_all(&ctl.pushed);
    }
}

fn wake_producer(ctl: &RingCtl) {
    if ctl.producer_waiting.load(Ordering::SeqCst) != 0 {
        sys::futex_wake_all(&ctl.popped);
    }
}

/// The target side: applies requests from every origin to this rank's window.
#[derive(Debug)]
pub(crate) struct Engine {
    mem: Arc<WindowMemory>,
    me: usize,
    liveness: Liveness,
    /// Per origin: the drain lock and its scratch buffer; `None` once that origin was
    /// rejected.
    drains: Vec<Mutex<Option<Vec<u8>>>>,
    /// Per origin, used under its drain lock: where this engine left the head of the
    /// request ring from it (the consumer's own record, so a head moved by someone
    /// else is caught) ...
    heads: Vec<AtomicU64>,
    /// ... and the tail of the reply ring toward it.
    reply_tails: Vec<AtomicU64>,
    stop: AtomicBool,
}

impl crate::winmem::Helper for Engine {
    fn help(&self) -> bool {
        !self.stop.load(Ordering::Relaxed) && self.poll_once(true)
    }
}

impl Engine {
    /// Drains every request ring once; returns whether anything was applied.
    ///
    /// `helping` is set when a rank's own thread drives progress from inside one of
    /// its calls: it then takes a request only when the reply ring toward its origin
    /// has room for any reply, so it never blocks (its own replies may be what it
    /// would wait for).
    pub(crate) fn poll_once(&self, helping: bool) -> bool {
        let mut did = false;
        for origin in 0..self.mem.ranks() {
            let Ok(mut guard) = self.drains[origin].try_lock() else {
                continue;
            };
            let Some(buf) = guard.as_mut() else { continue };
            let r = ring(&self.mem, self.me, origin);
            let replies = ring(&self.mem, origin, self.mem.ranks() + self.me);
            // a bounded batch per origin, for fairness
            for _ in 0..64 {
                if helping && replies.free() < 2 * (replies.max_record() + 8) {
                    break;
                }
                let mut head = self.heads[origin].load(Ordering::Relaxed);
                let popped = r.try_pop_from(&mut head, buf);
                self.heads[origin].store(head, Ordering::Relaxed);
                match popped {
                    Ok(None) => break,
                    Ok(Some(tag)) => {
                        did = true;
                        wake_producer(r.ctl());
                        self.handle(origin, tag, buf);
                        if self
                            .mem
                            .pair(self.me, origin)
                            .rejected
                            .load(Ordering::SeqCst)
                            != 0
                        {
                            // nothing more from this origin can be trusted
                            *guard = None;
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(origin, error = ?e, "corrupt request ring; ignoring it from now on");
                        self.abandon(origin, REJECT_RING);
                        *guard = None;
                        break;
                    }
                }
            }
        }
        did
    }

    /// Rejects a request from `origin` (and, with it, the origin: see
    /// [`REJECT_MESSAGE`]); `hdr` is the request's header when the origin waits for a
    /// reply, which then says why.
    fn reject(&self, origin: usize, hdr: Option<Hdr>, why: &str) {
        self.reject_as(origin, hdr, why, REJECT_MESSAGE)
    }

    /// [`Engine::reject`] with the `REJECT_*` code the origin's error names.
    fn reject_as(&self, origin: usize, hdr: Option<Hdr>, why: &str, code: u32) {
        if let Some(h) = hdr {
            // a fetching origin is waiting for a reply: tell it now, before the flag
            // (an origin that sees the flag finds the reply already there)
            let mut msg = h.seq.to_ne_bytes().to_vec();
            msg.extend_from_slice(why.as_bytes().get(..200.min(why.len())).unwrap_or_default());
            self.reply(origin, TAG_REJECT, &[&msg]);
        }
        self.abandon(origin, code);
    }

    /// Stops taking calls from `origin` for `why` (a `REJECT_*` code, kept if one is
    /// there already) and wakes it.
    fn abandon(&self, origin: usize, why: u32) {
        let pair = self.mem.pair(self.me, origin);
        let _ = pair
            .rejected
            .compare_exchange(0, why, Ordering::SeqCst, Ordering::SeqCst);
        pair.signal.fetch_add(1, Ordering::SeqCst);
        sys::futex_wake_all(&pair.signal);
        let replies = ring(&self.mem, origin, self.mem.ranks() + self.me);
        replies.ctl().pushed.fetch_add(1, Ordering::SeqCst);
        sys::futex_wake_all(&replies.ctl().pushed);
    }

    fn handle(&self, origin: usize, tag: u32, msg: &[u8]) {
        let window_len = self.mem.len_of(self.me);
        let req = match decode_request(tag, msg, window_len, self.mem.base_addr(self.me)) {
            Ok(r) => r,
            Err(why) => {
                tracing::warn!(origin, why, "rejected a malformed request");
                let fetching = matches!(tag, TAG_GET | TAG_GACC | TAG_FOP | TAG_CAS);
                self.reject(origin, Hdr::decode(msg).filter(|_| fetching), &why);
                return;
            }
        };
        let mut reply = vec![0u8; 8 + req.reply_len];
        reply[..8].copy_from_slice(&req.hdr.seq.to_ne_bytes());
        if let Err(e) = self.apply(origin, &req, &mut reply[8..]) {
            // a chunk lock stalled (its holder stopped, or the lock word is corrupt):
            // the origin gets the error instead of a reply
            tracing::warn!(origin, error = %e, "could not apply a request");
            let fetching = matches!(tag, TAG_GET | TAG_GACC | TAG_FOP | TAG_CAS);
            let hdr = Some(req.hdr).filter(|_| fetching);
            self.reject_as(origin, hdr, &e.to_string(), REJECT_STALLED);
            return;
        }
        if req.reply_len > 0 || matches!(tag, TAG_GET | TAG_GACC) {
            self.reply(origin, TAG_REPLY, &[&reply]);
        }
        if req.hdr.flags & FLAG_LAST != 0 {
            let pair = self.mem.pair(self.me, origin);
            pair.applied.store(req.hdr.seq, Ordering::SeqCst);
            pair.signal.fetch_add(1, Ordering::SeqCst);
            if pair.waiting.load(Ordering::SeqCst) != 0 {
                sys::futex_wake_all(&pair.signal);
            }
        }
    }

    /// Applies `req` from `origin`. Drainers of different origins' rings may run at
    /// once (each holds its ring's drain lock), so each announces in the atomicity
    /// domain through the slot of the origin it drains: no slot has two users.
    fn apply(&self, origin: usize, req: &Request<'_>, out: &mut [u8]) -> Result<()> {
        let base = self.mem.data_ptr(self.me);
        let locks = self.mem.domain(self.me, origin);
        let carries = !req.data.is_empty() && req.tag != TAG_CAS;
        let mut pos = 0usize;
        for &(start, len) in &req.runs {
            // SAFETY: `decode_request` checked start + len <= window length, and this
            // rank's own data is always reachable from its own process.
            let p = unsafe { base.add(start) };
            let src: &[u8] = if carries {
                &req.data[pos..pos + len]
            } else {
                &[]
            };
            let n = out.len();
            let fetched = &mut out[pos.min(n)..(pos + len).min(n)];
            // SAFETY: (every arm) the run is inside the window (checked in
            // `decode_request`), whose memory holds whole aligned words; put and get
            // copy with word atomics (rma_ops::shared: the owner's local accesses and,
            // with threads, direct accesses are atomic too, so nothing is a data race;
            // conflicting accesses are MPI-erroneous and give unspecified bytes); the accumulate
            // family's runs are aligned to whole elements (checked in `decode_request`)
            // and every accumulate on this window goes through these kernels with this
            // atomicity domain and window-offset keys, as in the atomic transport.
            unsafe {
                match req.tag {
                    TAG_PUT => rma_ops::shared::copy_in(p, &src[..len]),
                    TAG_GET => rma_ops::shared::copy_out(p, &mut fetched[..len]),
                    _ => {}
                }
                match req.tag {
                    TAG_ACC => atomic::accumulate(req.basic, req.op, p, start, &locks, src),
                    TAG_GACC => {
                        atomic::get_accumulate(req.basic, req.op, p, start, &locks, src, fetched)
                    }
                    TAG_FOP => {
                        atomic::fetch_and_op(req.basic, req.op, p, start, &locks, src, fetched)
                    }
                    TAG_CAS => atomic::compare_and_swap(
                        req.basic,
                        p,
                        start,
                        &locks,
                        &req.data[..len],
                        &req.data[len..],
                        fetched,
                    ),
                    _ => Ok(()),
                }?;
            }
            pos += len;
        }
        Ok(())
    }

    /// Pushes a reply toward `origin`, waiting for space; drops it if the origin died
    /// or the engine stops.
    fn reply(&self, origin: usize, tag: u32, parts: &[&[u8]]) {
        let r = ring(&self.mem, origin, self.mem.ranks() + self.me);
        let mut pace = Backoff::new();
        let mut last_check = Instant::now();
        loop {
            let mut tail = self.reply_tails[origin].load(Ordering::Relaxed);
            let pushed = r.try_push_from(&mut tail, tag, parts);
            self.reply_tails[origin].store(tail, Ordering::Relaxed);
            match pushed {
                Ok(true) => {
                    wake_consumer(r.ctl());
                    return;
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(origin, error = ?e, "corrupt reply ring; dropping a reply and the origin");
                    self.abandon(origin, REJECT_REPLY_RING);
                    return;
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            if pace.step() != Step::Park {
                continue;
            }
            let ctl = r.ctl();
            let seen = ctl.popped.load(Ordering::SeqCst);
            ctl.producer_waiting.store(1, Ordering::SeqCst);
            sys::futex_wait(&ctl.popped, seen, Duration::from_millis(1));
            ctl.producer_waiting.store(0, Ordering::SeqCst);
            if last_check.elapsed() > crate::world::liveness_interval() {
                last_check = Instant::now();
                if self.liveness.check().is_err() {
                    return;
                }
            }
        }
    }

    /// Whether a ring this engine still drains holds a record (a rejected origin's
    /// ring may stay full forever: it must not keep the progress thread awake).
    fn any_pending(&self) -> bool {
        (0..self.mem.ranks()).any(|o| {
            let drained = match self.drains[o].try_lock() {
                Ok(g) => g.is_some(),
                Err(_) => true,
            };
            drained && !ring(&self.mem, self.me, o).is_empty()
        })
    }

    /// The progress thread: drain, spin briefly when idle, then sleep on the doorbell.
    fn run(self: Arc<Self>) {
        let bell = self.mem.doorbell(self.me);
        let mut pace = Backoff::new();
        while !self.stop.load(Ordering::Acquire) {
            if self.poll_once(false) {
                pace.reset();
                continue;
            }
            if pace.step() != Step::Park {
                continue;
            }
            let seen = bell.bell.load(Ordering::SeqCst);
            bell.sleeping.store(1, Ordering::SeqCst);
            if !self.any_pending() && !self.stop.load(Ordering::SeqCst) {
                sys::futex_wait(&bell.bell, seen, Duration::from_millis(200));
            }
            bell.sleeping.store(0, Ordering::SeqCst);
            pace.reset();
        }
    }
}

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
        let engine = Arc::new(Engine {
            drains: (0..n)
                .map(|_| Mutex::new(Some(Vec::with_capacity(ring_cap(mem.ranks()) / 4))))
                .collect(),
            heads: (0..n).map(|_| AtomicU64::new(0)).collect(),
            reply_tails: (0..n).map(|_| AtomicU64::new(0)).collect(),
            mem,
            me,
            liveness,
            stop: AtomicBool::new(false),
        });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::winmem::MemoryOptions;
    use rma_core::ErrorClass;

    /// A request record (`_tag` names the kind it is meant for, for readability: the
    /// tag travels outside the record).
    fn request(
        _tag: u32,
        basic: BasicType,
        op: Op,
        base: u64,
        runs: &[(i64, u64)],
        data: &[u8],
    ) -> Vec<u8> {
        let h = Hdr {
            seq: 7,
            basic: basic as u8,
            op: op as u8,
            flags: FLAG_LAST,
            nruns: runs.len() as u32,
            base,
            data_len: data.len() as u32,
        };
        let mut m = h.encode().to_vec();
        for (o, l) in runs {
            m.extend_from_slice(&o.to_ne_bytes());
            m.extend_from_slice(&l.to_ne_bytes());
        }
        m.extend_from_slice(data);
        m
    }

    #[test]
    fn valid_requests_decode() {
        let m = request(
            TAG_ACC,
            BasicType::F64,
            Op::Sum,
            64,
            &[(0, 16), (32, 8)],
            &[0u8; 24],
        );
        let r = decode_request(TAG_ACC, &m, 128, 0).unwrap();
        assert_eq!(r.runs, vec![(64, 16), (96, 8)]);
        assert_eq!((r.data.len(), r.reply_len), (24, 0));
        let m = request(TAG_GET, BasicType::Byte, Op::NoOp, 0, &[(5, 3)], &[]);
        assert_eq!(decode_request(TAG_GET, &m, 8, 0).unwrap().reply_len, 3);
        let m = request(
            TAG_CAS,
            BasicType::I32,
            Op::Replace,
            4,
            &[(0, 4)],
            &[0u8; 8],
        );
        assert!(decode_request(TAG_CAS, &m, 8, 0).is_ok());
    }

    #[test]
    fn malformed_requests_are_rejected() {
        let ok = request(TAG_ACC, BasicType::F64, Op::Sum, 64, &[(0, 16)], &[0u8; 16]);
        let cases: Vec<(&str, u32, Vec<u8>, usize)> = vec![
            ("unknown tag", 99, ok.clone(), 128),
            (
                "run past the end",
                TAG_ACC,
                request(
                    TAG_ACC,
                    BasicType::F64,
                    Op::Sum,
                    120,
                    &[(0, 16)],
                    &[0u8; 16],
                ),
                128,
            ),
            (
                "negative start",
                TAG_PUT,
                request(
                    TAG_PUT,
                    BasicType::Byte,
                    Op::Replace,
                    0,
                    &[(-1, 1)],
                    &[0u8; 1],
                ),
                128,
            ),
            (
                "huge length",
                TAG_GET,
                request(TAG_GET, BasicType::Byte, Op::NoOp, 0, &[(0, u64::MAX)], &[]),
                128,
            ),
            (
                "huge base",
                TAG_GET,
                request(TAG_GET, BasicType::Byte, Op::NoOp, u64::MAX, &[(1, 1)], &[]),
                128,
            ),
            (
                "misaligned element",
                TAG_ACC,
                request(TAG_ACC, BasicType::F64, Op::Sum, 4, &[(0, 8)], &[0u8; 8]),
                128,
            ),
            (
                "partial element",
                TAG_ACC,
                request(TAG_ACC, BasicType::F64, Op::Sum, 0, &[(0, 12)], &[0u8; 12]),
                128,
            ),
            (
                "op not for type",
                TAG_ACC,
                request(TAG_ACC, BasicType::F64, Op::Band, 0, &[(0, 8)], &[0u8; 8]),
                128,
            ),
            (
                "NO_OP in accumulate",
                TAG_ACC,
                request(TAG_ACC, BasicType::F64, Op::NoOp, 0, &[(0, 8)], &[0u8; 8]),
                128,
            ),
            (
                "CAS on float",
                TAG_CAS,
                request(
                    TAG_CAS,
                    BasicType::F64,
                    Op::Replace,
                    0,
                    &[(0, 8)],
                    &[0u8; 16],
                ),
                128,
            ),
            (
                "data too short",
                TAG_PUT,
                request(
                    TAG_PUT,
                    BasicType::Byte,
                    Op::Replace,
                    0,
                    &[(0, 8)],
                    &[0u8; 7],
                ),
                128,
            ),
            (
                "fop of two elements",
                TAG_FOP,
                request(TAG_FOP, BasicType::I32, Op::Sum, 0, &[(0, 8)], &[0u8; 8]),
                128,
            ),
            ("truncated", TAG_ACC, ok[..40].to_vec(), 128),
            ("header only", TAG_ACC, ok[..HDR].to_vec(), 128),
            ("empty", TAG_ACC, vec![], 128),
        ];
        for (what, tag, msg, len) in cases {
            assert!(
                decode_request(tag, &msg, len, 0).is_err(),
                "{what} was accepted"
            );
        }
        // bad basic type / op bytes
        let mut m = ok.clone();
        m[8] = 200;
        assert!(decode_request(TAG_ACC, &m, 128, 0).is_err());
        let mut m = ok.clone();
        m[9] = 200;
        assert!(decode_request(TAG_ACC, &m, 128, 0).is_err());
        // a run count that overflows the record
        let mut m = ok;
        m[12..16].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(decode_request(TAG_ACC, &m, 128, 0).is_err());
    }

    /// Random bytes and random mutations of valid requests never panic, and whatever
    /// is accepted stays inside the window.
    #[test]
    fn fuzzed_requests_never_escape_the_window() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let seeds = [
            request(
                TAG_ACC,
                BasicType::F64,
                Op::Sum,
                64,
                &[(0, 16), (32, 8)],
                &[0u8; 24],
            ),
            request(
                TAG_GACC,
                BasicType::I32,
                Op::NoOp,
                0,
                &[(0, 4), (8, 4)],
                &[],
            ),
            request(
                TAG_PUT,
                BasicType::Byte,
                Op::Replace,
                3,
                &[(0, 5)],
                &[1u8; 5],
            ),
            request(
                TAG_CAS,
                BasicType::U64,
                Op::Replace,
                8,
                &[(0, 8)],
                &[0u8; 16],
            ),
        ];
        let tags = [TAG_PUT, TAG_GET, TAG_ACC, TAG_GACC, TAG_FOP, TAG_CAS, 0, 77];
        let window = 128usize;
        // 200 000 mutations in CI; RMA_FUZZ_CASES=N runs N (the long run by hand)
        let cases: usize = std::env::var("RMA_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200_000);
        for i in 0..cases {
            let mut m = seeds[i % seeds.len()].clone();
            let flips = 1 + (next() % 4) as usize;
            for _ in 0..flips {
                if m.is_empty() {
                    break;
                }
                let at = (next() as usize) % m.len();
                m[at] = next() as u8;
            }
            if next() % 8 == 0 {
                m.truncate((next() as usize) % (m.len() + 1));
            }
            if next() % 16 == 0 {
                m = (0..(next() % 96)).map(|_| next() as u8).collect();
            }
            let tag = tags[(next() % tags.len() as u64) as usize];
            if let Ok(r) = decode_request(tag, &m, window, 0) {
                for &(s, l) in &r.runs {
                    assert!(s + l <= window, "accepted a run outside the window: {r:?}");
                }
                let total: usize = r.runs.iter().map(|r| r.1).sum();
                assert!(r.data.len() <= 2 * total, "payload larger than the runs");
            }
        }
    }

    /// A hostile peer pushes a record whose run lies outside the target's window: the
    /// target rejects it without touching memory, and the origin's flush reports it.
    /// A peer that scribbles impossible positions over a ring gets an error from the
    /// ring, not a crash.
    #[test]
    fn hostile_records_and_corrupt_rings_are_errors() {
        let results = crate::run_threads(
            2,
            |world| -> Result<(Option<ErrorClass>, Option<ErrorClass>)> {
                let mem = Arc::new(WindowMemory::allocate(
                    &world,
                    256,
                    8,
                    MemoryOptions { queues: true },
                )?);
                mem.write_local(0, &[0xAB; 256])?;
                let t = QueuedTransport::new(mem.clone(), world.liveness())?;
                world.barrier()?;
                let mut seen = (None, None);
                if world.rank() == 0 {
                    let bogus = request(
                        TAG_PUT,
                        BasicType::Byte,
                        Op::Replace,
                        250,
                        &[(0, 64)],
                        &[0u8; 64],
                    );
                    let r = ring(&mem, 1, 0);
                    assert!(r.try_push(TAG_PUT, &[&bogus]).unwrap());
                    let bell = mem.doorbell(1);
                    bell.bell.fetch_add(1, Ordering::SeqCst);
                    sys::futex_wake_all(&bell.bell);
                    let start = Instant::now();
                    while seen.0.is_none() && start.elapsed() < Duration::from_secs(10) {
                        seen.0 = t.flush(Rank::new(1)).err().map(|e| e.class());
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    // now scribble impossible positions over the same ring
                    let (ctl, _) = mem.ring(1, 0);
                    ctl.tail.store(u64::MAX - 5, Ordering::Release);
                    let one = Contiguous(8);
                    seen.1 = t
                        .accumulate(
                            Access {
                                target: Rank::new(1),
                                base: 0,
                                layout: &one,
                                exclusive: false,
                            },
                            BasicType::I64,
                            Op::Sum,
                            &[1u8; 8],
                        )
                        .err()
                        .map(|e| e.class());
                }
                world.barrier()?;
                if world.rank() == 1 {
                    let mut mine = vec![0u8; 256];
                    mem.read_local(0, &mut mine)?;
                    assert!(
                        mine.iter().all(|b| *b == 0xAB),
                        "the rejected record wrote nothing"
                    );
                }
                drop(t);
                Ok(seen)
            },
        )
        .unwrap();
        let seen = results[0].as_ref().unwrap();
        assert_eq!(
            seen.0,
            Some(ErrorClass::Intern),
            "flush reports the rejection"
        );
        assert_eq!(
            seen.1,
            Some(ErrorClass::Intern),
            "a corrupt ring is an error"
        );
        assert!(results[1].is_ok());
    }

    /// `count` runs of 8 bytes, 16 bytes apart (a vector layout, for calls that stream
    /// as several records).
    struct EveryOther(usize);

    impl Layout for EveryOther {
        fn size(&self) -> usize {
            8 * self.0
        }
        fn for_each_run(&self, f: &mut dyn FnMut(Run)) {
            for i in 0..self.0 {
                f(Run {
                    offset: 16 * i as isize,
                    len: 8,
                });
            }
        }
        fn as_contiguous(&self) -> Option<usize> {
            None
        }
    }

    /// One fetching call of each kind, by number, from rank 0 to rank 1 (the strided
    /// get streams as several records).
    fn fetch(t: &QueuedTransport, kind: u64) -> Result<()> {
        fn at(layout: &dyn Layout) -> Access<'_> {
            Access {
                target: Rank::new(1),
                base: 64,
                layout,
                exclusive: false,
            }
        }
        let one = Rank::new(1);
        let mut out = vec![0u8; 8 * 3000];
        match kind % 5 {
            0 => t.fetch_and_op(
                one,
                8,
                BasicType::I64,
                Op::Sum,
                &1i64.to_ne_bytes(),
                &mut out[..8],
            ),
            1 => t.compare_and_swap(one, 16, BasicType::U64, &[1; 8], &[0; 8], &mut out[..8]),
            2 => t.get(at(&Contiguous(40)), &mut out[..40]),
            3 => t.get_accumulate(
                at(&Contiguous(8)),
                BasicType::F64,
                Op::Sum,
                &2.0f64.to_ne_bytes(),
                &mut out[..8],
            ),
            _ => t.get(at(&EveryOther(3000)), &mut out),
        }
    }

    /// Ring-level fuzzing with fetches in flight: rank 0 has a fetching call
    /// outstanding toward rank 1, whose engine is held off the ring, while the request
    /// ring is corrupted — the length or tag of the record at its head, the request
    /// header, other record bytes, the ring's positions, the reply ring's positions —
    /// and then let go. Every case ends within the stall bound and a margin: the call
    /// returns (corruption that still decodes may change what it does) or fails with
    /// class INTERN, and so does the next call; never a hang. (Before origin waits
    /// looked at the target's rejection, a garbage header at the ring head left the
    /// origin waiting for its reply forever: the watchdog below then closes the
    /// target's window, and the case fails with class WIN after the deadline.)
    #[test]
    fn corrupt_rings_with_fetches_in_flight_end_in_errors_not_hangs() {
        const CASES: u64 = 100;
        let stall = Duration::from_millis(200);
        let deadline = stall + Duration::from_secs(5);
        let done = AtomicU32::new(u32::MAX);
        let failed = AtomicBool::new(false);
        let results = crate::run_threads(2, |world| -> Result<Vec<String>> {
            world.set_stall_bound(stall);
            let mut bad = vec![];
            let mut x = 0x2545_F491_4F6C_DD1Du64;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            for case in 0..CASES {
                let mem = Arc::new(WindowMemory::allocate(
                    &world,
                    64 * 1024,
                    8,
                    MemoryOptions { queues: true },
                )?);
                let t = QueuedTransport::new(mem.clone(), world.liveness())?;
                // rank 1's engine stays off rank 0's ring until the corruption is done
                let mut hold = (world.rank() == 1).then(|| t.engine.drains[0].lock().unwrap());
                world.barrier()?;
                if world.rank() == 0 {
                    let start = Instant::now();
                    let first = fetch(&t, case);
                    let took = start.elapsed();
                    let second = fetch(&t, case + 1);
                    let took2 = start.elapsed() - took;
                    eprintln!(
                        "case {case}: {:?} after {took:?}, next call {:?} after {took2:?}",
                        first.as_ref().map_err(|e| e.class()),
                        second.as_ref().map_err(|e| e.class())
                    );
                    done.store(case as u32, Ordering::SeqCst);
                    for (what, r, took) in [("call", &first, took), ("next call", &second, took2)] {
                        let class = r.as_ref().err().map(|e| e.class());
                        if took > deadline || !matches!(class, None | Some(ErrorClass::Intern)) {
                            bad.push(format!("case {case}: {what} took {took:?}: {r:?}"));
                            failed.store(true, Ordering::SeqCst);
                        }
                    }
                } else {
                    let replies = ring(&mem, 0, 3);
                    // rank 0 is asleep waiting for its replies: every record is there
                    let start = Instant::now();
                    while replies.ctl().consumer_waiting.load(Ordering::SeqCst) == 0
                        && start.elapsed() < deadline
                    {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    let (ctl, data) = mem.ring(1, 0);
                    let cap = ring_cap(mem.ranks());
                    let bytes = ShmRingMem(data, cap);
                    let (head, tail) = (
                        ctl.head.load(Ordering::SeqCst),
                        ctl.tail.load(Ordering::SeqCst),
                    );
                    let used = tail.wrapping_sub(head) as usize;
                    let pos = (head % cap as u64) as usize;
                    // a byte of the ring changed to another value
                    let flip = |at: usize, v: u64| {
                        let mut b = [0u8];
                        bytes.read(at % cap, &mut b);
                        b[0] = if v as u8 == b[0] { !b[0] } else { v as u8 };
                        bytes.write(at % cap, &b);
                    };
                    match next() % 8 {
                        // the length or the tag of the record at the head
                        0 | 1 => flip(pos + (next() % 8) as usize, next()),
                        // its request header
                        2 => flip(pos + 8 + (next() % HDR as u64) as usize, next()),
                        // any bytes of the records in flight
                        3 => {
                            for _ in 0..1 + next() % 4 {
                                flip(pos + (next() as usize) % used.max(1), next());
                            }
                        }
                        // a shorter or longer length that still looks like one
                        4 => {
                            let mut len = [0u8; 4];
                            bytes.read(pos, &mut len);
                            let l = u32::from_ne_bytes(len);
                            let l = if next() % 2 == 0 {
                                l.saturating_sub(8)
                            } else {
                                l + 8
                            };
                            bytes.write(pos, &l.to_ne_bytes());
                        }
                        // the request ring's positions
                        5 => match next() % 4 {
                            0 => ctl.tail.store(head, Ordering::SeqCst),
                            1 => ctl.tail.store(tail.wrapping_sub(8), Ordering::SeqCst),
                            2 => ctl.head.store(head + 8, Ordering::SeqCst),
                            _ => ctl.tail.store(next(), Ordering::SeqCst),
                        },
                        // the reply ring's positions
                        6 => {
                            let (rctl, _) = mem.ring(0, 3);
                            let h = rctl.head.load(Ordering::SeqCst);
                            match next() % 3 {
                                0 => rctl.tail.store(h + 64, Ordering::SeqCst),
                                1 => rctl.head.store(h + 8, Ordering::SeqCst),
                                _ => rctl.tail.store(next(), Ordering::SeqCst),
                            }
                        }
                        // the tag of the record made one that needs no reply
                        _ => bytes.write(pos + 4, &TAG_ACC.to_ne_bytes()),
                    }
                    drop(hold.take());
                    let bell = mem.doorbell(1);
                    bell.bell.fetch_add(1, Ordering::SeqCst);
                    sys::futex_wake_all(&bell.bell);
                    // the watchdog: a wait that never ends is made to end, as a failure
                    while done.load(Ordering::SeqCst) != case as u32 {
                        if start.elapsed() > deadline + Duration::from_secs(1) {
                            bell.closed.store(1, Ordering::SeqCst);
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                world.barrier()?;
                drop(hold);
                drop(t);
                world.barrier()?;
                if failed.load(Ordering::SeqCst) {
                    break;
                }
            }
            Ok(bad)
        })
        .unwrap();
        for r in results {
            let bad = r.unwrap();
            assert!(
                bad.is_empty(),
                "{} cases went wrong:\n{}",
                bad.len(),
                bad.join("\n")
            );
        }
    }

    /// The same attacks from another process: the test binary re-runs itself as the
    /// two ranks of a world. Rank 1 (the hostile process) pushes a record that points
    /// outside rank 0's window and scribbles impossible positions over the ring that
    /// carries rank 0's requests to it. Rank 0 must neither crash nor let memory change:
    /// its engine rejects the record, and its own next call fails on the corrupt ring.
    #[test]
    fn attacks_from_another_process_are_errors() {
        const NAME: &str = "queued::tests::attacks_from_another_process_are_errors";
        if let Ok(Some(world)) = crate::World::from_env() {
            let code = match hostile_rank(&world) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("rank {}: {e}", world.rank());
                    1
                }
            };
            drop(world);
            std::process::exit(code);
        }
        let exe = std::env::current_exe().expect("the test binary");
        let mut opts = crate::launch::LaunchOptions::new(2, exe);
        opts.args = vec!["--exact".into(), NAME.into(), "--nocapture".into()];
        opts.timeout = Some(Duration::from_secs(60));
        let report = crate::launch::spawn(&opts).expect("launch");
        assert!(report.success(), "{report:?}");
    }

    fn hostile_rank(world: &crate::World) -> std::result::Result<(), String> {
        let e = |e: Error| e.to_string();
        let mem = Arc::new(
            WindowMemory::allocate(world, 256, 8, MemoryOptions { queues: true }).map_err(e)?,
        );
        mem.write_local(0, &[0xAB; 256]).map_err(e)?;
        let t = QueuedTransport::new(mem.clone(), world.liveness()).map_err(e)?;
        world.barrier().map_err(e)?;
        let one = Contiguous(8);
        let at = Access {
            target: Rank::new(1),
            base: 0,
            layout: &one,
            exclusive: false,
        };
        if world.rank() == 1 {
            // a record whose run lies far outside rank 0's window
            let bogus = request(
                TAG_PUT,
                BasicType::Byte,
                Op::Replace,
                1 << 40,
                &[(0, 64)],
                &[0u8; 64],
            );
            assert!(ring(&mem, 0, 1)
                .try_push(TAG_PUT, &[&bogus])
                .map_err(|e| format!("{e:?}"))?);
            let bell = mem.doorbell(0);
            bell.bell.fetch_add(1, Ordering::SeqCst);
            sys::futex_wake_all(&bell.bell);
            // scribble over the ring that carries rank 0's requests to this rank
            mem.ring(1, 0).0.tail.store(u64::MAX - 3, Ordering::Release);
            world.barrier().map_err(e)?; // 1: attacks done
            world.barrier().map_err(e)?; // 2: rank 0 has looked
                                         // rank 0 rejected the record: this rank's flush says so
            let start = Instant::now();
            loop {
                match t.flush(Rank::new(0)) {
                    Err(err) if err.class() == rma_core::ErrorClass::Intern => break,
                    Err(err) => return Err(format!("flush: unexpected {err}")),
                    Ok(()) if start.elapsed() < Duration::from_secs(10) => {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    Ok(()) => return Err("rank 0 never reported the rejected record".into()),
                }
            }
        } else {
            world.barrier().map_err(e)?; // 1
            match t.accumulate(at, BasicType::I64, Op::Sum, &[1u8; 8]) {
                Err(err) if err.class() == rma_core::ErrorClass::Intern => {}
                other => return Err(format!("a push onto the corrupt ring gave {other:?}")),
            }
            // let the engine see the bogus record, then check nothing changed
            let start = Instant::now();
            while mem.pair(0, 1).rejected.load(Ordering::SeqCst) == 0
                && start.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            let mut mine = vec![0u8; 256];
            mem.read_local(0, &mut mine).map_err(e)?;
            if mine.iter().any(|b| *b != 0xAB) {
                return Err("the rejected record changed the window".into());
            }
            world.barrier().map_err(e)?; // 2
        }
        world.barrier().map_err(e)?;
        drop(t);
        Ok(())
    }
}
