//! Accumulate bandwidth under a shared lock (lock_all: bulk updates take the atomicity
//! domain's chunk locks before their vectorised loops) and under an exclusive lock (no
//! other origin can touch the target, so no chunk lock is needed), side by side in one
//! run. Rank 0 accumulates
//! N f64 (SUM) into rank 1 and flushes, for N = 512 ... 262144; medians of 7 repetitions.
//! Needs at least 2 ranks; checks the final sums exactly.

use rma_examples::{run, Flags};
use rma_win::{Assert, LockType, Op, Rank, Window};
use std::time::Instant;

const SIZES: [usize; 4] = [512, 4096, 32768, 262_144];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut flags = Flags::parse(0);
    if flags.ranks < 2 {
        flags.ranks = 2;
    }
    let info = flags.info();
    run(&flags, |world| {
        let me = world.rank();
        let one = Rank::new(1);
        let max = *SIZES.last().unwrap_or(&0);
        let mut win = Window::allocate::<f64>(world, max, &info)?;
        let src = vec![1.0f64; max];
        let mut ok = true;
        let mut total_adds = 0f64;
        for &n in &SIZES {
            let reps = (4 << 20) / (8 * n).max(1); // about 4 MiB per repetition
            let mut line = format!(
                "bulk_acc: transport {}, {:?}, N = {n:>6} f64:",
                win.transport_name(),
                world.mode()
            );
            for (label, kind) in [
                ("shared (lock_all)", None),
                ("exclusive", Some(LockType::Exclusive)),
            ] {
                world.barrier()?;
                let mut samples = vec![];
                if me == 0 {
                    for _ in 0..7 {
                        match kind {
                            None => win.lock_all(Assert::NONE)?,
                            Some(k) => win.lock(k, one, Assert::NONE)?,
                        }
                        let t = Instant::now();
                        for _ in 0..reps {
                            win.accumulate(&src[..n], one, 0, Op::Sum)?;
                            win.flush(one)?;
                        }
                        samples.push(t.elapsed().as_secs_f64() / reps as f64);
                        match kind {
                            None => win.unlock_all()?,
                            Some(_) => win.unlock(one)?,
                        }
                    }
                    let s = median(samples);
                    line.push_str(&format!(
                        "  {label}: {:>8.2} us, {:>6.2} GB/s",
                        s * 1e6,
                        8.0 * n as f64 / s / 1e9
                    ));
                }
                if n == max {
                    total_adds += (7 * reps) as f64;
                }
                world.barrier()?;
            }
            if me == 0 {
                println!("{line}");
            }
        }
        world.barrier()?;
        if me == 1 {
            // the last element saw exactly the adds of every size
            let adds: f64 = SIZES
                .iter()
                .map(|&n| (2 * 7 * ((4 << 20) / (8 * n))) as f64)
                .sum();
            let mut v = [0f64];
            win.read_local(max - 1, &mut v)?;
            ok = v[0] == total_adds && total_adds > 0.0 && adds >= total_adds;
            if !ok {
                eprintln!(
                    "bulk_acc: last element {} but {total_adds} adds were made",
                    v[0]
                );
            }
        }
        world.barrier()?;
        win.free()?;
        Ok(ok)
    })
}
