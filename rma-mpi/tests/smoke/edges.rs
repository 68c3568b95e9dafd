//! The edges: threads sharing a window, refused calls with their error classes, local
//! copies from two threads at once, and a flush that fails.

use super::check::{ensure, expect_class, i64s, rank, read, Check, Ctx, N, SLOTS};
use rma_core::{Assert, BasicType, ErrorClass, LockType, Op, Rank};
use rma_mpi::{MpiTargetSpec, MpiWindow, MpiWorld, ThreadLevel};

/// Two threads per rank issue fetch_and_op on one window at once.
/// Below MPI_THREAD_SERIALIZED (`RMA_MPI_SMOKE_THREADS=single`) only the thread that
/// initialized MPI may call it: the other threads' calls are refused (and counted
/// nowhere).
pub(super) fn threads_share_the_window(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    let owner_only = world.thread_level() < ThreadLevel::Serialized
        || std::env::var("RMA_MPI_SMOKE_THREADS").as_deref() == Ok("confined");
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    let shared: &MpiWindow<'_> = win;
    let results: Vec<Check> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(move || -> Check {
                    for _ in 0..N {
                        let mut old = [0u8; 8];
                        let r = shared.fetch_and_op(
                            BasicType::I64,
                            Op::Sum,
                            &1i64.to_ne_bytes(),
                            &mut old,
                            rank(0),
                            80,
                        );
                        if owner_only {
                            let e = r.err().ok_or("a call from another thread ran")?;
                            ensure!(
                                e.to_string().contains("only the thread that"),
                                "refused for another reason: {e}"
                            );
                            continue;
                        }
                        r.ctx("threaded fetch_and_op")?;
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("thread panicked".into())))
            .collect()
    });
    results.into_iter().collect::<Check<Vec<()>>>()?;
    win.unlock_all().ctx("unlock_all")?;
    world.barrier().ctx("barrier")?;
    let got = read(win, 0, 80, 1)?[0];
    let want = if owner_only {
        0
    } else {
        2 * N * world.size() as i64
    };
    ensure!(got == want, "threaded counter {got}, expected {want}");
    world.barrier().ctx("barrier")
}

/// Calls rma-mpi refuses before MPI sees them, each with its MPI error class.
pub(super) fn refused_calls(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    let n = world.size();
    let one = i64s(&[1]);
    win.fence(Assert::NONE).ctx("fence")?;
    win.put(
        &one,
        MpiTargetSpec::contiguous(rank(0), 90 + world.rank() as i64),
    )
    .ctx("put after fence")?;
    expect_class(
        win.lock_all(Assert::NONE),
        ErrorClass::RmaSync,
        "lock_all before the fence that completes a put",
    )?;
    win.fence(Assert::NOSUCCEED).ctx("fence")?;
    expect_class(
        win.put(&one, MpiTargetSpec::contiguous(rank(0), 0)),
        ErrorClass::RmaSync,
        "put outside an epoch",
    )?;
    win.lock_all(Assert::NONE).ctx("lock_all")?;
    expect_class(
        win.put(
            &i64s(&[1, 2]),
            MpiTargetSpec::contiguous(rank(0), SLOTS as i64 - 1),
        ),
        ErrorClass::RmaRange,
        "put past the end",
    )?;
    expect_class(
        win.put(&one, MpiTargetSpec::contiguous(rank(n), 0)),
        ErrorClass::Rank,
        "put to a rank outside",
    )?;
    expect_class(
        win.put(&one, MpiTargetSpec::contiguous(rank(0), -1)),
        ErrorClass::Disp,
        "negative displacement",
    )?;
    expect_class(
        win.accumulate(
            BasicType::I64,
            Op::MaxLoc,
            &one,
            MpiTargetSpec::contiguous(rank(0), 0),
        ),
        ErrorClass::Op,
        "MAXLOC on i64",
    )?;
    expect_class(
        win.compare_and_swap(BasicType::F64, &one, &one, &mut [0; 8], rank(0), 0),
        ErrorClass::Type,
        "CAS on f64",
    )?;
    expect_class(
        win.fence(Assert::NONE),
        ErrorClass::RmaSync,
        "fence inside lock_all",
    )?;
    expect_class(
        win.lock_all(Assert::NOPUT),
        ErrorClass::Assert,
        "lock_all with NOPUT",
    )?;
    win.put(&one, MpiTargetSpec::contiguous(Rank::NULL, 0))
        .ctx("put to the null rank")?;
    win.unlock_all().ctx("unlock_all")?;
    Ok(())
}

