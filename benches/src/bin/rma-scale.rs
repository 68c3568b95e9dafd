//! `rma-scale`: the rank-scaling scenarios of `benches/SCENARIOS.md` ("Rank scaling")
//! over one rma transport on any number of ranks, for `cargo xtask bench --scaling` to
//! set beside the same scenarios against MPI (`benches/c/mpi_rma_scale.c`).
//!
//! ```text
//! rmarun -n N target/release/rma-scale --transport atomic [-r reps] [-t secs] [-s a,b] [-o file.csv]
//! ```
//!
//! Every rank makes the same calls. Each scenario is calibrated (iterations ×4 until
//! a run takes ≥ 5 ms), then timed `reps` times for about `secs` seconds; every rank
//! times its own loop between barriers on the machine's real-time clock, and a run's
//! time is the span from the first rank's start to the last rank's end. Each CSV line
//! is written (and flushed) as soon as its scenario ends:
//! `scale,<scenario>,<ranks>,<iters>,<med>,<min>,<max>` with µs per aggregate
//! operation (the span / the calls of all ranks) or µs per epoch
//! (`fence`, `pscw_ring`, `win_alloc`), bytes per rank for `mem_rss` / `mem_shm`, and
//! `check,<scenario>,<ranks>,<checks>,<wrong>,0,0` for every checked scenario. A wrong
//! count prints `WRONG ...` on stderr and makes the program exit with status 1 at the
//! end; it never stops the other scenarios.
#![forbid(unsafe_code)]

use rma_win::{
    Assert, Cmp, Counter, CounterOptions, Group, Info, LockType, Mutex, Op, Rank, Result, SignalOp,
    Window, World,
};
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The scenarios, in run order.
const SCENARIOS: &[&str] = &[
    "fence",
    "fop_counter",
    "h_fop_counter",
    "ring_acc",
    "hot_acc",
    "lock_excl",
    "lock_shared",
    "pscw_ring",
    "gacc_poll",
    "win_alloc",
    "counter",
    "counter_block",
    "mutex",
    "mutex_async",
    "ticket_lock",
    "sig_ring",
    "flag_ring",
    "sig_stream",
    "flag_stream",
    "hist_batch",
    "hist_each",
    "mem",
];

/// Window layout, in elements of 8 bytes (disp_unit 8).
const COUNTER: i64 = 0; // fop_counter
const EXCL_COUNT: i64 = 1; // lock_excl (get, +1, put under an exclusive lock)
const SHARED_COUNT: i64 = 2; // lock_shared (accumulate +1 under a shared lock)
const FLAG: i64 = 3; // gacc_poll
const PSCW_SLOT: i64 = 4; // pscw_ring
const MUTEX_COUNT: i64 = 5; // mutex, mutex_async (get, +1, put under the MCS mutex)
const NEXT_TICKET: i64 = 6; // ticket_lock
const NOW_SERVING: i64 = 7;
const TICKET_COUNT: i64 = 8;
const SIG: i64 = 9; // sig_ring / flag_ring: the signal word
const SIG_DATA: i64 = 576; // sig_ring / flag_ring: SIG_N i64 of data
const SIG_N: usize = 8;
const HIST_OFF: i64 = 640; // hist_batch / hist_each: HIST_BINS i64
const HIST_BINS: usize = 256;
/// Updates per hist_batch call, and the distinct batches cycled through.
const HIST_UPDATES: usize = 256;
const HIST_BATCHES: usize = 16;
/// Values counter_block reserves per call.
const COUNTER_BLOCK: u64 = 64;
const HOT_OFF: i64 = 64; // hot_acc: HOT_N i64
const HOT_N: usize = 512; // 4 KiB
const RING_OFF: i64 = 1024; // ring_acc: RING_N f64
const RING_N: usize = 32_768; // 256 KiB
const WIN_ELEMS: usize = RING_OFF as usize + RING_N + 64;
/// The value gacc_poll reads.
const FLAG_VALUE: i64 = 42;
/// win_alloc's window, and mem's.
const ALLOC_BYTES: usize = 64 << 10;
const MEM_BYTES: usize = 1 << 20;

#[derive(Debug)]
struct Flags {
    transport: Option<String>,
    reps: usize,
    secs: f64,
    only: Option<Vec<String>>,
    csv: Option<String>,
}

