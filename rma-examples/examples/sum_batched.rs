//! The MPI standard's Example 11.3 (see `sum`), batched: B(j) = sum of A(i) over
//! map(i) = j, with every rank's m updates given to one `accumulate_indexed` call,
//! which groups them by target and applies each element atomically. The same run
//! also does it the plain way (one accumulate per element, as `sum`) and reports both
//! times, the fastest of 3 fence epochs each; both results are checked against a
//! serial computation.

use rma_examples::{example_11_3_data, example_11_3_expected, run, Flags};
use rma_win::{Assert, Op, Rank, Window};
use std::time::Instant;

fn main() {
    let flags = Flags::parse(10_000);
    let info = flags.info();
    run(&flags, |world| {
        let (me, p, m) = (world.rank(), world.size(), flags.n);
        let (a, map) = example_11_3_data(flags.seed, me, m, p);
        let updates: Vec<(Rank, i64, f32)> = (0..m)
            .map(|i| (Rank::new((map[i] / m) as u32), (map[i] % m) as i64, a[i]))
            .collect();
        let expect = example_11_3_expected(flags.seed, me, m, p);
        let win = Window::allocate::<f32>(world, m, &info)?;
        let mut ok = true;
        let (mut plain, mut batched) = (f64::MAX, f64::MAX);
        for round in 0..6 {
            let batch = round % 2 == 1;
            win.write_local(0, &vec![0f32; m])?;
            win.fence(Assert::NOPRECEDE)?;
            let t = Instant::now();
            if batch {
                win.accumulate_indexed(&updates, Op::Sum)?;
            } else {
                for &(rank, disp, v) in &updates {
                    win.accumulate(&[v], rank, disp, Op::Sum)?;
                }
            }
            win.fence(Assert::NOSUCCEED)?;
            let secs = t.elapsed().as_secs_f64();
            let slot = if batch { &mut batched } else { &mut plain };
            *slot = slot.min(secs);
            ok &= win.local_vec::<f32>()? == expect;
            world.barrier()?; // everyone read B before the next round clears it
        }
        if me == 0 || !ok {
            println!(
                "sum_batched (Example 11.3): rank {me}/{p}, m = {m}, transport {}, mode {:?}: {}; one accumulate per element {:.2} ms, one accumulate_indexed {:.2} ms ({:.1}x)",
                win.transport_name(),
                world.mode(),
                if ok { "both match the serial result" } else { "WRONG" },
                plain * 1e3,
                batched * 1e3,
                plain / batched
            );
        }
        Ok(ok)
    })
}
