//! Shared windows' load/store access: [`Window::shared_query`] gives a rank's part of a
//! shared window as a [`SharedSegment`], and [`SharedSegment::view`] a typed
//! [`SharedView`] over it whose element accesses are hardware atomics.
//!
//! Why views and not slices: other ranks write a shared window at any time, so a Rust
//! reference (`&[T]`, `&mut [T]`) over it would be undefined behaviour the moment one
//! does. Every access here is an atomic on the aligned 8-byte word holding the element
//! (the same accesses rma's own kernels make), so no sequence of view calls can race
//! in Rust's sense, whatever the program does; what MPI calls a conflict (a store
//! racing a put) gives unspecified values, never undefined behaviour.
//!
//! Ordering: [`SharedView::load`] is an acquire, [`SharedView::store`] a release, the
//! read-modify-writes both; so a flag stored after data, and loaded before it, orders
//! them between ranks, as C11 atomics would. MPI's own rule for load/store in shared
//! windows (MPI_Win_sync plus a synchronization between the ranks) also holds:
//! [`Window::sync`] is a full fence.

use crate::handle::{AtomicElement, Integer, Numeric};
use crate::window::{bits_of, single_basic, value_of, Window};
use rma_core::{BasicType, Error, Flavor, Memory, Op, Rank, RawSegment, Result, Transport};
use rma_ops::Plain;
use std::marker::PhantomData;
use std::sync::atomic::{fence, Ordering};

/// One rank's part of a shared window, as this rank reaches it by load and store
/// (MPI_Win_shared_query's answer): its rank, length and displacement unit, typed
/// views over it ([`SharedSegment::view`]), bulk copies, and, behind `unsafe`, its
/// address. It borrows the window and, like the window, stays on its rank's thread.
///
/// # Examples
///
/// ```
/// use rma_win::{Info, Rank, Window};
/// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
///     let win = Window::allocate_shared::<u32>(&world, 4, &Info::new())?;
///     let seg = win.shared_query(Rank::new(1))?; // rank 1's part, from every rank
///     assert_eq!((seg.rank(), seg.len(), seg.disp_unit()), (1, 16, 4));
///     if world.rank() == 0 {
///         seg.view::<u32>()?.store(3, 99)?;
///     }
///     world.barrier()?;
///     assert_eq!(seg.view::<u32>()?.load(3)?, 99);
///     Ok(())
/// })?.into_iter().collect::<rma_win::Result<()>>()?;
/// # Ok::<(), rma_win::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SharedSegment<'a> {
    rank: usize,
    raw: RawSegment<'a>,
}

impl<'w> Window<'w> {
    /// `rank`'s part of this shared window (MPI_Win_shared_query), reachable by load
    /// and store from this rank. [`Rank::NULL`] gives the part of the lowest rank
    /// whose part is not empty (rank 0's, empty, if every part is), as MPI does.
    ///
    /// Errors: RMA_FLAVOR for a window not made by [`Window::allocate_shared`]; RANK
    /// for a rank outside the window; WIN once the window was freed.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u64>(&world, 4, &Info::new())?;
    ///     // every rank adds 1 to element `rank` of every rank's part, by load/store
    ///     for r in 0..win.size() {
    ///         let view = win.shared_query(Rank::new(r as u32))?.view::<u64>()?;
    ///         view.fetch_add(world.rank(), 1)?;
    ///     }
    ///     world.barrier()?;
    ///     win.sync()?;
    ///     let mine = win.shared_query(Rank::new(world.rank() as u32))?.view::<u64>()?;
    ///     assert_eq!([mine.load(0)?, mine.load(1)?, mine.load(2)?, mine.load(3)?], [1, 1, 1, 0]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[doc(alias = "MPI_Win_shared_query")]
    pub fn shared_query(&self, rank: impl Into<Rank>) -> Result<SharedSegment<'_>> {
        self.check_alive()?;
        let rank: Rank = rank.into();
        if self.flavor() != Flavor::Shared {
            return Err(Error::Flavor {
                reason: format!(
                    "shared_query needs a shared window (Window::allocate_shared); this one's \
                     flavor is {}",
                    self.flavor()
                ),
            });
        }
        let r = match self.check_rank(rank)? {
            Some(r) => r,
            None => (0..self.size())
                .find(|&r| self.shapes[r].len > 0)
                .unwrap_or(0),
        };
        let raw = self.win.shared_segment(r).ok_or_else(|| Error::Internal {
            reason: format!(
                "the {} backend made a shared window but gives no memory for rank {r}",
                self.win.name()
            ),
        })?;
        if raw.len() != self.shapes[r].len || raw.ptr().is_null() {
            return Err(Error::Internal {
                reason: format!(
                    "the {} backend's part for rank {r} has {} bytes, not the window's {}",
                    self.win.name(),
                    raw.len(),
                    self.shapes[r].len
                ),
            });
        }
        Ok(SharedSegment { rank: r, raw })
    }
}

