//! Under an MPI launcher, a rank that returns early with an error — dropping its
//! window, or its world, while the other ranks wait in their next collective — ends
//! the job promptly with a non-zero exit and a message naming that rank and what each
//! rank was in, instead of hanging until something kills it. And a job whose ranks
//! all drop their windows without `free` still ends cleanly (exit 0).
//!
//! Each case runs on 2 ranks under every installed MPI library (MPICH's
//! `mpiexec.mpich`, Open MPI's `mpirun.openmpi`), with a timeout; the same program
//! under rma's own launchers is the conformance suite's `faults` and `resources`
//! territory (peers get PROC_FAILED). This binary re-executes itself as the MPI
//! program (`RMA_MPI_EXIT_CASE`); without an MPI shim (built without rma-win's `mpi`
//! feature) it registers no test.

use libtest_mimic::{Arguments, Failed, Trial};
use rma_mpi::launcher::{Launch, MPICH, OPENMPI};
use rma_win::{Assert, ErrorClass, Info, LockType, Rank, Result, Window, World};
use std::io::Write as _;
use std::time::{Duration, Instant};

const ENV_CASE: &str = "RMA_MPI_EXIT_CASE";
const RANKS: usize = 2;
/// The rank that returns early.
const LEAVER: usize = 1;
/// How long the job may take to end; a hang is killed at [`KILL_AFTER`].
const PROMPT: Duration = Duration::from_secs(15);
const KILL_AFTER: Duration = Duration::from_secs(90);

/// An error the leaver returns "through `?`": a put to a rank that does not exist.
fn fail(win: &Window) -> Result<()> {
    win.put(&[1u64], Rank::new(99), 0)
}

/// The leaver returns early from inside a fence epoch; the other rank goes on to a
/// barrier.
fn window_then_barrier(world: &World) -> Result<()> {
    let win = Window::allocate::<u64>(world, 4, &Info::new())?;
    win.fence(Assert::NONE)?;
    if world.rank() == LEAVER {
        fail(&win)?;
    }
    world.barrier()?;
    win.fence(Assert::NONE)?;
    Ok(())
}

/// The leaver returns early inside a lock epoch; the other rank goes on to a fence.
fn lock_then_fence(world: &World) -> Result<()> {
    let win = Window::allocate::<u64>(world, 4, &Info::new())?;
    world.barrier()?;
    if world.rank() == LEAVER {
        win.lock(LockType::Shared, Rank::new(0), Assert::NONE)?;
        fail(&win)?;
    }
    win.fence(Assert::NONE)?;
    Ok(())
}

/// The leaver returns while it holds rank 0's lock (exclusive); rank 0 then asks for
/// that lock. The leaver's drop releases it, so rank 0 gets it, and rank 0's fence
/// then meets the leaver's free: a mismatch.
fn leaver_holds_lock(world: &World) -> Result<()> {
    let win = Window::allocate::<u64>(world, 4, &Info::new())?;
    if world.rank() == LEAVER {
        win.lock(LockType::Exclusive, Rank::new(0), Assert::NONE)?;
        world.barrier()?;
        fail(&win)?;
    }
    world.barrier()?;
    win.lock(LockType::Exclusive, Rank::new(0), Assert::NONE)?;
    win.unlock(Rank::new(0))?;
    win.fence(Assert::NONE)?;
    Ok(())
}

