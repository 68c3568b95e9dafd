//! The public RMA calls of [`MpiWindow`]: put, get, accumulate, get_accumulate,
//! fetch_and_op, compare_and_swap, and the request-based forms.

use crate::datatype::Placement;
use crate::epoch::Mode;
use crate::issue::{c_len, check_compare_and_swap, check_fetch_and_op, check_fetch_lengths};
use crate::request::MpiRequest;
use crate::window::{MpiTargetSpec, MpiWindow};
use rma_core::{BasicType, Disp, Op, Rank, Result, RmaCall};
use rma_mpi_sys::{Call, Handle};
use std::ffi::c_int;

impl MpiWindow<'_> {
    /// Writes `data` to `to` (MPI_Put). The window keeps a copy of `data` until a
    /// synchronization completes the put (a flush of the target, the closing call of
    /// the epoch), so `data` is free when this returns.
    #[doc(alias = "MPI_Put")]
    pub fn put(&self, data: &[u8], to: MpiTargetSpec<'_>) -> Result<()> {
        if to.rank.is_null() {
            return Ok(());
        }
        let mode = self.mode(to.rank, "put")?;
        self.put_at(self.spot(to)?, data, mode)
    }

    /// Reads `from` into `out` (MPI_Get + MPI_Win_flush of the target, which completes
    /// the target's earlier calls too). Needs a passive-target epoch covering the
    /// target.
    #[doc(alias = "MPI_Get")]
    pub fn get(&self, out: &mut [u8], from: MpiTargetSpec<'_>) -> Result<()> {
        if from.rank.is_null() {
            return Ok(());
        }
        self.need_passive(from.rank, "get")?;
        self.get_at(self.spot(from)?, out)
    }

    /// Combines `data`, elements of `basic`, into `to` with `op`, element-wise
    /// atomically (MPI_Accumulate). Completion as for [`MpiWindow::put`].
    #[doc(alias = "MPI_Accumulate")]
    pub fn accumulate(
        &self,
        basic: BasicType,
        op: Op,
        data: &[u8],
        to: MpiTargetSpec<'_>,
    ) -> Result<()> {
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        if to.rank.is_null() {
            return Ok(());
        }
        let mode = self.mode(to.rank, "accumulate")?;
        self.accumulate_at(self.spot(to)?, basic, op, data, mode)
    }

    /// Fetches `at` into `out` and combines `data` into it with `op`, each element in
    /// one atomic step (MPI_Get_accumulate + MPI_Win_flush). `data` is as long as `out`,
    /// or empty for NO_OP. Needs a passive-target epoch covering the target.
    #[doc(alias = "MPI_Get_accumulate")]
    pub fn get_accumulate(
        &self,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
        at: MpiTargetSpec<'_>,
    ) -> Result<()> {
        rma_ops::check(op, basic, RmaCall::GetAccumulate)?;
        check_fetch_lengths(op, data.len(), out.len())?;
        if at.rank.is_null() {
            return Ok(());
        }
        self.need_passive(at.rank, "get_accumulate")?;
        self.get_accumulate_at(self.spot(at)?, basic, op, data, out)
    }

    /// One element of `basic` at `disp` of `rank`'s window: fetches it into `out` and
    /// combines `origin` into it with `op`, atomically (MPI_Fetch_and_op +
    /// MPI_Win_flush). `origin` may be empty for NO_OP. Needs a passive-target
    /// epoch covering the target.
    #[doc(alias = "MPI_Fetch_and_op")]
    pub fn fetch_and_op(
        &self,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
        rank: Rank,
        disp: Disp,
    ) -> Result<()> {
        check_fetch_and_op(basic, op, origin, out)?;
        if rank.is_null() {
            return Ok(());
        }
        self.need_passive(rank, "fetch_and_op")?;
        self.fetch_and_op_at(rank, self.byte_of(rank, disp)?, basic, op, origin, out)
    }

    /// One element of `basic` at `disp` of `rank`'s window: fetches it into `out` and
    /// replaces it with `origin` if it equals `compare`, atomically
    /// (MPI_Compare_and_swap + MPI_Win_flush). Needs a passive-target epoch
    /// covering the target. 8-byte types are refused (class RMA_FLAVOR) where the
    /// library is known to crash on them ([`MpiWorld::cas64_blocked`](crate::MpiWorld::cas64_blocked)).
    #[doc(alias = "MPI_Compare_and_swap")]
    pub fn compare_and_swap(
        &self,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
        rank: Rank,
        disp: Disp,
    ) -> Result<()> {
        check_compare_and_swap(basic, origin, compare, out)?;
        if rank.is_null() {
            return Ok(());
        }
        self.need_passive(rank, "compare_and_swap")?;
        self.compare_and_swap_at(rank, self.byte_of(rank, disp)?, basic, origin, compare, out)
    }

    /// Starts a put of a copy of `data` to `to` (MPI_Rput). Needs a passive-target
    /// epoch covering the target.
    #[doc(alias = "MPI_Rput")]
    pub fn rput(&self, data: &[u8], to: MpiTargetSpec<'_>) -> Result<MpiRequest<'_>> {
        let copy = data.to_vec();
        self.start_request(
            to,
            "rput",
            copy,
            Vec::new(),
            |p, origin, _, n, ty, req| {
                // SAFETY: `origin` holds `n` bytes owned by the request, alive until it
                // completes (or leaked with it).
                self.world.mpi(|api| unsafe {
                    (api.rput)(
                        origin.cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        self.win,
                        req,
                    )
                })
            },
            BasicType::Byte,
        )
    }

    /// Starts a get of `len` bytes from `from` (MPI_Rget); [`MpiRequest::wait`] returns
    /// them. Needs a passive-target epoch covering the target.
    #[doc(alias = "MPI_Rget")]
    pub fn rget(&self, len: usize, from: MpiTargetSpec<'_>) -> Result<MpiRequest<'_>> {
        self.start_request(
            from,
            "rget",
            Vec::new(),
            vec![0u8; len],
            |p, _, result, n, ty, req| {
                // SAFETY: `result` holds `n` bytes owned by the request, alive until it
                // completes (or leaked with it).
                self.world.mpi(|api| unsafe {
                    (api.rget)(
                        result.cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        self.win,
                        req,
                    )
                })
            },
            BasicType::Byte,
        )
    }

    /// Starts an accumulate of a copy of `data` into `to` (MPI_Raccumulate). Needs a
    /// passive-target epoch covering the target.
    #[doc(alias = "MPI_Raccumulate")]
    pub fn raccumulate(
        &self,
        basic: BasicType,
        op: Op,
        data: &[u8],
        to: MpiTargetSpec<'_>,
    ) -> Result<MpiRequest<'_>> {
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        if !to.rank.is_null() && self.split(basic, data.len()) {
            // one element per call, completed here (rma-mpi-sys's defects.rs)
            self.need_passive(to.rank, "raccumulate")?;
            self.accumulate_at(self.spot(to)?, basic, op, data, Mode::Passive)?;
            return Ok(MpiRequest::done(self.world, "raccumulate", Vec::new()));
        }
        self.start_request(
            to,
            "raccumulate",
            data.to_vec(),
            Vec::new(),
            |p, origin, _, n, ty, req| {
                // SAFETY: `origin` holds `n` elements owned by the request.
                self.world.mpi(|api| unsafe {
                    (api.raccumulate)(
                        origin.cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        op as c_int,
                        self.win,
                        req,
                    )
                })
            },
            basic,
        )
    }

    /// Starts a get_accumulate at `at` (MPI_Rget_accumulate): [`MpiRequest::wait`] returns
    /// the fetched bytes, as many as `data` holds. For NO_OP only the length of `data`
    /// matters. Needs a passive-target epoch covering the target.
    #[doc(alias = "MPI_Rget_accumulate")]
    pub fn rget_accumulate(
        &self,
        basic: BasicType,
        op: Op,
        data: &[u8],
        at: MpiTargetSpec<'_>,
    ) -> Result<MpiRequest<'_>> {
        rma_ops::check(op, basic, RmaCall::GetAccumulate)?;
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        if !at.rank.is_null() && self.split(basic, data.len()) {
            // one element per call, completed here (rma-mpi-sys's defects.rs)
            self.need_passive(at.rank, "rget_accumulate")?;
            let mut result = vec![0u8; data.len()];
            self.get_accumulate_at(self.spot(at)?, basic, op, data, &mut result)?;
            return Ok(MpiRequest::done(self.world, "rget_accumulate", result));
        }
        self.start_request(
            at,
            "rget_accumulate",
            data.to_vec(),
            vec![0u8; data.len()],
            |p, origin, result, n, ty, req| {
                // SAFETY: `origin` and `result` hold `n` elements each, owned by the request.
                self.world.mpi(|api| unsafe {
                    (api.rget_accumulate)(
                        origin.cast(),
                        n,
                        ty,
                        result.cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        op as c_int,
                        self.win,
                        req,
                    )
                })
            },
            basic,
        )
    }

    /// Checks and places a request-based call, then issues it with `issue(placement,
    /// origin, result, count, type, &mut request)` over buffers the request owns.
    #[allow(clippy::too_many_arguments)]
    fn start_request(
        &self,
        t: MpiTargetSpec<'_>,
        name: &'static str,
        origin: Vec<u8>,
        mut result: Vec<u8>,
        issue: impl FnOnce(&Placement<'_>, *const u8, *mut u8, c_int, Handle, &mut Handle) -> c_int,
        basic: BasicType,
    ) -> Result<MpiRequest<'_>> {
        if t.rank.is_null() {
            return Ok(MpiRequest::done(self.world, name, result));
        }
        self.need_passive(t.rank, name)?;
        let bytes = origin.len().max(result.len());
        if bytes == 0 {
            return Ok(MpiRequest::done(self.world, name, result));
        }
        let p = self.placement(self.spot(t)?, bytes, basic)?;
        let (ty, n) = (
            self.world.basic_handle(basic)?,
            c_len(bytes / basic.size())?,
        );
        let mut req: Handle = 0;
        let rc = issue(&p, origin.as_ptr(), result.as_mut_ptr(), n, ty, &mut req);
        self.world
            .check(rc, Call::new(name).rank(t.rank).typed(basic, None))?;
        // the request completes the call locally; a flush completes it at the target
        self.pending.mark(p.rank).set();
        let fetches = !result.is_empty();
        let request = MpiRequest::new(self.world, name, req, origin, result);
        Ok(if fetches && p.derived() {
            request.flush_local_after(p.rank, self.win)
        } else {
            request
        })
    }
}
