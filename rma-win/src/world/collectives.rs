//! Typed collectives on a [`World`]: broadcast, all-gather and all-reduce of
//! [`Equivalence`] values and slices, on every backend.
//!
//! They are built on the one collective every backend has, the byte all-gather, in
//! rounds of at most [`AnyWorld::gather_limit`](rma_backends::AnyWorld::gather_limit)
//! bytes per rank (248 on rma's shared memory, whose all-gather passes through its
//! control segment; one round under MPI). Every rank first contributes its length, so
//! ranks that disagree on a count all get the same error (class COUNT) instead of some
//! waiting for data that never comes. They suit values and small arrays (a
//! displacement, a size, a residual); move bulk data with windows.
//!
//! An all-reduce combines the ranks' values in rank order on every rank, so every
//! rank gets the same bits, floating point included.

use super::World;
use rma_core::{Error, Op, Rank, Result, RmaCall, Services};
use rma_datatype::{bytes_of, Equivalence};

impl World {
    /// Every rank's `buf` gets `root`'s (MPI_Bcast). Collective; every rank passes the
    /// same `root` and a `buf` of the same length.
    ///
    /// Errors: RANK for a `root` outside the world (before anything collective);
    /// COUNT on every rank if the lengths differ, ARG on every rank if the roots do
    /// (every `buf` unchanged); the backend's (PROC_FAILED for a dead peer).
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let mut params = if world.rank() == 0 { [0.5f64, 2.0] } else { [0.0; 2] };
    ///     world.broadcast(0, &mut params)?;
    ///     assert_eq!(params, [0.5, 2.0]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Bcast")]
    pub fn broadcast<T: Equivalence>(&self, root: usize, buf: &mut [T]) -> Result<()> {
        self.check_root(root)?;
        let mine = if self.rank() == root {
            bytes_of(buf)
        } else {
            &[]
        };
        let all = self.gather_bytes("broadcast", mine, size_of_val(buf), root as u64)?;
        decode_into(&all[root], buf)
    }

    /// `root`'s `value`, on every rank (MPI_Bcast of one value); the others' `value`
    /// is ignored. As [`World::broadcast`].
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let steps = world.broadcast_value(1, if world.rank() == 1 { 40u32 } else { 0 })?;
    ///     assert_eq!(steps, 40);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Bcast")]
    pub fn broadcast_value<T: Equivalence>(&self, root: usize, value: T) -> Result<T> {
        let mut one = [value];
        self.broadcast(root, &mut one)?;
        Ok(one[0])
    }

    /// Every rank's `mine`, concatenated in rank order, on every rank
    /// (MPI_Allgather). Collective; every rank passes a slice of the same length.
    ///
    /// Errors: COUNT on every rank if the lengths differ; the backend's.
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let r = world.rank() as u64;
    ///     assert_eq!(world.allgather_values(&[r, 10 * r])?, [0, 0, 1, 10, 2, 20]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Allgather")]
    pub fn allgather_values<T: Equivalence>(&self, mine: &[T]) -> Result<Vec<T>> {
        let bytes = bytes_of(mine);
        let all = self.gather_bytes("allgather", bytes, bytes.len(), 0)?;
        let mut out = Vec::with_capacity(mine.len() * self.size());
        for part in &all {
            out.extend(decode::<T>(part)?);
        }
        Ok(out)
    }

    /// Every rank's `value`, indexed by rank (MPI_Allgather of one value): the
    /// typed form of exchanging a displacement or a size.
    ///
    /// # Examples
    ///
    /// ```
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let offsets = world.allgather_value(100 * world.rank() as i64)?;
    ///     assert_eq!(offsets, [0, 100]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Allgather")]
    pub fn allgather_value<T: Equivalence>(&self, value: T) -> Result<Vec<T>> {
        self.allgather_values(&[value])
    }

