//! Which epochs are open on a window, tracked on this side of the shim so that a call
//! outside an epoch is refused (class RMA_SYNC) before MPI sees it, and a data call
//! knows whether it can complete before it returns.
//!
//! Only the synchronization calls that open or close epochs change this state, and
//! they take `&mut MpiWindow`, so data calls (`&self`, from any thread) read it
//! without synchronization.

use rma_core::{Error, LockType, Result};

/// How a data call on a target can complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A passive-target epoch (lock or lock_all) covers the target: request-based
    /// calls and flush_local are allowed, so every call completes before it returns.
    Passive,
    /// Only an active-target epoch (fence, or start with the target in the group)
    /// covers it: calls complete at the closing fence or complete.
    Active,
}

/// The epochs open on one window, as this rank sees them.
#[derive(Clone, Debug)]
pub(crate) struct MpiEpochs {
    /// A fence without NOSUCCEED was the last synchronization: RMA calls may follow.
    fence: bool,
    /// The start group, by rank, while an access epoch of PSCW is open.
    access: Option<Box<[bool]>>,
    /// An exposure epoch (post) is open.
    exposure: bool,
    lock_all: bool,
    locks: Box<[Option<LockType>]>,
    held: usize,
}

impl MpiEpochs {
    /// No epoch open on a window of `size` ranks.
    pub(crate) fn new(size: usize) -> MpiEpochs {
        MpiEpochs {
            fence: false,
            access: None,
            exposure: false,
            lock_all: false,
            locks: vec![None; size].into_boxed_slice(),
            held: 0,
        }
    }

    fn passive(&self, target: usize) -> bool {
        self.lock_all || self.locks[target].is_some()
    }

    fn active(&self, target: usize) -> bool {
        self.fence || self.access.as_ref().is_some_and(|g| g[target])
    }

    /// How a call on `target` completes, or an RMA_SYNC error if no access epoch
    /// covers it.
    pub(crate) fn mode(&self, target: usize, call: &'static str) -> Result<Mode> {
        if self.passive(target) {
            Ok(Mode::Passive)
        } else if self.active(target) {
            Ok(Mode::Active)
        } else {
            Err(Error::sync(
                call,
                format!("no access epoch covers rank {target} (open one with fence, start, lock or lock_all)"),
            ))
        }
    }

    /// `Ok` if a passive-target epoch covers `target`, which `call` needs.
    pub(crate) fn need_passive(&self, target: usize, call: &'static str) -> Result<()> {
        match self.mode(target, call)? {
            Mode::Passive => Ok(()),
            Mode::Active => Err(Error::sync(
                call,
                format!(
                    "rank {target} is reached in an active-target epoch, where MPI completes \
                     calls only at the closing fence or complete; fetching and request-based \
                     calls need a passive-target epoch (lock or lock_all)"
                ),
            )),
        }
    }

    /// Whether any passive-target epoch is open (flush_all, flush_local_all).
    pub(crate) fn need_any_passive(&self, call: &'static str) -> Result<()> {
        if self.lock_all || self.held > 0 {
            Ok(())
        } else {
            Err(Error::sync(call, "no passive-target epoch is open"))
        }
    }

    fn need_no_pscw(&self, call: &'static str) -> Result<()> {
        if self.access.is_some() || self.exposure {
            Err(Error::sync(
                call,
                "a post/start/complete/wait epoch is open",
            ))
        } else {
            Ok(())
        }
    }

    fn need_no_passive(&self, call: &'static str) -> Result<()> {
        if self.lock_all || self.held > 0 {
            Err(Error::sync(
                call,
                "a passive-target epoch (lock or lock_all) is open",
            ))
        } else {
            Ok(())
        }
    }

    /// Checks a fence.
    pub(crate) fn check_fence(&self) -> Result<()> {
        self.need_no_pscw("fence")?;
        self.need_no_passive("fence")
    }

    /// Whether the last synchronization was a fence that let RMA calls follow.
    pub(crate) fn fence_open(&self) -> bool {
        self.fence
    }

    /// Records a fence; `succeed` is false for NOSUCCEED.
    pub(crate) fn fenced(&mut self, succeed: bool) {
        self.fence = succeed;
    }

    /// Checks a lock on `target`.
    pub(crate) fn check_lock(&self, target: usize) -> Result<()> {
        if self.access.is_some() {
            return Err(Error::sync("lock", "a start/complete access epoch is open"));
        }
        if self.lock_all {
            return Err(Error::sync("lock", "lock_all is held"));
        }
        if self.locks[target].is_some() {
            return Err(Error::sync(
                "lock",
                format!("rank {target} is already locked"),
            ));
        }
        Ok(())
    }

