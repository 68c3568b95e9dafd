//! Programs that misuse windows on rma's shared memory in ways that used to hang or to
//! match silently, on both transports: collective calls entered in different orders
//! or in each other's place, and windows dropped (or guards forgotten, or epochs
//! unwound) while a peer still waits for them. Each must end within bounded time: with
//! a typed error on every rank involved (class PROC_FAILED, the world then broken, as
//! under MPI), or, where MPI's rule lets the wait complete (a window dropped counts as
//! its rank's free), with success.
//!
//! Every trial runs under its own deadline ([`DEADLINE`]): on the code before this
//! change the hanging ones fail there instead of hanging the run, and the ones that
//! matched silently fail their assertions. Ranks as processes are this binary
//! re-executed with `RMA_MISUSE_ROLE` set, under the launcher's timeout.

use libtest_mimic::{Arguments, Failed, Trial};
use rma_shm::launch::{spawn, LaunchOptions};
use rma_win::{Assert, Error, ErrorClass, Group, Info, LockType, Rank, Result, Window, World};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const ENV_ROLE: &str = "RMA_MISUSE_ROLE";
const ENV_TRANSPORT: &str = "RMA_MISUSE_TRANSPORT";

/// The most any trial may take. A finding is made at a wait's liveness check (every
/// `RMA_LIVENESS_MS`, 20 ms by default), so a passing trial takes milliseconds; the
/// margin is for a machine running ten times more work than it has cores.
const DEADLINE: Duration = Duration::from_secs(60);

type Outcome = std::result::Result<(), Failed>;

fn info(transport: &str) -> Info {
    Info::new().with("rma_transport", transport)
}

/// Runs `f` on another thread; a failure if it has not returned within [`DEADLINE`]
/// (its threads are left behind: the test process exits when the harness is done).
fn within<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failed> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE)
        .map_err(|_| format!("{what}: still waiting after {DEADLINE:?} (a hang)").into())
}

/// Runs `call`, noting how long it took on stderr (`--nocapture` shows it).
fn timed(what: &str, call: impl FnOnce() -> Result<()>) -> Result<()> {
    let start = Instant::now();
    let r = call();
    eprintln!("{what}: {r:?} after {:?}", start.elapsed());
    r
}

/// `r` is an error of class PROC_FAILED (whose text contains `says`, if given).
fn proc_failed(what: &str, r: &Result<()>, says: Option<&str>) -> Result<(), String> {
    match r {
        Err(e) if e.class() == ErrorClass::ProcFailed => match says {
            Some(s) if !e.to_string().contains(s) => {
                Err(format!("{what}: PROC_FAILED without \"{s}\": {e}"))
            }
            _ => Ok(()),
        },
        Err(e) => Err(format!(
            "{what}: expected PROC_FAILED, got {e} ({})",
            e.class()
        )),
        Ok(()) => Err(format!("{what}: expected PROC_FAILED, got Ok")),
    }
}

/// Runs `body` on 2 ranks as threads within the deadline; every rank's `Err(text)`
/// fails the trial.
fn two_threads(
    what: &'static str,
    body: impl Fn(&World) -> Result<Result<(), String>> + Send + Sync + 'static,
) -> Outcome {
    let results = within(what, move || rma_win::run_threads(2, |world| body(&world)))?
        .map_err(|e| format!("{what}: starting the world: {e}"))?;
    for (rank, r) in results.into_iter().enumerate() {
        r.map_err(|e| format!("{what}: rank {rank}: unexpected error {e} ({})", e.class()))?
            .map_err(|e| format!("{what}: rank {rank}: {e}"))?;
    }
    Ok(())
}

/// After a finding, the world is broken: a barrier fails at once, with PROC_FAILED.
fn broken_after(world: &World) -> Result<(), String> {
    let start = Instant::now();
    proc_failed("a barrier of the broken world", &world.barrier(), None)?;
    if start.elapsed() > DEADLINE / 2 {
        return Err(format!(
            "the broken world's barrier took {:?}",
            start.elapsed()
        ));
    }
    Ok(())
}

// ---- the bodies, shared by threads and processes ----------------------------------

