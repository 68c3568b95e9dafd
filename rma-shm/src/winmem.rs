//! Window memory: one segment per rank holding a small control area (header and the
//! stripe-lock table of the atomic kernels) and, for allocated windows, the data; every
//! rank maps every peer's segment. Layouts are `#[repr(C)]`, hold offsets not
//! addresses, and are validated when a peer's segment is opened.

use crate::segment::Segment;
use crate::world::{LaunchMode, World};
use rma_core::{Error, Rank, Result};
use rma_ops::atomic::StripeLocks;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const MAGIC: u64 = 0x726d_615f_7769_6e64; // "rma_wind"
/// Stripe locks per window segment (for 16-byte elements).
const STRIPES: usize = 1024;
const HEADER_LEN: usize = 64;
const STRIPES_OFFSET: usize = 4096;
/// Where the data starts in an allocated window's segment (page-aligned).
const DATA_OFFSET: usize = 16384;
const _: () = assert!(STRIPES_OFFSET + STRIPES * 4 <= DATA_OFFSET);
const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_LEN);

#[repr(C)]
struct Header {
    magic: AtomicU64,
    data_offset: AtomicU64,
    data_len: AtomicU64,
    disp_unit: AtomicU64,
    stripes: AtomicU64,
}

/// How a window's memory was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Allocated by rma in a shared segment (MPI_Win_allocate).
    Allocate,
    /// Memory the caller owns (MPI_Win_create).
    Create,
}

/// One rank's window as seen from this rank.
#[derive(Debug)]
struct Peer {
    /// Keeps the mapping alive.
    seg: Segment,
    data: *mut u8,
    len: usize,
    disp_unit: usize,
}

/// The window memory of every rank, mapped into this rank.
#[derive(Debug)]
pub struct WindowMemory {
    rank: usize,
    flavor: Flavor,
    peers: Vec<Peer>,
}

// SAFETY: the raw pointers point into mappings owned by `peers[*].seg` (or, for created
// windows in thread mode, into a buffer the Window borrows for its whole life); all
// access through them follows the kernels' contracts, and the mappings are valid from
// any thread.
unsafe impl Send for WindowMemory {}
// SAFETY: as above; no method hands out references to the mapped memory.
unsafe impl Sync for WindowMemory {}

fn header(seg: &Segment) -> &Header {
    // SAFETY: every window segment is at least DATA_OFFSET bytes and page-aligned;
    // Header holds only atomics, so a shared reference is sound while peers update it.
    unsafe { &*seg.as_ptr().cast::<Header>() }
}

fn stripes(seg: &Segment) -> &[AtomicU32] {
    // SAFETY: the table lies inside the control area (const-asserted above), is 4-byte
    // aligned, and holds only atomics.
    unsafe {
        std::slice::from_raw_parts(
            seg.as_ptr().add(STRIPES_OFFSET).cast::<AtomicU32>(),
            STRIPES,
        )
    }
}

fn encode(ok: bool, len: usize, disp_unit: usize, addr: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(25);
    v.push(ok as u8);
    v.extend_from_slice(&(len as u64).to_ne_bytes());
    v.extend_from_slice(&(disp_unit as u64).to_ne_bytes());
    v.extend_from_slice(&(addr as u64).to_ne_bytes());
    v
}

fn decode(b: &[u8]) -> Option<(bool, usize, usize, usize)> {
    if b.len() != 25 {
        return None;
    }
    let word = |i: usize| {
        u64::from_ne_bytes(b[1 + 8 * i..9 + 8 * i].try_into().unwrap_or_default()) as usize
    };
    Some((b[0] == 1, word(0), word(1), word(2)))
}

impl WindowMemory {
    /// Collectively allocates a window of `len` bytes on this rank in a shared segment
    /// (MPI_Win_allocate). Every rank must call it; if any rank fails, all return an
    /// error (this rank's own, or one naming the failed rank).
    pub fn allocate(world: &World, len: usize, disp_unit: usize) -> Result<WindowMemory> {
        Self::build(world, Flavor::Allocate, len, disp_unit, None)
    }

