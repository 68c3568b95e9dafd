//! [`MpiWindow`]: an MPI window (MPI_Win_allocate or MPI_Win_create), its local memory
//! and the RMA calls on it.

use crate::agree::Entry;
use crate::datatype::{place, Placement, Region};
use crate::epoch::{Epochs, Mode};
use crate::error::Call;
use crate::ffi::{Api, Handle};
use crate::pending::{Copies, Mark, Pending};
use crate::world::World;
use rma_core::{BasicType, Disp, Error, Info, Layout, Rank, Result, WinInfo};
use std::ffi::{c_char, c_int, c_void, CString};
use std::marker::PhantomData;

pub use rma_core::Flavor;

/// Where a call lands: a target rank, a displacement in units of the target window's
/// disp_unit, and the layout of the target elements relative to it (contiguous when
/// `None`, as many bytes as the origin holds).
#[derive(Clone, Copy)]
pub struct Target<'l> {
    /// The target rank; [`Rank::NULL`] makes the call do nothing (MPI_PROC_NULL).
    pub rank: Rank,
    /// The target displacement.
    pub disp: Disp,
    /// The target layout, as byte runs relative to the displacement.
    pub layout: Option<&'l dyn Layout>,
}

impl<'l> Target<'l> {
    /// Contiguous elements at `disp` of `rank`'s window.
    pub fn contiguous(rank: Rank, disp: Disp) -> Target<'l> {
        Target {
            rank,
            disp,
            layout: None,
        }
    }

    /// Elements laid out by `layout` (strided, indexed, ...) from `disp` on.
    pub fn with_layout(rank: Rank, disp: Disp, layout: &'l dyn Layout) -> Target<'l> {
        Target {
            rank,
            disp,
            layout: Some(layout),
        }
    }
}

impl std::fmt::Debug for Target<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("rank", &self.rank)
            .field("disp", &self.disp)
            .field("layout_bytes", &self.layout.map(|l| l.size()))
            .finish()
    }
}

/// A byte-addressed target region with its layout, as both API levels resolve it.
#[derive(Clone, Copy)]
pub(crate) struct Spot<'l> {
    pub(crate) rank: Rank,
    pub(crate) byte: usize,
    pub(crate) layout: Option<&'l dyn Layout>,
}

/// One rank's size and displacement unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Peer {
    pub(crate) len: usize,
    pub(crate) disp_unit: usize,
    /// The MPI displacement of byte 0 of the rank's window: 0, except for a dynamic
    /// window, whose displacements are addresses (its arena's, MPI_Get_address).
    pub(crate) base: usize,
}

/// An MPI window over this world: memory each rank exposes, with MPI's RMA calls and
/// synchronization.
///
/// Created and freed collectively by every rank. Data calls take `&self` and may come
/// from any thread (MPI_THREAD_MULTIPLE, or serialized by the [`World`]); the calls
/// that open or close epochs take `&mut self`, so no data call runs while an epoch
/// changes, and a [`Request`](crate::Request) borrows the window until it completes.
///
/// Every call checks what MPI would leave undefined — ranks, the target range against
/// the target's window size, element sizes, op x type validity, the epoch — before
/// the library sees it; such an error has changed nothing. Errors the library raises
/// keep its MPI error class.
///
/// Completion: put and accumulate copy their origin data and return once MPI has the
/// call; the window keeps the copy until a synchronization completes the call (a
/// flush of the target, the closing call of the epoch; in a passive-target epoch at
/// most a bounded number are kept before MPI_Win_flush_local_all completes them).
/// Fetching calls (get, get_accumulate, fetch_and_op, compare_and_swap) need a
/// passive-target epoch and complete with MPI_Win_flush of their target before they
/// return, so their results are in place; a flush of a target with nothing issued to
/// it since is then skipped (see `pending.rs`). In an active-target epoch (fence,
/// start) fetching calls are refused (class RMA_SYNC), since MPI delivers their
/// results only at the closing call.
pub struct MpiWindow<'a> {
    pub(crate) world: &'a World,
    pub(crate) win: Handle,
    base: *mut u8,
    len: usize,
    /// Bytes from `base` that belong to the allocation holding the window (`len` or
    /// more: the 64-byte lines asked of the library, a buffer's capacity, the rest of
    /// a dynamic window's arena). The local copies take whole words inside it as
    /// words, and the bytes of a word that sticks out one by one.
    extent: usize,
    disp_unit: usize,
    pub(crate) flavor: Flavor,
    peers: Box<[Peer]>,
    /// A shared window's parts: every rank's first byte in this process
    /// (MPI_Win_shared_query); empty for other flavors.
    shared: Box<[usize]>,
    /// A dynamic window's arena (the memory regions are attached from; `base` points
    /// into it, 64-byte aligned) and its MPI address; leaked if the window cannot be
    /// freed, as MPI may still reach it.
    arena: Option<Vec<u64>>,
    arena_addr: usize,
    /// Regions still attached when the window is freed: detached after the free's
    /// agreement, before MPI_Win_free.
    regions_left: Vec<usize>,
    pub(crate) epochs: Epochs,
    /// Origin copies MPI may still read, and the targets a flush must complete.
    pub(crate) pending: Pending,
    /// The buffer a window created by [`MpiWindow::create`] exposes.
    owned: Option<Vec<u8>>,
    freed: bool,
    /// The window's number in its world (the agreement before its fences and free).
    number: u32,
    _borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: `base` points to the window's memory, which MPI (allocate) or this window
