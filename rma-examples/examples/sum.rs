//! The MPI standard's Example 11.3: B(j) = sum of A(i) over map(i) = j, with A, B and
//! map distributed alike (m elements per rank), one accumulate per element inside a
//! fence epoch. Every rank then checks its part of B against a serial computation.

use rma_examples::{example_11_3_data, example_11_3_expected, run, Flags};
use rma_win::{Assert, Op, Rank, Window};

fn main() {
    let flags = Flags::parse(10_000);
    let info = flags.info();
    run(&flags, |world| {
        let (me, p, m) = (world.rank(), world.size(), flags.n);
        let (a, map) = example_11_3_data(flags.seed, me, m, p);
        let win = Window::allocate::<f32>(world, m, &info)?;
        win.fence(Assert::NOPRECEDE)?;
        for i in 0..m {
            let (j, k) = (map[i] / m, map[i] % m);
            win.accumulate(&a[i..=i], Rank::new(j as u32), k as i64, Op::Sum)?;
        }
        win.fence(Assert::NOSUCCEED)?;
        let b: Vec<f32> = win.local_vec()?;
        let expect = example_11_3_expected(flags.seed, me, m, p);
        let ok = b == expect;
        if me == 0 || !ok {
            let total: f64 = b.iter().map(|v| *v as f64).sum();
            println!(
                "sum (Example 11.3): rank {me}/{p}, m = {m}, transport {}, mode {:?}: sum of my B = {total}, {}",
                win.transport_name(),
                world.mode(),
                if ok { "matches the serial result" } else { "WRONG" }
            );
        }
        Ok(ok)
    })
}
