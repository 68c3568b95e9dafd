//! The MPI world: initialization, the world communicator, collectives, finalization.

use crate::agree::Entry;
use crate::defects::Guards;
use crate::error::{self, Call};
use crate::ffi::{self, Api, Handle, Library};
use rma_core::{BasicType, Error, Rank, Result};
use std::cell::{Cell, UnsafeCell};
use std::ffi::{c_char, c_int, c_void};
use std::marker::PhantomData;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

/// MPI's thread support levels (MPI_THREAD_*), lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadLevel {
    /// Only one thread will execute (MPI_THREAD_SINGLE).
    Single,
    /// Only the main thread calls MPI (MPI_THREAD_FUNNELED).
    Funneled,
    /// One thread at a time calls MPI (MPI_THREAD_SERIALIZED).
    Serialized,
    /// Any thread calls MPI at any time (MPI_THREAD_MULTIPLE).
    Multiple,
}

impl ThreadLevel {
    /// The level [`ENV_THREAD`] names (`single`, `funneled`, `serialized`,
    /// `multiple`, any case), else `default`; class ARG for another value.
    pub fn from_env(default: ThreadLevel) -> Result<ThreadLevel> {
        match std::env::var(ENV_THREAD) {
            Ok(v) => ThreadLevel::parse(&v, default),
            Err(_) => Ok(default),
        }
    }

    fn parse(v: &str, default: ThreadLevel) -> Result<ThreadLevel> {
        match v.to_ascii_lowercase().as_str() {
            "" => Ok(default),
            "single" => Ok(ThreadLevel::Single),
            "funneled" => Ok(ThreadLevel::Funneled),
            "serialized" => Ok(ThreadLevel::Serialized),
            "multiple" => Ok(ThreadLevel::Multiple),
            _ => Err(Error::arg(format!(
                "{ENV_THREAD}={v:?}: expected single, funneled, serialized or multiple"
            ))),
        }
    }

    fn from_code(code: c_int) -> ThreadLevel {
        match code {
            3 => ThreadLevel::Multiple,
            2 => ThreadLevel::Serialized,
            1 => ThreadLevel::Funneled,
            _ => ThreadLevel::Single,
        }
    }
}

/// Where this process is in MPI's one-way life: MPI initializes at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lifecycle {
    Fresh,
    Live,
    Finalized,
}

static LIFECYCLE: Mutex<Lifecycle> = Mutex::new(Lifecycle::Fresh);

/// Worlds split from the process's world ([`World::split`]) that are still alive, and
/// whether the process's world was shut down meanwhile: MPI_Finalize waits for the
/// last of them (MPI must stay initialized while one can still call it), which then
/// finalizes. One lock for both, so that a sub-world dropping on another thread
/// cannot slip between the check and the mark.
static SUB_WORLDS: Mutex<(usize, bool)> = Mutex::new((0, false));

fn sub_worlds() -> MutexGuard<'static, (usize, bool)> {
    SUB_WORLDS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn lifecycle() -> MutexGuard<'static, Lifecycle> {
    LIFECYCLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This process's handle on MPI: the ranks of `MPI_COMM_WORLD` (through a duplicate
/// with `MPI_ERRORS_RETURN`), collectives, and the library's identity.
///
/// At most one `World` exists per process, and MPI cannot be initialized again once
/// it is finalized (on drop or by [`World::finalize`]). A `World` is `Sync` but not
/// `Send`: every thread may use it (MPI is initialized with at least
/// `MPI_THREAD_SERIALIZED` unless a lower level was asked for, and calls are
/// serialized here when the library provides no more), while MPI_Finalize runs on the
/// thread that initialized MPI, as the standard asks. In a world initialized below
/// SERIALIZED on request, only that thread may call MPI: calls from other threads fail
/// (class OTHER), so its windows belong on that thread too — a window dropped or freed
/// on another thread cannot take part in the collective free, and its peers' next
/// collective reports the mismatch.
///
/// Dropping a `World` while the thread panics calls `MPI_Abort`, so that a failing
/// rank ends the job instead of leaving the others waiting in a collective.
///
/// Every collective it makes (barrier, all-gather, window creation, fence and free,
/// finalize) is preceded by an agreement: ranks that enter different collectives —
/// one returned early and dropped its window while the others wait in a barrier —
/// all get class PROC_FAILED instead of waiting forever, and the job ends with
/// `MPI_Abort` when the process exits (the `agree` module's docs, [`ABORT_CODE`]).
///
/// [`ABORT_CODE`]: crate::ABORT_CODE
pub struct World {
    api: &'static Api,
    library: Library,
    version: String,
    comm: Handle,
    rank: usize,
    size: usize,
    level: ThreadLevel,
    /// Held around every MPI call when the library provides MPI_THREAD_SERIALIZED only
    /// (in a confined world only once a progress thread runs, see [`World::confine`]).
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
    /// The progress thread, while one runs ([`World::start_progress`]).
    progress: Mutex<Option<Progress>>,
    /// Split from another world ([`World::split`]): dropping it frees its communicator,
    /// and MPI_Finalize is the process world's (or the last sub-world's) to call.
    sub: bool,
    _not_send: PhantomData<MutexGuard<'static, ()>>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("library", &self.library)
            .field("thread_level", &self.level)
            .finish()
    }
}