/// rma-scale's command line (clap: `--help`/`--version` to stdout with exit 0, usage
/// errors exit 2, `-r 5`, `-r=5` and `--reps=5` alike).
#[derive(clap::Parser, Debug)]
#[command(
    version,
    about = "The rank-scaling scenarios over one rma transport; run under rmarun -n N",
    after_help = "scenarios: see benches/SCENARIOS.md (\"Rank scaling\")"
)]
struct Args {
    /// The window transport (atomic, queued; mpi under an MPI launcher)
    #[arg(long, value_name = "NAME")]
    transport: Option<String>,
    /// Repetitions per scenario
    #[arg(short = 'r', long = "reps", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Seconds per repetition
    #[arg(short = 't', long = "secs", default_value_t = 0.05, value_parser = rma_benches::seconds)]
    secs: f64,
    /// Only these scenarios (comma-separated)
    #[arg(short = 's', long = "scenarios", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(SCENARIOS))]
    only: Option<Vec<String>>,
    /// Write the results as CSV to this file
    #[arg(short = 'o', long = "csv", value_name = "FILE")]
    csv: Option<String>,
}

fn parse_flags() -> Flags {
    use clap::Parser;
    let a = Args::parse();
    Flags {
        transport: a.transport,
        reps: a.reps as usize,
        secs: a.secs,
        only: a.only,
        csv: a.csv,
    }
}

/// This process's resident set (VmRSS), in bytes.
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// The used bytes of the file system on /dev/shm (statvfs, through `df`: it counts
/// segments already unlinked, which a walk of the directory would miss).
fn shm_used() -> Option<f64> {
    let out = std::process::Command::new("df")
        .args(["-B1", "--output=used", "/dev/shm"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().nth(1)?.trim().parse().ok()
}

/// Nanoseconds since the Unix epoch: one clock for every process of the machine, so
/// that ranks' start and end times compare.
fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Runs `fut` to completion on this thread, as an executor with no other task does:
/// between polls the thread sleeps (parks) until the future's waker is woken.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    struct Unpark(std::thread::Thread, AtomicBool);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.1.store(true, Ordering::Release);
            self.0.unpark();
        }
    }
    let unpark = Arc::new(Unpark(std::thread::current(), AtomicBool::new(false)));
    let waker = std::task::Waker::from(unpark.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        while !unpark.1.swap(false, Ordering::Acquire) {
            std::thread::park();
        }
    }
}

/// Rank `me`'s `k`-th update of batch `b` in hist_batch / hist_each: (target, bin).
/// The C program computes the same.
fn hist_update(me: usize, b: usize, k: usize, n: usize) -> (usize, usize) {
    let mut x = ((me * HIST_BATCHES + b) * HIST_UPDATES + k) as u64;
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    (
        (x % n as u64) as usize,
        ((x >> 16) % HIST_BINS as u64) as usize,
    )
}

/// Median, minimum and maximum of a sample (sorted in place).
fn stat(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    };
    (med, v[0], v[n - 1])
}

struct Scale<'w> {
    world: &'w World,
    win: Window<'w>,
    info: &'w Info,
    flags: &'w Flags,
    /// Wrong counts seen (on this rank; summed over ranks when reported).
    wrong: u64,
    /// Checks made (on this rank).
    checks: u64,
    csv: Option<std::fs::File>,
}

