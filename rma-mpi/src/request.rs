//! [`MpiRequest`]: a request-based RMA call in flight (MPI_Rput, MPI_Rget,
//! MPI_Raccumulate, MPI_Rget_accumulate).

use crate::world::MpiWorld;
use rma_core::Result;
use rma_mpi_sys::{Call, Handle};
use std::ffi::c_int;

/// A request-based RMA call in flight, completed by [`MpiRequest::wait`] or
/// [`MpiRequest::test`].
///
/// The request owns the buffers MPI reads and writes (a copy of the origin data, the
/// result), so that neither can go away while the call runs, even if the request is
/// leaked; it borrows its window, which therefore cannot be unlocked or freed while
/// the request lives. Dropping an unfinished request waits for it.
#[must_use = "a request completes only when waited on (dropping it waits)"]
#[derive(Debug)]
#[doc(alias = "MPI_Request")]
pub struct MpiRequest<'w> {
    world: &'w MpiWorld,
    name: &'static str,
    handle: Handle,
    done: bool,
    origin: Vec<u8>,
    result: Vec<u8>,
    /// `(rank, window)` to MPI_Win_flush_local once MPI says the call is done (see
    /// [`MpiRequest::flush_local_after`]).
    flush_after: Option<(c_int, Handle)>,
}

impl<'w> MpiRequest<'w> {
    /// A request MPI is running over `origin` and `result`.
    pub(crate) fn new(
        world: &'w MpiWorld,
        name: &'static str,
        handle: Handle,
        origin: Vec<u8>,
        result: Vec<u8>,
    ) -> MpiRequest<'w> {
        MpiRequest {
            world,
            name,
            handle,
            done: false,
            origin,
            result,
            flush_after: None,
        }
    }

    /// Completes the call with MPI_Win_flush_local of `rank` on `win` after MPI_Wait
    /// or MPI_Test reports it done, before the result is handed out.
    ///
    /// For fetching calls whose target datatype is derived: MPICH 4.0's shared-memory
    /// path completes such an Rget's request before it has written the result buffer
    /// (the bytes arrive at the next flush; valgrind shows the write into the freed
    /// buffer). The flush is where they arrive.
    pub(crate) fn flush_local_after(mut self, rank: c_int, win: Handle) -> Self {
        self.flush_after = Some((rank, win));
        self
    }

    /// A request with nothing to do (a call on the null rank or of zero bytes).
    pub(crate) fn done(world: &'w MpiWorld, name: &'static str, result: Vec<u8>) -> MpiRequest<'w> {
        MpiRequest {
            world,
            name,
            handle: 0,
            done: true,
            origin: Vec::new(),
            result,
            flush_after: None,
        }
    }

    /// Whether the call has completed (a [`MpiRequest::test`] said so).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Waits for the call to complete locally (MPI_Wait) and returns the fetched bytes
    /// (empty for rput and raccumulate).
    #[doc(alias = "MPI_Wait")]
    pub fn wait(mut self) -> Result<Vec<u8>> {
        self.finish()?;
        Ok(std::mem::take(&mut self.result))
    }

    /// Whether the call has completed locally (MPI_Test); once it has, [`MpiRequest::wait`]
    /// returns at once.
    #[doc(alias = "MPI_Test")]
    pub fn test(&mut self) -> Result<bool> {
        if self.done {
            return Ok(true);
        }
        let mut flag: c_int = 0;
        // SAFETY: `handle` is this process's active request; MPI_Test frees it when it
        // reports completion.
        let rc = self
            .world
            .mpi(|api| unsafe { (api.test)(&mut self.handle, &mut flag) });
        if rc != 0 {
            self.abandon();
        }
        self.world.check(rc, Call::new("MPI_Test"))?;
        if flag != 0 {
            self.flush_after()?;
            self.done = true;
        }
        Ok(self.done)
    }

    fn finish(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        // SAFETY: `handle` is this process's active request; MPI_Wait frees it.
        let rc = self
            .world
            .mpi(|api| unsafe { (api.wait)(&mut self.handle) });
        if rc != 0 {
            self.abandon();
        }
        self.world.check(rc, Call::new(self.name))?;
        self.flush_after()?;
        self.done = true;
        Ok(())
    }

    /// The flush [`MpiRequest::flush_local_after`] asked for, once MPI freed the request.
    fn flush_after(&mut self) -> Result<()> {
        let Some((rank, win)) = self.flush_after else {
            return Ok(());
        };
        // SAFETY: the window is live (the request borrows it) and the passive epoch
        // that covered the call is still open (closing it needs the window mutably).
        let rc = self
            .world
            .mpi(|api| unsafe { (api.win_flush_local)(rank, win) });
        if rc != 0 {
            self.abandon();
        }
        self.world.check(rc, Call::new("MPI_Win_flush_local"))
    }

    /// After a failed wait or test MPI may still reach the buffers: leak them.
    fn abandon(&mut self) {
        self.done = true;
        std::mem::forget(std::mem::take(&mut self.origin));
        std::mem::forget(std::mem::take(&mut self.result));
    }
}

impl Drop for MpiRequest<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
