//! `cargo xtask clients`: real third-party clients of MPI's one-sided interface,
//! fetched at run time (never kept in this repository), built unmodified with each
//! implementation's compiler wrapper and run under its launcher, side by side.
//!
//! - ARMCI-MPI (the Global Arrays runtime on MPI-3 RMA): Debian's `armci-mpi` source
//!   package (`apt-get source --download-only`, the upstream tarball only, no Debian
//!   patch), or `--armci-src` (a source tree or a git directory). `autogen.sh` when
//!   the tree has no `configure`, then per implementation an out-of-tree
//!   `configure CC=<wrapper>`, `make`, and the programs of `make check` (`make -k
//!   check TESTS=`). The tests are the `TESTS` of its `Makefile.am` and the files it
//!   includes, each run as `make check` runs it (`LOG_COMPILER`, `mpiexec -n 2`
//!   upstream), with the implementation's launcher and the same rank count; a test
//!   passes when the launcher exits 0 (for an `XFAIL_TESTS` entry: when it does not).
//! - mpi4py: its source distribution from PyPI, version and sha256 pinned here (the
//!   hash checked against PyPI's index and the download), built by its own build
//!   configuration (`MPICC=<wrapper> pip install --no-build-isolation`, which probes
//!   the MPI functions the library has and emulates or stubs the others) in a virtual
//!   environment under `target/clients/mpi4py/venv` holding its build requirements
//!   (a build is kept while mpi.h, the library's exported MPI names and the wrapper
//!   stay the same). Its window and RMA test files run with its own runner
//!   (`test/main.py -v FILE`) on 1, 2 and 3 ranks, each rank's output in a file of its
//!   own; a run passes when the launcher exits 0, and the test cases of each run are
//!   counted from unittest's summaries of every rank.
//!
//! Everything lives under `target/clients` (results.md, the sources, a build folder
//! and the logs per implementation). Every command has a time limit; past it, it is
//! killed with its process group and every process it started, and whatever it
//! leaves behind when it ends is killed too (`bench::run_reaped`).

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::bench::model::Outcome as RunOutcome;
use crate::mpich_suite::{Impl, Outcome};

/// The mpi4py source distribution run, pinned.
const MPI4PY_VERSION: &str = "4.1.2";
const MPI4PY_SHA256: &str = "56860286dc45f20e8821e93cb06669e30462348bf866f685553fa4b712d58d02";
/// mpi4py's test files about windows and RMA (`mpi4py.util.sync` is built on windows).
const MPI4PY_TESTS: &[&str] = &["test_win", "test_rma", "test_rma_nb", "test_util_sync"];
const MPI4PY_RANKS: &[u32] = &[1, 2, 3];
/// The longest wait for one test run unless `--timeout-cap` says less.
const RUN_LIMIT: u64 = 180;

/// Fetches a file from PyPI: the pinned sdist, checked against the simple index's hash
/// (and the download against the same).
const PYPI_FETCH: &str = r#"
import hashlib, json, os, sys, urllib.request
name, want, dest = sys.argv[1:4]
req = urllib.request.Request("https://pypi.org/simple/mpi4py/",
                             headers={"Accept": "application/vnd.pypi.simple.v1+json"})
index = json.load(urllib.request.urlopen(req, timeout=60))
entry = next((f for f in index["files"] if f["filename"] == name), None)
if entry is None:
    sys.exit(f"{name} is not in PyPI's index of mpi4py")
listed = entry.get("hashes", {}).get("sha256")
if listed != want:
    sys.exit(f"PyPI's index gives {name} the sha256 {listed}, not the pinned {want}")
data = urllib.request.urlopen(entry["url"], timeout=300).read()
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"{name} downloaded with sha256 {got}, not {want}")
with open(dest + ".part", "wb") as f:
    f.write(data)
os.replace(dest + ".part", dest)
print(entry["url"])
"#;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Client {
    Armci,
    Mpi4py,
}

impl Client {
    fn title(self) -> &'static str {
        match self {
            Client::Armci => "ARMCI-MPI",
            Client::Mpi4py => "mpi4py",
        }
    }
}

/// A client by its name (`--client`).
fn parse_client(name: &str) -> Result<Client, String> {
    match name {
        "armci" | "armci-mpi" => Ok(Client::Armci),
        "mpi4py" => Ok(Client::Mpi4py),
        _ => Err(format!("unknown client {name:?} (armci, mpi4py)")),
    }
}

/// `cargo xtask clients`'s options.
#[derive(clap::Args, Debug)]
#[command(args_override_self = true)]
pub(crate) struct Options {
    /// Implementations: rma, mpich, openmpi (default: rma and every MPI installed)
    #[arg(
        long = "impl",
        value_name = "NAME,...",
        value_delimiter = ',',
        value_parser = crate::mpich_suite::parse_impl
    )]
    impls: Vec<&'static Impl>,
    /// Clients: armci, mpi4py (default: both)
    #[arg(
        long = "client",
        value_name = "NAME,...",
        value_delimiter = ',',
        value_parser = parse_client
    )]
    clients: Vec<Client>,
    /// An ARMCI-MPI source tree or git directory (bare or not; its HEAD) instead of
    /// Debian's source package
    #[arg(long, value_name = "DIR")]
    armci_src: Option<PathBuf>,
    /// Never wait longer than this for one test run (default 180 s)
    #[arg(long = "timeout-cap", value_name = "SECS")]
    cap: Option<u64>,
    /// Fail (exit status 1) when rma passes fewer than N ARMCI-MPI tests
    #[arg(long = "min-pass-armci", value_name = "N")]
    min_armci: Option<usize>,
    /// Fail when rma passes fewer than N mpi4py test cases (summed over the test files and
    /// rank counts)
    #[arg(long = "min-pass-mpi4py", value_name = "N")]
    min_mpi4py: Option<usize>,
}

impl Options {
    /// The defaults of `--impl` and `--client` where they were not given.
    fn with_defaults(mut self) -> Options {
        if self.impls.is_empty() {
            self.impls = crate::mpich_suite::default_impls();
        }
        if self.clients.is_empty() {
            self.clients = vec![Client::Armci, Client::Mpi4py];
        }
        self
    }
}

/// Runs `cmd` with its output in `log`, killed with its process group after `secs`.
fn step(mut cmd: Command, log: &Path, secs: u64) -> Result<(), String> {
    // `cargo run` puts the target's deps folders first in LD_LIBRARY_PATH: a debug
    // librma_capi.so there would be loaded instead of the one rmacc linked
    cmd.env_remove("LD_LIBRARY_PATH");
    match crate::bench::run_reaped(cmd, log, Duration::from_secs(secs)) {
        RunOutcome::Ok => Ok(()),
        other => Err(format!("{} (log: {})", other.describe(), log.display())),
    }
}

/// The last `n` non-blank lines of a log.
fn tail(log: &Path, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| clip(l.trim(), 200))
        .collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(n).collect();
        c.push('…');
        c
    }
}

/// The MPI names (`MPI_Xxx`) in a line.
fn mpi_names(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("MPI_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        // not a part of a longer name (PMPI_, PyMPI_)
        let ok = i == 0 || {
            let b = rest.as_bytes()[i - 1];
            !(b.is_ascii_alphanumeric() || b == b'_')
        };
        if ok && end > 4 {
            out.push(tail[..end].to_string());
        }
        rest = &tail[end.max(4)..];
    }
    out
}

/// What a compiler's log says is missing: the functions called without a declaration
/// and the symbols undefined at link time, as `MPI_` names; and its first `error:`
/// lines.
#[derive(Debug, Default, PartialEq)]
struct BuildGaps {
    undeclared: BTreeSet<String>,
    undefined: BTreeSet<String>,
    errors: Vec<String>,
}

fn build_gaps(text: &str) -> BuildGaps {
    let mut g = BuildGaps::default();
    for line in text.lines() {
        if line.contains("implicit declaration of function") {
            g.undeclared.extend(mpi_names(line).into_iter().take(1));
        } else if line.contains("undefined reference to") || line.contains("undefined symbol") {
            g.undefined.extend(mpi_names(line).into_iter().take(1));
        } else if line.contains("error:") && g.errors.len() < 3 {
            let l = clip(line.trim(), 200);
            if !g.errors.contains(&l) {
                g.errors.push(l);
            }
        }
    }
    g
}

