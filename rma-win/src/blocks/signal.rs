//! Put-with-signal (OpenSHMEM's `shmem_put_signal`, NCCL's put/signal): data, then an
//! atomic update of a signal word at the target, the data visible to whoever sees the
//! signal; and the target's side, [`Window::wait_until`].

use super::{stalled, wait_for, Patience};
use crate::handle::TargetHandle;
use crate::window::Window;
use rma_core::{BasicType, Contiguous, Disp, Error, Op, Result, Transport};
use rma_datatype::Equivalence;
use std::sync::atomic::{fence, Ordering};
use std::time::Duration;

/// How a put-with-signal updates the signal word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignalOp {
    /// The signal becomes the value (OpenSHMEM's SHMEM_SIGNAL_SET; MPI_REPLACE).
    Set,
    /// The value is added to the signal (SHMEM_SIGNAL_ADD; MPI_SUM, wrapping): several
    /// origins can each count their put in one word.
    Add,
}

impl SignalOp {
    fn op(self) -> Op {
        match self {
            SignalOp::Set => Op::Replace,
            SignalOp::Add => Op::Sum,
        }
    }
}

/// The comparison [`Window::wait_until`] waits for (OpenSHMEM's SHMEM_CMP_*): the
/// signal `cmp` the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// signal == value
    Eq,
    /// signal != value
    Ne,
    /// signal > value
    Gt,
    /// signal >= value
    Ge,
    /// signal < value
    Lt,
    /// signal <= value
    Le,
}

impl Cmp {
    /// Whether `signal` compares to `value` as asked.
    pub fn holds(self, signal: u64, value: u64) -> bool {
        match self {
            Cmp::Eq => signal == value,
            Cmp::Ne => signal != value,
            Cmp::Gt => signal > value,
            Cmp::Ge => signal >= value,
            Cmp::Lt => signal < value,
            Cmp::Le => signal <= value,
        }
    }
}

impl TargetHandle<'_, '_> {
    /// Writes `origin` at `disp` (a put), then updates the `u64` signal at displacement
    /// `signal` (in the window's displacement units, as `disp`) with `op` and `value`,
    /// atomically: a rank that sees the signal's new
    /// value (with [`Window::wait_until`], or any atomic read followed by a
    /// synchronization) sees the data. Both live in this handle's target. The call is
    /// complete at origin when it returns (`origin` may be reused) and at the target at
    /// the next flush, as a put.
    ///
    /// Cheaper than a put, a flush and a separate flag update where the transport can
    /// keep the order without a round trip: in place with a release fence on the atomic
    /// transport, in ring order on the queued one. On the mpi transport, whose calls to
    /// different locations are unordered, it is exactly put + flush + accumulate.
    ///
    /// Passive-target epochs only (class RMA_SYNC otherwise: MPI has no ordering
    /// inside a fence or start epoch to build it from). Errors as for a put and a
    /// `u64` accumulate: RMA_RANGE, DISP for a misaligned signal, and ARG for a signal
    /// that overlaps the data.
    ///
    /// ```
    /// use rma_win::{Assert, Cmp, Info, Rank, SignalOp, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     // elements 0..4: data; element 4: the signal
    ///     let win = Window::allocate::<u64>(&world, 5, &Info::new())?;
    ///     world.barrier()?; // zeroed everywhere first
    ///     if world.rank() == 0 {
    ///         let epoch = win.lock_all_epoch(Assert::NONE)?;
    ///         let one = epoch.target(Rank::new(1))?;
    ///         one.put_signal(&[10u64, 20, 30, 40], 0, 4, 1, SignalOp::Set)?;
    ///         epoch.unlock()?;
    ///     } else {
    ///         win.wait_until(4, Cmp::Eq, 1)?; // the data is there once the signal is
    ///         let mut data = [0u64; 4];
    ///         win.read_local(0, &mut data)?;
    ///         assert_eq!(data, [10, 20, 30, 40]);
    ///     }
    ///     world.barrier()
    /// })?
    /// .into_iter()
    /// .collect::<rma_win::Result<Vec<_>>>()?; // every rank's result
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    pub fn put_signal<T: Equivalence>(
        &self,
        origin: &[T],
        disp: Disp,
        signal: Disp,
        value: u64,
        op: SignalOp,
    ) -> Result<()> {
        self.win.note_site();
        if self.road.active {
            return Err(Error::sync(
                "put_signal",
                "put_signal needs a passive-target epoch (lock or lock_all)",
            ));
        }
        let data = rma_datatype::bytes_of(origin);
        let sig = self.offset("put_signal", signal, 8, Some(BasicType::U64))?;
        let off = if data.is_empty() {
            0
        } else {
            self.offset("put_signal", disp, data.len(), None)?
        };
        if !data.is_empty() && sig < off + data.len() && off < sig + 8 {
            return Err(Error::arg(format!(
                "put_signal: the signal (bytes {sig}..{}) overlaps the data (bytes {off}..{}) in the target's window",
                sig + 8,
                off + data.len()
            )));
        }
        self.live()?;
        let op = op.op();
        match &self.road.fast {
            Some(f) if !data.is_empty() => f.put_signal(off, data, sig, op, value)?,
            Some(f) => f.accumulate_bits(sig, false, BasicType::U64, op, value)?,
            None if data.is_empty() => self.win.win.accumulate_bits(
                self.road.rank,
                sig,
                false,
                BasicType::U64,
                op,
                value,
            )?,
            None => self.win.win.put_signal(
                self.road.access(off, &Contiguous(data.len())),
                data,
                sig,
                op,
                value,
            )?,
        }
        Ok(())
    }
}

