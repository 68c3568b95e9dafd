//! Synchronization calls of [`MpiWindow`]: fence, passive target (lock, unlock,
//! lock_all, unlock_all, the flush family, sync) and active target with groups (post,
//! start, complete, wait, test).

use crate::agree::Entry;
use crate::pending::{Copies, Mark};
use crate::window::MpiWindow;
use rma_core::{Assert, Error, LockType, Rank, Result};
use rma_mpi_sys::{Api, Call};
use std::ffi::c_int;

/// The assertion bits each call accepts, for error messages.
const FENCE_BITS: u32 = 2 | 4 | 8 | 16;
const LOCK_BITS: u32 = 1;
const POST_BITS: u32 = 1 | 2 | 4;
const START_BITS: u32 = 1;

/// No call context: for a turn that issues nothing.
pub(crate) fn no_call() -> Call {
    Call::new("")
}

impl MpiWindow<'_> {
    fn check_rc(&self, rc: c_int, call: Call) -> Result<()> {
        self.world().check(rc, call)
    }

    /// Fences (MPI_Win_fence): completes every call issued since the previous fence and
    /// opens the next epoch unless `assert` has NOSUCCEED. Collective.
    #[doc(alias = "MPI_Win_fence")]
    pub fn fence(&mut self, assert: Assert) -> Result<()> {
        assert.check_fence()?;
        self.epochs.check_fence()?;
        let (bits, win) = (assert.bits(), self.handle());
        let world = self.world();
        let rc = {
            let _one = world.collective();
            world.agree(Entry::Fence(self.number()))?;
            // SAFETY: the window is live; plain integers in.
            world.mpi(|api| unsafe { (api.win_fence)(bits as c_int, win) })
        };
        self.check_rc(rc, Call::new("MPI_Win_fence").assert(bits, FENCE_BITS))?;
        self.epochs.fenced(!assert.contains(Assert::NOSUCCEED));
        self.pending.closed(None);
        Ok(())
    }

    /// Starts a passive-target epoch on `rank` (MPI_Win_lock). [`Rank::NULL`] does
    /// nothing.
    #[doc(alias = "MPI_Win_lock")]
    pub fn lock(&mut self, kind: LockType, rank: Rank, assert: Assert) -> Result<()> {
        assert.check_lock()?;
        if rank.is_null() {
            return Ok(());
        }
        let r = self.world().c_rank(rank)?;
        self.epochs.check_lock(r as usize)?;
        self.check_fence_drained("lock")?;
        let (bits, win) = (assert.bits(), self.handle());
        let exclusive = c_int::from(kind == LockType::Exclusive);
        // SAFETY: the window is live; plain integers in.
        let rc = self
            .world()
            .mpi(|api| unsafe { (api.win_lock)(exclusive, r, bits as c_int, win) });
        self.check_rc(
            rc,
            Call::new("MPI_Win_lock").rank(rank).assert(bits, LOCK_BITS),
        )?;
        self.epochs.locked(r as usize, kind);
        Ok(())
    }

    /// Ends the passive-target epoch on `rank`, completing every call to it
    /// (MPI_Win_unlock). [`Rank::NULL`] does nothing.
    #[doc(alias = "MPI_Win_unlock")]
    pub fn unlock(&mut self, rank: Rank) -> Result<()> {
        if rank.is_null() {
            return Ok(());
        }
        let r = self.world().c_rank(rank)?;
        self.epochs.check_unlock(r as usize)?;
        let win = self.handle();
        // SAFETY: the window is live and `rank` locked by this process.
        let rc = self.world().mpi(|api| unsafe { (api.win_unlock)(r, win) });
        self.check_rc(rc, Call::new("MPI_Win_unlock").rank(rank))?;
        self.epochs.unlocked(r as usize);
        self.pending.closed(Some(r));
        Ok(())
    }

    /// Starts a shared passive-target epoch on every rank (MPI_Win_lock_all).
    #[doc(alias = "MPI_Win_lock_all")]
    pub fn lock_all(&mut self, assert: Assert) -> Result<()> {
        assert.check_lock()?;
        self.epochs.check_lock_all()?;
        self.check_fence_drained("lock_all")?;
        let (bits, win) = (assert.bits(), self.handle());
        // SAFETY: the window is live; plain integers in.
        let rc = self
            .world()
            .mpi(|api| unsafe { (api.win_lock_all)(bits as c_int, win) });
        self.check_rc(rc, Call::new("MPI_Win_lock_all").assert(bits, LOCK_BITS))?;
        self.epochs.set_lock_all(true);
        Ok(())
    }

    /// Ends the lock_all epoch, completing every call (MPI_Win_unlock_all).
    #[doc(alias = "MPI_Win_unlock_all")]
    pub fn unlock_all(&mut self) -> Result<()> {
        self.epochs.check_unlock_all()?;
        let win = self.handle();
        // SAFETY: the window is live and lock_all held.
        let rc = self.world().mpi(|api| unsafe { (api.win_unlock_all)(win) });
        self.check_rc(rc, Call::new("MPI_Win_unlock_all"))?;
        self.epochs.set_lock_all(false);
        self.pending.closed(None);
        Ok(())
    }

    /// Completes every call issued to `rank`, at origin and target (MPI_Win_flush).
    /// Needs a passive-target epoch covering `rank`. Nothing issued to `rank` since it
    /// was last completed: nothing to do, and MPI is not called.
    #[doc(alias = "MPI_Win_flush")]
    pub fn flush(&self, rank: Rank) -> Result<()> {
        self.flush_one(rank, "flush", false)
    }

    /// Completes every call issued to `rank` locally: origin buffers may be reused,
    /// results are in place (MPI_Win_flush_local).
    #[doc(alias = "MPI_Win_flush_local")]
    pub fn flush_local(&self, rank: Rank) -> Result<()> {
        self.flush_one(rank, "flush_local", true)
    }

    fn flush_one(&self, rank: Rank, name: &'static str, local: bool) -> Result<()> {
        if rank.is_null() {
            return Ok(());
        }
        self.need_passive(rank, name)?;
        let r = self.world().c_rank(rank)?;
        self.flush_rank_now(r, local, false)
    }

    /// MPI_Win_flush (`local`: MPI_Win_flush_local) of `r`, which a passive epoch
    /// covers. A remote flush of a clean target is skipped unless `always`.
    #[inline]
    pub(crate) fn flush_rank_now(&self, r: c_int, local: bool, always: bool) -> Result<()> {
        let mark = self.pending.mark(r);
        self.flush_rank_after(r, mark, local, always, no_call, |_, _| 0, |_| ())?;
        Ok(())
    }

    /// [`MpiWindow::flush_rank_now`] right after `issue`, an MPI call described by
    /// `call` (built only if it fails), in the same turn of the world's gate;
    /// `|_, _| 0` issues nothing. A fetching call
    /// takes its buffers from [`Copies::landing`] (memory the window owns) and, once
    /// the flush succeeded, `land` copies its result out in the same turn; if the
    /// flush fails after the call was issued, the landing is left to MPI for good
    /// (it may still write it later), never freed. `land`'s value, or `None` when a
    /// flush of a clean target was skipped. The target's dirty mark (`mark`, `r`'s) is
    /// cleared before and restored if either call fails; the copies of the calls the
    /// flush completed are dropped after it.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn flush_rank_after<R>(
        &self,
        r: c_int,
        mark: Mark<'_>,
        local: bool,
        always: bool,
        call: impl FnOnce() -> Call,
        issue: impl FnOnce(&Api, &mut Copies) -> c_int,
        land: impl FnOnce(&Copies) -> R,
    ) -> Result<Option<R>> {
        debug_assert!(mark.is(self.pending.mark(r)), "the mark is r's");
        if !local && !always && !mark.is_set() {
            return Ok(None);
        }
        let win = self.handle();
        let mut was_dirty = false;
        let mut landed = None;
        let (issued, flushed) = self.world().mpi_turned(
            self.pending.turned(),
            #[inline(always)]
            |api, copies| {
                was_dirty = !local && mark.take();
                if !local && !was_dirty && !always {
                    return (0, 0); // another thread's flush came first
                }
                let rc = issue(api, copies);
                if rc != 0 {
                    copies.landed(); // nothing was issued: the landing is free
                    return (rc, 0);
                }
                // SAFETY: the window is live and a passive epoch covers `r` (callers').
                let rc = unsafe {
                    if local {
                        (api.win_flush_local)(r, win)
                    } else {
                        (api.win_flush)(r, win)
                    }
                };
                if rc == 0 {
                    copies.release(Some(r));
                    landed = Some(land(copies));
                    copies.landed();
                } else {
                    copies.abandon_landing(r);
                }
                (0, rc)
            },
        );
        if issued != 0 || flushed != 0 {
            if was_dirty || (issued == 0 && !local) {
                // set back (or set for the call issued in the turn): the calls it
                // stands for may be incomplete, and the next flush must not be skipped
                mark.set();
            }
            if issued != 0 {
                return Err(self.issue_error(issued, call));
            }
            self.flush_failed(r, local, flushed)?;
        }
        Ok(landed)
    }

    /// The error of a call that MPI refused with `rc`.
    #[cold]
    #[inline(never)]
    fn issue_error(&self, rc: c_int, call: impl FnOnce() -> Call) -> Error {
        match self.check_rc(rc, call()) {
            Err(e) => e,
            Ok(()) => Error::Internal {
                reason: "a failed MPI call's error was lost".into(),
            },
        }
    }

    /// A fetching call and the flush that completes it, in one turn of the world's
    /// gate (see [`MpiWindow::flush_rank_after`]): `issue` gets a landing of `len`
    /// bytes that the window owns (`pending.rs`'s `Landing`) for its buffers, which a
    /// failed flush leaves to MPI for good; `land` reads the result from it after the
    /// flush, in the same turn, given the landing's address (its bytes are complete
    /// then, and no reference to them exists). `mark` is `r`'s.
    #[inline(always)]
    pub(crate) fn fetch_flushed<R>(
        &self,
        r: c_int,
        mark: Mark<'_>,
        len: usize,
        call: impl FnOnce() -> Call,
        issue: impl FnOnce(&Api, *mut u8) -> c_int,
        land: impl FnOnce(*const u8) -> R,
    ) -> Result<R> {
        let got = self.flush_rank_after(
            r,
            mark,
            false,
            true,
            call,
            #[inline(always)]
            |api, copies| issue(api, copies.landing(len)),
            #[inline(always)]
            |copies| land(copies.turn_landing()),
        )?;
        // `always`: the flush is never skipped, so a success has landed
        got.ok_or_else(|| Error::Internal {
            reason: "the flush completing a fetching call was skipped".into(),
        })
    }

    /// The error of [`MpiWindow::flush_rank_after`] whose flush returned the MPI error
    /// code `flushed` (the caller set the target's mark back).
    #[cold]
    #[inline(never)]
    fn flush_failed(&self, r: c_int, local: bool, flushed: c_int) -> Result<()> {
        let rank = Rank::new(r as u32);
        let mpi = if local {
            "MPI_Win_flush_local"
        } else {
            "MPI_Win_flush"
        };
        self.check_rc(flushed, Call::new(mpi).rank(rank))
    }

    /// Completes every call issued to any rank, at origin and target
    /// (MPI_Win_flush_all); skipped when nothing was issued since.
    #[doc(alias = "MPI_Win_flush_all")]
    pub fn flush_all(&self) -> Result<()> {
        self.epochs.need_any_passive("flush_all")?;
        self.flush_every_now(false)
    }

    /// Completes every call issued to any rank locally (MPI_Win_flush_local_all).
    #[doc(alias = "MPI_Win_flush_local_all")]
    pub fn flush_local_all(&self) -> Result<()> {
        self.epochs.need_any_passive("flush_local_all")?;
        self.flush_every_now(true)
    }

    /// MPI_Win_flush_all (`local`: MPI_Win_flush_local_all) in an open passive epoch;
    /// the remote one is skipped when no target is dirty.
    pub(crate) fn flush_every_now(&self, local: bool) -> Result<()> {
        if !local && !self.pending.any_dirty() {
            return Ok(());
        }
        let win = self.handle();
        let mut was_dirty = false;
        let rc = self
            .world()
            .mpi_turned(self.pending.turned(), |api, copies| {
                if !local {
                    was_dirty = self.pending.take_all_dirty();
                    if !was_dirty {
                        return 0; // another thread's flush came first
                    }
                }
                // SAFETY: the window is live and a passive epoch is open (callers').
                let rc = unsafe {
                    if local {
                        (api.win_flush_local_all)(win)
                    } else {
                        (api.win_flush_all)(win)
                    }
                };
                if rc == 0 {
                    copies.release(None);
                }
                rc
            });
        if rc != 0 {
            if was_dirty {
                self.pending.restore_all_dirty();
            }
            let mpi = if local {
                "MPI_Win_flush_local_all"
            } else {
                "MPI_Win_flush_all"
            };
            return self.check_rc(rc, Call::new(mpi));
        }
        Ok(())
    }

    /// Synchronizes the private and public copies of the local window (MPI_Win_sync).
    #[doc(alias = "MPI_Win_sync")]
    pub fn sync(&self) -> Result<()> {
        let win = self.handle();
        // SAFETY: the window is live.
        let rc = self.world().mpi(|api| unsafe { (api.win_sync)(win) });
        self.check_rc(rc, Call::new("MPI_Win_sync"))
    }

    /// The ranks of `group` as MPI ints, checked to be distinct ranks of the world,
    /// and their membership by rank.
    fn group(&self, group: &[Rank]) -> Result<(Vec<c_int>, Box<[bool]>)> {
        let mut member = vec![false; self.size()].into_boxed_slice();
        let mut ranks = Vec::with_capacity(group.len());
        for &rank in group {
            let r = self.world().c_rank(rank)?;
            if std::mem::replace(&mut member[r as usize], true) {
                return Err(Error::arg(format!("{rank} appears twice in the group")));
            }
            ranks.push(r);
        }
        Ok((ranks, member))
    }

    /// Opens an exposure epoch for the origins in `group` (MPI_Win_post).
    #[doc(alias = "MPI_Win_post")]
    pub fn post(&mut self, group: &[Rank], assert: Assert) -> Result<()> {
        assert.check_post()?;
        self.epochs.check_post()?;
        let (ranks, _) = self.group(group)?;
        let (bits, win) = (assert.bits(), self.handle());
        // SAFETY: `ranks` holds `ranks.len()` distinct ranks of the window's group.
        let rc = self.world().mpi(|api| unsafe {
            (api.win_post)(ranks.as_ptr(), ranks.len() as c_int, bits as c_int, win)
        });
        self.check_rc(rc, Call::new("MPI_Win_post").assert(bits, POST_BITS))?;
        self.epochs.set_exposure(true);
        Ok(())
    }

    /// Opens an access epoch to the targets in `group` (MPI_Win_start).
    #[doc(alias = "MPI_Win_start")]
    pub fn start(&mut self, group: &[Rank], assert: Assert) -> Result<()> {
        assert.check_start()?;
        self.epochs.check_start()?;
        self.check_fence_drained("start")?;
        let (ranks, member) = self.group(group)?;
        let (bits, win) = (assert.bits(), self.handle());
        // SAFETY: `ranks` holds `ranks.len()` distinct ranks of the window's group.
        let rc = self.world().mpi(|api| unsafe {
            (api.win_start)(ranks.as_ptr(), ranks.len() as c_int, bits as c_int, win)
        });
        self.check_rc(rc, Call::new("MPI_Win_start").assert(bits, START_BITS))?;
        self.epochs.set_access(Some(member));
        Ok(())
    }

    /// Closes the access epoch, completing its calls (MPI_Win_complete).
    #[doc(alias = "MPI_Win_complete")]
    pub fn complete(&mut self) -> Result<()> {
        self.epochs.check_complete()?;
        let win = self.handle();
        // SAFETY: the window is live and an access epoch open.
        let rc = self.world().mpi(|api| unsafe { (api.win_complete)(win) });
        self.check_rc(rc, Call::new("MPI_Win_complete"))?;
        self.epochs.set_access(None);
        self.pending.closed(None);
        Ok(())
    }

    /// Waits until every origin of the exposure epoch has completed, closing it
    /// (MPI_Win_wait).
    #[doc(alias = "MPI_Win_wait")]
    pub fn wait(&mut self) -> Result<()> {
        self.epochs.check_wait("wait")?;
        let win = self.handle();
        // SAFETY: the window is live and an exposure epoch open.
        let rc = self.world().mpi(|api| unsafe { (api.win_wait)(win) });
        self.check_rc(rc, Call::new("MPI_Win_wait"))?;
        self.epochs.set_exposure(false);
        Ok(())
    }

    /// Whether every origin of the exposure epoch has completed; if so the epoch is
    /// closed, as by [`MpiWindow::wait`] (MPI_Win_test).
    #[doc(alias = "MPI_Win_test")]
    pub fn test(&mut self) -> Result<bool> {
        self.epochs.check_wait("test")?;
        let win = self.handle();
        let mut flag: c_int = 0;
        // SAFETY: the window is live and an exposure epoch open; `flag` is valid.
        let rc = self
            .world()
            .mpi(|api| unsafe { (api.win_test)(win, &mut flag) });
        self.check_rc(rc, Call::new("MPI_Win_test"))?;
        if flag != 0 {
            self.epochs.set_exposure(false);
        }
        Ok(flag != 0)
    }
}
