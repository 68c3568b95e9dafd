//! MPI's C interface over rma: `include/mpi.h`, this library (`librma_capi.so`) and
//! `bin/rmacc`, so that C MPI programs run on rma's windows, launched by `rmarun`.
//!
//! Every `MPI_*` function here is the one the MPI standard (3.1) names, with its C
//! signature; mpi.h declares them. Handles are ints indexing per-process tables.
//! What rma does differently from a full MPI library (which functions exist, the
//! memory model of windows over the caller's memory, point-to-point over Unix
//! sockets) is in rma-win's guide (`rma_win::guide::c_and_fortran`).
//!
//! # Soundness
//!
//! The entry points are `unsafe extern "C"`: their contract is MPI's (valid pointers of
//! the sizes the arguments describe, buffers not touched by the program while a call
//! that uses them is pending, calls from the threads the thread level allows).
//! Inside, each raw pointer becomes a slice only for the duration of one call, over
//! memory the contract makes valid, and never over memory of a window another
//! process, or another thread of this one, may write: windows over the caller's
//! memory are reconciled through word-atomic copies (see [`win`]), and shared windows
//! are reached through raw pointers only by the C program itself.
//!
//! The library's state is one value behind one lock (`Lease`); a call holds it
//! throughout, except where it waits for other ranks at MPI_THREAD_SERIALIZED or
//! MULTIPLE: between polls of a wait (`p2p::wait_on`), and around a window
//! synchronization, for which the window is moved out of the state and every call on
//! it or its communicator waits until it is back (`win::sync`).
//!
//! A Rust panic never crosses into C: each entry point catches it and reports
//! MPI_ERR_INTERN through the error handler in effect.

// The functions are MPI's, documented by the standard and declared in mpi.h; a doc
// comment on each of the ~170 would only repeat its name.
#![allow(missing_docs)]
#![allow(clippy::missing_safety_doc)]

pub mod bindings;
pub mod coll;
pub mod comm;
pub mod dtype;
pub mod env;
pub mod fortran;
mod mem;
pub mod nbc;
pub mod op;
pub mod p2p;
pub mod pmpi;
pub mod refused;
pub mod tool;
pub mod topo;
pub mod win;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// MPI error codes (the classes; rma's error codes are its classes).
pub(crate) mod code {
    pub(crate) const SUCCESS: i32 = 0;
    pub(crate) const BUFFER: i32 = 1;
    pub(crate) const COUNT: i32 = 2;
    pub(crate) const TYPE: i32 = 3;
    pub(crate) const TAG: i32 = 4;
    pub(crate) const COMM: i32 = 5;
    pub(crate) const RANK: i32 = 6;
    pub(crate) const ROOT: i32 = 7;
    pub(crate) const GROUP: i32 = 8;
    pub(crate) const OP: i32 = 9;
    pub(crate) const TOPOLOGY: i32 = 10;
    pub(crate) const DIMS: i32 = 11;
    pub(crate) const ARG: i32 = 12;
    pub(crate) const UNKNOWN: i32 = 13;
    pub(crate) const TRUNCATE: i32 = 14;
    pub(crate) const OTHER: i32 = 15;
    pub(crate) const INTERN: i32 = 16;
    pub(crate) const IN_STATUS: i32 = 17;
    pub(crate) const PENDING: i32 = 18;
    pub(crate) const REQUEST: i32 = 19;
    pub(crate) const INFO: i32 = 28;
    pub(crate) const INFO_KEY: i32 = 29;
    pub(crate) const INFO_VALUE: i32 = 30;
    pub(crate) const INFO_NOKEY: i32 = 31;
    pub(crate) const NO_MEM: i32 = 34;
    pub(crate) const UNSUPPORTED: i32 = 44;
    pub(crate) const WIN: i32 = 45;
    pub(crate) const BASE: i32 = 46;
    pub(crate) const LOCKTYPE: i32 = 47;
    pub(crate) const KEYVAL: i32 = 48;
    pub(crate) const RMA_CONFLICT: i32 = 49;
    pub(crate) const RMA_SYNC: i32 = 50;
    pub(crate) const SIZE: i32 = 51;
    pub(crate) const DISP: i32 = 52;
    pub(crate) const ASSERT: i32 = 53;
    pub(crate) const RMA_RANGE: i32 = 54;
    pub(crate) const RMA_ATTACH: i32 = 55;
    pub(crate) const RMA_SHARED: i32 = 56;
    pub(crate) const RMA_FLAVOR: i32 = 57;
    pub(crate) const PROC_FAILED: i32 = 58;
    pub(crate) const LASTCODE: i32 = 0x3fff_ffff;