impl Window<'_> {
    /// The `u64` at element `index` of this rank's window (byte `8 × index`, whatever
    /// the window's displacement unit), read once: a signal's current value. It is
    /// followed by an acquire fence, so the data of every put-with-signal whose update
    /// it shows is visible to this rank's later reads.
    pub fn signal_value(&self, index: usize) -> Result<u64> {
        self.check_alive()?;
        self.signal_range(index)?;
        let mut b = [0u8; 8];
        rma_core::Memory::read_local(&self.win, index * 8, &mut b)?;
        fence(Ordering::Acquire);
        Ok(u64::from_ne_bytes(b))
    }

    /// Waits until the `u64` at element `index` of this rank's window (byte
    /// `8 × index`, whatever the window's displacement unit — on a window of 8-byte
    /// elements the same number as `put_signal`'s `signal`; on a byte window signal
    /// displacement 8 is index 1: a signal word [`TargetHandle::put_signal`] updates) compares to
    /// `value` as `cmp` says; returns the value seen. Once it returns, the data of
    /// every put-with-signal whose update it saw is visible here (`read_local`).
    ///
    /// The wait spins while this node has free cores and then sleeps in short naps
    /// (rma's one pacing policy, `RMA_WAIT`); it ends with PROC_FAILED once a rank of
    /// the world died, and with class INTERN after the stall bound (`RMA_STALL_MS`):
    /// use [`Window::wait_until_timeout`] for longer waits. RMA_RANGE for an index
    /// outside this rank's window.
    pub fn wait_until(&self, index: usize, cmp: Cmp, value: u64) -> Result<u64> {
        self.wait_signal(index, cmp, value, Patience::stall())?
            .ok_or_else(|| self.signal_stalled(index, cmp, value))
    }

    fn signal_stalled(&self, index: usize, cmp: Cmp, value: u64) -> Error {
        stalled(format!(
            "the signal at element {index} of rank {} to become {cmp:?} {value}",
            self.rank()
        ))
    }

    /// [`Window::wait_until`] for at most `timeout`: `Ok(None)` if the signal did not
    /// get there in time.
    pub fn wait_until_timeout(
        &self,
        index: usize,
        cmp: Cmp,
        value: u64,
        timeout: Duration,
    ) -> Result<Option<u64>> {
        self.wait_signal(index, cmp, value, Patience::timeout(timeout))
    }

    fn wait_signal(
        &self,
        index: usize,
        cmp: Cmp,
        value: u64,
        patience: Patience,
    ) -> Result<Option<u64>> {
        wait_for(self.world, patience, || self.signal_seen(index, cmp, value))
    }

    /// RMA_RANGE unless this rank's window holds a `u64` at element `index`; DISP if
    /// it is not 8-byte aligned (a window created over a caller's buffer).
    fn signal_range(&self, index: usize) -> Result<()> {
        let len = self.local_len();
        match index.checked_mul(8).and_then(|s| s.checked_add(8)) {
            Some(end) if end <= len => {}
            _ => {
                return Err(Error::OutOfWindow {
                    rank: rma_core::Rank::new(self.rank() as u32),
                    start: index as i128 * 8,
                    end: index as i128 * 8 + 8,
                    window_len: len,
                })
            }
        }
        let shape = &self.shapes[self.rank()];
        if shape.addr.wrapping_add(index * 8) % 8 != 0 {
            return Err(Error::Misaligned {
                call: "wait_until",
                basic: BasicType::U64,
                align: 8,
                disp: index as Disp,
                disp_unit: 8,
                offset: index * 8,
            });
        }
        Ok(())
    }

    /// One look at the signal: its value if it compares as asked (then fenced, so the
    /// data the update ordered before it is visible).
    fn signal_seen(&self, index: usize, cmp: Cmp, value: u64) -> Result<Option<u64>> {
        self.check_world()?;
        let v = self.signal_value(index)?; // (fenced)
        Ok(cmp.holds(v, value).then_some(v))
    }

    /// [`Window::wait_until`] as a future (feature `async`), paced as `wait_until`
    /// is (as [`Mutex::lock_async`](crate::Mutex::lock_async) is): each poll looks
    /// at the signal, again for up to 20 µs where `wait_until` would spin, and until
    /// it compares as asked returns `Pending` with a wake-up arranged after the pause
    /// `wait_until` would make. The wake-up never comes from inside `poll`, so the
    /// executor runs other tasks in between, or sleeps and frees its core for the
    /// sender; no thread blocks. Bounded as `wait_until`.
    #[cfg(feature = "async")]
    #[cfg_attr(docsrs, doc(cfg(feature = "async")))]
    pub fn wait_until_async(&self, index: usize, cmp: Cmp, value: u64) -> SignalWait<'_, '_> {
        SignalWait {
            win: self,
            index,
            cmp,
            value,
            patience: Patience::stall(),
        }
    }
}

/// The future of [`Window::wait_until_async`]: the value seen.
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
#[must_use = "a future does nothing unless polled"]
#[derive(Debug)]
pub struct SignalWait<'a, 'w> {
    win: &'a Window<'w>,
    index: usize,
    cmp: Cmp,
    value: u64,
    patience: Patience,
}

#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
impl std::future::Future for SignalWait<'_, '_> {
    type Output = Result<u64>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use super::Again;
        use std::task::Poll;
        let (win, index, cmp, value) = (self.win, self.index, self.cmp, self.value);
        let mut spun = None;
        loop {
            match win.signal_seen(index, cmp, value) {
                Ok(Some(v)) => return Poll::Ready(Ok(v)),
                Ok(None) => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            // a bounded spin, or woken later by rma's pacer thread (never from
            // inside this poll)
            match self.patience.poll_again(win.world, cx.waker(), &mut spun) {
                Ok(Again::Now) => {}
                Ok(Again::Later) => return Poll::Pending,
                Ok(Again::Expired) => {
                    return Poll::Ready(Err(win.signal_stalled(index, cmp, value)))
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}
