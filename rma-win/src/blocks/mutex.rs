//! [`Mutex`]: a distributed queue lock (Mellor-Crummey and Scott's MCS lock, as MPICH's
//! `mcs_mutex` builds it from RMA atomics), with a guard.

use super::{stalled, wait_for, Owned, Patience};
use crate::world::World;
use rma_core::{Error, Info, Op, Rank, Result};
use std::cell::Cell;
use std::time::Duration;

/// This rank's successor in the queue (written by the successor), or [`NIL`].
const NEXT: i64 = 0;
/// Set to 1 by this rank's predecessor when it hands the lock over.
const GRANTED: i64 = 1;
/// The queue's last rank, or [`NIL`] (used in the home rank's window only).
const TAIL: i64 = 2;
const NIL: i32 = -1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Neither holding nor queued.
    Idle,
    /// In the queue, waiting to be handed the lock (a wait that ended early leaves
    /// this rank here; the next lock call resumes it).
    Queued,
    /// Holding the lock (a guard is alive, or was forgotten).
    Held,
    /// A call failed after this rank had joined the queue (the swap into the tail, or
    /// a handover, was done and a later step failed: a peer died, or the mutex's
    /// memory was corrupt): the queue may be cut, so every later call is refused.
    Broken,
}

/// A mutex over the ranks of a world: one rank at a time holds it. Queue-based (MCS):
/// ranks are served in the order they asked, with no starvation, and a waiting rank
/// polls only its own window, so a handover costs the same at 2 ranks as at 128.
///
/// `lock` returns a [`MutexGuard`]; the lock is released by
/// [`MutexGuard::unlock`] (which returns its error) or when the guard drops (an error
/// is then logged). The mutex orders what is complete: finish (flush) the critical
/// section's RMA calls before releasing it, as with MPI.
///
/// Waits are bounded: a rank that died while holding or queued ends the others' waits
/// with PROC_FAILED naming it; `lock` ends after the stall bound (`RMA_STALL_MS`,
/// class INTERN; the bound is on the whole wait, so with a long queue of long critical
/// sections use [`Mutex::lock_timeout`] in a loop) with this rank still queued: call
/// `lock` again to go on waiting. `lock_timeout` gives up after the caller's time
/// instead, also still queued. A call that fails after this rank joined the queue
/// (a peer died mid-handover) leaves the mutex broken on this rank: later calls fail
/// with class INTERN, and only `free` remains.
///
/// The mutex is per rank, not per task: a second `lock` (or `lock_async` from another
/// task) while this rank holds it is refused with RMA_SYNC rather than queued.
///
/// ```
/// use rma_win::{Assert, Info, Mutex, Op, Rank, Window};
/// rma_win::run_threads(4, |world| -> rma_win::Result<()> {
///     let mut mutex = Mutex::new(&world, &Info::new())?;
///     let data = Window::allocate::<u64>(&world, 1, &Info::new())?;
///     let epoch = data.lock_all_epoch(Assert::NONE)?;
///     let zero = epoch.target(Rank::new(0))?;
///     for _ in 0..50 {
///         let guard = mutex.lock()?;
///         let mut v = [0u64];
///         zero.get(&mut v, 0)?; // a plain read-modify-write: exact only under the mutex
///         zero.flush()?;
///         zero.put(&[v[0] + 1], 0)?;
///         zero.flush()?; // complete before the mutex is released
///         guard.unlock()?;
///     }
///     epoch.unlock()?;
///     world.barrier()?;
///     if world.rank() == 0 {
///         assert_eq!(data.local_vec::<u64>()?, [200]);
///     }
///     mutex.free()
/// })?
/// .into_iter()
/// .collect::<rma_win::Result<Vec<_>>>()?; // every rank's result
/// # Ok::<(), rma_win::Error>(())
/// ```
#[derive(Debug)]
pub struct Mutex<'w> {
    owned: Owned<'w>,
    home: Rank,
    me: i32,
    state: Cell<State>,
}

/// The proof that this rank holds a [`Mutex`]; releases it when dropped.
#[must_use = "the mutex is released when the guard drops"]
#[derive(Debug)]
pub struct MutexGuard<'m, 'w> {
    mutex: &'m Mutex<'w>,
    released: bool,
}

