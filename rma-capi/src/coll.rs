//! Collectives, over the world's barrier and all-gather (an rma world's all-gather
//! carries at most 248 bytes per rank per round, so longer contributions go in
//! rounds). They are correct, not fast: rma's C interface exists for one-sided
//! programs, whose collectives are few and small.

use crate::dtype::{pack, unpack};
use crate::nbc::{self, Mode};
use crate::{call, code, count, fail, On, State, R};
use rma_win::World;
use std::ffi::{c_int, c_void};

const CHUNK: usize = 240;
/// MPI_IN_PLACE's address.
pub(crate) const IN_PLACE: isize = -1;

/// Every rank's `mine`, indexed by rank (any lengths).
pub(crate) fn allgather_bytes(w: &World, mine: &[u8]) -> R<Vec<Vec<u8>>> {
    let lens = w.allgather(&(mine.len() as u64).to_le_bytes())?;
    let lens: Vec<usize> = lens
        .iter()
        .map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[..8]);
            u64::from_le_bytes(a) as usize
        })
        .collect();
    let rounds = lens.iter().max().copied().unwrap_or(0).div_ceil(CHUNK);
    let mut all: Vec<Vec<u8>> = lens.iter().map(|&n| Vec::with_capacity(n)).collect();
    for i in 0..rounds {
        let lo = (i * CHUNK).min(mine.len());
        let hi = ((i + 1) * CHUNK).min(mine.len());
        for (r, part) in w.allgather(&mine[lo..hi])?.into_iter().enumerate() {
            all[r].extend_from_slice(&part);
        }
    }
    Ok(all)
}

/// Combines every rank's packed contribution of `n` elements, in rank order.
fn reduce_all(st: &State, c: c_int, mine: &[u8], n: usize, dt: c_int, op: c_int) -> R<Vec<u8>> {
    let red = st.reducer(op, dt)?;
    let all = allgather_bytes(st.intra(c)?.world(), mine)?;
    red.fold(n, &all)
}

/// Whether some rank asked for MPI_THREAD_MULTIPLE: then the collectives that have
/// a nonblocking form run as it, completed in a wait that lets other threads' calls
/// run (two threads may be in collectives on two communicators at once, each waiting
/// for the other ranks' threads).
fn multiple(st: &State) -> bool {
    // agreed by every rank at MPI_Init: any rank at MULTIPLE
    st.colls_by_messages
}

fn barrier(st: &mut State, c: c_int) -> R {
    let w = st.intra(c)?.world();
    st.progress();
    // the barrier itself, carrying whether a rank has a separate-model window over
    // shared memory that other ranks load directly (MPI_Win_create over
    // MPI_Win_allocate_shared's memory)
    let aliased = w.allgather(&[u8::from(st.aliased())])?;
    st.progress();
    if aliased.iter().any(|a| a.first() == Some(&1)) {
        // then every rank goes on only once every rank has taken in what arrived
        // before the barrier (decided by all alike, from the all-gather)
        w.barrier()?;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(c: c_int) -> c_int {
    call("MPI_Barrier", On::Comm(c), |st| {
        if multiple(st) {
            return nbc::barrier(st, c);
        }
        barrier(st, c)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    root: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Bcast", On::Comm(c), |st| {
        if multiple(st) {
            // SAFETY: MPI's contract, forwarded.
            return unsafe { nbc::bcast(st, buf, n, dt, root, c, Mode::Blocking) };
        }
        let comm = st.intra(c)?;
        let root = check_root(root, comm.size())?;
        let d = st.dt(dt)?;
        let n = count(n, "count")?;
        let mine = if comm.rank() == root {
            // SAFETY: MPI's contract: `buf` holds n elements of dt.
            unsafe { pack(buf, n, &d)? }
        } else {
            Vec::new()
        };
        let all = allgather_bytes(comm.world(), &mine)?;
        if comm.rank() != root {
            // SAFETY: as above.
            unsafe { unpack(&all[root], buf, n, &d)? };
        }
        st.progress();
        Ok(())
    })
}

pub(crate) fn check_root(root: c_int, size: usize) -> R<usize> {
    usize::try_from(root)
        .ok()
        .filter(|&r| r < size)
        .ok_or_else(|| {
            fail(
                code::ROOT,
                format!("root {root} is not a rank of the communicator"),
            )
        })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Allreduce", On::Comm(c), |st| {
        if multiple(st) {
            // SAFETY: MPI's contract, forwarded.
            return unsafe { nbc::ireduce(st, sbuf, rbuf, n, dt, op, None, c, Mode::Blocking) };
        }
        let d = st.dt(dt)?;
        let n = count(n, "count")?;
        let src = source(sbuf, rbuf);
        // SAFETY: MPI's contract: the buffers hold n elements of dt.
        let mine = unsafe { pack(src, n, &d)? };
        let acc = reduce_all(st, c, &mine, n, dt, op)?;
        // SAFETY: as above.
        unsafe { unpack(&acc, rbuf, n, &d)? };
        st.progress();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    root: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Reduce", On::Comm(c), |st| {
        if multiple(st) {
            // SAFETY: MPI's contract, forwarded.
            return unsafe {
                nbc::ireduce(st, sbuf, rbuf, n, dt, op, Some(root), c, Mode::Blocking)
            };
        }
        let comm = st.intra(c)?;
        let root = check_root(root, comm.size())?;
        let me = comm.rank();
        let d = st.dt(dt)?;
        let n = count(n, "count")?;
        // MPI_IN_PLACE counts at the root only
        let src = if me == root { source(sbuf, rbuf) } else { sbuf };
        // SAFETY: MPI's contract: the buffers hold n elements of dt.
        let mine = unsafe { pack(src, n, &d)? };
        let acc = reduce_all(st, c, &mine, n, dt, op)?;
        if me == root {
            // SAFETY: as above.
            unsafe { unpack(&acc, rbuf, n, &d)? };
        }
        st.progress();
        Ok(())
    })
}

