//! `cargo xtask bench`: rma's benchmark (`rma-bench`, both transports), the same
//! scenarios against MPICH and Open MPI (`benches/c/mpi_rma_bench.c`) and the
//! hardware limits (`benches/c/hw_limits.c`), interleaved over rounds so that slow
//! phases of a noisy machine hit every configuration alike, then summarized against
//! the issue's bar into `target/bench/` (summary.md, results.json, two SVG plots).
//! `cargo xtask bench --scaling` runs the rank-scaling scenarios instead (`scaling.rs`).

pub(crate) mod model;
mod plot;
mod report;
mod scaling;

use crate::setup::{which, MPI_TOOLS};
use clap::ArgAction;
use model::{Line, Outcome, Run, Summary};
use report::Report;
use serde_json::{json, Value};
use std::fs;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Which program a configuration runs, and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Program {
    Hw,
    Rma {
        transport: Option<&'static str>,
        create: bool,
        /// Run with `RMA_WAIT=park`: every wait parks at once, never spins (to set
        /// beside the default, which spins on free cores).
        park: bool,
        /// Run with `RMA_CHECK=conflicts`: every window checked for conflicting
        /// accesses (the checker's cost).
        check: bool,
        /// Run the binaries of [`ENV_BASELINE`] (a build from before a change)
        /// instead of this tree's.
        before: bool,
    },
    Mpich {
        create: bool,
        /// Run with MPICH's asynchronous progress thread (`MPIR_CVAR_ASYNC_PROGRESS=1`).
        progress: bool,
    },
    Ompi {
        osc_sm: bool,
        create: bool,
    },
    /// rma-bench itself under an MPI launcher: the mpi transport over MPICH (or Open
    /// MPI), to compare with the same library called directly.
    RmaMpi {
        ompi: bool,
        /// Run with rma's MPI progress thread (`RMA_MPI_PROGRESS=thread`).
        progress: bool,
        /// Initialize MPI at MPI_THREAD_SINGLE (`RMA_MPI_THREAD=single`).
        single: bool,
        /// As for [`Program::Rma`].
        before: bool,
    },
}

/// One column of the comparison.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) key: &'static str,
    pub(crate) label: &'static str,
    /// The command line, for humans.
    pub(crate) command: &'static str,
    pub(crate) program: Program,
    pub(crate) note: &'static str,
}

const OMPI_CAS: &str = "-x: compare_and_swap not run, it segfaults in Open MPI 4.1 osc/rdma over \
                        btl/vader (open-mpi/ompi#11349)";

