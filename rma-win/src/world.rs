//! [`World`]: the ranks a program runs as, however they were started — threads of this
//! process, processes started by `rmarun` (rma's shared-memory world), or processes
//! started by an MPI launcher (`mpiexec`, `mpirun`, `srun`; a system MPI library's
//! `MPI_COMM_WORLD`, possibly across nodes).

use rma_core::Result;
use std::sync::atomic::AtomicU32;

/// How the ranks of a world run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchMode {
    /// One process per rank, started by `rmarun`, sharing memory on one node.
    Processes,
    /// One thread per rank, in one process.
    Threads,
    /// One process per rank, started by an MPI launcher: windows use the `mpi`
    /// transport (the system MPI library's RMA), on one node or several.
    Mpi,
}

impl std::fmt::Display for LaunchMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LaunchMode::Processes => "processes",
            LaunchMode::Threads => "threads",
            LaunchMode::Mpi => "mpi",
        })
    }
}

/// One rank's handle on its world: its rank, the number of ranks, and the collectives
/// windows are built on (barrier, all-gather).
///
/// Obtained from [`launch`](crate::launch), [`run_threads`] or [`World::from_env`].
#[derive(Debug)]
pub struct World {
    pub(crate) kind: Kind,
}

#[derive(Debug)]
pub(crate) enum Kind {
    Shm(rma_shm::World),
    Mpi(rma_mpi::World),
}

impl World {
    /// Joins the world this process was started in: the one `rmarun` named in the
    /// environment, else `MPI_COMM_WORLD` when an MPI launcher started it (MPI is then
    /// initialized, and finalized when the `World` drops). `Ok(None)` when neither
    /// started it.
    ///
    /// Errors: under an MPI launcher, class RMA_FLAVOR if this build has no MPI
    /// support (rma-win's `mpi` feature) or the library's class if MPI fails to start.
    pub fn from_env() -> Result<Option<World>> {
        if let Some(w) = rma_shm::World::from_env()? {
            return Ok(Some(World { kind: Kind::Shm(w) }));
        }
        // MPI_THREAD_SERIALIZED is enough: a World and its windows are neither Send
        // nor Sync, so one thread makes every MPI call of the process. Asking for
        // MULTIPLE would make the library lock around each call (MPICH 4.0: about
        // 0.1-0.3 µs per call on this machine kind, benches/results).
        let level = rma_mpi::ThreadLevel::Serialized;
        Ok(rma_mpi::World::from_env_thread(level)?.map(|w| World { kind: Kind::Mpi(w) }))
    }

    /// This rank's index.
    pub fn rank(&self) -> usize {
        match &self.kind {
            Kind::Shm(w) => w.rank(),
            Kind::Mpi(w) => w.rank(),
        }
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        match &self.kind {
            Kind::Shm(w) => w.size(),
            Kind::Mpi(w) => w.size(),
        }
    }

    /// How the ranks run.
    pub fn mode(&self) -> LaunchMode {
        match &self.kind {
            Kind::Shm(w) => match w.mode() {
                rma_shm::LaunchMode::Processes => LaunchMode::Processes,
                rma_shm::LaunchMode::Threads => LaunchMode::Threads,
            },
            Kind::Mpi(_) => LaunchMode::Mpi,
        }
    }

    /// Blocks until every rank has called `barrier`; everything written before it by
    /// any rank happens-before everything after it on every rank. In an rma world a
    /// dead or exited peer makes it return class PROC_FAILED within tens of
    /// milliseconds; under MPI the launcher ends the job when a rank dies.
    pub fn barrier(&self) -> Result<()> {
        match &self.kind {
            Kind::Shm(w) => w.barrier(),
            Kind::Mpi(w) => w.barrier(),
        }
    }

    /// Every rank contributes `mine`; every rank receives all contributions, indexed
    /// by rank. In an rma world a contribution holds at most
    /// [`rma_shm::GATHER_BYTES`] bytes.
    pub fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        match &self.kind {
            Kind::Shm(w) => w.allgather(mine),
            Kind::Mpi(w) => w.allgather(mine),
        }
    }

    /// Checks that every peer is still alive (class PROC_FAILED names the first one
    /// found dead). Under MPI the launcher ends the job when a rank dies, so this
    /// always succeeds there.
    pub fn check_peers(&self) -> Result<()> {
        match &self.kind {
            Kind::Shm(w) => w.check_peers(),
            Kind::Mpi(_) => Ok(()),
        }
    }

    /// The world's failure word (rma worlds; a word that stays zero under MPI, whose
    /// launcher ends the job when a rank dies): nonzero once a rank is known dead or
    /// the world's control state corrupt. Read with one relaxed load on every call;
    /// [`World::check_failed`] says what it means.
    pub(crate) fn failure_word(&self) -> &AtomicU32 {
        static WHOLE: AtomicU32 = AtomicU32::new(0);
        match &self.kind {
            Kind::Shm(w) => w.failure_word(),
            Kind::Mpi(_) => &WHOLE,
        }
    }

    /// `Ok` while the failure word is zero, else the error it stands for (class
    /// PROC_FAILED naming the dead rank, or INTERN).
    pub(crate) fn check_failed(&self) -> Result<()> {
        match &self.kind {
            Kind::Shm(w) => w.check_failed(),
            Kind::Mpi(_) => Ok(()),
        }
    }

    /// The shared-memory world under this one, if it is one.
    pub fn shm(&self) -> Option<&rma_shm::World> {
        match &self.kind {
            Kind::Shm(w) => Some(w),
            Kind::Mpi(_) => None,
        }
    }

    /// The MPI world under this one, if it is one.
    pub fn mpi(&self) -> Option<&rma_mpi::World> {
        match &self.kind {
            Kind::Shm(_) => None,
            Kind::Mpi(w) => Some(w),
        }
    }
}

impl From<rma_shm::World> for World {
    fn from(w: rma_shm::World) -> World {
        World { kind: Kind::Shm(w) }
    }
}

impl From<rma_mpi::World> for World {
    fn from(w: rma_mpi::World) -> World {
        World { kind: Kind::Mpi(w) }
    }
}

/// Runs `f` on `n` ranks, each a thread of this process with its own [`World`], and
/// returns their results in rank order. A rank that panics is seen by the others as a
/// dead peer; its panic is resumed once every thread has ended.
pub fn run_threads<R, F>(n: usize, f: F) -> Result<Vec<R>>
where
    R: Send,
    F: Fn(World) -> R + Sync,
{
    rma_shm::run_threads(n, |w| in_rank_span(World::from(w), &f))
}

/// Runs `f` for `world` inside a `rank` span carrying its index, so that every span
/// and event of the rank names it (`RUST_LOG`, [`crate::init_tracing`]).
fn in_rank_span<R>(world: World, f: &impl Fn(World) -> R) -> R {
    let span = tracing::info_span!("rank", rank = world.rank());
    let _inside = span.enter();
    f(world)
}

/// Runs `f` as one rank of a world: as the process rank started by `rmarun` or by an
/// MPI launcher when the environment says so, otherwise on `default_ranks` threads of
/// this process. Returns this process's results (one in process and MPI modes, one per
/// rank in thread mode).
pub fn launch<R, F>(default_ranks: usize, f: F) -> Result<Vec<R>>
where
    R: Send,
    F: Fn(World) -> R + Sync,
{
    match World::from_env()? {
        Some(world) => Ok(vec![in_rank_span(world, &f)]),
        None => run_threads(default_ranks, f),
    }
}