    /// Combines every rank's `buf` element-wise with `op`, and leaves the result in
    /// every rank's `buf` (MPI_Allreduce, in place). The ranks' values are combined in
    /// rank order on every rank, so every rank gets the same bits. Collective; every
    /// rank passes the same `op` and a `buf` of the same length.
    ///
    /// `op` is any of rma's ops but MPI_REPLACE and MPI_NO_OP, on the types it is
    /// defined for (as in accumulate); `T` must be made of one basic type with no
    /// gaps (a number, a pair type for MAXLOC/MINLOC, an array or a struct of one
    /// basic type).
    ///
    /// Errors (before anything collective, `buf` unchanged): OP for REPLACE, NO_OP or
    /// an op not defined on `T`'s basic type; TYPE for a `T` of several basic types or
    /// with gaps. COUNT on every rank if the lengths differ, ARG on every rank if the
    /// ops do; the backend's.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::Op;
    /// rma_win::run_threads(4, |world| -> rma_win::Result<()> {
    ///     let mut v = [world.rank() as f64, 1.0];
    ///     world.allreduce(&mut v, Op::Sum)?;
    ///     assert_eq!(v, [6.0, 4.0]);
    ///     let worst = world.allreduce_value(world.rank() as u32 * 7 % 4, Op::Max)?;
    ///     assert_eq!(worst, 3);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Allreduce")]
    pub fn allreduce<T: Equivalence>(&self, buf: &mut [T], op: Op) -> Result<()> {
        let dt = T::datatype();
        let basic = match dt.basic_type() {
            Some(b) if dt.size() == size_of::<T>() && dt.true_lb() == 0 => b,
            Some(_) => {
                return Err(Error::InvalidDatatype {
                    reason: format!(
                        "allreduce needs a type without gaps; {} has {} bytes of data in {} \
                         bytes",
                        std::any::type_name::<T>(),
                        dt.size(),
                        size_of::<T>()
                    ),
                })
            }
            None => {
                return Err(Error::MixedBasicTypes {
                    call: "allreduce",
                    which: "value",
                })
            }
        };
        rma_ops::check(op, basic, RmaCall::Allreduce)?;
        let mine = bytes_of(buf);
        let all = self.gather_bytes("allreduce", mine, mine.len(), op as u64)?;
        let mut acc = all[0].clone();
        for part in &all[1..] {
            rma_ops::apply_bytes(basic, op, &mut acc, part);
        }
        decode_into(&acc, buf)
    }

