//! `rma-bench`: the OSU-style scenarios of `benches/SCENARIOS.md` over one rma
//! transport, for `cargo xtask bench` to set beside the same scenarios run against MPI
//! (`benches/c/mpi_rma_bench.c`) and the hardware limits (`benches/c/hw_limits.c`).
//!
//! ```text
//! rmarun -n 2 target/release/rma-bench --transport atomic [-r reps] [-t secs] [-q] [-x] [-o file.csv]
//! rmarun -n 2 target/release/rma-bench -c [--transport queued] [-r reps] ...
//! ```
//!
//! `-c` creates the window over memory the program allocated (`Window::create`): with
//! ranks as processes only the queued transport can serve it, which naming no
//! transport gives; `--transport atomic -c` fails with RMA_FLAVOR.
//!
//! The one unsafe block is in the paired scenarios (`pair`), which make the C
//! program's MPI calls directly beside rma's, under that block's contract.
#![deny(unsafe_code)]

use rma_win::{Assert, Buffer, Datatype, Info, LockType, Op, Rank, Result, Target, Window, World};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Displacement (units of 8 bytes) of the i64 used by fetch_and_op / compare_and_swap.
const LONG_OFF: i64 = 0;
/// Displacement of the contended i64 (and the contended f64 right after it).
const CONT_OFF: i64 = 8;
/// Displacement of the f64 array.
const DBL_OFF: i64 = 64;
/// The largest accumulate, in f64.
const MAX_N: usize = 262_144;
/// Window elements: room for a stride-2 layout of MAX_N elements.
const WIN_ELEMS: usize = DBL_OFF as usize + 2 * MAX_N + 64;
/// Calls per message-rate iteration.
const RATE_BATCH: usize = 10_000;
/// Block pairs of a paired run (`Bench::pairs`), and how long a block of direct
/// calls takes at least.
const PAIRS: usize = 31;
const BLOCK_SECS: f64 = 0.001;
/// Calls in a busy-target run, and how long the target computes meanwhile.
const BUSY_CALLS: usize = 100;
const BUSY_MS: u64 = 50;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Test {
    Fop,
    Cas,
    Acc,
    Gacc,
    Put,
    Get,
    AccFence,
    MsgRate,
    ContFop,
    ContAcc,
    BwLockAll,
    BwExcl,
    BwFence,
    BwPut,
    BwGet,
    Contig,
    Strided,
    BusyAcc,
    BusyFop,
    BusyPut,
    BusyGet,
    /// The latency scenarios through a target handle of a lock_all epoch guard.
    HFop,
    HCas,
    HAcc,
    HPut,
    HGet,
    HMsgRate,
    /// The message rate through a batch of a handle (`BatchedAdd`).
    HbMsgRate,
}

impl Test {
    fn key(self) -> &'static str {
        match self {
            Test::Fop => "fop",
            Test::Cas => "cas",
            Test::Acc => "acc",
            Test::Gacc => "gacc",
            Test::Put => "put",
            Test::Get => "get",
            Test::AccFence => "acc_fence",
            Test::MsgRate => "msgrate",
            Test::ContFop => "cont_fop",
            Test::ContAcc => "cont_acc",
            Test::BwLockAll => "bw_lockall",
            Test::BwExcl => "bw_excl",
            Test::BwFence => "bw_fence",
            Test::BwPut => "bw_put",
            Test::BwGet => "bw_get",
            Test::Contig => "contig",
            Test::Strided => "strided",
            Test::BusyAcc => "busy_acc",
            Test::BusyFop => "busy_fop",
            Test::BusyPut => "busy_put",
            Test::BusyGet => "busy_get",
            Test::HFop => "h_fop",
            Test::HCas => "h_cas",
            Test::HAcc => "h_acc",
            Test::HPut => "h_put",
            Test::HGet => "h_get",
            Test::HMsgRate => "h_msgrate",
            Test::HbMsgRate => "hb_msgrate",
        }
    }

    /// A scenario through a target handle (`run_handle`).
    fn through_handle(self) -> bool {
        matches!(
            self,
            Test::HFop
                | Test::HCas
                | Test::HAcc
                | Test::HPut
                | Test::HGet
                | Test::HMsgRate
                | Test::HbMsgRate
        )
    }

    /// Calls per timed iteration.
    fn calls_per_iter(self) -> usize {
        if matches!(self, Test::MsgRate | Test::HMsgRate | Test::HbMsgRate) {
            RATE_BATCH
        } else {
            1
        }
    }
}

