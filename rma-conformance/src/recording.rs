//! The recording backend: a small in-process backend used only by tests, the proof
//! that rma-core's backend contract is the whole seam between `rma-win` and a backend.
//!
//! It implements [`Backend`] and reaches `rma-win` through
//! [`World::from_backend`](rma_win::World::from_backend), so `rma-win`'s validation and
//! epoch state machine run over it unchanged, and the whole conformance suite runs on
//! it (`recording::threads::CASE`). It is simple on purpose:
//!
//! - ranks are threads ([`run_threads`]); collectives match by their order on each rank,
//!   and each says what it is, so ranks that entered different ones (a window's free
//!   against a barrier) get PROC_FAILED instead of matching;
//! - each rank's window memory is a `Mutex<Vec<u8>>`, and every call is applied under
//!   the target's mutex, so every call is atomic as a whole (stronger than MPI asks) and
//!   nothing races, without an `unsafe` block;
//! - flushes have nothing to complete: every call is applied before it returns;
//! - locks are fair ticket locks, post and complete are counters, all under one mutex
//!   per rank, waited on with a condition variable that also wakes on a peer's death;
//! - **every call the backend receives is recorded** ([`Log`]), so tests can check what
//!   reached the backend, for instance that a call `rma-win` refused never did.
//!
//! A rank that panics, or that drops its world while others wait for it, is reported
//! to the waiters as PROC_FAILED; no wait lasts longer than [`WAIT_LIMIT`].

use rma_core::{
    reached, Access, Backend, BasicType, Epochs, Error, FastPath, Flavor, Info, LaunchMode, Memory,
    Op, Rank, Result, Services, Shape, Transport, WinInfo,
};
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The name of the recording backend's one transport.
pub const TRANSPORT: &str = "recording";

/// The longest any wait of the recording backend lasts before it fails (class INTERN).
pub const WAIT_LIMIT: Duration = Duration::from_secs(60);

/// One call the backend received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The rank that made it.
    pub rank: usize,
    /// The trait method's name (`"put"`, `"acquire_lock"`, `"barrier"`, ...).
    pub what: &'static str,
    /// The peer it concerns, if any (a target, or the origin of a post or complete).
    pub peer: Option<usize>,
    /// Bytes it moved (the target layout's size), 0 for synchronization.
    pub bytes: usize,
}

/// Every call the ranks of one recording world made, in the order they reached it.
#[derive(Clone, Debug, Default)]
pub struct Log(Arc<Mutex<Vec<Call>>>);

impl Log {
    /// A copy of the calls recorded so far.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.0).clone()
    }

    fn push(&self, rank: usize, what: &'static str, peer: Option<usize>, bytes: usize) {
        lock(&self.0).push(Call {
            rank,
            what,
            peer,
            bytes,
        });
    }
}

/// A mutex's guard, also when a panicking rank poisoned it: every structure here stays
/// consistent across a panic (each update is one assignment), and the panic itself
/// reaches the other ranks as a dead peer.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the ranks of one world share.
struct Shared {
    size: usize,
    /// A deliberate bug for tests: every window reports one shape too few.
    drop_a_shape: bool,
    /// Windows offer target handles a fast path per target ([`Transport::fast_path`]),
    /// whose calls the log records as `fast put`, `fast flush`, ...
    fast_paths: bool,
    log: Log,
    /// Nonzero once a rank died: the dead rank + 1.
    failed: AtomicU32,
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// Collective rounds in progress, by sequence number: each rank's contribution and
    /// how many ranks took the result.
    rounds: HashMap<u64, Round>,
    /// Ranks whose world was dropped (they make no more calls).
    gone: Vec<bool>,
    /// Windows' synchronization state, by window number, then by owner.
    windows: HashMap<u64, Arc<Vec<Owner>>>,
}

type Value = Arc<dyn Any + Send + Sync>;

struct Round {
    /// Each rank's contribution, with what it entered (`"a barrier"`, `"the free of
    /// window 3"`, ...): ranks that entered different collectives get an error.
    values: Vec<Option<(String, Value)>>,
    taken: usize,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("size", &self.size).finish()
    }
}

