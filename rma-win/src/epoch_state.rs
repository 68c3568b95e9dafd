//! The state of this rank's epochs on one window, as one pure value: what is open
//! (a fence epoch, locks, lock_all, a start epoch, a post epoch), whether calls are
//! pending, which posts and completes were counted, what a guard owns, and whether the
//! window was freed. Every change is a method of [`EpochState`]; one that the rules
//! can refuse either refuses with the error docs/semantics.md rules 12 and 16 name
//! (class RMA_SYNC, or WIN for a freed window), changing nothing, or applies the
//! change. Nothing here does I/O or knows a backend or a window: `crate::sync` makes
//! the backend's calls (lock, flush, barrier, post, wait) around these transitions.
//!
//! A call that must do I/O between its checks and its change asks twice: `check_x`
//! before the I/O (its refusals, in the order the call makes them; a call that opens
//! another kind of epoch then ends an open fence epoch with
//! [`EpochState::leave_fence`], which refuses while calls of it are pending), and `x`
//! once the I/O succeeded (every refusal of `x` again, none of which can apply by
//! then, and the change).
//!
//! What every RMA call reads is derived from the state by the state itself: each
//! target's fast-path bits ([`EpochState::bits`]) and the
//! [`generation`](EpochState::generation), which every transition of this origin's
//! access epochs or of `freed` moves on. A window holds the state in an [`EpochCell`],
//! whose [`apply`](EpochCell::apply) is the one way to change it and publishes both
//! where a call reads them without borrowing the state.

use rma_core::{Assert, Error, LockType, Result};
use std::cell::{Cell, Ref, RefCell};

/// A target's fast-path bit: a passive-target epoch of this origin covers the target
/// (never set on a window whose calls cannot take the fast path: a dynamic window's
/// calls check their regions, a checked window's note their call sites).
pub(crate) const HELD: u8 = 1;
/// A target's fast-path bit: ... under an exclusive lock taken for real (not NOCHECK).
pub(crate) const EXCLUSIVE: u8 = 2;

/// A guard owns this window's access epoch (fence, lock, lock_all or start).
pub(crate) const ACCESS_GUARD: u8 = 1;
/// A guard owns this window's exposure epoch (post).
pub(crate) const EXPOSURE_GUARD: u8 = 2;

/// A lock this origin holds on one target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) kind: LockType,
    /// NOCHECK: no lock word was taken.
    pub(crate) nocheck: bool,
}

/// An access epoch opened by start.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Started {
    group: Vec<usize>,
    /// Per group member: whether its post was seen yet (waited lazily).
    posted: Vec<bool>,
}

/// How the open access epochs reach a target ([`EpochState::reach`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// An open epoch covers it now (for the null rank: some access epoch is open).
    Now,
    /// It is in the start group and its post was not seen yet: once the target's post
    /// count reaches this, [`EpochState::post_seen`] records it and the epoch covers it.
    AfterPost(u32),
}

/// This rank's epochs on one window (see the module's documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EpochState {
    freed: bool,
    /// A fence epoch is open (after a fence that did not assert NOSUCCEED).
    fence: bool,
    /// Calls issued since the last fence.
    pending: bool,
    /// Per target: the lock this origin holds (lock, or lock_all when `lock_all`).
    locks: Vec<Option<Held>>,
    lock_all: bool,
    start: Option<Started>,
    /// The post epoch's group.
    post: Option<Vec<usize>>,
    /// Per target: posts consumed by this rank's start epochs.
    posts_used: Vec<u32>,
    /// Per origin: completes this rank expects (one per post).
    completes_due: Vec<u32>,
    /// Epochs owned by a guard (`crate::guard`): [`ACCESS_GUARD`], [`EXPOSURE_GUARD`].
    /// The runtime calls that would end them refuse (RMA_SYNC); the guard ends them.
    guards: u8,
    /// The calls may take the fast path ([`HELD`]): not a dynamic or checked window.
    fast_path: bool,
    /// Moved on by every transition of this origin's access epochs or of `freed`.
    generation: u32,
}

