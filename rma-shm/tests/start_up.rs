//! Starting a world against interference (issue 13): names another user could take
//! first, processes that try to take a rank they were not started for, and segments
//! left behind by a launcher killed together with its reaper.

#![cfg(not(loom))]

use rma_core::ErrorClass;
use rma_shm::launch::{spawn, LaunchOptions};
use rma_shm::{run_threads, MemoryOptions, ShmWorld, WindowMemory, ENV_KEY};
use std::process::{Command, Stdio};
use std::time::Duration;

fn exists(name: &str) -> bool {
    std::path::Path::new("/dev/shm").join(name).exists()
}

/// Someone who knows a world's name (it is listed in /dev/shm) takes every name of its
/// windows' segments that follows from the world's name, the window's number and the
/// rank (`{world}-w{id}-r{rank}`, the old scheme, and a few variants); the windows
/// are created anyway, and the squatter's files are left alone.
#[test]
fn squatted_predictable_names_do_not_stop_windows() {
    let out = run_threads(3, |w: ShmWorld| -> rma_core::Result<Vec<String>> {
        let mut squatted = vec![];
        if w.rank() == 0 {
            for id in 0..4 {
                squatted.push(format!("{}-w{id}", w.name()));
                for r in 0..3 {
                    squatted.push(format!("{}-w{id}-r{r}", w.name()));
                    squatted.push(format!("{}-{id}-{r}", w.name()));
                }
            }
            for name in &squatted {
                std::fs::write(format!("/dev/shm/{name}"), b"squatter").unwrap();
            }
        }
        w.barrier()?;
        for round in 0..4u8 {
            let mem = WindowMemory::allocate(
                &w,
                64,
                8,
                MemoryOptions {
                    queues: round % 2 == 1,
                },
            )?;
            mem.write_local(0, &[round + w.rank() as u8; 8])?;
            let mut back = [0u8; 8];
            mem.read_local(0, &mut back)?;
            assert_eq!(back, [round + w.rank() as u8; 8]);
            w.barrier()?;
        }
        Ok(squatted)
    })
    .unwrap();
    let mut squatted = vec![];
    for (r, res) in out.into_iter().enumerate() {
        match res {
            Ok(names) => squatted.extend(names),
            Err(e) => panic!("rank {r}: {e}"),
        }
    }
    assert_eq!(squatted.len(), 28);
    for name in &squatted {
        let path = format!("/dev/shm/{name}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"squatter",
            "{name} untouched"
        );
        std::fs::remove_file(&path).unwrap();
    }
}

const ROLE: &str = "RMA_TEST_START_UP_ROLE";
/// An impostor's exit codes.
const JOINED: i32 = 0;
const REFUSED_ARG: i32 = 10;
const REFUSED_OTHER: i32 = 11;

/// Joins the world named by the environment; says how it went by the exit code.
fn impostor_main() -> ! {
    let code = match ShmWorld::from_env() {
        Ok(Some(w)) => {
            drop(w);
            JOINED
        }
        Ok(None) => REFUSED_OTHER,
        Err(e) => {
            eprintln!("impostor refused: {e}");
            if e.class() == ErrorClass::Arg {
                REFUSED_ARG
            } else {
                REFUSED_OTHER
            }
        }
    };
    std::process::exit(code)
}

/// A rank of the world: before it joins, it starts processes with the world's
/// variables (`RMA_WORLD`, `RMA_RANK`, `RMA_SIZE`) but not its key, which try to take
/// its rank; they must be refused, and the rank must then join.
fn rank_main() -> ! {
    let result = (|| -> Result<(), String> {
        // (a launcher that gives no key: the impostors' keys are wrong all the same)
        let key = std::env::var(ENV_KEY).unwrap_or_else(|_| "0".repeat(32));
        let mut wrong = key.clone().into_bytes();
        wrong[7] = if wrong[7] == b'0' { b'1' } else { b'0' };
        let wrong = String::from_utf8(wrong).unwrap_or_default();
        let keys: [Option<&str>; 4] = [None, Some(&wrong), Some("xyz"), Some("")];
        for k in keys {
            let mut cmd = Command::new(std::env::current_exe().map_err(|e| e.to_string())?);
            cmd.args(std::env::args_os().skip(1))
                .env(ROLE, "impostor")
                .env_remove(ENV_KEY)
                .stdin(Stdio::null());
            if let Some(k) = k {
                cmd.env(ENV_KEY, k);
            }
            let status = cmd.status().map_err(|e| e.to_string())?;
            if status.code() != Some(REFUSED_ARG) {
                return Err(format!("an impostor with key {k:?} ended with {status:?}"));
            }
        }
        let w = ShmWorld::from_env()
            .map_err(|e| format!("the rank itself was refused: {e}"))?
            .ok_or("no world")?;
        w.barrier().map_err(|e| e.to_string())?;
        Ok(())
    })();
    match result {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("rank: {e}");
            std::process::exit(1)
        }
    }
}

