//! Windows and one-sided calls.
//!
//! **Memory models.** MPI_Win_allocate and MPI_Win_allocate_shared hand the program
//! memory in rma's shared segments: other ranks' calls land in it directly
//! (MPI_WIN_UNIFIED). MPI_Win_create's memory belongs to the program, and no other
//! process can reach it, so the window exposes a copy in shared segments and reports
//! MPI_WIN_SEPARATE: the program's memory is the private copy, the segment the public
//! one. Every call that synchronizes this rank's copies (fence, PSCW, MPI_Win_sync,
//! lock_all and unlock_all, and lock, unlock and flushes naming this rank itself),
//! every barrier, collective or completed receive, and MPI_Win_free reconcile them
//! byte by byte against the copy taken at the previous reconciliation: bytes the
//! program stored since go to the public copy, every other byte comes from it. This is
//! the separate model's rule (a local store and a remote update of the same byte
//! between two synchronizations conflict, and MPI calls such a program erroneous). A
//! lock, unlock or flush of another rank leaves this rank's copies alone, as the
//! separate model allows, so loops of passive-target calls cost nothing extra.
//!
//! **MPI_Win_create over shared memory.** Where every rank's memory lies in a shared
//! window (MPI_Win_allocate_shared or MPI_Win_allocate) that every rank of the new
//! window also belongs to, the window is made over that memory itself
//! (`Window::create_mapped`): other ranks' calls land in it directly and a rank loading
//! it through the shared window sees them after the origin's flush, the unified model.
//! The shared windows stay mapped until the last such window is freed, even if the
//! program frees them first.

use crate::comm::{delete_attr, delete_attrs, give_attr, set_attr};
use crate::dtype::{origin, result};
use crate::{c_str, call, code, count, fail, out, put_str, On, State, ERRH_FATAL, R};
use rma_win::backend::Segment;
use rma_win::{Assert, Buffer, BufferMut, Info, LockType, Rank, Target, Window};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

const PROC_NULL: c_int = -1;
const FLAVOR_CREATE: c_int = 1;
const FLAVOR_ALLOCATE: c_int = 2;
const FLAVOR_SHARED: c_int = 4;
const SEPARATE: c_int = 1;
const UNIFIED: c_int = 2;

/// Where a window's local memory is.
enum Mem {
    /// The program's memory, exposed through a copy (MPI_WIN_SEPARATE): `shadow` is
    /// what both held at the last reconciliation.
    /// `aliased`: the memory lies in a shared window of this process, which other
    /// ranks load directly (see `State::aliased`).
    Private {
        ptr: *mut u8,
        len: usize,
        shadow: Vec<u8>,
        aliased: bool,
    },
    /// Memory in rma's shared segments, handed to the program (MPI_WIN_UNIFIED).
    Shared,
    /// MPI_Win_create over memory other ranks' calls update directly (MPI_WIN_UNIFIED):
    /// memory every rank maps (of shared windows or MPI_Alloc_mem blocks), or this
    /// rank's own memory, which the queued transport's progress thread updates in place.
    Mapped,
    /// A dynamic window: one rma region (`arena`, attached at creation) holds a copy
    /// of every piece of the program's memory attached since, placed first-fit, so
    /// pieces attached one after another lie one after another (MPI_WIN_SEPARATE, as
    /// `Private`). Other ranks name memory by its address here: `dir` (a shared
    /// window) lists every rank's pieces, so an origin translates an address to
    /// rma's displacement.
    Dynamic {
        dir: Box<Window<'static>>,
        arena: Option<rma_win::Region<u8>>,
        regions: Vec<Piece>,
    },
}

/// One attached piece of a dynamic window.
struct Piece {
    ptr: *mut u8,
    len: usize,
    shadow: Vec<u8>,
    /// Where its copy lies in the arena.
    off: usize,
    slot: usize,
    /// The shared windows and MPI_Alloc_mem block it lies in, kept mapped until it is
    /// detached (reconciliations read it).
    pins: Pins,
}

/// Memory of other objects that a window exposes or reads: kept mapped for as long as
/// the window lives, whichever the program frees first (erroneous under MPI, but then
/// the window's calls must not touch unmapped memory).
#[derive(Default)]
struct Pins {
    /// Shared windows (their uids) holding memory of this window: freed first, they
    /// wait in the graveyard until no window pins them (`State::bury`).
    on: Vec<u64>,
    /// MPI_Alloc_mem blocks' segments holding memory of this window. Held, never read:
    /// a block freed first stays mapped until the window goes.
    #[allow(dead_code)]
    keep: Vec<Arc<Segment>>,
}

/// Bytes of one rank's record at MPI_Win_create (see `State::create_mapped`).
const REC: usize = 160;

/// Bytes of a dynamic window's arena on each rank: what its attached pieces may hold
/// at once.
const ARENA: usize = 16 << 20;

/// Directory slots per rank (32 bytes each: address, length, displacement, in use);
/// slot 0 holds the number of slots ever used.
const SLOTS: usize = 4096;

/// Reconciles a private copy at `ptr` with its public copy (see the module's docs).
fn merge(
    ptr: *mut u8,
    len: usize,
    shadow: &mut [u8],
    read: impl FnOnce(&mut [u8]) -> rma_win::Result<()>,
    write: impl Fn(usize, &[u8]) -> rma_win::Result<()>,
) -> R {
    if len == 0 {
        return Ok(());
    }
    // one buffer for the public copy per thread, kept: a fresh one of a large window
    // costs a page fault per page on every reconciliation
    thread_local! {
        static PUBLIC: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let mut public = PUBLIC.with(|p| std::mem::take(&mut *p.borrow_mut()));
    public.resize(len, 0);
    let out = merge_with(ptr, len, shadow, &mut public, read, write);
    PUBLIC.with(|p| *p.borrow_mut() = public);
    out
}

fn merge_with(
    ptr: *mut u8,
    len: usize,
    shadow: &mut [u8],
    public: &mut [u8],
    read: impl FnOnce(&mut [u8]) -> rma_win::Result<()>,
    write: impl Fn(usize, &[u8]) -> rma_win::Result<()>,
) -> R {
    read(&mut public[..len])?;
    // SAFETY: `ptr..ptr + len` is memory the program gave MPI_Win_create or
    // MPI_Win_attach, valid until MPI_Win_free or MPI_Win_detach (MPI's contract).
    // The program's other threads may load and store it meanwhile (a reconciliation
    // runs inside calls about other objects, and at any thread level), and other
    // ranks' calls may write it where it lies in a shared window: so it is never
    // borrowed, but merged through a copy read with word atomics, of which only the
    // bytes the merge changed are written back (`dtype::copied_span`).
    let mut mine = unsafe { crate::dtype::copied_span(ptr as usize, len) };
    let out = merge_bytes(mine.bytes(), shadow, &public[..len], write);
    mine.finish();
    out
}

/// The byte-wise merge of [`merge_with`] over the private bytes `private`.
fn merge_bytes(
    private: &mut [u8],
    shadow: &mut [u8],
    public: &[u8],
    write: impl Fn(usize, &[u8]) -> rma_win::Result<()>,
) -> R {
    let len = private.len();
    // blocks where nothing changed on either side are skipped at memcmp speed
    const BLOCK: usize = 4096;
    let mut lo = 0;
    while lo < len {
        let hi = (lo + BLOCK).min(len);
        if private[lo..hi] != shadow[lo..hi] || public[lo..hi] != shadow[lo..hi] {
            let mut i = lo;
            while i < hi {
                if private[i] != shadow[i] {
                    let start = i;
                    while i < hi && private[i] != shadow[i] {
                        i += 1;
                    }
                    write(start, &private[start..i])?;
                    shadow[start..i].copy_from_slice(&private[start..i]);
                } else {
                    let v = public[i];
                    private[i] = v;
                    shadow[i] = v;
                    i += 1;
                }
            }
        }
        lo = hi;
    }
    Ok(())
}

/// Every rank's part of shared window `win`, as mapped in this process: (rank,
/// address, length).
fn parts<'a>(win: &'a Window<'static>) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
    (0..win.size()).filter_map(move |r| {
        let seg = win.shared_query(Rank::new(r as u32)).ok()?;
        Some((r, seg.addr(), seg.len()))
    })
}

/// The values behind the predefined window attributes (their addresses are given out).
struct AttrVals {
    size: isize,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
}

pub(crate) struct Win {
    win: Option<Window<'static>>,
    /// A shared window's identity, the same on every rank of it (0 for other kinds).
    uid: u64,
    comm: i32,
    mem: Mem,
    base: usize,
    vals: Box<AttrVals>,
    name: String,
    pub(crate) errh: i32,
    attrs: BTreeMap<i32, usize>,
    /// This process's memory that other ranks' calls to this window write (listed
    /// while the window lives, so buffers there are never borrowed).
    #[allow(dead_code)]
    exposed: crate::dtype::Exposed,
    /// Last, so dropped after `win` (whose progress thread may still write the memory).
    pins: Pins,
}

