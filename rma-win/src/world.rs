//! [`World`]: the ranks a program runs as, however they were started — threads of this
//! process, processes started by `rmarun` (rma's shared-memory world), or processes
//! started by an MPI launcher (`mpiexec`, `mpirun`, `srun`; a system MPI library's
//! `MPI_COMM_WORLD`, possibly across nodes).

use rma_backends::AnyWorld;
use rma_core::{DynBackend, Result, Services};
use std::sync::atomic::AtomicU32;

pub use rma_core::LaunchMode;

/// One rank's handle on its world: its rank, the number of ranks, and the collectives
/// windows are built on (barrier, all-gather).
///
/// Obtained from [`launch`](crate::launch), [`run_threads`] or [`World::from_env`].
#[derive(Debug)]
pub struct World {
    pub(crate) inner: AnyWorld,
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
        Ok(AnyWorld::from_env()?.map(World::from))
    }

    /// One rank of a world of another backend: anything implementing rma-core's
    /// [`Backend`](rma_core::Backend) contract. Its windows are driven by the same
    /// validation and epoch tracking as every other window (a virtual call per RMA
    /// call is the only difference).
    pub fn from_backend(backend: impl DynBackend + 'static) -> World {
        World {
            inner: AnyWorld::Dyn(Box::new(backend)),
        }
    }

    /// The backend under this world (rma's shared memory, a system MPI library, or
    /// one plugged in with [`World::from_backend`]).
    pub fn backend(&self) -> &AnyWorld {
        &self.inner
    }

    /// This rank's index.
    pub fn rank(&self) -> usize {
        self.inner.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.inner.size()
    }

    /// How the ranks run.
    pub fn mode(&self) -> LaunchMode {
        self.inner.mode()
    }

    /// Blocks until every rank has called `barrier`; everything written before it by
    /// any rank happens-before everything after it on every rank. In an rma world a
    /// dead or exited peer makes it return class PROC_FAILED within tens of
    /// milliseconds; under MPI the launcher ends the job when a rank dies.
    pub fn barrier(&self) -> Result<()> {
        self.inner.barrier()
    }

    /// Every rank contributes `mine`; every rank receives all contributions, indexed
    /// by rank. In an rma world a contribution holds at most 248 bytes.
    pub fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.inner.allgather(mine)
    }

    /// Checks that every peer is still alive (class PROC_FAILED names the first one
    /// found dead). Under MPI the launcher ends the job when a rank dies, so this
    /// always succeeds there.
    pub fn check_peers(&self) -> Result<()> {
        self.inner.check_peers()
    }

    /// The world's failure word: nonzero once a rank is known dead or the world's
    /// control state corrupt. Read with one relaxed load on every call;
    /// [`World::check_failed`] says what it means.
    pub(crate) fn failure_word(&self) -> &AtomicU32 {
        self.inner.failure_word()
    }

    /// `Ok` while the failure word is zero, else the error it stands for (class
    /// PROC_FAILED naming the dead rank, or INTERN).
    pub(crate) fn check_failed(&self) -> Result<()> {
        self.inner.check_failed()
    }
}

impl From<AnyWorld> for World {
    fn from(inner: AnyWorld) -> World {
        World { inner }
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
    rma_backends::run_threads(n, |w| in_rank_span(World::from(w), &f))
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