    /// The name of an error class, as mpi.h spells it.
    pub(crate) fn name(c: i32) -> &'static str {
        match c {
            SUCCESS => "MPI_SUCCESS",
            BUFFER => "MPI_ERR_BUFFER",
            COUNT => "MPI_ERR_COUNT",
            TYPE => "MPI_ERR_TYPE",
            TAG => "MPI_ERR_TAG",
            COMM => "MPI_ERR_COMM",
            RANK => "MPI_ERR_RANK",
            ROOT => "MPI_ERR_ROOT",
            GROUP => "MPI_ERR_GROUP",
            OP => "MPI_ERR_OP",
            ARG => "MPI_ERR_ARG",
            UNKNOWN => "MPI_ERR_UNKNOWN",
            TRUNCATE => "MPI_ERR_TRUNCATE",
            OTHER => "MPI_ERR_OTHER",
            INTERN => "MPI_ERR_INTERN",
            IN_STATUS => "MPI_ERR_IN_STATUS",
            REQUEST => "MPI_ERR_REQUEST",
            TOPOLOGY => "MPI_ERR_TOPOLOGY",
            DIMS => "MPI_ERR_DIMS",
            PENDING => "MPI_ERR_PENDING",
            LASTCODE => "MPI_ERR_LASTCODE",
            INFO => "MPI_ERR_INFO",
            INFO_KEY => "MPI_ERR_INFO_KEY",
            INFO_VALUE => "MPI_ERR_INFO_VALUE",
            INFO_NOKEY => "MPI_ERR_INFO_NOKEY",
            NO_MEM => "MPI_ERR_NO_MEM",
            UNSUPPORTED => "MPI_ERR_UNSUPPORTED_OPERATION",
            WIN => "MPI_ERR_WIN",
            BASE => "MPI_ERR_BASE",
            LOCKTYPE => "MPI_ERR_LOCKTYPE",
            KEYVAL => "MPI_ERR_KEYVAL",
            RMA_CONFLICT => "MPI_ERR_RMA_CONFLICT",
            RMA_SYNC => "MPI_ERR_RMA_SYNC",
            SIZE => "MPI_ERR_SIZE",
            DISP => "MPI_ERR_DISP",
            ASSERT => "MPI_ERR_ASSERT",
            RMA_RANGE => "MPI_ERR_RMA_RANGE",
            RMA_ATTACH => "MPI_ERR_RMA_ATTACH",
            RMA_SHARED => "MPI_ERR_RMA_SHARED",
            RMA_FLAVOR => "MPI_ERR_RMA_FLAVOR",
            PROC_FAILED => "MPI_ERR_PROC_FAILED",
            // MPI_T's return codes, which MPI_Error_string and MPI_Error_class know too
            _ => crate::tool::terr::name(c),
        }
    }

    /// The MPI class of an rma error class.
    pub(crate) fn of(c: rma_win::ErrorClass) -> i32 {
        use rma_win::ErrorClass as E;
        match c {
            E::Rank => RANK,
            E::Disp => DISP,
            E::Count => COUNT,
            E::Type => TYPE,
            E::Op => OP,
            E::Buffer => BUFFER,
            E::RmaRange => RMA_RANGE,
            E::RmaSync => RMA_SYNC,
            E::RmaFlavor => RMA_FLAVOR,
            E::RmaConflict => RMA_CONFLICT,
            E::RmaShared => RMA_SHARED,
            E::RmaAttach => RMA_ATTACH,
            E::Assert => ASSERT,
            E::Info => INFO,
            E::Arg => ARG,
            E::Win => WIN,
            E::NoMem => NO_MEM,
            E::ProcFailed => PROC_FAILED,
            E::Intern => INTERN,
            E::Other => OTHER,
            _ => OTHER,
        }
    }
}

/// A failed call: its MPI error code and what went wrong.
#[derive(Debug)]
pub(crate) struct Fail {
    pub(crate) code: i32,
    pub(crate) msg: String,
}

