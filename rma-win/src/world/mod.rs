//! [`World`]: the ranks a program runs as, however they were started — threads of this
//! process, processes started by `rmarun` (rma's shared-memory world), or processes
//! started by an MPI launcher (`mpiexec`, `mpirun`, `srun`; a system MPI library's
//! `MPI_COMM_WORLD`, possibly across nodes).

mod collectives;
#[cfg(feature = "rsmpi")]
mod rsmpi;

use crate::Group;
use rma_backends::{AnyWorld, NodeBackend};
use rma_core::{DynBackend, Error, Rank, Result, Services};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// [`World::mode`]'s answer: threads of one process ([`run_threads`]), processes
/// started by `rmarun`, or processes started by an MPI launcher.
///
/// # Examples
///
/// ```
/// use rma_win::LaunchMode;
/// let modes = rma_win::launch(2, |world| world.mode())?;
/// match rma_win::launcher() {
///     None => assert_eq!(modes, [LaunchMode::Threads; 2]), // one result per thread
///     Some("rmarun") => assert_eq!(modes, [LaunchMode::Processes]),
///     Some(_) => assert_eq!(modes, [LaunchMode::Mpi]),
/// }
/// # Ok::<(), rma_win::Error>(())
/// ```
///
/// ---
pub use rma_core::LaunchMode;

/// One rank's handle on its world: its rank, the number of ranks, and the collectives
/// windows are built on (barrier, all-gather).
///
/// Obtained from [`launch`](crate::launch), [`run_threads`] or [`World::from_env`].
///
/// # Examples
///
/// ```
/// use rma_win::{Assert, Info, Op, Rank, Window};
/// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
///     assert_eq!(world.size(), 3);
///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?; // borrows `world`
///     win.fence(Assert::NONE)?;
///     win.accumulate(&[world.rank() as u64], Rank::new(0), 0, Op::Sum)?;
///     win.fence(Assert::NONE)?;
///     let total = world.broadcast_value(0, win.local_vec::<u64>()?[0])?;
///     assert_eq!(total, 3); // 0 + 1 + 2, as rank 0's window holds it
///     Ok(())
/// })?.into_iter().collect::<rma_win::Result<()>>()?;
/// # Ok::<(), rma_win::Error>(())
/// ```
#[derive(Debug)]
#[doc(alias = "MPI_Comm")]
pub struct World {
    pub(crate) inner: AnyWorld,
    /// Each rank's index in the world this one descends from by splits (its root),
    /// and that root's identity: what [`World::translate_ranks`] compares.
    roots: Arc<[usize]>,
    family: Arc<()>,
}

