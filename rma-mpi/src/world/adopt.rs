//! Worlds over MPI that the program initialized: [`MpiWorld::from_raw_comm`] adopts a
//! communicator of the program (a duplicate of it, so rma's collectives never match
//! the program's), and [`MpiWorld::split_shared`] finds the ranks that share memory.
//!
//! Such a world is a sub-world of the program's MPI: it frees its communicator when
//! it goes and never finalizes MPI. The program's MPI_Finalize while one still lives
//! would free what its windows use under them, so rma-mpi watches for it (an
//! attribute on MPI_COMM_SELF, whose delete callback MPI_Finalize runs first) and ends
//! the job there, with a message, rather than let a window outlive its memory.

use super::life::{lifecycle, mpi_state, sub_worlds, Lifecycle};
use super::thread::{mark_init_thread, wrong_thread};
use super::{MpiWorld, ThreadLevel};
use crate::agree::{exit_hook_armed, Entry};
use rma_core::{Error, Result};
use rma_mpi_sys::{Api, Call, Handle};
use std::ffi::c_int;
use std::sync::atomic::{AtomicIsize, Ordering};

/// The exit code the job ends with (MPI_Abort) when the program finalizes MPI under a
/// live world over its communicators ([`MpiWorld::from_raw_comm`]).
pub const FINALIZE_ABORT_CODE: i32 = 71;

/// Worlds over the program's MPI alive now (adopted ones and those split from them).
static PROGRAM_WORLDS: AtomicIsize = AtomicIsize::new(0);

/// Counts worlds over the program's MPI in (`+1`) and out (`-1`).
pub(super) fn program_worlds(delta: isize) {
    PROGRAM_WORLDS.fetch_add(delta, Ordering::AcqRel);
}

/// MPI_Finalize began (the shim's hook, from the MPI_COMM_SELF attribute's delete
/// callback, while MPI still works). With an rma world still alive its windows'
/// memory would be freed under them, and after a broken world the peers may wait in
/// another collective: the hook returns an exit code, and the shim ends the job
/// with MPI_Abort (then abort(3) if that returns). 0: MPI_Finalize goes on.
extern "C" fn program_finalizes() -> c_int {
    let live = PROGRAM_WORLDS.load(Ordering::Acquire);
    if live > 0 {
        eprintln!(
            "rma-mpi: the program called MPI_Finalize while {live} rma world(s) over its \
             communicators were alive (or leaked); a world and its windows must be dropped \
             before MPI is finalized. Ending the job (MPI_Abort, code \
             {FINALIZE_ABORT_CODE})."
        );
        return FINALIZE_ABORT_CODE;
    }
    if exit_hook_armed() {
        eprintln!(
            "rma-mpi: the program called MPI_Finalize after an rma world over its \
             communicators broke (its ranks entered different collectives); ending the job"
        );
        return crate::ABORT_CODE;
    }
    *lifecycle() = Lifecycle::Finalized;
    0
}