impl World {
    /// Initializes MPI with `MPI_THREAD_MULTIPLE` (MPI_Init_thread) and joins
    /// `MPI_COMM_WORLD`.
    ///
    /// Errors: class RMA_FLAVOR if this build has no MPI shim (built without the `mpi`
    /// feature) or none for the launcher's library; class ARG if MPI was already
    /// initialized in this process; the library's class if MPI_Init_thread fails.
    pub fn init() -> Result<World> {
        World::init_thread(ThreadLevel::Multiple)
    }

    /// Initializes MPI asking for thread level `required`. The library may provide
    /// less: `MPI_THREAD_SERIALIZED` is enough (this `World` then serializes every MPI
    /// call). Below that, a level that was asked for (`Funneled`, `Single`) makes a
    /// world in which only this thread may call MPI (calls from another thread are
    /// refused with an error, and no progress thread starts); a level lower than the
    /// one asked for fails with class OTHER.
    pub fn init_thread(required: ThreadLevel) -> Result<World> {
        let mut state = lifecycle();
        match *state {
            Lifecycle::Fresh => {}
            Lifecycle::Live => {
                return Err(Error::arg(
                    "MPI is already initialized by a World of this process",
                ))
            }
            Lifecycle::Finalized => {
                return Err(Error::arg(
                    "MPI was finalized in this process and cannot be initialized again",
                ))
            }
        }
        let (api, shim_library) = ffi::api()?;
        refuse_foreign_init(api)?;
        let mut provided: c_int = 0;
        // SAFETY: `provided` is a valid out-pointer; MPI is not initialized (checked
        // above, under the lifecycle lock).
        let rc = unsafe { (api.init_thread)(required as c_int, &mut provided) };
        error::check(api, rc, &Call::new("MPI_Init_thread"))?;
        ON_INIT_THREAD.with(|t| t.set(true));
        *state = Lifecycle::Live;
        drop(state);
        let level = ThreadLevel::from_code(provided);
        let world = World::join(api, shim_library, level)?;
        world.check_level(required)?;
        world.check_basic_types()?;
        Ok(world)
    }

    /// Initializes MPI if this process was started by an MPI launcher (`mpiexec`,
    /// `mpirun`, `srun`: its environment has `OMPI_COMM_WORLD_RANK`, `PMI_RANK`,
    /// `PMI_SIZE` or `PMIX_RANK`); `Ok(None)` otherwise, so that a program can fall
    /// back to another launch mode.
    pub fn from_env() -> Result<Option<World>> {
        World::from_env_thread(ThreadLevel::Multiple)
    }

    /// [`World::from_env`] asking for thread level `required`
    /// ([`World::init_thread`]).
    pub fn from_env_thread(required: ThreadLevel) -> Result<Option<World>> {
        if World::launched() {
            let world = World::init_thread(required)?;
            if progress_requested()? {
                world.start_progress()?;
            }
            Ok(Some(world))
        } else {
            Ok(None)
        }
    }

    /// Whether this process was started by an MPI launcher (see [`World::from_env`]).
    pub fn launched() -> bool {
        ffi::launcher_library().is_some()
    }

    fn join(api: &'static Api, shim_library: Library, level: ThreadLevel) -> Result<World> {
        let mut world = World {
            api,
            library: shim_library,
            version: String::new(),
            comm: 0,
            rank: 0,
            size: 1,
            level,
            // below SERIALIZED only the initializing thread calls MPI (`mpi` checks),
            // so no turn is needed
            gate: (level == ThreadLevel::Serialized).then(|| Arc::new(Gate::default())),
            owner_only: level < ThreadLevel::Serialized,
            collective: Mutex::new(()),
            guards: Guards::default(),
            basic: Box::new([0; BasicType::ALL.len()]),
            finalized: false,
            windows: AtomicU32::new(0),
            broken: OnceLock::new(),
            progress: Mutex::new(None),
            sub: false,
            _not_send: PhantomData,
        };
        let mut comm: Handle = 0;
        // SAFETY: `comm` is a valid out-pointer; MPI is initialized.
        let rc = unsafe { (api.world_dup)(&mut comm) };
        world.check(rc, Call::new("MPI_Comm_dup"))?;
        world.comm = comm;
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        // SAFETY: `comm` is the live duplicate; the out-pointers are valid.
        let rc = unsafe { (api.comm_rank)(comm, &mut rank) };
        world.check(rc, Call::new("MPI_Comm_rank"))?;
        // SAFETY: as above.
        let rc = unsafe { (api.comm_size)(comm, &mut size) };
        world.check(rc, Call::new("MPI_Comm_size"))?;
        (world.rank, world.size) = (rank as usize, size as usize);
        world.version = world.read_version()?;
        world.library = library_of(&world.version, shim_library);
        let osc = world.osc_selection();
        world.guards = Guards::detect(world.library, &world.version, osc.as_deref());
        for basic in BasicType::ALL {
            let mut ty: Handle = 0;
            // SAFETY: `ty` is a valid out-pointer; the shim only maps the code.
            if unsafe { (api.basic)(basic as c_int, &mut ty) } == 0 {
                world.basic[basic as usize] = ty;
            }
        }
        Ok(world)
    }

    fn read_version(&self) -> Result<String> {
        let mut buf = vec![0u8; 8192];
        let mut len: c_int = 0;
        // SAFETY: `buf` has room for the capacity passed; the shim writes at most that
        // many bytes and their count.
        let rc = unsafe {
            (self.api.library_version)(
                buf.as_mut_ptr().cast::<c_char>(),
                buf.len() as c_int,
                &mut len,
            )
        };
        self.check(rc, Call::new("MPI_Get_library_version"))?;
        buf.truncate(len.max(0) as usize);
        let text = String::from_utf8_lossy(&buf);
        Ok(text.trim_end_matches('\0').trim().to_owned())
    }

