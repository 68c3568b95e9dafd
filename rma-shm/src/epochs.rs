//! Synchronization state in shared memory: the passive-target lock of each window (a
//! fair ticket lock with reader counting) and the post/complete counters of
//! active-target (PSCW) epochs. Every wait is [`crate::park::wait_on`]: it spins while
//! there are free cores, yields and parks on a futex when the node is oversubscribed,
//! and checks the peers' liveness while parked; a waker makes the wake-up system call
//! only when a waiter sleeps.
//!
//! **The lock as a queue.** A request takes a ticket (`next`), as in any ticket lock,
//! but then waits on a cache line of its own: the turn line of its ticket
//! ([`crate::winmem::TurnLine`], one per outstanding ticket). Whoever ends the turn
//! before it (an exclusive holder releasing, or a reader once it is counted in) stores
//! the next ticket into that ticket's line, waking it only if its waiter sleeps. So a
//! handoff moves one line between two ranks however many wait, where a shared
//! `serving` word that every waiter spins or sleeps on makes each release touch (or
//! wake) all of them. The ticket being served is the latest one handed to a line
//! (`WindowMemory::served`, read only by the checks), and a turn handed on by an
//! exclusive release says so in the line, so the next exclusive holder does not read
//! the reader count: an uncontended handoff touches the lock word only to take a
//! ticket. Arrival order, reader counting and every check below are those of the
//! plain ticket lock.
//!
//! The state lives in shared memory, where another process can overwrite it, so every
//! wait also checks that what it sees is possible, and ends in an error of class INTERN
//! naming the window's owner otherwise (never an endless sleep):
//!
//! - **Lock word and turn lines.** No turn line can hold a ticket past `next`, nor past
//!   its waiter's own ticket; at most one ticket per rank is outstanding
//!   (`next - served <= ranks`, the ticket served derived from the turn lines by
//!   `WindowMemory::served`); `readers` can never exceed the ranks. These are
//!   errors at once. Every origin also records its part in the lock in its own segment
//!   (its *claim*: waiting with ticket t, holding the
//!   turn of ticket t exclusively, or counted among the readers). A waiter compares the
//!   lock word with the claims at every liveness check: the ticket being served must be
//!   claimed by some rank, and `readers` must not exceed the ranks that claim to read.
//!   A lock held for a long time by a live rank is always claimed, so it is waited for
//!   as long as it is held; a ticket nobody holds (a skipped ticket, or one taken by a
//!   process outside the world) or a reader nobody is (a phantom) is an error once the
//!   lock word has stayed unchanged and unclaimed for the stall bound
//!   ([`crate::ENV_STALL_MS`], default 5 s; honest ranks are unclaimed only for the
//!   instant between taking a ticket and recording it). A claimant that died is
//!   reported by the liveness checks as PROC_FAILED, and so is a holder (of the turn,
//!   or a read) that left the window (dropped it or entered its free: it can never
//!   release) or waits in a collective call of the world that the waiter has not
//!   entered (each waits for the other: the world is broken, `crate::world`'s
//!   `Collective`).
//! - **Post / complete counters.** A target posts to an origin again only after that
//!   origin completed the previous epoch, which needs the previous post; so while an
//!   origin waits for post number `want`, the counter can only hold `want - 1` (not yet)
//!   or `want` (posted), and the same holds for complete counters. Any other value is an
//!   error at once. A counter at `want - 1` is a peer that has not posted (completed)
//!   yet, which MPI lets take as long as it likes: that wait ends when the peer posts,
//!   dies (PROC_FAILED) or leaves, or with PROC_FAILED once the peer left the window
//!   (dropped it or entered its free) or waits in a collective call this rank has not
//!   entered.

use crate::park;
use crate::winmem::{
    WindowMemory, CLAIM_EXCLUSIVE, CLAIM_NONE, CLAIM_SHARED, CLAIM_WAITING, DROPPED, FREEING,
};
use crate::world::{Collective, Liveness};
use rma_core::{Error, Result};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Waits until `cond(word)` holds (or fails: a value no honest peer could have
/// written), parked on `word` with its sleepers counted in `sleepers`. At every
/// liveness check (every peer's, or with `only`, that one peer's) `audit` looks at the
/// rest of the state and fails if it cannot end well.
fn wait_for(
    mem: &WindowMemory,
    (word, sleepers): (&AtomicU32, &AtomicU32),
    liveness: &Liveness,
    only: Option<usize>,
    cond: impl FnMut(u32) -> Result<bool>,
    mut audit: impl FnMut() -> Result<()>,
) -> Result<()> {
    park::wait_on(
        word,
        sleepers,
        cond,
        || {
            match only {
                None => liveness.check()?,
                Some(r) => liveness.check_rank(r)?,
            }
            audit()
        },
        || mem.help(),
    )
}

pub use rma_core::reached;

fn claim(ticket: u32, state: u32) -> u64 {
    (u64::from(ticket) << 32) | u64::from(state)
}

fn unclaim(word: u64) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

/// Watches one window's lock for state that can never end well (module docs).
struct LockAudit<'a> {
    mem: &'a WindowMemory,
    liveness: &'a Liveness,
    target: usize,
    bound: Duration,
    /// The lock state (next, the ticket served, readers) when an anomaly was first
    /// seen, and when.
    anomaly: Option<([u32; 3], Instant)>,
}