// (create) owns for the window's life and which is only reached through MPI calls and
// the bounds-checked, word-atomic copies of read_local/write_local (so two threads
// copying at once is no data race); every MPI call may come from
// any thread, because the World required MPI_THREAD_MULTIPLE or serializes calls
// itself, or (a world below SERIALIZED, asked for) refuses every call from a thread
// other than the initializing one before MPI sees it; the epoch state changes only
// under `&mut self`; `pending` is atomics and state updated in the world's turn.
unsafe impl Send for MpiWindow<'_> {}
// SAFETY: as for Send: shared access only issues MPI calls (thread-safe, see above),
// copies local window memory with atomic accesses (read_local/write_local), reads the
// epoch state (not written while shared) and updates `pending` (atomics, and copies
// and landings only in the world's turn).
unsafe impl Sync for MpiWindow<'_> {}

impl std::fmt::Debug for MpiWindow<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiWindow")
            .field("rank", &self.world.rank())
            .field("len", &self.len)
            .field("disp_unit", &self.disp_unit)
            .field("flavor", &self.flavor)
            .field("epochs", &self.epochs)
            .finish()
    }
}

/// Memory a window holds besides what MPI allocated for it.
enum Held {
    Nothing,
    /// The buffer a created window exposes.
    Buffer(Vec<u8>),
    /// A dynamic window's arena and its MPI address.
    Arena(Vec<u64>, usize),
}

/// Info entries as C strings for MPI, after rma's own validation of the keys it knows.
struct CInfo {
    keys: Vec<CString>,
    vals: Vec<CString>,
}

impl CInfo {
    /// The keys of `info` for MPI; the values of keys rma knows in the normalized form
    /// rma parsed them to (MPICH 4.0 aborts on `accumulate_ordering` = "waw, rar",
    /// with a space, which MPI allows).
    fn new(info: &Info) -> Result<CInfo> {
        let normalized = WinInfo::from_info(info)?.to_info();
        let mut out = CInfo {
            keys: Vec::new(),
            vals: Vec::new(),
        };
        let c = |key: &str, s: &str| {
            CString::new(s).map_err(|_| Error::InvalidInfo {
                key: key.into(),
                value: s.into(),
                reason: "contains a NUL byte".into(),
            })
        };
        for (k, v) in info.iter().filter(|(k, _)| *k != WinInfo::TRANSPORT_KEY) {
            let v = normalized.get(k).unwrap_or(v);
            out.keys.push(c(k, k)?);
            out.vals.push(c(k, v)?);
        }
        Ok(out)
    }

    fn ptrs(&self) -> (Vec<*const c_char>, Vec<*const c_char>) {
        (
            self.keys.iter().map(|s| s.as_ptr()).collect(),
            self.vals.iter().map(|s| s.as_ptr()).collect(),
        )
    }
}

fn check_shape(len: usize, disp_unit: usize) -> Result<(i64, c_int)> {
    let du = c_int::try_from(disp_unit)
        .ok()
        .filter(|&d| d > 0)
        .ok_or(Error::InvalidDispUnit { disp_unit })?;
    let len = i64::try_from(len).map_err(|_| Error::CountOverflow {
        count: len,
        what: "window bytes",
    })?;
    Ok((len, du))
}

