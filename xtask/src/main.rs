//! `cargo xtask`: the one entry point for humans and CI (clap for the command line,
//! cli.rs; serde_json to read `cargo metadata` and write the bench's results).

mod bench;
mod cli;
mod clients;
mod mpich_suite;
mod msrv;
mod publish_check;
mod setup;

use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use clap::ArgAction;
use cli::Task;

/// A test group: a name and the tests it selects (a package, optionally one test
/// binary of it and a test-name prefix).
struct Group {
    name: String,
    package: &'static str,
    binary: Option<&'static str>,
    prefix: Option<String>,
    /// One test at a time (MPI jobs: each already runs several ranks on 2 cores).
    serial: bool,
}

impl Group {
    fn new(name: impl Into<String>, package: &'static str) -> Group {
        Group {
            name: name.into(),
            package,
            binary: None,
            prefix: None,
            serial: false,
        }
    }

    /// nextest arguments: the whole workspace filtered, so that every group builds
    /// with the same features and nothing is rebuilt between groups.
    fn nextest_args(&self) -> Vec<String> {
        let mut expr = format!("package({})", self.package);
        if let Some(b) = self.binary {
            expr.push_str(&format!(" & binary({b})"));
        }
        if let Some(p) = &self.prefix {
            expr.push_str(&format!(" & test(/^{p}/)"));
        }
        let mut v = vec!["--workspace".into(), "-E".into(), expr];
        if self.serial {
            v.extend(["-j".into(), "1".into()]);
        }
        v
    }

    /// cargo test arguments (no filter expressions there: a package, a binary, a name
    /// filter).
    fn cargo_test_args(&self) -> Vec<String> {
        let mut v = vec!["-p".into(), self.package.into()];
        if let Some(b) = self.binary {
            v.extend(["--test".into(), b.into()]);
        }
        if let Some(p) = &self.prefix {
            v.extend(["--".into(), p.clone()]);
            if self.serial {
                v.extend(["--test-threads".into(), "1".into()]);
            }
        }
        v
    }
}

/// The workspace members that are not published (`publish = false`): skipped by
/// `publish-check` (cargo itself leaves them out) and left out of the library crates
/// `msrv` checks; every other member is a library crate.
const UNPUBLISHED: &[&str] = &["rma-examples", "rma-conformance", "rma-benches", "xtask"];

/// The transports the conformance suite is stamped out for (rma-win's `TRANSPORTS`).
const TRANSPORTS: &[&str] = &["atomic", "queued"];
/// The launch modes.
const MODES: &[&str] = &["threads", "processes"];
/// The MPI configurations the conformance suite runs in (rma-mpi's `launcher`).
const MPI_CONFIGS: &[&str] = &[
    "mpich",
    "mpich_nolocal",
    "openmpi",
    "openmpi_noshm",
    "openmpi_single",
];
/// The examples, each run plainly (threads) and under rmarun.
const EXAMPLES: &[&str] = &[
    "sum",
    "sum_batched",
    "mapvals",
    "mapvals_get",
    "counter",
    "shared_stencil",
    "linked_list_dynamic",
    "argmax",
    "linked_list",
    "ticket_lock",
    "node_shared",
];

/// MPI launchers the examples run under, with their arguments up to the rank count
/// (a job killed after 120 s), and the compiler wrapper of their library. Open MPI runs osc/sm: the examples allocate their windows,
/// and it is the component of Open MPI 4.1 with no defect rma must refuse (osc/rdma
/// cannot do the linked list's 8-byte compare_and_swap).
const MPI_LAUNCHERS: &[(&str, &[&str], &str)] = &[
    ("mpiexec.mpich", &["-n"], "mpicc.mpich"),
    (
        "mpirun.openmpi",
        &[
            "--allow-run-as-root",
            "--oversubscribe",
            "--timeout",
            "120",
            "--mca",
            "osc",
            "sm",
            "-np",
        ],
        "mpicc.openmpi",
    ),
];
/// Examples a launcher's demo run cannot serve, and why (printed, not counted).
const MPI_SKIPS: &[(&str, &str, &str)] = &[(
    "mpirun.openmpi",
    "linked_list_dynamic",
    "Open MPI's osc/sm (the demo's) has no dynamic windows (MPI_Win_create_dynamic fails \
     with MPI_ERR_WIN), osc/rdma crashes on the list's 8-byte compare_and_swap, and \
     osc/ucx aborts a rank at exit; the conformance suite runs dynamic windows under \
     Open MPI's defaults",
)];
/// Problem size of the examples under MPI: calls cost microseconds there (MPICH's
/// targets must be scheduled to apply atomics, 4 ranks on 2 cores), not nanoseconds.
const MPI_EXAMPLE_N: &str = "500";

