//! [`MpiWindow`]: an MPI window (MPI_Win_allocate or MPI_Win_create), its local memory
//! and the RMA calls on it.

use crate::datatype::{place, Placement, Region};
use crate::epoch::{Epochs, Mode};
use crate::error::Call;
use crate::ffi::Handle;
use crate::request::Request;
use crate::world::World;
use rma_core::{BasicType, Disp, Error, Info, Layout, Op, Rank, Result, RmaCall, WinInfo};
use std::ffi::{c_char, c_int, c_void, CString};
use std::marker::PhantomData;
use std::sync::{Mutex, PoisonError};

/// How a window's memory was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// MPI allocated it (MPI_Win_allocate).
    Allocate,
    /// The caller provided it (MPI_Win_create).
    Create,
}

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
struct Peer {
    len: usize,
    disp_unit: usize,
}

/// An MPI window over this world: memory each rank exposes, with MPI's RMA calls and
/// synchronization.
///
/// Created and freed collectively by every rank. Data calls take `&self` and may come
/// from any thread (MPI_THREAD_MULTIPLE, or serialized by the [`World`]); the calls
/// that open or close epochs take `&mut self`, so no data call runs while an epoch
/// changes, and a [`Request`] borrows the window until it completes.
///
/// Every call checks what MPI would leave undefined — ranks, the target range against
/// the target's window size, element sizes, op x type validity, the epoch — before
/// the library sees it; such an error has changed nothing. Errors the library raises
/// keep its MPI error class.
///
/// Completion: in a passive-target epoch every call completes locally before it
/// returns (request-based form plus MPI_Wait, or MPI_Win_flush_local). In an
/// active-target epoch (fence, start) put and accumulate copy their origin data, which
/// the window keeps until the closing synchronization; fetching calls there are
/// refused (class RMA_SYNC), since MPI delivers their results only at the closing
/// call.
pub struct MpiWindow<'a> {
    world: &'a World,
    win: Handle,
    base: *mut u8,
    len: usize,
    disp_unit: usize,
    flavor: Flavor,
    peers: Box<[Peer]>,
    pub(crate) epochs: Epochs,
    /// Origin copies of put/accumulate issued in active-target epochs, read by MPI until
    /// the closing synchronization.
    staged: Mutex<Vec<Vec<u8>>>,
    /// The buffer a window created by [`MpiWindow::create`] exposes.
    owned: Option<Vec<u8>>,
    freed: bool,
    _borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: `base` points to the window's memory, which MPI (allocate) or this window
// (create) owns for the window's life and which is only reached through MPI calls and
// the bounds-checked copies of read_local/write_local; every MPI call may come from
// any thread, because the World required MPI_THREAD_MULTIPLE or serializes calls
// itself; the epoch state changes only under `&mut self`; `staged` is a Mutex.
unsafe impl Send for MpiWindow<'_> {}
// SAFETY: as for Send: shared access only issues MPI calls (thread-safe, see above),
// reads the epoch state (not written while shared) and locks `staged`.
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

/// Info entries as C strings for MPI, after rma's own validation of the keys it knows.
struct CInfo {
    keys: Vec<CString>,
    vals: Vec<CString>,
}

