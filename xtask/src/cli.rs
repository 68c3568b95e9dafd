//! The command line of `cargo xtask` (clap): every task and its options, with their
//! help. A usage error (an unknown task or option, a missing or bad value) prints
//! clap's message on stderr and exits with status 2; `--help` or `-h`, on the top level
//! and on every task, prints the help on stdout and exits 0; `cargo xtask` alone
//! prints the usage on stderr and exits 2. Real failures of a task exit 1 (main.rs).

use std::ffi::OsString;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand};

use crate::{bench, clients, mpich_suite, publish_check, TestAll};

/// `cargo xtask <task> [options]`.
#[derive(Parser, Debug)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "cargo xtask: the one entry point for humans and CI",
    subcommand_required = true,
    arg_required_else_help = true,
    subcommand_value_name = "TASK",
    subcommand_help_heading = "Tasks",
    after_help = "`cargo xtask <task> --help` tells more about a task."
)]
pub(crate) struct Cli {
    /// The task to run.
    #[command(subcommand)]
    pub(crate) task: Task,
}

/// The tasks. Each one's first line is its summary in `cargo xtask --help`; the rest
/// follows it in `cargo xtask <task> --help`.
#[derive(Subcommand, Debug)]
pub(crate) enum Task {
    /// Every test of the workspace (nextest) and the doctests, group by group, with a total
    ///
    /// One summary line per group, and a total. --quick leaves out the doctests, the
    /// loom model of the ring, the msrv checks (the group msrv) and the examples
    /// (threads, rmarun, mpi).
    #[command(verbatim_doc_comment)]
    TestAll(TestAll),
    /// Format check, clippy, cargo doc, publish-check, msrv, then test-all
    ///
    /// Clippy and cargo doc with warnings denied; publish-check: every library crate
    /// packaged and built from its own tarball; test-all without its msrv group.
    /// Stops at the first step that fails.
    #[command(verbatim_doc_comment)]
    Ci,
    /// What can be checked with the toolchains at hand of the declared rust-version
    ///
    /// The declared rust-version is Cargo.toml's [workspace.package] one. (a) Every
    /// package the library crates pull in for their users (normal and build
    /// dependencies, from cargo metadata) declares no newer rust-version
    /// (dev-dependencies are listed, not counted); (b) clippy::incompatible_msrv over
    /// the libraries (std APIs stabilized later); (c) `cargo +<that version> check` of
    /// the libraries when rustup has that toolchain, else skipped with a note: without
    /// it, language features newer than the declared version go unnoticed.
    #[command(verbatim_doc_comment)]
    Msrv,
    /// rma against MPICH, Open MPI and the hardware limits (--scaling: rank scaling)
    ///
    /// Builds rmarun + rma-bench and benches/c, runs every configuration (hw,
    /// rma_atomic, rma_atomic_check (RMA_CHECK=conflicts), rma_queued, rma_create,
    /// mpich_alloc, mpich_create, ompi_sm, ompi_rdma, ompi_rdma_create, ...) once per
    /// round, interleaved (default 3 rounds, --quick 1 shorter round; each run killed
    /// after --timeout, default 120 s), and writes
    /// target/bench/{summary.md,results.json,latency.svg,bandwidth.svg}; configurations
    /// whose MPI or gcc is missing are skipped, and the command that installs them is
    /// printed (cargo xtask setup); fails if a contended final-value check failed.
    ///
    /// With --scaling, rank scaling: rma-scale (rma_atomic, rma_atomic_park, rma_queued,
    /// rma_mpi) and benches/c/mpi_rma_scale.c (ompi_sm, mpich) at N = 2, 4, 8, ... up to
    /// the CPUs and 2x the CPUs (oversubscribed), or --ranks (--scenarios: only these,
    /// benches/SCENARIOS.md); rounds x N x configurations interleaved (default 3 rounds,
    /// --quick 1 shorter round; each run killed after --timeout, default 60 s, 30 s
    /// quick); writes target/bench/scaling/{scaling.md,scaling.json,scaling.svg}; fails
    /// if any count was wrong.
    ///
    /// `cargo xtask bench criterion [ARGS] [-- BENCH_ARGS]`: the criterion benches
    /// (cargo bench -p rma-benches ARGS).
    #[command(verbatim_doc_comment)]
    Bench(bench::Args),
    /// The examples on 4 ranks: as threads, under rmarun, and under the MPIs' launchers
    ///
    /// The main job: every example (Examples 11.1-11.3 of the MPI standard, a shared
    /// counter, an arg-max, a linked list appended with compare_and_swap, a ticket lock)
    /// on 4 ranks as threads and as processes under rmarun, for every transport, and the
    /// same binaries under mpiexec (MPICH) and mpirun (Open MPI osc/sm) with --n 500 when
    /// an MPI is installed (the mpi transport). ARGS go to each example; `--help` or `-h`
    /// among them (before a `--`) shows this help instead.
    #[command(verbatim_doc_comment)]
    Demo {
        /// Arguments for every example (such as --n 1000)
        #[arg(allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<String>,
    },
    /// The racing-threads soundness tests under ThreadSanitizer (nightly)
    ///
    /// rma-win's tests/soundness.rs, race::*, built with ThreadSanitizer on a nightly
    /// toolchain, when one is installed (not part of test-all: CI has stable only);
    /// fails on any data race reported in rma's own code.
    #[command(verbatim_doc_comment)]
    Tsan,
    /// Installs what the bench and the mpi transport's tests need and this machine lacks
    ///
    /// MPICH, Open MPI and gcc (apt-get install mpich libmpich-dev openmpi-bin
    /// libopenmpi-dev gcc; needs root) and cargo-nextest (cargo install --locked);
    /// nothing else here installs anything.
    #[command(verbatim_doc_comment)]
    Setup,
    /// MPICH's own test/mpi/rma suite, run on each MPI implementation side by side
    ///
    /// The suite is fetched from Debian's mpich source package (never kept in this
    /// repository), built per its Makefile.am with each implementation's compiler
    /// wrapper, and its testlist run under the implementation's launcher, with the
    /// suite's rank counts, arguments and time limits and its pass rule (exit 0, output
    /// exactly `No Errors`). Writes target/mpich-suite/results.md (results-dtp.md with
    /// --dtp; entry by entry, side by side) and prints a summary.
    #[command(verbatim_doc_comment)]
    MpichSuite(mpich_suite::Options),
    /// Third-party one-sided MPI clients (ARMCI-MPI, mpi4py), fetched, built and tested
    ///
    /// ARMCI-MPI from Debian's armci-mpi source package (or --armci-src) and mpi4py's
    /// sdist from PyPI (pinned), built unmodified with each implementation's compiler
    /// wrapper (rmacc for rma), their tests run under its launcher: ARMCI-MPI's `make
    /// check` tests with make check's rank count, mpi4py's window and RMA test files on
    /// 1, 2 and 3 ranks. Writes target/clients/results.md (side by side, with the lines
    /// rma's failures printed) and prints one summary line per implementation. A client
    /// that cannot be fetched is a note (`clients: cannot fetch ...`), not a failure.
    #[command(verbatim_doc_comment)]
    Clients(clients::Options),
    /// cargo publish --workspace --dry-run: every library crate packaged and verified
    ///
    /// Runs `cargo publish --workspace --dry-run --allow-dirty` from the workspace root:
    /// every published member (cargo skips those with `publish = false`) is packaged
    /// and built from its packaged sources against the others as packaged, in a target
    /// directory of its own made afresh (target/package-verify); nothing is uploaded.
    /// --allow-dirty is passed by default, since the check is about packaging and
    /// building, not about git's state (--require-clean leaves it out). Prints one
    /// summary line; fails when cargo fails.
    #[command(verbatim_doc_comment)]
    PublishCheck(publish_check::Options),
}

