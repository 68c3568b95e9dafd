//! `cargo xtask mpich-suite`: MPICH's own one-sided test suite (`test/mpi/rma` of the
//! MPICH source), unmodified, built and run against each MPI implementation at hand,
//! side by side, with MPICH's pass rule.
//!
//! The suite is never copied into this repository: it is fetched at run time from
//! Debian's MPICH source package (`apt-get source --download-only mpich`, which needs a
//! `deb-src` entry; as root one is added for the archive the machine already uses),
//! and only `test/mpi/{rma,util,include,dtpools}` and the Makefile fragments are
//! unpacked, under `target/mpich-suite/src`.
//!
//! Each program is built as the suite's `rma/Makefile.am` describes it (its sources
//! and `-D` flags, `-lm` where listed), with MTest (`util/mtest.c`, `mtest_common.c`,
//! `mtest_single.c`) and the datatype pools (`dtpools/src`), by each implementation's
//! compiler wrapper. The configure step the suite normally runs is replaced by a small
//! `mpitestconf.h` written here (the C library's headers and functions a Debian
//! machine has). Then `rma/testlist.in` runs entry by entry with its rank count,
//! arguments and time limit under the implementation's launcher. An entry passes, as
//! MPICH's `runtests` judges it, when the launcher exits 0 and its merged output is one
//! line `No Errors` (besides `Test Passed` lines). Entries marked `@largetest@` and
//! programs behind `BUILD_MPIX_TESTS` (MPICH extensions) are left out, as a default
//! MPICH build does; a program that does not build counts as a failure there, and is
//! shown here as "not built" (its compiler output in `bin/<mpi>/<program>.build.log`).
//! `testlist.dtp` (the datatype-pool entries, which MPICH's configure generates) is
//! not run yet.
//!
//! rma joins the table once its C ABI (`mpi.h` and `rmacc`) exists: the same sources,
//! built by rmacc, launched by rmarun.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::ArgAction;

use crate::bench::model::Outcome as BenchOutcome;

/// An MPI implementation the suite (and `cargo xtask clients`) is built and run with.
#[derive(Debug)]
pub(crate) struct Impl {
    pub(crate) name: &'static str,
    pub(crate) cc: &'static str,
    /// The launcher and the arguments before the rank count.
    pub(crate) launch: &'static [&'static str],
    /// Extra compiler flags.
    pub(crate) cflags: &'static [&'static str],
}

pub(crate) const IMPLS: &[Impl] = &[
    // rma's C interface: paths in the workspace, made absolute by `tool`
    Impl {
        name: "rma",
        cc: "rma-capi/bin/rmacc",
        launch: &["target/release/rmarun", "--no-prefix", "-n"],
        cflags: &[],
    },
    Impl {
        name: "mpich",
        cc: "mpicc.mpich",
        launch: &["mpiexec.mpich", "-n"],
        cflags: &[],
    },
    Impl {
        name: "openmpi",
        cc: "mpicc.openmpi",
        launch: &[
            "mpirun.openmpi",
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
        ],
        // Open MPI's mpi.h hides the MPI-1 names the datatype pools call
        // (MPI_Type_hvector, MPI_Type_hindexed; its library still has them) unless asked
        cflags: &["-DOMPI_OMIT_MPI1_COMPAT_DECLS=0"],
    },
];

/// A command of an implementation: rma's are paths in the workspace (rmarun in the
/// target directory), the others are looked up in PATH.
pub(crate) fn tool(s: &str) -> PathBuf {
    let root = std::env::current_dir().unwrap_or_default();
    match s.strip_prefix("target/") {
        Some(rest) => {
            let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
            root.join(target).join(rest)
        }
        None if s.contains('/') => root.join(s),
        None => PathBuf::from(s),
    }
}

/// Builds rma's side: the C interface library and rmarun.
pub(crate) fn build_rma() -> Result<(), String> {
    let ok = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "build",
            "--release",
            "-p",
            "rma-capi",
            "-p",
            "rma-shm",
            "--bin",
            "rmarun",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err("cargo build of rma-capi and rmarun failed".into())
    }
}

/// One line of the testlist.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) program: String,
    pub(crate) ranks: u32,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) time_limit: Option<u64>,
}

