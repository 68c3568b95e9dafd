//! Active-target epochs with groups: post / start / complete / wait / test.

use super::{conflict_after, ranks_of, Group};
use crate::epoch_state::{ACCESS_GUARD, EXPOSURE_GUARD};
use crate::window::Window;
use rma_core::{Assert, Epochs as _, Rank, Result, Transport};

impl Window<'_> {
    /// Exposes this rank's window to the origins in `group` (MPI_Win_post); returns
    /// without waiting for them. Valid assertions: NOCHECK, NOSTORE, NOPUT.
    ///
    /// Errors: ASSERT; RANK; RMA_SYNC inside another post epoch or with fence-epoch
    /// calls pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Group, Info, Op, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     if win.rank() == 0 {
    ///         win.post(&Group::new(&[1, 2])?, Assert::NONE)?; // returns at once
    ///         win.wait()?; // until ranks 1 and 2 completed
    ///         assert_eq!(win.local_vec::<u64>()?, [3]);
    ///     } else {
    ///         win.start(&Group::new(&[0])?, Assert::NONE)?;
    ///         win.accumulate(&[win.rank() as u64], Rank::new(0), 0, Op::Sum)?;
    ///         win.complete()?;
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_post")]
    pub fn post(&self, group: &Group, assert: Assert) -> Result<()> {
        let _span = tracing::debug_span!("post", ranks = group.ranks.len()).entered();
        self.check_alive()?;
        self.check_unguarded("post", EXPOSURE_GUARD)?;
        assert.check_post()?;
        let ranks = ranks_of(group, self.size())?;
        self.epochs.borrow().check_post()?;
        // the checker's stamp first: a post refused here has changed nothing
        if let Some(c) = &self.check {
            c.exposure_begins()?;
        }
        self.leave_fence("post")?;
        for &o in &ranks {
            self.win.post_to(o)?;
        }
        self.epochs.apply(|ep| ep.post(ranks))
    }

    /// Starts an access epoch to the targets in `group` (MPI_Win_start). It does not
    /// wait for their posts: the first call to a target (or complete) does, so start
    /// before post on disjoint groups cannot deadlock. Valid assertion: NOCHECK.
    ///
    /// Errors: ASSERT; RANK; RMA_SYNC for a nested start, inside a passive-target
    /// epoch, or with fence-epoch calls pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Group, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let peer = 1 - win.rank();
    ///     let group = Group::new(&[peer])?;
    ///     win.post(&group, Assert::NONE)?; // expose to the peer
    ///     win.start(&group, Assert::NONE)?; // access the peer: the put waits for its post
    ///     win.put(&[win.rank() as u64 + 1], Rank::new(peer as u32), 0)?;
    ///     win.complete()?;
    ///     win.wait()?;
    ///     assert_eq!(win.local_vec::<u64>()?, [peer as u64 + 1]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_start")]
    pub fn start(&self, group: &Group, assert: Assert) -> Result<()> {
        let _span = tracing::debug_span!("start", ranks = group.ranks.len()).entered();
        self.check_alive()?;
        self.check_unguarded("start", ACCESS_GUARD)?;
        assert.check_start()?;
        let ranks = ranks_of(group, self.size())?;
        self.epochs.borrow().check_start()?;
        self.leave_fence("start")?;
        if let Some(c) = &self.check {
            c.active_epoch(true, true);
        }
        self.epochs.apply(|ep| ep.start(ranks))
    }

    /// Ends the start epoch: completes every call at origin and targets, then tells each
    /// target (MPI_Win_complete). Errors: RMA_SYNC without start.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Group, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     if win.rank() == 0 {
    ///         win.write_local(0, &[99u64])?; // before the post that exposes it
    ///         win.post(&Group::new(&[1])?, Assert::NONE)?;
    ///         win.wait()?;
    ///     } else {
    ///         win.start(&Group::new(&[0])?, Assert::NONE)?;
    ///         let mut got = [0u64];
    ///         win.get(&mut got, Rank::new(0), 0)?;
    ///         win.complete()?; // the get is complete: `got` holds rank 0's value
    ///         assert_eq!(got, [99]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_complete")]
    pub fn complete(&self) -> Result<()> {
        let _span = tracing::debug_span!("complete").entered();
        self.check_alive()?;
        self.check_unguarded("complete", ACCESS_GUARD)?;
        let group = self.epochs.borrow().check_complete()?;
        let mut conflict = Ok(());
        for &t in &group {
            // a target this epoch never accessed must still have posted
            let due = self.epochs.borrow().post_due(t);
            if let Some(want) = due {
                self.win.wait_posted(t, want)?;
                self.epochs.apply(|ep| ep.post_seen(t));
            }
            let c = conflict_after(self.win.flush(Rank::new(t as u32)))?;
            conflict = conflict.and(c);
        }
        // over once its completes are issued, even if one fails: a drop must not
        // complete it twice
        self.epochs.apply(|ep| ep.complete())?;
        if let Some(c) = &self.check {
            c.active_epoch(false, false);
        }
        for &t in &group {
            self.win.complete_to(t)?;
        }
        self.epochs.apply(|ep| ep.calls_completed());
        conflict
    }

    /// Ends the post epoch: waits until every origin in the group has completed
    /// (MPI_Win_wait). Errors: RMA_SYNC without post.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Group, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
    ///     if win.rank() == 0 {
    ///         win.post(&Group::new(&[1])?, Assert::NONE)?;
    ///         win.wait()?; // rank 1 completed: its put is here (read only after the wait)
    ///         assert_eq!(win.local_vec::<u64>()?, [3, 4]);
    ///     } else {
    ///         win.start(&Group::new(&[0])?, Assert::NONE)?;
    ///         win.put(&[3u64, 4], Rank::new(0), 0)?;
    ///         win.complete()?;
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_wait")]
    pub fn wait(&self) -> Result<()> {
        let _span = tracing::debug_span!("wait").entered();
        self.check_alive()?;
        self.check_unguarded("wait", EXPOSURE_GUARD)?;
        let due = self.epochs.borrow().check_wait("wait")?;
        for (o, want) in due {
            self.win.wait_completed(o, want)?;
        }
        self.epochs.apply(|ep| ep.wait("wait"))?;
        // a conflict found now is returned with the epoch over
        match &self.check {
            Some(c) => c.exposure_ends(),
            None => Ok(()),
        }
    }

    /// Like [`Window::wait`] without blocking: `Ok(true)` (and the epoch ends) if every
    /// origin has completed (MPI_Win_test). Errors: RMA_SYNC without post.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Group, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     if win.rank() == 0 {
    ///         win.post(&Group::new(&[1])?, Assert::NONE)?;
    ///         while !win.test()? {
    ///             std::thread::yield_now(); // other work could go here
    ///         }
    ///         assert_eq!(win.local_vec::<u64>()?, [7]);
    ///         assert!(win.test().is_err()); // the epoch ended when test returned true
    ///     } else {
    ///         win.start(&Group::new(&[0])?, Assert::NONE)?;
    ///         win.put(&[7u64], Rank::new(0), 0)?;
    ///         win.complete()?;
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_test")]
    pub fn test(&self) -> Result<bool> {
        self.check_alive()?;
        self.check_unguarded("test", EXPOSURE_GUARD)?;
        let due = self.epochs.borrow().check_wait("test")?;
        for (o, want) in due {
            if !self.win.has_completed(o, want)? {
                // an origin that died will never complete: say so, as wait does
                self.win.check_peers()?;
                return Ok(false);
            }
        }
        self.epochs.apply(|ep| ep.wait("test"))?;
        // a conflict found now is returned with the epoch over
        if let Some(c) = &self.check {
            c.exposure_ends()?;
        }
        Ok(true)
    }
}
