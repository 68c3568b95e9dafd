//! rma's futures in a tokio program (feature `async`):
//!
//! ```text
//! cargo run -p rma-win --features async --example async_tokio
//! ```
//!
//! Every rank (4 threads here; the same program runs as processes under
//! `rmarun -n 4`) runs a current-thread tokio runtime. Rank 0 is a producer: for each
//! round it waits (`wait_until_async`) until every consumer has taken the previous
//! round's value, then puts the next one with a signal. The consumers wait for the
//! signal (`wait_until_async`), take the value, tally it under a distributed mutex
//! (`lock_async`), and report back by adding to rank 0's acknowledgement count.
//! Meanwhile each runtime keeps a heartbeat task going: no wait blocks the thread.
//!
//! rma's windows and worlds stay on their rank's thread (they are neither `Send` nor
//! `Sync`), so the futures run on a current-thread runtime (or a `LocalSet`), not on
//! tokio's multi-thread scheduler.

use rma_win::{Assert, Cmp, Info, Mutex, Op, Rank, SignalOp, Window};
use std::cell::Cell;

const ROUNDS: u64 = 20;
// rank 0's window: [0]: value, [1]: round signal, [2]: acknowledgements, [3]: tally
const VALUE: i64 = 0;
const ROUND: i64 = 1;
const ACKS: usize = 2;
const TALLY: i64 = 3;

fn main() -> rma_win::Result<()> {
    let results = rma_win::launch(4, |world| -> rma_win::Result<(u64, u64)> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| rma_win::Error::arg(format!("tokio: {e}")))?;
        let info = Info::new();
        let mut mutex = Mutex::new(&world, &info)?;
        let win = Window::allocate::<u64>(&world, 4, &info)?;
        world.barrier()?;
        let (me, consumers) = (world.rank(), world.size() as u64 - 1);
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        let zero = epoch.target(Rank::new(0))?;
        let beats = Cell::new(0u64);
        let done = Cell::new(false);
        let work = async {
            let mut taken = 0u64;
            for round in 1..=ROUNDS {
                if me == 0 {
                    // every consumer took the last round's value
                    win.wait_until_async(ACKS, Cmp::Eq, consumers * (round - 1))
                        .await?;
                    zero.put_signal(&[round * 10], VALUE, ROUND, round, SignalOp::Set)?;
                    zero.flush()?;
                } else {
                    // the round's signal on rank 0, read remotely with an atomic
                    // fetch (a get racing the producer's signal update would be a
                    // conflicting access), flushed before the value is read
                    while zero.fetch::<u64>(ROUND)? < round {
                        zero.flush()?;
                        tokio::task::yield_now().await;
                    }
                    zero.flush()?;
                    // the value, as a request the task awaits
                    let mut v = [0u64];
                    zero.rget(&mut v, VALUE)?.await?;
                    taken += v[0];
                    let guard = mutex.lock_async().await?;
                    let mut t = [0u64];
                    zero.get(&mut t, TALLY)?;
                    zero.flush()?;
                    zero.put(&[t[0] + v[0]], TALLY)?; // a plain read-modify-write
                    zero.flush()?;
                    guard.unlock()?;
                    zero.accumulate(&[1u64], ACKS as i64, Op::Sum)?;
                    zero.flush()?;
                }
            }
            done.set(true);
            Ok::<u64, rma_win::Error>(taken)
        };
        let heartbeat = async {
            while !done.get() {
                beats.set(beats.get() + 1);
                tokio::time::sleep(std::time::Duration::from_micros(200)).await;
            }
        };
        let (taken, ()) = rt.block_on(async { tokio::join!(work, heartbeat) });
        let taken = taken?;
        epoch.unlock()?;
        world.barrier()?;
        if me == 0 {
            let v = win.local_vec::<u64>()?;
            let each = 10 * ROUNDS * (ROUNDS + 1) / 2;
            let ok = v[TALLY as usize] == consumers * each;
            println!(
                "async_tokio: {} ranks, {ROUNDS} rounds: tally {} of {} under the mutex ({}), {} heartbeats on rank 0 while it waited",
                world.size(),
                v[TALLY as usize],
                consumers * each,
                if ok { "exact" } else { "WRONG" },
                beats.get()
            );
            if !ok {
                return Err(rma_win::Error::arg("the tally is wrong"));
            }
        }
        world.barrier()?;
        mutex.free()?;
        Ok((taken, beats.get()))
    })?;
    for r in results {
        r?;
    }
    Ok(())
}
