//! Nonblocking collectives (`MPI_Ibarrier`, `MPI_Ibcast`, `MPI_Iallreduce`, …) over
//! the message layer.
//!
//! A nonblocking collective is messages: at the call, each rank sends its part to the
//! ranks that need it (eagerly, as every send here), on the communicator's collective
//! context with a tag numbering the communicator's nonblocking collectives (every rank
//! numbers them alike, since MPI has all ranks start them in the same order). The
//! request completes once every expected part has arrived and every send has left;
//! then the parts are laid out into the program's buffers.
//!
//! Progress: every wait and test of the message layer (`State::pump`) takes in the
//! parts of *every* pending collective, not only of the request it waits for, and
//! sends what its queues hold. So a rank blocked in `MPI_Wait` on a receive, or
//! looping on `MPI_Test` of another request, moves its collectives on, and its peers
//! never wait for it to wait on them.
//!
//! The algorithms are linear (each rank sends straight to each rank that needs its
//! part): right for the rank counts of one node, and never more messages per rank
//! than ranks.

use crate::dtype::{pack, unpack};
use crate::op::Reducer;
use crate::p2p::{Req, Status};
use crate::{call, code, count, fail, out, Lease, On, State, R};
use rma_win::Datatype;
use std::ffi::{c_int, c_void};

const IN_PLACE: isize = -1;

/// A pending nonblocking collective.
pub(crate) struct Coll {
    ctx: u64,
    tag: c_int,
    /// The parts, by rank of the communicator; None while one is still expected.
    got: Vec<Option<Vec<u8>>>,
    /// This rank's sends: (MPI_COMM_WORLD rank, send number).
    sends: Vec<(usize, u64)>,
    finish: Finish,
}

/// What completing a collective writes into the program's buffers.
enum Finish {
    Nothing,
    /// Part `from` into `n` elements of `dt` at `buf`.
    One {
        from: usize,
        buf: *mut c_void,
        n: usize,
        dt: Datatype,
    },
    /// The parts combined in rank order into `n` elements at `buf`.
    Reduce {
        buf: *mut c_void,
        n: usize,
        dt: Datatype,
        red: Reducer,
    },
    /// Part r into `counts[r]` elements at `buf + displs[r] * extent`, for every r
    /// but `skip`.
    Each {
        buf: *mut c_void,
        counts: Vec<usize>,
        displs: Vec<isize>,
        dt: Datatype,
        skip: Option<usize>,
    },
    /// Part r, if Some((offset in bytes, count, datatype)), at `buf + offset`.
    Parts {
        buf: *mut c_void,
        parts: Vec<Option<(isize, usize, Datatype)>>,
    },
    /// The parts combined in rank order (`total` elements), and of the result the
    /// `n` elements from element `lo` into `buf`.
    Block {
        buf: *mut c_void,
        total: usize,
        lo: usize,
        n: usize,
        dt: Datatype,
        red: Reducer,
    },
}

impl Finish {
    /// Lays the parts out.
    ///
    /// # Safety
    /// The buffers are the ones the program handed the collective, which MPI keeps
    /// valid and untouched by the program until the request completes.
    unsafe fn run(&self, got: Vec<Vec<u8>>) -> R {
        match self {
            Finish::Nothing => Ok(()),
            // SAFETY: the caller's contract.
            Finish::One { from, buf, n, dt } => unsafe { unpack(&got[*from], *buf, *n, dt) },
            Finish::Reduce { buf, n, dt, red } => {
                let acc = red.fold(*n, &got)?;
                // SAFETY: the caller's contract.
                unsafe { unpack(&acc, *buf, *n, dt) }
            }
            Finish::Each {
                buf,
                counts,
                displs,
                dt,
                skip,
            } => {
                for (r, part) in got.iter().enumerate() {
                    if Some(r) == *skip {
                        continue;
                    }
                    let at = (*buf as isize).wrapping_add(dt.extent() * displs[r]);
                    // SAFETY: the caller's contract.
                    unsafe { unpack(part, at as *mut c_void, counts[r], dt)? };
                }
                Ok(())
            }
            Finish::Parts { buf, parts } => {
                for (part, how) in got.iter().zip(parts) {
                    if let Some((off, n, dt)) = how {
                        let at = (*buf as isize).wrapping_add(*off);
                        // SAFETY: the caller's contract.
                        unsafe { unpack(part, at as *mut c_void, *n, dt)? };
                    }
                }
                Ok(())
            }
            Finish::Block {
                buf,
                total,
                lo,
                n,
                dt,
                red,
            } => {
                let acc = red.fold(*total, &got)?;
                let (a, b) = (lo * dt.size(), (lo + n) * dt.size());
                let block = acc
                    .get(a..b)
                    .ok_or_else(|| fail(code::INTERN, "a reduce-scatter block out of range"))?;
                // SAFETY: the caller's contract.
                unsafe { unpack(block, *buf, *n, dt) }
            }
        }
    }
}