    /// Every rank's `value` combined with `op` (MPI_Allreduce of one value). As
    /// [`World::allreduce`].
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Op, TwoInt};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let total = world.allreduce_value(world.rank() as u64 + 1, Op::Sum)?;
    ///     assert_eq!(total, 6);
    ///     // MAXLOC: the largest value and the rank that holds it
    ///     let mine = TwoInt { value: [3, 9, 4][world.rank()], index: world.rank() as i32 };
    ///     let top = world.allreduce_value(mine, Op::MaxLoc)?;
    ///     assert_eq!((top.value, top.index), (9, 1));
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Allreduce")]
    pub fn allreduce_value<T: Equivalence>(&self, value: T, op: Op) -> Result<T> {
        let mut one = [value];
        self.allreduce(&mut one, op)?;
        Ok(one[0])
    }

    fn check_root(&self, root: usize) -> Result<()> {
        if root >= self.size() {
            return Err(Error::InvalidRank {
                rank: Rank::new(root as u32),
                size: self.size(),
            });
        }
        Ok(())
    }

    /// Every rank's `mine`, by rank, through the backend's byte all-gather in rounds
    /// of at most its gather limit. `count`: this rank's count in bytes for `call`,
    /// which every rank must have alike (COUNT on every rank otherwise); `same`: what
    /// else every rank must pass alike (the root, the op; ARG on every rank
    /// otherwise). Both travel in the first round with `mine`'s length.
    pub(super) fn gather_bytes(
        &self,
        call: &'static str,
        mine: &[u8],
        count: usize,
        same: u64,
    ) -> Result<Vec<Vec<u8>>> {
        let mut head = [0u8; 24];
        head[..8].copy_from_slice(&(mine.len() as u64).to_ne_bytes());
        head[8..16].copy_from_slice(&(count as u64).to_ne_bytes());
        head[16..].copy_from_slice(&same.to_ne_bytes());
        let heads = self.inner.allgather(&head)?;
        let word = |h: &[u8], at: usize| -> Result<u64> {
            h.get(at..at + 8)
                .and_then(|w| w.try_into().ok())
                .map(u64::from_ne_bytes)
                .ok_or_else(|| Error::Internal {
                    reason: format!("a rank's collective header has {} bytes", h.len()),
                })
        };
        let mut lens = Vec::with_capacity(heads.len());
        let mut counts = Vec::with_capacity(heads.len());
        let mut sames = Vec::with_capacity(heads.len());
        for h in &heads {
            lens.push(usize::try_from(word(h, 0)?).map_err(|_| too_long())?);
            counts.push(word(h, 8)?);
            sames.push(word(h, 16)?);
        }
        if let Some(r) = sames.iter().position(|&x| x != sames[0]) {
            return Err(Error::arg(format!(
                "{call}: rank 0 and rank {r} passed a different {}; every rank passes the same",
                if call == "broadcast" { "root" } else { "op" }
            )));
        }
        if let Some(r) = counts.iter().position(|&c| c != counts[0]) {
            return Err(Error::CountMismatch {
                call,
                first: counts[0],
                rank: r,
                theirs: counts[r],
            });
        }
        let limit = self.inner.gather_limit();
        let rounds = lens.iter().map(|l| l.div_ceil(limit)).max().unwrap_or(0);
        let mut all: Vec<Vec<u8>> = lens.iter().map(|&l| Vec::with_capacity(l)).collect();
        for round in 0..rounds {
            let from = (round * limit).min(mine.len());
            let to = ((round + 1) * limit).min(mine.len());
            let parts = self.inner.allgather(&mine[from..to])?;
            for ((dst, part), &len) in all.iter_mut().zip(parts).zip(&lens) {
                if dst.len() + part.len() > len {
                    return Err(Error::Internal {
                        reason: "a rank sent more bytes than it announced".into(),
                    });
                }
                dst.extend_from_slice(&part);
            }
        }
        if all.iter().zip(&lens).any(|(d, &l)| d.len() != l) {
            return Err(Error::Internal {
                reason: "a rank sent fewer bytes than it announced".into(),
            });
        }
        Ok(all)
    }
}

fn too_long() -> Error {
    Error::Internal {
        reason: "a rank announced more bytes than this machine can address".into(),
    }
}

/// The values in `bytes` (whole `T`s, each checked by `T::from_bytes`).
fn decode<T: Equivalence>(bytes: &[u8]) -> Result<Vec<T>> {
    let n = size_of::<T>();
    if n == 0 {
        return Ok(Vec::new());
    }
    bytes
        .chunks(n)
        .map(|c| {
            T::from_bytes(c).ok_or_else(|| Error::Internal {
                reason: format!(
                    "a peer's bytes are no valid {} ({} bytes)",
                    std::any::type_name::<T>(),
                    c.len()
                ),
            })
        })
        .collect()
}

/// `bytes`, decoded, into `buf` (of the same count: checked by the caller's
/// collective count, and again here).
fn decode_into<T: Equivalence>(bytes: &[u8], buf: &mut [T]) -> Result<()> {
    let values = decode::<T>(bytes)?;
    if values.len() != buf.len() {
        return Err(Error::Internal {
            reason: format!(
                "{} values arrived for a buffer of {}",
                values.len(),
                buf.len()
            ),
        });
    }
    buf.copy_from_slice(&values);
    Ok(())
}