pub(crate) type R<T = ()> = std::result::Result<T, Fail>;

pub(crate) fn fail(code: i32, msg: impl Into<String>) -> Fail {
    Fail {
        code,
        msg: msg.into(),
    }
}

impl From<rma_win::Error> for Fail {
    fn from(e: rma_win::Error) -> Fail {
        Fail {
            code: code::of(e.class()),
            msg: e.to_string(),
        }
    }
}

/// A table of objects behind int handles; handles below `first` are predefined.
#[derive(Debug)]
pub(crate) struct Table<T> {
    slots: Vec<Option<T>>,
}

impl<T> Table<T> {
    pub(crate) fn new() -> Table<T> {
        Table { slots: Vec::new() }
    }

    /// Puts `v` at handle `h` (predefined objects).
    pub(crate) fn put(&mut self, h: i32, v: T) {
        let h = h as usize;
        if self.slots.len() <= h {
            self.slots.resize_with(h + 1, || None);
        }
        self.slots[h] = Some(v);
    }

    /// Stores `v` under a new handle, never below `first`.
    pub(crate) fn insert(&mut self, first: i32, v: T) -> i32 {
        let first = first as usize;
        if let Some(i) = (first..self.slots.len()).find(|&i| self.slots[i].is_none()) {
            self.slots[i] = Some(v);
            return i as i32;
        }
        if self.slots.len() < first {
            self.slots.resize_with(first, || None);
        }
        self.slots.push(Some(v));
        (self.slots.len() - 1) as i32
    }

    pub(crate) fn get(&self, h: i32) -> Option<&T> {
        usize::try_from(h)
            .ok()
            .and_then(|i| self.slots.get(i)?.as_ref())
    }

    pub(crate) fn get_mut(&mut self, h: i32) -> Option<&mut T> {
        usize::try_from(h)
            .ok()
            .and_then(|i| self.slots.get_mut(i)?.as_mut())
    }

    pub(crate) fn remove(&mut self, h: i32) -> Option<T> {
        usize::try_from(h)
            .ok()
            .and_then(|i| self.slots.get_mut(i)?.take())
    }

    pub(crate) fn handles(&self) -> Vec<i32> {
        (0..self.slots.len())
            .filter(|&i| self.slots[i].is_some())
            .map(|i| i as i32)
            .collect()
    }
}

/// Error handlers: the predefined ones and the program's functions.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Errh {
    Fatal,
    Return,
    Abort,
    /// `MPI_Comm_errhandler_function` or `MPI_Win_errhandler_function` (the same
    /// shape: a pointer to the handle and one to the code).
    User(unsafe extern "C-unwind" fn(*mut c_int, *mut c_int, ...)),
}

pub(crate) const ERRH_FATAL: i32 = 1;
pub(crate) const ERRH_RETURN: i32 = 2;
pub(crate) const ERRH_ABORT: i32 = 3;

/// An attribute keyval's callbacks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keyval {
    /// 0: MPI_*_NULL_COPY_FN, 1: MPI_*_DUP_FN, else the function.
    pub(crate) copy: usize,
    pub(crate) delete: usize,
    pub(crate) extra: usize,
    /// Freed by the program: no new attributes, but the attributes already set keep
    /// their delete function (MPI frees a keyval once no attribute uses it).
    pub(crate) freed: bool,
}

/// Everything this process's MPI knows.
pub(crate) struct State {
    pub(crate) comms: Table<comm::Comm>,
    pub(crate) groups: Table<Vec<usize>>,
    pub(crate) types: Table<dtype::Ty>,
    pub(crate) infos: Table<rma_win::Info>,
    pub(crate) wins: Table<win::Win>,
    /// Freed shared windows whose memory a mapped window still exposes (see
    /// `win::Mem::Mapped`): kept mapped until that window is freed.
    pub(crate) graveyard: Vec<win::Win>,
    pub(crate) reqs: Table<p2p::Req>,
    /// The program's reduction operations (`MPI_Op_create`).
    pub(crate) ops: Table<op::UserOp>,
    pub(crate) errhs: Table<Errh>,
    pub(crate) keyvals: BTreeMap<i32, Keyval>,
    pub(crate) next_keyval: i32,
    pub(crate) p2p: p2p::P2p,
    pub(crate) thread_level: i32,
    /// Communicators whose world a thread is using with the state released (a window
    /// synchronization at MPI_THREAD_MULTIPLE, `win::sync`).
    pub(crate) out_comms: Vec<i32>,
    /// Whether the blocking collectives that have a nonblocking form run as one (over
    /// messages): when any rank asked for MPI_THREAD_MULTIPLE (agreed at MPI_Init).
    pub(crate) colls_by_messages: bool,
}

