//! The `RMA_TRANSPORT` environment variable is a process-wide default, not a request:
//! where the transport it names cannot serve a window, the window takes its launch
//! mode's default (with ranks as processes, a created window: queued) and creating it
//! does not fail, while a transport named in the window's info is still honoured or
//! refused with RMA_FLAVOR whatever the variable says. Set but empty, it counts as
//! unset.
//!
//! Every check runs in a re-executed copy of this test binary started with the
//! variable set (ranks as processes through the launcher library, or one process
//! starting its ranks as threads), so no running process ever changes its environment.

use libtest_mimic::{Arguments, Failed, Trial};
use rma_shm::launch::{spawn, LaunchOptions};
use rma_win::{Assert, ErrorClass, Info, LaunchMode, Rank, Window, World, ENV_TRANSPORT};
use std::process::Command;
use std::time::Duration;

/// Set in a re-executed copy: `processes` (a rank) or `threads` (starts its ranks).
const ENV_ROLE: &str = "RMA_TRANSPORT_ENV_ROLE";
const RANKS: usize = 2;

type Outcome = std::result::Result<(), Failed>;

/// The transport a window of each flavor named nothing gets, with `env` in
/// `RMA_TRANSPORT`, in `mode`: (allocated, created).
fn expected(env: &str, mode: LaunchMode) -> (&'static str, &'static str) {
    match (env, mode) {
        ("queued", _) => ("queued", "queued"),
        // atomic cannot serve a created window across processes; mpi needs an MPI
        // launcher; "" names nothing: the launch mode's defaults
        (_, LaunchMode::Processes) => ("atomic", "queued"),
        _ => ("atomic", "atomic"),
    }
}

/// Every rank adds `me + 1` into its right neighbour's first element under fences and
/// finds its left neighbour's addition in its own (on top of what the element held),
/// then frees the window.
fn use_and_free(world: &World, mut win: Window<'_>) -> rma_win::Result<()> {
    let (me, p) = (world.rank(), world.size());
    let mut before = [0u64];
    win.read_local(0, &mut before)?;
    win.fence(Assert::NONE)?;
    win.accumulate(
        &[me as u64 + 1],
        Rank::new(((me + 1) % p) as u32),
        0,
        rma_win::Op::Sum,
    )?;
    win.fence(Assert::NONE)?;
    let mut got = [0u64];
    win.read_local(0, &mut got)?;
    assert_eq!(
        got[0] - before[0],
        ((me + p - 1) % p + 1) as u64,
        "rank {me}"
    );
    win.free()
}

/// One rank's checks, with `RMA_TRANSPORT` as this process was started with.
fn checks(world: &World) -> rma_win::Result<()> {
    let env = std::env::var(ENV_TRANSPORT).expect("started with RMA_TRANSPORT set");
    let (allocated, created) = expected(&env, world.mode());
    let none = Info::new();
    let win = Window::allocate::<u64>(world, 4, &none)?;
    assert_eq!(
        win.transport_name(),
        allocated,
        "allocate, {ENV_TRANSPORT}={env}"
    );
    assert_eq!(win.info().get("rma_transport"), Some(allocated));
    use_and_free(world, win)?;
    let mut buf = vec![0u64; 4];
    let win = Window::create(world, &mut buf, &none)?;
    assert_eq!(
        win.transport_name(),
        created,
        "create, {ENV_TRANSPORT}={env}"
    );
    assert_eq!(win.info().get("rma_transport"), Some(created));
    use_and_free(world, win)?;
    // a name in the info is a request, whatever the environment says
    let named = |t: &str| Info::new().with("rma_transport", t);
    let win = Window::create(world, &mut buf, &named("queued"))?;
    assert_eq!(win.transport_name(), "queued");
    use_and_free(world, win)?;
    let atomic = Window::create(world, &mut buf, &named("atomic"));
    match world.mode() {
        LaunchMode::Processes => match atomic {
            Err(e) => assert_eq!(e.class(), ErrorClass::RmaFlavor, "{e}"),
            Ok(w) => panic!("a created window named atomic got {}", w.transport_name()),
        },
        _ => {
            let win = atomic?;
            assert_eq!(win.transport_name(), "atomic");
            use_and_free(world, win)?;
        }
    }
    match Window::allocate::<u64>(world, 4, &named("mpi")) {
        Err(e) => assert_eq!(e.class(), ErrorClass::RmaFlavor, "{e}"),
        Ok(w) => panic!("a window named mpi got {}", w.transport_name()),
    }
    Ok(())
}

/// A re-executed copy: run the checks as a rank, or on ranks as threads; exit 0 when
/// they pass.
fn child(role: &str) -> i32 {
    let outcome = match role {
        "threads" => rma_win::run_threads(RANKS, |world| checks(&world))
            .and_then(|results| results.into_iter().collect()),
        _ => match World::from_env() {
            Ok(Some(world)) => checks(&world),
            other => {
                eprintln!("not started as a rank: {other:?}");
                return 3;
            }
        },
    };
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e} ({})", e.class());
            1
        }
    }
}

fn processes(env: &'static str) -> Outcome {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut opts = LaunchOptions::new(RANKS, exe);
    opts.env = vec![
        (ENV_ROLE.into(), "processes".into()),
        (ENV_TRANSPORT.into(), env.into()),
    ];
    opts.timeout = Some(Duration::from_secs(60));
    let report = spawn(&opts).map_err(|e| e.to_string())?;
    if report.timed_out || !report.success() {
        return Err(format!("{ENV_TRANSPORT}={env}: {report:?}").into());
    }
    Ok(())
}

fn threads(env: &'static str) -> Outcome {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .env(ENV_ROLE, "threads")
        .env(ENV_TRANSPORT, env)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{ENV_TRANSPORT}={env}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(())
}

fn main() {
    if let Ok(role) = std::env::var(ENV_ROLE) {
        std::process::exit(child(&role));
    }
    let args = Arguments::from_args();
    let mut trials = vec![];
    // "" (set but empty) counts as unset: every window gets its launch mode's default
    for (label, env) in [
        ("atomic", "atomic"),
        ("queued", "queued"),
        ("mpi", "mpi"),
        ("empty", ""),
    ] {
        trials.push(Trial::test(format!("processes::{label}"), move || {
            processes(env)
        }));
        trials.push(Trial::test(format!("threads::{label}"), move || {
            threads(env)
        }));
    }
    libtest_mimic::run(&args, trials).exit();
}