#[test]
fn a_process_without_the_world_key_takes_no_rank() {
    match std::env::var(ROLE).as_deref() {
        Ok("rank") => rank_main(),
        Ok("impostor") => impostor_main(),
        _ => {}
    }
    let mut opts = LaunchOptions::new(2, std::env::current_exe().unwrap());
    opts.args = vec![
        "--exact".into(),
        "a_process_without_the_world_key_takes_no_rank".into(),
        "--nocapture".into(),
    ];
    opts.env = vec![(ROLE.into(), "rank".into())];
    opts.timeout = Some(Duration::from_secs(60));
    let report = spawn(&opts).unwrap();
    assert!(report.success(), "{report:?}");
}

/// A pid that was a process a moment ago.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// A launcher and its reaper killed together leave their world's segments; the next
/// world this user starts (as threads or by the launcher) removes them, and nothing
/// whose process is alive, nothing of another shape, nothing of another user.
/// Kills the process and removes the files when the test ends, passed or not.
struct Cleanup {
    child: std::process::Child,
    names: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for name in &self.names {
            let _ = std::fs::remove_file(format!("/dev/shm/{name}"));
        }
    }
}

#[test]
fn a_world_start_removes_what_dead_launchers_left_and_nothing_else() {
    let dead = dead_pid();
    let live = Command::new("sleep").arg("30").spawn().unwrap();
    let live_pid = live.id();
    let tag = |i: u64| format!("{:016x}", 0x5eed_0000_0000_0000u64 | i);
    let me = std::process::id();
    let stale = [
        format!("rma-{dead}-{}", tag(1)),
        format!("rma-{dead}-{}-{}-w0-r1", tag(1), tag(2)),
    ];
    let kept = [
        format!("rma-{live_pid}-{}", tag(3)),
        format!("rma-{live_pid}-{}-{}-w0-r0", tag(3), tag(4)),
        format!("rma-{me}-{}", tag(5)),
        format!("rma-{dead}-notours"),
        format!("rma-{dead}-{}x", tag(6)),
    ];
    let foreign = format!("rma-{dead}-{}", tag(7));
    let _cleanup = Cleanup {
        child: live,
        names: stale
            .iter()
            .chain(&kept)
            .chain([&foreign])
            .cloned()
            .collect(),
    };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    for how in ["threads", "launcher"] {
        for name in stale.iter().chain(&kept) {
            std::fs::write(format!("/dev/shm/{name}"), b"x").unwrap();
        }
        if root {
            // another user's file, with a dead pid
            let path = format!("/dev/shm/{foreign}");
            std::fs::write(&path, b"x").unwrap();
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        }
        match how {
            "threads" => {
                run_threads(1, |_w| ()).unwrap();
            }
            _ => {
                let report = spawn(&LaunchOptions::new(1, "true")).unwrap();
                assert!(report.success(), "{report:?}");
            }
        }
        for name in &stale {
            assert!(
                !exists(name),
                "{how}: {name} of dead pid {dead} is still there"
            );
        }
        for name in &kept {
            assert!(exists(name), "{how}: {name} was removed");
        }
        if root {
            assert!(
                exists(&foreign),
                "{how}: another user's {foreign} was removed"
            );
        }
    }
}

/// The children of `pid` whose command line contains `what`.
fn children_running(pid: u32, what: &str) -> Vec<u32> {
    let mut found = vec![];
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
        // the parent's pid is the second field after the command's closing parenthesis
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        if ppid == Some(pid) && String::from_utf8_lossy(&cmdline).contains(what) {
            found.push(child);
        }
    }
    found
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "waited in vain for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The real thing: rmarun and its reaper are killed together (SIGKILL to both, as a
/// cgroup or OOM kill does) while the world starts, so nobody removes its segment;
/// the next world this user starts does.
#[test]
fn segments_of_a_launcher_killed_with_its_reaper_go_at_the_next_start() {
    // ranks that never join: the world's segment keeps its name
    let mut launcher = Command::new(env!("CARGO_BIN_EXE_rmarun"))
        .args(["-n", "2", "sleep", "30"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lpid = launcher.id();
    let prefix = format!("rma-{lpid}-");
    let segments = || -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&prefix))
            .collect()
    };
    wait_for("the world's segment", || !segments().is_empty());
    let reapers = children_running(lpid, "rma-reaper");
    let ranks = children_running(lpid, "sleep");
    assert_eq!(reapers.len(), 1, "one reaper");
    for pid in reapers.iter().chain([&lpid]) {
        // SAFETY: kill only sends a signal, to processes this test started.
        unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
    }
    let _ = launcher.wait();
    // the ranks die with the launcher
    wait_for("the ranks to die", || {
        ranks
            .iter()
            .all(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
    });
    // nobody cleaned up (unless a world another test started meanwhile swept them:
    // every world start does)
    let left = segments();
    eprintln!("left by the killed launcher and reaper: {left:?}");
    run_threads(1, |_w| ()).unwrap();
    assert_eq!(segments(), Vec::<String>::new(), "left: {left:?}");
}
