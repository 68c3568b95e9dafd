//! The MPI world: initialization, the world communicator, collectives, finalization.
//!
//! [`MpiWorld`] is one type over this module's files, each holding what one part of its
//! work needs:
//! - this file: the struct, its accessors, and the path every MPI call takes —
//!   [`MpiWorld::mpi`] (the thread rules: who may call MPI, and in whose turn) and
//!   [`MpiWorld::check`] (MPI's error codes as rma errors) — with the predefined
//!   datatypes, the broken state and the progress thread's start and stop;
//! - `life`: MPI's one-way life in this process: initialization, the start and end of
//!   sub-worlds, confinement to one thread, abort and finalization;
//! - `collectives`: the agreement before every collective (the `agree` module's
//!   protocol), barrier, all-gather, split, create_group, and the start of every
//!   window creation;
//! - `thread` and `progress`, which know no `MpiWorld`: thread levels, the gate, state
//!   updated in a call's turn; the progress thread.

mod adopt;
mod collectives;
mod life;
mod progress;
mod thread;

pub use adopt::FINALIZE_ABORT_CODE;
pub use progress::ENV_PROGRESS;
pub(crate) use thread::{Refused, Turned};
pub use thread::{ThreadLevel, ENV_THREAD};

use progress::Progress;
use rma_core::{BasicType, Error, Rank, Result};
use rma_mpi_sys::{Api, Call, Guards, Handle, Library};
use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use thread::{on_init_thread, wrong_thread, Gate, TurnLock, WRONG_THREAD};

/// This process's handle on MPI: the ranks of `MPI_COMM_WORLD` (through a duplicate
/// with `MPI_ERRORS_RETURN`), collectives, and the library's identity.
///
/// At most one `MpiWorld` exists per process, and MPI cannot be initialized again once
/// it is finalized (on drop or by [`MpiWorld::finalize`]). A `MpiWorld` is `Sync` but not
/// `Send`: every thread may use it (MPI is initialized with at least
/// `MPI_THREAD_SERIALIZED` unless a lower level was asked for, and calls are
/// serialized here when the library provides no more), while MPI_Finalize runs on the
/// thread that initialized MPI, as the standard asks. In a world initialized below
/// SERIALIZED on request, only that thread may call MPI: calls from other threads fail
/// (class OTHER), so its windows belong on that thread too — a window dropped or freed
/// on another thread cannot take part in the collective free, and its peers' next
/// collective reports the mismatch.
///
/// Dropping a `MpiWorld` while the thread panics calls `MPI_Abort`, so that a failing
/// rank ends the job instead of leaving the others waiting in a collective.
///
/// Every collective it makes (barrier, all-gather, window creation, fence and free,
/// finalize) is preceded by an agreement: ranks that enter different collectives —
/// one returned early and dropped its window while the others wait in a barrier —
/// all get class PROC_FAILED instead of waiting forever, and the job ends with
/// `MPI_Abort` when the process exits (the `agree` module's docs, [`ABORT_CODE`]).
///
/// [`ABORT_CODE`]: crate::ABORT_CODE
#[doc(alias = "MPI_Comm")]
pub struct MpiWorld {
    api: &'static Api,
    library: Library,
    version: String,
    comm: Handle,
    rank: usize,
    size: usize,
    level: ThreadLevel,
    /// Held around every MPI call when the library provides MPI_THREAD_SERIALIZED only
    /// (in a confined world only once a progress thread runs, see [`MpiWorld::confine`]).
    gate: Option<Arc<Gate>>,
    /// MPI was initialized below SERIALIZED (asked for): only the thread that
    /// initialized it may call MPI.
    owner_only: bool,
    /// Held around collectives on `comm`: two threads of one process must not enter
    /// collectives on one communicator at once (MPI leaves their matching undefined).
    collective: Mutex<()>,
    guards: Guards,
    /// The predefined datatype of each basic type, by its discriminant (0: none; the
    /// shim is asked again, for its error).
    basic: Box<[Handle; BasicType::ALL.len()]>,
    finalized: bool,
    /// Windows created so far: the next window's number.
    windows: AtomicU32,
    /// Set once the ranks entered different collectives: the error every collective
    /// and wait now returns.
    broken: OnceLock<(Rank, String)>,
    /// The progress thread, while one runs ([`MpiWorld::start_progress`]).
    progress: Mutex<Option<Progress>>,
    /// Split from another world ([`MpiWorld::split`]): dropping it frees its communicator,
    /// and MPI_Finalize is the process world's (or the last sub-world's) to call.
    sub: bool,
    /// Made over a communicator of the program ([`MpiWorld::from_raw_comm`]): a
    /// sub-world (never finalizes MPI) with a gate of its own.
    adopted: bool,
    /// MPI belongs to the program (this world, or the one it was split from, was
    /// adopted): no progress thread below MPI_THREAD_MULTIPLE, and the program's
    /// MPI_Finalize while it lives ends the job.
    program: bool,
    /// Whether a world was split from this one (they share its gate).
    has_subs: AtomicBool,
    _not_send: PhantomData<MutexGuard<'static, ()>>,
}

