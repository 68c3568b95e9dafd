//! `cargo xtask setup`: installs what the bench and the MPI tests need and a fresh
//! machine lacks (Debian packages with apt-get, as root; cargo-nextest with cargo).
//! Nothing else in xtask installs anything: the bench and test-all skip what is
//! missing and say how to get it.

use std::path::PathBuf;
use std::process::Command;

/// The MPI tools the bench and the mpi transport's tests run (compiler wrappers and
/// launchers of MPICH and Open MPI, Debian's names).
pub(crate) const MPI_TOOLS: &[&str] = &[
    "mpicc.mpich",
    "mpiexec.mpich",
    "mpicc.openmpi",
    "mpirun.openmpi",
];
/// The Debian packages that bring [`MPI_TOOLS`] (the list `.ci/run` installs too).
pub(crate) const MPI_PACKAGES: &[&str] =
    &["mpich", "libmpich-dev", "openmpi-bin", "libopenmpi-dev"];

/// How to install MPICH and Open MPI, for messages about a missing tool.
pub(crate) fn mpi_install_hint() -> String {
    format!(
        "cargo xtask setup, or as root: apt-get update && apt-get install -y {}",
        MPI_PACKAGES.join(" ")
    )
}

/// The Debian packages to install: MPICH and Open MPI when one of their tools is
/// missing, gcc (the bench's hardware-limits program) when it is missing.
fn missing_packages() -> Vec<&'static str> {
    let mut v = vec![];
    if MPI_TOOLS.iter().any(|t| which(t).is_none()) {
        v.extend_from_slice(MPI_PACKAGES);
    }
    if which("gcc").is_none() {
        v.push("gcc");
    }
    v
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Uid:"))?.to_owned();
            Some(line.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Runs `cmd` with its output on the terminal; whether it succeeded.
fn run(mut cmd: Command) -> bool {
    println!("setup: running {cmd:?}");
    match cmd.status() {
        Ok(s) => s.success(),
        Err(e) => {
            eprintln!("setup: could not start {cmd:?}: {e}");
            false
        }
    }
}

/// `cargo xtask setup`: false if something is still missing afterwards.
pub(crate) fn main() -> bool {
    let mut ok = true;
    let packages = missing_packages();
    if packages.is_empty() {
        println!("setup: MPICH, Open MPI and gcc are installed");
    } else if !is_root() || which("apt-get").is_none() {
        eprintln!(
            "setup: missing: {}; cannot install them here (needs root and apt-get). As root \
             (or with sudo): apt-get update && apt-get install -y {}",
            packages.join(" "),
            packages.join(" ")
        );
        ok = false;
    } else {
        let mut update = Command::new("apt-get");
        update.arg("update");
        let mut install = Command::new("apt-get");
        install
            .args(["install", "-y"])
            .args(&packages)
            .env("DEBIAN_FRONTEND", "noninteractive");
        ok &= run(update) && run(install);
        let still: Vec<&str> = MPI_TOOLS
            .iter()
            .copied()
            .chain(["gcc"])
            .filter(|t| which(t).is_none())
            .collect();
        if !still.is_empty() {
            eprintln!("setup: still missing after apt-get: {}", still.join(", "));
            ok = false;
        }
    }
    if crate::have_nextest() {
        println!("setup: cargo-nextest is installed");
    } else {
        let mut nextest = crate::cargo();
        nextest.args(["install", "--locked", "cargo-nextest"]);
        ok &= run(nextest);
    }
    if ok {
        println!("setup: done");
    } else {
        eprintln!("setup: incomplete (see above)");
    }
    ok
}

/// The executable `name` on PATH.
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
