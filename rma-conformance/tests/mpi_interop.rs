//! rma inside a program that runs MPI itself, under MPICH's and Open MPI's launchers
//! (4 ranks each): the program initializes MPI and makes its own communicators (here
//! through rma-mpi-sys's shim, standing in for C code or another crate), then
//! rma-win makes worlds over them (`World::from_raw_mpi_comm`), node worlds on rma's
//! shared memory with two "nodes" of two ranks (`RMA_NODE_RANKS=2`), windows and typed
//! collectives, while the program's own collectives go on between rma's calls.
//!
//! | test | launcher | what it covers |
//! |---|---|---|
//! | `mpich` | `mpiexec.mpich -n 4` | the checks below, MPI_THREAD_SERIALIZED: another thread refused |
//! | `mpich_multiple` | the same, MPI_THREAD_MULTIPLE | a world made and used on another thread |
//! | `openmpi_sm` | `mpirun.openmpi --mca osc sm` | the same (osc/rdma refuses windows of a program's communicators) |
//! | `mpich_single` | `mpiexec.mpich`, MPI_THREAD_SINGLE | the same at SINGLE |
//! | `*_finalize_early` | both | the program finalizes MPI under a live world: the job ends at that call, with a message |
//!
//! The test binary re-executes itself as the MPI program (`RMA_INTEROP_WORKER=1`).

use libtest_mimic::{Arguments, Failed, Trial};
use rma_mpi::launcher::{Launch, MPICH, OPENMPI_SM};
use rma_mpi_sys::Handle;
use rma_win::{Assert, ErrorClass, Info, LaunchMode, Op, Rank, Window, World};
use std::ffi::c_int;
use std::time::Duration;

const WORKER: &str = "RMA_INTEROP_WORKER";
const LEVEL: &str = "RMA_INTEROP_LEVEL";
const EARLY: &str = "RMA_INTEROP_FINALIZE_EARLY";
const RANKS: usize = 4;

/// A run: its name, launcher, environment, and whether the job must succeed.
type Run = (
    &'static str,
    Launch,
    &'static [(&'static str, &'static str)],
    bool,
);

fn main() {
    if std::env::var_os(WORKER).is_some() {
        std::process::exit(match worker() {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("interop worker failed: {e}");
                1
            }
        });
    }
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let mut trials = Vec::new();
    let runs: [Run; 6] = [
        ("mpich", MPICH, &[(LEVEL, "2")], true),
        ("mpich_multiple", MPICH, &[(LEVEL, "3")], true),
        ("openmpi_sm", OPENMPI_SM, &[(LEVEL, "2")], true),
        ("mpich_single", MPICH, &[(LEVEL, "0")], true),
        (
            "mpich_finalize_early",
            MPICH,
            &[(LEVEL, "2"), (EARLY, "1")],
            false,
        ),
        (
            "openmpi_finalize_early",
            OPENMPI_SM,
            &[(LEVEL, "2"), (EARLY, "1")],
            false,
        ),
    ];
    for (name, config, env, ok) in runs {
        match config.available() {
            Ok(()) => trials.push(Trial::test(name, move || launch(config, env, ok))),
            Err(why) => eprintln!("mpi_interop: {name} not run: {why}"),
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

fn launch(config: Launch, env: &[(&str, &str)], expect_ok: bool) -> Result<(), Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let env: Vec<(String, String)> = env
        .iter()
        .chain([(WORKER, "1"), ("RMA_NODE_RANKS", "2")].iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let (status, output) = config
        .run(RANKS, &exe, &env, Duration::from_secs(120))
        .map_err(|e| format!("{}: {e}", config.launcher))?;
    match (status, expect_ok) {
        (Some(s), true) if s.success() && output.contains("interop checks passed") => Ok(()),
        // the launcher may kill the ranks before their message reaches it: the exit
        // code is the proof (hydra and mpirun pass on MPI_Abort's)
        (Some(s), false)
            if !s.success()
                && (s.code() == Some(rma_mpi::FINALIZE_ABORT_CODE)
                    || output.contains("called MPI_Finalize while")) =>
        {
            Ok(())
        }
        (Some(s), _) => Err(format!("{} exited with {s}:\n{output}", config.launcher).into()),
        (None, _) => Err(format!("{} timed out:\n{output}", config.launcher).into()),
    }
}

fn check(what: &str, ok: bool) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("check failed: {what}"))
    }
}

