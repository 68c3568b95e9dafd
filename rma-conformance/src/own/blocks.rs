//! The building blocks (`Counter`, `Mutex`, put-with-signal, batched indexed atomics)
//! with exact results on every transport and launch mode, and their bad input refused
//! with typed errors that change nothing.

use crate::{expect_class, scaled};
use rma_win::{
    Assert, Cmp, Counter, CounterOptions, ErrorClass, Info, Mutex, Op, Rank, Result, SignalOp,
    Window, World,
};
use std::time::Duration;

/// Collective: how many times, over every rank's `values`, each of `lo..hi` was
/// handed out (on every rank), and how many values fell outside; counted in a window
/// on rank 0 with one accumulate per value (allgather takes too few bytes for them).
fn tally(world: &World, info: &Info, values: &[i64], lo: i64, hi: i64) -> Result<(Vec<i64>, i64)> {
    let n = (hi - lo) as usize;
    let mut win = Window::allocate::<i64>(world, if world.rank() == 0 { n + 1 } else { 0 }, info)?;
    win.fence(Assert::NONE)?;
    for &v in values {
        let slot = if (lo..hi).contains(&v) {
            v - lo
        } else {
            n as i64
        };
        win.accumulate(&[1i64], Rank::new(0), slot, Op::Sum)?;
    }
    win.fence(Assert::NONE)?;
    let mut counts = vec![0i64; n + 1];
    if world.rank() == 0 {
        win.read_local(0, &mut counts)?;
    }
    win.fence(Assert::NONE)?;
    win.free()?;
    let outside = counts.pop().unwrap_or(0);
    Ok((counts, outside))
}

/// Counter: `next` with a block of 1 and of 7 hands out every value once (exactly
/// 0..n·p with a block of 1), `read` counts what was reserved, `fetch_add` and `reset`
/// return the value before; options refused alike on every rank.
pub(crate) fn counter(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let n = scaled(300usize);
    // one value per call, home on the last rank, starting at 100
    let opts = CounterOptions {
        home: p - 1,
        initial: 100,
        block: 1,
    };
    let mut c = Counter::with_options(world, opts, info)?;
    let mine: Vec<i64> = (0..n).map(|_| c.next()).collect::<Result<_>>()?;
    assert!(
        mine.windows(2).all(|w| w[0] < w[1]),
        "rank {me}: values increase"
    );
    let (counts, outside) = tally(world, info, &mine, 100, 100 + (n * p) as i64)?;
    if me == 0 {
        assert_eq!(outside, 0, "values outside 100..100+n·p");
        assert!(
            counts.iter().all(|&c| c == 1),
            "every value of 100..100+n·p exactly once"
        );
    }
    assert_eq!(c.read()?, 100 + (n * p) as i64, "read after every next");
    world.barrier()?;
    let before = c.fetch_add(5)?;
    world.barrier()?;
    assert_eq!(
        c.read()?,
        100 + (n * p) as i64 + 5 * p as i64,
        "fetch_add(5) on every rank"
    );
    assert!(
        before >= 100 + (n * p) as i64,
        "fetch_add returns the value before"
    );
    world.barrier()?;
    if me == 0 {
        c.reset(-3)?;
    }
    world.barrier()?;
    assert_eq!(c.read()?, -3, "reset");
    world.barrier()?;
    c.free()?;

    // blocks of 7 on rank 0: unique values, 7 reserved per call
    let opts = CounterOptions {
        block: 7,
        ..CounterOptions::default()
    };
    let mut c = Counter::with_options(world, opts, info)?;
    assert_eq!((c.home(), c.block()), (0, 7));
    let mine: Vec<i64> = (0..n).map(|_| c.next()).collect::<Result<_>>()?;
    world.barrier()?;
    let reserved = (n.div_ceil(7) * 7 * p) as i64;
    assert_eq!(c.read()?, reserved, "whole blocks reserved");
    let (counts, outside) = tally(world, info, &mine, 0, reserved)?;
    if me == 0 {
        assert_eq!(outside, 0, "values outside the reserved blocks");
        assert!(counts.iter().all(|&c| c <= 1), "no value handed out twice");
        assert_eq!(counts.iter().sum::<i64>(), (n * p) as i64);
    }
    world.barrier()?;
    c.free()?;

    // refused alike on every rank (the world stays usable)
    expect_class(
        Counter::with_options(
            world,
            CounterOptions {
                home: p,
                ..CounterOptions::default()
            },
            info,
        ),
        ErrorClass::Rank,
    );
    expect_class(
        Counter::with_options(
            world,
            CounterOptions {
                block: 0,
                ..CounterOptions::default()
            },
            info,
        ),
        ErrorClass::Arg,
    );
    let differ = CounterOptions {
        initial: me as i64,
        ..CounterOptions::default()
    };
    expect_class(Counter::with_options(world, differ, info), ErrorClass::Arg);
    world.barrier()
}