/// Whether an MPI C compiler wrapper is installed: rma-mpi can then build its shim,
/// and every build here turns on the `mpi` feature.
fn have_mpi() -> bool {
    ["mpicc.mpich", "mpicc.openmpi", "mpicc"]
        .iter()
        .any(|c| setup::which(c).is_some())
}

/// The cargo feature arguments of every build and test run.
/// (`async` always: its futures are tested; `mpi` where an MPI library is installed.)
fn feature_args() -> Vec<String> {
    if have_mpi() {
        vec!["--features".into(), "rma-win/async,rma-win/mpi".into()]
    } else {
        vec!["--features".into(), "rma-win/async".into()]
    }
}

fn groups() -> Vec<Group> {
    let mut v = vec![
        Group::new("rma-core", "rma-core"),
        Group::new("rma-datatype", "rma-datatype"),
        Group::new("rma-ops", "rma-ops"),
        Group::new("rma-shm", "rma-shm"),
        Group::new("rma-backends", "rma-backends"),
        Group::new("rma-mpi-sys", "rma-mpi-sys"),
        Group::new("rma-examples (flags)", "rma-examples"),
        Group {
            binary: Some("cli"),
            ..Group::new("bench binaries' command lines", "rma-benches")
        },
        Group::new("rma-win", "rma-win"),
        Group::new("rma-capi (C programs through mpi.h and rmacc)", "rma-capi"),
        Group::new("xtask (bench summarizer)", "xtask"),
    ];
    v.push(Group {
        binary: Some("seam"),
        ..Group::new("backend seam (recording backend's log)", "rma-conformance")
    });
    // rma-win over each shipped backend and launcher, as a program sees it
    for (binary, what) in [
        (
            "resources",
            "segments, threads and fds after every exit path (rmarun)",
        ),
        (
            "soundness",
            "forget, leak, panic and early return of windows",
        ),
        (
            "transport_env",
            "RMA_TRANSPORT as a default (rmarun, mpiexec)",
        ),
        ("mpi_exit", "an error on one rank under mpiexec"),
        (
            "mpi_interop",
            "worlds over a program's MPI communicators, node worlds (mpiexec)",
        ),
        (
            "front_page",
            "README's program in the guide, rmarun as a user's cargo runner",
        ),
        (
            "misuse",
            "mismatched collectives, dropped windows (threads, rmarun)",
        ),
    ] {
        v.push(Group {
            binary: Some(binary),
            ..Group::new(format!("{binary}: {what}"), "rma-conformance")
        });
    }
    v.push(Group {
        binary: Some("faults"),
        ..Group::new("dead peers (processes, SIGKILL)", "rma-conformance")
    });
    let mpi = have_mpi();
    if mpi {
        // the MPI transport's own checks, under every installed MPI
        v.push(Group {
            serial: true,
            ..Group::new("rma-mpi (system MPI, mpiexec)", "rma-mpi")
        });
    }
    for t in TRANSPORTS {
        for m in MODES {
            v.push(Group {
                binary: Some("conformance"),
                prefix: Some(format!("{t}::{m}::")),
                ..Group::new(format!("conformance {t} x {m}"), "rma-conformance")
            });
        }
    }
    // the whole suite on a backend plugged in from outside (rma-conformance's
    // recording backend): the proof that rma-win names no backend
    v.push(Group {
        binary: Some("conformance"),
        prefix: Some("recording::threads::".into()),
        ..Group::new("conformance recording x threads", "rma-conformance")
    });
    if mpi {
        for c in MPI_CONFIGS {
            v.push(Group {
                binary: Some("conformance"),
                prefix: Some(format!("mpi::{c}::")),
                serial: true,
                ..Group::new(format!("conformance mpi x {c}"), "rma-conformance")
            });
        }
    }
    v
}

#[derive(Default, Clone, Copy)]
struct Counts {
    passed: u64,
    failed: u64,
}

