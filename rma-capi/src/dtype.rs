//! Datatypes: the predefined ones, the constructors, their envelopes, and buffers of
//! `count` instances laid over a C pointer.

use crate::{arr, c_str, call, code, count, fail, inp, out, put_str, On, State, R};
use rma_win::{BasicType, Datatype, Order};
use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_void};

pub(crate) const COMBINER_NAMED: i32 = 1;
const COMBINER_DUP: i32 = 2;
const COMBINER_CONTIGUOUS: i32 = 3;
const COMBINER_VECTOR: i32 = 4;
const COMBINER_HVECTOR: i32 = 5;
const COMBINER_INDEXED: i32 = 6;
const COMBINER_HINDEXED: i32 = 7;
const COMBINER_INDEXED_BLOCK: i32 = 8;
const COMBINER_HINDEXED_BLOCK: i32 = 9;
const COMBINER_STRUCT: i32 = 10;
const COMBINER_SUBARRAY: i32 = 11;
const COMBINER_RESIZED: i32 = 16;

/// First handle of a derived datatype.
const FIRST_DERIVED: i32 = 64;

/// One datatype handle.
#[derive(Debug, Clone)]
pub(crate) struct Ty {
    /// None for the predefined types rma has no element type for (long double complex,
    /// the Fortran pairs 2REAL and 2DOUBLE_PRECISION).
    pub(crate) dt: Option<Datatype>,
    name: String,
    /// C's size and extent of a type rma lacks.
    c_size: usize,
    combiner: i32,
    ints: Vec<i32>,
    aints: Vec<isize>,
    types: Vec<i32>,
}

/// The predefined datatypes: handle, name, rma basic type, C size.
const PREDEFINED: &[(i32, &str, Option<BasicType>, usize)] = {
    use BasicType as B;
    &[
        (1, "MPI_CHAR", Some(B::I8), 1),
        (2, "MPI_SIGNED_CHAR", Some(B::I8), 1),
        (3, "MPI_UNSIGNED_CHAR", Some(B::U8), 1),
        (4, "MPI_BYTE", Some(B::Byte), 1),
        (5, "MPI_SHORT", Some(B::I16), 2),
        (6, "MPI_UNSIGNED_SHORT", Some(B::U16), 2),
        (7, "MPI_INT", Some(B::I32), 4),
        (8, "MPI_UNSIGNED", Some(B::U32), 4),
        (9, "MPI_LONG", Some(B::I64), 8),
        (10, "MPI_UNSIGNED_LONG", Some(B::U64), 8),
        (11, "MPI_LONG_LONG_INT", Some(B::I64), 8),
        (12, "MPI_UNSIGNED_LONG_LONG", Some(B::U64), 8),
        (13, "MPI_FLOAT", Some(B::F32), 4),
        (14, "MPI_DOUBLE", Some(B::F64), 8),
        (15, "MPI_LONG_DOUBLE", Some(B::LongDouble), 16),
        (16, "MPI_INT8_T", Some(B::I8), 1),
        (17, "MPI_INT16_T", Some(B::I16), 2),
        (18, "MPI_INT32_T", Some(B::I32), 4),
        (19, "MPI_INT64_T", Some(B::I64), 8),
        (20, "MPI_UINT8_T", Some(B::U8), 1),
        (21, "MPI_UINT16_T", Some(B::U16), 2),
        (22, "MPI_UINT32_T", Some(B::U32), 4),
        (23, "MPI_UINT64_T", Some(B::U64), 8),
        (24, "MPI_C_BOOL", Some(B::Bool), 1),
        (25, "MPI_C_FLOAT_COMPLEX", Some(B::C32), 8),
        (26, "MPI_C_DOUBLE_COMPLEX", Some(B::C64), 16),
        (27, "MPI_C_LONG_DOUBLE_COMPLEX", None, 32),
        (28, "MPI_AINT", Some(B::Isize), 8),
        (29, "MPI_OFFSET", Some(B::I64), 8),
        (30, "MPI_COUNT", Some(B::I64), 8),
        (31, "MPI_FLOAT_INT", Some(B::FloatInt), 8),
        (32, "MPI_DOUBLE_INT", Some(B::DoubleInt), 16),
        (33, "MPI_LONG_INT", Some(B::LongInt), 16),
        (34, "MPI_2INT", Some(B::TwoInt), 8),
        (35, "MPI_SHORT_INT", Some(B::ShortInt), 8),
        (36, "MPI_LONG_DOUBLE_INT", Some(B::LongDoubleInt), 32),
        (37, "MPI_WCHAR", Some(B::I32), 4),
        (38, "MPI_PACKED", Some(B::Byte), 1),
        (39, "MPI_INTEGER", Some(B::I32), 4),
        (40, "MPI_REAL", Some(B::F32), 4),
        (41, "MPI_DOUBLE_PRECISION", Some(B::F64), 8),
        (42, "MPI_LOGICAL", Some(B::I32), 4),
        (43, "MPI_CHARACTER", Some(B::I8), 1),
        (44, "MPI_COMPLEX", Some(B::C32), 8),
        (45, "MPI_DOUBLE_COMPLEX", Some(B::C64), 16),
        (46, "MPI_2INTEGER", Some(B::TwoInt), 8),
        (47, "MPI_2REAL", None, 8),
        (48, "MPI_2DOUBLE_PRECISION", None, 16),
        (49, "MPI_INTEGER1", Some(B::I8), 1),
        (50, "MPI_INTEGER2", Some(B::I16), 2),
        (51, "MPI_INTEGER4", Some(B::I32), 4),
        (52, "MPI_INTEGER8", Some(B::I64), 8),
        (53, "MPI_REAL4", Some(B::F32), 4),
        (54, "MPI_REAL8", Some(B::F64), 8),
        (55, "MPI_COMPLEX8", Some(B::C32), 8),
        (56, "MPI_COMPLEX16", Some(B::C64), 16),
    ]
};

