//! Request objects of the request-based calls (rput, rget, raccumulate,
//! rget_accumulate).
//!
//! A [`Request`] keeps the buffers of its call borrowed — the origin buffer of an
//! `rput`/`raccumulate` shared, the result buffer of an `rget`/`rget_accumulate`
//! exclusively — until it is waited for or dropped, so safe code cannot reuse a buffer
//! before the call is done with it (docs/semantics.md rule 15). It also borrows the window,
//! so the window cannot be freed under it.
//!
//! ```compile_fail
//! # use rma_win::{Assert, Info, LockType, Op, Rank, Window};
//! # rma_win::run_threads(1, |world| {
//! let win = Window::allocate::<i64>(&world, 4, &Info::new()).unwrap();
//! win.lock(LockType::Shared, Rank::new(0), Assert::NONE).unwrap();
//! let mut origin = vec![1i64; 4];
//! let req = win.raccumulate(&origin, Rank::new(0), 0, Op::Sum).unwrap();
//! origin[0] = 7; // error: `origin` is still borrowed by the request
//! req.wait().unwrap();
//! # }).unwrap();
//! ```
//!
//! ```compile_fail
//! # use rma_win::{Assert, Info, LockType, Rank, Window};
//! # rma_win::run_threads(1, |world| {
//! let win = Window::allocate::<i64>(&world, 4, &Info::new()).unwrap();
//! win.lock(LockType::Shared, Rank::new(0), Assert::NONE).unwrap();
//! let mut result = vec![0i64; 4];
//! let req = win.rget(&mut result, Rank::new(0), 0).unwrap();
//! println!("{}", result[0]); // error: the result is not there until the request completes
//! req.wait().unwrap();
//! # }).unwrap();
//! ```
//!
//! ```compile_fail
//! # use rma_win::{Assert, Info, LockType, Rank, Window};
//! # rma_win::run_threads(1, |world| {
//! let mut win = Window::allocate::<i64>(&world, 4, &Info::new()).unwrap();
//! win.lock(LockType::Shared, Rank::new(0), Assert::NONE).unwrap();
//! let origin = vec![1i64; 4];
//! let req = win.rput(&origin, Rank::new(0), 0).unwrap();
//! win.free().unwrap(); // error: the window is borrowed by the request
//! req.wait().unwrap();
//! # }).unwrap();
//! ```
//!
//! Both transports finish with the origin buffer and deliver fetched results before a
//! call returns, so a request is complete when it is created; waiting and testing are
//! still required by the type, and the target is updated only by a flush or unlock, as
//! MPI says.

use rma_core::Result;
use std::marker::PhantomData;

/// The handle of a request-based RMA call.
#[must_use = "a request must be completed with wait or test (dropping it waits)"]
#[derive(Debug)]
#[doc(alias = "MPI_Request")]
pub struct Request<'b> {
    done: bool,
    _borrows: PhantomData<&'b mut [u8]>,
}

impl<'b> Request<'b> {
    /// A request whose call has completed at the origin.
    pub(crate) fn completed() -> Request<'b> {
        Request {
            done: true,
            _borrows: PhantomData,
        }
    }

    /// Waits until the call completes at the origin: an origin buffer may be reused, a
    /// result buffer holds the result (MPI_Wait).
    #[doc(alias = "MPI_Wait")]
    pub fn wait(self) -> Result<()> {
        debug_assert!(self.done);
        Ok(())
    }

    /// Whether the call has completed at the origin (MPI_Test).
    #[doc(alias = "MPI_Test")]
    pub fn test(&mut self) -> Result<bool> {
        Ok(self.done)
    }

    /// Waits for every request (MPI_Waitall).
    #[doc(alias = "MPI_Waitall")]
    pub fn wait_all(requests: impl IntoIterator<Item = Request<'b>>) -> Result<()> {
        requests.into_iter().try_for_each(Request::wait)
    }

    /// Waits for one request of `requests` to complete, removes it and returns its
    /// index; `None` if the list is empty (MPI_Waitany).
    #[doc(alias = "MPI_Waitany")]
    pub fn wait_any(requests: &mut Vec<Request<'b>>) -> Result<Option<usize>> {
        loop {
            if requests.is_empty() {
                return Ok(None);
            }
            for i in 0..requests.len() {
                if requests[i].test()? {
                    requests.remove(i).wait()?;
                    return Ok(Some(i));
                }
            }
            std::thread::yield_now();
        }
    }

    /// Whether every request has completed (MPI_Testall); completed requests stay in
    /// the list until waited for or dropped.
    #[doc(alias = "MPI_Testall")]
    pub fn test_all(requests: &mut [Request<'b>]) -> Result<bool> {
        for r in requests.iter_mut() {
            if !r.test()? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// With the `async` feature a request is a future: `.await` it (in any executor) as
/// the non-blocking form of [`Request::wait`]. rma's transports complete a request's
/// call at origin before the request is returned, so the first poll is ready; the
/// future never blocks a thread.
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
impl std::future::Future for Request<'_> {
    type Output = Result<()>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<()>> {
        debug_assert!(self.done);
        std::task::Poll::Ready(Ok(()))
    }
}