impl Shared {
    /// The error for a wait that cannot end: a rank died, or `peer` is gone.
    fn broken(&self, state: &State, peer: Option<usize>) -> Option<Error> {
        let dead = self.failed.load(Ordering::Acquire);
        if dead != 0 {
            return Some(Error::ProcFailed {
                rank: Rank::new(dead - 1),
                reason: "it panicked".into(),
            });
        }
        let gone = match peer {
            Some(p) => state.gone.get(p).copied().unwrap_or(false).then_some(p),
            None => None,
        };
        gone.map(|p| Error::ProcFailed {
            rank: Rank::new(p as u32),
            reason: "it left the world while this rank waits for it".into(),
        })
    }

    /// Waits on the world's condition variable until `done` holds, a rank dies, `peer`
    /// (if any) leaves, or [`WAIT_LIMIT`] passes.
    fn wait_until<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        what: &str,
        peer: impl Fn(&State) -> Option<usize>,
        mut done: impl FnMut(&mut State) -> bool,
    ) -> Result<MutexGuard<'a, State>> {
        let start = Instant::now();
        loop {
            if done(&mut state) {
                return Ok(state);
            }
            if let Some(e) = self.broken(&state, peer(&state)) {
                return Err(e);
            }
            if start.elapsed() > WAIT_LIMIT {
                return Err(Error::Stalled {
                    what: format!("{what} in the recording backend"),
                    waited_ms: start.elapsed().as_millis() as u64,
                });
            }
            state = self
                .wake
                .wait_timeout(state, Duration::from_millis(20))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// One rank of a recording world.
#[derive(Debug)]
pub struct RecWorld {
    shared: Arc<Shared>,
    rank: usize,
    /// Collective calls this rank has made: the next one's sequence number (only this
    /// rank's thread changes it).
    seq: AtomicU64,
}

impl RecWorld {
    /// The log of every call of this world's ranks.
    pub fn log(&self) -> Log {
        self.shared.log.clone()
    }

    /// This rank's next collective, `what` (the same on every rank, or the ranks get
    /// PROC_FAILED naming one that entered another): contributes `mine`, returns every
    /// rank's contribution.
    fn exchange(&self, what: String, mine: Value) -> Result<Vec<Value>> {
        let seq = self.seq.fetch_add(1, R);
        let size = self.shared.size;
        let mut state = lock(&self.shared.state);
        state
            .rounds
            .entry(seq)
            .or_insert_with(|| Round {
                values: vec![None; size],
                taken: 0,
            })
            .values[self.rank] = Some((what.clone(), mine));
        self.shared.wake.notify_all();
        let missing = |s: &State| {
            s.rounds
                .get(&seq)
                .and_then(|r| r.values.iter().position(Option::is_none))
        };
        let mut state = self.shared.wait_until(state, &what, missing, |s| {
            s.rounds
                .get(&seq)
                .is_some_and(|r| r.values.iter().all(Option::is_some))
        })?;
        let round = state.rounds.get_mut(&seq).ok_or_else(|| Error::Internal {
            reason: "a collective round vanished".into(),
        })?;
        let entered: Vec<(String, Value)> = round.values.iter().flatten().cloned().collect();
        round.taken += 1;
        if round.taken == size {
            state.rounds.remove(&seq);
        }
        if let Some(other) = entered.iter().position(|(w, _)| *w != what) {
            return Err(Error::ProcFailed {
                rank: Rank::new(other as u32),
                reason: format!(
                    "the ranks entered different collectives: this rank {what}, rank {other} {}",
                    entered[other].0
                ),
            });
        }
        Ok(entered.into_iter().map(|(_, v)| v).collect())
    }

    fn record(&self, what: &'static str, peer: Option<usize>, bytes: usize) {
        self.shared.log.push(self.rank, what, peer, bytes);
    }

    /// Creates a window whose memory on this rank is `bytes`.
    fn window<'w>(
        &'w self,
        what: &'static str,
        bytes: Vec<u8>,
        disp_unit: usize,
        flavor: Flavor,
        parsed: &WinInfo,
        buf: Option<&'w mut [u8]>,
    ) -> Result<RecWindow<'w>> {
        if let Some(t) = parsed.transport.as_deref().filter(|&t| t != TRANSPORT) {
            return Err(Error::UnknownTransport {
                name: t.to_owned(),
                available: format!("{TRANSPORT} (the recording backend's only one)"),
            });
        }
        self.record(what, None, bytes.len());
        let mine: Value = Arc::new(Arc::new(Mem {
            data: Mutex::new(bytes),
            disp_unit,
        }));
        let mems = self
            .exchange(format!("entered a window {what}"), mine)?
            .into_iter()
            .map(|v| v.downcast::<Arc<Mem>>().map(|m| (*m).clone()))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| Error::Internal {
                reason: "a rank contributed something else than window memory".into(),
            })?;
        // the window's number: this collective's sequence number, the same on every rank
        let id = self.seq.load(R);
        let owners = {
            let mut state = lock(&self.shared.state);
            let size = self.shared.size;
            state
                .windows
                .entry(id)
                .or_insert_with(|| Arc::new((0..size).map(|_| Owner::new(size)).collect()))
                .clone()
        };
        let paths = if self.shared.fast_paths {
            mems.iter()
                .enumerate()
                .map(|(target, mem)| RecPath {
                    world: self,
                    target,
                    mem: mem.clone(),
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(RecWindow {
            world: self,
            id,
            mems,
            owners,
            flavor,
            buf,
            paths,
        })
    }
}

impl Drop for RecWorld {
    fn drop(&mut self) {
        let mut state = lock(&self.shared.state);
        if let Some(g) = state.gone.get_mut(self.rank) {
            *g = true;
        }
        self.shared.wake.notify_all();
    }
}

impl Services for RecWorld {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.shared.size
    }
    fn mode(&self) -> LaunchMode {
        LaunchMode::Threads
    }
    fn barrier(&self) -> Result<()> {
        self.record("barrier", None, 0);
        self.exchange("entered a barrier".into(), Arc::new(()))
            .map(drop)
    }
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.record("allgather", None, mine.len());
        self.exchange("entered an all-gather".into(), Arc::new(mine.to_vec()))?
            .into_iter()
            .map(|v| {
                v.downcast_ref::<Vec<u8>>()
                    .cloned()
                    .ok_or_else(|| Error::Internal {
                        reason: "a rank entered another collective than an all-gather".into(),
                    })
            })
            .collect()
    }
    fn check_peers(&self) -> Result<()> {
        let state = lock(&self.shared.state);
        self.shared.broken(&state, None).map_or(Ok(()), Err)
    }
    fn failure_word(&self) -> &AtomicU32 {
        &self.shared.failed
    }
    fn check_failed(&self) -> Result<()> {
        self.check_peers()
    }
}