/// Gathers every rank's send buffer; `to` is Some(root) for MPI_Gather, None for
/// MPI_Allgather.
#[allow(clippy::too_many_arguments)]
unsafe fn gather(
    st: &mut State,
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    to: Option<c_int>,
    c: c_int,
) -> R {
    let comm = st.intra(c)?;
    let me = comm.rank();
    let root = to.map(|r| check_root(r, comm.size())).transpose()?;
    let receives = root.is_none_or(|r| r == me);
    // the receive arguments matter only where data arrives
    let rd = if receives {
        st.dt(rdt)?
    } else {
        rma_win::Datatype::basic(rma_win::BasicType::Byte)
    };
    let rn = if receives { count(rn, "recvcount")? } else { 0 };
    let rext = rd.extent();
    let mine = if sbuf as isize == IN_PLACE && receives {
        let at = (rbuf as isize).wrapping_add(rext * (rn * me) as isize);
        // SAFETY: MPI's contract: with MPI_IN_PLACE this rank's part of the receive
        // buffer is its contribution.
        unsafe { pack(at as *const c_void, rn, &rd)? }
    } else {
        // SAFETY: MPI's contract: the send buffer holds sn elements of sdt.
        unsafe { pack(sbuf, count(sn, "sendcount")?, &st.dt(sdt)?)? }
    };
    let all = allgather_bytes(comm.world(), &mine)?;
    if receives {
        for (r, part) in all.iter().enumerate() {
            let at = (rbuf as isize).wrapping_add(rext * (rn * r) as isize);
            // SAFETY: MPI's contract: the receive buffer holds size * rn elements.
            unsafe { unpack(part, at as *mut c_void, rn, &rd)? };
        }
    }
    st.progress();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Gather(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    root: c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Gather", On::Comm(c), |st| unsafe {
        if multiple(st) {
            let counts = nbc::equal(rn);
            return nbc::igather(
                st,
                sbuf,
                sn,
                sdt,
                rbuf,
                counts,
                rdt,
                Some(root),
                c,
                Mode::Blocking,
            );
        }
        gather(st, sbuf, sn, sdt, rbuf, rn, rdt, Some(root), c)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Allgather", On::Comm(c), |st| unsafe {
        if multiple(st) {
            let counts = nbc::equal(rn);
            return nbc::igather(
                st,
                sbuf,
                sn,
                sdt,
                rbuf,
                counts,
                rdt,
                None,
                c,
                Mode::Blocking,
            );
        }
        gather(st, sbuf, sn, sdt, rbuf, rn, rdt, None, c)
    })
}