/// Rank 0 frees window `a` then `b`, rank 1 frees `b` then `a`: each first free
/// waits for a mark the other rank never sets while it waits in another free.
fn free_order(world: &World, transport: &str) -> Result<Result<(), String>> {
    let mut a = Window::allocate::<u64>(world, 4, &info(transport))?;
    let mut b = Window::allocate::<u64>(world, 4, &info(transport))?;
    let first = timed("the first free", || {
        if world.rank() == 0 {
            a.free()
        } else {
            b.free()
        }
    });
    let mut out = proc_failed("the first free", &first, Some("different collective calls"));
    if out.is_ok() {
        out = broken_after(world);
    }
    // and the windows that follow are refused too (the world stays broken)
    let second = if world.rank() == 0 {
        b.free()
    } else {
        a.free()
    };
    Ok(out.and_then(|()| proc_failed("the second free", &second, None)))
}

/// Rank 0 calls the world's barrier while rank 1 fences a window (a fence used to be
/// a flush and the world's barrier, so the two matched).
fn fence_vs_barrier(world: &World, transport: &str) -> Result<Result<(), String>> {
    let win = Window::allocate::<u64>(world, 4, &info(transport))?;
    win.fence(Assert::NONE)?; // matched: the same fence on both ranks
    let r = timed("barrier against fence", || {
        if world.rank() == 0 {
            world.barrier()
        } else {
            win.fence(Assert::NONE)
        }
    });
    let out = proc_failed(
        "barrier against fence",
        &r,
        Some("different collective calls"),
    );
    Ok(out.and_then(|()| broken_after(world)))
}

// ---- threads ------------------------------------------------------------------------

/// Rank 0 locks rank 1 exclusively, puts, and drops the window (an early return); then
/// it goes on to the world's barrier, while rank 1 asks for the same lock. The drop
/// releases the lock (after completing the put), so rank 1 gets it and sees the put;
/// its free passes (rank 0's drop counted as its free), and the barriers match.
fn lock_then_drop(transport: &'static str) -> Outcome {
    let locked = std::sync::Arc::new(AtomicBool::new(false));
    two_threads("lock, then drop", move |world| {
        let mut win = Window::allocate::<u64>(world, 1, &info(transport))?;
        world.barrier()?;
        if world.rank() == 0 {
            win.lock(LockType::Exclusive, Rank::new(1), Assert::NONE)?;
            win.put(&[7u64], Rank::new(1), 0)?;
            locked.store(true, Ordering::SeqCst);
            drop(win);
            world.barrier()?;
            return Ok(Ok(()));
        }
        while !locked.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        win.lock(LockType::Exclusive, Rank::new(1), Assert::NONE)?;
        let got = win.local_vec::<u64>()?;
        win.unlock(Rank::new(1))?;
        win.free()?;
        world.barrier()?;
        Ok(if got == [7] {
            Ok(())
        } else {
            Err(format!("rank 0's put before its drop is missing: {got:?}"))
        })
    })
}

/// How rank 0 keeps the lock while it goes on to the world's barrier.
#[derive(Clone, Copy, Debug)]
enum Keep {
    /// `mem::forget` of the lock's guard.
    ForgetGuard,
    /// A panic inside the epoch, caught: the guard drops while unwinding, which ends
    /// nothing.
    Unwind,
}

/// Rank 0 takes rank 1's lock through a guard and keeps it (`keep`), then waits in
/// the world's barrier; rank 1 asks for the same lock. Each waits for the other: both
/// get PROC_FAILED (the lock wait names the deadlock), and the world is broken.
fn lock_kept(transport: &'static str, keep: Keep) -> Outcome {
    let locked = std::sync::Arc::new(AtomicBool::new(false));
    two_threads("lock kept across a barrier", move |world| {
        let win = Window::allocate::<u64>(world, 1, &info(transport))?;
        world.barrier()?;
        if world.rank() == 0 {
            match keep {
                Keep::ForgetGuard => {
                    let g = win.lock_epoch(LockType::Exclusive, Rank::new(1), Assert::NONE)?;
                    std::mem::forget(g);
                    locked.store(true, Ordering::SeqCst);
                }
                Keep::Unwind => {
                    let taken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let _g = win
                            .lock_epoch(LockType::Exclusive, Rank::new(1), Assert::NONE)
                            .expect("the lock");
                        locked.store(true, Ordering::SeqCst);
                        panic!("rank 0 unwinds out of its lock epoch (this panic is expected)");
                    }));
                    if taken.is_ok() {
                        return Ok(Err("the epoch did not unwind".into()));
                    }
                }
            }
            let r = timed("rank 0's barrier", || world.barrier());
            return Ok(proc_failed("rank 0's barrier", &r, None));
        }
        while !locked.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let r = timed("rank 1's lock", || {
            win.lock(LockType::Exclusive, Rank::new(1), Assert::NONE)
        });
        let out = proc_failed("rank 1's lock", &r, Some("neither can go on"));
        Ok(out.and_then(|()| broken_after(world)))
    })
}

