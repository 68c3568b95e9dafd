//! Dead peers, for real: a rank is killed with SIGKILL in the middle of each kind of
//! wait — fence, flush, a lock the dead rank holds, a lock queue it sits in, a fetch
//! whose reply is pending, a start epoch waiting for its post — and every surviving rank
//! must get an error of class PROC_FAILED naming the lost rank, within a bounded time,
//! never a hang. Ranks are processes started through the launcher from this binary.

use libtest_mimic::{Arguments, Failed, Trial};
use rma_shm::launch::{spawn, LaunchOptions};
use rma_win::{Assert, ErrorClass, Group, Info, LockType, Op, Rank, Result, Window, World};
use std::time::{Duration, Instant};

const ENV_ROLE: &str = "RMA_FAULT_CASE";
const ENV_TRANSPORT: &str = "RMA_FAULT_TRANSPORT";
/// The rank every case kills.
const VICTIM: usize = 1;

fn die() -> ! {
    let pid = std::process::id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status();
    // kill(1) is part of procps/coreutils; if it is missing, abort is the next best thing
    std::process::abort()
}

/// Checks that `r` is PROC_FAILED naming the victim; returns how it went.
fn expect_lost<T>(what: &str, r: Result<T>, since: Instant) -> std::result::Result<(), String> {
    match r {
        Err(e)
            if e.class() == ErrorClass::ProcFailed
                && e.to_string().contains(&format!("rank {VICTIM}")) =>
        {
            eprintln!("{what}: got \"{e}\" after {:?}", since.elapsed());
            Ok(())
        }
        Err(e) => Err(format!(
            "{what}: expected PROC_FAILED naming rank {VICTIM}, got {e} ({})",
            e.class()
        )),
        Ok(_) => Err(format!(
            "{what}: expected PROC_FAILED naming rank {VICTIM}, got Ok"
        )),
    }
}

type Case = fn(&World, &Info) -> std::result::Result<(), String>;

/// How long a survivor keeps calling before it counts a dead peer as unnoticed.
const NOTICE_BOUND: Duration = Duration::from_secs(10);

/// Repeats `call` until it fails or [`NOTICE_BOUND`] passes: on the atomic transport
/// a call needs nothing from its target, so it succeeds until the world learns of
/// the death (the launcher marks the rank dead within milliseconds of reaping it).
fn until_err<T>(since: Instant, mut call: impl FnMut() -> Result<T>) -> Result<T> {
    loop {
        match call() {
            Ok(_) if since.elapsed() < NOTICE_BOUND => std::thread::yield_now(),
            other => return other,
        }
    }
}

/// Wraps rma errors from setup steps.
fn setup<T>(r: Result<T>) -> std::result::Result<T, String> {
    r.map_err(|e| format!("setup failed: {e}"))
}

fn fence(world: &World, info: &Info) -> std::result::Result<(), String> {
    let win = setup(Window::allocate::<u64>(world, 4, info))?;
    setup(win.fence(Assert::NONE))?;
    if world.rank() == VICTIM {
        die();
    }
    let t = Instant::now();
    expect_lost("fence", win.fence(Assert::NONE), t)
}

fn flush(world: &World, info: &Info) -> std::result::Result<(), String> {
    let win = setup(Window::allocate::<u64>(world, 4, info))?;
    setup(world.barrier())?;
    if world.rank() == VICTIM {
        die();
    }
    setup(win.lock_all(Assert::NOCHECK))?;
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    // the atomic transport needs nothing from the target and flush has nothing to wait
    // for, but calls fail once the world knows of the death
    let r = until_err(t, || {
        win.accumulate(&[1u64], Rank::new(VICTIM as u32), 0, Op::Sum)
            .and_then(|_| win.flush(Rank::new(VICTIM as u32)))
    });
    expect_lost("accumulate + flush", r, t)
}

fn lock_held_by_dead(world: &World, info: &Info) -> std::result::Result<(), String> {
    let win = setup(Window::allocate::<u64>(world, 4, info))?;
    if world.rank() == VICTIM {
        setup(win.lock(LockType::Exclusive, Rank::new(0), Assert::NONE))?;
        setup(world.barrier())?;
        die();
    }
    setup(world.barrier())?;
    let t = Instant::now();
    expect_lost(
        "lock held by the dead rank",
        win.lock(LockType::Shared, Rank::new(0), Assert::NONE),
        t,
    )
}

