//! Synchronization state in shared memory: the passive-target lock of each window (a
//! fair ticket lock with reader counting) and the post/complete counters of
//! active-target (PSCW) epochs. Every wait spins briefly, then sleeps on a futex in
//! short slices, checking the peers' liveness between slices.

use crate::sys;
use crate::winmem::WindowMemory;
use crate::world::Liveness;
use rma_core::Result;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Waits until `cond(word)` holds; never busy-spins without bound.
fn wait_for(
    word: &AtomicU32,
    liveness: &Liveness,
    mut cond: impl FnMut(u32) -> bool,
) -> Result<()> {
    for _ in 0..100 {
        if cond(word.load(Ordering::Acquire)) {
            return Ok(());
        }
        std::hint::spin_loop();
    }
    for _ in 0..20 {
        if cond(word.load(Ordering::Acquire)) {
            return Ok(());
        }
        std::thread::yield_now();
    }
    let mut last_check = Instant::now();
    loop {
        let seen = word.load(Ordering::Acquire);
        if cond(seen) {
            return Ok(());
        }
        sys::futex_wait(word, seen, Duration::from_millis(5));
        if last_check.elapsed() > Duration::from_millis(20) {
            last_check = Instant::now();
            liveness.check()?;
        }
    }
}

/// Whether counter value `now` has reached `want` (wrapping u32 arithmetic).
fn reached(now: u32, want: u32) -> bool {
    (now.wrapping_sub(want) as i32) >= 0
}

impl WindowMemory {
    /// Acquires the passive-target lock of `target`'s window, shared or exclusive,
    /// blocking until granted. Requests are served in arrival order, so no origin
    /// starves.
    pub fn acquire_lock(&self, target: usize, exclusive: bool, liveness: &Liveness) -> Result<()> {
        let lock = self.lock_word(target);
        let ticket = lock.next.fetch_add(1, Ordering::AcqRel);
        // (if this wait fails, a peer died: the world is broken and the ticket is lost)
        wait_for(&lock.serving, liveness, |s| s == ticket)?;
        if exclusive {
            wait_for(&lock.readers, liveness, |r| r == 0)
        } else {
            lock.readers.fetch_add(1, Ordering::AcqRel);
            lock.serving.fetch_add(1, Ordering::AcqRel);
            sys::futex_wake_all(&lock.serving);
            Ok(())
        }
    }

    /// Releases a lock taken with [`WindowMemory::acquire_lock`].
    pub fn release_lock(&self, target: usize, exclusive: bool) {
        let lock = self.lock_word(target);
        if exclusive {
            lock.serving.fetch_add(1, Ordering::AcqRel);
            sys::futex_wake_all(&lock.serving);
        } else {
            lock.readers.fetch_sub(1, Ordering::AcqRel);
            sys::futex_wake_all(&lock.readers);
        }
    }

    /// Target side of post: tells `origin` that this rank exposes its window to it.
    pub fn post_to(&self, origin: usize) {
        let c = self.epoch_counter(origin, self.rank(), true);
        c.fetch_add(1, Ordering::AcqRel);
        sys::futex_wake_all(c);
    }

    /// Origin side of start: waits until `target` has posted to this rank `want`
    /// times in all.
    pub fn wait_posted(&self, target: usize, want: u32, liveness: &Liveness) -> Result<()> {
        let c = self.epoch_counter(self.rank(), target, true);
        wait_for(c, liveness, |now| reached(now, want))
    }

    /// Origin side of complete: tells `target` that this rank's access epoch to it is
    /// over (after every call to it was completed).
    pub fn complete_to(&self, target: usize) {
        let c = self.epoch_counter(target, self.rank(), false);
        c.fetch_add(1, Ordering::AcqRel);
        sys::futex_wake_all(c);
    }

    /// Target side of wait/test: whether `origin` has completed `want` access epochs
    /// to this rank in all.
    pub fn has_completed(&self, origin: usize, want: u32) -> bool {
        reached(
            self.epoch_counter(self.rank(), origin, false)
                .load(Ordering::Acquire),
            want,
        )
    }

    /// Target side of wait: waits until `origin` has completed `want` epochs in all.
    pub fn wait_completed(&self, origin: usize, want: u32, liveness: &Liveness) -> Result<()> {
        let c = self.epoch_counter(self.rank(), origin, false);
        wait_for(c, liveness, |now| reached(now, want))
    }
}