impl BuildGaps {
    /// One line saying why a program did not build.
    fn why(&self) -> Vec<String> {
        let mut v = Vec::new();
        if !self.undefined.is_empty() {
            v.push(format!("undefined at link: {}", join(&self.undefined)));
        }
        if !self.undeclared.is_empty() {
            v.push(format!("not declared in mpi.h: {}", join(&self.undeclared)));
        }
        v.extend(self.errors.iter().cloned());
        v
    }
}

fn join(s: &BTreeSet<String>) -> String {
    s.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// The lines of a failed run's output that say why: errors, aborts, signals, the
/// launcher's own verdict; else its last lines.
fn failure_lines(output: &str) -> Vec<String> {
    const KEYS: &[&str] = &[
        "error",
        "Error",
        "ERROR",
        "abort",
        "Abort",
        "ABORT",
        "not supported",
        "unsupported",
        "not implemented",
        "Assertion",
        "assert",
        "Segmentation",
        "signal",
        "rmarun:",
        "fail",
        "FAIL",
        "Fatal",
        "fatal",
    ];
    let mut out: Vec<String> = Vec::new();
    for line in output.lines() {
        let t = line.trim();
        // rank prefixes ("[1] ", "[0@host] ") do not make a line new
        let key = t
            .strip_prefix('[')
            .and_then(|r| r.split_once("] ").map(|(_, rest)| rest))
            .unwrap_or(t);
        if KEYS.iter().any(|k| key.contains(k)) {
            let l = clip(key, 200);
            if !out.contains(&l) {
                out.push(l);
            }
            if out.len() == 4 {
                break;
            }
        }
    }
    if out.is_empty() {
        let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
        out = lines[lines.len().saturating_sub(3)..]
            .iter()
            .map(|l| clip(l.trim(), 200))
            .collect();
    }
    out
}

/// What Python said went wrong in an mpi4py run: a `NotImplementedError` names the
/// MPI call it came from (mpi4py raises it for a function the library lacks), other
/// exceptions their message, after the MPI call that raised it when the traceback
/// shows one (`CHKERR( MPI_Xxx(...) )`).
fn python_errors(output: &str) -> Vec<String> {
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    let mut out: Vec<String> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let head = l.split(':').next().unwrap_or("");
        let is_exc = !head.is_empty()
            && !head.contains(' ')
            && (head.ends_with("Error") || head.ends_with("Exception"));
        if !is_exc {
            continue;
        }
        let msg = if head == "NotImplementedError" && l.len() == head.len() {
            let call = lines[i.saturating_sub(4)..i]
                .iter()
                .rev()
                .find_map(|p| mpi_names(p).into_iter().next());
            match call {
                Some(c) => format!("NotImplementedError from {c}"),
                None => continue,
            }
        } else {
            let call = lines[i.saturating_sub(3)..i]
                .iter()
                .rev()
                .filter(|p| p.contains("CHKERR"))
                .find_map(|p| mpi_names(p).into_iter().next());
            match call {
                Some(c) => clip(&format!("{c}: {l}"), 200),
                None => clip(l, 200),
            }
        };
        if !out.contains(&msg) {
            out.push(msg);
        }
        if out.len() == 6 {
            break;
        }
    }
    out
}

/// The output files of a run's ranks (`rankN.log`), in rank order: (N, text).
fn rank_outputs(dir: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(u32, String, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let rank = name.strip_prefix("rank")?.strip_suffix(".log")?.to_string();
            let text = std::fs::read_to_string(dir.join(&name)).ok()?;
            Some((rank.parse().unwrap_or(u32::MAX), rank, text))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, r, t)| (r, t)).collect()
}

/// What the ranks of a run that was killed were doing (unittest's verbose lines
/// `name (id) ... RESULT`): the tests that failed before, and the one each rank had
/// not finished.
fn unfinished(ranks: &[(String, String)]) -> Vec<String> {
    let id = |l: &str| {
        l.split_once(" (")
            .and_then(|(_, r)| r.split(')').next())
            .unwrap_or(l)
            .to_string()
    };
    let mut out = Vec::new();
    for (r, text) in ranks {
        for l in text.lines() {
            let l = l.trim_end();
            if l.ends_with(" ... ERROR") || l.ends_with(" ... FAIL") {
                out.push(format!(
                    "rank {r}: {} {}",
                    id(l),
                    l.rsplit(' ').next().unwrap_or("")
                ));
            }
        }
        if let Some(last) = text.lines().rev().find(|l| !l.trim().is_empty()) {
            if last.trim_end().ends_with("...") {
                out.push(format!("rank {r}: still in {} when killed", id(last)));
            }
        }
    }
    out
}

/// unittest's account of one run, over the ranks' summaries.
#[derive(Clone, Debug, Default, PartialEq)]
struct Cases {
    /// The most tests a rank ran.
    ran: u32,
    /// The most tests a rank skipped.
    skipped: u32,
    /// The tests that failed or raised on some rank (their unittest ids).
    failed: BTreeSet<String>,
    /// How many ranks printed a summary (`Ran N tests`).
    summaries: u32,
}

impl Cases {
    /// The account of two ranks together.
    fn merge(mut self, other: Cases) -> Cases {
        self.ran = self.ran.max(other.ran);
        self.skipped = self.skipped.max(other.skipped);
        self.failed.extend(other.failed);
        self.summaries += other.summaries;
        self
    }

    /// The tests passed on every rank, when every rank summed up (else none is
    /// counted).
    fn passed(&self, ranks: u32) -> u32 {
        if self.summaries < ranks {
            return 0;
        }
        self.ran
            .saturating_sub(self.skipped)
            .saturating_sub(self.failed.len() as u32)
    }
}

/// The unittest summaries in the merged output of the ranks (`Ran N tests`, `OK
/// (skipped=K)`, `FAILED (errors=E, skipped=K)`, `ERROR: name (id)`); another rank's
/// progress dots may precede them on a line.
fn parse_unittest(output: &str) -> Cases {
    let mut c = Cases::default();
    for line in output.lines() {
        let t = after_progress(line);
        if let Some(rest) = t.strip_prefix("Ran ") {
            if let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok()) {
                c.ran = c.ran.max(n);
                c.summaries += 1;
            }
        } else if let Some(rest) = t
            .strip_prefix("ERROR: ")
            .or_else(|| t.strip_prefix("FAIL: "))
        {
            // `name (module.Class.name)`, then a subtest's parameters `(rank=0, ...)`
            let id = rest
                .split_once(" (")
                .and_then(|(_, r)| r.split(')').next())
                .unwrap_or(rest);
            c.failed.insert(id.to_string());
        } else if t.starts_with("OK") || t.starts_with("FAILED (") {
            if let Some(k) = t.split("skipped=").nth(1) {
                let k: String = k.chars().take_while(char::is_ascii_digit).collect();
                c.skipped = c.skipped.max(k.parse().unwrap_or(0));
            }
        }
    }
    c
}

/// A line of unittest's from its keyword on: another rank's progress characters
/// (`.`, `E`, `F`, `s`, ...) may come first on the line.
fn after_progress(line: &str) -> &str {
    let t = line.trim();
    for key in ["ERROR: ", "FAIL: ", "FAILED (", "Ran ", "OK"] {
        if let Some(i) = t.find(key) {
            if t[..i]
                .chars()
                .all(|c| matches!(c, '.' | 'E' | 'F' | 's' | 'x' | 'u'))
            {
                return &t[i..];
            }
        }
    }
    t
}

/// One test run of one implementation.
#[derive(Clone, Debug)]
struct Cell {
    outcome: Outcome,
    secs: f64,
    /// mpi4py: unittest's account, and the rank count.
    cases: Option<(Cases, u32)>,
    /// Why it failed (empty when it passed).
    why: Vec<String>,
}

impl Cell {
    fn not_built(why: Vec<String>) -> Cell {
        Cell {
            outcome: Outcome::NotBuilt,
            secs: 0.0,
            cases: None,
            why,
        }
    }