impl Backend for RecWorld {
    type Window<'w> = RecWindow<'w>;

    fn allocate(
        &self,
        len: usize,
        disp_unit: usize,
        _info: &Info,
        parsed: &WinInfo,
    ) -> Result<RecWindow<'_>> {
        self.window(
            "allocate",
            vec![0; len],
            disp_unit,
            Flavor::Allocate,
            parsed,
            None,
        )
    }

    fn create<'w>(
        &'w self,
        buf: &'w mut [u8],
        disp_unit: usize,
        _info: &Info,
        parsed: &WinInfo,
    ) -> Result<RecWindow<'w>> {
        // the window holds a copy, put back by its free: peers never write into `buf`
        let copy = buf.to_vec();
        self.window("create", copy, disp_unit, Flavor::Create, parsed, Some(buf))
    }
}

/// One rank's window memory.
#[derive(Debug)]
struct Mem {
    data: Mutex<Vec<u8>>,
    disp_unit: usize,
}

/// One rank's lock and counters in one window.
#[derive(Debug)]
struct Owner {
    /// Next lock ticket, ticket served, shared holders inside.
    next: Cell32,
    serving: Cell32,
    readers: Cell32,
    /// `posted[o]`: this rank's posts to origin `o`.
    posted: Vec<Cell32>,
    /// `completed[o]`: origin `o`'s completes to this rank.
    completed: Vec<Cell32>,
}