impl Scale<'_> {
    fn me(&self) -> usize {
        self.world.rank()
    }

    fn n(&self) -> usize {
        self.world.size()
    }

    fn right(&self) -> usize {
        (self.me() + 1) % self.n()
    }

    fn left(&self) -> usize {
        (self.me() + self.n() - 1) % self.n()
    }

    /// Every rank's `x`, on every rank.
    fn gather(&self, x: f64) -> Result<Vec<f64>> {
        let all = self.world.allgather(&x.to_le_bytes())?;
        Ok(all
            .iter()
            .map(|b| f64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])))
            .collect())
    }

    fn sum_over_ranks(&self, x: f64) -> Result<f64> {
        Ok(self.gather(x)?.into_iter().sum())
    }

    /// Writes a CSV line (rank 0) and flushes it, so that a run killed later keeps it.
    fn line(&mut self, text: &str) {
        if self.me() != 0 {
            return;
        }
        println!("{text}");
        if let Some(f) = &mut self.csv {
            let _ = writeln!(f, "{text}");
            let _ = f.flush();
        }
    }

    fn check(
        &mut self,
        what: &str,
        ok: bool,
        got: impl std::fmt::Debug,
        expect: impl std::fmt::Debug,
    ) {
        self.checks += 1;
        if !ok {
            self.wrong += 1;
            eprintln!(
                "WRONG {what} on {} ranks (rank {}): got {got:?}, expected {expect:?}",
                self.n(),
                self.me()
            );
        }
    }

    /// Collective: rank `owner` writes `values` at `disp` of its own window under an
    /// exclusive lock of itself.
    fn set_own<T: rma_win::Equivalence>(
        &self,
        owner: usize,
        disp: i64,
        values: &[T],
    ) -> Result<()> {
        self.world.barrier()?;
        if self.me() == owner {
            let me = owner;
            self.win.lock(LockType::Exclusive, me, Assert::NONE)?;
            self.win.put(values, me, disp)?;
            self.win.unlock(me)?;
        }
        self.world.barrier()
    }

    /// Collective: rank `owner` reads `out.len()` elements at `disp` of its own window
    /// under an exclusive lock of itself (the others' `out` is left as it is).
    fn get_own<T: rma_win::Equivalence>(
        &self,
        owner: usize,
        disp: i64,
        out: &mut [T],
    ) -> Result<()> {
        self.world.barrier()?;
        if self.me() == owner {
            let me = owner;
            self.win.lock(LockType::Exclusive, me, Assert::NONE)?;
            self.win.get(out, me, disp)?;
            self.win.unlock(me)?;
        }
        self.world.barrier()
    }

    /// A read-modify-write with no atomics of the i64 at `disp` on rank 0 (get +
    /// flush, +1, put + flush), inside a passive-target epoch: exact only under a lock
    /// that excludes.
    fn plus_one(&self, disp: i64) -> Result<()> {
        let zero = Rank::new(0);
        let mut v = [0i64];
        self.win.get(&mut v, zero, disp)?;
        self.win.flush(zero)?;
        self.win.put(&[v[0] + 1], zero, disp)?;
        self.win.flush(zero)
    }

    /// Collective: `iters` iterations of `scenario` on every rank, with its exact
    /// check; its span in seconds, on every rank.
    fn run_once(&mut self, scenario: &str, iters: usize) -> Result<f64> {
        let n = self.n();
        let zero = Rank::new(0);
        let total = (n * iters) as i64;
        let (t0, t1);
        match scenario {
            "fence" => {
                self.win.fence(Assert::NOPRECEDE)?;
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    self.win.fence(Assert::NONE)?;
                }
                t1 = now_ns();
                self.win.fence(Assert::NOSUCCEED)?;
            }
            "fop_counter" => {
                self.set_own(0, COUNTER, &[0i64])?;
                self.win.lock_all(Assert::NONE)?;
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    self.win.fetch_and_op(1i64, zero, COUNTER, Op::Sum)?;
                    self.win.flush(zero)?;
                }
                t1 = now_ns();
                self.win.unlock_all()?;
                let mut got = [0i64];
                self.get_own(0, COUNTER, &mut got)?;
                if self.me() == 0 {
                    self.check("fop_counter counter", got[0] == total, got[0], total);
                }
            }
            "h_fop_counter" => {
                // fop_counter through a target handle of a lock_all epoch guard
                self.set_own(0, COUNTER, &[0i64])?;
                let epoch = self.win.lock_all_epoch(Assert::NONE)?;
                let h = epoch.target(zero)?;
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    h.fetch_add(1i64, COUNTER)?;
                    h.flush()?;
                }
                t1 = now_ns();
                epoch.unlock()?;
                let mut got = [0i64];
                self.get_own(0, COUNTER, &mut got)?;
                if self.me() == 0 {
                    self.check("h_fop_counter counter", got[0] == total, got[0], total);
                }
            }
            "ring_acc" => {
                let src = vec![1.0f64; RING_N];
                self.set_own(self.me(), RING_OFF, &vec![0.0f64; RING_N])?;
                let right = Rank::new(self.right() as u32);
                self.win.lock_all(Assert::NONE)?;
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    self.win.accumulate(&src, right, RING_OFF, Op::Sum)?;
                    self.win.flush(right)?;
                }
                t1 = now_ns();
                self.win.unlock_all()?;
                let mut got = vec![0.0f64; RING_N];
                self.get_own(self.me(), RING_OFF, &mut got)?;
                let expect = iters as f64;
                let bad = got.iter().position(|&x| x != expect);
                self.check(
                    "ring_acc element",
                    bad.is_none(),
                    bad.map(|i| (i, got[i])),
                    expect,
                );
            }
            "hot_acc" => {
                let src: Vec<i64> = (1..=HOT_N as i64).collect();
                self.set_own(0, HOT_OFF, &[0i64; HOT_N])?;
                self.win.lock_all(Assert::NONE)?;
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    self.win.accumulate(&src, zero, HOT_OFF, Op::Sum)?;
                    self.win.flush(zero)?;
                }
                t1 = now_ns();
                self.win.unlock_all()?;
                let mut got = [0i64; HOT_N];
                self.get_own(0, HOT_OFF, &mut got)?;
                if self.me() == 0 {
                    let bad = (0..HOT_N).find(|&k| got[k] != total * (k as i64 + 1));
                    self.check(
                        "hot_acc element",
                        bad.is_none(),
                        bad.map(|k| (k, got[k])),
                        bad.map(|k| total * (k as i64 + 1)),
                    );
                }
            }
            "lock_excl" => {
                self.set_own(0, EXCL_COUNT, &[0i64])?;
                self.world.barrier()?;
                t0 = now_ns();
                let mut v = [0i64];
                for _ in 0..iters {
                    self.win.lock(LockType::Exclusive, zero, Assert::NONE)?;
                    self.win.get(&mut v, zero, EXCL_COUNT)?;
                    self.win.flush(zero)?;
                    v[0] += 1;
                    self.win.put(&v, zero, EXCL_COUNT)?;
                    self.win.unlock(zero)?;
                }
                t1 = now_ns();
                let mut got = [0i64];
                self.get_own(0, EXCL_COUNT, &mut got)?;
                if self.me() == 0 {
                    self.check(
                        "lock_excl count (get, +1, put)",
                        got[0] == total,
                        got[0],
                        total,
                    );
                }
            }
            "lock_shared" => {
                self.set_own(0, SHARED_COUNT, &[0i64])?;
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    self.win.lock(LockType::Shared, zero, Assert::NONE)?;
                    self.win.accumulate(&[1i64], zero, SHARED_COUNT, Op::Sum)?;
                    self.win.unlock(zero)?;
                }
                t1 = now_ns();
                let mut got = [0i64];
                self.get_own(0, SHARED_COUNT, &mut got)?;
                if self.me() == 0 {
                    self.check("lock_shared count", got[0] == total, got[0], total);
                }
            }
            "pscw_ring" => {
                let me = self.me();
                self.set_own(me, PSCW_SLOT, &[0i64])?;
                // N = 2: left and right are the same rank, a group of one
                let left = Group::new(&[self.left()])?;
                let right_rank = self.right();
                let right = Group::new(&[right_rank])?;
                let r = right_rank;
                self.world.barrier()?;
                t0 = now_ns();
                for j in 0..iters {
                    self.win.post(&left, Assert::NONE)?;
                    self.win.start(&right, Assert::NONE)?;
                    self.win.put(&[j as i64 + 1], r, PSCW_SLOT)?;
                    self.win.complete()?;
                    self.win.wait()?;
                }
                t1 = now_ns();
                let mut got = [0i64];
                self.get_own(me, PSCW_SLOT, &mut got)?;
                self.check("pscw_ring slot", got[0] == iters as i64, got[0], iters);
            }
            "gacc_poll" => {
                self.set_own(0, FLAG, &[FLAG_VALUE])?;
                self.win.lock_all(Assert::NONE)?;
                self.world.barrier()?;
                let (mut bad, mut last) = (0u64, 0i64);
                let mut r = [0i64];
                t0 = now_ns();
                for _ in 0..iters {
                    self.win
                        .get_accumulate(&[0i64], &mut r, zero, FLAG, Op::NoOp)?;
                    self.win.flush(zero)?;
                    if r[0] != FLAG_VALUE {
                        bad += 1;
                        last = r[0];
                    }
                }
                t1 = now_ns();
                self.win.unlock_all()?;
                self.check("gacc_poll value read", bad == 0, (bad, last), FLAG_VALUE);
            }
            "counter" | "counter_block" => {
                // the Counter building block on rank 0: one fetch_add per value, or
                // one per COUNTER_BLOCK values
                let block = if scenario == "counter" {
                    1
                } else {
                    COUNTER_BLOCK
                };
                let opts = CounterOptions {
                    block,
                    ..CounterOptions::default()
                };
                let mut c = Counter::with_options(self.world, opts, self.info)?;
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    c.next()?;
                }
                t1 = now_ns();
                self.world.barrier()?;
                let got = c.read()?;
                let expect = (n as u64 * (iters as u64).div_ceil(block) * block) as i64;
                if self.me() == 0 {
                    self.check("counter value", got == expect, got, expect);
                }
                self.world.barrier()?;
                c.free()?;
            }
            "mutex" | "mutex_async" => {
                // the Mutex building block (MCS), guarding a plain get, +1, put;
                // mutex_async takes it with lock_async on an executor of one task
                // whose thread sleeps until the future is woken (block_on)
                let wait = scenario == "mutex_async";
                self.set_own(0, MUTEX_COUNT, &[0i64])?;
                let mut m = Mutex::new(self.world, self.info)?;
                self.win.lock_all(Assert::NONE)?;
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    let g = if wait {
                        block_on(m.lock_async())?
                    } else {
                        m.lock()?
                    };
                    self.plus_one(MUTEX_COUNT)?;
                    g.unlock()?;
                }
                t1 = now_ns();
                self.win.unlock_all()?;
                let mut got = [0i64];
                self.get_own(0, MUTEX_COUNT, &mut got)?;
                if self.me() == 0 {
                    self.check("mutex count (get, +1, put)", got[0] == total, got[0], total);
                }
                m.free()?;
            }
            "ticket_lock" => {
                // the ticket lock of the ticket_lock example (fetch_and_op under
                // lock_all, polling with a yield), guarding the same get, +1, put
                self.set_own(0, NEXT_TICKET, &[0i64, 0, 0])?;
                self.win.lock_all(Assert::NONE)?;
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    let ticket = self.win.fetch_and_op(1i64, zero, NEXT_TICKET, Op::Sum)?;
                    self.win.flush(zero)?;
                    loop {
                        let serving = self.win.fetch_and_op(0i64, zero, NOW_SERVING, Op::NoOp)?;
                        self.win.flush(zero)?;
                        if serving == ticket {
                            break;
                        }
                        std::thread::yield_now();
                    }
                    self.plus_one(TICKET_COUNT)?;
                    self.win.fetch_and_op(1i64, zero, NOW_SERVING, Op::Sum)?;
                    self.win.flush(zero)?;
                }
                t1 = now_ns();
                self.win.unlock_all()?;
                let mut got = [0i64];
                self.get_own(0, TICKET_COUNT, &mut got)?;
                if self.me() == 0 {
                    self.check(
                        "ticket_lock count (get, +1, put)",
                        got[0] == total,
                        got[0],
                        total,
                    );
                }
            }
            "sig_ring" | "flag_ring" | "sig_stream" | "flag_stream" => {
                // every rank sends SIG_N i64 to its right neighbour and counts them in
                // its signal: put_signal (sig_*), or put + flush + accumulate(+1) +
                // flush (flag_*). A ring waits for its own signal to count each round;
                // a stream sends every round, then waits once for all of them (the
                // origin's cost)
                let me = self.me();
                self.set_own(me, SIG, &[0i64])?;
                let right = Rank::new(self.right() as u32);
                let epoch = self.win.lock_all_epoch(Assert::NONE)?;
                let h = epoch.target(right)?;
                let signal = scenario.starts_with("sig");
                let stream = scenario.ends_with("stream");
                let mut data = [0i64; SIG_N];
                self.world.barrier()?;
                t0 = now_ns();
                for j in 0..iters {
                    data.fill(j as i64);
                    if signal {
                        h.put_signal(&data, SIG_DATA, SIG, 1, SignalOp::Add)?;
                    } else {
                        h.put(&data, SIG_DATA)?;
                        h.flush()?;
                        h.accumulate(&[1u64], SIG, Op::Sum)?;
                        h.flush()?;
                    }
                    if !stream {
                        self.win.wait_until(SIG as usize, Cmp::Ge, j as u64 + 1)?;
                    }
                }
                if stream {
                    h.flush()?;
                    self.win.wait_until(SIG as usize, Cmp::Eq, iters as u64)?;
                }
                t1 = now_ns();
                epoch.unlock()?;
                self.world.barrier()?;
                let mut got = [0i64; SIG_N + 1];
                self.win.read_local(SIG as usize, &mut got[..1])?;
                self.win.read_local(SIG_DATA as usize, &mut got[1..])?;
                let last = iters as i64 - 1;
                let ok = got[0] == iters as i64 && got[1..].iter().all(|&x| x == last);
                self.check(
                    "signal rings/streams: signal and last data",
                    ok,
                    (got[0], got[1]),
                    (iters, last),
                );
                self.world.barrier()?;
            }
            "hist_batch" | "hist_each" => {
                // a histogram over every rank's bins: HIST_UPDATES (+1) per call, to
                // pseudo-random ranks and bins; one accumulate_indexed, or one
                // accumulate per update; then flush_all
                let me = self.me();
                self.set_own(me, HIST_OFF, &[0i64; HIST_BINS])?;
                let batches: Vec<Vec<(Rank, i64, i64)>> = (0..HIST_BATCHES)
                    .map(|b| {
                        (0..HIST_UPDATES)
                            .map(|k| {
                                let (t, bin) = hist_update(me, b, k, n);
                                (Rank::new(t as u32), HIST_OFF + bin as i64, 1i64)
                            })
                            .collect()
                    })
                    .collect();
                let batch = scenario == "hist_batch";
                self.win.lock_all(Assert::NONE)?;
                self.world.barrier()?;
                t0 = now_ns();
                for j in 0..iters {
                    let updates = &batches[j % HIST_BATCHES];
                    if batch {
                        self.win.accumulate_indexed(updates, Op::Sum)?;
                    } else {
                        for &(r, d, v) in updates {
                            self.win.accumulate(&[v], r, d, Op::Sum)?;
                        }
                    }
                    self.win.flush_all()?;
                }
                t1 = now_ns();
                self.win.unlock_all()?;
                let mut bins = [0i64; HIST_BINS];
                self.get_own(me, HIST_OFF, &mut bins)?;
                let all = self.sum_over_ranks(bins.iter().sum::<i64>() as f64)? as i64;
                let expect = total * HIST_UPDATES as i64;
                if me == 0 {
                    self.check(
                        "hist total over every rank's bins",
                        all == expect,
                        all,
                        expect,
                    );
                }
            }
            "win_alloc" => {
                self.world.barrier()?;
                t0 = now_ns();
                for _ in 0..iters {
                    let mut w = Window::allocate::<u8>(self.world, ALLOC_BYTES, self.info)?;
                    w.free()?;
                }
                t1 = now_ns();
            }
            other => unreachable!("no scenario {other}"),
        }
        self.span(t0, t1)
    }

    /// Seconds from the first rank's start to the last rank's end (the slowest rank's
    /// time when all start together; where oversubscribed ranks run their loops one
    /// after another, the slowest rank's own time would count only its own share).
    fn span(&self, start: u64, end: u64) -> Result<f64> {
        let mut mine = [0u8; 16];
        mine[..8].copy_from_slice(&start.to_le_bytes());
        mine[8..].copy_from_slice(&end.to_le_bytes());
        let all = self.world.allgather(&mine)?;
        let word =
            |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        let first = all.iter().map(|b| word(b, 0)).min().unwrap_or(start);
        let last = all.iter().map(|b| word(b, 8)).max().unwrap_or(end);
        Ok(last.saturating_sub(first) as f64 * 1e-9)
    }

    /// Calibrates and times `scenario`; one CSV line of µs per aggregate operation
    /// (or per epoch), and its check line.
    fn bench(&mut self, scenario: &str) -> Result<()> {
        let (checks0, wrong0) = (self.checks, self.wrong);
        self.run_once(scenario, 4)?;
        let mut iters = 1usize;
        loop {
            let t = self.run_once(scenario, iters)?;
            if t >= 0.005 || iters >= 1 << 30 {
                iters = ((iters as f64 * self.flags.secs / t.max(1e-9)) as usize).max(1);
                break;
            }
            iters *= 4;
        }
        // per aggregate operation, or per epoch where every rank takes part in each
        let per = match scenario {
            "fence" | "pscw_ring" | "win_alloc" => iters,
            "hist_batch" | "hist_each" => iters * self.n() * HIST_UPDATES,
            _ => iters * self.n(),
        } as f64;
        let mut v = Vec::with_capacity(self.flags.reps);
        for _ in 0..self.flags.reps {
            v.push(self.run_once(scenario, iters)? / per * 1e6);
        }
        let (med, min, max) = stat(&mut v);
        let n = self.n();
        self.line(&format!(
            "scale,{scenario},{n},{iters},{med:.5},{min:.5},{max:.5}"
        ));
        let checks = self.sum_over_ranks((self.checks - checks0) as f64)? as u64;
        let wrong = self.sum_over_ranks((self.wrong - wrong0) as f64)? as u64;
        if checks > 0 {
            self.line(&format!("check,{scenario},{n},{checks},{wrong},0,0"));
        }
        Ok(())
    }

    /// One window of MEM_BYTES per rank, untouched: each rank's VmRSS increase, and the
    /// growth of /dev/shm's used bytes (rank 0, between barriers) per rank.
    fn mem(&mut self) -> Result<()> {
        let shm = || if self.me() == 0 { shm_used() } else { None };
        self.world.barrier()?;
        let rss0 = rss_bytes();
        let shm0 = shm();
        self.world.barrier()?;
        let mut w = Window::allocate::<u8>(self.world, MEM_BYTES, self.info)?;
        self.world.barrier()?;
        let rss1 = rss_bytes();
        let shm1 = shm();
        self.world.barrier()?;
        w.free()?;
        let rss = self.gather(rss1 as f64 - rss0 as f64)?;
        let n = self.n();
        let mean = rss.iter().sum::<f64>() / n as f64;
        let (lo, hi) = rss
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        self.line(&format!("scale,mem_rss,{n},1,{mean:.0},{lo:.0},{hi:.0}"));
        // n/a (a line the summary drops) when df could not tell
        let per = match (shm0, shm1) {
            (Some(a), Some(b)) => (b - a) / n as f64,
            _ => f64::NAN,
        };
        self.line(&format!("scale,mem_shm,{n},1,{per:.0},{per:.0},{per:.0}"));
        Ok(())
    }
}