    /// Records a lock on `target`.
    pub(crate) fn locked(&mut self, target: usize, kind: LockType) {
        self.locks[target] = Some(kind);
        self.held += 1;
        self.fence = false;
    }

    /// Checks an unlock of `target`.
    pub(crate) fn check_unlock(&self, target: usize) -> Result<()> {
        if self.locks[target].is_none() {
            return Err(Error::sync(
                "unlock",
                format!("rank {target} is not locked"),
            ));
        }
        Ok(())
    }

    /// Records an unlock of `target`.
    pub(crate) fn unlocked(&mut self, target: usize) {
        self.locks[target] = None;
        self.held -= 1;
    }

    /// Checks lock_all.
    pub(crate) fn check_lock_all(&self) -> Result<()> {
        if self.access.is_some() {
            return Err(Error::sync(
                "lock_all",
                "a start/complete access epoch is open",
            ));
        }
        self.need_no_passive("lock_all")
    }

    /// Records lock_all (`true`) or unlock_all (`false`).
    pub(crate) fn set_lock_all(&mut self, held: bool) {
        self.lock_all = held;
        self.fence = false;
    }

    /// Checks unlock_all.
    pub(crate) fn check_unlock_all(&self) -> Result<()> {
        if self.lock_all {
            Ok(())
        } else {
            Err(Error::sync("unlock_all", "lock_all is not held"))
        }
    }

    /// Checks start.
    pub(crate) fn check_start(&self) -> Result<()> {
        if self.access.is_some() {
            return Err(Error::sync(
                "start",
                "an access epoch (start) is already open",
            ));
        }
        self.need_no_passive("start")
    }

    /// Records start with the group `members` (by rank); `None` records complete.
    pub(crate) fn set_access(&mut self, members: Option<Box<[bool]>>) {
        self.access = members;
        self.fence = false;
    }

    /// Checks complete.
    pub(crate) fn check_complete(&self) -> Result<()> {
        if self.access.is_some() {
            Ok(())
        } else {
            Err(Error::sync("complete", "no access epoch (start) is open"))
        }
    }

    /// Checks post.
    pub(crate) fn check_post(&self) -> Result<()> {
        if self.exposure {
            Err(Error::sync(
                "post",
                "an exposure epoch (post) is already open",
            ))
        } else {
            Ok(())
        }
    }

    /// Records post (`true`) or the end of the exposure epoch (`false`).
    pub(crate) fn set_exposure(&mut self, open: bool) {
        self.exposure = open;
        self.fence = false;
    }

    /// Checks wait or test.
    pub(crate) fn check_wait(&self, call: &'static str) -> Result<()> {
        if self.exposure {
            Ok(())
        } else {
            Err(Error::sync(call, "no exposure epoch (post) is open"))
        }
    }

    /// The ranks locked individually, and whether lock_all is held.
    pub(crate) fn held(&self) -> (Vec<usize>, bool) {
        let ranks = (0..self.locks.len())
            .filter(|&r| self.locks[r].is_some())
            .collect();
        (ranks, self.lock_all)
    }

    /// Whether a start or post epoch is open.
    pub(crate) fn pscw(&self) -> (bool, bool) {
        (self.access.is_some(), self.exposure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rma_core::ErrorClass;

    #[test]
    fn calls_need_an_epoch_and_fetches_a_passive_one() {
        let mut e = MpiEpochs::new(4);
        assert_eq!(e.mode(1, "put").unwrap_err().class(), ErrorClass::RmaSync);
        e.fenced(true);
        assert_eq!(e.mode(1, "put").unwrap(), Mode::Active);
        assert_eq!(
            e.need_passive(1, "get").unwrap_err().class(),
            ErrorClass::RmaSync
        );
        e.fenced(false);
        e.locked(2, LockType::Shared);
        assert_eq!(e.mode(2, "get").unwrap(), Mode::Passive);
        assert!(e.mode(1, "get").is_err());
        assert!(e.check_lock(2).is_err() && e.check_lock_all().is_err());
        assert!(e.check_fence().is_err());
        e.unlocked(2);
        assert!(e.check_unlock(2).is_err());
        e.set_access(Some(vec![false, true, false, false].into()));
        assert_eq!(e.mode(1, "acc").unwrap(), Mode::Active);
        assert!(e.mode(0, "acc").is_err());
        assert!(e.check_fence().is_err() && e.check_start().is_err());
    }
}