pub(crate) fn install(st: &mut State) {
    for &(h, name, b, c_size) in PREDEFINED {
        st.types.put(
            h,
            Ty {
                dt: b.map(Datatype::basic),
                name: name.into(),
                c_size,
                combiner: COMBINER_NAMED,
                ints: Vec::new(),
                aints: Vec::new(),
                types: Vec::new(),
            },
        );
    }
}

impl State {
    pub(crate) fn ty(&self, h: i32) -> R<&Ty> {
        self.types
            .get(h)
            .ok_or_else(|| fail(code::TYPE, format!("{h} is not a datatype")))
    }

    /// The rma datatype of handle `h` (MPI_ERR_TYPE if it has none).
    pub(crate) fn dt(&self, h: i32) -> R<Datatype> {
        self.dt_ref(h).cloned()
    }

    /// [`State::dt`], borrowed from the table (no reference count touched: the
    /// one-sided calls' path).
    #[inline]
    pub(crate) fn dt_ref(&self, h: i32) -> R<&Datatype> {
        let t = self.ty(h)?;
        t.dt.as_ref().ok_or_else(|| {
            fail(
                code::TYPE,
                format!("{}: rma has no element type for it", t.name),
            )
        })
    }

    fn new_type(
        &mut self,
        dt: R<Datatype>,
        combiner: i32,
        ints: Vec<i32>,
        aints: Vec<isize>,
        types: Vec<i32>,
    ) -> R<i32> {
        let dt = dt?;
        Ok(self.types.insert(
            FIRST_DERIVED,
            Ty {
                dt: Some(dt),
                name: String::new(),
                c_size: 0,
                combiner,
                ints,
                aints,
                types,
            },
        ))
    }
}

/// Where `count` instances of `dt` lie relative to their buffer's address: the first
/// byte's offset and the number of bytes (0 when they hold no data).
pub(crate) fn span(dt: &Datatype, count: usize) -> R<(isize, usize)> {
    if count == 0 || dt.size() == 0 {
        return Ok((0, 0));
    }
    let ext = dt.extent();
    let last = (count as isize - 1)
        .checked_mul(ext)
        .ok_or_else(|| fail(code::COUNT, "the buffer's span overflows"))?;
    let lo = dt.true_lb() + last.min(0);
    let hi = dt.true_lb() + dt.true_extent() + last.max(0);
    Ok((lo, (hi - lo) as usize))
}

/// `count` instances of `dt` over the bytes starting `lo` bytes from a buffer's
/// address: the datatype and count whose offsets start at that first byte.
fn shifted(dt: &Datatype, count: usize, lo: isize) -> R<(Cow<'_, Datatype>, usize)> {
    if lo == 0 {
        return Ok((Cow::Borrowed(dt), count));
    }
    let mut s = Datatype::structure(&[count], &[-lo], std::slice::from_ref(dt))?;
    s.commit();
    Ok((Cow::Owned(s), 1))
}

