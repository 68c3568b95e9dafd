//! The RMA calls' typed conveniences over slices of `T: Equivalence`, with a fast
//! path for contiguous calls a passive-target epoch covers.

use super::*;
use crate::buffers::basic_datatype;

impl<'w> Window<'w> {
    /// Writes `origin` to `rank`'s window starting at displacement `disp` (MPI_Put of
    /// `origin.len()` elements of `T`).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<f64>(&world, 2, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         win.put(&[1.5, 2.5], Rank::new(1), 0)?;
    ///     }
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 1 {
    ///         assert_eq!(win.local_vec::<f64>()?, [1.5, 2.5]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Put")]
    pub fn put<T: Equivalence>(
        &self,
        origin: &[T],
        rank: impl Into<Rank>,
        disp: Disp,
    ) -> Result<()> {
        let rank: Rank = rank.into();
        let data = rma_datatype::bytes_of(origin);
        let done = self.road_at("put", rank, disp, data.len(), None, |road, off| {
            let _span = tracing::trace_span!("put", target = rank.raw()).entered();
            road.put(self, off, data)
        });
        if let Some(done) = done {
            return done;
        }
        self.put_with(
            Buffer::of(origin),
            Target::of::<T>(rank, disp, origin.len()),
        )
    }

    /// Reads `result.len()` elements of `T` from `rank`'s window at `disp` (MPI_Get).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u32>(&world, 2, &Info::new())?;
    ///     let me = win.rank() as u32;
    ///     win.write_local(0, &[10 * me, 10 * me + 1])?;
    ///     win.fence(Assert::NONE)?;
    ///     let peer = 1 - me;
    ///     let mut got = [0u32; 2];
    ///     win.get(&mut got, Rank::new(peer), 0)?;
    ///     win.fence(Assert::NONE)?;
    ///     assert_eq!(got, [10 * peer, 10 * peer + 1]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Get")]
    pub fn get<T: Equivalence>(
        &self,
        result: &mut [T],
        rank: impl Into<Rank>,
        disp: Disp,
    ) -> Result<()> {
        let rank: Rank = rank.into();
        let n = result.len();
        let bytes = std::mem::size_of_val(result);
        if let Some(out) = rma_datatype::bytes_of_mut(result) {
            let done = self.road_at("get", rank, disp, bytes, None, |road, off| {
                let _span = tracing::trace_span!("get", target = rank.raw()).entered();
                road.get(self, off, out)
            });
            if let Some(done) = done {
                return done;
            }
        }
        self.typed_result(result, |buf| {
            self.get_with(buf, Target::of::<T>(rank, disp, n))
        })
    }

    /// Combines `origin` into `rank`'s window at `disp` with `op` (MPI_Accumulate).
    ///
    /// **Alignment.** Every target element must be aligned for an atomic of its type
    /// (its size up to 8 bytes, its type alignment for 16-byte types): a displacement
    /// that puts one elsewhere is refused with class DISP, naming the alignment, the
    /// displacement and the byte offset. MPI leaves alignment to the user; rma is
    /// stricter because its atomics work on aligned words (docs/semantics.md rule 3).
    /// put and get take any displacement.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i64>(&world, 2, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     // element 0 sums, element 1 keeps the largest value (one op per element)
    ///     win.accumulate(&[1i64], Rank::new(0), 0, Op::Sum)?;
    ///     win.accumulate(&[10 * win.rank() as i64], Rank::new(0), 1, Op::Max)?;
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<i64>()?, [2, 10]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Accumulate")]
    pub fn accumulate<T: Equivalence>(
        &self,
        origin: &[T],
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let rank: Rank = rank.into();
        if let Some(basic) = T::BASIC {
            return self.accumulate_elements(basic, rma_datatype::bytes_of(origin), rank, disp, op);
        }
        self.accumulate_with(
            Buffer::of(origin),
            Target::of::<T>(rank, disp, origin.len()),
            op,
        )
    }

    /// Fetches `result.len()` elements at `disp` into `result` and combines `origin`
    /// into them with `op` (MPI_Get_accumulate). For NO_OP pass an empty `origin`.
    ///
    /// Every target element must be aligned for an atomic of its type (class DISP
    /// otherwise; see [`Window::accumulate`], "Alignment").
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     let mut old = [0u64];
    ///     win.get_accumulate(&[1u64 << win.rank()], &mut old, Rank::new(0), 0, Op::Bor)?;
    ///     win.fence(Assert::NONE)?;
    ///     let other = 1u64 << (1 - win.rank());
    ///     assert!(old == [0] || old == [other]); // the second rank sees the first one's bit
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u64>()?, [0b11]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Get_accumulate")]
    pub fn get_accumulate<T: Equivalence>(
        &self,
        origin: &[T],
        result: &mut [T],
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let rank: Rank = rank.into();
        let n = result.len();
        let data = if op == Op::NoOp {
            &[][..]
        } else {
            rma_datatype::bytes_of(origin)
        };
        if let Some(basic) = T::BASIC {
            if let Some(out) = rma_datatype::bytes_of_mut(result) {
                return self.get_accumulate_elements(basic, data, out, rank, disp, op);
            }
        }
        let o = (op != Op::NoOp).then(|| Buffer::of(origin));
        self.typed_result(result, |buf| {
            self.get_accumulate_with(o, buf, Target::of::<T>(rank, disp, n), op)
        })
    }

    /// Atomically fetches the element at `disp` and combines `origin` into it with `op`;
    /// returns the old value (MPI_Fetch_and_op).
    ///
    /// Every target element must be aligned for an atomic of its type (class DISP
    /// otherwise; see [`Window::accumulate`], "Alignment").
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// let tickets = rma_win::run_threads(2, |world| -> rma_win::Result<u64> {
    ///     let mut win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     win.lock_all(Assert::NONE)?;
    ///     let ticket = win.fetch_and_op(1u64, Rank::new(0), 0, Op::Sum)?; // the old value
    ///     win.unlock_all()?;
    ///     win.free()?;
    ///     Ok(ticket)
    /// })?;
    /// let mut tickets = tickets.into_iter().collect::<rma_win::Result<Vec<_>>>()?;
    /// tickets.sort();
    /// assert_eq!(tickets, [0, 1]); // each rank got a distinct ticket
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Fetch_and_op")]
    pub fn fetch_and_op<T: Equivalence>(
        &self,
        origin: T,
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<T> {
        let rank: Rank = rank.into();
        let basic = single_basic::<T>("fetch_and_op")?;
        if rma_ops::check(op, basic, RmaCall::FetchAndOp).is_ok() {
            let bits = bits_of(&origin);
            let done = self.element_road("fetch_and_op", rank, disp, basic, |road, off| {
                let _span =
                    tracing::trace_span!("fetch_and_op", target = rank.raw(), op = op.mpi_name())
                        .entered();
                road.fetch_and_op(self, off, basic, op, bits)
            });
            if let Some(done) = done {
                return value_of(basic, done?);
            }
        }
        let mut out = [0u8; BasicType::MAX_SIZE];
        let size = basic.size();
        self.fop_core(
            basic,
            rma_datatype::bytes_of(std::slice::from_ref(&origin)),
            &mut out[..size],
            rank,
            disp,
            op,
        )?;
        from_bytes(&out[..size])
    }

    /// Atomically replaces the element at `disp` with `origin` if it equals `compare`;
    /// returns the old value (MPI_Compare_and_swap).
    ///
    /// Every target element must be aligned for an atomic of its type (class DISP
    /// otherwise; see [`Window::accumulate`], "Alignment").
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// let won = rma_win::run_threads(2, |world| -> rma_win::Result<bool> {
    ///     let win = Window::allocate::<i32>(&world, 1, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     // claim rank 0's slot if it is still free (0): exactly one rank wins
    ///     let me = win.rank() as i32 + 1;
    ///     let old = win.compare_and_swap(me, 0, Rank::new(0), 0)?;
    ///     win.fence(Assert::NONE)?;
    ///     Ok(old == 0)
    /// })?;
    /// let won = won.into_iter().collect::<rma_win::Result<Vec<_>>>()?;
    /// assert_eq!(won.iter().filter(|&&w| w).count(), 1);
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Compare_and_swap")]
    pub fn compare_and_swap<T: Equivalence>(
        &self,
        origin: T,
        compare: T,
        rank: impl Into<Rank>,
        disp: Disp,
    ) -> Result<T> {
        let rank: Rank = rank.into();
        let basic = single_basic::<T>("compare_and_swap")?;
        if rma_ops::check_cas_type(basic).is_ok() {
            let (o, c) = (bits_of(&origin), bits_of(&compare));
            let done = self.element_road("compare_and_swap", rank, disp, basic, |road, off| {
                let _span = tracing::trace_span!("compare_and_swap", target = rank.raw()).entered();
                road.compare_and_swap(self, off, basic, o, c)
            });
            if let Some(done) = done {
                return value_of(basic, done?);
            }
        }
        let mut out = [0u8; BasicType::MAX_SIZE];
        let size = basic.size();
        self.cas_core(
            basic,
            rma_datatype::bytes_of(std::slice::from_ref(&origin)),
            rma_datatype::bytes_of(std::slice::from_ref(&compare)),
            &mut out[..size],
            rank,
            disp,
        )?;
        from_bytes(&out[..size])
    }

    /// Combines `origin`, whole elements of the predefined type `basic` given as bytes,
    /// into `rank`'s window at `disp` with `op` (MPI_Accumulate with a predefined
    /// datatype on both sides): [`Window::accumulate`] for callers that know the
    /// element type only at run time, such as a C interface. A length that is not a
    /// whole number of elements is class ARG.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, BasicType, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i32>(&world, 2, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     let two: Vec<u8> = [5i32, 7].iter().flat_map(|v| v.to_ne_bytes()).collect();
    ///     win.accumulate_elements(BasicType::I32, &two, Rank::new(0), 0, Op::Sum)?;
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<i32>()?, [10, 14]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Accumulate")]
    pub fn accumulate_elements(
        &self,
        basic: BasicType,
        origin: &[u8],
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let rank: Rank = rank.into();
        let count = whole_elements(basic, origin.len(), "origin")?;
        if let Some(done) = self.accumulate_road(basic, origin, rank, disp, op) {
            return done;
        }
        let dt = basic_datatype(basic);
        self.accumulate_with(
            Buffer::new(origin, count, dt),
            Target::new(rank, disp, count, dt),
            op,
        )
    }

    /// An accumulate of whole elements of `basic` on its road, where one is open
    /// ([`Window::road_at`]); `None` sends the call down the general path.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn accumulate_road(
        &self,
        basic: BasicType,
        data: &[u8],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Option<Result<()>> {
        rma_ops::check(op, basic, RmaCall::Accumulate).ok()?;
        self.road_at(
            "accumulate",
            rank,
            disp,
            data.len(),
            Some(basic),
            |road, off| {
                let _span =
                    tracing::trace_span!("accumulate", target = rank.raw(), op = op.mpi_name())
                        .entered();
                road.accumulate(self, off, basic, op, data)
            },
        )
    }

    /// A get_accumulate of whole elements of `basic` on its road, where one is open;
    /// `data`: as long as `out`, or empty for NO_OP. `None`: the general path.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn get_accumulate_road(
        &self,
        basic: BasicType,
        data: &[u8],
        out: &mut [u8],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Option<Result<()>> {
        if op == Op::NoOp {
            data.is_empty()
        } else {
            data.len() == out.len()
        }
        .then_some(())?;
        rma_ops::check(op, basic, RmaCall::GetAccumulate).ok()?;
        let n = out.len();
        self.road_at("get_accumulate", rank, disp, n, Some(basic), |road, off| {
            let _span =
                tracing::trace_span!("get_accumulate", target = rank.raw(), op = op.mpi_name())
                    .entered();
            road.get_accumulate(self, off, basic, op, data, out)
        })
    }

    /// Fetches `result.len()` bytes, whole elements of the predefined type `basic`,
    /// from `rank`'s window at `disp` and combines `origin` (as long as `result`; empty
    /// for NO_OP) into them with `op` (MPI_Get_accumulate with a predefined datatype on
    /// every side): [`Window::get_accumulate`] for callers that know the element type
    /// only at run time. A length that is not a whole number of elements is class
    /// ARG.
    #[track_caller]
    #[doc(alias = "MPI_Get_accumulate")]
    pub fn get_accumulate_elements(
        &self,
        basic: BasicType,
        origin: &[u8],
        result: &mut [u8],
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let rank: Rank = rank.into();
        let n = whole_elements(basic, result.len(), "result")?;
        let data = if op == Op::NoOp { &[][..] } else { origin };
        let on = whole_elements(basic, data.len(), "origin")?;
        if let Some(done) = self.get_accumulate_road(basic, data, result, rank, disp, op) {
            return done;
        }
        let dt = basic_datatype(basic);
        let o = (op != Op::NoOp).then(|| Buffer::new(data, on, dt));
        self.get_accumulate_with(
            o,
            BufferMut::new(result, n, dt),
            Target::new(rank, disp, n, dt),
            op,
        )
    }
}

/// The number of elements of `basic` in `len` bytes: class ARG unless whole.
fn whole_elements(basic: BasicType, len: usize, which: &'static str) -> Result<usize> {
    let size = basic.size();
    if len % size != 0 {
        return Err(Error::arg(format!(
            "the {which} buffer's {len} bytes are not a whole number of {} elements ({size} bytes each)",
            basic.name()
        )));
    }
    Ok(len / size)
}