    /// Open MPI's one-sided component selection (its `osc` MCA variable, read through
    /// MPI_T so that parameter files count too), else `OMPI_MCA_osc`.
    fn osc_selection(&self) -> Option<String> {
        if self.library != Library::OpenMpi {
            return None;
        }
        let mut buf = vec![0u8; 4096];
        let mut len: c_int = 0;
        // SAFETY: `name` is NUL-terminated; `buf` has room for the capacity passed and
        // the shim writes at most that many bytes and their count.
        let rc = self.mpi(|api| unsafe {
            (api.cvar_string)(
                c"osc".as_ptr(),
                buf.as_mut_ptr().cast::<c_char>(),
                buf.len() as c_int,
                &mut len,
            )
        });
        if rc == 0 {
            buf.truncate(len.max(0) as usize);
            Some(String::from_utf8_lossy(&buf).into_owned())
        } else {
            std::env::var("OMPI_MCA_osc").ok()
        }
    }

    fn check_level(&self, required: ThreadLevel) -> Result<()> {
        let asked_low = required < ThreadLevel::Serialized && self.level >= required;
        if self.level >= ThreadLevel::Serialized || asked_low {
            Ok(())
        } else {
            Err(level_error(required, self.level))
        }
    }

    /// Checks that the library's predefined types have the sizes rma's basic types
    /// have (the pair types' padding included), so packed buffers line up.
    fn check_basic_types(&self) -> Result<()> {
        for basic in BasicType::ALL {
            let ty = self.basic_handle(basic)?;
            let (mut lb, mut extent) = (0i64, 0i64);
            // SAFETY: `ty` is a predefined datatype; the out-pointers are valid.
            let rc = unsafe { (self.api.type_extent)(ty, &mut lb, &mut extent) };
            self.check(rc, Call::new("MPI_Type_get_extent"))?;
            if lb != 0 || extent != basic.size() as i64 {
                return Err(Error::Internal {
                    reason: format!(
                        "the MPI datatype for {basic} has lower bound {lb} and extent {extent}, \
                         rma's {basic} has size {}",
                        basic.size()
                    ),
                });
            }
        }
        Ok(())
    }

    /// This process's rank in `MPI_COMM_WORLD`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The thread level the library provided.
    pub fn thread_level(&self) -> ThreadLevel {
        self.level
    }

    /// The MPI library family.
    pub fn library(&self) -> Library {
        self.library
    }

    /// The library's version string (MPI_Get_library_version).
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

    /// The library defects this process avoids (see the `defects` module).
    pub(crate) fn guards(&self) -> &Guards {
        &self.guards
    }

    /// Blocks until every rank has called `barrier`.
    ///
    /// It is the agreement every collective starts with (a non-blocking all-reduce,
    /// and its MPI_Wait): a rank that entered another collective makes it fail with class
    /// PROC_FAILED instead of waiting forever.
    pub fn barrier(&self) -> Result<()> {
        let _one = self.collective();
        self.agree(Entry::Barrier)
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

    /// Every rank contributes `mine` (any length); every rank receives all
    /// contributions, indexed by rank (MPI_Allgather of the lengths, then
    /// MPI_Allgatherv). The total must stay below 2 GiB.
    pub fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let _one = self.collective();
        self.agree(Entry::Allgather)?;
        let lens = self.allgather_lens(mine.len())?;
        let mut displs = Vec::with_capacity(lens.len());
        let mut total: usize = 0;
        for &len in &lens {
            displs.push(c_int::try_from(total).map_err(|_| gather_overflow(total))?);
            total += len as usize;
        }
        c_int::try_from(total).map_err(|_| gather_overflow(total))?;
        // never an empty slice's dangling pointer: 0x1 is Open MPI's MPI_IN_PLACE
        let mut all = vec![0u8; total.max(1)];
        let send = if mine.is_empty() { &[0u8][..] } else { mine };
        // SAFETY: `send` holds at least `lens[rank]` bytes; `all` holds the sum of
        // `lens`, laid out at `displs`; `comm` is live.
        let rc = self.mpi(|api| unsafe {
            (api.allgatherv_bytes)(
                self.comm,
                send.as_ptr().cast::<c_void>(),
                lens[self.rank],
                all.as_mut_ptr().cast::<c_void>(),
                lens.as_ptr(),
                displs.as_ptr(),
            )
        });
        self.check(rc, Call::new("MPI_Allgatherv"))?;
        Ok(displs
            .iter()
            .zip(&lens)
            .map(|(&d, &l)| all[d as usize..(d + l) as usize].to_vec())
            .collect())
    }

    fn allgather_lens(&self, mine: usize) -> Result<Vec<c_int>> {
        let mut lens = vec![0i64; self.size];
        // SAFETY: `lens` has one slot per rank; `comm` is live.
        let rc = self
            .mpi(|api| unsafe { (api.allgather_i64)(self.comm, mine as i64, lens.as_mut_ptr()) });
        self.check(rc, Call::new("MPI_Allgather"))?;
        lens.into_iter()
            .map(|l| c_int::try_from(l).map_err(|_| gather_overflow(l as usize)))
            .collect()
    }

    /// Ends every process of the job with `code` (MPI_Abort). In a world below
    /// SERIALIZED, from a thread other than the initializing one, this process exits
    /// with `code` without calling MPI (which that thread may not), and the launcher
    /// ends the job when it sees the process gone.
    pub fn abort(&self, code: i32) -> ! {
        if self.check_thread().is_err() {
            std::process::exit(code)
        }
        // no MPI call of the progress thread may run beside MPI_Abort
        self.stop_progress();
        // SAFETY: `comm` is live; MPI_Abort does not return on a conforming library.
        unsafe { (self.api.abort)(self.comm, code) };
        std::process::exit(code)
    }