/// Address ranges of this process's memory that other ranks' calls may write at any
/// moment: shared windows' parts and windows updated in place. A Rust reference must
/// never cover such bytes, so a buffer that shares a byte with one is read and written
/// through a copy, with word atomics ([`origin`], [`result`]). Entries are tagged by
/// their [`Exposed`] guard.
static EXPOSED: std::sync::Mutex<Vec<(u64, usize, usize)>> = std::sync::Mutex::new(Vec::new());

/// The lowest start and highest end of [`EXPOSED`]'s ranges (0, 0 when empty), set
/// with it locked: a buffer outside them (a program's heap and stack usually lie far
/// from mapped window memory) needs no look at the list.
static EXPOSED_LO: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static EXPOSED_HI: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Sets [`EXPOSED_LO`] and [`EXPOSED_HI`] after a change to the list `l` (locked by
/// the caller). Every check ([`exposed`]) and every change runs
/// inside a call that holds the library's state (`Lease`), so none races another: the
/// state's lock orders them, and the atomics' orderings are a second safeguard. (Do
/// not move a check out from under that lock: a window made over memory the program
/// already owned, with MPI_Win_create, is listed only when its creation returns,
/// after peers may already write it.)
fn exposed_changed(l: &[(u64, usize, usize)]) {
    use std::sync::atomic::Ordering::Release;
    let lo = l.iter().map(|e| e.1).min().unwrap_or(0);
    let hi = l.iter().map(|e| e.1 + e.2).max().unwrap_or(0);
    EXPOSED_LO.store(lo, Release);
    EXPOSED_HI.store(hi, Release);
}

/// Keeps ranges listed in [`EXPOSED`] while it lives (held by their window).
pub(crate) struct Exposed(u64);

impl Exposed {
    /// Lists `ranges` (address, length), each widened to the whole 8-byte words it
    /// touches (rma reads and writes window memory in aligned words: a call's edge
    /// writes back the bytes of a word beside its own), until the guard drops.
    pub(crate) fn new(ranges: impl IntoIterator<Item = (usize, usize)>) -> Exposed {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut l = EXPOSED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        l.extend(ranges.into_iter().filter(|r| r.1 > 0).map(|(a, n)| {
            let lo = a & !7;
            let hi = a.saturating_add(n).saturating_add(7) & !7;
            (id, lo, hi - lo)
        }));
        exposed_changed(&l);
        Exposed(id)
    }
}

impl Drop for Exposed {
    fn drop(&mut self) {
        let mut l = EXPOSED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        l.retain(|e| e.0 != self.0);
        exposed_changed(&l);
    }
}

/// Whether `len` bytes at `lo` share a byte with a range of [`EXPOSED`].
pub(crate) fn exposed(lo: usize, len: usize) -> bool {
    let (a, b) = (
        EXPOSED_LO.load(std::sync::atomic::Ordering::Acquire),
        EXPOSED_HI.load(std::sync::atomic::Ordering::Acquire),
    );
    if lo >= b || lo.saturating_add(len) <= a {
        return false;
    }
    let l = EXPOSED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    l.iter()
        .any(|&(_, a, n)| lo < a.saturating_add(n) && a < lo.saturating_add(len))
}

/// The bytes an origin buffer spans: borrowed, or copied out of window memory.
pub(crate) enum Origin<'a> {
    Borrowed(&'a [u8]),
    Copied(Vec<u8>),
}

impl std::ops::Deref for Origin<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Origin::Borrowed(b) => b,
            Origin::Copied(v) => v,
        }
    }
}

/// The bytes a result buffer spans: borrowed, or a copy of window memory that
/// [`Written::finish`] writes back.
pub(crate) enum Written<'a> {
    Borrowed(&'a mut [u8]),
    Copied {
        at: *mut u8,
        before: Vec<u8>,
        bytes: Vec<u8>,
    },
}

impl Written<'_> {
    /// The bytes the call writes.
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        match self {
            Written::Borrowed(b) => b,
            Written::Copied { bytes, .. } => bytes,
        }
    }

    /// Stores the bytes the call changed (a copy's other bytes are left alone: other
    /// ranks may be updating them), after the call completed.
    pub(crate) fn finish(self) {
        let Written::Copied { at, before, bytes } = self else {
            return;
        };
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == before[i] {
                i += 1;
                continue;
            }
            let j = (i..bytes.len())
                .find(|&j| bytes[j] == before[j])
                .unwrap_or(bytes.len());
            // SAFETY: `at..at + bytes.len()` is the result buffer (the contract of
            // `result`), which lies (partly) in window memory: written with word atomics
            // (rma_ops::shared), whose words stay inside mapped memory.
            unsafe { rma_ops::shared::copy_in(at.add(i), &bytes[i..j]) };
            i = j;
        }
    }
}