impl<'a> SharedSegment<'a> {
    /// The rank whose part this is.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u8>(&world, 8, &Info::new())?;
    ///     assert_eq!(win.shared_query(Rank::new(1))?.rank(), 1);
    ///     // the null rank gives the lowest rank whose part is not empty
    ///     assert_eq!(win.shared_query(Rank::NULL)?.rank(), 0);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Its length in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     // rank 0 gives 3 elements, rank 1 gives 5
    ///     let win = Window::allocate_shared::<f64>(&world, 3 + 2 * world.rank(), &Info::new())?;
    ///     assert_eq!(win.shared_query(Rank::new(0))?.len(), 24);
    ///     assert_eq!(win.shared_query(Rank::new(1))?.len(), 40);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether it is empty.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     // only rank 1 gives memory
    ///     let win = Window::allocate_shared::<u64>(&world, world.rank(), &Info::new())?;
    ///     assert!(win.shared_query(Rank::new(0))?.is_empty());
    ///     assert!(!win.shared_query(Rank::new(1))?.is_empty());
    ///     assert_eq!(win.shared_query(Rank::NULL)?.rank(), 1); // the first part with memory
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The displacement unit its rank gave.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let unit = 4 * (1 + world.rank()); // 4 bytes on rank 0, 8 on rank 1
    ///     let win = Window::allocate_shared_bytes(&world, 64, unit, &Info::new())?;
    ///     assert_eq!(win.shared_query(Rank::new(0))?.disp_unit(), 4);
    ///     assert_eq!(win.shared_query(Rank::new(1))?.disp_unit(), 8);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn disp_unit(&self) -> usize {
        self.raw.disp_unit()
    }

    /// Its first byte's address in this process, for arithmetic only (comparing
    /// parts, alignment); nothing can be read or written through it without
    /// [`SharedSegment::as_mut_ptr`]'s contract.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u16>(&world, 10, &Info::new())?;
    ///     let (a, b) = (win.shared_query(Rank::new(0))?, win.shared_query(Rank::new(1))?);
    ///     assert_eq!(a.addr() % 64, 0); // parts rma lays out are cache-line aligned
    ///     assert_eq!(b.addr() - a.addr(), 64); // contiguous: 20 bytes, rounded up to 64
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn addr(&self) -> usize {
        self.raw.ptr() as usize
    }

    /// Its first byte, for code that must reach the memory directly (a C library, a
    /// SIMD kernel).
    ///
    /// # Safety
    /// The pointer is valid for [`SharedSegment::len`] bytes while the window lives
    /// (rounded up to whole aligned 8-byte words, all inside the window's memory).
    /// Other ranks may read and write those bytes at any time through RMA calls and
    /// views, and rma accesses them only with atomics on whole aligned 8-byte words.
    /// So: never make a Rust reference (`&T`, `&mut T`, slices) to them, and make
    /// every access that may run while another rank's thread in this process
    /// accesses the same word (ranks as threads) an atomic on that whole aligned
    /// word (`AtomicU64`, not narrower); accesses while no one else can touch the
    /// bytes (between synchronizations MPI orders) may be plain.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u64>(&world, 1, &Info::new())?;
    ///     let seg = win.shared_query(Rank::new(0))?;
    ///     // SAFETY: an aligned 8-byte word inside rank 0's part, reached only atomically, and
    ///     // only while the window lives
    ///     let word = unsafe { AtomicU64::from_ptr(seg.as_mut_ptr().cast::<u64>()) };
    ///     word.fetch_add(1, Ordering::AcqRel);
    ///     world.barrier()?;
    ///     assert_eq!(seg.view::<u64>()?.load(0)?, 2);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    #[allow(unsafe_code)] // the one unsafe item of rma-win: a contract for its callers
    pub unsafe fn as_mut_ptr(&self) -> *mut u8 {
        self.raw.ptr()
    }

    /// A typed view of the part: element `i` is the `T` at byte `i * size_of::<T>()`,
    /// and the view holds as many whole elements as fit.
    ///
    /// Errors: TYPE for a `T` that is not one predefined element (all
    /// [`AtomicElement`]s are); DISP if the part's first byte is not aligned for `T`
    /// (parts rma lays out are 64-byte aligned).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared_bytes(&world, 16, 1, &Info::new())?;
    ///     let seg = win.shared_query(Rank::new(0))?;
    ///     let (words, halves) = (seg.view::<u64>()?, seg.view::<u32>()?); // the same bytes
    ///     assert_eq!((words.len(), halves.len()), (2, 4));
    ///     if world.rank() == 0 {
    ///         words.store(1, u64::MAX)?;
    ///     }
    ///     world.barrier()?;
    ///     assert_eq!((halves.load(1)?, halves.load(2)?), (0, u32::MAX));
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn view<T: AtomicElement>(&self) -> Result<SharedView<'a, T>> {
        let basic = single_basic::<T>("SharedSegment::view")?;
        let size = basic.size();
        if self.addr() % size != 0 {
            return Err(Error::Misaligned {
                call: "SharedSegment::view",
                basic,
                align: size,
                disp: 0,
                disp_unit: self.disp_unit(),
                offset: self.addr(),
            });
        }
        Ok(SharedView {
            seg: *self,
            basic,
            len: self.len() / size,
            _t: PhantomData,
        })
    }

    /// The part's accesses, once `n` bytes at byte `off` are checked to lie inside
    /// it (else RMA_RANGE).
    fn at(&self, off: usize, n: usize) -> Result<Plain<'a>> {
        match off.checked_add(n) {
            Some(end) if end <= self.len() => Ok(Plain::new(self.raw)),
            _ => Err(Error::OutOfWindow {
                rank: Rank::new(self.rank as u32),
                start: off as i128,
                end: off as i128 + n as i128,
                window_len: self.len(),
            }),
        }
    }

    /// Copies the part's bytes from byte `off` into `out`, word by word (each word
    /// read atomically, the copy as a whole not: the rules of a get), then an acquire
    /// fence. Errors: RMA_RANGE past the part's end.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u8>(&world, 4, &Info::new())?;
    ///     let seg = win.shared_query(Rank::new(world.rank() as u32))?;
    ///     seg.write_bytes(0, &[world.rank() as u8; 4])?; // each rank its own part
    ///     world.barrier()?;
    ///     let mut peer = [0u8; 2];
    ///     win.shared_query(Rank::new(1 - world.rank() as u32))?.read_bytes(2, &mut peer)?;
    ///     assert_eq!(peer, [1 - world.rank() as u8; 2]);
    ///     assert!(seg.read_bytes(3, &mut peer).is_err()); // past the part's end: RMA_RANGE
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn read_bytes(&self, off: usize, out: &mut [u8]) -> Result<()> {
        self.at(off, out.len())?.read(off, out);
        fence(Ordering::Acquire);
        Ok(())
    }

    /// A release fence, then copies `data` into the part at byte `off`, word by word
    /// (the rules of a put). Errors: RMA_RANGE past the part's end.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u32>(&world, 2, &Info::new())?;
    ///     let zero = win.shared_query(Rank::new(0))?;
    ///     if world.rank() == 1 {
    ///         zero.write_bytes(4, &7u32.to_ne_bytes())?; // element 1's bytes
    ///     }
    ///     world.barrier()?;
    ///     assert_eq!(zero.view::<u32>()?.load(1)?, 7);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn write_bytes(&self, off: usize, data: &[u8]) -> Result<()> {
        let plain = self.at(off, data.len())?;
        fence(Ordering::Release);
        plain.write(off, data);
        Ok(())
    }
}