/// Whether pass-through arguments ask for help: `--help` or `-h` before any `--`.
fn asks_help(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--help" || a == "-h")
}

/// A usage error of `task`, as clap words one (its usage line, exit status 2).
fn usage_error(task: &str, message: String) -> clap::Error {
    let mut cmd = Cli::command();
    cmd.build();
    match cmd.find_subcommand_mut(task) {
        Some(sub) => sub.error(ErrorKind::ValueValidation, message),
        None => cmd.error(ErrorKind::ValueValidation, message),
    }
}

/// Parses a command line (the program's name first): clap's parse, then what clap
/// cannot check alone (the bench's configuration keys against the kind of run), and
/// `--help` among the arguments a task passes on (xtask's help, not the program's).
pub(crate) fn try_parse_from<I, T>(argv: I) -> Result<Task, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
    let mut task = Cli::try_parse_from(&argv)?.task;
    if let Task::Demo { args } = &mut task {
        // clap drops a `--` that comes first among demo's arguments; what follows it
        // is the examples' own (`demo -- --help` asks the examples, not xtask)
        let after_demo = argv.iter().skip_while(|a| *a != "demo").nth(1);
        if after_demo.is_some_and(|a| a == "--") && args.first().is_none_or(|a| a != "--") {
            args.insert(0, "--".into());
        }
    }
    let help_of: Option<&[&str]> = match &task {
        Task::Demo { args } if asks_help(args) => Some(&["demo"]),
        Task::Bench(b) if b.criterion_args().is_some_and(|a| asks_help(&a)) => {
            Some(&["bench", "criterion"])
        }
        _ => None,
    };
    if let Some(path) = help_of {
        let argv = std::iter::once("cargo-xtask")
            .chain(path.iter().copied())
            .chain(["--help"]);
        return Err(Cli::try_parse_from(argv).expect_err("--help stops the parse"));
    }
    if let Task::Bench(b) = &task {
        b.check().map_err(|m| usage_error("bench", m))?;
    }
    Ok(task)
}