/// The leaver returns before it posts; rank 0's access epoch waits for that post and
/// must end with PROC_FAILED naming the leaver. Both ranks then drop their windows and
/// worlds together: the job ends with the ranks' own exit code, 1.
fn leaver_never_posts(world: &World) -> Result<()> {
    let win = Window::allocate::<u64>(world, 4, &Info::new())?;
    world.barrier()?;
    if world.rank() == LEAVER {
        fail(&win)?;
    }
    let epoch = || -> Result<()> {
        win.start(&rma_win::Group::new(&[LEAVER])?, Assert::NONE)?;
        win.put(&[1u64], Rank::new(LEAVER as u32), 0)?;
        win.complete()
    };
    let r = epoch();
    if let Err(e) = &r {
        // printed before the window's free, which the leaver waits in: a launcher that
        // ends the job when the leaver exits cannot cut this line off
        let line = format!("worker: rank 0 got: {e}\n");
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
    r
}

/// A correct program, 200 times: the origin's access epoch ends with complete and its
/// window drops at once (the Rust idiom, no free), while the target waits (or polls
/// with test) and frees explicitly. The origin's LEFT mark must never turn the
/// target's wait for a complete that did arrive into an error.
fn complete_then_drop(world: &World) -> Result<()> {
    for i in 0..200 {
        let mut win = Window::allocate::<u64>(world, 1, &Info::new())?;
        if world.rank() == LEAVER {
            win.start(&rma_win::Group::new(&[0])?, Assert::NONE)?;
            win.put(&[i as u64], Rank::new(0), 0)?;
            win.complete()?;
        } else {
            win.post(&rma_win::Group::new(&[LEAVER])?, Assert::NONE)?;
            if i % 2 == 0 {
                win.wait()?;
            } else {
                while !win.test()? {
                    std::thread::yield_now();
                }
            }
            let mut got = [0u64];
            win.read_local(0, &mut got)?;
            if got[0] != i as u64 {
                return Err(rma_win::Error::arg(format!("round {i}: read {}", got[0])));
            }
            win.free()?;
        }
    }
    Ok(())
}

/// No rank leaves, but rank 0 enters the world's barrier while the other rank fences
/// a window: a fence agrees as a fence on its window, never as the world's barrier, so
/// the two mismatch (rma-win's fence used to end in the world's barrier, and matched).
fn fence_against_barrier(world: &World) -> Result<()> {
    let win = Window::allocate::<u64>(world, 4, &Info::new())?;
    win.fence(Assert::NONE)?;
    if world.rank() == 0 {
        world.barrier()
    } else {
        win.fence(Assert::NONE)
    }
}

/// The leaver returns before creating any window; the other rank creates one.
fn no_window(world: &World) -> Result<()> {
    if world.rank() == LEAVER {
        return Err(rma_win::Error::arg(
            "this rank gives up before its first window",
        ));
    }
    let win = Window::allocate::<u64>(world, 4, &Info::new())?;
    win.fence(Assert::NONE)?;
    Ok(())
}

/// Every rank drops its windows without `free` (one freed explicitly on one rank
/// only): a correct program, which must end with exit 0.
fn clean_drops(world: &World) -> Result<()> {
    let mut buf = vec![0u64; 4];
    let a = Window::allocate::<u64>(world, 4, &Info::new())?;
    let mut b = Window::create(world, &mut buf, &Info::new())?;
    a.fence(Assert::NONE)?;
    a.accumulate(&[1u64], Rank::new(0), 0, rma_win::Op::Sum)?;
    a.fence(Assert::NONE)?;
    if world.rank() == 0 {
        b.free()?;
    }
    drop(b);
    drop(a);
    world.barrier()?;
    Ok(())
}

/// With `RMA_MPI_PROGRESS=thread`, rank 0 computes for 400 ms without any MPI call
/// while rank 1 makes fetch_and_op + flush calls to it: the calls must complete
/// meanwhile (at least 20 of them in the first 300 ms), on every library — MPICH's
/// ch4:ucx applies them only when the target makes progress.
fn busy_target(world: &World) -> Result<()> {
    let win = Window::allocate::<u64>(world, 1, &Info::new())?;
    win.lock_all(Assert::NONE)?;
    world.barrier()?;
    let t = Instant::now();
    if world.rank() == 0 {
        while t.elapsed() < Duration::from_millis(400) {
            std::hint::spin_loop();
        }
    } else {
        let mut during = 0;
        for _ in 0..1000 {
            win.fetch_and_op(1u64, Rank::new(0), 0, rma_win::Op::Sum)?;
            win.flush(Rank::new(0))?;
            if t.elapsed() < Duration::from_millis(300) {
                during += 1;
            }
        }
        println!("worker: {during} calls completed while the target computed");
        if during < 20 {
            return Err(rma_win::Error::arg(format!(
                "only {during} fetch_and_op calls completed while the target computed"
            )));
        }
    }
    win.unlock_all()?;
    world.barrier()?;
    Ok(())
}

type Case = fn(&World) -> Result<()>;

/// Name, program, whether the job must end cleanly, the ranks' environment.
type CaseEntry = (
    &'static str,
    Case,
    bool,
    &'static [(&'static str, &'static str)],
);

const CASES: &[CaseEntry] = &[
    ("window_then_barrier", window_then_barrier, false, &[]),
    ("lock_then_fence", lock_then_fence, false, &[]),
    ("no_window", no_window, false, &[]),
    ("leaver_holds_lock", leaver_holds_lock, false, &[]),
    ("leaver_never_posts", leaver_never_posts, false, &[]),
    ("fence_against_barrier", fence_against_barrier, false, &[]),
    ("clean_drops", clean_drops, true, &[]),
    // the same with every window checked for conflicts: a checked window's logs go
    // in the same order on a rank that frees it and on one that only drops it
    (
        "clean_drops_checked",
        clean_drops,
        true,
        &[("RMA_CHECK", "conflicts")],
    ),
    ("complete_then_drop", complete_then_drop, true, &[]),
    (
        "busy_target",
        busy_target,
        true,
        &[("RMA_MPI_PROGRESS", "thread")],
    ),
    ("busy_target_no_thread", busy_target, false, &[]),
];

/// The MPI program: runs the case, prints each rank's result, exits 1 on an error.
fn worker(name: &str) -> i32 {
    let case = CASES.iter().find(|c| c.0 == name).expect("known case").1;
    let results = match rma_win::launch(RANKS, |world| case(&world)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("worker: could not start: {e}");
            return 2;
        }
    };
    let mut code = 0;
    for r in results {
        match r {
            Ok(()) => println!("worker: ok"),
            Err(e) => {
                // one write per line: the other rank's lines must not cut into it
                let mut line = format!("worker: error ({}): {e}\n", e.class());
                if e.class() == ErrorClass::ProcFailed {
                    line.push_str("worker: class PROC_FAILED\n");
                }
                let _ = std::io::stderr().write_all(line.as_bytes());
                code = 1;
            }
        }
    }
    code
}