fn lock_queue_with_dead(world: &World, info: &Info) -> std::result::Result<(), String> {
    // rank 2 holds the lock; the victim queues behind it and dies there; when rank 2
    // lets go, the turn passes to the dead rank's ticket and rank 0, queued after it,
    // must learn why it never comes
    let win = setup(Window::allocate::<u64>(world, 4, info))?;
    let zero = Rank::new(0);
    match world.rank() {
        2 => {
            setup(win.lock(LockType::Exclusive, zero, Assert::NONE))?;
            setup(world.barrier())?; // 1: holding
            setup(world.barrier())?; // 2: victim is queued
            std::thread::sleep(Duration::from_millis(100));
            // the victim kills itself after taking its ticket; wait until it is gone
            let t = Instant::now();
            let r = world.barrier(); // 3: the victim never arrives
            setup(win.unlock(zero))?;
            expect_lost("barrier with the queued rank dead", r, t)
        }
        VICTIM => {
            setup(world.barrier())?; // 1
            setup(world.barrier())?; // 2
                                     // take a ticket and die while waiting in the queue: a second thread kills
                                     // the process once the ticket is surely taken
            let got = std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(50));
                    die()
                });
                win.lock(LockType::Exclusive, zero, Assert::NONE)
            });
            Err(format!("the victim got the lock: {got:?}"))
        }
        _ => {
            setup(world.barrier())?; // 1
            setup(world.barrier())?; // 2
            std::thread::sleep(Duration::from_millis(30));
            let t = Instant::now();
            expect_lost(
                "lock queued behind the dead rank",
                win.lock(LockType::Exclusive, zero, Assert::NONE),
                t,
            )
        }
    }
}

fn fetch_reply_pending(world: &World, info: &Info) -> std::result::Result<(), String> {
    let win = setup(Window::allocate::<u64>(world, 4, info))?;
    setup(win.lock_all(Assert::NOCHECK))?;
    setup(world.barrier())?;
    if world.rank() == VICTIM {
        die();
    }
    std::thread::sleep(Duration::from_millis(50));
    let t = Instant::now();
    let r = until_err(t, || {
        win.fetch_and_op(1u64, Rank::new(VICTIM as u32), 0, Op::Sum)
    });
    expect_lost("fetch_and_op waiting for its reply", r, t)
}

fn start_waiting_for_post(world: &World, info: &Info) -> std::result::Result<(), String> {
    let win = setup(Window::allocate::<u64>(world, 4, info))?;
    setup(world.barrier())?;
    if world.rank() == VICTIM {
        die();
    }
    let g = setup(Group::new(&[VICTIM]))?;
    setup(win.start(&g, Assert::NONE))?;
    let t = Instant::now();
    expect_lost(
        "put waiting for the dead rank's post",
        win.put(&[1u64], Rank::new(VICTIM as u32), 0),
        t,
    )
}

/// The ticket_lock example's situation: survivors poll a live rank's window with
/// fetch_and_op (which on the atomic transport never waits for anyone) when a rank
/// dies; they used to spin until the launcher killed them. Every call on a world with
/// a dead member fails with PROC_FAILED naming it, to any target, on every transport.
fn calls_after_a_death(world: &World, info: &Info) -> std::result::Result<(), String> {
    let win = setup(Window::allocate::<u64>(world, 4, info))?;
    setup(win.lock_all(Assert::NOCHECK))?;
    setup(world.barrier())?;
    if world.rank() == VICTIM {
        die();
    }
    let t = Instant::now();
    let zero = Rank::new(0);
    let victim = Rank::new(VICTIM as u32);
    let r = until_err(t, || win.fetch_and_op(0u64, zero, 0, Op::NoOp));
    expect_lost("fetch_and_op polling rank 0", r, t)?;
    let mut one = [0u64];
    let calls: [(&str, Result<()>); 7] = [
        ("put", win.put(&[1u64], zero, 1)),
        ("get", win.get(&mut one, victim, 1)),
        ("accumulate", win.accumulate(&[1u64], zero, 1, Op::Sum)),
        (
            "get_accumulate",
            win.get_accumulate(&[1u64], &mut one, victim, 1, Op::Sum),
        ),
        (
            "compare_and_swap",
            win.compare_and_swap(1u64, 0, zero, 2).map(|_| ()),
        ),
        ("flush", win.flush(zero)),
        ("flush_all", win.flush_all()),
    ];
    for (what, r) in calls {
        expect_lost(what, r, t)?;
    }
    Ok(())
}