/// One nonblocking collective as this rank takes part in it.
struct Plan {
    /// (rank of the communicator, bytes) for every other rank this rank sends to.
    sends: Vec<(usize, Vec<u8>)>,
    /// The ranks whose parts this rank waits for.
    expect: Vec<usize>,
    /// This rank's own part, where the finish reads it.
    own: Option<Vec<u8>>,
    finish: Finish,
}

impl State {
    /// Starts a nonblocking collective on `c`; its request handle.
    fn start(&mut self, c: c_int, plan: Plan) -> R<c_int> {
        let comm = self.comm_mut(c)?;
        let seq = comm.nbc;
        comm.nbc += 1;
        let (ctx, me, size) = (comm.nbc_ctx(), comm.rank(), comm.size());
        let tag = (seq & 0x3fff_ffff) as c_int;
        let ranks = comm.ranks.clone();
        // what this rank stored into its windows before the call is public once the
        // others can act on its part
        self.progress();
        let mut sends = Vec::with_capacity(plan.sends.len());
        for (r, data) in plan.sends {
            let to = ranks[r];
            sends.push((to, self.p2p.send(to, ctx, me as c_int, tag, &data)?));
        }
        let mut got: Vec<Option<Vec<u8>>> = vec![Some(Vec::new()); size];
        for r in plan.expect {
            got[r] = None;
        }
        if let Some(own) = plan.own {
            got[me] = Some(own);
        }
        let h = self.reqs.insert(
            1,
            Req::Coll(Box::new(Coll {
                ctx,
                tag,
                got,
                sends,
                finish: plan.finish,
            })),
        );
        self.p2p.colls.push(h);
        self.pump()?;
        Ok(h)
    }

    /// Takes in the parts of every pending collective that have arrived.
    pub(crate) fn collect(&mut self) {
        let State { reqs, p2p, .. } = self;
        let mut pending = std::mem::take(&mut p2p.colls);
        pending.retain(|&h| {
            let Some(Req::Coll(c)) = reqs.get_mut(h) else {
                return false;
            };
            for (r, slot) in c.got.iter_mut().enumerate() {
                if slot.is_none() {
                    *slot = p2p.take(c.ctx, r as c_int, c.tag);
                }
            }
            true
        });
        p2p.colls = pending;
    }

    /// Completes collective `h` if every part is in and every send has left.
    pub(crate) fn finish_coll(&mut self, h: c_int) -> R<Option<Status>> {
        let ready = match self.reqs.get(h) {
            Some(Req::Coll(c)) => {
                c.got.iter().all(Option::is_some)
                    && c.sends.iter().all(|&(to, seq)| self.p2p.sent(to, seq))
            }
            _ => false,
        };
        if !ready {
            return Ok(None);
        }
        let Some(Req::Coll(c)) = self.reqs.remove(h) else {
            return Err(fail(code::INTERN, "a collective request vanished"));
        };
        self.p2p.colls.retain(|&x| x != h);
        let got = c.got.into_iter().map(Option::unwrap_or_default).collect();
        // SAFETY: the buffers are the program's, handed to this collective; MPI keeps
        // them valid and untouched until the request completes, which is now.
        unsafe { c.finish.run(got)? };
        self.progress();
        Ok(Some(Status::EMPTY))
    }
}

/// How a collective's caller takes it: a request handed out (the nonblocking
/// calls), or completed before the call returns (the blocking collectives at
/// MPI_THREAD_MULTIPLE, whose waits then let other threads' calls run).
#[derive(Clone, Copy)]
pub(crate) enum Mode {
    Request(*mut c_int),
    Blocking,
}

