//! Stamps out every conformance case for every transport and launch mode
//! (`TRANSPORT::MODE::CASE`), under a libtest-compatible harness that nextest runs.
//!
//! The `mpi` transport runs each case under an MPI launcher, in every configuration of
//! [`MPI_CONFIGS`] that is installed (and that this build has a shim for: the `mpi`
//! feature): `mpi::CONFIG::CASE`.

use libtest_mimic::{Arguments, Failed, Trial};
use rma_conformance::ENV_DIVIDE;
use rma_conformance::{cases, info_for, recording, Case, ENV_CASE};
use rma_mpi::launcher::{Launch, MPICH, MPICH_NOLOCAL, OPENMPI, OPENMPI_NOSHM, OPENMPI_SINGLE};
use rma_shm::launch::{spawn, LaunchOptions};
use std::time::Duration;

/// The MPI configurations the suite runs in: each library with its shared-memory path
/// and without it (a stand-in for several nodes), with the divisor of the long cases'
/// iteration counts ([`ENV_DIVIDE`]): calls cost microseconds (Open MPI over shared
/// memory) to milliseconds (MPICH, whose targets must be scheduled to progress, with 4
/// ranks on 2 cores).
const MPI_CONFIGS: &[(Launch, &str)] = &[
    (MPICH, "50"),
    (MPICH_NOLOCAL, "50"),
    (OPENMPI, "20"),
    (OPENMPI_NOSHM, "50"),
    (OPENMPI_SINGLE, "20"),
];

const ENV_TRANSPORT_CHILD: &str = "RMA_CONFORMANCE_TRANSPORT";

fn run_threads(case: Case, transport: &'static str) -> Result<(), Failed> {
    let info = info_for(transport);
    let results = rma_win::run_threads(case.ranks, |world| (case.body)(&world, &info))
        .map_err(|e| format!("starting the world: {e}"))?;
    for (rank, r) in results.into_iter().enumerate() {
        r.map_err(|e| format!("rank {rank}: {e} ({})", e.class()))?;
    }
    Ok(())
}

/// A case on the recording backend (`rma_conformance::recording`): rma-win over a
/// backend plugged in through `World::from_backend`, which rma-win's code does not
/// know.
fn run_recording(case: Case) -> Result<(), Failed> {
    let info = info_for(recording::TRANSPORT);
    let (results, log) = recording::run_threads(case.ranks, |world| (case.body)(&world, &info));
    for (rank, r) in results.into_iter().enumerate() {
        r.map_err(|e| format!("rank {rank}: {e} ({})", e.class()))?;
    }
    if log.calls().is_empty() {
        return Err("the recording backend saw no call".into());
    }
    Ok(())
}

fn run_processes(case: Case, transport: &'static str) -> Result<(), Failed> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut opts = LaunchOptions::new(case.ranks, exe);
    opts.env = vec![
        (ENV_CASE.into(), case.name.into()),
        (ENV_TRANSPORT_CHILD.into(), transport.into()),
    ];
    opts.grace = Duration::from_secs(5);
    // a hung case fails; long soak runs (RMA_SOAK_SECS) get their time plus a margin
    opts.timeout = Some(case_timeout());
    let report = spawn(&opts).map_err(|e| format!("launching: {e}"))?;
    if report.success() {
        Ok(())
    } else {
        Err(format!(
            "ranks failed: {:?} (timed out: {})",
            report.failures, report.timed_out
        )
        .into())
    }
}

