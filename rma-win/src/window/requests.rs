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
    pub fn rput_with<'b>(&'b self, origin: Buffer<'b>, target: Target<'_>) -> Result<Request<'b>> {
        self.request_epoch("rput", target.rank)?;
        self.put_with(origin, target)?;
        Ok(Request::completed())
    }

    /// [`Window::get_with`] returning a request (MPI_Rget). The request keeps `result`
    /// borrowed.
    pub fn rget_with<'b>(
        &'b self,
        result: BufferMut<'b>,
        target: Target<'_>,
    ) -> Result<Request<'b>> {
        self.request_epoch("rget", target.rank)?;
        self.get_with(result, target)?;
        Ok(Request::completed())
    }

    /// [`Window::accumulate_with`] returning a request (MPI_Raccumulate).
    pub fn raccumulate_with<'b>(
        &'b self,
        origin: Buffer<'b>,
        target: Target<'_>,
        op: Op,
    ) -> Result<Request<'b>> {
        self.request_epoch("raccumulate", target.rank)?;
        self.accumulate_with(origin, target, op)?;
        Ok(Request::completed())
    }

    /// [`Window::get_accumulate_with`] returning a request (MPI_Rget_accumulate).
    pub fn rget_accumulate_with<'b>(
        &'b self,
        origin: Option<Buffer<'b>>,
        result: BufferMut<'b>,
        target: Target<'_>,
        op: Op,
    ) -> Result<Request<'b>> {
        self.request_epoch("rget_accumulate", target.rank)?;
        self.get_accumulate_with(origin, result, target, op)?;
        Ok(Request::completed())
    }

    /// [`Window::put`] returning a request (MPI_Rput).
    pub fn rput<'b, T: Equivalence>(
        &'b self,
        origin: &'b [T],
        rank: Rank,
        disp: Disp,
    ) -> Result<Request<'b>> {
        self.request_epoch("rput", rank)?;
        self.put(origin, rank, disp)?;
        Ok(Request::completed())
    }

    /// [`Window::get`] returning a request (MPI_Rget).
    pub fn rget<'b, T: Equivalence>(
        &'b self,
        result: &'b mut [T],
        rank: Rank,
        disp: Disp,
    ) -> Result<Request<'b>> {
        self.request_epoch("rget", rank)?;
        self.get(result, rank, disp)?;
        Ok(Request::completed())
    }

    /// [`Window::accumulate`] returning a request (MPI_Raccumulate).
    pub fn raccumulate<'b, T: Equivalence>(
        &'b self,
        origin: &'b [T],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<Request<'b>> {
        self.request_epoch("raccumulate", rank)?;
        self.accumulate(origin, rank, disp, op)?;
        Ok(Request::completed())
    }

    /// [`Window::get_accumulate`] returning a request (MPI_Rget_accumulate).
    pub fn rget_accumulate<'b, T: Equivalence>(
        &'b self,
        origin: &'b [T],
        result: &'b mut [T],
        rank: Rank,
        disp: Disp,
        op: Op,
    ) -> Result<Request<'b>> {
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
