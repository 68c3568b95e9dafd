//! The creation of an [`MpiWindow`] in each of MPI's four flavors — allocated
//! (MPI_Win_allocate), shared (MPI_Win_allocate_shared), dynamic
//! (MPI_Win_create_dynamic, with the regions attached to its arena) and created over
//! the caller's memory (MPI_Win_create) — and what every creation ends with: the
//! window's description gathered from every rank.

use super::{Flavor, MpiWindow, Peer};
use crate::epoch::MpiEpochs;
use crate::pending::Pending;
use crate::world::MpiWorld;
use rma_core::{Error, Info, Rank, Result, WinInfo};
use rma_mpi_sys::{Call, Handle};
use std::ffi::{c_char, c_int, c_void, CString};
use std::marker::PhantomData;

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
    #[doc(alias = "MPI_Win_allocate")]
    pub fn allocate(
        world: &'a MpiWorld,
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
        world: &'a MpiWorld,
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
    #[doc(alias = "MPI_Win_allocate_shared")]
    pub fn allocate_shared(
        world: &'a MpiWorld,
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
    #[doc(alias = "MPI_Win_create_dynamic")]
    pub fn create_dynamic(
        world: &'a MpiWorld,
        capacity: usize,
        info: &Info,
    ) -> Result<MpiWindow<'a>> {
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

    /// Collectively creates a window over `buf` (MPI_Win_create) with displacement unit
    /// `disp_unit`. The window owns the buffer until it is freed; [`MpiWindow::free`]
    /// gives it back. Accumulates on elements of `n` bytes expect them aligned to `n`
    /// in memory; a `Vec<u8>` from the system allocator is 16-byte aligned on Linux.
    #[doc(alias = "MPI_Win_create")]
    pub fn create(
        world: &'a MpiWorld,
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
    #[doc(alias = "MPI_Win_create")]
    pub unsafe fn create_raw(
        world: &'a MpiWorld,
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
        world: &'a MpiWorld,
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
        world: &'a MpiWorld,
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
            epochs: MpiEpochs::new(world.size()),
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
}
