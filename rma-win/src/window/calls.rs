//! The RMA calls in their MPI-faithful forms: a count and datatype on each side.

use super::*;

impl<'w> Window<'w> {
    /// Writes `origin` into the target layout (MPI_Put). Not atomic, not ordered.
    pub fn put_with(&self, origin: Buffer<'_>, target: Target<'_>) -> Result<()> {
        let _span = tracing::trace_span!("put", target = target.rank.raw()).entered();
        let Some(t) = self.prologue("put", Some((&origin.dt, origin.count)), &target)? else {
            return Ok(());
        };
        let Some(t) = t else { return Ok(()) };
        check_signatures(
            "put",
            (&origin.dt, origin.count),
            (&target.dt, target.count),
        )?;
        let (base, layout) = self.target_layout(t, &target, true, None)?;
        let olayout = Resolved::of(origin.dt.get(), origin.count)?;
        let data = olayout.packed("origin", origin.data)?;
        self.win
            .put(self.access(t, target.rank, base, &layout), &data)?;
        self.issued();
        Ok(())
    }

    /// Reads the target layout into `result` (MPI_Get). The values are in `result` when
    /// the call returns (a stronger guarantee than MPI's, which waits for the next
    /// synchronization).
    pub fn get_with(&self, result: BufferMut<'_>, target: Target<'_>) -> Result<()> {
        let _span = tracing::trace_span!("get", target = target.rank.raw()).entered();
        let Some(t) = self.prologue("get", Some((&result.dt, result.count)), &target)? else {
            return Ok(());
        };
        let Some(t) = t else { return Ok(()) };
        check_signatures(
            "get",
            (&result.dt, result.count),
            (&target.dt, target.count),
        )?;
        let (base, layout) = self.target_layout(t, &target, false, None)?;
        let rlayout = Resolved::of(result.dt.get(), result.count)?;
        rlayout.check_result("result", result.data.len())?;
        self.fetch_into(&rlayout, result.data, layout.size(), |out| {
            self.win
                .get(self.access(t, target.rank, base, &layout), out)
        })?;
        self.issued();
        Ok(())
    }

    /// Combines `origin` into the target layout with `op`, element-wise atomically
    /// (MPI_Accumulate). NO_OP is refused (class OP). Every target element must be
    /// aligned for an atomic of its type (class DISP otherwise; see
    /// [`Window::accumulate`]).
    pub fn accumulate_with(&self, origin: Buffer<'_>, target: Target<'_>, op: Op) -> Result<()> {
        let _span =
            tracing::trace_span!("accumulate", target = target.rank.raw(), op = op.mpi_name())
                .entered();
        if op == Op::NoOp {
            return Err(Error::OpNotForCall {
                op,
                call: RmaCall::Accumulate,
            });
        }
        let Some(t) = self.prologue("accumulate", Some((&origin.dt, origin.count)), &target)?
        else {
            return Ok(());
        };
        let basic = accumulate_types(
            "accumulate",
            Some((&origin.dt, origin.count)),
            (&target.dt, target.count),
            None,
        )?;
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        let Some(t) = t else { return Ok(()) };
        let (base, layout) = self.target_layout(t, &target, true, Some(("accumulate", basic)))?;
        let olayout = Resolved::of(origin.dt.get(), origin.count)?;
        let data = olayout.packed("origin", origin.data)?;
        self.win
            .accumulate(self.access(t, target.rank, base, &layout), basic, op, &data)?;
        self.issued();
        Ok(())
    }

    /// Fetches the target layout into `result` and combines `origin` into it with `op`,
    /// each element in one atomic step (MPI_Get_accumulate). With NO_OP, `origin` may be
    /// `None`.
    pub fn get_accumulate_with(
        &self,
        origin: Option<Buffer<'_>>,
        result: BufferMut<'_>,
        target: Target<'_>,
        op: Op,
    ) -> Result<()> {
        let _span = tracing::trace_span!(
            "get_accumulate",
            target = target.rank.raw(),
            op = op.mpi_name()
        )
        .entered();
        if origin.is_none() && op != Op::NoOp {
            return Err(Error::arg(format!(
                "get_accumulate with {op} needs an origin buffer (only MPI_NO_OP reads without one); pass one"
            )));
        }
        let origin = if op == Op::NoOp { None } else { origin };
        if let Some(o) = &origin {
            o.dt.get().check_committed()?;
        }
        let Some(t) = self.prologue("get_accumulate", Some((&result.dt, result.count)), &target)?
        else {
            return Ok(());
        };
        let basic = accumulate_types(
            "get_accumulate",
            origin.as_ref().map(|o| (&o.dt, o.count)),
            (&target.dt, target.count),
            Some((&result.dt, result.count)),
        )?;
        rma_ops::check(op, basic, RmaCall::GetAccumulate)?;
        let Some(t) = t else { return Ok(()) };
        let (base, layout) =
            self.target_layout(t, &target, op != Op::NoOp, Some(("get_accumulate", basic)))?;
        let data = match &origin {
            Some(o) => Resolved::of(o.dt.get(), o.count)?.packed("origin", o.data)?,
            None => std::borrow::Cow::Borrowed(&[][..]),
        };
        let rlayout = Resolved::of(result.dt.get(), result.count)?;
        rlayout.check_result("result", result.data.len())?;
        self.fetch_into(&rlayout, result.data, layout.size(), |out| {
            self.win.get_accumulate(
                self.access(t, target.rank, base, &layout),
                basic,
                op,
                &data,
                out,
            )
        })?;
        self.issued();
        Ok(())
    }

