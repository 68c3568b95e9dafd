//! Launching a program under the installed MPI libraries' launchers, in the
//! configurations rma tests with: each library with its shared-memory path, and with
//! it disabled (a stand-in for several nodes). Used by the test suites (rma-mpi's
//! smoke run, the conformance suite) through `rma_mpi::launcher`; `cargo xtask` names
//! the same configurations.

use crate::ffi::{built_shims, Library};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// One way to launch an MPI job.
#[derive(Clone, Copy, Debug)]
pub struct Launch {
    /// Short name (`mpich`, `mpich_nolocal`, `openmpi`, ...).
    pub name: &'static str,
    /// The library the launcher belongs to.
    pub library: Library,
    /// The launcher program (Debian's names).
    pub launcher: &'static str,
    /// Launcher arguments before the rank count.
    pub args: &'static [&'static str],
    /// Environment of every rank.
    pub env: &'static [(&'static str, &'static str)],
    /// What the configuration exercises.
    pub about: &'static str,
}

const TCP_ONLY: &[&str] = &["--mca", "btl", "self,tcp", "--mca", "osc", "ucx"];

/// MPICH with its defaults (Debian: ch4:ucx, shared memory between local ranks).
pub const MPICH: Launch = Launch {
    name: "mpich",
    library: Library::Mpich,
    launcher: "mpiexec.mpich",
    args: &[],
    env: &[],
    about: "MPICH ch4:ucx, shared memory on",
};

/// MPICH with ch4's local (shared-memory) path disabled.
pub const MPICH_NOLOCAL: Launch = Launch {
    name: "mpich_nolocal",
    library: Library::Mpich,
    launcher: "mpiexec.mpich",
    args: &[],
    env: &[("MPIR_CVAR_NOLOCAL", "1")],
    about: "MPICH with MPIR_CVAR_NOLOCAL=1 (ch4's shared-memory path off)",
};

/// Open MPI with its defaults (osc/rdma over btl/vader shared memory).
pub const OPENMPI: Launch = Launch {
    name: "openmpi",
    library: Library::OpenMpi,
    launcher: "mpirun.openmpi",
    args: &[],
    env: &[],
    about: "Open MPI defaults: osc/rdma over btl/vader (shared memory)",
};

/// Open MPI with its defaults, MPI initialized at MPI_THREAD_SINGLE
/// (`RMA_MPI_THREAD=single`): only the initializing thread calls MPI, and Open MPI
/// takes none of its internal locks.
pub const OPENMPI_SINGLE: Launch = Launch {
    name: "openmpi_single",
    library: Library::OpenMpi,
    launcher: "mpirun.openmpi",
    args: &[],
    env: &[("RMA_MPI_THREAD", "single")],
    about: "Open MPI defaults at MPI_THREAD_SINGLE (RMA_MPI_THREAD=single)",
};

/// Open MPI with osc/ucx over UCX's shared-memory transports (the one-sided
/// component whose 4.1 defects leave the most of the suite running).
pub const OPENMPI_UCX: Launch = Launch {
    name: "openmpi_ucx",
    library: Library::OpenMpi,
    launcher: "mpirun.openmpi",
    args: &["--mca", "osc", "ucx"],
    env: &[],
    about: "Open MPI osc/ucx over UCX shared memory",
};

/// Open MPI with osc/sm (shared memory; allocated windows only).
pub const OPENMPI_SM: Launch = Launch {
    name: "openmpi_sm",
    library: Library::OpenMpi,
    launcher: "mpirun.openmpi",
    args: &["--mca", "osc", "sm"],
    env: &[],
    about: "Open MPI osc/sm (allocated windows only)",
};

/// Open MPI without shared memory: TCP between every pair of ranks, osc/ucx.
pub const OPENMPI_NOSHM: Launch = Launch {
    name: "openmpi_noshm",
    library: Library::OpenMpi,
    launcher: "mpirun.openmpi",
    args: TCP_ONLY,
    env: &[("UCX_TLS", "tcp")],
    about: "Open MPI without shared memory: btl self,tcp, osc/ucx with UCX_TLS=tcp",
};

/// Open MPI without shared memory, osc/pt2pt (MPI_THREAD_SERIALIZED only).
pub const OPENMPI_PT2PT: Launch = Launch {
    name: "openmpi_pt2pt",
    library: Library::OpenMpi,
    launcher: "mpirun.openmpi",
    args: &["--mca", "btl", "self,tcp", "--mca", "osc", "pt2pt"],
    env: &[],
    about: "Open MPI without shared memory: btl self,tcp, osc/pt2pt (serialized)",
};

impl Launch {
    /// Whether this configuration can run here: the launcher is on `PATH` and this
    /// build has a shim for its library. `Err` says why not.
    pub fn available(&self) -> Result<(), String> {
        if !built_shims().iter().any(|(l, _)| *l == self.library) {
            return Err(format!(
                "no {} shim in this build (build with the `mpi` feature)",
                self.library.name()
            ));
        }
        if !on_path(self.launcher) {
            return Err(format!("{} is not installed", self.launcher));
        }
        Ok(())
    }

    /// The command that runs `exe` on `ranks` ranks with `env` added to each rank's
    /// environment, output to `log`, in a process group of its own.
    pub fn command(
        &self,
        ranks: usize,
        exe: &Path,
        env: &[(String, String)],
        log: &std::fs::File,
    ) -> std::io::Result<Command> {
        let mut cmd = Command::new(self.launcher);
        let n = ranks.to_string();
        let vars = self
            .env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain(env.iter().cloned());
        if self.library == Library::OpenMpi {
            cmd.args(["--allow-run-as-root", "--oversubscribe"]);
            cmd.args(self.args).args(["-np", &n]);
            for (key, value) in vars {
                cmd.args(["-x", &format!("{key}={value}")]);
            }
        } else {
            cmd.args(self.args).args(["-n", &n]);
            cmd.envs(vars);
        }
        cmd.arg(exe)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log.try_clone()?)
            .process_group(0); // every rank in one group, for the kill on timeout
        Ok(cmd)
    }

    /// Runs `exe` on `ranks` ranks and waits at most `limit`: the exit status
    /// (`None` if it timed out and was killed) and everything the job printed.
    pub fn run(
        &self,
        ranks: usize,
        exe: &Path,
        env: &[(String, String)],
        limit: Duration,
    ) -> std::io::Result<(Option<ExitStatus>, String)> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "rma-mpi-{}-{}-{}.log",
            self.name,
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let log = std::fs::File::create(&path)?;
        let spawned = self.command(ranks, exe, env, &log)?.spawn();
        drop(log);
        let status = spawned.map(|mut child| wait_or_kill(&mut child, limit));
        let output = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        Ok((status?, output))
    }
}

/// Whether `program` is an executable file in a directory of `PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// The child's exit status, or `None` if it ran past `limit` (it and its process group
/// are then killed: SIGTERM, and SIGKILL 5 s later).
fn wait_or_kill(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if start.elapsed() > limit {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let group = child.id() as libc::pid_t;
    for (signal, grace) in [(libc::SIGTERM, 5), (libc::SIGKILL, 5)] {
        // SAFETY: kill(2) on our own child's process group; no memory is involved.
        unsafe { libc::kill(-group, signal) };
        let until = Instant::now() + Duration::from_secs(grace);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    None
}
