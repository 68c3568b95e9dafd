//! The substrate on its own: barrier and all-gather, dead and exited peers, segments'
//! permissions and exclusivity, and the launcher's exit status, output and clean-up.

#![cfg(not(loom))]

use rma_core::ErrorClass;
use rma_shm::launch::{spawn, LaunchOptions};
use rma_shm::segment::Segment;
use rma_shm::{run_threads, ShmWorld};
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn shm_entries(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn barrier_separates_phases_exactly() {
    // each rank adds to a shared counter between barriers; after each barrier every
    // rank must see exactly (phase + 1) * n
    let counter = AtomicU64::new(0);
    let n = 4;
    let results = run_threads(n, |w: ShmWorld| -> rma_core::Result<()> {
        for phase in 0..2000u64 {
            counter.fetch_add(1, Ordering::Relaxed);
            w.barrier()?;
            assert_eq!(counter.load(Ordering::Relaxed), (phase + 1) * n as u64);
            w.barrier()?;
        }
        Ok(())
    })
    .unwrap();
    assert!(results.iter().all(|r| r.is_ok()));
}

#[test]
fn allgather_returns_every_contribution_by_rank() {
    let results = run_threads(5, |w: ShmWorld| {
        let mut all = vec![];
        for round in 0..50u8 {
            let mine = vec![w.rank() as u8 ^ round; w.rank() + 1];
            all.push(w.allgather(&mine).unwrap());
        }
        all
    })
    .unwrap();
    for per_rank in &results {
        for (round, got) in per_rank.iter().enumerate() {
            for (r, v) in got.iter().enumerate() {
                assert_eq!(v, &vec![r as u8 ^ round as u8; r + 1]);
            }
        }
    }
    let too_big = run_threads(1, |w: ShmWorld| w.allgather(&[0u8; 1000]).map(|_| ())).unwrap();
    assert_eq!(too_big[0].as_ref().unwrap_err().class(), ErrorClass::Arg);
}

#[test]
fn a_rank_that_exits_early_is_an_error_not_a_hang() {
    let start = Instant::now();
    let results = run_threads(3, |w: ShmWorld| {
        if w.rank() == 2 {
            return Ok(()); // leaves without the barrier the others wait in
        }
        w.barrier()
    })
    .unwrap();
    for r in &results[..2] {
        let e = r.as_ref().unwrap_err();
        assert_eq!(e.class(), ErrorClass::ProcFailed);
        assert!(e.to_string().contains("rank 2"), "{e}");
    }
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_panicking_rank_is_seen_as_dead_and_its_panic_resumed() {
    let seen = std::sync::Mutex::new(vec![]);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_threads(3, |w: ShmWorld| {
            if w.rank() == 1 {
                panic!("rank 1 fails on purpose");
            }
            let r = w.barrier();
            seen.lock().unwrap().push(r.map_err(|e| e.class()));
        })
    }));
    assert!(outcome.is_err(), "the panic is resumed");
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen, vec![Err(ErrorClass::ProcFailed); 2]);
}

#[test]
fn segments_are_owner_only_and_never_reused() {
    let name = format!("rma-test-{}-excl", std::process::id());
    let seg = Segment::create(&name, 4096).unwrap();
    let mode = std::fs::metadata(format!("/dev/shm/{name}"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let again = Segment::create(&name, 4096).unwrap_err();
    assert!(again.to_string().contains("already exists"), "{again}");
    seg.unlink();
    assert!(shm_entries(&name).is_empty());
    // a window larger than /dev/shm can hold is an error at creation, not a SIGBUS
    let huge = Segment::create(&format!("{name}-huge"), 1 << 50).unwrap_err();
    assert_eq!(huge.class(), ErrorClass::NoMem);
    assert!(shm_entries(&format!("{name}-huge")).is_empty());
}

#[test]
fn launcher_reports_failures_and_leaves_nothing_behind() {
    // the launcher names its worlds after this process (nextest runs each test in a
    // process of its own, so other tests' segments do not show here)
    let prefix = format!("rma-{}-", std::process::id());
    let before = shm_entries(&prefix);
    let mut ok = LaunchOptions::new(3, "/bin/sh");
    ok.args = vec!["-c".into(), "exit 0".into()];
    let report = spawn(&ok).unwrap();
    assert!(report.success(), "{report:?}");

    let mut bad = LaunchOptions::new(3, "/bin/sh");
    bad.args = vec![
        "-c".into(),
        "if [ \"$RMA_RANK\" = 1 ]; then exit 7; fi; sleep 30".into(),
    ];
    bad.grace = Duration::from_millis(200);
    let start = Instant::now();
    let report = spawn(&bad).unwrap();
    assert!(!report.success());
    assert_eq!(report.failures[0].0, 1, "{report:?}");
    assert!(report.failures[0].1.contains("status 7"), "{report:?}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the others were stopped"
    );

    let mut slow = LaunchOptions::new(2, "/bin/sh");
    slow.args = vec!["-c".into(), "sleep 30".into()];
    slow.timeout = Some(Duration::from_millis(300));
    let report = spawn(&slow).unwrap();
    assert!(report.timed_out && !report.success());

    let after = shm_entries(&prefix);
    let leaked: Vec<_> = after.iter().filter(|n| !before.contains(n)).collect();
    assert!(leaked.is_empty(), "leaked segments: {leaked:?}");
}

#[test]
fn rmarun_exit_status_and_prefixed_output() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmarun"))
        .args([
            "-n",
            "2",
            "/bin/sh",
            "-c",
            "echo hello from $RMA_RANK of $RMA_SIZE",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[0] hello from 0 of 2") && text.contains("[1] hello from 1 of 2"),
        "{text}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmarun"))
        .args([
            "-n",
            "2",
            "--grace",
            "0.2",
            "/bin/sh",
            "-c",
            "[ $RMA_RANK = 0 ] && exit 5; sleep 30",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&out.stderr).contains("rank 0 exited with status 5"));
    let usage = std::process::Command::new(env!("CARGO_BIN_EXE_rmarun"))
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
}