/// Every configuration, in run and column order.
pub(crate) const CONFIGS: &[Config] = &[
    Config {
        key: "hw",
        label: "HW",
        command: "target/bench/hw_limits",
        program: Program::Hw,
        note: "two threads pinned to CPU 0 and 1, plain C11 atomics and AVX loads/stores",
    },
    Config {
        key: "rma_atomic",
        label: "rma atomic",
        command: "rmarun -n 2 rma-bench --transport atomic",
        program: Program::Rma {
            transport: Some("atomic"),
            create: false,
            park: false,
            check: false,
            before: false,
        },
        note: "",
    },
    Config {
        key: "rma_atomic_check",
        label: "rma atomic checked",
        command: "RMA_CHECK=conflicts rmarun -n 2 rma-bench --transport atomic",
        program: Program::Rma {
            transport: Some("atomic"),
            create: false,
            park: false,
            check: true,
            before: false,
        },
        note: "every window checked for conflicting accesses (rma_check): the checker's cost",
    },
    Config {
        key: "rma_queued",
        label: "rma queued",
        command: "rmarun -n 2 rma-bench --transport queued",
        program: Program::Rma {
            transport: Some("queued"),
            create: false,
            park: false,
            check: false,
            before: false,
        },
        note: "",
    },
    Config {
        key: "rma_create",
        label: "rma create",
        command: "rmarun -n 2 rma-bench -c",
        program: Program::Rma {
            transport: None,
            create: true,
            park: false,
            check: false,
            before: false,
        },
        note: "Window::create over private memory: the queued transport across processes",
    },
    Config {
        key: "mpich_alloc",
        label: "MPICH",
        command: "mpiexec.mpich -n 2 -bind-to core mpi_rma_bench.mpich",
        program: Program::Mpich {
            create: false,
            progress: false,
        },
        note: "",
    },
    Config {
        key: "mpich_async",
        label: "MPICH async",
        command: "MPIR_CVAR_ASYNC_PROGRESS=1 mpiexec.mpich -n 2 -bind-to core mpi_rma_bench.mpich",
        program: Program::Mpich {
            create: false,
            progress: true,
        },
        note: "MPICH's own asynchronous progress thread (it raises the thread level to MPI_THREAD_MULTIPLE)",
    },
    Config {
        key: "mpich_create",
        label: "MPICH create",
        command: "mpiexec.mpich -n 2 -bind-to core mpi_rma_bench.mpich -c",
        program: Program::Mpich {
            create: true,
            progress: false,
        },
        note: "MPI_Alloc_mem + MPI_Win_create",
    },
    Config {
        key: "ompi_sm",
        label: "OMPI osc/sm",
        command: "mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core --mca osc sm mpi_rma_bench.openmpi",
        program: Program::Ompi {
            osc_sm: true,
            create: false,
        },
        note: "",
    },
    Config {
        key: "ompi_rdma",
        label: "OMPI osc/rdma",
        command: "mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core mpi_rma_bench.openmpi -x",
        program: Program::Ompi {
            osc_sm: false,
            create: false,
        },
        note: OMPI_CAS,
    },
    Config {
        key: "rma_mpi_mpich",
        label: "rma mpi/MPICH",
        command: "mpiexec.mpich -n 2 -bind-to core rma-bench (built with the mpi feature)",
        program: Program::RmaMpi {
            ompi: false,
            progress: false,
            single: false,
            before: false,
        },
        note: "the mpi transport: rma-win's layer over the MPICH calls of the MPICH column",
    },
    Config {
        key: "rma_mpi_progress",
        label: "rma mpi/MPICH +thread",
        command: "RMA_MPI_PROGRESS=thread mpiexec.mpich -n 2 -bind-to core rma-bench",
        program: Program::RmaMpi {
            ompi: false,
            progress: true,
            single: false,
            before: false,
        },
        note: "the mpi transport over MPICH with rma's progress thread (opt-in)",
    },
    Config {
        key: "rma_mpi_ompi",
        label: "rma mpi/OMPI",
        command: "mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core rma-bench -x",
        program: Program::RmaMpi {
            ompi: true,
            progress: false,
            single: false,
            before: false,
        },
        note: "the mpi transport over Open MPI osc/rdma (compare with OMPI osc/rdma); -x as there",
    },
    Config {
        key: "rma_mpi_ompi_single",
        label: "rma mpi/OMPI single",
        command: "RMA_MPI_THREAD=single mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core rma-bench -x",
        program: Program::RmaMpi {
            ompi: true,
            progress: false,
            single: true,
            before: false,
        },
        note: "as rma mpi/OMPI, with MPI initialized at MPI_THREAD_SINGLE as the C baseline is (Open MPI takes no internal locks then)",
    },
    Config {
        key: "ompi_rdma_create",
        label: "OMPI rdma create",
        command: "mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core mpi_rma_bench.openmpi -x -c",
        program: Program::Ompi {
            osc_sm: false,
            create: true,
        },
        note: OMPI_CAS,
    },
    Config {
        key: "rma_atomic_before",
        label: "rma atomic (before)",
        command: "$RMA_BENCH_BASELINE/rmarun -n 2 $RMA_BENCH_BASELINE/rma-bench --transport atomic",
        program: Program::Rma {
            transport: Some("atomic"),
            create: false,
            park: false,
            check: false,
            before: true,
        },
        note: BEFORE,
    },
    Config {
        key: "rma_queued_before",
        label: "rma queued (before)",
        command: "$RMA_BENCH_BASELINE/rmarun -n 2 $RMA_BENCH_BASELINE/rma-bench --transport queued",
        program: Program::Rma {
            transport: Some("queued"),
            create: false,
            park: false,
            check: false,
            before: true,
        },
        note: BEFORE,
    },
    Config {
        key: "rma_mpi_mpich_before",
        label: "rma mpi/MPICH (before)",
        command: "mpiexec.mpich -n 2 -bind-to core $RMA_BENCH_BASELINE/rma-bench",
        program: Program::RmaMpi {
            ompi: false,
            progress: false,
            single: false,
            before: true,
        },
        note: BEFORE,
    },
    Config {
        key: "rma_mpi_ompi_before",
        label: "rma mpi/OMPI (before)",
        command: "mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core $RMA_BENCH_BASELINE/rma-bench -x",
        program: Program::RmaMpi {
            ompi: true,
            progress: false,
            single: false,
            before: true,
        },
        note: BEFORE,
    },
    Config {
        key: "rma_mpi_ompi_single_before",
        label: "rma mpi/OMPI single (before)",
        command: "RMA_MPI_THREAD=single mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --bind-to core $RMA_BENCH_BASELINE/rma-bench -x",
        program: Program::RmaMpi {
            ompi: true,
            progress: false,
            single: true,
            before: true,
        },
        note: BEFORE,
    },
];

/// Environment variable naming a directory with `rmarun` and `rma-bench` built (release,
/// with the `mpi` feature where MPI is installed) from an earlier tree: the `*_before`
/// configurations run them beside this tree's, in the same rounds, so that a change's
/// before and after are measured side by side. Without it those configurations are
/// left out unless `--only` names them.
pub(crate) const ENV_BASELINE: &str = "RMA_BENCH_BASELINE";

const BEFORE: &str =
    "the same program built from the tree in $RMA_BENCH_BASELINE (before the change)";

/// Whether `program` runs the baseline's binaries.
fn is_before(program: Program) -> bool {
    matches!(
        program,
        Program::Rma { before: true, .. } | Program::RmaMpi { before: true, .. }
    )
}

/// The baseline's directory, if [`ENV_BASELINE`] names one.
fn baseline_dir() -> Option<PathBuf> {
    std::env::var_os(ENV_BASELINE).map(PathBuf::from)
}

/// The configuration with this key (keys in the code are always known ones).
pub(crate) fn config(key: &str) -> &'static Config {
    CONFIGS
        .iter()
        .find(|c| c.key == key)
        .unwrap_or_else(|| panic!("unknown configuration {key}"))
}

/// `cargo xtask bench`'s command line (and `cargo xtask bench criterion`).
#[derive(clap::Args, Debug, Clone, PartialEq)]
#[command(
    args_override_self = true,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
pub(crate) struct Args {
    /// Rounds: every configuration runs once per round, interleaved (default 3, 1 with --quick)
    #[arg(long, value_name = "N")]
    rounds: Option<u32>,
    /// One shorter round (the programs' repetitions fewer and shorter)
    #[arg(long)]
    quick: bool,
    /// Seconds before a run is killed (default 120; with --scaling 60, 30 with --quick)
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Only these configurations, by key (such as hw,rma_atomic,ompi_sm)
    #[arg(long, value_name = "KEY,...", value_delimiter = ',', action = ArgAction::Set)]
    only: Option<Vec<String>>,
    /// The rank-scaling scenarios (rma-scale, mpi_rma_scale.c) instead of the 2-rank bench
    #[arg(long)]
    scaling: bool,
    /// With --scaling: the numbers of ranks (default 2, 4, 8, ... up to the CPUs, 2x the CPUs)
    #[arg(
        long,
        value_name = "N,...",
        requires = "scaling",
        value_delimiter = ',',
        action = ArgAction::Set,
        value_parser = scaling::parse_rank
    )]
    ranks: Option<Vec<usize>>,
    /// With --scaling: only these scenarios (benches/SCENARIOS.md)
    #[arg(long, value_name = "NAME,...", requires = "scaling")]
    scenarios: Option<String>,
    /// `bench criterion`.
    #[command(subcommand)]
    criterion: Option<BenchTask>,
}

