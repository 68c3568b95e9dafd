//! Resources and fault tolerance at the window level: nothing is left in /dev/shm after
//! a normal exit, a rank killed or panicking, or the launcher itself killed; window
//! allocate/free cycles leak no segment, descriptor, thread or memory; a window larger
//! than the machine is NO_MEM on every rank; only the world's own ranks can join it.
//!
//! Ranks are this test binary re-executed with `RMA_RESOURCES_ROLE` set (as in the
//! conformance suite). The trials run one at a time (`--test-threads 1` is forced) so
//! that process-wide counts are not disturbed by a neighbour; nextest runs each in a
//! process of its own anyway.

use libtest_mimic::{Arguments, Failed, Trial};
use rma_core::Result;
use rma_shm::launch::{spawn, LaunchOptions, LaunchReport};
use rma_shm::segment::Segment;
use rma_win::{Assert, ErrorClass, Info, Rank, Window, World};
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const ENV_ROLE: &str = "RMA_RESOURCES_ROLE";
const ENV_SCENARIO: &str = "RMA_RESOURCES_SCENARIO";

/// Exit codes of a `join` child.
const JOINED: i32 = 0;
const ALREADY_JOINED: i32 = 10;
const BAD_RANK: i32 = 11;
const OTHER_ERROR: i32 = 12;

type Outcome = std::result::Result<(), Failed>;

fn check(cond: bool, msg: impl FnOnce() -> String) -> Outcome {
    if cond {
        Ok(())
    } else {
        Err(msg().into())
    }
}

// ---- measurements ----------------------------------------------------------------

