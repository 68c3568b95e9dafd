//! Epochs as values: guards for fence, lock, lock_all, start and post epochs.
//!
//! `win.lock_all_epoch(..)?` opens the epoch and returns a [`PassiveEpoch`]; its
//! [`target`](PassiveEpoch::target) handles make calls that need no epoch check at run
//! time ([`TargetHandle`]), and the guard ends the epoch with a
//! call that returns its error (`epoch.unlock()?`). While a guard lives, the window's
//! own calls that would open or end an access epoch (`win.lock(..)`, `win.lock_all(..)`,
//! `win.start(..)`, `win.fence(..)`, `win.unlock_all()`, ...; for a post guard, `post`,
//! `wait` and `test`) are refused with RMA_SYNC, and so is a second guard of the same
//! side, so the guard's handles never outlive their epoch in fact; the borrow checker
//! makes sure they do not outlive the guard either. One access guard and one exposure
//! guard can be open on a window at a time.
//!
//! A guard that is never dropped (`mem::forget`, `Box::leak`) leaves its epoch open
//! and owned: that is sound (nothing can reach memory outside the epoch), but the
//! window's calls that would end the epoch stay refused, so the window can only be
//! dropped, not freed; its locks stay held until then (the window's drop releases
//! them). On rma's shared memory a peer that asks for such a lock while this rank
//! waits in a collective call the peer has not entered gets PROC_FAILED (each would
//! wait for the other), and so does this rank.
//!
//! Dropping a guard without ending it is sound and does what the epoch allows
//! without another rank's help:
//!
//! - [`PassiveEpoch`]: the epoch ends (unlock or unlock_all) as if ended explicitly; an
//!   error is logged (`tracing::error!`), since a drop cannot return it;
//! - [`StartEpoch`]: the epoch is completed (complete), errors logged;
//! - [`PostEpoch`]: the exposure epoch ends with a wait, errors logged;
//! - [`FenceEpoch`]: nothing collective happens in a drop, so the fence epoch stays
//!   open in the window, and the next `win.fence(..)` (or another fence guard) closes
//!   it;
//! - while the thread panics, nothing is done (as for a dropped window: the other ranks
//!   see this rank as dead).

use crate::epoch_state::{ACCESS_GUARD, EXPOSURE_GUARD};
use crate::handle::TargetHandle;
use crate::sync::Group;
use crate::window::Window;
use rma_core::{Assert, Error, LockType, Rank, Result, Transport};

/// Logs the error of an epoch a guard ended as it dropped.
fn log_drop_error(what: &str, r: Result<()>) {
    if let Err(e) = r {
        tracing::error!("{what} at a guard's drop failed: {e} ({})", e.class());
    }
}

/// A passive-target access epoch (lock or lock_all) owned by a value.
///
/// Its handles cannot be used once it ended (they borrow it; `unlock` consumes it):
/// ```compile_fail
/// use rma_win::{Assert, Info, Rank, Window};
/// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
///     let epoch = win.lock_all_epoch(Assert::NONE)?;
///     let h = epoch.target(Rank::new(0))?;
///     epoch.unlock()?;
///     h.put(&[1u64], 0) // error[E0505]: cannot move out of `epoch` because it is borrowed
/// })?;
/// # Ok::<(), rma_win::Error>(())
/// ```
/// nor outlive their window, nor let the window be freed while the epoch is open:
/// ```compile_fail
/// use rma_win::{Assert, Info, Rank, Window};
/// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
///     let mut win = Window::allocate::<u64>(&world, 1, &Info::new())?;
///     let epoch = win.lock_all_epoch(Assert::NONE)?;
///     win.free()?; // error[E0502]: cannot borrow `win` as mutable
///     epoch.unlock()
/// })?;
/// # Ok::<(), rma_win::Error>(())
/// ```
/// ```compile_fail
/// use rma_win::{Assert, Info, Rank, Window};
/// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
///     let h;
///     {
///         let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
///         let epoch = win.lock_all_epoch(Assert::NONE)?;
///         h = epoch.target(Rank::new(0))?; // error[E0597]: `epoch` does not live long enough
///     }
///     h.put(&[1u64], 0)
/// })?;
/// # Ok::<(), rma_win::Error>(())
/// ```
/// Every call is a method of the handle itself, so no API lets a handle of one
/// window meet another window.
#[must_use = "dropping the epoch ends it at once; end it with unlock() to see its error"]
pub struct PassiveEpoch<'a, 'w> {
    win: &'a Window<'w>,
    /// The locked target (lock), or `None` (lock_all).
    only: Option<Rank>,
    ended: bool,
}