/// Starts a collective and hands out its request, or completes it.
fn give(st: &mut Lease, c: c_int, plan: Plan, mode: Mode) -> R {
    match mode {
        Mode::Request(req) => {
            if req.is_null() {
                return Err(fail(code::ARG, "request is NULL"));
            }
            let h = st.start(c, plan)?;
            // SAFETY: MPI's contract: `req` points to a request handle (checked
            // non-null).
            unsafe { out(req, h, "request") }
        }
        Mode::Blocking => {
            let h = st.start(c, plan)?;
            crate::p2p::wait_one(st, h).map(drop)
        }
    }
}

/// MPI_Barrier at MPI_THREAD_MULTIPLE: two rounds, with what arrived taken in
/// between, so that no rank goes on before every rank has taken in what arrived
/// before the barrier (as the shared-memory barrier has it for aliased windows).
pub(crate) fn barrier(st: &mut Lease, c: c_int) -> R {
    for _ in 0..2 {
        st.progress();
        let comm = st.intra(c)?;
        let (me, size) = (comm.rank(), comm.size());
        let plan = Plan {
            sends: others(me, size)
                .into_iter()
                .map(|r| (r, Vec::new()))
                .collect(),
            expect: others(me, size),
            own: None,
            finish: Finish::Nothing,
        };
        give(st, c, plan, Mode::Blocking)?;
    }
    Ok(())
}

/// Every other rank of the communicator.
fn others(me: usize, size: usize) -> Vec<usize> {
    (0..size).filter(|&r| r != me).collect()
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibarrier(c: c_int, req: *mut c_int) -> c_int {
    call("MPI_Ibarrier", On::Comm(c), |st| {
        let comm = st.intra(c)?;
        let (me, size) = (comm.rank(), comm.size());
        let plan = Plan {
            sends: others(me, size)
                .into_iter()
                .map(|r| (r, Vec::new()))
                .collect(),
            expect: others(me, size),
            own: None,
            finish: Finish::Nothing,
        };
        give(st, c, plan, Mode::Request(req))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast(
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    root: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Ibcast", On::Comm(c), |st| unsafe {
        bcast(st, buf, n, dt, root, c, Mode::Request(req))
    })
}

/// MPI_Ibcast, and MPI_Bcast at MPI_THREAD_MULTIPLE.
///
/// # Safety
/// MPI's contract: `buf` holds n elements of dt, until the request completes.
pub(crate) unsafe fn bcast(
    st: &mut Lease,
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    root: c_int,
    c: c_int,
    mode: Mode,
) -> R {
    let comm = st.intra(c)?;
    let (me, size) = (comm.rank(), comm.size());
    let root = crate::coll::check_root(root, size)?;
    let d = st.dt(dt)?;
    let n = count(n, "count")?;
    let plan = if me == root {
        // SAFETY: the caller's contract.
        let data = unsafe { pack(buf, n, &d)? };
        Plan {
            sends: others(me, size)
                .into_iter()
                .map(|r| (r, data.clone()))
                .collect(),
            expect: Vec::new(),
            own: None,
            finish: Finish::Nothing,
        }
    } else {
        Plan {
            sends: Vec::new(),
            expect: vec![root],
            own: None,
            finish: Finish::One {
                from: root,
                buf,
                n,
                dt: d,
            },
        }
    };
    give(st, c, plan, mode)
}

/// MPI_Iallreduce (`root` None) and MPI_Ireduce.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ireduce(
    st: &mut Lease,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    root: Option<c_int>,
    c: c_int,
    mode: Mode,
) -> R {
    let comm = st.intra(c)?;
    let (me, size) = (comm.rank(), comm.size());
    let root = root.map(|r| crate::coll::check_root(r, size)).transpose()?;
    let red = st.reducer(op, dt)?;
    let d = st.dt(dt)?;
    let n = count(n, "count")?;
    let receives = root.is_none_or(|r| r == me);
    let src = if sbuf as isize == IN_PLACE && receives {
        rbuf as *const c_void
    } else {
        sbuf
    };
    // SAFETY: MPI's contract: the buffers hold n elements of dt.
    let mine = unsafe { pack(src, n, &d)? };
    let to: Vec<usize> = match root {
        None => others(me, size),
        Some(r) if r == me => Vec::new(),
        Some(r) => vec![r],
    };
    let plan = Plan {
        sends: to.into_iter().map(|r| (r, mine.clone())).collect(),
        expect: if receives {
            others(me, size)
        } else {
            Vec::new()
        },
        own: Some(mine),
        finish: if receives {
            Finish::Reduce {
                buf: rbuf,
                n,
                dt: d,
                red,
            }
        } else {
            Finish::Nothing
        },
    };
    give(st, c, plan, mode)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallreduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Iallreduce", On::Comm(c), |st| unsafe {
        ireduce(st, sbuf, rbuf, n, dt, op, None, c, Mode::Request(req))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    root: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Ireduce", On::Comm(c), |st| unsafe {
        ireduce(st, sbuf, rbuf, n, dt, op, Some(root), c, Mode::Request(req))
    })
}