impl<'a> MpiWindow<'a> {
    /// Collectively allocates a window of `len` bytes, zero-filled, with displacement
    /// unit `disp_unit` (MPI_Win_allocate). `info` is validated for the keys rma knows
    /// and passed to MPI (without `rma_transport`).
    pub fn allocate(
        world: &'a World,
        len: usize,
        disp_unit: usize,
        info: &Info,
    ) -> Result<MpiWindow<'a>> {
        MpiWindow::allocated(world, len, disp_unit, info, false)
    }

    /// MPI_Win_allocate, or MPI_Win_allocate_shared (`shared`) after checking that
    /// every rank is on this node, of `len` bytes zero-filled, finished. Every rank
    /// asks the library for whole 64-byte lines (at least one for a window that is not
    /// shared): MPICH 4.0's shared-memory windows overlap when a rank asks for fewer
    /// than 16 bytes (every rank's fetch_and_op on its own 4-byte window lands in rank
    /// 0's, reproduced in C), and a shared window's parts then lie where
    /// [`rma_core::shared_offset`] says; the window stays `len` bytes for every check.
    fn allocated(
        world: &'a World,
        len: usize,
        disp_unit: usize,
        info: &Info,
        shared: bool,
    ) -> Result<MpiWindow<'a>> {
        let (_, du) = check_shape(len, disp_unit)?;
        let lines = len.checked_add(63).ok_or(Error::CountOverflow {
            count: len,
            what: "window bytes",
        })? & !63;
        let (size, _) = check_shape(if shared { lines } else { lines.max(64) }, disp_unit)?;
        let info = CInfo::new(info)?;
        let (keys, vals) = info.ptrs();
        let (mut base, mut win): (*mut c_void, Handle) = (std::ptr::null_mut(), 0);
        let (mut node, ranks): (c_int, usize) = (0, world.size());
        let (number, rc) = world.create_window(true, |api| {
            if shared {
                // SAFETY: `node` is a valid out-pointer and `comm` is live.
                let rc = unsafe { (api.node_size)(world.comm(), &mut node) };
                if rc != 0 || node as usize != ranks {
                    return rc; // every rank sees the same: no window is made anywhere
                }
            }
            let alloc = if shared {
                api.win_allocate_shared
            } else {
                api.win_allocate
            };
            // SAFETY: the key and value arrays hold `keys.len()` NUL-terminated strings
            // that outlive the call; the out-pointers are valid; `comm` is live.
            unsafe {
                alloc(
                    world.comm(),
                    size,
                    du,
                    keys.len() as c_int,
                    keys.as_ptr(),
                    vals.as_ptr(),
                    &mut base,
                    &mut win,
                )
            }
        })?;
        let call = if shared {
            "MPI_Win_allocate_shared"
        } else {
            "MPI_Win_allocate"
        };
        world.check(rc, Call::new(call))?;
        if shared && node as usize != ranks {
            return Err(Error::NotShareable {
                reason: format!(
                    "a shared window needs every rank on one node, but this rank's node holds \
                     {node} of the world's {ranks} ranks (MPI shares memory by load and store \
                     only within a node); use Window::allocate, whose RMA calls reach every node"
                ),
            });
        }
        let base = base.cast::<u8>();
        if size > 0 {
            // SAFETY: the library returned the `size` bytes asked for at `base` (all of
            // them zeroed: the local copies load whole words of them); no other rank
            // reaches them before the all-gather in `finish`, which every rank enters
            // after zeroing its own.
            unsafe { std::ptr::write_bytes(base, 0, size as usize) };
        }
        let flavor = if shared {
            Flavor::Shared
        } else {
            Flavor::Allocate
        };
        MpiWindow::finish(
            world,
            win,
            (base, len, size as usize),
            disp_unit,
            (flavor, number),
            Held::Nothing,
        )
    }

    /// Collectively allocates a shared window of `len` bytes, zero-filled
    /// (MPI_Win_allocate_shared), contiguous or not (the `alloc_shared_noncontig` key
    /// is set from `contiguous`, whatever `info` says). Every rank asks the library for
    /// `len` rounded up to 64 bytes, so the parts of a contiguous window lie where
    /// [`rma_core::shared_offset`] says, as the library lays them out.
    ///
    /// MPI shares memory only among the ranks of one node: where the world spans
    /// several, every rank gets class RMA_SHARED (after a collective
    /// MPI_Comm_split_type, before any window exists).
    pub fn allocate_shared(
        world: &'a World,
        len: usize,
        disp_unit: usize,
        contiguous: bool,
        info: &Info,
    ) -> Result<MpiWindow<'a>> {
        let mut info = info.clone();
        info.set(
            "alloc_shared_noncontig",
            if contiguous { "false" } else { "true" },
        );
        let mut window = MpiWindow::allocated(world, len, disp_unit, &info, true)?;
        let ranks = world.size();
        // validated when the window was made
        let du = c_int::try_from(disp_unit).unwrap_or(c_int::MAX);
        let mut shared = Vec::with_capacity(ranks);
        for r in 0..ranks {
            let (mut qsize, mut qdu, mut qbase): (i64, c_int, *mut c_void) =
                (0, 0, std::ptr::null_mut());
            // SAFETY: the out-pointers are valid; `win` is this live window.
            let rc = world.mpi(|api| unsafe {
                (api.win_shared_query)(window.win, r as c_int, &mut qsize, &mut qdu, &mut qbase)
            });
            world.check(
                rc,
                Call::new("MPI_Win_shared_query").rank(Rank::new(r as u32)),
            )?;
            let peer = window.peers[r];
            if (qsize as usize) < peer.len || qdu != du {
                // the library's answer disagrees with what the rank announced
                return Err(Error::Internal {
                    reason: format!(
                        "MPI_Win_shared_query for rank {r} gave {qsize} bytes, unit {qdu};                          the rank announced {} bytes",
                        peer.len
                    ),
                });
            }
            if qbase.is_null() && peer.len > 0 {
                return Err(Error::Internal {
                    reason: format!("MPI_Win_shared_query gave no memory for rank {r}"),
                });
            }
            if peer.len > 0 && qbase as usize % 8 != 0 {
                // views and the word atomics need whole aligned words
                return Err(Error::Internal {
                    reason: format!(
                        "MPI_Win_shared_query gave rank {r}'s part at {qbase:p}, not 8-byte aligned"
                    ),
                });
            }
            shared.push(qbase as usize);
        }
        // the documented layout: a contiguous window's nonempty parts where
        // rma_core::shared_offset puts them from the first nonempty one
        if contiguous {
            let lens: Vec<usize> = window.peers.iter().map(|p| p.len).collect();
            let first = lens.iter().position(|&l| l > 0);
            if let Some(f) = first {
                for r in (f..ranks).filter(|&r| lens[r] > 0) {
                    let want = rma_core::shared_offset(&lens, r)
                        .zip(rma_core::shared_offset(&lens, f))
                        .map(|(a, b)| shared[f] + (a - b));
                    if want != Some(shared[r]) {
                        return Err(Error::Internal {
                            reason: format!(
                                "the library laid rank {r}'s part of a contiguous shared window \
                                 at {:#x}, not where the parts' lengths put it ({want:x?}); \
                                 use alloc_shared_noncontig=true",
                                shared[r]
                            ),
                        });
                    }
                }
            }
        }
        window.shared = shared.into_boxed_slice();
        Ok(window)
    }

    /// Collectively creates a dynamic window (MPI_Win_create_dynamic) with an arena of
    /// `capacity` bytes on this rank, 64-byte aligned, from which
    /// `MpiWindow::attach_region` attaches regions; byte offsets count from the
    /// arena's start, and the window's displacements are addresses (the arena's
    /// MPI_Get_address plus the offset), as MPI's dynamic windows take them.
    pub fn create_dynamic(world: &'a World, capacity: usize, info: &Info) -> Result<MpiWindow<'a>> {
        let words = capacity
            .div_ceil(8)
            .checked_add(8)
            .ok_or(Error::CountOverflow {
                count: capacity,
                what: "window bytes",
            })?;
        let mut arena = vec![0u64; words];
        // 64-byte aligned start inside the arena (MPICH mishandles windows at addresses
        // that are not 16-byte aligned: see MpiWindow::create)
        let skip = arena.as_ptr().align_offset(64).min(7);
        // SAFETY: skip <= 7 words of the arena's words + 8, so capacity bytes follow.
        let base = unsafe { arena.as_mut_ptr().add(skip) }.cast::<u8>();
        let mut addr: i64 = 0;
        // SAFETY: `base` points into the live arena; `addr` is a valid out-pointer.
        let rc = world.mpi(|api| unsafe { (api.get_address)(base.cast(), &mut addr) });
        world.check(rc, Call::new("MPI_Get_address"))?;
        let info = CInfo::new(info)?;
        let (keys, vals) = info.ptrs();
        let mut win: Handle = 0;
        let (number, rc) = world.create_window(true, |api| {
            // SAFETY: as for MPI_Win_allocate in `allocate`.
            unsafe {
                (api.win_create_dynamic)(
                    world.comm(),
                    keys.len() as c_int,
                    keys.as_ptr(),
                    vals.as_ptr(),
                    &mut win,
                )
            }
        })?;
        world.check(rc, Call::new("MPI_Win_create_dynamic"))?;
        // the arena's words from `base` on
        let extent = 8 * (arena.len() - skip);
        let held = Held::Arena(arena, addr as usize);
        MpiWindow::finish(
            world,
            win,
            (base, capacity, extent),
            1,
            (Flavor::Dynamic, number),
            held,
        )
    }

    /// Attaches bytes `[offset, offset + len)` of this rank's arena (MPI_Win_attach);
    /// the caller (EpochWindow) keeps regions disjoint and inside the arena.
    pub(crate) fn attach_region(&self, offset: usize, len: usize) -> Result<()> {
        self.arena_range(offset, len)?;
        // SAFETY: the region lies inside the live arena (checked); MPI may reach it
        // until it is detached or the window freed, and the arena outlives both.
        let rc = self.world.mpi(|api| unsafe {
            (api.win_attach)(self.win, self.base.add(offset).cast(), len as i64)
        });
        self.world.check(rc, Call::new("MPI_Win_attach"))
    }

    /// Regions (by offset) to detach when the window is freed, after the free's
    /// agreement and before MPI_Win_free (Open MPI's osc/ucx segfaults freeing a
    /// dynamic window with regions attached, though MPI allows it).
    pub(crate) fn detach_at_free(&mut self, offsets: Vec<usize>) {
        self.regions_left = offsets;
    }

    /// Detaches the region attached at `offset` (MPI_Win_detach).
    pub(crate) fn detach_region(&self, offset: usize) -> Result<()> {
        self.arena_range(offset, 0)?;
        // SAFETY: as in `attach_region`.
        let rc = self
            .world
            .mpi(|api| unsafe { (api.win_detach)(self.win, self.base.add(offset).cast()) });
        self.world.check(rc, Call::new("MPI_Win_detach"))
    }

    fn arena_range(&self, offset: usize, len: usize) -> Result<()> {
        match (&self.arena, offset.checked_add(len)) {
            (Some(_), Some(end)) if end <= self.len => Ok(()),
            (None, _) => Err(Error::Flavor {
                reason: "attach and detach need a dynamic window".into(),
            }),
            _ => Err(Error::Attach {
                reason: format!(
                    "bytes [{offset}, {}) lie outside this rank's {} bytes of the dynamic window",
                    offset as u128 + len as u128,
                    self.len
                ),
            }),
        }
    }

    /// `rank`'s part of this shared window in this process: its first byte, or `None`
    /// for another flavor or a rank outside the window. It holds
    /// [`MpiWindow::len_of`]`(rank)` bytes (within the 64-byte multiple the rank
    /// asked the library for).
    pub fn shared_ptr(&self, rank: usize) -> Option<*mut u8> {
        self.shared.get(rank).map(|&p| p as *mut u8)
    }

    /// Collectively creates a window over `buf` (MPI_Win_create) with displacement unit
    /// `disp_unit`. The window owns the buffer until it is freed; [`MpiWindow::free`]
    /// gives it back. Accumulates on elements of `n` bytes expect them aligned to `n`
    /// in memory; a `Vec<u8>` from the system allocator is 16-byte aligned on Linux.
    pub fn create(
        world: &'a World,
        mut buf: Vec<u8>,
        disp_unit: usize,
        info: &Info,
    ) -> Result<MpiWindow<'a>> {
        // the local copies load whole words of the allocation (`extent` is the
        // capacity), so no byte of it may be left uninitialized
        buf.spare_capacity_mut().fill(std::mem::MaybeUninit::new(0));
        let (base, len) = (buf.as_mut_ptr(), buf.len());
        // SAFETY: the buffer moves into the window (`owned`) with the handle, before
        // anything can fail; the window frees it only after MPI_Win_free succeeded and
        // leaks it otherwise, and a leaked window leaks it too. Moving a Vec does not
        // move its heap memory.
        unsafe { MpiWindow::create_inner(world, base, len, disp_unit, info, Some(buf)) }
    }

    /// Collectively creates a window over `len` bytes at `base` (MPI_Win_create).
    ///
    /// # Safety
    /// `base` must be valid for reads and writes of `len` bytes from now until the
    /// window is freed or dropped, and the memory must not be accessed other than
    /// through the window meanwhile. The window must not be leaked (`mem::forget`):
    /// other ranks may write the memory until MPI_Win_free returns.
    pub unsafe fn create_raw(
        world: &'a World,
        base: *mut u8,
        len: usize,
        disp_unit: usize,
        info: &Info,
    ) -> Result<MpiWindow<'a>> {
        // SAFETY: the caller's contract is this function's.
        unsafe { MpiWindow::create_inner(world, base, len, disp_unit, info, None) }
    }

    /// # Safety
    /// As [`MpiWindow::create_raw`]; `owned`, if any, is the allocation `base` points
    /// into.
    unsafe fn create_inner(
        world: &'a World,
        base: *mut u8,
        len: usize,
        disp_unit: usize,
        info: &Info,
        owned: Option<Vec<u8>>,
    ) -> Result<MpiWindow<'a>> {
        let (size, du) = check_shape(len, disp_unit)?;
        // an empty Vec's dangling 0x1 is Open MPI's MPI_IN_PLACE: pass null instead
        let base = if len == 0 { std::ptr::null_mut() } else { base };
        let info = CInfo::new(info)?;
        let (keys, vals) = info.ptrs();
        let mut win: Handle = 0;
        let (number, rc) = world.create_window(true, |api| {
            // SAFETY: `base` holds `len` bytes (caller's contract); the info arrays hold
            // `keys.len()` NUL-terminated strings that outlive the call; `comm` is live.
            unsafe {
                (api.win_create)(
                    world.comm(),
                    base.cast(),
                    size,
                    du,
                    keys.len() as c_int,
                    keys.as_ptr(),
                    vals.as_ptr(),
                    &mut win,
                )
            }
        })?;
        world.check(rc, Call::new("MPI_Win_create"))?;
        // the allocation: a buffer's capacity, or the caller's `len` bytes
        let extent = owned.as_ref().map_or(len, Vec::capacity);
        MpiWindow::finish(
            world,
            win,
            (base, len, extent),
            disp_unit,
            (Flavor::Create, number),
            owned.map_or(Held::Nothing, Held::Buffer),
        )
    }

    fn finish(
        world: &'a World,
        win: Handle,
        (base, len, extent): (*mut u8, usize, usize),
        disp_unit: usize,
        (flavor, number): (Flavor, u32),
        held: Held,
    ) -> Result<MpiWindow<'a>> {
        let (owned, arena, arena_addr) = match held {
            Held::Nothing => (None, None, 0),
            Held::Buffer(b) => (Some(b), None, 0),
            Held::Arena(a, addr) => (None, Some(a), addr),
        };
        let mut window = MpiWindow {
            world,
            win,
            base,
            len,
            extent: extent.max(len),
            disp_unit,
            flavor,
            peers: Box::new([]),
            shared: Box::new([]),
            arena,
            arena_addr,
            regions_left: Vec::new(),
            epochs: Epochs::new(world.size()),
            pending: Pending::new(world),
            owned,
            freed: false,
            number,
            _borrow: PhantomData,
        };
        window.peers = window.gather_peers()?;
        Ok(window)
    }

    fn gather_peers(&self) -> Result<Box<[Peer]>> {
        let mut mine = [0u8; 24];
        mine[..8].copy_from_slice(&(self.len as u64).to_le_bytes());
        mine[8..16].copy_from_slice(&(self.disp_unit as u64).to_le_bytes());
        mine[16..].copy_from_slice(&(self.arena_addr as u64).to_le_bytes());
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize;
        self.world
            .allgather(&mine)?
            .iter()
            .map(|b| match b.len() {
                24 => Ok(Peer {
                    len: word(&b[..8]),
                    disp_unit: word(&b[8..16]),
                    base: word(&b[16..]),
                }),
                n => Err(Error::Internal {
                    reason: format!("a peer's window description has {n} bytes, not 24"),
                }),
            })
            .collect()
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.world.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.world.size()
    }

    /// The world the window belongs to.
    pub fn world(&self) -> &'a World {
        self.world
    }

    /// How the memory was obtained.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The local window's size in bytes.
    pub fn local_len(&self) -> usize {
        self.len
    }

    /// The local window's displacement unit.
    pub fn disp_unit(&self) -> usize {
        self.disp_unit
    }

    /// The local window's base address. Other ranks may write this memory at any
    /// time an epoch allows; read and write it through [`MpiWindow::read_local`] and
    /// [`MpiWindow::write_local`]. Accesses of your own through this pointer must
    /// follow MPI's rules and, while another thread may use the window, be atomic
    /// word accesses like rma's (`rma_ops::shared`): a plain copy racing another
    /// thread's `read_local` or `write_local` is a data race.
    pub fn local_ptr(&self) -> *mut u8 {
        self.base
    }

    pub(crate) fn peer(&self, rank: Rank) -> Result<Peer> {
        let i = self.world.c_rank(rank)? as usize;
        Ok(self.peers[i])
    }

    /// The size in bytes of `rank`'s window.
    pub fn len_of(&self, rank: Rank) -> Result<usize> {
        Ok(self.peer(rank)?.len)
    }

    /// The displacement unit of `rank`'s window.
    pub fn disp_unit_of(&self, rank: Rank) -> Result<usize> {
        Ok(self.peer(rank)?.disp_unit)
    }

    fn local_range(&self, offset: usize, n: usize) -> Result<()> {
        match offset.checked_add(n) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::OutOfWindow {
                rank: Rank::new(self.rank() as u32),
                start: offset as i128,
                end: offset as i128 + n as i128,
                window_len: self.len,
            }),
        }
    }

    /// Copies `out.len()` bytes of the local window from byte `offset`. Bytes another
    /// rank writes concurrently (an erroneous conflict in MPI) read as unspecified
    /// values. Safe beside any other thread's calls: every access to the window's
    /// memory from Rust is word-atomic (see [`MpiWindow::write_local`]).
    pub fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.local_range(offset, out.len())?;
        if out.is_empty() {
            return Ok(()); // `base` may be null for an empty window
        }
        // SAFETY: `offset + out.len() <= len <= extent` (checked), so the source lies in
        // the allocation `[base, base + extent)`, which lives as long as `self`; `out`
        // is a distinct local slice. Every access to that memory from Rust goes through
        // `copy_in_within` / `copy_out_within` with these bounds (here and in
        // `write_local`; no reference to it is ever made), so two threads' copies are
        // atomic accesses of one size per byte and never a data race; the library's
        // own writes (a put applied in this process by a progress thread) are foreign
        // code's, which may race only as MPI calls erroneous, making bytes
        // unspecified, never the access out of bounds.
        unsafe {
            rma_ops::shared::copy_out_within(
                self.base.add(offset),
                out,
                self.base,
                self.base.add(self.extent),
            )
        };
        Ok(())
    }

    /// Copies `data` into the local window at byte `offset`. Use it where MPI allows
    /// local stores (outside exposure epochs, or with the window synchronized).
    ///
    /// `MpiWindow` is `Sync`, so two threads may copy at once: each 8-byte word of the
    /// window is stored with one atomic access (the bytes at the edges of the range
    /// are spliced into their word with a compare-and-swap), so a concurrent
    /// [`MpiWindow::read_local`] sees every whole word either before or after, never
    /// torn, and never a data race in Rust's sense.
    pub fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.local_range(offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: as in `read_local`, writing instead of reading.
        unsafe {
            rma_ops::shared::copy_in_within(
                self.base.add(offset),
                data,
                self.base,
                self.base.add(self.extent),
            )
        };
        Ok(())
    }

    /// The byte offset of `disp` in `rank`'s window.
    pub(crate) fn byte_of(&self, rank: Rank, disp: Disp) -> Result<usize> {
        let du = self.peer(rank)?.disp_unit;
        let disp_u = u64::try_from(disp).map_err(|_| Error::NegativeDisp { disp })?;
        disp_u
            .checked_mul(du as u64)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or(Error::DispOverflow {
                disp,
                disp_unit: du,
            })
    }

    pub(crate) fn spot<'l>(&self, t: Target<'l>) -> Result<Spot<'l>> {
        Ok(Spot {
            rank: t.rank,
            byte: self.byte_of(t.rank, t.disp)?,
            layout: t.layout,
        })
    }

    /// The epoch index of `rank`, checked against the group.
    pub(crate) fn index(&self, rank: Rank) -> Result<usize> {
        Ok(self.world.c_rank(rank)? as usize)
    }

    pub(crate) fn mode(&self, rank: Rank, call: &'static str) -> Result<Mode> {
        self.epochs.mode(self.index(rank)?, call)
    }

    pub(crate) fn need_passive(&self, rank: Rank, call: &'static str) -> Result<()> {
        self.epochs.need_passive(self.index(rank)?, call)
    }

    pub(crate) fn placement(
        &self,
        spot: Spot<'_>,
        bytes: usize,
        basic: BasicType,
    ) -> Result<Placement<'a>> {
        let peer = self.peer(spot.rank)?;
        let region = Region {
            rank: spot.rank,
            byte: spot.byte,
            layout: spot.layout,
            window_len: peer.len,
            disp_unit: peer.disp_unit,
            base: peer.base,
        };
        place(self.world, region, bytes, basic)
    }

    /// Issues a call whose origin is a copy of `data` (`issue` gets the copy's
    /// address) and keeps the copy until a synchronization completes the call. In a
    /// passive-target epoch the target is marked for the next flush, and when the
    /// window holds too many copies they are all completed locally here.
    pub(crate) fn issue_copied(
        &self,
        rank: c_int,
        data: &[u8],
        mode: Mode,
        call: Call,
        issue: impl FnOnce(&Api, *const u8) -> c_int,
    ) -> Result<()> {
        let mark = self.pending.mark(rank);
        let keep = |c: &mut Copies| c.keep(rank, data);
        self.issue_copied_lazy(mark, keep, mode, || call, issue)
    }

    /// [`MpiWindow::issue_copied`] with the error context built only if the call fails,
    /// the target's dirty mark given (a target handle keeps it), and the copy made by
    /// `keep` ([`Copies::keep`] or [`Copies::keep_bits`] for the call's target).
    /// `issue` runs in the world's turn with the copy kept in the same turn; it must
    /// make its MPI call through the `Api` it is given.
    #[inline(always)]
    pub(crate) fn issue_copied_lazy(
        &self,
        mark: Mark<'_>,
        keep: impl FnOnce(&mut Copies) -> (*const u8, bool),
        mode: Mode,
        call: impl FnOnce() -> Call,
        issue: impl FnOnce(&Api, *const u8) -> c_int,
    ) -> Result<()> {
        let mut full = false;
        let rc = self.world.mpi_turned(
            self.pending.turned(),
            #[inline(always)]
            |api, copies| {
                let (origin, f) = keep(copies);
                full = f;
                issue(api, origin)
            },
        );
        if rc != 0 {
            return self.issue_failed(rc, call);
        }
        if mode == Mode::Passive {
            mark.set();
            if full {
                return self.flush_every_now(true);
            }
        }
        Ok(())
    }

    /// The error of a call [`MpiWindow::issue_copied_lazy`] issued (MPI returned `rc`).
    #[cold]
    #[inline(never)]
    fn issue_failed(&self, rc: c_int, call: impl FnOnce() -> Call) -> Result<()> {
        self.world.check(rc, call())
    }

    /// `Ok` unless calls issued after a fence still wait for the fence that completes
    /// them: another kind of epoch may not start over them (and their origin copies
    /// must stay alive until that fence).
    pub(crate) fn check_fence_drained(&mut self, call: &'static str) -> Result<()> {
        if self.epochs.fence_open() && self.pending.has_copies() {
            return Err(Error::sync(
                call,
                "calls issued since the last fence are completed only by the next fence; fence first",
            ));
        }
        Ok(())
    }

    pub(crate) fn handle(&self) -> Handle {
        self.win
    }

    /// Collectively frees the window (MPI_Win_free), first closing the epochs this rank
    /// still holds (unlock, unlock_all, complete, wait). Returns the buffer of a window
    /// made by [`MpiWindow::create`]; `None` otherwise.
    pub fn free(mut self) -> Result<Option<Vec<u8>>> {
        self.release(false)
    }

    /// [`MpiWindow::free`] for a wrapper's own `Drop`: the same collective, but a
    /// mismatch names it as a window dropped without being freed (an early return),
    /// as a drop of this window would. The error says whether MPI freed it.
    pub fn free_on_drop(mut self) -> Result<Option<Vec<u8>>> {
        self.release(true)
    }

    /// The window's number in its world, counting from 0 in creation order (the same
    /// on every rank); error messages about collectives name windows by it.
    pub fn number(&self) -> u32 {
        self.number
    }

    fn close_epochs(&mut self) -> Result<()> {
        let (ranks, all) = self.epochs.held();
        for r in ranks {
            self.unlock(Rank::new(r as u32))?;
        }
        if all {
            self.unlock_all()?;
        }
        let (access, exposure) = self.epochs.pscw();
        if access {
            self.complete()?;
        }
        if exposure {
            self.wait()?;
        }
        Ok(())
    }

    fn release(&mut self, dropped: bool) -> Result<Option<Vec<u8>>> {
        if std::mem::replace(&mut self.freed, true) {
            return Ok(None);
        }
        let closed = self.close_epochs();
        let rc = {
            let _one = self.world.collective();
            let entry = Entry::Free {
                win: self.number,
                dropped,
            };
            if let Err(e) = self.world.agree(entry) {
                // the ranks are not all freeing it: never free it, keep its memory
                std::mem::forget(self.owned.take());
                std::mem::forget(self.arena.take());
                self.pending.leak();
                return Err(e);
            }
            for offset in std::mem::take(&mut self.regions_left) {
                let _ = self.detach_region(offset);
            }
            // SAFETY: the window is live and freed once (guarded by `freed`); no
            // request borrows it (`&mut self`).
            self.world.mpi(|api| unsafe { (api.win_free)(self.win) })
        };
        if rc != 0 {
            // MPI may still reach the memory: keep it (and the origin copies) forever
            std::mem::forget(self.owned.take());
            std::mem::forget(self.arena.take());
            self.pending.leak();
            self.world.check(rc, Call::new("MPI_Win_free"))?;
        }
        self.pending.closed(None);
        closed?;
        Ok(self.owned.take())
    }
}

impl Drop for MpiWindow<'_> {
    /// Frees the window like [`MpiWindow::free`], ignoring errors. Collective: every
    /// rank must drop (or free) its window. A rank that drops it while the others
    /// entered another collective (it returned early, say through `?`) does not wait
    /// for them: the agreement before the free fails on every rank, the window is
    /// leaked, and the job ends when the process exits ([`World::barrier`]).
    ///
    /// While the thread panics the window is leaked instead (MPI_Win_free would wait
    /// for ranks that may never free theirs); the [`World`] then aborts the job.
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.freed = true;
            std::mem::forget(self.owned.take());
            std::mem::forget(self.arena.take());
            self.pending.leak();
            return;
        }
        let _ = self.release(true);
    }
}