/// Mutex: a non-atomic read-modify-write of a counter under the mutex loses nothing
/// and an occupancy count reads 0 on every entry, with even ranks using `lock`, odd
/// ranks `try_lock` in a loop, and every rank `lock_timeout` now and then; misuse
/// refused.
pub(crate) fn mutex(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let n = scaled(200u64);
    let zero = Rank::new(0);
    let m = Mutex::with_home(world, p - 1, info)?;
    // rank 0: [counter, occupancy]
    let data = Window::allocate::<u64>(world, if me == 0 { 2 } else { 0 }, info)?;
    world.barrier()?;
    {
        let epoch = data.lock_all_epoch(Assert::NONE)?;
        let h = epoch.target(zero)?;
        for i in 0..n {
            let guard = if i % 10 == 3 {
                loop {
                    if let Some(g) = m.lock_timeout(Duration::from_micros(200))? {
                        break g;
                    }
                }
            } else if me % 2 == 1 {
                loop {
                    if let Some(g) = m.try_lock()? {
                        break g;
                    }
                    std::thread::yield_now();
                }
            } else {
                m.lock()?
            };
            assert!(m.is_held());
            let inside = h.fetch_add(1u64, 1)?;
            assert_eq!(
                inside, 0,
                "rank {me}, round {i}: another rank holds the mutex"
            );
            let mut c = [0u64];
            h.get(&mut c, 0)?;
            h.flush()?;
            std::thread::yield_now(); // widen the window a broken mutex would let others in
            h.put(&[c[0] + 1], 0)?;
            h.fetch_add(u64::MAX, 1)?; // -1, wrapping
            h.flush()?;
            if i % 2 == 0 {
                guard.unlock()?;
            } else {
                drop(guard); // released by the drop
            }
            assert!(!m.is_held());
        }
        epoch.unlock()?;
    }
    world.barrier()?;
    if me == 0 {
        assert_eq!(
            data.local_vec::<u64>()?,
            [n * p as u64, 0],
            "counter and occupancy"
        );
    }
    // misuse: a second lock while holding
    let g = m.lock()?;
    expect_class(m.lock().map(|_| ()), ErrorClass::RmaSync);
    expect_class(m.try_lock().map(|_| ()), ErrorClass::RmaSync);
    g.unlock()?;
    world.barrier()?;
    // free while a rank is still queued (its wait timed out): every rank refuses
    // alike, and the queued rank resumes its place afterwards
    let mut m = m;
    if me == 0 {
        let g = m.lock()?;
        world.barrier()?;
        world.barrier()?; // rank 1 queued behind
        g.unlock()?; // handed to rank 1, which has not looked yet
    } else {
        world.barrier()?;
        if me == 1 {
            assert!(
                m.lock_timeout(Duration::from_millis(1))?.is_none(),
                "rank 0 holds it"
            );
        }
        world.barrier()?;
    }
    expect_class(m.free(), ErrorClass::RmaSync);
    if me == 1 {
        m.lock()?.unlock()?; // resumes the wait: granted already
    }
    world.barrier()?;
    let mut data = data;
    data.free()?;
    m.free()?;
    expect_class(m.lock().map(|_| ()), ErrorClass::Win); // freed
    expect_class(
        Mutex::with_home(world, p, info).map(|_| ()),
        ErrorClass::Rank,
    );
    world.barrier()
}

