//! The agreement that precedes every collective rma makes under MPI, so that ranks
//! which enter different collectives get an error instead of waiting forever.
//!
//! MPI matches collectives by their order on a communicator and leaves a mismatch to
//! hang: a rank that returns early through `?` drops its window (MPI_Win_free) or its
//! world (MPI_Finalize) while its peers wait in their next barrier or fence, and the
//! job sits there until something kills it. So before each collective — barrier,
//! all-gather, window creation, fence, window free, finalize — rma first runs one
//! non-blocking all-reduce (MPI_Iallreduce, maximum of the entry's code and of its
//! negation) and waits for it. When it completes, every rank has entered *some*
//! collective at this point of its sequence, and every rank knows whether they all
//! entered the same one:
//!
//! - **the same**: the collective proper follows; a barrier is the agreement itself;
//! - **different**: every rank learns what every other entered (one all-gather, which
//!   all of them are in), the world becomes *broken* and the call returns class
//!   PROC_FAILED naming a rank that left, with what each rank entered. From then on
//!   every collective and every wait of this world fails at once with the same error,
//!   nothing waits for the ranks that left, windows are leaked rather than freed, MPI
//!   is not finalized, and when the process exits it ends the job with `MPI_Abort`
//!   (exit code [`ABORT_CODE`]), so that the launcher exits non-zero promptly. The
//!   program meanwhile returns its errors, and prints them, as it would anywhere else.
//!
//! A rank that is merely slow (computing before its next collective) is waited for:
//! the agreement completes when it arrives.
//!
//! This module holds the protocol's parts — the entries and their codes, the error a
//! mismatch gives, the exit hook — and knows no world; `MpiWorld::agree` (the world's
//! `collectives`) runs it.

use rma_core::{Error, Rank};
use rma_mpi_sys::{Api, Handle};
use std::io::Write as _;
use std::sync::atomic::{AtomicIsize, AtomicPtr, Ordering};

/// The exit code a broken world ends the job with (MPI_Abort), once the process exits.
pub const ABORT_CODE: i32 = 70;

/// A collective call, as the agreement compares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// `MpiWorld::barrier`.
    Barrier,
    /// `MpiWorld::allgather`.
    Allgather,
    /// Window creation (MPI_Win_allocate / MPI_Win_create): the window's number.
    Create(u32),
    /// MPI_Win_fence on a window.
    Fence(u32),
    /// MPI_Win_free of a window; `dropped` when the window was dropped without its
    /// free (not compared: only reported).
    Free { win: u32, dropped: bool },
    /// MPI_Finalize; `dropped` when the world was dropped without `finalize`.
    Finalize { dropped: bool },
    /// MPI_Comm_split of the world (`MpiWorld::split`).
    Split,
    /// The free of a world split from another (its drop); `dropped` when it was not
    /// freed explicitly.
    Leave { dropped: bool },
}

const DROPPED: i64 = 1 << 48;

impl Entry {
    /// The code the ranks compare: kind and window number.
    pub(crate) fn code(self) -> i64 {
        let (kind, win): (i64, u32) = match self {
            Entry::Barrier => (1, 0),
            Entry::Allgather => (2, 0),
            Entry::Create(w) => (3, w),
            Entry::Fence(w) => (4, w),
            Entry::Free { win, .. } => (5, win),
            Entry::Finalize { .. } => (6, 0),
            Entry::Split => (7, 0),
            Entry::Leave { .. } => (8, 0),
        };
        kind << 32 | i64::from(win)
    }

    /// The code with what is only reported.
    pub(crate) fn note(self) -> i64 {
        match self {
            Entry::Free { dropped: true, .. }
            | Entry::Finalize { dropped: true }
            | Entry::Leave { dropped: true } => self.code() | DROPPED,
            _ => self.code(),
        }
    }

    /// The entry of a [`Entry::note`]; `None` for a code no entry has.
    pub(crate) fn from_note(note: i64) -> Option<Entry> {
        let dropped = note & DROPPED != 0;
        let win = (note & 0xffff_ffff) as u32;
        Some(match (note & !DROPPED) >> 32 {
            1 => Entry::Barrier,
            2 => Entry::Allgather,
            3 => Entry::Create(win),
            4 => Entry::Fence(win),
            5 => Entry::Free { win, dropped },
            6 => Entry::Finalize { dropped },
            7 => Entry::Split,
            8 => Entry::Leave { dropped },
            _ => return None,
        })
    }
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Barrier => f.write_str("a barrier"),
            Entry::Allgather => f.write_str("an all-gather"),
            Entry::Create(w) => write!(f, "the creation of MPI window {w}"),
            Entry::Fence(w) => write!(f, "a fence on MPI window {w}"),
            Entry::Free {
                win,
                dropped: false,
            } => write!(f, "the free of MPI window {win}"),
            Entry::Free { win, dropped: true } => write!(
                f,
                "the free of MPI window {win}, dropped without being freed (an early return, \
                 such as an error passed on with `?`)"
            ),
            Entry::Split => f.write_str("a split of the world (MPI_Comm_split)"),
            Entry::Leave { dropped: false } => f.write_str("the free of a split world"),
            Entry::Leave { dropped: true } => f.write_str(
                "the free of a split world, dropped (an early return, such as an error \
                 passed on with `?`)",
            ),
            Entry::Finalize { dropped: false } => f.write_str("MPI_Finalize"),
            Entry::Finalize { dropped: true } => f.write_str(
                "MPI_Finalize, its world dropped (the rank's program returned, possibly \
                 early with an error)",
            ),
        }
    }
}