/// A helper makes a window and returns early on rank 0 (dropping it), while rank 1
/// frees it; rank 0 keeps its world. The drop counts as rank 0's free (as MPI's
/// `MPI_Win_free` at the drop does), so rank 1's free succeeds, and its created
/// window's contents go back into its buffer; the ranks' next barrier matches.
fn helper_drops(transport: &'static str) -> Outcome {
    fn helper(world: &World, transport: &str) -> Result<Vec<u64>> {
        let mut buf = vec![0u64; 4];
        let mut win = Window::create(world, &mut buf, &info(transport))?;
        if world.rank() == 0 {
            return Err(Error::arg("the helper gives up early (an early return)"));
        }
        win.write_local(0, &[5u64, 6])?;
        win.free()?;
        drop(win);
        Ok(buf)
    }
    two_threads("a helper drops its window", move |world| {
        let r = helper(world, transport);
        world.barrier()?;
        Ok(match (world.rank(), r) {
            (0, Err(e)) if e.class() == ErrorClass::Arg => Ok(()),
            (1, Ok(buf)) if buf == [5, 6, 0, 0] => Ok(()),
            (_, other) => Err(format!("the helper returned {other:?}")),
        })
    })
}

/// Rank 1 (an origin) waits for rank 0's post, which never comes: rank 0 drops the
/// window and goes on to the world's barrier. Rank 1 gets PROC_FAILED naming rank 0,
/// drops its own window, and the barriers match.
fn post_never_comes(transport: &'static str) -> Outcome {
    two_threads("a post that never comes", move |world| {
        let win = Window::allocate::<u64>(world, 1, &info(transport))?;
        world.barrier()?;
        if world.rank() == 0 {
            drop(win);
            world.barrier()?;
            return Ok(Ok(()));
        }
        win.start(&Group::new(&[0])?, Assert::NONE)?;
        let r = timed("the put waiting for the post", || {
            win.put(&[1u64], Rank::new(0), 0)
        });
        let out = proc_failed(
            "the put waiting for the post",
            &r,
            Some("dropped the window"),
        );
        let named = match &r {
            Err(Error::ProcFailed { rank, .. }) if *rank == Rank::new(0) => Ok(()),
            other => Err(format!("the error does not name rank 0: {other:?}")),
        };
        drop(win);
        world.barrier()?;
        Ok(out.and(named))
    })
}

/// Rank 0 fences window `a` while rank 1 fences window `b`: a fence matches only a
/// fence on the same window.
fn fences_on_different_windows(transport: &'static str) -> Outcome {
    two_threads("fences on different windows", move |world| {
        let a = Window::allocate::<u64>(world, 1, &info(transport))?;
        let b = Window::allocate::<u64>(world, 1, &info(transport))?;
        let r = timed("fence against fence", || {
            if world.rank() == 0 {
                a.fence(Assert::NONE)
            } else {
                b.fence(Assert::NONE)
            }
        });
        let out = proc_failed(
            "fence against fence",
            &r,
            Some("different collective calls"),
        );
        Ok(out.and_then(|()| broken_after(world)))
    })
}

/// Rank 0 drops a window (an early return) while rank 1 fences it: the drop took the
/// free's place in rank 0's collective calls, so the fence can never be matched. Rank
/// 0 then finds the world broken.
fn fence_against_drop(transport: &'static str) -> Outcome {
    let fenced = std::sync::Arc::new(AtomicBool::new(false));
    two_threads("a fence against a drop", move |world| {
        let win = Window::allocate::<u64>(world, 1, &info(transport))?;
        win.fence(Assert::NONE)?;
        if world.rank() == 0 {
            drop(win);
            while !fenced.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            return Ok(broken_after(world));
        }
        let r = timed("rank 1's fence", || win.fence(Assert::NONE));
        fenced.store(true, Ordering::SeqCst);
        let out = proc_failed(
            "fence against drop",
            &r,
            Some("dropped without being freed"),
        );
        Ok(out.and_then(|()| broken_after(world)))
    })
}