/// The process's command line, parsed; exits on a usage error (status 2) and after
/// printing help (status 0).
pub(crate) fn parse() -> Task {
    try_parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `cargo xtask ARGS`.
    fn parse(args: &str) -> Result<Task, clap::Error> {
        try_parse_from(std::iter::once("xtask").chain(args.split_whitespace()))
    }

    /// The kind of error parsing `cargo xtask ARGS` gives, and its exit status.
    fn error(args: &str) -> (ErrorKind, i32) {
        let e = parse(args).expect_err(args);
        (e.kind(), e.exit_code())
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn help_is_shown_with_status_0_on_every_task() {
        assert_eq!(error("--help"), (ErrorKind::DisplayHelp, 0));
        assert_eq!(error("-h"), (ErrorKind::DisplayHelp, 0));
        assert_eq!(error("help"), (ErrorKind::DisplayHelp, 0));
        assert_eq!(error("help bench"), (ErrorKind::DisplayHelp, 0));
        for task in Cli::command().get_subcommands() {
            let name = task.get_name();
            for h in ["--help", "-h"] {
                assert_eq!(
                    error(&format!("{name} {h}")),
                    (ErrorKind::DisplayHelp, 0),
                    "{name} {h}"
                );
            }
        }
        assert_eq!(error("bench criterion --help"), (ErrorKind::DisplayHelp, 0));
        // help among the arguments a task passes on is xtask's
        assert_eq!(error("demo --n 5 --help"), (ErrorKind::DisplayHelp, 0));
        assert_eq!(
            error("bench criterion --bench rma -h"),
            (ErrorKind::DisplayHelp, 0)
        );
        let text = parse("bench --help").unwrap_err().to_string();
        assert!(
            text.contains("--scaling") && text.contains("--rounds <N>"),
            "{text}"
        );
        let text = parse("demo --n 5 --help").unwrap_err().to_string();
        assert!(text.contains("Usage: cargo xtask demo"), "{text}");
    }

    #[test]
    fn usage_errors_exit_with_status_2() {
        // no task: the usage, on stderr
        let e = try_parse_from(["xtask"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.use_stderr());
        for (args, kind) in [
            ("bogus", ErrorKind::InvalidSubcommand),
            ("mpich-suite --bogus", ErrorKind::UnknownArgument),
            ("test-all --qick", ErrorKind::UnknownArgument),
            ("test-all --only", ErrorKind::InvalidValue),
            ("bench --rounds", ErrorKind::InvalidValue),
            ("bench --rounds x", ErrorKind::ValueValidation),
            ("bench --only nope", ErrorKind::ValueValidation),
            ("bench --ranks 2,4", ErrorKind::MissingRequiredArgument),
            (
                "bench --scenarios mutex",
                ErrorKind::MissingRequiredArgument,
            ),
            ("bench --scaling --ranks two", ErrorKind::ValueValidation),
            ("bench --quick criterion", ErrorKind::ArgumentConflict),
            ("msrv --fast", ErrorKind::UnknownArgument),
            ("setup now", ErrorKind::UnknownArgument),
            ("ci extra", ErrorKind::UnknownArgument),
            ("mpich-suite --impl lam", ErrorKind::ValueValidation),
            ("mpich-suite --min-pass many", ErrorKind::ValueValidation),
            ("clients --client x", ErrorKind::ValueValidation),
            ("clients --min-pass-armci", ErrorKind::InvalidValue),
            ("publish-check --dirty", ErrorKind::UnknownArgument),
        ] {
            let e = parse(args).expect_err(args);
            assert_eq!((e.kind(), e.exit_code()), (kind, 2), "{args}: {e}");
            assert!(e.use_stderr(), "{args}");
        }
        let e = parse("bench --only nope").unwrap_err().to_string();
        assert!(
            e.contains("unknown configuration \"nope\"") && e.contains("cargo xtask bench"),
            "{e}"
        );
    }

    #[test]
    fn what_ci_and_the_docs_run_parses() {
        // .ci/run, README.md, docs/*.md, benches/*.md
        for args in [
            "test-all",
            "test-all --long",
            "test-all --quick --only mpich,examples",
            "ci",
            "msrv",
            "tsan",
            "setup",
            "demo",
            "demo --n 1000",
            "bench",
            "bench --quick --rounds 3 --only rma_atomic,rma_queued,mpich_alloc",
            "bench --scaling --only rma_atomic,ompi_sm --ranks 2 --rounds 3",
            "bench --scaling --ranks 2,4 --rounds 3 --scenarios counter,mutex",
            "bench criterion",
            "bench criterion --bench kernels -- --save-baseline main",
            "mpich-suite --impl rma --timeout-cap 10 --min-pass 188",
            "mpich-suite --impl rma --dtp --max-count 1018 --timeout-cap 10 --min-pass 115",
            "mpich-suite --impl rma,openmpi --dtp --timeout-cap 20",
            "clients --impl rma --timeout-cap 90 --min-pass-armci 45 --min-pass-mpi4py 640 \
             --armci-src /src/armci-mpi",
            "clients --client armci-mpi,mpi4py",
            "publish-check",
            "publish-check --no-verify --require-clean",
            // repeated options (the last value counts, as before), --option=value
            "test-all --quick --quick --only a --only b",
            "mpich-suite --dtp --dtp --timeout-cap 5 --timeout-cap 6",
            "bench --only=hw,rma_atomic --rounds=2",
        ] {
            if let Err(e) = parse(args) {
                panic!("cargo xtask {args}: {e}");
            }
        }
    }

    #[test]
    fn pass_through_arguments_are_kept() {
        let Ok(Task::Demo { args }) = parse("demo --n 5 --transport atomic") else {
            panic!("demo");
        };
        assert_eq!(args, ["--n", "5", "--transport", "atomic"]);
        // after a first `--`, --help is the examples' (passed on, with the `--`)
        let Ok(Task::Demo { args }) = parse("demo -- --help") else {
            panic!("demo -- --help");
        };
        assert_eq!(args, ["--", "--help"]);
        let Ok(Task::Bench(b)) = parse("bench criterion --bench kernels -- --save-baseline x")
        else {
            panic!("bench criterion");
        };
        assert_eq!(
            b.criterion_args().unwrap(),
            ["--bench", "kernels", "--", "--save-baseline", "x"]
        );
        // a leading `--` too reaches cargo bench, as before
        let Ok(Task::Bench(b)) = parse("bench criterion -- --save-baseline x") else {
            panic!("bench criterion --");
        };
        assert_eq!(b.criterion_args().unwrap(), ["--", "--save-baseline", "x"]);
        // help after a `--` is for the programs
        assert!(parse("bench criterion --bench k -- --help").is_ok());
    }

    #[test]
    fn test_all_options() {
        let Ok(Task::TestAll(t)) = parse("test-all --quick --only mpich,examples") else {
            panic!("test-all");
        };
        assert!(t.quick && !t.long && !t.skip_msrv);
        assert!(t.wants("conformance mpi x mpich_nolocal"));
        assert!(t.wants("examples (threads, rmarun, mpi)"));
        assert!(!t.wants("conformance atomic x threads"));
        let Ok(Task::TestAll(t)) = parse("test-all") else {
            panic!("test-all");
        };
        assert!(t.wants("anything"));
        // as before: the last --only counts
        let Ok(Task::TestAll(t)) = parse("test-all --only a --only b") else {
            panic!("test-all");
        };
        assert_eq!(t.only, ["b"]);
    }
}