/// Names in /dev/shm that could belong to a world launched by process `pid` (or run
/// as threads of it).
fn segments_of(pid: u32) -> Vec<String> {
    let prefix = format!("rma-{pid}-");
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn own_segments() -> Vec<String> {
    segments_of(std::process::id())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Usage {
    segments: usize,
    fds: usize,
    threads: u64,
    rss_kib: u64,
}

fn usage() -> Usage {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Usage {
        segments: own_segments().len(),
        fds: std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count()),
        threads: field("Threads:"),
        rss_kib: field("VmRSS:"),
    }
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn process_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // the state follows the parenthesised command name
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) -> Outcome {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() > limit {
            return Err(format!("timed out waiting for {what}").into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

// ---- the rank side -----------------------------------------------------------------

fn queued() -> Info {
    Info::new().with("rma_transport", "queued")
}

/// Allocates a small window, moves data through it, frees it.
fn use_window(world: &World, info: &Info) -> Result<()> {
    let (me, n) = (world.rank(), world.size());
    let mut win = Window::allocate::<u64>(world, 8, info)?;
    win.fence(Assert::NONE)?;
    win.put(&[me as u64 + 1], Rank::new(((me + 1) % n) as u32), 0)?;
    win.fence(Assert::NONE)?;
    let got = win.local_vec::<u64>()?;
    assert_eq!(got[0], ((me + n - 1) % n) as u64 + 1);
    win.free()
}

fn rank_main(scenario: &str) -> i32 {
    let world = match World::from_env() {
        Ok(Some(w)) => w,
        Ok(None) => {
            eprintln!("not started as a rank");
            return 3;
        }
        Err(e) => {
            eprintln!("joining: {e}");
            return 3;
        }
    };
    let (me, pid) = (world.rank(), std::process::id());
    let outcome: Result<()> = (|| {
        match scenario {
            "normal" => {
                use_window(&world, &Info::new())?;
                use_window(&world, &queued())?;
                let _kept = Window::allocate::<u8>(&world, 100, &queued())?;
                world.barrier()?;
            }
            "sigkill" | "panic" => {
                let _first = Window::allocate::<u64>(&world, 64, &Info::new())?;
                if me == 1 {
                    if scenario == "panic" {
                        panic!("rank 1 panics on purpose");
                    }
                    // SAFETY: kill only sends a signal, here to this very process.
                    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                }
                // the others are in the middle of creating a window (their segments
                // exist) when they learn that rank 1 is gone
                let e = Window::allocate::<u64>(&world, 64, &queued()).unwrap_err();
                assert_eq!(e.class(), ErrorClass::ProcFailed, "{e}");
                return Err(e);
            }
            "hang" => {
                let _a = Window::allocate::<u64>(&world, 64, &Info::new())?;
                let _b = Window::allocate::<u64>(&world, 64, &queued())?;
                world.barrier()?;
                println!("ready {pid}");
                if me == 1 {
                    std::thread::sleep(Duration::from_secs(60));
                }
                // the others start a third window and wait in it for rank 1: their
                // segments of it have names until rank 1 comes
                let _c = Window::allocate::<u64>(&world, 64, &Info::new())?;
                std::thread::sleep(Duration::from_secs(60));
            }
            "nomem" => {
                let count = if me == 1 { 1usize << 50 } else { 64 };
                let e = Window::allocate::<u8>(&world, count, &Info::new()).unwrap_err();
                assert_eq!(e.class(), ErrorClass::NoMem, "rank {me}: {e}");
                if me != 1 {
                    assert!(e.to_string().contains("rank 1"), "rank {me}: {e}");
                }
                // the world is still usable, and no SIGBUS comes later
                use_window(&world, &Info::new())?;
            }
            other => panic!("unknown scenario {other}"),
        }
        Ok(())
    })();
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rank {me}: {e} ({})", e.class());
            1
        }
    }
}

/// Joins the world named by the environment, and says how it went by the exit code.
fn join_main() -> i32 {
    match World::from_env() {
        Ok(Some(w)) => {
            drop(w);
            JOINED
        }
        Ok(None) => 3,
        Err(e) => {
            eprintln!("refused: {e} ({})", e.class());
            if e.to_string().contains("already joined") {
                ALREADY_JOINED
            } else if e.class() == ErrorClass::Rank {
                BAD_RANK
            } else {
                OTHER_ERROR
            }
        }
    }
}

/// A launcher (like `rmarun`) of three `hang` ranks, to be killed by the test.
fn launcher_main() -> i32 {
    let mut opts = rank_options(3, "hang");
    opts.timeout = Some(Duration::from_secs(60));
    match spawn(&opts) {
        Ok(r) => r.success() as i32,
        Err(e) => {
            eprintln!("launcher: {e}");
            1
        }
    }
}

fn child(role: &str) -> ! {
    let scenario = std::env::var(ENV_SCENARIO).unwrap_or_default();
    let code = match role {
        "rank" => rank_main(&scenario),
        "join" => join_main(),
        "launcher" => launcher_main(),
        other => {
            eprintln!("unknown role {other}");
            3
        }
    };
    std::process::exit(code)
}

// ---- the test side -----------------------------------------------------------------

fn exe() -> std::path::PathBuf {
    std::env::current_exe().expect("the test binary's path")
}

fn rank_options(ranks: usize, scenario: &str) -> LaunchOptions {
    let mut opts = LaunchOptions::new(ranks, exe());
    opts.env = vec![
        (ENV_ROLE.into(), "rank".into()),
        (ENV_SCENARIO.into(), scenario.into()),
    ];
    opts.grace = Duration::from_secs(5);
    opts.timeout = Some(Duration::from_secs(30));
    opts
}

fn launch_leaves_nothing(
    ranks: usize,
    scenario: &str,
) -> std::result::Result<LaunchReport, Failed> {
    let before = own_segments();
    let report = spawn(&rank_options(ranks, scenario)).map_err(|e| e.to_string())?;
    let after = own_segments();
    check(after == before, || {
        format!("{scenario}: segments left in /dev/shm: {after:?} (before: {before:?})")
    })?;
    check(!report.timed_out, || format!("{scenario}: timed out"))?;
    Ok(report)
}

fn normal_exit() -> Outcome {
    let report = launch_leaves_nothing(3, "normal")?;
    check(report.success(), || format!("{report:?}"))
}

fn rank_sigkilled() -> Outcome {
    let report = launch_leaves_nothing(3, "sigkill")?;
    check(
        report
            .failures
            .iter()
            .any(|(r, what)| *r == 1 && what.contains("signal 9")),
        || format!("rank 1 should fail, by SIGKILL: {report:?}"),
    )
}

fn rank_panics() -> Outcome {
    let report = launch_leaves_nothing(3, "panic")?;
    // (the others may be seen to fail first: they notice the panicking rank as dead
    // while it is still printing its panic message)
    check(
        report
            .failures
            .iter()
            .any(|(r, what)| *r == 1 && what.contains("status 101")),
        || format!("rank 1 should fail, by a panic: {report:?}"),
    )
}

fn launcher_killed() -> Outcome {
    let mut launcher = Command::new(exe())
        .env(ENV_ROLE, "launcher")
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let lpid = launcher.id();
    let out = launcher.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let result = (|| -> Outcome {
        let mut pids = vec![];
        while pids.len() < 3 {
            let line = rx
                .recv_timeout(Duration::from_secs(20))
                .map_err(|_| "the ranks never became ready")?;
            if let Some(pid) = line.split("ready ").nth(1) {
                pids.push(pid.trim().parse::<u32>().map_err(|e| e.to_string())?);
            }
        }
        // ranks 0 and 2 have created their segments of the third window, whose names
        // stay until rank 1 (asleep) maps them
        wait_for(
            "the third window's segments",
            Duration::from_secs(20),
            || {
                let segs = segments_of(lpid);
                ["-w2-r0", "-w2-r2"]
                    .iter()
                    .all(|s| segs.iter().any(|n| n.ends_with(s)))
            },
        )?;
        let during = segments_of(lpid);
        launcher.kill().map_err(|e| e.to_string())?;
        let _ = launcher.wait();
        wait_for(
            "the ranks to die with the launcher",
            Duration::from_secs(10),
            || pids.iter().all(|&p| process_ended(p)),
        )?;
        // clean-up after a killed launcher may take a moment; it must finish
        let cleaned = wait_for("/dev/shm to be cleaned", Duration::from_secs(5), || {
            segments_of(lpid).is_empty()
        });
        check(cleaned.is_ok(), || {
            format!(
                "segments left after the launcher was killed: {:?} (while running: {during:?})",
                segments_of(lpid)
            )
        })
    })();
    let _ = launcher.kill();
    let _ = launcher.wait();
    if result.is_err() {
        // do not leave litter behind a failure
        for n in segments_of(lpid) {
            Segment::unlink_name(&n);
        }
    }
    result
}

fn huge_window_threads() -> Outcome {
    let before = own_segments();
    // every rank asks too much
    let all = rma_win::run_threads(3, |w| {
        let e = Window::allocate::<u8>(&w, 1 << 50, &Info::new()).unwrap_err();
        (e.class(), e.to_string())
    })
    .map_err(|e| e.to_string())?;
    for (r, (class, msg)) in all.iter().enumerate() {
        check(*class == ErrorClass::NoMem, || format!("rank {r}: {msg}"))?;
    }
    // only rank 2 asks too much; the others learn it from rank 2's record
    let one = rma_win::run_threads(3, |w| {
        let count = if w.rank() == 2 { 1 << 50 } else { 16 };
        let e = Window::allocate::<u64>(&w, count, &queued()).unwrap_err();
        let after = use_window(&w, &Info::new());
        (e.class(), e.to_string(), after.map_err(|e| e.to_string()))
    })
    .map_err(|e| e.to_string())?;
    for (r, (class, msg, after)) in one.iter().enumerate() {
        check(*class == ErrorClass::NoMem, || format!("rank {r}: {msg}"))?;
        check(r == 2 || msg.contains("rank 2"), || {
            format!("rank {r} should name rank 2: {msg}")
        })?;
        check(after.is_ok(), || format!("rank {r} afterwards: {after:?}"))?;
    }
    // a count whose byte size overflows is an error too, not a wrap-around
    let overflow = rma_win::run_threads(2, |w| {
        Window::allocate::<u64>(&w, usize::MAX / 4, &Info::new())
            .unwrap_err()
            .class()
    })
    .map_err(|e| e.to_string())?;
    check(overflow.iter().all(|c| *c == ErrorClass::Count), || {
        format!("{overflow:?}")
    })?;
    let after = own_segments();
    check(after == before, || format!("segments left: {after:?}"))
}

fn huge_window_processes() -> Outcome {
    let report = launch_leaves_nothing(3, "nomem")?;
    check(report.success(), || format!("{report:?}"))
}

/// Launches `ranks` `join` children with extra environment; their exit codes.
fn join_codes(ranks: usize, env: &[(&str, &str)]) -> std::result::Result<Vec<i32>, Failed> {
    let before = own_segments();
    let mut opts = LaunchOptions::new(ranks, exe());
    opts.env = vec![(ENV_ROLE.into(), "join".into())];
    opts.env
        .extend(env.iter().map(|(k, v)| ((*k).into(), (*v).into())));
    opts.grace = Duration::from_secs(5);
    opts.timeout = Some(Duration::from_secs(30));
    let report = spawn(&opts).map_err(|e| e.to_string())?;
    check(own_segments() == before, || "segments left".into())?;
    Ok(report
        .statuses
        .iter()
        .map(|s| s.code().unwrap_or(-1))
        .collect())
}

fn join_refusals() -> Outcome {
    // two processes claim rank 0 of a world of 2: exactly one joins
    let mut codes = join_codes(2, &[("RMA_RANK", "0")])?;
    codes.sort();
    check(codes == [JOINED, ALREADY_JOINED], || {
        format!("same rank twice: {codes:?}")
    })?;
    // a rank outside the world
    let codes = join_codes(2, &[("RMA_RANK", "7")])?;
    check(codes == [BAD_RANK; 2], || {
        format!("RMA_RANK=7 of 2: {codes:?}")
    })?;
    // the wrong world size, larger and smaller
    let codes = join_codes(2, &[("RMA_SIZE", "3")])?;
    check(codes == [OTHER_ERROR; 2], || {
        format!("RMA_SIZE=3 of 2: {codes:?}")
    })?;
    let codes = join_codes(3, &[("RMA_SIZE", "2")])?;
    check(codes == [OTHER_ERROR, OTHER_ERROR, BAD_RANK], || {
        format!("RMA_SIZE=2 of 3: {codes:?}")
    })?;
    // names that are not an rma world: absent, not a name rma makes, a segment that
    // is not a world
    let fake = format!("rma-{}-{:016x}", std::process::id(), 0x5ca1ab1eu64);
    let seg = Segment::create(&fake, 64 * 1024).map_err(|e| e.to_string())?;
    let lie = format!("rma-{}-{:016x}", std::process::id(), 0xfa15eu64);
    std::fs::write(format!("/dev/shm/{lie}"), vec![0xffu8; 64 * 1024])
        .map_err(|e| e.to_string())?;
    let names = [
        format!("rma-{}-{:016x}", std::process::id(), 0xab5e47u64),
        "../../etc/passwd".to_owned(),
        "/dev/shm/x".to_owned(),
        "rma-../../../etc/passwd".to_owned(),
        String::new(),
        fake.clone(),
        lie.clone(),
    ];
    let mut bad = vec![];
    for name in &names {
        for (rank, size) in [("0", "1"), ("0", "2"), ("x", "1")] {
            let out = Command::new(exe())
                .env(ENV_ROLE, "join")
                .env("RMA_WORLD", name)
                .env("RMA_RANK", rank)
                .env("RMA_SIZE", size)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| e.to_string())?;
            if out.status.code() != Some(OTHER_ERROR) {
                bad.push(format!(
                    "{name:?} rank {rank} of {size}: {:?} {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    seg.unlink();
    let _ = std::fs::remove_file(format!("/dev/shm/{lie}"));
    check(bad.is_empty(), || {
        format!("joined or wrongly refused: {bad:#?}")
    })
}

/// `cycles` window allocate/free cycles on 3 thread ranks after a warm-up; compares
/// usage after the warm-up with usage at the end (measured by rank 0 while the others
/// wait in a barrier), and the process before and after the world.
fn window_cycles(cycles: usize, info: Info, label: &str) -> Outcome {
    const WARMUP: usize = 10;
    let outside0 = usage();
    let inside = rma_win::run_threads(3, |w| -> Result<Option<(Usage, Usage)>> {
        let mut first = None;
        for i in 0..WARMUP + cycles {
            if i == WARMUP {
                // rank 0 measures alone while the others wait in the barrier
                w.barrier()?;
                first = (w.rank() == 0).then(usage);
                w.barrier()?;
            }
            if i % 10 == 0 {
                use_window(&w, &info)?;
            } else {
                let mut win = Window::allocate::<u64>(&w, 4, &info)?;
                win.free()?;
            }
        }
        w.barrier()?;
        let last = (w.rank() == 0).then(usage);
        w.barrier()?;
        Ok(first.zip(last))
    })
    .map_err(|e| e.to_string())?;
    let outside1 = usage();
    let mut pair = None;
    for (r, res) in inside.into_iter().enumerate() {
        match res {
            Ok(Some(p)) => pair = Some(p),
            Ok(None) => {}
            Err(e) => return Err(format!("rank {r}: {e}").into()),
        }
    }
    let (a, b) = pair.ok_or("rank 0 measured nothing")?;
    eprintln!(
        "{label}: {cycles} cycles: segments {} -> {}, fds {} -> {}, threads {} -> {}, VmRSS {} -> {} KiB; \
         around the world: threads {} -> {}, fds {} -> {}, segments {} -> {}",
        a.segments, b.segments, a.fds, b.fds, a.threads, b.threads, a.rss_kib, b.rss_kib,
        outside0.threads, outside1.threads, outside0.fds, outside1.fds, outside0.segments,
        outside1.segments
    );
    check(b.segments == a.segments && a.segments == 0, || {
        format!("{label}: segments {a:?} -> {b:?}: {:?}", own_segments())
    })?;
    check(b.fds == a.fds, || {
        format!("{label}: descriptors {a:?} -> {b:?}")
    })?;
    check(b.threads == a.threads, || {
        format!("{label}: threads {a:?} -> {b:?}")
    })?;
    check(b.rss_kib < a.rss_kib + 8 * 1024, || {
        format!("{label}: VmRSS {a:?} -> {b:?}")
    })?;
    check(
        outside1.threads == outside0.threads
            && outside1.fds == outside0.fds
            && outside1.segments == outside0.segments,
        || format!("{label}: around the world {outside0:?} -> {outside1:?}"),
    )
}

fn main() {
    if let Ok(role) = std::env::var(ENV_ROLE) {
        child(&role);
    }
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let trials = vec![
        Trial::test("no_leak::normal_exit", normal_exit),
        Trial::test("no_leak::rank_sigkilled_mid_creation", rank_sigkilled),
        Trial::test("no_leak::rank_panics_mid_creation", rank_panics),
        Trial::test("no_leak::launcher_sigkilled", launcher_killed),
        Trial::test("cycles::atomic_1000_windows", || {
            window_cycles(1000, Info::new(), "atomic")
        }),
        Trial::test("cycles::queued_200_windows", || {
            window_cycles(200, queued(), "queued")
        }),
        Trial::test("exhaustion::threads", huge_window_threads),
        Trial::test("exhaustion::processes", huge_window_processes),
        Trial::test("isolation::join_refusals", join_refusals),
    ];
    libtest_mimic::run(&args, trials).exit();
}