impl Entry {
    /// The value of its `-count=` argument (the datatype-pool entries have one).
    fn count(&self) -> Option<u64> {
        self.args
            .iter()
            .find_map(|a| a.strip_prefix("-count=")?.parse().ok())
    }

    /// How the entry shows in the table: the program, its rank count and arguments.
    fn label(&self) -> String {
        let mut s = format!("{} {}", self.program, self.ranks);
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}

/// The entries of a testlist: `program ranks [key=value ...]`; comments, blank lines
/// and lines marked `@...@` (large tests, left out by default) are skipped.
pub(crate) fn parse_testlist(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('@') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(program), Some(ranks)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(ranks) = ranks.parse() else { continue };
        let mut e = Entry {
            program: program.to_string(),
            ranks,
            args: Vec::new(),
            env: Vec::new(),
            time_limit: None,
        };
        for w in words {
            match w.split_once('=') {
                Some(("arg", v)) => e.args.push(v.to_string()),
                Some(("timeLimit", v)) => e.time_limit = v.parse().ok(),
                Some(("env", v)) => {
                    if let Some((k, val)) = v.split_once('=') {
                        e.env.push((k.to_string(), val.to_string()));
                    }
                }
                _ => {}
            }
        }
        out.push(e);
    }
    out
}

/// A program as `Makefile.am` builds it: its sources and preprocessor flags (beyond
/// the common ones), and extra libraries.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Program {
    pub(crate) sources: Vec<String>,
    pub(crate) flags: Vec<String>,
    pub(crate) libs: Vec<String>,
}

/// The programs of an automake file: `noinst_PROGRAMS` outside conditionals, each
/// with its `_SOURCES` (default `NAME.c`), its `_CPPFLAGS` less `$(AM_CPPFLAGS)` and
/// the `-l` flags of its `_LDADD`.
pub(crate) fn parse_makefile_am(text: &str) -> BTreeMap<String, Program> {
    let lines = logical_lines(text);
    let mut names = Vec::new();
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let mut depth = 0usize;
    for l in &lines {
        let t = l.trim();
        if t.starts_with("if ") {
            depth += 1;
            continue;
        }
        if t == "endif" || t.starts_with("endif ") {
            depth = depth.saturating_sub(1);
            continue;
        }
        if depth > 0 || t.starts_with('#') {
            continue;
        }
        let (key, value) = if let Some((k, v)) = t.split_once("+=") {
            (k.trim(), v.trim())
        } else if let Some((k, v)) = t.split_once('=') {
            (k.trim(), v.trim())
        } else {
            continue;
        };
        if key == "noinst_PROGRAMS" {
            names.extend(value.split_whitespace().map(str::to_string));
        } else {
            vars.insert(key.to_string(), value.to_string());
        }
    }
    names
        .into_iter()
        .map(|n| {
            let sources = vars
                .get(&format!("{n}_SOURCES"))
                .map(|v| v.split_whitespace().map(str::to_string).collect())
                .unwrap_or_else(|| vec![format!("{n}.c")]);
            let flags = vars
                .get(&format!("{n}_CPPFLAGS"))
                .map(|v| {
                    v.split_whitespace()
                        .filter(|w| !w.starts_with("$("))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let libs = vars
                .get(&format!("{n}_LDADD"))
                .map(|v| {
                    v.split_whitespace()
                        .filter(|w| w.starts_with("-l"))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            (
                n,
                Program {
                    sources,
                    flags,
                    libs,
                },
            )
        })
        .collect()
}

/// The lines of a makefile with its continuation lines (ending in `\\`) joined.
pub(crate) fn logical_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for raw in text.lines() {
        let l = raw.trim_end();
        if let Some(stripped) = l.strip_suffix('\\') {
            cur.push_str(stripped);
            cur.push(' ');
        } else {
            cur.push_str(l);
            lines.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// MPICH's runtests pass rule: exit status 0, and the output holds exactly one line
/// `No Errors` (any case of the `E`, blanks around) and otherwise only `Test Passed`
/// lines.
pub(crate) fn passes(exit_ok: bool, output: &str) -> bool {
    let mut no_errors = 0;
    for line in output.lines() {
        let t = line.trim();
        if t == "No Errors" || t == "No errors" {
            no_errors += 1;
        } else if t != "Test Passed" {
            return false;
        }
    }
    exit_ok && no_errors == 1
}

/// What a run of one entry came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Pass,
    Fail,
    Timeout,
    /// The program did not build with this implementation.
    NotBuilt,
}

impl Outcome {
    pub(crate) fn cell(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "FAIL",
            Outcome::Timeout => "TIMEOUT",
            Outcome::NotBuilt => "not built",
        }
    }
}

/// `cargo xtask mpich-suite`'s options.
#[derive(clap::Args, Debug)]
#[command(args_override_self = true)]
pub(crate) struct Options {
    /// Implementations: rma, mpich, openmpi (default: rma and every MPI installed)
    #[arg(
        long = "impl",
        value_name = "NAME,...",
        value_delimiter = ',',
        value_parser = parse_impl
    )]
    impls: Vec<&'static Impl>,
    /// Run only the entries whose program name contains one of the texts
    #[arg(long, value_name = "TEXT,...", value_delimiter = ',', action = ArgAction::Set)]
    only: Vec<String>,
    /// Never wait longer than this for one entry (default: the entry's own limit, 180 s
    /// when it names none, as runtests has it)
    #[arg(long = "timeout-cap", value_name = "SECS")]
    cap: Option<u64>,
    /// Fail (exit status 1) when rma passes fewer than N entries: the floor CI tracks
    #[arg(long, value_name = "N")]
    min_pass: Option<usize>,
    /// Run the datatype-pool entries (testlist.dtp) instead of testlist.in
    ///
    /// Run the datatype-pool entries (testlist.dtp, which MPICH's configure generates from
    /// maint/dtp-test-config.txt with its default types MPI_INT and
    /// MPI_INT:4+MPI_DOUBLE:8) instead of testlist.in.
    #[arg(long, verbatim_doc_comment)]
    dtp: bool,
    /// Leave out the entries whose -count argument exceeds N
    ///
    /// Leave out the entries whose -count argument exceeds N (the datatype pools' large
    /// counts take minutes each; CI runs the others).
    #[arg(long, value_name = "N", verbatim_doc_comment)]
    max_count: Option<u64>,
}

/// An implementation by its name (`--impl`).
pub(crate) fn parse_impl(name: &str) -> Result<&'static Impl, String> {
    IMPLS.iter().find(|i| i.name == name).ok_or_else(|| {
        let names: Vec<&str> = IMPLS.iter().map(|i| i.name).collect();
        format!("unknown implementation {name:?} ({})", names.join(", "))
    })
}

/// The implementations when `--impl` names none: rma and every MPI whose compiler
/// wrapper is installed.
pub(crate) fn default_impls() -> Vec<&'static Impl> {
    IMPLS
        .iter()
        .filter(|i| i.name == "rma" || crate::setup::which(i.cc).is_some())
        .collect()
}