#[derive(Debug)]
struct Flags {
    transport: Option<String>,
    reps: usize,
    secs: f64,
    quick: bool,
    create: bool,
    skip_cas: bool,
    /// Only the bandwidth scenarios (bw_*).
    bw_only: bool,
    csv: Option<String>,
    /// Only these scenario keys (empty: all).
    only: Vec<String>,
}

/// rma-bench's command line (clap: `--help`/`--version` to stdout with exit 0, usage
/// errors exit 2, `-r 5`, `-r=5` and `--reps=5` alike).
#[derive(clap::Parser, Debug)]
#[command(
    version,
    about = "The OSU-style scenarios of benches/SCENARIOS.md over one rma transport; run under rmarun -n 2"
)]
struct Args {
    /// The window transport (atomic, queued; mpi under an MPI launcher)
    #[arg(long, value_name = "NAME")]
    transport: Option<String>,
    /// Repetitions per scenario
    #[arg(short = 'r', long = "reps", default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Seconds per repetition
    #[arg(short = 't', long = "secs", default_value_t = 0.04, value_parser = rma_benches::seconds)]
    secs: f64,
    /// One short pass: the single-call latencies only
    #[arg(short = 'q', long)]
    quick: bool,
    /// Create the window over this process's memory (Window::create) instead of allocating it
    #[arg(short = 'c', long)]
    create: bool,
    /// Skip compare_and_swap (Open MPI 4's osc/rdma crashes on it)
    #[arg(short = 'x', long = "skip-cas")]
    skip_cas: bool,
    /// Only the bandwidth scenarios (bw_*)
    #[arg(short = 'b', long = "bw-only")]
    bw_only: bool,
    /// Write the results as CSV to this file
    #[arg(short = 'o', long = "csv", value_name = "FILE")]
    csv: Option<String>,
    /// Only these scenarios (keys as in the output, e.g. h_put,msgrate), for profiling one
    #[arg(long, value_name = "KEY,...", value_delimiter = ',')]
    only: Vec<String>,
}

fn parse_flags() -> Flags {
    use clap::Parser;
    let a = Args::parse();
    Flags {
        transport: a.transport,
        reps: a.reps as usize,
        secs: a.secs,
        quick: a.quick,
        create: a.create,
        skip_cas: a.skip_cas,
        bw_only: a.bw_only,
        csv: a.csv,
        only: a.only,
    }
}

#[derive(Clone, Copy, Debug)]
struct Stat {
    med: f64,
    min: f64,
    max: f64,
    iters: usize,
}

fn stat(mut v: Vec<f64>, iters: usize) -> Stat {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    };
    Stat {
        med,
        min: v[0],
        max: v[n - 1],
        iters,
    }
}

struct Bench<'w> {
    world: &'w World,
    win: Window<'w>,
    flags: &'w Flags,
    src: Vec<f64>,
    res: Vec<f64>,
    strided: Datatype,
    contended_errors: u64,
    csv: String,
}