impl<'a> LockAudit<'a> {
    fn new(mem: &'a WindowMemory, target: usize, liveness: &'a Liveness) -> LockAudit<'a> {
        LockAudit {
            mem,
            liveness,
            target,
            bound: liveness.stall_bound(),
            anomaly: None,
        }
    }

    fn corrupt(&self, what: String) -> Error {
        lock_corrupt(self.target, what)
    }

    fn check(&mut self) -> Result<()> {
        let lock = self.mem.lock_word(self.target);
        let n = self.mem.ranks();
        let next = lock.next.load(Ordering::SeqCst);
        // (a turn line past `next` is an error here)
        let serving = self.mem.served(self.target, next)?;
        let readers = lock.readers.load(Ordering::SeqCst);
        if next.wrapping_sub(serving) as usize > n {
            return Err(self.corrupt(format!(
                "{} tickets are outstanding, more than the {n} ranks can hold",
                next.wrapping_sub(serving)
            )));
        }
        if readers as usize > n {
            return Err(self.corrupt(format!(
                "{readers} readers are inside, more than the {n} ranks"
            )));
        }
        let claims: Vec<(u32, u32)> = (0..n)
            .map(|o| unclaim(self.mem.lock_claim(self.target, o).load(Ordering::SeqCst)))
            .collect();
        let turn_claimed = next == serving
            || claims
                .iter()
                // (a reader holds the turn briefly too: counted in, about to pass it on)
                .any(|&(t, s)| t == serving && s != CLAIM_NONE);
        let reading = claims.iter().filter(|c| c.1 == CLAIM_SHARED).count();
        // an exclusive request holds the turn: it waits for the readers to leave (this
        // rank's own drain, or the request this rank queues behind)
        let turn_exclusive = claims
            .iter()
            .any(|&(t, s)| t == serving && s == CLAIM_EXCLUSIVE);
        // the ranks this rank's request waits for must be able to let go: the one
        // that holds the turn, and the readers only behind an exclusive turn (a read
        // that passed the turn on blocks no shared request queued after it)
        for (o, &(t, st)) in claims.iter().enumerate() {
            let holds_turn = t == serving && st != CLAIM_NONE;
            let blocks = holds_turn || (st == CLAIM_SHARED && turn_exclusive);
            if blocks && o != self.mem.rank() {
                let still = || {
                    unclaim(self.mem.lock_claim(self.target, o).load(Ordering::Acquire)) == (t, st)
                };
                let what = format!(
                    "the passive-target lock of rank {}'s window, which it holds",
                    self.target
                );
                self.mem.owes(self.liveness, o, &what, still)?;
            }
        }
        let what = if !turn_claimed {
            format!("the turn belongs to ticket {serving}, which no rank holds")
        } else if readers as usize > reading {
            format!("{readers} readers are counted inside, but {reading} ranks claim to be")
        } else {
            self.anomaly = None;
            return Ok(());
        };
        let word = [next, serving, readers];
        match self.anomaly {
            Some((w, since)) if w == word => {
                if since.elapsed() >= self.bound {
                    return Err(Error::Stalled {
                        what: format!(
                            "the passive-target lock of rank {}'s window ({what}; another process wrote into it, or a rank stopped between taking a ticket and recording it)",
                            self.target
                        ),
                        waited_ms: since.elapsed().as_millis() as u64,
                    });
                }
            }
            _ => self.anomaly = Some((word, Instant::now())),
        }
        Ok(())
    }
}

#[cold]
fn bad_mark(r: usize, v: u32) -> Error {
    Error::Internal {
        reason: format!(
            "rank {r}'s free mark holds {v}: another process wrote into the window's control state"
        ),
    }
}

fn lock_corrupt(target: usize, what: String) -> Error {
    Error::Internal {
        reason: format!(
            "the passive-target lock of rank {target}'s window is corrupt: {what} (another process wrote into it)"
        ),
    }
}

/// Which PSCW counter, for errors.
#[derive(Clone, Copy)]
enum Counter {
    Post,
    Complete,
}

