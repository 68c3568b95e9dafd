//! A world's life, and MPI's in this process: initialization (MPI initializes at most
//! once), the start and end of sub-worlds, confinement to one thread, abort, and
//! finalization (MPI_Finalize on the initializing thread, after the last world of the
//! process is gone).

use super::progress::progress_requested;
use super::thread::{level_error, mark_init_thread, on_init_thread, wrong_thread, Gate};
use super::{MpiWorld, ThreadLevel};
use crate::agree::{exit_hook_armed, Entry};
use rma_core::{BasicType, Error, Rank, Result};
use rma_mpi_sys::{Api, Call, Guards, Handle, Library};
use std::ffi::{c_char, c_int};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

/// Where this process is in MPI's one-way life: MPI initializes at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lifecycle {
    Fresh,
    /// rma-mpi initialized MPI (a process world exists or existed).
    Live,
    /// The program initialized MPI and rma-mpi adopted communicators of it
    /// ([`MpiWorld::from_raw_comm`]): rma-mpi never finalizes it.
    Program,
    Finalized,
}

static LIFECYCLE: Mutex<Lifecycle> = Mutex::new(Lifecycle::Fresh);

/// Worlds split from the process's world ([`MpiWorld::split`]) that are still alive, and
/// whether the process's world was shut down meanwhile: MPI_Finalize waits for the
/// last of them (MPI must stay initialized while one can still call it), which then
/// finalizes. One lock for both, so that a sub-world dropping on another thread
/// cannot slip between the check and the mark.
static SUB_WORLDS: Mutex<(usize, bool)> = Mutex::new((0, false));

