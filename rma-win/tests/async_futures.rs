//! Feature `async`: requests, `Mutex::lock_async` and `Window::wait_until_async` as
//! futures on a tokio current-thread runtime. While a future waits for another rank,
//! the executor keeps running the task's other futures (counted), and the results are
//! exact.

use rma_win::{Assert, Cmp, Info, Mutex, Rank, Result, SignalOp, Window};
use std::cell::Cell;
use std::time::Duration;

/// Yields until `done` is set; how many times it ran.
async fn ticker(done: &Cell<bool>) -> u64 {
    let mut ticks = 0;
    while !done.get() {
        ticks += 1;
        tokio::task::yield_now().await;
    }
    ticks
}

#[test]
fn futures_wait_without_blocking_the_executor() {
    let results = rma_win::run_threads(2, |world| -> Result<(u64, u64)> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a tokio runtime");
        let mutex = Mutex::new(&world, &Info::new())?;
        // [0]: data, [1]: signal
        let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
        world.barrier()?;
        if world.rank() == 1 {
            let guard = mutex.lock()?;
            world.barrier()?; // rank 0 now finds the mutex held
            std::thread::sleep(Duration::from_millis(30));
            guard.unlock()?;
            std::thread::sleep(Duration::from_millis(30));
            let epoch = win.lock_all_epoch(Assert::NONE)?;
            epoch
                .target(Rank::new(0))?
                .put_signal(&[99u64], 0, 1, 1, SignalOp::Set)?;
            epoch.unlock()?;
            world.barrier()?;
            return Ok((0, 0));
        }
        world.barrier()?;
        let (lock_ticks, signal_ticks) = rt.block_on(async {
            let done = Cell::new(false);
            let (guard, lock_ticks) = tokio::join!(
                async {
                    let g = mutex.lock_async().await;
                    done.set(true);
                    g
                },
                ticker(&done)
            );
            guard?.unlock()?;
            done.set(false);
            let (seen, signal_ticks) = tokio::join!(
                async {
                    let v = win.wait_until_async(1, Cmp::Eq, 1).await;
                    done.set(true);
                    v
                },
                ticker(&done)
            );
            assert_eq!(seen?, 1);
            let epoch = win.lock_all_epoch(Assert::NONE)?;
            let h = epoch.target(Rank::new(0))?;
            let mut data = [0u64];
            h.rget(&mut data, 0)?.await?;
            epoch.unlock()?;
            assert_eq!(data, [99], "the data put before the signal");
            Ok::<_, rma_win::Error>((lock_ticks, signal_ticks))
        })?;
        world.barrier()?;
        Ok((lock_ticks, signal_ticks))
    })
    .expect("the world");
    let (lock_ticks, signal_ticks) = results[0].as_ref().expect("rank 0").to_owned();
    results[1].as_ref().expect("rank 1");
    // rank 1 held the mutex ~30 ms and signalled ~30 ms later: the other future ran
    // meanwhile (a blocking wait would leave it at 0 or 1)
    assert!(
        lock_ticks > 10,
        "ticks while lock_async waited: {lock_ticks}"
    );
    assert!(
        signal_ticks > 10,
        "ticks while wait_until_async waited: {signal_ticks}"
    );
}

thread_local! {
    /// Set on the driving thread while it is inside a future's `poll`.
    static IN_POLL: Cell<bool> = const { Cell::new(false) };
}

/// A waker that counts the wake-ups made from inside `poll` on the polling thread
/// (the self-wake that makes an executor poll again at once) apart from the others.
#[derive(Default)]
struct Counting {
    inside_poll: std::sync::atomic::AtomicUsize,
    elsewhere: std::sync::atomic::AtomicUsize,
    woken: std::sync::Mutex<bool>,
    bell: std::sync::Condvar,
}

impl std::task::Wake for Counting {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        use std::sync::atomic::Ordering::Relaxed;
        if IN_POLL.with(Cell::get) {
            self.inside_poll.fetch_add(1, Relaxed);
        } else {
            self.elsewhere.fetch_add(1, Relaxed);
        }
        *self.woken.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.bell.notify_all();
    }
}

