//! Resources of the substrate: world start/stop cycles leave no segment, descriptor,
//! thread or memory behind; segments are exclusive and owner-only (also against
//! another user); world names are random.
//!
//! Every test takes `SERIAL`, so the process-wide counts (descriptors, memory) are not
//! disturbed by a neighbour when the tests run as threads of one process (`cargo
//! test`); nextest runs each in a process of its own anyway. Thread counts are taken
//! over this crate's own threads (named `rma-*`), which the test harness never starts.

#![cfg(not(loom))]

use rma_core::ErrorClass;
use rma_shm::launch::{spawn, LaunchOptions};
use rma_shm::segment::Segment;
use rma_shm::{run_threads, ShmWorld};
use std::os::unix::fs::PermissionsExt;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Names in /dev/shm that could belong to a world this process started.
fn own_segments() -> Vec<String> {
    let prefix = format!("rma-{}-", std::process::id());
    let mut v: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn status_field(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/self/status"))
}

fn rss_kib() -> u64 {
    status_field("VmRSS:")
}

/// Threads of this process that rma started (rank and progress threads).
fn rma_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("rma-"))
        })
        .count()
}

#[test]
fn world_start_stop_cycles_leak_nothing() {
    let _g = serial();
    let cycle = || {
        let names = run_threads(3, |w: ShmWorld| {
            w.barrier().unwrap();
            let got = w.allgather(&[w.rank() as u8]).unwrap();
            assert_eq!(got.len(), 3);
            w.name().to_owned()
        })
        .unwrap();
        assert!(names.iter().all(|n| n == &names[0]));
    };
    for _ in 0..5 {
        cycle();
    }
    let (shm0, fd0, rss0, thr0) = (own_segments(), open_fds(), rss_kib(), rma_threads());
    for _ in 0..100 {
        cycle();
    }
    let (shm1, fd1, rss1, thr1) = (own_segments(), open_fds(), rss_kib(), rma_threads());
    eprintln!(
        "100 world cycles: segments {} -> {}, fds {fd0} -> {fd1}, VmRSS {rss0} -> {rss1} KiB, rma threads {thr0} -> {thr1}",
        shm0.len(),
        shm1.len()
    );
    assert_eq!(shm1, shm0, "segments left in /dev/shm");
    assert_eq!(fd1, fd0, "descriptors leaked");
    assert_eq!((thr0, thr1), (0, 0), "rank threads outlived their world");
    assert!(
        rss1 < rss0 + 8 * 1024,
        "VmRSS grew from {rss0} to {rss1} KiB"
    );
}

#[test]
fn world_names_are_random_and_distinct() {
    let _g = serial();
    let prefix = format!("rma-{}-", std::process::id());
    let mut tags = vec![];
    for _ in 0..64 {
        let name = run_threads(1, |w: ShmWorld| w.name().to_owned()).unwrap()[0].clone();
        let tag = name
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{name} does not start with {prefix}"));
        assert_eq!(tag.len(), 16, "{name}: 64 bits in hex");
        tags.push(u64::from_str_radix(tag, 16).unwrap());
    }
    let mut unique = tags.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), tags.len(), "two worlds got the same name");
    // random 64-bit tags: every bit is 0 in some and 1 in others (a constant bit among
    // 64 random draws has probability 2^-63); a counter or the clock would leave the
    // high bits fixed
    let (any, all) = tags
        .iter()
        .fold((0u64, u64::MAX), |(o, a), t| (o | t, a & t));
    assert_eq!((any, all), (u64::MAX, 0), "bits that never vary: {tags:x?}");
}

#[test]
fn an_existing_name_is_never_reused() {
    let _g = serial();
    let name = format!("rma-{}-{:016x}-taken", std::process::id(), 0xdead_beefu64);
    let path = format!("/dev/shm/{name}");
    // someone else's file (here: a plain file with content and other permissions)
    std::fs::write(&path, b"not yours").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Segment::create(&name, 4096).unwrap_err();
    assert!(e.to_string().contains("already exists"), "{e}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"not yours",
        "left untouched"
    );
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644, "permissions untouched");
    std::fs::remove_file(&path).unwrap();
    // a segment rma made is owner-only and exclusive too
    let seg = Segment::create(&name, 4096).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(Segment::create(&name, 8192).is_err());
    assert_eq!(seg.len(), 4096);
    seg.unlink();
    assert!(own_segments().is_empty(), "{:?}", own_segments());
}

#[test]
fn too_large_a_segment_is_no_mem_and_leaves_nothing() {
    let _g = serial();
    for len in [1usize << 50, usize::MAX / 2] {
        let name = format!("rma-{}-{:016x}", std::process::id(), len);
        let e = Segment::create(&name, len).unwrap_err();
        assert_eq!(e.class(), ErrorClass::NoMem, "{e}");
    }
    assert!(own_segments().is_empty(), "{:?}", own_segments());
}

/// Another user cannot open a world's control segment (mode 0600): the one rank of a
/// launched world, which never joins so that the segment keeps its name, tries to
/// read it as `nobody`.
#[test]
fn another_user_cannot_open_a_world_segment() {
    let _g = serial();
    let has_setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !has_setpriv || !root {
        eprintln!("note: skipped (needs setpriv and root to act as another user)");
        return;
    }
    let before = own_segments();
    let mut opts = LaunchOptions::new(1, "/bin/sh");
    opts.args = vec![
        "-c".into(),
        r#"f="/dev/shm/$RMA_WORLD"
           [ -f "$f" ] || { echo "no $f"; exit 8; }
           [ "$(stat -c %a "$f")" = 600 ] || { echo "mode $(stat -c %a "$f")"; exit 9; }
           out=$(setpriv --reuid=65534 --regid=65534 --clear-groups cat "$f" 2>&1 >/dev/null)
           case "$out" in *"Permission denied"*) exit 0;; esac
           echo "as nobody: $out"; exit 10"#
            .into(),
    ];
    let report = spawn(&opts).unwrap();
    assert!(report.success(), "{report:?}");
    assert_eq!(own_segments(), before);
}
