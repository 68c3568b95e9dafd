//! Collectives, over the world's barrier and all-gather (an rma world's all-gather
//! carries at most 248 bytes per rank per round, so longer contributions go in
//! rounds). They are correct, not fast: rma's C interface exists for one-sided
//! programs, whose collectives are few and small.

use crate::dtype::{pack, unpack};
use crate::{call, code, count, fail, On, State, R};
use rma_win::{Op, World};
use std::ffi::{c_int, c_void};

const CHUNK: usize = 240;
const IN_PLACE: isize = -1;

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

pub(crate) fn op_of(op: c_int) -> R<Op> {
    u8::try_from(op - 1)
        .ok()
        .and_then(Op::from_u8)
        .ok_or_else(|| fail(code::OP, format!("{op} is not an operation")))
}

/// Combines every rank's packed contribution, in rank order.
fn reduce_all(st: &State, c: c_int, mine: &[u8], dt: c_int, op: c_int) -> R<Vec<u8>> {
    let op = op_of(op)?;
    let basic = st
        .dt(dt)?
        .basic_type()
        .ok_or_else(|| fail(code::TYPE, "a reduction needs elements of one basic type"))?;
    if !rma_ops::op_defined_on(op, basic) || matches!(op, Op::Replace | Op::NoOp) {
        return Err(fail(
            code::OP,
            format!("{op} is not defined on {basic:?} for a reduction"),
        ));
    }
    let all = allgather_bytes(st.intra(c)?.world(), mine)?;
    let mut acc = all[0].clone();
    for other in &all[1..] {
        if other.len() != acc.len() {
            return Err(fail(
                code::COUNT,
                "ranks gave different counts to a reduction",
            ));
        }
        // acc = acc op other: every predefined reduction is commutative
        rma_ops::apply_bytes(basic, op, &mut acc, other);
    }
    Ok(acc)
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
    call("MPI_Barrier", On::Comm(c), |st| barrier(st, c))
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

fn check_root(root: c_int, size: usize) -> R<usize> {
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
        let d = st.dt(dt)?;
        let n = count(n, "count")?;
        let src = if sbuf as isize == IN_PLACE {
            rbuf as *const c_void
        } else {
            sbuf
        };
        // SAFETY: MPI's contract: the buffers hold n elements of dt.
        let mine = unsafe { pack(src, n, &d)? };
        let acc = reduce_all(st, c, &mine, dt, op)?;
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
        let comm = st.intra(c)?;
        let root = check_root(root, comm.size())?;
        let me = comm.rank();
        let d = st.dt(dt)?;
        let n = count(n, "count")?;
        let src = if sbuf as isize == IN_PLACE && me == root {
            rbuf as *const c_void
        } else {
            sbuf
        };
        // SAFETY: MPI's contract: the buffers hold n elements of dt.
        let mine = unsafe { pack(src, n, &d)? };
        let acc = reduce_all(st, c, &mine, dt, op)?;
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
        // SAFETY: MPI's contract, forwarded.
        unsafe { scatter(st, sbuf, sn, sdt, rbuf, rn, rdt, None, c) }
    })
}