    /// Frees the world communicator and finalizes MPI (MPI_Finalize), reporting
    /// errors that a drop would ignore.
    ///
    /// Errors: class PROC_FAILED if the ranks entered different collectives (a peer
    /// is still in another one, or returned early); MPI is then not finalized, and the
    /// job ends with `MPI_Abort` when the process exits.
    pub fn finalize(mut self) -> Result<()> {
        self.shut_down(false)
    }

    fn shut_down(&mut self, dropped: bool) -> Result<()> {
        if std::mem::replace(&mut self.finalized, true) {
            return Ok(());
        }
        // no thread may call MPI on this world's communicator once it is freed
        self.stop_progress();
        if self.sub {
            return self.leave(dropped);
        }
        if self.comm != 0 {
            // a peer still in another collective, or broken: never finalize under it
            let _one = self.collective();
            self.agree(Entry::Finalize { dropped })?;
        }
        let freed = if self.comm == 0 {
            0
        } else {
            // SAFETY: `comm` is live (not 0: the duplicate was made) and freed once
            // (guarded by `finalized`).
            unsafe { (self.api.comm_free)(self.comm) }
        };
        self.check(freed, Call::new("MPI_Comm_free"))?;
        {
            let mut subs = sub_worlds();
            if subs.0 > 0 {
                // a world split from this one still lives: the last to go finalizes
                subs.1 = true;
                return Ok(());
            }
        }
        self.finalize_now()
    }

    /// MPI_Finalize, unless a world of this process broke: its exit hook then ends the
    /// job with MPI_Abort, which must find MPI initialized.
    fn finalize_now(&self) -> Result<()> {
        if crate::agree::exit_hook_armed() {
            return Err(Error::ProcFailed {
                rank: Rank::NULL,
                reason: "a world of this process broke (its ranks entered different \
                         collectives): MPI is not finalized, and the job ends with MPI_Abort \
                         when this process exits"
                    .into(),
            });
        }
        // SAFETY: MPI is initialized (a World exists) and finalized once (the process
        // world's shut-down, guarded by `finalized`, or the last sub-world's after it);
        // no window of any world is alive (windows borrow their World, and every
        // World but this one is gone or shut down).
        let rc = unsafe { (self.api.finalize)() };
        *lifecycle() = Lifecycle::Finalized;
        self.check(rc, Call::new("MPI_Finalize"))
    }

    /// A sub-world's end: the agreement (so that peers still in one of its collectives
    /// learn that this rank left it), its communicator's free, and MPI_Finalize if the
    /// process world was shut down meanwhile and this was the last sub-world.
    fn leave(&mut self, dropped: bool) -> Result<()> {
        let agreed = {
            let _one = self.collective();
            self.agree(Entry::Leave { dropped })
        };
        // a broken world keeps its communicator (the exit hook may abort with it)
        let freed = match agreed {
            // SAFETY: `comm` is this sub-world's live communicator, freed once
            // (guarded by `finalized`).
            Ok(()) => self.mpi(|api| unsafe { (api.comm_free)(self.comm) }),
            Err(_) => 0,
        };
        let finalize = {
            let mut subs = sub_worlds();
            subs.0 -= 1;
            let last = subs.0 == 0 && std::mem::replace(&mut subs.1, false);
            last && agreed.is_ok()
        };
        if finalize {
            if ON_INIT_THREAD.with(Cell::get) {
                self.finalize_now()?;
            } else {
                eprintln!(
                    "rma-mpi: rank {}: the last split world dropped on a thread other than \
                     the one that initialized MPI, after its world was shut down: \
                     MPI_Finalize is not called (MPI wants it on the initializing thread)",
                    self.rank
                );
            }
        }
        agreed?;
        self.check(freed, Call::new("MPI_Comm_free"))
    }

    /// Collectively splits this world (MPI_Comm_split): the ranks that give the same
    /// `color` form a new world, numbered by `key`, then by their rank here; `None`
    /// (MPI_UNDEFINED) joins none and gets `Ok(None)`. The new world has a
    /// communicator of its own (so its collectives and windows never involve ranks
    /// outside it) and shares this one's thread rules; MPI stays initialized until
    /// the last world of the process is gone.
    ///
    /// Errors: as [`World::barrier`] (ranks in another collective), the library's.
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<World>> {
        self.check_thread()?;
        // every u32 is a color: the ranks agree on dense indices first (MPI's colors
        // stop at c_int::MAX), so no rank refuses alone while the others wait
        let mut rec = [0u8; 5];
        rec[0] = u8::from(color.is_some());
        rec[1..].copy_from_slice(&color.unwrap_or(0).to_ne_bytes());
        let mut colors: Vec<u32> = self
            .allgather(&rec)?
            .iter()
            .filter(|b| b.first() == Some(&1) && b.len() == 5)
            .map(|b| u32::from_ne_bytes(b[1..5].try_into().unwrap_or_default()))
            .collect();
        colors.sort_unstable();
        colors.dedup();
        let color = match color {
            None => -1,
            Some(c) => colors.binary_search(&c).map_or(-1, |i| i as c_int),
        };
        let mut comm: Handle = 0;
        let rc = {
            let _one = self.collective();
            self.agree(Entry::Split)?;
            // SAFETY: `comm` is a valid out-pointer; `self.comm` is live.
            self.mpi(|api| unsafe { (api.comm_split)(self.comm, color, key, &mut comm) })
        };
        self.check(rc, Call::new("MPI_Comm_split"))?;
        if comm == 0 {
            return Ok(None);
        }
        self.adopt(comm).map(Some)
    }

