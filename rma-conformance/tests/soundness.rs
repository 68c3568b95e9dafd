//! Soundness of the safe API against the ways a window can end without its collective
//! free: `mem::forget`, `Box::leak`, a panic inside an epoch, an early return. Other
//! ranks keep writing into the window afterwards; none of it may reach memory the
//! program has since freed and reused (a use after free in safe code).
//!
//! Ranks as processes are this test binary re-executed with `RMA_SOUNDNESS_ROLE` set
//! (as in the `resources` tests); ranks as threads run in the test process.

use libtest_mimic::{Arguments, Failed, Trial};
use rma_shm::launch::{spawn, LaunchOptions};
use rma_win::{Assert, ErrorClass, Info, LockType, Rank, Window, World};
use std::time::Duration;

const ENV_ROLE: &str = "RMA_SOUNDNESS_ROLE";
const ENV_TRANSPORT: &str = "RMA_SOUNDNESS_TRANSPORT";
const POISON: u64 = 0xdead_beef;
const WORDS: usize = 1024;

type Outcome = std::result::Result<(), Failed>;

fn info(transport: &str) -> Info {
    Info::new().with("rma_transport", transport)
}

/// How rank 0 gets rid of its window without freeing it.
#[derive(Clone, Copy, Debug)]
enum End {
    Forget,
    Leak,
}

/// Rank 0 creates a window over a heap buffer, forgets (or leaks) the window, frees the
/// buffer and allocates a fresh one of the same size (the allocator hands the same
/// address back). Then rank 1 puts `POISON` into rank 0's window and completes it.
/// Returns, on rank 0, how many words of the fresh buffer hold `POISON` (must be 0).
fn forget_then_put(world: &World, transport: &str, end: End) -> rma_win::Result<usize> {
    let me = world.rank();
    let mut buf = vec![0u64; WORDS];
    let addr = buf.as_ptr() as usize;
    let win = Window::create(world, &mut buf, &info(transport))?;
    world.barrier()?; // every rank has created its window
    if me == 0 {
        match end {
            End::Forget => std::mem::forget(win),
            End::Leak => {
                Box::leak(Box::new(win));
            }
        }
        drop(buf);
        let fresh = vec![0u64; WORDS];
        let reused = fresh.as_ptr() as usize == addr;
        world.barrier()?; // rank 1 may write now
        world.barrier()?; // rank 1 has written and completed
        let hits = fresh.iter().filter(|&&v| v == POISON).count();
        if !reused {
            eprintln!("note: the allocator did not hand the buffer's address back");
        }
        return Ok(hits);
    }
    world.barrier()?;
    if me == 1 {
        win.lock(LockType::Exclusive, Rank::new(0), Assert::NONE)?;
        win.put(&[POISON; 4], Rank::new(0), 0)?;
        win.unlock(Rank::new(0))?;
    }
    world.barrier()?;
    // this rank's own window: freed properly would need rank 0 too; leak it
    std::mem::forget(win);
    Ok(0)
}