/// `count` instances of `dt` at `p` (an origin buffer): the bytes they span, and the
/// datatype and count to lay over them. Bytes in window memory (see [`EXPOSED`]) are
/// copied with word atomics, never borrowed.
///
/// # Safety
/// The bytes the instances span are readable and not written during the call, except
/// by other ranks' calls to window memory among them.
pub(crate) unsafe fn origin<'a, 'd>(
    p: *const c_void,
    count: usize,
    dt: &'d Datatype,
) -> R<(Origin<'a>, Cow<'d, Datatype>, usize)> {
    let (lo, len) = span(dt, count)?;
    if len == 0 {
        return Ok((Origin::Borrowed(&[]), Cow::Borrowed(dt), count));
    }
    let start = (p as isize).wrapping_add(lo);
    if start == 0 {
        return Err(fail(code::BUFFER, "the buffer is NULL"));
    }
    let (d, n) = shifted(dt, count, lo)?;
    // SAFETY: the caller's contract: these bytes are the buffer MPI describes.
    Ok((unsafe { read_span(start as usize, len) }, d, n))
}

/// The `len` bytes at `start` (not null), to be read: borrowed, or, where they share a
/// byte with window memory ([`EXPOSED`]), copied out with word atomics.
///
/// # Safety
/// The bytes are readable and not written during the call, except by other ranks'
/// calls to window memory among them.
pub(crate) unsafe fn read_span<'a>(start: usize, len: usize) -> Origin<'a> {
    if exposed(start, len) {
        let mut v = vec![0; len];
        // SAFETY: the caller's contract; read with word atomics, as other ranks'
        // calls may write them meanwhile.
        unsafe { rma_ops::shared::copy_out(start as *const u8, &mut v) };
        return Origin::Copied(v);
    }
    // SAFETY: the caller's contract, and no other rank's call reaches these bytes
    // (they lie in no window memory).
    Origin::Borrowed(unsafe { std::slice::from_raw_parts(start as *const u8, len) })
}

/// As [`read_span`], for bytes a call writes; [`Written::finish`] after the call.
///
/// # Safety
/// The bytes are writable and not otherwise accessed during the call, except by
/// other ranks' calls to window memory among them.
pub(crate) unsafe fn write_span<'a>(start: usize, len: usize) -> Written<'a> {
    if exposed(start, len) {
        // SAFETY: the caller's contract.
        return unsafe { copied_span(start, len) };
    }
    // SAFETY: the caller's contract, and no other rank's call reaches these bytes.
    Written::Borrowed(unsafe { std::slice::from_raw_parts_mut(start as *mut u8, len) })
}

/// As [`write_span`], always through a copy read and written back (only the bytes
/// the call changed) with word atomics: for memory that the program's other threads
/// may access meanwhile, such as a window's memory while another call reconciles it.
///
/// # Safety
/// The bytes are readable and writable.
pub(crate) unsafe fn copied_span<'a>(start: usize, len: usize) -> Written<'a> {
    let mut before = vec![0; len];
    // SAFETY: the caller's contract; read with word atomics, as others may write them
    // meanwhile.
    unsafe { rma_ops::shared::copy_out(start as *const u8, &mut before) };
    let bytes = before.clone();
    Written::Copied {
        at: start as *mut u8,
        before,
        bytes,
    }
}

/// As [`origin`], for a buffer the call writes; [`Written::finish`] after the call.
///
/// # Safety
/// The bytes the instances span are writable and not otherwise accessed during the
/// call, except by other ranks' calls to window memory among them.
pub(crate) unsafe fn result<'a, 'd>(
    p: *mut c_void,
    count: usize,
    dt: &'d Datatype,
) -> R<(Written<'a>, Cow<'d, Datatype>, usize)> {
    let (lo, len) = span(dt, count)?;
    if len == 0 {
        return Ok((Written::Borrowed(&mut []), Cow::Borrowed(dt), count));
    }
    let start = (p as isize).wrapping_add(lo);
    if start == 0 {
        return Err(fail(code::BUFFER, "the buffer is NULL"));
    }
    let (d, n) = shifted(dt, count, lo)?;
    // SAFETY: the caller's contract: these bytes are the buffer MPI describes.
    Ok((unsafe { write_span(start as usize, len) }, d, n))
}