/// A typed view of one rank's part of a shared window ([`SharedSegment::view`]):
/// element accesses by hardware atomics (see the module docs for why, and for the
/// ordering each gives). Indices count elements of `T` from the part's start and are
/// checked (class RMA_RANGE).
///
/// # Examples
///
/// ```
/// use rma_win::{Info, Rank, Window};
///
/// rma_win::run_threads(4, |world| -> rma_win::Result<()> {
///     let win = Window::allocate_shared::<u64>(&world, 2, &Info::new())?;
///     let first = win.shared_query(Rank::new(0))?.view::<u64>()?; // rank 0's part
///     first.fetch_add(0, 1)?;                    // a plain atomic add, no RMA call
///     first.fetch_max(1, world.rank() as u64)?;
///     world.barrier()?;
///     win.sync()?;                               // MPI_Win_sync
///     assert_eq!((first.load(0)?, first.load(1)?), (4, 3));
///     // contiguous by default: rank 1's part starts 64 bytes (a cache line) after rank 0's
///     assert_eq!(win.shared_query(Rank::new(1))?.addr() - first.segment().addr(), 64);
///     Ok(())
/// })?
/// .into_iter()
/// .collect::<rma_win::Result<Vec<_>>>()?;
/// # Ok::<(), rma_win::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SharedView<'a, T> {
    seg: SharedSegment<'a>,
    basic: BasicType,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: AtomicElement> SharedView<'_, T> {
    /// The number of elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u8>(&world, 10, &Info::new())?;
    ///     let seg = win.shared_query(Rank::new(0))?;
    ///     assert_eq!(seg.view::<u8>()?.len(), 10);
    ///     assert_eq!(seg.view::<u32>()?.len(), 2); // whole elements only
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view has no element.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u8>(&world, 3, &Info::new())?;
    ///     let seg = win.shared_query(Rank::new(0))?;
    ///     assert!(!seg.view::<u16>()?.is_empty());
    ///     assert!(seg.view::<u32>()?.is_empty()); // 3 bytes hold no u32
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The segment viewed.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<i64>(&world, 2, &Info::new())?;
    ///     let view = win.shared_query(Rank::new(1))?.view::<i64>()?;
    ///     assert_eq!((view.segment().rank(), view.segment().len()), (1, 16));
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn segment(&self) -> SharedSegment<'_> {
        self.seg
    }

    /// The part's accesses and the byte offset of element `i`, checked in range;
    /// aligned for `T` (the view's base is, and `i * size` keeps it).
    #[inline]
    fn elem(&self, i: usize) -> Result<(Plain<'_>, usize)> {
        let size = self.basic.size();
        if i >= self.len {
            return Err(Error::OutOfWindow {
                rank: Rank::new(self.seg.rank as u32),
                start: (i as i128) * size as i128,
                end: (i as i128 + 1) * size as i128,
                window_len: self.seg.len(),
            });
        }
        Ok((self.seg.at(i * size, size)?, i * size))
    }

    #[inline]
    fn rmw(&self, i: usize, op: Op, value: T) -> Result<T> {
        let (p, off) = self.elem(i)?;
        value_of(
            self.basic,
            p.fetch_and_op_bits(off, self.basic, op, bits_of(&value)),
        )
    }

    /// Element `i`, read atomically (acquire).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u64>(&world, 2, &Info::new())?;
    ///     let zero = win.shared_query(Rank::new(0))?.view::<u64>()?;
    ///     if world.rank() == 0 {
    ///         zero.store(0, 42)?; // data
    ///         zero.store(1, 1)?; // then a flag (release)
    ///     } else {
    ///         while zero.load(1)? == 0 {} // the flag (acquire) ...
    ///         assert_eq!(zero.load(0)?, 42); // ... orders the data before this load
    ///     }
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn load(&self, i: usize) -> Result<T> {
        let (p, off) = self.elem(i)?;
        let bits = p.load_bits(off, self.basic.size());
        fence(Ordering::Acquire);
        value_of(self.basic, bits)
    }

    /// Stores `value` into element `i` atomically (release).
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<f32>(&world, 2, &Info::new())?;
    ///     let zero = win.shared_query(Rank::new(0))?.view::<f32>()?;
    ///     zero.store(world.rank(), 0.5 + world.rank() as f32)?; // one element per rank
    ///     world.barrier()?;
    ///     assert_eq!((zero.load(0)?, zero.load(1)?), (0.5, 1.5));
    ///     assert!(zero.store(2, 0.0).is_err()); // past the view's end: RMA_RANGE
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn store(&self, i: usize, value: T) -> Result<()> {
        let (p, off) = self.elem(i)?;
        fence(Ordering::Release);
        p.store_bits(off, self.basic.size(), bits_of(&value));
        Ok(())
    }

    /// Replaces element `i` with `value`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u32>(&world, 1, &Info::new())?;
    ///     let zero = win.shared_query(Rank::new(0))?.view::<u32>()?;
    ///     let before = zero.swap(0, 10 + world.rank() as u32)?;
    ///     let mut seen = world.allgather_value(before)?; // after both swaps
    ///     seen.push(zero.load(0)?);
    ///     seen.sort();
    ///     assert_eq!(seen, [0, 10, 11]); // the initial 0, then each rank's value once
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn swap(&self, i: usize, value: T) -> Result<T> {
        self.rmw(i, Op::Replace, value)
    }

    /// Replaces element `i` with `value` if it equals `compare`; returns the old value
    /// (the swap happened when it equals `compare`). Bytes are compared, except for
    /// `bool`, whose values are.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u64>(&world, 1, &Info::new())?;
    ///     let lock = win.shared_query(Rank::new(0))?.view::<u64>()?;
    ///     // a spin lock: 0 free, rank + 1 held
    ///     while lock.compare_and_swap(0, world.rank() as u64 + 1, 0)? != 0 {}
    ///     assert_eq!(lock.load(0)?, world.rank() as u64 + 1); // held by this rank alone
    ///     lock.store(0, 0)?; // release
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn compare_and_swap(&self, i: usize, value: T, compare: T) -> Result<T> {
        let (p, off) = self.elem(i)?;
        let old = p.compare_and_swap_bits(off, self.basic, bits_of(&value), bits_of(&compare));
        value_of(self.basic, old)
    }

    /// Copies elements `first..first + out.len()` into `out`: each element read
    /// atomically, the copy as a whole not (the rules of a get); acquire.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<i32>(&world, 4, &Info::new())?;
    ///     let mine = win.shared_query(Rank::new(world.rank() as u32))?.view::<i32>()?;
    ///     mine.write(0, &[1, 2, 3, 4].map(|x| x * (1 + world.rank() as i32)))?;
    ///     world.barrier()?;
    ///     let peer = win.shared_query(Rank::new(1 - world.rank() as u32))?.view::<i32>()?;
    ///     let mut out = [0i32; 2];
    ///     peer.read(2, &mut out)?; // elements 2 and 3
    ///     assert_eq!(out, [3, 4].map(|x| x * (2 - world.rank() as i32)));
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn read(&self, first: usize, out: &mut [T]) -> Result<()> {
        let size = self.basic.size();
        self.check_run(first, out.len())?;
        match rma_datatype::bytes_of_mut(out) {
            Some(bytes) => self.seg.read_bytes(first * size, bytes),
            // a type with invalid byte patterns (bool): element by element, each
            // load checking its value
            None => {
                for (i, v) in out.iter_mut().enumerate() {
                    *v = self.load(first + i)?;
                }
                Ok(())
            }
        }
    }

    /// Copies `data` into elements `first..first + data.len()`: each element written
    /// atomically, the copy as a whole not (the rules of a put); release.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u8>(&world, 4, &Info::new())?;
    ///     let zero = win.shared_query(Rank::new(0))?.view::<u8>()?;
    ///     zero.write(2 * world.rank(), &[b'a' + world.rank() as u8; 2])?; // two elements each
    ///     world.barrier()?;
    ///     let mut all = [0u8; 4];
    ///     zero.read(0, &mut all)?;
    ///     assert_eq!(&all, b"aabb");
    ///     assert!(zero.write(3, &[0, 0]).is_err()); // past the view's end: RMA_RANGE
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn write(&self, first: usize, data: &[T]) -> Result<()> {
        let size = self.basic.size();
        self.check_run(first, data.len())?;
        self.seg
            .write_bytes(first * size, rma_datatype::bytes_of(data))
    }

    fn check_run(&self, first: usize, n: usize) -> Result<()> {
        match first.checked_add(n) {
            Some(end) if end <= self.len => Ok(()),
            _ => {
                let size = self.basic.size() as i128;
                Err(Error::OutOfWindow {
                    rank: Rank::new(self.seg.rank as u32),
                    start: first as i128 * size,
                    end: (first as i128 + n as i128) * size,
                    window_len: self.seg.len(),
                })
            }
        }
    }
}