/// Reads nextest's closing line: "Summary [ 1.2s] 40 tests run: 40 passed, 2 skipped"
/// (skipped tests are the ones a group's filter leaves out).
fn parse_nextest(out: &str) -> Option<Counts> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("Summary"))?;
    let mut c = Counts::default();
    for part in line.split([':', ',']) {
        let words: Vec<&str> = part.split_whitespace().collect();
        for w in words.windows(2) {
            let n: u64 = match w[0].parse() {
                Ok(n) => n,
                Err(_) => continue,
            };
            match w[1] {
                "passed" => c.passed = n,
                "failed" => c.failed += n,
                "timed" => c.failed += n,
                _ => {}
            }
        }
    }
    Some(c)
}

/// Reads cargo test's "test result: ok. 3 passed; 0 failed; 0 ignored" lines.
fn parse_cargo_test(out: &str) -> Counts {
    let mut c = Counts::default();
    for line in out.lines().filter(|l| l.starts_with("test result:")) {
        for part in line.split([';', '.']) {
            let words: Vec<&str> = part.split_whitespace().collect();
            if words.len() >= 2 {
                if let Ok(n) = words[words.len() - 2].parse::<u64>() {
                    match words[words.len() - 1] {
                        "passed" => c.passed += n,
                        "failed" => c.failed += n,
                        _ => {}
                    }
                }
            }
        }
    }
    c
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn run_captured(mut cmd: Command) -> (bool, String) {
    let out = cmd.stdin(Stdio::null()).output();
    match out {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            (o.status.success(), text)
        }
        Err(e) => (false, format!("could not start {cmd:?}: {e}")),
    }
}

