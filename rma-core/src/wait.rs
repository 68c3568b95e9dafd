//! How a rank waits for another: the one pacing policy of every wait in rma (the
//! barrier, passive-target locks, PSCW counters, window free, the queued transport's
//! progress and completion waits, the atomicity domain's chunk locks).
//!
//! A wait first spins a few dozen times (most waits end there). Then:
//!
//! - **Free cores** (this node runs no more ranks than it has cores, and the kernel's
//!   run queue is no longer than the cores): the peer being waited for is running on a
//!   core of its own, so the wait keeps spinning, for up to [`SPIN_FOR`], before it
//!   parks. A handoff then costs a cache-line transfer, not a scheduler wake-up.
//! - **Oversubscribed** (more ranks than cores, counting a rank twice while the queued
//!   transport's progress threads run, or other work fills the run queue): the
//!   peer may be waiting for the very core this rank spins on, so the wait yields the
//!   core a few times, then parks.
//!
//! Parking is the caller's: a futex sleep in short slices on the word it waits for
//! (rma-shm), or a short sleep where no futex word exists. Wakers make the system call
//! only when a sleeper announced itself, so a wait that ends spinning costs no system
//! call on either side. No wait spins without bound, and every caller bounds its total
//! time (the liveness checks and the stall bound, [`crate::stall_limit`]).
//!
//! [`ENV_WAIT`] (`RMA_WAIT=auto|spin|park`) overrides the choice, for measuring both.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Environment variable: `auto` (default: spin on free cores, park when
/// oversubscribed), `spin` (always spin, for up to [`SPIN_FOR_FORCED`] per wait) or
/// `park` (never spin past the first few dozen checks).
pub const ENV_WAIT: &str = "RMA_WAIT";

/// How long a wait spins on free cores before it parks.
pub const SPIN_FOR: Duration = Duration::from_millis(1);

/// How long a wait spins under `RMA_WAIT=spin` before it parks.
pub const SPIN_FOR_FORCED: Duration = Duration::from_millis(50);

/// Checks made spinning before the policy is consulted.
const FIRST_SPINS: u32 = 64;

/// Yields an oversubscribed wait makes before it parks.
const YIELDS: u32 = 16;

/// How often the run queue's length is read again (at most; one waiter reads it).
const LOAD_EVERY: Duration = Duration::from_millis(10);

/// The waiting policy [`ENV_WAIT`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Spin on free cores, park when oversubscribed.
    Auto,
    /// Spin (for up to [`SPIN_FOR_FORCED`]) whatever the load.
    Spin,
    /// Park after the first few dozen checks whatever the load.
    Park,
}

/// The mode of this process ([`ENV_WAIT`], read once; anything unknown is `Auto`).
pub fn wait_mode() -> WaitMode {
    static MODE: OnceLock<WaitMode> = OnceLock::new();
    *MODE.get_or_init(|| match std::env::var(ENV_WAIT).as_deref().map(str::trim) {
        Ok("spin") => WaitMode::Spin,
        Ok("park") => WaitMode::Park,
        _ => WaitMode::Auto,
    })
}

/// The cores this process may run on.
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

static RANKS_HERE: AtomicUsize = AtomicUsize::new(0);

/// Tells the policy how many ranks share this node (a world's size; the launcher
/// runs every rank of a world on one node). The largest world this process has seen
/// counts, for the rest of the process (a test binary that once ran 256 ranks as
/// threads parks from then on).
pub fn note_ranks(ranks: usize) {
    RANKS_HERE.fetch_max(ranks, Ordering::Relaxed);
}