impl<T: AtomicElement + Numeric> SharedView<'_, T> {
    /// Adds `value` to element `i` atomically; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u64>(&world, 1, &Info::new())?;
    ///     let counter = win.shared_query(Rank::new(0))?.view::<u64>()?;
    ///     let ticket = counter.fetch_add(0, 1)?;
    ///     let mut tickets = world.allgather_value(ticket)?;
    ///     tickets.sort();
    ///     assert_eq!(tickets, [0, 1, 2]);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn fetch_add(&self, i: usize, value: T) -> Result<T> {
        self.rmw(i, Op::Sum, value)
    }

    /// Makes element `i` the larger of it and `value`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<f64>(&world, 1, &Info::new())?;
    ///     let best = win.shared_query(Rank::new(0))?.view::<f64>()?;
    ///     best.fetch_max(0, [0.5, 2.5, 1.5][world.rank()])?;
    ///     world.barrier()?;
    ///     assert_eq!(best.load(0)?, 2.5);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn fetch_max(&self, i: usize, value: T) -> Result<T> {
        self.rmw(i, Op::Max, value)
    }

    /// Makes element `i` the smaller of it and `value`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<i32>(&world, 1, &Info::new())?;
    ///     let low = win.shared_query(Rank::new(0))?.view::<i32>()?;
    ///     low.fetch_min(0, [4, -2, 7][world.rank()])?;
    ///     world.barrier()?;
    ///     assert_eq!(low.load(0)?, -2); // below the initial 0
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn fetch_min(&self, i: usize, value: T) -> Result<T> {
        self.rmw(i, Op::Min, value)
    }
}

