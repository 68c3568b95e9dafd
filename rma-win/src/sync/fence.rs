//! Fence epochs and free.

use crate::epoch_state::ACCESS_GUARD;
use crate::window::Window;
use rma_core::{Assert, Epochs as _, Result, Transport};

impl Window<'_> {
    /// Collective fence over the window's group: completes every RMA call issued
    /// before it, at origin and target, and opens the next epoch unless `assert` holds
    /// NOSUCCEED. Valid assertions: NOSTORE, NOPUT, NOPRECEDE, NOSUCCEED.
    ///
    /// Errors: ASSERT for another bit; RMA_SYNC for NOPRECEDE when calls were issued
    /// since the last fence, or inside a lock, lock_all, start or post epoch;
    /// PROC_FAILED if a peer died, or entered another collective call in this fence's
    /// place: a fence matches only a fence on this same window, never a world barrier
    /// or another window's fence or free (on rma's shared memory every rank then gets
    /// PROC_FAILED and the world is broken, as under MPI's agreement; a backend of
    /// your own matches as its `fence_barrier` says).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     win.fence(Assert::NOPRECEDE)?; // opens the first epoch: no calls to complete
    ///     win.accumulate(&[1u64], Rank::new(0), 0, Op::Sum)?;
    ///     win.fence(Assert::NOSUCCEED)?; // completes them everywhere; no epoch follows
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u64>()?, [2]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_fence")]
    pub fn fence(&self, assert: Assert) -> Result<()> {
        let _span = tracing::debug_span!("fence", assert = assert.bits()).entered();
        self.check_alive()?;
        self.check_unguarded("fence", ACCESS_GUARD)?;
        assert.check_fence()?;
        self.epochs.borrow().check_fence(assert)?;
        if let Some(c) = &self.check {
            c.fence_begins(true);
        }
        let flushed = self.win.flush_all();
        if let (Some(c), Err(_)) = (&self.check, &flushed) {
            c.fence_begins(false);
        }
        flushed?;
        // the window's own barrier where the backend has one (matched only by a fence
        // on this window: a peer in a world barrier or another window's call makes it
        // fail), else the world's
        let synced = match self.win.fence_barrier() {
            Some(r) => r,
            None => self.world.barrier(),
        };
        if let Err(e) = synced {
            if let Some(c) = &self.check {
                c.fence_begins(false);
            }
            return Err(e);
        }
        let open = self.epochs.apply(|ep| ep.fence(assert))?;
        if let Some(c) = &self.check {
            c.active_epoch(open, false);
        }
        match &self.check {
            Some(c) => c.fence_passed(&|| self.world.barrier()),
            None => Ok(()),
        }
    }

    /// Collectively frees the window (MPI_Win_free). Every rank must call it.
    ///
    /// Errors: RMA_SYNC if an epoch is open (a lock, lock_all, start or post) or calls
    /// were issued since the last fence; WIN if already freed: such a refused free
    /// changes nothing. PROC_FAILED if a peer died, or entered another collective call
    /// in this free's place (a barrier, another window's free or fence: the world is
    /// then broken). A free matches only this window's free on every rank, or its drop
    /// (a rank that drops the window without freeing it counts as freeing it). On rma's
    /// shared memory a free that failed once it began refuses every later call but
    /// another free (class WIN): peers may have released their memory.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut buf = [0u32; 2];
    ///     let mut win = Window::create(&world, &mut buf, &Info::new())?;
    ///     let me = win.rank();
    ///     win.fence(Assert::NONE)?;
    ///     win.put(&[7u32], Rank::new(1 - me as u32), me as i64)?; // into the peer's element `me`
    ///     win.fence(Assert::NONE)?; // free refuses calls no fence has completed
    ///     win.free()?; // collective; the window's contents go back into `buf`
    ///     assert!(win.local_vec::<u32>().is_err()); // a freed window refuses every call
    ///     drop(win);
    ///     assert_eq!(buf, if me == 0 { [0, 7] } else { [7, 0] });
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_free")]
    pub fn free(&mut self) -> Result<()> {
        self.check_alive()?;
        self.epochs.borrow().check_free()?;
        // the window's own collective (the backend's: a world collective could be
        // matched by a peer's barrier while that peer still uses the window); a
        // created window's copy goes back once every rank is past its last call
        self.win.free()?;
        self.epochs.apply(|ep| ep.free())
    }

    /// Ends an open fence epoch before another kind starts; refused if calls of that
    /// epoch are pending (they need the closing fence).
    pub(super) fn leave_fence(&self, call: &'static str) -> Result<()> {
        // only a fence epoch ends here (a start epoch open beside it keeps its marks)
        if self.epochs.apply(|ep| ep.leave_fence(call))? {
            if let Some(c) = &self.check {
                c.active_epoch(false, false);
            }
        }
        Ok(())
    }
}
