//! Small-operation latency, OSU-style: rank 0 issues one call + flush to rank 1 under
//! lock_all, many times; rank 1 waits in a barrier meanwhile. Reports the median over
//! 7 repetitions of ns per (call + flush) for fetch_and_op (i64 SUM), compare_and_swap,
//! accumulate (1 f64 SUM), get_accumulate, put and get of 8 bytes. Needs 2 ranks.

use rma_examples::{run, Flags};
use rma_win::{Assert, Op, Rank, Result, Window};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let mut flags = Flags::parse(20_000);
    flags.ranks = flags.ranks.max(2);
    let info = flags.info();
    run(&flags, |world| {
        let one = Rank::new(1);
        let win = Window::allocate::<f64>(world, 8, &info)?;
        let n = flags.n.max(1);
        type Call<'a> = Box<dyn Fn(&Window<'_>) -> Result<()> + 'a>;
        let calls: Vec<(&str, Call)> = vec![
            (
                "fetch_and_op",
                Box::new(|w: &Window<'_>| w.fetch_and_op(1i64, one, 0, Op::Sum).map(|_| ())),
            ),
            (
                "compare_and_swap",
                Box::new(|w: &Window<'_>| w.compare_and_swap(1i64, 0, one, 1).map(|_| ())),
            ),
            (
                "accumulate",
                Box::new(|w: &Window<'_>| w.accumulate(&[1.0f64], one, 2, Op::Sum)),
            ),
            (
                "get_accumulate",
                Box::new(|w: &Window<'_>| {
                    let mut r = [0f64];
                    w.get_accumulate(&[1.0f64], &mut r, one, 3, Op::Sum)
                }),
            ),
            ("put", Box::new(|w: &Window<'_>| w.put(&[1.0f64], one, 4))),
            (
                "get",
                Box::new(|w: &Window<'_>| {
                    let mut r = [0f64];
                    w.get(&mut r, one, 5)
                }),
            ),
        ];
        let mut line = format!(
            "latency ({}, {:?}), ns per call + flush:",
            win.transport_name(),
            world.mode()
        );
        for (name, call) in &calls {
            world.barrier()?;
            if world.rank() == 0 {
                win.lock_all(Assert::NONE)?;
                let mut samples = vec![];
                for _ in 0..7 {
                    let t = Instant::now();
                    for _ in 0..n {
                        call(&win)?;
                        win.flush(one)?;
                    }
                    samples.push(t.elapsed().as_nanos() as f64 / n as f64);
                }
                win.unlock_all()?;
                line.push_str(&format!(" {name} {:.0}", median(samples)));
            }
            world.barrier()?;
        }
        if world.rank() == 0 {
            println!("{line}");
        }
        let mut win = win;
        win.free()?;
        Ok(true)
    })
}
