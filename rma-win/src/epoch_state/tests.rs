//! The synchronization rules of docs/semantics.md ("Completion and synchronization")
//! on the pure [`EpochState`], and what [`EpochCell`] publishes of it.

use super::*;
use rma_core::ErrorClass;

const NONE: Assert = Assert::NONE;

fn fresh() -> EpochState {
    EpochState::new(4, true)
}

/// `f` on `st` must fail with `class` and a message containing `says`, and change
/// nothing.
#[track_caller]
fn refused<T: std::fmt::Debug>(
    st: &mut EpochState,
    class: ErrorClass,
    says: &str,
    f: impl FnOnce(&mut EpochState) -> Result<T>,
) {
    let before = st.clone();
    let e = f(st).unwrap_err();
    assert_eq!(e.class(), class, "{e}");
    assert!(e.to_string().contains(says), "{e}");
    assert_eq!(*st, before, "a refused transition changed the state");
}

fn sync_refused<T: std::fmt::Debug>(
    st: &mut EpochState,
    says: &str,
    f: impl FnOnce(&mut EpochState) -> Result<T>,
) {
    refused(st, ErrorClass::RmaSync, says, f);
}

fn bits(st: &EpochState) -> Vec<u8> {
    (0..4).map(|t| st.bits(t)).collect()
}

#[test]
fn a_fresh_state_has_no_epoch_and_refuses_calls() {
    let st = fresh();
    assert!(!st.passive() && !st.post_open());
    assert_eq!(bits(&st), [0; 4]);
    assert_eq!(st.generation(), 0);
    let e = st.reach("put", Some(1), false).unwrap_err();
    assert_eq!(e.class(), ErrorClass::RmaSync);
    assert!(e
        .to_string()
        .contains("no access epoch covers rank 1 (no epoch is open)"));
    assert!(st.reach("put", None, false).is_err());
}

#[test]
fn a_lock_sets_the_bits_of_its_target_only() {
    let mut st = fresh();
    st.lock(1, LockType::Exclusive, false).unwrap();
    assert_eq!(bits(&st), [0, HELD | EXCLUSIVE, 0, 0]);
    st.lock(2, LockType::Shared, false).unwrap();
    st.lock(3, LockType::Exclusive, true).unwrap(); // NOCHECK: no lock taken
    assert_eq!(bits(&st), [0, HELD | EXCLUSIVE, HELD, HELD]);
    assert!(st.passive_on(2) && !st.passive_on(0));
    assert_eq!(st.reach("put", Some(3), true).unwrap(), Reach::Now);
    assert_eq!(
        st.unlock(1).unwrap(),
        Held {
            kind: LockType::Exclusive,
            nocheck: false
        }
    );
    assert_eq!(bits(&st), [0, 0, HELD, HELD]);
}

#[test]
fn no_fast_path_on_a_dynamic_or_checked_window_but_exclusive_still_shows() {
    let mut st = EpochState::new(2, false);
    st.lock(0, LockType::Exclusive, false).unwrap();
    st.lock(1, LockType::Shared, false).unwrap();
    assert_eq!([st.bits(0), st.bits(1)], [EXCLUSIVE, 0]);
    assert!(st.passive_on(1));
}

#[test]
fn locking_a_target_already_locked_is_refused() {
    let mut st = fresh();
    st.lock(2, LockType::Shared, false).unwrap();
    sync_refused(&mut st, "rank 2 is already locked by this rank", |s| {
        s.lock(2, LockType::Exclusive, false)
    });
    sync_refused(&mut st, "already locked", |s| s.check_lock(2));
}

#[test]
fn unlock_without_lock_is_refused() {
    let mut st = fresh();
    sync_refused(
        &mut st,
        "rank 1 is not locked by this rank (no epoch is open)",
        |s| s.unlock(1),
    );
    st.lock(0, LockType::Shared, false).unwrap();
    sync_refused(&mut st, "(open: locks on ranks 0)", |s| s.unlock(1));
}