impl Drop for State {
    fn drop(&mut self) {
        // windows borrow their communicators' worlds: they go first, whatever the
        // field order (this also runs from the thread-local destructors when the
        // program exits without MPI_Finalize)
        self.drop_windows();
    }
}

/// The process's MPI state, behind one lock: every call runs with it held (see
/// [`Lease`]), so the state is never touched by two threads at once.
///
/// At MPI_THREAD_SINGLE and FUNNELED only the thread that called MPI_Init may call
/// (others get an error), as before; at SERIALIZED and MULTIPLE any thread may, and
/// the calls that wait for other ranks release the lock between polls (see
/// [`Lease::pause`]).
static STATE: Mutex<Option<StateCell>> = Mutex::new(None);

/// The state, sendable between threads.
pub(crate) struct StateCell(pub(crate) State);

// SAFETY: a StateCell lives only in STATE and is reached only through its mutex, so
// its contents are never accessed by two threads at once, and every access
// happens-after the previous one (the mutex orders them). What the contents lack for
// `Send` is thread identity, not synchronization: raw pointers into the program's
// buffers (valid by MPI's contract from any thread), rma's shared-memory objects
// (whose Cells are only touched under this lock), and, with the mpi transport, a
// system MPI world that must stay on the thread that initialized it. That last one
// never leaves its thread: under the mpi transport the level is at most FUNNELED,
// where calls from other threads are refused before they reach the state
// (`Lease::acquire`).
unsafe impl Send for StateCell {}

/// The thread that called MPI_Init, for FUNNELED's rule and MPI_Is_thread_main.
pub(crate) static MAIN: std::sync::OnceLock<std::thread::ThreadId> = std::sync::OnceLock::new();

/// Whether any thread may call (SERIALIZED or MULTIPLE was provided).
pub(crate) static ANY_THREAD: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

thread_local! {
    /// This thread's relation to the library, one cell (a thread-local of a shared
    /// library costs a call to reach): [`HELD`] and the `MAIN_*` bits.
    static HERE: Cell<u8> = const { Cell::new(0) };
    /// Callbacks into the program, run once the state is released (they may call MPI).
    static LATER: RefCell<Vec<Box<dyn FnOnce()>>> = const { RefCell::new(Vec::new()) };
}

/// The state, held by one call: it derefs to [`State`], and [`Lease::pause`] lets
/// other threads' calls run while this one waits.
pub(crate) struct Lease {
    guard: Option<MutexGuard<'static, Option<StateCell>>>,
}

/// [`HERE`]: this thread holds the state now (a callback into the program that calls
/// MPI must get an error, not wait for itself).
const HELD: u8 = 1;
/// [`HERE`]: whether this thread is [`MAIN`] is known (MAIN never changes once set,
/// so one look per thread serves) ...
const MAIN_KNOWN: u8 = 2;
/// ... and it is.
const MAIN_YES: u8 = 4;

/// Whether this thread holds the state now.
fn held() -> bool {
    HERE.with(Cell::get) & HELD != 0
}

/// Marks whether this thread holds the state.
fn set_held(on: bool) {
    HERE.with(|h| h.set(if on { h.get() | HELD } else { h.get() & !HELD }));
}

/// Whether this thread is MAIN given its [`HERE`] bits `here` (true before anyone
/// called MPI_Init), and the bits to keep.
#[inline]
fn main_of(here: u8) -> (bool, u8) {
    if here & MAIN_KNOWN != 0 {
        return (here & MAIN_YES != 0, here);
    }
    match MAIN.get() {
        None => (true, here),
        Some(t) => {
            let main = *t == std::thread::current().id();
            (main, here | MAIN_KNOWN | if main { MAIN_YES } else { 0 })
        }
    }
}