/// What `cargo xtask bench` runs instead of its own bench.
#[derive(clap::Subcommand, Debug, Clone, PartialEq)]
pub(crate) enum BenchTask {
    /// The criterion benches: `cargo bench -p rma-benches [ARGS] [-- BENCH_ARGS]`
    Criterion {
        /// Arguments for cargo bench (such as --bench kernels)
        #[arg(allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
        /// Arguments after `--`, passed on with it (to the bench programs)
        #[arg(last = true, value_name = "BENCH_ARGS")]
        bench_args: Vec<String>,
    },
}

impl Args {
    /// With `bench criterion`: the arguments for `cargo bench -p rma-benches`, a `--`
    /// given on the command line included.
    pub(crate) fn criterion_args(&self) -> Option<Vec<String>> {
        let Some(BenchTask::Criterion { args, bench_args }) = &self.criterion else {
            return None;
        };
        let mut v = args.clone();
        if !bench_args.is_empty() {
            v.push("--".into());
            v.extend(bench_args.iter().cloned());
        }
        Some(v)
    }

    /// What clap cannot check alone: the keys `--only` names are configurations of this
    /// kind of run.
    pub(crate) fn check(&self) -> Result<(), String> {
        let o = Options::of(self);
        let known = o.configs();
        if let Some(k) = o
            .only
            .iter()
            .flatten()
            .find(|k| !known.iter().any(|c| c.key == *k))
        {
            let keys: Vec<&str> = known.iter().map(|c| c.key).collect();
            return Err(format!(
                "unknown configuration {k:?} (known{}: {})",
                if o.scaling { " with --scaling" } else { "" },
                keys.join(", ")
            ));
        }
        Ok(())
    }
}

/// What a run of `cargo xtask bench` was asked for, the defaults filled in.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    rounds: u32,
    quick: bool,
    timeout: u64,
    only: Option<Vec<String>>,
    /// `--scaling`: the rank-scaling scenarios (scaling.rs) instead of the 2-rank bench.
    scaling: bool,
    /// `--ranks`, sorted, without repeats: the numbers of ranks of a scaling run
    /// (default: [`scaling::default_ranks`]).
    ranks: Option<Vec<usize>>,
    /// `--scenarios`: only these scenarios of a scaling run (the programs' `-s`).
    scenarios: Option<String>,
}

impl Options {
    /// The options of a command line: 3 rounds (1 with `--quick`, at least 1); runs
    /// killed after 120 s, with `--scaling` [`scaling::default_timeout`].
    fn of(a: &Args) -> Options {
        let timeout = a.timeout.unwrap_or(if a.scaling {
            scaling::default_timeout(a.quick)
        } else {
            120
        });
        let ranks = a.ranks.clone().map(|mut v| {
            v.sort_unstable();
            v.dedup();
            v
        });
        Options {
            rounds: a.rounds.unwrap_or(if a.quick { 1 } else { 3 }).max(1),
            quick: a.quick,
            timeout,
            only: a.only.clone(),
            scaling: a.scaling,
            ranks,
            scenarios: a.scenarios.clone(),
        }
    }

    /// The options of `cargo xtask bench ARGS` (tests).
    #[cfg(test)]
    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        let argv = ["xtask", "bench"].iter().chain(args);
        match crate::cli::try_parse_from(argv)? {
            crate::cli::Task::Bench(a) => Ok(Options::of(&a)),
            other => panic!("not bench: {other:?}"),
        }
    }

    /// The programs' `-r` and `-t`: about 5 s per MPI configuration (3 s quick); for
    /// the scaling programs, about a quarter of a second per scenario (0.06 s quick).
    fn reps_secs(&self) -> (&'static str, &'static str) {
        match (self.scaling, self.quick) {
            (false, true) => ("3", "0.01"),
            (false, false) => ("5", "0.02"),
            (true, true) => ("3", "0.02"),
            (true, false) => ("5", "0.05"),
        }
    }

    /// The configurations of this kind of run.
    fn configs(&self) -> &'static [Config] {
        if self.scaling {
            scaling::CONFIGS
        } else {
            CONFIGS
        }
    }

    /// The configurations `--only` names, else every one (the `*_before` ones only
    /// with [`ENV_BASELINE`] set).
    fn selected(&self) -> Vec<&'static Config> {
        let baseline = baseline_dir().is_some();
        self.configs()
            .iter()
            .filter(|c| match &self.only {
                Some(o) => o.iter().any(|k| k == c.key),
                None => baseline || !is_before(c.program),
            })
            .collect()
    }
}

/// Where things are: the workspace, cargo's target directory, the bench output.
struct Paths {
    root: PathBuf,
    target: PathBuf,
    out: PathBuf,
    raw: PathBuf,
}

impl Paths {
    fn new() -> Paths {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map_or_else(|| root.join("target"), |t| root.join(t));
        let out = target.join("bench");
        let raw = out.join("raw");
        Paths {
            root,
            target,
            out,
            raw,
        }
    }

    fn release(&self, bin: &str) -> PathBuf {
        self.target.join("release").join(bin)
    }

    /// One of rma's binaries: this tree's release build, or the baseline's.
    fn rma_exe(&self, bin: &str, before: bool) -> PathBuf {
        match baseline_dir().filter(|_| before) {
            Some(d) => d.join(bin),
            None => self.release(bin),
        }
    }

