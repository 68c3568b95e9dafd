//! Dynamic windows (MPI_Win_create_dynamic): created with no memory; each rank then
//! attaches regions ([`Window::attach`]) and detaches them ([`Window::detach`]) on its
//! own, and other ranks address a region by its address ([`Region::disp`]), as MPI
//! programs address attached memory by MPI_Get_address.
//!
//! Ownership is how the memory comes back safely: `attach` takes the caller's `Vec`
//! and exposes its contents in window memory, and `detach` consumes the [`Region`]
//! and returns a `Vec` with the region's contents at that moment. No rank can then
//! write into memory the caller owns, whatever happens to the window, and a late call
//! to a detached region lands in window memory (as MPI leaves such a call erroneous),
//! never in freed memory.

use crate::window::Window;
use crate::world::World;
use rma_core::{Backend, Disp, Error, Flavor, Info, Memory, Result, WinInfo};
use rma_datatype::Equivalence;
use std::marker::PhantomData;

/// A region attached to this rank's part of a dynamic window ([`Window::attach`]):
/// where other ranks find it ([`Region::disp`]) and how long it is. It is a token for
/// [`Window::detach`], which consumes it; neither `Clone` nor `Copy`, so a region is
/// detached at most once.
#[derive(Debug)]
pub struct Region<T> {
    /// The window it was attached to (`Window::id`).
    window: u64,
    offset: usize,
    addr: usize,
    len: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T> Region<T> {
    /// The target displacement of element 0: the address other ranks pass as `disp`
    /// to reach it (send it to them, by a collective or a put into another window).
    #[doc(alias = "MPI_Get_address")]
    pub fn disp(&self) -> Disp {
        self.addr as Disp
    }

    /// The target displacement of element `i` (`disp() + i * size_of::<T>()`,
    /// saturating: an index far past the region gives an address no region has).
    pub fn disp_of(&self, i: usize) -> Disp {
        let off = i.saturating_mul(std::mem::size_of::<T>());
        Disp::try_from(self.addr.saturating_add(off)).unwrap_or(Disp::MAX)
    }

    /// Its number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<'w> Window<'w> {
    /// Collectively creates a dynamic window (MPI_Win_create_dynamic): no memory until
    /// a rank attaches some. Displacements are addresses with a displacement unit of 1:
    /// a call targets `region.disp()` (plus a byte offset) of a region its target
    /// attached, and a call outside every region of its target is refused with class
    /// RMA_RANGE, whatever the transport.
    ///
    /// Each rank's regions may hold the info key `rma_dynamic_bytes` bytes at once
    /// (default 1 MiB), at most 64 regions. With rma's own backends that is reserved
    /// window memory every rank maps; under an MPI launcher the window is
    /// MPI_Win_create_dynamic's, and `attach` and `detach` are MPI_Win_attach and
    /// MPI_Win_detach of regions of that memory.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Assert, Info, Op, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::create_dynamic(&world, &Info::new())?;
    ///     // rank 0 attaches four counters and tells the others where they are
    ///     let region = if world.rank() == 0 { Some(win.attach(vec![0u64; 4])?) } else { None };
    ///     let addr = world.allgather(&region.as_ref().map_or(0, |r| r.disp()).to_ne_bytes())?;
    ///     let at = i64::from_ne_bytes(addr[0].as_slice().try_into().unwrap());
    ///     win.lock_all(Assert::NONE)?;
    ///     win.accumulate(&[1u64], Rank::new(0), at + 8 * world.rank() as i64, Op::Sum)?;
    ///     win.unlock_all()?;
    ///     world.barrier()?;
    ///     if let Some(region) = region {
    ///         assert_eq!(win.detach(region)?, [1, 1, 1, 0]); // the contents come back
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_create_dynamic")]
    pub fn create_dynamic(world: &'w World, info: &Info) -> Result<Window<'w>> {
        let _span = tracing::debug_span!("win_create_dynamic").entered();
        let parsed = WinInfo::from_info(info)?;
        let win = world
            .inner
            .create_dynamic(parsed.dynamic_bytes, info, &parsed)?;
        Self::finish(world, win, parsed)
    }

    /// Attaches a region holding `data` to this rank's part of this dynamic window
    /// (MPI_Win_attach; local): the window takes the data (its contents go into
    /// window memory) and returns the region, whose [`Region::disp`] other ranks
    /// target. Give it back with [`Window::detach`].
    ///
    /// Errors: RMA_FLAVOR for a window that is not dynamic; RMA_ATTACH when this rank's
    /// part has no room (`rma_dynamic_bytes`) or no free region slot left (64); ARG
    /// for an element type with invalid byte patterns (other ranks may write any
    /// bytes); WIN once freed. Nothing changes.
    #[doc(alias = "MPI_Win_attach")]
    pub fn attach<T: Equivalence>(&self, mut data: Vec<T>) -> Result<Region<T>> {
        self.check_alive()?;
        if std::mem::size_of::<T>() == 0 || data.is_empty() {
            return Err(Error::arg(
                "attach of no bytes (an empty Vec, or a zero-sized element type): a region \
                 must hold at least one byte",
            ));
        }
        let bytes = rma_datatype::bytes_of_mut(&mut data).ok_or_else(|| {
            Error::arg(format!(
                "a region of {} could be left holding invalid values; attach a type for which \
                 every byte pattern is valid",
                std::any::type_name::<T>()
            ))
        })?;
        if self.flavor() != Flavor::Dynamic {
            return Err(Error::Flavor {
                reason: format!(
                    "attach needs a dynamic window (Window::create_dynamic); this one's flavor \
                     is {}",
                    self.flavor()
                ),
            });
        }
        let offset = self.win.attach(bytes)?;
        Ok(Region {
            window: self.id,
            offset,
            addr: self.shapes[self.rank()].addr + offset,
            len: data.len(),
            _t: PhantomData,
        })
    }

    /// Detaches `region` (MPI_Win_detach; local) and returns its contents: from then on
    /// calls to it are refused (RMA_RANGE) and its memory may serve a later attach.
    ///
    /// Refused, with the region handed back in the error ([`DetachError`], which `?`
    /// turns into its [`Error`]) and nothing changed: RMA_ATTACH for a region of
    /// another window; RMA_SYNC while this rank's exposure epoch (post) is open or this
    /// rank's own calls of a fence epoch are pending, when calls to the region may
    /// still be pending; WIN once the window was freed. Calls other ranks have not
    /// completed (under their own locks) cannot be seen from here: detaching under
    /// them is erroneous in MPI, and in rma they land in window memory, never in
    /// memory the caller owns.
    #[doc(alias = "MPI_Win_detach")]
    pub fn detach<T: Equivalence>(&self, region: Region<T>) -> Result<Vec<T>, DetachError<T>> {
        let refuse = |error: Error, region: Region<T>| DetachError { error, region };
        if let Err(e) = self.check_alive() {
            return Err(refuse(e, region));
        }
        if region.window != self.id {
            let e = Error::Attach {
                reason: "detach of a region attached to another window".into(),
            };
            return Err(refuse(e, region));
        }
        if let Some(why) = self.detach_blocked() {
            return Err(refuse(Error::sync("detach", why), region));
        }
        let size = std::mem::size_of::<T>();
        let mut bytes = vec![0u8; region.len * size];
        if let Err(e) = self.win.detach(region.offset, &mut bytes) {
            return Err(refuse(e, region));
        }
        // every byte pattern is a valid T (checked by attach) and size > 0
        Ok(bytes.chunks_exact(size).filter_map(T::from_bytes).collect())
    }

    /// Copies elements `first..first + out.len()` of `region` (this rank's own) into
    /// `out`: local access, as [`Window::read_local`] for other flavors. Errors:
    /// RMA_RANGE past the region's end, RMA_ATTACH for another window's region.
    pub fn read_region<T: Equivalence>(
        &self,
        region: &Region<T>,
        first: usize,
        out: &mut [T],
    ) -> Result<()> {
        let offset = self.region_bytes(region, first, out.len())?;
        let mut bytes = vec![0u8; std::mem::size_of_val(out)];
        self.win.read_local(offset, &mut bytes)?;
        rma_datatype::copy_from_bytes(out, &bytes)
    }

    /// Copies `data` into elements `first..` of `region` (this rank's own); errors as
    /// [`Window::read_region`].
    pub fn write_region<T: Equivalence>(
        &self,
        region: &Region<T>,
        first: usize,
        data: &[T],
    ) -> Result<()> {
        let offset = self.region_bytes(region, first, data.len())?;
        self.win.write_local(offset, rma_datatype::bytes_of(data))
    }

    /// The byte offset of elements `first..first + n` of `region`, checked.
    fn region_bytes<T>(&self, region: &Region<T>, first: usize, n: usize) -> Result<usize> {
        self.check_alive()?;
        if region.window != self.id {
            return Err(Error::Attach {
                reason: "a region attached to another window".into(),
            });
        }
        let size = std::mem::size_of::<T>();
        match first.checked_add(n) {
            Some(end) if end <= region.len => Ok(region.offset + first * size),
            _ => Err(Error::NotAttached {
                rank: rma_core::Rank::new(self.rank() as u32),
                start: region.addr as i128 + (first as i128) * size as i128,
                end: region.addr as i128 + (first as i128 + n as i128) * size as i128,
            }),
        }
    }
}

/// A refused [`Window::detach`]: the error and the region, still attached, handed
/// back (detach it again later). `?` turns it into its [`Error`].
#[derive(Debug)]
pub struct DetachError<T> {
    /// Why the detach was refused.
    pub error: Error,
    /// The region, still attached.
    pub region: Region<T>,
}

impl<T> std::fmt::Display for DetachError<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "detach refused: {}", self.error)
    }
}

impl<T: std::fmt::Debug> std::error::Error for DetachError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<T> From<DetachError<T>> for Error {
    fn from(e: DetachError<T>) -> Error {
        e.error
    }
}