/// The packed bytes (type-map order) of `count` instances of `dt` at `p`.
///
/// # Safety
/// As [`origin`].
pub(crate) unsafe fn pack(p: *const c_void, count: usize, dt: &Datatype) -> R<Vec<u8>> {
    // SAFETY: forwarded contract.
    let (bytes, d, n) = unsafe { origin(p, count, dt) }?;
    let map = d.type_map(n)?;
    let mut packed = vec![0u8; map.size()];
    map.pack(&bytes, &mut packed)?;
    Ok(packed)
}

/// Scatters packed bytes into `count` instances of `dt` at `p`.
///
/// # Safety
/// As [`result`].
pub(crate) unsafe fn unpack(packed: &[u8], p: *mut c_void, count: usize, dt: &Datatype) -> R {
    // SAFETY: forwarded contract.
    let (mut bytes, d, n) = unsafe { result(p, count, dt) }?;
    let map = d.type_map(n)?;
    if packed.len() < map.size() {
        return Err(fail(code::TRUNCATE, "too few bytes for the buffer"));
    }
    map.unpack(&packed[..map.size()], bytes.bytes())?;
    bytes.finish();
    Ok(())
}

fn usizes(v: &[c_int], what: &str) -> R<Vec<usize>> {
    v.iter().map(|&n| count(n, what)).collect()
}