impl<T: AtomicElement + Integer> SharedView<'_, T> {
    /// ORs `value` into element `i`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(3, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u8>(&world, 1, &Info::new())?;
    ///     let arrived = win.shared_query(Rank::new(0))?.view::<u8>()?;
    ///     let before = arrived.fetch_or(0, 1 << world.rank())?;
    ///     assert_eq!(before & (1 << world.rank()), 0);
    ///     world.barrier()?;
    ///     assert_eq!(arrived.load(0)?, 0b111);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn fetch_or(&self, i: usize, value: T) -> Result<T> {
        self.rmw(i, Op::Bor, value)
    }

    /// ANDs `value` into element `i`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u16>(&world, 1, &Info::new())?;
    ///     let free = win.shared_query(Rank::new(0))?.view::<u16>()?;
    ///     if world.rank() == 0 {
    ///         free.store(0, 0xff)?;
    ///     }
    ///     world.barrier()?;
    ///     free.fetch_and(0, !(0b11 << (2 * world.rank())))?; // each rank takes two slots
    ///     world.barrier()?;
    ///     assert_eq!(free.load(0)?, 0xf0);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn fetch_and(&self, i: usize, value: T) -> Result<T> {
        self.rmw(i, Op::Band, value)
    }

    /// XORs `value` into element `i`; returns the old value.
    ///
    /// # Examples
    ///
    /// ```
    /// use rma_win::{Info, Rank, Window};
    /// rma_win::run_threads(2, |world| -> rma_win::Result<()> {
    ///     let win = Window::allocate_shared::<u32>(&world, 1, &Info::new())?;
    ///     let bits = win.shared_query(Rank::new(0))?.view::<u32>()?;
    ///     bits.fetch_xor(0, 0b0110)?; // both ranks toggle the same bits: they cancel
    ///     world.barrier()?;
    ///     assert_eq!(bits.load(0)?, 0);
    ///     Ok(())
    /// })?.into_iter().collect::<rma_win::Result<()>>()?;
    /// # Ok::<(), rma_win::Error>(())
    /// ```
    pub fn fetch_xor(&self, i: usize, value: T) -> Result<T> {
        self.rmw(i, Op::Bxor, value)
    }
}
