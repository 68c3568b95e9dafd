//! Building blocks people otherwise write by hand over windows: a distributed
//! [`Counter`] (NXTVAL), a queue-based [`Mutex`] (MCS), put-with-signal
//! ([`TargetHandle::put_signal`](crate::TargetHandle::put_signal) with
//! [`Window::wait_until`](crate::Window::wait_until)), and batched indexed atomics
//! ([`TargetHandle::accumulate_indexed`](crate::TargetHandle::accumulate_indexed),
//! [`Window::accumulate_indexed`](crate::Window::accumulate_indexed)).
//!
//! Each is built from the public calls' own machinery (target handles, the backend's
//! fast path), so it runs on every transport and launch mode, and every wait in it is
//! bounded: paced as every wait of rma (spin on free cores, yield and sleep when
//! oversubscribed), ended with PROC_FAILED once a peer is dead, and with class INTERN
//! ([`Error::Stalled`]) after the stall bound (`RMA_STALL_MS`) or the caller's timeout.

pub(crate) mod counter;
pub(crate) mod indexed;
pub(crate) mod mutex;
#[cfg(feature = "async")]
mod pacer;
pub(crate) mod signal;

use crate::handle::TargetHandle;
use crate::window::Window;
use crate::world::World;
use rma_core::wait::{wait_mode, Backoff, Step, WaitMode};
use rma_core::{Assert, Error, Info, Rank, Result};
use std::time::{Duration, Instant};

/// How often a wait that stopped spinning asks whether every peer still lives.
const LIVENESS_EVERY: Duration = Duration::from_millis(20);

/// How long a parked wait sleeps between probes.
const NAP: Duration = Duration::from_micros(50);

/// How long one poll of a future probes again at once while its wait would spin (on
/// free cores, [`Patience::poll_again`]): a handover within that time costs no
/// wake-up, and the executor is never held longer.
#[cfg(feature = "async")]
const SPIN_PER_POLL: Duration = Duration::from_micros(20);

/// How long a wait that reached its parking phase still yields its core between
/// probes before it sleeps: where ranks outnumber cores, the rank being waited for
/// (a mutex's holder, a signal's sender) is most often the one a yield lets run, and
/// a sleep costs at least the timer's slack (~50 µs) per handover. Not under
/// `RMA_WAIT=park`, which sleeps at once.
const YIELD_FOR: Duration = Duration::from_millis(2);

/// The pacing and the bounds of one wait of a building block: [`Patience::pause`]
/// after every probe that found nothing.
#[derive(Debug)]
pub(crate) struct Patience {
    pace: Backoff,
    probes: u32,
    /// When the wait began: the first clock read (after at most 64 probes), or the
    /// call, for a caller's timeout. The limit counts from here.
    start: Option<Instant>,
    /// When the wait reached its parking phase (the clock is read at every probe
    /// from then on, and every 64th before).
    parked: Option<Instant>,
    last_check: Option<Instant>,
    limit: Duration,
    /// A future's wake-up arranged by [`Patience::poll_again`] and not yet due: when,
    /// and the waker it wakes.
    #[cfg(feature = "async")]
    armed: Option<(Instant, std::task::Waker)>,
}

impl Patience {
    /// A wait bounded by the stall bound (`RMA_STALL_MS`).
    pub(crate) fn stall() -> Patience {
        Patience {
            pace: Backoff::new(),
            probes: 0,
            start: None,
            parked: None,
            last_check: None,
            limit: rma_core::stall_limit(),
            #[cfg(feature = "async")]
            armed: None,
        }
    }

    /// A wait bounded by the caller's `timeout`, counted from now.
    pub(crate) fn timeout(timeout: Duration) -> Patience {
        Patience {
            start: Some(Instant::now()),
            limit: timeout,
            ..Patience::stall()
        }
    }

    /// The checks of a wait that found nothing yet, without pausing:
    /// PROC_FAILED once a peer is dead; `Ok(false)` once the limit passed.
    pub(crate) fn check(&mut self, world: &World) -> Result<bool> {
        self.probes = self.probes.wrapping_add(1);
        if self.parked.is_none() && self.probes % 64 != 0 {
            return Ok(true);
        }
        let now = Instant::now();
        let start = *self.start.get_or_insert(now);
        let last = *self.last_check.get_or_insert(now);
        if now.duration_since(last) >= LIVENESS_EVERY {
            self.last_check = Some(now);
            world.check_peers()?;
        }
        if now.duration_since(start) >= self.limit {
            world.check_peers()?;
            return Ok(false);
        }
        Ok(true)
    }

    /// After a probe that found nothing: the checks of [`Patience::check`], then one
    /// pause paced by `rma_core::wait` (spin, or yield), and once parked a yield for
    /// the first 2 ms ([`YIELD_FOR`]), then 50 µs sleeps. `Ok(false)` once the limit
    /// passed.
    pub(crate) fn pause(&mut self, world: &World) -> Result<bool> {
        match self.next_pause(world, true)? {
            None => Ok(false),
            Some(Pause::None) => Ok(true),
            Some(Pause::Yield) => {
                std::thread::yield_now();
                Ok(true)
            }
            Some(Pause::Nap) => {
                std::thread::sleep(NAP);
                Ok(true)
            }
        }
    }