/// Every rank sends a part of its buffer to each rank; `from` is Some(root) for
/// MPI_Scatter (only the root's parts), None for MPI_Alltoall.
#[allow(clippy::too_many_arguments)]
unsafe fn scatter(
    st: &mut State,
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    from: Option<c_int>,
    c: c_int,
) -> R {
    let comm = st.intra(c)?;
    let (me, size) = (comm.rank(), comm.size());
    let root = from.map(|r| check_root(r, size)).transpose()?;
    let sends = root.is_none_or(|r| r == me);
    let mine = if sends {
        let sd = st.dt(sdt)?;
        let sn = count(sn, "sendcount")?;
        // SAFETY: MPI's contract: the send buffer holds size * sn elements.
        unsafe { pack(sbuf, sn * size, &sd)? }
    } else {
        Vec::new()
    };
    let all = allgather_bytes(comm.world(), &mine)?;
    if root == Some(me) && rbuf as isize == IN_PLACE {
        st.progress();
        return Ok(());
    }
    let rd = st.dt(rdt)?;
    let rn = count(rn, "recvcount")?;
    let part = rd.size() * rn;
    let src = root.map_or(&all[..], |r| std::slice::from_ref(&all[r]));
    let mut got = Vec::new();
    for s in src {
        let lo = (me * part).min(s.len());
        got.extend_from_slice(&s[lo..(lo + part).min(s.len())]);
    }
    // SAFETY: MPI's contract: the receive buffer holds the parts.
    unsafe { unpack(&got, rbuf, rn * src.len(), &rd)? };
    st.progress();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    root: c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Scatter", On::Comm(c), |st| unsafe {
        if multiple(st) {
            let counts = nbc::equal(sn);
            return nbc::iscatter(
                st,
                sbuf,
                counts,
                sdt,
                rbuf,
                rn,
                rdt,
                root,
                c,
                Mode::Blocking,
            );
        }
        scatter(st, sbuf, sn, sdt, rbuf, rn, rdt, Some(root), c)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Alltoall", On::Comm(c), |st| {
        if sbuf as isize == IN_PLACE {
            return Err(fail(code::UNSUPPORTED, "MPI_IN_PLACE in MPI_Alltoall"));
        }
        if multiple(st) {
            // SAFETY: MPI's contract, forwarded.
            return unsafe { nbc::alltoall(st, sbuf, sn, sdt, rbuf, rn, rdt, c, Mode::Blocking) };
        }
        // SAFETY: MPI's contract, forwarded.
        unsafe { scatter(st, sbuf, sn, sdt, rbuf, rn, rdt, None, c) }
    })
}

/// Lays each part out at `base + displs[r] * extent` as `counts[r]` elements of `dt`
/// (the receive side of the v-collectives), skipping rank `skip` (MPI_IN_PLACE).
///
/// # Safety
/// MPI's contract: the buffer at `base` holds every part where the displacements say.
pub(crate) unsafe fn lay_out(
    parts: &[Vec<u8>],
    base: *mut c_void,
    counts: &[usize],
    displs: &[isize],
    dt: &rma_win::Datatype,
    skip: Option<usize>,
) -> R {
    for (r, part) in parts.iter().enumerate() {
        if Some(r) == skip {
            continue;
        }
        let at = (base as isize).wrapping_add(dt.extent() * displs[r]);
        // SAFETY: the caller's contract.
        unsafe { unpack(part, at as *mut c_void, counts[r], dt)? };
    }
    Ok(())
}