#[cold]
fn counter_corrupt(which: Counter, peer: usize, owner: usize, now: u32, want: u32) -> Error {
    let what = match which {
        Counter::Post => "post",
        Counter::Complete => "complete",
    };
    Error::Internal {
        reason: format!(
            "the {what} counter of rank {peer} in rank {owner}'s window holds {now}, where only {} or {want} are possible (another process wrote into it)",
            want.wrapping_sub(1)
        ),
    }
}

/// Whether the `which` counter of `peer` in `owner`'s window, at `now`, has reached
/// `want`; an error unless `now` is `want - 1` or `want` (module docs).
fn epoch_reached(which: Counter, peer: usize, owner: usize, now: u32, want: u32) -> Result<bool> {
    if now == want {
        Ok(true)
    } else if now == want.wrapping_sub(1) {
        Ok(false)
    } else {
        Err(counter_corrupt(which, peer, owner, now, want))
    }
}

impl WindowMemory {
    /// Acquires the passive-target lock of `target`'s window, shared or exclusive,
    /// blocking until granted. Requests are served in arrival order, so no origin
    /// starves; each waits on its own turn line (module docs). Lock state that can
    /// never be granted is an error (module docs). A rank has at most one request on a
    /// target's lock at a time (its claim is one word).
    pub fn acquire_lock(&self, target: usize, exclusive: bool, liveness: &Liveness) -> Result<()> {
        let lock = self.lock_word(target);
        let mine = self.lock_claim(target, self.rank());
        let n = self.ranks();
        let ticket = lock.next.fetch_add(1, Ordering::AcqRel);
        // Claims are this rank's own words (in its segment) and only the audit reads
        // them: Release stores suffice, because a claim that must be seen before a
        // counter (`readers`) precedes that counter's read-modify-write, and one cleared
        // after leaving follows it; the audit tolerates the instant in between.
        mine.store(claim(ticket, CLAIM_WAITING), Ordering::Release);
        let line = self.turn_line(target, ticket);
        let mut audit = LockAudit::new(self, target, liveness);
        // (if a wait fails, a peer died or the lock is corrupt: the ticket is lost)
        let turn = wait_for(
            self,
            (&line.go, &line.sleepers),
            liveness,
            None,
            |go| {
                if go == ticket {
                    return Ok(true);
                }
                if go.wrapping_sub(ticket) as i32 > 0 {
                    // handed a ticket past this one: the line was overwritten
                    return Err(lock_corrupt(
                        target,
                        format!("the turn line of ticket {ticket} holds ticket {go}"),
                    ));
                }
                Ok(false)
            },
            || audit.check(),
        );
        if let Err(e) = turn {
            mine.store(claim(0, CLAIM_NONE), Ordering::Release);
            return Err(e);
        }
        if exclusive {
            mine.store(claim(ticket, CLAIM_EXCLUSIVE), Ordering::Release);
            if line.drained.load(Ordering::Relaxed) == 1 {
                // handed on by an exclusive release: no reader is inside (TurnLine)
                return Ok(());
            }
            let drained = wait_for(
                self,
                (&lock.readers, &lock.drain_sleepers),
                liveness,
                None,
                |r| {
                    if r as usize > n {
                        return Err(lock_corrupt(
                            target,
                            format!("{r} readers are inside, more than the {n} ranks"),
                        ));
                    }
                    Ok(r == 0)
                },
                || audit.check(),
            );
            if drained.is_err() {
                mine.store(claim(0, CLAIM_NONE), Ordering::Release);
            }
            drained
        } else {
            let r = lock.readers.load(Ordering::Acquire);
            if r as usize >= n {
                mine.store(claim(0, CLAIM_NONE), Ordering::Release);
                return Err(lock_corrupt(
                    target,
                    format!("{r} readers are inside before this rank enters, with {n} ranks"),
                ));
            }
            // claimed before counted, so `readers` never exceeds the claims
            mine.store(claim(ticket, CLAIM_SHARED), Ordering::Release);
            lock.readers.fetch_add(1, Ordering::AcqRel);
            self.pass_turn(target, ticket, false);
            Ok(())
        }
    }

    /// Ends the turn of `ticket` on `target`'s lock: the next ticket's turn line is
    /// handed the turn (and woken only if its waiter sleeps); `drained` says no reader
    /// is inside (an exclusive release). Only the rank whose turn it is calls this,
    /// once per turn.
    fn pass_turn(&self, target: usize, ticket: u32, drained: bool) {
        let next = ticket.wrapping_add(1);
        let line = self.turn_line(target, next);
        // read by the next holder after it sees `go` (Release / Acquire)
        line.drained.store(u32::from(drained), Ordering::Relaxed);
        line.go.store(next, Ordering::SeqCst);
        park::wake(&line.go, &line.sleepers);
    }

