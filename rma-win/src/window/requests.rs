//! Request-based calls (MPI_Rput and the rest): valid in passive-target epochs only,
//! complete when they return.

use super::*;

impl<'w> Window<'w> {
    /// Checks the passive-target epoch a request-based call needs.
    pub(crate) fn request_epoch(&self, call: &'static str, rank: Rank) -> Result<()> {
        self.begin_as(call, rank, true).map(|_| ())
    }

    /// [`Window::put_with`] returning a request (MPI_Rput); valid in passive-target
    /// epochs only. The request keeps `origin` borrowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Buffer, Datatype, Info, Rank, Target, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut win = Window::allocate::<u16>(&world, 4, &Info::new())?;
    ///     let mut every_other = Datatype::vector(2, 1, 2, &Datatype::of::<u16>())?;
    ///     every_other.commit();
    ///     win.lock_all(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         let data = [7u16, 9];
    ///         let target = Target::new(Rank::new(1), 1, 1, &every_other); // elements 1 and 3
    ///         win.rput_with(Buffer::of(&data), target)?.wait()?;
    ///     }
    ///     win.unlock_all()?; // the put is complete at rank 1
    ///     world.barrier()?;
    ///     if win.rank() == 1 {
    ///         assert_eq!(win.local_vec::<u16>()?, [0, 7, 0, 9]);
    ///     }
    ///     win.free()?;
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Rput")]
    pub fn rput_with<'b>(&'b self, origin: Buffer<'b>, target: Target<'_>) -> Result<Request<'b>> {
        self.note_site();
        self.request_epoch("rput", target.rank)?;
        self.put_with(origin, target)?;
        Ok(Request::completed())
    }

    /// [`Window::get_with`] returning a request (MPI_Rget). The request keeps `result`
    /// borrowed.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, BufferMut, Datatype, Info, LockType, Rank, Target, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut win = Window::allocate::<f32>(&world, 4, &Info::new())?;
    ///     let b = 10.0 * win.rank() as f32;
    ///     win.write_local(0, &[b, b + 1.0, b + 2.0, b + 3.0])?;
    ///     world.barrier()?; // every rank has written its window
    ///     let (peer, f32t, mut last) = (1 - win.rank() as u32, Datatype::of::<f32>(), [0f32; 2]);
    ///     win.lock(LockType::Shared, Rank::new(peer), Assert::NONE)?;
    ///     let target = Target::of::<f32>(Rank::new(peer), 2, 2); // elements 2 and 3
    ///     win.rget_with(BufferMut::typed(&mut last, 2, &f32t)?, target)?.wait()?;
    ///     win.unlock(Rank::new(peer))?;
    ///     win.free()?;
    ///     let p = 10.0 * peer as f32;
    ///     assert_eq!(last, [p + 2.0, p + 3.0]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Rget")]
    pub fn rget_with<'b>(
        &'b self,
        result: BufferMut<'b>,
        target: Target<'_>,
    ) -> Result<Request<'b>> {
        self.note_site();
        self.request_epoch("rget", target.rank)?;
        self.get_with(result, target)?;
        Ok(Request::completed())
    }

    /// [`Window::accumulate_with`] returning a request (MPI_Raccumulate).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Buffer, Info, Op, Rank, Target, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut win = Window::allocate::<i64>(&world, 2, &Info::new())?;
    ///     win.lock_all(Assert::NONE)?;
    ///     let mine = [win.rank() as i64 + 1; 2];
    ///     let target = Target::of::<i64>(Rank::new(0), 0, 2);
    ///     win.raccumulate_with(Buffer::of(&mine), target, Op::Sum)?.wait()?;
    ///     win.unlock_all()?; // the sum is complete at rank 0
    ///     world.barrier()?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<i64>()?, [3, 3]);
    ///     }
    ///     win.free()?;
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Raccumulate")]
    pub fn raccumulate_with<'b>(
        &'b self,
        origin: Buffer<'b>,
        target: Target<'_>,
        op: Op,
    ) -> Result<Request<'b>> {
        self.note_site();
        self.request_epoch("raccumulate", target.rank)?;
        self.accumulate_with(origin, target, op)?;
        Ok(Request::completed())
    }

    /// [`Window::get_accumulate_with`] returning a request (MPI_Rget_accumulate).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{
    ///     Assert, Buffer, BufferMut, Datatype, Info, LockType, Op, Rank, Target, Window,
    /// };
    /// let olds = rma_win::run_threads(2, |world| -> rma_win::Result<u32> {
    ///     let mut win = Window::allocate::<u32>(&world, 1, &Info::new())?;
    ///     let (u32t, mine, mut old) = (Datatype::of::<u32>(), [win.rank() as u32 + 1], [0u32]);
    ///     let (origin, result) = (Buffer::of(&mine), BufferMut::typed(&mut old, 1, &u32t)?);
    ///     let target = Target::of::<u32>(Rank::new(0), 0, 1);
    ///     win.lock(LockType::Exclusive, Rank::new(0), Assert::NONE)?;
    ///     win.rget_accumulate_with(Some(origin), result, target, Op::Replace)?.wait()?; // a swap
    ///     win.unlock(Rank::new(0))?;
    ///     win.free()?;
    ///     Ok(old[0])
    /// })?;
    /// let mut olds = olds.into_iter().collect::<rma_win::Result<Vec<_>>>()?;
    /// olds.sort();
    /// assert!(olds == [0, 1] || olds == [0, 2]); // the second swap got the first one's value
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Rget_accumulate")]
    pub fn rget_accumulate_with<'b>(
        &'b self,
        origin: Option<Buffer<'b>>,
        result: BufferMut<'b>,
        target: Target<'_>,
        op: Op,
    ) -> Result<Request<'b>> {
        self.note_site();
        self.request_epoch("rget_accumulate", target.rank)?;
        self.get_accumulate_with(origin, result, target, op)?;
        Ok(Request::completed())
    }

    /// [`Window::put`] returning a request (MPI_Rput).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, LockType, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 2, &Info::new())?;
    ///     if win.rank() == 1 {
    ///         let data = [3u64, 4];
    ///         win.lock(LockType::Exclusive, Rank::new(0), Assert::NONE)?;
    ///         let request = win.rput(&data, Rank::new(0), 0)?;
    ///         request.wait()?; // `data` may be reused; rank 0 has it at the unlock
    ///         win.unlock(Rank::new(0))?;
    ///     }
    ///     world.barrier()?;
    ///     if win.rank() == 0 {
    ///         assert_eq!(win.local_vec::<u64>()?, [3, 4]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Rput")]
    pub fn rput<'b, T: Equivalence>(
        &'b self,
        origin: &'b [T],
        rank: impl Into<Rank>,
        disp: Disp,
    ) -> Result<Request<'b>> {
        self.note_site();
        let rank: Rank = rank.into();
        self.request_epoch("rput", rank)?;
        self.put(origin, rank, disp)?;
        Ok(Request::completed())
    }

    /// [`Window::get`] returning a request (MPI_Rget).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, LockType, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    ///     win.write_local(0, &[100 + win.rank() as u64])?;
    ///     world.barrier()?; // every rank has written its window
    ///     let peer = 1 - win.rank() as u32;
    ///     let mut got = [0u64];
    ///     win.lock(LockType::Shared, Rank::new(peer), Assert::NONE)?;
    ///     let request = win.rget(&mut got, Rank::new(peer), 0)?;
    ///     request.wait()?; // `got` holds the value now
    ///     win.unlock(Rank::new(peer))?;
    ///     win.free()?;
    ///     assert_eq!(got, [100 + peer as u64]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Rget")]
    pub fn rget<'b, T: Equivalence>(
        &'b self,
        result: &'b mut [T],
        rank: impl Into<Rank>,
        disp: Disp,
    ) -> Result<Request<'b>> {
        self.note_site();
        let rank: Rank = rank.into();
        self.request_epoch("rget", rank)?;
        self.get(result, rank, disp)?;
        Ok(Request::completed())
    }

    /// [`Window::accumulate`] returning a request (MPI_Raccumulate).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Request, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut win = Window::allocate::<i64>(&world, 1, &Info::new())?;
    ///     let one = [1i64];
    ///     win.lock_all(Assert::NONE)?;
    ///     let requests = vec![
    ///         win.raccumulate(&one, Rank::new(0), 0, Op::Sum)?,
    ///         win.raccumulate(&one, Rank::new(1), 0, Op::Sum)?,
    ///     ];
    ///     Request::wait_all(requests)?;
    ///     win.unlock_all()?; // the sums are complete at their targets
    ///     world.barrier()?;
    ///     assert_eq!(win.local_vec::<i64>()?, [2]);
    ///     win.free()?;
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Raccumulate")]
    pub fn raccumulate<'b, T: Equivalence>(
        &'b self,
        origin: &'b [T],
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<Request<'b>> {
        self.note_site();
        let rank: Rank = rank.into();
        self.request_epoch("raccumulate", rank)?;
        self.accumulate(origin, rank, disp, op)?;
        Ok(Request::completed())
    }

    /// [`Window::get_accumulate`] returning a request (MPI_Rget_accumulate).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, LockType, Op, Rank, Window};
    /// let tickets = rma_win::run_threads(2, |world| -> rma_win::Result<i64> {
    ///     let mut win = Window::allocate::<i64>(&world, 1, &Info::new())?;
    ///     let mut old = [0i64];
    ///     win.lock(LockType::Shared, Rank::new(0), Assert::NONE)?;
    ///     win.rget_accumulate(&[1i64], &mut old, Rank::new(0), 0, Op::Sum)?.wait()?;
    ///     win.unlock(Rank::new(0))?;
    ///     win.free()?;
    ///     Ok(old[0])
    /// })?;
    /// let mut tickets = tickets.into_iter().collect::<rma_win::Result<Vec<_>>>()?;
    /// tickets.sort();
    /// assert_eq!(tickets, [0, 1]);
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    #[doc(alias = "MPI_Rget_accumulate")]
    pub fn rget_accumulate<'b, T: Equivalence>(
        &'b self,
        origin: &'b [T],
        result: &'b mut [T],
        rank: impl Into<Rank>,
        disp: Disp,
        op: Op,
    ) -> Result<Request<'b>> {
        self.note_site();
        let rank: Rank = rank.into();
        self.request_epoch("rget_accumulate", rank)?;
        self.get_accumulate(origin, result, rank, disp, op)?;
        Ok(Request::completed())
    }

    /// Runs a call that writes into a typed result, through a byte buffer when `T`
    /// cannot take arbitrary bytes (`bool`).
    pub(crate) fn typed_result<T: Equivalence>(
        &self,
        result: &mut [T],
        call: impl FnOnce(BufferMut<'_>) -> Result<()>,
    ) -> Result<()> {
        let n = result.len();
        let dt = Dt::of::<T>();
        if T::ANY_BIT_PATTERN {
            let bytes = rma_datatype::bytes_of_mut(result).ok_or_else(|| Error::Internal {
                reason: "ANY_BIT_PATTERN type refused a byte view".into(),
            })?;
            return call(BufferMut {
                data: bytes,
                count: n,
                dt,
            });
        }
        let mut bytes = vec![0u8; std::mem::size_of_val(result)];
        call(BufferMut {
            data: &mut bytes,
            count: n,
            dt,
        })?;
        rma_datatype::copy_from_bytes(result, &bytes)
    }
}