/// The unpacked `test/mpi` of Debian's MPICH source, fetched when missing.
fn suite_dir(root: &Path) -> Result<PathBuf, String> {
    let src = root.join("src");
    if let Some(dir) = find_unpacked(&src) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    apt_get_source("mpich", &src)?;
    let tarball = std::fs::read_dir(&src)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("mpich_") && n.contains(".orig.tar"))
        })
        .ok_or("no mpich_*.orig.tar.* downloaded")?;
    let name = tarball
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    // mpich_4.0.2.orig.tar.xz -> mpich-4.0.2
    let version = name
        .trim_start_matches("mpich_")
        .split(".orig")
        .next()
        .unwrap_or_default();
    let top = format!("mpich-{version}/test/mpi");
    let parts: Vec<String> = [
        "rma",
        "util",
        "include",
        "dtpools",
        "Makefile_common.mtest",
        "maint/dtp-test-config.txt",
    ]
    .iter()
    .map(|p| format!("{top}/{p}"))
    .collect();
    let ok = Command::new("tar")
        .arg("xf")
        .arg(name)
        .args(&parts)
        .current_dir(&src)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        return Err(format!("unpacking {} failed", tarball.display()));
    }
    find_unpacked(&src).ok_or_else(|| "the unpacked source has no test/mpi/rma".into())
}

/// The types MPICH's configure generates the datatype-pool entries with when given
/// none (`--with-dtpools-datatypes`'s default).
const DTP_TYPES: &[&str] = &["MPI_INT", "MPI_INT:4+MPI_DOUBLE:8"];