    /// Releases a lock taken with [`WindowMemory::acquire_lock`]. If the lock word or
    /// this rank's claim says this rank does not hold it (someone overwrote them), the
    /// release is refused with an error of class INTERN and nothing changes.
    pub fn release_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        let lock = self.lock_word(target);
        let mine = self.lock_claim(target, self.rank());
        let (ticket, state) = unclaim(mine.load(Ordering::Relaxed));
        if exclusive {
            if state != CLAIM_EXCLUSIVE {
                return Err(lock_corrupt(
                    target,
                    format!("this rank's claim says {state}, not the exclusive holder"),
                ));
            }
            // pass the turn on only if it is still this rank's (its own line says so)
            let go = self.turn_line(target, ticket).go.load(Ordering::Acquire);
            if go != ticket {
                return Err(lock_corrupt(
                    target,
                    format!("the turn line of this rank's ticket {ticket} holds ticket {go}"),
                ));
            }
            mine.store(claim(0, CLAIM_NONE), Ordering::Release);
            self.pass_turn(target, ticket, true);
        } else {
            if state != CLAIM_SHARED {
                return Err(lock_corrupt(
                    target,
                    format!("this rank's claim says {state}, not a reader"),
                ));
            }
            let n = self.ranks() as u32;
            let before = lock
                .readers
                // SeqCst: ordered before the load of the drain sleepers in `wake`
                .fetch_update(Ordering::SeqCst, Ordering::Acquire, |r| {
                    (r > 0 && r <= n).then(|| r - 1)
                })
                .map_err(|r| {
                    lock_corrupt(
                        target,
                        format!("{r} readers are inside while this rank leaves, with {n} ranks"),
                    )
                })?;
            // cleared after leaving, so `readers` never exceeds the claims
            mine.store(claim(0, CLAIM_NONE), Ordering::Release);
            if before == 1 {
                park::wake(&lock.readers, &lock.drain_sleepers);
            }
        }
        Ok(())
    }

    /// The synchronization of a window's collective free: enters it as this rank's
    /// next collective call of the world (`Collective::Free`, see `crate::world`), marks this rank as
    /// freeing the window (a word in its own lock block that only this rank writes),
    /// then waits until every rank has marked it, by freeing it or by dropping it
    /// ([`WindowMemory::depart`]). Once every mark is set every rank passes (marks are
    /// never cleared). A rank fails while a mark is missing and that rank is dead, or
    /// entered another collective call in this free's place (the world is then broken:
    /// `Collective`), and on a broken world (at once, before marking, or after the
    /// wait if the world broke meanwhile). So no world-level
    /// collective (a peer's barrier or all-gather), and no other window's free, can
    /// stand in for a free; and once this rank has set its mark it must never reach
    /// the window's memory again, whatever this returns, since peers may pass and
    /// release theirs (the caller's duty: rma-shm's windows refuse every call after).
    pub fn free_barrier(&self, liveness: &Liveness) -> Result<()> {
        // a broken world frees nothing (its windows are left, as under MPI)
        liveness.check_broken()?;
        let entry = liveness.enter(Collective::Free(self.id()), true);
        let own = self.lock_word(self.rank());
        own.freeing.store(FREEING, Ordering::SeqCst);
        park::wake(&own.freeing, &own.free_sleepers);
        let marked = |v: u32, r: usize| match v {
            0 => Ok(false),
            FREEING | DROPPED => Ok(true),
            v => Err(bad_mark(r, v)),
        };
        let waited = (0..self.ranks()).try_for_each(|r| {
            let theirs = self.lock_word(r);
            wait_for(
                self,
                (&theirs.freeing, &theirs.free_sleepers),
                liveness,
                Some(r),
                |v| marked(v, r),
                || liveness.audit_arrival(entry, r, || theirs.freeing.load(Ordering::Acquire) != 0),
            )
        });
        liveness.leave(entry);
        waited?;
        // every rank marked the window; but a world that broke meanwhile frees nothing
        // (a rank that found its collective calls out of step may have dropped the
        // window since): this rank's free fails like every other call of the world
        liveness.check_broken()
    }

    /// Whether this rank has set its free mark ([`WindowMemory::free_barrier`],
    /// [`WindowMemory::depart`]).
    pub fn free_marked(&self) -> bool {
        self.lock_word(self.rank()).freeing.load(Ordering::Relaxed) != 0
    }

    /// Tells the peers that this rank dropped the window without freeing it: its free
    /// mark becomes `DROPPED` (unless it was set already), and the drop is entered as
    /// this rank's next collective call (`Collective::Drop`, without waiting), as if
    /// it had entered the window's free. A peer freeing the window then passes; a wait
    /// for this rank's lock, post or complete ends with PROC_FAILED naming it. Never
    /// blocks. The caller must never reach the window's memory again.
    pub fn depart(&self, liveness: &Liveness) {
        let own = self.lock_word(self.rank());
        if own
            .freeing
            .compare_exchange(0, DROPPED, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            park::wake(&own.freeing, &own.free_sleepers);
            // after the mark: a peer that reads this entry sees the mark too
            liveness.enter(Collective::Drop(self.id()), false);
        }
    }

    /// For a wait of this rank on `peer` (`waits_for`: what `peer` holds or owes):
    /// `Err` if `peer` can never provide it, confirmed by `still` (asked after
    /// `peer`'s state was read, so it sees what `peer` did before: `true` if the wait
    /// is still on). `peer` left the window (dropped it, or entered its free: its mark
    /// is set): PROC_FAILED naming it. `peer` waits inside a collective call this rank
    /// has not entered: each waits for the other, so the world is broken
    /// ([`Collective`]).
    fn owes(
        &self,
        liveness: &Liveness,
        peer: usize,
        waits_for: &str,
        still: impl FnOnce() -> bool,
    ) -> Result<()> {
        let mark = self.lock_word(peer).freeing.load(Ordering::Acquire);
        let blocked = liveness.blocked_on(peer);
        if (mark == 0 && blocked.is_none()) || !still() {
            return Ok(());
        }
        if mark != 0 {
            let how = if mark == DROPPED {
                "dropped the window without freeing it"
            } else {
                "entered the window's free"
            };
            return Err(Error::ProcFailed {
                rank: rma_core::Rank::new(peer as u32),
                reason: format!(
                    "it {how} while this rank waits for it ({waits_for}): that can never come"
                ),
            });
        }
        match blocked {
            Some(theirs) => Err(liveness.deadlock(peer, theirs, waits_for)),
            None => Ok(()),
        }
    }

    /// Target side of post: tells `origin` that this rank exposes its window to it.
    pub fn post_to(&self, origin: usize) {
        let c = self.epoch_counter(origin, self.rank(), true);
        c.fetch_add(1, Ordering::SeqCst);
        park::wake(c, &self.lock_word(origin).epoch_sleepers);
    }

    /// Origin side of start: waits until `target` has posted to this rank `want`
    /// times in all (the counter can then only hold `want - 1` or `want`: anything
    /// else is an error of class INTERN).
    pub fn wait_posted(&self, target: usize, want: u32, liveness: &Liveness) -> Result<()> {
        let me = self.rank();
        let c = self.epoch_counter(me, target, true);
        wait_for(
            self,
            (c, &self.lock_word(me).epoch_sleepers),
            liveness,
            None,
            |now| epoch_reached(Counter::Post, target, me, now, want),
            || {
                let short = || !reached(c.load(Ordering::Acquire), want);
                self.owes(liveness, target, "its post", short)
            },
        )
    }

    /// Origin side of complete: tells `target` that this rank's access epoch to it is
    /// over (after every call to it was completed).
    pub fn complete_to(&self, target: usize) {
        let c = self.epoch_counter(target, self.rank(), false);
        c.fetch_add(1, Ordering::SeqCst);
        park::wake(c, &self.lock_word(target).epoch_sleepers);
    }

    /// Target side of wait/test: whether `origin` has completed `want` access epochs
    /// to this rank in all (an error of class INTERN if the counter holds neither
    /// `want - 1` nor `want`).
    pub fn has_completed(&self, origin: usize, want: u32) -> Result<bool> {
        let me = self.rank();
        let now = self
            .epoch_counter(me, origin, false)
            .load(Ordering::Acquire);
        epoch_reached(Counter::Complete, origin, me, now, want)
    }

    /// Target side of wait: waits until `origin` has completed `want` epochs in all.
    pub fn wait_completed(&self, origin: usize, want: u32, liveness: &Liveness) -> Result<()> {
        let me = self.rank();
        let c = self.epoch_counter(me, origin, false);
        wait_for(
            self,
            (c, &self.lock_word(me).epoch_sleepers),
            liveness,
            None,
            |now| epoch_reached(Counter::Complete, origin, me, now, want),
            || {
                let short = || !reached(c.load(Ordering::Acquire), want);
                self.owes(liveness, origin, "its complete", short)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::winmem::{MemoryOptions, WindowMemory};
    use crate::world::Liveness;
    use rma_core::{ErrorClass, Result};
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    const STALL: Duration = Duration::from_millis(200);
    /// Past this, a wait counts as endless: the watchdog repairs the state, so code
    /// that would wait forever returns (and fails the test) instead of hanging it.
    const DEADLINE: Duration = Duration::from_secs(5);

    /// On two ranks with a stall bound of [`STALL`]: rank 1 runs `attack` on rank 0's
    /// window state, then rank 0 runs `op` while rank 1 watches; past [`DEADLINE`]
    /// rank 1 runs `repair`. Returns rank 0's result and how long it took.
    fn case(
        attack: impl Fn(&WindowMemory) + Sync,
        op: impl Fn(&WindowMemory, &Liveness) -> Result<()> + Sync,
        repair: impl Fn(&WindowMemory) + Sync,
    ) -> (Result<()>, Duration) {
        let done = AtomicBool::new(false);
        let out = crate::run_threads(2, |world| -> Result<Option<(Result<()>, Duration)>> {
            world.set_stall_bound(STALL);
            let mem = WindowMemory::allocate(&world, 64, 8, MemoryOptions { queues: false })?;
            world.barrier()?;
            if world.rank() == 1 {
                attack(&mem);
            }
            world.barrier()?;
            let mine = if world.rank() == 0 {
                let start = Instant::now();
                let r = op(&mem, &world.liveness());
                let took = start.elapsed();
                done.store(true, Ordering::SeqCst);
                Some((r, took))
            } else {
                let start = Instant::now();
                let mut repaired = false;
                while !done.load(Ordering::SeqCst) {
                    if !repaired && start.elapsed() > DEADLINE {
                        repair(&mem);
                        repaired = true;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                None
            };
            world.barrier()?;
            Ok(mine)
        })
        .unwrap();
        out.into_iter()
            .next()
            .and_then(|r| r.unwrap())
            .expect("rank 0's result")
    }

    fn expect_intern(what: &str, (r, took): (Result<()>, Duration), within: Duration) {
        match r {
            Err(e) if e.class() == ErrorClass::Intern && took < within => {
                eprintln!("{what}: \"{e}\" after {took:?}")
            }
            other => {
                panic!("{what}: expected INTERN within {within:?}, got {other:?} after {took:?}")
            }
        }
    }

    /// A reader that nobody is (`readers` raised by another process): an exclusive
    /// request would wait forever; it is an error once the lock word has stayed
    /// unclaimed for the stall bound.
    #[test]
    fn a_phantom_reader_is_an_error_within_the_stall_bound() {
        let r = case(
            |m| {
                m.lock_word(0).readers.fetch_add(1, Ordering::SeqCst);
            },
            |m, l| m.acquire_lock(0, true, l),
            |m| m.lock_word(0).readers.store(0, Ordering::SeqCst),
        );
        expect_intern("phantom reader", r, STALL + Duration::from_secs(2));
    }

    /// A ticket that nobody holds (`next` raised by another process, as a process
    /// outside the world taking a ticket would): the turn stops there; it is an error
    /// once it has stayed unclaimed for the stall bound.
    #[test]
    fn a_skipped_ticket_is_an_error_within_the_stall_bound() {
        let r = case(
            |m| {
                m.lock_word(0).next.fetch_add(1, Ordering::SeqCst);
            },
            |m, l| m.acquire_lock(0, false, l),
            |m| {
                m.turn_line(0, 1).go.store(1, Ordering::SeqCst); // hand the waiter (ticket 1) its turn
            },
        );
        expect_intern("skipped ticket", r, STALL + Duration::from_secs(2));
    }

    /// Lock words no ranks could produce are errors at the first check, without the
    /// stall bound: more readers than ranks, more tickets outstanding than ranks.
    #[test]
    fn impossible_lock_words_are_errors_at_once() {
        let r = case(
            |m| m.lock_word(0).readers.store(1000, Ordering::SeqCst),
            |m, l| m.acquire_lock(0, true, l),
            |m| m.lock_word(0).readers.store(0, Ordering::SeqCst),
        );
        expect_intern("1000 readers", r, STALL);
        let r = case(
            |m| {
                m.lock_word(0).next.fetch_add(50, Ordering::SeqCst);
            },
            |m, l| m.acquire_lock(0, true, l),
            |m| {
                m.turn_line(0, 50).go.store(50, Ordering::SeqCst);
            },
        );
        expect_intern("50 tickets outstanding", r, STALL);
    }

    /// A lock held honestly for several stall bounds is still granted when it is
    /// released: a live holder claims it, so its waiters wait.
    #[test]
    fn a_lock_held_longer_than_the_stall_bound_is_still_granted() {
        for exclusive_holder in [true, false] {
            let out = crate::run_threads(2, |world| -> Result<Duration> {
                world.set_stall_bound(STALL);
                let mem = WindowMemory::allocate(&world, 64, 8, MemoryOptions { queues: false })?;
                let live = world.liveness();
                let start = Instant::now();
                if world.rank() == 1 {
                    mem.acquire_lock(0, exclusive_holder, &live)?;
                    world.barrier()?;
                    std::thread::sleep(4 * STALL);
                    mem.release_lock(0, exclusive_holder)?;
                } else {
                    world.barrier()?;
                    // shared after an exclusive holder, exclusive after a reader
                    mem.acquire_lock(0, !exclusive_holder, &live)?;
                    mem.release_lock(0, !exclusive_holder)?;
                }
                world.barrier()?;
                Ok(start.elapsed())
            })
            .unwrap();
            let waited = out[0].as_ref().expect("the waiter got the lock");
            assert!(*waited >= 4 * STALL, "waited only {waited:?}");
        }
    }

    /// Post and complete counters can only be one behind what a waiter wants, or
    /// exactly it: a counter ahead (which used to end the wait early) or far behind
    /// (which used to make it endless) is an error at once.
    #[test]
    fn garbage_pscw_counters_are_errors() {
        fn posted(m: &WindowMemory) -> &AtomicU32 {
            m.epoch_counter(0, 1, true)
        }
        fn completed(m: &WindowMemory) -> &AtomicU32 {
            m.epoch_counter(0, 1, false)
        }
        let r = case(
            |m| posted(m).store(77, Ordering::SeqCst),
            |m, l| m.wait_posted(1, 1, l),
            |_| {},
        );
        expect_intern("post counter ahead", r, STALL);
        let r = case(
            |m| posted(m).store(u32::MAX - 9, Ordering::SeqCst),
            |m, l| m.wait_posted(1, 1, l),
            |m| posted(m).store(1, Ordering::SeqCst),
        );
        expect_intern("post counter far behind", r, STALL);
        let r = case(
            |m| completed(m).store(u32::MAX - 9, Ordering::SeqCst),
            |m, l| m.wait_completed(1, 1, l),
            |m| completed(m).store(1, Ordering::SeqCst),
        );
        expect_intern("complete counter far behind", r, STALL);
        let r = case(
            |m| completed(m).store(5, Ordering::SeqCst),
            |m, _| m.has_completed(1, 1).map(|_| ()),
            |_| {},
        );
        expect_intern("complete counter ahead (test)", r, STALL);
        // honest counters: one behind, then there
        let r = case(
            |m| posted(m).store(1, Ordering::SeqCst),
            |m, l| {
                assert!(!m.has_completed(1, 1)?);
                m.wait_posted(1, 1, l)
            },
            |_| {},
        );
        assert!(r.0.is_ok(), "{r:?}");
    }

    /// A release whose lock state says this rank does not hold the lock (its turn line
    /// holds another ticket, the readers are gone) is refused, and nothing changes.
    #[test]
    fn a_release_that_does_not_match_the_lock_word_changes_nothing() {
        let out = crate::run_threads(1, |world| -> Result<()> {
            let mem = WindowMemory::allocate(&world, 64, 8, MemoryOptions { queues: false })?;
            let lock = mem.lock_word(0);
            mem.acquire_lock(0, true, &world.liveness())?;
            // the turn line of this rank's ticket (0) now holds another ticket
            let line = mem.turn_line(0, 0);
            line.go.store(2, Ordering::SeqCst);
            let e = mem
                .release_lock(0, true)
                .expect_err("the turn is not this rank's");
            assert_eq!(e.class(), ErrorClass::Intern, "{e}");
            // (one rank: ticket 1's line is this same line, so nothing was handed on)
            assert_eq!(line.go.load(Ordering::SeqCst), 2);
            line.go.store(0, Ordering::SeqCst);
            mem.release_lock(0, true)?;
            mem.acquire_lock(0, false, &world.liveness())?;
            lock.readers.store(0, Ordering::SeqCst);
            let e = mem.release_lock(0, false).expect_err("no reader is inside");
            assert_eq!(e.class(), ErrorClass::Intern, "{e}");
            assert_eq!(lock.readers.load(Ordering::SeqCst), 0);
            Ok(())
        })
        .unwrap();
        out[0].as_ref().unwrap();
    }

    /// Tickets are u32 and wrap: a lock whose tickets pass u32::MAX stays exclusive and
    /// hands every turn on (the turn lines are a power of two, which divides 2^32).
    #[test]
    fn the_lock_works_across_ticket_wrap_around() {
        for ranks in [1usize, 2, 3] {
            let plain = std::sync::atomic::AtomicU64::new(0);
            let out = crate::run_threads(ranks, |world| -> Result<()> {
                let mem = WindowMemory::allocate(&world, 64, 8, MemoryOptions { queues: false })?;
                if world.rank() == 0 {
                    // as if 2^32 - 7 turns had passed: every line holds the last ticket
                    // handed to it, the latest being the next one's
                    let start = u32::MAX - 6;
                    mem.lock_word(0).next.store(start, Ordering::SeqCst);
                    let lines = ranks.next_power_of_two() as u32;
                    for k in 0..lines {
                        let t = start.wrapping_sub(k);
                        mem.turn_line(0, t).go.store(t, Ordering::SeqCst);
                    }
                    assert_eq!(mem.served(0, start)?, start);
                }
                world.barrier()?;
                for i in 0..200u64 {
                    let exclusive = i % 3 != 0;
                    mem.acquire_lock(0, exclusive, &world.liveness())?;
                    if exclusive {
                        let v = plain.load(Ordering::Relaxed);
                        plain.store(v + 1, Ordering::Relaxed);
                    }
                    mem.release_lock(0, exclusive)?;
                }
                world.barrier()?;
                let next = mem.lock_word(0).next.load(Ordering::SeqCst);
                assert_eq!(next, (u32::MAX - 6).wrapping_add(200 * ranks as u32));
                assert_eq!(mem.served(0, next)?, next, "every turn was handed on");
                Ok(())
            })
            .unwrap();
            assert!(out.iter().all(|r| r.is_ok()), "{out:?}");
            let writes = (0..200u64).filter(|i| i % 3 != 0).count() as u64;
            assert_eq!(plain.load(Ordering::SeqCst), writes * ranks as u64);
        }
    }

    /// Another process overwrote the lock word: the turn has gone past a new ticket.
    /// Acquiring is an error, not an endless wait.
    #[test]
    fn a_corrupt_lock_word_is_an_error() {
        let out = crate::run_threads(2, |world| {
            let mem = WindowMemory::allocate(&world, 64, 8, MemoryOptions { queues: false })?;
            world.barrier()?;
            if world.rank() == 1 {
                // the turn line of the next ticket (0) holds a ticket far past it
                mem.turn_line(0, 0).go.store(1000, Ordering::Release);
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
                mem.release_lock(0, world.rank() == 0)?;
            }
            world.barrier()
        })
        .unwrap();
        assert!(out.iter().all(|r| r.is_ok()));
    }
}

#[cfg(test)]
mod queued_readers {
    use super::{claim, CLAIM_SHARED, CLAIM_WAITING};
    use crate::winmem::{MemoryOptions, WindowMemory};
    use rma_core::Result;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    /// A shared request queued behind a rank that took its ticket and was then
    /// descheduled, while a reader that already passed the turn on waits in a world
    /// barrier: the reader blocks nobody's shared request (only an exclusive turn
    /// waits for readers), so the queued rank waits for the slow one and gets the lock,
    /// never PROC_FAILED (a correct `lock_all(); barrier()` at 3 ranks, under load).
    #[test]
    fn a_shared_request_is_not_blocked_by_a_reader_that_passed_the_turn() {
        static STEP: AtomicU32 = AtomicU32::new(0);
        let deadline = Instant::now() + Duration::from_secs(60);
        let wait_step = |s: u32| {
            while STEP.load(Ordering::Acquire) < s {
                assert!(Instant::now() < deadline, "step {s} never came");
                std::thread::yield_now();
            }
        };
        let out = crate::run_threads(3, |world| -> Result<()> {
            let mem = WindowMemory::allocate(&world, 64, 8, MemoryOptions { queues: false })?;
            let live = world.liveness();
            world.barrier()?;
            match world.rank() {
                0 => {
                    // ticket 0: a read, the turn passed on to ticket 1
                    mem.acquire_lock(0, false, &live)?;
                    STEP.store(1, Ordering::Release);
                    world.barrier()?; // waits here for the others
                }
                1 => {
                    wait_step(1);
                    // ticket 1, taken and claimed, and then a long pause (descheduled)
                    let lock = mem.lock_word(0);
                    let ticket = lock.next.fetch_add(1, Ordering::AcqRel);
                    let mine = mem.lock_claim(0, 1);
                    mine.store(claim(ticket, CLAIM_WAITING), Ordering::Release);
                    STEP.store(2, Ordering::Release);
                    std::thread::sleep(10 * crate::world::liveness_interval());
                    // its turn came meanwhile: enter as a reader and pass it on
                    let line = mem.turn_line(0, ticket);
                    while line.go.load(Ordering::Acquire) != ticket {
                        assert!(Instant::now() < deadline, "ticket {ticket} never served");
                        std::thread::yield_now();
                    }
                    mine.store(claim(ticket, CLAIM_SHARED), Ordering::Release);
                    lock.readers.fetch_add(1, Ordering::AcqRel);
                    mem.pass_turn(0, ticket, false);
                    world.barrier()?;
                }
                _ => {
                    wait_step(2);
                    // ticket 2: waits for ticket 1's holder, audited meanwhile
                    mem.acquire_lock(0, false, &live)?;
                    world.barrier()?;
                }
            }
            mem.release_lock(0, false)?;
            world.barrier()
        })
        .expect("threads");
        for (r, o) in out.iter().enumerate() {
            assert!(o.is_ok(), "rank {r}: {o:?}");
        }
    }
}
