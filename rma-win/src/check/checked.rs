//! A checked window's transport: the backend's window wrapped so that the checker
//! sees every call and every synchronization.

use super::checker::Checker;
use super::record::{Kind, Runs, CAS};
use rma_backends::AnyWindow;
use rma_core::{Access, BasicType, Epochs, Memory, Op, Rank, Result, Shape, Transport};

/// A checked window's transport: every call is recorded with the [`Checker`] before
/// it goes to the window's own backend, and every synchronization the backend sees
/// completes, appends and checks the calls it covers.
pub(crate) struct Checked<'w> {
    pub(crate) inner: AnyWindow<'w>,
    pub(crate) checker: std::sync::Arc<Checker<'w>>,
}

impl std::fmt::Debug for Checked<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checked")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<'w> Checked<'w> {
    /// `call` on the inner window, recorded as `kind` over `at`'s runs.
    fn at<T>(
        &self,
        at: &Access<'_>,
        kind: Kind,
        basic: BasicType,
        op: u8,
        fetching: bool,
        call: impl FnOnce(&AnyWindow<'w>) -> Result<T>,
    ) -> Result<T> {
        let n = self.checker.record_at(at, kind, basic, op)?;
        let r = call(&self.inner);
        self.checker.settle(at.target, n, fetching, r)
    }

    /// `call` on the inner window, recorded as an accumulate-family call with `op`
    /// on the one element of `basic` at byte `offset` of `target`.
    fn element<T>(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: u8,
        fetching: bool,
        call: impl FnOnce(&AnyWindow<'w>) -> Result<T>,
    ) -> Result<T> {
        let span = Runs::One((offset as u64, (offset + basic.size()) as u64));
        self.checker.record(target, Kind::Acc, basic, op, span)?;
        let r = call(&self.inner);
        self.checker.settle(target, 1, fetching, r)
    }
}

impl Transport for Checked<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn put(&self, at: Access<'_>, data: &[u8]) -> Result<()> {
        self.at(&at, Kind::Write, BasicType::Byte, 0, false, |w| {
            w.put(at, data)
        })
    }
    fn get(&self, at: Access<'_>, out: &mut [u8]) -> Result<()> {
        self.at(&at, Kind::Read, BasicType::Byte, 0, true, |w| {
            w.get(at, out)
        })
    }
    fn accumulate(&self, at: Access<'_>, basic: BasicType, op: Op, data: &[u8]) -> Result<()> {
        self.at(&at, Kind::Acc, basic, op as u8, false, |w| {
            w.accumulate(at, basic, op, data)
        })
    }
    fn get_accumulate(
        &self,
        at: Access<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.at(&at, Kind::Acc, basic, op as u8, true, |w| {
            w.get_accumulate(at, basic, op, data, out)
        })
    }
    fn fetch_and_op(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.element(target, offset, basic, op as u8, true, |w| {
            w.fetch_and_op(target, offset, basic, op, origin, out)
        })
    }
    fn compare_and_swap(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.element(target, offset, basic, CAS, true, |w| {
            w.compare_and_swap(target, offset, basic, origin, compare, out)
        })
    }
    fn fetch_and_op_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<u64> {
        self.element(target, offset, basic, op as u8, true, |w| {
            w.fetch_and_op_bits(target, offset, basic, op, origin)
        })
    }
    fn compare_and_swap_bits(
        &self,
        target: Rank,
        offset: usize,
        basic: BasicType,
        origin: u64,
        compare: u64,
    ) -> Result<u64> {
        self.element(target, offset, basic, CAS, true, |w| {
            w.compare_and_swap_bits(target, offset, basic, origin, compare)
        })
    }
    fn accumulate_bits(
        &self,
        target: Rank,
        offset: usize,
        exclusive: bool,
        basic: BasicType,
        op: Op,
        origin: u64,
    ) -> Result<()> {
        self.element(target, offset, basic, op as u8, false, |w| {
            w.accumulate_bits(target, offset, exclusive, basic, op, origin)
        })
    }
    fn put_signal(
        &self,
        at: Access<'_>,
        data: &[u8],
        signal: usize,
        op: Op,
        value: u64,
    ) -> Result<()> {
        // as the trait's default makes it (put, flush, signal), with the calls the
        // flush completed stamped complete before the signal can be seen: a target
        // that saw the signal may read the data at once
        let n = self
            .checker
            .record_at(&at, Kind::Write, BasicType::Byte, 0)?;
        let put = self.inner.put(at, data);
        self.checker.settle(at.target, n, false, put)?;
        self.inner.flush(at.target)?;
        self.checker.stamp(at.target.index().unwrap_or(0))?;
        self.element(at.target, signal, BasicType::U64, op as u8, false, |w| {
            w.accumulate_bits(at.target, signal, at.exclusive, BasicType::U64, op, value)
        })
    }
    fn flush(&self, target: Rank) -> Result<()> {
        self.inner.flush(target)?;
        self.checker.completed(target.index())
    }
    fn flush_all(&self) -> Result<()> {
        self.inner.flush_all()?;
        self.checker.completed(None)
    }
}

impl Memory for Checked<'_> {
    fn shapes(&self) -> Vec<Shape> {
        self.inner.shapes()
    }
    fn flavor(&self) -> rma_core::Flavor {
        self.inner.flavor()
    }
    fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.inner.read_local(offset, out)
    }
    fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.inner.write_local(offset, data)
    }
    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }
    fn shared_segment(&self, rank: usize) -> Option<rma_core::RawSegment<'_>> {
        self.inner.shared_segment(rank)
    }
    fn attach(&self, data: &[u8]) -> Result<usize> {
        self.inner.attach(data)
    }
    fn detach(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.inner.detach(offset, out)
    }
    fn attached(&self, rank: usize, start: usize, end: usize) -> Result<bool> {
        self.inner.attached(rank, start, end)
    }
}

impl Epochs for Checked<'_> {
    fn acquire_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        self.inner.acquire_lock(target, exclusive)
    }
    fn release_lock(&self, target: usize, exclusive: bool) -> Result<()> {
        self.inner.release_lock(target, exclusive)
    }
    fn post_to(&self, origin: usize) -> Result<()> {
        self.inner.post_to(origin)
    }
    fn wait_posted(&self, target: usize, want: u32) -> Result<()> {
        self.inner.wait_posted(target, want)
    }
    fn complete_to(&self, target: usize) -> Result<()> {
        self.inner.complete_to(target)
    }
    fn wait_completed(&self, origin: usize, want: u32) -> Result<()> {
        self.inner.wait_completed(origin, want)
    }
    fn has_completed(&self, origin: usize, want: u32) -> Result<bool> {
        self.inner.has_completed(origin, want)
    }
    fn check_peers(&self) -> Result<()> {
        Epochs::check_peers(&self.inner)
    }
    fn fence_barrier(&self) -> Option<Result<()>> {
        self.inner.fence_barrier()
    }
    fn free(&mut self) -> Result<()> {
        // the logs only once the window itself is freed: a refused free leaves both
        self.inner.free()?;
        self.checker.free()
    }
    fn leaves_on_drop(&self) -> bool {
        self.inner.leaves_on_drop()
    }
    fn depart(&self) {
        self.inner.depart();
        let _ = self.checker.with_log(|l| {
            l.depart();
            Ok(())
        });
    }
}