    /// The world of the ranks `members` of this one, in that order, made by them alone
    /// (MPI_Comm_create_group with `tag`): only the members call it, with the same
    /// members and tag. As [`World::split`] otherwise.
    ///
    /// Errors: ARG if this rank is not a member, a member repeats or `tag` is above
    /// `c_int::MAX`; RANK for a member outside this world; the library's (a tag above
    /// the library's MPI_TAG_UB, at least 32767, is its error).
    pub fn create_group(&self, members: &[usize], tag: u32) -> Result<World> {
        self.check_thread()?;
        self.check_broken()?;
        if let Some(&bad) = members.iter().find(|&&r| r >= self.size) {
            return Err(Error::InvalidRank {
                rank: Rank::new(bad as u32),
                size: self.size,
            });
        }
        if !members.contains(&self.rank) {
            return Err(Error::arg(
                "create_group: this rank is not one of the members",
            ));
        }
        if (1..members.len()).any(|i| members[..i].contains(&members[i])) {
            return Err(Error::arg("create_group: a member appears twice"));
        }
        let tag = c_int::try_from(tag)
            .map_err(|_| Error::arg(format!("tag {tag} is above MPI's largest, {}", c_int::MAX)))?;
        let ranks: Vec<c_int> = members.iter().map(|&r| r as c_int).collect();
        let mut comm: Handle = 0;
        // SAFETY: `ranks` holds members.len() ints; `comm` is a valid out-pointer and
        // `self.comm` is live. Only the members take part (no agreement on the world).
        let rc = self.mpi(|api| unsafe {
            (api.comm_create_group)(
                self.comm,
                ranks.len() as c_int,
                ranks.as_ptr(),
                tag,
                &mut comm,
            )
        });
        self.check(rc, Call::new("MPI_Comm_create_group"))?;
        self.adopt(comm)
    }

    /// The world over the new communicator `comm` (split from this one).
    fn adopt(&self, comm: Handle) -> Result<World> {
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        // SAFETY: `comm` is the new live communicator; the out-pointers are valid.
        let rc = self.mpi(|api| unsafe { (api.comm_rank)(comm, &mut rank) });
        // SAFETY: as above.
        let rc2 = self.mpi(|api| unsafe { (api.comm_size)(comm, &mut size) });
        if rc != 0 || rc2 != 0 {
            // SAFETY: `comm` is live and freed once, here.
            let _ = self.mpi(|api| unsafe { (api.comm_free)(comm) });
            self.check(rc, Call::new("MPI_Comm_rank"))?;
            self.check(rc2, Call::new("MPI_Comm_size"))?;
        }
        sub_worlds().0 += 1;
        Ok(World {
            api: self.api,
            library: self.library,
            version: self.version.clone(),
            comm,
            rank: rank as usize,
            size: size as usize,
            level: self.level,
            gate: self.gate.clone(),
            owner_only: self.owner_only,
            collective: Mutex::new(()),
            guards: self.guards,
            basic: self.basic.clone(),
            finalized: false,
            windows: AtomicU32::new(0),
            broken: OnceLock::new(),
            progress: Mutex::new(None),
            sub: true,
            _not_send: PhantomData,
        })
    }

    /// The world communicator's handle.
    pub(crate) fn comm(&self) -> Handle {
        self.comm
    }

    /// `Err` (class OTHER) when this thread may not call MPI: in a world below
    /// MPI_THREAD_SERIALIZED (asked for) only the initializing thread may.
    #[inline]
    pub(crate) fn check_thread(&self) -> Result<()> {
        if self.owner_only && !ON_INIT_THREAD.with(Cell::get) {
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
    /// [`WRONG_THREAD`], which [`World::check`] reports as that error, so every caller
    /// handles it where it handles a failed MPI call.
    #[inline]
    pub(crate) fn mpi<T: Refused>(&self, f: impl FnOnce(&Api) -> T) -> T {
        if self.owner_only && !ON_INIT_THREAD.with(Cell::get) {
            return T::refused(self.level);
        }
        let _turn = self.gate.as_ref().and_then(|g| g.turn());
        f(self.api)
    }

    /// Confines this world to the thread that initialized MPI: from now on every MPI
    /// call from another thread is refused (class OTHER, as in a world below
    /// MPI_THREAD_SERIALIZED), so calls need no lock between them: the world's gate
    /// is taken only while its own progress thread runs (which may still start). For
    /// a program whose MPI calls all come from that thread by construction, as
    /// rma-win's (its World and Window are neither Send nor Sync): the per-call lock
    /// is two atomic read-modify-writes, as long as a small RMA call itself.
    ///
    /// Errors (nothing changed): class OTHER from any other thread; class ARG on a
    /// sub-world, or once sub-worlds or windows exist (they were made expecting the
    /// lock).
    pub fn confine(&mut self) -> Result<()> {
        self.check_broken()?;
        if !ON_INIT_THREAD.with(Cell::get) {
            return Err(wrong_thread(self.level));
        }
        if self.sub || sub_worlds().0 > 0 || self.windows.load(Ordering::Relaxed) > 0 {
            return Err(Error::arg(
                "confine a world right after it is initialized, before it has windows or \
                 sub-worlds",
            ));
        }
        self.owner_only = true;
        if let Some(g) = &self.gate {
            // a progress thread started at initialization keeps the gate on
            g.on.store(self.progress_thread(), Ordering::Relaxed);
        }
        Ok(())
    }

    /// State that MPI calls of this world update in the same turn as the call (see
    /// [`World::mpi_turned`]).
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

    /// [`World::mpi`] with exclusive access to `cell`'s state in the same turn: the
    /// MPI calls `f` makes and the bookkeeping it does about them are one step for
    /// every other thread. Where the world serializes MPI calls, its turn is the
    /// lock (no second one is taken); below SERIALIZED the initializing thread is the
    /// only one let in; at MPI_THREAD_MULTIPLE the cell's own lock serializes the
    /// calls that update it. `f` must not call [`World::mpi`] (the turn is held).
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

    /// The turn of [`World::mpi_turned`]: the lock it holds, if any; `Err` when this
    /// thread may not call MPI. The owner's turn with no progress thread (every call
    /// of rma-win's confined worlds) is decided in line; the turns that lock, out of
    /// line.
    #[inline(always)]
    fn take_turn<'c, S>(&self, cell: &'c Turned<S>) -> Result<Option<MutexGuard<'c, ()>>, ()> {
        if Self::turn_is_free(cell) {
            return Ok(None);
        }
        if matches!(cell.lock, TurnLock::Owner(_)) && !ON_INIT_THREAD.with(Cell::get) {
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
            TurnLock::Owner(gate) => {
                ON_INIT_THREAD.with(Cell::get)
                    && gate.as_ref().is_none_or(|g| !g.on.load(Ordering::Relaxed))
            }
            _ => false,
        }
    }

