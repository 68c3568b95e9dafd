//! Passive-target epochs: lock / unlock, lock_all / unlock_all, the flush family and
//! sync.

use super::conflict_after;
use crate::epoch_state::ACCESS_GUARD;
use crate::window::Window;
use rma_core::{Assert, Epochs as _, LockType, Memory as _, Rank, Result, Transport};

impl Window<'_> {
    /// Starts a passive-target access epoch to `rank` with a shared or exclusive lock
    /// (MPI_Win_lock). Locking oneself blocks until granted; so does locking others
    /// (requests are served first come, first served). NOCHECK skips the lock.
    ///
    /// Errors: ASSERT; RANK; RMA_SYNC when the target is already locked by this origin,
    /// inside lock_all or a start epoch, or with fence-epoch calls pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, LockType, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
    ///     // a read-modify-write of rank 0's pair, one rank at a time
    ///     win.lock(LockType::Exclusive, Rank::new(0), Assert::NONE)?;
    ///     let mut pair = [0u64; 2];
    ///     win.get(&mut pair, Rank::new(0), 0)?;
    ///     win.flush(Rank::new(0))?; // the get is complete: `pair` holds the values
    ///     win.put(&[pair[0] + 1, pair[1] + 10], Rank::new(0), 0)?;
    ///     win.unlock(Rank::new(0))?;
    ///     world.barrier()?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u64>()?, [2, 20]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_lock")]
    pub fn lock(&self, kind: LockType, rank: impl Into<Rank>, assert: Assert) -> Result<()> {
        let rank: Rank = rank.into();
        let _span = tracing::debug_span!("lock", target = rank.raw()).entered();
        self.check_alive()?;
        self.check_unguarded("lock", ACCESS_GUARD)?;
        assert.check_lock()?;
        let Some(t) = self.check_rank(rank)? else {
            return Ok(());
        };
        self.epochs.borrow().check_lock(t)?;
        self.leave_fence("lock")?;
        let nocheck = assert.contains(Assert::NOCHECK);
        if !nocheck {
            self.win.acquire_lock(t, kind == LockType::Exclusive)?;
        }
        self.epochs.apply(|ep| ep.lock(t, kind, nocheck))
    }

    /// Ends the passive-target epoch to `rank`: completes every call to it at origin and
    /// target, then releases the lock (MPI_Win_unlock).
    ///
    /// Errors: RMA_SYNC if `rank` is not locked by this origin (or only through
    /// lock_all).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, LockType, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i32>(&world, 1, &Info::new())?;
    ///     if win.rank() == 1 {
    ///         win.lock(LockType::Shared, Rank::new(0), Assert::NONE)?;
    ///         win.put(&[42i32], Rank::new(0), 0)?;
    ///         win.unlock(Rank::new(0))?; // the put is complete at rank 0 when unlock returns
    ///     }
    ///     world.barrier()?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<i32>()?, [42]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_unlock")]
    pub fn unlock(&self, rank: impl Into<Rank>) -> Result<()> {
        let rank: Rank = rank.into();
        let _span = tracing::debug_span!("unlock", target = rank.raw()).entered();
        self.check_alive()?;
        self.check_unguarded("unlock", ACCESS_GUARD)?;
        let Some(t) = self.check_rank(rank)? else {
            return Ok(());
        };
        self.epochs.borrow().check_unlock(t)?;
        let conflict = conflict_after(self.win.flush(rank))?;
        // no longer held once its release is issued, even if that fails: a drop must
        // not release it twice
        let held = self.epochs.apply(|ep| ep.unlock(t))?;
        if !held.nocheck {
            self.win.release_lock(t, held.kind == LockType::Exclusive)?;
        }
        // every call of the passive epochs is complete now, if none is left open
        self.epochs.apply(|ep| ep.calls_completed());
        conflict
    }

    /// Starts a passive-target access epoch to every rank with shared locks
    /// (MPI_Win_lock_all).
    ///
    /// Errors: ASSERT; RMA_SYNC inside another lock, lock_all or start epoch, or with
    /// fence-epoch calls pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     win.lock_all(Assert::NONE)?; // a shared lock on every rank
    ///     for t in 0..win.size() {
    ///         win.accumulate(&[1u64 << win.rank()], Rank::new(t as u32), 0, Op::Bor)?;
    ///     }
    ///     win.unlock_all()?;
    ///     world.barrier()?;
    ///     assert_eq!(win.local_vec::<u64>()?, [0b11]); // both ranks' bits
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_lock_all")]
    pub fn lock_all(&self, assert: Assert) -> Result<()> {
        let _span = tracing::debug_span!("lock_all").entered();
        self.check_alive()?;
        self.check_unguarded("lock_all", ACCESS_GUARD)?;
        assert.check_lock()?;
        self.epochs.borrow().check_lock_all()?;
        self.leave_fence("lock_all")?;
        let nocheck = assert.contains(Assert::NOCHECK);
        let mut taken = vec![];
        for t in 0..self.size() {
            if !nocheck {
                if let Err(e) = self.win.acquire_lock(t, false) {
                    for &u in &taken {
                        // best effort: the error being returned says what broke
                        let _ = self.win.release_lock(u, false);
                    }
                    return Err(e);
                }
                taken.push(t);
            }
        }
        self.epochs.apply(|ep| ep.lock_all(nocheck))
    }

    /// Ends a lock_all epoch: completes every call, then releases every lock
    /// (MPI_Win_unlock_all). Errors: RMA_SYNC without lock_all.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let peer = 1 - win.rank();
    ///     win.lock_all(Assert::NONE)?;
    ///     win.put(&[win.rank() as u64 + 1], Rank::new(peer as u32), 0)?;
    ///     win.unlock_all()?; // the put is complete at the peer; every lock is released
    ///     world.barrier()?;
    ///     assert_eq!(win.local_vec::<u64>()?, [peer as u64 + 1]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_unlock_all")]
    pub fn unlock_all(&self) -> Result<()> {
        let _span = tracing::debug_span!("unlock_all").entered();
        self.check_alive()?;
        self.check_unguarded("unlock_all", ACCESS_GUARD)?;
        self.epochs.borrow().check_unlock_all()?;
        let conflict = conflict_after(self.win.flush_all())?;
        let held = self.epochs.apply(|ep| ep.unlock_all())?;
        let mut released = Ok(());
        for (t, h) in held {
            if !h.nocheck {
                // every lock is released even if one release fails
                let r = self.win.release_lock(t, false);
                released = released.and(r);
            }
        }
        released.and(conflict)
    }

    fn check_passive(&self, call: &'static str, target: Option<usize>) -> Result<()> {
        self.epochs.borrow().check_passive(call, target)
    }

    /// Completes every call to `rank` at origin and target (MPI_Win_flush). Errors:
    /// RMA_SYNC outside a passive-target epoch to `rank`.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, LockType, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     if win.rank() == 1 {
    ///         win.lock(LockType::Shared, Rank::new(0), Assert::NONE)?;
    ///         win.put(&[5u64], Rank::new(0), 0)?;
    ///         win.flush(Rank::new(0))?; // the put is complete at rank 0; the lock is still held
    ///         let mut back = [0u64];
    ///         win.get(&mut back, Rank::new(0), 0)?;
    ///         win.unlock(Rank::new(0))?;
    ///         assert_eq!(back, [5]);
    ///     }
    ///     world.barrier()?;
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_flush")]
    pub fn flush(&self, rank: impl Into<Rank>) -> Result<()> {
        let rank: Rank = rank.into();
        if self.fast_target(rank).is_some() {
            return self.win.flush(rank);
        }
        self.check_alive()?;
        self.check_world()?;
        let Some(t) = self.check_rank(rank)? else {
            return self.check_passive("flush", None);
        };
        self.check_passive("flush", Some(t))?;
        self.win.flush(rank)
    }

    /// Completes every call to every target (MPI_Win_flush_all).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i64>(&world, 1, &Info::new())?;
    ///     win.lock_all(Assert::NONE)?;
    ///     for t in 0..2 {
    ///         win.accumulate(&[1i64], Rank::new(t), 0, Op::Sum)?;
    ///     }
    ///     win.flush_all()?; // both sums are complete at their targets; the epoch stays open
    ///     world.barrier()?; // and so are the peer's
    ///     let mut mine = [0i64];
    ///     win.get(&mut mine, Rank::new(win.rank() as u32), 0)?;
    ///     win.unlock_all()?;
    ///     world.barrier()?;
    ///     assert_eq!(mine, [2]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_flush_all")]
    pub fn flush_all(&self) -> Result<()> {
        self.check_alive()?;
        self.check_world()?;
        self.check_passive("flush_all", None)?;
        self.win.flush_all()
    }

    /// Completes every call to `rank` at the origin: its buffers may be reused
    /// (MPI_Win_flush_local). Both transports finish with origin buffers before a call
    /// returns, so this only checks the epoch.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, LockType, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 4, &Info::new())?;
    ///     if win.rank() == 1 {
    ///         win.lock(LockType::Shared, Rank::new(0), Assert::NONE)?;
    ///         let mut buf = [1u64, 1];
    ///         win.put(&buf, Rank::new(0), 0)?;
    ///         win.flush_local(Rank::new(0))?; // `buf` may be reused (rank 0 may not have it yet)
    ///         buf = [2, 2];
    ///         win.put(&buf, Rank::new(0), 2)?;
    ///         win.unlock(Rank::new(0))?;
    ///     }
    ///     world.barrier()?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u64>()?, [1, 1, 2, 2]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_flush_local")]
    pub fn flush_local(&self, rank: impl Into<Rank>) -> Result<()> {
        let rank: Rank = rank.into();
        self.check_alive()?;
        let t = self.check_rank(rank)?;
        self.check_passive("flush_local", t)
    }

    /// [`Window::flush_local`] for every target (MPI_Win_flush_local_all).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let mut value = [win.rank() as u64 + 1];
    ///     win.lock_all(Assert::NONE)?;
    ///     for t in 0..2 {
    ///         win.accumulate(&value, Rank::new(t), 0, Op::Sum)?;
    ///     }
    ///     win.flush_local_all()?; // `value` may be reused
    ///     value[0] *= 10;
    ///     for t in 0..2 {
    ///         win.accumulate(&value, Rank::new(t), 0, Op::Sum)?;
    ///     }
    ///     win.unlock_all()?;
    ///     world.barrier()?;
    ///     assert_eq!(win.local_vec::<u64>()?, [33]); // 1 + 2 + 10 + 20
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_flush_local_all")]
    pub fn flush_local_all(&self) -> Result<()> {
        self.check_alive()?;
        self.check_passive("flush_local_all", None)
    }

    /// Synchronizes this rank's view of its own window memory with the public copy
    /// (MPI_Win_sync): a full memory fence (rma's windows are unified).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     win.lock_all(Assert::NONE)?;
    ///     if win.rank() == 1 {
    ///         win.put(&[9u64], Rank::new(0), 0)?;
    ///         win.flush(Rank::new(0))?;
    ///     }
    ///     world.barrier()?;
    ///     if win.rank() == 0 {
    ///         win.sync()?; // this rank's loads now see the put
    ///         assert_eq!(win.local_vec::<u64>()?, [9]);
    ///     }
    ///     win.unlock_all()?;
    ///     world.barrier()?;
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_sync")]
    pub fn sync(&self) -> Result<()> {
        self.check_alive()?;
        self.win.sync()
    }
}
