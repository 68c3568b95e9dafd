//! Epochs: fence, passive target (lock / unlock, lock_all / unlock_all, the flush
//! family, sync) and active target with groups (post / start / complete / wait / test),
//! with every misuse of docs/semantics.md rule 16 refused with RMA_SYNC before anything
//! changes.

use crate::window::Window;
use rma_core::{Assert, Epochs as _, Error, LockType, Memory as _, Rank, Result, Transport};
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

/// An ordered subset of the world's ranks, for post and start (MPI_Group's role).
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// A lock this origin holds on one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) kind: LockType,
    /// NOCHECK: no lock word was taken.
    pub(crate) nocheck: bool,
}

/// An access epoch opened by start.
#[derive(Clone, Debug)]
pub(crate) struct Started {
    group: Vec<usize>,
    /// Per group member: whether its post was seen yet (waited lazily).
    posted: Vec<bool>,
}

/// This rank's view of the window's epochs.
/// Per-target bits of `Window::fast`: a passive-target epoch of this origin covers the
/// target.
pub(crate) const HELD: u8 = 1;
/// ... under an exclusive lock taken for real (not NOCHECK).
pub(crate) const EXCLUSIVE: u8 = 2;

#[derive(Debug)]
pub(crate) struct Epochs {
    freed: bool,
    /// A fence epoch is open (after a fence that did not assert NOSUCCEED).
    fence: bool,
    /// Calls issued since the last fence.
    pending: bool,
    /// Per target: the lock this origin holds (lock, or lock_all when `lock_all`).
    locks: Vec<Option<Held>>,
    lock_all: bool,
    start: Option<Started>,
    pub(crate) post: Option<Vec<usize>>,
    /// Per target: posts consumed by this rank's start epochs.
    posts_used: Vec<u32>,
    /// Per origin: completes this rank expects (one per post).
    completes_due: Vec<u32>,
    /// Epochs owned by a guard (`crate::guard`): [`ACCESS_GUARD`], [`EXPOSURE_GUARD`].
    /// The runtime calls that would end them refuse (RMA_SYNC); the guard ends them.
    guards: u8,
}

/// A guard owns this window's access epoch (fence, lock, lock_all or start).
pub(crate) const ACCESS_GUARD: u8 = 1;
/// A guard owns this window's exposure epoch (post).
pub(crate) const EXPOSURE_GUARD: u8 = 2;

impl Epochs {
    pub(crate) fn new(ranks: usize) -> Epochs {
        Epochs {
            freed: false,
            fence: false,
            pending: false,
            locks: vec![None; ranks],
            lock_all: false,
            start: None,
            post: None,
            posts_used: vec![0; ranks],
            completes_due: vec![0; ranks],
            guards: 0,
        }
    }

    fn passive(&self) -> bool {
        self.lock_all || self.locks.iter().any(Option::is_some)
    }

