//! C programs compiled with `bin/rmacc` against this crate's library, run as ranks
//! by rma-shm's launcher (what `rmarun` runs). Needs a C compiler (`cc`, or `$RMA_CC`).

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
    let mut o = LaunchOptions::new(ranks, compile(name));
    // the library built for this run, not another copy on the library path cargo sets
    // (which comes before the program's RUNPATH: a stale target/debug/librma_capi.so
    // would otherwise be loaded)
    o.env = vec![("LD_LIBRARY_PATH".into(), lib_dir().into())];
    o.env.extend(env.iter().map(|&(k, v)| (k.into(), v.into())));
    o.prefix_output = false;
    o.grace = Duration::from_secs(5);
    o.timeout = Some(Duration::from_secs(60));
    spawn(&o).expect("launching the ranks")
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