/// Put-with-signal: a ring where every rank sends each round's data to its right
/// neighbour with a signal (ADD) and checks the round's data from its left once its
/// signal says it arrived; then every rank signals rank 0 at once (ADD from many
/// origins, and SET); misuse refused, changing nothing.
pub(crate) fn signal(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    let rounds = scaled(64usize).max(2);
    const K: usize = 8; // u64s per round
                        // [0]: ring signal, [1]: fan-in signal, [2]: SET signal,
                        // [8 ..8+rounds·K]: ring data, then p·K fan-in data
    let ring = 8usize;
    let fan = ring + rounds * K;
    let len = fan + p * K;
    let win = Window::allocate::<u64>(world, len, info)?;
    world.barrier()?;
    let value = |from: usize, round: usize, k: usize| (from * 1_000_000 + round * 100 + k) as u64;
    let right = Rank::new(((me + 1) % p) as u32);
    let left = (me + p - 1) % p;
    {
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        let r = epoch.target(right)?;
        for j in 0..rounds {
            let data: Vec<u64> = (0..K).map(|k| value(me, j, k)).collect();
            r.put_signal(&data, (ring + j * K) as i64, 0, 1, SignalOp::Add)?;
            let seen = win.wait_until(0, Cmp::Ge, j as u64 + 1)?;
            assert!(seen > j as u64);
            let mut got = [0u64; K];
            win.read_local(ring + j * K, &mut got)?;
            let want: Vec<u64> = (0..K).map(|k| value(left, j, k)).collect();
            assert_eq!(
                got.as_slice(),
                want.as_slice(),
                "rank {me}, round {j}: data before its signal"
            );
        }
        // fan-in: every rank to rank 0
        let zero = epoch.target(Rank::new(0))?;
        let data: Vec<u64> = (0..K).map(|k| value(me, 999, k)).collect();
        zero.put_signal(&data, (fan + me * K) as i64, 1, 1, SignalOp::Add)?;
        zero.put_signal(&[7u64], (fan + me * K) as i64, 2, 42, SignalOp::Set)?;
        zero.flush()?;
        // misuse: the signal inside the data, misaligned, outside the window
        expect_class(
            zero.put_signal(&[1u64, 2], 0, 1, 1, SignalOp::Add),
            ErrorClass::Arg,
        );
        expect_class(
            zero.put_signal(&[1u64], 3, len as i64, 1, SignalOp::Add),
            ErrorClass::RmaRange,
        );
        epoch.unlock()?;
    }
    if me == 0 {
        // every rank's fan-in data is there once the count says so (its first word
        // may already be its SET put's)
        assert_eq!(win.wait_until(1, Cmp::Eq, p as u64)?, p as u64);
        for from in 0..p {
            let mut got = [0u64; K];
            win.read_local(fan + from * K, &mut got)?;
            let want: Vec<u64> = (1..K).map(|k| value(from, 999, k)).collect();
            assert_eq!(&got[1..], want.as_slice(), "rank {from}'s fan-in data");
        }
    }
    world.barrier()?; // every rank's epoch ended: its SET put-with-signal is complete
    if me == 0 {
        assert_eq!(win.wait_until(2, Cmp::Eq, 42)?, 42);
        for from in 0..p {
            let mut first = [0u64];
            win.read_local(fan + from * K, &mut first)?;
            assert_eq!(
                first[0], 7,
                "rank {from}'s SET put overwrote its first word"
            );
        }
    }
    world.barrier()?;
    assert_eq!(
        win.signal_value(0)?,
        rounds as u64,
        "the ring signal counted every round"
    );
    // a wait that cannot end in time, and one outside the window
    assert_eq!(
        win.wait_until_timeout(0, Cmp::Gt, rounds as u64, Duration::from_millis(5))?,
        None
    );
    expect_class(win.wait_until(len, Cmp::Eq, 0), ErrorClass::RmaRange);
    // a fence epoch has no put_signal
    {
        let epoch = win.fence_epoch(Assert::NONE)?;
        let h = epoch.target(right)?;
        expect_class(
            h.put_signal(&[1u64], 8, 0, 1, SignalOp::Add),
            ErrorClass::RmaSync,
        );
        epoch.end(Assert::NONE)?;
    }
    // misaligned signal: a byte window
    let bytes = Window::allocate_bytes(world, 64, 1, info)?;
    world.barrier()?;
    {
        let epoch = bytes.lock_all_epoch(Assert::NONE)?;
        let h = epoch.target(right)?;
        expect_class(
            h.put_signal(&[1u8], 0, 3, 1, SignalOp::Set),
            ErrorClass::Disp,
        );
        epoch.unlock()?;
    }
    world.barrier()?;
    assert!(
        bytes.local_vec::<u8>()?.iter().all(|&b| b == 0),
        "refused calls changed nothing"
    );
    world.barrier()
}

