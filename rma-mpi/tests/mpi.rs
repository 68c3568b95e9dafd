//! Runs the smoke checks (`tests/smoke`) on 4 ranks under every installed MPI library
//! and configuration, each with a timeout so that a hang fails:
//!
//! | test | launcher and settings | what it covers |
//! |---|---|---|
//! | `mpich::default` | `mpiexec.mpich -n 4` | Debian's ch4:ucx over UCX shared memory |
//! | `mpich::nolocal` | `MPIR_CVAR_NOLOCAL=1` | ch4's local (shared-memory) path disabled |
//! | `openmpi::osc_rdma` | `mpirun.openmpi` defaults | osc/rdma over btl/vader; 8-byte CAS refused |
//! | `openmpi::osc_sm` | `--mca osc sm` | osc/sm (allocated windows only), 8-byte CAS run |
//! | `openmpi::no_shm_ucx` | `--mca btl self,tcp --mca osc ucx -x UCX_TLS=tcp` | no shared memory, MPI_THREAD_MULTIPLE |
//! | `openmpi::no_shm_pt2pt` | `--mca btl self,tcp --mca osc pt2pt`, serialized | no shared memory, MPI_THREAD_SERIALIZED |
//!
//! A launcher that is not installed, or a library this build has no shim for (built
//! without the `mpi` feature), registers no test. The test binary re-executes itself
//! as the MPI program (`RMA_MPI_SMOKE_WORKER=1`).

mod smoke;

use libtest_mimic::{Arguments, Failed, Trial};
use rma_mpi::Library;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WORKER: &str = "RMA_MPI_SMOKE_WORKER";
const RANKS: &str = "4";

/// One way to launch the smoke run.
struct Config {
    name: &'static str,
    library: Library,
    launcher: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

const OMPI: &[&str] = &["--allow-run-as-root", "--oversubscribe", "-np", RANKS];
const NO_SHM_UCX: &[&str] = &["--mca", "btl", "self,tcp", "--mca", "osc", "ucx"];
const NO_SHM_PT2PT: &[&str] = &["--mca", "btl", "self,tcp", "--mca", "osc", "pt2pt"];

const CONFIGS: &[Config] = &[
    Config {
        name: "mpich::default",
        library: Library::Mpich,
        launcher: "mpiexec.mpich",
        args: &["-n", RANKS],
        env: &[],
    },
    Config {
        name: "mpich::nolocal",
        library: Library::Mpich,
        launcher: "mpiexec.mpich",
        args: &["-n", RANKS],
        env: &[("MPIR_CVAR_NOLOCAL", "1")],
    },
    Config {
        name: "openmpi::osc_rdma",
        library: Library::OpenMpi,
        launcher: "mpirun.openmpi",
        args: &[],
        env: &[],
    },
    Config {
        name: "openmpi::osc_sm",
        library: Library::OpenMpi,
        launcher: "mpirun.openmpi",
        args: &["--mca", "osc", "sm"],
        env: &[("RMA_MPI_SMOKE_WINDOWS", "allocate")],
    },
    Config {
        name: "openmpi::no_shm_ucx",
        library: Library::OpenMpi,
        launcher: "mpirun.openmpi",
        args: NO_SHM_UCX,
        env: &[("UCX_TLS", "tcp")],
    },
    Config {
        name: "openmpi::no_shm_pt2pt",
        library: Library::OpenMpi,
        launcher: "mpirun.openmpi",
        args: NO_SHM_PT2PT,
        env: &[("RMA_MPI_SMOKE_THREADS", "serialized")],
    },
];

fn main() {
    if std::env::var_os(WORKER).is_some() {
        std::process::exit(smoke::worker_main());
    }
    let mut args = Arguments::from_args();
    args.test_threads = Some(1); // one MPI job at a time: the machine has two cores
    let built: Vec<Library> = rma_mpi::built_shims().into_iter().map(|(l, _)| l).collect();
    let mut trials = Vec::new();
    for config in CONFIGS {
        if !built.contains(&config.library) {
            eprintln!(
                "rma-mpi: {} not run: no {} shim in this build (build with --features mpi)",
                config.name,
                config.library.name()
            );
        } else if !on_path(config.launcher) {
            eprintln!(
                "rma-mpi: {} not run: {} is not installed",
                config.name, config.launcher
            );
        } else {
            trials.push(Trial::test(config.name, move || launch(config)));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn timeout() -> Duration {
    let secs = std::env::var("RMA_MPI_TEST_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    Duration::from_secs(secs)
}

/// The launcher command for `config` running this binary as the worker.
fn command(config: &Config, log: &std::fs::File) -> Result<Command, Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut cmd = Command::new(config.launcher);
    if config.library == Library::OpenMpi {
        cmd.args(OMPI).args(config.args);
        for (key, _) in config.env.iter().chain([(WORKER, "1")].iter()) {
            cmd.args(["-x", key]);
        }
    } else {
        cmd.args(config.args);
    }
    cmd.arg(exe)
        .env(WORKER, "1")
        .envs(config.env.iter().copied());
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log.try_clone().map_err(|e| e.to_string())?);
    cmd.process_group(0); // one group with every rank, for the kill on timeout
    Ok(cmd)
}

fn launch(config: &Config) -> Result<(), Failed> {
    let path = std::env::temp_dir().join(format!(
        "rma-mpi-{}-{}.log",
        config.name.replace("::", "-"),
        std::process::id()
    ));
    let log = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut child = command(config, &log)?
        .spawn()
        .map_err(|e| format!("{}: {e}", config.launcher))?;
    let status = wait_or_kill(&mut child, timeout());
    let output = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    match status {
        Some(s) if s.success() && output.contains("all checks passed") => {
            let summary = output
                .lines()
                .find(|l| l.contains("all checks passed"))
                .unwrap_or("");
            eprintln!("{}: {summary}", config.name);
            Ok(())
        }
        Some(s) => Err(format!("{} exited with {s}:\n{output}", config.launcher).into()),
        None => Err(format!(
            "{} timed out after {:?} and was killed:\n{output}",
            config.launcher,
            timeout()
        )
        .into()),
    }
}

/// The child's exit status, or `None` if it ran past `limit` (it and its process group
/// are then killed: SIGTERM, and SIGKILL 5 s later).
fn wait_or_kill(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if start.elapsed() > limit {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let group = child.id() as libc::pid_t;
    for (signal, grace) in [(libc::SIGTERM, 5), (libc::SIGKILL, 5)] {
        // SAFETY: kill(2) on our own child's process group; no memory is involved.
        unsafe { libc::kill(-group, signal) };
        let until = Instant::now() + Duration::from_secs(grace);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    None
}
