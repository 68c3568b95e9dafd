//! The target side of the queued transport: the progress engine that drains the request
//! rings toward this rank, applies each request to its window and replies.

use super::message::{
    decode_request, Hdr, Request, FLAG_LAST, REJECT_MESSAGE, REJECT_REPLY_RING, REJECT_RING,
    REJECT_STALLED, TAG_ACC, TAG_CAS, TAG_FOP, TAG_GACC, TAG_GET, TAG_PUT, TAG_REJECT, TAG_REPLY,
};
use super::rings::{ring, wake_consumer, wake_producer};
use crate::ring::ring_cap;
use crate::sys;
use crate::winmem::WindowMemory;
use crate::world::Liveness;
use rma_core::wait::{Backoff, Step};
use rma_core::Result;
use rma_ops::atomic;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The target side: applies requests from every origin to this rank's window.
#[derive(Debug)]
pub(crate) struct Engine {
    pub(super) mem: Arc<WindowMemory>,
    me: usize,
    pub(super) liveness: Liveness,
    /// Per origin: the drain lock and its scratch buffer; `None` once that origin was
    /// rejected.
    pub(super) drains: Vec<Mutex<Option<Vec<u8>>>>,
    /// Per origin, used under its drain lock: where this engine left the head of the
    /// request ring from it (the consumer's own record, so a head moved by someone
    /// else is caught) ...
    heads: Vec<AtomicU64>,
    /// ... and the tail of the reply ring toward it.
    reply_tails: Vec<AtomicU64>,
    pub(super) stop: AtomicBool,
}

impl crate::winmem::Helper for Engine {
    fn help(&self) -> bool {
        !self.stop.load(Ordering::Relaxed) && self.poll_once(true)
    }
}

impl Engine {
    /// The engine of rank `me` over `mem`, taking calls from every origin.
    pub(super) fn new(mem: Arc<WindowMemory>, me: usize, liveness: Liveness) -> Engine {
        let n = mem.ranks();
        Engine {
            drains: (0..n)
                .map(|_| Mutex::new(Some(Vec::with_capacity(ring_cap(mem.ranks()) / 4))))
                .collect(),
            heads: (0..n).map(|_| AtomicU64::new(0)).collect(),
            reply_tails: (0..n).map(|_| AtomicU64::new(0)).collect(),
            mem,
            me,
            liveness,
            stop: AtomicBool::new(false),
        }
    }

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
        if req.tag != TAG_PUT && req.tag != TAG_GET {
            // the origin's earlier puts (applied before this call, in ring order) happen
            // before this update: a reader that sees the update and fences with acquire
            // sees them (put-with-signal). No instruction on x86-64.
            std::sync::atomic::fence(Ordering::Release);
        }
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
    pub(super) fn run(self: Arc<Self>) {
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