fn have_nextest() -> bool {
    cargo()
        .args(["nextest", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// What `test-all` was asked for.
#[derive(clap::Args, Debug, Default)]
#[command(args_override_self = true)]
pub(crate) struct TestAll {
    /// Leave out the doctests, the loom model, the msrv checks and the examples
    #[arg(long)]
    quick: bool,
    /// Also the long soak (RMA_SOAK_SECS=600 per transport x mode) and long fuzzing runs
    /// (RMA_FUZZ_CASES=5000000)
    #[arg(long)]
    long: bool,
    /// Only the groups whose name contains one of the texts (e.g. mpich or 'atomic x,examples')
    #[arg(long, value_name = "TEXT,...", value_delimiter = ',', action = ArgAction::Set)]
    only: Vec<String>,
    /// Leave the msrv group out (`ci` runs it before test-all).
    #[arg(skip)]
    skip_msrv: bool,
}

impl TestAll {
    /// Whether the group `group` runs (`--only` names it, or there is no `--only`).
    fn wants(&self, group: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| group.contains(o.as_str()))
    }
}

/// The command line as given (`cargo xtask bench --rounds 5`), for the results files.
pub(crate) fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("cargo xtask {}", args.join(" "))
        .trim_end()
        .to_owned()
}

/// The last `n` lines of `out`, to stderr, under a heading naming `what`.
pub(crate) fn show_tail(what: &str, out: &str, n: usize) {
    let lines: Vec<&str> = out.lines().collect();
    eprintln!("---- {what} (last lines) ----");
    for l in &lines[lines.len().saturating_sub(n)..] {
        eprintln!("{l}");
    }
}

/// One group's summary line, as test-all prints it.
fn summary_line(name: &str, passed: u64, failed: u64, secs: f64, good: bool) -> String {
    format!(
        "{name:<32} {passed:>5} passed {failed:>3} failed  {secs:>7.1}s  {}",
        if good { "ok" } else { "FAILED" }
    )
}

/// The groups' lines and totals of one test-all run.
#[derive(Default)]
struct Tally {
    lines: Vec<String>,
    total: Counts,
    ok: bool,
}

impl Tally {
    /// Records (and prints) one group: good when it ran, failed nothing and passed
    /// something; a group that failed without a failed test counts as one failure.
    fn group(&mut self, name: &str, counts: Counts, ran: bool, secs: f64) -> bool {
        let good = ran && counts.failed == 0 && counts.passed > 0;
        let line = summary_line(name, counts.passed, counts.failed, secs, good);
        println!("{line}");
        self.lines.push(line);
        self.total.passed += counts.passed;
        self.total.failed += counts.failed + u64::from(!good && counts.failed == 0);
        self.ok &= good;
        good
    }
}

const LOOM_GROUP: &str = "loom model of the ring";
const EXAMPLES_GROUP: &str = "examples (threads, rmarun, mpi)";
const MSRV_GROUP: &str = "msrv";

fn test_all(opts: &TestAll) -> bool {
    let (quick, long) = (opts.quick, opts.long);
    if long {
        // seen by every test process this run starts
        std::env::set_var("RMA_SOAK_SECS", "600");
        std::env::set_var("RMA_FUZZ_CASES", "5000000");
    }
    let nextest = have_nextest();
    if !nextest {
        eprintln!("xtask: cargo-nextest not found, falling back to cargo test (install it: cargo install cargo-nextest)");
    }
    let mut tally = Tally {
        ok: true,
        ..Tally::default()
    };
    let mut all_groups = groups();
    if !quick {
        all_groups.push(Group::new("doctests", ""));
    }
    all_groups.retain(|g| opts.wants(&g.name));
    // build once up front (release: the concurrency tests need real speed)
    let features = feature_args();
    let mut build = cargo();
    build
        .args([
            "build",
            "--release",
            "--workspace",
            "--all-targets",
            "--quiet",
        ])
        .args(&features);
    if !status(build) {
        println!("test-all: 0 passed, 1 failed (the build failed)");
        return false;
    }
    for g in all_groups {
        let start = Instant::now();
        let mut cmd = cargo();
        let doc = g.name == "doctests";
        if doc {
            cmd.args(["test", "--release", "--workspace", "--doc"])
                .args(&features);
        } else if nextest {
            cmd.args([
                "nextest",
                "run",
                "--release",
                "--no-fail-fast",
                "--cargo-quiet",
            ])
            .args(&features)
            .args(g.nextest_args());
        } else {
            cmd.args(["test", "--release", "--no-fail-fast"])
                .args(&features)
                .args(g.cargo_test_args());
        }
        let (success, out) = run_captured(cmd);
        let counts = if doc || !nextest {
            parse_cargo_test(&out)
        } else {
            parse_nextest(&out).unwrap_or_default()
        };
        let secs = start.elapsed().as_secs_f64();
        if !tally.group(&g.name, counts, success, secs) {
            show_tail(&format!("{} output", g.name), &out, 80);
        }
    }
    if !quick && opts.wants(LOOM_GROUP) {
        // the ring protocol, model-checked with loom (its own build: --cfg loom)
        let start = Instant::now();
        let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
        let mut cmd = cargo();
        cmd.args(["test", "--release", "-p", "rma-shm", "--test", "loom_ring"])
            .env("RUSTFLAGS", "--cfg loom")
            .env("CARGO_TARGET_DIR", format!("{target}/loom"));
        let (success, out) = run_captured(cmd);
        let counts = parse_cargo_test(&out);
        let secs = start.elapsed().as_secs_f64();
        if !tally.group(LOOM_GROUP, counts, success, secs) {
            eprintln!("{out}");
        }
    }
    if !quick && !opts.skip_msrv && opts.wants(MSRV_GROUP) {
        // the declared rust-version: dependencies, std APIs, the real build when the
        // toolchain is installed; each check that ran is one test
        let start = Instant::now();
        let counts = msrv::run();
        tally.group(MSRV_GROUP, counts, true, start.elapsed().as_secs_f64());
    }
    if !quick && opts.wants(EXAMPLES_GROUP) {
        let start = Instant::now();
        let (passed, failed) = run_examples(&[]);
        let secs = start.elapsed().as_secs_f64();
        tally.group(EXAMPLES_GROUP, Counts { passed, failed }, true, secs);
    }
    println!("---");
    for l in &tally.lines {
        println!("{l}");
    }
    let total = &tally.total;
    println!("test-all: {} passed, {} failed", total.passed, total.failed);
    tally.ok
}

fn status(mut cmd: Command) -> bool {
    eprintln!("xtask: running {cmd:?}");
    cmd.status().map(|s| s.success()).unwrap_or(false)
}

/// Runs every example plainly (ranks as threads) and under `rmarun -n 4`, for every
/// transport; returns (passed, failed). Extra arguments go to every example.
fn run_examples(extra: &[String]) -> (u64, u64) {
    let mut build = cargo();
    build
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "rma-examples",
            "--examples",
            "-p",
            "rma-shm",
            "--bin",
            "rmarun",
        ])
        .args(feature_args());
    if !status(build) {
        return (0, 1);
    }
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let rmarun = format!("{target}/release/rmarun");
    let (mut passed, mut failed) = (0, 0);
    let mut count = |ok: bool, out: String, what: String| {
        print!("{out}");
        if ok {
            passed += 1;
        } else {
            failed += 1;
            println!("example {what} FAILED");
        }
    };
    for t in TRANSPORTS {
        for ex in EXAMPLES {
            let exe = format!("{target}/release/examples/{ex}");
            for launcher in [None, Some(&rmarun)] {
                let mut cmd = match launcher {
                    None => Command::new(&exe),
                    Some(r) => {
                        let mut c = Command::new(r);
                        c.args(["-n", "4", "--timeout", "120", &exe]);
                        c
                    }
                };
                cmd.args(["--transport", t]).args(extra);
                let (ok, out) = run_captured(cmd);
                let how = if launcher.is_some() {
                    "rmarun -n 4"
                } else {
                    "threads"
                };
                count(ok, out, format!("{ex} ({how}, {t})"));
            }
        }
    }
    // the same binaries under each installed MPI launcher: the mpi transport
    if have_mpi() {
        for (launcher, args, _) in MPI_LAUNCHERS {
            if setup::which(launcher).is_none() {
                println!("xtask: {launcher} is not installed; its example runs are skipped");
                continue;
            }
            for ex in EXAMPLES {
                if let Some((_, _, why)) =
                    MPI_SKIPS.iter().find(|(l, e, _)| l == launcher && e == ex)
                {
                    println!("xtask: {ex} under {launcher} is skipped: {why}");
                    continue;
                }
                let mut cmd = Command::new(launcher);
                cmd.args(*args)
                    .arg("4")
                    .env("MPIEXEC_TIMEOUT", "120") // MPICH's hydra: kill the job after it
                    .arg(format!("{target}/release/examples/{ex}"))
                    .args(["--n", MPI_EXAMPLE_N])
                    .args(extra);
                let (ok, out) = run_captured(cmd);
                count(ok, out, format!("{ex} ({launcher} -n 4, mpi)"));
            }
        }
    }
    if have_mpi() {
        for (ok, out, what) in rsmpi_runs(&target) {
            count(ok, out, what);
        }
    }
    (passed, failed)
}