    /// The same, with the output in `target/bench/<sub>/` (raw files under it).
    fn under(self, sub: &str) -> Paths {
        let out = self.out.join(sub);
        Paths {
            raw: out.join("raw"),
            out,
            ..self
        }
    }
}

/// Says which MPI tools are missing when MPI configurations are selected, and how to
/// install them; those configurations are then skipped (the bench installs nothing:
/// `cargo xtask setup` does).
fn report_missing_mpi(wanted: bool) {
    let missing: Vec<&str> = MPI_TOOLS
        .iter()
        .copied()
        .filter(|t| which(t).is_none())
        .collect();
    if !wanted || missing.is_empty() {
        return;
    }
    println!(
        "bench: {} missing: the configurations that need them are skipped (install: {})",
        missing.join(", "),
        crate::setup::mpi_install_hint()
    );
}

/// Runs a compiler (or cargo); the first lines of its output if it fails.
fn build(cmd: Command, what: &str) -> Result<(), String> {
    println!("bench: building {what}");
    let (ok, out) = crate::run_captured(cmd);
    if ok {
        return Ok(());
    }
    let head: Vec<&str> = out
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(20)
        .collect();
    println!("bench: building {what} failed:\n{}", head.join("\n"));
    Err(format!("{what} did not build"))
}

fn compile_c(compiler: &str, source: &Path, exe: &Path, flags: &[&str]) -> Result<(), String> {
    if which(compiler).is_none() {
        return Err(format!("{compiler} not installed"));
    }
    let mut cmd = Command::new(compiler);
    cmd.args(flags).arg("-o").arg(exe).arg(source);
    build(cmd, &exe.file_name().unwrap_or_default().to_string_lossy())
}

/// The programs a kind of run builds and launches.
#[derive(Debug, Clone, Copy)]
struct Suite {
    /// rma-benches' binary, run under rmarun or an MPI launcher.
    rust_bin: &'static str,
    /// The MPI program's stem: `benches/c/<c_stem>.c`, built as `<c_stem>.mpich` and
    /// `<c_stem>.openmpi` in the output directory.
    c_stem: &'static str,
    /// Open MPI options beyond the launcher's and `--mca osc sm` of an osc/sm run.
    ompi_extra: &'static [&'static str],
    /// Whether the programs take `-x` (skip compare_and_swap) where Open MPI needs it.
    skips_cas: bool,
}

/// `cargo xtask bench`'s programs (benches/SCENARIOS.md).
const BENCH: Suite = Suite {
    rust_bin: "rma-bench",
    c_stem: "mpi_rma_bench",
    ompi_extra: &[],
    skips_cas: true,
};

impl Suite {
    fn c_exe(&self, p: &Paths, ompi: bool) -> PathBuf {
        let mpi = if ompi { "openmpi" } else { "mpich" };
        p.out.join(format!("{}.{mpi}", self.c_stem))
    }
}

/// Whether each program is ready to run (else why not).
struct Ready {
    hw: Result<(), String>,
    rma: Result<(), String>,
    mpich: Result<(), String>,
    ompi: Result<(), String>,
    /// The binaries of [`ENV_BASELINE`].
    baseline: Result<(), String>,
}

impl Ready {
    fn prepare(p: &Paths, selected: &[&Config], suite: &Suite) -> Ready {
        let wants = |f: fn(&Program) -> bool| selected.iter().any(|c| f(&c.program));
        let not_selected = || Err("not selected".to_owned());
        let c_dir = p.root.join("benches").join("c");
        let mpi = c_dir.join(format!("{}.c", suite.c_stem));
        // an MPI's tools present, then the benchmark compiled with its wrapper
        let mpi_build = |mpicc: &str, launcher: &str, ompi: bool| {
            let missing: Vec<&str> = [mpicc, launcher]
                .into_iter()
                .filter(|t| which(t).is_none())
                .collect();
            if !missing.is_empty() {
                return Err(format!("{} not installed", missing.join(" and ")));
            }
            compile_c(mpicc, &mpi, &suite.c_exe(p, ompi), &["-O2", "-Wall"])
        };
        Ready {
            hw: if wants(|p| *p == Program::Hw) {
                if which("gcc").is_none() {
                    println!(
                        "bench: gcc missing: the hw configuration is skipped (install: cargo \
                         xtask setup, or as root: apt-get update && apt-get install -y gcc)"
                    );
                }
                let flags = ["-O2", "-Wall", "-march=native", "-pthread"];
                compile_c(
                    "gcc",
                    &c_dir.join("hw_limits.c"),
                    &p.out.join("hw_limits"),
                    &flags,
                )
            } else {
                not_selected()
            },
            rma: if wants(|p| matches!(p, Program::Rma { .. } | Program::RmaMpi { .. })) {
                let mut cmd = crate::cargo();
                cmd.current_dir(&p.root)
                    .args([
                        "build",
                        "--release",
                        "--quiet",
                        "-p",
                        "rma-shm",
                        "--bin",
                        "rmarun",
                        "-p",
                        "rma-benches",
                        "--bin",
                        suite.rust_bin,
                    ])
                    .args(crate::feature_args());
                let what = format!("rmarun and {} (cargo build --release)", suite.rust_bin);
                build(cmd, &what)
            } else {
                not_selected()
            },
            mpich: if wants(|p| matches!(p, Program::Mpich { .. })) {
                mpi_build("mpicc.mpich", "mpiexec.mpich", false)
            } else {
                not_selected()
            },
            ompi: if wants(|p| matches!(p, Program::Ompi { .. })) {
                mpi_build("mpicc.openmpi", "mpirun.openmpi", true)
            } else {
                not_selected()
            },
            baseline: if wants(|p| is_before(*p)) {
                match baseline_dir() {
                    None => Err(format!("{ENV_BASELINE} is not set")),
                    Some(d) => ["rmarun", suite.rust_bin]
                        .iter()
                        .map(|b| d.join(b))
                        .find(|b| !b.is_file())
                        .map_or(Ok(()), |b| Err(format!("{} is missing", b.display()))),
                }
            } else {
                not_selected()
            },
        }
    }