#[test]
fn lock_all_then_lock_or_unlock_is_refused() {
    let mut st = fresh();
    st.lock_all(false).unwrap();
    assert_eq!(bits(&st), [HELD; 4]);
    sync_refused(
        &mut st,
        "inside a lock_all epoch every rank is already locked",
        |s| s.lock(1, LockType::Shared, false),
    );
    sync_refused(&mut st, "use unlock_all", |s| s.unlock(1));
    sync_refused(
        &mut st,
        "a passive-target epoch is already open (open: a lock_all epoch)",
        |s| s.lock_all(false),
    );
    let held = st.unlock_all().unwrap();
    assert_eq!(held.len(), 4);
    assert!(held
        .iter()
        .all(|(_, h)| h.kind == LockType::Shared && !h.nocheck));
    assert_eq!(bits(&st), [0; 4]);
    sync_refused(&mut st, "no lock_all epoch is open", |s| s.unlock_all());
}

#[test]
fn lock_all_inside_a_lock_and_unlock_all_after_a_lock_are_refused() {
    let mut st = fresh();
    st.lock(3, LockType::Exclusive, false).unwrap();
    sync_refused(&mut st, "(open: locks on ranks 3); unlock it first", |s| {
        s.lock_all(false)
    });
    sync_refused(
        &mut st,
        "call lock_all first (a lock ends with unlock)",
        |s| s.unlock_all(),
    );
}

#[test]
fn fence_inside_another_epoch_is_refused() {
    let opens: [fn(&mut EpochState) -> Result<()>; 4] = [
        |s| s.lock(0, LockType::Shared, false),
        |s| s.lock_all(false),
        |s| s.start(vec![1]),
        |s| s.post(vec![1]),
    ];
    for open in opens {
        let mut st = fresh();
        open(&mut st).unwrap();
        sync_refused(&mut st, "fence inside another epoch", |s| s.fence(NONE));
    }
}

#[test]
fn noprecede_after_calls_is_refused_and_a_fence_completes_them() {
    let mut st = fresh();
    assert!(st.fence(Assert::NOPRECEDE).unwrap()); // opens an epoch
    st.issue();
    sync_refused(&mut st, "NOPRECEDE asserted", |s| {
        s.fence(Assert::NOPRECEDE)
    });
    assert!(st.fence(NONE).unwrap()); // completes them
    assert!(!st.fence(Assert::NOPRECEDE | Assert::NOSUCCEED).unwrap());
    assert!(st.reach("put", Some(0), false).is_err()); // no epoch follows NOSUCCEED
}

#[test]
fn a_fence_epoch_covers_every_target_but_not_request_based_calls() {
    let mut st = fresh();
    st.fence(NONE).unwrap();
    assert_eq!(st.reach("get", Some(3), false).unwrap(), Reach::Now);
    assert_eq!(st.reach("get", None, false).unwrap(), Reach::Now);
    let e = st.reach("rput", Some(3), true).unwrap_err();
    assert!(
        e.to_string().contains(
            "request-based calls need a passive-target epoch on rank 3 (open: a fence epoch)"
        ),
        "{e}"
    );
    assert!(st.reach("rput", None, true).is_err());
    assert_eq!(bits(&st), [0; 4]); // the fast path is for passive epochs only
}

#[test]
fn another_epoch_ends_a_fence_epoch_unless_its_calls_are_pending() {
    let mut st = fresh();
    st.fence(NONE).unwrap();
    st.issue();
    sync_refused(
        &mut st,
        "calls of the current fence epoch are pending",
        |s| s.lock(0, LockType::Shared, false),
    );
    sync_refused(&mut st, "pending", |s| s.lock_all(false));
    sync_refused(&mut st, "pending", |s| s.start(vec![0]));
    sync_refused(&mut st, "pending", |s| s.post(vec![0]));
    assert_eq!(
        st.detach_blocked(),
        Some("calls of this fence epoch are pending until the next fence")
    );
    st.fence(NONE).unwrap();
    let g = st.generation();
    st.lock(0, LockType::Shared, false).unwrap();
    assert!(st.generation() != g);
    assert!(!st.fence); // the lock ended it
}

#[test]
fn start_group_membership_and_lazy_posts() {
    let mut st = fresh();
    st.start(vec![2, 0]).unwrap();
    sync_refused(&mut st, "a start epoch is already open", |s| {
        s.start(vec![1])
    });
    assert_eq!(
        st.reach("put", Some(2), false).unwrap(),
        Reach::AfterPost(1)
    );
    assert_eq!(st.post_due(0), Some(1));
    let e = st.reach("put", Some(1), false).unwrap_err();
    assert!(
        e.to_string()
            .contains("rank 1 is not in the start group (ranks 2, 0)"),
        "{e}"
    );
    let g = st.generation();
    st.post_seen(2);
    assert_eq!(st.generation(), g); // seeing a post ends no epoch
    assert_eq!(st.reach("put", Some(2), false).unwrap(), Reach::Now);
    assert_eq!(st.post_due(2), None);
    st.post_seen(1); // no member: nothing changes
    assert_eq!(st.complete().unwrap(), vec![2, 0]);
    // the next epoch waits for the second post of rank 2, the first of rank 0
    st.start(vec![2, 0]).unwrap();
    assert_eq!(st.post_due(2), Some(2));
    assert_eq!(st.post_due(0), Some(1));
}