fn mutex_held_by_dead(world: &World, info: &Info) -> std::result::Result<(), String> {
    // the victim holds the building-block mutex and dies; the others queue up behind
    // it and must learn why their turn never comes
    let mutex = setup(rma_win::Mutex::new(world, info))?;
    if world.rank() == VICTIM {
        let guard = setup(mutex.lock())?;
        setup(world.barrier())?;
        std::mem::forget(guard);
        die();
    }
    setup(world.barrier())?;
    let t = Instant::now();
    expect_lost("mutex held by the dead rank", mutex.lock().map(|_| ()), t)
}

fn signal_from_dead(world: &World, info: &Info) -> std::result::Result<(), String> {
    // every survivor waits for a signal only the victim would send
    let win = setup(Window::allocate::<u64>(world, 2, info))?;
    setup(world.barrier())?;
    if world.rank() == VICTIM {
        die();
    }
    let t = Instant::now();
    expect_lost(
        "wait_until a signal from the dead rank",
        win.wait_until(1, rma_win::Cmp::Eq, 1),
        t,
    )
}

const CASES: &[(&str, Case)] = &[
    ("mutex_held_by_dead_rank", mutex_held_by_dead),
    ("signal_wait_on_dead_rank", signal_from_dead),
    ("fence", fence),
    ("flush", flush),
    ("lock_held_by_dead_rank", lock_held_by_dead),
    ("lock_queue_with_dead_rank", lock_queue_with_dead),
    ("fetch_reply_pending", fetch_reply_pending),
    ("start_waiting_for_post", start_waiting_for_post),
    ("calls_after_a_death", calls_after_a_death),
];

fn child(name: &str) -> ! {
    let Some((_, case)) = CASES.iter().find(|(n, _)| *n == name) else {
        eprintln!("no fault case {name}");
        std::process::exit(3)
    };
    let transport = std::env::var(ENV_TRANSPORT).unwrap_or_else(|_| "atomic".into());
    let world = match World::from_env() {
        Ok(Some(w)) => w,
        other => {
            eprintln!("not started as a rank: {other:?}");
            std::process::exit(3)
        }
    };
    let info = Info::new().with("rma_transport", &transport);
    match case(&world, &info) {
        Ok(()) => {
            // leave the world (state Exited) before the process goes: a survivor still
            // waiting must name the killed rank, not this one, as the failed peer
            drop(world);
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("rank {}: {e}", world.rank());
            std::process::exit(1)
        }
    }
}

fn run(
    name: &'static str,
    transport: &'static str,
    liveness_ms: Option<&'static str>,
) -> std::result::Result<(), Failed> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut opts = LaunchOptions::new(4, exe);
    opts.env = vec![
        (ENV_ROLE.into(), name.into()),
        (ENV_TRANSPORT.into(), transport.into()),
    ];
    if let Some(ms) = liveness_ms {
        opts.env.push((rma_shm::ENV_LIVENESS_MS.into(), ms.into()));
    }
    opts.grace = Duration::from_secs(20);
    opts.timeout = Some(Duration::from_secs(60));
    let start = Instant::now();
    let report = spawn(&opts).map_err(|e| format!("launching: {e}"))?;
    if report.timed_out {
        return Err("a rank hung: the launcher's timeout struck".into());
    }
    // exactly the victim failed, by a signal; every survivor exited 0
    let failed: Vec<usize> = report.failures.iter().map(|f| f.0).collect();
    if failed != [VICTIM] {
        return Err(format!(
            "expected only rank {VICTIM} to fail, got {:?}",
            report.failures
        )
        .into());
    }
    if !report.failures[0].1.contains("signal") {
        return Err(format!("the victim ended otherwise: {:?}", report.failures).into());
    }
    eprintln!(
        "{name} ({transport}): survivors reported the lost rank; run took {:?}",
        start.elapsed()
    );
    Ok(())
}

fn main() {
    if let Ok(name) = std::env::var(ENV_ROLE) {
        child(&name);
    }
    let args = Arguments::from_args();
    let mut trials = vec![];
    for &transport in rma_win::TRANSPORTS {
        for &(name, _) in CASES {
            trials.push(Trial::test(
                format!("{transport}::processes::dead_peer_in_{name}"),
                move || run(name, transport, None),
            ));
        }
    }
    // the detection interval is configurable: a slower one still reports the lost rank
    trials.push(Trial::test(
        "atomic::processes::dead_peer_in_fence_with_500ms_liveness_checks",
        || run("fence", "atomic", Some("500")),
    ));
    libtest_mimic::run(&args, trials).exit();
}