    fn of(&self, program: Program) -> &Result<(), String> {
        match program {
            Program::Hw => &self.hw,
            p if is_before(p) && self.baseline.is_err() => &self.baseline,
            Program::Rma { .. } => &self.rma,
            Program::Mpich { .. } => &self.mpich,
            Program::Ompi { .. } => &self.ompi,
            Program::RmaMpi { ompi, .. } => {
                let launcher = if ompi { &self.ompi } else { &self.mpich };
                if self.rma.is_err() {
                    &self.rma
                } else {
                    launcher
                }
            }
        }
    }
}

/// How many ranks a run starts, and whether that is more than the machine's cores.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ranks {
    n: usize,
    oversubscribed: bool,
}

impl Ranks {
    /// `cargo xtask bench`'s 2 ranks, one per core.
    const PAIR: Ranks = Ranks {
        n: 2,
        oversubscribed: false,
    };
}

/// The launcher of Open MPI (`ompi`) or MPICH: one rank per core, or with more ranks
/// than cores (oversubscribed) no binding at all.
fn mpi_launcher(ompi: bool, ranks: Ranks) -> Command {
    let n = ranks.n.to_string();
    let bind = if ranks.oversubscribed { "none" } else { "core" };
    if ompi {
        let mut c = Command::new("mpirun.openmpi");
        c.args(["--allow-run-as-root", "--oversubscribe", "-np", &n])
            .args(["--bind-to", bind]);
        c
    } else {
        let mut c = Command::new("mpiexec.mpich");
        c.args(["-n", &n, "-bind-to", bind]);
        c
    }
}

/// The command line of one configuration's program on `ranks`, before the
/// programs' common flags.
fn launch(c: &Config, p: &Paths, suite: &Suite, ranks: Ranks) -> Command {
    match c.program {
        Program::Hw => Command::new(p.out.join("hw_limits")),
        Program::Rma {
            transport,
            create,
            park,
            check,
            before,
        } => {
            let mut cmd = Command::new(p.rma_exe("rmarun", before));
            if check {
                cmd.env("RMA_CHECK", "conflicts");
            }
            if park {
                cmd.env("RMA_WAIT", "park");
            }
            cmd.args(["-n", &ranks.n.to_string()])
                .arg(p.rma_exe(suite.rust_bin, before));
            if let Some(t) = transport {
                cmd.args(["--transport", t]);
            }
            if create {
                cmd.arg("-c");
            }
            cmd
        }
        Program::Mpich { create, progress } => {
            let mut cmd = mpi_launcher(false, ranks);
            if progress {
                cmd.env("MPIR_CVAR_ASYNC_PROGRESS", "1");
            }
            cmd.arg(suite.c_exe(p, false));
            if create {
                cmd.arg("-c");
            }
            cmd
        }
        Program::Ompi { osc_sm, create } => {
            let mut cmd = mpi_launcher(true, ranks);
            if osc_sm {
                cmd.args(["--mca", "osc", "sm"]).args(suite.ompi_extra);
            }
            cmd.arg(suite.c_exe(p, true));
            if !osc_sm && suite.skips_cas {
                cmd.arg("-x");
            }
            if create {
                cmd.arg("-c");
            }
            cmd
        }
        Program::RmaMpi {
            ompi,
            progress,
            single,
            before,
        } => {
            let mut cmd = mpi_launcher(ompi, ranks);
            if progress {
                cmd.env("RMA_MPI_PROGRESS", "thread");
            }
            if single {
                cmd.env("RMA_MPI_THREAD", "single");
            }
            cmd.arg(p.rma_exe(suite.rust_bin, before));
            if ompi && suite.skips_cas {
                cmd.arg("-x");
            }
            cmd
        }
    }
}

/// The command of one configuration's run, writing its CSV to `csv`.
fn command(c: &Config, p: &Paths, o: &Options, suite: &Suite, ranks: Ranks, csv: &Path) -> Command {
    let mut cmd = launch(c, p, suite, ranks);
    let (reps, secs) = o.reps_secs();
    cmd.args(["-r", reps, "-t", secs]);
    if let Some(only) = &o.scenarios {
        cmd.args(["-s", only]);
    }
    cmd.arg("-o").arg(csv).current_dir(&p.root);
    cmd
}

/// Runs `cmd` in its own process group with output to `log`; past `timeout` the
/// whole group is killed, and every process it started (an MPI launcher's ranks in
/// process groups of their own included).
pub(crate) fn run_with_timeout(cmd: Command, log: &Path, timeout: Duration) -> Outcome {
    run_watched(cmd, log, timeout, false)
}

/// [`run_with_timeout`], and nothing it started outlives it: its processes are looked
/// up twice a second while it runs (never while a bench measures), and those still
/// there once it has ended, or still in its process group, are killed.
pub(crate) fn run_reaped(cmd: Command, log: &Path, timeout: Duration) -> Outcome {
    run_watched(cmd, log, timeout, true)
}

