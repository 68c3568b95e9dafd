//! What a window's calls leave for a later synchronization: the origin copies MPI may
//! still read, and which targets have calls that only a flush completes.
//!
//! put and accumulate copy their origin data and return as soon as MPI has the call
//! (MPI_Put, MPI_Accumulate), without waiting for it: the copy is the origin buffer
//! until a synchronization completes the call, and then it is dropped. Fetching calls
//! (get, get_accumulate, fetch_and_op, compare_and_swap) complete with MPI_Win_flush of
//! their target, which also completes every earlier call to it; a target that nothing
//! has been issued to since is *clean*, and flushing it again is skipped. One call
//! plus one flush is what a C program makes; this keeps the transport at that.
//!
//! Threads may share a window, so both records are written in an order that never
//! loses a call:
//! - a call marks its target dirty *after* MPI has it, and a flush clears the mark
//!   *before* calling MPI: a call whose mark the flush cleared was issued before the
//!   flush began, so the flush completes it; a mark set later survives the flush.
//! - each copy gets a sequence number when it is kept, after its call was issued; a
//!   flush notes the next number before calling MPI and afterwards drops only its
//!   target's copies numbered below it.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Copies kept in a passive-target epoch before the window completes them all locally
/// (MPI_Win_flush_local_all), so that a long run of calls without a flush holds
/// bounded memory.
const MAX_COPIES: usize = 16 * 1024;
/// Bytes kept likewise.
const MAX_BYTES: usize = 64 << 20;

/// One origin copy MPI may still read.
struct Copy {
    rank: c_int,
    seq: u64,
    /// Boxed: MPI holds its address, which moving the record does not change.
    data: Box<[u8]>,
}

#[derive(Default)]
struct Copies {
    kept: Vec<Copy>,
    bytes: usize,
}

/// The origin copies and dirty targets of one window.
pub(crate) struct Pending {
    copies: Mutex<Copies>,
    /// The sequence number of the next copy kept.
    next: AtomicU64,
    /// How many copies are kept (read without the lock: a flush with none to drop
    /// takes no lock; one kept meanwhile is dropped by a later synchronization).
    count: AtomicUsize,
    /// Per target rank: a call to it waits for a flush to complete at the target.
    dirty: Box<[AtomicBool]>,
}

impl Pending {
    pub(crate) fn new(size: usize) -> Pending {
        Pending {
            copies: Mutex::new(Copies::default()),
            next: AtomicU64::new(0),
            count: AtomicUsize::new(0),
            dirty: (0..size).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    fn copies(&self) -> std::sync::MutexGuard<'_, Copies> {
        self.copies.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `data`, the origin of a call to `rank` that MPI has issued; `true` when
    /// the window now holds enough copies that it should complete them.
    pub(crate) fn keep(&self, rank: c_int, data: Box<[u8]>) -> bool {
        let mut c = self.copies();
        let seq = self.next.fetch_add(1, Ordering::AcqRel);
        c.bytes += data.len();
        c.kept.push(Copy { rank, seq, data });
        self.count.store(c.kept.len(), Ordering::Release);
        c.kept.len() >= MAX_COPIES || c.bytes >= MAX_BYTES
    }

    /// The number a synchronization notes before calling MPI: copies kept before it
    /// belong to calls it completes.
    pub(crate) fn mark(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    /// Drops the copies of calls to `rank` (every rank for `None`) kept before `mark`:
    /// a synchronization that began after them has completed them.
    pub(crate) fn release(&self, rank: Option<c_int>, mark: u64) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut c = self.copies();
        let mut freed = 0;
        c.kept.retain(|k| {
            let done = k.seq < mark && rank.is_none_or(|r| r == k.rank);
            if done {
                freed += k.data.len();
            }
            !done
        });
        c.bytes -= freed;
        self.count.store(c.kept.len(), Ordering::Release);
    }

    /// Marks `rank` as having a call that a flush must complete at the target.
    pub(crate) fn issued(&self, rank: c_int) {
        if let Some(d) = self.dirty.get(rank as usize) {
            d.store(true, Ordering::Release);
        }
    }

    /// Clears `rank`'s mark; whether it was set.
    pub(crate) fn take_dirty(&self, rank: c_int) -> bool {
        self.dirty
            .get(rank as usize)
            .is_some_and(|d| d.swap(false, Ordering::AcqRel))
    }

    /// Clears every rank's mark; whether any was set.
    pub(crate) fn take_all_dirty(&self) -> bool {
        self.dirty
            .iter()
            .fold(false, |any, d| d.swap(false, Ordering::AcqRel) | any)
    }

    /// Sets the marks back after a flush failed (`None`: every rank).
    pub(crate) fn restore_dirty(&self, rank: Option<c_int>) {
        match rank {
            Some(r) => self.issued(r),
            None => self
                .dirty
                .iter()
                .for_each(|d| d.store(true, Ordering::Release)),
        }
    }

    /// Whether copies wait for their calls to complete.
    pub(crate) fn has_copies(&mut self) -> bool {
        !self
            .copies
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .kept
            .is_empty()
    }

    /// After a closing synchronization of every epoch (fence, complete, unlock_all,
    /// or unlock of `rank`): drops the copies and the marks it covered.
    pub(crate) fn closed(&mut self, rank: Option<c_int>) {
        self.release(rank, u64::MAX);
        match rank {
            Some(r) => {
                self.take_dirty(r);
            }
            None => {
                self.take_all_dirty();
            }
        }
    }

    /// Keeps every copy alive for the rest of the process: MPI may still read them
    /// (the window could not be freed).
    pub(crate) fn leak(&mut self) {
        let c = std::mem::take(
            self.copies
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
        );
        std::mem::forget(c.kept);
        self.count.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::Pending;

    #[test]
    fn copies_go_only_when_a_synchronization_after_them_covers_their_target() {
        let mut p = Pending::new(3);
        p.keep(1, vec![1; 8].into());
        let m = p.mark();
        p.keep(1, vec![2; 8].into()); // kept after the flush of rank 1 began
        p.keep(2, vec![3; 8].into());
        p.release(Some(1), m);
        let left: Vec<(i32, u8)> = p
            .copies()
            .kept
            .iter()
            .map(|k| (k.rank, k.data[0]))
            .collect();
        assert_eq!(left, [(1, 2), (2, 3)]);
        assert_eq!(p.copies().bytes, 16);
        p.release(None, p.mark());
        assert!(!p.has_copies());
        assert_eq!(p.copies().bytes, 0);
    }

    #[test]
    fn a_flush_clears_only_the_marks_it_saw() {
        let p = Pending::new(2);
        assert!(!p.take_dirty(0), "clean at first");
        p.issued(0);
        assert!(p.take_dirty(0));
        assert!(!p.take_dirty(0), "a second flush has nothing to complete");
        p.issued(1);
        assert!(p.take_all_dirty());
        assert!(!p.take_all_dirty());
        p.restore_dirty(None);
        assert!(p.take_dirty(0) && p.take_dirty(1));
        assert!(!p.take_dirty(7), "a rank outside the window is never dirty");
    }

    #[test]
    fn the_bound_asks_for_completion() {
        let p = Pending::new(1);
        let full = (0..super::MAX_COPIES).map(|_| p.keep(0, vec![0; 1].into()));
        assert_eq!(
            full.filter(|f| *f).count(),
            1,
            "only the last copy reaches the bound"
        );
    }
}