#[test]
fn start_lock_and_lock_all_exclude_each_other() {
    let mut st = fresh();
    st.start(vec![1]).unwrap();
    sync_refused(&mut st, "lock inside an active-target (start) epoch", |s| {
        s.lock(1, LockType::Shared, false)
    });
    sync_refused(
        &mut st,
        "lock_all inside an active-target (start) epoch",
        |s| s.lock_all(false),
    );
    let mut st = fresh();
    st.lock(1, LockType::Shared, false).unwrap();
    sync_refused(
        &mut st,
        "start inside a passive-target epoch (open: locks on ranks 1)",
        |s| s.start(vec![1]),
    );
}

#[test]
fn complete_wait_and_test_need_their_epoch() {
    let mut st = fresh();
    sync_refused(&mut st, "no start epoch is open; call start first", |s| {
        s.complete()
    });
    sync_refused(&mut st, "no post epoch is open; call post first", |s| {
        s.wait("wait")
    });
    let e = st.check_wait("test").unwrap_err();
    assert!(e.to_string().contains("test"), "{e}");
    st.post(vec![1, 3]).unwrap();
    sync_refused(&mut st, "a post epoch is already open", |s| s.post(vec![0]));
    assert_eq!(st.check_wait("wait").unwrap(), vec![(1, 1), (3, 1)]);
    assert_eq!(
        st.detach_blocked().map(|w| w.contains("exposure epoch")),
        Some(true)
    );
    st.wait("test").unwrap();
    st.post(vec![3]).unwrap();
    assert_eq!(st.check_wait("wait").unwrap(), vec![(3, 2)]); // one complete due a post
}

#[test]
fn free_with_an_open_epoch_or_pending_calls_is_refused() {
    let mut st = fresh();
    st.post(vec![0]).unwrap();
    sync_refused(
        &mut st,
        "an epoch is still open (open: a post epoch)",
        |s| s.free(),
    );
    st.wait("wait").unwrap();
    st.fence(NONE).unwrap();
    st.issue();
    sync_refused(&mut st, "were never completed; call fence first", |s| {
        s.free()
    });
    st.fence(Assert::NOSUCCEED).unwrap();
    st.free().unwrap();
    refused(&mut st, ErrorClass::Win, "the window was freed", |s| {
        s.free()
    });
}

#[test]
fn a_freed_state_refuses_every_transition_and_has_no_bits() {
    let mut st = fresh();
    st.free().unwrap();
    assert_eq!(bits(&st), [0; 4]);
    let win = ErrorClass::Win;
    refused(&mut st, win, "freed", |s| {
        s.lock(0, LockType::Shared, false)
    });
    refused(&mut st, win, "freed", |s| s.lock_all(false));
    refused(&mut st, win, "freed", |s| s.fence(NONE));
    refused(&mut st, win, "freed", |s| s.start(vec![0]));
    refused(&mut st, win, "freed", |s| s.post(vec![0]));
    refused(&mut st, win, "freed", |s| s.reach("put", Some(0), false));
    refused(&mut st, win, "freed", |s| s.check_passive("flush", None));
}

#[test]
fn a_guard_owns_its_epochs() {
    let mut st = fresh();
    st.lock_all(false).unwrap();
    st.set_guard(ACCESS_GUARD, true);
    sync_refused(&mut st, "an epoch guard of this window is open", |s| {
        s.unlock_all()
    });
    sync_refused(&mut st, "guard", |s| s.fence(NONE));
    // the exposure side is not owned
    st.post(vec![0]).unwrap();
    st.set_guard(EXPOSURE_GUARD, true);
    sync_refused(&mut st, "guard", |s| s.wait("wait"));
    st.set_guard(ACCESS_GUARD | EXPOSURE_GUARD, false);
    st.unlock_all().unwrap();
    st.wait("wait").unwrap();
}