/// `maint/dtp-test-config.txt` of the suite, unpacked from the source package if the
/// suite was unpacked before this runner read it.
fn dtp_config(root: &Path, suite: &Path) -> Result<String, String> {
    let path = suite.join("maint/dtp-test-config.txt");
    if !path.is_file() {
        let src = root.join("src");
        let tarball = std::fs::read_dir(&src)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .find(|n| n.starts_with("mpich_") && n.contains(".orig.tar"))
            .ok_or("no mpich_*.orig.tar.* in the suite's download folder")?;
        // suite = <src>/mpich-X/test/mpi
        let top = suite
            .strip_prefix(&src)
            .map_err(|_| "the suite is not under its download folder".to_string())?;
        let member = format!("{}/maint/dtp-test-config.txt", top.display());
        let ok = Command::new("tar")
            .args(["xf", &tarball, &member])
            .current_dir(&src)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(format!("unpacking {member} from {tarball} failed"));
        }
    }
    std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The testlist.dtp lines of directory `dir` that MPICH's `maint/gentests_dtp.sh`
/// writes for `config` (dtp-test-config.txt) and `types`, re-expressed here: each
/// config line `path:args:counts:passthrough:procs:mintestsize:maxtestsize:gacc`
/// gives one entry per type and count, with `-testsize` starting at the maximum and
/// scaled down as the count grows (never below the minimum), and a `-seed` counted
/// from 1 over every entry of every directory in file order (pt2pt and part entries
/// come in pairs of receive counts).
pub(crate) fn dtp_testlist(config: &str, types: &[&str], dir: &str) -> String {
    let mut out = String::new();
    let mut seed = 1u64;
    for line in config.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(':').collect();
        let field = |i: usize| f.get(i).copied().unwrap_or("").trim();
        let (path, args, counts, pass, procs) = (field(0), field(1), field(2), field(3), field(4));
        let min: u64 = field(5).parse().unwrap_or(0);
        let max: u64 = field(6).parse().unwrap_or(min);
        let (testdir, testname) = path.rsplit_once('/').unwrap_or(("", path));
        let other: String = args
            .split_whitespace()
            .map(|a| format!(" arg={a}"))
            .collect();
        let per = if testdir == "pt2pt" || testdir == "part" {
            2
        } else {
            1
        };
        for ty in types {
            let (mut testsize, mut first) = (0u64, 0u64);
            for count in counts.split_whitespace() {
                let c: u64 = count.parse().unwrap_or(1).max(1);
                if testsize == 0 {
                    testsize = max;
                    first = c;
                } else {
                    testsize = (testsize * first / c).clamp(min, max.max(min));
                }
                if testdir == dir {
                    out.push_str(&format!(
                        "{testname} {procs} arg=-type={ty} arg=-count={c} arg=-seed={seed} arg=-testsize={testsize}{other} {pass}\n"
                    ));
                }
                seed += per;
            }
        }
    }
    out
}

fn find_unpacked(src: &Path) -> Option<PathBuf> {
    std::fs::read_dir(src)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .map(|p| p.join("test/mpi"))
        .find(|p| p.join("rma/testlist.in").is_file())
}

/// `apt-get source --download-only PACKAGE` into `dir` (killed after 10 minutes);
/// when that fails, a `deb-src` entry is added (as root, [`add_deb_src`]) and it is
/// tried once more. The error quotes apt-get's own `E:` lines (its whole output is in
/// `dir/apt-get-source-PACKAGE.log`).
pub(crate) fn apt_get_source(package: &str, dir: &Path) -> Result<(), String> {
    let fetch = || -> Result<(), String> {
        let mut cmd = Command::new("apt-get");
        cmd.args(["source", "--download-only", package])
            .current_dir(dir);
        let log = dir.join(format!("apt-get-source-{package}.log"));
        let outcome = crate::bench::run_with_timeout(cmd, &log, Duration::from_secs(600));
        if matches!(outcome, BenchOutcome::Ok) {
            return Ok(());
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let errors: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("E:"))
            .map(str::trim)
            .collect();
        let why = if errors.is_empty() {
            outcome.describe()
        } else {
            errors.join("; ")
        };
        Err(format!("apt-get source --download-only {package}: {why}"))
    };
    let Err(first) = fetch() else {
        return Ok(());
    };
    add_deb_src().map_err(|e| format!("{first} ({e})"))?;
    fetch()
}