    fn text(&self) -> String {
        let mut s = self.outcome.cell().to_string();
        if self.outcome != Outcome::NotBuilt {
            s.push_str(&format!(" ({:.1} s)", self.secs));
        }
        if let Some((c, n)) = &self.cases {
            if c.summaries > 0 {
                s.push_str(&format!(", {}/{} cases", c.passed(*n), c.ran));
            }
        }
        s
    }
}

/// Runs `argv` on `ranks` ranks under `imp`'s launcher in `cwd`, killed after `limit`
/// seconds; its merged output goes to `log`.
fn launch(
    imp: &Impl,
    ranks: u32,
    argv: &[String],
    cwd: &Path,
    log: &Path,
    limit: u64,
) -> (RunOutcome, f64) {
    let mut cmd = Command::new(crate::mpich_suite::tool(imp.launch[0]));
    cmd.args(&imp.launch[1..])
        .arg(ranks.to_string())
        .args(argv)
        .env_remove("LD_LIBRARY_PATH")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(cwd);
    let start = Instant::now();
    let outcome = crate::bench::run_reaped(cmd, log, Duration::from_secs(limit));
    (outcome, start.elapsed().as_secs_f64())
}

/// The environment a build with `imp`'s wrapper needs: rmacc is told where
/// librma_capi.so is (the target directory may be relative to the workspace).
fn wrapper_env(cmd: &mut Command, imp: &Impl) {
    cmd.env_remove("LD_LIBRARY_PATH").env_remove("MPICC");
    if imp.name == "rma" {
        cmd.env("RMA_CAPI_LIB", crate::mpich_suite::tool("target/release"));
    }
}

/// Ok, or a note that the client was not run: not fetchable (`fetch`: a note), or
/// not buildable here at all (a failure).
enum Unavailable {
    Fetch(String),
    Broken(String),
}

// ---------------------------------------------------------------------------------
// ARMCI-MPI

struct Armci {
    src: PathBuf,
    origin: String,
    tests: Vec<String>,
    xfail: BTreeSet<String>,
    ranks: u32,
    /// How `make check` launches a test (`LOG_COMPILER`, expanded).
    log_compiler: String,
}

/// Parses an automake file into `vars` (`+=` appends; comments and recipe lines are
/// dropped; `if` blocks are read as if true), reading `include`d files (paths from
/// the top source folder) through `read` where they stand.
fn parse_automake(
    text: &str,
    vars: &mut BTreeMap<String, String>,
    read: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) {
    for raw in crate::mpich_suite::logical_lines(text) {
        if raw.starts_with('\t') {
            continue;
        }
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(file) = line.strip_prefix("include ") {
            let file = file.trim().trim_start_matches("$(top_srcdir)/");
            if depth < 8 {
                if let Some(t) = read(file) {
                    parse_automake(&t, vars, read, depth + 1);
                }
            }
            continue;
        }
        let (key, value, append) = if let Some((k, v)) = line.split_once("+=") {
            (k.trim(), v.trim(), true)
        } else if let Some((k, v)) = line.split_once('=') {
            (k.trim(), v.trim(), false)
        } else {
            continue;
        };
        if key.is_empty() || key.contains(|c: char| c.is_whitespace() || c == ':') {
            continue;
        }
        let slot = vars.entry(key.to_string()).or_default();
        if append && !slot.is_empty() {
            slot.push(' ');
            slot.push_str(value);
        } else {
            *slot = value.to_string();
        }
    }
}

/// `$(NAME)` references replaced by their values (a few levels deep).
fn expand(value: &str, vars: &BTreeMap<String, String>) -> String {
    let mut s = value.to_string();
    for _ in 0..5 {
        let Some(i) = s.find("$(") else { break };
        let Some(j) = s[i..].find(')') else { break };
        let name = s[i + 2..i + j].to_string();
        let v = vars.get(&name).cloned().unwrap_or_default();
        s.replace_range(i..i + j + 1, &v);
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The rank count a launcher command line asks for (`-n N`, `-np N`).
fn launcher_ranks(cmd: &str) -> Option<u32> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| matches!(w[0], "-n" | "-np" | "--np" | "-c"))
        .and_then(|w| w[1].parse().ok())
}

/// The tests of an ARMCI-MPI source tree, as its `make check` runs them.
fn armci_tests(src: &Path, origin: String) -> Result<Armci, String> {
    let top = std::fs::read_to_string(src.join("Makefile.am"))
        .map_err(|e| format!("{}: {e}", src.join("Makefile.am").display()))?;
    let mut vars = BTreeMap::new();
    let read = |f: &str| std::fs::read_to_string(src.join(f)).ok();
    parse_automake(&top, &mut vars, &read, 0);
    let list = |k: &str| -> Vec<String> {
        expand(vars.get(k).map_or("", String::as_str), &vars)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let tests = list("TESTS");
    if tests.is_empty() {
        return Err("its Makefile.am lists no TESTS".into());
    }
    let log_compiler = expand(vars.get("LOG_COMPILER").map_or("", String::as_str), &vars);
    let ranks = launcher_ranks(&log_compiler).unwrap_or(2);
    Ok(Armci {
        src: src.to_path_buf(),
        origin,
        xfail: list("XFAIL_TESTS").into_iter().collect(),
        tests,
        ranks,
        log_compiler,
    })
}

/// The commit a git directory's HEAD names.
fn git_head(git_dir: &Path) -> Option<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// ARMCI-MPI's source under `root`, ready to configure (autogen.sh run): from
/// `given` (a source tree or a git directory, copied afresh) or from Debian's
/// source package (fetched once).
fn armci_source(root: &Path, given: Option<&Path>) -> Result<Armci, Unavailable> {
    let broken = |e: String| Unavailable::Broken(e);
    let (src, origin) = match given {
        Some(dir) => {
            let dir = std::fs::canonicalize(dir)
                .map_err(|e| broken(format!("--armci-src {}: {e}", dir.display())))?;
            let src = root.join("src");
            let _ = std::fs::remove_dir_all(&src);
            std::fs::create_dir_all(&src).map_err(|e| broken(format!("{}: {e}", src.display())))?;
            let bare = dir.join("HEAD").is_file() && dir.join("objects").is_dir();
            let (script, origin) = if bare {
                let head = git_head(&dir).unwrap_or_else(|| "?".into());
                (
                    "git --git-dir=\"$1\" archive --format=tar HEAD | tar -x -C \"$2\"",
                    format!("{} (git directory, HEAD {head})", dir.display()),
                )
            } else if dir.join("configure.ac").is_file() {
                let head = git_head(&dir.join(".git"))
                    .map(|h| format!(", git HEAD {h}, work tree as it is"))
                    .unwrap_or_default();
                (
                    "tar -C \"$1\" --exclude=.git -cf - . | tar -x -C \"$2\"",
                    format!("{} (source tree{head})", dir.display()),
                )
            } else {
                return Err(broken(format!(
                    "--armci-src {}: neither a source tree (configure.ac) nor a git directory",
                    dir.display()
                )));
            };
            let mut cmd = Command::new("sh");
            cmd.args(["-c", script, "sh"]).arg(&dir).arg(&src);
            step(cmd, &root.join("copy.log"), 300)
                .map_err(|e| broken(format!("copying {}: {e}", dir.display())))?;
            if !src.join("configure.ac").is_file() {
                return Err(broken(format!(
                    "{} gave no configure.ac (log: {})",
                    dir.display(),
                    root.join("copy.log").display()
                )));
            }
            (src, origin)
        }
        None => {
            let dl = root.join("debian");
            std::fs::create_dir_all(&dl).map_err(|e| broken(format!("{}: {e}", dl.display())))?;
            let find = |pred: &dyn Fn(&Path) -> bool| -> Option<PathBuf> {
                let mut v: Vec<PathBuf> = std::fs::read_dir(&dl)
                    .ok()?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| pred(p))
                    .collect();
                v.sort();
                v.pop()
            };
            let is_tarball = |p: &Path| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("armci-mpi_") && n.contains(".orig.tar"))
            };
            let unpacked = |p: &Path| p.join("configure.ac").is_file() && p.join("tests").is_dir();
            let tarball = match find(&is_tarball) {
                Some(t) => t,
                None => {
                    crate::mpich_suite::apt_get_source("armci-mpi", &dl)
                        .map_err(Unavailable::Fetch)?;
                    find(&is_tarball).ok_or_else(|| {
                        Unavailable::Fetch("no armci-mpi_*.orig.tar.* downloaded".into())
                    })?
                }
            };
            let name = tarball
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            let src = match find(&unpacked) {
                Some(s) => s,
                None => {
                    let mut tar = Command::new("tar");
                    tar.arg("xf").arg(&tarball).current_dir(&dl);
                    step(tar, &dl.join("unpack.log"), 300)
                        .map_err(|e| broken(format!("unpacking {name}: {e}")))?;
                    find(&unpacked)
                        .ok_or_else(|| broken(format!("{name} holds no configure.ac and tests/")))?
                }
            };
            (src, format!("Debian's source package armci-mpi ({name}, upstream's tarball, no Debian patch)"))
        }
    };
    if !src.join("configure").is_file() {
        let missing: Vec<&str> = ["autoreconf", "automake", "libtoolize"]
            .into_iter()
            .filter(|t| crate::setup::which(t).is_none())
            .collect();
        if !missing.is_empty() {
            return Err(broken(format!(
                "autogen.sh needs {} (as root: apt-get install -y autoconf automake libtool)",
                missing.join(", ")
            )));
        }
        let mut cmd = Command::new("sh");
        cmd.arg("autogen.sh").current_dir(&src);
        step(cmd, &root.join("autogen.log"), 600)
            .map_err(|e| broken(format!("autogen.sh failed: {e}")))?;
    }
    armci_tests(&src, origin).map_err(broken)
}