/// A hung case fails; long soak runs (`RMA_SOAK_SECS`) get their time plus a margin.
fn case_timeout() -> Duration {
    let soak: u64 = std::env::var("RMA_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Duration::from_secs(100.max(soak + 60))
}

/// Cases a configuration cannot pass because of a defect of the packaged library
/// (Debian 12: MPICH 4.0.2, Open MPI 4.1.4): rma refuses the call with RMA_FLAVOR, or
/// the library crashes. They are registered as ignored, with the defect named here
/// (`--ignored` runs them); `rma_win::guide::mpi_defects` describes each defect.
const KNOWN_DEFECTS: &[(&str, &str, &str)] = &[
    (
        MPICH_SIGNED,
        "own_every_op_and_type_concurrently",
        MAX_UNSIGNED,
    ),
    (
        MPICH_SIGNED,
        "own_every_op_and_type_fetched_in_order",
        MAX_UNSIGNED,
    ),
    ("openmpi", "cas_type_check", RDMA_CAS64),
    ("openmpi", "linked_list_fop", RDMA_CAS64),
    ("openmpi", "own_compare_and_swap_every_type", RDMA_CAS64),
    ("openmpi", "own_self_target_every_call", RDMA_CAS64),
    ("openmpi", "own_soak", RDMA_CAS64),
    ("openmpi_single", "cas_type_check", RDMA_CAS64),
    ("openmpi_single", "linked_list_fop", RDMA_CAS64),
    (
        "openmpi_single",
        "own_compare_and_swap_every_type",
        RDMA_CAS64,
    ),
    ("openmpi_single", "own_self_target_every_call", RDMA_CAS64),
    ("openmpi_single", "own_soak", RDMA_CAS64),
    ("openmpi_noshm", "cas_type_check", UCX_CAS),
    ("openmpi_noshm", "own_compare_and_swap_every_type", UCX_CAS),
    (
        "openmpi_noshm",
        "own_pair_vector_maxloc",
        "Open MPI 4 osc/ucx segfaults in MPI_Finalize (ucp_cleanup) after it",
    ),
];
/// The MPICH configurations (both have the defect).
const MPICH_SIGNED: &str = "mpich*";
const MAX_UNSIGNED: &str = "MPICH 4.0 compares unsigned integers as signed in MAX/MIN";
const RDMA_CAS64: &str =
    "Open MPI 4 osc/rdma crashes the target on 8-byte compare_and_swap (ompi#11349)";
const UCX_CAS: &str = "Open MPI 4 osc/ucx gets 1- and 2-byte compare_and_swap wrong";
const RDMA_COMMS: &str = "Open MPI 4 osc/rdma mixes up windows of different communicators \
     on one node: windows on sub-worlds are refused (RMA_FLAVOR)";

/// The cases that make windows (not shared ones) on sub-worlds.
const SUB_WORLD_WINDOWS: &[&str] = &[
    "wintest",
    "own_worlds_overlapping",
    "own_worlds_independent",
    "own_worlds_misuse",
    "own_worlds_create_group",
];

/// Why the shared-window cases cannot run in `openmpi_noshm`: Open MPI serves
/// MPI_Win_allocate_shared with osc/sm alone, which that configuration leaves out (it
/// answers MPI_ERR_INTERN).
const NO_SHARED: &str =
    "Open MPI 4 serves shared windows with osc/sm only, which openmpi_noshm excludes";

/// The cases that make a shared window (`rma_conformance::shared_window`).
const SHARED_CASES: &[&str] = &[
    "win_shared",
    "win_shared_noncontig",
    "win_shared_noncontig_put",
    "win_shared_zerobyte",
    "win_flavors",
    "own_shared_every_call",
    "own_shared_views_concurrently",
    "own_shared_misuse",
];

/// The defect that keeps `case` from passing in `config`, if any.
fn known_defect(config: &str, case: &str) -> Option<&'static str> {
    if config == "openmpi_noshm" && SHARED_CASES.contains(&case) {
        return Some(NO_SHARED);
    }
    if matches!(config, "openmpi" | "openmpi_single") && SUB_WORLD_WINDOWS.contains(&case) {
        return Some(RDMA_COMMS);
    }
    KNOWN_DEFECTS.iter().find_map(|&(c, name, why)| {
        let matches = match c.strip_suffix('*') {
            Some(prefix) => config.starts_with(prefix),
            None => config == c,
        };
        (matches && name == case).then_some(why)
    })
}

fn run_mpi(case: Case, config: Launch, divide: &str) -> Result<(), Failed> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let env = [
        (ENV_CASE.to_owned(), case.name.to_owned()),
        (ENV_TRANSPORT_CHILD.to_owned(), "mpi".to_owned()),
        (ENV_DIVIDE.to_owned(), divide.to_owned()),
    ];
    let (status, output) = config
        .run(case.ranks, &exe, &env, case_timeout())
        .map_err(|e| format!("{}: {e}", config.launcher))?;
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => Err(format!("{} exited with {s}:\n{output}", config.launcher).into()),
        None => Err(format!("{} timed out and was killed:\n{output}", config.launcher).into()),
    }
}

/// A re-executed test binary: run one case as one rank, exit with its outcome.
fn child(name: &str) -> ! {
    let transport = std::env::var(ENV_TRANSPORT_CHILD).unwrap_or_else(|_| "atomic".into());
    let Some(case) = cases().into_iter().find(|c| c.name == name) else {
        eprintln!("no conformance case named {name}");
        std::process::exit(3);
    };
    let world = match rma_win::World::from_env() {
        Ok(Some(w)) => w,
        Ok(None) => {
            eprintln!("{ENV_CASE} is set but this process was not started as a rank");
            std::process::exit(3);
        }
        Err(e) => {
            eprintln!("joining the world: {e}");
            std::process::exit(3);
        }
    };
    let rank = world.rank();
    match (case.body)(&world, &info_for(&transport)) {
        Ok(()) => {
            drop(world);
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("rank {rank}: {e} ({})", e.class());
            if let Some(mpi) = world.backend().mpi() {
                // the other ranks may wait in a collective: end the whole job
                mpi.abort(1);
            }
            std::process::exit(1)
        }
    }
}

fn main() {
    if let Ok(name) = std::env::var(ENV_CASE) {
        child(&name);
    }
    let args = Arguments::from_args();
    let mut trials = vec![];
    for &transport in rma_win::TRANSPORTS {
        for case in cases() {
            trials.push(Trial::test(
                format!("{transport}::threads::{}", case.name),
                move || run_threads(case, transport),
            ));
            trials.push(Trial::test(
                format!("{transport}::processes::{}", case.name),
                move || run_processes(case, transport),
            ));
        }
    }
    for case in cases() {
        trials.push(Trial::test(
            format!("{}::threads::{}", recording::TRANSPORT, case.name),
            move || run_recording(case),
        ));
    }
    for &(config, divide) in MPI_CONFIGS {
        match config.available() {
            Ok(()) => {
                for case in cases() {
                    let defect = known_defect(config.name, case.name);
                    trials.push(
                        Trial::test(format!("mpi::{}::{}", config.name, case.name), move || {
                            run_mpi(case, config, divide)
                        })
                        .with_ignored_flag(defect.is_some()),
                    );
                }
            }
            Err(why) if !args.list => eprintln!("conformance: mpi::{} not run: {why}", config.name),
            Err(_) => {}
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
