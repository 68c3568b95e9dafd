//! Stamps out every conformance case for every transport and launch mode
//! (`TRANSPORT::MODE::CASE`), under a libtest-compatible harness that nextest runs.

use libtest_mimic::{Arguments, Failed, Trial};
use rma_conformance::{cases, info_for, Case, ENV_CASE};
use rma_shm::launch::{spawn, LaunchOptions};
use std::time::Duration;

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

fn run_processes(case: Case, transport: &'static str) -> Result<(), Failed> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut opts = LaunchOptions::new(case.ranks, exe);
    opts.env = vec![
        (ENV_CASE.into(), case.name.into()),
        (ENV_TRANSPORT_CHILD.into(), transport.into()),
    ];
    opts.grace = Duration::from_secs(5);
    // a hung case fails; long soak runs (RMA_SOAK_SECS) get their time plus a margin
    let soak: u64 = std::env::var("RMA_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    opts.timeout = Some(Duration::from_secs(100.max(soak + 60)));
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
    libtest_mimic::run(&args, trials).exit();
}
