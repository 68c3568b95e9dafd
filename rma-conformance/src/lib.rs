//! The conformance suite: each case is written once, as the body one rank runs, and
//! stamped out for every transport x launch mode by `tests/conformance.rs`, with names
//! like `atomic::threads::accfence2`.
//!
//! - Thread mode runs the case on `ranks` threads ([`rma_win::run_threads`]).
//! - Process mode re-executes the test binary once per rank through the launcher
//!   library (`rma_shm::launch`, what `rmarun` runs); the child finds the case to run in
//!   [`ENV_CASE`]. No prebuilt binary is involved.
//!
//! Cases check exact results and return `Err` for an rma error; a failed assertion
//! panics, which the other ranks observe as a dead peer.
//!
//! Ported MPICH cases live in [`mpich`], each with its origin named; rma's own cases in
//! [`own`].
#![forbid(unsafe_code)]

pub mod mpich;
pub mod own;
pub mod recording;

use rma_win::{Equivalence, ErrorClass, Info, LaunchMode, Result, Window, World};

/// Environment variable that tells a re-executed test binary which case to run.
pub const ENV_CASE: &str = "RMA_CONFORMANCE_CASE";

/// Environment variable dividing the iteration counts of the long-running cases
/// (default 1). The MPI runs set it: there a call costs microseconds to milliseconds
/// (each rank of MPICH's ch4:ucx must be scheduled for the calls that reach it, and 4
/// ranks share 2 cores), against tens of nanoseconds on rma's own transports, so the
/// same checks run on fewer calls.
pub const ENV_DIVIDE: &str = "RMA_CONFORMANCE_DIVIDE";

/// `n` divided by [`ENV_DIVIDE`] (at least 1): an iteration count.
pub fn scaled<T: TryInto<u64> + TryFrom<u64> + Copy>(n: T) -> T {
    static DIVISOR: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let d = *DIVISOR.get_or_init(|| {
        std::env::var(ENV_DIVIDE)
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&d| d > 0)
            .unwrap_or(1)
    });
    match n.try_into() {
        Ok(v) => T::try_from((v / d).max(1)).unwrap_or(n),
        Err(_) => n,
    }
}

/// The body of a case, run by every rank.
pub type Body = fn(&World, &Info) -> Result<()>;

/// A conformance case.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// Name (a Rust identifier).
    pub name: &'static str,
    /// Ranks it runs on.
    pub ranks: usize,
    /// The body.
    pub body: Body,
}

/// Every case of the suite.
pub fn cases() -> Vec<Case> {
    let mut v = mpich::cases();
    v.extend(own::cases());
    v
}

/// The info that selects `transport` for a window.
pub fn info_for(transport: &str) -> Info {
    Info::new().with("rma_transport", transport)
}

/// The info for a [`Window::create`](rma_win::Window::create) in a case run with
/// `info`: `info` itself, except with ranks as processes where it names the atomic
/// transport. A created window's memory is then one process's own, which the atomic
/// transport cannot reach (asking for it is an RMA_FLAVOR error, checked by
/// `own_transport_named_or_refused`), so the name is dropped and the window takes the
/// default for created windows, the queued transport.
pub fn create_info(world: &World, info: &Info) -> Info {
    let mut info = info.clone();
    if world.mode() == LaunchMode::Processes && info.get("rma_transport") == Some("atomic") {
        info.remove("rma_transport");
    }
    info
}

/// Asserts that `r` is an error of class `class`, with a readable message otherwise.
#[track_caller]
pub fn expect_class<T: std::fmt::Debug>(r: Result<T>, class: rma_win::ErrorClass) {
    match r {
        Err(e) => assert_eq!(e.class(), class, "expected {class}, got {e}"),
        Ok(v) => panic!("expected an error of class {class}, got Ok({v:?})"),
    }
}

/// `r`, or `None` where the call was refused because the world cannot serve it, the
/// refusal checked: a backend plugged in from outside (the recording one) keeps the
/// contract's defaults, which refuse shared and dynamic windows and sub-worlds with
/// RMA_FLAVOR; under MPICH with MPIR_CVAR_NOLOCAL=1 (the mpich_nolocal configuration,
/// where every rank is a node of its own: the suite's stand-in for several nodes) a
/// shared window must be refused with RMA_SHARED (`across_nodes`). Every rank is
/// refused alike, before anything collective, so a barrier follows: the ranks still
/// agree. rma's own backends must serve the call otherwise.
pub(crate) fn or_refused<T>(world: &World, r: Result<T>, across_nodes: bool) -> Result<Option<T>> {
    let nolocal = world.mode() == LaunchMode::Mpi
        && std::env::var("MPIR_CVAR_NOLOCAL").is_ok_and(|v| v == "1");
    match r {
        Err(e) if across_nodes && nolocal => {
            assert_eq!(e.class(), ErrorClass::RmaShared, "across nodes: {e}");
        }
        Err(e) if !world.backend().builtin() => {
            assert_eq!(
                e.class(),
                ErrorClass::RmaFlavor,
                "a plugged-in backend's refusal: {e}"
            );
        }
        r => return r.map(Some),
    }
    world.barrier()?;
    Ok(None)
}

/// A shared window of `count` elements of `T` (`Window::allocate_shared`), or `None`
/// where the world cannot have one (`or_refused`).
pub fn shared_window<'w, T: Equivalence>(
    world: &'w World,
    count: usize,
    info: &Info,
) -> Result<Option<Window<'w>>> {
    or_refused(
        world,
        Window::allocate_shared::<T>(world, count, info),
        true,
    )
}

/// The world of the ranks giving `color` (`World::split`), or `None` where the world
/// has no sub-worlds (`or_refused`; `Ok(None)` from rma's own backends means only a
/// rank left out).
pub fn sub_world(world: &World, color: Option<u32>, key: i32) -> Result<Option<World>> {
    Ok(or_refused(world, world.split(color, key), false)?.flatten())
}

/// A dynamic window (`Window::create_dynamic`), or `None` where the world cannot have
/// one (`or_refused`).
pub fn dynamic_window<'w>(world: &'w World, info: &Info) -> Result<Option<Window<'w>>> {
    or_refused(world, Window::create_dynamic(world, info), false)
}