/// A deterministic stream of updates: rank `from`'s `i`-th (target, bin, amount).
fn update(from: usize, i: usize, p: usize, bins: usize) -> (usize, i64, i64) {
    let mut x = (from as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (i as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 29;
    (
        (x % p as u64) as usize,
        ((x >> 8) % bins as u64) as i64,
        (x >> 40) as i64 % 5 + 1,
    )
}

/// Batched indexed atomics: histograms over every rank (with repeated bins) from
/// `Window::accumulate_indexed` under lock_all and in a fence epoch, and from a
/// handle's `accumulate_indexed`, equal the counts every rank recomputes; REPLACE with
/// a repeated displacement keeps the last; bad input refused, changing nothing.
pub(crate) fn indexed(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    const BINS: usize = 64;
    let per_call = 100usize;
    let calls = scaled(40usize);
    // [0..BINS): i64 histogram; [BINS..2·BINS): f64 histogram (bits in i64 slots)
    let win = Window::allocate::<i64>(world, 2 * BINS + 4, info)?;
    world.barrier()?;
    let mut expect = vec![0i64; BINS];
    let mut expect_f = vec![0f64; BINS];
    for from in 0..p {
        for i in 0..calls * per_call {
            let (t, bin, amount) = update(from, i, p, BINS);
            if t == me {
                expect[bin as usize] += amount;
                expect_f[bin as usize] += 0.5;
            }
        }
    }
    win.lock_all(Assert::NONE)?;
    for c in 0..calls {
        let batch: Vec<(Rank, i64, i64)> = (c * per_call..(c + 1) * per_call)
            .map(|i| {
                let (t, bin, amount) = update(me, i, p, BINS);
                (Rank::new(t as u32), bin, amount)
            })
            .collect();
        win.accumulate_indexed(&batch, Op::Sum)?;
        if c == 0 {
            // a bad displacement anywhere refuses the whole batch
            let mut bad = batch.clone();
            bad.push((Rank::new(0), (2 * BINS + 4) as i64, 1));
            expect_class(win.accumulate_indexed(&bad, Op::Sum), ErrorClass::RmaRange);
            let mut bad = batch.clone();
            bad.insert(3, (Rank::new(p as u32), 0, 1));
            expect_class(win.accumulate_indexed(&bad, Op::Sum), ErrorClass::Rank);
        }
    }
    win.flush_all()?;
    win.unlock_all()?;
    // f64 halves in a fence epoch
    win.fence(Assert::NONE)?;
    for c in 0..calls {
        let batch: Vec<(Rank, i64, f64)> = (c * per_call..(c + 1) * per_call)
            .map(|i| {
                let (t, bin, _) = update(me, i, p, BINS);
                (Rank::new(t as u32), (BINS as i64 + bin), 0.5)
            })
            .collect();
        win.accumulate_indexed(&batch, Op::Sum)?;
    }
    expect_class(
        win.accumulate_indexed(&[(Rank::new(0), 0, 1.5f64)], Op::Band),
        ErrorClass::Op,
    );
    win.fence(Assert::NONE)?;
    let mut got = vec![0i64; BINS];
    win.read_local(0, &mut got)?;
    assert_eq!(got, expect, "rank {me}: the i64 histogram");
    let mut got_f = vec![0f64; BINS];
    win.read_local(BINS, &mut got_f)?;
    assert_eq!(got_f, expect_f, "rank {me}: the f64 histogram");
    win.fence(Assert::NONE)?;
    // a handle's batch: REPLACE of a repeated displacement keeps the last, in order
    {
        let epoch = win.lock_all_epoch(Assert::NONE)?;
        let h = epoch.target(Rank::new(((me + 1) % p) as u32))?;
        let slot = (2 * BINS) as i64;
        h.accumulate_indexed(
            &[
                (slot + 1, 5i64),
                (slot, 1),
                (slot, 2),
                (slot, me as i64 + 10),
            ],
            Op::Replace,
        )?;
        h.flush()?;
        epoch.unlock()?;
    }
    world.barrier()?;
    let mut slot = [0i64; 2];
    win.read_local(2 * BINS, &mut slot)?;
    let left = (me + p - 1) % p;
    assert_eq!(
        slot,
        [left as i64 + 10, 5],
        "rank {me}: REPLACE kept the last of its left's"
    );
    world.barrier()
}