impl std::fmt::Debug for MpiWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiWorld")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("library", &self.library)
            .field("thread_level", &self.level)
            .finish()
    }
}

impl MpiWorld {
    /// This process's rank in `MPI_COMM_WORLD`.
    #[doc(alias = "MPI_Comm_rank")]
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    #[doc(alias = "MPI_Comm_size")]
    pub fn size(&self) -> usize {
        self.size
    }

    /// The thread level the library provided.
    #[doc(alias = "MPI_Query_thread")]
    pub fn thread_level(&self) -> ThreadLevel {
        self.level
    }

    /// The MPI library family.
    pub fn library(&self) -> Library {
        self.library
    }

    /// The library's version string (MPI_Get_library_version).
    #[doc(alias = "MPI_Get_library_version")]
    pub fn library_version(&self) -> &str {
        &self.version
    }

    /// Whether compare_and_swap on 8-byte types is refused (class RMA_FLAVOR) because
    /// this library is known to crash on it: Open MPI 4 with its osc/rdma component
    /// (open-mpi/ompi#11349). False when Open MPI's `osc` selection rules rdma out
    /// (`--mca osc sm`, `--mca osc ucx`) or `RMA_MPI_NO_GUARDS=1`.
    pub fn cas64_blocked(&self) -> bool {
        self.guards.cas64_blocked()
    }

    /// The library defects this process avoids (rma-mpi-sys's `Guards`).
    pub(crate) fn guards(&self) -> &Guards {
        &self.guards
    }