impl EpochState {
    /// No epoch open on a window of `ranks` ranks; `fast_path`: its calls may take the
    /// fast path (see [`HELD`]).
    pub(crate) fn new(ranks: usize, fast_path: bool) -> EpochState {
        EpochState {
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
            fast_path,
            generation: 0,
        }
    }

    // ---- what the state says ---------------------------------------------------------

    /// Moved on (wrapping) by every transition of this origin's access epochs (a fence,
    /// lock, unlock, lock_all, unlock_all, start, complete, a fence epoch that another
    /// kind of epoch ends, the epochs a dropped window leaves) and by free; by nothing
    /// else. A value taken in an epoch differs from every later one once it ended.
    pub(crate) fn generation(&self) -> u32 {
        self.generation
    }

    /// `t`'s fast-path bits ([`HELD`], [`EXCLUSIVE`]); 0 for a target out of range.
    pub(crate) fn bits(&self, t: usize) -> u8 {
        let held = match self.locks.get(t) {
            _ if self.freed => 0,
            Some(Some(h)) if h.kind == LockType::Exclusive && !h.nocheck => HELD | EXCLUSIVE,
            Some(Some(_)) => HELD,
            _ => 0,
        };
        if self.fast_path {
            held
        } else {
            held & !HELD
        }
    }

    /// The window was freed.
    pub(crate) fn freed(&self) -> bool {
        self.freed
    }

    /// A passive-target epoch (lock or lock_all) is open.
    fn passive(&self) -> bool {
        self.lock_all || self.locks.iter().any(Option::is_some)
    }

    /// A passive-target epoch of this origin (lock or lock_all) covers `t`.
    pub(crate) fn passive_on(&self, t: usize) -> bool {
        self.locks.get(t).is_some_and(Option::is_some)
    }

    /// A post epoch is open.
    pub(crate) fn post_open(&self) -> bool {
        self.post.is_some()
    }