/// The rsmpi example (`rsmpi_interop`): rsmpi links one MPI library at build time, so
/// it is built once per installed library, each in a target directory of its own
/// (`MPICC` picks the library), and run under that library's launcher: on 4 ranks as
/// two nodes of two (`RMA_NODE_RANKS=2`), and on 3 ranks as one node. Each run is
/// (passed, output, what). A machine without libclang (rsmpi's bindgen needs it;
/// `.ci/run` installs it) skips them with a note.
fn rsmpi_runs(target: &str) -> Vec<(bool, String, String)> {
    let mut runs = Vec::new();
    for (launcher, args, mpicc) in MPI_LAUNCHERS {
        let library = mpicc.trim_start_matches("mpicc.");
        if setup::which(mpicc).is_none() || setup::which(launcher).is_none() {
            println!("xtask: {mpicc} or {launcher} is not installed; rsmpi_interop on {library} is skipped");
            continue;
        }
        let dir = format!("{target}/rsmpi-{library}");
        let mut build = cargo();
        build
            .args(["build", "--release", "--quiet", "-p", "rma-examples"])
            .args(["--features", "rsmpi", "--example", "rsmpi_interop"])
            .env("MPICC", mpicc)
            .env("CARGO_TARGET_DIR", &dir);
        let (built, out) = run_captured(build);
        if !built {
            if out.contains("libclang") {
                println!(
                    "xtask: rsmpi_interop on {library} is skipped: rsmpi's bindings need \
                     libclang (apt-get install libclang-dev)"
                );
            } else {
                runs.push((false, out, format!("rsmpi_interop build ({library})")));
            }
            continue;
        }
        for (ranks, hook) in [("4", "2"), ("3", "")] {
            let mut cmd = Command::new(launcher);
            cmd.args(*args)
                .arg(ranks)
                .env("MPIEXEC_TIMEOUT", "120")
                .env("RMA_NODE_RANKS", hook)
                .arg(format!("{dir}/release/examples/rsmpi_interop"));
            let (ok, out) = run_captured(cmd);
            let nodes = if hook.is_empty() {
                "one node"
            } else {
                "nodes of 2"
            };
            runs.push((
                ok,
                out,
                format!("rsmpi_interop ({launcher} -n {ranks}, {nodes})"),
            ));
        }
    }
    runs
}

