//! A shared counter: every rank takes `n` tickets from rank 0's counter with
//! fetch_and_op(SUM, 1). Each rank's tickets must rise strictly; afterwards the counter
//! must equal ranks x n and the tickets handed out must be exactly 0..ranks x n (their
//! count and their sum, gathered with accumulate, are checked by rank 0).

use rma_examples::{run, Flags};
use rma_win::{Assert, Op, Rank, Window};

fn main() {
    let flags = Flags::parse(20_000);
    let info = flags.info();
    run(&flags, |world| {
        let (me, p, n) = (world.rank(), world.size(), flags.n);
        // [counter, sum of tickets, tickets seen]
        let win = Window::allocate::<u64>(world, 3, &info)?;
        let zero = Rank::new(0);
        win.fence(Assert::NOPRECEDE)?;
        let start = std::time::Instant::now();
        let mut last = None;
        let mut rising = true;
        let mut sum = 0u64;
        for _ in 0..n {
            let t = win.fetch_and_op(1u64, zero, 0, Op::Sum)?;
            rising &= last.is_none_or(|l| t > l);
            last = Some(t);
            sum += t;
        }
        let elapsed = start.elapsed();
        win.accumulate(&[sum, n as u64], zero, 1, Op::Sum)?;
        win.fence(Assert::NOSUCCEED)?;
        let mut ok = rising;
        if me == 0 {
            let v: Vec<u64> = win.local_vec()?;
            let total = (p * n) as u64;
            ok &= v[0] == total && v[2] == total && v[1] == total * total.saturating_sub(1) / 2;
            println!(
                "counter: {p} ranks x {n} fetch_and_op, transport {}, mode {:?}: counter = {}, tickets 0..{total} each once: {} ({:.0} ns per op on rank 0)",
                win.transport_name(),
                world.mode(),
                v[0],
                if ok { "yes" } else { "NO" },
                elapsed.as_nanos() as f64 / n as f64
            );
        }
        Ok(ok)
    })
}