/// Adds a `deb-src` entry for the Debian archive and suite this machine's
/// `debian.sources` uses, then `apt-get update` (as root only).
fn add_deb_src() -> Result<(), String> {
    let list = Path::new("/etc/apt/sources.list.d/rma-deb-src.sources");
    if list.exists() {
        return Err("apt-get source failed although a deb-src entry exists".into());
    }
    let sources = std::fs::read_to_string("/etc/apt/sources.list.d/debian.sources")
        .map_err(|e| format!("no deb-src entry and no debian.sources to derive one: {e}"))?;
    // the first stanza: the main archive
    let stanza = sources.split("\n\n").next().unwrap_or_default();
    let field = |k: &str| {
        stanza
            .lines()
            .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()))
    };
    let (Some(uris), Some(suites)) = (field("URIs:"), field("Suites:")) else {
        return Err("debian.sources names no URIs or Suites".into());
    };
    let suite = suites.split_whitespace().next().unwrap_or("stable");
    let mut text = format!("Types: deb-src\nURIs: {uris}\nSuites: {suite}\nComponents: main\n");
    if let Some(k) = field("Signed-By:") {
        text.push_str(&format!("Signed-By: {k}\n"));
    }
    eprintln!("xtask: adding {} (deb-src for {suite})", list.display());
    std::fs::write(list, text).map_err(|e| {
        format!(
            "{}: {e} (as root this runner adds it; or add a deb-src line for your Debian archive yourself and run apt-get update)",
            list.display()
        )
    })?;
    let ok = Command::new("apt-get")
        .args(["update", "-qq"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        // leave the machine as it was
        let _ = std::fs::remove_file(list);
        let _ = Command::new("apt-get").args(["update", "-qq"]).status();
        Err("apt-get update failed with a deb-src entry".into())
    }
}

/// The configure results the suite's sources test, for a Debian machine.
const MPITESTCONF: &str = "\
/* written by cargo xtask mpich-suite in place of the suite's configure step */
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_INIT_THREAD 1
/* mpithreadtest.h (included by mpitest.h) defines the package numbers */
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
";

/// The configure results the datatype pools test (`dtpools/dtpoolsconf.h`).
const DTPOOLSCONF: &str = "\
/* written by cargo xtask mpich-suite in place of the dtpools configure step */
#define HAVE_INTTYPES_H 1
#define HAVE_LIMITS_H 1
#define HAVE_MEMSET 1
#define HAVE_STDINT_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRDUP 1
#define HAVE_STRINGS_H 1
#define HAVE_STRING_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_UNISTD_H 1
#define STDC_HEADERS 1
";

