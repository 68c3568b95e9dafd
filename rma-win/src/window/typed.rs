//! The RMA calls' typed conveniences over slices of `T: Equivalence`, with a fast
//! path for contiguous calls a passive-target epoch covers.

use super::*;

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
    pub fn put<T: Equivalence>(
        &self,
        origin: &[T],
        rank: impl Into<Rank>,
        disp: Disp,
    ) -> Result<()> {
        let rank: Rank = rank.into();
        let data = rma_datatype::bytes_of(origin);
        if let Some((t, base)) = self.fast_run(rank, disp, data.len(), 1) {
            let _span = tracing::trace_span!("put", target = rank.raw()).entered();
            return self
                .win
                .put(self.access(t, rank, base, &Contiguous(data.len())), data);
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
    pub fn get<T: Equivalence>(
        &self,
        result: &mut [T],
        rank: impl Into<Rank>,
        disp: Disp,
    ) -> Result<()> {
        let rank: Rank = rank.into();
        let n = result.len();
        let bytes = std::mem::size_of_val(result);
        if let Some((t, base)) = self.fast_run(rank, disp, bytes, 1) {
            if let Some(out) = rma_datatype::bytes_of_mut(result) {
                let _span = tracing::trace_span!("get", target = rank.raw()).entered();
                return self
                    .win
                    .get(self.access(t, rank, base, &Contiguous(bytes)), out);
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
    pub fn accumulate<T: Equivalence>(
        &self,
        origin: &[T],
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<()> {
        let rank: Rank = rank.into();
        let data = rma_datatype::bytes_of(origin);
        if let Some(basic) =
            T::BASIC.filter(|&b| rma_ops::check(op, b, RmaCall::Accumulate).is_ok())
        {
            if let Some((t, base)) = self.fast_run(rank, disp, data.len(), atomic_align(basic)) {
                let _span =
                    tracing::trace_span!("accumulate", target = rank.raw(), op = op.mpi_name())
                        .entered();
                if let [one] = origin {
                    if basic.size() <= 8 {
                        let exclusive = self.exclusive_on(t);
                        return self.win.accumulate_bits(
                            rank,
                            base,
                            exclusive,
                            basic,
                            op,
                            bits_of(one),
                        );
                    }
                }
                let layout = Contiguous(data.len());
                return self
                    .win
                    .accumulate(self.access(t, rank, base, &layout), basic, op, data);
            }
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
        let bytes = std::mem::size_of_val(result);
        let data = if op == Op::NoOp {
            &[][..]
        } else {
            rma_datatype::bytes_of(origin)
        };
        if let Some(basic) = T::BASIC
            .filter(|&b| rma_ops::check(op, b, RmaCall::GetAccumulate).is_ok())
            .filter(|_| op == Op::NoOp || data.len() == bytes)
        {
            if let Some((t, base)) = self.fast_run(rank, disp, bytes, atomic_align(basic)) {
                if let Some(out) = rma_datatype::bytes_of_mut(result) {
                    let _span = tracing::trace_span!(
                        "get_accumulate",
                        target = rank.raw(),
                        op = op.mpi_name()
                    )
                    .entered();
                    let layout = Contiguous(bytes);
                    return self.win.get_accumulate(
                        self.access(t, rank, base, &layout),
                        basic,
                        op,
                        data,
                        out,
                    );
                }
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
    pub fn fetch_and_op<T: Equivalence>(
        &self,
        origin: T,
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<T> {
        let rank: Rank = rank.into();
        let basic = single_basic::<T>("fetch_and_op")?;
        if let Some((_, offset)) = self.fast_element(rank, disp, basic) {
            if rma_ops::check(op, basic, RmaCall::FetchAndOp).is_ok() {
                let _span =
                    tracing::trace_span!("fetch_and_op", target = rank.raw(), op = op.mpi_name())
                        .entered();
                let bits = bits_of(&origin);
                let old = self.win.fetch_and_op_bits(rank, offset, basic, op, bits)?;
                return value_of(basic, old);
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
    pub fn compare_and_swap<T: Equivalence>(
        &self,
        origin: T,
        compare: T,
        rank: impl Into<Rank>,
        disp: Disp,
    ) -> Result<T> {
        let rank: Rank = rank.into();
        let basic = single_basic::<T>("compare_and_swap")?;
        if let Some((_, offset)) = self.fast_element(rank, disp, basic) {
            if rma_ops::check_cas_type(basic).is_ok() {
                let _span = tracing::trace_span!("compare_and_swap", target = rank.raw()).entered();
                let (o, c) = (bits_of(&origin), bits_of(&compare));
                let old = self.win.compare_and_swap_bits(rank, offset, basic, o, c)?;
                return value_of(basic, old);
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
}