/// A counter changed only under the world's state mutex.
type Cell32 = AtomicU32;

impl Owner {
    fn new(size: usize) -> Owner {
        Owner {
            next: Cell32::new(0),
            serving: Cell32::new(0),
            readers: Cell32::new(0),
            posted: (0..size).map(|_| Cell32::new(0)).collect(),
            completed: (0..size).map(|_| Cell32::new(0)).collect(),
        }
    }
}

/// One rank's view of a recording window.
#[derive(Debug)]
pub struct RecWindow<'w> {
    world: &'w RecWorld,
    /// The window's number (its creation's collective sequence number).
    id: u64,
    mems: Vec<Arc<Mem>>,
    owners: Arc<Vec<Owner>>,
    flavor: Flavor,
    /// A created window's buffer, which gets the window's contents back at free.
    buf: Option<&'w mut [u8]>,
    /// Per target, the fast path this window offers (empty unless the world's
    /// `fast_paths`).
    paths: Vec<RecPath<'w>>,
}

/// fetch_and_op's effect on the element of `basic` at byte `off` of `m`: the old value
/// into `out`, then `origin` combined in with `op`.
fn fetch_op_at(m: &mut [u8], off: usize, basic: BasicType, op: Op, origin: &[u8], out: &mut [u8]) {
    let n = basic.size();
    let el = &mut m[off..off + n];
    out[..n].copy_from_slice(el);
    if op != Op::NoOp {
        rma_ops::apply_bytes(basic, op, el, &origin[..n]);
    }
}

/// compare_and_swap's effect on the element of `basic` at byte `off` of `m`: the old
/// value into `out`, replaced by `origin` if it equals `compare`.
fn cas_at(
    m: &mut [u8],
    off: usize,
    basic: BasicType,
    origin: &[u8],
    compare: &[u8],
    out: &mut [u8],
) {
    let n = basic.size();
    let el = &mut m[off..off + n];
    out[..n].copy_from_slice(el);
    if *el == compare[..n] {
        el.copy_from_slice(&origin[..n]);
    }
}

/// The fast path of a recording window to one target: the target's memory, resolved
/// once, and the world's log. What a backend from outside rma offers rma-win's target
/// handles.
#[derive(Debug)]
struct RecPath<'w> {
    world: &'w RecWorld,
    target: usize,
    mem: Arc<Mem>,
}

impl RecPath<'_> {
    fn apply<T>(&self, what: &'static str, bytes: usize, f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
        self.world.record(what, Some(self.target), bytes);
        f(&mut lock(&self.mem.data))
    }
}

