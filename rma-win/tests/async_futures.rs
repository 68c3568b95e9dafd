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
