//! C programs compiled with `bin/rmacc` against this crate's library, run as ranks
//! by rma-shm's launcher (what `rmarun` runs). Needs a C compiler (`cc`, or `$RMA_CC`),
//! and a C++ compiler for `cxx_client.cpp` (built with `bin/rmacxx`: `c++`, or
//! `$RMA_CXX`).

mod common;
use common::lib_dir;
use rma_shm::launch::{spawn, LaunchOptions};
use std::path::PathBuf;
use std::time::Duration;

/// Compiles `tests/c/<name>.c` with rmacc; the program's path.
fn compile(name: &str) -> PathBuf {
    common::compile(name, &format!("capi-{name}"))
}

fn run(name: &str, ranks: usize) -> rma_shm::launch::LaunchReport {
    run_with(name, ranks, &[])
}

/// [`run`] with `env` set for every rank.
fn run_with(name: &str, ranks: usize, env: &[(&str, &str)]) -> rma_shm::launch::LaunchReport {
    spawn(&options(name, ranks, env)).expect("launching the ranks")
}

/// How [`run_with`] launches `name`.
fn options(name: &str, ranks: usize, env: &[(&str, &str)]) -> LaunchOptions {
    let mut o = LaunchOptions::new(ranks, compile(name));
    // the library built for this run, not another copy on the library path cargo sets
    // (which comes before the program's RUNPATH: a stale target/debug/librma_capi.so
    // would otherwise be loaded)
    o.env = vec![("LD_LIBRARY_PATH".into(), lib_dir().into())];
    o.env.extend(env.iter().map(|&(k, v)| (k.into(), v.into())));
    o.prefix_output = false;
    o.grace = Duration::from_secs(5);
    o.timeout = Some(Duration::from_secs(60));
    o
}