    fn describe(&self) -> String {
        let mut open = vec![];
        if self.fence {
            open.push("a fence epoch".to_owned());
        }
        if self.lock_all {
            open.push("a lock_all epoch".to_owned());
        } else {
            let locked: Vec<String> = self
                .locks
                .iter()
                .enumerate()
                .filter_map(|(r, h)| h.map(|_| r.to_string()))
                .collect();
            if !locked.is_empty() {
                open.push(format!("locks on ranks {}", locked.join(", ")));
            }
        }
        if self.start.is_some() {
            open.push("a start epoch".to_owned());
        }
        if self.post.is_some() {
            open.push("a post epoch".to_owned());
        }
        if open.is_empty() {
            "no epoch is open".to_owned()
        } else {
            format!("open: {}", open.join("; "))
        }
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
    /// Marks the epochs `kind` ([`ACCESS_GUARD`], [`EXPOSURE_GUARD`]) as owned by a
    /// guard (`on`), or no longer.
    pub(crate) fn set_guard(&self, kind: u8, on: bool) {
        let mut ep = self.epochs.borrow_mut();
        if on {
            ep.guards |= kind;
        } else {
            ep.guards &= !kind;
        }
    }

    /// RMA_SYNC if a guard owns the epochs `kind` that `call` would end.
    fn check_unguarded(&self, call: &'static str, kind: u8) -> Result<()> {
        if self.epochs.borrow().guards & kind == 0 {
            return Ok(());
        }
        Err(Error::sync(
            call,
            "an epoch guard of this window is open (an epoch value): end it through the \
             guard (unlock, fence, complete or wait on it), or drop it, before the window's \
             own calls open or end another epoch",
        ))
    }

    pub(crate) fn check_alive(&self) -> Result<()> {
        if self.epochs.borrow().freed {
            return Err(Error::InvalidWindow {
                reason: "the window was freed".into(),
            });
        }
        Ok(())
    }

    /// Whether a passive-target epoch of this origin (lock or lock_all) covers `target`.
    pub(crate) fn passive_on(&self, target: usize) -> bool {
        self.epochs
            .borrow()
            .locks
            .get(target)
            .is_some_and(Option::is_some)
    }

    /// Whether this origin holds an exclusive lock (taken for real) on `target`.
    #[inline]
    pub(crate) fn exclusive_on(&self, target: usize) -> bool {
        self.fast[target].get() & EXCLUSIVE != 0
    }

    /// Re-derives the per-target fast-path bits from the epoch state; called after
    /// every change to the locks held or to `freed`.
    fn refresh_fast(&self) {
        let ep = self.epochs.borrow();
        for (bits, held) in self.fast.iter().zip(&ep.locks) {
            bits.set(
                match held {
                    _ if ep.freed => 0,
                    None => 0,
                    Some(Held {
                        kind: LockType::Exclusive,
                        nocheck: false,
                    }) => HELD | EXCLUSIVE,
                    Some(_) => HELD,
                } & if self.dynamic || self.check.is_some() {
                    // a dynamic window's calls check their regions, a checked window's
                    // note their call sites: never the fast path
                    !HELD
                } else {
                    !0
                },
            );
        }
    }

    /// The target index of `rank` when a passive-target epoch of this origin covers it:
    /// the calls' fast path, which then needs no other epoch check. `None` (the null
    /// rank, a rank out of range, no such epoch) sends a call down the general path,
    /// which reports what is wrong.
    ///
    /// A world with a dead rank (its failure word set) takes the general path too,
    /// which reports it: one relaxed load per call.
    #[inline]
    pub(crate) fn fast_target(&self, rank: Rank) -> Option<usize> {
        let t = rank.index()?;
        (self.fast.get(t)?.get() & HELD != 0 && self.failed.load(Ordering::Relaxed) == 0)
            .then_some(t)
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
        let mut ep = self.epochs.borrow_mut();
        let Some(t) = t else {
            // the null rank: any access epoch will do
            let any = ep.fence || ep.passive() || ep.start.is_some();
            if !any || (request && !ep.passive()) {
                let need = if request {
                    "request-based calls need a passive-target epoch: call lock_all or lock first"
                } else {
                    "call fence, lock, lock_all or start first"
                };
                return Err(Error::sync(
                    call,
                    format!(
                        "no access epoch that this call can use is open ({}); {need}",
                        ep.describe()
                    ),
                ));
            }
            return Ok(None);
        };
        if ep.locks[t].is_some() {
            return Ok(Some(t));
        }
        if request {
            return Err(Error::sync(
                call,
                format!("request-based calls need a passive-target epoch on rank {t} ({}); call lock on rank {t}, or lock_all, first", ep.describe()),
            ));
        }
        if let Some(st) = ep.start.as_mut() {
            if let Some(i) = st.group.iter().position(|&g| g == t) {
                if !st.posted[i] {
                    let want = ep.posts_used[t].wrapping_add(1);
                    self.win.wait_posted(t, want)?;
                    let ep = &mut *ep;
                    ep.posts_used[t] = want;
                    if let Some(st) = ep.start.as_mut() {
                        st.posted[i] = true;
                    }
                }
                return Ok(Some(t));
            }
            let group: Vec<String> = st.group.iter().map(|g| g.to_string()).collect();
            return Err(Error::sync(
                call,
                format!(
                    "rank {t} is not in the start group (ranks {}); access only the ranks passed to start, or include rank {t} in its group",
                    group.join(", ")
                ),
            ));
        }
        if ep.fence {
            return Ok(Some(t));
        }
        Err(Error::sync(
            call,
            format!(
                "no access epoch covers rank {t} ({}); call fence, lock, lock_all or start first",
                ep.describe()
            ),
        ))
    }

    pub(crate) fn issued(&self) {
        self.epochs.borrow_mut().pending = true;
    }

    // ---- fence ----------------------------------------------------------------------

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
    pub fn fence(&self, assert: Assert) -> Result<()> {
        let _span = tracing::debug_span!("fence", assert = assert.bits()).entered();
        self.check_alive()?;
        self.check_unguarded("fence", ACCESS_GUARD)?;
        assert.check_fence()?;
        {
            let ep = self.epochs.borrow();
            if ep.passive() || ep.start.is_some() || ep.post.is_some() {
                return Err(Error::sync(
                    "fence",
                    format!(
                        "fence inside another epoch ({}); close it first (unlock, unlock_all, complete or wait)",
                        ep.describe()
                    ),
                ));
            }
            if assert.contains(Assert::NOPRECEDE) && ep.pending {
                return Err(Error::sync(
                    "fence",
                    "NOPRECEDE asserted, but RMA calls were issued since the last fence and this fence must complete them",
                ));
            }
        }
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
        {
            let mut ep = self.epochs.borrow_mut();
            ep.fence = !assert.contains(Assert::NOSUCCEED);
            ep.pending = false;
            if let Some(c) = &self.check {
                c.active_epoch(ep.fence, false);
            }
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
    pub fn free(&mut self) -> Result<()> {
        self.check_alive()?;
        {
            let ep = self.epochs.borrow();
            if ep.passive() || ep.start.is_some() || ep.post.is_some() {
                return Err(Error::sync(
                    "free",
                    format!(
                        "an epoch is still open ({}); close it (fence, unlock, unlock_all, complete or wait) before free",
                        ep.describe()
                    ),
                ));
            }
            if ep.pending {
                return Err(Error::sync(
                    "free",
                    "RMA calls issued since the last fence were never completed; call fence first",
                ));
            }
        }
        // the window's own collective (the backend's: a world collective could be
        // matched by a peer's barrier while that peer still uses the window); a
        // created window's copy goes back once every rank is past its last call
        self.win.free()?;
        self.epochs.borrow_mut().freed = true;
        self.refresh_fast();
        Ok(())
    }

    /// Ends an open fence epoch before another kind starts; refused if calls of that
    /// epoch are pending (they need the closing fence).
    fn leave_fence(&self, call: &'static str) -> Result<()> {
        let mut ep = self.epochs.borrow_mut();
        if ep.fence && ep.pending {
            return Err(Error::sync(
                call,
                "calls of the current fence epoch are pending; close it with a fence first",
            ));
        }
        // only a fence epoch ends here (a start epoch open beside it keeps its marks)
        if std::mem::replace(&mut ep.fence, false) {
            if let Some(c) = &self.check {
                c.active_epoch(false, false);
            }
        }
        Ok(())
    }

    // ---- passive target -------------------------------------------------------------

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
    pub fn lock(&self, kind: LockType, rank: impl Into<Rank>, assert: Assert) -> Result<()> {
        let rank: Rank = rank.into();
        let _span = tracing::debug_span!("lock", target = rank.raw()).entered();
        self.check_alive()?;
        self.check_unguarded("lock", ACCESS_GUARD)?;
        assert.check_lock()?;
        let Some(t) = self.check_rank(rank)? else {
            return Ok(());
        };
        {
            let ep = self.epochs.borrow();
            if ep.lock_all {
                return Err(Error::sync(
                    "lock",
                    "inside a lock_all epoch every rank is already locked; access the rank directly, or call unlock_all first",
                ));
            }
            if ep.locks[t].is_some() {
                return Err(Error::sync(
                    "lock",
                    format!("rank {t} is already locked by this rank (locks do not nest); call unlock on rank {t} first"),
                ));
            }
            if ep.start.is_some() {
                return Err(Error::sync(
                    "lock",
                    "lock inside an active-target (start) epoch; call complete first",
                ));
            }
        }
        self.leave_fence("lock")?;
        let nocheck = assert.contains(Assert::NOCHECK);
        if !nocheck {
            self.win.acquire_lock(t, kind == LockType::Exclusive)?;
        }
        self.epochs.borrow_mut().locks[t] = Some(Held { kind, nocheck });
        self.refresh_fast();
        Ok(())
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
    pub fn unlock(&self, rank: impl Into<Rank>) -> Result<()> {
        let rank: Rank = rank.into();
        let _span = tracing::debug_span!("unlock", target = rank.raw()).entered();
        self.check_alive()?;
        self.check_unguarded("unlock", ACCESS_GUARD)?;
        let Some(t) = self.check_rank(rank)? else {
            return Ok(());
        };
        let held = {
            let ep = self.epochs.borrow();
            if ep.lock_all {
                return Err(Error::sync(
                    "unlock",
                    "inside a lock_all epoch no single rank is locked: use unlock_all",
                ));
            }
            ep.locks[t].ok_or_else(|| {
                Error::sync(
                    "unlock",
                    format!(
                        "rank {t} is not locked by this rank ({}); call lock on rank {t} first",
                        ep.describe()
                    ),
                )
            })?
        };
        let conflict = conflict_after(self.win.flush(rank))?;
        // no longer held once its release is issued, even if that fails: a drop must
        // not release it twice
        self.epochs.borrow_mut().locks[t] = None;
        self.refresh_fast();
        if !held.nocheck {
            self.win.release_lock(t, held.kind == LockType::Exclusive)?;
        }
        let mut ep = self.epochs.borrow_mut();
        if !ep.passive() {
            // every call of the passive epochs is complete now
            ep.pending = false;
        }
        drop(ep);
        self.refresh_fast();
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
    pub fn lock_all(&self, assert: Assert) -> Result<()> {
        let _span = tracing::debug_span!("lock_all").entered();
        self.check_alive()?;
        self.check_unguarded("lock_all", ACCESS_GUARD)?;
        assert.check_lock()?;
        {
            let ep = self.epochs.borrow();
            if ep.passive() {
                return Err(Error::sync(
                    "lock_all",
                    format!(
                        "a passive-target epoch is already open ({}); unlock it first",
                        ep.describe()
                    ),
                ));
            }
            if ep.start.is_some() {
                return Err(Error::sync(
                    "lock_all",
                    "lock_all inside an active-target (start) epoch; call complete first",
                ));
            }
        }
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
        let mut ep = self.epochs.borrow_mut();
        ep.lock_all = true;
        for l in ep.locks.iter_mut() {
            *l = Some(Held {
                kind: LockType::Shared,
                nocheck,
            });
        }
        drop(ep);
        self.refresh_fast();
        Ok(())
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
    pub fn unlock_all(&self) -> Result<()> {
        let _span = tracing::debug_span!("unlock_all").entered();
        self.check_alive()?;
        self.check_unguarded("unlock_all", ACCESS_GUARD)?;
        if !self.epochs.borrow().lock_all {
            let ep = self.epochs.borrow();
            return Err(Error::sync(
                "unlock_all",
                format!(
                    "no lock_all epoch is open ({}); call lock_all first (a lock ends with unlock)",
                    ep.describe()
                ),
            ));
        }
        let conflict = conflict_after(self.win.flush_all())?;
        let mut ep = self.epochs.borrow_mut();
        let mut released = Ok(());
        for (t, held) in ep.locks.iter_mut().enumerate() {
            if let Some(h) = held.take() {
                if !h.nocheck {
                    // every lock is released even if one release fails
                    let r = self.win.release_lock(t, false);
                    released = released.and(r);
                }
            }
        }
        ep.lock_all = false;
        ep.pending = false;
        drop(ep);
        self.refresh_fast();
        released.and(conflict)
    }

    fn check_passive(&self, call: &'static str, target: Option<usize>) -> Result<()> {
        let ep = self.epochs.borrow();
        let ok = match target {
            Some(t) => ep.locks[t].is_some(),
            None => ep.passive(),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::sync(
                call,
                match target {
                    Some(t) => format!(
                        "needs a passive-target epoch on rank {t} ({}); call lock on rank {t}, or lock_all, first",
                        ep.describe()
                    ),
                    None => format!(
                        "needs a passive-target epoch ({}); call lock or lock_all first",
                        ep.describe()
                    ),
                },
            ))
        }
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
    pub fn sync(&self) -> Result<()> {
        self.check_alive()?;
        self.win.sync()
    }

    /// Why a detach now could leave calls pending to the region (its exposure epoch is
    /// open, or this rank's own calls of a fence epoch are not yet complete), if so.
    pub(crate) fn detach_blocked(&self) -> Option<&'static str> {
        let st = self.epochs.borrow();
        if st.post.is_some() {
            Some("this rank's exposure epoch (post) is open: calls to the region may be pending until wait")
        } else if st.fence && st.pending {
            Some("calls of this fence epoch are pending until the next fence")
        } else {
            None
        }
    }

    // ---- active target with groups ---------------------------------------------------

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
    pub fn post(&self, group: &Group, assert: Assert) -> Result<()> {
        let _span = tracing::debug_span!("post", ranks = group.ranks.len()).entered();
        self.check_alive()?;
        self.check_unguarded("post", EXPOSURE_GUARD)?;
        assert.check_post()?;
        let ranks = ranks_of(group, self.size())?;
        if self.epochs.borrow().post.is_some() {
            return Err(Error::sync(
                "post",
                "a post epoch is already open; call wait or test first",
            ));
        }
        // the checker's stamp first: a post refused here has changed nothing
        if let Some(c) = &self.check {
            c.exposure_begins()?;
        }
        self.leave_fence("post")?;
        for &o in &ranks {
            self.win.post_to(o)?;
        }
        let mut ep = self.epochs.borrow_mut();
        for &o in &ranks {
            ep.completes_due[o] = ep.completes_due[o].wrapping_add(1);
        }
        ep.post = Some(ranks);
        Ok(())
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
    pub fn start(&self, group: &Group, assert: Assert) -> Result<()> {
        let _span = tracing::debug_span!("start", ranks = group.ranks.len()).entered();
        self.check_alive()?;
        self.check_unguarded("start", ACCESS_GUARD)?;
        assert.check_start()?;
        let ranks = ranks_of(group, self.size())?;
        {
            let ep = self.epochs.borrow();
            if ep.start.is_some() {
                return Err(Error::sync(
                    "start",
                    "a start epoch is already open (start epochs do not nest); call complete first",
                ));
            }
            if ep.passive() {
                return Err(Error::sync(
                    "start",
                    format!(
                        "start inside a passive-target epoch ({}); unlock it first",
                        ep.describe()
                    ),
                ));
            }
        }
        self.leave_fence("start")?;
        if let Some(c) = &self.check {
            c.active_epoch(true, true);
        }
        self.epochs.borrow_mut().start = Some(Started {
            posted: vec![false; ranks.len()],
            group: ranks,
        });
        Ok(())
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
    pub fn complete(&self) -> Result<()> {
        let _span = tracing::debug_span!("complete").entered();
        self.check_alive()?;
        self.check_unguarded("complete", ACCESS_GUARD)?;
        let st =
            self.epochs.borrow().start.clone().ok_or_else(|| {
                Error::sync("complete", "no start epoch is open; call start first")
            })?;
        let mut conflict = Ok(());
        for (i, &t) in st.group.iter().enumerate() {
            if !st.posted[i] {
                // a target this epoch never accessed must still have posted
                let want = self.epochs.borrow().posts_used[t].wrapping_add(1);
                self.win.wait_posted(t, want)?;
                self.epochs.borrow_mut().posts_used[t] = want;
            }
            let c = conflict_after(self.win.flush(Rank::new(t as u32)))?;
            conflict = conflict.and(c);
        }
        // over once its completes are issued, even if one fails: a drop must not
        // complete it twice
        self.epochs.borrow_mut().start = None;
        if let Some(c) = &self.check {
            c.active_epoch(false, false);
        }
        for &t in &st.group {
            self.win.complete_to(t)?;
        }
        let mut ep = self.epochs.borrow_mut();
        ep.pending = false;
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
    pub fn wait(&self) -> Result<()> {
        let _span = tracing::debug_span!("wait").entered();
        self.check_alive()?;
        self.check_unguarded("wait", EXPOSURE_GUARD)?;
        let (group, due) = {
            let ep = self.epochs.borrow();
            let g = ep
                .post
                .clone()
                .ok_or_else(|| Error::sync("wait", "no post epoch is open; call post first"))?;
            (g, ep.completes_due.clone())
        };
        for &o in &group {
            self.win.wait_completed(o, due[o])?;
        }
        self.epochs.borrow_mut().post = None;
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
    pub fn test(&self) -> Result<bool> {
        self.check_alive()?;
        self.check_unguarded("test", EXPOSURE_GUARD)?;
        let mut ep = self.epochs.borrow_mut();
        let group = ep
            .post
            .clone()
            .ok_or_else(|| Error::sync("test", "no post epoch is open; call post first"))?;
        let mut done = true;
        for &o in &group {
            if !self.win.has_completed(o, ep.completes_due[o])? {
                done = false;
                break;
            }
        }
        if done {
            ep.post = None;
            drop(ep);
            // a conflict found now is returned with the epoch over
            if let Some(c) = &self.check {
                c.exposure_ends()?;
            }
            return Ok(true);
        }
        drop(ep);
        // an origin that died will never complete: say so, as wait does
        self.win.check_peers()?;
        Ok(false)
    }
}

impl Window<'_> {
    /// Ends what this rank still holds of a window it drops without freeing: every
    /// lock (after a flush), and an access epoch (its completes). Errors are ignored:
    /// the window is going away.
    fn leave_epochs(&self) {
        let (locks, start) = {
            let ep = self.epochs.borrow();
            (ep.locks.clone(), ep.start.clone())
        };
        for (t, held) in locks.iter().enumerate() {
            if let Some(h) = held {
                let _ = self.win.flush(Rank::new(t as u32));
                if !h.nocheck {
                    let _ = self.win.release_lock(t, h.kind == LockType::Exclusive);
                }
            }
        }
        if let Some(st) = start {
            for &t in &st.group {
                let _ = self.win.flush(Rank::new(t as u32));
                let _ = self.win.complete_to(t);
            }
        }
        let mut ep = self.epochs.borrow_mut();
        ep.locks.fill(None);
        ep.lock_all = false;
        ep.start = None;
        drop(ep);
        self.refresh_fast();
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
        if std::thread::panicking() || self.epochs.borrow().freed || !self.win.leaves_on_drop() {
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
