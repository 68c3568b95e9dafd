//! Wake-ups for the building blocks' futures (feature `async`): a future whose probe
//! found nothing asks to be woken after the pause its wait's pacing asks for
//! ([`super::Patience::poll_again`]), and one thread of this process, started by the
//! first such request, wakes it when that time comes.
//!
//! A future must not wake itself from inside its own `poll`: the executor would poll
//! it again at once, and the thread running the executor would never give up its core
//! to the rank being waited for (with more ranks than cores, a handover then waits for
//! the scheduler's time slice). Nothing but memory tells a waiting rank that its turn
//! came, so there is no event to wait on: the pacing decides when to look again.

use rma_core::{Error, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

/// The wake-ups to come, by when they are due (and the order they were asked in).
static DUE: Mutex<BTreeMap<(Instant, u64), Waker>> = Mutex::new(BTreeMap::new());

/// Rung when a wake-up due earlier than every other is added.
static BELL: Condvar = Condvar::new();

/// Orders wake-ups due at the same instant.
static SEQ: AtomicU64 = AtomicU64::new(0);

fn due() -> MutexGuard<'static, BTreeMap<(Instant, u64), Waker>> {
    // nothing in the map can be left half-updated by a panic (wakers run unlocked)
    DUE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the pacer's thread, once per process; the error of its start, if it failed.
fn started() -> Result<()> {
    static STARTED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    STARTED
        .get_or_init(|| {
            std::thread::Builder::new()
                .name("rma-pacer".into())
                .spawn(run)
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| Error::Internal {
            reason: format!("the thread that wakes rma's waiting futures could not start: {e}"),
        })
}

/// Arranges for `waker` to be woken `delay` from now, from the pacer's thread (never
/// from the caller's); when that is.
pub(crate) fn wake_after(waker: &Waker, delay: Duration) -> Result<Instant> {
    started()?;
    let at = Instant::now() + delay;
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let mut due = due();
    let first = due.keys().next().is_none_or(|&(t, _)| at < t);
    due.insert((at, seq), waker.clone());
    drop(due);
    if first {
        BELL.notify_one();
    }
    Ok(at)
}

/// The pacer's thread: wakes each waker when it is due, sleeping until the next.
fn run() {
    let mut due = due();
    loop {
        let now = Instant::now();
        let mut ready = Vec::new();
        while let Some(entry) = due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            ready.push(entry.remove());
        }
        if !ready.is_empty() {
            // unlocked: a waker may run the task, whose next poll asks for a wake-up
            drop(due);
            for w in ready {
                // an executor's waker that panics must not stop every other wake-up
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake()));
            }
            due = self::due();
            continue;
        }
        due = match due.keys().next() {
            Some(&(t, _)) => {
                BELL.wait_timeout(due, t.saturating_duration_since(now))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            None => BELL.wait(due).unwrap_or_else(PoisonError::into_inner),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::task::Wake;

    /// Counts its wake-ups and the thread that made them.
    struct Count {
        woken: Mutex<Vec<std::thread::ThreadId>>,
        bell: Condvar,
    }

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.woken
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(std::thread::current().id());
            self.bell.notify_all();
        }
    }

    #[test]
    fn every_wake_up_comes_once_from_the_pacer_thread_in_time_order() {
        let counts: Vec<Arc<Count>> = (0..3)
            .map(|_| {
                Arc::new(Count {
                    woken: Mutex::new(Vec::new()),
                    bell: Condvar::new(),
                })
            })
            .collect();
        let start = Instant::now();
        // asked in reverse order of their times
        for (k, c) in counts.iter().enumerate().rev() {
            let waker = Waker::from(c.clone());
            let at = wake_after(&waker, Duration::from_millis(20 * k as u64)).unwrap();
            assert!(at >= start);
            assert!(
                c.woken.lock().unwrap().is_empty(),
                "woken by the request itself"
            );
        }
        for c in &counts {
            let mut woken = c.woken.lock().unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            while woken.is_empty() && Instant::now() < deadline {
                woken = c
                    .bell
                    .wait_timeout(woken, Duration::from_millis(100))
                    .unwrap()
                    .0;
            }
            assert_eq!(woken.len(), 1, "one wake-up per request");
            assert_ne!(woken[0], std::thread::current().id());
        }
        // none came early
        assert!(start.elapsed() >= Duration::from_millis(40));
        std::thread::sleep(Duration::from_millis(50));
        for c in &counts {
            assert_eq!(c.woken.lock().unwrap().len(), 1, "woken twice");
        }
    }
}
