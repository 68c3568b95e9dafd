//! Worlds from rsmpi's communicators (the `rsmpi` feature): rma's windows in a
//! program that runs MPI through rsmpi, the Rust MPI bindings (crate `mpi`), which
//! have no one-sided communication of their own.

use super::World;
use rma_core::{Error, Result};
use rsmpi::ffi::MPI_Comm;
use rsmpi::raw::AsRaw;
use rsmpi::topology::Communicator;

impl World {
    /// A world over an rsmpi communicator: its ranks, numbered as there, with rma's
    /// windows and collectives. Collective over `comm`: every rank of it calls this.
    ///
    /// rsmpi initialized MPI, so it finalizes it too (when its `Universe` drops):
    /// drop this world and its windows first. A program that finalizes first ends
    /// the job at that point with a message, never with windows over freed memory.
    /// The world works on a duplicate of `comm`, so the program's own messages and
    /// collectives on `comm` go on as before, and it runs at the thread level rsmpi
    /// initialized MPI with (`mpi::initialize` asks for SINGLE: then only the main
    /// thread may make and use the world). While this call runs, no other thread
    /// may use `comm` (MPI's rule for collectives on one communicator). The rest of
    /// the contract, and every error, are [`World::from_raw_mpi_comm`]'s; the handle
    /// is rsmpi's own, so it is valid.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use rsmpi::traits::*;
    /// use rma_win::{Info, Op, Rank, Window, World};
    ///
    /// let universe = rsmpi::initialize().expect("MPI initializes once");
    /// let comm = universe.world();
    /// let world = World::from_rsmpi(&comm)?;
    /// let win = Window::allocate::<u64>(&world, 1, &Info::new())?;
    /// win.fence(rma_win::Assert::NONE)?;
    /// win.accumulate(&[1u64], Rank::new(0), 0, Op::Sum)?;
    /// win.fence(rma_win::Assert::NONE)?;
    /// comm.barrier(); // rsmpi's own calls go on beside rma's
    /// drop(win);
    /// drop(world); // before `universe`, which finalizes MPI
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "rsmpi")))]
    pub fn from_rsmpi<C>(comm: &C) -> Result<World>
    where
        C: Communicator + AsRaw<Raw = MPI_Comm>,
    {
        let handle = raw_handle(comm.as_raw())?;
        // SAFETY: `handle` is the live communicator `comm` holds (borrowed for this
        // call, so not freed meanwhile; a communicator of a finalized MPI is refused
        // by from_raw_mpi_comm's MPI_Finalized check), of the library rsmpi linked,
        // which is the one this process runs (from_raw_mpi_comm loads its shim and
        // checks the handle's shape against it). That no other thread uses `comm`
        // during the call is MPI's own rule for collectives, documented above.
        #[allow(unsafe_code)]
        unsafe {
            World::from_raw_mpi_comm(handle)
        }
    }
}

/// An `MPI_Comm` as an integer: MPICH's is an `int` (as rsmpi's bindings declare
/// it, a plain integer or a one-field struct of it), Open MPI's a pointer.
fn raw_handle(raw: MPI_Comm) -> Result<isize> {
    match size_of::<MPI_Comm>() {
        // SAFETY: MPI_Comm is a plain 4-byte handle (MPICH's int, bare or in a struct of
        // that one field) here: every bit pattern of it is an i32.
        #[allow(unsafe_code)]
        4 => Ok(unsafe { std::mem::transmute_copy::<MPI_Comm, i32>(&raw) } as isize),
        // SAFETY: MPI_Comm is a plain 8-byte handle (Open MPI's pointer) here: every
        // bit pattern of it is an i64.
        #[allow(unsafe_code)]
        8 => Ok(unsafe { std::mem::transmute_copy::<MPI_Comm, i64>(&raw) } as isize),
        n => Err(Error::Flavor {
            reason: format!("rsmpi's MPI_Comm has {n} bytes; rma knows 4 (MPICH) and 8 (Open MPI)"),
        }),
    }
}