impl Bench<'_> {
    fn me(&self) -> usize {
        self.world.rank()
    }

    /// The largest of every rank's `x` (MPI_Allreduce with MAX), on every rank.
    fn max_over_ranks(&self, x: f64) -> Result<f64> {
        let all = self.world.allgather(&x.to_le_bytes())?;
        Ok(all
            .iter()
            .map(|b| f64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])))
            .fold(f64::MIN, f64::max))
    }

    /// One call of `test` (with `n` elements) from this rank to rank 1, and a flush.
    fn call(&mut self, test: Test, n: usize, j: usize) -> Result<()> {
        let one = Rank::new(1);
        let w = &self.win;
        match test {
            Test::Fop | Test::BusyFop => w.fetch_and_op(1i64, one, LONG_OFF, Op::Sum).map(drop),
            Test::Cas => w.compare_and_swap(1i64, 0, one, LONG_OFF + 1).map(drop),
            Test::Acc | Test::BusyAcc | Test::AccFence => {
                w.accumulate(&self.src[..1], one, DBL_OFF, Op::Sum)
            }
            Test::Gacc => {
                w.get_accumulate(&self.src[..1], &mut self.res[..1], one, DBL_OFF, Op::Sum)
            }
            Test::Put | Test::BusyPut => w.put(&self.src[..1], one, DBL_OFF + 1),
            Test::Get | Test::BusyGet => w.get(&mut self.res[..1], one, DBL_OFF + 2),
            Test::MsgRate => {
                w.accumulate(&self.src[..1], one, DBL_OFF + (j & 1023) as i64, Op::Sum)
            }
            Test::ContFop => w.fetch_and_op(1i64, one, CONT_OFF, Op::Sum).map(drop),
            Test::ContAcc => w.accumulate(&[1.0f64], one, CONT_OFF + 1, Op::Sum),
            Test::BwLockAll | Test::BwExcl | Test::BwFence | Test::Contig => {
                w.accumulate(&self.src[..n], one, DBL_OFF, Op::Sum)
            }
            Test::BwPut => w.put(&self.src[..n], one, DBL_OFF),
            Test::BwGet => w.get(&mut self.res[..n], one, DBL_OFF),
            Test::Strided => w.accumulate_with(
                Buffer::of(&self.src[..n]),
                Target::new(one, DBL_OFF, 1, &self.strided),
                Op::Sum,
            ),
            // the handle scenarios (`Test::through_handle`) run in run_handle
            _ => Err(rma_win::Error::arg("a handle scenario runs in run_handle")),
        }
    }

    /// `iters` timed iterations of a handle scenario on rank 0: a lock_all epoch
    /// guard, one handle on rank 1, each call then a flush through the handle (one
    /// flush per RATE_BATCH calls for the message rate).
    fn run_handle(&mut self, test: Test, iters: usize) -> Result<f64> {
        let mut el = 0.0;
        if self.me() == 0 {
            let epoch = self.win.lock_all_epoch(Assert::NONE)?;
            let h = epoch.target(Rank::new(1))?;
            let (src, res) = (&self.src, &mut self.res);
            el = match test {
                Test::HFop => timed(iters, || {
                    h.fetch_add(1i64, LONG_OFF)?;
                    h.flush()
                })?,
                Test::HCas => timed(iters, || {
                    h.compare_and_swap(1i64, 0, LONG_OFF + 1)?;
                    h.flush()
                })?,
                Test::HAcc => timed(iters, || {
                    h.add(&src[..1], DBL_OFF)?;
                    h.flush()
                })?,
                Test::HPut => timed(iters, || {
                    h.put(&src[..1], DBL_OFF + 1)?;
                    h.flush()
                })?,
                Test::HGet => timed(iters, || {
                    h.get(&mut res[..1], DBL_OFF + 2)?;
                    h.flush()
                })?,
                Test::HbMsgRate => timed(iters, || {
                    let mut batch = h.batched::<f64>();
                    for j in 0..RATE_BATCH {
                        batch.add(src[0], DBL_OFF + (j & 1023) as i64)?;
                    }
                    batch.flush()
                })?,
                _ => timed(iters, || {
                    for j in 0..RATE_BATCH {
                        h.add(&src[..1], DBL_OFF + (j & 1023) as i64)?;
                    }
                    h.flush()
                })?,
            };
            epoch.unlock()?;
        }
        self.world.barrier()?;
        self.rank0_value(el)
    }

    /// Collective: `iters` timed iterations of `test`; every rank returns the elapsed
    /// seconds (rank 0's, or the slowest rank's in the contended tests).
    fn run_once(&mut self, test: Test, n: usize, iters: usize) -> Result<f64> {
        let one = Rank::new(1);
        match test {
            Test::ContFop | Test::ContAcc => return self.run_contended(test, iters),
            Test::AccFence | Test::BwFence => {
                self.win.fence(Assert::NOPRECEDE)?;
                self.world.barrier()?;
                let t = Instant::now();
                for _ in 0..iters {
                    if self.me() == 0 {
                        self.call(test, n, 0)?;
                    }
                    self.win.fence(Assert::NONE)?;
                }
                let el = t.elapsed().as_secs_f64();
                self.win.fence(Assert::NOSUCCEED)?;
                return self.rank0_value(el);
            }
            Test::BusyAcc | Test::BusyFop | Test::BusyPut | Test::BusyGet => {
                return self.run_busy(test, iters)
            }
            _ if test.through_handle() => return self.run_handle(test, iters),
            _ => {}
        }
        let mut el = 0.0;
        if self.me() == 0 {
            if test == Test::BwExcl {
                self.win.lock(LockType::Exclusive, one, Assert::NONE)?;
            } else {
                self.win.lock_all(Assert::NONE)?;
            }
            let t = Instant::now();
            let batch = test.calls_per_iter();
            for _ in 0..iters {
                for j in 0..batch {
                    self.call(test, n, j)?;
                    if batch == 1 {
                        self.win.flush(one)?;
                    }
                }
                if batch > 1 {
                    self.win.flush(one)?;
                }
            }
            el = t.elapsed().as_secs_f64();
            if test == Test::BwExcl {
                self.win.unlock(one)?;
            } else {
                self.win.unlock_all()?;
            }
        }
        self.world.barrier()?;
        self.rank0_value(el)
    }

    /// Rank 0's `el`, on every rank.
    fn rank0_value(&self, el: f64) -> Result<f64> {
        self.max_over_ranks(if self.me() == 0 { el } else { 0.0 })
    }

    fn run_contended(&mut self, test: Test, iters: usize) -> Result<f64> {
        let one = Rank::new(1);
        self.set_contended(0)?;
        self.win.lock_all(Assert::NONE)?;
        self.world.barrier()?;
        let t = Instant::now();
        for _ in 0..iters {
            self.call(test, 1, 0)?;
            self.win.flush(one)?;
        }
        let el = t.elapsed().as_secs_f64();
        self.win.unlock_all()?;
        let slowest = self.max_over_ranks(el)?;
        let expect = 2 * iters as i64;
        let got = self.set_contended(-1)?;
        let wrong = match test {
            Test::ContFop => got.0 != expect,
            _ => got.1 != expect as f64,
        };
        if wrong && self.me() == 1 {
            eprintln!(
                "CONTENDED {} WRONG: got {:?} expected {expect}",
                test.key(),
                got
            );
            self.contended_errors += 1;
        }
        Ok(slowest)
    }

    /// Rank 1 reads the contended pair and, unless `value` is negative, sets both to
    /// `value`, under an exclusive lock of itself; collective.
    fn set_contended(&mut self, value: i64) -> Result<(i64, f64)> {
        self.world.barrier()?;
        let mut got = (0, 0.0);
        if self.me() == 1 {
            let me = Rank::new(1);
            self.win.lock(LockType::Exclusive, me, Assert::NONE)?;
            let mut i = [0i64];
            let mut d = [0f64];
            self.win.get(&mut i, me, CONT_OFF)?;
            self.win.get(&mut d, me, CONT_OFF + 1)?;
            if value >= 0 {
                self.win.put(&[value], me, CONT_OFF)?;
                self.win.put(&[value as f64], me, CONT_OFF + 1)?;
            }
            self.win.unlock(me)?;
            got = (i[0], d[0]);
        }
        self.world.barrier()?;
        Ok(got)
    }

    /// Rank 1 computes for BUSY_MS without calling the library while rank 0 times
    /// `iters` calls + flush.
    fn run_busy(&mut self, test: Test, iters: usize) -> Result<f64> {
        let one = Rank::new(1);
        let mut el = 0.0;
        if self.me() == 0 {
            // Open the epoch and complete one call before the target goes busy.
            self.win.lock_all(Assert::NONE)?;
            self.call(test, 1, 0)?;
            self.win.flush(one)?;
        }
        self.world.barrier()?;
        if self.me() == 0 {
            let t = Instant::now();
            for _ in 0..iters {
                self.call(test, 1, 0)?;
                self.win.flush(one)?;
            }
            el = t.elapsed().as_secs_f64();
            self.win.unlock_all()?;
        } else {
            let end = Instant::now() + Duration::from_millis(BUSY_MS);
            let mut x = 0u64;
            while Instant::now() < end {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        self.world.barrier()?;
        self.rank0_value(el)
    }

    /// Calibrates, then times `reps` repetitions; seconds per call.
    fn bench(&mut self, test: Test, n: usize) -> Result<Stat> {
        self.run_once(test, n, 4)?;
        let mut iters = 1usize;
        loop {
            let t = self.run_once(test, n, iters)?;
            if t >= 0.005 || iters >= 1 << 30 {
                iters = ((iters as f64 * self.flags.secs / t.max(1e-9)) as usize).max(1);
                break;
            }
            iters *= 4;
        }
        let per = (iters * test.calls_per_iter()) as f64;
        let mut v = vec![];
        for _ in 0..self.flags.reps {
            v.push(self.run_once(test, n, iters)? / per);
        }
        Ok(stat(v, iters))
    }

    fn record(&mut self, section: &str, test: &str, n: usize, s: Stat) {
        if self.me() != 0 {
            return;
        }
        let (med, min, max) = (s.med * 1e6, s.min * 1e6, s.max * 1e6);
        let _ = writeln!(
            self.csv,
            "{section},{test},{n},{},{med:.4},{min:.4},{max:.4}",
            s.iters
        );
        if section == "bw" || section == "layout" {
            let mbs = 8.0 * n as f64 / med;
            println!(
                "{test:<12} {n:>8} {:>9} {med:>11.3} {min:>11.3} {max:>11.3} {mbs:>10.1} MB/s",
                s.iters
            );
        } else {
            println!(
                "{test:<12} {n:>8} {:>9} {med:>11.3} {min:>11.3} {max:>11.3} {:>10.2} Mops/s",
                s.iters,
                1.0 / med
            );
        }
    }

    /// The paired scenarios (`pair` rows; mpi transport only): rank 0 times calls +
    /// flush through a target handle and the same MPI calls made directly, as the C
    /// program makes them ([`rma_win::TargetHandle::c_calls`]), in alternating blocks
    /// of about a millisecond, [`PAIRS`] pairs, in one process: both sides of a pair
    /// run at the same machine speed, which separate programs in separate rounds
    /// do not. A row's med, min and max are those of the per-pair ratios (handle /
    /// direct), not µs. Scenario keys `p_put`, `p_acc`, `p_get`, `p_fop`, `p_msgrate`.
    fn pairs(&mut self) -> Result<()> {
        let wanted: Vec<Paired> = Paired::ALL
            .into_iter()
            .filter(|p| self.flags.only.is_empty() || self.flags.only.iter().any(|k| *k == p.key()))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        // rank 0's error is returned after the barrier, so that rank 1 does not wait
        // in it for ever
        let rows = if self.me() == 0 {
            self.pair_rows(wanted)
        } else {
            Ok(vec![])
        };
        self.world.barrier()?;
        for (p, r) in rows? {
            let _ = writeln!(
                self.csv,
                "pair,{},1,{},{:.4},{:.4},{:.4}",
                p.key(),
                r.iters,
                r.ratio.med,
                r.ratio.min,
                r.ratio.max
            );
            println!(
                "{:<12} {:>8} {:>9} handle / direct {:.3} [{:.3}..{:.3}] ({:.1} / {:.1} ns per call, medians)",
                p.key(),
                1,
                r.iters,
                r.ratio.med,
                r.ratio.min,
                r.ratio.max,
                r.handle_ns,
                r.direct_ns
            );
        }
        Ok(())
    }

    /// Rank 0's part of [`Bench::pairs`]: the rows, none where the handle has no
    /// direct calls (another transport, or MPI calls that take a lock).
    fn pair_rows(&mut self, wanted: Vec<Paired>) -> Result<Vec<(Paired, PairResult)>> {
        let mut rows = vec![];
        let epoch = self.win.lock_all_epoch(Assert::NONE)?;
        let h = epoch.target(Rank::new(1))?;
        if let Some(c) = h.c_calls() {
            let (src, res) = (&self.src, &mut self.res);
            for p in wanted {
                rows.push((p, pair(&h, &c, p, src, res)?));
            }
        }
        epoch.unlock()?;
        Ok(rows)
    }

    /// Whether `--only` leaves `test` in.
    fn wanted(&self, test: Test) -> bool {
        self.flags.only.is_empty() || self.flags.only.iter().any(|k| k == test.key())
    }

    fn lat(&mut self, test: Test) -> Result<()> {
        if !self.wanted(test) {
            return Ok(());
        }
        let s = self.bench(test, 1)?;
        self.record("lat", test.key(), 1, s);
        Ok(())
    }

    fn busy(&mut self, test: Test) -> Result<()> {
        if !self.wanted(test) {
            return Ok(());
        }
        let mut v = vec![];
        for _ in 0..3 {
            v.push(self.run_once(test, 1, BUSY_CALLS)?);
        }
        let s = stat(v, BUSY_CALLS);
        self.record("busy", test.key(), BUSY_CALLS, s);
        Ok(())
    }

    fn all(&mut self) -> Result<()> {
        if self.me() == 0 {
            println!(
                "# rma-bench: transport {}, window {}, reps {}, {:.3} s per rep\n{:<12} {:>8} {:>9} {:>11} {:>11} {:>11}",
                self.win.transport_name(),
                if self.flags.create { "create" } else { "allocate" },
                self.flags.reps,
                self.flags.secs,
                "test",
                "N",
                "iters",
                "med_us",
                "min_us",
                "max_us"
            );
        }
        let latency = !self.flags.bw_only;
        for test in [
            Test::Fop,
            Test::Cas,
            Test::Acc,
            Test::Gacc,
            Test::Put,
            Test::Get,
        ] {
            if latency && !(test == Test::Cas && self.flags.skip_cas) {
                self.lat(test)?;
            }
        }
        if latency {
            self.lat(Test::AccFence)?;
            for test in [Test::HFop, Test::HCas, Test::HAcc, Test::HPut, Test::HGet] {
                if !(test == Test::HCas && self.flags.skip_cas) {
                    self.lat(test)?;
                }
            }
            self.pairs()?;
        }
        if !self.flags.quick {
            if latency {
                for test in [
                    Test::MsgRate,
                    Test::HMsgRate,
                    Test::HbMsgRate,
                    Test::ContFop,
                    Test::ContAcc,
                ] {
                    self.lat(test)?;
                }
                for test in [Test::BusyAcc, Test::BusyFop, Test::BusyPut, Test::BusyGet] {
                    self.busy(test)?;
                }
            }
            for test in [
                Test::BwLockAll,
                Test::BwExcl,
                Test::BwFence,
                Test::BwPut,
                Test::BwGet,
            ] {
                let mut n = 1;
                while n <= MAX_N && self.wanted(test) {
                    let s = self.bench(test, n)?;
                    self.record("bw", test.key(), n, s);
                    n *= 8;
                }
            }
            for n in [4096, 32768] {
                for test in [Test::Contig, Test::Strided] {
                    if !self.wanted(test) {
                        continue;
                    }
                    self.strided = strided_type(n)?;
                    let s = self.bench(test, n)?;
                    self.record("layout", test.key(), n, s);
                }
            }
        }
        let errors = self.max_over_ranks(self.contended_errors as f64)? as u64;
        if self.me() == 0 {
            let _ = writeln!(self.csv, "check,contended_errors,{errors},0,0,0,0");
            println!(
                "# contended final-value check: {}",
                if errors == 0 { "all exact" } else { "FAILED" }
            );
        }
        Ok(())
    }
}

/// A paired scenario ([`Bench::pairs`]).
#[derive(Clone, Copy, Debug)]
enum Paired {
    Put,
    Acc,
    Get,
    Fop,
    MsgRate,
}

impl Paired {
    const ALL: [Paired; 5] = [
        Paired::Put,
        Paired::Acc,
        Paired::Get,
        Paired::Fop,
        Paired::MsgRate,
    ];

    fn key(self) -> &'static str {
        match self {
            Paired::Put => "p_put",
            Paired::Acc => "p_acc",
            Paired::Get => "p_get",
            Paired::Fop => "p_fop",
            Paired::MsgRate => "p_msgrate",
        }
    }
}