/// MPI_Iallgather(v) (`root` None) and MPI_Igather(v): `counts` and `displs` (in
/// elements of `rdt`) where the parts go, at ranks that receive.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn igather(
    st: &mut Lease,
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    counts: impl FnOnce(usize) -> R<(Vec<usize>, Vec<isize>)>,
    rdt: c_int,
    root: Option<c_int>,
    c: c_int,
    mode: Mode,
) -> R {
    let comm = st.intra(c)?;
    let (me, size) = (comm.rank(), comm.size());
    let root = root.map(|r| crate::coll::check_root(r, size)).transpose()?;
    let receives = root.is_none_or(|r| r == me);
    let in_place = receives && sbuf as isize == IN_PLACE;
    let layout = if receives {
        Some((counts(size)?, st.dt(rdt)?))
    } else {
        None
    };
    let mine = match &layout {
        Some(((counts, displs), rd)) if in_place => {
            let at = (rbuf as isize).wrapping_add(rd.extent() * displs[me]);
            // SAFETY: MPI's contract: with MPI_IN_PLACE this rank's part of the
            // receive buffer is its contribution.
            unsafe { pack(at as *const c_void, counts[me], rd)? }
        }
        // SAFETY: MPI's contract: the send buffer holds sn elements of sdt.
        _ => unsafe { pack(sbuf, count(sn, "sendcount")?, &st.dt(sdt)?)? },
    };
    let to: Vec<usize> = match root {
        None => others(me, size),
        Some(r) if r == me => Vec::new(),
        Some(r) => vec![r],
    };
    let plan = Plan {
        sends: to.into_iter().map(|r| (r, mine.clone())).collect(),
        expect: if receives {
            others(me, size)
        } else {
            Vec::new()
        },
        own: Some(mine),
        finish: match layout {
            Some(((counts, displs), dt)) => Finish::Each {
                buf: rbuf,
                counts,
                displs,
                dt,
                skip: in_place.then_some(me),
            },
            None => Finish::Nothing,
        },
    };
    give(st, c, plan, mode)
}

/// Counts and displacements of equal parts of `n` elements.
pub(crate) fn equal(n: c_int) -> impl FnOnce(usize) -> R<(Vec<usize>, Vec<isize>)> {
    move |size| {
        let n = count(n, "recvcount")?;
        Ok((vec![n; size], (0..size).map(|r| (r * n) as isize).collect()))
    }
}