/// Whether this thread called MPI_Init (true before anyone did).
pub(crate) fn is_main() -> bool {
    HERE.with(|h| {
        let (main, bits) = main_of(h.get());
        h.set(bits);
        main
    })
}

impl Lease {
    /// Takes the state for a call on this thread; Err with the reason if this thread
    /// may not have it.
    fn acquire() -> R<Lease> {
        // one look at this thread's cell: held? main?
        let any = ANY_THREAD.load(std::sync::atomic::Ordering::Acquire);
        let (was_held, main) = HERE.with(|h| {
            let here = h.get();
            let (main, bits) = if any { (true, here) } else { main_of(here) };
            h.set(bits);
            (here & HELD != 0, main)
        });
        if was_held {
            return Err(fail(
                code::OTHER,
                "called from inside an MPI callback that holds the library",
            ));
        }
        if !main {
            return Err(fail(
                code::OTHER,
                if PHASE.load(std::sync::atomic::Ordering::Relaxed) == 0 {
                    "MPI is not initialized (call MPI_Init first)"
                } else {
                    "called from a thread other than the one that called MPI_Init, at \
                     MPI_THREAD_FUNNELED or SINGLE (ask MPI_Init_thread for \
                     MPI_THREAD_SERIALIZED or MULTIPLE)"
                },
            ));
        }
        let guard = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            return Err(fail(
                code::OTHER,
                if PHASE.load(std::sync::atomic::Ordering::Relaxed) == 2 {
                    "called after MPI_Finalize"
                } else {
                    "MPI is not initialized (call MPI_Init first)"
                },
            ));
        }
        set_held(true);
        Ok(Lease { guard: Some(guard) })
    }

    /// Lets other threads' calls run for a moment (a wait between two polls): the
    /// state is released, `pause` runs, and the state is taken again. Every `&mut
    /// State` borrowed from the lease ends before this (the borrow checker sees to
    /// it), so nothing here keeps a reference across the release.
    pub(crate) fn pause(&mut self, pause: impl FnOnce()) -> R {
        if !ANY_THREAD.load(std::sync::atomic::Ordering::Relaxed) {
            pause();
            return Ok(());
        }
        self.guard = None;
        set_held(false);
        pause();
        let guard = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            return Err(fail(
                code::OTHER,
                "another thread called MPI_Finalize while this call waited",
            ));
        }
        set_held(true);
        self.guard = Some(guard);
        Ok(())
    }
}

impl Lease {
    /// Runs `f` with the state released, then takes it again: for a call that waits
    /// for other ranks on an object it took out of the state first (a window), so
    /// that the process's other threads call MPI meanwhile. Whatever `f` uses must be
    /// owned by this thread for the time (nothing borrowed from the state: the
    /// borrow checker sees to it) and kept from others' reach by the caller (see
    /// `win::sync`). A panic in `f` is caught, so that the caller always puts back
    /// what it took out.
    pub(crate) fn unlocked<T>(&mut self, f: impl FnOnce() -> T) -> R<std::thread::Result<T>> {
        self.guard = None;
        set_held(false);
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let guard = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            // MPI_Finalize waits until no thread has anything out (take_state)
            return Err(fail(
                code::INTERN,
                "the state vanished while a window was out",
            ));
        }
        set_held(true);
        self.guard = Some(guard);
        Ok(out)
    }

    /// Waits, letting other threads call, while `blocked` holds (the gate of calls on
    /// a window or communicator another thread's call is using with the state
    /// released).
    fn wait_while(&mut self, mut blocked: impl FnMut(&State) -> bool) -> R {
        let mut spins = 0u32;
        while blocked(self) {
            spins += 1;
            self.pause(|| {
                if spins < 100 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
            })?;
        }
        Ok(())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.guard.take().is_some() {
            set_held(false);
        }
    }
}

impl std::ops::Deref for Lease {
    type Target = State;
    fn deref(&self) -> &State {
        match self.guard.as_deref() {
            Some(Some(c)) => &c.0,
            _ => panic!("the MPI state was used while released"),
        }
    }
}

impl std::ops::DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut State {
        match self.guard.as_deref_mut() {
            Some(Some(c)) => &mut c.0,
            _ => panic!("the MPI state was used while released"),
        }
    }
}