/// Configures, builds and runs ARMCI-MPI's tests with `imp`: one cell per test, and
/// what the build says rma's interface lacks.
fn armci_run(
    imp: &Impl,
    a: &Armci,
    root: &Path,
    limit: u64,
    phases: &mut Vec<(String, f64)>,
) -> (Vec<Cell>, BuildGaps) {
    let t0 = Instant::now();
    let dir = root.join(imp.name);
    let logs = dir.join("logs");
    let _ = std::fs::remove_dir_all(&dir);
    let all_not_built = |why: Vec<String>| vec![Cell::not_built(why); a.tests.len()];
    if let Err(e) = std::fs::create_dir_all(&logs) {
        return (
            all_not_built(vec![format!("{}: {e}", logs.display())]),
            BuildGaps::default(),
        );
    }
    let cc = crate::mpich_suite::tool(imp.cc);
    let mut configure = Command::new(a.src.join("configure"));
    configure
        .arg(format!("CC={}", cc.display()))
        .current_dir(&dir);
    wrapper_env(&mut configure, imp);
    if let Err(e) = step(configure, &dir.join("configure.log"), 600) {
        let mut why = vec![format!("configure failed: {e}")];
        why.extend(tail(&dir.join("configure.log"), 2));
        return (all_not_built(why), BuildGaps::default());
    }
    let make = |args: &[&str], log: &Path, secs: u64| {
        let mut cmd = Command::new("make");
        cmd.args(args).current_dir(&dir);
        wrapper_env(&mut cmd, imp);
        step(cmd, log, secs)
    };
    let lib_log = dir.join("make.log");
    let lib = make(&["-j2"], &lib_log, 1200);
    let lib_text = std::fs::read_to_string(&lib_log).unwrap_or_default();
    let mut gaps = build_gaps(&lib_text);
    if let Err(e) = lib {
        let mut why = vec![format!("the library did not build: {e}")];
        why.extend(gaps.why());
        return (all_not_built(why), gaps);
    }
    // the programs of `make check`, as many as link (-k)
    let check_log = dir.join("check-programs.log");
    if let Err(e) = make(&["-k", "-j2", "check", "TESTS="], &check_log, 1800) {
        eprintln!(
            "clients: ARMCI-MPI: {}: some check programs did not build ({e})",
            imp.name
        );
    }
    let check = build_gaps(&std::fs::read_to_string(&check_log).unwrap_or_default());
    gaps.undeclared.extend(check.undeclared);
    gaps.undefined.extend(check.undefined);
    phases.push((
        format!("ARMCI-MPI build, {}", imp.name),
        t0.elapsed().as_secs_f64(),
    ));
    let t0 = Instant::now();
    let mut cells = Vec::new();
    for test in &a.tests {
        let base = test.replace('/', "_");
        let exe = dir.join(test);
        let cell = if !exe.is_file() {
            // once more alone, for this program's own messages
            let log = logs.join(format!("{base}.build.log"));
            let _ = make(&[test], &log, 300);
            let g = build_gaps(&std::fs::read_to_string(&log).unwrap_or_default());
            let mut why = g.why();
            if why.is_empty() {
                why = tail(&log, 2);
            }
            Cell::not_built(why)
        } else {
            let log = logs.join(format!("{base}.log"));
            let (outcome, secs) = launch(
                imp,
                a.ranks,
                &[exe.display().to_string()],
                &dir,
                &log,
                limit,
            );
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            let xfail = a.xfail.contains(test);
            let outcome = match outcome {
                RunOutcome::Ok if !xfail => Outcome::Pass,
                RunOutcome::Failed(_) if xfail => Outcome::Pass,
                RunOutcome::TimedOut(_) => Outcome::Timeout,
                _ => Outcome::Fail,
            };
            let why = match outcome {
                Outcome::Pass => Vec::new(),
                Outcome::Timeout => {
                    let mut v = vec![format!("killed after {limit} s")];
                    v.extend(tail(&log, 2));
                    v
                }
                _ => failure_lines(&output),
            };
            Cell {
                outcome,
                secs,
                cases: None,
                why,
            }
        };
        eprintln!("{:<8} {:<44} {}", imp.name, test, cell.text());
        cells.push(cell);
    }
    phases.push((
        format!("ARMCI-MPI tests, {}", imp.name),
        t0.elapsed().as_secs_f64(),
    ));
    (cells, gaps)
}

// ---------------------------------------------------------------------------------
// mpi4py

struct Mpi4py {
    sdist: PathBuf,
    python: PathBuf,
    origin: String,
}

/// The pinned sdist (fetched once) and a virtual environment with its build
/// requirements.
fn mpi4py_prepare(root: &Path) -> Result<Mpi4py, Unavailable> {
    let broken = |e: String| Unavailable::Broken(e);
    if crate::setup::which("python3").is_none() {
        return Err(Unavailable::Fetch("no python3 to build and run it".into()));
    }
    std::fs::create_dir_all(root).map_err(|e| broken(format!("{}: {e}", root.display())))?;
    let name = format!("mpi4py-{MPI4PY_VERSION}.tar.gz");
    let sdist = root.join(&name);
    let mut url = String::from("from an earlier fetch");
    if !sdist.is_file() {
        let log = root.join("fetch.log");
        let mut cmd = Command::new("python3");
        cmd.args(["-c", PYPI_FETCH, &name, MPI4PY_SHA256])
            .arg(&sdist);
        if let Err(e) = step(cmd, &log, 600) {
            let last = tail(&log, 1).pop().unwrap_or_default();
            return Err(Unavailable::Fetch(format!(
                "{name} from PyPI: {last} ({e})"
            )));
        }
        url = tail(&log, 1).pop().unwrap_or_default();
    }
    let origin = format!("PyPI's {name} (sha256 {MPI4PY_SHA256}, {url})");
    // its build requirements, as its build configuration names them
    let venv = root.join("venv");
    let python = venv.join("bin/python");
    let ready = venv.join("rma-clients-ready");
    if !ready.is_file() {
        let _ = std::fs::remove_dir_all(&venv);
        let mut cmd = Command::new("python3");
        cmd.args(["-m", "venv"]).arg(&venv);
        step(cmd, &root.join("venv.log"), 300)
            .map_err(|e| broken(format!("python3 -m venv: {e}")))?;
        let out = Command::new("tar")
            .arg("-xzOf")
            .arg(&sdist)
            .arg(format!(
                "mpi4py-{MPI4PY_VERSION}/conf/requirements-build-cython.txt"
            ))
            .output()
            .map_err(|e| broken(format!("tar: {e}")))?;
        let mut reqs: Vec<String> = vec!["setuptools >= 42".into(), "wheel".into()];
        reqs.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string),
        );
        let mut pip = Command::new(&python);
        pip.args(["-m", "pip", "install", "--quiet"]).args(&reqs);
        step(pip, &root.join("venv.log"), 900).map_err(|e| {
            Unavailable::Fetch(format!(
                "its build requirements ({}) from PyPI: {e}",
                reqs.join(", ")
            ))
        })?;
        let _ = std::fs::write(&ready, reqs.join("\n"));
    }
    Ok(Mpi4py {
        sdist,
        python,
        origin,
    })
}