impl FastPath for RecPath<'_> {
    fn put(&self, off: usize, data: &[u8]) -> Result<()> {
        self.apply("fast put", data.len(), |m| {
            m[off..off + data.len()].copy_from_slice(data)
        });
        Ok(())
    }
    fn get(&self, off: usize, out: &mut [u8]) -> Result<()> {
        self.apply("fast get", out.len(), |m| {
            out.copy_from_slice(&m[off..off + out.len()])
        });
        Ok(())
    }
    fn accumulate_bits(
        &self,
        off: usize,
        _exclusive: bool,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<()> {
        let n = basic.size();
        let mut o = [0u8; 8];
        rma_core::bytes_from_bits(origin, &mut o[..n]);
        self.apply("fast accumulate", n, |m| {
            rma_ops::apply_bytes(basic, op, &mut m[off..off + n], &o[..n])
        });
        Ok(())
    }
    fn fetch_and_op_bits(&self, off: usize, basic: BasicType, op: Op, origin: u64) -> Result<u64> {
        let n = basic.size();
        let (mut o, mut out) = ([0u8; 8], [0u8; 8]);
        rma_core::bytes_from_bits(origin, &mut o[..n]);
        self.apply("fast fetch_and_op", n, |m| {
            fetch_op_at(m, off, basic, op, &o, &mut out)
        });
        Ok(rma_core::bits_from_bytes(&out[..n]))
    }
    fn compare_and_swap_bits(
        &self,
        off: usize,
        basic: BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64> {
        let n = basic.size();
        let (mut o, mut c, mut out) = ([0u8; 8], [0u8; 8], [0u8; 8]);
        rma_core::bytes_from_bits(origin, &mut o[..n]);
        rma_core::bytes_from_bits(compare, &mut c[..n]);
        self.apply("fast compare_and_swap", n, |m| {
            cas_at(m, off, basic, &o, &c, &mut out)
        });
        Ok(rma_core::bits_from_bytes(&out[..n]))
    }
    /// Every call was applied before it returned: nothing to complete.
    fn flush(&self) -> Result<()> {
        self.world.record("fast flush", Some(self.target), 0);
        Ok(())
    }
    fn completes_in_place(&self) -> bool {
        true
    }
}

const R: Ordering = Ordering::Relaxed;

impl RecWindow<'_> {
    fn me(&self) -> usize {
        self.world.rank
    }

    fn record(&self, what: &'static str, peer: Option<usize>, bytes: usize) {
        self.world.record(what, peer, bytes);
    }

    /// Runs `f` on `target`'s memory under its mutex.
    fn with_mem<T>(&self, target: Rank, f: impl FnOnce(&mut Vec<u8>) -> T) -> Result<T> {
        let mem = target
            .index()
            .and_then(|t| self.mems.get(t))
            .ok_or_else(|| Error::Internal {
                reason: format!("the recording backend got a call to {target:?}"),
            })?;
        Ok(f(&mut lock(&mem.data)))
    }

    /// Each run of `at` as a byte range of the target's memory, in type-map order.
    fn ranges(at: &Access<'_>) -> Vec<std::ops::Range<usize>> {
        let mut v = vec![];
        at.layout.for_each_run(&mut |r| {
            let start = (at.base as isize + r.offset) as usize;
            v.push(start..start + r.len);
        });
        v
    }

    /// Waits under the world's state mutex until `done` holds of this window's owners.
    fn wait(&self, what: &str, peer: usize, done: impl Fn(&[Owner]) -> bool) -> Result<()> {
        let shared = &self.world.shared;
        let state = lock(&shared.state);
        shared
            .wait_until(state, what, |_| Some(peer), |_| done(&self.owners))
            .map(drop)
    }

    /// Changes this window's owners under the world's state mutex and wakes waiters.
    fn update(&self, f: impl FnOnce(&[Owner])) {
        let shared = &self.world.shared;
        let _state = lock(&shared.state);
        f(&self.owners);
        shared.wake.notify_all();
    }
}