/// Runs `f` on the state if this thread may take it now (and is not inside a call).
pub(crate) fn with_state(f: impl FnOnce(&mut State)) {
    if let Ok(mut l) = Lease::acquire() {
        f(&mut l);
    }
}

/// Installs the state at MPI_Init.
pub(crate) fn install_state(st: State) {
    *STATE.lock().unwrap_or_else(PoisonError::into_inner) = Some(StateCell(st));
}

/// Takes the state out at MPI_Finalize (None if another thread did first), once no
/// thread has a window out ([`Lease::unlocked`]): under the same hold of the lock, so
/// that none can take one out after.
pub(crate) fn take_state() -> Option<State> {
    loop {
        let mut g = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        match g.as_ref() {
            None => return None,
            Some(c) if !c.0.any_out() => return g.take().map(|c| c.0),
            Some(_) => {
                drop(g);
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        }
    }
}

/// 0 before MPI_Init, 1 while initialized, 2 after MPI_Finalize.
pub(crate) static PHASE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Runs `f` after the current call has released the state.
pub(crate) fn later(f: impl FnOnce() + 'static) {
    LATER.with(|l| l.borrow_mut().push(Box::new(f)));
    LATER_ANY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// How many callbacks [`later`] queued on any thread and no thread ran yet: a call
/// looks at its thread's queue only when some are (a thread-local costs a call).
static LATER_ANY: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Which object's error handler a call's error goes to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum On {
    Comm(i32),
    Win(i32),
    /// MPI_COMM_WORLD's (calls with no communicator or window).
    World,
}

/// The calls on a communicator that use its world (rma's shared-memory collectives,
/// creating and freeing communicators), at the thread level where windows are taken
/// out (MPI_THREAD_MULTIPLE, where the blocking collectives that have a nonblocking
/// form run as one, over messages): they wait while a window of that communicator is
/// out (`win::sync`). Point-to-point calls, nonblocking collectives and queries do
/// not touch the world, and never wait for it.
const USES_WORLD: &[&str] = &[
    "MPI_Comm_split",
    "MPI_Comm_split_type",
    "MPI_Comm_dup",
    "MPI_Comm_create",
    "MPI_Comm_create_group",
    "MPI_Comm_free",
    "MPI_Intercomm_create",
    "MPI_Intercomm_merge",
    "MPI_Cart_create",
    "MPI_Cart_sub",
    "MPI_Dist_graph_create_adjacent",
    "MPI_Dist_graph_create",
    "MPI_Scan",
    "MPI_Exscan",
    "MPI_Reduce_scatter",
    "MPI_Reduce_scatter_block",
];

/// The calls that make windows: they wait while any window is out, since they look
/// through every window (is the new window's memory part of a shared window?).
const MAKES_WINDOW: &[&str] = &[
    "MPI_Win_create",
    "MPI_Win_allocate",
    "MPI_Win_allocate_shared",
    "MPI_Win_create_dynamic",
];

/// Runs one MPI call: `f` with the state, then the error handler in effect if it
/// failed; the MPI return code.
pub(crate) fn call(name: &str, on: On, f: impl FnOnce(&mut Lease) -> R) -> c_int {
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut lease = Lease::acquire()?;
        // a window another thread took out, or the world it shares with its
        // communicator, waits for it (see `win::sync`)
        // (nothing to look up while no window is out: every call but a few)
        if lease.any_out() {
            match on {
                On::Win(w) => lease.wait_while(|st| st.win_out(w))?,
                On::Comm(c) if USES_WORLD.contains(&name) => {
                    lease.wait_while(|st| st.comm_out(c))?;
                }
                On::Comm(_) if MAKES_WINDOW.contains(&name) => {
                    lease.wait_while(State::any_out)?;
                }
                _ => {}
            }
        }
        f(&mut lease)
    }));
    let out = out.unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(fail(
            code::INTERN,
            format!("internal error (panic): {what}"),
        ))
    });
    run_later();
    match out {
        Ok(()) => code::SUCCESS,
        Err(e) => raise(name, on, e),
    }
}

fn run_later() {
    if LATER_ANY.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        return;
    }
    loop {
        let next = LATER.with(|l| {
            let mut l = l.borrow_mut();
            if l.is_empty() {
                None
            } else {
                Some(l.remove(0))
            }
        });
        match next {
            Some(f) => {
                LATER_ANY.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                f()
            }
            None => break,
        }
    }
}