impl std::fmt::Debug for PassiveEpoch<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PassiveEpoch")
            .field("only", &self.only)
            .field("ended", &self.ended)
            .finish()
    }
}

impl<'w> Window<'w> {
    /// [`Window::lock_all`] as a value: the epoch ends with
    /// [`PassiveEpoch::unlock`] (or when the value drops), and its
    /// [`target`](PassiveEpoch::target) handles make calls without epoch checks.
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let epoch = win.lock_all_epoch(Assert::NONE)?;
    ///     let zero = epoch.target(Rank::new(0))?; // checked once
    ///     let ticket = zero.fetch_add(1u64, 0)?; // no epoch check per call
    ///     assert!(ticket < 2);
    ///     epoch.unlock()?;
    ///     world.barrier()
    /// })?
    /// .into_iter()
    /// .collect::<rma_win::Result<Vec<_>>>()?; // every rank's result
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_lock_all")]
    pub fn lock_all_epoch(&self, assert: Assert) -> Result<PassiveEpoch<'_, 'w>> {
        self.lock_all(assert)?;
        self.set_guard(ACCESS_GUARD, true);
        Ok(PassiveEpoch {
            win: self,
            only: None,
            ended: false,
        })
    }

    /// [`Window::lock`] as a value (see [`Window::lock_all_epoch`]); its handles reach
    /// `rank` only.
    #[doc(alias = "MPI_Win_lock")]
    pub fn lock_epoch(
        &self,
        kind: LockType,
        rank: impl Into<Rank>,
        assert: Assert,
    ) -> Result<PassiveEpoch<'_, 'w>> {
        let rank: Rank = rank.into();
        if rank.is_null() {
            return Err(Error::InvalidRank {
                rank,
                size: self.size(),
            });
        }
        self.lock(kind, rank, assert)?;
        self.set_guard(ACCESS_GUARD, true);
        Ok(PassiveEpoch {
            win: self,
            only: Some(rank),
            ended: false,
        })
    }

    /// [`Window::fence`] as a value: a fence (collective) that opens an epoch, ended
    /// by the guard's own [`fence`](FenceEpoch::fence) or [`end`](FenceEpoch::end).
    /// NOSUCCEED is refused (class ASSERT): no epoch follows such a fence.
    #[doc(alias = "MPI_Win_fence")]
    pub fn fence_epoch(&self, assert: Assert) -> Result<FenceEpoch<'_, 'w>> {
        if assert.contains(Assert::NOSUCCEED) {
            return Err(Error::InvalidAssert {
                call: "fence_epoch",
                bits: assert.bits(),
                allowed: (Assert::NOSTORE | Assert::NOPUT | Assert::NOPRECEDE).bits(),
            });
        }
        self.fence(assert)?;
        self.set_guard(ACCESS_GUARD, true);
        Ok(FenceEpoch {
            win: self,
            ended: false,
        })
    }

    /// [`Window::start`] as a value: an access epoch to `group`, completed by
    /// [`StartEpoch::complete`] (or when the value drops).
    #[doc(alias = "MPI_Win_start")]
    pub fn start_epoch(&self, group: &Group, assert: Assert) -> Result<StartEpoch<'_, 'w>> {
        self.start(group, assert)?;
        self.set_guard(ACCESS_GUARD, true);
        Ok(StartEpoch {
            win: self,
            ended: false,
        })
    }

    /// [`Window::post`] as a value: an exposure epoch to `group`, ended by
    /// [`PostEpoch::wait`] (or when the value drops, which waits).
    #[doc(alias = "MPI_Win_post")]
    pub fn post_epoch(&self, group: &Group, assert: Assert) -> Result<PostEpoch<'_, 'w>> {
        self.post(group, assert)?;
        self.set_guard(EXPOSURE_GUARD, true);
        Ok(PostEpoch {
            win: self,
            ended: false,
        })
    }
}

