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
    /// When the wait began: the first clock read (after at most 64 probes), or the
    /// call, for a caller's timeout. The limit counts from here.
    start: Option<Instant>,
    /// When the wait reached its parking phase (the clock is read at every probe
    /// from then on, and every 64th before).
    parked: Option<Instant>,
    last_check: Option<Instant>,
    limit: Duration,
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

    /// The checks of a wait that found nothing yet, without pausing (a future's poll):
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
        let step = self.pace.step();
        if step == Step::Park && self.parked.is_none() {
            self.parked = Some(Instant::now());
        }
        if !self.check(world)? {
            return Ok(false);
        }
        if let Some(parked) = self.parked {
            if wait_mode() != WaitMode::Park && parked.elapsed() < YIELD_FOR {
                std::thread::yield_now();
            } else {
                std::thread::sleep(NAP);
            }
        }
        Ok(true)
    }
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
