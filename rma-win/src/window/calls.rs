//! The RMA calls in their MPI-faithful forms: a count and datatype on each side.

use super::*;
use crate::road::Road;

impl<'w> Window<'w> {
    /// Writes `origin` into the target layout (MPI_Put). Not atomic, not ordered.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Buffer, Datatype, Info, Rank, Target, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i32>(&world, 6, &Info::new())?;
    ///     // 3 elements, every other one (MPI_Type_vector), committed before use
    ///     let mut every_other = Datatype::vector(3, 1, 2, &Datatype::of::<i32>())?;
    ///     every_other.commit();
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         let target = Target::new(Rank::new(1), 0, 1, &every_other);
    ///         win.put_with(Buffer::of(&[1i32, 2, 3]), target)?;
    ///     }
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 1 {
    ///         assert_eq!(win.local_vec::<i32>()?, [1, 0, 2, 0, 3, 0]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Put")]
    pub fn put_with(&self, origin: Buffer<'_>, target: Target<'_>) -> Result<()> {
        if let Some((_, n)) = same_run((&origin.dt, origin.count), origin.data.len(), &target) {
            let data = &origin.data[..n];
            let done = self.road_at("put", target.rank, target.disp, n, None, |road, off| {
                let _span = tracing::trace_span!("put", target = target.rank.raw()).entered();
                road.put(self, off, data)
            });
            if let Some(done) = done {
                return done;
            }
        }
        self.note_site();
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
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, BufferMut, Datatype, Info, Rank, Target, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i32>(&world, 6, &Info::new())?;
    ///     let base = 10 * win.rank() as i32;
    ///     win.write_local(0, &[base, base + 1, base + 2, base + 3, base + 4, base + 5])?;
    ///     let int = Datatype::of::<i32>();
    ///     let mut every_other = Datatype::vector(3, 1, 2, &int)?;
    ///     every_other.commit();
    ///     win.fence(Assert::NONE)?;
    ///     let (peer, mut odd) = (1 - win.rank() as u32, [0i32; 3]);
    ///     let target = Target::new(Rank::new(peer), 1, 1, &every_other); // elements 1, 3, 5
    ///     win.get_with(BufferMut::typed(&mut odd, 3, &int)?, target)?;
    ///     win.fence(Assert::NONE)?;
    ///     let p = 10 * peer as i32;
    ///     assert_eq!(odd, [p + 1, p + 3, p + 5]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Get")]
    pub fn get_with(&self, result: BufferMut<'_>, target: Target<'_>) -> Result<()> {
        if let Some((_, n)) = same_run((&result.dt, result.count), result.data.len(), &target) {
            let out = &mut result.data[..n];
            let done = self.road_at("get", target.rank, target.disp, n, None, |road, off| {
                let _span = tracing::trace_span!("get", target = target.rank.raw()).entered();
                road.get(self, off, out)
            });
            if let Some(done) = done {
                return done;
            }
        }
        self.note_site();
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
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Buffer, Datatype, Info, Op, Rank, Target, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<f64>(&world, 4, &Info::new())?;
    ///     let mut every_other = Datatype::vector(2, 1, 2, &Datatype::of::<f64>())?;
    ///     every_other.commit();
    ///     win.fence(Assert::NONE)?;
    ///     // add [1, 2] into elements 0 and 2 of rank 0
    ///     let target = Target::new(Rank::new(0), 0, 1, &every_other);
    ///     win.accumulate_with(Buffer::of(&[1.0f64, 2.0]), target, Op::Sum)?;
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<f64>()?, [2.0, 0.0, 4.0, 0.0]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Accumulate")]
    pub fn accumulate_with(&self, origin: Buffer<'_>, target: Target<'_>, op: Op) -> Result<()> {
        if let Some((b, n)) = same_run((&origin.dt, origin.count), origin.data.len(), &target) {
            let data = &origin.data[..n];
            if let Some(done) = self.accumulate_road(b, data, target.rank, target.disp, op) {
                return done;
            }
        }
        self.note_site();
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
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, BufferMut, Datatype, Info, Op, Rank, Target, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 1 {
    ///         win.accumulate(&[5u64, 6], Rank::new(0), 0, Op::Sum)?;
    ///     }
    ///     win.fence(Assert::NONE)?;
    ///     // NO_OP: an atomic read, without an origin buffer
    ///     let (u64t, mut now) = (Datatype::of::<u64>(), [0u64; 2]);
    ///     let result = BufferMut::typed(&mut now, 2, &u64t)?;
    ///     win.get_accumulate_with(None, result, Target::of::<u64>(Rank::new(0), 0, 2), Op::NoOp)?;
    ///     win.fence(Assert::NONE)?;
    ///     assert_eq!(now, [5, 6]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Get_accumulate")]
    pub fn get_accumulate_with(
        &self,
        origin: Option<Buffer<'_>>,
        result: BufferMut<'_>,
        target: Target<'_>,
        op: Op,
    ) -> Result<()> {
        if let Some((b, n)) = same_run((&result.dt, result.count), result.data.len(), &target) {
            let data = match &origin {
                _ if op == Op::NoOp => Some(&[][..]),
                Some(o) if o.dt.get().predefined() == Some(b) && o.count == result.count => {
                    o.data.get(..n)
                }
                _ => None,
            };
            if let Some(data) = data {
                let (rank, disp) = (target.rank, target.disp);
                let out = &mut result.data[..n];
                if let Some(done) = self.get_accumulate_road(b, data, out, rank, disp, op) {
                    return done;
                }
            }
        }
        self.note_site();
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
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Datatype, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i32>(&world, 1, &Info::new())?;
    ///     let int = Datatype::of::<i32>();
    ///     win.fence(Assert::NONE)?;
    ///     let mut old = [0u8; 4];
    ///     win.fetch_and_op_with(&5i32.to_ne_bytes(), &mut old, &int, Rank::new(0), 0, Op::Sum)?;
    ///     win.fence(Assert::NONE)?;
    ///     assert!(matches!(i32::from_ne_bytes(old), 0 | 5)); // 0 for the first to arrive
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<i32>()?, [10]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Fetch_and_op")]
    pub fn fetch_and_op_with(
        &self,
        origin: &[u8],
        result: &mut [u8],
        datatype: &Datatype,
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        self.note_site();
        let rank: Rank = rank.into();
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
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Datatype, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     let (u64t, zero) = (Datatype::of::<u64>(), 0u64.to_ne_bytes());
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 1 {
    ///         let mut old = [0u8; 8];
    ///         let (seven, nine) = (7u64.to_ne_bytes(), 9u64.to_ne_bytes());
    ///         win.compare_and_swap_with(&seven, &zero, &mut old, &u64t, Rank::new(0), 0)?;
    ///         assert_eq!(u64::from_ne_bytes(old), 0); // it was 0: now 7
    ///         win.compare_and_swap_with(&nine, &zero, &mut old, &u64t, Rank::new(0), 0)?;
    ///         assert_eq!(u64::from_ne_bytes(old), 7); // not 0: unchanged
    ///     }
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u64>()?, [7]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Compare_and_swap")]
    pub fn compare_and_swap_with(
        &self,
        origin: &[u8],
        compare: &[u8],
        result: &mut [u8],
        datatype: &Datatype,
        rank: impl Into<Rank>,
        disp: Disp,
    ) -> Result<()> {
        self.note_site();
        let rank: Rank = rank.into();
        let basic = datatype.predefined().ok_or_else(|| Error::TypeNotAllowed {
            call: "compare_and_swap",
            found: format!("{datatype:?}"),
            reason: "it takes one element of a predefined type",
        })?;
        self.cas_core(basic, origin, compare, result, rank, disp)
    }

    #[track_caller]
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
        let size = basic.size();
        let bits = match origin.get(..size) {
            _ if op == Op::NoOp => Some(0),
            Some(o) => Some(rma_core::bits_from_bytes(o)),
            None => None,
        };
        let ok = rma_ops::check(op, basic, RmaCall::FetchAndOp).is_ok();
        if let (Some(bits), Some(out), true) = (bits, result.get_mut(..size), ok) {
            let done = self.element_road("fetch_and_op", rank, disp, basic, |road, off| {
                road.fetch_and_op(self, off, basic, op, bits)
            });
            if let Some(done) = done {
                rma_core::bytes_from_bits(done?, out);
                return Ok(());
            }
        }
        let t = self.begin("fetch_and_op", rank)?;
        rma_ops::check(op, basic, RmaCall::FetchAndOp)?;
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
        let road = Road::at(self, t, rank, false);
        let offset = road.offset(self, "fetch_and_op", disp, size, Some(basic))?;
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

    #[track_caller]
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
        let size = basic.size();
        let ok = rma_ops::check_cas_type(basic).is_ok();
        if let (Some(o), Some(c), Some(out), true) = (
            origin.get(..size),
            compare.get(..size),
            result.get_mut(..size),
            ok,
        ) {
            let (o, c) = (rma_core::bits_from_bytes(o), rma_core::bits_from_bytes(c));
            let done = self.element_road("compare_and_swap", rank, disp, basic, |road, off| {
                road.compare_and_swap(self, off, basic, o, c)
            });
            if let Some(done) = done {
                rma_core::bytes_from_bits(done?, out);
                return Ok(());
            }
        }
        let t = self.begin("compare_and_swap", rank)?;
        rma_ops::check_cas_type(basic)?;
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
        let road = Road::at(self, t, rank, false);
        let offset = road.offset(self, "compare_and_swap", disp, size, Some(basic))?;
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
