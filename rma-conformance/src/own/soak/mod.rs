//! Soak: 4 ranks mix every RMA call (put, get, accumulate, get_accumulate,
//! fetch_and_op, compare_and_swap and the request forms) on random derived layouts with
//! random ops, epoch after epoch, cycling through fence, lock_all (+ flush),
//! lock (exclusive, sometimes shared) and PSCW epochs; after every epoch every rank
//! compares its whole window, and every value it fetched, with a model.
//!
//! # Determinism
//! Every random choice comes from splitmix64 seeded by (seed, epoch, origin), so every
//! rank generates what every other rank does and runs the whole model locally. The
//! traffic is designed so the outcome is exact despite concurrency:
//! - each window has one **own region** per origin, touched by that origin only: puts,
//!   gets, every accumulate op, get_accumulate, fetch_and_op, compare_and_swap. Within
//!   one synchronization interval (up to the next flush of that target, unlock or
//!   closing sync) an element is touched either by accumulate-family calls only (which
//!   docs/semantics.md rule 11 orders, so the model applies them in program order), or by
//!   one put, or by gets only; so every value, fetched or final, is exact;
//! - a **SUM region** that every origin updates with SUM (and reads with NO_OP) and an
//!   **XOR region** likewise with BXOR: commutative, so the final values are exact.
//!   SUM addends are non-negative, so a value fetched from the SUM region lies between
//!   (start of epoch + this origin's earlier addends) and (end of epoch - this origin's
//!   addends from this call on).
//!
//! Calls to the null rank are mixed in; their result buffers must stay untouched, as
//! must every result-buffer slot outside the result layout.
//!
//! # Duration
//! [`ci_epochs()`] epochs by default; with `RMA_SOAK_SECS=N` it runs until N seconds have
//! passed, every rank deciding at epoch ends through an all-gather, so all agree on the
//! epoch count. Rank 0 prints the epochs, calls and time to stderr. Mind the
//! harness's limits for long runs: nextest's default profile kills a test after 120 s,
//! and in process mode the launcher kills the ranks after 100 s, so runs longer than
//! about 90 s work in thread mode only, with the test binary run directly
//! (`RMA_SOAK_SECS=600 target/release/deps/conformance-<hash> --exact atomic::threads::own_soak`).

mod execution;
mod generator;
mod model;

use self::execution::{check_results, run_epoch};
use self::generator::{generate, plan};
use self::model::MODES;
use rma_win::{Info, Result, Window, World};
use std::time::{Duration, Instant};

/// Ranks the case runs on.
const P: usize = 4;
/// Elements of each origin's own region.
const OWN: usize = 48;
/// Elements of the SUM region.
const SUM_LEN: usize = 32;
/// Elements of the XOR region.
const XOR_LEN: usize = 32;
const SUM_BASE: usize = P * OWN;
const XOR_BASE: usize = SUM_BASE + SUM_LEN;
/// Window elements per rank.
const WIN: usize = XOR_BASE + XOR_LEN;
/// Epochs of a default (CI) run.
fn ci_epochs() -> u64 {
    crate::scaled(2000)
}
/// Environment variable: run for this many seconds instead of [`ci_epochs()`] epochs.
pub(crate) const ENV_SECS: &str = "RMA_SOAK_SECS";
const SEED: u64 = 0x50a4_2024_d1ce_f00d;
/// What result buffers hold before a call; slots the call must not write keep it.
const SENTINEL: i64 = 0x5a5a_5a5a_5a5a_5a5a;

fn region_of(e: usize) -> String {
    if e < SUM_BASE {
        format!("own region of rank {} index {}", e / OWN, e % OWN)
    } else if e < XOR_BASE {
        format!("SUM region index {}", e - SUM_BASE)
    } else {
        format!("XOR region index {}", e - XOR_BASE)
    }
}

/// The soak case (see the module documentation).
pub(crate) fn soak(world: &World, info: &Info) -> Result<()> {
    let (me, p) = (world.rank(), world.size());
    assert_eq!(p, P, "the soak runs on {P} ranks");
    let secs: Option<u64> = std::env::var(ENV_SECS).ok().and_then(|s| s.parse().ok());
    let mut win = Window::allocate::<i64>(world, WIN, info)?;
    let mut model = vec![vec![0i64; WIN]; P];
    let began = Instant::now();
    let (mut epoch, mut calls, mut own_calls) = (0u64, 0u64, 0u64);
    let mut per_mode = [0u64; 4];
    world.barrier()?;
    loop {
        let plan = plan(epoch);
        let start = model.clone();
        let mut mine = vec![vec![0i64; SUM_LEN]; P];
        let mut my_steps = vec![];
        for o in 0..P {
            let mut scratch = vec![vec![0i64; SUM_LEN]; P];
            let m = if o == me { &mut mine } else { &mut scratch };
            let (steps, n) = generate(epoch, o, &plan, &mut model, m);
            calls += n;
            if o == me {
                own_calls += n;
                my_steps = steps;
            }
        }
        let results = run_epoch(&win, &my_steps, epoch)?;
        world.barrier()?;
        let local: Vec<i64> = win.local_vec()?;
        let stop = match secs {
            Some(s) => began.elapsed() >= Duration::from_secs(s),
            None => epoch + 1 >= ci_epochs(),
        };
        // also the barrier after which others may write my window again
        let votes = world.allgather(&[stop as u8])?;
        let mismatches: Vec<String> = local
            .iter()
            .zip(&model[me])
            .enumerate()
            .filter(|(_, (g, w))| g != w)
            .take(8)
            .map(|(e, (g, w))| format!("{} (element {e}): got {g}, model {w}", region_of(e)))
            .collect();
        assert!(
            mismatches.is_empty(),
            "soak: rank {me}, epoch {epoch} ({:?}), transport {}: window differs from the model:\n  {}",
            plan.mode,
            win.transport_name(),
            mismatches.join("\n  ")
        );
        check_results(epoch, plan.mode, &my_steps, &results, &start, &model, &mine);
        per_mode[MODES.iter().position(|m| *m == plan.mode).unwrap_or(0)] += 1;
        epoch += 1;
        if votes.iter().any(|v| v.first() == Some(&1)) {
            break;
        }
    }
    if me == 0 {
        eprintln!(
            "soak: transport {}, {:?} mode: {epoch} epochs (fence/lock_all/lock/pscw {per_mode:?}), \
             {calls} calls ({own_calls} by rank 0), {:.2} s",
            win.transport_name(),
            world.mode(),
            began.elapsed().as_secs_f64()
        );
    }
    world.barrier()?;
    win.free()
}
