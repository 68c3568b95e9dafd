//! Point-to-point messages and requests.
//!
//! Messages travel as datagrams between the ranks' Unix sockets (Linux's abstract
//! namespace, named after the rmarun world and the MPI_COMM_WORLD rank), in
//! fragments of at most 64 KiB. Every send is eager: it returns once the kernel holds
//! the message. A rank that cannot send because the receiver's queue is full drains
//! its own socket meanwhile, so two ranks sending to each other never deadlock. A
//! receive matches, in arrival order, on the communicator's context, the source and
//! the tag, as MPI orders messages between one pair of ranks.
//!
//! Every wait checks the peers' liveness: a dead peer ends it with
//! MPI_ERR_PROC_FAILED within the world's liveness interval.

use crate::dtype::{pack, unpack};
use crate::{call, code, count, fail, out, On, State, R};
use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::{Duration, Instant};

const ANY_SOURCE: c_int = -2;
const ANY_TAG: c_int = -1;
const PROC_NULL: c_int = -1;
const HEADER: usize = 32;
const FRAGMENT: usize = 64 * 1024;

/// A request handle's state.
pub(crate) enum Req {
    /// Complete (a one-sided request, or a send).
    Done,
    /// A receive not yet matched.
    Recv {
        buf: *mut c_void,
        count: usize,
        dt: c_int,
        src: c_int,
        tag: c_int,
        comm: c_int,
    },
    /// A receive matched: its status waits to be reported.
    Received(Status),
}

/// A message that arrived and was not yet received.
struct Msg {
    ctx: u64,
    src: c_int,
    tag: c_int,
    data: Vec<u8>,
}

/// MPI_Status's fields.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Status {
    source: c_int,
    tag: c_int,
    error: c_int,
    bytes: u64,
}

/// C's MPI_Status, as mpi.h lays it out.
#[repr(C)]
#[derive(Debug)]
pub struct MpiStatus {
    source: c_int,
    tag: c_int,
    error: c_int,
    count_lo: c_int,
    count_hi: c_int,
    cancelled: c_int,
}

const STATUS_IGNORE: usize = 1;

impl Status {
    const EMPTY: Status = Status {
        source: PROC_NULL,
        tag: ANY_TAG,
        error: 0,
        bytes: 0,
    };

    /// Writes the status unless the program passed MPI_STATUS_IGNORE.
    ///
    /// # Safety
    /// `p` is MPI_STATUS_IGNORE, null, or points to an MPI_Status.
    unsafe fn store(self, p: *mut MpiStatus) {
        if p.is_null() || p as usize == STATUS_IGNORE {
            return;
        }
        // SAFETY: the caller's contract.
        unsafe {
            p.write(MpiStatus {
                source: self.source,
                tag: self.tag,
                error: self.error,
                count_lo: self.bytes as u32 as c_int,
                count_hi: (self.bytes >> 32) as c_int,
                cancelled: 0,
            })
        };
    }
}

/// This process's end of the message layer.
pub(crate) struct P2p {
    sock: Option<UnixDatagram>,
    job: String,
    me: u32,
    queue: VecDeque<Msg>,
    /// Fragments of a message still arriving, per sending MPI_COMM_WORLD rank.
    partial: Vec<Option<(Msg, usize)>>,
}

impl P2p {
    pub(crate) fn new(job: String, me: usize, size: usize) -> R<P2p> {
        let mut p = P2p {
            sock: None,
            job,
            me: me as u32,
            queue: VecDeque::new(),
            partial: (0..size).map(|_| None).collect(),
        };
        let sock = UnixDatagram::bind_addr(&p.addr(me)?)
            .map_err(|e| fail(code::OTHER, format!("cannot open the message socket: {e}")))?;
        sock.set_nonblocking(true)
            .map_err(|e| fail(code::OTHER, format!("message socket: {e}")))?;
        p.sock = Some(sock);
        Ok(p)
    }

    fn addr(&self, rank: usize) -> R<SocketAddr> {
        SocketAddr::from_abstract_name(format!("rma-capi-{}-{rank}", self.job).as_bytes())
            .map_err(|e| fail(code::OTHER, format!("message socket name: {e}")))
    }