fn isizes<T: Copy + Into<i64>>(v: &[T]) -> Vec<isize> {
    v.iter().map(|&d| d.into() as isize).collect()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous(n: c_int, old: c_int, new: *mut c_int) -> c_int {
    call("MPI_Type_contiguous", On::World, |st| {
        let dt = Datatype::contiguous(count(n, "count")?, &st.dt(old)?).map_err(Into::into);
        let h = st.new_type(dt, COMBINER_CONTIGUOUS, vec![n], vec![], vec![old])?;
        // SAFETY: MPI's contract: `new` points to a datatype handle.
        unsafe { out(new, h, "newtype") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector(
    n: c_int,
    blocklen: c_int,
    stride: c_int,
    old: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Type_vector", On::World, |st| {
        let dt = Datatype::vector(
            count(n, "count")?,
            count(blocklen, "blocklength")?,
            stride as isize,
            &st.dt(old)?,
        )
        .map_err(Into::into);
        let h = st.new_type(
            dt,
            COMBINER_VECTOR,
            vec![n, blocklen, stride],
            vec![],
            vec![old],
        )?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector(
    n: c_int,
    blocklen: c_int,
    stride: isize,
    old: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Type_create_hvector", On::World, |st| {
        let dt = Datatype::hvector(
            count(n, "count")?,
            count(blocklen, "blocklength")?,
            stride,
            &st.dt(old)?,
        )
        .map_err(Into::into);
        let h = st.new_type(
            dt,
            COMBINER_HVECTOR,
            vec![n, blocklen],
            vec![stride],
            vec![old],
        )?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

/// MPI-1's name of MPI_Type_create_hvector (removed in MPI-3; C MPIs keep it, and
/// MPICH's datatype pools call it).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_hvector(
    n: c_int,
    blocklen: c_int,
    stride: isize,
    old: c_int,
    new: *mut c_int,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { MPI_Type_create_hvector(n, blocklen, stride, old, new) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed(
    n: c_int,
    blocklens: *const c_int,
    disps: *const c_int,
    old: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Type_indexed", On::World, |st| {
        // SAFETY: MPI's contract: n elements in each array.
        let (b, d) = unsafe {
            (
                arr(blocklens, n, "blocklengths")?,
                arr(disps, n, "displacements")?,
            )
        };
        let dt = Datatype::indexed(&usizes(b, "blocklength")?, &isizes(d), &st.dt(old)?)
            .map_err(Into::into);
        let mut ints = vec![n];
        ints.extend_from_slice(b);
        ints.extend_from_slice(d);
        let h = st.new_type(dt, COMBINER_INDEXED, ints, vec![], vec![old])?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed(
    n: c_int,
    blocklens: *const c_int,
    disps: *const isize,
    old: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Type_create_hindexed", On::World, |st| {
        // SAFETY: MPI's contract: n elements in each array.
        let (b, d) = unsafe {
            (
                arr(blocklens, n, "blocklengths")?,
                arr(disps, n, "displacements")?,
            )
        };
        let dt =
            Datatype::hindexed(&usizes(b, "blocklength")?, d, &st.dt(old)?).map_err(Into::into);
        let mut ints = vec![n];
        ints.extend_from_slice(b);
        let h = st.new_type(dt, COMBINER_HINDEXED, ints, d.to_vec(), vec![old])?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

/// MPI-1's name of MPI_Type_create_hindexed (as MPI_Type_hvector).
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_hindexed(
    n: c_int,
    blocklens: *const c_int,
    disps: *const isize,
    old: c_int,
    new: *mut c_int,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { MPI_Type_create_hindexed(n, blocklens, disps, old, new) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block(
    n: c_int,
    blocklen: c_int,
    disps: *const c_int,
    old: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Type_create_indexed_block", On::World, |st| {
        // SAFETY: MPI's contract: n displacements.
        let d = unsafe { arr(disps, n, "displacements")? };
        let dt = Datatype::indexed_block(count(blocklen, "blocklength")?, &isizes(d), &st.dt(old)?)
            .map_err(Into::into);
        let mut ints = vec![n, blocklen];
        ints.extend_from_slice(d);
        let h = st.new_type(dt, COMBINER_INDEXED_BLOCK, ints, vec![], vec![old])?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block(
    n: c_int,
    blocklen: c_int,
    disps: *const isize,
    old: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Type_create_hindexed_block", On::World, |st| {
        // SAFETY: MPI's contract: n displacements.
        let d = unsafe { arr(disps, n, "displacements")? };
        let dt = Datatype::hindexed_block(count(blocklen, "blocklength")?, d, &st.dt(old)?)
            .map_err(Into::into);
        let h = st.new_type(
            dt,
            COMBINER_HINDEXED_BLOCK,
            vec![n, blocklen],
            d.to_vec(),
            vec![old],
        )?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct(
    n: c_int,
    blocklens: *const c_int,
    disps: *const isize,
    types: *const c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Type_create_struct", On::World, |st| {
        // SAFETY: MPI's contract: n elements in each array.
        let (b, d, t) = unsafe {
            (
                arr(blocklens, n, "blocklengths")?,
                arr(disps, n, "displacements")?,
                arr(types, n, "types")?,
            )
        };
        let dts = t.iter().map(|&h| st.dt(h)).collect::<R<Vec<_>>>()?;
        let dt = Datatype::structure(&usizes(b, "blocklength")?, d, &dts).map_err(Into::into);
        let mut ints = vec![n];
        ints.extend_from_slice(b);
        let h = st.new_type(dt, COMBINER_STRUCT, ints, d.to_vec(), t.to_vec())?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    order: c_int,
    old: c_int,
    new: *mut c_int,
) -> c_int {
    call("MPI_Type_create_subarray", On::World, |st| {
        // SAFETY: MPI's contract: ndims elements in each array.
        let (a, b, c) = unsafe {
            (
                arr(sizes, ndims, "sizes")?,
                arr(subsizes, ndims, "subsizes")?,
                arr(starts, ndims, "starts")?,
            )
        };
        let ord = match order {
            56 => Order::C,
            57 => Order::Fortran,
            _ => return Err(fail(code::ARG, format!("{order} is not an MPI_ORDER"))),
        };
        let dt = Datatype::subarray(
            &usizes(a, "size")?,
            &usizes(b, "subsize")?,
            &usizes(c, "start")?,
            ord,
            &st.dt(old)?,
        )
        .map_err(Into::into);
        let mut ints = vec![ndims];
        ints.extend_from_slice(a);
        ints.extend_from_slice(b);
        ints.extend_from_slice(c);
        ints.push(order);
        let h = st.new_type(dt, COMBINER_SUBARRAY, ints, vec![], vec![old])?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized(
    old: c_int,
    lb: isize,
    extent: isize,
    new: *mut c_int,
) -> c_int {
    call("MPI_Type_create_resized", On::World, |st| {
        let dt = Datatype::resized(&st.dt(old)?, lb, extent).map_err(Into::into);
        let h = st.new_type(dt, COMBINER_RESIZED, vec![], vec![lb, extent], vec![old])?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_dup(old: c_int, new: *mut c_int) -> c_int {
    call("MPI_Type_dup", On::World, |st| {
        let src = st.dt(old)?;
        let mut dt = src.dup();
        if src.is_committed() {
            dt.commit();
        }
        let h = st.new_type(Ok(dt), COMBINER_DUP, vec![], vec![], vec![old])?;
        // SAFETY: as in MPI_Type_contiguous.
        unsafe { out(new, h, "newtype") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_commit(t: *mut c_int) -> c_int {
    call("MPI_Type_commit", On::World, |st| {
        // SAFETY: MPI's contract: `t` points to a datatype handle.
        let h = unsafe { inp(t, "datatype")? };
        let ty = st
            .types
            .get_mut(h)
            .ok_or_else(|| fail(code::TYPE, format!("{h} is not a datatype")))?;
        if let Some(d) = ty.dt.as_mut() {
            d.commit();
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_free(t: *mut c_int) -> c_int {
    call("MPI_Type_free", On::World, |st| {
        // SAFETY: MPI's contract: `t` points to a datatype handle.
        let h = unsafe { inp(t, "datatype")? };
        if h < FIRST_DERIVED {
            return Err(fail(code::TYPE, "a predefined datatype cannot be freed"));
        }
        st.types
            .remove(h)
            .ok_or_else(|| fail(code::TYPE, format!("{h} is not a datatype")))?;
        // SAFETY: as above.
        unsafe { out(t, 0, "datatype") }
    })
}

impl Ty {
    fn size(&self) -> usize {
        self.dt.as_ref().map_or(self.c_size, |d| d.size())
    }

    fn bounds(&self) -> (isize, isize, isize, isize) {
        match &self.dt {
            Some(d) => (d.lb(), d.extent(), d.true_lb(), d.true_extent()),
            None => (0, self.c_size as isize, 0, self.c_size as isize),
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size(t: c_int, size: *mut c_int) -> c_int {
    call("MPI_Type_size", On::World, |st| {
        let s = st.ty(t)?.size();
        let s = c_int::try_from(s).unwrap_or(-32766);
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(size, s, "size") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_size_x(t: c_int, size: *mut i64) -> c_int {
    call("MPI_Type_size_x", On::World, |st| {
        let s = st.ty(t)?.size() as i64;
        // SAFETY: MPI's contract: an MPI_Count out-parameter.
        unsafe { out(size, s, "size") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent(
    t: c_int,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    call("MPI_Type_get_extent", On::World, |st| {
        let (l, e, _, _) = st.ty(t)?.bounds();
        // SAFETY: MPI's contract: two MPI_Aint out-parameters.
        unsafe {
            out(lb, l, "lb")?;
            out(extent, e, "extent")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_extent_x(t: c_int, lb: *mut i64, extent: *mut i64) -> c_int {
    call("MPI_Type_get_extent_x", On::World, |st| {
        let (l, e, _, _) = st.ty(t)?.bounds();
        // SAFETY: MPI's contract: two MPI_Count out-parameters.
        unsafe {
            out(lb, l as i64, "lb")?;
            out(extent, e as i64, "extent")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent_x(
    t: c_int,
    lb: *mut i64,
    extent: *mut i64,
) -> c_int {
    call("MPI_Type_get_true_extent_x", On::World, |st| {
        let (_, _, l, e) = st.ty(t)?.bounds();
        // SAFETY: MPI's contract: two MPI_Count out-parameters.
        unsafe {
            out(lb, l as i64, "true_lb")?;
            out(extent, e as i64, "true_extent")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_true_extent(
    t: c_int,
    lb: *mut isize,
    extent: *mut isize,
) -> c_int {
    call("MPI_Type_get_true_extent", On::World, |st| {
        let (_, _, l, e) = st.ty(t)?.bounds();
        // SAFETY: MPI's contract: two MPI_Aint out-parameters.
        unsafe {
            out(lb, l, "true_lb")?;
            out(extent, e, "true_extent")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope(
    t: c_int,
    ni: *mut c_int,
    na: *mut c_int,
    nd: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    call("MPI_Type_get_envelope", On::World, |st| {
        let ty = st.ty(t)?;
        // SAFETY: MPI's contract: four int out-parameters.
        unsafe {
            out(ni, ty.ints.len() as c_int, "num_integers")?;
            out(na, ty.aints.len() as c_int, "num_addresses")?;
            out(nd, ty.types.len() as c_int, "num_datatypes")?;
            out(combiner, ty.combiner, "combiner")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents(
    t: c_int,
    max_i: c_int,
    max_a: c_int,
    max_d: c_int,
    ints: *mut c_int,
    aints: *mut isize,
    types: *mut c_int,
) -> c_int {
    call("MPI_Type_get_contents", On::World, |st| {
        let ty = st.ty(t)?;
        if ty.combiner == COMBINER_NAMED {
            return Err(fail(code::TYPE, "a predefined datatype has no contents"));
        }
        if (max_i as usize) < ty.ints.len()
            || (max_a as usize) < ty.aints.len()
            || (max_d as usize) < ty.types.len()
        {
            return Err(fail(code::ARG, "the arrays are too short for the contents"));
        }
        // SAFETY: MPI's contract: arrays of max_i, max_a and max_d elements, checked
        // above to hold the contents.
        // (an empty array may be NULL: nothing is copied then)
        unsafe {
            if !ty.ints.is_empty() {
                std::ptr::copy_nonoverlapping(ty.ints.as_ptr(), ints, ty.ints.len());
            }
            if !ty.aints.is_empty() {
                std::ptr::copy_nonoverlapping(ty.aints.as_ptr(), aints, ty.aints.len());
            }
            if !ty.types.is_empty() {
                std::ptr::copy_nonoverlapping(ty.types.as_ptr(), types, ty.types.len());
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_name(t: c_int, name: *mut c_char, len: *mut c_int) -> c_int {
    call("MPI_Type_get_name", On::World, |st| {
        let n = st.ty(t)?.name.clone();
        // SAFETY: MPI's contract: MPI_MAX_OBJECT_NAME bytes.
        unsafe { put_str(&n, name, 128, len) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_name(t: c_int, name: *const c_char) -> c_int {
    call("MPI_Type_set_name", On::World, |st| {
        // SAFETY: MPI's contract: a C string.
        let n = unsafe { c_str(name, "name")? };
        let ty = st
            .types
            .get_mut(t)
            .ok_or_else(|| fail(code::TYPE, format!("{t} is not a datatype")))?;
        ty.name = n.chars().take(127).collect();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_address(p: *const c_void, addr: *mut isize) -> c_int {
    call("MPI_Get_address", On::World, |_| {
        // SAFETY: MPI's contract: an MPI_Aint out-parameter.
        unsafe { out(addr, p as isize, "address") }
    })
}

#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: isize, disp: isize) -> isize {
    base.wrapping_add(disp)
}

#[no_mangle]
pub extern "C" fn MPI_Aint_diff(a: isize, b: isize) -> isize {
    a.wrapping_sub(b)
}

/// A pack buffer's position argument, checked against its size.
///
/// # Safety
/// `position` is null or points to an int.
unsafe fn position_in(position: *mut c_int, size: c_int) -> R<usize> {
    // SAFETY: the caller's contract.
    let p = unsafe { inp(position, "position")? };
    let size = count(size, "buffer size")?;
    usize::try_from(p)
        .ok()
        .filter(|&p| p <= size)
        .ok_or_else(|| {
            fail(
                code::ARG,
                format!("position {p} outside a buffer of {size} bytes"),
            )
        })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    dt: c_int,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    c: c_int,
) -> c_int {
    call("MPI_Pack", On::Comm(c), |st| {
        st.comm(c)?;
        // SAFETY: MPI's contract: an int in-out parameter.
        let at = unsafe { position_in(position, outsize)? };
        // SAFETY: MPI's contract: inbuf holds incount elements of dt.
        let packed = unsafe { pack(inbuf, count(incount, "incount")?, &st.dt(dt)?)? };
        let end = at + packed.len();
        if end > outsize as usize {
            return Err(fail(
                code::TRUNCATE,
                format!("{} packed bytes past a buffer of {outsize}", packed.len()),
            ));
        }
        // SAFETY: MPI's contract: outbuf holds outsize bytes; at..end lies inside it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                packed.as_ptr(),
                outbuf.cast::<u8>().add(at),
                packed.len(),
            );
            out(position, end as c_int, "position")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    dt: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Unpack", On::Comm(c), |st| {
        st.comm(c)?;
        // SAFETY: MPI's contract: an int in-out parameter.
        let at = unsafe { position_in(position, insize)? };
        let d = st.dt(dt)?;
        let n = count(outcount, "outcount")?;
        let len = d
            .size()
            .checked_mul(n)
            .ok_or_else(|| fail(code::COUNT, "the unpacked size overflows"))?;
        if at + len > insize as usize {
            return Err(fail(
                code::TRUNCATE,
                format!("{len} bytes to unpack from {} left", insize as usize - at),
            ));
        }
        // SAFETY: MPI's contract: inbuf holds insize bytes (at..at + len inside them),
        // outbuf outcount elements of dt.
        unsafe {
            let src = std::slice::from_raw_parts(inbuf.cast::<u8>().add(at), len);
            unpack(src, outbuf, n, &d)?;
            out(position, (at + len) as c_int, "position")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size(
    incount: c_int,
    dt: c_int,
    c: c_int,
    size: *mut c_int,
) -> c_int {
    call("MPI_Pack_size", On::Comm(c), |st| {
        st.comm(c)?;
        let n = st
            .dt(dt)?
            .size()
            .checked_mul(count(incount, "incount")?)
            .and_then(|n| c_int::try_from(n).ok())
            .ok_or_else(|| fail(code::COUNT, "the packed size exceeds an int"))?;
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(size, n, "size") }
    })
}
