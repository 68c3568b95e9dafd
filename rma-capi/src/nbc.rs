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

use crate::coll::{source, IN_PLACE};

/// One part of a collective: where it comes from, (rank of the communicator, tag),
/// None for no message (this rank's own part, or MPI_PROC_NULL); and the bytes once
/// in, None while still expected.
type Part = (Option<(c_int, c_int)>, Option<Vec<u8>>);

/// A pending nonblocking collective.
pub(crate) struct Coll {
    ctx: u64,
    /// The parts, in the order the finish reads them (by rank of the communicator,
    /// or by neighbor): where each comes from, (rank, tag), and the part once in
    /// (None while it is still expected).
    got: Vec<Part>,
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
                // SAFETY: the caller's contract.
                unsafe { crate::coll::lay_out(&got, *buf, counts, displs, dt, *skip) }
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
        let size = self.comm(c)?.size();
        let me = self.comm(c)?.rank();
        let mut got: Vec<Part> = (0..size).map(|_| (None, Some(Vec::new()))).collect();
        for r in plan.expect {
            got[r] = (Some((r as c_int, 0)), None);
        }
        if let Some(own) = plan.own {
            got[me].1 = Some(own);
        }
        let sends = plan.sends.into_iter().map(|(r, d)| (r, 0, d)).collect();
        self.start_parts(c, sends, got, plan.finish)
    }

    /// Starts a collective whose parts are `got` (see [`Coll`]; the tags there are
    /// sub-tags, told apart within the collective) and whose sends are (rank of the
    /// communicator, sub-tag of the part at its receiver, bytes); its request.
    fn start_parts(
        &mut self,
        c: c_int,
        plan_sends: Vec<(usize, u8, Vec<u8>)>,
        mut got: Vec<Part>,
        finish: Finish,
    ) -> R<c_int> {
        let comm = self.comm_mut(c)?;
        let seq = comm.nbc;
        comm.nbc += 1;
        let (ctx, me) = (comm.nbc_ctx(), comm.rank());
        // the collective's number, with 8 bits for the part's sub-tag
        let tag = |sub: u8| (((seq & 0x3f_ffff) as c_int) << 8) | c_int::from(sub);
        let ranks = comm.ranks.clone();
        for (from, _) in got.iter_mut() {
            if let Some((_, t)) = from {
                *t = tag(*t as u8);
            }
        }
        // what this rank stored into its windows before the call is public once the
        // others can act on its part
        self.progress();
        let mut sends = Vec::with_capacity(plan_sends.len());
        for (r, sub, data) in plan_sends {
            let to = ranks[r];
            sends.push((to, self.p2p.send(to, ctx, me as c_int, tag(sub), &data)?));
        }
        let h = self.reqs.insert(
            1,
            Req::Coll(Box::new(Coll {
                ctx,
                got,
                sends,
                finish,
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
            for (from, slot) in c.got.iter_mut() {
                if let (Some((r, tag)), None) = (*from, &slot) {
                    *slot = p2p.take(c.ctx, r, tag);
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
                c.got.iter().all(|(_, d)| d.is_some())
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
        let got = c
            .got
            .into_iter()
            .map(|(_, d)| d.unwrap_or_default())
            .collect();
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
    // MPI_IN_PLACE counts where the result lands only
    let src = if receives { source(sbuf, rbuf) } else { sbuf };
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
    let src = source(sbuf, rbuf);
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

/// A communicator's neighbors as the neighborhood collectives see them: where each
/// part of the receive buffer comes from (in-neighbors), and where each part of the
/// send buffer goes (out-neighbors), each with the sub-tag that tells the part apart
/// at its receiver; None for MPI_PROC_NULL (off the edge of a Cartesian grid).
struct Neighbors {
    ins: Vec<Option<(usize, u8)>>,
    outs: Vec<Option<(usize, u8)>>,
}

/// The `n`th earlier occurrence of `v[k]` in `v`, as a sub-tag: parts between one
/// pair of ranks are matched in the order of their edges.
fn occurrence(v: &[c_int], k: usize) -> R<u8> {
    let n = v[..k].iter().filter(|&&x| x == v[k]).count();
    u8::try_from(n).map_err(|_| {
        fail(
            code::UNSUPPORTED,
            "more than 256 edges between two ranks in a neighborhood collective",
        )
    })
}

fn neighbors(st: &State, c: c_int) -> R<Neighbors> {
    let me = st.intra(c)?.rank();
    match st.topo(c)? {
        crate::topo::Topo::Cart { dims, periods } => {
            if dims.len() > 127 {
                return Err(fail(
                    code::UNSUPPORTED,
                    "a neighborhood collective on more than 127 dimensions",
                ));
            }
            let list = crate::topo::cart_neighbors(dims, periods, me);
            // my part for the rank one step back is, at that rank, the one from one
            // step forward, and the other way round: the receiver's index is k ^ 1
            Ok(Neighbors {
                ins: list
                    .iter()
                    .enumerate()
                    .map(|(k, r)| r.map(|r| (r, k as u8)))
                    .collect(),
                outs: list
                    .iter()
                    .enumerate()
                    .map(|(k, r)| r.map(|r| (r, (k ^ 1) as u8)))
                    .collect(),
            })
        }
        crate::topo::Topo::Dist { sources, dests, .. } => Ok(Neighbors {
            ins: (0..sources.len())
                .map(|j| Ok(Some((sources[j] as usize, occurrence(sources, j)?))))
                .collect::<R<_>>()?,
            outs: (0..dests.len())
                .map(|k| Ok(Some((dests[k] as usize, occurrence(dests, k)?))))
                .collect::<R<_>>()?,
        }),
    }
}

/// One side of a neighborhood collective: per neighbor, the count, byte offset and
/// datatype of its part.
type Side = (Vec<usize>, Vec<isize>, Vec<Datatype>);

/// A neighborhood collective: part k of the send side goes to out-neighbor k, part k
/// of the receive side comes from in-neighbor k. `send` None: every out-neighbor gets
/// the one part `one` (the all-gathers).
///
/// # Safety
/// MPI's contract: the buffers hold the parts described, until the request
/// completes.
#[allow(clippy::too_many_arguments)]
unsafe fn neighborhood(
    st: &mut Lease,
    c: c_int,
    sbuf: *const c_void,
    send: Result<Side, (usize, Datatype)>,
    rbuf: *mut c_void,
    recv: impl FnOnce(usize) -> R<Side>,
    mode: Mode,
) -> R {
    let nb = neighbors(st, c)?;
    let parts: Vec<Vec<u8>> = match send {
        Ok((counts, offs, dts)) => {
            if counts.len() != nb.outs.len() {
                return Err(fail(code::INTERN, "a send side of the wrong length"));
            }
            // SAFETY: the caller's contract.
            unsafe { pack_each(sbuf, &counts, &offs, &dts)? }
        }
        Err((n, dt)) => {
            // SAFETY: the caller's contract.
            let one = unsafe { pack(sbuf, n, &dt)? };
            vec![one; nb.outs.len()]
        }
    };
    let sends = nb
        .outs
        .iter()
        .zip(parts)
        .filter_map(|(to, data)| to.map(|(r, sub)| (r, sub, data)))
        .collect();
    let (counts, offs, dts) = recv(nb.ins.len())?;
    let got = nb
        .ins
        .iter()
        .map(|from| match from {
            Some((r, sub)) => (Some((*r as c_int, c_int::from(*sub))), None),
            None => (None, Some(Vec::new())),
        })
        .collect();
    let finish = Finish::Parts {
        buf: rbuf,
        parts: (0..nb.ins.len())
            .map(|k| nb.ins[k].map(|_| (offs[k], counts[k], dts[k].clone())))
            .collect(),
    };
    let h = st.start_parts(c, sends, got, finish)?;
    match mode {
        Mode::Request(req) => {
            // SAFETY: MPI's contract: a request out-parameter (checked non-null by
            // the caller).
            unsafe { out(req, h, "request") }
        }
        Mode::Blocking => crate::p2p::wait_one(st, h).map(drop),
    }
}

/// Equal parts of `n` elements of `dt`, one per neighbor, one after the other.
fn equal_side(st: &State, n: c_int, dt: c_int) -> R<impl FnOnce(usize) -> R<Side>> {
    let dt = st.dt(dt)?;
    let n = count(n, "count")?;
    Ok(move |k: usize| {
        Ok((
            vec![n; k],
            (0..k).map(|i| (i * n) as isize * dt.extent()).collect(),
            vec![dt; k],
        ))
    })
}

/// Parts from the program's counts and displacements (in elements of `dt`), one per
/// neighbor.
///
/// # Safety
/// MPI's contract: as many counts and displacements as neighbors.
unsafe fn given_side(
    st: &State,
    counts: *const c_int,
    displs: *const c_int,
    dt: c_int,
) -> R<impl FnOnce(usize) -> R<Side>> {
    let dt = st.dt(dt)?;
    Ok(move |k: usize| {
        let (c, d) = given(counts, displs)(k)?;
        Ok((c, bytes_of(&d, &dt), vec![dt; k]))
    })
}

/// Parts from counts, byte displacements and a datatype per neighbor (alltoallw).
///
/// # Safety
/// MPI's contract: as many counts, displacements and datatypes as neighbors.
unsafe fn typed_side(
    st: &State,
    counts: *const c_int,
    displs: *const isize,
    dts: *const c_int,
) -> impl FnOnce(usize) -> R<Side> + '_ {
    move |k: usize| {
        let n = k as c_int;
        // SAFETY: the caller's contract.
        let (c, d, t) = unsafe {
            (
                crate::arr(counts, n, "counts")?,
                crate::arr(displs, n, "displs")?,
                crate::arr(dts, n, "types")?,
            )
        };
        Ok((
            c.iter().map(|&x| count(x, "counts")).collect::<R<_>>()?,
            d.to_vec(),
            t.iter().map(|&t| st.dt(t)).collect::<R<_>>()?,
        ))
    }
}

/// The number of out-neighbors of `c`.
fn outdegree(st: &State, c: c_int) -> R<usize> {
    Ok(neighbors(st, c)?.outs.len())
}

fn checked(req: *mut c_int) -> R<Mode> {
    if req.is_null() {
        return Err(fail(code::ARG, "request is NULL"));
    }
    Ok(Mode::Request(req))
}

/// MPI_Neighbor_allgather and MPI_Ineighbor_allgather.
///
/// # Safety
/// MPI's contract: the buffers and arrays the arguments describe.
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgather(
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
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        let recv = equal_side(st, rn, rdt)?;
        let send = Err((count(sn, "sendcount")?, st.dt(sdt)?));
        neighborhood(st, c, sbuf, send, rbuf, recv, mode)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_allgather(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Neighbor_allgather", On::Comm(c), |st| unsafe {
        neighbor_allgather(st, sbuf, sn, sdt, rbuf, rn, rdt, c, Mode::Blocking)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_allgather(
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
    call("MPI_Ineighbor_allgather", On::Comm(c), |st| unsafe {
        let mode = checked(req)?;
        neighbor_allgather(st, sbuf, sn, sdt, rbuf, rn, rdt, c, mode)
    })
}

/// MPI_Neighbor_allgatherv and MPI_Ineighbor_allgatherv.
///
/// # Safety
/// MPI's contract: the buffers and arrays the arguments describe.
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgatherv(
    st: &mut Lease,
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: c_int,
    c: c_int,
    mode: Mode,
) -> R {
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        let recv = given_side(st, rcounts, displs, rdt)?;
        let send = Err((count(sn, "sendcount")?, st.dt(sdt)?));
        neighborhood(st, c, sbuf, send, rbuf, recv, mode)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_allgatherv(
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
    call("MPI_Neighbor_allgatherv", On::Comm(c), |st| unsafe {
        neighbor_allgatherv(
            st,
            sbuf,
            sn,
            sdt,
            rbuf,
            rcounts,
            displs,
            rdt,
            c,
            Mode::Blocking,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_allgatherv(
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
    call("MPI_Ineighbor_allgatherv", On::Comm(c), |st| unsafe {
        let mode = checked(req)?;
        neighbor_allgatherv(st, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, c, mode)
    })
}

/// MPI_Neighbor_alltoall and MPI_Ineighbor_alltoall.
///
/// # Safety
/// MPI's contract: the buffers and arrays the arguments describe.
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoall(
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
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        let recv = equal_side(st, rn, rdt)?;
        let send = Ok(equal_side(st, sn, sdt)?(outdegree(st, c)?)?);
        neighborhood(st, c, sbuf, send, rbuf, recv, mode)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoall(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Neighbor_alltoall", On::Comm(c), |st| unsafe {
        neighbor_alltoall(st, sbuf, sn, sdt, rbuf, rn, rdt, c, Mode::Blocking)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_alltoall(
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
    call("MPI_Ineighbor_alltoall", On::Comm(c), |st| unsafe {
        let mode = checked(req)?;
        neighbor_alltoall(st, sbuf, sn, sdt, rbuf, rn, rdt, c, mode)
    })
}

/// MPI_Neighbor_alltoallv and MPI_Ineighbor_alltoallv.
///
/// # Safety
/// MPI's contract: the buffers and arrays the arguments describe.
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallv(
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
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        let recv = given_side(st, rcounts, rdispls, rdt)?;
        let send = Ok(given_side(st, scounts, sdispls, sdt)?(outdegree(st, c)?)?);
        neighborhood(st, c, sbuf, send, rbuf, recv, mode)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoallv(
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
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Neighbor_alltoallv", On::Comm(c), |st| unsafe {
        neighbor_alltoallv(
            st,
            sbuf,
            scounts,
            sdispls,
            sdt,
            rbuf,
            rcounts,
            rdispls,
            rdt,
            c,
            Mode::Blocking,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_alltoallv(
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
    call("MPI_Ineighbor_alltoallv", On::Comm(c), |st| unsafe {
        let mode = checked(req)?;
        neighbor_alltoallv(
            st, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c, mode,
        )
    })
}

/// MPI_Neighbor_alltoallw and MPI_Ineighbor_alltoallw.
///
/// # Safety
/// MPI's contract: the buffers and arrays the arguments describe.
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallw(
    st: &mut Lease,
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const isize,
    stypes: *const c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const isize,
    rtypes: *const c_int,
    c: c_int,
    mode: Mode,
) -> R {
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        let send = Ok(typed_side(st, scounts, sdispls, stypes)(outdegree(st, c)?)?);
        let recv = typed_side(st, rcounts, rdispls, rtypes)(neighbors(st, c)?.ins.len())?;
        neighborhood(st, c, sbuf, send, rbuf, move |_| Ok(recv), mode)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Neighbor_alltoallw(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const isize,
    stypes: *const c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const isize,
    rtypes: *const c_int,
    c: c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Neighbor_alltoallw", On::Comm(c), |st| unsafe {
        neighbor_alltoallw(
            st,
            sbuf,
            scounts,
            sdispls,
            stypes,
            rbuf,
            rcounts,
            rdispls,
            rtypes,
            c,
            Mode::Blocking,
        )
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Ineighbor_alltoallw(
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const isize,
    stypes: *const c_int,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const isize,
    rtypes: *const c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Ineighbor_alltoallw", On::Comm(c), |st| unsafe {
        let mode = checked(req)?;
        neighbor_alltoallw(
            st, sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, c, mode,
        )
    })
}
