//! The smoke run: every call of rma-mpi on every rank of an MPI job, each result
//! checked exactly. Shared by `examples/smoke.rs` (run it under `mpiexec -n 4`) and
//! `tests/mpi.rs` (which launches itself under each installed MPI).
//!
//! Environment: `RMA_MPI_SMOKE_WINDOWS` (`allocate,create` by default; Open MPI's
//! osc/sm serves only `allocate`), `RMA_MPI_SMOKE_THREADS` (`multiple` by default, or
//! `serialized`).
//!
//! This file runs the steps (`run_on`, in order) and reports; the steps are in
//! `calls` (each RMA call), `types` (every basic type), `forms` (requests, many calls
//! per flush, PSCW, the `Transport` trait) and `edges` (threads, refusals, a failed
//! flush), all checking with `check`'s helpers.

mod calls;
mod check;
mod edges;
mod forms;
mod types;

use calls::{
    check_allgather, compare_and_swap_counters, exclusive_lock_counter,
    fence_put_and_strided_accumulate, fetch_and_op_tickets, get_accumulate_and_pairs,
};
use check::{ensure, expect_class, rank, Check, Ctx, NOTES, SLOTS};
use edges::{
    failed_flush_leaves_results_to_mpi, local_copies_from_two_threads, refused_calls,
    threads_share_the_window,
};
use forms::{many_calls_one_flush, pscw_ring, request_forms, transport_calls};
use rma_core::{ErrorClass, Info};
use rma_mpi::{MpiWindow, MpiWorld, ThreadLevel};
use types::every_basic_type;

/// Runs every check on every window flavor the environment asks for.
pub(crate) fn run(world: &MpiWorld) -> Check {
    check_allgather(world)?;
    let flavors =
        std::env::var("RMA_MPI_SMOKE_WINDOWS").unwrap_or_else(|_| "allocate,create".into());
    for flavor in flavors.split(',').map(str::trim) {
        let mut win = match flavor {
            "allocate" => MpiWindow::allocate(world, SLOTS * 8, 8, &Info::new()).ctx("allocate")?,
            "create" => {
                MpiWindow::create(world, vec![0u8; SLOTS * 8], 8, &Info::new()).ctx("create")?
            }
            other => return Err(format!("unknown window flavor {other:?}")),
        };
        if let Err(e) = run_on(world, &mut win) {
            // abort before the window drops: freeing it is collective, and the other
            // ranks may be waiting elsewhere
            fail(world, &format!("{flavor} window: {e}"));
        }
        let buf = win.free().ctx("free")?;
        ensure!(
            buf.as_ref().map(Vec::len) == (flavor == "create").then_some(SLOTS * 8),
            "free gives back the created buffer"
        );
    }
    Ok(())
}

fn run_on(world: &MpiWorld, win: &mut MpiWindow<'_>) -> Check {
    ensure!(
        win.len_of(rank(world.size() - 1)).ctx("len_of")? == SLOTS * 8,
        "peer window size"
    );
    ensure!(
        win.disp_unit_of(rank(0)).ctx("disp_unit_of")? == 8,
        "peer disp_unit"
    );
    world.barrier().ctx("barrier")?;
    type Step = fn(&MpiWorld, &mut MpiWindow<'_>) -> Check;
    let steps: [(&str, Step); 14] = [
        ("fence", fence_put_and_strided_accumulate),
        ("exclusive lock", exclusive_lock_counter),
        ("fetch_and_op", fetch_and_op_tickets),
        ("compare_and_swap", compare_and_swap_counters),
        ("get_accumulate", get_accumulate_and_pairs),
        ("basic types", every_basic_type),
        ("requests", request_forms),
        ("many calls, one flush", many_calls_one_flush),
        ("pscw", pscw_ring),
        ("transport", transport_calls),
        ("threads", threads_share_the_window),
        ("refused calls", refused_calls),
        (
            "local copies from two threads",
            local_copies_from_two_threads,
        ),
        ("failed flush", failed_flush_leaves_results_to_mpi),
    ];
    let trace = std::env::var_os("RMA_MPI_SMOKE_TRACE").is_some();
    for (name, step) in steps {
        let start = std::time::Instant::now();
        step(world, win).map_err(|e| format!("{name}: {e}"))?;
        if trace {
            let line = format!(
                "rank {} {:?}: {name} passed in {:.1?}\n",
                world.rank(),
                win.flavor(),
                start.elapsed()
            );
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        }
    }
    world.barrier().ctx("barrier")
}

/// The worker's entry: initialize MPI, run the checks, report, and abort the job on a
/// failure so that the launcher returns at once.
pub(crate) fn worker_main() -> i32 {
    let threads = std::env::var("RMA_MPI_SMOKE_THREADS");
    let level = match threads.as_deref() {
        Ok("serialized" | "confined") => ThreadLevel::Serialized,
        Ok("single") => ThreadLevel::Single,
        _ => ThreadLevel::Multiple,
    };
    let mut world = match MpiWorld::init_thread(level) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("rma-mpi smoke: cannot initialize MPI: {e} [{}]", e.class());
            return 2;
        }
    };
    let confined = threads.as_deref() == Ok("confined");
    if confined {
        // calls from other threads are refused from now on (`threads_share_the_window`)
        if let Err(e) = world.confine() {
            eprintln!("rma-mpi smoke: confine: {e} [{}]", e.class());
            return 2;
        }
    }
    let started = std::time::Instant::now();
    let run = |world: &mut MpiWorld| -> Check {
        run(world)?;
        if confined {
            // once windows were made, confining again is refused
            expect_class(world.confine(), ErrorClass::Arg, "confine after windows")?;
        }
        Ok(())
    };
    match run(&mut world) {
        Ok(()) => {
            if world.rank() == 0 {
                let version = world
                    .library_version()
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned();
                println!(
                    "rma-mpi smoke: all checks passed on {} ranks, {:?}, {}, windows {}, in {:.2?}; refused for known defects: [{}] [{version}]",
                    world.size(),
                    world.library(),
                    format!("{:?}", world.thread_level()).to_lowercase(),
                    std::env::var("RMA_MPI_SMOKE_WINDOWS").unwrap_or_else(|_| "allocate,create".into()),
                    started.elapsed(),
                    NOTES.lock().map(|n| n.join(", ")).unwrap_or_default(),
                );
            }
            match world.finalize() {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("rma-mpi smoke: MPI_Finalize: {e}");
                    3
                }
            }
        }
        Err(msg) => fail(&world, &msg),
    }
}

/// Reports a failed check and ends the job.
fn fail(world: &MpiWorld, msg: &str) -> ! {
    let line = format!("rma-mpi smoke: rank {} FAILED: {msg}\n", world.rank());
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    world.abort(1)
}