impl Transport for RecWindow<'_> {
    fn name(&self) -> &'static str {
        TRANSPORT
    }

    fn put(&self, at: Access<'_>, data: &[u8]) -> Result<()> {
        self.record("put", at.target.index(), data.len());
        self.with_mem(at.target, |m| {
            let mut pos = 0;
            for r in Self::ranges(&at) {
                let n = r.len();
                m[r].copy_from_slice(&data[pos..pos + n]);
                pos += n;
            }
        })
    }

    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()> {
        self.record("get", at.target.index(), out.len());
        self.with_mem(at.target, |m| {
            let mut pos = 0;
            for r in Self::ranges(&at) {
                let n = r.len();
                out[pos..pos + n].copy_from_slice(&m[r]);
                pos += n;
            }
        })
    }

    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        self.record("accumulate", at.target.index(), data.len());
        self.with_mem(at.target, |m| {
            let mut pos = 0;
            for r in Self::ranges(&at) {
                let n = r.len();
                rma_ops::apply_bytes(basic, op, &mut m[r], &data[pos..pos + n]);
                pos += n;
            }
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
        self.record("get_accumulate", at.target.index(), out.len());
        self.with_mem(at.target, |m| {
            let mut pos = 0;
            for r in Self::ranges(&at) {
                let n = r.len();
                out[pos..pos + n].copy_from_slice(&m[r.clone()]);
                if op != Op::NoOp {
                    rma_ops::apply_bytes(basic, op, &mut m[r], &data[pos..pos + n]);
                }
                pos += n;
            }
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
        self.record("fetch_and_op", target.index(), basic.size());
        self.with_mem(target, |m| fetch_op_at(m, offset, basic, op, origin, out))
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
        self.record("compare_and_swap", target.index(), basic.size());
        self.with_mem(target, |m| cas_at(m, offset, basic, origin, compare, out))
    }

    /// Every call was applied before it returned: nothing to complete.
    fn flush(&self, target: Rank) -> Result<()> {
        self.record("flush", target.index(), 0);
        Ok(())
    }

    fn flush_all(&self) -> Result<()> {
        self.record("flush_all", None, 0);
        Ok(())
    }

    fn fast_path(&self, target: Rank) -> Option<&dyn FastPath> {
        let path = self.paths.get(target.index()?)?;
        Some(path)
    }
}

impl Memory for RecWindow<'_> {
    fn shapes(&self) -> Vec<Shape> {
        let n = self.mems.len() - usize::from(self.world.shared.drop_a_shape);
        self.mems[..n]
            .iter()
            .map(|m| Shape {
                len: lock(&m.data).len(),
                disp_unit: m.disp_unit,
                addr: 0, // a Vec<u8> applied to byte-wise: no alignment constraint
            })
            .collect()
    }

    fn flavor(&self) -> Flavor {
        self.flavor
    }

    fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.record("read_local", None, out.len());
        let me = Rank::new(self.me() as u32);
        let end = offset.saturating_add(out.len());
        self.with_mem(me, |m| match m.get(offset..end) {
            Some(src) => {
                out.copy_from_slice(src);
                Ok(())
            }
            None => Err(out_of_window(me, offset, out.len(), m.len())),
        })?
    }

    fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.record("write_local", None, data.len());
        let me = Rank::new(self.me() as u32);
        self.with_mem(me, |m| {
            let len = m.len();
            match m.get_mut(offset..offset.saturating_add(data.len())) {
                Some(dst) => {
                    dst.copy_from_slice(data);
                    Ok(())
                }
                None => Err(out_of_window(me, offset, data.len(), len)),
            }
        })?
    }

    fn sync(&self) -> Result<()> {
        self.record("sync", None, 0);
        Ok(())
    }
}

fn out_of_window(rank: Rank, offset: usize, len: usize, window_len: usize) -> Error {
    Error::OutOfWindow {
        rank,
        start: offset as i128,
        end: offset as i128 + len as i128,
        window_len,
    }
}

impl Epochs for RecWindow<'_> {
    /// A fair ticket lock: served in arrival order.
    fn acquire_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        self.record("acquire_lock", Some(target), 0);
        let mut ticket = 0;
        self.update(|o| ticket = o[target].next.fetch_add(1, R));
        let holder = |o: &[Owner]| o[target].serving.load(R) == ticket;
        self.wait("a lock", target, holder)?;
        if exclusive {
            self.wait("a lock", target, |o| o[target].readers.load(R) == 0)
        } else {
            self.update(|o| {
                o[target].readers.fetch_add(1, R);
                o[target].serving.fetch_add(1, R);
            });
            Ok(())
        }
    }

    fn release_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        self.record("release_lock", Some(target), 0);
        self.update(|o| {
            if exclusive {
                o[target].serving.fetch_add(1, R);
            } else {
                o[target].readers.fetch_sub(1, R);
            }
        });
        Ok(())
    }

    fn post_to(&self, origin: usize) -> Result<()> {
        self.record("post_to", Some(origin), 0);
        let me = self.me();
        self.update(|o| {
            o[me].posted[origin].fetch_add(1, R);
        });
        Ok(())
    }

    fn wait_posted(&self, target: usize, want: u32) -> Result<()> {
        self.record("wait_posted", Some(target), 0);
        let me = self.me();
        self.wait("a post", target, |o| {
            reached(o[target].posted[me].load(R), want)
        })
    }

    fn complete_to(&self, target: usize) -> Result<()> {
        self.record("complete_to", Some(target), 0);
        let me = self.me();
        self.update(|o| {
            o[target].completed[me].fetch_add(1, R);
        });
        Ok(())
    }

    fn wait_completed(&self, origin: usize, want: u32) -> Result<()> {
        self.record("wait_completed", Some(origin), 0);
        let me = self.me();
        self.wait("a complete", origin, |o| {
            reached(o[me].completed[origin].load(R), want)
        })
    }

    fn has_completed(&self, origin: usize, want: u32) -> Result<bool> {
        self.record("has_completed", Some(origin), 0);
        let _state = lock(&self.world.shared.state);
        Ok(reached(
            self.owners[self.me()].completed[origin].load(R),
            want,
        ))
    }

    fn check_peers(&self) -> Result<()> {
        Services::check_peers(self.world)
    }

    /// A collective of this window's free (a peer in a barrier or in another window's
    /// free gets PROC_FAILED, not a match), then a created window's contents go back
    /// into the caller's buffer.
    fn free(&mut self) -> Result<()> {
        self.record("free", None, 0);
        let what = format!("entered the free of window {}", self.id);
        self.world.exchange(what, Arc::new(()))?;
        let me = Rank::new(self.me() as u32);
        if let Some(buf) = self.buf.take() {
            self.with_mem(me, |m| buf.copy_from_slice(&m[..buf.len()]))?;
        }
        Ok(())
    }
}