    fn sock(&self) -> &UnixDatagram {
        self.sock.as_ref().expect("opened at MPI_Init")
    }

    /// Takes in every datagram waiting on the socket.
    fn drain(&mut self) -> R {
        let mut buf = vec![0u8; HEADER + FRAGMENT];
        loop {
            let n = match self.sock().recv(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(fail(code::OTHER, format!("receiving a message: {e}"))),
            };
            if n < HEADER {
                return Err(fail(code::INTERN, "a message shorter than its header"));
            }
            let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
            let i32_at = |i: usize| i32::from_le_bytes(buf[i..i + 4].try_into().expect("4 bytes"));
            let (ctx, from, src, tag, total) = (u64_at(0), i32_at(8) as usize, i32_at(12), i32_at(16), u64_at(24) as usize);
            let slot = self
                .partial
                .get_mut(from)
                .ok_or_else(|| fail(code::INTERN, format!("a message from unknown rank {from}")))?;
            let (mut msg, _) = slot.take().unwrap_or_else(|| {
                (
                    Msg {
                        ctx,
                        src,
                        tag,
                        data: Vec::with_capacity(total),
                    },
                    total,
                )
            });
            msg.data.extend_from_slice(&buf[HEADER..n]);
            if msg.data.len() >= total {
                self.queue.push_back(msg);
            } else {
                *slot = Some((msg, total));
            }
        }
    }

    pub(crate) fn send(&mut self, world: &rma_win::World, to: usize, ctx: u64, src: c_int, tag: c_int, data: &[u8]) -> R {
        let addr = self.addr(to)?;
        let mut off = 0;
        loop {
            let end = (off + FRAGMENT).min(data.len());
            let mut dgram = Vec::with_capacity(HEADER + end - off);
            dgram.extend_from_slice(&ctx.to_le_bytes());
            dgram.extend_from_slice(&(self.me as i32).to_le_bytes());
            dgram.extend_from_slice(&src.to_le_bytes());
            dgram.extend_from_slice(&tag.to_le_bytes());
            dgram.extend_from_slice(&0i32.to_le_bytes());
            dgram.extend_from_slice(&(data.len() as u64).to_le_bytes());
            dgram.extend_from_slice(&data[off..end]);
            let mut waited = Waiter::new();
            loop {
                match self.sock().send_to_addr(&dgram, &addr) {
                    Ok(_) => break,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                        ) =>
                    {
                        // the receiver's queue is full (or its socket not yet open):
                        // take in ours meanwhile, and give up only on a dead peer
                        self.drain()?;
                        waited.pause(world)?;
                    }
                    Err(e) => return Err(fail(code::OTHER, format!("sending a message: {e}"))),
                }
            }
            off = end;
            if off >= data.len() {
                return Ok(());
            }
        }
    }

    /// Waits for the next message on `ctx` from `src` (its sender's field) and takes it.
    pub(crate) fn recv_raw(&mut self, world: &rma_win::World, ctx: u64, src: c_int) -> R<Vec<u8>> {
        let mut w = Waiter::new();
        loop {
            self.drain()?;
            if let Some(i) = self.find(ctx, src, ANY_TAG) {
                return Ok(self.queue.remove(i).expect("found").data);
            }
            w.pause(world)?;
        }
    }

    /// The queue index of the first message matching (ctx, src, tag).
    fn find(&self, ctx: u64, src: c_int, tag: c_int) -> Option<usize> {
        self.queue.iter().position(|m| {
            m.ctx == ctx && (src == ANY_SOURCE || src == m.src) && (tag == ANY_TAG || tag == m.tag)
        })
    }
}

/// Paces a wait: spins briefly, then sleeps in growing steps up to 1 ms, checking the
/// peers' liveness every 100 ms.
struct Waiter {
    spins: u32,
    last_check: Instant,
}

impl Waiter {
    fn new() -> Waiter {
        Waiter {
            spins: 0,
            last_check: Instant::now(),
        }
    }

    fn pause(&mut self, world: &rma_win::World) -> R {
        self.spins += 1;
        if self.spins < 200 {
            std::hint::spin_loop();
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(u64::from(self.spins.min(1000))));
        }
        if self.last_check.elapsed() > Duration::from_millis(100) {
            self.last_check = Instant::now();
            world.check_peers()?;
        }
        Ok(())
    }
}