/// The communicator and shim the exit hook aborts with.
static EXIT_COMM: AtomicIsize = AtomicIsize::new(0);
static EXIT_RANK: AtomicIsize = AtomicIsize::new(0);
/// The mismatch, as the exit hook prints it (whichever rank exits first is the one
/// the launcher shows before it kills the others).
static EXIT_REASON: std::sync::OnceLock<String> = std::sync::OnceLock::new();
static EXIT_API: AtomicPtr<Api> = AtomicPtr::new(std::ptr::null_mut());

extern "C" fn abort_at_exit() {
    let api = EXIT_API.load(Ordering::Acquire);
    if api.is_null() {
        return;
    }
    // never a panic here (stderr may be closed): the abort below must run; one write,
    // so that other ranks' lines do not cut into it
    let line = format!(
        "rma-mpi: rank {} ends the MPI job (MPI_Abort, code {ABORT_CODE}): {}\n",
        EXIT_RANK.load(Ordering::Acquire),
        EXIT_REASON
            .get()
            .map_or("its ranks entered different collective calls", |s| s)
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    // SAFETY: `api` came from a `&'static Api` ([`arm_exit_hook`]) and `EXIT_COMM` is
    // the world's communicator, which a broken world never frees; MPI is initialized
    // and not finalized (a broken world skips MPI_Finalize).
    unsafe { ((*api).abort)(EXIT_COMM.load(Ordering::Acquire), ABORT_CODE) };
}

/// Whether a world of this process broke and armed the exit hook: MPI must then not
/// be finalized (the hook calls MPI_Abort at exit).
pub(crate) fn exit_hook_armed() -> bool {
    !EXIT_API.load(Ordering::Acquire).is_null()
}

/// Makes the process end the job with MPI_Abort on `comm` when it exits, printing
/// `reason` (the first world of the process to break gives it).
pub(crate) fn arm_exit_hook(api: &'static Api, comm: Handle, rank: usize, reason: String) {
    let _ = EXIT_REASON.set(reason);
    EXIT_COMM.store(comm, Ordering::Release);
    EXIT_RANK.store(rank as isize, Ordering::Release);
    let first = EXIT_API
        .swap(std::ptr::from_ref(api).cast_mut(), Ordering::AcqRel)
        .is_null();
    if first {
        // SAFETY: `abort_at_exit` is an `extern "C" fn()` that does not panic (its
        // print ignores errors). If registering fails, the job still ends when the
        // launcher sees this process exit without MPI_Finalize.
        unsafe { libc::atexit(abort_at_exit) };
    }
}

/// The error a rank that entered `mine` gets when the ranks entered `all`.
pub(crate) fn mismatch_error(me: usize, mine: Entry, all: &[Option<Entry>]) -> Error {
    let same = |e: &Option<Entry>| e.map(Entry::code) == Some(mine.code());
    let other = all.iter().position(|e| !same(e)).unwrap_or(0);
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (r, e) in all.iter().enumerate() {
        let what = e.map_or_else(|| "an unknown call".to_owned(), |e| e.to_string());
        match groups.iter_mut().find(|(w, _)| *w == what) {
            Some((_, ranks)) => ranks.push(r),
            None => groups.push((what, vec![r])),
        }
    }
    let listing: Vec<String> = groups
        .iter()
        .map(|(what, ranks)| format!("{} entered {what}", rank_list(ranks)))
        .collect();
    Error::ProcFailed {
        rank: Rank::new(other as u32),
        reason: format!(
            "the ranks entered different collective calls, which can never complete \
             together ({}; this is rank {me}); the world is broken: its collectives and waits \
             now fail at once, and the MPI job ends (MPI_Abort, exit code {ABORT_CODE}) when \
             this process exits",
            listing.join("; ")
        ),
    }
}

/// "rank 3", "ranks 0, 1, 2".
fn rank_list(ranks: &[usize]) -> String {
    let list: Vec<String> = ranks.iter().map(usize::to_string).collect();
    if ranks.len() == 1 {
        format!("rank {}", list[0])
    } else {
        format!("ranks {}", list.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_compare_kind_and_window_only() {
        let all = [
            Entry::Barrier,
            Entry::Allgather,
            Entry::Create(3),
            Entry::Fence(7),
            Entry::Free {
                win: 2,
                dropped: true,
            },
            Entry::Free {
                win: 2,
                dropped: false,
            },
            Entry::Finalize { dropped: true },
            Entry::Finalize { dropped: false },
            Entry::Split,
            Entry::Leave { dropped: true },
            Entry::Leave { dropped: false },
        ];
        for e in all {
            assert_eq!(Entry::from_note(e.note()), Some(e));
        }
        assert_eq!(
            Entry::Free {
                win: 2,
                dropped: true
            }
            .code(),
            Entry::Free {
                win: 2,
                dropped: false
            }
            .code()
        );
        assert_ne!(
            Entry::Free {
                win: 2,
                dropped: false
            }
            .code(),
            Entry::Free {
                win: 3,
                dropped: false
            }
            .code()
        );
        assert_ne!(Entry::Fence(0).code(), Entry::Create(0).code());
    }

    #[test]
    fn the_error_names_the_rank_that_left_and_what_each_entered() {
        let dropped = Entry::Free {
            win: 1,
            dropped: true,
        };
        let all = [Some(Entry::Barrier), Some(dropped), Some(Entry::Barrier)];
        let e = mismatch_error(0, Entry::Barrier, &all);
        assert_eq!(e.class(), rma_core::ErrorClass::ProcFailed);
        let text = e.to_string();
        assert!(text.starts_with("rank 1 failed"), "{text}");
        assert!(text.contains("ranks 0, 2 entered a barrier"), "{text}");
        assert!(
            text.contains("rank 1 entered the free of MPI window 1, dropped without being freed"),
            "{text}"
        );
        let e = mismatch_error(1, dropped, &all);
        assert!(e.to_string().starts_with("rank 0 failed"), "{e}");
    }
}