/// `MpiWindow` is `Sync`: two threads copying this rank's window memory at once
/// (`write_local` / `read_local`, which make no MPI call) must never tear a word. The
/// writer stores a range that starts and ends inside words, alternating two patterns;
/// the reader checks that every whole word of the range is all one pattern.
pub(super) fn local_copies_from_two_threads(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    const FROM: usize = 8 * 440 + 4; // slots 440..460, starting mid-word
    const LEN: usize = 8 * 19;
    const ROUNDS: usize = 20_000;
    world.barrier().ctx("barrier")?;
    let shared: &MpiWindow<'_> = win;
    shared.write_local(FROM, &[0x11; LEN]).ctx("write_local")?;
    let torn = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<Check> = std::thread::scope(|s| {
        let writer = s.spawn(|| -> Check {
            for i in 0..ROUNDS {
                let b = if i % 2 == 0 { 0x22 } else { 0x11 };
                shared.write_local(FROM, &[b; LEN]).ctx("write_local")?;
            }
            Ok(())
        });
        let reader = s.spawn(|| -> Check {
            let mut buf = [0u8; LEN];
            for _ in 0..ROUNDS {
                shared.read_local(FROM, &mut buf).ctx("read_local")?;
                // the whole words of the range: bytes 4.. of `buf` (FROM + 4 is aligned)
                for w in buf[4..LEN - 4].chunks_exact(8) {
                    if w.iter().any(|&b| b != w[0]) || (w[0] != 0x11 && w[0] != 0x22) {
                        torn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
            Ok(())
        });
        [writer, reader]
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|_| Err("thread panicked".into())))
            .collect()
    });
    results.into_iter().collect::<Check<Vec<()>>>()?;
    let torn = torn.into_inner();
    ensure!(
        torn == 0,
        "{torn} torn words read while another thread wrote them"
    );
    world.barrier().ctx("barrier")
}

/// A fetching call whose MPI_Win_flush fails after the call was issued: the library
/// may still complete it (here: at the next flush), so its result must land in memory
/// rma leaves to MPI, never in the caller's buffer after the call returned (a buffer
/// the caller may have freed by then), and the call still takes effect exactly once.
/// Every form: the general path (get, fetch_and_op, compare_and_swap,
/// get_accumulate) and a target handle's (fetch_and_op, compare_and_swap, get).
pub(super) fn failed_flush_leaves_results_to_mpi(
    world: &MpiWorld,
    win: &mut MpiWindow<'_>,
) -> Check {
    const AT: i64 = 500; // slots 500..508
    world.barrier().ctx("barrier")?;
    if world.rank() == 0 {
        let t = rank(1);
        let failed = |what: &str| format!("{what} with a failed flush");
        let untouched = |b: &[u8]| b.iter().all(|&x| x == 0x55);
        win.lock(LockType::Exclusive, t, Assert::NONE)
            .ctx("lock exclusive")?;
        win.put(
            &i64s(&[7, 8, 9, 10, 11, 12, 13, 14]),
            MpiTargetSpec::contiguous(t, AT),
        )
        .ctx("put")?;
        win.unlock(t).ctx("unlock")?;
        win.lock(LockType::Shared, t, Assert::NONE)
            .ctx("lock shared")?;
        let before = rma_mpi::abandoned_landings();

        let mut out = vec![0xaau8; 16];
        world.fail_next_flushes(1);
        expect_class(
            win.get(&mut out, MpiTargetSpec::contiguous(t, AT)),
            ErrorClass::Other,
            &failed("get"),
        )?;
        out.fill(0x55);
        win.flush(t).ctx("flush after the failed get")?;
        ensure!(
            untouched(&out),
            "the get wrote the caller's buffer after it failed: {out:?}"
        );

        let mut old = [0xaau8; 8];
        world.fail_next_flushes(1);
        expect_class(
            win.fetch_and_op(
                BasicType::I64,
                Op::Sum,
                &1i64.to_ne_bytes(),
                &mut old,
                t,
                AT + 2,
            ),
            ErrorClass::Other,
            &failed("fetch_and_op"),
        )?;
        old.fill(0x55);
        win.flush(t).ctx("flush after the failed fetch_and_op")?;
        ensure!(
            untouched(&old),
            "fetch_and_op wrote the caller's buffer after it failed: {old:?}"
        );

        // Open MPI's osc/rdma refuses 8-byte compare_and_swap (a library defect)
        let cas = !world.cas64_blocked();
        if cas {
            world.fail_next_flushes(1);
            expect_class(
                win.compare_and_swap(
                    BasicType::I64,
                    &90i64.to_ne_bytes(),
                    &10i64.to_ne_bytes(),
                    &mut old,
                    t,
                    AT + 3,
                ),
                ErrorClass::Other,
                &failed("compare_and_swap"),
            )?;
            old.fill(0x55);
            win.flush(t)
                .ctx("flush after the failed compare_and_swap")?;
            ensure!(
                untouched(&old),
                "compare_and_swap wrote the caller's buffer after it failed"
            );
        }

        let mut two = [0xaau8; 16];
        world.fail_next_flushes(1);
        expect_class(
            win.get_accumulate(
                BasicType::I64,
                Op::Sum,
                &i64s(&[100, 100]),
                &mut two,
                MpiTargetSpec::contiguous(t, AT + 4),
            ),
            ErrorClass::Other,
            &failed("get_accumulate"),
        )?;
        two.fill(0x55);
        win.flush(t).ctx("flush after the failed get_accumulate")?;
        ensure!(
            untouched(&two),
            "get_accumulate wrote the caller's buffer after it failed"
        );

        {
            let shared: &MpiWindow<'_> = win;
            let h = shared.target_handle(t).ctx("target_handle")?;
            let b = |slot: i64| 8 * slot as usize;
            world.fail_next_flushes(1);
            expect_class(
                h.fetch_and_op_bits(b(AT + 6), BasicType::I64, Op::Sum, 1),
                ErrorClass::Other,
                &failed("a handle's fetch_and_op"),
            )?;
            if cas {
                world.fail_next_flushes(1);
                expect_class(
                    h.compare_and_swap_bits(b(AT + 7), BasicType::I64, 70, 14),
                    ErrorClass::Other,
                    &failed("a handle's compare_and_swap"),
                )?;
            }
            world.fail_next_flushes(1);
            let mut got = [0xaau8; 8];
            expect_class(
                h.get(b(AT), &mut got),
                ErrorClass::Other,
                &failed("a handle's get"),
            )?;
            got.fill(0x55);
            h.flush().ctx("a handle's flush after failed flushes")?;
            ensure!(
                untouched(&got),
                "a handle's get wrote the caller's buffer after it failed"
            );
            // the handle's next calls get a new landing and exact results
            let old = h
                .fetch_and_op_bits(b(AT + 6), BasicType::I64, Op::Sum, 1)
                .ctx("a handle's fetch_and_op after the failures")?;
            ensure!(
                old == 14,
                "fetch_and_op after the failures read {old}, not 14 (13 + 1)"
            );
        }
        let left = rma_mpi::abandoned_landings() - before;
        let want = if cas { 7 } else { 5 };
        ensure!(
            left == want,
            "{left} result buffers left to MPI, not one per failed flush ({want})"
        );
        win.unlock(t).ctx("unlock")?;
        let got = read(win, 1, AT, 8)?;
        // each failed call took effect exactly once, completed by the next flush
        let want = if cas {
            [7, 8, 10, 90, 111, 112, 15, 70]
        } else {
            [7, 8, 10, 10, 111, 112, 15, 14]
        };
        ensure!(
            got == want,
            "target after the failed flushes: {got:?}, not {want:?}"
        );
    }
    world.barrier().ctx("barrier")
}