fn run_watched(mut cmd: Command, log: &Path, timeout: Duration, watch: bool) -> Outcome {
    let spawned = fs::File::create(log).and_then(|f| {
        let err = f.try_clone()?;
        cmd.stdin(Stdio::null())
            .stdout(f)
            .stderr(err)
            .process_group(0)
            .spawn()
    });
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(format!("could not start: {e}")),
    };
    let id = child.id();
    let born = procs::stat(id).map_or(0, |p| p.start);
    let mut seen = procs::Seen::default();
    let deadline = Instant::now() + timeout;
    let mut next_look = Instant::now() + Duration::from_millis(100);
    let outcome = loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => break Outcome::Ok,
            Ok(Some(status)) => {
                break Outcome::Failed(match (status.code(), status.signal()) {
                    (Some(code), _) => format!("exit status {code}"),
                    (None, Some(sig)) => format!("killed by signal {sig}"),
                    _ => status.to_string(),
                })
            }
            Ok(None) if Instant::now() < deadline => {
                if watch && Instant::now() >= next_look {
                    seen.add(procs::descendants(id));
                    next_look = Instant::now() + Duration::from_millis(500);
                }
                std::thread::sleep(Duration::from_millis(50))
            }
            Ok(None) => {
                // TERM first: an MPI launcher then ends its ranks, which Open MPI's
                // and MPICH's put in process groups of their own; KILL what is left,
                // groups and processes as they were before the TERM
                seen.add(procs::descendants(id));
                procs::signal_group(id, "TERM");
                let grace = Instant::now() + Duration::from_secs(3);
                while Instant::now() < grace && matches!(child.try_wait(), Ok(None)) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                procs::signal_group(id, "KILL");
                let _ = child.kill();
                let _ = child.wait();
                break Outcome::TimedOut(timeout.as_secs());
            }
            Err(e) => break Outcome::Failed(format!("wait failed: {e}")),
        }
    };
    let left = seen.kill_left(id, born);
    if left > 0 && matches!(outcome, Outcome::Ok | Outcome::Failed(_)) {
        eprintln!(
            "xtask: killed {left} process(es) left behind by {:?}",
            cmd.get_program()
        );
    }
    outcome
}

/// The processes a command started, from /proc (Linux), to kill what outlives it.
mod procs {
    use std::collections::BTreeMap;
    use std::process::Command;

    /// A process as /proc/PID/stat shows it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) struct Proc {
        pub(super) pid: u32,
        pub(super) ppid: u32,
        pub(super) pgid: u32,
        /// When it started (clock ticks since boot): a pid reused later differs.
        pub(super) start: u64,
    }

    pub(super) fn stat(pid: u32) -> Option<Proc> {
        parse_stat(
            pid,
            &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?,
        )
    }

    /// `pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
    /// cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime
    /// ...`; the command name may hold blanks and parentheses.
    pub(super) fn parse_stat(pid: u32, text: &str) -> Option<Proc> {
        let rest = text.get(text.rfind(')')? + 1..)?;
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(Proc {
            pid,
            ppid: f.get(1)?.parse().ok()?,
            pgid: f.get(2)?.parse().ok()?,
            start: f.get(19)?.parse().ok()?,
        })
    }

    fn all() -> Vec<Proc> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter_map(stat)
            .collect()
    }

    /// The processes descended from `root` now.
    pub(super) fn descendants(root: u32) -> Vec<Proc> {
        let all = all();
        let mut out: Vec<Proc> = Vec::new();
        let mut frontier = vec![root];
        while let Some(parent) = frontier.pop() {
            for p in all.iter().filter(|p| p.ppid == parent) {
                if !out.contains(p) {
                    out.push(*p);
                    frontier.push(p.pid);
                }
            }
        }
        out
    }

    /// `kill -s SIG -- -PGID`.
    pub(super) fn signal_group(pgid: u32, sig: &str) {
        let _ = Command::new("kill")
            .args(["-s", sig, "--", &format!("-{pgid}")])
            .stderr(std::process::Stdio::null())
            .status();
    }

    fn signal(pid: u32, sig: &str) {
        let _ = Command::new("kill")
            .args(["-s", sig, "--", &pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status();
    }

    /// The processes seen under a command, by pid.
    #[derive(Debug, Default)]
    pub(super) struct Seen(BTreeMap<u32, Proc>);

    impl Seen {
        pub(super) fn add(&mut self, procs: Vec<Proc>) {
            for p in procs {
                self.0.insert(p.pid, p);
            }
        }

        /// Kills what is still alive of the processes seen (the same pid and start
        /// time), with the process groups they lead, and what is still in the group
        /// `group` of the command started at `born`; how many processes that was.
        pub(super) fn kill_left(&self, group: u32, born: u64) -> usize {
            let ours = stat(std::process::id()).map(|p| p.pgid);
            let mut left: Vec<Proc> = all()
                .into_iter()
                .filter(|p| {
                    self.0.get(&p.pid).is_some_and(|s| s.start == p.start)
                        || (p.pgid == group && p.start >= born && Some(p.pgid) != ours)
                })
                .collect();
            left.retain(|p| p.pid != std::process::id());
            for p in &left {
                if p.pgid == p.pid && Some(p.pgid) != ours {
                    signal_group(p.pgid, "KILL");
                }
                signal(p.pid, "KILL");
            }
            left.len()
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn stat_lines_with_odd_names() {
            let line =
                "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 1 0 0 0 3 4 0 0 20 0 1 0 987654 1000 1";
            let p = super::parse_stat(4242, line).unwrap();
            assert_eq!((p.ppid, p.pgid, p.start), (17, 4242, 987654));
            assert!(super::parse_stat(1, "1 (x) S").is_none());
        }

        /// Whether a process runs with exactly this command line.
        fn running(cmdline: &str) -> bool {
            let want: String = cmdline.split(' ').map(|w| format!("{w}\0")).collect();
            std::fs::read_dir("/proc").into_iter().flatten().any(|e| {
                e.ok()
                    .and_then(|e| std::fs::read(e.path().join("cmdline")).ok())
                    .is_some_and(|c| c == want.as_bytes())
            })
        }

        #[test]
        fn nothing_outlives_a_run() {
            use std::process::Command;
            use std::time::Duration;
            let log = std::env::temp_dir().join(format!("xtask-reap-{}.log", std::process::id()));
            // a rank in a session of its own, left behind by a launcher that exits
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "setsid sleep 3141 & sleep 1"]);
            let out = crate::bench::run_reaped(cmd, &log, Duration::from_secs(20));
            assert!(matches!(out, crate::bench::model::Outcome::Ok), "{out:?}");
            assert!(!running("sleep 3141"));
            // and one of a launcher that hangs
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "setsid sleep 3142 & exec sleep 3143"]);
            let out = crate::bench::run_with_timeout(cmd, &log, Duration::from_millis(1500));
            assert!(
                matches!(out, crate::bench::model::Outcome::TimedOut(_)),
                "{out:?}"
            );
            assert!(!running("sleep 3142") && !running("sleep 3143"));
            let _ = std::fs::remove_file(&log);
        }
    }
}