impl<'w> PassiveEpoch<'_, 'w> {
    /// A handle on `rank`'s window, checked once: the rank (in the window, covered by
    /// this epoch, not the null rank). Calls through it check only what varies per
    /// call.
    pub fn target(&self, rank: impl Into<Rank>) -> Result<TargetHandle<'_, 'w>> {
        let rank: Rank = rank.into();
        if let Some(only) = self.only {
            if only != rank {
                self.win.check_rank(rank)?;
                return Err(Error::sync(
                    "target",
                    format!(
                        "this epoch locks rank {} only; open one on rank {} (or lock_all) to reach it",
                        only.raw(),
                        rank.raw()
                    ),
                ));
            }
        }
        TargetHandle::new(self.win, rank, false)
    }

    /// Completes every call of this epoch at origin and target (flush, or flush_all
    /// for lock_all).
    #[doc(alias("MPI_Win_flush", "MPI_Win_flush_all"))]
    pub fn flush(&self) -> Result<()> {
        self.win.check_world()?;
        match self.only {
            Some(r) => self.win.win.flush(r),
            None => self.win.win.flush_all(),
        }
    }

    /// Ends the epoch: completes every call, then releases the lock(s).
    #[doc(alias("MPI_Win_unlock", "MPI_Win_unlock_all"))]
    pub fn unlock(mut self) -> Result<()> {
        self.end()
    }

    fn end(&mut self) -> Result<()> {
        self.ended = true;
        self.win.set_guard(ACCESS_GUARD, false);
        match self.only {
            Some(r) => self.win.unlock(r),
            None => self.win.unlock_all(),
        }
    }
}

impl Drop for PassiveEpoch<'_, '_> {
    fn drop(&mut self) {
        if !self.ended && !std::thread::panicking() {
            let r = self.end();
            log_drop_error("unlock", r);
        }
    }
}

/// A fence epoch owned by a value (see [`Window::fence_epoch`]).
///
/// A handle of one fence epoch cannot be used after the next fence:
/// ```compile_fail
/// use rma_win::{Assert, Info, Rank, Window};
/// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
///     let epoch = win.fence_epoch(Assert::NONE)?;
///     let h = epoch.target(Rank::new(0))?;
///     let next = epoch.fence(Assert::NONE)?;
///     h.put(&[1u64], 0)?; // error[E0505]: cannot move out of `epoch` because it is borrowed
///     next.end(Assert::NONE)
/// })?;
/// # Ok::<(), rma_win::Error>(())
/// ```
/// (Without the last put it compiles and runs:)
/// ```
/// use rma_win::{Assert, Info, Rank, Window};
/// rma_win::run_threads(1, |world| -> rma_win::Result<()> {
///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
///     let epoch = win.fence_epoch(Assert::NONE)?;
///     let h = epoch.target(Rank::new(0))?;
///     h.put(&[1u64], 0)?;
///     let next = epoch.fence(Assert::NONE)?;
///     next.target(Rank::new(0))?.add(&[1u64], 0)?;
///     next.end(Assert::NONE)
/// })?
/// .into_iter()
/// .collect::<rma_win::Result<Vec<_>>>()?; // every rank's result
/// # Ok::<(), rma_win::Error>(())
/// ```
#[must_use = "a fence epoch ends with its fence() or end()"]
pub struct FenceEpoch<'a, 'w> {
    win: &'a Window<'w>,
    ended: bool,
}

impl std::fmt::Debug for FenceEpoch<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FenceEpoch")
            .field("ended", &self.ended)
            .finish()
    }
}

impl<'a, 'w> FenceEpoch<'a, 'w> {
    /// A handle on `rank`'s window (any rank of the window), checked once.
    pub fn target(&self, rank: impl Into<Rank>) -> Result<TargetHandle<'_, 'w>> {
        let rank: Rank = rank.into();
        TargetHandle::new(self.win, rank, true)
    }

    /// The next fence (collective): completes this epoch's calls and opens the next
    /// epoch, returned as a new guard. The handles of this one cannot be used after
    /// it (they borrow this guard, which this call consumes).
    #[doc(alias = "MPI_Win_fence")]
    pub fn fence(mut self, assert: Assert) -> Result<FenceEpoch<'a, 'w>> {
        let win = self.win;
        self.close(assert)?;
        win.set_guard(ACCESS_GUARD, true);
        Ok(FenceEpoch { win, ended: false })
    }