pub(super) fn sub_worlds() -> MutexGuard<'static, (usize, bool)> {
    SUB_WORLDS.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn lifecycle() -> MutexGuard<'static, Lifecycle> {
    LIFECYCLE.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MpiWorld {
    /// Initializes MPI with `MPI_THREAD_MULTIPLE` (MPI_Init_thread) and joins
    /// `MPI_COMM_WORLD`.
    ///
    /// Errors: class RMA_FLAVOR if this build has no MPI shim (built without the `mpi`
    /// feature) or none for the launcher's library; class ARG if MPI was already
    /// initialized in this process; the library's class if MPI_Init_thread fails.
    #[doc(alias("MPI_Init", "MPI_Init_thread"))]
    pub fn init() -> Result<MpiWorld> {
        MpiWorld::init_thread(ThreadLevel::Multiple)
    }

    /// Initializes MPI asking for thread level `required`. The library may provide
    /// less: `MPI_THREAD_SERIALIZED` is enough (this `MpiWorld` then serializes every MPI
    /// call). Below that, a level that was asked for (`Funneled`, `Single`) makes a
    /// world in which only this thread may call MPI (calls from another thread are
    /// refused with an error, and no progress thread starts); a level lower than the
    /// one asked for fails with class OTHER.
    #[doc(alias = "MPI_Init_thread")]
    pub fn init_thread(required: ThreadLevel) -> Result<MpiWorld> {
        let mut state = lifecycle();
        match *state {
            Lifecycle::Fresh => {}
            Lifecycle::Live => {
                return Err(Error::arg(
                    "MPI is already initialized by a MpiWorld of this process",
                ))
            }
            Lifecycle::Program => {
                return Err(Error::arg(
                    "MPI was initialized by the program, and rma-mpi adopted its \
                     communicators (MpiWorld::from_raw_comm); make worlds that way",
                ))
            }
            Lifecycle::Finalized => {
                return Err(Error::arg(
                    "MPI was finalized in this process and cannot be initialized again",
                ))
            }
        }
        let (api, shim_library) = rma_mpi_sys::api()?;
        refuse_foreign_init(api)?;
        let mut provided: c_int = 0;
        // SAFETY: `provided` is a valid out-pointer; MPI is not initialized (checked
        // above, under the lifecycle lock).
        let rc = unsafe { (api.init_thread)(required as c_int, &mut provided) };
        Call::new("MPI_Init_thread").check(api, rc)?;
        mark_init_thread();
        *state = Lifecycle::Live;
        drop(state);
        let level = ThreadLevel::from_code(provided);
        // SAFETY: `comm` is a valid out-pointer; MPI is initialized.
        let dup = |api: &Api, comm: &mut Handle| unsafe { (api.world_dup)(comm) };
        let world = MpiWorld::join(api, shim_library, level, false, dup)?;
        world.check_level(required)?;
        world.check_basic_types()?;
        Ok(world)
    }

    /// Initializes MPI if this process was started by an MPI launcher (`mpiexec`,
    /// `mpirun`, `srun`: its environment has `OMPI_COMM_WORLD_RANK`, `PMI_RANK`,
    /// `PMI_SIZE` or `PMIX_RANK`); `Ok(None)` otherwise, so that a program can fall
    /// back to another launch mode.
    pub fn from_env() -> Result<Option<MpiWorld>> {
        MpiWorld::from_env_thread(ThreadLevel::Multiple)
    }

    /// [`MpiWorld::from_env`] asking for thread level `required`
    /// ([`MpiWorld::init_thread`]).
    pub fn from_env_thread(required: ThreadLevel) -> Result<Option<MpiWorld>> {
        if MpiWorld::launched() {
            let world = MpiWorld::init_thread(required)?;
            if progress_requested()? {
                world.start_progress()?;
            }
            Ok(Some(world))
        } else {
            Ok(None)
        }
    }

    /// Whether this process was started by an MPI launcher (see [`MpiWorld::from_env`]).
    pub fn launched() -> bool {
        rma_mpi_sys::launcher_library().is_some()
    }

    /// The world over the communicator `make` returns (a duplicate: of
    /// MPI_COMM_WORLD, or, with `program`, of a program's communicator), at thread
    /// level `level`. A program's world below MPI_THREAD_MULTIPLE keeps to MPI's main
    /// thread (the program's own calls are not in rma's turns, so rma may not take
    /// turns between threads of its own); if making it fails, it is dropped without
    /// a word to MPI but the free of its duplicate: MPI is the program's to finalize.
    pub(super) fn join(
        api: &'static Api,
        shim_library: Library,
        level: ThreadLevel,
        program: bool,
        make: impl FnOnce(&Api, &mut Handle) -> c_int,
    ) -> Result<MpiWorld> {
        let mut world = MpiWorld {
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
            owner_only: level < ThreadLevel::Serialized
                || (program && level < ThreadLevel::Multiple),
            collective: Mutex::new(()),
            guards: Guards::default(),
            basic: Box::new([0; BasicType::ALL.len()]),
            finalized: false,
            windows: AtomicU32::new(0),
            broken: OnceLock::new(),
            progress: Mutex::new(None),
            sub: false,
            adopted: false,
            program,
            has_subs: AtomicBool::new(false),
            _not_send: PhantomData,
        };
        match world.fill(make, shim_library) {
            Ok(()) => Ok(world),
            Err(e) if program => {
                world.finalized = true;
                if world.comm != 0 {
                    // SAFETY: the duplicate is live and freed once, here (the world
                    // is marked finalized, so its drop does nothing more).
                    let _ = unsafe { (api.comm_free)(world.comm) };
                }
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// [`MpiWorld::join`]'s MPI calls: the communicator, ranks, version, defects and
    /// predefined types.
    fn fill(
        &mut self,
        make: impl FnOnce(&Api, &mut Handle) -> c_int,
        shim_library: Library,
    ) -> Result<()> {
        let api = self.api;
        let world = self;
        let mut comm: Handle = 0;
        let rc = make(api, &mut comm);
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
        Ok(())
    }

    /// The world over the new communicator `comm` (split from this one): a sub-world,
    /// which keeps MPI initialized until it is gone ([`MpiWorld::leave`]).
    pub(super) fn adopt(&self, comm: Handle) -> Result<MpiWorld> {
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
        self.has_subs.store(true, Ordering::Relaxed);
        if self.program {
            super::adopt::program_worlds(1);
        }
        Ok(MpiWorld {
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
            adopted: false,
            program: self.program,
            has_subs: AtomicBool::new(false),
            _not_send: PhantomData,
        })
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
    pub(super) fn check_basic_types(&self) -> Result<()> {
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

    /// Confines this world to the thread that initialized MPI: from now on every MPI
    /// call from another thread is refused (class OTHER, as in a world below
    /// MPI_THREAD_SERIALIZED), so calls need no lock between them: the world's gate
    /// is taken only while its own progress thread runs (which may still start). For
    /// a program whose MPI calls all come from that thread by construction, as
    /// rma-win's (its MpiWorld and Window are neither Send nor Sync): the per-call lock
    /// is two atomic read-modify-writes, as long as a small RMA call itself.
    ///
    /// Errors (nothing changed): class OTHER from any other thread; class ARG on a
    /// sub-world, or once sub-worlds or windows exist (they were made expecting the
    /// lock).
    pub fn confine(&mut self) -> Result<()> {
        self.check_broken()?;
        if !on_init_thread() {
            return Err(wrong_thread(self.level));
        }
        // a world over a program's communicator has a gate of its own: only its own
        // sub-worlds share it
        let shared_gate = if self.adopted {
            self.has_subs.load(Ordering::Relaxed)
        } else {
            self.sub || sub_worlds().0 > 0
        };
        if shared_gate || self.windows.load(Ordering::Relaxed) > 0 {
            return Err(Error::arg(
                "confine a world right after it is initialized, before it has windows or \
                 sub-worlds",
            ));
        }
        self.owner_only = true;
        if let Some(g) = &self.gate {
            // a progress thread started at initialization keeps the gate on
            g.set_on(self.progress_thread());
        }
        Ok(())
    }

    /// Ends every process of the job with `code` (MPI_Abort). In a world below
    /// SERIALIZED, from a thread other than the initializing one, this process exits
    /// with `code` without calling MPI (which that thread may not), and the launcher
    /// ends the job when it sees the process gone.
    #[doc(alias = "MPI_Abort")]
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
    #[doc(alias = "MPI_Finalize")]
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
        if exit_hook_armed() {
            return Err(Error::ProcFailed {
                rank: Rank::NULL,
                reason: "a world of this process broke (its ranks entered different \
                         collectives): MPI is not finalized, and the job ends with MPI_Abort \
                         when this process exits"
                    .into(),
            });
        }
        // SAFETY: MPI is initialized (a MpiWorld exists) and finalized once (the process
        // world's shut-down, guarded by `finalized`, or the last sub-world's after it);
        // no window of any world is alive (windows borrow their MpiWorld, and every
        // MpiWorld but this one is gone or shut down).
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
        if self.program {
            // after its last MPI call: a finalize from now on frees nothing it uses
            super::adopt::program_worlds(-1);
        }
        let finalize = {
            let mut subs = sub_worlds();
            subs.0 -= 1;
            let last = subs.0 == 0 && std::mem::replace(&mut subs.1, false);
            last && agreed.is_ok()
        };
        if finalize {
            if on_init_thread() {
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
}

impl Drop for MpiWorld {
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

/// Whether MPI is (initialized, finalized) in this process (MPI_Initialized,
/// MPI_Finalized: callable at any time).
pub(super) fn mpi_state(api: &Api) -> Result<(bool, bool)> {
    let (mut init, mut fini): (c_int, c_int) = (0, 0);
    // SAFETY: both may be called at any time; the out-pointers are valid.
    let rc = unsafe { (api.initialized)(&mut init) } | unsafe { (api.finalized)(&mut fini) };
    Call::new("MPI_Initialized").check(api, rc)?;
    Ok((init != 0, fini != 0))
}

/// Refuses to initialize MPI that someone else initialized or finalized.
fn refuse_foreign_init(api: &Api) -> Result<()> {
    match mpi_state(api) {
        Ok((false, false)) => Ok(()),
        _ => Err(Error::arg(
            "MPI was initialized outside rma-mpi in this process; adopt the program's \
             communicators with MpiWorld::from_raw_comm instead of initializing it again",
        )),
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
}

#[cfg(all(test, not(feature = "mpi")))]
mod stub_tests {
    use super::*;

    /// Without the `mpi` feature there is no shim: init is a typed error, not a link
    /// failure or a panic.
    #[test]
    fn init_without_the_feature_is_a_flavor_error() {
        if !rma_mpi_sys::built_shims().is_empty()
            || std::env::var_os(rma_mpi_sys::ENV_SHIM).is_some()
        {
            return;
        }
        let e = MpiWorld::init().unwrap_err();
        assert_eq!(e.class(), rma_core::ErrorClass::RmaFlavor);
        assert!(e.to_string().contains("`mpi` feature"), "{e}");
    }
}