/// One configuration on `ranks` in one round, its CSV written to `<stem>.csv` and its
/// output to `<stem>.txt` in the raw directory: its run record and the lines it wrote
/// (those it wrote before it failed or was killed too).
fn run_config(
    c: &'static Config,
    round: u32,
    (p, o, suite): (&Paths, &Options, &Suite),
    ranks: Ranks,
    stem: &str,
    ready: &Ready,
) -> (Run, Vec<Line>) {
    let start = Instant::now();
    let csv = p.raw.join(format!("{stem}.csv"));
    let outcome = match ready.of(c.program) {
        Err(why) => Outcome::Skipped(why.clone()),
        Ok(()) => {
            let log = csv.with_extension("txt");
            let timeout = Duration::from_secs(o.timeout);
            run_with_timeout(command(c, p, o, suite, ranks, &csv), &log, timeout)
        }
    };
    let lines = fs::read_to_string(&csv)
        .map(|t| Line::parse_all(c.key, round, &t))
        .unwrap_or_default();
    let run = Run {
        config: c.key,
        round,
        outcome,
        secs: start.elapsed().as_secs_f64(),
    };
    (run, lines)
}

/// The machine, for the record.
struct Machine {
    cpu: String,
    nproc: usize,
    kernel: String,
}

impl Machine {
    fn probe() -> Machine {
        let cpu = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                let l = s.lines().find(|l| l.starts_with("model name"))?;
                Some(l.split_once(':')?.1.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        Machine {
            cpu,
            nproc: std::thread::available_parallelism().map_or(0, |n| n.get()),
            kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "unknown".into()),
        }
    }
}

/// Now, as an ISO 8601 UTC date and time.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86400) as i64, secs % 86400);
    // civil date from days since 1970-01-01 (H. Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The "# library: ..." line an MPI run printed first.
fn library(p: &Paths, key: &str) -> Option<String> {
    library_in(&p.raw.join(format!("{key}_1.txt")))
}

/// The "# library: ..." line in a run's output.
fn library_in(log: &Path) -> Option<String> {
    let text = fs::read_to_string(log).ok()?;
    let line = text.lines().find_map(|l| l.split_once("# library: "))?.1;
    Some(line.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Everything a run produced, for results.json.
struct Record<'a> {
    date: &'a str,
    command: &'a str,
    machine: &'a Machine,
    options: &'a Options,
    runs: &'a [Run],
    lines: &'a [Line],
    summary: &'a Summary,
    report: &'a Report<'a>,
    paths: &'a Paths,
}

impl Record<'_> {
    fn json(&self) -> Value {
        let (reps, secs) = self.options.reps_secs();
        let configs: Vec<Value> = CONFIGS
            .iter()
            .map(|c| {
                json!({
                    "key": c.key,
                    "label": c.label,
                    "command": c.command,
                    "note": c.note,
                    "library": library(self.paths, c.key),
                    "contended_errors": self.summary.errors(c.key),
                })
            })
            .collect();
        let runs: Vec<Value> = self
            .runs
            .iter()
            .map(|r| {
                json!({
                    "config": r.config,
                    "round": r.round,
                    "outcome": r.outcome.describe(),
                    "secs": r.secs,
                })
            })
            .collect();
        let raw: Vec<Value> = self
            .lines
            .iter()
            .map(|l| {
                json!({
                    "config": l.config,
                    "round": l.round,
                    "section": l.section,
                    "test": l.test,
                    "n": l.n,
                    "iters": l.iters,
                    "med_us": l.med,
                    "min_us": l.min,
                    "max_us": l.max,
                    "unit": unit_of(&l.section),
                })
            })
            .collect();
        let summary: Vec<Value> = self
            .summary
            .iter()
            .map(|((c, sec, t, n), s)| {
                json!({
                    "config": c,
                    "section": sec,
                    "test": t,
                    "n": n,
                    "median_us": s.median,
                    "lo_us": s.lo,
                    "hi_us": s.hi,
                    "rounds": s.rounds,
                    "unit": unit_of(sec),
                })
            })
            .collect();
        let bar: Vec<Value> = self
            .report
            .bar()
            .into_iter()
            .map(|c| {
                json!({
                    "target": c.target,
                    "measured": c.measured,
                    "value": c.value,
                    "unit": c.unit.trim(),
                    "goal": c.goal,
                    "verdict": c.verdict.word(),
                    "note": c.note,
                })
            })
            .collect();
        json!({
            "date": self.date,
            "command": self.command,
            "machine": {
                "cpu": self.machine.cpu,
                "nproc": self.machine.nproc,
                "kernel": self.machine.kernel,
            },
            "options": {
                "rounds": self.options.rounds,
                "quick": self.options.quick,
                "reps": reps,
                "secs_per_rep": secs,
                "timeout_s": self.options.timeout,
            },
            "configs": configs,
            "runs": runs,
            "raw": raw,
            "summary": summary,
            "bar": bar,
            "contended_errors_total": self.report.contended_errors(),
        })
    }

    fn header(&self) -> String {
        let (reps, secs) = self.options.reps_secs();
        let libs: Vec<String> = ["mpich_alloc", "ompi_sm"]
            .iter()
            .filter_map(|k| library(self.paths, k))
            .collect();
        format!(
            "{} — `{}`\n\nMachine: {}, {} CPUs, kernel {}. {} rounds, each program with -r {reps} -t {secs}.{}\n",
            self.date,
            self.command,
            self.machine.cpu,
            self.machine.nproc,
            self.machine.kernel,
            self.options.rounds,
            if libs.is_empty() {
                String::new()
            } else {
                format!(" MPI: {}.", libs.join("; "))
            }
        )
    }
}

