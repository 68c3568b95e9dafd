//! The transports side by side: one RMA call + flush from rank 0 to rank 1 under
//! lock_all, in a world of 2 ranks as threads.
//!
//! One window per transport in [`rma_win::TRANSPORTS`], chosen with the
//! `rma_transport` info key. Rank 0 drives criterion (its `Criterion` never leaves that
//! thread) with every window in a lock_all epoch; rank 1 waits in a barrier meanwhile
//! (the queued transport's progress thread serves it). Each group is one call, each
//! benchmark `BenchmarkId::new(transport, what)`, so the transports sit side by side.
//!
//! `harness = false`: a plain `main` runs the world, and criterion reads its usual
//! command line (`--test`, filters, `--save-baseline`, ...) on rank 0.

use criterion::{black_box, BenchmarkId, Criterion, Throughput};
use rma_core::WinInfo;
use rma_win::{Assert, Info, Op, Rank, Result, Window, World, TRANSPORTS};
use std::time::Duration;

/// Element counts of the bulk accumulate (f64): 4 KiB, 32 KiB, 256 KiB.
const BULK: [usize; 3] = [512, 4096, 32768];
/// Where the bulk accumulate lands; the single-element calls use displacements 0–5.
const BULK_DISP: i64 = 8;
/// Window elements (8 bytes each) per rank.
const WIN_LEN: usize = BULK_DISP as usize + BULK[BULK.len() - 1];

const TARGET: Rank = Rank::new(1);

/// A call with its flush: what every benchmark here times.
type Call = fn(&Window<'_>) -> Result<()>;

/// The single-element calls: group name, what the benchmark id says, the call.
const SMALL: [(&str, &str, Call); 6] = [
    ("fetch_and_op", "i64_sum", |w| {
        black_box(w.fetch_and_op(1i64, TARGET, 0, Op::Sum)?);
        w.flush(TARGET)
    }),
    ("compare_and_swap", "i64", |w| {
        black_box(w.compare_and_swap(1i64, 0, TARGET, 1)?);
        w.flush(TARGET)
    }),
    ("accumulate", "f64_sum", |w| {
        w.accumulate(&[1.0f64], TARGET, 2, Op::Sum)?;
        w.flush(TARGET)
    }),
    ("get_accumulate", "f64_sum", |w| {
        let mut old = [0f64];
        w.get_accumulate(&[1.0f64], &mut old, TARGET, 3, Op::Sum)?;
        black_box(old);
        w.flush(TARGET)
    }),
    ("put", "8B", |w| {
        w.put(&[1.0f64], TARGET, 4)?;
        w.flush(TARGET)
    }),
    ("get", "8B", |w| {
        let mut out = [0f64];
        w.get(&mut out, TARGET, 5)?;
        black_box(out);
        w.flush(TARGET)
    }),
];

fn small_calls(c: &mut Criterion, wins: &[(&str, Window<'_>)]) {
    for (group_name, what, call) in SMALL {
        let mut group = c.benchmark_group(group_name);
        for (transport, win) in wins {
            group.bench_function(BenchmarkId::new(*transport, what), |b| {
                b.iter(|| call(win).expect("call + flush"))
            });
        }
        group.finish();
    }
}

/// accumulate(N f64, SUM) + flush: bytes/s of a contiguous accumulate.
fn bulk_accumulate(c: &mut Criterion, wins: &[(&str, Window<'_>)]) {
    let data: Vec<f64> = (0..BULK[BULK.len() - 1]).map(|i| i as f64).collect();
    let mut group = c.benchmark_group("accumulate_f64");
    for n in BULK {
        group.throughput(Throughput::Bytes(8 * n as u64));
        for (transport, win) in wins {
            group.bench_with_input(BenchmarkId::new(*transport, n), &n, |b, &n| {
                b.iter(|| {
                    win.accumulate(black_box(&data[..n]), TARGET, BULK_DISP, Op::Sum)
                        .and_then(|()| win.flush(TARGET))
                        .expect("accumulate + flush")
                })
            });
        }
    }
    group.finish();
}

/// One rank's part: both ranks allocate the windows; rank 0 measures, rank 1 waits.
fn rank_main(world: &World) -> Result<()> {
    let mut wins = Vec::with_capacity(TRANSPORTS.len());
    for &transport in TRANSPORTS {
        let info = Info::new().with(WinInfo::TRANSPORT_KEY, transport);
        let win = Window::allocate::<f64>(world, WIN_LEN, &info)?;
        assert_eq!(win.transport_name(), transport, "the info key picks it");
        wins.push((transport, win));
    }
    if world.rank() == 0 {
        for (_, win) in &wins {
            win.lock_all(Assert::NONE)?;
        }
        let mut c = Criterion::default()
            .sample_size(30)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .configure_from_args();
        small_calls(&mut c, &wins);
        bulk_accumulate(&mut c, &wins);
        for (_, win) in &wins {
            win.unlock_all()?;
        }
        c.final_summary();
    }
    world.barrier()?;
    for (_, mut win) in wins {
        win.free()?;
    }
    Ok(())
}

fn main() {
    let results = rma_win::run_threads(2, |world| rank_main(&world)).expect("start 2 ranks");
    for (rank, r) in results.into_iter().enumerate() {
        if let Err(e) = r {
            panic!("rank {rank}: {e}");
        }
    }
}