/// What [`drive`] saw: the wake-ups from inside `poll`, the others, and the polls.
#[derive(Debug, Clone, Copy)]
struct Wakes {
    inside_poll: usize,
    elsewhere: usize,
    polls: usize,
}

/// Polls `fut` on this thread whenever its waker was woken, as an executor does, until
/// it is ready, counting its `Pending` polls in `pending`; `Err` when no wake-up came
/// for 30 s (a future that never asks to be woken again would otherwise hang the test).
fn drive<F: std::future::Future>(
    fut: F,
    pending: &std::sync::atomic::AtomicUsize,
) -> std::result::Result<(F::Output, Wakes), String> {
    use std::sync::atomic::Ordering::Relaxed;
    let count = std::sync::Arc::new(Counting::default());
    let waker = std::task::Waker::from(count.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    let mut polls = 0;
    loop {
        IN_POLL.with(|f| f.set(true));
        let r = fut.as_mut().poll(&mut cx);
        IN_POLL.with(|f| f.set(false));
        polls += 1;
        if let std::task::Poll::Ready(v) = r {
            let wakes = Wakes {
                inside_poll: count.inside_poll.load(Relaxed),
                elsewhere: count.elsewhere.load(Relaxed),
                polls,
            };
            return Ok((v, wakes));
        }
        pending.fetch_add(1, Relaxed);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut woken = count.woken.lock().unwrap_or_else(|p| p.into_inner());
        while !*woken {
            if std::time::Instant::now() > deadline {
                return Err(format!("no wake-up for 30 s after poll {polls}"));
            }
            woken = count
                .bell
                .wait_timeout(woken, Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *woken = false;
    }
}

#[test]
fn a_waiting_future_never_wakes_itself_from_inside_poll() {
    // rank 0 waits in lock_async while rank 1 holds the mutex, then in
    // wait_until_async until rank 1 signals; rank 1 lets go only once rank 0's future
    // was pending, and 30 ms later. Every wake-up must come from outside the poll
    // (rma's pacer thread), none from inside it, where the executor would poll again
    // at once and keep its core from the rank it waits for
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    static PENDING: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let after_pending = |k: usize| -> Result<()> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while PENDING[k].load(Relaxed) == 0 {
            if std::time::Instant::now() > deadline {
                return Err(rma_win::Error::Internal {
                    reason: "rank 0's future was never pending".into(),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(30));
        Ok(())
    };
    let results = rma_win::run_threads(2, |world| -> Result<Option<(Wakes, Wakes)>> {
        let mutex = Mutex::new(&world, &Info::new())?;
        let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
        world.barrier()?;
        if world.rank() == 1 {
            let guard = mutex.lock()?;
            world.barrier()?;
            after_pending(0)?;
            guard.unlock()?;
            after_pending(1)?;
            let epoch = win.lock_all_epoch(Assert::NONE)?;
            epoch
                .target(Rank::new(0))?
                .put_signal(&[7u64], 0, 1, 1, SignalOp::Set)?;
            epoch.unlock()?;
            world.barrier()?;
            return Ok(None);
        }
        world.barrier()?;
        let outcome = (|| -> std::result::Result<(Wakes, Wakes), String> {
            let (guard, lock_wakes) = drive(mutex.lock_async(), &PENDING[0])?;
            guard.and_then(|g| g.unlock()).map_err(|e| e.to_string())?;
            let (seen, signal_wakes) = drive(win.wait_until_async(1, Cmp::Eq, 1), &PENDING[1])?;
            assert_eq!(seen.map_err(|e| e.to_string())?, 1);
            Ok((lock_wakes, signal_wakes))
        })();
        world.barrier()?;
        outcome
            .map(Some)
            .map_err(|reason| rma_win::Error::Internal { reason })
    })
    .expect("the world");
    let (lock, signal) = results[0]
        .as_ref()
        .expect("rank 0")
        .expect("rank 0's counts");
    results[1].as_ref().expect("rank 1");
    for (what, w) in [("lock_async", lock), ("wait_until_async", signal)] {
        assert_eq!(
            w.inside_poll, 0,
            "{what} woke itself from inside poll: {w:?}"
        );
        // it did wait (30 ms), and every poll after the first followed a wake-up
        assert!(w.polls > 1 && w.elsewhere >= w.polls - 1, "{what}: {w:?}");
    }
}
