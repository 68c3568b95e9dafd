//! The world's collectives: the agreement that precedes each of them (the protocol
//! is the `agree` module's), barrier, all-gather, the split of a world into
//! sub-worlds, and the start of every window creation.

use super::MpiWorld;
use crate::agree::{arm_exit_hook, mismatch_error, Entry};
use rma_core::{Error, Rank, Result};
use rma_mpi_sys::{Api, Call, Handle, ENV_NO_GUARDS};
use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::{MutexGuard, PoisonError};

impl MpiWorld {
    /// Runs the agreement before the collective `entry` (the module docs): `Ok` when
    /// every rank entered the same collective, else the broken world's error.
    pub(crate) fn agree(&self, entry: Entry) -> Result<()> {
        self.check_broken()?;
        // Heap words: if the wait fails the request may still write them, so they are
        // leaked then, never freed under it.
        let mut words = Box::new([entry.code(), -entry.code(), 0, 0]);
        let (input, output) = words.split_at_mut(2);
        let mut req: Handle = 0;
        // SAFETY: `input` and `output` hold two words each and live until the request
        // completes (or forever, below); `comm` is live while `self` is.
        let rc = self.mpi(|api| unsafe {
            (api.iagree)(self.comm(), input.as_ptr(), output.as_mut_ptr(), &mut req)
        });
        self.check(rc, Call::new("MPI_Iallreduce"))?;
        // MPI_Wait: the library's own wait, which drives its progress engine the way
        // a blocking collective would (targets that need it keep applying calls)
        // SAFETY: `req` is the live request started above.
        let rc = self.mpi(|api| unsafe { (api.wait)(&mut req) });
        if rc != 0 {
            Box::leak(words);
            return self.check(rc, Call::new("MPI_Wait"));
        }
        let (max, min) = (words[2], -words[3]);
        if max == min {
            return Ok(());
        }
        Err(self.break_up(entry))
    }

    /// The ranks entered different collectives: learns what each entered, breaks the
    /// world and returns its error.
    fn break_up(&self, entry: Entry) -> Error {
        let mut notes = vec![0i64; self.size()];
        // SAFETY: `notes` has one slot per rank; `comm` is live. Every rank is here: the
        // agreement just completed everywhere with the same (mismatched) result.
        let rc = self.mpi(|api| unsafe {
            (api.allgather_i64)(self.comm(), entry.note(), notes.as_mut_ptr())
        });
        let entries: Vec<Option<Entry>> = notes.into_iter().map(Entry::from_note).collect();
        let error = if rc == 0 {
            mismatch_error(self.rank(), entry, &entries)
        } else {
            Error::ProcFailed {
                rank: Rank::new(0),
                reason: format!(
                    "the ranks entered different collective calls (this rank {entry}), and \
                     learning which failed with MPI error code {rc}"
                ),
            }
        };
        // the exit hook's MPI_Abort must not race the progress thread's calls
        self.stop_progress();
        if let Error::ProcFailed { rank, reason } = &error {
            self.set_broken(*rank, reason.clone());
        }
        arm_exit_hook(self.api(), self.comm(), self.rank(), error.to_string());
        error
    }

    /// Held around a collective on the world communicator.
    pub(crate) fn collective(&self) -> MutexGuard<'_, ()> {
        self.collective
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until every rank has called `barrier`.
    ///
    /// It is the agreement every collective starts with (a non-blocking all-reduce,
    /// and its MPI_Wait): a rank that entered another collective makes it fail with class
    /// PROC_FAILED instead of waiting forever.
    #[doc(alias = "MPI_Barrier")]
    pub fn barrier(&self) -> Result<()> {
        let _one = self.collective();
        self.agree(Entry::Barrier)
    }