/// Builds every program for `imp` into `bin`; the names that built.
fn build(
    imp: &Impl,
    suite: &Path,
    conf: &Path,
    programs: &BTreeMap<String, Program>,
    bin: &Path,
) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(bin).map_err(|e| e.to_string())?;
    let incs = [
        format!("-I{}", conf.display()),
        format!("-I{}", suite.join("include").display()),
        format!("-I{}", suite.join("dtpools/include").display()),
    ];
    // MTest and the datatype pools, once, as objects
    let mut objs = Vec::new();
    let mut common: Vec<PathBuf> = ["util/mtest.c", "util/mtest_common.c", "util/mtest_single.c"]
        .iter()
        .map(|f| suite.join(f))
        .collect();
    if let Ok(rd) = std::fs::read_dir(suite.join("dtpools/src")) {
        let mut dtp: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "c"))
            .collect();
        dtp.sort();
        common.extend(dtp);
    }
    for (i, c) in common.iter().enumerate() {
        let o = bin.join(format!("common{i}.o"));
        let out = Command::new(tool(imp.cc))
            .args(["-O1", "-w", "-c"])
            .args(imp.cflags)
            .args(&incs)
            .arg(c)
            .arg("-o")
            .arg(&o)
            .output()
            .map_err(|e| format!("{}: {e}", imp.cc))?;
        if out.status.success() {
            objs.push(o);
        } else if i < 3 {
            // MTest itself: nothing links without it
            return Err(format!(
                "{} could not build {}:\n{}",
                imp.cc,
                c.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        } else {
            // a datatype-pool file (Open MPI's mpi.h refuses the MPI-1 calls one
            // makes): only the programs that need it fail to link
            eprintln!(
                "mpich-suite: {}: {} does not build (left out)",
                imp.name,
                c.display()
            );
        }
    }
    // the datatype pools as an archive, so that a program takes only what it calls
    let pools: Vec<PathBuf> = objs.drain(3..).collect();
    if !pools.is_empty() {
        let lib = bin.join("libdtpools.a");
        let _ = std::fs::remove_file(&lib);
        let ok = Command::new("ar")
            .arg("rcs")
            .arg(&lib)
            .args(&pools)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err("ar could not archive the datatype pools".into());
        }
        objs.push(lib);
    }
    let mut built = Vec::new();
    let names: Vec<&String> = programs.keys().collect();
    // two compilers at a time (this machine kind has two cores)
    for pair in names.chunks(2) {
        let mut children = Vec::new();
        for name in pair {
            let p = &programs[*name];
            let mut cmd = Command::new(tool(imp.cc));
            cmd.args(["-O1", "-w"])
                .args(imp.cflags)
                .args(&incs)
                .args(&p.flags)
                .args(p.sources.iter().map(|s| suite.join("rma").join(s)))
                .args(&objs)
                .arg("-o")
                .arg(bin.join(name))
                .args(&p.libs)
                .arg("-lm");
            let log = std::fs::File::create(bin.join(format!("{name}.build.log")));
            let child = log.and_then(|f| {
                let err = f.try_clone()?;
                cmd.stdout(f).stderr(err).spawn()
            });
            children.push((name.to_string(), child));
        }
        for (name, child) in children {
            if let Ok(mut c) = child {
                if c.wait().is_ok_and(|s| s.success()) {
                    built.push(name);
                }
            }
        }
    }
    Ok(built)
}

/// Runs one entry; the outcome, the seconds it took and its output's first lines.
fn run(imp: &Impl, bin: &Path, e: &Entry, cap: Option<u64>) -> (Outcome, f64, String) {
    let limit = e.time_limit.unwrap_or(180);
    let limit = cap.map_or(limit, |c| limit.min(c));
    let mut cmd = Command::new(tool(imp.launch[0]));
    cmd.args(&imp.launch[1..])
        .arg(e.ranks.to_string())
        .arg(bin.join(&e.program))
        .args(&e.args)
        .envs(e.env.iter().map(|(k, v)| (k, v)))
        // `cargo xtask` runs under `cargo run`, which puts the target's deps folders
        // first in LD_LIBRARY_PATH: a debug librma_capi.so there would be loaded instead
        // of the release one rmacc linked (its RUNPATH comes after LD_LIBRARY_PATH)
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(bin)
        .stdin(Stdio::null());
    let start = Instant::now();
    let log = bin.join(format!("{}.log", e.label().replace([' ', '/'], "_")));
    let status = crate::bench::run_with_timeout(cmd, &log, Duration::from_secs(limit));
    let secs = start.elapsed().as_secs_f64();
    let output = std::fs::read_to_string(&log).unwrap_or_default();
    let ok = match status {
        BenchOutcome::Ok => passes(true, &output),
        BenchOutcome::TimedOut(_) => return (Outcome::Timeout, secs, String::new()),
        BenchOutcome::Failed(_) | BenchOutcome::Skipped(_) => false,
    };
    let head: String = output.lines().take(3).collect::<Vec<_>>().join(" / ");
    (if ok { Outcome::Pass } else { Outcome::Fail }, secs, head)
}