/// Runs every scenario; whether every check was exact (on every rank).
fn run(world: &World, flags: &Flags) -> Result<bool> {
    let mut info = Info::new();
    if let Some(t) = &flags.transport {
        info.set(rma_core::WinInfo::TRANSPORT_KEY, t);
    }
    let win = Window::allocate::<i64>(world, WIN_ELEMS, &info)?;
    // one rank per CPU when there are enough (as the MPI launchers bind to cores);
    // oversubscribed ranks float, as under `--bind-to none`
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
    if world.size() <= cpus {
        rma_shm::launch::bind_current_thread(world.rank())?;
    }
    let csv = match (&flags.csv, world.rank()) {
        (Some(path), 0) => Some(
            std::fs::File::create(path)
                .map_err(|e| rma_win::Error::arg(format!("creating {path}: {e}")))?,
        ),
        _ => None,
    };
    let mut s = Scale {
        world,
        win,
        info: &info,
        flags,
        wrong: 0,
        checks: 0,
        csv,
    };
    if world.rank() == 0 {
        let mut head = String::new();
        let _ = write!(
            head,
            "# rma-scale: transport {}, {} ranks, reps {}, {:.3} s per rep\n\
             # section,scenario,ranks,iters,med_us,min_us,max_us",
            s.win.transport_name(),
            world.size(),
            flags.reps,
            flags.secs
        );
        println!("{head}");
    }
    let t = Instant::now();
    for &scenario in SCENARIOS {
        if flags
            .only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|x| x == scenario))
        {
            continue;
        }
        if scenario == "mem" {
            s.mem()?;
        } else {
            s.bench(scenario)?;
        }
    }
    let wrong = s.sum_over_ranks(s.wrong as f64)? as u64;
    if world.rank() == 0 {
        println!(
            "# checks: {}; total {:.1} s",
            if wrong == 0 {
                "all exact".to_owned()
            } else {
                format!("{wrong} WRONG")
            },
            t.elapsed().as_secs_f64()
        );
    }
    s.win.free()?;
    Ok(wrong == 0)
}

fn main() {
    rma_win::init_tracing();
    let flags = parse_flags();
    let outcome = rma_win::launch(2, |world| run(&world, &flags));
    let code = match outcome {
        Ok(results) => {
            let mut code = 0;
            for r in results {
                match r {
                    Ok(true) => {}
                    // a wrong count: printed by the rank that saw it, and the status says so
                    Ok(false) => code = 1,
                    Err(e) => {
                        eprintln!("rma-scale: {e}");
                        code = 1;
                    }
                }
            }
            code
        }
        Err(e) => {
            eprintln!("rma-scale: {e}");
            1
        }
    };
    std::process::exit(code);
}
