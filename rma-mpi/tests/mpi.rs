//! Runs the smoke checks (`tests/smoke`) on 4 ranks under every installed MPI library
//! and configuration, each with a timeout so that a hang fails:
//!
//! | test | launcher and settings | what it covers |
//! |---|---|---|
//! | `mpich` | `mpiexec.mpich -n 4`, serialized, confined | Debian's ch4:ucx over UCX shared memory; other threads' calls refused |
//! | `mpich_nolocal` | `MPIR_CVAR_NOLOCAL=1` | ch4's local (shared-memory) path disabled |
//! | `openmpi` | `mpirun.openmpi` defaults | osc/rdma over btl/vader; 8-byte CAS refused |
//! | `openmpi_sm` | `--mca osc sm` | osc/sm (allocated windows only), 8-byte CAS run |
//! | `openmpi_noshm` | `--mca btl self,tcp --mca osc ucx -x UCX_TLS=tcp` | no shared memory, MPI_THREAD_MULTIPLE |
//! | `openmpi_pt2pt` | `--mca btl self,tcp --mca osc pt2pt`, serialized | no shared memory, MPI_THREAD_SERIALIZED |
//! | `openmpi_single` | defaults, `RMA_MPI_THREAD=single` | MPI_THREAD_SINGLE: other threads' calls refused |
//!
//! The configurations are [`rma_mpi::launcher`]'s.
//!
//! A launcher that is not installed, or a library this build has no shim for (built
//! without the `mpi` feature), registers no test. The test binary re-executes itself
//! as the MPI program (`RMA_MPI_SMOKE_WORKER=1`).

mod smoke;

use libtest_mimic::{Arguments, Failed, Trial};
use rma_mpi::launcher::{
    Launch, MPICH, MPICH_NOLOCAL, OPENMPI, OPENMPI_NOSHM, OPENMPI_PT2PT, OPENMPI_SINGLE, OPENMPI_SM,
};
use std::time::Duration;

const WORKER: &str = "RMA_MPI_SMOKE_WORKER";
const RANKS: usize = 4;

/// Each configuration with what the smoke run needs to know about it.
const CONFIGS: &[(Launch, &[(&str, &str)])] = &[
    (MPICH, &[("RMA_MPI_SMOKE_THREADS", "confined")]),
    (MPICH_NOLOCAL, &[]),
    (OPENMPI, &[]),
    (OPENMPI_SM, &[("RMA_MPI_SMOKE_WINDOWS", "allocate")]),
    (OPENMPI_NOSHM, &[]),
    (OPENMPI_PT2PT, &[("RMA_MPI_SMOKE_THREADS", "serialized")]),
    (OPENMPI_SINGLE, &[("RMA_MPI_SMOKE_THREADS", "single")]),
];

fn main() {
    if std::env::var_os(WORKER).is_some() {
        std::process::exit(smoke::worker_main());
    }
    let mut args = Arguments::from_args();
    args.test_threads = Some(1); // one MPI job at a time: the machine has two cores
    let mut trials = Vec::new();
    for &(config, env) in CONFIGS {
        match config.available() {
            Ok(()) => trials.push(Trial::test(config.name, move || launch(config, env))),
            Err(why) => eprintln!("rma-mpi: {} not run: {why}", config.name),
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

fn timeout() -> Duration {
    let secs = std::env::var("RMA_MPI_TEST_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    Duration::from_secs(secs)
}

fn launch(config: Launch, env: &[(&str, &str)]) -> Result<(), Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let env: Vec<(String, String)> = env
        .iter()
        .chain([(WORKER, "1")].iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (status, output) = config
        .run(RANKS, &exe, &env, timeout())
        .map_err(|e| format!("{}: {e}", config.launcher))?;
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