pub(crate) fn main(mut opts: Options) -> bool {
    if opts.impls.is_empty() {
        opts.impls = default_impls();
    }
    if opts.impls.is_empty() {
        eprintln!(
            "mpich-suite: no MPI compiler wrapper installed (mpicc.mpich, mpicc.openmpi); cargo xtask setup installs them"
        );
        return false;
    }
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
    // absolute: programs run in their own directory
    let root = std::env::current_dir()
        .unwrap_or_default()
        .join(target)
        .join("mpich-suite");
    let suite = match suite_dir(&root) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mpich-suite: cannot fetch the suite: {e}");
            return false;
        }
    };
    let conf = root.join("conf");
    if std::fs::create_dir_all(&conf)
        .and_then(|()| std::fs::write(conf.join("mpitestconf.h"), MPITESTCONF))
        .and_then(|()| std::fs::write(suite.join("dtpools/dtpoolsconf.h"), DTPOOLSCONF))
        .is_err()
    {
        eprintln!("mpich-suite: cannot write {}", conf.display());
        return false;
    }
    let read = |f: &str| std::fs::read_to_string(suite.join(f)).unwrap_or_default();
    let programs = parse_makefile_am(&read("rma/Makefile.am"));
    let mut entries = if opts.dtp {
        let config = match dtp_config(&root, &suite) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("mpich-suite: {e}");
                return false;
            }
        };
        parse_testlist(&dtp_testlist(&config, DTP_TYPES, "rma"))
    } else {
        parse_testlist(&read("rma/testlist.in"))
    };
    // programs the Makefile builds only with MPICH's extensions
    let before = entries.len();
    entries.retain(|e| programs.contains_key(&e.program));
    if entries.len() < before {
        eprintln!(
            "mpich-suite: {} entries left out: their programs are built only with MPICH's extensions (BUILD_MPIX_TESTS)",
            before - entries.len()
        );
    }
    if !opts.only.is_empty() {
        entries.retain(|e| opts.only.iter().any(|o| e.program.contains(o.as_str())));
    }
    if let Some(max) = opts.max_count {
        entries.retain(|e| e.count().is_none_or(|c| c <= max));
    }
    eprintln!(
        "mpich-suite: {} programs, {} testlist entries, from {}",
        programs.len(),
        entries.len(),
        suite.display()
    );
    let wanted: BTreeMap<String, Program> = programs
        .into_iter()
        .filter(|(n, _)| entries.iter().any(|e| &e.program == n))
        .collect();
    let mut table: Vec<Vec<(Outcome, f64, String)>> = vec![Vec::new(); entries.len()];
    let mut rma_passed = None;
    let mut summary = Vec::new();
    for imp in &opts.impls {
        let bin = root.join("bin").join(imp.name);
        if imp.name == "rma" {
            if let Err(e) = build_rma() {
                eprintln!("mpich-suite: {e}");
                return false;
            }
        }
        let t0 = Instant::now();
        let built = match build(imp, &suite, &conf, &wanted, &bin) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("mpich-suite: {}: {e}", imp.name);
                return false;
            }
        };
        eprintln!(
            "mpich-suite: {}: {} of {} programs built in {:.0} s",
            imp.name,
            built.len(),
            wanted.len(),
            t0.elapsed().as_secs_f64()
        );
        let t0 = Instant::now();
        let mut counts = [0usize; 4];
        let counted = imp.name == "rma";
        for (i, e) in entries.iter().enumerate() {
            let r = if built.contains(&e.program) {
                run(imp, &bin, e, opts.cap)
            } else {
                (Outcome::NotBuilt, 0.0, String::new())
            };
            counts[r.0 as usize] += 1;
            eprintln!(
                "{:<8} {:<50} {:<9} {:>6.1}s",
                imp.name,
                e.label(),
                r.0.cell(),
                r.1
            );
            table[i].push(r);
        }
        let line = format!(
            "{}: {} passed, {} failed, {} timed out, {} not built, of {} entries ({:.0} s)",
            imp.name,
            counts[Outcome::Pass as usize],
            counts[Outcome::Fail as usize],
            counts[Outcome::Timeout as usize],
            counts[Outcome::NotBuilt as usize],
            entries.len(),
            t0.elapsed().as_secs_f64()
        );
        summary.push(line);
        if counted {
            rma_passed = Some(counts[Outcome::Pass as usize]);
        }
    }
    let mut md = String::from(if opts.dtp {
        "# MPICH's test/mpi/rma datatype-pool entries (testlist.dtp), entry by entry\n\n"
    } else {
        "# MPICH's test/mpi/rma, entry by entry\n\n"
    });
    md.push_str(&format!(
        "`{}`; suite from {}.\n\n",
        crate::command_line(),
        suite.display()
    ));
    for s in &summary {
        md.push_str(&format!("- {s}\n"));
    }
    md.push_str("\n| entry |");
    for imp in &opts.impls {
        md.push_str(&format!(" {} |", imp.name));
    }
    md.push_str("\n|---|");
    for _ in &opts.impls {
        md.push_str("---|");
    }
    md.push('\n');
    for (e, row) in entries.iter().zip(&table) {
        md.push_str(&format!("| `{}` |", e.label()));
        for (o, secs, head) in row {
            let note = if *o == Outcome::Fail && !head.is_empty() {
                format!(
                    ": {}",
                    head.replace('|', "/").chars().take(80).collect::<String>()
                )
            } else {
                String::new()
            };
            md.push_str(&format!(" {} ({secs:.1} s){note} |", o.cell()));
        }
        md.push('\n');
    }
    // the two lists keep separate files, so running both (as .ci/run does) keeps both
    let out = root.join(if opts.dtp {
        "results-dtp.md"
    } else {
        "results.md"
    });
    if let Err(e) = std::fs::write(&out, md) {
        eprintln!("mpich-suite: {}: {e}", out.display());
        return false;
    }
    for s in &summary {
        println!("{s}");
    }
    println!("mpich-suite: wrote {}", out.display());
    match (opts.min_pass, rma_passed) {
        (Some(floor), Some(n)) if n < floor => {
            eprintln!("mpich-suite: rma passed {n} entries, below the floor of {floor}");
            false
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtp_entries_follow_the_generator() {
        let config = "# c\nrma/accfence1::1 512::4:16:1024:0\npt2pt/pingping::1 2::2:8:32:0\nrma/getfence1::65530:timeLimit=300 mem=2:2:16::0\n";
        let t = dtp_testlist(config, &["MPI_INT", "X"], "rma");
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 6);
        assert_eq!(
            lines[0].trim(),
            "accfence1 4 arg=-type=MPI_INT arg=-count=1 arg=-seed=1 arg=-testsize=1024"
        );
        // the second count scales the test size down by the count's growth
        assert!(
            lines[1].contains("-count=512 arg=-seed=2 arg=-testsize=16"),
            "{}",
            lines[1]
        );
        assert!(lines[3].contains("-type=X arg=-count=512 arg=-seed=4"));
        // pt2pt's 2 types x 2 counts x 2 receive counts took seeds 5..=12
        assert!(
            lines[4].starts_with(
                "getfence1 2 arg=-type=MPI_INT arg=-count=65530 arg=-seed=13 arg=-testsize=16"
            ),
            "{}",
            lines[4]
        );
        let e = parse_testlist(&t);
        assert_eq!(e[4].time_limit, Some(300));
        assert_eq!(e[5].args[3], "-testsize=16");
    }

    #[test]
    fn a_testlist_line_gives_its_ranks_args_and_limit() {
        let t = "# comment\n\nwinname 2\n@largetest@win_large_shm 4\nrma_contig 2 arg=-iter=10 timeLimit=30 env=A=b\n";
        let e = parse_testlist(t);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].program, "winname");
        assert_eq!(e[1].args, ["-iter=10"]);
        assert_eq!(e[1].time_limit, Some(30));
        assert_eq!(e[1].env, [("A".to_string(), "b".to_string())]);
    }

    #[test]
    fn makefile_am_programs_with_sources_and_flags() {
        let t = "noinst_PROGRAMS = a \\\n  b\nif BUILD_MPIX_TESTS\nnoinst_PROGRAMS += x\nendif\nb_SOURCES = shared.c\nb_CPPFLAGS = -DFOO $(AM_CPPFLAGS)\nb_LDADD = $(LDADD) -lm\n";
        let p = parse_makefile_am(t);
        assert_eq!(p.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(p["a"].sources, ["a.c"]);
        assert_eq!(p["b"].sources, ["shared.c"]);
        assert_eq!(p["b"].flags, ["-DFOO"]);
        assert_eq!(p["b"].libs, ["-lm"]);
    }

    #[test]
    fn the_pass_rule_is_runtests_rule() {
        assert!(passes(true, " No Errors\n"));
        assert!(passes(true, "No errors\nTest Passed\n"));
        assert!(!passes(false, " No Errors\n"));
        assert!(!passes(true, ""));
        assert!(!passes(true, " No Errors\n No Errors\n"));
        assert!(!passes(true, "warning: x\n No Errors\n"));
    }
}
