//! The conflict checker (`rma_check` info key, `RMA_CHECK` environment variable).
//!
//! MPI calls two accesses to overlapping bytes of one window *conflicting* when they
//! come from different origins (the target's own loads and stores count as an origin),
//! no synchronization orders them, and they are not both reads or both
//! accumulate-family calls with the same basic type and compatible ops; a program that
//! makes them is erroneous. A checked window records every access and compares them
//! where they meet: in a log at the target.
//!
//! **Time.** Each target's log holds a counter, its *clock*: every stamp is one atomic
//! fetch-and-add on it (through the window's own transport), so stamps at one target
//! are unique and ordered as the stamping calls were. An RMA call is stamped when it
//! is issued; it is *complete* when a synchronization of its origin completes it
//! (flush, unlock, the closing call of an access epoch) and is stamped again then; a
//! fence stamps the calls of the epoch it closes after every rank has entered it and
//! before any leaves it. In a passive-target epoch a fetching call is stamped
//! complete when it returns (rma delivers its result then); a call that fails leaves
//! no record. Two calls overlap in time when each was issued before the
//! other completed. A call issued after another completed, and after something ordered
//! it behind that completion (a barrier, a flag, an unlock and lock), has a later
//! stamp: it never overlaps. A local load or store through [`crate::Window::read_local`]
//! or [`crate::Window::write_local`] is one stamp: it conflicts with remote calls in
//! flight at that moment (windows are in the unified memory model).
//!
//! **Exchange.** At the synchronization that completes them, an origin appends its
//! calls' records to each target's log (a ring of slots, which are ticks of the same
//! clock; a writer clears the slot's tag, then writes the payload, then the tag, each
//! flushed, and a reader accepts a record only with the tag read the same before and
//! after the payload), then reads the
//! records in the slots from its oldest call's issue stamp (a record in an earlier
//! slot completed before that call began) up to the clock at the read, and compares.
//! Of two conflicting calls, the origin that synchronizes later finds the pair; when
//! both append at once, the one that reads later sees the other (each writes before
//! it reads). The synchronization then fails with
//! class RMA_CONFLICT naming both ranks, both call sites, the bytes and the rule (or,
//! in `conflicts_log` mode, logs it and succeeds).
//!
//! **PSCW.** The calls of different origins in one exposure epoch are unordered
//! however they fell in time, so their records are marked, and the target's wait
//! (or the test that ends the epoch) reads its own log from its post's stamp and
//! compares every pair of marked records regardless of their stamps.
//!
//! What it does not see: accesses through a shared window's raw memory
//! ([`crate::SharedView`] loads and stores), pairs from one origin (MPI leaves their
//! order to `accumulate_ordering` and to flushes, which the transport keeps), and pairs
//! that were unsynchronized but did not overlap in time in this run (outside one
//! exposure epoch). A ring that
//! wraps before a reader got to it is reported once (tracing, warn).
//!
//! The parts: `record` (one access, its encoding in a log slot, and the rules by
//! which two of them conflict), `checker` (the logs, this rank's records, and the
//! exchange at each synchronization), `checked` (the transport wrapper that records
//! every call and hands each synchronization to the checker); here, the wrapping of
//! a new window.

mod checked;
mod checker;
mod record;

pub(crate) use checker::{set_site, Hooks};

use checked::Checked;
use checker::{Checker, LOG_BYTES};
use rma_backends::AnyWindow;
use rma_core::{CheckMode, Epochs as _, Error, Result};

/// The mode a window's creation asks for: its info key, else the environment.
fn mode_of(info: &rma_core::WinInfo) -> Result<Option<CheckMode>> {
    if let Some(m) = info.check {
        return Ok(Some(m));
    }
    match std::env::var(CheckMode::ENV) {
        Ok(v) => CheckMode::parse(CheckMode::ENV, &v).map(Some),
        Err(_) => Ok(None),
    }
}

/// The backend window `win` of a new window, wrapped in a checker when its info or
/// the environment asks for one. Collective: the ranks compare their modes first, on
/// every creation (no mode counts as off; a rank whose mode differs, or fails to
/// parse, makes every rank fail with class INFO), then allocate the logs' window;
/// `info.check` then says the mode in effect. On error `win` is freed.
pub(crate) fn wrap<'w>(
    world: &'w crate::World,
    mut win: AnyWindow<'w>,
    info: &mut rma_core::WinInfo,
) -> Result<(AnyWindow<'w>, Option<std::sync::Arc<dyn Hooks + 'w>>)> {
    use rma_core::{Backend, Services};
    // every creation compares the ranks' modes (no mode counts as off): a rank that
    // skipped the comparison while others made it would leave them in a collective
    // it never enters
    let mode = match mode_of(info) {
        Ok(m) => Ok(m.unwrap_or(CheckMode::Off)),
        Err(e) => Err(e),
    };
    let code = match &mode {
        Ok(m) => *m as u8 + 1,
        Err(_) => 0,
    };
    let agreed = match world.inner.allgather(&[code]) {
        Err(e) => Err(e),
        Ok(all) if all.iter().all(|c| c.first() == Some(&code)) => mode,
        Ok(all) => Err(mode.err().unwrap_or_else(|| Error::InvalidInfo {
            key: rma_core::WinInfo::CHECK_KEY.into(),
            value: format!(
                "{:?}",
                all.iter().map(|c| c.first().copied()).collect::<Vec<_>>()
            ),
            reason:
                "every rank must give the window the same rma_check mode (info key or RMA_CHECK)"
                    .into(),
        })),
    };
    let mode = match agreed {
        Ok(CheckMode::Off) => return Ok((win, None)),
        Ok(m) => {
            // the window's info reports the mode in effect, also one RMA_CHECK set
            info.check = Some(m);
            m
        }
        Err(e) => {
            let _ = win.free();
            return Err(e);
        }
    };
    let parsed = rma_core::WinInfo {
        transport: info.transport.clone(),
        check: Some(CheckMode::Off),
        ..rma_core::WinInfo::default()
    };
    let log = match world
        .inner
        .allocate(LOG_BYTES, 1, &rma_core::Info::new(), &parsed)
    {
        Ok(l) => l,
        Err(e) => {
            let _ = win.free();
            return Err(e);
        }
    };
    let same_op = info.accumulate_ops == rma_core::AccOps::SameOp;
    let checker = std::sync::Arc::new(Checker::new(log, world.rank(), world.size(), mode, same_op));
    let wrapped = AnyWindow::plugged(Box::new(Checked {
        inner: win,
        checker: std::sync::Arc::clone(&checker),
    }));
    Ok((wrapped, Some(checker as std::sync::Arc<dyn Hooks + 'w>)))
}