/// Runs `f` on `n` ranks, each a thread of this process with a recording world, and
/// returns their results in rank order with the world's [`Log`]. A rank that panics
/// is seen by the others as a dead peer; its panic is resumed once every thread ended.
pub fn run_threads<R, F>(n: usize, f: F) -> (Vec<R>, Log)
where
    R: Send,
    F: Fn(rma_win::World) -> R + Sync,
{
    run(n, false, false, f)
}

/// [`run_threads`] on windows that offer target handles a fast path per target
/// ([`Transport::fast_path`]), logged as `fast put`, `fast flush`, ...: how a backend
/// from outside rma gives handles the road rma's own backends give them.
pub fn run_threads_with_fast_paths<R, F>(n: usize, f: F) -> (Vec<R>, Log)
where
    R: Send,
    F: Fn(rma_win::World) -> R + Sync,
{
    run(n, false, true, f)
}

/// [`run_threads`] on a backend with a bug: every window reports one shape too few
/// (what rma-win must refuse with an error, not a panic, from a backend it does not
/// know).
pub fn run_threads_dropping_a_shape<R, F>(n: usize, f: F) -> (Vec<R>, Log)
where
    R: Send,
    F: Fn(rma_win::World) -> R + Sync,
{
    run(n, true, false, f)
}

fn run<R, F>(n: usize, drop_a_shape: bool, fast_paths: bool, f: F) -> (Vec<R>, Log)
where
    R: Send,
    F: Fn(rma_win::World) -> R + Sync,
{
    let shared = Arc::new(Shared {
        size: n,
        drop_a_shape,
        fast_paths,
        log: Log::default(),
        failed: AtomicU32::new(0),
        state: Mutex::new(State {
            gone: vec![false; n],
            ..State::default()
        }),
        wake: Condvar::new(),
    });
    let log = shared.log.clone();
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|rank| {
                let (shared, f) = (shared.clone(), &f);
                s.spawn(move || {
                    let _dies = DeathNotice {
                        shared: shared.clone(),
                        rank,
                    };
                    let world = RecWorld {
                        shared,
                        rank,
                        seq: AtomicU64::new(0),
                    };
                    f(rma_win::World::from_backend(world))
                })
            })
            .collect();
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        joined
            .into_iter()
            .map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    (results, log)
}

/// Marks its rank dead if dropped while the thread panics.
struct DeathNotice {
    shared: Arc<Shared>,
    rank: usize,
}

impl Drop for DeathNotice {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _state = lock(&self.shared.state);
            let _ =
                self.shared
                    .failed
                    .compare_exchange(0, self.rank as u32 + 1, Ordering::AcqRel, R);
            self.shared.wake.notify_all();
        }
    }
}
