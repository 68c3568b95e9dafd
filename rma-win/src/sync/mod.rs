//! Epochs: fence, passive target (lock / unlock, lock_all / unlock_all, the flush
//! family, sync) and active target with groups (post / start / complete / wait / test),
//! with every misuse of docs/semantics.md rule 16 refused with RMA_SYNC before anything
//! changes.
//!
//! The rules live in [`EpochState`](crate::epoch_state::EpochState), a pure value;
//! this module makes the backend's calls around its transitions: `fence` (fence epochs
//! and free), `passive` (locks and flushes), `pscw` (post, start, complete, wait, test),
//! and here what every RMA call checks and what a dropped window leaves.

mod fence;
mod passive;
mod pscw;

use crate::epoch_state::{Reach, EXCLUSIVE, HELD};
use crate::window::Window;
use rma_core::{Epochs as _, Error, LockType, Rank, Result, Transport};
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

/// An ordered subset of the world's ranks, for post and start (MPI_Group's role).
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(alias = "MPI_Group")]
pub struct Group {
    ranks: Vec<usize>,
}

impl Group {
    /// The ranks given, in the order given; a repeated rank is an error of class ARG
    /// (ranks outside the window are refused when the group is used, class RANK).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{ErrorClass, Group};
    /// let group = Group::new(&[2, 0])?;
    /// assert_eq!(group.ranks(), [2, 0]); // in the order given
    /// let twice = Group::new(&[1, 1]).unwrap_err();
    /// assert_eq!(twice.class(), ErrorClass::Arg);
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Group_incl")]
    pub fn new(ranks: &[usize]) -> Result<Group> {
        let mut seen = BTreeSet::new();
        for &r in ranks {
            if !seen.insert(r) {
                return Err(Error::arg(format!(
                    "rank {r} appears twice in the group; list each rank once"
                )));
            }
        }
        Ok(Group {
            ranks: ranks.to_vec(),
        })
    }

    /// Ranks `0..n`, in order: the group of a window over `n` ranks.
    pub(crate) fn first(n: usize) -> Group {
        Group {
            ranks: (0..n).collect(),
        }
    }

    /// The ranks, in order.
    pub fn ranks(&self) -> &[usize] {
        &self.ranks
    }

    /// Whether the group is empty.
    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }
}

fn ranks_of(group: &Group, size: usize) -> Result<Vec<usize>> {
    for &r in &group.ranks {
        if r >= size {
            return Err(Error::InvalidRank {
                rank: Rank::new(r as u32),
                size,
            });
        }
    }
    Ok(group.ranks.clone())
}

