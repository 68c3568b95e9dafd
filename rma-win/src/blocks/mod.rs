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
    /// When the wait stopped spinning (the clock is read only from then on).
    since: Option<Instant>,
    /// For a caller's timeout: when the wait began (its limit counts from here).
    started: Option<Instant>,
    last_check: Option<Instant>,
    limit: Duration,
}

impl Patience {
    /// A wait ended after `limit` (the stall bound), counted from when it stops
    /// spinning (the clock is not read while it spins).
    pub(crate) fn new(limit: Duration) -> Patience {
        Patience {
            pace: Backoff::new(),
            probes: 0,
            since: None,
            started: None,
            last_check: None,
            limit,
        }
    }

    /// A wait ended after the caller's `timeout`, counted from now.
    pub(crate) fn timeout(timeout: Duration) -> Patience {
        Patience {
            started: Some(Instant::now()),
            ..Patience::new(timeout)
        }
    }

    /// The checks of a wait that found nothing yet, without pausing (a future's poll):
    /// PROC_FAILED once a peer is dead, [`Error::Stalled`] naming `what` past the limit.
    /// Reads the clock once every 64 probes.
    pub(crate) fn check(&mut self, world: &World, what: &dyn Fn() -> String) -> Result<()> {
        self.probes = self.probes.wrapping_add(1);
        if self.probes % 64 != 0 && self.since.is_none() {
            return Ok(());
        }
        let now = Instant::now();
        let since = self.started.unwrap_or(*self.since.get_or_insert(now));
        let last = *self.last_check.get_or_insert(since);
        if now.duration_since(last) >= LIVENESS_EVERY {
            self.last_check = Some(now);
            world.check_peers()?;
        }
        let waited = now.duration_since(since);
        if waited >= self.limit {
            world.check_peers()?;
            return Err(Error::Stalled {
                what: what(),
                waited_ms: waited.as_millis() as u64,
            });
        }
        Ok(())
    }

    /// After a probe that found nothing: the checks of [`Patience::check`], then one
    /// pause paced by `rma_core::wait` (spin, or yield), and once parked a yield for
    /// the first 2 ms ([`YIELD_FOR`]), then 50 µs sleeps.
    pub(crate) fn pause(&mut self, world: &World, what: &dyn Fn() -> String) -> Result<()> {
        match self.pace.step() {
            Step::Spin | Step::Yield => {
                if self.since.is_some() || self.started.is_some() {
                    self.check(world, what)?;
                } else {
                    self.probes = self.probes.wrapping_add(1);
                }
                Ok(())
            }
            Step::Park => {
                let parked = *self.since.get_or_insert_with(Instant::now);
                self.check(world, what)?;
                if wait_mode() != WaitMode::Park && parked.elapsed() < YIELD_FOR {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(NAP);
                }
                Ok(())
            }
        }
    }
}

/// Polls `probe` until it gives a value, pacing and bounding the wait ([`Patience`]).
pub(crate) fn wait_for<T>(
    world: &World,
    limit: Duration,
    what: &dyn Fn() -> String,
    mut probe: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let mut patience = Patience::new(limit);
    loop {
        if let Some(v) = probe()? {
            return Ok(v);
        }
        patience.pause(world, what)?;
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
        let win = Window::allocate::<T>(world, count, info)?;
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