    /// Collectively creates a window over `len` bytes at `ptr`, memory this rank owns
    /// (MPI_Win_create). The atomic transport reaches such memory only when the ranks
    /// share an address space (thread launch mode); across processes this returns an
    /// error of class RMA_FLAVOR on every rank.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` bytes for the whole life of the
    /// returned value, and accessed by its owner only through this window while it
    /// lives.
    pub unsafe fn create(
        world: &World,
        ptr: *mut u8,
        len: usize,
        disp_unit: usize,
    ) -> Result<WindowMemory> {
        if world.mode() == LaunchMode::Processes {
            return Err(Error::Flavor {
                reason: "a window created over memory a process owns privately cannot be reached by the \
                         atomic transport from other processes; allocate the window (Window::allocate) so \
                         it lives in shared memory"
                    .into(),
            });
        }
        Self::build(world, Flavor::Create, len, disp_unit, Some(ptr))
    }

    fn build(
        world: &World,
        flavor: Flavor,
        len: usize,
        disp_unit: usize,
        user: Option<*mut u8>,
    ) -> Result<WindowMemory> {
        let id = world.next_object_id();
        let rank = world.rank();
        let name_of = |r: usize| format!("{}-w{id}-r{r}", world.name());
        let seg_len = match flavor {
            Flavor::Allocate => DATA_OFFSET.checked_add(len),
            Flavor::Create => Some(DATA_OFFSET),
        };
        let mine = if disp_unit == 0 {
            Err(Error::InvalidDispUnit { disp_unit })
        } else {
            seg_len
                .ok_or_else(|| Error::NoMem {
                    reason: format!("a window of {len} bytes"),
                })
                .and_then(|l| Segment::create(&name_of(rank), l))
        };
        if let Ok(seg) = &mine {
            let h = header(seg);
            let data_offset = if flavor == Flavor::Allocate {
                DATA_OFFSET
            } else {
                0
            };
            h.data_offset.store(data_offset as u64, Ordering::Relaxed);
            h.data_len.store(len as u64, Ordering::Relaxed);
            h.disp_unit.store(disp_unit as u64, Ordering::Relaxed);
            h.stripes.store(STRIPES as u64, Ordering::Relaxed);
            h.magic.store(MAGIC, Ordering::Release);
        }
        let addr = user.map(|p| p as usize).unwrap_or(0);
        let all = world.allgather(&encode(mine.is_ok(), len, disp_unit, addr));
        let cleanup = |seg: &Result<Segment>| {
            if let Ok(s) = seg {
                s.unlink();
            }
        };
        let all = match all {
            Ok(a) => a,
            Err(e) => {
                cleanup(&mine);
                return Err(e);
            }
        };
        let mut infos = Vec::with_capacity(all.len());
        for (r, b) in all.iter().enumerate() {
            match decode(b) {
                Some(i) => infos.push(i),
                None => {
                    cleanup(&mine);
                    return Err(Error::Internal {
                        reason: format!("corrupt window creation record from rank {r}"),
                    });
                }
            }
        }
        let mine = mine?;
        if let Some(bad) = infos.iter().position(|i| !i.0) {
            mine.unlink();
            return Err(Error::ProcFailed {
                rank: Rank::new(bad as u32),
                reason: "it could not create its part of the window".into(),
            });
        }
        let mut peers = Vec::with_capacity(infos.len());
        let mut failure = None;
        for (r, &(_, plen, pdu, paddr)) in infos.iter().enumerate() {
            match Segment::open(&name_of(r), DATA_OFFSET)
                .and_then(|seg| Self::peer(seg, flavor, plen, pdu, paddr))
            {
                Ok(p) => peers.push(p),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        // every rank has mapped every segment (or failed): the names can go
        let synced = world.allgather(&[failure.is_none() as u8]);
        mine.unlink();
        if let Some(e) = failure {
            return Err(e);
        }
        if let Some(bad) = synced?.iter().position(|v| v.first() != Some(&1)) {
            return Err(Error::ProcFailed {
                rank: Rank::new(bad as u32),
                reason: "it could not map the window's segments".into(),
            });
        }
        Ok(WindowMemory {
            rank,
            flavor,
            peers,
        })
    }

    /// Validates a peer's segment header against what it announced.
    fn peer(
        seg: Segment,
        flavor: Flavor,
        len: usize,
        disp_unit: usize,
        addr: usize,
    ) -> Result<Peer> {
        let h = header(&seg);
        let corrupt = |what: &str| Error::Internal {
            reason: format!("window segment {} is corrupt: {what}", seg.name()),
        };
        if h.magic.load(Ordering::Acquire) != MAGIC {
            return Err(corrupt("bad magic"));
        }
        let (off, dlen, du, st) = (
            h.data_offset.load(Ordering::Relaxed) as usize,
            h.data_len.load(Ordering::Relaxed) as usize,
            h.disp_unit.load(Ordering::Relaxed) as usize,
            h.stripes.load(Ordering::Relaxed) as usize,
        );
        if dlen != len || du != disp_unit || st != STRIPES {
            return Err(corrupt("header disagrees with the creation record"));
        }
        let data = match flavor {
            Flavor::Allocate => {
                if off != DATA_OFFSET || off.checked_add(len).is_none_or(|end| end > seg.len()) {
                    return Err(corrupt("data area outside the segment"));
                }
                // SAFETY: off + len <= seg.len(), checked just above.
                unsafe { seg.as_ptr().add(off) }
            }
            Flavor::Create => addr as *mut u8,
        };
        Ok(Peer {
            seg,
            data,
            len,
            disp_unit,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How the memory was obtained.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The window size of `rank` in bytes.
    pub fn len_of(&self, rank: usize) -> usize {
        self.peers[rank].len
    }

    /// The displacement unit of `rank`.
    pub fn disp_unit_of(&self, rank: usize) -> usize {
        self.peers[rank].disp_unit
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.peers.len()
    }

    /// The first data byte of `rank`'s window in this rank's mapping.
    pub(crate) fn data_ptr(&self, rank: usize) -> *mut u8 {
        self.peers[rank].data
    }

    /// The stripe locks of `rank`'s window.
    pub(crate) fn locks(&self, rank: usize) -> StripeLocks<'_> {
        match StripeLocks::new(stripes(&self.peers[rank].seg)) {
            Ok(l) => l,
            Err(_) => unreachable_layout(),
        }
    }

    /// Copies `out.len()` bytes at byte `offset` of this rank's own window into `out`.
    pub fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check_local(offset, out.len())?;
        // SAFETY: bounds checked; a plain copy out of the mapping (racing writes by
        // peers are an MPI-erroneous program and yield unspecified bytes, never an
        // out-of-bounds access).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.data_ptr(self.rank).add(offset),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }

    /// Copies `data` to byte `offset` of this rank's own window.
    pub fn write_local(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check_local(offset, data.len())?;
        // SAFETY: bounds checked; a plain copy into the mapping (see `read_local`).
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.data_ptr(self.rank).add(offset),
                data.len(),
            )
        };
        Ok(())
    }

    fn check_local(&self, offset: usize, len: usize) -> Result<()> {
        let window_len = self.len_of(self.rank);
        if offset.checked_add(len).is_none_or(|end| end > window_len) {
            return Err(Error::OutOfWindow {
                rank: Rank::new(self.rank as u32),
                start: offset as i128,
                end: offset as i128 + len as i128,
                window_len,
            });
        }
        Ok(())
    }
}

#[cold]
fn unreachable_layout() -> ! {
    panic!("rma-shm: the stripe table size is a power of two by construction")
}