#[test]
fn flushes_need_a_passive_epoch_on_their_target() {
    let mut st = fresh();
    let e = st.check_passive("flush_all", None).unwrap_err();
    assert!(
        e.to_string()
            .contains("needs a passive-target epoch (no epoch is open)"),
        "{e}"
    );
    st.lock(2, LockType::Shared, false).unwrap();
    assert!(st.check_passive("flush", Some(2)).is_ok());
    assert!(st.check_passive("flush_all", None).is_ok());
    let e = st.check_passive("flush", Some(1)).unwrap_err();
    assert!(
        e.to_string()
            .contains("needs a passive-target epoch on rank 1 (open: locks on ranks 2)"),
        "{e}"
    );
}

#[test]
fn pending_calls_end_with_the_last_passive_epoch() {
    let mut st = fresh();
    st.lock(0, LockType::Shared, false).unwrap();
    st.lock(1, LockType::Shared, false).unwrap();
    st.issue();
    st.unlock(0).unwrap();
    st.calls_completed();
    assert!(st.pending); // rank 1's epoch is still open
    st.unlock(1).unwrap();
    assert!(st.pending); // until its release went out
    st.calls_completed();
    assert!(!st.pending);
    st.lock_all(true).unwrap();
    st.issue();
    st.unlock_all().unwrap();
    assert!(!st.pending);
}

#[test]
fn the_generation_moves_on_every_access_epoch_transition_and_nothing_else() {
    let mut st = fresh();
    let mut g = st.generation();
    let mut moved = |st: &EpochState, expect: bool| {
        assert_eq!(st.generation() != g, expect, "{st:?}");
        g = st.generation();
    };
    st.fence(NONE).unwrap();
    moved(&st, true);
    st.issue();
    st.set_guard(ACCESS_GUARD, true);
    st.set_guard(ACCESS_GUARD, false);
    moved(&st, false);
    st.fence(NONE).unwrap();
    moved(&st, true);
    st.post(vec![1]).unwrap(); // ends the fence epoch
    moved(&st, true);
    st.wait("wait").unwrap();
    st.post(vec![1]).unwrap(); // exposure only
    moved(&st, false);
    st.wait("wait").unwrap();
    moved(&st, false);
    st.start(vec![1]).unwrap();
    moved(&st, true);
    st.post_seen(1);
    moved(&st, false);
    st.complete().unwrap();
    moved(&st, true);
    st.lock(0, LockType::Shared, false).unwrap();
    moved(&st, true);
    st.unlock(0).unwrap();
    moved(&st, true);
    st.lock_all(false).unwrap();
    moved(&st, true);
    let _ = st.unlock(0); // refused
    moved(&st, false);
    st.unlock_all().unwrap();
    moved(&st, true);
    st.lock(2, LockType::Exclusive, false).unwrap();
    moved(&st, true);
    let (held, start) = st.abandon();
    assert_eq!(
        held,
        [(
            2,
            Held {
                kind: LockType::Exclusive,
                nocheck: false
            }
        )]
    );
    assert_eq!(start, None);
    moved(&st, true);
    st.free().unwrap();
    moved(&st, true);
}

#[test]
fn the_cell_publishes_bits_and_generation_after_each_transition() {
    let cell = EpochCell::new(3, true);
    assert_eq!((cell.bits(0), cell.bits(3)), (Some(0), None));
    let check = |cell: &EpochCell| {
        let st = cell.borrow();
        assert_eq!(cell.generation(), st.generation());
        for t in 0..3 {
            assert_eq!(cell.bits(t), Some(st.bits(t)));
        }
    };
    cell.apply(|s| s.lock(1, LockType::Exclusive, false))
        .unwrap();
    check(&cell);
    assert_eq!(cell.bits(1), Some(HELD | EXCLUSIVE));
    assert!(cell.apply(|s| s.lock(1, LockType::Shared, false)).is_err());
    check(&cell);
    cell.apply(|s| s.unlock(1)).unwrap();
    check(&cell);
    cell.apply(|s| s.lock_all(false)).unwrap();
    check(&cell);
    assert_eq!(cell.bits(2), Some(HELD));
    cell.apply(|s| s.abandon());
    check(&cell);
    cell.apply(|s| s.free()).unwrap();
    check(&cell);
    assert_eq!(cell.bits(1), Some(0));
}