/// MPI_Gatherv (`to` = Some(root)) and MPI_Allgatherv (None).
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    st: &mut State,
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: c_int,
    to: Option<c_int>,
    c: c_int,
) -> R {
    let comm = st.intra(c)?;
    let (me, size) = (comm.rank(), comm.size());
    let root = to.map(|r| check_root(r, size)).transpose()?;
    let receives = root.is_none_or(|r| r == me);
    let in_place = sbuf as isize == IN_PLACE && receives;
    let (counts, displs) = if receives {
        // MPI's contract: where data arrives, size counts and displacements
        nbc::given(rcounts, displs)(size)?
    } else {
        (Vec::new(), Vec::new())
    };
    let rd = if receives { Some(st.dt(rdt)?) } else { None };
    let mine = match &rd {
        Some(rd) if in_place => {
            let at = (rbuf as isize).wrapping_add(rd.extent() * displs[me]);
            // SAFETY: MPI's contract: with MPI_IN_PLACE this rank's part of the receive
            // buffer is its contribution.
            unsafe { pack(at as *const c_void, counts[me], rd)? }
        }
        // SAFETY: MPI's contract: the send buffer holds sn elements of sdt.
        _ => unsafe { pack(sbuf, count(sn, "sendcount")?, &st.dt(sdt)?)? },
    };
    let all = allgather_bytes(comm.world(), &mine)?;
    if let Some(rd) = rd {
        // SAFETY: MPI's contract: the receive buffer holds every part.
        unsafe { lay_out(&all, rbuf, &counts, &displs, &rd, in_place.then_some(me))? };
    }
    st.progress();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: c_int,
    root: c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Gatherv", On::Comm(c), |st| unsafe {
        if multiple(st) {
            let counts = nbc::given(rcounts, displs);
            return nbc::igather(
                st,
                sbuf,
                sn,
                sdt,
                rbuf,
                counts,
                rdt,
                Some(root),
                c,
                Mode::Blocking,
            );
        }
        gatherv(st, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, Some(root), c)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Allgatherv", On::Comm(c), |st| unsafe {
        if multiple(st) {
            let counts = nbc::given(rcounts, displs);
            return nbc::igather(
                st,
                sbuf,
                sn,
                sdt,
                rbuf,
                counts,
                rdt,
                None,
                c,
                Mode::Blocking,
            );
        }
        gatherv(st, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, None, c)
    })
}

/// Packs `counts[r]` elements of `dt` at `base + displs[r] * extent` for each rank r,
/// each part prefixed by its length (the send side of MPI_Scatterv and
/// MPI_Alltoallv).
///
/// # Safety
/// MPI's contract: the buffer at `base` holds every part where the displacements say.
unsafe fn pack_parts(
    base: *const c_void,
    counts: &[c_int],
    displs: &[c_int],
    dt: &rma_win::Datatype,
) -> R<Vec<u8>> {
    let mut out = Vec::new();
    for (&n, &d) in counts.iter().zip(displs) {
        let at = (base as isize).wrapping_add(dt.extent() * d as isize);
        // SAFETY: the caller's contract.
        let part = unsafe { pack(at as *const c_void, count(n, "sendcounts")?, dt)? };
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(&part);
    }
    Ok(out)
}

/// Part `i` of bytes written by [`pack_parts`].
fn part_of(parts: &[u8], i: usize) -> R<&[u8]> {
    let bad = || fail(code::INTERN, "a malformed part list");
    let mut at = 0usize;
    for k in 0..=i {
        let len = u64::from_le_bytes(
            parts
                .get(at..at + 8)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        ) as usize;
        at += 8;
        if k == i {
            return parts.get(at..at + len).ok_or_else(bad);
        }
        at += len;
    }
    Err(bad())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv(
    sbuf: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    root: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Scatterv", On::Comm(c), |st| {
        if multiple(st) {
            // SAFETY: MPI's contract, forwarded.
            return unsafe {
                let counts = nbc::given(scounts, displs);
                nbc::iscatter(
                    st,
                    sbuf,
                    counts,
                    sdt,
                    rbuf,
                    rn,
                    rdt,
                    root,
                    c,
                    Mode::Blocking,
                )
            };
        }
        let comm = st.intra(c)?;
        let (me, size) = (comm.rank(), comm.size());
        let root = check_root(root, size)?;
        let mine = if me == root {
            let sd = st.dt(sdt)?;
            // SAFETY: MPI's contract: at the root, size counts and displacements, and
            // the send buffer holding the parts.
            unsafe {
                let counts = crate::arr(scounts, size as c_int, "sendcounts")?;
                let displs = crate::arr(displs, size as c_int, "displs")?;
                pack_parts(sbuf, counts, displs, &sd)?
            }
        } else {
            Vec::new()
        };
        let all = allgather_bytes(comm.world(), &mine)?;
        if !(me == root && rbuf as isize == IN_PLACE) {
            let part = part_of(&all[root], me)?;
            // SAFETY: MPI's contract: the receive buffer holds rn elements of rdt.
            unsafe { unpack(part, rbuf, count(rn, "recvcount")?, &st.dt(rdt)?)? };
        }
        st.progress();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Alltoallv", On::Comm(c), |st| {
        if sbuf as isize == IN_PLACE {
            return Err(fail(code::UNSUPPORTED, "MPI_IN_PLACE in MPI_Alltoallv"));
        }
        if multiple(st) {
            // SAFETY: MPI's contract, forwarded.
            return unsafe {
                let m = Mode::Blocking;
                nbc::alltoallv(
                    st, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c, m,
                )
            };
        }
        let comm = st.intra(c)?;
        let (me, size) = (comm.rank(), comm.size());
        let n = size as c_int;
        // SAFETY: MPI's contract: size counts and displacements on each side, and
        // the buffers holding the parts they describe.
        unsafe {
            let mine = pack_parts(
                sbuf,
                crate::arr(scounts, n, "sendcounts")?,
                crate::arr(sdispls, n, "sdispls")?,
                &st.dt(sdt)?,
            )?;
            let all = allgather_bytes(comm.world(), &mine)?;
            let got = all
                .iter()
                .map(|a| part_of(a, me).map(<[u8]>::to_vec))
                .collect::<R<Vec<_>>>()?;
            let (rc, rd) = nbc::given(rcounts, rdispls)(size)?;
            lay_out(&got, rbuf, &rc, &rd, &st.dt(rdt)?, None)?;
        }
        st.progress();
        Ok(())
    })
}