impl<'w> Mutex<'w> {
    /// Collectively creates a mutex whose queue's tail lives on rank 0.
    pub fn new(world: &'w World, info: &Info) -> Result<Mutex<'w>> {
        Self::with_home(world, 0, info)
    }

    /// Collectively creates a mutex whose queue's tail lives on `home` (the same on
    /// every rank: class RANK for one outside the world, ARG where ranks differ).
    pub fn with_home(world: &'w World, home: usize, info: &Info) -> Result<Mutex<'w>> {
        super::agree(world, "Mutex::with_home", &(home as u64).to_le_bytes())?;
        if home >= world.size() {
            return Err(Error::InvalidRank {
                rank: Rank::new(home.min(u32::MAX as usize) as u32),
                size: world.size(),
            });
        }
        let owned = Owned::new::<i32>(world, 3, info, |win| win.write_local(0, &[NIL, 0, NIL]))?;
        Ok(Mutex {
            owned,
            home: Rank::new(home as u32),
            me: world.rank() as i32,
            state: Cell::new(State::Idle),
        })
    }

    /// Whether this rank holds the mutex.
    pub fn is_held(&self) -> bool {
        self.state.get() == State::Held
    }

    /// The transport of the mutex's window.
    pub fn transport_name(&self) -> &'static str {
        self.owned.win.transport_name()
    }

    fn world(&self) -> &World {
        self.owned.win.world
    }

    fn rank_of(&self, v: i32, what: &str) -> Result<Rank> {
        if v < 0 || v as usize >= self.world().size() {
            return Err(Error::Internal {
                reason: format!(
                    "the mutex's {what} reads {v}, no rank of this world (another process wrote into the mutex's window)"
                ),
            });
        }
        Ok(Rank::new(v as u32))
    }

    /// One of this rank's own fields, read atomically.
    fn own(&self, field: i64) -> Result<i32> {
        let h = self.owned.target(Rank::new(self.me as u32))?;
        let v = h.fetch::<i32>(field)?;
        h.flush()?;
        Ok(v)
    }

    fn refuse_held(&self, call: &'static str) -> Result<()> {
        match self.state.get() {
            State::Held => Err(Error::sync(
                call,
                "this rank holds the mutex already (its guard is alive, or was forgotten); a second lock would wait for itself",
            )),
            State::Broken => Err(broken()),
            State::Idle | State::Queued => Ok(()),
        }
    }

    /// Clears this rank's queue fields before it joins the queue (no one else writes
    /// them until it is in the queue), ordered before the swap that makes it visible.
    fn prepare(&self) -> Result<()> {
        self.owned.win.write_local(NEXT as usize, &[NIL, 0])?;
        self.owned.win.sync()
    }

    /// Joins the queue: `true` if the lock was free and is now this rank's.
    fn enqueue(&self) -> Result<bool> {
        self.prepare()?;
        let tail = self.owned.target(self.home)?;
        let prev = tail.swap(self.me, TAIL)?;
        // in the queue from here on: a failure now leaves it cut
        self.state.set(State::Broken);
        tail.flush()?;
        if prev == NIL {
            self.state.set(State::Held);
            return Ok(true);
        }
        let p = self.rank_of(prev, "tail")?;
        let h = self.owned.target(p)?;
        h.accumulate(&[self.me], NEXT, Op::Replace)?;
        h.flush()?;
        self.state.set(State::Queued);
        Ok(false)
    }

    /// A queued rank's one look at its grant.
    fn granted(&self) -> Result<bool> {
        if self.own(GRANTED)? == 1 {
            self.state.set(State::Held);
            return Ok(true);
        }
        Ok(false)
    }

    fn guard(&self) -> MutexGuard<'_, 'w> {
        MutexGuard {
            mutex: self,
            released: false,
        }
    }

    /// Waits until this rank holds the mutex (FIFO among the ranks asking).
    ///
    /// Errors: RMA_SYNC if this rank holds it already; PROC_FAILED if a rank died;
    /// INTERN after the stall bound (`RMA_STALL_MS`) with this rank still queued.
    pub fn lock(&self) -> Result<MutexGuard<'_, 'w>> {
        self.refuse_held("lock")?;
        if self.state.get() == State::Idle && self.enqueue()? {
            return Ok(self.guard());
        }
        wait_for(self.world(), Patience::stall(), || {
            Ok(self.granted()?.then_some(()))
        })?
        .ok_or_else(|| self.turn_stalled())?;
        Ok(self.guard())
    }

    fn turn_stalled(&self) -> Error {
        stalled(format!(
            "rank {}'s turn of a mutex (queued behind a live rank that does not release it)",
            self.me
        ))
    }

    /// [`Mutex::lock`] for at most `timeout`: `Ok(None)` if the mutex was not handed
    /// over by then. This rank then stays queued (MCS cannot leave the queue), and the
    /// next `lock`, `lock_timeout` or `try_lock` goes on from there.
    pub fn lock_timeout(&self, timeout: Duration) -> Result<Option<MutexGuard<'_, 'w>>> {
        self.refuse_held("lock_timeout")?;
        if self.state.get() == State::Idle && self.enqueue()? {
            return Ok(Some(self.guard()));
        }
        let granted = wait_for(self.world(), Patience::timeout(timeout), || {
            Ok(self.granted()?.then_some(()))
        })?;
        Ok(granted.map(|()| self.guard()))
    }

    /// Takes the mutex if no rank holds it or waits for it (one compare-and-swap);
    /// `Ok(None)` otherwise, having changed nothing. A rank left queued by an earlier
    /// wait looks once at whether its turn came.
    pub fn try_lock(&self) -> Result<Option<MutexGuard<'_, 'w>>> {
        self.refuse_held("try_lock")?;
        if self.state.get() == State::Queued {
            return Ok(self.granted()?.then(|| self.guard()));
        }
        self.prepare()?;
        let tail = self.owned.target(self.home)?;
        let prev = tail.compare_and_swap(self.me, NIL, TAIL)?;
        if prev == NIL {
            self.state.set(State::Broken); // holding, until the flush completes
            tail.flush()?;
            self.state.set(State::Held);
            return Ok(Some(self.guard()));
        }
        tail.flush()?;
        Ok(None)
    }

    /// Hands the mutex to the next rank in the queue, or empties the queue.
    fn unlock(&self) -> Result<()> {
        match self.state.get() {
            State::Held => {}
            State::Broken => return Err(broken()),
            State::Idle | State::Queued => {
                return Err(Error::sync("unlock", "this rank does not hold the mutex"))
            }
        }
        // a failure from here on leaves the queue cut (the successor never granted)
        self.state.set(State::Broken);
        let mut next = self.own(NEXT)?;
        if next == NIL {
            let tail = self.owned.target(self.home)?;
            let was = tail.compare_and_swap(NIL, self.me, TAIL)?;
            tail.flush()?;
            if was == self.me {
                self.state.set(State::Idle);
                return Ok(());
            }
            // a rank swapped itself into the tail and is about to name itself here
            next = wait_for(self.world(), Patience::stall(), || {
                let n = self.own(NEXT)?;
                Ok((n != NIL).then_some(n))
            })?
            .ok_or_else(|| {
                stalled(format!(
                    "the rank queued behind rank {} on a mutex to name itself",
                    self.me
                ))
            })?;
        }
        let n = self.rank_of(next, "successor")?;
        let h = self.owned.target(n)?;
        h.accumulate(&[1i32], GRANTED, Op::Replace)?;
        h.flush()?;
        self.state.set(State::Idle);
        Ok(())
    }

    /// Collectively frees the mutex's window. Every rank refuses alike (RMA_SYNC) while
    /// any rank holds the mutex or is queued for it (the states are exchanged first); a
    /// mutex broken by an earlier failure is freed as far as the world allows.
    pub fn free(&mut self) -> Result<()> {
        let busy = matches!(self.state.get(), State::Held | State::Queued);
        let all = self.world().allgather(&[u8::from(busy)])?;
        if let Some(r) = all.iter().position(|b| b.first() == Some(&1)) {
            return Err(Error::sync(
                "free",
                format!(
                    "rank {r} holds the mutex or is queued for it; it must be released (or waited for and released) before free"
                ),
            ));
        }
        self.owned.free()
    }

    /// [`Mutex::lock`] as a future (feature `async`), paced as `lock` is: each poll
    /// joins the queue or looks at this rank's grant, again for up to 20 µs where
    /// `lock` would spin (free cores), and while the turn has not come returns
    /// `Pending` with a wake-up arranged after the pause `lock` would make (at once
    /// where it would spin or yield, 50 µs later once it would sleep). The wake-up
    /// comes from a thread rma starts for this (one per process), never from inside
    /// `poll`, so the executor runs other tasks in between, or sleeps and frees its
    /// core for the rank that holds the mutex; no thread blocks. The same errors as
    /// `lock`, with the stall bound.
    ///
    /// ```
    /// use rma_win::{Info, Mutex};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut mutex = Mutex::new(&world, &Info::new())?;
    ///     // windows stay on their rank's thread: a current-thread runtime
    ///     let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    ///     rt.block_on(async {
    ///         let guard = mutex.lock_async().await?;
    ///         // ... the critical section ...
    ///         guard.unlock()
    ///     })?;
    ///     world.barrier()?;
    ///     mutex.free()
    /// })?
    /// .into_iter()
    /// .collect::<rma_win::Result<Vec<_>>>()?; // every rank's result
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[cfg(feature = "async")]
    #[cfg_attr(docsrs, doc(cfg(feature = "async")))]
    pub fn lock_async(&self) -> LockFuture<'_, 'w> {
        LockFuture {
            mutex: self,
            patience: Patience::stall(),
        }
    }
}

/// The error of every call on a mutex after a failure left its queue cut.
fn broken() -> Error {
    Error::Internal {
        reason: "this mutex broke on this rank: an earlier call failed after joining its queue or while handing it over (a peer died, or its memory was corrupt); only free remains".into(),
    }
}

/// The future of [`Mutex::lock_async`].
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
#[must_use = "a future does nothing unless polled"]
#[derive(Debug)]
pub struct LockFuture<'m, 'w> {
    mutex: &'m Mutex<'w>,
    patience: Patience,
}

#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
impl<'m, 'w> std::future::Future for LockFuture<'m, 'w> {
    type Output = Result<MutexGuard<'m, 'w>>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use super::Again;
        use std::task::Poll;
        let m = self.mutex;
        let step = || -> Result<bool> {
            match m.state.get() {
                State::Held | State::Broken => m.refuse_held("lock_async").map(|()| false),
                State::Idle => m.enqueue(),
                State::Queued => m.granted(),
            }
        };
        let mut spun = None;
        loop {
            match step() {
                Ok(true) => return Poll::Ready(Ok(m.guard())),
                Ok(false) => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            // a bounded spin, or woken later by rma's pacer thread (never from
            // inside this poll)
            match self.patience.poll_again(m.world(), cx.waker(), &mut spun) {
                Ok(Again::Now) => {}
                Ok(Again::Later) => return Poll::Pending,
                Ok(Again::Expired) => return Poll::Ready(Err(m.turn_stalled())),
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl MutexGuard<'_, '_> {
    /// Releases the mutex, handing it to the next rank queued (PROC_FAILED if a rank
    /// died; INTERN if the rank queued behind this one stalled before naming itself).
    pub fn unlock(mut self) -> Result<()> {
        self.released = true;
        self.mutex.unlock()
    }
}

impl Drop for MutexGuard<'_, '_> {
    /// Releases the mutex; an error is logged (`tracing::error!`), since a drop cannot
    /// return it. While the thread panics nothing is done: the rank is seen as dead by
    /// the others (PROC_FAILED in their waits), as for an epoch guard.
    fn drop(&mut self) {
        if self.released || std::thread::panicking() {
            return;
        }
        if let Err(e) = self.mutex.unlock() {
            tracing::error!(
                "releasing a mutex at its guard's drop failed: {e} ({})",
                e.class()
            );
        }
    }
}