#[test]
fn one_program_through_every_window_kind_passes_its_checks() {
    for ranks in [3, 4] {
        let r = run("onesided", ranks);
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
}

#[test]
fn messages_collectives_communicators_and_attributes_pass_their_checks() {
    for ranks in [3, 4] {
        let r = run("messages", ranks);
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
}

#[test]
fn created_windows_over_shared_memory_and_long_double_pass_their_checks() {
    for ranks in [3, 4] {
        let r = run("shared_create", ranks);
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
}

#[test]
fn partial_words_over_shared_memory_stay_in_place_and_delete_callbacks_see_their_window() {
    for ranks in [2, 3] {
        let r = run("win_edges", ranks);
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
    // RMA_TRANSPORT set but empty counts as unset: the same program, every window made
    let r = run_with("win_edges", 2, &[("RMA_TRANSPORT", "")]);
    assert!(r.success(), "RMA_TRANSPORT=\"\": {:?}", r.failures);
}

#[test]
fn an_erroneous_call_under_the_default_handler_ends_every_rank() {
    let r = run("fatal", 2);
    assert!(!r.timed_out, "a fatal error must not hang the job");
    assert!(!r.success());
    // the failing rank exits with the error class (MPI_ERR_RANK = 6)
    assert_eq!(r.statuses[1].code(), Some(6), "{:?}", r.failures);
}

#[test]
fn user_ops_v_collectives_nonblocking_collectives_and_topologies_pass_their_checks() {
    for ranks in [2, 3, 4] {
        let r = run("breadth", ranks);
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
}

#[test]
fn mpi_abort_ends_every_rank_at_once_and_exits_with_its_code() {
    // 300 & 255 = 44: a process status holds the code's low 8 bits
    for (code, how) in [(0, "plain"), (7, "plain"), (300, "plain"), (9, "held")] {
        let mut o = options("abort", 3, &[]);
        o.args = vec![code.to_string().into(), how.into()];
        // the other ranks sleep 60 s outside MPI: they end sooner only if killed
        o.timeout = Some(Duration::from_secs(120));
        let r = spawn(&o).expect("launching the ranks");
        assert!(
            !r.timed_out,
            "code {code}: the job was not ended by MPI_Abort"
        );
        assert!(r.aborted && !r.success(), "code {code}: {:?}", r.failures);
        assert_eq!(r.statuses[2].code(), Some(code & 255), "code {code}");
        assert_eq!(r.killed, vec![0, 1], "code {code}: {:?}", r.failures);
    }
}

#[test]
fn a_program_started_without_rmarun_runs_as_a_world_of_one() {
    let exe = compile("breadth");
    let run = |env: &[(&str, &str)]| {
        // never longer than a minute, whatever happens (coreutils' timeout)
        let mut c = std::process::Command::new("timeout");
        c.arg("60").arg(&exe);
        c.env("LD_LIBRARY_PATH", lib_dir());
        for v in ["RMA_WORLD", "RMA_RANK", "RMA_SIZE", "RMA_WORLD_KEY"] {
            c.env_remove(v);
        }
        c.envs(env.iter().copied());
        c.output().expect("running the program")
    };
    let out = run(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("No Errors"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // started by another MPI's launcher: refused, never N singletons. (Variables that
    // rma-mpi reads as an MPI launch, PMI_RANK or OMPI_COMM_WORLD_SIZE, make a build
    // with the mpi transport start the system MPI instead, which needs a real
    // launcher: these two are MPICH's hydra's own, which rma-mpi does not read.)
    for var in ["MPI_LOCALNRANKS", "HYDI_CONTROL_FD"] {
        let out = run(&[(var, "1")]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{var}: ran anyway");
        assert!(
            err.contains("another MPI library's launcher") && err.contains(var),
            "{var}: {err}"
        );
    }
}

#[test]
fn a_tool_wraps_mpi_functions_and_reaches_rma_through_their_pmpi_names() {
    for ranks in [2, 3] {
        let r = run("profiling", ranks);
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
}

#[test]
fn refused_functions_report_unsupported_operation_and_language_bindings_convert() {
    for ranks in [1, 2] {
        let r = run("mpi31", ranks);
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
}

#[test]
fn a_cxx_program_built_with_rmacxx_uses_vectors_allreduce_and_fetch_and_op() {
    // needs a C++ compiler (`c++`, or `$RMA_CXX`)
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("capi-cxx_client");
    let status = std::process::Command::new(dir.join("bin/rmacxx"))
        .env("RMA_CAPI_LIB", lib_dir())
        .args([
            "-std=c++11",
            "-O1",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-o",
        ])
        .arg(&exe)
        .arg(dir.join("tests/c/cxx_client.cpp"))
        .status()
        .expect("running rmacxx (needs a C++ compiler: c++)");
    assert!(status.success(), "rmacxx could not build cxx_client.cpp");
    for ranks in [2, 4] {
        let mut o = LaunchOptions::new(ranks, exe.clone());
        o.env = vec![("LD_LIBRARY_PATH".into(), lib_dir().into())];
        o.prefix_output = false;
        o.grace = Duration::from_secs(5);
        o.timeout = Some(Duration::from_secs(60));
        let r = spawn(&o).expect("launching the ranks");
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
}

#[test]
fn threads_at_mpi_thread_multiple_make_collectives_messages_and_one_sided_calls_at_once() {
    // 4 threads per rank, each with its own communicator and window, and one window
    // they all accumulate into; exact results checked by the program
    for (ranks, threads, iters) in [(2, 4, 400), (3, 4, 200), (4, 8, 100)] {
        let mut o = options("threads", ranks, &[]);
        o.args = vec![threads.to_string().into(), iters.to_string().into()];
        o.timeout = Some(Duration::from_secs(240));
        let r = spawn(&o).expect("launching the ranks");
        assert!(
            r.success(),
            "{ranks} ranks, {threads} threads: {:?}",
            r.failures
        );
    }
}

#[test]
fn mpi_t_control_variables_report_and_change_rmas_settings() {
    let env = [
        ("RMA_STALL_MS", "7000"),
        ("RMA_TRANSPORT", "atomic"),
        ("RMA_CHECK", ""),
    ];
    for ranks in [1, 3] {
        let r = run_with("tool", ranks, &env);
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
}

#[test]
fn ranks_at_different_thread_levels_meet_in_their_collectives() {
    // rank 0 at MPI_THREAD_MULTIPLE, the others at SINGLE
    for ranks in [2, 3] {
        let r = run("levels", ranks);
        assert!(r.success(), "{ranks} ranks: {:?}", r.failures);
    }
}