fn threads(transport: &'static str, end: End) -> Outcome {
    let results = rma_win::launch(2, move |world| forget_then_put(&world, transport, end))
        .map_err(|e| e.to_string())?;
    let hits = results[0].as_ref().map_err(|e| e.to_string())?;
    if *hits != 0 {
        return Err(
            format!("{hits} words of a freshly allocated buffer were written by rank 1").into(),
        );
    }
    for r in &results {
        r.as_ref().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn processes(transport: &str, end: &str) -> Outcome {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut opts = LaunchOptions::new(2, exe);
    opts.env = vec![
        (ENV_ROLE.into(), end.into()),
        (ENV_TRANSPORT.into(), transport.into()),
    ];
    opts.grace = Duration::from_secs(5);
    opts.timeout = Some(Duration::from_secs(60));
    let report = spawn(&opts).map_err(|e| e.to_string())?;
    if report.timed_out || !report.success() {
        return Err(format!("{transport}/{end}: {report:?}").into());
    }
    Ok(())
}

/// A rank (as a process): exit 0 when no write reached the fresh buffer.
fn rank_main(role: &str) -> i32 {
    let transport = std::env::var(ENV_TRANSPORT).unwrap_or_else(|_| "queued".into());
    let end = match role {
        "forget" => End::Forget,
        _ => End::Leak,
    };
    let world = match World::from_env() {
        Ok(Some(w)) => w,
        other => {
            eprintln!("not started as a rank: {other:?}");
            return 3;
        }
    };
    match forget_then_put(&world, &transport, end) {
        Ok(0) => 0,
        Ok(hits) => {
            eprintln!("{hits} words of a freshly allocated buffer were written by rank 1");
            1
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// A rank panics inside a lock epoch while holding the lock; the other rank gets a
/// typed error (PROC_FAILED), and the panic is resumed by `launch`.
fn panic_in_epoch() -> Outcome {
    let outcome = std::panic::catch_unwind(|| {
        rma_win::launch(2, |world| -> rma_win::Result<()> {
            let win = Window::allocate::<u64>(&world, 8, &Info::new())?;
            world.barrier()?;
            if world.rank() == 0 {
                win.lock(LockType::Exclusive, Rank::new(1), Assert::NONE)?;
                win.put(&[1u64], Rank::new(1), 0)?;
                panic!("rank 0 panics holding rank 1's lock");
            }
            std::thread::sleep(Duration::from_millis(50));
            match win.lock(LockType::Exclusive, Rank::new(1), Assert::NONE) {
                Err(e) if e.class() == ErrorClass::ProcFailed => Ok(()),
                Err(e) => Err(e),
                Ok(()) => {
                    // the dead holder's lock was taken over; the data is still sound
                    let mut out = [0u64];
                    win.get(&mut out, Rank::new(1), 0)?;
                    win.unlock(Rank::new(1))?;
                    Ok(())
                }
            }
        })
    });
    match outcome {
        Err(_) => Ok(()), // the panic, resumed once both ranks ended
        Ok(r) => Err(format!("the panic was not resumed: {r:?}").into()),
    }
}

/// Ranks as threads racing on one window in ways MPI calls erroneous (rank 1 puts
/// over words rank 0 stores into locally) and in ways it allows (rank 1 accumulates
/// bytes next to bytes rank 0 stores). Every access is a word atomic, so the racing
/// words hold one writer's whole word, never a mix, and the legitimate neighbours are
/// exact: an update spliced into a shared word never overwrites the bytes next to it.
/// (Under `-Zsanitizer=thread` the same test shows whether any access is non-atomic.)
fn racing_threads(transport: &'static str) -> Outcome {
    const ROUNDS: u64 = 2000;
    let results = rma_win::launch(2, move |world| -> rma_win::Result<String> {
        let win = Window::allocate::<u64>(&world, 64, &info(transport))?;
        win.lock_all(Assert::NONE)?;
        world.barrier()?;
        let mut bad = String::new();
        if world.rank() == 1 {
            let zero = Rank::new(0);
            for _ in 0..ROUNDS {
                // 32 words: long enough for the SSE block path of the copies
                win.put(&[0xaaaa_aaaa_aaaa_aaaau64; 32], zero, 0)?;
                // bytes 256..287 of rank 0's window: +1 each, next to a byte rank 0 stores
                win.accumulate(&[1u8; 31], zero, 32, rma_win::Op::Sum)?;
                win.flush(zero)?;
            }
        } else {
            for i in 0..ROUNDS {
                win.write_local::<u64>(0, &[0x5555_5555_5555_5555u64; 32])?;
                // byte 287 (the last of word 35) is rank 0's: a counter of its rounds
                win.write_local::<u8>(287, &[(i % 251) as u8])?;
                let mut words = [0u64; 32];
                win.read_local::<u64>(0, &mut words)?;
                for w in words {
                    if ![0, 0xaaaa_aaaa_aaaa_aaaa, 0x5555_5555_5555_5555].contains(&w) {
                        bad = format!("torn word {w:#x}");
                    }
                }
            }
        }
        win.unlock_all()?;
        world.barrier()?;
        if world.rank() == 0 && bad.is_empty() {
            let mut bytes = [0u8; 32];
            win.read_local::<u8>(256, &mut bytes)?;
            // the 31 accumulated bytes each saw every round; rank 0's byte its last
            if bytes[31] != ((ROUNDS - 1) % 251) as u8 {
                bad = format!(
                    "rank 0's byte next to the accumulated ones is {}",
                    bytes[31]
                );
            }
            if let Some(b) = bytes[..31].iter().find(|&&b| b != (ROUNDS % 256) as u8) {
                bad = format!("an accumulated byte is {b}, not {}", ROUNDS % 256);
            }
        }
        std::mem::forget(win);
        Ok(bad)
    })
    .map_err(|e| e.to_string())?;
    for r in results {
        let bad = r.map_err(|e| e.to_string())?;
        if !bad.is_empty() {
            return Err(bad.into());
        }
    }
    Ok(())
}

fn main() {
    if let Ok(role) = std::env::var(ENV_ROLE) {
        std::process::exit(rank_main(&role));
    }
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for t in ["atomic", "queued"] {
        trials.push(Trial::test(format!("forget::threads::{t}"), move || {
            threads(t, End::Forget)
        }));
        trials.push(Trial::test(format!("leak::threads::{t}"), move || {
            threads(t, End::Leak)
        }));
    }
    // ranks as processes: a created window can use the queued transport only (naming
    // atomic is an RMA_FLAVOR error)
    trials.push(Trial::test("forget::processes", || {
        processes("queued", "forget")
    }));
    trials.push(Trial::test("leak::processes", || {
        processes("queued", "leak")
    }));
    trials.push(Trial::test("panic::inside_lock_epoch", panic_in_epoch));
    for t in ["atomic", "queued"] {
        trials.push(Trial::test(format!("race::threads::{t}"), move || {
            racing_threads(t)
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}