/// What a paired scenario measured.
struct PairResult {
    iters: usize,
    ratio: Stat,
    handle_ns: f64,
    direct_ns: f64,
}

/// `iters` runs of `f`, timed; seconds. Never inlined, so that each scenario's loop
/// is compiled on its own, with its calls inlined into it, as a program's hot loop
/// is: not beside every other scenario of the benchmark, whose code would then
/// share one function's inlining budget.
#[inline(never)]
fn timed(iters: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let t = Instant::now();
    for _ in 0..iters {
        f()?;
    }
    Ok(t.elapsed().as_secs_f64())
}

/// An MPI return code as an error.
fn mpi_rc(rc: std::ffi::c_int) -> Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(rma_win::Error::arg(format!(
            "a direct MPI call returned {rc}"
        )))
    }
}

/// One paired scenario on rank 0 ([`Bench::pairs`]): `iters` iterations per block
/// (calibrated so that a block of direct calls takes [`BLOCK_SECS`]), the handle's
/// block and the direct block alternating which goes first.
#[allow(unsafe_code)]
fn pair(
    h: &rma_win::TargetHandle<'_, '_>,
    c: &rma_win::backend::CCalls<'_>,
    p: Paired,
    src: &[f64],
    res: &mut [f64],
) -> Result<PairResult> {
    let one = 1i64;
    let mut old = 0i64;
    let mut block = |direct: bool, iters: usize| -> Result<f64> {
        // The contract of every direct call below: the lock_all epoch of `h` covers rank 1;
        // each displacement is an aligned 8-byte element of rank 1's window (the
        // handle scenarios' own); `src`, `res`, `one` and `old` outlive the flush that
        // ends each iteration, and nothing reads `res` or `old` before it; this is the
        // thread that initialized MPI, and no other thread calls it.
        match (p, direct) {
            (Paired::Put, true) => timed(iters, || {
                // SAFETY: the contract above.
                unsafe {
                    mpi_rc(c.put(&src[0], DBL_OFF + 1))?;
                    mpi_rc(c.flush())
                }
            }),
            (Paired::Put, false) => timed(iters, || {
                h.put(&src[..1], DBL_OFF + 1)?;
                h.flush()
            }),
            (Paired::Acc, true) => timed(iters, || {
                // SAFETY: the contract above.
                unsafe {
                    mpi_rc(c.accumulate(&src[0], DBL_OFF))?;
                    mpi_rc(c.flush())
                }
            }),
            (Paired::Acc, false) => timed(iters, || {
                h.add(&src[..1], DBL_OFF)?;
                h.flush()
            }),
            (Paired::Get, true) => timed(iters, || {
                // SAFETY: the contract above.
                unsafe {
                    mpi_rc(c.get(&mut res[0], DBL_OFF + 2))?;
                    mpi_rc(c.flush())
                }
            }),
            (Paired::Get, false) => timed(iters, || {
                h.get(&mut res[..1], DBL_OFF + 2)?;
                h.flush()
            }),
            (Paired::Fop, true) => timed(iters, || {
                // SAFETY: the contract above.
                unsafe {
                    mpi_rc(c.fetch_add(&one, &mut old, LONG_OFF))?;
                    mpi_rc(c.flush())
                }
            }),
            (Paired::Fop, false) => timed(iters, || {
                h.fetch_add(1i64, LONG_OFF)?;
                h.flush()
            }),
            (Paired::MsgRate, true) => timed(iters, || {
                // SAFETY: the contract above.
                unsafe {
                    for j in 0..RATE_BATCH {
                        mpi_rc(c.accumulate(&src[0], DBL_OFF + (j & 1023) as i64))?;
                    }
                    mpi_rc(c.flush())
                }
            }),
            (Paired::MsgRate, false) => timed(iters, || {
                for j in 0..RATE_BATCH {
                    h.add(&src[..1], DBL_OFF + (j & 1023) as i64)?;
                }
                h.flush()
            }),
        }
    };
    // warm both, then calibrate on the direct calls
    block(true, 16)?;
    block(false, 16)?;
    let mut iters = 1usize;
    while block(true, iters)? < BLOCK_SECS && iters < 1 << 24 {
        iters *= 2;
    }
    let (mut ratios, mut handle, mut direct) = (vec![], vec![], vec![]);
    for i in 0..PAIRS {
        let (d, hd) = if i % 2 == 0 {
            let d = block(true, iters)?;
            (d, block(false, iters)?)
        } else {
            let hd = block(false, iters)?;
            (block(true, iters)?, hd)
        };
        ratios.push(hd / d);
        handle.push(hd);
        direct.push(d);
    }
    let per = 1e9
        / (iters
            * if matches!(p, Paired::MsgRate) {
                RATE_BATCH
            } else {
                1
            }) as f64;
    Ok(PairResult {
        iters,
        ratio: stat(ratios, iters),
        handle_ns: stat(handle, iters).med * per,
        direct_ns: stat(direct, iters).med * per,
    })
}