fn write(path: &Path, text: &str) {
    match fs::write(path, text) {
        Ok(()) => println!("bench: wrote {}", path.display()),
        Err(e) => println!("bench: could not write {}: {e}", path.display()),
    }
}

/// JSON text as the bench writes it: pretty-printed (two-space indentation), with a
/// final newline.
pub(crate) fn json_text(v: &Value) -> String {
    format!("{v:#}\n")
}

/// `cargo xtask bench criterion ARGS`: `cargo bench -p rma-benches ARGS`.
fn criterion(args: &[String]) -> bool {
    let mut cmd = crate::cargo();
    cmd.args(["bench", "-p", "rma-benches"]).args(args);
    crate::status(cmd)
}

/// `cargo xtask bench [--rounds N] [--quick] [--timeout SECS] [--only a,b]`, with
/// `--scaling [--ranks 2,4,...]` the rank-scaling run, or `bench criterion [ARGS]`.
pub(crate) fn main(args: &Args) -> bool {
    if let Some(a) = args.criterion_args() {
        return criterion(&a);
    }
    let o = Options::of(args);
    let cmdline = crate::command_line();
    if o.scaling {
        return scaling::main(&o, &cmdline);
    }
    let start = Instant::now();
    let p = Paths::new();
    let _ = fs::remove_dir_all(&p.raw);
    if let Err(e) = fs::create_dir_all(&p.raw) {
        eprintln!("xtask bench: cannot create {}: {e}", p.raw.display());
        return false;
    }
    let selected = o.selected();
    let wants_mpi = selected.iter().any(|c| {
        matches!(
            c.program,
            Program::Mpich { .. } | Program::Ompi { .. } | Program::RmaMpi { .. }
        )
    });
    report_missing_mpi(wants_mpi);
    let ready = Ready::prepare(&p, &selected, &BENCH);

    let (mut runs, mut lines) = (vec![], vec![]);
    for round in 1..=o.rounds {
        for c in &selected {
            let stem = format!("{}_{round}", c.key);
            let (run, mut got) = run_config(c, round, (&p, &o, &BENCH), Ranks::PAIR, &stem, &ready);
            if round == 1 || !matches!(run.outcome, Outcome::Skipped(_)) {
                println!(
                    "round {round}/{}  {:<17} {:>6.1} s  {} ({} lines)",
                    o.rounds,
                    c.key,
                    run.secs,
                    run.outcome.describe(),
                    got.len()
                );
            }
            runs.push(run);
            lines.append(&mut got);
        }
    }

    let summary = Summary::of(&lines);
    let report = Report {
        summary: &summary,
        runs: &runs,
    };
    let machine = Machine::probe();
    let date = utc_now();
    let record = Record {
        date: &date,
        command: &cmdline,
        machine: &machine,
        options: &o,
        runs: &runs,
        lines: &lines,
        summary: &summary,
        report: &report,
        paths: &p,
    };
    let md = report.markdown(&record.header());
    println!("\n{md}");
    write(&p.out.join("summary.md"), &md);
    write(&p.out.join("results.json"), &json_text(&record.json()));
    let about = format!(
        "{}; {}, {} CPUs, kernel {}",
        record.date, machine.cpu, machine.nproc, machine.kernel
    );
    write(&p.out.join("latency.svg"), &plot::latency(&summary, &about));
    write(
        &p.out.join("bandwidth.svg"),
        &plot::bandwidth(&summary, &about),
    );

    let errors = report.contended_errors();
    println!(
        "bench: {} rounds in {:.0} s; raw output in {}",
        o.rounds,
        start.elapsed().as_secs_f64(),
        p.raw.display()
    );
    if errors > 0 {
        println!("bench: FAILED: {errors} contended final-value errors (see the runs table)");
    }
    if lines.is_empty() {
        println!("bench: FAILED: no configuration produced results");
    }
    errors == 0 && !lines.is_empty()
}

/// What the `*_us` fields of a section's lines hold: µs (per call, per epoch, or in
/// total, benches/SCENARIOS.md), or ratios in the `pair` rows.
fn unit_of(section: &str) -> &'static str {
    if section == "pair" {
        "ratio"
    } else {
        "us"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        let o = Options::parse(&[]).unwrap();
        assert_eq!(
            (o.rounds, o.quick, o.timeout, o.only),
            (3, false, 120, None)
        );
        let q = Options::parse(&["--quick"]).unwrap();
        assert_eq!((q.rounds, q.reps_secs()), (1, ("3", "0.01")));
        let r = Options::parse(&["--rounds", "5", "--only", "hw,ompi_sm"]).unwrap();
        assert_eq!(r.rounds, 5);
        let keys: Vec<&str> = r.selected().iter().map(|c| c.key).collect();
        assert_eq!(keys, ["hw", "ompi_sm"]);
        assert!(Options::parse(&["--only", "nope"]).is_err());
        assert!(Options::parse(&["--rounds"]).is_err());
        assert!(Options::parse(&["--bogus"]).is_err());
        assert!(Options::parse(&["--scenarios", "mutex"]).is_err()); // needs --scaling
        let s = Options::parse(&["--scaling", "--scenarios", "mutex,counter"]).unwrap();
        assert_eq!(s.scenarios.as_deref(), Some("mutex,counter"));
    }

    #[test]
    fn date_format() {
        let d = utc_now();
        assert_eq!(d.len(), 20);
        assert!(d.starts_with("20") && d.ends_with('Z'));
    }

    #[test]
    fn every_config_key_is_unique() {
        for c in CONFIGS {
            assert_eq!(config(c.key).label, c.label);
        }
    }
}