impl MpiWorld {
    /// A world over `comm`, a communicator of a program that initialized MPI itself
    /// (in C, or through another crate such as rsmpi). Collective over `comm`: every
    /// rank of it calls this, with its own handle of it.
    ///
    /// `comm` is the library's `MPI_Comm` as an integer: MPICH's `int` handle, or Open
    /// MPI's pointer, converted with `as isize`. The world works on a duplicate
    /// (MPI_Comm_dup, with MPI_ERRORS_RETURN on the duplicate only), so the program
    /// keeps using `comm` as before, and rma's collectives never match its messages.
    /// The world never finalizes MPI; dropping it frees the duplicate.
    ///
    /// What rma-mpi needs of the program:
    /// - **thread level**: the level MPI was initialized with is the world's
    ///   (MPI_Query_thread). Below MPI_THREAD_MULTIPLE only MPI's main thread may make
    ///   the world, and only it may use it (calls from other threads are refused,
    ///   class OTHER): rma cannot take turns with the program's own calls. At
    ///   MULTIPLE any thread may. A progress thread ([`MpiWorld::start_progress`])
    ///   needs MULTIPLE.
    /// - **every rank of `comm` can make it**: a rank refused before the duplicate
    ///   (wrong thread, no shim for its library) leaves the others waiting in
    ///   MPI_Comm_dup, as with any MPI collective one rank skips.
    /// - **a panic is the job's end**: as for every rma-mpi world, dropping it while
    ///   the thread panics calls MPI_Abort (the program's job ends, even under
    ///   `catch_unwind`), so that peers do not wait in a collective forever.
    /// - **no concurrent use of `comm`** while this call duplicates it (MPI's own rule
    ///   for collectives on one communicator).
    /// - **finalize last**: the world and its windows are dropped before the program
    ///   calls MPI_Finalize. A program that finalizes first ends the job at that
    ///   call (MPI_Abort with [`FINALIZE_ABORT_CODE`]), with a message (rma-mpi watches
    ///   for it), rather than free
    ///   windows' memory under them; so does one that leaked a world (`mem::forget`,
    ///   an `Rc` cycle), which rma cannot tell from one still in use.
    ///
    /// Errors (nothing made): class RMA_FLAVOR if this build has no shim for the
    /// program's MPI library, or this process already runs the other library's; class
    /// ARG if MPI is not initialized or already finalized, was initialized by rma-mpi
    /// itself ([`MpiWorld::init`]: split that world instead), `comm` is not a
    /// communicator handle of the library rma-mpi loaded (checked without an MPI call:
    /// MPICH's handles are integers tagged as communicators; Open MPI's are pointers to
    /// objects of its communicator class, read safely), or is an intercommunicator; class
    /// OTHER from a thread other than MPI's main thread below MULTIPLE; the library's
    /// class if MPI_Comm_dup fails.
    ///
    /// # Safety
    /// `comm` is a communicator handle of the MPI library this process runs, valid now
    /// (not freed, not MPI_COMM_NULL), and `comm` is not used by another thread of the
    /// program while this call runs. The shape check above catches a handle of the
    /// other library or an integer that is no handle at all, but not a freed or
    /// stale handle of the right library (MPICH), nor a stale pointer whose memory
    /// still holds a communicator (Open MPI).
    #[doc(alias = "MPI_Comm_dup")]
    pub unsafe fn from_raw_comm(comm: Handle) -> Result<MpiWorld> {
        let mut state = lifecycle();
        match *state {
            Lifecycle::Fresh | Lifecycle::Program => {}
            Lifecycle::Live => {
                return Err(Error::arg(
                    "MPI was initialized by rma-mpi in this process (MpiWorld::init); make \
                     worlds by splitting that world, not from a raw communicator",
                ))
            }
            Lifecycle::Finalized => {
                return Err(Error::arg("MPI was finalized in this process"));
            }
        }
        let (api, shim_library) = rma_mpi_sys::api_for_process()?;
        let (init, fini) = mpi_state(api)?;
        if fini {
            return Err(Error::arg("MPI was finalized in this process"));
        }
        if !init {
            return Err(Error::arg(format!(
                "MPI is not initialized in the {} library rma-mpi loaded: initialize it \
                 first (MPI_Init_thread, or rsmpi's mpi::initialize), or let rma-mpi do it \
                 (MpiWorld::init)",
                shim_library.name()
            )));
        }
        let mut shaped: c_int = 0;
        // SAFETY: the shim only inspects the integer; no MPI call.
        unsafe { (api.comm_shape)(comm, &mut shaped) };
        if shaped == 0 {
            return Err(Error::arg(format!(
                "{comm:#x} is not a communicator handle of {} (the library rma-mpi loaded); \
                 is it MPI_COMM_NULL, or a handle of another MPI library?",
                shim_library.name()
            )));
        }
        let mut inter: c_int = 0;
        // SAFETY: `comm` is a live communicator of this library (caller's contract).
        let rc = unsafe { (api.comm_test_inter)(comm, &mut inter) };
        Call::new("MPI_Comm_test_inter").check(api, rc)?;
        if inter != 0 {
            return Err(Error::arg(
                "an intercommunicator cannot hold windows; pass an intracommunicator",
            ));
        }
        let (mut provided, mut main): (c_int, c_int) = (0, 0);
        // SAFETY: MPI is initialized; the out-pointers are valid.
        let rc = unsafe { (api.query_thread)(&mut provided) }
            | unsafe { (api.is_thread_main)(&mut main) };
        Call::new("MPI_Query_thread").check(api, rc)?;
        let level = ThreadLevel::from_code(provided);
        if level < ThreadLevel::Multiple && main == 0 {
            // below MULTIPLE the program's own calls are not in rma's turns: rma's may
            // only come from the thread the program's come from, MPI's main thread
            return Err(wrong_thread(level));
        }
        if main != 0 {
            // MPI's main thread, the one that initialized it: the thread a world below
            // SERIALIZED (or a confined one) keeps to
            mark_init_thread();
        }
        if *state == Lifecycle::Fresh {
            // SAFETY: MPI is initialized and not finalized; the hook is a plain
            // function that lives as long as the process.
            let rc = unsafe { (api.watch_finalize)(Some(program_finalizes)) };
            Call::new("MPI_Comm_set_attr").check(api, rc)?;
            *state = Lifecycle::Program;
        }
        drop(state);
        // SAFETY: `comm` is live and not used elsewhere meanwhile (caller's contract);
        // `out` is a valid out-pointer.
        let dup = |api: &Api, out: &mut Handle| unsafe { (api.comm_dup)(comm, out) };
        let mut world = MpiWorld::join(api, shim_library, level, true, dup)?;
        // a sub-world of the program's MPI: its end frees the duplicate, never
        // finalizes
        world.sub = true;
        world.adopted = true;
        sub_worlds().0 += 1;
        program_worlds(1);
        world.check_basic_types()?;
        Ok(world)
    }

    /// The ranks of this world that can share memory — on one node —
    /// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED), numbered by `key`, then by
    /// their rank here. Collective over this world.
    ///
    /// Errors: as [`MpiWorld::split`].
    #[doc(alias = "MPI_Comm_split_type")]
    pub fn split_shared(&self, key: i32) -> Result<MpiWorld> {
        self.check_thread()?;
        let mut comm: Handle = 0;
        let rc = {
            let _one = self.collective();
            self.agree(Entry::Split)?;
            // SAFETY: `comm` is a valid out-pointer; `self.comm` is live.
            self.mpi(|api| unsafe { (api.comm_split_shared)(self.comm(), key, &mut comm) })
        };
        self.check(rc, Call::new("MPI_Comm_split_type"))?;
        self.adopt(comm)
    }

    /// Whether this world was made over a communicator of the program
    /// ([`MpiWorld::from_raw_comm`]) or split from one: MPI is then the program's.
    pub fn over_program_mpi(&self) -> bool {
        self.program
    }
}
