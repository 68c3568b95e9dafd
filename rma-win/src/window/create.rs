//! Window creation: allocated, shared, created over a caller's buffer, over memory
//! every rank already maps, in place over a C program's memory; and `finish`, which
//! every constructor ends in.

use super::*;

/// The bytes of a window of `count` elements of `T`, and its displacement unit (the
/// element's size, at least 1).
fn window_bytes<T>(count: usize) -> Result<(usize, usize)> {
    let size = std::mem::size_of::<T>();
    let bytes = count
        .checked_mul(size)
        .ok_or_else(|| Error::CountOverflow {
            count,
            what: "window elements",
        })?;
    Ok((bytes, size.max(1)))
}

impl<'w> Window<'w> {
    /// Collectively allocates a window of `count` elements of `T` on this rank, in
    /// shared memory, zero-filled, with `disp_unit = size_of::<T>()` (MPI_Win_allocate).
    ///
    /// # Transport
    ///
    /// The info key `rma_transport` names the window's transport, else the
    /// `RMA_TRANSPORT` environment variable, else the launch mode's default: `atomic`,
    /// or `mpi` under an MPI launcher. [`Window::info`] reports the one in effect.
    ///
    /// - A transport named in the info is a request, honoured or refused: naming one
    ///   that cannot serve this window (`atomic` or `queued` under an MPI launcher,
    ///   `mpi` outside one) is an error of class RMA_FLAVOR that says why and which
    ///   transports would. Every rank (given the same info, as a collective call
    ///   needs) gets it before anything collective runs, so nothing changes: the same
    ///   call with another name, or none, works.
    /// - `RMA_TRANSPORT` is a process-wide default, not a request: where the transport
    ///   it names cannot serve this window, the window uses the launch mode's default
    ///   and a `tracing` warning says which and why.
    /// - A name that is no transport, in the info or the environment, is an error of
    ///   class ARG listing the transports.
    ///
    /// The same rule, with one more refusal, holds for [`Window::create`];
    /// [`chosen_transport`](crate::chosen_transport) applies it (docs/design.md
    /// decision 14).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate::<u64>(&world, 2, &Info::new())?; // zero-filled
    ///     win.fence(Assert::NONE)?;
    ///     // each rank writes rank + 1 into element `rank` of rank 0's window
    ///     win.put(&[win.rank() as u64 + 1], Rank::new(0), win.rank() as i64)?;
    ///     win.fence(Assert::NONE)?;
    ///     let expected: [u64; 2] = if win.rank() == 0 { [1, 2] } else { [0, 0] };
    ///     assert_eq!(win.local_vec::<u64>()?, expected);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_allocate")]
    pub fn allocate<T: Equivalence>(
        world: &'w World,
        count: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let (bytes, unit) = window_bytes::<T>(count)?;
        Self::allocate_bytes(world, bytes, unit, info)
    }