static PROGRESS_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Held while a progress thread of this process runs (the queued transport's): such a
/// thread wants a core beside its rank's, so while any runs, every rank counts twice.
#[derive(Debug)]
pub struct ProgressThread(());

impl ProgressThread {
    /// Counts one more progress thread until the value is dropped.
    pub fn start() -> ProgressThread {
        PROGRESS_THREADS.fetch_add(1, Ordering::Relaxed);
        ProgressThread(())
    }
}

impl Drop for ProgressThread {
    fn drop(&mut self) {
        PROGRESS_THREADS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether this node has more runnable work than cores: more ranks than cores (twice
/// the ranks while progress threads run), or a run queue (`/proc/loadavg`'s running
/// count, read at most every 10 ms) longer than the cores. The run queue is the whole
/// host's while the cores are this process's (affinity, cgroup quota): in a small
/// container on a busy host, waits park.
pub fn oversubscribed() -> bool {
    match wait_mode() {
        WaitMode::Spin => false,
        WaitMode::Park => true,
        WaitMode::Auto => {
            let ranks = RANKS_HERE.load(Ordering::Relaxed);
            let threads = if PROGRESS_THREADS.load(Ordering::Relaxed) > 0 {
                2 * ranks
            } else {
                ranks
            };
            threads > cores() || run_queue_full()
        }
    }
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// `/proc/loadavg`'s running count exceeds the cores (cached: one waiter re-reads it
/// when the cached answer is older than [`LOAD_EVERY`]).
fn run_queue_full() -> bool {
    // (µs since `epoch()` of the last read) << 1 | its answer; 0 before the first read
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = epoch().elapsed().as_micros() as u64 + 1;
    let last = LAST.load(Ordering::Relaxed);
    if last != 0 && now.saturating_sub(last >> 1) < LOAD_EVERY.as_micros() as u64 {
        return last & 1 == 1;
    }
    let full = running_tasks().is_some_and(|r| r > cores());
    // one waiter stores; a racing one just computed the same answer
    let _ = LAST.compare_exchange(
        last,
        now << 1 | u64::from(full),
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    full
}

/// The kernel's count of running tasks (field 4 of `/proc/loadavg`, "running/total").
fn running_tasks() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace()
        .nth(3)?
        .split_once('/')?
        .0
        .parse()
        .ok()
}

/// What a waiter does after a failed check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// It spun once (a CPU pause); check again.
    Spin,
    /// It gave up its core once; check again.
    Yield,
    /// Time to park: sleep until woken (or a short timeout) and check again.
    Park,
}

/// One wait's pacing, per [`oversubscribed`] (module docs). Cheap to create: it reads
/// the clock only once the first spins are over.
#[derive(Debug)]
pub struct Backoff {
    checks: u32,
    /// When the policy was consulted, and the spin budget it gave.
    spinning: Option<(Instant, Duration)>,
    yields: u32,
    /// Set once the wait reached its parking phase (final until [`Backoff::reset`]).
    parked: bool,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Backoff {
    /// A fresh wait.
    #[inline]
    pub const fn new() -> Backoff {
        Backoff {
            checks: 0,
            spinning: None,
            yields: 0,
            parked: false,
        }
    }

    /// Paces one failed check: spins, yields, or says it is time to park (then every
    /// later call says so too, until [`Backoff::reset`]).
    #[inline]
    pub fn step(&mut self) -> Step {
        let step = self.plan();
        match step {
            Step::Spin => std::hint::spin_loop(),
            Step::Yield => std::thread::yield_now(),
            Step::Park => {}
        }
        step
    }

    /// What [`Backoff::step`] would do, counted as one step, without doing it: for a
    /// wait that pauses in its own way, such as a future's poll, which must never
    /// spin or yield its executor's thread (it returns `Pending` and is woken later).
    #[inline]
    pub fn plan(&mut self) -> Step {
        self.checks = self.checks.wrapping_add(1);
        if self.checks <= FIRST_SPINS {
            return Step::Spin;
        }
        self.slow()
    }

    #[cold]
    fn slow(&mut self) -> Step {
        if self.parked {
            return Step::Park;
        }
        let (since, budget) = *self.spinning.get_or_insert_with(|| {
            let budget = match wait_mode() {
                WaitMode::Spin => SPIN_FOR_FORCED,
                WaitMode::Park => Duration::ZERO,
                WaitMode::Auto if oversubscribed() => Duration::ZERO,
                WaitMode::Auto => SPIN_FOR,
            };
            (Instant::now(), budget)
        });
        if budget.is_zero() {
            if self.yields < YIELDS && wait_mode() != WaitMode::Park {
                self.yields += 1;
                return Step::Yield;
            }
            self.parked = true;
            return Step::Park;
        }
        // the clock is read every 64 checks, so a spin is a pause, not a vDSO call
        if self.checks % 64 != 0 || since.elapsed() < budget {
            return Step::Spin;
        }
        self.parked = true;
        Step::Park
    }

    /// Starts over (after a wake-up that changed what is waited for).
    pub fn reset(&mut self) {
        *self = Backoff::new();
    }

    /// Whether this wait has reached its parking phase.
    pub fn parking(&self) -> bool {
        self.parked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the policy decides (spin budget or yields), a wait reaches its parking
    /// phase within the forced spin budget, and stays there until reset.
    #[test]
    fn a_wait_spins_first_then_parks_within_its_budget() {
        let mut b = Backoff::new();
        for _ in 0..FIRST_SPINS {
            assert_eq!(b.step(), Step::Spin);
        }
        let start = Instant::now();
        loop {
            match b.step() {
                Step::Park => break,
                _ => assert!(
                    start.elapsed() < SPIN_FOR_FORCED + Duration::from_secs(1),
                    "a wait never reached its parking phase"
                ),
            }
        }
        assert!(b.parking());
        for _ in 0..1000 {
            assert_eq!(b.step(), Step::Park, "parking is final until reset");
        }
        b.reset();
        assert_eq!(b.step(), Step::Spin);
    }

    #[test]
    fn more_ranks_than_cores_is_oversubscribed() {
        if wait_mode() != WaitMode::Auto {
            return;
        }
        note_ranks(cores() + 1);
        assert!(oversubscribed());
    }

    #[test]
    fn the_run_queue_is_read() {
        // /proc exists on every machine this crate supports
        let running = running_tasks().expect("/proc/loadavg's running count");
        assert!(running >= 1, "this thread at least is running");
    }
}