impl Window<'_> {
    /// Marks the epochs `kind` ([`ACCESS_GUARD`](crate::epoch_state::ACCESS_GUARD),
    /// [`EXPOSURE_GUARD`](crate::epoch_state::EXPOSURE_GUARD)) as owned by a guard
    /// (`on`), or no longer.
    pub(crate) fn set_guard(&self, kind: u8, on: bool) {
        self.epochs.apply(|ep| ep.set_guard(kind, on));
    }

    /// RMA_SYNC if a guard owns the epochs `kind` that `call` would end.
    fn check_unguarded(&self, call: &'static str, kind: u8) -> Result<()> {
        self.epochs.borrow().check_unguarded(call, kind)
    }

    /// Class WIN once the window was freed.
    pub(crate) fn check_alive(&self) -> Result<()> {
        self.epochs.borrow().check_alive()
    }

    /// Whether a passive-target epoch of this origin (lock or lock_all) covers `target`.
    pub(crate) fn passive_on(&self, target: usize) -> bool {
        self.epochs.borrow().passive_on(target)
    }

    /// Whether this origin holds an exclusive lock (taken for real) on `target`.
    #[inline]
    pub(crate) fn exclusive_on(&self, target: usize) -> bool {
        self.epochs.bits(target).unwrap_or(0) & EXCLUSIVE != 0
    }

    /// The target index of `rank` when a passive-target epoch of this origin covers it:
    /// the calls' fast path, which then needs no other epoch check. `None` (the null
    /// rank, a rank out of range, no such epoch, a dynamic or checked window) sends a
    /// call down the general path, which reports what is wrong.
    ///
    /// A world with a dead rank (its failure word set) takes the general path too,
    /// which reports it: one relaxed load per call.
    #[inline]
    pub(crate) fn fast_target(&self, rank: Rank) -> Option<usize> {
        let t = rank.index()?;
        (self.epochs.bits(t)? & HELD != 0 && self.failed.load(Ordering::Relaxed) == 0).then_some(t)
    }

    /// `Err` (class PROC_FAILED naming the dead rank, or INTERN) once the world has
    /// failed: RMA calls on a world with a dead member fail, even on the atomic
    /// transport, which never waits for a peer and so never checks liveness itself.
    #[inline]
    pub(crate) fn check_world(&self) -> Result<()> {
        if self.failed.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        self.world.check_failed()
    }

    /// Common checks of every RMA call: alive, rank, and an access epoch that covers
    /// the target (waiting for the target's post in a start epoch). `Ok(None)` for the
    /// null rank. `request`: request-based calls need a passive-target epoch.
    pub(crate) fn begin(&self, call: &'static str, rank: Rank) -> Result<Option<usize>> {
        self.begin_as(call, rank, false)
    }

    pub(crate) fn begin_as(
        &self,
        call: &'static str,
        rank: Rank,
        request: bool,
    ) -> Result<Option<usize>> {
        if let Some(t) = self.fast_target(rank) {
            return Ok(Some(t));
        }
        self.check_alive()?;
        self.check_world()?;
        let t = self.check_rank(rank)?;
        let reach = self.epochs.borrow().reach(call, t, request)?;
        if let (Reach::AfterPost(want), Some(t)) = (reach, t) {
            self.win.wait_posted(t, want)?;
            self.epochs.apply(|ep| ep.post_seen(t));
        }
        Ok(t)
    }

    /// An RMA call was issued: it is pending until a synchronization completes it.
    pub(crate) fn issued(&self) {
        self.epochs.apply(|ep| ep.issue());
    }

    /// Why a detach now could leave calls pending to the region (its exposure epoch is
    /// open, or this rank's own calls of a fence epoch are not yet complete), if so.
    pub(crate) fn detach_blocked(&self) -> Option<&'static str> {
        self.epochs.borrow().detach_blocked()
    }
}

impl Window<'_> {
    /// Ends what this rank still holds of a window it drops without freeing: every
    /// lock (after a flush), and an access epoch (its completes). Errors are ignored:
    /// the window is going away.
    fn leave_epochs(&self) {
        // over before their ends are issued (as unlock and complete have it)
        let (locks, start) = self.epochs.apply(|ep| ep.abandon());
        for (t, h) in locks {
            let _ = self.win.flush(Rank::new(t as u32));
            if !h.nocheck {
                let _ = self.win.release_lock(t, h.kind == LockType::Exclusive);
            }
        }
        for &t in start.iter().flatten() {
            let _ = self.win.flush(Rank::new(t as u32));
            let _ = self.win.complete_to(t);
        }
    }
}

impl Drop for Window<'_> {
    /// A window dropped without [`Window::free`] — an early return through `?` — on a
    /// backend whose drop is collective (under MPI: the MPI windows are freed as the
    /// window drops, a collective every rank's drop or free matches, which ends with
    /// PROC_FAILED on every rank if they entered different collectives) first releases
    /// the locks this rank holds and completes its access epoch, then tells every rank
    /// that it left, so that a rank waiting for its post or complete gets PROC_FAILED
    /// naming it instead of waiting forever. While the thread panics nothing is done
    /// (an MPI world aborts the job). On rma's own shared memory the drop ends the
    /// epochs the same way, then marks the window as left without waiting for anyone:
    /// the drop counts as this rank's free (a peer freeing the window passes, as MPI's
    /// `MPI_Win_free` at the drop lets it), a peer waiting for its post or complete gets
    /// PROC_FAILED, and the drop takes the free's place in the rank's collective calls
    /// (a peer that meets it with a fence gets PROC_FAILED).
    fn drop(&mut self) {
        if std::thread::panicking() || self.epochs.borrow().freed() || !self.win.leaves_on_drop() {
            return;
        }
        self.leave_epochs();
        self.win.depart();
    }
}

/// The result of a closing call's flush: `Err` for a failure that stops the call; for
/// a conflict the checker found (class RMA_CONFLICT: the flush itself completed),
/// `Ok` of that error, which the call returns once it has closed its epoch, so that
/// no lock or exposure stays held by a rank that goes on.
fn conflict_after(flushed: Result<()>) -> Result<Result<()>> {
    match flushed {
        Err(e) if e.class() == rma_core::ErrorClass::RmaConflict => Ok(Err(e)),
        Err(e) => Err(e),
        Ok(()) => Ok(Ok(())),
    }
}