    /// Collectively allocates a window of `len` bytes with displacement unit
    /// `disp_unit` (MPI_Win_allocate). The transport is chosen as for
    /// [`Window::allocate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_bytes(&world, 64, 8, &Info::new())?; // 64 bytes, unit 8
    ///     assert_eq!((win.local_len(), win.disp_unit_of(win.rank())?), (64, 8));
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 1 {
    ///         win.put(&[7u64], Rank::new(0), 3)?; // displacement 3: byte 24
    ///     }
    ///     win.fence(Assert::NONE)?;
    ///     if win.rank() == 0 {
    ///         let mut v = [0u64];
    ///         win.read_local(3, &mut v)?; // element 3 of u64: byte 24
    ///         assert_eq!(v, [7]);
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_allocate")]
    pub fn allocate_bytes(
        world: &'w World,
        len: usize,
        disp_unit: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_allocate", len, disp_unit).entered();
        let parsed = WinInfo::from_info(info)?;
        if disp_unit == 0 {
            return Err(Error::InvalidDispUnit { disp_unit });
        }
        let win = world.inner.allocate(len, disp_unit, info, &parsed)?;
        Self::finish(world, win, parsed)
    }

    /// Collectively allocates a shared window of `count` elements of `T` on this rank,
    /// zero-filled, with `disp_unit = size_of::<T>()` (MPI_Win_allocate_shared): a
    /// window like [`Window::allocate`]'s, whose every part each rank also reaches by
    /// load and store through [`Window::shared_query`].
    ///
    /// **Layout.** By default the parts are contiguous: in every rank's address space
    /// rank `r + 1`'s part starts where rank `r`'s starts plus its length rounded up
    /// to a multiple of 64 bytes (a cache line, so no two ranks' parts share one;
    /// [`rma_core::shared_offset`](crate::backend::shared_offset) computes it). The
    /// info key `alloc_shared_noncontig=true` lets each part lie apart, each
    /// page-aligned (MPI's hint for memory placed near its owner).
    ///
    /// **Where.** With ranks as threads or processes started by `rmarun`, every world
    /// can have shared windows, on the atomic and the queued transport. Under an MPI
    /// launcher the window is MPI_Win_allocate_shared's, which MPI offers only among
    /// ranks of one node: where the world spans several, every rank gets class
    /// RMA_SHARED and no window is made. Every RMA call works on a shared window, as on
    /// any other.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<f64>(&world, 3, &Info::new())?;
    ///     let (a, b) = (win.shared_query(Rank::new(0))?, win.shared_query(Rank::new(1))?);
    ///     assert_eq!(b.addr() - a.addr(), 64); // 24 bytes, rounded up to a cache line
    ///     if world.rank() == 1 {
    ///         a.view::<f64>()?.store(2, 0.5)?; // a store into rank 0's part
    ///     }
    ///     world.barrier()?;
    ///     win.sync()?;
    ///     assert_eq!(a.view::<f64>()?.load(2)?, 0.5);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_allocate_shared")]
    pub fn allocate_shared<T: Equivalence>(
        world: &'w World,
        count: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let (bytes, unit) = window_bytes::<T>(count)?;
        Self::allocate_shared_bytes(world, bytes, unit, info)
    }

    /// Collectively allocates a shared window of `len` bytes with displacement unit
    /// `disp_unit` (MPI_Win_allocate_shared); see [`Window::allocate_shared`].
    #[doc(alias = "MPI_Win_allocate_shared")]
    pub fn allocate_shared_bytes(
        world: &'w World,
        len: usize,
        disp_unit: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_allocate_shared", len, disp_unit).entered();
        let parsed = WinInfo::from_info(info)?;
        if disp_unit == 0 {
            return Err(Error::InvalidDispUnit { disp_unit });
        }
        let contiguous = !parsed.alloc_shared_noncontig;
        let win = world
            .inner
            .allocate_shared(len, disp_unit, contiguous, info, &parsed)?;
        Self::finish(world, win, parsed)
    }

    /// Collectively creates a window over `buf`, memory this rank owns, with
    /// `disp_unit = size_of::<T>()` (MPI_Win_create). The window borrows `buf` until it
    /// is dropped; meanwhile read and write it through [`Window::read_local`] and
    /// [`Window::write_local`].
    ///
    /// # Transport
    ///
    /// Chosen as for [`Window::allocate`] (the info key `rma_transport`, else the
    /// `RMA_TRANSPORT` environment variable, else the launch mode's default), with one
    /// more limit. With ranks as processes the window exposes a copy in this process's
    /// private memory (below), which no other process can reach directly, so the
    /// atomic transport cannot serve it (docs/design.md decision 6):
    ///
    /// - naming `atomic` in the info is an error of class RMA_FLAVOR saying so, and
    ///   that `queued`, naming no transport, or [`Window::allocate`] would work; every
    ///   rank gets it before anything collective runs, so nothing changes (as for
    ///   [`Window::allocate`]);
    /// - naming no transport gives the queued transport (as MPICH falls back to active
    ///   messages), also where `RMA_TRANSPORT=atomic`, which then logs a `tracing`
    ///   warning;
    /// - naming `queued` gives the queued transport.
    ///
    /// With ranks as threads every transport works; under an MPI launcher the window
    /// uses the `mpi` transport. [`Window::info`] reports the transport in effect.
    ///
    /// # Memory
    ///
    /// In every launch mode and on every transport the window exposes an aligned copy
    /// of `buf` that goes back into `buf` at [`Window::free`] (under MPI: when the
    /// window drops): other ranks then never write into `buf` itself, even if this
    /// rank drops, leaks or `mem::forget`s the window. A window dropped without `free`
    /// leaves `buf` as it was; one forgotten leaks its copy.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let mut buf = [10i64, 20];
    ///     let mut win = Window::create(&world, &mut buf, &Info::new())?;
    ///     win.fence(Assert::NONE)?;
    ///     win.accumulate(&[1i64, 1], Rank::new(0), 0, Op::Sum)?;
    ///     win.fence(Assert::NONE)?;
    ///     win.free()?; // the window's contents go back into `buf`
    ///     drop(win);
    ///     let expected = if world.rank() == 0 { [12, 22] } else { [10, 20] };
    ///     assert_eq!(buf, expected);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_create")]
    pub fn create<T: Equivalence>(
        world: &'w World,
        buf: &'w mut [T],
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_create", len = std::mem::size_of_val(buf)).entered();
        let parsed = WinInfo::from_info(info)?;
        let disp_unit = std::mem::size_of::<T>().max(1);
        let bytes = rma_datatype::bytes_of_mut(buf).ok_or_else(|| {
            Error::arg(format!(
                "a window over {} could be left holding invalid values; create it over a type for which every byte pattern is valid",
                std::any::type_name::<T>()
            ))
        })?;
        let win = world.inner.create(bytes, disp_unit, info, &parsed)?;
        Self::finish(world, win, parsed)
    }

    /// Collectively creates a window over memory every rank already reaches by load and
    /// store, for a C interface exposing, with MPI_Win_create, memory that lies in a
    /// shared window (MPI_Win_allocate_shared): this rank exposes `len` bytes at
    /// `peers[rank]`, and `peers[r]` is where rank r's memory lies in this process.
    /// Other ranks' calls land in that memory directly (the unified model); the window
    /// copies nothing and frees nothing. Backends without shared memory refuse with
    /// class RMA_FLAVOR. Rust programs use [`Window::allocate_shared`] instead.
    ///
    /// # Safety
    /// `peers` has one entry per rank; for every rank r with a nonzero length,
    /// `peers[r]` is 8-byte aligned and valid for reads and writes of rank r's length
    /// rounded up to whole 8-byte words, in this process, for the whole life of the
    /// returned window (a window dropped without its free included). Every access to
    /// that memory is as [`Window::create_in_place`] requires: word atomics (rma's own
    /// windows), or a C program's loads and stores under the terms given there, never a
    /// Rust reference.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let shared = Window::allocate_shared::<u64>(&world, 4, &Info::new())?;
    ///     let peers: Vec<usize> = (0..world.size())
    ///         .map(|r| Ok(shared.shared_query(Rank::new(r as u32))?.addr()))
    ///         .collect::<rma_win::Result<_>>()?;
    ///     // SAFETY: every address is a rank's part of `shared` (8-aligned, whole words),
    ///     // which outlives `mapped`; all access goes through the two windows.
    ///     let mut mapped =
    ///         unsafe { Window::create_mapped(&world, 32, 8, &peers, &Info::new())? };
    ///     mapped.lock_all(rma_win::Assert::NONE)?;
    ///     mapped.accumulate(&[1u64], Rank::new(0), 2, rma_win::Op::Sum)?;
    ///     mapped.unlock_all()?;
    ///     world.barrier()?;
    ///     // the sums landed in the shared window's memory itself
    ///     let part = shared.shared_query(Rank::new(0))?.view::<u64>()?;
    ///     assert_eq!(part.load(2)?, 3);
    ///     mapped.free()?;
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[allow(unsafe_code)] // a constructor whose callers make the promise above
    #[doc(alias = "MPI_Win_create")]
    pub unsafe fn create_mapped(
        world: &'w World,
        len: usize,
        disp_unit: usize,
        peers: &[usize],
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_create_mapped", len).entered();
        let parsed = WinInfo::from_info(info)?;
        if disp_unit == 0 {
            return Err(Error::InvalidDispUnit { disp_unit });
        }
        // SAFETY: forwarded from this function's contract.
        let win = unsafe {
            rma_core::Backend::create_mapped(&world.inner, len, disp_unit, peers, info, &parsed)?
        };
        Self::finish(world, win, parsed)
    }

    /// Collectively creates a window over `len` bytes at `ptr` that other ranks'
    /// calls update in place, for a C interface exposing a program's own memory with
    /// MPI_Win_create: with ranks as processes the queued transport's progress thread
    /// of this rank applies them, with ranks as threads the origins do; nothing is
    /// copied, and a flush at the origin means the update is in this memory (the
    /// unified model). Backends other than rma's shared memory refuse with class
    /// RMA_FLAVOR. Rust programs use [`Window::create`], which borrows a slice.
    ///
    /// # Safety
    /// `ptr` is 8-byte aligned (a misaligned one is refused: class ARG on its rank,
    /// and every other rank's call fails naming that rank) and valid
    /// for reads and writes of `len` bytes rounded up to whole 8-byte words from this
    /// call until no rank can reach them any more, which is:
    ///
    /// - once this rank's [`Window::free`] has returned `Ok`: every other rank has
    ///   then entered its free of this window or dropped its window, so no call
    ///   reaches the memory any more, and this rank's progress thread (the queued
    ///   transport's) has stopped;
    /// - else, with ranks as processes, once this rank's window has been dropped: the
    ///   drop stops the progress thread, which is what applies the other ranks' calls
    ///   here (no other process maps the memory);
    /// - else, with ranks as threads, once this rank's window has been dropped and
    ///   every other rank's window of this creation is gone too (freed, dropped, or
    ///   forgotten): until then their calls write the memory directly;
    /// - never, for a window that is leaked (`mem::forget`, a reference cycle) without
    ///   a successful free: the memory must then stay valid for the rest of the
    ///   process (a progress thread, or other ranks, may still write it).
    ///
    /// Until then rma reads and writes those words with word atomics only; every other
    /// access to them is a word atomic too, never a Rust reference, except
    /// a C program's own loads and stores, for which the caller answers: kept apart from
    /// the window's calls to the same bytes by MPI's synchronization, and, for other
    /// bytes of a word a call updates meanwhile, relying on the hardware (x86-64,
    /// aarch64) keeping byte stores and word atomics coherent, as any MPI over shared
    /// memory does. A `len` that is not a whole number of words has the bytes of its
    /// last word past `len` read and written back atomically: they must belong to
    /// nothing accessed meanwhile.
    #[allow(unsafe_code)] // a constructor whose callers make the promise above
    #[doc(alias = "MPI_Win_create")]
    pub unsafe fn create_in_place(
        world: &'w World,
        ptr: *mut u8,
        len: usize,
        disp_unit: usize,
        info: &Info,
    ) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_create_in_place", len).entered();
        let parsed = WinInfo::from_info(info)?;
        if disp_unit == 0 {
            return Err(Error::InvalidDispUnit { disp_unit });
        }
        // SAFETY: forwarded from this function's contract.
        let win = unsafe {
            rma_core::Backend::create_in_place(&world.inner, ptr, len, disp_unit, info, &parsed)?
        };
        Self::finish(world, win, parsed)
    }