/// vector(n, 1, 2, f64): every other element.
fn strided_type(n: usize) -> Result<Datatype> {
    let mut t = Datatype::vector(n, 1, 2, &Datatype::of::<f64>())?;
    t.commit();
    Ok(t)
}

fn run(world: &World, flags: &Flags) -> Result<()> {
    if world.size() != 2 {
        return Err(rma_win::Error::arg(
            "rma-bench needs exactly 2 ranks: rmarun -n 2 rma-bench",
        ));
    }
    let mut info = Info::new();
    if let Some(t) = &flags.transport {
        info.set(rma_core::WinInfo::TRANSPORT_KEY, t);
    }
    let mut private = vec![0f64; if flags.create { WIN_ELEMS } else { 0 }];
    let win = if flags.create {
        Window::create(world, &mut private, &info)?
    } else {
        Window::allocate::<f64>(world, WIN_ELEMS, &info)?
    };
    // Bind after the window exists, so that a progress thread it started stays free to
    // run wherever the scheduler finds room (as MPI ranks are bound by mpiexec).
    rma_shm::launch::bind_current_thread(world.rank())?;
    let mut b = Bench {
        world,
        win,
        flags,
        src: vec![1.0; MAX_N],
        res: vec![0.0; MAX_N],
        strided: strided_type(1)?,
        contended_errors: 0,
        csv: String::new(),
    };
    let t = Instant::now();
    b.all()?;
    if world.rank() == 0 {
        println!("# total {:.1} s", t.elapsed().as_secs_f64());
        if let Some(path) = &flags.csv {
            std::fs::write(path, &b.csv)
                .map_err(|e| rma_win::Error::arg(format!("writing {path}: {e}")))?;
        }
    }
    let failed = b.contended_errors;
    b.win.free()?;
    if failed > 0 {
        return Err(rma_win::Error::arg(
            "a contended run ended with a wrong value",
        ));
    }
    Ok(())
}

fn main() {
    rma_win::init_tracing();
    let flags = parse_flags();
    let outcome = rma_win::launch(2, |world| run(&world, &flags));
    let failed = match outcome {
        Ok(results) => results.into_iter().find_map(|r| r.err()),
        Err(e) => Some(e),
    };
    if let Some(e) = failed {
        eprintln!("rma-bench: {e}");
        std::process::exit(1);
    }
}
