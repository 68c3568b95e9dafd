//! The progress thread ([`MpiWorld::start_progress`](super::MpiWorld::start_progress)): it
//! lets the library's progress engine run while its rank computes without calling MPI.
//! It knows the world only by its shim, communicator and gate.

use super::thread::Gate;
use rma_core::{Error, Result};
use rma_mpi_sys::{Api, Handle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Environment variable: `thread` starts a progress thread in every rank that joins
/// its world through [`MpiWorld::from_env`](super::MpiWorld::from_env)
/// ([`MpiWorld::start_progress`](super::MpiWorld::start_progress)); unset, empty or `none`:
/// no thread.
pub const ENV_PROGRESS: &str = "RMA_MPI_PROGRESS";

/// Whether [`ENV_PROGRESS`] asks for a progress thread; class INFO for a value it does
/// not know.
pub(super) fn progress_requested() -> Result<bool> {
    match std::env::var(ENV_PROGRESS).as_deref().map(str::trim) {
        Err(_) | Ok("" | "none") => Ok(false),
        Ok("thread") => Ok(true),
        Ok(other) => Err(Error::InvalidInfo {
            key: ENV_PROGRESS.into(),
            value: other.into(),
            reason: "expected `thread` (a progress thread per rank) or `none`".into(),
        }),
    }
}

/// A running progress thread.
pub(super) struct Progress {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
}

impl Progress {
    /// Starts rank `rank`'s progress thread: MPI_Iprobe on `comm`, in turn with the
    /// world's MPI calls through `gate` where the world has one.
    pub(super) fn start(
        api: &'static Api,
        comm: Handle,
        gate: Option<Arc<Gate>>,
        rank: usize,
    ) -> Result<Progress> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name(format!("rma-mpi-progress-{rank}"))
            .spawn(move || progress_loop(api, comm, gate, &flag))
            .map_err(|e| Error::Os {
                context: "starting the MPI progress thread".into(),
                source: e,
            })?;
        Ok(Progress { stop, handle })
    }

    /// Stops the thread and waits for it.
    pub(super) fn stop(self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.handle.join();
    }
}

/// The progress thread's body: MPI_Iprobe on the world communicator (rma sends no
/// point-to-point messages, so it matches nothing) until `stop`.
fn progress_loop(api: &'static Api, comm: Handle, gate: Option<Arc<Gate>>, stop: &AtomicBool) {
    let _counted = rma_core::wait::ProgressThread::start();
    while !stop.load(Ordering::Acquire) {
        {
            let _turn = gate.as_ref().map(|g| g.lock());
            // SAFETY: `comm` is the world's communicator, freed only after this thread
            // was stopped and joined (`MpiWorld::shut_down`); the call is serialized with
            // every other MPI call of the process when the library asks for that.
            let _ = unsafe { (api.progress)(comm) };
        }
        if rma_core::wait::oversubscribed() {
            std::thread::sleep(Duration::from_micros(50));
        } else {
            std::thread::yield_now();
        }
    }
}