    /// Why a detach now could leave calls pending to the region (its exposure epoch is
    /// open, or this rank's own calls of a fence epoch are not yet complete), if so.
    pub(crate) fn detach_blocked(&self) -> Option<&'static str> {
        if self.post.is_some() {
            Some("this rank's exposure epoch (post) is open: calls to the region may be pending until wait")
        } else if self.fence && self.pending {
            Some("calls of this fence epoch are pending until the next fence")
        } else {
            None
        }
    }

    /// The post count of `t` to wait for when it is a member of the start group whose
    /// post was not seen yet.
    pub(crate) fn post_due(&self, t: usize) -> Option<u32> {
        let st = self.start.as_ref()?;
        let i = st.group.iter().position(|&g| g == t)?;
        (!st.posted[i]).then(|| self.posts_used[t].wrapping_add(1))
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

    // ---- checks every call makes -------------------------------------------------------

    /// Class WIN once the window was freed.
    pub(crate) fn check_alive(&self) -> Result<()> {
        if self.freed {
            return Err(Error::InvalidWindow {
                reason: "the window was freed".into(),
            });
        }
        Ok(())
    }

    /// RMA_SYNC if a guard owns the epochs `kind` that `call` would end.
    pub(crate) fn check_unguarded(&self, call: &'static str, kind: u8) -> Result<()> {
        if self.guards & kind == 0 {
            return Ok(());
        }
        Err(Error::sync(
            call,
            "an epoch guard of this window is open (an epoch value): end it through the \
             guard (unlock, fence, complete or wait on it), or drop it, before the window's \
             own calls open or end another epoch",
        ))
    }

    /// Whether an access epoch covers `target` for an RMA call (`None`: the null rank,
    /// which any access epoch will do for); `request`: request-based calls need a
    /// passive-target epoch. RMA_SYNC if none does.
    pub(crate) fn reach(
        &self,
        call: &'static str,
        target: Option<usize>,
        request: bool,
    ) -> Result<Reach> {
        self.check_alive()?;
        let Some(t) = target else {
            let any = self.fence || self.passive() || self.start.is_some();
            if !any || (request && !self.passive()) {
                let need = if request {
                    "request-based calls need a passive-target epoch: call lock_all or lock first"
                } else {
                    "call fence, lock, lock_all or start first"
                };
                return Err(Error::sync(
                    call,
                    format!(
                        "no access epoch that this call can use is open ({}); {need}",
                        self.describe()
                    ),
                ));
            }
            return Ok(Reach::Now);
        };
        if self.locks[t].is_some() {
            return Ok(Reach::Now);
        }
        if request {
            return Err(Error::sync(
                call,
                format!("request-based calls need a passive-target epoch on rank {t} ({}); call lock on rank {t}, or lock_all, first", self.describe()),
            ));
        }
        if let Some(st) = &self.start {
            if let Some(i) = st.group.iter().position(|&g| g == t) {
                return Ok(if st.posted[i] {
                    Reach::Now
                } else {
                    Reach::AfterPost(self.posts_used[t].wrapping_add(1))
                });
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
        if self.fence {
            return Ok(Reach::Now);
        }
        Err(Error::sync(
            call,
            format!(
                "no access epoch covers rank {t} ({}); call fence, lock, lock_all or start first",
                self.describe()
            ),
        ))
    }

    /// RMA_SYNC unless a passive-target epoch covers `target` (any, for `None`): the
    /// flush family's check.
    pub(crate) fn check_passive(&self, call: &'static str, target: Option<usize>) -> Result<()> {
        self.check_alive()?;
        let ok = match target {
            Some(t) => self.locks[t].is_some(),
            None => self.passive(),
        };
        if ok {
            return Ok(());
        }
        Err(Error::sync(
            call,
            match target {
                Some(t) => format!(
                    "needs a passive-target epoch on rank {t} ({}); call lock on rank {t}, or lock_all, first",
                    self.describe()
                ),
                None => format!(
                    "needs a passive-target epoch ({}); call lock or lock_all first",
                    self.describe()
                ),
            },
        ))
    }

    // ---- transitions that refuse nothing -------------------------------------------

    /// Marks the epochs `kind` ([`ACCESS_GUARD`], [`EXPOSURE_GUARD`]) as owned by a
    /// guard (`on`), or no longer.
    pub(crate) fn set_guard(&mut self, kind: u8, on: bool) {
        if on {
            self.guards |= kind;
        } else {
            self.guards &= !kind;
        }
    }

    /// An RMA call was issued: it is pending until a synchronization completes it.
    pub(crate) fn issue(&mut self) {
        self.pending = true;
    }

    /// The post that [`Reach::AfterPost`] (or [`EpochState::post_due`]) named for `t`
    /// was seen: the start epoch covers `t` now. Nothing changes for a target that is
    /// no unposted member of the start group.
    pub(crate) fn post_seen(&mut self, t: usize) {
        let Some(want) = self.post_due(t) else {
            return;
        };
        if let Some(st) = self.start.as_mut() {
            if let Some(i) = st.group.iter().position(|&g| g == t) {
                st.posted[i] = true;
                self.posts_used[t] = want;
            }
        }
    }

    /// Every call issued so far is complete (the closing call of an access epoch
    /// finished): none is pending unless a passive-target epoch is still open, whose
    /// calls its own unlock completes.
    pub(crate) fn calls_completed(&mut self) {
        if !self.passive() {
            self.pending = false;
        }
    }

    fn bump(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    // ---- fence and free ---------------------------------------------------------------

    /// The refusals of a fence with `assert` (its bits checked by the caller): RMA_SYNC
    /// inside another epoch, or for NOPRECEDE with calls pending.
    pub(crate) fn check_fence(&self, assert: Assert) -> Result<()> {
        self.check_alive()?;
        self.check_unguarded("fence", ACCESS_GUARD)?;
        if self.passive() || self.start.is_some() || self.post.is_some() {
            return Err(Error::sync(
                "fence",
                format!(
                    "fence inside another epoch ({}); close it first (unlock, unlock_all, complete or wait)",
                    self.describe()
                ),
            ));
        }
        if assert.contains(Assert::NOPRECEDE) && self.pending {
            return Err(Error::sync(
                "fence",
                "NOPRECEDE asserted, but RMA calls were issued since the last fence and this fence must complete them",
            ));
        }
        Ok(())
    }

    /// A fence with `assert` passed: it completed every call and ended the fence epoch;
    /// the next one opens unless NOSUCCEED was asserted. Returns whether it did.
    pub(crate) fn fence(&mut self, assert: Assert) -> Result<bool> {
        self.check_fence(assert)?;
        self.fence = !assert.contains(Assert::NOSUCCEED);
        self.pending = false;
        self.bump();
        Ok(self.fence)
    }

    /// The refusals of free: RMA_SYNC with an epoch open (a lock, lock_all, start or
    /// post) or calls pending since the last fence; WIN if already freed.
    pub(crate) fn check_free(&self) -> Result<()> {
        self.check_alive()?;
        if self.passive() || self.start.is_some() || self.post.is_some() {
            return Err(Error::sync(
                "free",
                format!(
                    "an epoch is still open ({}); close it (fence, unlock, unlock_all, complete or wait) before free",
                    self.describe()
                ),
            ));
        }
        if self.pending {
            return Err(Error::sync(
                "free",
                "RMA calls issued since the last fence were never completed; call fence first",
            ));
        }
        Ok(())
    }

    /// The window was freed: every later transition refuses (class WIN).
    pub(crate) fn free(&mut self) -> Result<()> {
        self.check_free()?;
        self.freed = true;
        self.bump();
        Ok(())
    }

    /// `call` opens another kind of epoch: an open fence epoch ends here, refused
    /// (RMA_SYNC) if calls of it are pending (they need the closing fence). Returns
    /// whether a fence epoch ended. Only a fence epoch ends: a start epoch open beside
    /// it keeps its marks.
    pub(crate) fn leave_fence(&mut self, call: &'static str) -> Result<bool> {
        self.check_fence_left(call)?;
        let left = std::mem::replace(&mut self.fence, false);
        if left {
            self.bump();
        }
        Ok(left)
    }

    fn check_fence_left(&self, call: &'static str) -> Result<()> {
        if self.fence && self.pending {
            return Err(Error::sync(
                call,
                "calls of the current fence epoch are pending; close it with a fence first",
            ));
        }
        Ok(())
    }

    // ---- passive target -------------------------------------------------------------

    /// The refusals of a lock on `t` before any fence epoch ends
    /// ([`EpochState::leave_fence`] refuses pending fence calls).
    pub(crate) fn check_lock(&self, t: usize) -> Result<()> {
        self.check_alive()?;
        self.check_unguarded("lock", ACCESS_GUARD)?;
        if self.lock_all {
            return Err(Error::sync(
                "lock",
                "inside a lock_all epoch every rank is already locked; access the rank directly, or call unlock_all first",
            ));
        }
        if self.locks[t].is_some() {
            return Err(Error::sync(
                "lock",
                format!("rank {t} is already locked by this rank (locks do not nest); call unlock on rank {t} first"),
            ));
        }
        if self.start.is_some() {
            return Err(Error::sync(
                "lock",
                "lock inside an active-target (start) epoch; call complete first",
            ));
        }
        Ok(())
    }

    /// This origin holds a lock of `kind` on `t` (`nocheck`: none was taken); an open
    /// fence epoch ends.
    pub(crate) fn lock(&mut self, t: usize, kind: LockType, nocheck: bool) -> Result<()> {
        self.check_lock(t)?;
        self.leave_fence("lock")?;
        self.locks[t] = Some(Held { kind, nocheck });
        self.bump();
        Ok(())
    }

    /// The refusals of unlock on `t`; the lock held there.
    pub(crate) fn check_unlock(&self, t: usize) -> Result<Held> {
        self.check_alive()?;
        self.check_unguarded("unlock", ACCESS_GUARD)?;
        if self.lock_all {
            return Err(Error::sync(
                "unlock",
                "inside a lock_all epoch no single rank is locked: use unlock_all",
            ));
        }
        self.locks[t].ok_or_else(|| {
            Error::sync(
                "unlock",
                format!(
                    "rank {t} is not locked by this rank ({}); call lock on rank {t} first",
                    self.describe()
                ),
            )
        })
    }

    /// The lock on `t` is no longer held (its release is being issued); returns it.
    /// The calls of the epoch stay pending until [`EpochState::calls_completed`].
    pub(crate) fn unlock(&mut self, t: usize) -> Result<Held> {
        let held = self.check_unlock(t)?;
        self.locks[t] = None;
        self.bump();
        Ok(held)
    }

    /// The refusals of lock_all before any fence epoch ends.
    pub(crate) fn check_lock_all(&self) -> Result<()> {
        self.check_alive()?;
        self.check_unguarded("lock_all", ACCESS_GUARD)?;
        if self.passive() {
            return Err(Error::sync(
                "lock_all",
                format!(
                    "a passive-target epoch is already open ({}); unlock it first",
                    self.describe()
                ),
            ));
        }
        if self.start.is_some() {
            return Err(Error::sync(
                "lock_all",
                "lock_all inside an active-target (start) epoch; call complete first",
            ));
        }
        Ok(())
    }

    /// This origin holds a shared lock on every target (`nocheck`: none was taken); an
    /// open fence epoch ends.
    pub(crate) fn lock_all(&mut self, nocheck: bool) -> Result<()> {
        self.check_lock_all()?;
        self.leave_fence("lock_all")?;
        self.lock_all = true;
        self.locks.fill(Some(Held {
            kind: LockType::Shared,
            nocheck,
        }));
        self.bump();
        Ok(())
    }

    /// The refusals of unlock_all.
    pub(crate) fn check_unlock_all(&self) -> Result<()> {
        self.check_alive()?;
        self.check_unguarded("unlock_all", ACCESS_GUARD)?;
        if !self.lock_all {
            return Err(Error::sync(
                "unlock_all",
                format!(
                    "no lock_all epoch is open ({}); call lock_all first (a lock ends with unlock)",
                    self.describe()
                ),
            ));
        }
        Ok(())
    }

    /// The lock_all epoch ended: no lock is held and no call pending. Returns the
    /// locks it held (to release), by target.
    pub(crate) fn unlock_all(&mut self) -> Result<Vec<(usize, Held)>> {
        self.check_unlock_all()?;
        let held = self.take_locks();
        self.lock_all = false;
        self.pending = false;
        self.bump();
        Ok(held)
    }

    fn take_locks(&mut self) -> Vec<(usize, Held)> {
        self.locks
            .iter_mut()
            .enumerate()
            .filter_map(|(t, l)| l.take().map(|h| (t, h)))
            .collect()
    }

    // ---- active target with groups -----------------------------------------------------

    /// The refusals of post before any fence epoch ends.
    pub(crate) fn check_post(&self) -> Result<()> {
        self.check_alive()?;
        self.check_unguarded("post", EXPOSURE_GUARD)?;
        if self.post.is_some() {
            return Err(Error::sync(
                "post",
                "a post epoch is already open; call wait or test first",
            ));
        }
        Ok(())
    }

    /// This rank exposes its window to `group` (each origin now owes one more
    /// complete); an open fence epoch ends.
    pub(crate) fn post(&mut self, group: Vec<usize>) -> Result<()> {
        self.check_post()?;
        self.leave_fence("post")?;
        for &o in &group {
            self.completes_due[o] = self.completes_due[o].wrapping_add(1);
        }
        self.post = Some(group);
        Ok(())
    }

    /// The refusals of start before any fence epoch ends.
    pub(crate) fn check_start(&self) -> Result<()> {
        self.check_alive()?;
        self.check_unguarded("start", ACCESS_GUARD)?;
        if self.start.is_some() {
            return Err(Error::sync(
                "start",
                "a start epoch is already open (start epochs do not nest); call complete first",
            ));
        }
        if self.passive() {
            return Err(Error::sync(
                "start",
                format!(
                    "start inside a passive-target epoch ({}); unlock it first",
                    self.describe()
                ),
            ));
        }
        Ok(())
    }

    /// An access epoch to `group` opens, no post seen yet; an open fence epoch ends.
    pub(crate) fn start(&mut self, group: Vec<usize>) -> Result<()> {
        self.check_start()?;
        self.leave_fence("start")?;
        self.start = Some(Started {
            posted: vec![false; group.len()],
            group,
        });
        self.bump();
        Ok(())
    }

    /// The refusals of complete; the start group.
    pub(crate) fn check_complete(&self) -> Result<Vec<usize>> {
        self.check_alive()?;
        self.check_unguarded("complete", ACCESS_GUARD)?;
        match &self.start {
            Some(st) => Ok(st.group.clone()),
            None => Err(Error::sync(
                "complete",
                "no start epoch is open; call start first",
            )),
        }
    }

    /// The start epoch is over (its completes are being issued); returns its group.
    /// Its calls stay pending until [`EpochState::calls_completed`].
    pub(crate) fn complete(&mut self) -> Result<Vec<usize>> {
        let group = self.check_complete()?;
        self.start = None;
        self.bump();
        Ok(group)
    }

    /// The refusals of wait or test (`call`); the post group's origins with the
    /// completes due from each.
    pub(crate) fn check_wait(&self, call: &'static str) -> Result<Vec<(usize, u32)>> {
        self.check_alive()?;
        self.check_unguarded(call, EXPOSURE_GUARD)?;
        match &self.post {
            Some(g) => Ok(g.iter().map(|&o| (o, self.completes_due[o])).collect()),
            None => Err(Error::sync(call, "no post epoch is open; call post first")),
        }
    }

    /// The post epoch is over: every origin completed (`call`: wait or test).
    pub(crate) fn wait(&mut self, call: &'static str) -> Result<()> {
        self.check_wait(call)?;
        self.post = None;
        Ok(())
    }

    // ---- a window dropped without free ------------------------------------------------

    /// Every access epoch but a fence's ends at once (a window dropped without free):
    /// returns the locks held, by target, and the start group, for the caller to
    /// release and complete.
    pub(crate) fn abandon(&mut self) -> (Vec<(usize, Held)>, Option<Vec<usize>>) {
        let held = self.take_locks();
        self.lock_all = false;
        let start = self.start.take().map(|st| st.group);
        self.bump();
        (held, start)
    }
}

/// A window's epoch state: the [`EpochState`] behind a `RefCell`, changed only
/// through [`EpochCell::apply`], which publishes what every call reads without
/// borrowing the state: each target's fast-path bits and the generation.
pub(crate) struct EpochCell {
    state: RefCell<EpochState>,
    /// Per target: [`EpochState::bits`] as of the last transition.
    bits: Box<[Cell<u8>]>,
    /// [`EpochState::generation`] as of the last transition.
    generation: Cell<u32>,
}

impl EpochCell {
    /// See [`EpochState::new`].
    pub(crate) fn new(ranks: usize, fast_path: bool) -> EpochCell {
        let state = EpochState::new(ranks, fast_path);
        EpochCell {
            bits: (0..ranks).map(|t| Cell::new(state.bits(t))).collect(),
            generation: Cell::new(state.generation()),
            state: RefCell::new(state),
        }
    }

    /// `t`'s fast-path bits ([`EpochState::bits`]); `None` out of range. One load.
    #[inline]
    pub(crate) fn bits(&self, t: usize) -> Option<u8> {
        self.bits.get(t).map(Cell::get)
    }

    /// [`EpochState::generation`] as last published (the tests check it moves with
    /// the state's).
    #[cfg(test)]
    pub(crate) fn generation(&self) -> u32 {
        self.generation.get()
    }

    /// The state, to read (never held across a call to [`EpochCell::apply`]).
    pub(crate) fn borrow(&self) -> Ref<'_, EpochState> {
        self.state.borrow()
    }

    /// `f` on the state, then, when it moved the generation on, the bits and the
    /// generation published anew.
    pub(crate) fn apply<R>(&self, f: impl FnOnce(&mut EpochState) -> R) -> R {
        let mut st = self.state.borrow_mut();
        let r = f(&mut st);
        if st.generation() != self.generation.get() {
            for (t, bits) in self.bits.iter().enumerate() {
                bits.set(st.bits(t));
            }
            self.generation.set(st.generation());
        }
        r
    }
}

impl std::fmt::Debug for EpochCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.state.borrow().fmt(f)
    }
}

#[cfg(test)]
mod tests;