    /// The window over the backend's `win`. A backend whose shapes do not cover the
    /// world's ranks (one from outside rma, with a bug) is refused with class INTERN
    /// instead of panicking on a later index.
    pub(crate) fn finish(
        world: &'w World,
        win: AnyWindow<'w>,
        mut info: WinInfo,
    ) -> Result<Window<'w>> {
        let shapes = win.shapes().into_boxed_slice();
        let (rank, ranks) = (world.rank(), world.size());
        if shapes.len() != ranks || rank >= ranks {
            return Err(Error::Internal {
                reason: format!(
                    "the {} backend reported {} window shapes for a world of {ranks} ranks (rank {rank})",
                    win.name(),
                    shapes.len(),
                ),
            });
        }
        // byte offsets are computed as isize (datatype runs may have negative offsets)
        if let Some(big) = shapes.iter().find(|s| s.len > isize::MAX as usize) {
            return Err(Error::Internal {
                reason: format!(
                    "the {} backend reported a window of {} bytes, more than isize::MAX",
                    win.name(),
                    big.len
                ),
            });
        }
        info.transport = Some(win.name().to_owned());
        let (win, check) = crate::check::wrap(world, win, &mut info)?;
        let dynamic = win.flavor() == Flavor::Dynamic;
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Ok(Window {
            dynamic,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            world,
            rank,
            ranks,
            shapes,
            win,
            info,
            // a dynamic window's calls check their regions, a checked window's note
            // their call sites: never the fast path
            epochs: EpochCell::new(ranks, !dynamic && check.is_none()),
            failed: world.failure_word(),
            check,
            _borrow: PhantomData,
        })
    }
}
