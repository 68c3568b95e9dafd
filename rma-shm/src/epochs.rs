//! Synchronization state in shared memory: the passive-target lock of each window (a
//! fair ticket lock with reader counting) and the post/complete counters of
//! active-target (PSCW) epochs. Every wait spins briefly, then sleeps on a futex in
//! short slices, checking the peers' liveness between slices.

use crate::sys;
use crate::winmem::WindowMemory;
use crate::world::Liveness;
use rma_core::{Error, Result};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Waits until `cond(word)` holds (or fails: a value no honest peer could have
/// written); never busy-spins without bound.
fn wait_for(
    word: &AtomicU32,
    liveness: &Liveness,
    mut cond: impl FnMut(u32) -> Result<bool>,
) -> Result<()> {
    for _ in 0..100 {
        if cond(word.load(Ordering::Acquire))? {
            return Ok(());
        }
        std::hint::spin_loop();
    }
    for _ in 0..20 {
        if cond(word.load(Ordering::Acquire))? {
            return Ok(());
        }
        std::thread::yield_now();
    }
    let mut last_check = Instant::now();
    loop {
        let seen = word.load(Ordering::Acquire);
        if cond(seen)? {
            return Ok(());
        }
        sys::futex_wait(word, seen, Duration::from_millis(5));
        if last_check.elapsed() > crate::world::liveness_interval() {
            last_check = Instant::now();
            liveness.check()?;
        }
    }
}

/// Whether counter value `now` has reached `want` (wrapping u32 arithmetic): the
/// comparison of every post / complete counter, here and in other epoch substrates.
pub fn reached(now: u32, want: u32) -> bool {
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
        wait_for(&lock.serving, liveness, |s| {
            if reached(s, ticket.wrapping_add(1)) {
                // the turn went past this ticket without it: the word was overwritten
                return Err(Error::Internal {
                    reason: format!("the lock word of rank {target} is corrupt (serving {s}, my ticket {ticket})"),
                });
            }
            Ok(s == ticket)
        })?;
        if exclusive {
            wait_for(&lock.readers, liveness, |r| Ok(r == 0))
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
        wait_for(c, liveness, |now| Ok(reached(now, want)))
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
        wait_for(c, liveness, |now| Ok(reached(now, want)))
    }
}

#[cfg(test)]
mod tests {
    use crate::winmem::{MemoryOptions, WindowMemory};
    use rma_core::ErrorClass;
    use std::sync::atomic::Ordering;

    /// Another process overwrote the lock word: the turn has gone past a new ticket.
    /// Acquiring is an error, not an endless wait.
    #[test]
    fn a_corrupt_lock_word_is_an_error() {
        let out = crate::run_threads(2, |world| {
            let mem = WindowMemory::allocate(&world, 64, 8, MemoryOptions { queues: false })?;
            world.barrier()?;
            if world.rank() == 1 {
                mem.lock_word(0).serving.store(1000, Ordering::Release);
            }
            world.barrier()?;
            let r = if world.rank() == 0 {
                mem.acquire_lock(0, true, &world.liveness())
            } else {
                Ok(())
            };
            world.barrier()?;
            r
        })
        .unwrap();
        assert_eq!(out[0].as_ref().unwrap_err().class(), ErrorClass::Intern);
        // an honest lock still works in a fresh window
        let out = crate::run_threads(2, |world| {
            let mem = WindowMemory::allocate(&world, 64, 8, MemoryOptions { queues: false })?;
            for _ in 0..100 {
                mem.acquire_lock(0, world.rank() == 0, &world.liveness())?;
                mem.release_lock(0, world.rank() == 0);
            }
            world.barrier()
        })
        .unwrap();
        assert!(out.iter().all(|r| r.is_ok()));
    }
}