/// What a build of mpi4py with `imp` depends on: mpi4py's version and the wrapper,
/// and for rma the declarations of mpi.h and the functions librma_capi.so exports
/// (mpi4py probes both).
fn mpi4py_build_key(imp: &Impl) -> String {
    let mut h = DefaultHasher::new();
    MPI4PY_VERSION.hash(&mut h);
    let cc = crate::mpich_suite::tool(imp.cc);
    let cc = crate::setup::which(&cc.to_string_lossy()).unwrap_or(cc);
    let real = std::fs::canonicalize(&cc).unwrap_or(cc);
    real.hash(&mut h);
    if let Ok(m) = std::fs::metadata(&real).and_then(|m| m.modified()) {
        m.hash(&mut h);
    }
    if imp.name == "rma" {
        std::fs::read(crate::mpich_suite::tool("rma-capi/include/mpi.h"))
            .unwrap_or_default()
            .hash(&mut h);
        let lib = crate::mpich_suite::tool("target/release/librma_capi.so");
        if let Ok(out) = Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(&lib)
            .output()
        {
            let text = String::from_utf8_lossy(&out.stdout);
            let mut syms: Vec<&str> = text
                .lines()
                .filter_map(|l| l.split_whitespace().last())
                .filter(|s| s.starts_with("MPI_"))
                .collect();
            syms.sort_unstable();
            syms.hash(&mut h);
        }
    }
    format!("{:016x}", h.finish())
}

/// How many MPI names mpi4py's build checked (`checking for ... 'MPI_...'`).
fn probe_checked(build_log: &str) -> usize {
    build_log
        .lines()
        .filter(|l| l.trim_start().starts_with("checking for ") && l.contains("'MPI_"))
        .count()
}

/// The MPI functions and symbols mpi4py's build found missing (`failed check for`).
fn probe_missing(build_log: &str) -> BTreeSet<String> {
    build_log
        .lines()
        .filter_map(|l| l.split("failed check for '").nth(1))
        .filter_map(|r| r.split('\'').next())
        .map(str::to_string)
        .collect()
}

/// The MPI functions mpi4py's fallback for a missing `name` calls (its
/// `static int PyMPI_<name>(...)` in `src/lib-mpi/*.h`), `name` itself left out.
fn emulated_with(src: &Path, name: &str) -> Vec<String> {
    let head = format!("static int PyMPI_{}(", name.trim_start_matches("MPI_"));
    let head_full = format!("static int PyMPI_{name}(");
    let mut out: Vec<String> = Vec::new();
    let Ok(rd) = std::fs::read_dir(src.join("src/lib-mpi")) else {
        return out;
    };
    for e in rd.flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for h in [&head, &head_full] {
            let Some(i) = text.find(h.as_str()) else {
                continue;
            };
            let body = &text[i..];
            let body = &body[..body.find("\n}\n").unwrap_or(body.len())];
            out.extend(called_functions(body).into_iter().filter(|c| c != name));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The `MPI_Xxx(` calls in C text.
fn called_functions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("MPI_") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[i..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if rest[end..].starts_with('(') {
            out.push(rest[..end].to_string());
        }
    }
    out
}

/// An MPI name of the one-sided interface (windows, RMA calls, their memory).
fn is_one_sided(name: &str) -> bool {
    [
        "Win",
        "Put",
        "Get",
        "Accumulate",
        "Fetch_and_op",
        "Compare_and_swap",
        "Alloc_mem",
        "Free_mem",
        "Rput",
        "Rget",
        "Raccumulate",
        "LOCK_",
        "MODE_NO",
    ]
    .iter()
    .any(|k| name.contains(k))
}

/// Builds mpi4py with `imp` (unless an earlier build of the same key is there) and runs
/// the window and RMA test files on each rank count: one cell per file and rank
/// count, and the names mpi4py's probe found missing.
fn mpi4py_run(
    imp: &Impl,
    m: &Mpi4py,
    root: &Path,
    limit: u64,
    phases: &mut Vec<(String, f64)>,
) -> (Vec<Cell>, Option<BTreeSet<String>>) {
    let runs = MPI4PY_TESTS.len() * MPI4PY_RANKS.len();
    let dir = root.join(imp.name);
    let src = dir.join(format!("mpi4py-{MPI4PY_VERSION}"));
    let site = dir.join("site");
    let build_log = dir.join("build.log");
    let key_file = dir.join("build-key");
    let key = mpi4py_build_key(imp);
    let t0 = Instant::now();
    let built = std::fs::read_to_string(&key_file).is_ok_and(|k| k.trim() == key)
        && site.join("mpi4py").is_dir();
    if built {
        eprintln!(
            "clients: mpi4py: {}: reusing the build in {} (same mpi.h, library and wrapper)",
            imp.name,
            dir.display()
        );
    } else {
        eprintln!(
            "clients: mpi4py: {}: building (log: {})",
            imp.name,
            build_log.display()
        );
        let _ = std::fs::remove_dir_all(&dir);
        let fail = |why: Vec<String>| (vec![Cell::not_built(why); runs], None);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return fail(vec![format!("{}: {e}", dir.display())]);
        }
        let mut tar = Command::new("tar");
        tar.arg("xzf").arg(&m.sdist).current_dir(&dir);
        if let Err(e) = step(tar, &dir.join("unpack.log"), 300) {
            return fail(vec![format!("unpacking {}: {e}", m.sdist.display())]);
        }
        let mut pip = Command::new(&m.python);
        pip.args([
            "-m",
            "pip",
            "install",
            "-v",
            "--no-build-isolation",
            "--no-deps",
            "--no-index",
            "--no-cache-dir",
            "--target",
        ])
        .arg(&site)
        .arg(".")
        .current_dir(&src);
        wrapper_env(&mut pip, imp);
        pip.env("MPICC", crate::mpich_suite::tool(imp.cc));
        if let Err(e) = step(pip, &build_log, 1800) {
            let g = build_gaps(&std::fs::read_to_string(&build_log).unwrap_or_default());
            let mut why = vec![format!("pip install failed: {e}")];
            why.extend(g.why());
            if why.len() == 1 {
                why.extend(tail(&build_log, 2));
            }
            return fail(why);
        }
        let _ = std::fs::write(&key_file, &key);
    }
    let missing = probe_missing(&std::fs::read_to_string(&build_log).unwrap_or_default());
    let _ = std::fs::write(
        dir.join("missing.txt"),
        missing.iter().cloned().collect::<Vec<_>>().join("\n") + "\n",
    );
    phases.push((
        format!(
            "mpi4py build, {}{}",
            imp.name,
            if built { " (reused)" } else { "" }
        ),
        t0.elapsed().as_secs_f64(),
    ));
    let t0 = Instant::now();
    let logs = dir.join("logs");
    let _ = std::fs::create_dir_all(&logs);
    let mut cells = Vec::new();
    for file in MPI4PY_TESTS {
        for &n in MPI4PY_RANKS {
            // each rank's output in a file of its own (the launchers' rank
            // variables), so that the ranks' lines never mix
            let run_dir = logs.join(format!("{file}-n{n}"));
            let _ = std::fs::remove_dir_all(&run_dir);
            let _ = std::fs::create_dir_all(&run_dir);
            let log = run_dir.join("launcher.log");
            let script = format!(
                "r=${{RMA_RANK:-${{PMI_RANK:-${{OMPI_COMM_WORLD_RANK:-x}}}}}}; \
                 exec \"$0\" \"$@\" >'{}/rank'\"$r\".log 2>&1",
                run_dir.display()
            );
            let argv = [
                "sh".into(),
                "-c".into(),
                script,
                m.python.display().to_string(),
                src.join("test/main.py").display().to_string(),
                "--path".into(),
                site.display().to_string(),
                "--no-builddir".into(),
                "-v".into(),
                file.to_string(),
            ];
            let (outcome, secs) = launch(imp, n, &argv, &src, &log, limit);
            let ranks = rank_outputs(&run_dir);
            let cases = ranks
                .iter()
                .map(|(_, text)| parse_unittest(text))
                .fold(Cases::default(), Cases::merge);
            let mut output = std::fs::read_to_string(&log).unwrap_or_default();
            for (_, text) in &ranks {
                output.push_str(text);
            }
            let outcome = match outcome {
                RunOutcome::Ok => Outcome::Pass,
                RunOutcome::TimedOut(_) => Outcome::Timeout,
                _ => Outcome::Fail,
            };
            let why = if outcome == Outcome::Pass {
                Vec::new()
            } else {
                let mut v = Vec::new();
                if outcome == Outcome::Timeout {
                    v.push(format!("killed after {limit} s"));
                    v.extend(unfinished(&ranks));
                }
                if !cases.failed.is_empty() {
                    let ids: Vec<&str> = cases.failed.iter().map(String::as_str).collect();
                    let shown = ids.len().min(6);
                    v.push(format!(
                        "failed cases: {}{}",
                        ids[..shown].join(", "),
                        if ids.len() > shown {
                            format!(" and {} more", ids.len() - shown)
                        } else {
                            String::new()
                        }
                    ));
                }
                let py = python_errors(&output);
                if py.is_empty() {
                    // a killed run: what its ranks were doing says it already
                    if outcome != Outcome::Timeout || v.len() == 1 {
                        v.extend(failure_lines(&output));
                    }
                } else {
                    // a call the library lacks: what mpi4py called in its place
                    v.extend(py.into_iter().map(|l| {
                        let call = mpi_names(&l).into_iter().next();
                        match call.filter(|c| missing.contains(c)) {
                            Some(c) => {
                                let with = emulated_with(&src, &c);
                                if with.is_empty() {
                                    l
                                } else {
                                    format!(
                                        "{l} [{c} is missing here: mpi4py calls {} instead]",
                                        with.join(", ")
                                    )
                                }
                            }
                            None => l,
                        }
                    }));
                }
                v
            };
            let cell = Cell {
                outcome,
                secs,
                cases: Some((cases, n)),
                why,
            };
            eprintln!(
                "{:<8} {:<44} {}",
                imp.name,
                format!("{file} -n {n}"),
                cell.text()
            );
            cells.push(cell);
        }
    }
    phases.push((
        format!("mpi4py tests, {}", imp.name),
        t0.elapsed().as_secs_f64(),
    ));
    (cells, Some(missing))
}

