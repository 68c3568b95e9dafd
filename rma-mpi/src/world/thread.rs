//! Who may call MPI, and when: the thread level a world runs at, the gate that
//! serializes its calls at MPI_THREAD_SERIALIZED, the state its calls update in the
//! same turn ([`Turned`]), and the refusal of a call from a thread that may not make
//! it. Nothing here knows the [`MpiWorld`](super::MpiWorld): it holds these and takes its
//! turns through them ([`MpiWorld::mpi`](super::MpiWorld::mpi),
//! [`MpiWorld::mpi_turned`](super::MpiWorld::mpi_turned)).

use rma_core::{Error, Result};
use std::cell::{Cell, UnsafeCell};
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// MPI's thread support levels (MPI_THREAD_*), lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadLevel {
    /// Only one thread will execute (MPI_THREAD_SINGLE).
    #[doc(alias = "MPI_THREAD_SINGLE")]
    Single,
    /// Only the main thread calls MPI (MPI_THREAD_FUNNELED).
    #[doc(alias = "MPI_THREAD_FUNNELED")]
    Funneled,
    /// One thread at a time calls MPI (MPI_THREAD_SERIALIZED).
    #[doc(alias = "MPI_THREAD_SERIALIZED")]
    Serialized,
    /// Any thread calls MPI at any time (MPI_THREAD_MULTIPLE).
    #[doc(alias = "MPI_THREAD_MULTIPLE")]
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

    /// The level of MPI_Init_thread's `provided` (the shim passes rma's codes).
    pub(super) fn from_code(code: c_int) -> ThreadLevel {
        match code {
            3 => ThreadLevel::Multiple,
            2 => ThreadLevel::Serialized,
            1 => ThreadLevel::Funneled,
            _ => ThreadLevel::Single,
        }
    }
}

/// Environment variable: the MPI thread level rma-win's worlds ask for under an MPI
/// launcher (`single`, `funneled`, `serialized` (the default) or `multiple`;
/// [`ThreadLevel::from_env`]). Below `serialized` only the thread that initialized MPI
/// may call it — rma-win's worlds and windows are neither `Send` nor `Sync`, so they
/// keep to that thread — and the progress thread cannot run. Open MPI 4 takes its
/// internal locks at every level above `single`, so `single` is its fastest.
pub const ENV_THREAD: &str = "RMA_MPI_THREAD";

/// The return code of an MPI call refused because it came from a thread that may not
/// call MPI (a world below MPI_THREAD_SERIALIZED): negative, which no MPI error code is.
pub(crate) const WRONG_THREAD: c_int = -1_000_001;

/// What [`MpiWorld::mpi`](super::MpiWorld::mpi) returns in place of a call it refused: the
/// call's result type, carrying [`WRONG_THREAD`].
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

/// The lock that serializes a world's MPI calls at MPI_THREAD_SERIALIZED.
pub(super) struct Gate {
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
    pub(super) fn turn(&self) -> Option<MutexGuard<'_, ()>> {
        self.is_on().then(|| self.lock())
    }

    /// The lock, whether or not the world's calls take it (a progress thread always
    /// does).
    pub(super) fn lock(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the world's own calls take the gate.
    #[inline]
    pub(super) fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Makes the world's own calls take the gate, or not (the initializing thread
    /// only; see `on`).
    pub(super) fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }
}

/// What serializes the updates of a [`Turned`] state.
pub(super) enum TurnLock {
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
/// ([`MpiWorld::turned`](super::MpiWorld::turned),
/// [`MpiWorld::mpi_turned`](super::MpiWorld::mpi_turned), the only one to reach `state`
/// through a shared borrow).
pub(crate) struct Turned<S> {
    pub(super) lock: TurnLock,
    pub(super) state: UnsafeCell<S>,
}

// SAFETY: shared access to the state happens only inside `MpiWorld::mpi_turned`, which
// makes it exclusive (see there); the state itself moves between threads, so `S: Send`.
unsafe impl<S: Send> Sync for Turned<S> {}

impl<S> Turned<S> {
    /// The state, through an exclusive borrow.
    pub(crate) fn get_mut(&mut self) -> &mut S {
        self.state.get_mut()
    }
}

thread_local! {
    /// Whether this thread initialized MPI (a world below SERIALIZED checks it).
    static ON_INIT_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread initialized MPI.
#[inline]
pub(super) fn on_init_thread() -> bool {
    ON_INIT_THREAD.with(Cell::get)
}

/// Marks this thread as the one that initialized MPI.
pub(super) fn mark_init_thread() {
    ON_INIT_THREAD.with(|t| t.set(true));
}

/// The error of a call from a thread that may not call MPI in a world at `level`.
pub(super) fn wrong_thread(level: ThreadLevel) -> Error {
    Error::Os {
        context: "an MPI call".into(),
        source: std::io::Error::other(format!(
            "{}, so only the thread that initialized MPI may call it; this call came \
             from another thread (initialize at Serialized or Multiple, unconfined, to \
             call from any thread)",
            if level < ThreadLevel::Serialized {
                format!("MPI was initialized at {level:?} on request")
            } else {
                "the world was confined to its thread (MpiWorld::confine)".to_string()
            }
        )),
    }
}

/// The error of a library that provides thread level `provided` where `required` was
/// asked for.
pub(super) fn level_error(required: ThreadLevel, provided: ThreadLevel) -> Error {
    Error::Os {
        context: "MPI_Init_thread".into(),
        source: std::io::Error::other(format!(
            "asked for {required:?}, the library provides {provided:?}; rma-mpi needs at least Serialized"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