    /// [`World::take_turn`]'s locks: the world's gate, the cell's own lock, or the
    /// gate an owner shares with its progress thread.
    #[cold]
    #[inline(never)]
    fn lock_turn(lock: &TurnLock) -> Option<MutexGuard<'_, ()>> {
        match lock {
            TurnLock::Gate(g) => Some(g.lock.lock().unwrap_or_else(PoisonError::into_inner)),
            TurnLock::Own(m) => Some(m.lock().unwrap_or_else(PoisonError::into_inner)),
            // the MPI calls take turns with a progress thread's
            TurnLock::Owner(gate) => gate.as_ref().and_then(|g| g.turn()),
        }
    }

    /// Starts a progress thread: it lets the library's progress engine run
    /// (MPI_Iprobe) while this rank computes without calling MPI, so that other ranks'
    /// calls to this rank's windows complete on libraries whose target side needs the
    /// target inside MPI (MPICH's ch4:ucx applies the accumulate family there; without
    /// progress, an origin's fetch_and_op waits until the target's next MPI call).
    /// `RMA_MPI_PROGRESS=thread` ([`ENV_PROGRESS`]) starts it in [`World::from_env`].
    ///
    /// The thread takes the same turn as every other MPI call of the process when the
    /// library provides MPI_THREAD_SERIALIZED only, and otherwise calls MPI
    /// concurrently (MPI_THREAD_MULTIPLE). It polls back to back, yielding between
    /// polls, while the node has a free core for it (rma-core's `wait` policy counts
    /// each rank twice while such a thread runs), and every 50 µs otherwise. It stops
    /// before MPI is finalized or the job aborted. Starting it twice is a no-op;
    /// starting it on a broken world fails with that world's error.
    /// [`ENV_PROGRESS`] is read by [`World::from_env`] only, not by [`World::init`].
    pub fn start_progress(&self) -> Result<()> {
        self.check_broken()?;
        if self.level < ThreadLevel::Serialized {
            // a second thread calling MPI is what this level rules out
            return Err(wrong_thread(self.level));
        }
        if self.owner_only && !ON_INIT_THREAD.with(Cell::get) {
            return Err(wrong_thread(self.level));
        }
        let mut slot = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return Ok(());
        }
        if let Some(g) = &self.gate {
            // before the thread exists: every later call of this (the only other)
            // thread takes turns with it
            g.on.store(true, Ordering::Relaxed);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let (api, comm, gate) = (self.api, self.comm, self.gate.clone());
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name(format!("rma-mpi-progress-{}", self.rank))
            .spawn(move || progress_loop(api, comm, gate, &flag))
            .map_err(|e| Error::Os {
                context: "starting the MPI progress thread".into(),
                source: e,
            })?;
        *slot = Some(Progress { stop, handle });
        Ok(())
    }

    /// Whether a progress thread runs ([`World::start_progress`]).
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
            p.stop.store(true, Ordering::Release);
            let _ = p.handle.join();
        }
    }

    /// The shim.
    pub(crate) fn api(&self) -> &'static Api {
        self.api
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

    /// The start of every window creation: takes the collective turn, numbers the
    /// window (under the turn, so that threads creating windows get numbers in the
    /// order they agree; the same on every rank), agrees on its creation and runs
    /// `create`, the MPI call. The window's number and the call's return code.
    ///
    /// `rdma`: osc/rdma may serve the window (every window rma makes: a shared one's
    /// data is osc/sm's, but its control window is allocated). Where osc/rdma may be
    /// in use, such a window on a world split from the process's world is refused on
    /// every rank of it alike, before anything is made (defects.rs: osc/rdma mixes up,
    /// or fails to create, windows of different communicators on one node).
    pub(crate) fn create_window(
        &self,
        rdma: bool,
        create: impl FnOnce(&Api) -> c_int,
    ) -> Result<(u32, c_int)> {
        // a call this thread may not make must not use up a window number (the ranks
        // would disagree on every later window's)
        self.check_thread()?;
        if rdma && self.sub && self.guards.rdma_comms_blocked() {
            return Err(Error::Flavor {
                reason: format!(
                    "Open MPI 4's osc/rdma mixes up windows of different communicators on one \
                     node (accumulates to one land in another, or the window cannot be made; \
                     reproduced in C, rma-mpi's README), so windows on a world split from \
                     the world are refused where it may serve them: run with `--mca osc ucx` \
                     (or `--mca osc sm` for one node, allocated and shared windows), make the \
                     window on the whole world, or set {}=1 if this library is fixed",
                    crate::defects::ENV_NO_GUARDS
                ),
            });
        }
        let _one = self.collective();
        let number = self.windows.fetch_add(1, Ordering::Relaxed);
        self.agree(Entry::Create(number))?;
        Ok((number, self.mpi(create)))
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

    /// Whether the ranks entered different collectives (see [`World::barrier`]).
    pub fn is_broken(&self) -> bool {
        self.broken.get().is_some()
    }

    /// Held around a collective on the world communicator.
    pub(crate) fn collective(&self) -> MutexGuard<'_, ()> {
        self.collective
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `Ok` for MPI_SUCCESS, else the error of the code's class.
    #[inline]
    pub(crate) fn check(&self, code: c_int, mut call: Call) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        call.size = self.size;
        // MPI_Error_class / _string are MPI calls too: in turn with the others
        if code == WRONG_THREAD {
            return Err(wrong_thread(self.level));
        }
        Err(self.mpi(|api| error::from_code(api, code, &call)))
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

    /// [`World::basic_handle`] of a type the shim did not name at start.
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
}