// ---------------------------------------------------------------------------------

/// The results of one client: its rows, and per implementation (in the order of
/// `--impl`) a cell per row and what its build found missing.
struct Section {
    client: Client,
    origin: String,
    how: String,
    rows: Vec<String>,
    cols: Vec<Vec<Cell>>,
    gaps: Vec<Vec<String>>,
}

impl Section {
    fn passed(&self, col: usize) -> usize {
        self.cols[col]
            .iter()
            .filter(|c| c.outcome == Outcome::Pass)
            .count()
    }

    /// mpi4py: the test cases passed and run, over every run.
    fn cases(&self, col: usize) -> (u32, u32) {
        self.cols[col]
            .iter()
            .filter_map(|c| c.cases.as_ref())
            .fold((0, 0), |(p, r), (c, n)| (p + c.passed(*n), r + c.ran))
    }

    fn summary(&self, col: usize) -> String {
        let mut s = format!(
            "{} {}/{}",
            self.client.title(),
            self.passed(col),
            self.rows.len()
        );
        if self.client == Client::Mpi4py {
            let (p, r) = self.cases(col);
            s.push_str(&format!(" (cases {p}/{r})"));
        }
        s
    }
}

pub(crate) fn main(opts: Options) -> bool {
    let opts = opts.with_defaults();
    let limit = opts.cap.map_or(RUN_LIMIT, |c| c.min(RUN_LIMIT));
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    // absolute: programs run in their own directories
    let root = std::env::current_dir()
        .unwrap_or_default()
        .join(target)
        .join("clients");
    if let Err(e) = std::fs::create_dir_all(&root) {
        eprintln!("clients: {}: {e}", root.display());
        return false;
    }
    let mut ok = true;
    let mut notes: Vec<String> = Vec::new();
    let mut phases: Vec<(String, f64)> = Vec::new();
    if opts.impls.iter().any(|i| i.name == "rma") {
        let t0 = Instant::now();
        if let Err(e) = crate::mpich_suite::build_rma() {
            eprintln!("clients: {e}");
            return false;
        }
        phases.push((
            "cargo build of rma-capi and rmarun".into(),
            t0.elapsed().as_secs_f64(),
        ));
    }
    let mut sections: Vec<Section> = Vec::new();
    for &client in &opts.clients {
        let section = match client {
            Client::Armci => armci_section(&opts, &root.join("armci"), limit, &mut phases),
            Client::Mpi4py => mpi4py_section(&opts, &root.join("mpi4py"), limit, &mut phases),
        };
        match section {
            Ok(s) => sections.push(s),
            Err(Unavailable::Fetch(e)) => {
                let n = format!(
                    "clients: cannot fetch {} ({e}); its tests are not run",
                    client.title()
                );
                eprintln!("{n}");
                notes.push(n);
            }
            Err(Unavailable::Broken(e)) => {
                let n = format!("clients: {} not run: {e}", client.title());
                eprintln!("{n}");
                notes.push(n);
                ok = false;
            }
        }
    }
    // summaries
    let mut summary = Vec::new();
    for (col, imp) in opts.impls.iter().enumerate() {
        let parts: Vec<String> = opts
            .clients
            .iter()
            .map(|c| match sections.iter().find(|s| s.client == *c) {
                Some(s) => s.summary(col),
                None => format!("{} not run", c.title()),
            })
            .collect();
        summary.push(format!("{}: {}", imp.name, parts.join(", ")));
    }
    let md = report(
        &crate::command_line(),
        &opts,
        &sections,
        &summary,
        &notes,
        &phases,
    );
    let out = root.join("results.md");
    if let Err(e) = std::fs::write(&out, md) {
        eprintln!("clients: {}: {e}", out.display());
        ok = false;
    }
    for (what, secs) in &phases {
        eprintln!("clients: {what}: {secs:.0} s");
    }
    for s in &summary {
        println!("{s}");
    }
    println!("clients: wrote {}", out.display());
    // the floors
    if let Some(col) = opts.impls.iter().position(|i| i.name == "rma") {
        let floors = [
            (Client::Armci, opts.min_armci, "tests"),
            (Client::Mpi4py, opts.min_mpi4py, "test cases"),
        ];
        for (client, floor, what) in floors {
            let Some(floor) = floor else { continue };
            match sections.iter().find(|s| s.client == client) {
                Some(s) => {
                    let n = if client == Client::Mpi4py {
                        s.cases(col).0 as usize
                    } else {
                        s.passed(col)
                    };
                    if n < floor {
                        eprintln!(
                            "clients: rma passed {n} {} {what}, below the floor of {floor}",
                            client.title()
                        );
                        ok = false;
                    }
                }
                None => eprintln!(
                    "clients: {} was not run: its floor ({floor}) is not checked",
                    client.title()
                ),
            }
        }
    }
    ok
}