    /// The pacing of [`Patience::pause`] without its pause: one step of
    /// `rma_core::wait` (which spins or yields once itself when `pause_here`; a
    /// future's poll passes `false` and is told to yield instead), the checks, and
    /// what to do before the next probe. `None` once the limit passed.
    fn next_pause(&mut self, world: &World, pause_here: bool) -> Result<Option<Pause>> {
        let step = if pause_here {
            self.pace.step()
        } else {
            self.pace.plan()
        };
        if step == Step::Park && self.parked.is_none() {
            self.parked = Some(Instant::now());
        }
        if !self.check(world)? {
            return Ok(None);
        }
        Ok(Some(match self.parked {
            None if !pause_here && step == Step::Yield => Pause::Yield,
            None => Pause::None,
            Some(parked) if wait_mode() != WaitMode::Park && parked.elapsed() < YIELD_FOR => {
                Pause::Yield
            }
            Some(_) => Pause::Nap,
        }))
    }

    /// For a future's poll whose probe found nothing: paces the wait as
    /// [`Patience::pause`] does. Where a blocking wait would spin (free cores), the
    /// poll probes again at once ([`Again::Now`]) for up to 20 µs
    /// ([`SPIN_PER_POLL`], counted from `spun`, which the poll starts at `None`).
    /// Otherwise it arranges for `waker` to be woken when the pause would end, and
    /// returns `Pending` ([`Again::Later`]): at once (from the pacer's thread) where
    /// a blocking wait would spin or yield, after 50 µs ([`NAP`]) where it would
    /// sleep. The wake-up never comes from inside the caller's poll, so the
    /// executor's thread is free until then (it runs other tasks, or sleeps and gives
    /// up its core). A poll made before an arranged wake-up was due (the executor
    /// polling the task for another future's sake) keeps that wake-up and arranges
    /// none. [`Again::Expired`] once the limit passed.
    #[cfg(feature = "async")]
    pub(crate) fn poll_again(
        &mut self,
        world: &World,
        waker: &std::task::Waker,
        spun: &mut Option<Instant>,
    ) -> Result<Again> {
        if let Some((at, armed)) = &self.armed {
            if spun.is_none() && Instant::now() < *at && armed.will_wake(waker) {
                return Ok(Again::Later);
            }
        }
        let delay = match self.next_pause(world, false)? {
            None => return Ok(Again::Expired),
            Some(Pause::None) => {
                let now = Instant::now();
                if now.duration_since(*spun.get_or_insert(now)) < SPIN_PER_POLL {
                    return Ok(Again::Now);
                }
                Duration::ZERO
            }
            Some(Pause::Yield) => Duration::ZERO,
            Some(Pause::Nap) => NAP,
        };
        let at = pacer::wake_after(waker, delay)?;
        self.armed = Some((at, waker.clone()));
        Ok(Again::Later)
    }
}

/// What a future's poll does after a probe that found nothing
/// ([`Patience::poll_again`]).
#[cfg(feature = "async")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Again {
    /// Probes again within this poll (the wait spins).
    Now,
    /// Returns `Pending`: a wake-up from the pacer's thread is arranged.
    Later,
    /// The wait's limit passed.
    Expired,
}

/// What a wait does between two probes ([`Patience::pause`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pause {
    /// Nothing more (the pacing step spun or yielded already).
    None,
    /// Gives up its core once.
    Yield,
    /// Sleeps [`NAP`].
    Nap,
}

/// Polls `probe` until it gives a value, pacing and bounding the wait with
/// `patience`: `Ok(None)` once its limit passed.
pub(crate) fn wait_for<T>(
    world: &World,
    mut patience: Patience,
    mut probe: impl FnMut() -> Result<Option<T>>,
) -> Result<Option<T>> {
    loop {
        if let Some(v) = probe()? {
            return Ok(Some(v));
        }
        if !patience.pause(world)? {
            return Ok(None);
        }
    }
}

/// The error of a wait that reached the stall bound, naming what it waited for.
pub(crate) fn stalled(what: String) -> Error {
    Error::Stalled {
        what,
        waited_ms: rma_core::stall_limit().as_millis() as u64,
    }
}

/// A window a building block owns, inside one lock_all epoch for its whole life:
/// every call goes through a target handle made on the spot (the epoch is known to
/// cover every rank, so making one costs a few loads).
#[derive(Debug)]
pub(crate) struct Owned<'w> {
    pub(crate) win: Window<'w>,
}

impl<'w> Owned<'w> {
    /// Collectively allocates `count` elements of `T` on this rank, lets `init` write
    /// this rank's initial values, and opens the lock_all epoch once every rank is
    /// initialized.
    pub(crate) fn new<T: rma_datatype::Equivalence>(
        world: &'w World,
        count: usize,
        info: &Info,
        init: impl FnOnce(&Window<'w>) -> Result<()>,
    ) -> Result<Owned<'w>> {
        // the building blocks' own windows are not checked for conflicts (their
        // algorithms race by design, on atomics); a user's rma_check key is replaced
        let mut info = info.clone();
        info.set(rma_core::WinInfo::CHECK_KEY, "off");
        let win = Window::allocate::<T>(world, count, &info)?;
        init(&win)?;
        world.barrier()?;
        win.lock_all(Assert::NONE)?;
        Ok(Owned { win })
    }

    /// A handle on `rank` (checked: in the window).
    #[inline]
    pub(crate) fn target(&self, rank: Rank) -> Result<TargetHandle<'_, 'w>> {
        TargetHandle::new(&self.win, rank, false)
    }

    /// Collective: ends the epoch and frees the window (later calls: class WIN).
    pub(crate) fn free(&mut self) -> Result<()> {
        self.win.unlock_all()?;
        self.win.free()
    }
}

/// Every rank's `mine`; `Err` (class ARG, on every rank alike) unless all agree.
pub(crate) fn agree(world: &World, what: &str, mine: &[u8]) -> Result<()> {
    let all = world.allgather(mine)?;
    if let Some(r) = all.iter().position(|x| x != mine) {
        return Err(Error::arg(format!(
            "{what}: every rank must pass the same options (rank {r} differs from rank {})",
            world.rank()
        )));
    }
    Ok(())
}