impl Win {
    fn window(&self) -> &Window<'static> {
        self.win.as_ref().expect("a live window has its Window")
    }

    /// Where `len` bytes at `addr` lie in this shared window: (uid, rank of the part,
    /// offset in it), if they lie in one part, 8-byte aligned.
    fn home_of(&self, addr: usize, len: usize) -> Option<(u64, usize, usize)> {
        if !matches!(self.mem, Mem::Shared) || addr % 8 != 0 {
            return None;
        }
        // a window another thread took out is left alone (see `sync`)
        parts(self.win.as_ref()?).find_map(|(r, a, n)| {
            (n > 0 && addr >= a && addr - a + len <= n).then(|| (self.uid, r, addr - a))
        })
    }

    /// The shared windows (uids) this window keeps mapped: its own pins and those of
    /// the pieces attached to it.
    fn pinned_uids(&self) -> impl Iterator<Item = u64> + '_ {
        let pieces: &[Piece] = match &self.mem {
            Mem::Dynamic { regions, .. } => regions,
            _ => &[],
        };
        self.pins
            .on
            .iter()
            .chain(pieces.iter().flat_map(|p| p.pins.on.iter()))
            .copied()
    }

    /// Whether `len` bytes at `addr` share a byte with a part of this shared window.
    fn overlaps(&self, addr: usize, len: usize) -> bool {
        if !matches!(self.mem, Mem::Shared) || len == 0 {
            return false;
        }
        // a window another thread took out is left alone (see `sync`)
        let Some(win) = self.win.as_ref() else {
            return false;
        };
        parts(win).any(|(_, a, n)| addr < a + n && a < addr + len)
    }

    /// Reconciles the private and public copies of a separate-model window.
    fn reconcile(&mut self) -> R {
        // a window another thread took out is reconciled by that thread (see `sync`)
        let Some(win) = self.win.as_ref() else {
            return Ok(());
        };
        match &mut self.mem {
            Mem::Shared | Mem::Mapped => Ok(()),
            Mem::Private {
                ptr, len, shadow, ..
            } => merge(
                *ptr,
                *len,
                shadow,
                |out| win.read_local::<u8>(0, out),
                |at, data| win.write_local::<u8>(at, data),
            ),
            Mem::Dynamic { arena, regions, .. } => {
                let r = arena.as_ref().expect("attached until free");
                for p in regions.iter_mut() {
                    merge(
                        p.ptr,
                        p.len,
                        &mut p.shadow,
                        |out| win.read_region(r, p.off, out),
                        |at, data| win.write_region(r, p.off + at, data),
                    )?;
                }
                Ok(())
            }
        }
    }

    /// At free: stores into the private copy only the bytes other ranks changed since
    /// the last reconciliation, and reads nothing of it (some programs free the
    /// memory just before the window, having synchronized last).
    fn take_in(&mut self) -> R {
        let win = self.win.as_ref().expect("a live window has its Window");
        let Mem::Private {
            ptr, len, shadow, ..
        } = &mut self.mem
        else {
            return self.reconcile();
        };
        let mut public = vec![0u8; *len];
        win.read_local::<u8>(0, &mut public)?;
        for (i, (&p, s)) in public.iter().zip(shadow.iter_mut()).enumerate() {
            if p != *s {
                // SAFETY: byte i < len of the memory given to MPI_Win_create, which
                // MPI's contract keeps valid until MPI_Win_free returns.
                unsafe { ptr.add(i).write(p) };
                *s = p;
            }
        }
        Ok(())
    }

    /// The displacement rma's window gives the byte at `addr` of `rank`'s memory: a
    /// dynamic window's address, translated through the directory; any other's as is.
    fn disp(&self, rank: c_int, addr: isize) -> R<i64> {
        let Mem::Dynamic { dir, .. } = &self.mem else {
            return Ok(addr as i64);
        };
        let seg = dir.shared_query(rank_of(rank)?)?;
        let mut head = [0u8; 8];
        seg.read_bytes(0, &mut head)?;
        let used = (u64::from_le_bytes(head) as usize).min(SLOTS - 1);
        let mut table = vec![0u8; used * 32];
        seg.read_bytes(32, &mut table)?;
        for e in table.chunks_exact(32) {
            let f = |i: usize| u64::from_le_bytes(e[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
            let (a, n, d, live) = (f(0) as isize, f(1) as isize, f(2) as i64, f(3));
            if live == 1 && a <= addr && addr < a + n {
                return Ok(d + (addr - a) as i64);
            }
        }
        Err(fail(
            code::RMA_RANGE,
            format!("address {addr:#x} is not in memory rank {rank} attached to the window"),
        ))
    }
}

impl State {
    fn win(&self, w: c_int) -> R<&Win> {
        self.wins
            .get(w)
            .ok_or_else(|| fail(code::WIN, format!("{w} is not a window")))
    }

    /// Whether window `w`, or its communicator's world, is out with another thread
    /// (see `sync`).
    pub(crate) fn win_out(&self, w: c_int) -> bool {
        !self.out_comms.is_empty()
            && self
                .wins
                .get(w)
                .is_some_and(|x| x.win.is_none() || self.out_comms.contains(&x.comm))
    }

    /// Whether communicator `c`'s world is in use by a thread that released the state.
    pub(crate) fn comm_out(&self, c: c_int) -> bool {
        self.out_comms.contains(&c)
    }

    /// Whether any window is out with a thread.
    pub(crate) fn any_out(&self) -> bool {
        !self.out_comms.is_empty()
    }

    fn win_mut(&mut self, w: c_int) -> R<&mut Win> {
        self.wins
            .get_mut(w)
            .ok_or_else(|| fail(code::WIN, format!("{w} is not a window")))
    }

    /// Reconciles every separate-model window (at barriers, collectives, receives).
    pub(crate) fn progress(&mut self) {
        // queued sends go as far as the receivers take them (errors show at the
        // sender's next point-to-point call)
        let _ = self.p2p.flush_out();
        for h in self.wins.handles() {
            if let Some(w) = self.wins.get_mut(h) {
                // a window that cannot be read now reports it at its own next call
                let _ = w.reconcile();
            }
        }
    }

    /// Whether a separate-model window's private copy lies in shared memory that
    /// other ranks load directly (MPI_Win_create over MPI_Win_allocate_shared's
    /// memory): then a barrier waits until every rank has taken in what arrived
    /// before it.
    pub(crate) fn aliased(&self) -> bool {
        self.wins.handles().iter().any(|&h| {
            self.wins
                .get(h)
                .is_some_and(|x| matches!(x.mem, Mem::Private { aliased: true, .. }))
        })
    }

    /// Frees every window (MPI_Finalize): windows over shared windows' memory first,
    /// then the others, then freed shared windows kept for them.
    pub(crate) fn drop_windows(&mut self) {
        let mapped = |w: &Win| w.pinned_uids().next().is_some();
        for pass in [true, false] {
            for h in self.wins.handles() {
                if self.wins.get(h).is_some_and(|w| mapped(w) == pass) {
                    let w = self.wins.remove(h).expect("listed");
                    let c = w.comm;
                    drop(w);
                    self.release(c);
                }
            }
        }
        self.bury();
    }

    /// Drops the freed shared windows no mapped window exposes any more.
    fn bury(&mut self) {
        let live: Vec<u64> = self
            .wins
            .handles()
            .iter()
            .filter_map(|&h| self.wins.get(h))
            .flat_map(Win::pinned_uids)
            .collect();
        let (keep, gone): (Vec<Win>, Vec<Win>) = std::mem::take(&mut self.graveyard)
            .into_iter()
            .partition(|w| live.contains(&w.uid));
        self.graveyard = keep;
        for w in gone {
            let c = w.comm;
            drop(w);
            self.release(c);
        }
    }

    /// Whether a live window exposes or reads memory of shared window `uid`.
    fn pinned(&self, uid: u64) -> bool {
        self.wins.handles().iter().any(|&h| {
            self.wins
                .get(h)
                .is_some_and(|w| w.pinned_uids().any(|u| u == uid))
        })
    }

    /// What `len` bytes of this rank's memory at `addr` lie in: the shared windows and
    /// the MPI_Alloc_mem block that a window over them must keep mapped.
    fn pins_of(&self, addr: usize, len: usize) -> Pins {
        let on = self
            .wins
            .handles()
            .iter()
            .filter_map(|&h| self.wins.get(h))
            .filter(|w| w.overlaps(addr, len))
            .map(|w| w.uid)
            .collect();
        let keep = crate::mem::block_of(addr, len)
            .map(|(seg, _)| seg)
            .into_iter()
            .collect();
        Pins { on, keep }
    }

    /// MPI_Win_create's window over shared windows' memory, if every rank's `len`
    /// bytes at `base` lie in a shared window this rank also belongs to (collective:
    /// every rank returns the same kind of answer). `Ok(None)`: make a copy instead.
    fn create_mapped(
        &self,
        world: &'static rma_win::World,
        base: usize,
        len: usize,
        unit: usize,
        info: &Info,
    ) -> R<Option<(Window<'static>, Pins)>> {
        // what this rank announces: 0 = memory no other rank reaches, 1 = in a
        // shared window, 2 = empty, 3 = in an MPI_Alloc_mem block (its segment's name
        // follows). Unlike a window made in place over the program's own memory
        // (which must be whole 8-byte words: the words around a malloc'd object may
        // lie outside its allocation), a length here may end inside a word. rma's word
        // atomics (other ranks' compare-and-swaps at a call's edges included) then
        // touch the rest of that word, and that is sound: the word lies inside the
        // shared part or block, which is one of rma's own mappings of whole pages,
        // kept mapped while the window lives; rma writes those bytes back only as they
        // were (a compare-and-swap that splices the call's bytes in); and a buffer the
        // program hands rma there is copied with word atomics, never borrowed, since
        // `Exposed` covers every whole word a window's range touches. The program's own
        // loads and stores there meet rma's atomics as in any window over shared
        // memory (the hardware keeps byte stores coherent with word atomics).
        let home = self
            .wins
            .handles()
            .iter()
            .find_map(|&h| self.wins.get(h)?.home_of(base, len));
        let mut rec = vec![0u8; REC];
        let mut fill = |tag: u8, uid: u64, r: usize, off: usize| {
            rec[0] = tag;
            rec[1..9].copy_from_slice(&uid.to_le_bytes());
            rec[9..17].copy_from_slice(&(r as u64).to_le_bytes());
            rec[17..25].copy_from_slice(&(off as u64).to_le_bytes());
            rec[25..33].copy_from_slice(&(len as u64).to_le_bytes());
        };
        match (home, crate::mem::block_of(base, len)) {
            _ if len == 0 => fill(2, 0, 0, 0),
            (Some((uid, r, off)), _) => fill(1, uid, r, off),
            (None, Some((seg, off))) if base % 8 == 0 && seg.name().len() < REC - 34 => {
                fill(3, 0, 0, off);
                rec[33] = seg.name().len() as u8;
                rec[34..34 + seg.name().len()].copy_from_slice(seg.name().as_bytes());
            }
            _ => {}
        }
        let all = world.allgather(&rec)?;
        let word = |b: &[u8], i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(
                b.get(1 + 8 * i..9 + 8 * i)?.try_into().ok()?,
            ))
        };
        // the world MPI_Alloc_mem names its blocks after (crate::mem)
        let blocks_world = self.world0().segment_name().map(str::to_owned);
        let mut peers = Vec::with_capacity(all.len());
        let (mut on, mut keep) = (Vec::new(), Vec::new());
        for b in &all {
            let at = match b.first() {
                Some(2) => Some(0),
                Some(3) => (|| -> Option<usize> {
                    let (name, off, n) = peer_block(blocks_world.as_deref(), b)?;
                    // this process's own blocks come back from the registry, not mapped again
                    let seg = Segment::open_shared(name, off.checked_add(n)?).ok()?;
                    let at = seg.as_ptr() as usize + off;
                    keep.push(seg);
                    (at % 8 == 0).then_some(at)
                })(),
                Some(1) => (|| -> Option<usize> {
                    let (uid, r, off, n): (u64, u64, u64, u64) =
                        (word(b, 0)?, word(b, 1)?, word(b, 2)?, word(b, 3)?);
                    let x = self.wins.handles().into_iter().find_map(|h| {
                        self.wins.get(h).filter(|w| {
                            w.uid == uid && matches!(w.mem, Mem::Shared) && w.win.is_some()
                        })
                    })?;
                    let seg = x
                        .window()
                        .shared_query(Rank::new(u32::try_from(r).ok()?))
                        .ok()?;
                    let (off, n) = (usize::try_from(off).ok()?, usize::try_from(n).ok()?);
                    if off.checked_add(n)? > seg.len() || (seg.addr() + off) % 8 != 0 {
                        return None;
                    }
                    if !on.contains(&uid) {
                        on.push(uid);
                    }
                    Some(seg.addr() + off)
                })(),
                _ => None,
            };
            match at {
                Some(a) => peers.push(a),
                None => break,
            }
        }
        let mine = [u8::from(peers.len() == all.len())];
        let agreed = world.allgather(&mine)?.iter().all(|v| v[..] == [1]);
        if !agreed {
            return Ok(None);
        }
        // SAFETY: peers[r] is where rank r's memory lies in this process: in a part of
        // a shared window, or in an MPI_Alloc_mem block's segment mapped here (checked
        // above: inside the part or segment, 8-byte aligned; a word a window's last
        // bytes share lies in the same mapping, see the announcement above). The shared windows stay mapped while this one lives: freeing
        // them first moves them to the graveyard until it is freed (MPI_Win_free,
        // `bury`), and finalize drops it first; the blocks' mappings are in `keep`,
        // which the window holds and drops after its Window. Other ranks' windows reach the memory through
        // word atomics; the program reaches it through raw pointers (C), never a Rust
        // reference.
        let w = unsafe { Window::create_mapped(world, len, unit, &peers, info)? };
        Ok(Some((w, Pins { on, keep })))
    }

    fn add_win(
        &mut self,
        c: c_int,
        win: Window<'static>,
        mem: Mem,
        pins: Pins,
        base: usize,
        vals: AttrVals,
    ) -> c_int {
        self.comms
            .get_mut(c)
            .expect("the window's communicator")
            .windows += 1;
        let exposed = crate::dtype::Exposed::new(match mem {
            // every rank's part, mapped in this process
            Mem::Shared => parts(&win).map(|(_, a, n)| (a, n)).collect(),
            Mem::Mapped => vec![(base, vals.size.max(0) as usize)],
            Mem::Private { .. } | Mem::Dynamic { .. } => Vec::new(),
        });
        self.wins.insert(
            1,
            Win {
                win: Some(win),
                uid: 0,
                comm: c,
                mem,
                base,
                vals: Box::new(vals),
                name: String::new(),
                errh: ERRH_FATAL,
                attrs: BTreeMap::new(),
                exposed,
                pins,
            },
        )
    }
}