impl State {
    /// Receives a matching message into `buf`, if one has arrived.
    fn try_recv(&mut self, buf: *mut c_void, n: usize, dt: c_int, src: c_int, tag: c_int, c: c_int) -> R<Option<Status>> {
        if src == PROC_NULL {
            return Ok(Some(Status::EMPTY));
        }
        let ctx = self.comm(c)?.ctx;
        self.p2p.drain()?;
        let Some(i) = self.p2p.find(ctx, src, tag) else {
            return Ok(None);
        };
        let m = self.p2p.queue.remove(i).expect("found");
        let d = self.dt(dt)?;
        let cap = d.size() * n;
        let st = Status {
            source: m.src,
            tag: m.tag,
            error: 0,
            bytes: m.data.len() as u64,
        };
        if m.data.len() > cap {
            return Err(fail(
                code::TRUNCATE,
                format!("a message of {} bytes into a buffer of {cap}", m.data.len()),
            ));
        }
        let whole = m.data.len().checked_div(d.size()).unwrap_or(0);
        // SAFETY: MPI's contract: `buf` holds `n` >= `whole` elements of dt.
        unsafe { unpack(&m.data[..whole * d.size()], buf, whole, &d)? };
        self.progress();
        Ok(Some(st))
    }

    fn recv_blocking(&mut self, buf: *mut c_void, n: usize, dt: c_int, src: c_int, tag: c_int, c: c_int) -> R<Status> {
        let world = self.comm(c)?.world();
        let mut w = Waiter::new();
        loop {
            if let Some(s) = self.try_recv(buf, n, dt, src, tag, c)? {
                return Ok(s);
            }
            w.pause(world)?;
        }
    }

    fn send_msg(&mut self, buf: *const c_void, n: c_int, dt: c_int, dest: c_int, tag: c_int, c: c_int) -> R {
        if dest == PROC_NULL {
            return Ok(());
        }
        if tag < 0 {
            return Err(fail(code::TAG, format!("tag {tag} is negative")));
        }
        let comm = self.comm(c)?;
        let to = usize::try_from(dest)
            .ok()
            .and_then(|d| comm.ranks.get(d).copied())
            .ok_or_else(|| fail(code::RANK, format!("rank {dest} is not in the communicator")))?;
        let (ctx, me, world) = (comm.ctx, comm.rank() as c_int, comm.world());
        // what this rank stored into its windows before the send is public once the
        // receiver can act on the message
        self.progress();
        // SAFETY: MPI's contract: `buf` holds n elements of dt.
        let data = unsafe { pack(buf, count(n, "count")?, &self.dt(dt)?)? };
        self.p2p.send(world, to, ctx, me, tag, &data)
    }