impl World {
    /// Joins the world this process was started in: the one `rmarun` named in the
    /// environment, else `MPI_COMM_WORLD` when an MPI launcher started it (MPI is then
    /// initialized, and finalized when the `World` drops). `Ok(None)` when neither
    /// started it.
    ///
    /// Errors: under an MPI launcher, class RMA_FLAVOR if this build has no MPI
    /// support (rma-win's `mpi` feature) or the library's class if MPI fails to start.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::World;
    /// match World::from_env()? {
    ///     Some(world) => println!("rank {} of {}, {}", world.rank(), world.size(), world.mode()),
    ///     None => println!("no launcher: use run_threads, or World::singleton"),
    /// }
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias("MPI_Init", "MPI_COMM_WORLD"))]
    pub fn from_env() -> Result<Option<World>> {
        Ok(AnyWorld::from_env()?.map(World::from))
    }

    /// One rank of a world of another backend: anything implementing rma-core's
    /// [`Backend`](rma_core::Backend) contract. Its windows are driven by the same
    /// validation and epoch tracking as every other window (a virtual call per RMA
    /// call is the only difference).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::backend::AnyWorld;
    /// use rma_win::{Assert, Info, Rank, Window, World};
    /// // any `Backend` plugs in; rma's own one-process world stands in for one here
    /// let world = World::from_backend(AnyWorld::singleton()?);
    /// assert!(!world.any_thread()); // a plugged backend promises nothing about threads
    /// let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
    /// win.fence(Assert::NONE)?;
    /// win.put(&[4u64, 5], Rank::new(0), 0)?;
    /// win.fence(Assert::NONE)?;
    /// assert_eq!(win.local_vec::<u64>()?, [4, 5]);
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn from_backend(backend: impl DynBackend + 'static) -> World {
        World::from(AnyWorld::plugged(backend))
    }

    /// A world of this process alone on rma's shared memory (MPI's singleton start:
    /// a program run without a launcher).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, LaunchMode, Window, World};
    /// let world = World::singleton()?;
    /// assert_eq!((world.rank(), world.size()), (0, 1));
    /// assert_eq!(world.mode(), LaunchMode::Processes);
    /// let win = Window::allocate::<f64>(&world, 4, &Info::new())?;
    /// assert_eq!(win.local_len(), 32);
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn singleton() -> Result<World> {
        Ok(World::from(AnyWorld::singleton()?))
    }

    /// Whether any thread of the process may use this world's objects in turn (rma's
    /// shared memory), rather than only the thread that made it (a system MPI world
    /// stays on its thread; a backend from outside promises nothing).
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     // rma's shared memory: the world (and its windows) may move between threads
    ///     assert!(world.any_thread());
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn any_thread(&self) -> bool {
        self.inner.any_thread()
    }

    /// What ends the whole job from any thread, without this world (MPI_Abort), where
    /// the backend offers it (rma's shared memory).
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     // rma's shared memory offers one; a watchdog thread could end the job with it
    ///     let handle = world.abort_handle();
    ///     assert!(handle.is_some());
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Abort")]
    pub fn abort_handle(&self) -> Option<crate::backend::AbortHandle> {
        self.inner.abort_handle()
    }

    /// The name rma's shared memory gives this world's segments, after which shared
    /// blocks ([`crate::backend::Segment`]) are named so that peers can map them;
    /// `None` for other backends.
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let names = world.allgather(world.segment_name().unwrap_or("").as_bytes())?;
    ///     assert!(!names[0].is_empty());
    ///     assert_eq!(names[0], names[1]); // one world, one name on every rank
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn segment_name(&self) -> Option<&str> {
        self.inner.segment_name()
    }

    /// The backend under this world (rma's shared memory, a system MPI library, or
    /// one plugged in with [`World::from_backend`]).
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     assert!(world.backend().shm().is_some()); // threads run on rma's shared memory
    ///     assert!(world.backend().mpi().is_none());
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn backend(&self) -> &AnyWorld {
        &self.inner
    }

    /// This rank's index.
    ///
    /// # Examples
    ///
    /// ```
    /// let ranks = rma_win::run_threads(3, |world| world.rank())?;
    /// assert_eq!(ranks, [0, 1, 2]); // in rank order
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Comm_rank")]
    pub fn rank(&self) -> usize {
        self.inner.rank()
    }

    /// The number of ranks.
    ///
    /// # Examples
    ///
    /// ```
    /// let sizes = rma_win::run_threads(3, |world| world.size())?;
    /// assert_eq!(sizes, [3, 3, 3]);
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Comm_size")]
    pub fn size(&self) -> usize {
        self.inner.size()
    }

    /// How the ranks run.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::LaunchMode;
    /// let modes = rma_win::run_threads(2, |world| world.mode())?;
    /// assert_eq!(modes, [LaunchMode::Threads; 2]);
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn mode(&self) -> LaunchMode {
        self.inner.mode()
    }

    /// Blocks until every rank has called `barrier`; everything written before it by
    /// any rank happens-before everything after it on every rank. In an rma world a
    /// dead or exited peer makes it return class PROC_FAILED within tens of
    /// milliseconds; under MPI the launcher ends the job when a rank dies.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// let arrived = AtomicUsize::new(0);
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     arrived.fetch_add(1, Ordering::Relaxed);
    ///     world.barrier()?;
    ///     assert_eq!(arrived.load(Ordering::Relaxed), 3); // every rank arrived before any left
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Barrier")]
    pub fn barrier(&self) -> Result<()> {
        self.inner.barrier()
    }

    /// Every rank contributes `mine`; every rank receives all contributions, indexed
    /// by rank. In an rma world a contribution holds at most 248 bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let all = world.allgather(&vec![b'a' + world.rank() as u8; world.rank()])?;
    ///     assert_eq!(all, [vec![], vec![b'b'], vec![b'c', b'c']]); // lengths may differ
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias("MPI_Allgather", "MPI_Allgatherv"))]
    pub fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        self.inner.allgather(mine)
    }

    /// Checks that every peer is still alive (class PROC_FAILED names the first one
    /// found dead). Under MPI the launcher ends the job when a rank dies, so this
    /// always succeeds there.
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     world.check_peers()?; // both ranks alive: Ok
    ///     world.barrier()
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn check_peers(&self) -> Result<()> {
        self.inner.check_peers()
    }

    /// Collectively splits this world (MPI_Comm_split): the ranks that give the same
    /// `color` form a new world, numbered by `key` and then by their rank here; a rank
    /// that gives `None` (MPI_UNDEFINED) joins none and gets `Ok(None)`. Every rank of
    /// this world must call it.
    ///
    /// The new world is a world like any other: windows made on it span its ranks
    /// only, numbered as it numbers them (so are PSCW groups and every target rank of
    /// its windows), and its collectives never wait for ranks outside it, so windows
    /// on overlapping worlds split from one world live side by side. With rma's own
    /// backends it has a control segment of its own; under an MPI launcher it is
    /// MPI_Comm_split's communicator (MPI stays initialized until the last world of
    /// the process is gone). [`World::translate_ranks`] maps its ranks to those of
    /// any world with the same origin.
    ///
    /// Errors: PROC_FAILED for a dead peer (rma's backends) or ranks that entered
    /// another collective (MPI); NO_MEM; RMA_FLAVOR on a world plugged in with
    /// [`World::from_backend`], which has no sub-worlds.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(4, |world| -> rma_win::Result<()> {
    ///     // even and odd ranks, each group with its own window and its own counter
    ///     let half = world.split(Some(world.rank() as u32 % 2), 0)?.expect("a color");
    ///     assert_eq!(half.size(), 2);
    ///     assert_eq!(half.rank(), world.rank() / 2);
    ///     let win = Window::allocate::<u64>(&half, 1, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     win.accumulate(&[1u64], Rank::new(0), 0, Op::Sum)?; // rank 0 of `half`
    ///     win.fence(Assert::NONE)?;
    ///     if half.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u64>()?, [2]);
    ///     }
    ///     // rank 1 of `half` is world rank 2 (evens) or 3 (odds)
    ///     assert_eq!(half.translate_ranks(&[1], &world)?, [Some(2 + world.rank() % 2)]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Comm_split")]
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<World>> {
        let _span = tracing::debug_span!("world_split", ?color, key).entered();
        let Some(inner) = self.inner.split(color, key)? else {
            return Ok(None);
        };
        self.adopt(inner).map(Some)
    }

    /// The world of the ranks in `group`, in the group's order, made by them alone
    /// (MPI_Comm_create_group): only the group's ranks call it, each with the same
    /// group and `tag`; calls with the same group and tag are matched in order. The
    /// other ranks take no part (with [`World::create`] every rank of this world
    /// does). As [`World::split`] otherwise.
    ///
    /// Errors: ARG if this rank is not in the group; RANK for a rank of the group
    /// outside this world (both before anything is shared); PROC_FAILED if a rank of
    /// the group dies or leaves before every rank joined, or could not join (the
    /// others get it too); NO_MEM; RMA_FLAVOR on a world plugged in with
    /// [`World::from_backend`]. Under MPI the tag must also stay below the library's
    /// MPI_TAG_UB (at least 32767).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Group, Info, Window};
    /// rma_win::run_threads(4, |world| -> rma_win::Result<()> {
    ///     // ranks 3 and 1 make a world of their own; 0 and 2 are not involved
    ///     if world.rank() % 2 == 1 {
    ///         let pair = world.create_group(&Group::new(&[3, 1])?, 7)?;
    ///         assert_eq!(pair.rank(), if world.rank() == 3 { 0 } else { 1 });
    ///         let win = Window::allocate::<u64>(&pair, 1, &Info::new())?;
    ///         pair.barrier()?;
    ///         drop(win);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Comm_create_group")]
    pub fn create_group(&self, group: &Group, tag: u32) -> Result<World> {
        let _span = tracing::debug_span!("world_create_group", tag).entered();
        let inner = self.inner.create_group(group.ranks(), tag)?;
        self.adopt(inner)
    }

    /// A world split from this one: every rank of it learns every rank's root index.
    fn adopt(&self, inner: AnyWorld) -> Result<World> {
        let mut world = World::from(inner);
        world.family = self.family.clone();
        world.roots = world
            .allgather_value(self.roots[self.rank()] as u64)?
            .into_iter()
            .map(|r| r as usize)
            .collect();
        Ok(world)
    }

    /// The ranks of this world that share memory, as a world of their own: a *node
    /// world* (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED), numbered as here.
    /// Collective. The same as [`World::split_type`]`(SplitType::Shared, 0)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Window};
    /// rma_win::run_threads(4, |world| -> rma_win::Result<()> {
    ///     // threads (and rmarun's processes) all share memory: one node of 4
    ///     let node = world.split_shared()?;
    ///     assert_eq!(node.size(), 4);
    ///     let win = Window::allocate_shared::<f64>(&node, 8, &Info::new())?;
    ///     node.barrier()?;
    ///     drop(win);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Comm_split_type")]
    #[doc(alias = "MPI_COMM_TYPE_SHARED")]
    pub fn split_shared(&self) -> Result<World> {
        self.split_type(SplitType::Shared, 0)
    }

    /// Splits this world by the kind of locality `kind` names, numbering each new
    /// world's ranks by `key`, then by their rank here (MPI_Comm_split_type).
    /// Collective: every rank passes the same `kind`.
    ///
    /// | this world | [`SplitType::Shared`] | [`SplitType::SharedMpi`] |
    /// |---|---|---|
    /// | threads, or processes of `rmarun` | all its ranks (they share memory), on rma's shared memory | the same |
    /// | an MPI world (`mpiexec`, `srun`, [`World::from_raw_mpi_comm`]) | each node's ranks on rma's shared memory: windows on the `atomic` or `queued` transport | each node's ranks on MPI: windows through the MPI library |
    /// | a plugged backend ([`World::from_backend`]) | RMA_FLAVOR | RMA_FLAVOR |
    ///
    /// A node world on rma's shared memory needs MPI only while it forms (the node's
    /// first rank names a segment to the others through MPI_Comm_split_type's
    /// communicator, which is then freed): its windows, collectives and liveness
    /// checks are rma's own, as under `rmarun`, and the MPI world goes on beside it
    /// for the ranks of every node. A window is either node-local (made on the node
    /// world) or world-wide (made on the MPI world), never both: MPI promises no
    /// atomicity between rma's transports and the library's.
    ///
    /// The test hook `RMA_NODE_RANKS=n` makes each run of `n` consecutive ranks count
    /// as one node, so that one machine can stand for several.
    ///
    /// Errors: RMA_FLAVOR on a plugged backend; ARG for a malformed `RMA_NODE_RANKS`;
    /// as [`World::split`].
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::SplitType;
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     // every thread shares memory: one node world, numbered by `key` (here reversed)
    ///     let node = world.split_type(SplitType::Shared, -(world.rank() as i32))?;
    ///     assert_eq!(node.size(), 3);
    ///     assert_eq!(node.rank(), 2 - world.rank());
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Comm_split_type")]
    pub fn split_type(&self, kind: SplitType, key: i32) -> Result<World> {
        let _span = tracing::debug_span!("world_split_type", ?kind, key).entered();
        let backend = match kind {
            SplitType::Shared => NodeBackend::Rma,
            SplitType::SharedMpi => NodeBackend::Mpi,
        };
        let inner = self.inner.split_shared(key, backend)?;
        self.adopt(inner)
    }

    /// A world over `comm`, a communicator of a program that initialized MPI itself
    /// (in C, or through another crate; with rma-win's `rsmpi` feature,
    /// `World::from_rsmpi` does this safely for rsmpi's communicators). Collective
    /// over `comm`. `comm` is the library's `MPI_Comm` as an integer (MPICH's `int`,
    /// Open MPI's pointer, `as isize`).
    ///
    /// The world works on a duplicate of `comm` (the program's use of `comm` is
    /// unaffected), never finalizes MPI, and runs at the thread level the program
    /// initialized MPI with. The contract in full, and every error, are rma-mpi's
    /// `MpiWorld::from_raw_comm`'s: MPI is initialized and not finalized; below
    /// MPI_THREAD_MULTIPLE this is MPI's main thread (and only it uses the world);
    /// every rank of `comm` can make it; `comm` is not used
    /// by another thread while this runs; the world and its windows are dropped
    /// before the program calls MPI_Finalize (one that finalizes first ends the job
    /// there, with a message). Needs rma-win's `mpi` feature (class RMA_FLAVOR
    /// otherwise).
    ///
    /// # Safety
    /// `comm` is a live communicator handle of the MPI library this process runs, not
    /// used by another thread while this call runs. A handle of the other library, or
    /// an integer that is no handle, is refused by its shape (class ARG); a freed
    /// handle of the right library cannot be told apart.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use rma_win::{Op, World};
    ///
    /// /// Called by a C program that runs MPI: `sum = rank_sum((intptr_t)MPI_COMM_WORLD);`
    /// #[no_mangle]
    /// pub extern "C" fn rank_sum(comm: isize) -> i64 {
    ///     let sum = || -> rma_win::Result<i64> {
    ///         // SAFETY: the caller passes a live communicator of its MPI library and uses
    ///         // it on no other thread during this call
    ///         let world = unsafe { World::from_raw_mpi_comm(comm)? };
    ///         world.allreduce_value(world.rank() as i64, Op::Sum) // the world drops here
    ///     };
    ///     sum().unwrap_or(-1)
    /// }
    /// ```
    #[allow(unsafe_code)] // a constructor whose callers make the promise above
    #[doc(alias = "MPI_Comm_dup")]
    pub unsafe fn from_raw_mpi_comm(comm: isize) -> Result<World> {
        // SAFETY: the caller's promise, forwarded.
        Ok(World::from(unsafe { AnyWorld::from_raw_mpi_comm(comm)? }))
    }

    /// A world of the same ranks, in the same order, with collectives of its own
    /// (MPI_Comm_dup). Collective.
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let copy = world.dup()?;
    ///     assert_eq!((copy.rank(), copy.size()), (world.rank(), world.size()));
    ///     assert_eq!(copy.translate_ranks(&[0, 2], &world)?, [Some(0), Some(2)]);
    ///     copy.barrier() // collectives of its own, apart from `world`'s
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Comm_dup")]
    pub fn dup(&self) -> Result<World> {
        self.split(Some(0), 0)?.ok_or_else(|| Error::Internal {
            reason: "a dup left this rank out".into(),
        })
    }

    /// The world of the ranks in `group`, numbered in the group's order
    /// (MPI_Comm_create); ranks outside it get `Ok(None)`. Collective over every rank
    /// of this world, which must all give the same group.
    ///
    /// Errors: RANK for a rank of the group outside this world (on every rank, before
    /// anything collective); as [`World::split`].
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::Group;
    /// rma_win::run_threads(4, |world| -> rma_win::Result<()> {
    ///     // every rank calls it; ranks 3 and 0 form the new world, in that order
    ///     match world.create(&Group::new(&[3, 0])?)? {
    ///         Some(pair) => assert_eq!(pair.rank(), if world.rank() == 3 { 0 } else { 1 }),
    ///         None => assert!(world.rank() == 1 || world.rank() == 2),
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Comm_create")]
    pub fn create(&self, group: &Group) -> Result<Option<World>> {
        if let Some(&bad) = group.ranks().iter().find(|&&r| r >= self.size()) {
            return Err(Error::InvalidRank {
                rank: Rank::new(bad as u32),
                size: self.size(),
            });
        }
        let at = group.ranks().iter().position(|&r| r == self.rank());
        self.split(at.map(|_| 0), at.unwrap_or(0) as i32)
    }

    /// Where ranks of this world are in `other` (MPI_Group_translate_ranks): `None` for
    /// one that is not in it. Both worlds must descend from the same world by splits
    /// ([`World::split`], [`World::dup`], [`World::create`]; class ARG otherwise);
    /// local, no communication.
    ///
    /// Errors: RANK for a rank outside this world; ARG as above.
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(4, |world| -> rma_win::Result<()> {
    ///     let upper = world.rank() >= 2;
    ///     let half = world.split(Some(upper as u32), 0)?.expect("a color");
    ///     let first = if upper { 2 } else { 0 };
    ///     assert_eq!(half.translate_ranks(&[0, 1], &world)?, [Some(first), Some(first + 1)]);
    ///     // world ranks 0 and 3 in this half: one of them is not in it
    ///     let there = world.translate_ranks(&[0, 3], &half)?;
    ///     assert_eq!(there, if upper { [None, Some(1)] } else { [Some(0), None] });
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Group_translate_ranks")]
    pub fn translate_ranks(&self, ranks: &[usize], other: &World) -> Result<Vec<Option<usize>>> {
        if !Arc::ptr_eq(&self.family, &other.family) {
            return Err(Error::arg(
                "the two worlds do not descend from one world by splits; ranks translate only \
                 between worlds of one family",
            ));
        }
        ranks
            .iter()
            .map(|&r| {
                let root = self.roots.get(r).ok_or_else(|| Error::InvalidRank {
                    rank: Rank::new(r as u32),
                    size: self.size(),
                })?;
                Ok(other.roots.iter().position(|x| x == root))
            })
            .collect()
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

/// What [`World::split_type`] splits by (MPI_Comm_split_type's `split_type`).
///
/// # Examples
///
/// ```
/// use rma_win::SplitType;
/// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
///     // threads: both kinds give the world of every rank, on rma's shared memory
///     for kind in [SplitType::Shared, SplitType::SharedMpi] {
///         let node = world.split_type(kind, 0)?;
///         assert_eq!((node.rank(), node.size()), (world.rank(), 2));
///         assert!(node.backend().shm().is_some());
///     }
///     Ok(())
/// })?.into_iter().collect::<rma_win::Result<()>>()?;
/// # Ok::<(), rma_win::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[doc(alias = "MPI_Comm_split_type")]
pub enum SplitType {
    /// MPI_COMM_TYPE_SHARED: the ranks that share memory (a node), on rma's shared
    /// memory.
    Shared,
    /// MPI_COMM_TYPE_SHARED, keeping an MPI world's node worlds on the MPI library
    /// (its windows, MPI_Win_allocate_shared included); elsewhere as `Shared`.
    SharedMpi,
}

impl From<AnyWorld> for World {
    fn from(inner: AnyWorld) -> World {
        World {
            roots: (0..inner.size()).collect(),
            family: Arc::new(()),
            inner,
        }
    }
}

/// Runs `f` on `n` ranks, each a thread of this process with its own [`World`], and
/// returns their results in rank order. A rank that panics is seen by the others as a
/// dead peer; its panic is resumed once every thread has ended.
///
/// # Examples
///
/// ```
/// let squares = rma_win::run_threads(4, |world| world.rank() * world.rank())?;
/// assert_eq!(squares, [0, 1, 4, 9]); // one result per rank, in rank order
/// # Ok::<(), rma_win::Error>(())
/// ```
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
///
/// # Examples
///
/// ```
/// use rma_win::{Info, Window};
/// let results = rma_win::launch(2, |world| -> rma_win::Result<usize> {
///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
///     world.barrier()?;
///     drop(win);
///     Ok(world.rank())
/// })?;
/// let ranks = results.into_iter().collect::<rma_win::Result<Vec<_>>>()?;
/// if rma_win::launcher().is_none() {
///     assert_eq!(ranks, [0, 1]); // no launcher: 2 threads, every rank's result here
/// }
/// # Ok::<(), rma_win::Error>(())
/// ```
#[doc(alias = "MPI_Init")]
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