fn run(config: Launch, &(case, _, clean, vars): &CaseEntry) -> std::result::Result<(), Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut env = vec![(ENV_CASE.to_owned(), case.to_owned())];
    env.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let t = Instant::now();
    let (status, output) = config
        .run(RANKS, &exe, &env, KILL_AFTER)
        .map_err(|e| format!("{}: {e}", config.launcher))?;
    let took = t.elapsed();
    let Some(status) = status else {
        return Err(format!("{case}: hung, killed after {KILL_AFTER:?}:\n{output}").into());
    };
    if clean {
        return if status.success() && output.matches("worker: ok").count() == RANKS {
            if let Some(line) = output.lines().find(|l| l.contains("while the target")) {
                eprintln!("{}/{case}: {line}", config.name);
            }
            Ok(())
        } else {
            Err(format!("{case}: expected a clean exit, got {status}:\n{output}").into())
        };
    }
    if case == "leaver_never_posts" {
        let named = format!("rank {LEAVER} failed: it dropped the window without freeing it");
        return if status.code() == Some(1) && output.contains(&named) && took <= PROMPT {
            Ok(())
        } else {
            Err(
                format!("{case}: expected exit 1 and \"{named}\" ({status}, {took:?}):\n{output}")
                    .into(),
            )
        };
    }
    if case == "busy_target_no_thread" {
        // the origin prints its count before it returns (its error line may be cut
        // short by the abort)
        let during = output.lines().find_map(|l| {
            l.strip_prefix("worker: ")?
                .strip_suffix(" calls completed while the target computed")?
                .parse::<u32>()
                .ok()
        });
        return if !status.success() && during.is_some_and(|n| n < 20) {
            Ok(())
        } else {
            Err(format!(
                "{case}: expected the calls to wait for the target without the progress \
                 thread ({status}):\n{output}"
            )
            .into())
        };
    }
    let mut wrong = Vec::new();
    // MPI_Abort's code (70), or a rank's own exit code when the launcher sees that
    // first (MPICH's, now and then: the abort runs inside the process's exit)
    if status.success() {
        wrong.push("the job exited 0".to_owned());
    }
    if took > PROMPT {
        wrong.push(format!("the job took {took:?}"));
    }
    // whichever rank exits first prints the mismatch (the launcher may kill the other
    // before it prints): it names the leaver and what it entered
    let says = "ends the MPI job (MPI_Abort, code 70): ";
    let named = format!("rank {LEAVER} entered ");
    let printed = output.lines().any(|l| {
        let what = if case == "fence_against_barrier" {
            l.contains("entered a barrier") && l.contains("entered a fence on MPI window")
        } else {
            l.contains("dropped")
        };
        l.contains(says) && l.contains(&named) && l.contains("different collective calls") && what
    });
    if !printed {
        wrong.push(format!("no rank printed \"{says}...{named}...\""));
    }
    if wrong.is_empty() {
        eprintln!("{}/{case}: ended in {took:?} with {status}", config.name);
        Ok(())
    } else {
        Err(format!("{case}: {} ({status}):\n{output}", wrong.join("; ")).into())
    }
}

fn main() {
    if let Ok(case) = std::env::var(ENV_CASE) {
        std::process::exit(worker(&case));
    }
    let mut args = Arguments::from_args();
    args.test_threads = Some(1); // one MPI job at a time
    let mut trials = Vec::new();
    for config in [MPICH, OPENMPI] {
        if let Err(why) = config.available() {
            eprintln!("mpi_exit: {} not run: {why}", config.name);
            continue;
        }
        for entry in CASES {
            // the control: without the thread MPICH's ch4:ucx completes no call while the
            // target computes (Open MPI's shared-memory path needs no target)
            if entry.0 == "busy_target_no_thread" && config.name != "mpich" {
                continue;
            }
            trials.push(Trial::test(
                format!("{}::{}", config.name, entry.0),
                move || run(config, entry),
            ));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
