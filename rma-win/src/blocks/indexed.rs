//! Batched indexed atomics: many (displacement, value) pairs combined in one call, to
//! one target ([`TargetHandle::accumulate_indexed`]) or to many
//! ([`Window::accumulate_indexed`]): the histogram and sparse-assembly pattern
//! (Lamellar's `batch_add`, the MPI standard's Example 11.3).

use crate::handle::TargetHandle;
use crate::window::{bits_of, single_basic, Window};
use rma_core::{BasicType, Disp, Error, Layout, Op, Rank, Result, RmaCall, Run, Transport};
use rma_datatype::Equivalence;

/// A target layout of byte runs, sorted and disjoint (an indexed datatype, resolved).
struct Runs {
    runs: Vec<Run>,
    size: usize,
}

impl Layout for Runs {
    fn size(&self) -> usize {
        self.size
    }
    fn for_each_run(&self, f: &mut dyn FnMut(Run)) {
        self.runs.iter().for_each(|&r| f(r));
    }
    fn as_contiguous(&self) -> Option<usize> {
        match self.runs.as_slice() {
            [r] if r.offset == 0 => Some(r.len),
            _ => None,
        }
    }
}

/// What a batch checked before anything moved: each update's byte offset.
struct Checked {
    basic: BasicType,
    offsets: Vec<usize>,
}

impl TargetHandle<'_, '_> {
    /// Combines each `(disp, value)` of `updates` into the element at `disp` of this
    /// handle's target with `op`, each element atomically (accumulate semantics, so
    /// concurrent batches and accumulates from other ranks mix safely); one call
    /// instead of `updates.len()`. The same displacement may appear more than once:
    /// each occurrence is applied, in the order given (for REPLACE, the last wins),
    /// unless the window's `accumulate_ordering` was relaxed (then, as for separate
    /// accumulates, the order of updates to one element is not kept).
    ///
    /// Every update is checked (range, alignment, op x type) before any is applied,
    /// so a refused batch changes nothing. On the atomic transport the updates go
    /// straight to the target's memory; elsewhere they travel as one accumulate with
    /// an indexed target layout (adjacent displacements merged into runs), one more
    /// for each further occurrence of the most repeated displacement.
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 16, &Info::new())?;
    ///     world.barrier()?;
    ///     let epoch = win.lock_all_epoch(Assert::NONE)?;
    ///     let zero = epoch.target(Rank::new(0))?;
    ///     // a histogram: bin 3 twice, bins 7 and 15 once
    ///     zero.accumulate_indexed(&[(3, 1u64), (7, 1), (3, 1), (15, 1)], Op::Sum)?;
    ///     zero.flush()?;
    ///     epoch.unlock()?;
    ///     world.barrier()?;
    ///     if world.rank() == 0 {
    ///         let bins = win.local_vec::<u64>()?;
    ///         assert_eq!((bins[3], bins[7], bins[15], bins.iter().sum::<u64>()), (4, 2, 2, 8));
    ///     }
    ///     world.barrier()
    /// })?
    /// .into_iter()
    /// .collect::<rma_win::Result<Vec<_>>>()?; // every rank's result
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    pub fn accumulate_indexed<T: Equivalence>(&self, updates: &[(Disp, T)], op: Op) -> Result<()> {
        self.win.note_site();
        let checked = self.check_indexed::<T>(updates.iter().map(|u| u.0), op)?;
        self.apply_indexed(&checked, updates.iter().map(|u| u.1), op)
    }

    fn check_indexed<T: Equivalence>(
        &self,
        disps: impl ExactSizeIterator<Item = Disp>,
        op: Op,
    ) -> Result<Checked> {
        // T's element type: one basic type (composite elements take one accumulate each)
        let basic = single_basic::<T>("accumulate_indexed")?;
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        let size = std::mem::size_of::<T>();
        let mut offsets = Vec::with_capacity(disps.len());
        for d in disps {
            offsets.push(self.offset("accumulate_indexed", d, size, Some(basic))?);
        }
        Ok(Checked { basic, offsets })
    }

    fn apply_indexed<T: Equivalence>(
        &self,
        checked: &Checked,
        values: impl Iterator<Item = T>,
        op: Op,
    ) -> Result<()> {
        if checked.offsets.is_empty() {
            return Ok(());
        }
        self.live()?;
        let basic = checked.basic;
        match &self.road.fast {
            Some(f) if f.completes_in_place() && basic.size() <= 8 => {
                for (&off, v) in checked.offsets.iter().zip(values) {
                    f.accumulate_bits(off, self.road.exclusive, basic, op, bits_of(&v))?;
                }
            }
            _ => self.send_runs(checked, values, op)?,
        }
        self.issued();
        Ok(())
    }

    /// The updates as accumulates with indexed target layouts: in rounds (the k-th
    /// occurrence of a displacement in round k, so a repeated displacement keeps its
    /// order), each sorted by offset with adjacent elements merged into runs, a new
    /// call where a round starts or an element would overlap the last one (a target
    /// layout must not overlap itself).
    fn send_runs<T: Equivalence>(
        &self,
        checked: &Checked,
        values: impl Iterator<Item = T>,
        op: Op,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let values: Vec<T> = values.collect();
        let offs = &checked.offsets;
        let mut order: Vec<usize> = (0..values.len()).collect();
        // the k-th occurrence of a displacement goes in round k: one call per round
        // (as many calls as the most repeated displacement has occurrences), rounds
        // in order, so repeats keep their order
        order.sort_by_key(|&i| offs[i]); // stable: repeats stay in the order given
        let mut round = vec![0u32; values.len()];
        for w in 1..order.len() {
            if offs[order[w]] == offs[order[w - 1]] {
                round[order[w]] = round[order[w - 1]] + 1;
            }
        }
        order.sort_by_key(|&i| (round[i], offs[i]));
        let mut runs: Vec<Run> = Vec::new();
        let mut data: Vec<u8> = Vec::with_capacity(values.len() * size);
        // the end of the last element placed in this call: an element that starts
        // before it (a repeated displacement, or an element of 16 bytes 8 bytes on)
        // would overlap it, so it goes in the next call
        let mut last_end: Option<usize> = None;
        let send = |runs: &mut Vec<Run>, data: &mut Vec<u8>| -> Result<()> {
            let layout = Runs {
                runs: std::mem::take(runs),
                size: data.len(),
            };
            let r = self
                .win
                .win
                .accumulate(self.road.access(0, &layout), checked.basic, op, data);
            data.clear();
            r
        };
        for i in order {
            let off = checked.offsets[i];
            if last_end.is_some_and(|end| off < end) {
                send(&mut runs, &mut data)?;
            }
            match runs.last_mut() {
                Some(r) if r.offset as usize + r.len == off => r.len += size,
                _ => runs.push(Run {
                    offset: off as isize,
                    len: size,
                }),
            }
            data.extend_from_slice(rma_datatype::bytes_of(std::slice::from_ref(&values[i])));
            last_end = Some(off + size);
        }
        send(&mut runs, &mut data)
    }
}