impl CInfo {
    fn new(info: &Info) -> Result<CInfo> {
        WinInfo::from_info(info)?;
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
        let (size, du) = check_shape(len, disp_unit)?;
        let info = CInfo::new(info)?;
        let (keys, vals) = info.ptrs();
        let (mut base, mut win): (*mut c_void, Handle) = (std::ptr::null_mut(), 0);
        let rc = {
            let _one = world.collective();
            // SAFETY: the key and value arrays hold `keys.len()` NUL-terminated strings
            // that outlive the call; the out-pointers are valid; `comm` is live.
            world.mpi(|api| unsafe {
                (api.win_allocate)(
                    world.comm(),
                    size,
                    du,
                    keys.len() as c_int,
                    keys.as_ptr(),
                    vals.as_ptr(),
                    &mut base,
                    &mut win,
                )
            })
        };
        world.check(rc, Call::new("MPI_Win_allocate"))?;
        let base = base.cast::<u8>();
        if len > 0 {
            // SAFETY: MPI_Win_allocate returned `len` bytes at `base`; no other rank
            // reaches them before the all-gather in `finish`, which every rank enters
            // after zeroing its own.
            unsafe { std::ptr::write_bytes(base, 0, len) };
        }
        MpiWindow::finish(world, win, base, len, disp_unit, Flavor::Allocate, None)
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
        let info = CInfo::new(info)?;
        let (keys, vals) = info.ptrs();
        let mut win: Handle = 0;
        let rc = {
            let _one = world.collective();
            // SAFETY: `base` holds `len` bytes (caller's contract); the info arrays hold
            // `keys.len()` NUL-terminated strings that outlive the call; `comm` is live.
            world.mpi(|api| unsafe {
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
            })
        };
        world.check(rc, Call::new("MPI_Win_create"))?;
        MpiWindow::finish(world, win, base, len, disp_unit, Flavor::Create, owned)
    }