/// The MPI_Alloc_mem block that a peer's record (of kind 3, in `create_mapped`)
/// names: its segment's name, the offset in it and the length. None unless the name is
/// one of this world's blocks (`blocks_world`: the world MPI_Alloc_mem names them
/// after, see crate::mem), so that no record opens any other file (`../x`).
fn peer_block<'a>(blocks_world: Option<&str>, b: &'a [u8]) -> Option<(&'a str, usize, usize)> {
    let word = |i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(
            b.get(1 + 8 * i..9 + 8 * i)?.try_into().ok()?,
        ))
    };
    let (off, n) = (
        usize::try_from(word(2)?).ok()?,
        usize::try_from(word(3)?).ok()?,
    );
    let name = std::str::from_utf8(b.get(34..34 + usize::from(*b.get(33)?))?).ok()?;
    crate::mem::is_block_name(blocks_world?, name).then_some((name, off, n))
}

/// The rma info of an MPI_Info handle (MPI_INFO_NULL: empty).
fn info_of(st: &State, i: c_int) -> R<Info> {
    if i == 0 {
        return Ok(Info::new());
    }
    st.infos
        .get(i)
        .cloned()
        .ok_or_else(|| fail(code::INFO, format!("{i} is not an info object")))
}

/// The info a window is created with: the program's, and for the keys it does not
/// set, the values written to MPI_T's control variables (see [`crate::tool`]).
fn creation_info(st: &State, i: c_int) -> R<Info> {
    let mut info = info_of(st, i)?;
    for (k, v) in crate::tool::window_defaults() {
        if info.get(k).is_none() {
            info = info.with(k, &v);
        }
    }
    Ok(info)
}

/// `mine`, this rank's check of a window constructor's arguments, once every rank of
/// `world` has checked its own (collective): a rank whose arguments were refused
/// returns its error, and every other rank an error of the same class naming that
/// rank, so that no rank waits in the constructor's collectives for one that left.
fn agreed<T>(world: &rma_win::World, call: &str, mine: R<T>) -> R<T> {
    let code = mine.as_ref().err().map_or(0, |f| f.code);
    let all = world.allgather(&code.to_le_bytes())?;
    let refused = all.iter().enumerate().find_map(|(r, b)| {
        let c = i32::from_le_bytes(b.get(..4)?.try_into().ok()?);
        (c != 0).then_some((r, c))
    });
    match (mine, refused) {
        (Err(e), _) => Err(e),
        (Ok(_), Some((r, c))) => Err(fail(
            c,
            format!("{call}: rank {r}'s arguments were refused; no window was made"),
        )),
        (Ok(v), None) => Ok(v),
    }
}