/// Counts and displacements from the program's arrays.
pub(crate) fn given(
    counts: *const c_int,
    displs: *const c_int,
) -> impl FnOnce(usize) -> R<(Vec<usize>, Vec<isize>)> {
    move |size| {
        // SAFETY: MPI's contract: size counts and displacements.
        let (c, d) = unsafe {
            (
                crate::arr(counts, size as c_int, "recvcounts")?,
                crate::arr(displs, size as c_int, "displs")?,
            )
        };
        Ok((
            c.iter()
                .map(|&n| count(n, "recvcounts"))
                .collect::<R<_>>()?,
            d.iter().map(|&x| x as isize).collect(),
        ))
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgather(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Iallgather", On::Comm(c), |st| unsafe {
        igather(
            st,
            sbuf,
            sn,
            sdt,
            rbuf,
            equal(rn),
            rdt,
            None,
            c,
            Mode::Request(req),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgatherv(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Iallgatherv", On::Comm(c), |st| unsafe {
        igather(
            st,
            sbuf,
            sn,
            sdt,
            rbuf,
            given(rcounts, displs),
            rdt,
            None,
            c,
            Mode::Request(req),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Igather(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    root: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Igather", On::Comm(c), |st| unsafe {
        igather(
            st,
            sbuf,
            sn,
            sdt,
            rbuf,
            equal(rn),
            rdt,
            Some(root),
            c,
            Mode::Request(req),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Igatherv(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: c_int,
    root: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Igatherv", On::Comm(c), |st| unsafe {
        igather(
            st,
            sbuf,
            sn,
            sdt,
            rbuf,
            given(rcounts, displs),
            rdt,
            Some(root),
            c,
            Mode::Request(req),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoall(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Ialltoall", On::Comm(c), |st| unsafe {
        alltoall(st, sbuf, sn, sdt, rbuf, rn, rdt, c, Mode::Request(req))
    })
}

/// MPI_Ialltoall, and MPI_Alltoall at MPI_THREAD_MULTIPLE.
///
/// # Safety
/// MPI's contract: the buffers hold size parts of sn and rn elements, until the
/// request completes.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoall(
    st: &mut Lease,
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    c: c_int,
    mode: Mode,
) -> R {
    if sbuf as isize == IN_PLACE {
        return Err(fail(code::UNSUPPORTED, "MPI_IN_PLACE in MPI_Ialltoall"));
    }
    let comm = st.intra(c)?;
    let (me, size) = (comm.rank(), comm.size());
    let sd = st.dt(sdt)?;
    let sn = count(sn, "sendcount")?;
    // SAFETY: the caller's contract: the send buffer holds size * sn elements of sdt.
    let all = unsafe { pack(sbuf, sn * size, &sd)? };
    let part = sn * sd.size();
    let piece = |r: usize| all[r * part..(r + 1) * part].to_vec();
    let (counts, displs) = equal(rn)(size)?;
    let plan = Plan {
        sends: others(me, size)
            .into_iter()
            .map(|r| (r, piece(r)))
            .collect(),
        expect: others(me, size),
        own: Some(piece(me)),
        finish: Finish::Each {
            buf: rbuf,
            counts,
            displs,
            dt: st.dt(rdt)?,
            skip: None,
        },
    };
    give(st, c, plan, mode)
}

/// Packs part r of a buffer for every rank r: `counts[r]` elements of `dts[r]` at
/// `base + offs[r]` bytes.
///
/// # Safety
/// MPI's contract: the buffer holds every part where the offsets say.
unsafe fn pack_each(
    base: *const c_void,
    counts: &[usize],
    offs: &[isize],
    dts: &[Datatype],
) -> R<Vec<Vec<u8>>> {
    (0..counts.len())
        .map(|r| {
            let at = (base as isize).wrapping_add(offs[r]);
            // SAFETY: the caller's contract.
            unsafe { pack(at as *const c_void, counts[r], &dts[r]) }
        })
        .collect()
}

/// Byte offsets of displacements counted in elements of `dt`.
fn bytes_of(displs: &[isize], dt: &Datatype) -> Vec<isize> {
    displs.iter().map(|&d| d * dt.extent()).collect()
}

/// MPI_Iscatter(v) (`counts` gives the root's parts), and MPI_Scatter(v) at
/// MPI_THREAD_MULTIPLE.
///
/// # Safety
/// MPI's contract: the buffers hold the parts the counts describe, until the
/// request completes.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iscatter(
    st: &mut Lease,
    sbuf: *const c_void,
    counts: impl FnOnce(usize) -> R<(Vec<usize>, Vec<isize>)>,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    root: c_int,
    c: c_int,
    mode: Mode,
) -> R {
    let comm = st.intra(c)?;
    let (me, size) = (comm.rank(), comm.size());
    let root = crate::coll::check_root(root, size)?;
    let in_place = me == root && rbuf as isize == IN_PLACE;
    let receive = |st: &State| -> R<Finish> {
        Ok(if in_place {
            Finish::Nothing
        } else {
            Finish::One {
                from: root,
                buf: rbuf,
                n: count(rn, "recvcount")?,
                dt: st.dt(rdt)?,
            }
        })
    };
    let plan = if me == root {
        let sd = st.dt(sdt)?;
        let (counts, displs) = counts(size)?;
        // SAFETY: the caller's contract.
        let mut parts =
            unsafe { pack_each(sbuf, &counts, &bytes_of(&displs, &sd), &vec![sd; size])? };
        let own = std::mem::take(&mut parts[me]);
        Plan {
            sends: parts
                .into_iter()
                .enumerate()
                .filter(|(r, _)| *r != me)
                .collect(),
            expect: Vec::new(),
            own: Some(own),
            finish: receive(st)?,
        }
    } else {
        Plan {
            sends: Vec::new(),
            expect: vec![root],
            own: None,
            finish: receive(st)?,
        }
    };
    give(st, c, plan, mode)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatter(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    root: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Iscatter", On::Comm(c), |st| unsafe {
        iscatter(
            st,
            sbuf,
            equal(sn),
            sdt,
            rbuf,
            rn,
            rdt,
            root,
            c,
            Mode::Request(req),
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatterv(
    sbuf: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    root: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Iscatterv", On::Comm(c), |st| unsafe {
        let counts = given(scounts, displs);
        iscatter(
            st,
            sbuf,
            counts,
            sdt,
            rbuf,
            rn,
            rdt,
            root,
            c,
            Mode::Request(req),
        )
    })
}

/// Every rank's part for every rank, each with its own count, byte offset and
/// datatype on both sides (MPI_Ialltoallv and MPI_Ialltoallw, and their blocking
/// forms).
///
/// # Safety
/// MPI's contract: the buffers hold the parts described, until the request
/// completes.
unsafe fn exchange(
    st: &mut Lease,
    sbuf: *const c_void,
    send: (Vec<usize>, Vec<isize>, Vec<Datatype>),
    rbuf: *mut c_void,
    recv: (Vec<usize>, Vec<isize>, Vec<Datatype>),
    c: c_int,
    mode: Mode,
) -> R {
    if sbuf as isize == IN_PLACE {
        return Err(fail(code::UNSUPPORTED, "MPI_IN_PLACE in an all-to-all"));
    }
    let comm = st.intra(c)?;
    let me = comm.rank();
    // SAFETY: the caller's contract.
    let mut parts = unsafe { pack_each(sbuf, &send.0, &send.1, &send.2)? };
    let own = std::mem::take(&mut parts[me]);
    let size = parts.len();
    let (counts, offs, dts) = recv;
    let plan = Plan {
        sends: parts
            .into_iter()
            .enumerate()
            .filter(|(r, _)| *r != me)
            .collect(),
        expect: others(me, size),
        own: Some(own),
        finish: Finish::Parts {
            buf: rbuf,
            parts: (0..size)
                .map(|r| Some((offs[r], counts[r], dts[r].clone())))
                .collect(),
        },
    };
    give(st, c, plan, mode)
}

/// Counts, byte offsets (displacements times the type's extent) and datatypes of
/// MPI_Alltoallv's one side.
///
/// # Safety
/// MPI's contract: size counts and displacements.
unsafe fn side_v(
    st: &State,
    counts: *const c_int,
    displs: *const c_int,
    dt: c_int,
    size: usize,
) -> R<(Vec<usize>, Vec<isize>, Vec<Datatype>)> {
    // SAFETY: the caller's contract.
    let (c, d) = given(counts, displs)(size)?;
    let dt = st.dt(dt)?;
    Ok((c, bytes_of(&d, &dt), vec![dt; size]))
}

/// The same for MPI_Alltoallw (byte displacements, a datatype per rank).
///
/// # Safety
/// MPI's contract: size counts, displacements and datatypes.
unsafe fn side_w(
    st: &State,
    counts: *const c_int,
    displs: *const c_int,
    dts: *const c_int,
    size: usize,
) -> R<(Vec<usize>, Vec<isize>, Vec<Datatype>)> {
    // SAFETY: the caller's contract.
    let (c, d) = given(counts, displs)(size)?;
    // SAFETY: the caller's contract.
    let ts = unsafe { crate::arr(dts, size as c_int, "types")? };
    Ok((c, d, ts.iter().map(|&t| st.dt(t)).collect::<R<_>>()?))
}

/// MPI_Ialltoallv, and MPI_Alltoallv at MPI_THREAD_MULTIPLE.
///
/// # Safety
/// As [`exchange`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoallv(
    st: &mut Lease,
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: c_int,
    c: c_int,
    mode: Mode,
) -> R {
    let size = st.intra(c)?.size();
    // SAFETY: the caller's contract.
    unsafe {
        let send = side_v(st, scounts, sdispls, sdt, size)?;
        let recv = side_v(st, rcounts, rdispls, rdt, size)?;
        exchange(st, sbuf, send, rbuf, recv, c, mode)
    }
}

/// MPI_Ialltoallw and MPI_Alltoallw.
///
/// # Safety
/// As [`exchange`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoallw(
    st: &mut Lease,
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const c_int,
    c: c_int,
    mode: Mode,
) -> R {
    let size = st.intra(c)?.size();
    // SAFETY: the caller's contract.
    unsafe {
        let send = side_w(st, scounts, sdispls, stypes, size)?;
        let recv = side_w(st, rcounts, rdispls, rtypes, size)?;
        exchange(st, sbuf, send, rbuf, recv, c, mode)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallv(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Ialltoallv", On::Comm(c), |st| unsafe {
        let m = Mode::Request(req);
        alltoallv(
            st, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c, m,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallw(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Ialltoallw", On::Comm(c), |st| unsafe {
        let m = Mode::Request(req);
        alltoallw(
            st, sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, c, m,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Alltoallw", On::Comm(c), |st| unsafe {
        let m = Mode::Blocking;
        alltoallw(
            st, sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, c, m,
        )
    })
}

/// MPI_Ireduce_scatter(_block): a reduction of `counts.sum()` elements of which this
/// rank keeps block `me`.
///
/// # Safety
/// MPI's contract: the send buffer (or with MPI_IN_PLACE the receive buffer) holds
/// every block, the receive buffer this rank's, until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn ireduce_scatter(
    st: &mut Lease,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: Vec<usize>,
    dt: c_int,
    op: c_int,
    c: c_int,
    mode: Mode,
) -> R {
    let comm = st.intra(c)?;
    let (me, size) = (comm.rank(), comm.size());
    let red = st.reducer(op, dt)?;
    let d = st.dt(dt)?;
    let total: usize = counts.iter().sum();
    let src = if sbuf as isize == IN_PLACE {
        rbuf as *const c_void
    } else {
        sbuf
    };
    // SAFETY: the caller's contract.
    let mine = unsafe { pack(src, total, &d)? };
    let plan = Plan {
        sends: others(me, size)
            .into_iter()
            .map(|r| (r, mine.clone()))
            .collect(),
        expect: others(me, size),
        own: Some(mine),
        finish: Finish::Block {
            buf: rbuf,
            total,
            lo: counts[..me].iter().sum(),
            n: counts[me],
            dt: d,
            red,
        },
    };
    give(st, c, plan, mode)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter_block(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: c_int,
    dt: c_int,
    op: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    call("MPI_Ireduce_scatter_block", On::Comm(c), |st| {
        let counts = vec![count(n, "recvcount")?; st.intra(c)?.size()];
        // SAFETY: MPI's contract, forwarded.
        unsafe { ireduce_scatter(st, sbuf, rbuf, counts, dt, op, c, Mode::Request(req)) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter(
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    dt: c_int,
    op: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    call("MPI_Ireduce_scatter", On::Comm(c), |st| {
        let size = st.intra(c)?.size();
        // SAFETY: MPI's contract: size counts.
        let counts = unsafe { crate::arr(rcounts, size as c_int, "recvcounts")? }
            .iter()
            .map(|&n| count(n, "recvcounts"))
            .collect::<R<Vec<_>>>()?;
        // SAFETY: MPI's contract, forwarded.
        unsafe { ireduce_scatter(st, sbuf, rbuf, counts, dt, op, c, Mode::Request(req)) }
    })
}