impl Window<'_> {
    /// [`TargetHandle::accumulate_indexed`] over many targets: combines each `(rank,
    /// disp, value)` of `updates` into the element at `disp` of `rank`'s window with
    /// `op`, each element atomically. The updates are grouped by target (one batch
    /// per target, in the order of their first appearance; each target's updates keep
    /// their order) and every one is checked — rank, epoch, range, alignment, op x
    /// type — before any is applied, so a refused call changes nothing; updates to
    /// [`Rank::NULL`] are skipped. Inside any
    /// access epoch that covers the targets (fence, lock, lock_all, start).
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<i64>(&world, 4, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     // every rank adds 1 to bin (rank + 1) % 4 of every rank, and 10 to bin 0 of rank 2
    ///     let bin = (world.rank() as i64 + 1) % 4;
    ///     let mut updates: Vec<(Rank, i64, i64)> =
    ///         (0..3).map(|r| (Rank::new(r), bin, 1)).collect();
    ///     updates.push((Rank::new(2), 0, 10));
    ///     win.accumulate_indexed(&updates, Op::Sum)?;
    ///     win.fence(Assert::NONE)?;
    ///     let bins = win.local_vec::<i64>()?;
    ///     let tens = if world.rank() == 2 { 30 } else { 0 };
    ///     assert_eq!(bins, [tens, 1, 1, 1]);
    ///     win.fence(Assert::NONE)
    /// })?
    /// .into_iter()
    /// .collect::<rma_win::Result<Vec<_>>>()?; // every rank's result
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[track_caller]
    pub fn accumulate_indexed<T: Equivalence>(
        &self,
        updates: &[(Rank, Disp, T)],
        op: Op,
    ) -> Result<()> {
        self.note_site();
        // the element type and op are checked even when no update reaches a rank
        let basic = single_basic::<T>("accumulate_indexed")?;
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        // group by target, keeping each target's order
        let mut targets: Vec<Rank> = Vec::new();
        let mut slot_of = vec![usize::MAX; self.size()];
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (i, &(rank, _, _)) in updates.iter().enumerate() {
            if rank.is_null() {
                continue; // MPI_PROC_NULL: nothing to do, as for every call
            }
            let t = match rank.index() {
                Some(t) if t < self.size() => t,
                _ => {
                    return Err(Error::InvalidRank {
                        rank,
                        size: self.size(),
                    })
                }
            };
            if slot_of[t] == usize::MAX {
                slot_of[t] = targets.len();
                targets.push(rank);
                groups.push(Vec::new());
            }
            groups[slot_of[t]].push(i);
        }
        if targets.is_empty() {
            // nothing but the null rank (or nothing): an epoch must still be open
            self.begin("accumulate_indexed", Rank::NULL)?;
            return Ok(());
        }
        // check everything first
        let mut batches = Vec::with_capacity(targets.len());
        for (&rank, group) in targets.iter().zip(&groups) {
            let t = rank.index().unwrap_or(0);
            let handle = TargetHandle::new(self, rank, !self.passive_on(t))?;
            let checked = handle.check_indexed::<T>(group.iter().map(|&i| updates[i].1), op)?;
            batches.push((handle, checked));
        }
        for ((handle, checked), group) in batches.iter().zip(&groups) {
            handle.apply_indexed(checked, group.iter().map(|&i| updates[i].2), op)?;
        }
        Ok(())
    }
}