/// The send buffer of a reduction, or the receive buffer for MPI_IN_PLACE.
pub(crate) fn source(sbuf: *const c_void, rbuf: *mut c_void) -> *const c_void {
    if sbuf as isize == IN_PLACE {
        rbuf as *const c_void
    } else {
        sbuf
    }
}

/// MPI_Scan (inclusive) and MPI_Exscan.
#[allow(clippy::too_many_arguments)]
unsafe fn scan(
    st: &mut State,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    c: c_int,
    inclusive: bool,
) -> R {
    let red = st.reducer(op, dt)?;
    let d = st.dt(dt)?;
    let n = count(n, "count")?;
    let comm = st.intra(c)?;
    let me = comm.rank();
    // SAFETY: MPI's contract: the buffers hold n elements of dt.
    let mine = unsafe { pack(source(sbuf, rbuf), n, &d)? };
    let all = allgather_bytes(comm.world(), &mine)?;
    let upto = if inclusive { me + 1 } else { me };
    if upto > 0 {
        let acc = red.fold(n, &all[..upto])?;
        // SAFETY: as above.
        unsafe { unpack(&acc, rbuf, n, &d)? };
    }
    st.progress();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Scan(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Scan", On::Comm(c), |st| unsafe {
        scan(st, sbuf, rbuf, n, dt, op, c, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Exscan(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Exscan", On::Comm(c), |st| unsafe {
        scan(st, sbuf, rbuf, n, dt, op, c, false)
    })
}

/// Reduces `counts.sum()` elements and leaves block `me` (counts[me] elements, after
/// the blocks of lower ranks) in `rbuf`.
unsafe fn reduce_scatter(
    st: &mut State,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: &[usize],
    dt: c_int,
    op: c_int,
    c: c_int,
) -> R {
    let d = st.dt(dt)?;
    let me = st.intra(c)?.rank();
    let total: usize = counts.iter().sum();
    // SAFETY: MPI's contract: the send buffer (or with MPI_IN_PLACE the receive
    // buffer) holds every block.
    let mine = unsafe { pack(source(sbuf, rbuf), total, &d)? };
    let acc = reduce_all(st, c, &mine, total, dt, op)?;
    let lo = counts[..me].iter().sum::<usize>() * d.size();
    let hi = lo + counts[me] * d.size();
    // SAFETY: MPI's contract: the receive buffer holds this rank's block.
    unsafe { unpack(&acc[lo..hi], rbuf, counts[me], &d)? };
    st.progress();
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Reduce_scatter_block", On::Comm(c), |st| {
        let counts = vec![count(n, "recvcount")?; st.intra(c)?.size()];
        // SAFETY: MPI's contract, forwarded.
        unsafe { reduce_scatter(st, sbuf, rbuf, &counts, dt, op, c) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    dt: c_int,
    op: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Reduce_scatter", On::Comm(c), |st| {
        let size = st.intra(c)?.size() as c_int;
        // SAFETY: MPI's contract: size counts.
        let counts = unsafe { crate::arr(rcounts, size, "recvcounts")? }
            .iter()
            .map(|&n| count(n, "recvcounts"))
            .collect::<R<Vec<_>>>()?;
        // SAFETY: MPI's contract, forwarded.
        unsafe { reduce_scatter(st, sbuf, rbuf, &counts, dt, op, c) }
    })
}