    /// Every rank contributes `mine` (any length); every rank receives all
    /// contributions, indexed by rank (MPI_Allgather of the lengths, then
    /// MPI_Allgatherv). The total must stay below 2 GiB.
    #[doc(alias("MPI_Allgather", "MPI_Allgatherv"))]
    pub fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let _one = self.collective();
        self.agree(Entry::Allgather)?;
        let lens = self.allgather_lens(mine.len())?;
        let mut displs = Vec::with_capacity(lens.len());
        let mut total: usize = 0;
        for &len in &lens {
            displs.push(c_int::try_from(total).map_err(|_| gather_overflow(total))?);
            total += len as usize;
        }
        c_int::try_from(total).map_err(|_| gather_overflow(total))?;
        // never an empty slice's dangling pointer: 0x1 is Open MPI's MPI_IN_PLACE
        let mut all = vec![0u8; total.max(1)];
        let send = if mine.is_empty() { &[0u8][..] } else { mine };
        // SAFETY: `send` holds at least `lens[rank]` bytes; `all` holds the sum of
        // `lens`, laid out at `displs`; `comm` is live.
        let rc = self.mpi(|api| unsafe {
            (api.allgatherv_bytes)(
                self.comm,
                send.as_ptr().cast::<c_void>(),
                lens[self.rank],
                all.as_mut_ptr().cast::<c_void>(),
                lens.as_ptr(),
                displs.as_ptr(),
            )
        });
        self.check(rc, Call::new("MPI_Allgatherv"))?;
        Ok(displs
            .iter()
            .zip(&lens)
            .map(|(&d, &l)| all[d as usize..(d + l) as usize].to_vec())
            .collect())
    }

    fn allgather_lens(&self, mine: usize) -> Result<Vec<c_int>> {
        let mut lens = vec![0i64; self.size];
        // SAFETY: `lens` has one slot per rank; `comm` is live.
        let rc = self
            .mpi(|api| unsafe { (api.allgather_i64)(self.comm, mine as i64, lens.as_mut_ptr()) });
        self.check(rc, Call::new("MPI_Allgather"))?;
        lens.into_iter()
            .map(|l| c_int::try_from(l).map_err(|_| gather_overflow(l as usize)))
            .collect()
    }

    /// Collectively splits this world (MPI_Comm_split): the ranks that give the same
    /// `color` form a new world, numbered by `key`, then by their rank here; `None`
    /// (MPI_UNDEFINED) joins none and gets `Ok(None)`. The new world has a
    /// communicator of its own (so its collectives and windows never involve ranks
    /// outside it) and shares this one's thread rules; MPI stays initialized until
    /// the last world of the process is gone.
    ///
    /// Errors: as [`MpiWorld::barrier`] (ranks in another collective), the library's.
    #[doc(alias = "MPI_Comm_split")]
    pub fn split(&self, color: Option<u32>, key: i32) -> Result<Option<MpiWorld>> {
        self.check_thread()?;
        // every u32 is a color: the ranks agree on dense indices first (MPI's colors
        // stop at c_int::MAX), so no rank refuses alone while the others wait
        let mut rec = [0u8; 5];
        rec[0] = u8::from(color.is_some());
        rec[1..].copy_from_slice(&color.unwrap_or(0).to_ne_bytes());
        let mut colors: Vec<u32> = self
            .allgather(&rec)?
            .iter()
            .filter(|b| b.first() == Some(&1) && b.len() == 5)
            .map(|b| u32::from_ne_bytes(b[1..5].try_into().unwrap_or_default()))
            .collect();
        colors.sort_unstable();
        colors.dedup();
        let color = match color {
            None => -1,
            Some(c) => colors.binary_search(&c).map_or(-1, |i| i as c_int),
        };
        let mut comm: Handle = 0;
        let rc = {
            let _one = self.collective();
            self.agree(Entry::Split)?;
            // SAFETY: `comm` is a valid out-pointer; `self.comm` is live.
            self.mpi(|api| unsafe { (api.comm_split)(self.comm, color, key, &mut comm) })
        };
        self.check(rc, Call::new("MPI_Comm_split"))?;
        if comm == 0 {
            return Ok(None);
        }
        self.adopt(comm).map(Some)
    }

    /// The world of the ranks `members` of this one, in that order, made by them alone
    /// (MPI_Comm_create_group with `tag`): only the members call it, with the same
    /// members and tag. As [`MpiWorld::split`] otherwise.
    ///
    /// Errors: ARG if this rank is not a member, a member repeats or `tag` is above
    /// `c_int::MAX`; RANK for a member outside this world; the library's (a tag above
    /// the library's MPI_TAG_UB, at least 32767, is its error).
    #[doc(alias = "MPI_Comm_create_group")]
    pub fn create_group(&self, members: &[usize], tag: u32) -> Result<MpiWorld> {
        self.check_thread()?;
        self.check_broken()?;
        if let Some(&bad) = members.iter().find(|&&r| r >= self.size) {
            return Err(Error::InvalidRank {
                rank: Rank::new(bad as u32),
                size: self.size,
            });
        }
        if !members.contains(&self.rank) {
            return Err(Error::arg(
                "create_group: this rank is not one of the members",
            ));
        }
        if (1..members.len()).any(|i| members[..i].contains(&members[i])) {
            return Err(Error::arg("create_group: a member appears twice"));
        }
        let tag = c_int::try_from(tag)
            .map_err(|_| Error::arg(format!("tag {tag} is above MPI's largest, {}", c_int::MAX)))?;
        let ranks: Vec<c_int> = members.iter().map(|&r| r as c_int).collect();
        let mut comm: Handle = 0;
        // SAFETY: `ranks` holds members.len() ints; `comm` is a valid out-pointer and
        // `self.comm` is live. Only the members take part (no agreement on the world).
        let rc = self.mpi(|api| unsafe {
            (api.comm_create_group)(
                self.comm,
                ranks.len() as c_int,
                ranks.as_ptr(),
                tag,
                &mut comm,
            )
        });
        self.check(rc, Call::new("MPI_Comm_create_group"))?;
        self.adopt(comm)
    }

    /// The start of every window creation: takes the collective turn, numbers the
    /// window (under the turn, so that threads creating windows get numbers in the
    /// order they agree; the same on every rank), agrees on its creation and runs
    /// `create`, the MPI call. The window's number and the call's return code.
    ///
    /// `rdma`: osc/rdma may serve the window (every window rma makes: a shared one's
    /// data is osc/sm's, but its control window is allocated). Where osc/rdma may be
    /// in use, such a window on a world split from the process's world is refused on
    /// every rank of it alike, before anything is made (rma-mpi-sys's defects.rs:
    /// osc/rdma mixes up, or fails to create, windows of different communicators on
    /// one node).
    pub(crate) fn create_window(
        &self,
        rdma: bool,
        create: impl FnOnce(&Api) -> c_int,
    ) -> Result<(u32, c_int)> {
        // a call this thread may not make must not use up a window number (the ranks
        // would disagree on every later window's)
        self.check_thread()?;
        if rdma && self.sub && self.guards.rdma_comms_blocked() {
            return Err(Error::Flavor {
                reason: format!(
                    "Open MPI 4's osc/rdma mixes up windows of different communicators on one \
                     node (accumulates to one land in another, or the window cannot be made; \
                     reproduced in C, rma_win::guide::mpi_defects), so windows on a world split from \
                     the world are refused where it may serve them: run with `--mca osc ucx` \
                     (or `--mca osc sm` for one node, allocated and shared windows), make the \
                     window on the whole world, or set {}=1 if this library is fixed",
                    ENV_NO_GUARDS
                ),
            });
        }
        let _one = self.collective();
        let number = self.windows.fetch_add(1, Ordering::Relaxed);
        self.agree(Entry::Create(number))?;
        Ok((number, self.mpi(create)))
    }
}

fn gather_overflow(total: usize) -> Error {
    Error::CountOverflow {
        count: total,
        what: "bytes gathered (MPI counts are 32-bit)",
    }
}
