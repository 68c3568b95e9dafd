//! The one wait of rma-shm: paced by [`rma_core::wait::Backoff`] (spin on free cores,
//! yield and park when oversubscribed), parked on a futex word whose wakers make the
//! system call only when a sleeper announced itself, and bounded by liveness checks.

use crate::sys;
use rma_core::wait::{Backoff, Step};
use rma_core::Result;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The longest single sleep: a wake-up that was missed (or never sent, by a peer that
/// died) costs at most this.
const SLICE: Duration = Duration::from_millis(10);

/// Environment variable setting how often a waiting rank checks that its peers are
/// alive, in milliseconds (default 20, at least 1): a dead peer is reported within about
/// this time (plus the time its launcher takes to notice a crash).
pub const ENV_LIVENESS_MS: &str = "RMA_LIVENESS_MS";

/// The interval between liveness checks in every wait ([`ENV_LIVENESS_MS`]).
pub fn liveness_interval() -> Duration {
    static MS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let ms = *MS.get_or_init(|| {
        std::env::var(ENV_LIVENESS_MS)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map(|v| v.clamp(1, 60_000))
            .unwrap_or(20)
    });
    Duration::from_millis(ms)
}

/// Waits until `cond(word's value)` holds, or fails (`cond`'s error: a value no honest
/// peer could write). Once parked, `check` runs every liveness interval and its error
/// ends the wait, unless the condition turned true meanwhile (a peer that satisfied it
/// and then exited is not a failure).
///
/// `sleepers` counts the waiters asleep on `word`: a waker changes `word`, then calls
/// [`wake`] with the same `sleepers`, which makes the system call only when it is not 0.
///
/// `help` is work this rank does between checks (the queued transport's engine, which
/// the peer being waited for may need); when it did some, the wait spins anew, and a
/// wait with work pending never parks.
pub(crate) fn wait_on(
    word: &AtomicU32,
    sleepers: &AtomicU32,
    mut cond: impl FnMut(u32) -> Result<bool>,
    mut check: impl FnMut() -> Result<()>,
    mut help: impl FnMut() -> bool,
) -> Result<()> {
    let mut pace = Backoff::new();
    // the liveness checks run every interval once the wait stopped spinning: while it
    // parks, and while it keeps helping (a peer streaming requests at this rank must
    // not hide a dead holder)
    let mut last_check: Option<Instant> = None;
    loop {
        let seen = word.load(Ordering::Acquire);
        if cond(seen)? {
            return Ok(());
        }
        if help() {
            pace.reset();
        } else if pace.step() != Step::Park {
            continue;
        } else {
            // announced before the kernel compares `word` with `seen`: a waker that
            // changed `word` after our check either sees us counted or we see its
            // change (work that arrives meanwhile is the progress thread's, which the
            // origin rang; this sleep ends within the slice anyway)
            sleepers.fetch_add(1, Ordering::SeqCst);
            sys::futex_wait(word, seen, SLICE.min(liveness_interval()));
            sleepers.fetch_sub(1, Ordering::SeqCst);
        }
        let since = *last_check.get_or_insert_with(Instant::now);
        if since.elapsed() >= liveness_interval() {
            last_check = Some(Instant::now());
            if let Err(e) = check() {
                // a peer that satisfied the condition may have exited since: its exit
                // is published after what it did, so look once more before blaming it
                return match cond(word.load(Ordering::Acquire)) {
                    Ok(true) => Ok(()),
                    _ => Err(e),
                };
            }
        }
    }
}

/// Wakes the waiters of `word` after it changed, if any announced itself in
/// `sleepers` (module docs): no system call when nobody sleeps.
#[inline]
pub(crate) fn wake(word: &AtomicU32, sleepers: &AtomicU32) {
    if sleepers.load(Ordering::SeqCst) != 0 {
        sys::futex_wake_all(word);
    }
}