    /// One element of the predefined `datatype`: `result` receives the target value,
    /// then `origin` is combined into it with `op`, atomically (MPI_Fetch_and_op).
    /// `origin` is ignored for NO_OP.
    pub fn fetch_and_op_with(
        &self,
        origin: &[u8],
        result: &mut [u8],
        datatype: &Datatype,
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let basic = datatype.predefined().ok_or_else(|| Error::TypeNotAllowed {
            call: "fetch_and_op",
            found: format!("{datatype:?}"),
            reason: "it takes one element of a predefined type",
        })?;
        self.fop_core(basic, origin, result, rank, disp, op)
    }

    /// One element of the predefined `datatype`: `result` receives the target value;
    /// the target becomes `origin` if it equalled `compare`, atomically
    /// (MPI_Compare_and_swap).
    pub fn compare_and_swap_with(
        &self,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        datatype: &Datatype,
        rank: Rank,
        disp: Disp,
    ) -> Result<()> {
        let basic = datatype.predefined().ok_or_else(|| Error::TypeNotAllowed {
            call: "compare_and_swap",
            found: format!("{datatype:?}"),
            reason: "it takes one element of a predefined type",
        })?;
        self.cas_core(basic, origin, compare, result, rank, disp)
    }

    pub(crate) fn element_offset(
        &self,
        call: &'static str,
        t: usize,
        basic: BasicType,
        disp: Disp,
    ) -> Result<usize> {
        let offset = self.byte_offset(t, disp)?;
        let len = self.shapes[t].len;
        if offset.checked_add(basic.size()).is_none_or(|end| end > len) {
            return Err(Error::OutOfWindow {
                rank: rank_of(t),
                start: offset as i128,
                end: offset as i128 + basic.size() as i128,
                window_len: len,
            });
        }
        let align = atomic_align(basic);
        if !self.aligned_at(t, offset, align) {
            return Err(Error::Misaligned {
                call,
                basic,
                align,
                disp,
                disp_unit: self.shapes[t].disp_unit,
                offset,
            });
        }
        Ok(offset)
    }

    pub(crate) fn fop_core(
        &self,
        basic: BasicType,
        origin: &[u8],
        result: &mut [u8],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let _span =
            tracing::trace_span!("fetch_and_op", target = rank.raw(), op = op.mpi_name()).entered();
        let t = self.begin("fetch_and_op", rank)?;
        rma_ops::check(op, basic, RmaCall::FetchAndOp)?;
        let size = basic.size();
        if op != Op::NoOp && origin.len() < size {
            return Err(Error::BufferTooSmall {
                which: "origin",
                needed: size,
                got: origin.len(),
            });
        }
        if result.len() < size {
            return Err(Error::BufferTooSmall {
                which: "result",
                needed: size,
                got: result.len(),
            });
        }
        let Some(t) = t else { return Ok(()) };
        let offset = self.element_offset("fetch_and_op", t, basic, disp)?;
        let origin = if op == Op::NoOp {
            &[][..]
        } else {
            &origin[..size]
        };
        self.win
            .fetch_and_op(rank, offset, basic, op, origin, &mut result[..size])?;
        self.issued();
        Ok(())
    }

    pub(crate) fn cas_core(
        &self,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        rank: Rank,
        disp: Disp,
    ) -> Result<()> {
        let _span = tracing::trace_span!("compare_and_swap", target = rank.raw()).entered();
        let t = self.begin("compare_and_swap", rank)?;
        rma_ops::check_cas_type(basic)?;
        let size = basic.size();
        for (which, len) in [
            ("origin", origin.len()),
            ("compare", compare.len()),
            ("result", result.len()),
        ] {
            if len < size {
                return Err(Error::BufferTooSmall {
                    which,
                    needed: size,
                    got: len,
                });
            }
        }
        let Some(t) = t else { return Ok(()) };
        let offset = self.element_offset("compare_and_swap", t, basic, disp)?;
        self.win.compare_and_swap(
            rank,
            offset,
            basic,
            &origin[..size],
            &compare[..size],
            &mut result[..size],
        )?;
        self.issued();
        Ok(())
    }

    /// Runs `fetch(out)` where `out` receives `packed_len` bytes in target type-map
    /// order, then scatters them into `result` by its layout. Contiguous results are
    /// written in place. (`fetch` fails only when a peer died; the result is then
    /// unspecified.)
    pub(crate) fn fetch_into(
        &self,
        rlayout: &Resolved,
        result: &mut [u8],
        packed_len: usize,
        fetch: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<()> {
        if rlayout.as_contiguous() == Some(packed_len) {
            return fetch(&mut result[..packed_len]);
        }
        let mut scratch = vec![0u8; packed_len];
        fetch(&mut scratch)?;
        rlayout.unpack(&scratch, result)
    }
}