impl Drop for World {
    fn drop(&mut self) {
        if self.finalized {
            return;
        }
        if std::thread::panicking() {
            eprintln!("rma-mpi: rank {} panicked; aborting the MPI job", self.rank);
            self.abort(101);
        }
        let _ = self.shut_down(true);
    }
}

/// Environment variable: `thread` starts a progress thread in every rank that joins
/// its world through [`World::from_env`] ([`World::start_progress`]); unset, empty or
/// `none`: no thread.
pub const ENV_PROGRESS: &str = "RMA_MPI_PROGRESS";

/// Environment variable: the MPI thread level rma-win's worlds ask for under an MPI
/// launcher (`single`, `funneled`, `serialized` (the default) or `multiple`;
/// [`ThreadLevel::from_env`]). Below `serialized` only the thread that initialized MPI
/// may call it — rma-win's worlds and windows are neither `Send` nor `Sync`, so they
/// keep to that thread — and the progress thread cannot run. Open MPI 4 takes its
/// internal locks at every level above `single`, so `single` is its fastest.
pub const ENV_THREAD: &str = "RMA_MPI_THREAD";

/// Whether [`ENV_PROGRESS`] asks for a progress thread; class ARG for a value it does
/// not know.
fn progress_requested() -> Result<bool> {
    match std::env::var(ENV_PROGRESS).as_deref().map(str::trim) {
        Err(_) | Ok("" | "none") => Ok(false),
        Ok("thread") => Ok(true),
        Ok(other) => Err(Error::InvalidInfo {
            key: ENV_PROGRESS.into(),
            value: other.into(),
            reason: "expected `thread` (a progress thread per rank) or `none`".into(),
        }),
    }
}

/// A running progress thread.
struct Progress {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

/// The progress thread's body: MPI_Iprobe on the world communicator (rma sends no
/// point-to-point messages, so it matches nothing) until `stop`.
fn progress_loop(api: &'static Api, comm: Handle, gate: Option<Arc<Gate>>, stop: &AtomicBool) {
    let _counted = rma_core::wait::ProgressThread::start();
    while !stop.load(Ordering::Acquire) {
        {
            let _turn = gate
                .as_ref()
                .map(|g| g.lock.lock().unwrap_or_else(PoisonError::into_inner));
            // SAFETY: `comm` is the world's communicator, freed only after this thread
            // was stopped and joined (`World::shut_down`); the call is serialized with
            // every other MPI call of the process when the library asks for that.
            let _ = unsafe { (api.progress)(comm) };
        }
        if rma_core::wait::oversubscribed() {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            std::thread::yield_now();
        }
    }
}

/// Refuses to initialize MPI that someone else initialized or finalized.
fn refuse_foreign_init(api: &Api) -> Result<()> {
    let (mut init, mut fini): (c_int, c_int) = (0, 0);
    // SAFETY: both may be called at any time; the out-pointers are valid.
    let rc = unsafe { (api.initialized)(&mut init) } | unsafe { (api.finalized)(&mut fini) };
    if rc != 0 || init != 0 || fini != 0 {
        return Err(Error::arg(
            "MPI was initialized outside rma-mpi in this process; rma-mpi must initialize it",
        ));
    }
    Ok(())
}

/// The return code of an MPI call refused because it came from a thread that may not
/// call MPI (a world below MPI_THREAD_SERIALIZED): negative, which no MPI error code is.
pub(crate) const WRONG_THREAD: c_int = -1_000_001;

/// What [`World::mpi`] returns in place of a call it refused: the call's result type,
/// carrying [`WRONG_THREAD`].
/// The lock that serializes a world's MPI calls at MPI_THREAD_SERIALIZED.
struct Gate {
    lock: Mutex<()>,
    /// Whether the world's own calls take it: always, unless the world is confined
    /// and no progress thread runs (set only by the initializing thread, before a
    /// progress thread exists; read by that thread).
    on: AtomicBool,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            lock: Mutex::new(()),
            on: AtomicBool::new(true),
        }
    }
}