    /// Completes request `h` if it can; its status when complete.
    fn progress_req(&mut self, h: c_int) -> R<Option<Status>> {
        let r = self
            .reqs
            .get(h)
            .ok_or_else(|| fail(code::REQUEST, format!("{h} is not a request")))?;
        let got = match *r {
            Req::Done => Some(Status::EMPTY),
            Req::Received(s) => Some(s),
            Req::Recv { buf, count, dt, src, tag, comm } => self.try_recv(buf, count, dt, src, tag, comm)?,
        };
        if got.is_some() {
            self.reqs.remove(h);
        }
        Ok(got)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Send(buf: *const c_void, n: c_int, dt: c_int, dest: c_int, tag: c_int, c: c_int) -> c_int {
    call("MPI_Send", On::Comm(c), |st| st.send_msg(buf, n, dt, dest, tag, c))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    src: c_int,
    tag: c_int,
    c: c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Recv", On::Comm(c), |st| {
        let s = st.recv_blocking(buf, count(n, "count")?, dt, src, tag, c)?;
        // SAFETY: MPI's contract: a status or MPI_STATUS_IGNORE.
        unsafe { s.store(status) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv(
    sbuf: *const c_void,
    sn: c_int,
    sdt: c_int,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: c_int,
    src: c_int,
    rtag: c_int,
    c: c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Sendrecv", On::Comm(c), |st| {
        st.send_msg(sbuf, sn, sdt, dest, stag, c)?;
        let s = st.recv_blocking(rbuf, count(rn, "recvcount")?, rdt, src, rtag, c)?;
        // SAFETY: MPI's contract: a status or MPI_STATUS_IGNORE.
        unsafe { s.store(status) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Isend(
    buf: *const c_void,
    n: c_int,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    call("MPI_Isend", On::Comm(c), |st| {
        st.send_msg(buf, n, dt, dest, tag, c)?;
        let h = st.reqs.insert(1, Req::Done);
        // SAFETY: MPI's contract: a request out-parameter.
        unsafe { out(req, h, "request") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    src: c_int,
    tag: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    call("MPI_Irecv", On::Comm(c), |st| {
        st.comm(c)?;
        st.dt(dt)?;
        let count = count(n, "count")?;
        let h = st.reqs.insert(1, Req::Recv { buf, count, dt, src, tag, comm: c });
        // SAFETY: MPI's contract: a request out-parameter.
        unsafe { out(req, h, "request") }
    })
}

/// MPI_Iprobe's work: the status of a matching message, if one has arrived.
fn probe(st: &mut State, src: c_int, tag: c_int, c: c_int) -> R<Option<Status>> {
    if src == PROC_NULL {
        return Ok(Some(Status::EMPTY));
    }
    let ctx = st.comm(c)?.ctx;
    st.p2p.drain()?;
    Ok(st.p2p.find(ctx, src, tag).map(|i| {
        let m = &st.p2p.queue[i];
        Status {
            source: m.src,
            tag: m.tag,
            error: 0,
            bytes: m.data.len() as u64,
        }
    }))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Iprobe(src: c_int, tag: c_int, c: c_int, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    call("MPI_Iprobe", On::Comm(c), |st| {
        let s = probe(st, src, tag, c)?;
        st.progress();
        if let Some(s) = s {
            // SAFETY: MPI's contract: a status or MPI_STATUS_IGNORE.
            unsafe { s.store(status) };
        }
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(flag, c_int::from(s.is_some()), "flag") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(src: c_int, tag: c_int, c: c_int, status: *mut MpiStatus) -> c_int {
    call("MPI_Probe", On::Comm(c), |st| {
        let world = st.comm(c)?.world();
        let mut w = Waiter::new();
        loop {
            if let Some(s) = probe(st, src, tag, c)? {
                // SAFETY: MPI's contract: a status or MPI_STATUS_IGNORE.
                unsafe { s.store(status) };
                return Ok(());
            }
            w.pause(world)?;
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count(status: *const MpiStatus, dt: c_int, n: *mut c_int) -> c_int {
    call("MPI_Get_count", On::World, |st| {
        if status.is_null() || status as usize == STATUS_IGNORE {
            return Err(fail(code::ARG, "no status"));
        }
        // SAFETY: MPI's contract: a status the library filled.
        let s = unsafe { &*status };
        let bytes = (s.count_lo as u32 as u64) | ((s.count_hi as u32 as u64) << 32);
        let size = st.dt(dt)?.size() as u64;
        let v = match size {
            0 if bytes == 0 => 0,
            0 => crate::comm::UNDEFINED,
            s if bytes % s == 0 => c_int::try_from(bytes / s).unwrap_or(crate::comm::UNDEFINED),
            _ => crate::comm::UNDEFINED,
        };
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(n, v, "count") }
    })
}

/// Waits for request `h`; its status.
fn wait_one(st: &mut State, h: c_int) -> R<Status> {
    let world = st.world0();
    let mut w = Waiter::new();
    loop {
        if let Some(s) = st.progress_req(h)? {
            return Ok(s);
        }
        w.pause(world)?;
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(req: *mut c_int, status: *mut MpiStatus) -> c_int {
    call("MPI_Wait", On::World, |st| {
        // SAFETY: MPI's contract: a request handle.
        let h = unsafe { crate::inp(req, "request")? };
        let s = if h == 0 { Status::EMPTY } else { wait_one(st, h)? };
        // SAFETY: MPI's contract: a status, and the request handle to reset.
        unsafe {
            s.store(status);
            out(req, 0, "request")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(req: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    call("MPI_Test", On::World, |st| {
        // SAFETY: MPI's contract: a request handle.
        let h = unsafe { crate::inp(req, "request")? };
        let s = if h == 0 { Some(Status::EMPTY) } else { st.progress_req(h)? };
        st.progress();
        // SAFETY: MPI's contract: the out-parameters.
        unsafe {
            if let Some(s) = s {
                s.store(status);
                out(req, 0, "request")?;
            }
            out(flag, c_int::from(s.is_some()), "flag")
        }
    })
}

/// The `i`th status of an array (or MPI_STATUSES_IGNORE).
fn nth(statuses: *mut MpiStatus, i: usize) -> *mut MpiStatus {
    if statuses.is_null() || statuses as usize == STATUS_IGNORE {
        statuses
    } else {
        statuses.wrapping_add(i)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(n: c_int, reqs: *mut c_int, statuses: *mut MpiStatus) -> c_int {
    call("MPI_Waitall", On::World, |st| {
        let n = count(n, "count")?;
        for i in 0..n {
            // SAFETY: MPI's contract: n requests and n statuses.
            unsafe {
                let h = *reqs.add(i);
                let s = if h == 0 { Status::EMPTY } else { wait_one(st, h)? };
                s.store(nth(statuses, i));
                *reqs.add(i) = 0;
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(n: c_int, reqs: *mut c_int, flag: *mut c_int, statuses: *mut MpiStatus) -> c_int {
    call("MPI_Testall", On::World, |st| {
        let n = count(n, "count")?;
        // SAFETY: MPI's contract: n requests.
        let hs: Vec<c_int> = unsafe { std::slice::from_raw_parts(reqs, n) }.to_vec();
        // complete what can be, keeping the statuses in the requests until all are done
        let mut all = true;
        for &h in &hs {
            if h == 0 {
                continue;
            }
            let s = st.progress_req(h)?;
            match s {
                Some(s) => {
                    st.reqs.put(h, Req::Received(s));
                }
                None => all = false,
            }
        }
        st.progress();
        if all {
            for (i, &h) in hs.iter().enumerate() {
                let s = if h == 0 { Status::EMPTY } else { st.progress_req(h)?.unwrap_or(Status::EMPTY) };
                // SAFETY: MPI's contract: n requests and statuses.
                unsafe {
                    s.store(nth(statuses, i));
                    *reqs.add(i) = 0;
                }
            }
        }
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(flag, c_int::from(all), "flag") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(n: c_int, reqs: *mut c_int, index: *mut c_int, status: *mut MpiStatus) -> c_int {
    call("MPI_Waitany", On::World, |st| {
        let n = count(n, "count")?;
        // SAFETY: MPI's contract: n requests.
        let hs: Vec<c_int> = unsafe { std::slice::from_raw_parts(reqs, n) }.to_vec();
        if hs.iter().all(|&h| h == 0) {
            // SAFETY: MPI's contract: the out-parameters.
            unsafe {
                Status::EMPTY.store(status);
                return out(index, crate::comm::UNDEFINED, "index");
            }
        }
        let world = st.world0();
        let mut w = Waiter::new();
        loop {
            for (i, &h) in hs.iter().enumerate() {
                if h == 0 {
                    continue;
                }
                if let Some(s) = st.progress_req(h)? {
                    // SAFETY: MPI's contract: the out-parameters and the requests.
                    unsafe {
                        s.store(status);
                        *reqs.add(i) = 0;
                        return out(index, i as c_int, "index");
                    }
                }
            }
            w.pause(world)?;
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(req: *mut c_int) -> c_int {
    call("MPI_Request_free", On::World, |st| {
        // SAFETY: MPI's contract: a request handle.
        let h = unsafe { crate::inp(req, "request")? };
        match st.reqs.get(h) {
            Some(Req::Recv { .. }) => {
                return Err(fail(code::REQUEST, "freeing a pending receive is not supported"));
            }
            Some(_) => {
                st.reqs.remove(h);
            }
            None => return Err(fail(code::REQUEST, format!("{h} is not a request"))),
        }
        // SAFETY: as above.
        unsafe { out(req, 0, "request") }
    })
}