fn size_of(size: isize) -> R<usize> {
    usize::try_from(size).map_err(|_| fail(code::SIZE, format!("size {size} is negative")))
}

fn unit_of(u: c_int) -> R<usize> {
    usize::try_from(u)
        .ok()
        .filter(|&u| u > 0)
        .ok_or_else(|| fail(code::DISP, format!("disp_unit {u} is not positive")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create(
    base: *mut c_void,
    size: isize,
    disp_unit: c_int,
    info: c_int,
    c: c_int,
    win: *mut c_int,
) -> c_int {
    call("MPI_Win_create", On::Comm(c), |st| {
        let world = st.intra(c)?.world();
        let args = (|| {
            let (len, unit) = (size_of(size)?, unit_of(disp_unit)?);
            if len > 0 && base.is_null() {
                return Err(fail(code::BASE, "base is NULL"));
            }
            let info = creation_info(st, info)?;
            // a window whose info asks for the atomic transport cannot be updated in
            // place by another process: it takes the copy below
            let atomic = rma_win::backend::WinInfo::from_info(&info)?
                .transport
                .as_deref()
                == Some("atomic");
            Ok((len, unit, info, atomic))
        })();
        let (len, unit, info, atomic) = agreed(world, "MPI_Win_create", args)?;
        let base_addr = base as usize;
        let unified = |size, disp_unit| AttrVals {
            size,
            disp_unit,
            flavor: FLAVOR_CREATE,
            model: UNIFIED,
        };
        if let Some((w, pins)) = st.create_mapped(world, base_addr, len, unit, &info)? {
            let h = st.add_win(c, w, Mem::Mapped, pins, base_addr, unified(size, disp_unit));
            // SAFETY: MPI's contract: a window out-parameter.
            return unsafe { out(win, h, "win") };
        }
        // this rank's memory, kept mapped while the window lives if it lies in a shared
        // window or an MPI_Alloc_mem block
        let pins = st.pins_of(base_addr, len);
        // every rank's memory whole 8-byte words: other ranks' calls update it in place
        // (the progress thread of the queued transport applies them here). A length
        // that is not a whole number of words would have rma's word atomics touch
        // bytes past the program's object, so such a window takes the copy below, as
        // does one whose info asks for the atomic transport.
        let in_place = [u8::from(base_addr % 8 == 0 && len % 8 == 0 && !atomic)];
        if world.allgather(&in_place)?.iter().all(|v| v[..] == [1]) {
            // SAFETY: MPI's contract: `base` holds `size` bytes until MPI_Win_free
            // (8-byte aligned and a whole number of words, checked, so rma touches no
            // byte outside it; kept mapped by `pins` if it lies in another window's or
            // block's memory); the program reaches it through raw pointers (C), rma
            // through word atomics.
            let w = unsafe { Window::create_in_place(world, base.cast(), len, unit, &info)? };
            let h = st.add_win(c, w, Mem::Mapped, pins, base_addr, unified(size, disp_unit));
            // SAFETY: MPI's contract: a window out-parameter.
            return unsafe { out(win, h, "win") };
        }
        let w = Window::allocate_bytes(world, len, unit, &info)?;
        let shadow = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: MPI's contract: `base` holds `size` bytes (copied with word
            // atomics where they lie in window memory).
            unsafe { crate::dtype::read_span(base as usize, len) }.to_vec()
        };
        w.write_local::<u8>(0, &shadow)?;
        // no rank reaches this one's copy before it holds the memory's contents
        world.barrier()?;
        let vals = AttrVals {
            size,
            disp_unit,
            flavor: FLAVOR_CREATE,
            model: SEPARATE,
        };
        let aliased = !pins.on.is_empty();
        let mem = Mem::Private {
            ptr: base.cast(),
            len,
            shadow,
            aliased,
        };
        let h = st.add_win(c, w, mem, pins, base_addr, vals);
        // SAFETY: MPI's contract: a window out-parameter.
        unsafe { out(win, h, "win") }
    })
}

/// MPI_Win_allocate and MPI_Win_allocate_shared: memory in rma's shared segments.
#[allow(clippy::too_many_arguments)]
unsafe fn allocate(
    st: &mut State,
    size: isize,
    disp_unit: c_int,
    info: c_int,
    c: c_int,
    baseptr: *mut c_void,
    win: *mut c_int,
    flavor: c_int,
) -> R {
    let world = st.intra(c)?.world();
    let args = (|| {
        Ok((
            size_of(size)?,
            unit_of(disp_unit)?,
            creation_info(st, info)?,
        ))
    })();
    let (len, unit, mut info) = agreed(world, "a window allocation", args)?;
    if flavor == FLAVOR_ALLOCATE {
        // each rank's part on its own pages, as MPI_Win_allocate's memory is
        info.set("alloc_shared_noncontig", "true");
    }
    let w = Window::allocate_shared_bytes(world, len, unit, &info)?;
    // the window's identity on every rank: rank 0's process id and a count of its own
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let mine = (u64::from(std::process::id()) << 32)
        | NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let uid = world
        .allgather(&mine.to_le_bytes())?
        .first()
        .and_then(|b| b.get(..8)?.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| fail(code::INTERN, "no identity from rank 0 for the window"))?;
    let seg = w.shared_query(Rank::new(world.rank() as u32))?;
    let base = if len == 0 {
        std::ptr::null_mut()
    } else {
        // SAFETY: the segment is this rank's part of the window; the program gets its
        // address (MPI_Win_allocate's baseptr) and reaches it only through raw
        // pointers.
        unsafe { seg.as_mut_ptr() }
    };
    let vals = AttrVals {
        size,
        disp_unit,
        flavor,
        model: UNIFIED,
    };
    let h = st.add_win(c, w, Mem::Shared, Pins::default(), base as usize, vals);
    st.wins.get_mut(h).expect("just added").uid = uid;
    // SAFETY: MPI's contract: `baseptr` points to a `void *`, `win` to a window.
    unsafe {
        out(baseptr.cast::<*mut u8>(), base, "baseptr")?;
        out(win, h, "win")
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate(
    size: isize,
    disp_unit: c_int,
    info: c_int,
    c: c_int,
    baseptr: *mut c_void,
    win: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Win_allocate", On::Comm(c), |st| unsafe {
        allocate(st, size, disp_unit, info, c, baseptr, win, FLAVOR_ALLOCATE)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_allocate_shared(
    size: isize,
    disp_unit: c_int,
    info: c_int,
    c: c_int,
    baseptr: *mut c_void,
    win: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Win_allocate_shared", On::Comm(c), |st| unsafe {
        allocate(st, size, disp_unit, info, c, baseptr, win, FLAVOR_SHARED)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_shared_query(
    w: c_int,
    rank: c_int,
    size: *mut isize,
    disp_unit: *mut c_int,
    baseptr: *mut c_void,
) -> c_int {
    call("MPI_Win_shared_query", On::Win(w), |st| {
        let x = st.win(w)?;
        if !matches!(x.mem, Mem::Shared) {
            return Err(fail(
                code::RMA_FLAVOR,
                "not a window of shared memory (MPI_Win_allocate_shared or MPI_Win_allocate)",
            ));
        }
        let win = x.window();
        let r = if rank == PROC_NULL {
            (0..win.size())
                .find(|&r| win.len_of(r).is_ok_and(|n| n > 0))
                .unwrap_or(0)
        } else {
            usize::try_from(rank)
                .ok()
                .filter(|&r| r < win.size())
                .ok_or_else(|| fail(code::RANK, format!("rank {rank} is not in the window")))?
        };
        let seg = win.shared_query(Rank::new(r as u32))?;
        let p = if seg.is_empty() {
            std::ptr::null_mut()
        } else {
            // SAFETY: the address of rank r's part, handed to the program as
            // MPI_Win_shared_query's baseptr.
            unsafe { seg.as_mut_ptr() }
        };
        // SAFETY: MPI's contract: the three out-parameters.
        unsafe {
            out(size, seg.len() as isize, "size")?;
            out(disp_unit, seg.disp_unit() as c_int, "disp_unit")?;
            out(baseptr.cast::<*mut u8>(), p, "baseptr")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_dynamic(info: c_int, c: c_int, win: *mut c_int) -> c_int {
    call("MPI_Win_create_dynamic", On::Comm(c), |st| {
        let world = st.intra(c)?.world();
        let mut info = agreed(world, "MPI_Win_create_dynamic", creation_info(st, info))?;
        info.set("rma_dynamic_bytes", &ARENA.to_string());
        let w = Window::create_dynamic(world, &info)?;
        let arena = w.attach(vec![0u8; ARENA])?;
        let dir = Window::allocate_shared_bytes(
            world,
            SLOTS * 32,
            1,
            &Info::new().with("alloc_shared_noncontig", "true"),
        )?;
        let vals = AttrVals {
            size: 0,
            disp_unit: 1,
            flavor: 3,
            model: SEPARATE,
        };
        let mem = Mem::Dynamic {
            dir: Box::new(dir),
            arena: Some(arena),
            regions: Vec::new(),
        };
        let h = st.add_win(c, w, mem, Pins::default(), 0, vals);
        // SAFETY: MPI's contract: a window out-parameter.
        unsafe { out(win, h, "win") }
    })
}

/// The first offset of the arena where `len` bytes fit beside the pieces.
fn place(regions: &[Piece], len: usize) -> Option<usize> {
    let mut used: Vec<(usize, usize)> = regions.iter().map(|p| (p.off, p.off + p.len)).collect();
    used.sort_unstable();
    let mut at = 0;
    for (lo, hi) in used {
        if at + len <= lo {
            break;
        }
        at = at.max(hi);
    }
    (at + len <= ARENA).then_some(at)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_attach(w: c_int, base: *mut c_void, size: isize) -> c_int {
    call("MPI_Win_attach", On::Win(w), |st| {
        // kept mapped while the window lives, if the memory lies in a shared window or
        // an MPI_Alloc_mem block (reconciliations read it)
        let pins = st.pins_of(base as usize, usize::try_from(size).unwrap_or(0));
        let x = st.win_mut(w)?;
        let win = x.win.as_ref().expect("live");
        let Mem::Dynamic {
            dir,
            arena,
            regions,
        } = &mut x.mem
        else {
            return Err(fail(code::RMA_FLAVOR, "not a dynamic window"));
        };
        let arena = arena.as_ref().expect("attached until free");
        let len = size_of(size)?;
        if len == 0 {
            return Ok(());
        }
        if base.is_null() {
            return Err(fail(code::BASE, "base is NULL"));
        }
        let (lo, hi) = (base as usize, base as usize + len);
        if regions
            .iter()
            .any(|p| lo < p.ptr as usize + p.len && (p.ptr as usize) < hi)
        {
            return Err(fail(
                code::RMA_ATTACH,
                "the memory overlaps memory already attached",
            ));
        }
        let used: Vec<usize> = regions.iter().map(|p| p.slot).collect();
        let slot = (1..SLOTS).find(|s| !used.contains(s)).ok_or_else(|| {
            fail(
                code::RMA_ATTACH,
                format!("more than {} pieces attached", SLOTS - 1),
            )
        })?;
        let off = place(regions, len).ok_or_else(|| {
            fail(
                code::RMA_ATTACH,
                format!("the attached memory would exceed {ARENA} bytes on this rank"),
            )
        })?;
        // SAFETY: MPI's contract: `base` holds `size` bytes.
        let shadow = unsafe { crate::dtype::read_span(base as usize, len) }.to_vec();
        win.write_region(arena, off, &shadow)?;
        let me = Rank::new(win.rank() as u32);
        let seg = dir.shared_query(me)?;
        let mut e = Vec::with_capacity(32);
        for v in [
            base as u64,
            len as u64,
            (arena.disp() as u64) + off as u64,
            1,
        ] {
            e.extend_from_slice(&v.to_le_bytes());
        }
        seg.write_bytes(slot * 32, &e)?;
        let hw = used.iter().copied().chain([slot]).max().unwrap_or(0) as u64;
        seg.write_bytes(0, &hw.to_le_bytes())?;
        regions.push(Piece {
            ptr: base.cast(),
            len,
            shadow,
            off,
            slot,
            pins,
        });
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_detach(w: c_int, base: *const c_void) -> c_int {
    call("MPI_Win_detach", On::Win(w), |st| {
        let x = st.win_mut(w)?;
        let win = x.win.as_ref().expect("live");
        let Mem::Dynamic {
            dir,
            arena,
            regions,
        } = &mut x.mem
        else {
            return Err(fail(code::RMA_FLAVOR, "not a dynamic window"));
        };
        let i = regions
            .iter()
            .position(|p| p.ptr as *const c_void == base)
            .ok_or_else(|| fail(code::RMA_ATTACH, "no memory attached at that address"))?;
        let r = arena.as_ref().expect("attached until free");
        let p = &mut regions[i];
        merge(
            p.ptr,
            p.len,
            &mut p.shadow,
            |out| win.read_region(r, p.off, out),
            |at, data| win.write_region(r, p.off + at, data),
        )?;
        let seg = dir.shared_query(Rank::new(win.rank() as u32))?;
        seg.write_bytes(p.slot * 32 + 24, &0u64.to_le_bytes())?;
        regions.remove(i);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free(wp: *mut c_int) -> c_int {
    // SAFETY: MPI's contract: `wp` points to a window handle.
    let w = unsafe { wp.as_ref().copied().unwrap_or(0) };
    // first the delete callbacks of the window's attributes, as MPI orders them, with
    // the window still whole and in the table: they run once this first call has
    // released the library (`later`), and may query the window (its attributes,
    // group, name) or make other calls, as communicators' callbacks may
    let rc = call("MPI_Win_free", On::Win(w), |st| {
        let x = st.win_mut(w)?;
        let attrs = std::mem::take(&mut x.attrs);
        delete_attrs(&st.keyvals, w, &attrs);
        Ok(())
    });
    if rc != code::SUCCESS {
        return rc;
    }
    call("MPI_Win_free", On::Win(w), |st| {
        let x = st.win_mut(w)?;
        if !matches!(x.mem, Mem::Shared) {
            // every rank has completed its calls to this one once all are in free:
            // then the public copy is final
            x.window().world().barrier()?;
        }
        x.take_in()?;
        if let Mem::Dynamic { arena, .. } = &mut x.mem {
            let win = x.win.as_ref().expect("live");
            if let Some(r) = arena.take() {
                if let Err(e) = win.detach(r) {
                    *arena = Some(e.region);
                    return Err(e.error.into());
                }
            }
        }
        x.win.as_mut().expect("live").free()?;
        if let Mem::Dynamic { dir, .. } = &mut x.mem {
            dir.free()?;
        }
        let mut x = st.wins.remove(w).expect("checked above");
        // attributes a delete callback set meanwhile (after its window's callbacks ran:
        // theirs run after the window left the table)
        let attrs = std::mem::take(&mut x.attrs);
        if x.uid != 0 && st.pinned(x.uid) {
            // a window made over its memory still lives: keep it mapped until then
            st.graveyard.push(x);
        } else {
            x.reconcile_after_free();
            let c = x.comm;
            drop(x);
            st.release(c);
            st.bury();
        }
        delete_attrs(&st.keyvals, w, &attrs);
        // SAFETY: as above.
        unsafe { out(wp, 0, "win") }
    })
}

impl Win {
    /// After a successful free nothing more can arrive: the private copy already holds
    /// the last reconciliation.
    fn reconcile_after_free(&mut self) {
        self.win = None;
    }
}

/// Runs `f` on window `w` with its memory reconciled before and after, when the
/// call synchronizes this rank's own copies: `mine` says whether it does, given the
/// window's calling rank (in the separate model, a lock, unlock or flush of another
/// rank leaves this rank's copies alone; fences, PSCW, lock_all, unlock_all, win_sync
/// and calls on this rank itself reconcile).
///
/// At MPI_THREAD_MULTIPLE the call itself (which may wait for other ranks: a fence,
/// a lock, a PSCW wait) runs with the state released, so that the process's other
/// threads call MPI meanwhile: threads that synchronize windows on different
/// communicators never hold each other up. The window is taken out of the state for
/// that time, owned by this thread, and its communicator is marked out: until both
/// are back, every call on that window or communicator waits (the gate in
/// `crate::call`), scans of the window table skip it, and MPI_Finalize waits. So no
/// other thread touches the window, or the world it shares with its communicator,
/// while this one uses them.
fn sync(
    name: &str,
    w: c_int,
    when: impl FnOnce(usize) -> When,
    f: impl FnOnce(&Window<'static>) -> R,
) -> c_int {
    call(name, On::Win(w), |st| {
        let multiple = st.thread_level == crate::env::THREAD_MULTIPLE;
        let x = st.win_mut(w)?;
        let when = when(x.window().rank());
        if when.before {
            x.reconcile()?;
        }
        if multiple {
            let comm = x.comm;
            let win = x.win.take().expect("a live window has its Window");
            st.out_comms.push(comm);
            let out = match st.unlocked(|| f(&win)) {
                Ok(out) => out,
                Err(e) => {
                    // cannot happen (MPI_Finalize waits for windows out); were the
                    // state gone, so would be the world the window borrows: the
                    // window is leaked rather than dropped after it
                    std::mem::forget(win);
                    return Err(e);
                }
            };
            // back in the state, whatever happened (the gate kept every other call
            // on this window and communicator waiting meanwhile)
            if let Some(i) = st.out_comms.iter().position(|&c| c == comm) {
                st.out_comms.swap_remove(i);
            }
            match st.wins.get_mut(w) {
                Some(x) => x.win = Some(win),
                None => {
                    // cannot happen either (MPI_Win_free waits at the gate)
                    std::mem::forget(win);
                    return Err(crate::fail(code::INTERN, "a window vanished while out"));
                }
            }
            match out {
                Ok(r) => r?,
                Err(_) => return Err(crate::fail(code::INTERN, format!("{name} panicked"))),
            }
        } else {
            f(x.window())?;
        }
        let x = st.win_mut(w)?;
        if when.after {
            x.reconcile()?;
        }
        Ok(())
    })
}

/// When a synchronization reconciles: before the call (local stores go out before
/// it), after it (what arrived comes in).
#[derive(Clone, Copy)]
struct When {
    before: bool,
    after: bool,
}

const NEVER: When = When {
    before: false,
    after: false,
};
const BOTH: When = When {
    before: true,
    after: true,
};
/// An epoch's start on this rank: take in what arrived.
const AFTER: When = When {
    before: false,
    after: true,
};
/// An epoch's end on this rank: send out the local stores.
const BEFORE: When = When {
    before: true,
    after: false,
};

/// For `sync`: every call of this kind reconciles.
fn always(w: When) -> impl FnOnce(usize) -> When {
    move |_| w
}

/// For `sync`: a call on target `rank` reconciles when it is this rank.
fn is_me(rank: c_int, w: When) -> impl FnOnce(usize) -> When {
    move |me| {
        if usize::try_from(rank).is_ok_and(|r| r == me) {
            w
        } else {
            NEVER
        }
    }
}

fn assert_of(a: c_int) -> R<Assert> {
    const BITS: [(c_int, Assert); 5] = [
        (1024, Assert::NOCHECK),
        (2048, Assert::NOSTORE),
        (4096, Assert::NOPUT),
        (8192, Assert::NOPRECEDE),
        (16384, Assert::NOSUCCEED),
    ];
    let mut out = 0;
    let mut left = a;
    for (bit, x) in BITS {
        if a & bit != 0 {
            out |= x.bits();
            left &= !bit;
        }
    }
    if left != 0 {
        return Err(fail(code::ASSERT, format!("assert {a} has unknown bits")));
    }
    Ok(Assert::from_bits(out))
}

fn rank_of(r: c_int) -> R<Rank> {
    u32::try_from(r)
        .map(Rank::new)
        .map_err(|_| fail(code::RANK, format!("rank {r} is not a rank of the window")))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_fence(assert: c_int, w: c_int) -> c_int {
    sync("MPI_Win_fence", w, always(BOTH), |win| {
        Ok(win.fence(assert_of(assert)?)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock(kind: c_int, rank: c_int, assert: c_int, w: c_int) -> c_int {
    sync("MPI_Win_lock", w, is_me(rank, AFTER), |win| {
        let kind = match kind {
            234 => LockType::Exclusive,
            235 => LockType::Shared,
            _ => return Err(fail(code::LOCKTYPE, format!("{kind} is not a lock type"))),
        };
        if rank == PROC_NULL {
            return Ok(());
        }
        Ok(win.lock(kind, rank_of(rank)?, assert_of(assert)?)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock(rank: c_int, w: c_int) -> c_int {
    sync("MPI_Win_unlock", w, is_me(rank, BEFORE), |win| {
        if rank == PROC_NULL {
            return Ok(());
        }
        Ok(win.unlock(rank_of(rank)?)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_lock_all(assert: c_int, w: c_int) -> c_int {
    sync("MPI_Win_lock_all", w, always(AFTER), |win| {
        Ok(win.lock_all(assert_of(assert)?)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_unlock_all(w: c_int) -> c_int {
    sync("MPI_Win_unlock_all", w, always(BEFORE), |win| {
        Ok(win.unlock_all()?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush(rank: c_int, w: c_int) -> c_int {
    sync("MPI_Win_flush", w, is_me(rank, AFTER), |win| {
        if rank == PROC_NULL {
            return Ok(());
        }
        Ok(win.flush(rank_of(rank)?)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_all(w: c_int) -> c_int {
    sync("MPI_Win_flush_all", w, always(NEVER), |win| {
        Ok(win.flush_all()?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_local(rank: c_int, w: c_int) -> c_int {
    sync("MPI_Win_flush_local", w, is_me(rank, AFTER), |win| {
        if rank == PROC_NULL {
            return Ok(());
        }
        Ok(win.flush_local(rank_of(rank)?)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_flush_local_all(w: c_int) -> c_int {
    sync("MPI_Win_flush_local_all", w, always(NEVER), |win| {
        Ok(win.flush_local_all()?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_sync(w: c_int) -> c_int {
    sync("MPI_Win_sync", w, always(AFTER), |win| Ok(win.sync()?))
}

/// The rma group, in the window's ranks, of an MPI group.
fn group_of(st: &State, w: c_int, g: c_int) -> R<rma_win::Group> {
    let c = st.win(w)?.comm;
    Ok(rma_win::Group::new(&st.local_ranks(c, g)?)?)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_post(g: c_int, assert: c_int, w: c_int) -> c_int {
    call("MPI_Win_post", On::Win(w), |st| {
        let group = group_of(st, w, g)?;
        let x = st.win_mut(w)?;
        x.reconcile()?;
        x.window().post(&group, assert_of(assert)?)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_start(g: c_int, assert: c_int, w: c_int) -> c_int {
    call("MPI_Win_start", On::Win(w), |st| {
        let group = group_of(st, w, g)?;
        let x = st.win_mut(w)?;
        x.reconcile()?;
        x.window().start(&group, assert_of(assert)?)?;
        x.reconcile()
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_complete(w: c_int) -> c_int {
    sync("MPI_Win_complete", w, always(BEFORE), |win| {
        Ok(win.complete()?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_wait(w: c_int) -> c_int {
    sync("MPI_Win_wait", w, always(AFTER), |win| Ok(win.wait()?))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_test(w: c_int, flag: *mut c_int) -> c_int {
    sync("MPI_Win_test", w, always(AFTER), |win| {
        let done = win.test()?;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(flag, c_int::from(done), "flag") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_group(w: c_int, g: *mut c_int) -> c_int {
    call("MPI_Win_get_group", On::Win(w), |st| {
        let c = st.win(w)?.comm;
        let ranks = st
            .comms
            .get(c)
            .expect("the window's communicator")
            .ranks
            .clone();
        let h = if ranks.is_empty() {
            1
        } else {
            st.groups.insert(2, ranks)
        };
        // SAFETY: MPI's contract: a group out-parameter.
        unsafe { out(g, h, "group") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_info(w: c_int, info: *mut c_int) -> c_int {
    call("MPI_Win_get_info", On::Win(w), |st| {
        let i = st.win(w)?.window().info();
        let h = st.infos.insert(2, i);
        // SAFETY: MPI's contract: an info out-parameter.
        unsafe { out(info, h, "info_used") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_info(w: c_int, info: c_int) -> c_int {
    call("MPI_Win_set_info", On::Win(w), |st| {
        let i = info_of(st, info)?;
        st.win_mut(w)?.win.as_mut().expect("live").set_info(&i)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_name(w: c_int, name: *mut c_char, len: *mut c_int) -> c_int {
    call("MPI_Win_get_name", On::Win(w), |st| {
        let n = st.win(w)?.name.clone();
        // SAFETY: MPI's contract: MPI_MAX_OBJECT_NAME bytes.
        unsafe { put_str(&n, name, 128, len) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_name(w: c_int, name: *const c_char) -> c_int {
    call("MPI_Win_set_name", On::Win(w), |st| {
        // SAFETY: MPI's contract: a C string.
        let n = unsafe { c_str(name, "name")? };
        st.win_mut(w)?.name = n.chars().take(127).collect();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_keyval(
    copy: usize,
    delete: usize,
    keyval: *mut c_int,
    extra: *mut c_void,
) -> c_int {
    call("MPI_Win_create_keyval", On::World, |st| {
        let k = crate::comm::create_keyval(st, copy, delete, extra as usize)?;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(keyval, k, "keyval") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_free_keyval(keyval: *mut c_int) -> c_int {
    call("MPI_Win_free_keyval", On::World, |st| {
        crate::comm::free_keyval(st, keyval)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_attr(w: c_int, k: c_int, value: *mut c_void) -> c_int {
    call("MPI_Win_set_attr", On::Win(w), |st| {
        let st: &mut crate::State = st;
        let x = st
            .wins
            .get_mut(w)
            .ok_or_else(|| fail(code::WIN, format!("{w} is not a window")))?;
        set_attr(&st.keyvals, w, &mut x.attrs, k, value as usize)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_delete_attr(w: c_int, k: c_int) -> c_int {
    call("MPI_Win_delete_attr", On::Win(w), |st| {
        let st: &mut crate::State = st;
        let x = st
            .wins
            .get_mut(w)
            .ok_or_else(|| fail(code::WIN, format!("{w} is not a window")))?;
        delete_attr(&st.keyvals, w, &mut x.attrs, k)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_attr(
    w: c_int,
    k: c_int,
    value: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    call("MPI_Win_get_attr", On::Win(w), |st| {
        let x = st.win(w)?;
        let v = match k {
            1 => Some(x.base),
            2 => Some(&x.vals.size as *const isize as usize),
            3 => Some(&x.vals.disp_unit as *const c_int as usize),
            4 => Some(&x.vals.flavor as *const c_int as usize),
            5 => Some(&x.vals.model as *const c_int as usize),
            _ if st.keyvals.contains_key(&k) => x.attrs.get(&k).copied(),
            _ => return Err(fail(code::KEYVAL, format!("{k} is not a keyval"))),
        };
        // SAFETY: MPI's contract for MPI_Win_get_attr's pointers.
        unsafe { give_attr(v, value, flag) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_create_errhandler(
    f: Option<unsafe extern "C-unwind" fn(*mut c_int, *mut c_int, ...)>,
    e: *mut c_int,
) -> c_int {
    // SAFETY: the same shape as a communicator's handler.
    unsafe { crate::comm::MPI_Comm_create_errhandler(f, e) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_set_errhandler(w: c_int, e: c_int) -> c_int {
    call("MPI_Win_set_errhandler", On::Win(w), |st| {
        crate::comm::check_errh(st, e)?;
        st.win_mut(w)?.errh = e;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_get_errhandler(w: c_int, e: *mut c_int) -> c_int {
    call("MPI_Win_get_errhandler", On::Win(w), |st| {
        let h = st.win(w)?.errh;
        // SAFETY: MPI's contract: an errhandler out-parameter.
        unsafe { out(e, h, "errhandler") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Win_call_errhandler(w: c_int, errorcode: c_int) -> c_int {
    let ok = call("MPI_Win_call_errhandler", On::Win(w), |st| {
        st.win(w).map(|_| ())
    });
    if ok != 0 {
        return ok;
    }
    crate::raise(
        "MPI_Win_call_errhandler",
        On::Win(w),
        fail(errorcode, "raised by the program"),
    );
    0
}

// ---- one-sided calls ----

/// A target description.
struct Tgt {
    rank: c_int,
    disp: isize,
    count: c_int,
    dt: c_int,
}

/// Runs a one-sided call on window `w`; a call to MPI_PROC_NULL does nothing.
fn rma(
    name: &str,
    w: c_int,
    t: &Tgt,
    f: impl FnOnce(&State, &Window<'static>, Target<'_>) -> R,
) -> c_int {
    call(name, On::Win(w), |st| {
        let x = st.win(w)?;
        if t.rank == PROC_NULL {
            return Ok(());
        }
        let d = st.dt_ref(t.dt)?;
        let disp = x.disp(t.rank, t.disp)?;
        let target = Target::new(rank_of(t.rank)?, disp, count(t.count, "target_count")?, d);
        f(st, x.window(), target)
    })
}

/// MPI_Put and MPI_Rput (`request`: the request form, which needs a passive-target
/// epoch).
///
/// # Safety
/// MPI's contract for the origin buffer.
unsafe fn put(
    name: &str,
    o: *const c_void,
    on: c_int,
    odt: c_int,
    t: &Tgt,
    w: c_int,
    request: bool,
) -> c_int {
    rma(name, w, t, |st, win, target| {
        let d = st.dt_ref(odt)?;
        // SAFETY: MPI's contract: the origin buffer holds `on` elements of odt.
        let (bytes, d, n) = unsafe { origin(o, count(on, "origin_count")?, d)? };
        let b = Buffer::new(&bytes, n, &d);
        if request {
            win.rput_with(b, target)?.wait()?;
        } else {
            win.put_with(b, target)?;
        }
        Ok(())
    })
}

/// MPI_Get and MPI_Rget.
///
/// # Safety
/// MPI's contract for the origin buffer, which the call writes.
unsafe fn get(
    name: &str,
    o: *mut c_void,
    on: c_int,
    odt: c_int,
    t: &Tgt,
    w: c_int,
    request: bool,
) -> c_int {
    rma(name, w, t, |st, win, target| {
        let d = st.dt_ref(odt)?;
        // SAFETY: MPI's contract: the origin buffer holds `on` elements of odt, and the
        // program does not touch it until the call completes.
        let (mut bytes, d, n) = unsafe { result(o, count(on, "origin_count")?, d)? };
        let b = BufferMut::new(bytes.bytes(), n, &d);
        if request {
            win.rget_with(b, target)?.wait()?;
        } else {
            win.get_with(b, target)?;
        }
        bytes.finish();
        Ok(())
    })
}

/// MPI_Accumulate and MPI_Raccumulate.
///
/// # Safety
/// MPI's contract for the origin buffer.
#[allow(clippy::too_many_arguments)]
unsafe fn accumulate(
    name: &str,
    o: *const c_void,
    on: c_int,
    odt: c_int,
    t: &Tgt,
    op: c_int,
    w: c_int,
    request: bool,
) -> c_int {
    rma(name, w, t, |st, win, target| {
        let op = crate::op::builtin(op)?;
        let d = st.dt_ref(odt)?;
        // SAFETY: as in `put`.
        let (bytes, d, n) = unsafe { origin(o, count(on, "origin_count")?, d)? };
        let b = Buffer::new(&bytes, n, &d);
        if request {
            win.raccumulate_with(b, target, op)?.wait()?;
        } else {
            win.accumulate_with(b, target, op)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Put(
    o: *const c_void,
    on: c_int,
    odt: c_int,
    rank: c_int,
    disp: isize,
    tn: c_int,
    tdt: c_int,
    w: c_int,
) -> c_int {
    let t = Tgt {
        rank,
        disp,
        count: tn,
        dt: tdt,
    };
    // SAFETY: MPI's contract, forwarded.
    unsafe { put("MPI_Put", o, on, odt, &t, w, false) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get(
    o: *mut c_void,
    on: c_int,
    odt: c_int,
    rank: c_int,
    disp: isize,
    tn: c_int,
    tdt: c_int,
    w: c_int,
) -> c_int {
    let t = Tgt {
        rank,
        disp,
        count: tn,
        dt: tdt,
    };
    // SAFETY: MPI's contract, forwarded.
    unsafe { get("MPI_Get", o, on, odt, &t, w, false) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Accumulate(
    o: *const c_void,
    on: c_int,
    odt: c_int,
    rank: c_int,
    disp: isize,
    tn: c_int,
    tdt: c_int,
    op: c_int,
    w: c_int,
) -> c_int {
    let t = Tgt {
        rank,
        disp,
        count: tn,
        dt: tdt,
    };
    // SAFETY: MPI's contract, forwarded.
    unsafe { accumulate("MPI_Accumulate", o, on, odt, &t, op, w, false) }
}

#[allow(clippy::too_many_arguments)]
unsafe fn get_accumulate(
    st: &State,
    win: &Window<'static>,
    target: Target<'_>,
    o: *const c_void,
    on: c_int,
    odt: c_int,
    r: *mut c_void,
    rn: c_int,
    rdt: c_int,
    op: c_int,
    request: bool,
) -> R {
    let op = crate::op::builtin(op)?;
    let rd = st.dt_ref(rdt)?;
    // SAFETY: MPI's contract: the result buffer holds `rn` elements of rdt.
    let (mut rbytes, rd, rcount) = unsafe { result(r, count(rn, "result_count")?, rd)? };
    let res = BufferMut::new(rbytes.bytes(), rcount, &rd);
    // MPI ignores the origin arguments of MPI_NO_OP (its datatype may be NULL)
    let (obytes, od, ocount) = if op == rma_win::Op::NoOp {
        (crate::dtype::Origin::Borrowed(&[]), rd.clone(), 0)
    } else {
        let od = st.dt_ref(odt)?;
        // SAFETY: MPI's contract: the origin buffer holds `on` elements of odt.
        unsafe { origin(o, count(on, "origin_count")?, od)? }
    };
    let orig = (op != rma_win::Op::NoOp).then(|| Buffer::new(&obytes, ocount, &od));
    if request {
        win.rget_accumulate_with(orig, res, target, op)?.wait()?;
    } else {
        win.get_accumulate_with(orig, res, target, op)?;
    }
    rbytes.finish();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_accumulate(
    o: *const c_void,
    on: c_int,
    odt: c_int,
    r: *mut c_void,
    rn: c_int,
    rdt: c_int,
    rank: c_int,
    disp: isize,
    tn: c_int,
    tdt: c_int,
    op: c_int,
    w: c_int,
) -> c_int {
    let t = Tgt {
        rank,
        disp,
        count: tn,
        dt: tdt,
    };
    rma("MPI_Get_accumulate", w, &t, |st, win, target| {
        // SAFETY: MPI's contract, forwarded.
        unsafe { get_accumulate(st, win, target, o, on, odt, r, rn, rdt, op, false) }
    })
}

/// The `n` bytes of one element of a predefined type at `p`, read by a call
/// (copied where they lie in window memory: see `dtype::read_span`).
///
/// # Safety
/// `p` is valid for reads of `n` bytes, not written during the call.
unsafe fn element_in<'a>(p: *const c_void, n: usize, what: &str) -> R<crate::dtype::Origin<'a>> {
    if p.is_null() {
        return Err(fail(code::BUFFER, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { crate::dtype::read_span(p as usize, n) })
}

/// As [`element_in`], for the element a call writes (`Written::finish` after it).
///
/// # Safety
/// `p` is valid for writes of `n` bytes, not otherwise accessed during the call.
unsafe fn element_out<'a>(p: *mut c_void, n: usize, what: &str) -> R<crate::dtype::Written<'a>> {
    if p.is_null() {
        return Err(fail(code::BUFFER, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { crate::dtype::write_span(p as usize, n) })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Fetch_and_op(
    o: *const c_void,
    r: *mut c_void,
    dt: c_int,
    rank: c_int,
    disp: isize,
    op: c_int,
    w: c_int,
) -> c_int {
    call("MPI_Fetch_and_op", On::Win(w), |st| {
        let win = st.win(w)?.window();
        if rank == PROC_NULL {
            return Ok(());
        }
        let op = crate::op::builtin(op)?;
        let d = st.dt_ref(dt)?;
        let n = d.size();
        // (MPI ignores the origin of MPI_NO_OP; rma's call takes zeros)
        const NONE: [u8; 32] = [0; 32];
        // SAFETY: MPI's contract: one element of dt at each pointer (the origin is
        // ignored for MPI_NO_OP, and only read otherwise).
        let (obytes, mut rbytes) = unsafe {
            let ob = match NONE.get(..n) {
                Some(zeros) if op == rma_win::Op::NoOp => crate::dtype::Origin::Borrowed(zeros),
                _ if op == rma_win::Op::NoOp => crate::dtype::Origin::Copied(vec![0u8; n]),
                _ => element_in(o, n, "origin_addr")?,
            };
            (ob, element_out(r, n, "result_addr")?)
        };
        let disp = st.win(w)?.disp(rank, disp)?;
        win.fetch_and_op_with(&obytes, rbytes.bytes(), d, rank_of(rank)?, disp, op)?;
        rbytes.finish();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Compare_and_swap(
    o: *const c_void,
    cmp: *const c_void,
    r: *mut c_void,
    dt: c_int,
    rank: c_int,
    disp: isize,
    w: c_int,
) -> c_int {
    call("MPI_Compare_and_swap", On::Win(w), |st| {
        let win = st.win(w)?.window();
        if rank == PROC_NULL {
            return Ok(());
        }
        let d = st.dt_ref(dt)?;
        let n = d.size();
        // SAFETY: MPI's contract: one element of dt at each pointer.
        let (ob, cb, mut rb) = unsafe {
            (
                element_in(o, n, "origin_addr")?,
                element_in(cmp, n, "compare_addr")?,
                element_out(r, n, "result_addr")?,
            )
        };
        let disp = st.win(w)?.disp(rank, disp)?;
        win.compare_and_swap_with(&ob, &cb, rb.bytes(), d, rank_of(rank)?, disp)?;
        rb.finish();
        Ok(())
    })
}

/// A request-based call: rma completes it at once; the request handle reports it.
fn with_request(name: &str, code_: c_int, req: *mut c_int) -> c_int {
    if code_ != 0 {
        return code_;
    }
    call(name, On::World, |st| {
        let h = st.reqs.insert(1, crate::p2p::Req::Done);
        // SAFETY: MPI's contract: a request out-parameter.
        unsafe { out(req, h, "request") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rput(
    o: *const c_void,
    on: c_int,
    odt: c_int,
    rank: c_int,
    disp: isize,
    tn: c_int,
    tdt: c_int,
    w: c_int,
    req: *mut c_int,
) -> c_int {
    let t = Tgt {
        rank,
        disp,
        count: tn,
        dt: tdt,
    };
    // SAFETY: MPI's contract, forwarded.
    let rc = unsafe { put("MPI_Rput", o, on, odt, &t, w, true) };
    with_request("MPI_Rput", rc, req)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rget(
    o: *mut c_void,
    on: c_int,
    odt: c_int,
    rank: c_int,
    disp: isize,
    tn: c_int,
    tdt: c_int,
    w: c_int,
    req: *mut c_int,
) -> c_int {
    let t = Tgt {
        rank,
        disp,
        count: tn,
        dt: tdt,
    };
    // SAFETY: MPI's contract, forwarded.
    let rc = unsafe { get("MPI_Rget", o, on, odt, &t, w, true) };
    with_request("MPI_Rget", rc, req)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Raccumulate(
    o: *const c_void,
    on: c_int,
    odt: c_int,
    rank: c_int,
    disp: isize,
    tn: c_int,
    tdt: c_int,
    op: c_int,
    w: c_int,
    req: *mut c_int,
) -> c_int {
    let t = Tgt {
        rank,
        disp,
        count: tn,
        dt: tdt,
    };
    // SAFETY: MPI's contract, forwarded.
    let rc = unsafe { accumulate("MPI_Raccumulate", o, on, odt, &t, op, w, true) };
    with_request("MPI_Raccumulate", rc, req)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rget_accumulate(
    o: *const c_void,
    on: c_int,
    odt: c_int,
    r: *mut c_void,
    rn: c_int,
    rdt: c_int,
    rank: c_int,
    disp: isize,
    tn: c_int,
    tdt: c_int,
    op: c_int,
    w: c_int,
    req: *mut c_int,
) -> c_int {
    let t = Tgt {
        rank,
        disp,
        count: tn,
        dt: tdt,
    };
    let rc = rma("MPI_Rget_accumulate", w, &t, |st, win, target| {
        // SAFETY: MPI's contract, forwarded.
        unsafe { get_accumulate(st, win, target, o, on, odt, r, rn, rdt, op, true) }
    });
    with_request("MPI_Rget_accumulate", rc, req)
}

#[cfg(test)]
mod tests {
    use super::{peer_block, REC};

    /// A record as `create_mapped` announces an MPI_Alloc_mem block (kind 3).
    fn record(name: &str, off: u64, len: u64) -> Vec<u8> {
        let mut rec = vec![0u8; REC];
        rec[0] = 3;
        rec[17..25].copy_from_slice(&off.to_le_bytes());
        rec[25..33].copy_from_slice(&len.to_le_bytes());
        rec[33] = name.len() as u8;
        rec[34..34 + name.len()].copy_from_slice(name.as_bytes());
        rec
    }

    /// Before the check, the name went to Segment::open_shared as given, which opens
    /// `/dev/shm/<name>`: `../../tmp/victim` mapped /tmp/victim read-write.
    #[test]
    fn a_peer_names_only_blocks_of_this_world_never_another_file() {
        let w = "rma-42-0123456789abcdef";
        let good = format!("{w}-m42-0-1f");
        assert_eq!(
            peer_block(Some(w), &record(&good, 8, 16)),
            Some((good.as_str(), 8, 16))
        );
        for bad in [
            "../../tmp/victim".to_owned(),
            format!("{w}-m42-0-1f/../../../tmp/victim"),
            format!("{w}/../../etc/passwd"),
            format!("../{w}-m42-0-1f"),
            "/etc/passwd".to_owned(),
            "rma-43-0123456789abcdef-m42-0-1f".to_owned(),
        ] {
            assert_eq!(peer_block(Some(w), &record(&bad, 0, 8)), None, "{bad}");
        }
        // without a shared-memory world there are no blocks to name
        assert_eq!(peer_block(None, &record(&good, 0, 8)), None);
    }
}
