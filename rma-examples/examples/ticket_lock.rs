//! A ticket lock built from fetch_and_op, guarding a counter that is updated without
//! atomics.
//!
//! Rank 0's window holds `[next_ticket, now_serving, counter]` (u64). Under lock_all,
//! every rank `n` times: takes a ticket with fetch_and_op(SUM, 1) on next_ticket; polls
//! now_serving with fetch_and_op(NO_OP) and flush, yielding the CPU between polls, until
//! it equals the ticket; then, holding the lock, reads the counter with get, flushes,
//! writes counter + 1 with put, flushes; and releases with fetch_and_op(SUM, 1) on
//! now_serving. The read-modify-write is not atomic, so the counter ends at ranks x n
//! only if no two ranks were ever inside together. Rank 0 checks it (and that the two
//! lock words agree) and reports the time per lock/unlock.

use rma_examples::{run, Flags};
use rma_win::{Assert, Op, Rank, Window};

const NEXT_TICKET: i64 = 0;
const NOW_SERVING: i64 = 1;
const COUNTER: i64 = 2;

fn main() {
    let flags = Flags::parse(1000);
    let info = flags.info();
    run(&flags, |world| {
        let (me, p, n) = (world.rank(), world.size(), flags.n);
        let zero = Rank::new(0);
        let mut win = Window::allocate::<u64>(world, if me == 0 { 3 } else { 0 }, &info)?;
        world.barrier()?;
        win.lock_all(Assert::NONE)?;
        let start = std::time::Instant::now();
        let mut rising = true;
        let mut last = None;
        let mut polls = 0u64;
        for _ in 0..n {
            // acquire
            let ticket = win.fetch_and_op(1u64, zero, NEXT_TICKET, Op::Sum)?;
            win.flush(zero)?;
            rising &= last.is_none_or(|l| ticket > l);
            last = Some(ticket);
            loop {
                let serving = win.fetch_and_op(0u64, zero, NOW_SERVING, Op::NoOp)?;
                win.flush(zero)?;
                polls += 1;
                if serving == ticket {
                    break;
                }
                std::thread::yield_now();
            }
            // critical section: a plain read-modify-write
            let mut c = [0u64];
            win.get(&mut c, zero, COUNTER)?;
            win.flush(zero)?;
            win.put(&[c[0] + 1], zero, COUNTER)?;
            win.flush(zero)?;
            // release
            win.fetch_and_op(1u64, zero, NOW_SERVING, Op::Sum)?;
            win.flush(zero)?;
        }
        let elapsed = start.elapsed();
        win.unlock_all()?;
        world.barrier()?;
        let mut ok = rising;
        if me == 0 {
            let v: Vec<u64> = win.local_vec()?;
            let total = (p * n) as u64;
            ok &= v[COUNTER as usize] == total
                && v[NEXT_TICKET as usize] == total
                && v[NOW_SERVING as usize] == total;
            println!(
                "ticket_lock: {p} ranks x {n} lock/unlock (fetch_and_op under lock_all), transport {}, mode {:?}: counter = {} of {total}, mutual exclusion held: {} ({:.0} ns per lock/unlock on rank 0, {:.1} polls per acquire)",
                win.transport_name(),
                world.mode(),
                v[COUNTER as usize],
                if ok { "yes" } else { "NO" },
                elapsed.as_nanos() as f64 / n.max(1) as f64,
                polls as f64 / n.max(1) as f64
            );
        }
        win.free()?;
        Ok(ok)
    })
}