impl Gate {
    /// The turn, where the world's calls take it.
    #[inline]
    fn turn(&self) -> Option<MutexGuard<'_, ()>> {
        self.on
            .load(Ordering::Relaxed)
            .then(|| self.lock.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// What serializes the updates of a [`Turned`] state.
enum TurnLock {
    /// The world's gate (MPI_THREAD_SERIALIZED): the same lock as every MPI call.
    Gate(Arc<Gate>),
    /// Below SERIALIZED, or in a confined world: only the initializing thread may
    /// make MPI calls; they take turns with a progress thread through the world's gate
    /// where it has one (held here, so a world without one tests nothing more).
    Owner(Option<Arc<Gate>>),
    /// MPI_THREAD_MULTIPLE: a lock of the state's own.
    Own(Mutex<()>),
}

/// State updated in the same turn as the MPI calls it is about
/// ([`World::turned`], [`World::mpi_turned`]).
pub(crate) struct Turned<S> {
    lock: TurnLock,
    state: UnsafeCell<S>,
}

// SAFETY: shared access to the state happens only inside `World::mpi_turned`, which
// makes it exclusive (see there); the state itself moves between threads, so `S: Send`.
unsafe impl<S: Send> Sync for Turned<S> {}

impl<S> Turned<S> {
    /// The state, through an exclusive borrow.
    pub(crate) fn get_mut(&mut self) -> &mut S {
        self.state.get_mut()
    }
}

pub(crate) trait Refused {
    /// The refused call's result.
    fn refused(level: ThreadLevel) -> Self;
}

impl Refused for c_int {
    fn refused(_: ThreadLevel) -> c_int {
        WRONG_THREAD
    }
}

impl Refused for (c_int, c_int) {
    fn refused(_: ThreadLevel) -> (c_int, c_int) {
        (WRONG_THREAD, 0)
    }
}

impl Refused for Error {
    fn refused(level: ThreadLevel) -> Error {
        wrong_thread(level)
    }
}

thread_local! {
    /// Whether this thread initialized MPI (a world below SERIALIZED checks it).
    static ON_INIT_THREAD: Cell<bool> = const { Cell::new(false) };
}

fn wrong_thread(level: ThreadLevel) -> Error {
    Error::Os {
        context: "an MPI call".into(),
        source: std::io::Error::other(format!(
            "{}, so only the thread that initialized MPI may call it; this call came \
             from another thread (initialize at Serialized or Multiple, unconfined, to \
             call from any thread)",
            if level < ThreadLevel::Serialized {
                format!("MPI was initialized at {level:?} on request")
            } else {
                "the world was confined to its thread (World::confine)".to_string()
            }
        )),
    }
}

fn level_error(required: ThreadLevel, provided: ThreadLevel) -> Error {
    Error::Os {
        context: "MPI_Init_thread".into(),
        source: std::io::Error::other(format!(
            "asked for {required:?}, the library provides {provided:?}; rma-mpi needs at least Serialized"
        )),
    }
}

fn gather_overflow(total: usize) -> Error {
    Error::CountOverflow {
        count: total,
        what: "bytes gathered (MPI counts are 32-bit)",
    }
}

/// The library family its version string names, else the shim's.
fn library_of(version: &str, shim: Library) -> Library {
    if version.contains("Open MPI") {
        Library::OpenMpi
    } else if version.contains("MPICH") {
        Library::Mpich
    } else {
        shim
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_from_version_string() {
        let v = "Open MPI v4.1.4, package: Debian OpenMPI";
        assert_eq!(library_of(v, Library::Other), Library::OpenMpi);
        assert_eq!(
            library_of("MPICH Version: 4.0.2", Library::Other),
            Library::Mpich
        );
        assert_eq!(library_of("Intel(R) MPI", Library::Mpich), Library::Mpich);
    }

    #[test]
    fn thread_level_names() {
        let d = ThreadLevel::Serialized;
        assert_eq!(
            ThreadLevel::parse("single", d).unwrap(),
            ThreadLevel::Single
        );
        assert_eq!(
            ThreadLevel::parse("FUNNELED", d).unwrap(),
            ThreadLevel::Funneled
        );
        assert_eq!(
            ThreadLevel::parse("multiple", d).unwrap(),
            ThreadLevel::Multiple
        );
        assert_eq!(ThreadLevel::parse("", d).unwrap(), d);
        let e = ThreadLevel::parse("threaded", d).unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::Arg);
        assert!(e.to_string().contains(ENV_THREAD), "{e}");
    }

    #[test]
    fn a_refused_call_reads_as_the_wrong_thread() {
        assert_eq!(
            <c_int as Refused>::refused(ThreadLevel::Single),
            WRONG_THREAD
        );
        let e = <Error as Refused>::refused(ThreadLevel::Funneled);
        assert!(e.to_string().contains("only the thread that"), "{e}");
    }
}

#[cfg(all(test, not(feature = "mpi")))]
mod stub_tests {
    use super::*;

    /// Without the `mpi` feature there is no shim: init is a typed error, not a link
    /// failure or a panic.
    #[test]
    fn init_without_the_feature_is_a_flavor_error() {
        if std::env::var_os(ffi::ENV_SHIM).is_some() {
            return;
        }
        let e = World::init().unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::RmaFlavor);
        assert!(e.to_string().contains("`mpi` feature"), "{e}");
    }
}