    /// The closing fence (collective, with NOSUCCEED added): no epoch follows.
    #[doc(alias = "MPI_Win_fence")]
    pub fn end(mut self, assert: Assert) -> Result<()> {
        self.close(assert | Assert::NOSUCCEED)
    }

    fn close(&mut self, assert: Assert) -> Result<()> {
        self.ended = true;
        self.win.set_guard(ACCESS_GUARD, false);
        self.win.fence(assert)
    }
}

impl Drop for FenceEpoch<'_, '_> {
    /// No collective call in a drop: the fence epoch stays open in the window, for the
    /// next `win.fence(..)`.
    fn drop(&mut self) {
        if !self.ended {
            self.win.set_guard(ACCESS_GUARD, false);
            tracing::debug!("a fence epoch guard dropped without its fence: the epoch stays open");
        }
    }
}

/// An access epoch of post/start/complete/wait owned by a value (see
/// [`Window::start_epoch`]).
#[must_use = "dropping the epoch completes it at once; end it with complete() to see its error"]
pub struct StartEpoch<'a, 'w> {
    win: &'a Window<'w>,
    ended: bool,
}

impl std::fmt::Debug for StartEpoch<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartEpoch")
            .field("ended", &self.ended)
            .finish()
    }
}

impl<'w> StartEpoch<'_, 'w> {
    /// A handle on `rank`, which must be in the start group; waits for its post if
    /// this epoch has not seen it yet.
    pub fn target(&self, rank: impl Into<Rank>) -> Result<TargetHandle<'_, 'w>> {
        let rank: Rank = rank.into();
        TargetHandle::new(self.win, rank, true)
    }

    /// Ends the epoch (MPI_Win_complete).
    #[doc(alias = "MPI_Win_complete")]
    pub fn complete(mut self) -> Result<()> {
        self.end()
    }

    fn end(&mut self) -> Result<()> {
        self.ended = true;
        self.win.set_guard(ACCESS_GUARD, false);
        self.win.complete()
    }
}

impl Drop for StartEpoch<'_, '_> {
    fn drop(&mut self) {
        if !self.ended && !std::thread::panicking() {
            let r = self.end();
            log_drop_error("complete", r);
        }
    }
}

/// An exposure epoch owned by a value (see [`Window::post_epoch`]).
#[must_use = "dropping the epoch waits for its origins; end it with wait() to see its error"]
pub struct PostEpoch<'a, 'w> {
    win: &'a Window<'w>,
    ended: bool,
}

impl std::fmt::Debug for PostEpoch<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostEpoch")
            .field("ended", &self.ended)
            .finish()
    }
}

impl PostEpoch<'_, '_> {
    /// Waits until every origin of the group completed (MPI_Win_wait).
    #[doc(alias = "MPI_Win_wait")]
    pub fn wait(mut self) -> Result<()> {
        if self.ended {
            return Ok(());
        }
        self.end()
    }

    /// `Ok(true)` once every origin completed, and the epoch is then over (a later
    /// `wait` or drop does nothing more); never blocks (MPI_Win_test).
    #[doc(alias = "MPI_Win_test")]
    pub fn test(&mut self) -> Result<bool> {
        if self.ended {
            return Ok(true);
        }
        self.win.set_guard(EXPOSURE_GUARD, false);
        let done = self.win.test();
        match &done {
            Ok(true) => self.ended = true,
            // an error found once every origin completed (the checker's) is returned
            // with the epoch over
            Err(_) if !self.win.epochs.borrow().post_open() => self.ended = true,
            _ => self.win.set_guard(EXPOSURE_GUARD, true),
        }
        done
    }

    fn end(&mut self) -> Result<()> {
        self.ended = true;
        self.win.set_guard(EXPOSURE_GUARD, false);
        self.win.wait()
    }
}

impl Drop for PostEpoch<'_, '_> {
    fn drop(&mut self) {
        if !self.ended && !std::thread::panicking() {
            let r = self.end();
            log_drop_error("wait", r);
        }
    }
}