    fn finish(
        world: &'a World,
        win: Handle,
        base: *mut u8,
        len: usize,
        disp_unit: usize,
        flavor: Flavor,
        owned: Option<Vec<u8>>,
    ) -> Result<MpiWindow<'a>> {
        let mut window = MpiWindow {
            world,
            win,
            base,
            len,
            disp_unit,
            flavor,
            peers: Box::new([]),
            epochs: Epochs::new(world.size()),
            staged: Mutex::new(Vec::new()),
            owned,
            freed: false,
            _borrow: PhantomData,
        };
        window.peers = window.gather_peers()?;
        Ok(window)
    }

    fn gather_peers(&self) -> Result<Box<[Peer]>> {
        let mut mine = [0u8; 16];
        mine[..8].copy_from_slice(&(self.len as u64).to_le_bytes());
        mine[8..].copy_from_slice(&(self.disp_unit as u64).to_le_bytes());
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize;
        self.world
            .allgather(&mine)?
            .iter()
            .map(|b| match b.len() {
                16 => Ok(Peer {
                    len: word(&b[..8]),
                    disp_unit: word(&b[8..]),
                }),
                n => Err(Error::Internal {
                    reason: format!("a peer's window description has {n} bytes, not 16"),
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
    /// [`MpiWindow::write_local`], or with raw-pointer copies under MPI's rules.
    pub fn local_ptr(&self) -> *mut u8 {
        self.base
    }

    fn peer(&self, rank: Rank) -> Result<Peer> {
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
    /// values.
    pub fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.local_range(offset, out.len())?;
        // SAFETY: `offset + out.len() <= len` (checked), so the source lies in the
        // window's memory, which lives as long as `self`; `out` is a distinct local
        // slice. Concurrent remote writes make the bytes unspecified, never the access
        // out of bounds.
        unsafe {
            std::ptr::copy_nonoverlapping(self.base.add(offset), out.as_mut_ptr(), out.len())
        };
        Ok(())
    }

    /// Copies `data` into the local window at byte `offset`. Use it where MPI allows
    /// local stores (outside exposure epochs, or with the window synchronized).
    pub fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.local_range(offset, data.len())?;
        // SAFETY: as in `read_local`, writing instead of reading; the window memory is
        // never behind a Rust reference, so no reference is invalidated.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.base.add(offset), data.len()) };
        Ok(())
    }

    /// The byte offset of `disp` in `rank`'s window.
    fn byte_of(&self, rank: Rank, disp: Disp) -> Result<usize> {
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

    fn spot<'l>(&self, t: Target<'l>) -> Result<Spot<'l>> {
        Ok(Spot {
            rank: t.rank,
            byte: self.byte_of(t.rank, t.disp)?,
            layout: t.layout,
        })
    }

    /// The epoch index of `rank`, checked against the group.
    fn index(&self, rank: Rank) -> Result<usize> {
        Ok(self.world.c_rank(rank)? as usize)
    }

    pub(crate) fn mode(&self, rank: Rank, call: &'static str) -> Result<Mode> {
        self.epochs.mode(self.index(rank)?, call)
    }

    pub(crate) fn need_passive(&self, rank: Rank, call: &'static str) -> Result<()> {
        self.epochs.need_passive(self.index(rank)?, call)
    }

    fn placement(&self, spot: Spot<'_>, bytes: usize, basic: BasicType) -> Result<Placement<'a>> {
        let peer = self.peer(spot.rank)?;
        let region = Region {
            rank: spot.rank,
            byte: spot.byte,
            layout: spot.layout,
            window_len: peer.len,
            disp_unit: peer.disp_unit,
        };
        place(self.world, region, bytes, basic)
    }

    /// Keeps an origin copy alive until the epoch's closing synchronization.
    fn stage(&self, copy: Vec<u8>) {
        self.staged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(copy);
    }

    /// Drops origin copies: the closing synchronization completed their calls.
    pub(crate) fn release_staged(&mut self) {
        self.staged
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    pub(crate) fn handle(&self) -> Handle {
        self.win
    }

    /// Waits for a request of a call whose buffers the caller keeps alive until then.
    fn wait_request(&self, mut req: Handle, call: Call) -> Result<()> {
        // SAFETY: `req` is an active request of this process; MPI_Wait frees it.
        let rc = self.world.mpi(|api| unsafe { (api.wait)(&mut req) });
        self.world.check(rc, call)
    }

    // ---- data calls, byte level (both API levels end here) ----

    /// put of `data` at `spot`.
    pub(crate) fn put_at(&self, spot: Spot<'_>, data: &[u8], mode: Mode) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let p = self.placement(spot, data.len(), BasicType::Byte)?;
        let (ty, n) = (
            self.world.basic_handle(BasicType::Byte)?,
            c_len(data.len())?,
        );
        let call = Call::new("MPI_Put").rank(spot.rank);
        match mode {
            Mode::Passive => {
                let mut req: Handle = 0;
                // SAFETY: `data` holds `n` bytes and stays borrowed until the request
                // completes below; the placement's type and window are live.
                let rc = self.world.mpi(|api| unsafe {
                    (api.rput)(
                        data.as_ptr().cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        self.win,
                        &mut req,
                    )
                });
                self.world.check(
                    rc,
                    Call {
                        name: "MPI_Rput",
                        ..call
                    },
                )?;
                self.wait_request(req, call)
            }
            Mode::Active => {
                let copy = data.to_vec();
                // SAFETY: `copy` holds `n` bytes and is staged below, alive until the
                // closing synchronization completes the put.
                let rc = self.world.mpi(|api| unsafe {
                    (api.put)(
                        copy.as_ptr().cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        self.win,
                    )
                });
                self.world.check(rc, call)?;
                self.stage(copy);
                Ok(())
            }
        }
    }

    /// get of `spot` into `out`; passive epochs only.
    pub(crate) fn get_at(&self, spot: Spot<'_>, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let p = self.placement(spot, out.len(), BasicType::Byte)?;
        let (ty, n) = (self.world.basic_handle(BasicType::Byte)?, c_len(out.len())?);
        let mut req: Handle = 0;
        // SAFETY: `out` holds `n` bytes and stays borrowed until the request completes
        // below; the placement's type and the window are live.
        let rc = self.world.mpi(|api| unsafe {
            (api.rget)(
                out.as_mut_ptr().cast(),
                n,
                ty,
                p.rank,
                p.disp,
                p.count,
                p.ty,
                self.win,
                &mut req,
            )
        });
        let call = Call::new("MPI_Rget").rank(spot.rank);
        self.world.check(rc, call)?;
        self.wait_request(req, call)
    }

    /// accumulate of `data` into `spot`.
    pub(crate) fn accumulate_at(
        &self,
        spot: Spot<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        mode: Mode,
    ) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        if self.split(basic, data.len()) {
            return self.each_element(spot, data.len(), basic, |one, r| {
                self.accumulate_at(one, basic, op, &data[r], mode)
            });
        }
        let p = self.placement(spot, data.len(), basic)?;
        let (ty, n) = (
            self.world.basic_handle(basic)?,
            c_len(data.len() / basic.size())?,
        );
        let call = Call::new("MPI_Accumulate")
            .rank(spot.rank)
            .typed(basic, Some(op));
        match mode {
            Mode::Passive => {
                let mut req: Handle = 0;
                // SAFETY: `data` holds `n` elements and stays borrowed until the request
                // completes below.
                let rc = self.world.mpi(|api| unsafe {
                    (api.raccumulate)(
                        data.as_ptr().cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        op as c_int,
                        self.win,
                        &mut req,
                    )
                });
                self.world.check(
                    rc,
                    Call {
                        name: "MPI_Raccumulate",
                        ..call
                    },
                )?;
                self.wait_request(req, call)
            }
            Mode::Active => {
                let copy = data.to_vec();
                // SAFETY: `copy` holds `n` elements and is staged below, alive until the
                // closing synchronization completes the call.
                let rc = self.world.mpi(|api| unsafe {
                    (api.accumulate)(
                        copy.as_ptr().cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        op as c_int,
                        self.win,
                    )
                });
                self.world.check(rc, call)?;
                self.stage(copy);
                Ok(())
            }
        }
    }

    /// get_accumulate at `spot`; passive epochs only. `data` is empty or as long as
    /// `out` (empty only for NO_OP).
    pub(crate) fn get_accumulate_at(
        &self,
        spot: Spot<'_>,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        let zeros;
        let data = if data.is_empty() {
            zeros = vec![0u8; out.len()];
            &zeros[..]
        } else {
            data
        };
        if self.split(basic, out.len()) {
            return self.each_element(spot, out.len(), basic, |one, r| {
                self.get_accumulate_at(one, basic, op, &data[r.clone()], &mut out[r])
            });
        }
        let p = self.placement(spot, out.len(), basic)?;
        let (ty, n) = (
            self.world.basic_handle(basic)?,
            c_len(out.len() / basic.size())?,
        );
        let mut req: Handle = 0;
        // SAFETY: `data` and `out` hold `n` elements each and stay borrowed until the
        // request completes below.
        let rc = self.world.mpi(|api| unsafe {
            (api.rget_accumulate)(
                data.as_ptr().cast(),
                n,
                ty,
                out.as_mut_ptr().cast(),
                n,
                ty,
                p.rank,
                p.disp,
                p.count,
                p.ty,
                op as c_int,
                self.win,
                &mut req,
            )
        });
        let call = Call::new("MPI_Rget_accumulate")
            .rank(spot.rank)
            .typed(basic, Some(op));
        self.world.check(rc, call)?;
        self.wait_request(req, call)
    }

    /// The displacement of the element at `byte` of `rank`'s window, checked to lie
    /// inside it and at a multiple of its disp_unit.
    fn element_disp(&self, rank: Rank, byte: usize, basic: BasicType) -> Result<i64> {
        let peer = self.peer(rank)?;
        let end = byte as i128 + basic.size() as i128;
        if end > peer.len as i128 {
            return Err(Error::OutOfWindow {
                rank,
                start: byte as i128,
                end,
                window_len: peer.len,
            });
        }
        if byte % peer.disp_unit != 0 {
            return Err(Error::Flavor {
                reason: format!(
                    "byte {byte} of {rank}'s window is not a multiple of its disp_unit {}; \
                     MPI reaches single elements only at whole displacements (create windows \
                     for rma-win with disp_unit 1)",
                    peer.disp_unit
                ),
            });
        }
        Ok((byte / peer.disp_unit) as i64)
    }

    /// Whether a call on `bytes` bytes of `basic` goes one element per MPI call.
    fn split(&self, basic: BasicType, bytes: usize) -> bool {
        self.world.guards().split(basic, bytes)
    }

    /// The byte offsets of the elements of `spot` in `rank`'s window, in type-map
    /// order, after checking the whole region as one call would.
    fn element_offsets(
        &self,
        spot: Spot<'_>,
        bytes: usize,
        basic: BasicType,
    ) -> Result<Vec<usize>> {
        drop(self.placement(spot, bytes, basic)?);
        let e = basic.size();
        let mut out = Vec::with_capacity(bytes / e);
        let mut run = |offset: isize, len: usize| {
            // in range: the placement above checked every run against the window
            let first = (spot.byte as isize + offset) as usize;
            out.extend((0..len / e).map(|k| first + k * e));
        };
        match spot.layout {
            None => run(0, bytes),
            Some(l) => l.for_each_run(&mut |r| run(r.offset, r.len)),
        }
        Ok(out)
    }

    /// Calls `f(element spot, index)` for each element of `spot`.
    fn each_element(
        &self,
        spot: Spot<'_>,
        bytes: usize,
        basic: BasicType,
        mut f: impl FnMut(Spot<'_>, std::ops::Range<usize>) -> Result<()>,
    ) -> Result<()> {
        let e = basic.size();
        for (i, byte) in self
            .element_offsets(spot, bytes, basic)?
            .into_iter()
            .enumerate()
        {
            let one = Spot {
                rank: spot.rank,
                byte,
                layout: None,
            };
            f(one, i * e..(i + 1) * e)?;
        }
        Ok(())
    }

    fn flush_local_of(&self, rank: c_int, call: Call) -> Result<()> {
        // SAFETY: the window is live; a passive epoch covers `rank` (checked by callers).
        let rc = self
            .world
            .mpi(|api| unsafe { (api.win_flush_local)(rank, self.win) });
        self.world.check(
            rc,
            Call {
                name: "MPI_Win_flush_local",
                ..call
            },
        )
    }

    /// fetch_and_op on the element at `byte`; passive epochs only.
    pub(crate) fn fetch_and_op_at(
        &self,
        rank: Rank,
        byte: usize,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        let disp = self.element_disp(rank, byte, basic)?;
        if self.world.guards().fetch_and_op_as_get_accumulate(basic) {
            let one = Spot {
                rank,
                byte,
                layout: None,
            };
            return self.get_accumulate_at(one, basic, op, origin, out);
        }
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        let (ty, r) = (self.world.basic_handle(basic)?, self.world.c_rank(rank)?);
        let zero = [0u8; 16];
        let origin = if origin.is_empty() {
            &zero[..basic.size()]
        } else {
            origin
        };
        let call = Call::new("MPI_Fetch_and_op")
            .rank(rank)
            .typed(basic, Some(op));
        // SAFETY: `origin` and `out` hold one element each (checked by callers) and stay
        // borrowed until flush_local completes the call below.
        let rc = self.world.mpi(|api| unsafe {
            (api.fetch_and_op)(
                origin.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                ty,
                r,
                disp,
                op as c_int,
                self.win,
            )
        });
        self.world.check(rc, call)?;
        self.flush_local_of(r, call)
    }

    /// compare_and_swap on the element at `byte`; passive epochs only.
    pub(crate) fn compare_and_swap_at(
        &self,
        rank: Rank,
        byte: usize,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.world.guards().check_cas(basic)?;
        let disp = self.element_disp(rank, byte, basic)?;
        let (ty, r) = (self.world.basic_handle(basic)?, self.world.c_rank(rank)?);
        let call = Call::new("MPI_Compare_and_swap")
            .rank(rank)
            .typed(basic, None);
        // SAFETY: `origin`, `compare` and `out` hold one element each (checked by
        // callers) and stay borrowed until flush_local completes the call below.
        let rc = self.world.mpi(|api| unsafe {
            (api.compare_and_swap)(
                origin.as_ptr().cast(),
                compare.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                ty,
                r,
                disp,
                self.win,
            )
        });
        self.world.check(rc, call)?;
        self.flush_local_of(r, call)
    }

    // ---- the public data calls ----

    /// Writes `data` to `to` (MPI_Put). In a passive-target epoch the call completes
    /// locally before it returns; in an active-target one the window keeps a copy of
    /// `data` until the closing synchronization.
    pub fn put(&self, data: &[u8], to: Target<'_>) -> Result<()> {
        if to.rank.is_null() {
            return Ok(());
        }
        let mode = self.mode(to.rank, "put")?;
        self.put_at(self.spot(to)?, data, mode)
    }

    /// Reads `from` into `out` (MPI_Rget + MPI_Wait). Needs a passive-target epoch
    /// covering the target.
    pub fn get(&self, out: &mut [u8], from: Target<'_>) -> Result<()> {
        if from.rank.is_null() {
            return Ok(());
        }
        self.need_passive(from.rank, "get")?;
        self.get_at(self.spot(from)?, out)
    }

    /// Combines `data`, elements of `basic`, into `to` with `op`, element-wise
    /// atomically (MPI_Accumulate). Completion as for [`MpiWindow::put`].
    pub fn accumulate(&self, basic: BasicType, op: Op, data: &[u8], to: Target<'_>) -> Result<()> {
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        if to.rank.is_null() {
            return Ok(());
        }
        let mode = self.mode(to.rank, "accumulate")?;
        self.accumulate_at(self.spot(to)?, basic, op, data, mode)
    }

    /// Fetches `at` into `out` and combines `data` into it with `op`, each element in
    /// one atomic step (MPI_Rget_accumulate + MPI_Wait). `data` is as long as `out`,
    /// or empty for NO_OP. Needs a passive-target epoch covering the target.
    pub fn get_accumulate(
        &self,
        basic: BasicType,
        op: Op,
        data: &[u8],
        out: &mut [u8],
        at: Target<'_>,
    ) -> Result<()> {
        rma_ops::check(op, basic, RmaCall::GetAccumulate)?;
        check_fetch_lengths(op, data.len(), out.len())?;
        if at.rank.is_null() {
            return Ok(());
        }
        self.need_passive(at.rank, "get_accumulate")?;
        self.get_accumulate_at(self.spot(at)?, basic, op, data, out)
    }

    /// One element of `basic` at `disp` of `rank`'s window: fetches it into `out` and
    /// combines `origin` into it with `op`, atomically (MPI_Fetch_and_op +
    /// MPI_Win_flush_local). `origin` may be empty for NO_OP. Needs a passive-target
    /// epoch covering the target.
    pub fn fetch_and_op(
        &self,
        basic: BasicType,
        op: Op,
        origin: &[u8],
        out: &mut [u8],
        rank: Rank,
        disp: Disp,
    ) -> Result<()> {
        rma_ops::check(op, basic, RmaCall::FetchAndOp)?;
        let n = basic.size();
        let origin_ok = origin.len() == n || (op == Op::NoOp && origin.is_empty());
        if !origin_ok {
            return Err(element_len("origin", n, origin.len()));
        }
        if out.len() != n {
            return Err(element_len("result", n, out.len()));
        }
        if rank.is_null() {
            return Ok(());
        }
        self.need_passive(rank, "fetch_and_op")?;
        self.fetch_and_op_at(rank, self.byte_of(rank, disp)?, basic, op, origin, out)
    }

    /// One element of `basic` at `disp` of `rank`'s window: fetches it into `out` and
    /// replaces it with `origin` if it equals `compare`, atomically
    /// (MPI_Compare_and_swap + MPI_Win_flush_local). Needs a passive-target epoch
    /// covering the target. 8-byte types are refused (class RMA_FLAVOR) where the
    /// library is known to crash on them ([`World::cas64_blocked`]).
    pub fn compare_and_swap(
        &self,
        basic: BasicType,
        origin: &[u8],
        compare: &[u8],
        out: &mut [u8],
        rank: Rank,
        disp: Disp,
    ) -> Result<()> {
        rma_ops::check_cas_type(basic)?;
        let n = basic.size();
        for (which, len) in [
            ("origin", origin.len()),
            ("compare", compare.len()),
            ("result", out.len()),
        ] {
            if len != n {
                return Err(element_len(which, n, len));
            }
        }
        if rank.is_null() {
            return Ok(());
        }
        self.need_passive(rank, "compare_and_swap")?;
        self.compare_and_swap_at(rank, self.byte_of(rank, disp)?, basic, origin, compare, out)
    }

    // ---- request-based calls ----

    /// Starts a put of a copy of `data` to `to` (MPI_Rput). Needs a passive-target
    /// epoch covering the target.
    pub fn rput(&self, data: &[u8], to: Target<'_>) -> Result<Request<'_>> {
        let copy = data.to_vec();
        self.start_request(
            to,
            "rput",
            copy,
            Vec::new(),
            |p, origin, _, n, ty, req| {
                // SAFETY: `origin` holds `n` bytes owned by the request, alive until it
                // completes (or leaked with it).
                self.world.mpi(|api| unsafe {
                    (api.rput)(
                        origin.cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        self.win,
                        req,
                    )
                })
            },
            BasicType::Byte,
        )
    }

    /// Starts a get of `len` bytes from `from` (MPI_Rget); [`Request::wait`] returns
    /// them. Needs a passive-target epoch covering the target.
    pub fn rget(&self, len: usize, from: Target<'_>) -> Result<Request<'_>> {
        self.start_request(
            from,
            "rget",
            Vec::new(),
            vec![0u8; len],
            |p, _, result, n, ty, req| {
                // SAFETY: `result` holds `n` bytes owned by the request, alive until it
                // completes (or leaked with it).
                self.world.mpi(|api| unsafe {
                    (api.rget)(
                        result.cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        self.win,
                        req,
                    )
                })
            },
            BasicType::Byte,
        )
    }

    /// Starts an accumulate of a copy of `data` into `to` (MPI_Raccumulate). Needs a
    /// passive-target epoch covering the target.
    pub fn raccumulate(
        &self,
        basic: BasicType,
        op: Op,
        data: &[u8],
        to: Target<'_>,
    ) -> Result<Request<'_>> {
        rma_ops::check(op, basic, RmaCall::Accumulate)?;
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        if !to.rank.is_null() && self.split(basic, data.len()) {
            // one element per call, completed here (defects.rs)
            self.need_passive(to.rank, "raccumulate")?;
            self.accumulate_at(self.spot(to)?, basic, op, data, Mode::Passive)?;
            return Ok(Request::done(self.world, "raccumulate", Vec::new()));
        }
        self.start_request(
            to,
            "raccumulate",
            data.to_vec(),
            Vec::new(),
            |p, origin, _, n, ty, req| {
                // SAFETY: `origin` holds `n` elements owned by the request.
                self.world.mpi(|api| unsafe {
                    (api.raccumulate)(
                        origin.cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        op as c_int,
                        self.win,
                        req,
                    )
                })
            },
            basic,
        )
    }

    /// Starts a get_accumulate at `at` (MPI_Rget_accumulate): [`Request::wait`] returns
    /// the fetched bytes, as many as `data` holds. For NO_OP only the length of `data`
    /// matters. Needs a passive-target epoch covering the target.
    pub fn rget_accumulate(
        &self,
        basic: BasicType,
        op: Op,
        data: &[u8],
        at: Target<'_>,
    ) -> Result<Request<'_>> {
        rma_ops::check(op, basic, RmaCall::GetAccumulate)?;
        self.world
            .guards()
            .check_accumulate(basic, op, self.flavor)?;
        if !at.rank.is_null() && self.split(basic, data.len()) {
            // one element per call, completed here (defects.rs)
            self.need_passive(at.rank, "rget_accumulate")?;
            let mut result = vec![0u8; data.len()];
            self.get_accumulate_at(self.spot(at)?, basic, op, data, &mut result)?;
            return Ok(Request::done(self.world, "rget_accumulate", result));
        }
        self.start_request(
            at,
            "rget_accumulate",
            data.to_vec(),
            vec![0u8; data.len()],
            |p, origin, result, n, ty, req| {
                // SAFETY: `origin` and `result` hold `n` elements each, owned by the request.
                self.world.mpi(|api| unsafe {
                    (api.rget_accumulate)(
                        origin.cast(),
                        n,
                        ty,
                        result.cast(),
                        n,
                        ty,
                        p.rank,
                        p.disp,
                        p.count,
                        p.ty,
                        op as c_int,
                        self.win,
                        req,
                    )
                })
            },
            basic,
        )
    }

    /// Checks and places a request-based call, then issues it with `issue(placement,
    /// origin, result, count, type, &mut request)` over buffers the request owns.
    #[allow(clippy::too_many_arguments)]
    fn start_request(
        &self,
        t: Target<'_>,
        name: &'static str,
        origin: Vec<u8>,
        mut result: Vec<u8>,
        issue: impl FnOnce(&Placement<'_>, *const u8, *mut u8, c_int, Handle, &mut Handle) -> c_int,
        basic: BasicType,
    ) -> Result<Request<'_>> {
        if t.rank.is_null() {
            return Ok(Request::done(self.world, name, result));
        }
        self.need_passive(t.rank, name)?;
        let bytes = origin.len().max(result.len());
        if bytes == 0 {
            return Ok(Request::done(self.world, name, result));
        }
        let p = self.placement(self.spot(t)?, bytes, basic)?;
        let (ty, n) = (
            self.world.basic_handle(basic)?,
            c_len(bytes / basic.size())?,
        );
        let mut req: Handle = 0;
        let rc = issue(&p, origin.as_ptr(), result.as_mut_ptr(), n, ty, &mut req);
        self.world
            .check(rc, Call::new(name).rank(t.rank).typed(basic, None))?;
        Ok(Request::new(self.world, name, req, origin, result))
    }

    // ---- freeing ----

    /// Collectively frees the window (MPI_Win_free), first closing the epochs this rank
    /// still holds (unlock, unlock_all, complete, wait). Returns the buffer of a window
    /// made by [`MpiWindow::create`]; `None` otherwise.
    pub fn free(mut self) -> Result<Option<Vec<u8>>> {
        self.release()
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

    fn release(&mut self) -> Result<Option<Vec<u8>>> {
        if std::mem::replace(&mut self.freed, true) {
            return Ok(None);
        }
        let closed = self.close_epochs();
        let rc = {
            let _one = self.world.collective();
            // SAFETY: the window is live and freed once (guarded by `freed`); no
            // request borrows it (`&mut self`).
            self.world.mpi(|api| unsafe { (api.win_free)(self.win) })
        };
        if rc != 0 {
            // MPI may still reach the memory: keep it (and the staged copies) forever
            std::mem::forget(self.owned.take());
            std::mem::forget(std::mem::take(
                self.staged
                    .get_mut()
                    .unwrap_or_else(PoisonError::into_inner),
            ));
            self.world.check(rc, Call::new("MPI_Win_free"))?;
        }
        self.release_staged();
        closed?;
        Ok(self.owned.take())
    }
}

impl Drop for MpiWindow<'_> {
    /// Frees the window like [`MpiWindow::free`], ignoring errors. Collective: every
    /// rank must drop (or free) its window.
    ///
    /// While the thread panics the window is leaked instead (MPI_Win_free would wait
    /// for ranks that may never free theirs); the [`World`] then aborts the job.
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.freed = true;
            std::mem::forget(self.owned.take());
            std::mem::forget(std::mem::take(
                self.staged
                    .get_mut()
                    .unwrap_or_else(PoisonError::into_inner),
            ));
            return;
        }
        let _ = self.release();
    }
}

fn c_len(n: usize) -> Result<c_int> {
    c_int::try_from(n).map_err(|_| Error::CountOverflow {
        count: n,
        what: "elements in one MPI call",
    })
}

fn element_len(which: &'static str, needed: usize, got: usize) -> Error {
    if got < needed {
        Error::BufferTooSmall { which, needed, got }
    } else {
        Error::arg(format!(
            "the {which} buffer holds {got} bytes, one element is {needed}"
        ))
    }
}

fn check_fetch_lengths(op: Op, data: usize, out: usize) -> Result<()> {
    if data == out || (op == Op::NoOp && data == 0) {
        Ok(())
    } else {
        Err(Error::arg(format!(
            "the origin holds {data} bytes and the result {out}; they must match (or the origin be empty for NO_OP)"
        )))
    }
}