/// ARMCI-MPI's source and tests, built and run with every implementation.
fn armci_section(
    opts: &Options,
    dir: &Path,
    limit: u64,
    phases: &mut Vec<(String, f64)>,
) -> Result<Section, Unavailable> {
    let t0 = Instant::now();
    let a = armci_source(dir, opts.armci_src.as_deref())?;
    phases.push((
        "ARMCI-MPI source (fetch, autogen.sh)".into(),
        t0.elapsed().as_secs_f64(),
    ));
    let xfail = a.xfail.iter().filter(|x| a.tests.contains(x)).count();
    eprintln!(
        "clients: ARMCI-MPI: {} tests ({xfail} expected to fail), each on {} ranks; from {}",
        a.tests.len(),
        a.ranks,
        a.origin
    );
    let mut s = Section {
        client: Client::Armci,
        origin: a.origin.clone(),
        how: format!(
            "The `TESTS` of its Makefile.am (and the files it includes), {} of them, built \
             by `make -k check TESTS=` in an out-of-tree build per implementation \
             (`configure CC=<wrapper>`, then `make`), each run as `make check` runs it \
             (`LOG_COMPILER = {}`) with the implementation's launcher and {} ranks, in the \
             build folder, killed after {limit} s; pass: exit status 0{}. Logs: \
             target/clients/armci/<impl>/logs.",
            a.tests.len(),
            a.log_compiler,
            a.ranks,
            if xfail > 0 {
                " (for XFAIL_TESTS: not 0)"
            } else {
                ""
            }
        ),
        rows: a.tests.clone(),
        cols: Vec::new(),
        gaps: Vec::new(),
    };
    for imp in &opts.impls {
        let (cells, g) = armci_run(imp, &a, dir, limit, phases);
        let mut gap = Vec::new();
        if !g.undeclared.is_empty() {
            gap.push(format!(
                "called without a declaration in mpi.h: {}",
                join(&g.undeclared)
            ));
        }
        if !g.undefined.is_empty() {
            gap.push(format!("undefined at link time: {}", join(&g.undefined)));
        }
        s.cols.push(cells);
        s.gaps.push(gap);
    }
    Ok(s)
}

/// mpi4py's window and RMA tests, built and run with every implementation.
fn mpi4py_section(
    opts: &Options,
    dir: &Path,
    limit: u64,
    phases: &mut Vec<(String, f64)>,
) -> Result<Section, Unavailable> {
    let t0 = Instant::now();
    let m = mpi4py_prepare(dir)?;
    phases.push((
        "mpi4py source and build environment".into(),
        t0.elapsed().as_secs_f64(),
    ));
    let ranks: Vec<String> = MPI4PY_RANKS.iter().map(u32::to_string).collect();
    let mut s = Section {
        client: Client::Mpi4py,
        origin: m.origin.clone(),
        how: format!(
            "Built per implementation by its own build configuration (`MPICC=<wrapper> pip \
             install --no-build-isolation --no-deps --target <site> .`; log: \
             target/clients/mpi4py/<impl>/build.log); its test files {} run by its own \
             runner (`python test/main.py --path <site> --no-builddir -v FILE`, each rank's \
             output in a file of its own) under the launcher on {} ranks, killed after \
             {limit} s; pass: exit status 0. Cases: unittest's `Ran N tests` less those \
             skipped (mpi4py skips a whole file where, for one, `MPI_Win_create` fails) and \
             those that failed on some rank (none counted when a rank printed no summary). \
             Logs: target/clients/mpi4py/<impl>/logs/<file>-n<ranks>/.",
            MPI4PY_TESTS.join(", "),
            ranks.join(", ")
        ),
        rows: MPI4PY_TESTS
            .iter()
            .flat_map(|f| MPI4PY_RANKS.iter().map(move |n| format!("{f} -n {n}")))
            .collect(),
        cols: Vec::new(),
        gaps: Vec::new(),
    };
    let mut missing: Vec<Option<BTreeSet<String>>> = Vec::new();
    for imp in &opts.impls {
        let (cells, miss) = mpi4py_run(imp, &m, dir, limit, phases);
        s.cols.push(cells);
        missing.push(miss);
    }
    // what mpi4py's probe found missing (it checks few names of an MPI it knows)
    let checked = |imp: &Impl| {
        let log = dir.join(imp.name).join("build.log");
        probe_checked(&std::fs::read_to_string(log).unwrap_or_default())
    };
    for (i, imp) in opts.impls.iter().enumerate() {
        let mut gap = Vec::new();
        if let Some(miss) = &missing[i] {
            let one_sided: BTreeSet<String> =
                miss.iter().filter(|n| is_one_sided(n)).cloned().collect();
            gap.push(format!(
                "mpi4py's probe: {} of the {} MPI names it checked are missing (list: \
                 target/clients/mpi4py/{}/missing.txt; mpi4py emulates or stubs them); \
                 one-sided ones: {}",
                miss.len(),
                checked(imp),
                imp.name,
                if one_sided.is_empty() {
                    "none".to_string()
                } else {
                    join(&one_sided)
                }
            ));
        }
        s.gaps.push(gap);
    }
    Ok(s)
}