/// The correct idioms still work: a fence matched by fences, a free by frees, a drop
/// on every rank, a free against a peer's drop, and barriers between them.
fn correct_programs(transport: &'static str) -> Outcome {
    two_threads("correct programs", move |world| {
        for _ in 0..20 {
            let mut a = Window::allocate::<u64>(world, 1, &info(transport))?;
            let b = Window::allocate::<u64>(world, 1, &info(transport))?;
            a.fence(Assert::NONE)?;
            b.fence(Assert::NONE)?;
            world.barrier()?;
            a.fence(Assert::NOSUCCEED)?;
            a.free()?;
            drop(b); // dropped on every rank, at the same point
            world.barrier()?;
            let mut c = Window::allocate::<u64>(world, 1, &info(transport))?;
            if world.rank() == 0 {
                drop(c);
            } else {
                c.free()?;
            }
            world.allgather(&[1])?;
        }
        Ok(Ok(()))
    })
}

fn threads(
    case: impl Fn(&World, &str) -> Result<Result<(), String>> + Send + Sync + 'static,
    transport: &'static str,
) -> Outcome {
    two_threads("case", move |world| case(world, transport))
}

// ---- processes ----------------------------------------------------------------------

fn processes(role: &str, transport: &str) -> Outcome {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut opts = LaunchOptions::new(2, exe);
    opts.env = vec![
        (ENV_ROLE.into(), role.into()),
        (ENV_TRANSPORT.into(), transport.into()),
    ];
    opts.grace = Duration::from_secs(5);
    opts.timeout = Some(DEADLINE);
    let report = spawn(&opts).map_err(|e| e.to_string())?;
    if report.timed_out || !report.success() {
        return Err(format!("{role}/{transport}: {report:?}").into());
    }
    Ok(())
}

/// A rank (as a process): exit 0 when it saw what it should.
fn rank_main(role: &str) -> i32 {
    let transport = std::env::var(ENV_TRANSPORT).unwrap_or_else(|_| "atomic".into());
    let world = match World::from_env() {
        Ok(Some(w)) => w,
        other => {
            eprintln!("not started as a rank: {other:?}");
            return 3;
        }
    };
    let r = match role {
        "fence_vs_barrier" => fence_vs_barrier(&world, &transport),
        "free_order" => free_order(&world, &transport),
        _ => Ok(Err(format!("no role {role}"))),
    };
    match r {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("rank {}: {e}", world.rank());
            1
        }
        Err(e) => {
            eprintln!(
                "rank {}: unexpected error {e} ({})",
                world.rank(),
                e.class()
            );
            2
        }
    }
}

fn main() {
    if let Ok(role) = std::env::var(ENV_ROLE) {
        std::process::exit(rank_main(&role));
    }
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    for t in ["atomic", "queued"] {
        trials.extend([
            Trial::test(format!("free_order::threads::{t}"), move || {
                threads(free_order, t)
            }),
            Trial::test(format!("fence_vs_barrier::threads::{t}"), move || {
                threads(fence_vs_barrier, t)
            }),
            Trial::test(
                format!("fences_on_different_windows::threads::{t}"),
                move || fences_on_different_windows(t),
            ),
            Trial::test(format!("fence_against_drop::threads::{t}"), move || {
                fence_against_drop(t)
            }),
            Trial::test(format!("lock_then_drop::threads::{t}"), move || {
                lock_then_drop(t)
            }),
            Trial::test(
                format!("lock_kept::forget_guard::threads::{t}"),
                move || lock_kept(t, Keep::ForgetGuard),
            ),
            Trial::test(format!("lock_kept::unwind::threads::{t}"), move || {
                lock_kept(t, Keep::Unwind)
            }),
            Trial::test(format!("helper_drops::threads::{t}"), move || {
                helper_drops(t)
            }),
            Trial::test(format!("post_never_comes::threads::{t}"), move || {
                post_never_comes(t)
            }),
            Trial::test(format!("correct_programs::threads::{t}"), move || {
                correct_programs(t)
            }),
            Trial::test(format!("fence_vs_barrier::processes::{t}"), move || {
                processes("fence_vs_barrier", t)
            }),
            Trial::test(format!("free_order::processes::{t}"), move || {
                processes("free_order", t)
            }),
        ]);
    }
    libtest_mimic::run(&args, trials).exit();
}