    /// The shim.
    pub(crate) fn api(&self) -> &'static Api {
        self.api
    }

    /// The world communicator's handle.
    pub(crate) fn comm(&self) -> Handle {
        self.comm
    }

    /// Lets the library's progress engine run once (MPI_Iprobe). A rank that waits
    /// outside MPI — polling its own window memory — calls this so that libraries
    /// whose target side needs the target inside MPI (MPICH's ch4:ucx for the
    /// accumulate family) still apply other ranks' calls.
    pub fn progress(&self) -> Result<()> {
        // SAFETY: `comm` is live while `self` is.
        let rc = self.mpi(|api| unsafe { (api.progress)(self.comm) });
        self.check(rc, Call::new("MPI_Iprobe"))
    }

    /// Starts a progress thread: it lets the library's progress engine run
    /// (MPI_Iprobe) while this rank computes without calling MPI, so that other ranks'
    /// calls to this rank's windows complete on libraries whose target side needs the
    /// target inside MPI (MPICH's ch4:ucx applies the accumulate family there; without
    /// progress, an origin's fetch_and_op waits until the target's next MPI call).
    /// `RMA_MPI_PROGRESS=thread` ([`ENV_PROGRESS`]) starts it in [`MpiWorld::from_env`].
    ///
    /// The thread takes the same turn as every other MPI call of the process when the
    /// library provides MPI_THREAD_SERIALIZED only, and otherwise calls MPI
    /// concurrently (MPI_THREAD_MULTIPLE). It polls back to back, yielding between
    /// polls, while the node has a free core for it (rma-core's `wait` policy counts
    /// each rank twice while such a thread runs), and every 50 µs otherwise. It stops
    /// before MPI is finalized or the job aborted. Starting it twice is a no-op;
    /// starting it on a broken world fails with that world's error.
    /// [`ENV_PROGRESS`] is read by [`MpiWorld::from_env`] only, not by [`MpiWorld::init`].
    pub fn start_progress(&self) -> Result<()> {
        self.check_broken()?;
        if self.level < ThreadLevel::Serialized {
            // a second thread calling MPI is what this level rules out
            return Err(wrong_thread(self.level));
        }
        if self.owner_only && !on_init_thread() {
            return Err(wrong_thread(self.level));
        }
        if self.program && self.level < ThreadLevel::Multiple {
            return Err(Error::arg(format!(
                "the program initialized MPI at {:?}: a progress thread would call MPI beside \
                 the program's own calls, which needs MPI_THREAD_MULTIPLE",
                self.level
            )));
        }
        let mut slot = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return Ok(());
        }
        if let Some(g) = &self.gate {
            // before the thread exists: every later call of this (the only other)
            // thread takes turns with it
            g.set_on(true);
        }
        *slot = Some(Progress::start(
            self.api,
            self.comm,
            self.gate.clone(),
            self.rank,
        )?);
        Ok(())
    }

    /// Whether a progress thread runs ([`MpiWorld::start_progress`]).
    pub fn progress_thread(&self) -> bool {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Stops the progress thread, if one runs, and waits for it.
    pub(crate) fn stop_progress(&self) {
        let running = self
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(p) = running {
            p.stop();
        }
    }

    /// `Err` (class OTHER) when this thread may not call MPI: in a world below
    /// MPI_THREAD_SERIALIZED (asked for) only the initializing thread may.
    #[inline]
    pub(crate) fn check_thread(&self) -> Result<()> {
        if self.owner_only && !on_init_thread() {
            return Err(wrong_thread(self.level));
        }
        Ok(())
    }

    /// Runs one MPI call, serialized with every other when the library provides no
    /// more than MPI_THREAD_SERIALIZED. Below that (a world initialized at
    /// MPI_THREAD_FUNNELED or SINGLE on request) only the thread that initialized MPI
    /// may call it: from any other thread this is an error of class OTHER and MPI is
    /// not called.
    ///
    /// The refusal is the call's own result ([`Refused`]): the return code
    /// [`WRONG_THREAD`], which [`MpiWorld::check`] reports as that error, so every caller
    /// handles it where it handles a failed MPI call.
    #[inline]
    pub(crate) fn mpi<T: Refused>(&self, f: impl FnOnce(&Api) -> T) -> T {
        if self.owner_only && !on_init_thread() {
            return T::refused(self.level);
        }
        let _turn = self.gate.as_ref().and_then(|g| g.turn());
        f(self.api)
    }

    /// `Ok` for MPI_SUCCESS, else the error of the code's class.
    #[inline]
    pub(crate) fn check(&self, code: c_int, call: Call) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        let call = call.group(self.size);
        // MPI_Error_class / _string are MPI calls too: in turn with the others
        if code == WRONG_THREAD {
            return Err(wrong_thread(self.level));
        }
        Err(self.mpi(|api| call.error(api, code)))
    }

    /// State that MPI calls of this world update in the same turn as the call (see
    /// [`MpiWorld::mpi_turned`]).
    pub(crate) fn turned<S>(&self, state: S) -> Turned<S> {
        let lock = match (&self.gate, self.owner_only) {
            // the gate, if any, is the world's for good (made with it, at SERIALIZED)
            (gate, true) => TurnLock::Owner(gate.clone()),
            (Some(gate), false) => TurnLock::Gate(Arc::clone(gate)),
            (None, false) => TurnLock::Own(Mutex::new(())),
        };
        Turned {
            lock,
            state: UnsafeCell::new(state),
        }
    }

    /// [`MpiWorld::mpi`] with exclusive access to `cell`'s state in the same turn: the
    /// MPI calls `f` makes and the bookkeeping it does about them are one step for
    /// every other thread. Where the world serializes MPI calls, its turn is the
    /// lock (no second one is taken); below SERIALIZED the initializing thread is the
    /// only one let in; at MPI_THREAD_MULTIPLE the cell's own lock serializes the
    /// calls that update it. `f` must not call [`MpiWorld::mpi`] (the turn is held).
    #[inline(always)]
    pub(crate) fn mpi_turned<S, T: Refused>(
        &self,
        cell: &Turned<S>,
        f: impl FnOnce(&Api, &mut S) -> T,
    ) -> T {
        let Ok(_turn) = self.take_turn(cell) else {
            return T::refused(self.level);
        };
        // SAFETY: exclusive for as long as `f` runs: every shared access to the state
        // goes through this function, which holds the cell's turn (`take_turn`): the
        // cell's lock (a gate shared with every world cloned from this one, or the
        // cell's own mutex), or, for a cell of a world where only the initializing
        // thread may call MPI (below SERIALIZED, or confined before the cell was
        // made), this thread being that one (any other was refused), with the gate it
        // shares with a progress thread if one runs; `f` gets the reference for its
        // call only. Access through `&mut Turned` (`get_mut`) is exclusive by the
        // borrow.
        f(self.api, unsafe { &mut *cell.state.get() })
    }

    /// The turn of [`MpiWorld::mpi_turned`]: the lock it holds, if any; `Err` when this
    /// thread may not call MPI. The owner's turn with no progress thread (every call
    /// of rma-win's confined worlds) is decided in line; the turns that lock, out of
    /// line.
    #[inline(always)]
    fn take_turn<'c, S>(&self, cell: &'c Turned<S>) -> Result<Option<MutexGuard<'c, ()>>, ()> {
        if Self::turn_is_free(cell) {
            return Ok(None);
        }
        if matches!(cell.lock, TurnLock::Owner(_)) && !on_init_thread() {
            return Err(());
        }
        Ok(Self::lock_turn(&cell.lock))
    }

    /// Whether `cell`'s turn takes no lock on this thread now: the owner's, with no
    /// progress thread running (a confined world, or one below SERIALIZED), called
    /// from the thread that initialized MPI.
    #[inline(always)]
    pub(crate) fn turn_is_free<S>(cell: &Turned<S>) -> bool {
        match &cell.lock {
            TurnLock::Owner(gate) => on_init_thread() && gate.as_ref().is_none_or(|g| !g.is_on()),
            _ => false,
        }
    }

    /// [`MpiWorld::take_turn`]'s locks: the world's gate, the cell's own lock, or the
    /// gate an owner shares with its progress thread.
    #[cold]
    #[inline(never)]
    fn lock_turn(lock: &TurnLock) -> Option<MutexGuard<'_, ()>> {
        match lock {
            TurnLock::Gate(g) => Some(g.lock()),
            TurnLock::Own(m) => Some(m.lock().unwrap_or_else(PoisonError::into_inner)),
            // the MPI calls take turns with a progress thread's
            TurnLock::Owner(gate) => gate.as_ref().and_then(|g| g.turn()),
        }
    }

    /// The predefined datatype of `basic`.
    #[inline]
    pub(crate) fn basic_handle(&self, basic: BasicType) -> Result<Handle> {
        let known = self.basic[basic as usize];
        if known != 0 {
            return Ok(known);
        }
        self.ask_basic_handle(basic)
    }

    /// [`MpiWorld::basic_handle`] of a type the shim did not name at start.
    #[cold]
    fn ask_basic_handle(&self, basic: BasicType) -> Result<Handle> {
        let mut ty: Handle = 0;
        // SAFETY: `ty` is a valid out-pointer; the shim only maps the code.
        let rc = unsafe { (self.api.basic)(basic as c_int, &mut ty) };
        self.check(rc, Call::new("basic datatype").typed(basic, None))?;
        Ok(ty)
    }

    /// `rank` as MPI's int, if it is a rank of the world.
    pub(crate) fn c_rank(&self, rank: Rank) -> Result<c_int> {
        match rank.index() {
            Some(i) if i < self.size => Ok(i as c_int),
            _ => Err(Error::InvalidRank {
                rank,
                size: self.size,
            }),
        }
    }

    /// `Err` (class PROC_FAILED, naming a rank that entered another collective) once
    /// the ranks entered different collectives; `Ok` before. Waits that poll outside
    /// MPI call it, so that they end too.
    #[inline]
    pub fn check_broken(&self) -> Result<()> {
        match self.broken.get() {
            None => Ok(()),
            Some((rank, why)) => Err(Error::ProcFailed {
                rank: *rank,
                reason: why.clone(),
            }),
        }
    }

    /// Breaks the world: from now on every collective and wait returns `error`'s
    /// rank and reason (class PROC_FAILED).
    pub(crate) fn set_broken(&self, rank: Rank, reason: String) {
        let _ = self.broken.set((rank, reason));
    }

    /// Whether the ranks entered different collectives (see [`MpiWorld::barrier`]).
    pub fn is_broken(&self) -> bool {
        self.broken.get().is_some()
    }

    /// Test hook: the next `n` MPI_Win_flush calls of this process (any window) fail
    /// with MPI_ERR_OTHER without reaching the library, which keeps the calls issued
    /// before them and completes them at a later synchronization: what a flush the
    /// library could not complete leaves behind. Not part of rma's API.
    #[doc(hidden)]
    pub fn fail_next_flushes(&self, n: u32) {
        // SAFETY: the shim's hook takes any count and touches only its own counter.
        unsafe { (self.api.test_fail_flushes)(n.min(i32::MAX as u32) as c_int) }
    }
}