/// Hands an error to the handler of `on`; what the call returns.
pub(crate) fn raise(name: &str, on: On, e: Fail) -> c_int {
    let (h, handle) = {
        if held() {
            // called back from inside a call: the error goes back to the caller
            (Errh::Return, 0)
        } else {
            let g = STATE.lock().unwrap_or_else(PoisonError::into_inner);
            match g.as_ref() {
                // after MPI_Finalize (another thread's, while this call waited):
                // the error goes back to the caller; before MPI_Init: fatal
                None if PHASE.load(std::sync::atomic::Ordering::Relaxed) == 2 => (Errh::Return, 0),
                None => (Errh::Fatal, 0),
                Some(StateCell(st)) => {
                    let (eh, handle) = match on {
                        On::Comm(c) if st.comms.get(c).is_some() => {
                            (st.comms.get(c).map(|c| c.errh), c)
                        }
                        On::Win(w) if st.wins.get(w).is_some() => {
                            (st.wins.get(w).map(|w| w.errh), w)
                        }
                        _ => (st.comms.get(comm::WORLD).map(|c| c.errh), comm::WORLD),
                    };
                    let eh = eh.unwrap_or(ERRH_FATAL);
                    (st.errhs.get(eh).copied().unwrap_or(Errh::Fatal), handle)
                }
            }
        }
    };
    match h {
        Errh::Return => e.code,
        Errh::Fatal | Errh::Abort => {
            eprintln!(
                "rma: {name}: {} ({}); the job ends",
                e.msg,
                code::name(e.code)
            );
            std::process::exit(e.code.clamp(1, 255));
        }
        Errh::User(f) => {
            let mut handle = handle;
            let mut c = e.code;
            // SAFETY: the program registered `f` as an error handler function taking a
            // pointer to the handle and one to the code; both point to live locals.
            unsafe { f(&mut handle, &mut c) };
            e.code
        }
    }
}

/// Copies `s` into a C buffer of `cap` bytes (NUL-terminated, truncated) and stores
/// its length.
///
/// # Safety
/// `out` is valid for `cap` bytes; `len`, if not null, for one int.
pub(crate) unsafe fn put_str(s: &str, out: *mut c_char, cap: usize, len: *mut c_int) {
    if out.is_null() || cap == 0 {
        return;
    }
    let n = s.len().min(cap - 1);
    // SAFETY: the caller gives `cap` writable bytes at `out`; n + 1 <= cap.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), out.cast::<u8>(), n);
        *out.add(n) = 0;
        if !len.is_null() {
            *len = n as c_int;
        }
    }
}

/// A C string argument.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
pub(crate) unsafe fn c_str(p: *const c_char, what: &str) -> R<String> {
    if p.is_null() {
        return Err(fail(code::ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller gives a NUL-terminated string.
    Ok(unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned())
}

/// Stores `v` through an out-pointer, or fails with MPI_ERR_ARG if it is null.
///
/// # Safety
/// `p` is null or valid for writing one `T`.
pub(crate) unsafe fn out<T>(p: *mut T, v: T, what: &str) -> R {
    if p.is_null() {
        return Err(fail(code::ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    unsafe { p.write(v) };
    Ok(())
}

/// Reads an in-pointer, or fails with MPI_ERR_ARG if it is null.
///
/// # Safety
/// `p` is null or valid for reading one `T`.
pub(crate) unsafe fn inp<T: Copy>(p: *const T, what: &str) -> R<T> {
    if p.is_null() {
        return Err(fail(code::ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { p.read() })
}

/// A C array argument of `n` elements as a slice (empty for n = 0 whatever `p`).
///
/// # Safety
/// `p` is valid for `n` elements when n > 0, and not written during the call.
pub(crate) unsafe fn arr<'a, T>(p: *const T, n: c_int, what: &str) -> R<&'a [T]> {
    if n < 0 {
        return Err(fail(code::COUNT, format!("{what}: negative count {n}")));
    }
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(fail(code::ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract: n elements at p.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

/// A non-negative count.
pub(crate) fn count(n: c_int, what: &str) -> R<usize> {
    usize::try_from(n).map_err(|_| fail(code::COUNT, format!("{what} is negative ({n})")))
}