fn demo(extra: &[String]) -> bool {
    let (passed, failed) = run_examples(extra);
    println!("demo: {passed} passed, {failed} failed");
    failed == 0
}

/// The host's target triple (ThreadSanitizer builds name it, so that build scripts and
/// proc macros are not instrumented).
fn host_triple() -> Option<String> {
    let out = Command::new("rustc").arg("-vV").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
}

/// Reports of ThreadSanitizer in `out` that involve rma's own code: one of the first
/// frames of an access lies in the workspace. Reports inside `std::sync::Once` /
/// `OnceLock` and the standard library's channels are left out: the standard library is
/// not rebuilt with the sanitizer, so its own synchronization is invisible to it.
fn tsan_reports(out: &str) -> Vec<String> {
    out.split("WARNING: ThreadSanitizer: data race")
        .skip(1)
        .map(|r| r.split("SUMMARY:").next().unwrap_or(r))
        .filter(|r| !r.contains("OnceLock") && !r.contains("sync/once") && !r.contains("mpmc"))
        .filter(|r| {
            r.lines()
                .filter(|l| l.trim_start().starts_with('#'))
                .filter(|l| {
                    let frame: u32 = l.trim_start()[1..]
                        .split_whitespace()
                        .next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(99);
                    frame < 4
                })
                .any(|l| l.contains("/rma-") || l.contains("rma_"))
        })
        .map(|r| r.lines().take(12).collect::<Vec<_>>().join("\n"))
        .collect()
}

fn tsan() -> bool {
    // the rustup proxy (`$CARGO` is the stable toolchain's own cargo, which has no `+`)
    let rustup_cargo = || Command::new("cargo");
    let nightly = rustup_cargo()
        .args(["+nightly", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let Some(host) = host_triple() else {
        eprintln!("tsan: cannot read the host triple from rustc -vV");
        return false;
    };
    if !nightly {
        eprintln!("tsan: needs a nightly toolchain (rustup toolchain install nightly); not run");
        return false;
    }
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    let flags = "-Zsanitizer=thread -Cunsafe-allow-abi-mismatch=sanitizer";
    let mut build = rustup_cargo();
    build
        .env_remove("RUSTC")
        .env_remove("CARGO")
        .args([
            "+nightly",
            "test",
            "-p",
            "rma-win",
            "--test",
            "soundness",
            "--no-run",
        ])
        .args(["--target", &host, "--target-dir", &format!("{target}/tsan")])
        .env("RUSTFLAGS", flags);
    let (ok, out) = run_captured(build);
    let exe = out.lines().find_map(|l| {
        l.trim()
            .strip_prefix("Executable tests/soundness.rs (")
            .and_then(|r| r.strip_suffix(')'))
            .map(str::to_string)
    });
    let Some(exe) = exe.filter(|_| ok) else {
        eprintln!("{out}\ntsan: the sanitizer build failed");
        return false;
    };
    let mut run = Command::new(&exe);
    run.arg("race::")
        .env("TSAN_OPTIONS", "halt_on_error=0 report_signal_unsafe=0");
    let (passed, out) = run_captured(run);
    let reports = tsan_reports(&out);
    for r in &reports {
        eprintln!("---- data race in rma's code ----\n{r}");
    }
    let counts = parse_cargo_test(&out);
    println!(
        "tsan: {} passed, {} failed; {} data race report(s) in rma's code",
        counts.passed,
        counts.failed,
        reports.len()
    );
    passed && counts.passed > 0 && reports.is_empty()
}

/// `cargo xtask ci`: the checks before a merge, in order, stopping at the first that
/// fails.
fn ci() -> bool {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    // the API docs build without a warning (broken links included)
    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings");
    status(fmt)
        && status(clippy)
        && status(doc)
        && publish_check::main(&publish_check::Options::default())
        && msrv::main()
        && test_all(&TestAll {
            skip_msrv: true,
            ..TestAll::default()
        })
}

fn main() -> ExitCode {
    let ok = match cli::parse() {
        Task::TestAll(opts) => test_all(&opts),
        Task::Ci => ci(),
        Task::Msrv => msrv::main(),
        Task::Bench(args) => bench::main(&args),
        Task::Demo { args } => demo(&args),
        Task::Tsan => tsan(),
        Task::Setup => setup::main(),
        Task::MpichSuite(opts) => mpich_suite::main(opts),
        Task::Clients(opts) => clients::main(opts),
        Task::PublishCheck(opts) => publish_check::main(&opts),
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