fn class_of<T>(r: rma_win::Result<T>) -> Option<ErrorClass> {
    r.err().map(|e| e.class())
}

/// The MPI program: it initializes MPI and makes communicators itself, as C code or
/// another crate would, then hands them to rma.
fn worker() -> Result<(), String> {
    let e = |e: rma_win::Error| format!("{e} ({})", e.class());
    let (api, _) = rma_mpi_sys::api().map_err(e)?;
    // before MPI is initialized, a handle is refused
    check(
        "a communicator before MPI_Init is refused",
        // SAFETY: refused before the handle is used (MPI is not initialized)
        class_of(unsafe { World::from_raw_mpi_comm(0x4400_0000) }) == Some(ErrorClass::Arg),
    )?;
    let level: c_int = std::env::var(LEVEL)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let mut provided: c_int = 0;
    // SAFETY: MPI is not initialized; the out-pointer is valid.
    let rc = unsafe { (api.init_thread)(level, &mut provided) };
    check("MPI_Init_thread", rc == 0)?;
    let mut comm: Handle = 0;
    // SAFETY: MPI is initialized; the out-pointer is valid.
    check("MPI_Comm_dup", unsafe { (api.world_dup)(&mut comm) } == 0)?;
    let (mut me, mut p): (c_int, c_int) = (0, 0);
    // SAFETY: `comm` is live; out-pointers valid.
    unsafe {
        (api.comm_rank)(comm, &mut me);
        (api.comm_size)(comm, &mut p);
    }
    let (me, p) = (me as usize, p as usize);
    let mut half: Handle = 0;
    // SAFETY: as above; every rank calls it.
    let rc = unsafe { (api.comm_split)(comm, (me % 2) as c_int, 0, &mut half) };
    check("MPI_Comm_split", rc == 0)?;

    // handles of no library, and rma-mpi's own initialization, are refused
    // the other library's handles: MPICH's MPI_COMM_WORLD under Open MPI, a heap
    // pointer (what Open MPI's handles are) under MPICH
    let heap = Box::new([0u64; 4]);
    let other = match rma_mpi_sys::launcher_library() {
        Some(rma_mpi_sys::Library::OpenMpi) => 0x4400_0000,
        _ => heap.as_ptr() as isize,
    };
    for bad in [0isize, 12345, -1, other, other + 8] {
        // SAFETY: refused by the shape check before any MPI call
        let r = unsafe { World::from_raw_mpi_comm(bad) };
        check(
            &format!("handle {bad:#x} refused"),
            class_of(r) == Some(ErrorClass::Arg),
        )?;
    }
    check(
        "rma-mpi does not initialize MPI the program initialized",
        class_of(rma_mpi::MpiWorld::init().map(drop)) == Some(ErrorClass::Arg),
    )?;

    // SAFETY: `comm` and `half` are live communicators of this library, used by no
    // other thread
    let world = unsafe { World::from_raw_mpi_comm(comm) }.map_err(e)?;
    // SAFETY: as above
    let pair = unsafe { World::from_raw_mpi_comm(half) }.map_err(e)?;
    check("ranks", (world.rank(), world.size()) == (me, p))?;
    check("mode", world.mode() == LaunchMode::Mpi)?;
    check(
        "the half's ranks",
        pair.size() == p / 2 + usize::from(me % 2 < p % 2),
    )?;
    check("the half's numbering", pair.rank() == me / 2)?;

    if level == 3 {
        // at MULTIPLE any thread may make and use a world over the program's MPI
        let from_thread = std::thread::scope(|s| {
            s.spawn(|| -> rma_win::Result<u64> {
                // SAFETY: `comm` is live; the main thread waits in `join` meanwhile
                let w = unsafe { World::from_raw_mpi_comm(comm) }?;
                w.allreduce_value(1u64, Op::Sum)
            })
            .join()
        });
        check(
            "a world made and used on another thread at MULTIPLE",
            matches!(from_thread, Ok(Ok(n)) if n == p as u64),
        )?;
    } else {
        // below MULTIPLE only MPI's main thread may use the world
        let mpi = world.backend().mpi().ok_or("an MPI world")?;
        let refused = std::thread::scope(|s| s.spawn(|| class_of(mpi.barrier())).join());
        check("another thread refused", refused.ok().flatten().is_some())?;
    }

    let info = Info::new();
    let win = Window::allocate::<u64>(&world, 1, &info).map_err(e)?;
    let on_pair = Window::allocate::<u64>(&pair, 1, &info).map_err(e)?;
    win.fence(Assert::NONE).map_err(e)?;
    on_pair.fence(Assert::NONE).map_err(e)?;
    for round in 0..50u64 {
        win.accumulate(&[1u64], Rank::new(0), 0, Op::Sum)
            .map_err(e)?;
        on_pair
            .accumulate(&[round], Rank::new(0), 0, Op::Sum)
            .map_err(e)?;
        if round % 10 == 0 {
            // the program's own collective on its communicator, between rma's calls
            let mut all = vec![0i64; p];
            // SAFETY: `comm` is live; `all` has one slot per rank
            let rc = unsafe { (api.allgather_i64)(comm, me as i64, all.as_mut_ptr()) };
            check(
                "the program's allgather",
                rc == 0 && all == (0..p as i64).collect::<Vec<_>>(),
            )?;
        }
    }
    win.fence(Assert::NONE).map_err(e)?;
    on_pair.fence(Assert::NONE).map_err(e)?;
    if me == 0 {
        check(
            "the world's counter",
            win.local_vec::<u64>().map_err(e)? == [50 * p as u64],
        )?;
    }
    if pair.rank() == 0 {
        let want = 49 * 50 / 2 * pair.size() as u64;
        check(
            "the half's counter",
            on_pair.local_vec::<u64>().map_err(e)? == [want],
        )?;
    }

    // node worlds: RMA_NODE_RANKS=2 makes two nodes of two ranks
    let node = world.split_shared().map_err(e)?;
    check("node size", node.size() == 2 && node.rank() == me % 2)?;
    check(
        "node on rma's shared memory",
        node.mode() == LaunchMode::Processes,
    )?;
    let shared = Window::allocate_shared::<u64>(&node, 2, &info).map_err(e)?;
    let mine = shared
        .shared_query(Rank::new(node.rank() as u32))
        .and_then(|s| s.view::<u64>())
        .map_err(e)?;
    mine.store(0, me as u64 * 10).map_err(e)?;
    shared.sync().map_err(e)?;
    node.barrier().map_err(e)?;
    shared.sync().map_err(e)?;
    let peer = shared
        .shared_query(Rank::new((1 - node.rank()) as u32))
        .and_then(|s| s.view::<u64>())
        .and_then(|v| v.load(0))
        .map_err(e)?;
    check("the node peer's cell", peer == (me ^ 1) as u64 * 10)?;
    let node_total = node.allreduce_value(me as u64, Op::Sum).map_err(e)?;
    check("node sum", node_total == (me & !1) as u64 * 2 + 1)?;
    let nodes = world
        .allreduce_value(u32::from(node.rank() == 0), Op::Sum)
        .map_err(e)?;
    check("two nodes", nodes == 2)?;
    let offsets = world.allgather_value(me as i64 * 100).map_err(e)?;
    check(
        "typed allgather",
        offsets == (0..p as i64).map(|r| r * 100).collect::<Vec<_>>(),
    )?;

    if std::env::var_os(EARLY).is_some() {
        // misuse: the program finalizes MPI under a live world; the job ends here
        // SAFETY: the point of the test; rma-mpi's watch ends the process first
        unsafe { (api.finalize)() };
        return Err("MPI_Finalize returned under a live world".into());
    }
    drop((shared, on_pair, win));
    drop((node, pair, world));
    // the program's communicators are untouched by rma's
    // SAFETY: `half` and `comm` are the program's, freed once
    unsafe {
        (api.comm_free)(half);
        (api.comm_free)(comm);
    }
    // SAFETY: every world over MPI is gone
    check("MPI_Finalize", unsafe { (api.finalize)() } == 0)?;
    if me == 0 {
        println!("interop checks passed on {p} ranks");
    }
    Ok(())
}
