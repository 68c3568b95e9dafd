//! [`Request`]: a request-based RMA call in flight (MPI_Rput, MPI_Rget,
//! MPI_Raccumulate, MPI_Rget_accumulate).

use crate::error::Call;
use crate::ffi::Handle;
use crate::world::World;
use rma_core::Result;
use std::ffi::c_int;

/// A request-based RMA call in flight, completed by [`Request::wait`] or
/// [`Request::test`].
///
/// The request owns the buffers MPI reads and writes (a copy of the origin data, the
/// result), so that neither can go away while the call runs, even if the request is
/// leaked; it borrows its window, which therefore cannot be unlocked or freed while
/// the request lives. Dropping an unfinished request waits for it.
#[must_use = "a request completes only when waited on (dropping it waits)"]
#[derive(Debug)]
pub struct Request<'w> {
    world: &'w World,
    name: &'static str,
    handle: Handle,
    done: bool,
    origin: Vec<u8>,
    result: Vec<u8>,
}

impl<'w> Request<'w> {
    /// A request MPI is running over `origin` and `result`.
    pub(crate) fn new(
        world: &'w World,
        name: &'static str,
        handle: Handle,
        origin: Vec<u8>,
        result: Vec<u8>,
    ) -> Request<'w> {
        Request {
            world,
            name,
            handle,
            done: false,
            origin,
            result,
        }
    }

    /// A request with nothing to do (a call on the null rank or of zero bytes).
    pub(crate) fn done(world: &'w World, name: &'static str, result: Vec<u8>) -> Request<'w> {
        Request {
            world,
            name,
            handle: 0,
            done: true,
            origin: Vec::new(),
            result,
        }
    }

    /// Whether the call has completed (a [`Request::test`] said so).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Waits for the call to complete locally (MPI_Wait) and returns the fetched bytes
    /// (empty for rput and raccumulate).
    pub fn wait(mut self) -> Result<Vec<u8>> {
        self.finish()?;
        Ok(std::mem::take(&mut self.result))
    }

    /// Whether the call has completed locally (MPI_Test); once it has, [`Request::wait`]
    /// returns at once.
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
        } else if flag != 0 {
            self.done = true;
        }
        self.world.check(rc, Call::new("MPI_Test"))?;
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
        } else {
            self.done = true;
        }
        self.world.check(rc, Call::new(self.name))
    }

    /// After a failed wait or test MPI may still reach the buffers: leak them.
    fn abandon(&mut self) {
        self.done = true;
        std::mem::forget(std::mem::take(&mut self.origin));
        std::mem::forget(std::mem::take(&mut self.result));
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