/// results.md: summaries, phases, the tables side by side, rma's failures with their
/// messages, and what the builds found missing.
fn report(
    command: &str,
    opts: &Options,
    sections: &[Section],
    summary: &[String],
    notes: &[String],
    phases: &[(String, f64)],
) -> String {
    let mut md =
        String::from("# Third-party one-sided MPI clients, built unmodified, side by side\n\n");
    md.push_str(&format!("`{command}`\n\n"));
    for s in summary {
        md.push_str(&format!("- {s}\n"));
    }
    for n in notes {
        md.push_str(&format!("- note: {n}\n"));
    }
    md.push_str("\n| phase | seconds |\n|---|---:|\n");
    for (what, secs) in phases {
        md.push_str(&format!("| {what} | {secs:.0} |\n"));
    }
    let rma = opts.impls.iter().position(|i| i.name == "rma");
    for s in sections {
        md.push_str(&format!(
            "\n## {}\n\nFrom {}.\n\n{}\n\n",
            s.client.title(),
            s.origin,
            s.how
        ));
        md.push_str("| test |");
        for imp in &opts.impls {
            md.push_str(&format!(" {} |", imp.name));
        }
        md.push_str("\n|---|");
        for _ in &opts.impls {
            md.push_str("---|");
        }
        md.push('\n');
        for (r, row) in s.rows.iter().enumerate() {
            md.push_str(&format!("| `{row}` |"));
            for col in &s.cols {
                let c = &col[r];
                let note = match c.why.first() {
                    Some(w) if c.outcome != Outcome::Pass => {
                        format!(": {}", clip(&w.replace('|', "/"), 90))
                    }
                    _ => String::new(),
                };
                md.push_str(&format!(" {}{note} |", c.text()));
            }
            md.push('\n');
        }
        md.push_str("| **passed** |");
        for col in 0..s.cols.len() {
            md.push_str(&format!(" **{}** |", s.summary(col)));
        }
        md.push('\n');
        if let Some(rc) = rma {
            let failed: Vec<usize> = (0..s.rows.len())
                .filter(|&r| s.cols[rc][r].outcome != Outcome::Pass)
                .collect();
            if !failed.is_empty() {
                md.push_str(&format!("\n### rma's failures ({})\n\n", failed.len()));
                for r in failed {
                    let c = &s.cols[rc][r];
                    let elsewhere: Vec<&str> = opts
                        .impls
                        .iter()
                        .enumerate()
                        .filter(|&(i, _)| i != rc && s.cols[i][r].outcome == Outcome::Pass)
                        .map(|(_, imp)| imp.name)
                        .collect();
                    md.push_str(&format!(
                        "- `{}`: {}{}\n",
                        s.rows[r],
                        c.outcome.cell(),
                        if elsewhere.is_empty() {
                            String::new()
                        } else {
                            format!(" (passes on {})", elsewhere.join(", "))
                        }
                    ));
                    for w in &c.why {
                        md.push_str(&format!("  - `{}`\n", w.replace('`', "'")));
                    }
                }
            }
        }
        if s.gaps.iter().any(|g| !g.is_empty()) {
            md.push_str("\n### What the builds found missing\n\n");
            for (imp, gap) in opts.impls.iter().zip(&s.gaps) {
                for g in gap {
                    md.push_str(&format!("- {}: {g}\n", imp.name));
                }
            }
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `cargo xtask clients ARGS`, with the defaults filled in.
    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        let argv = ["xtask", "clients"].iter().chain(args);
        match crate::cli::try_parse_from(argv)? {
            crate::cli::Task::Clients(o) => Ok(o.with_defaults()),
            other => panic!("not clients: {other:?}"),
        }
    }

    #[test]
    fn options_parse() {
        let o = parse(&[
            "--impl",
            "rma,mpich",
            "--client",
            "mpi4py",
            "--min-pass-mpi4py",
            "7",
            "--timeout-cap",
            "30",
        ])
        .unwrap();
        assert_eq!(
            o.impls.iter().map(|i| i.name).collect::<Vec<_>>(),
            ["rma", "mpich"]
        );
        assert_eq!(o.clients, [Client::Mpi4py]);
        assert_eq!(
            (o.min_mpi4py, o.min_armci, o.cap),
            (Some(7), None, Some(30))
        );
        assert!(parse(&["--client", "x"]).is_err());
        assert!(parse(&["--min-pass-armci"]).is_err());
        let help = parse(&["--help"]).unwrap_err();
        assert_eq!(
            (help.kind(), help.exit_code()),
            (clap::error::ErrorKind::DisplayHelp, 0)
        );
        let d = parse(&[]).unwrap();
        assert_eq!(d.clients, [Client::Armci, Client::Mpi4py]);
        assert_eq!(d.impls[0].name, "rma");
        // --impl and --client add up when repeated, as before
        let r = parse(&["--impl", "rma", "--impl", "mpich", "--client", "armci-mpi"]).unwrap();
        assert_eq!(r.impls.len(), 2);
        assert_eq!(r.clients, [Client::Armci]);
        let a = parse(&["--armci-src", "/src/armci"]).unwrap();
        assert_eq!(a.armci_src.as_deref(), Some(Path::new("/src/armci")));
    }

    #[test]
    fn automake_tests_with_includes_comments_and_launcher() {
        let files: BTreeMap<&str, &str> = [
            ("sub/Makefile.mk", "check_PROGRAMS += sub/a sub/b\nTESTS += sub/a \\\n  sub/b \\\n  #sub/c \\\n  # end\n\nsub_a_LDADD = x.la\n"),
            ("more.mk", "TESTS += more/z\nXFAIL_TESTS += sub/b\n"),
        ]
        .into_iter()
        .collect();
        let top = "TESTS =\nXFAIL_TESTS = \nMPIEXEC = mpiexec -n 3\nLOG_COMPILER=$(MPIEXEC)\ninclude sub/Makefile.mk\ninclude $(top_srcdir)/more.mk\nall:\n\techo TESTS = no\n";
        let mut vars = BTreeMap::new();
        let read = |f: &str| files.get(f).map(|s| s.to_string());
        parse_automake(top, &mut vars, &read, 0);
        assert_eq!(expand(&vars["TESTS"], &vars), "sub/a sub/b more/z");
        assert_eq!(vars["XFAIL_TESTS"], "sub/b");
        let lc = expand(&vars["LOG_COMPILER"], &vars);
        assert_eq!(lc, "mpiexec -n 3");
        assert_eq!(launcher_ranks(&lc), Some(3));
        assert_eq!(launcher_ranks("mpiexec"), None);
    }

    #[test]
    fn unittest_summaries_over_ranks() {
        let out = "[0@vm] MPI 3.1\n..E.s..\n.\n======\nERROR: testA (test_win.TestX.testA) (rank=0, count=1)\n----\nTraceback (most recent call last):\n  File \"x\", line 1\n    with nogil: CHKERR( MPI_Allgatherv_c(\nNotImplementedError\n\n----\nRan 7 tests in 0.1s\n\nFAILED (errors=1, skipped=1)\n...ERROR: testA (test_win.TestX.testA)\nRan 7 tests in 0.1s\nFAILED (errors=1, skipped=1)\n";
        let c = parse_unittest(out);
        assert_eq!(c.ran, 7);
        assert_eq!(c.skipped, 1);
        assert_eq!(c.summaries, 2);
        assert_eq!(
            c.failed.iter().collect::<Vec<_>>(),
            ["test_win.TestX.testA"]
        );
        assert_eq!(c.passed(2), 5);
        assert_eq!(c.passed(3), 0, "a rank without a summary counts nothing");
        assert_eq!(
            python_errors(out),
            ["NotImplementedError from MPI_Allgatherv_c"]
        );
        let ok = parse_unittest("Ran 36 tests in 0.7s\n\nOK\n");
        let exc = "  File \"x.pxi\", line 194, in f\n    CHKERR( MPI_Type_get_extent_c(btype, &lb, &extent) )\nmpi4py.MPI.Exception: MPI_ERR_OTHER: x\n";
        assert_eq!(
            python_errors(exc),
            ["MPI_Type_get_extent_c: mpi4py.MPI.Exception: MPI_ERR_OTHER: x"]
        );
        assert_eq!(ok.passed(1), 36);
    }

    #[test]
    fn build_logs_name_what_is_missing() {
        let log = "x.c:210:3: warning: implicit declaration of function 'MPI_Op_create'; did you mean 'MPI_Win_create'? [-Wimplicit-function-declaration]\n/usr/bin/ld: init.c:(.text+0x5ce): undefined reference to `MPI_Op_free'\ny.c:1:1: error: unknown type name 'MPI_Foo'\n";
        let g = build_gaps(log);
        assert_eq!(join(&g.undeclared), "MPI_Op_create");
        assert_eq!(join(&g.undefined), "MPI_Op_free");
        assert_eq!(g.errors.len(), 1);
        assert_eq!(
            mpi_names("PMPI_X and MPI_Win_get(MPI_COMM_WORLD"),
            ["MPI_Win_get", "MPI_COMM_WORLD"]
        );
        assert_eq!(
            probe_missing("  checking for 'MPI_A'...\n  **** failed check for 'MPI_Win_x'\n")
                .into_iter()
                .collect::<Vec<_>>(),
            ["MPI_Win_x"]
        );
        assert_eq!(
            probe_checked("  checking for 'MPI_A'...\n  checking for function 'MPI_B' ...\n  checking for header 'dlfcn.h'\n"),
            2
        );
    }

    #[test]
    fn what_killed_ranks_were_doing() {
        let ranks = vec![
            (
                "0".to_string(),
                "testA (m.C.testA) ... ok\ntestB (m.C.testB) ... ".to_string(),
            ),
            (
                "1".to_string(),
                "testA (m.C.testA) ... ok\ntestB (m.C.testB) ... ERROR\n".to_string(),
            ),
        ];
        assert_eq!(
            unfinished(&ranks),
            [
                "rank 0: still in m.C.testB when killed",
                "rank 1: m.C.testB ERROR"
            ]
        );
        let merged = [
            parse_unittest("Ran 3 tests\nOK\n"),
            parse_unittest("ERROR: t (m.C.t)\nRan 3 tests\nFAILED (errors=1)\n"),
        ]
        .into_iter()
        .fold(Cases::default(), Cases::merge);
        assert_eq!((merged.summaries, merged.passed(2)), (2, 2));
    }

    #[test]
    fn calls_in_c_text() {
        let body = "static int PyMPI_Type_get_extent_c(MPI_Datatype a1, MPI_Count *a2)\n{\n  PyMPI_WEAK_CALL(MPI_Type_get_extent_c, a1, a2);\n  ierr = MPI_Type_get_extent_x(a1, a2, a3);\n  x = PMPI_Foo(1);\n}\n";
        assert_eq!(called_functions(body), ["MPI_Type_get_extent_x"]);
    }

    #[test]
    fn failure_lines_prefer_errors() {
        let out = "[0] hello\n[1] Error: MPI_Win_lock failed\n[0] Error: MPI_Win_lock failed\nrmarun: 1 of 2 ranks failed\n";
        assert_eq!(
            failure_lines(out),
            ["Error: MPI_Win_lock failed", "rmarun: 1 of 2 ranks failed"]
        );
        assert_eq!(failure_lines("a\nb\nc\nd\n"), ["b", "c", "d"]);
    }
}
