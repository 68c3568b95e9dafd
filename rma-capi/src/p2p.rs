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
//! The kernel attaches each datagram's sender credentials (SO_PASSCRED); datagrams
//! from another user are dropped, and ones that do not parse are an error.
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
    /// Complete (a one-sided request).
    Done,
    /// A send: complete once its last datagram left this process.
    Send { to: usize, seq: u64 },
    /// A receive not yet matched, in `P2p::posted` (MPI matches receives in the
    /// order they were posted).
    Recv {
        buf: *mut c_void,
        count: usize,
        dt: rma_win::Datatype,
        src: c_int,
        tag: c_int,
        ctx: u64,
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
    /// Fragments of a message still arriving, per sending MPI_COMM_WORLD rank: the
    /// message so far and its announced length.
    partial: Vec<Option<(Msg, usize)>>,
    /// Datagrams not yet taken by their receiver's socket, per destination, in order,
    /// each with the number of the send it belongs to.
    out: Vec<VecDeque<(u64, Vec<u8>)>>,
    next_seq: u64,
    /// Receive requests waiting for a message, in the order they were posted.
    pub(crate) posted: VecDeque<c_int>,
}

/// The longest message accepted (a longer announced length is a malformed datagram).
const MAX_MESSAGE: usize = 1 << 34;

impl P2p {
    pub(crate) fn new(job: String, me: usize, size: usize) -> R<P2p> {
        let mut p = P2p {
            sock: None,
            job,
            me: me as u32,
            queue: VecDeque::new(),
            partial: (0..size).map(|_| None).collect(),
            out: (0..size).map(|_| VecDeque::new()).collect(),
            next_seq: 0,
            posted: VecDeque::new(),
        };
        let sock = UnixDatagram::bind_addr(&p.addr(me)?)
            .map_err(|e| fail(code::OTHER, format!("cannot open the message socket: {e}")))?;
        sock.set_nonblocking(true)
            .map_err(|e| fail(code::OTHER, format!("message socket: {e}")))?;
        // the kernel attaches each sender's credentials, so datagrams from other
        // users (an abstract socket's name is visible to all) are told apart
        let on: libc::c_int = 1;
        // SAFETY: a valid socket descriptor and a c_int option value of its size.
        let rc = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&sock),
                libc::SOL_SOCKET,
                libc::SO_PASSCRED,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(fail(code::OTHER, "message socket: SO_PASSCRED refused"));
        }
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

    /// Takes in every datagram waiting on the socket. A datagram that does not parse
    /// as one of this job's (the socket's name is visible to every local user) is an
    /// error, not a crash.
    fn drain(&mut self) -> R {
        let mut buf = vec![0u8; HEADER + FRAGMENT];
        let bad = |why: &str| {
            fail(
                code::INTERN,
                format!("a malformed datagram on the message socket ({why}): not from a rank of this job?"),
            )
        };
        loop {
            let (n, uid) = match recv_with_uid(self.sock(), &mut buf) {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(fail(code::OTHER, format!("receiving a message: {e}"))),
            };
            // SAFETY: getuid has no preconditions.
            if uid != Some(unsafe { libc::getuid() }) {
                // another user's datagram is not from this job: dropped
                continue;
            }
            if n < HEADER {
                return Err(bad("shorter than its header"));
            }
            let u64_at = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
            let i32_at = |i: usize| i32::from_le_bytes(buf[i..i + 4].try_into().expect("4 bytes"));
            let (ctx, from, src, tag, total) =
                (u64_at(0), i32_at(8), i32_at(12), i32_at(16), u64_at(24));
            let total = usize::try_from(total)
                .ok()
                .filter(|&t| t <= MAX_MESSAGE)
                .ok_or_else(|| bad("length"))?;
            let slot = usize::try_from(from)
                .ok()
                .and_then(|f| self.partial.get_mut(f))
                .ok_or_else(|| bad("sender"))?;
            let (mut msg, want) = slot.take().unwrap_or_else(|| {
                (
                    Msg {
                        ctx,
                        src,
                        tag,
                        data: Vec::with_capacity(total.min(1 << 20)),
                    },
                    total,
                )
            });
            if want != total || msg.ctx != ctx || msg.data.len() + (n - HEADER) > total {
                return Err(bad("fragments that do not fit"));
            }
            msg.data.extend_from_slice(&buf[HEADER..n]);
            if msg.data.len() >= total {
                self.queue.push_back(msg);
            } else {
                *slot = Some((msg, total));
            }
        }
    }

    /// Hands the receivers' sockets what they take now; the rest stays queued.
    pub(crate) fn flush_out(&mut self) -> R {
        for to in 0..self.out.len() {
            while let Some((_, dgram)) = self.out[to].front() {
                let addr = self.addr(to)?;
                match self.sock().send_to_addr(dgram, &addr) {
                    Ok(_) => {
                        self.out[to].pop_front();
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock
                                | std::io::ErrorKind::ConnectionRefused
                                | std::io::ErrorKind::NotFound
                        ) =>
                    {
                        // the receiver's queue is full (or its socket not yet open)
                        break;
                    }
                    Err(e) => return Err(fail(code::OTHER, format!("sending a message: {e}"))),
                }
            }
        }
        Ok(())
    }

    /// Queues a message for MPI_COMM_WORLD rank `to` and sends what can go now; the
    /// number of the send, for `sent`.
    pub(crate) fn send(
        &mut self,
        to: usize,
        ctx: u64,
        src: c_int,
        tag: c_int,
        data: &[u8],
    ) -> R<u64> {
        if to >= self.out.len() {
            return Err(fail(code::RANK, format!("no rank {to} in MPI_COMM_WORLD")));
        }
        let seq = self.next_seq;
        self.next_seq += 1;
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
            self.out[to].push_back((seq, dgram));
            off = end;
            if off >= data.len() {
                break;
            }
        }
        self.flush_out()?;
        Ok(seq)
    }

    /// Whether send number `seq` to `to` has left this process.
    fn sent(&self, to: usize, seq: u64) -> bool {
        self.out[to].front().is_none_or(|(s, _)| *s > seq)
    }

    /// Waits until send number `seq` to `to` has left, taking in messages meanwhile
    /// (two ranks sending to each other never deadlock).
    pub(crate) fn wait_sent(&mut self, world: &rma_win::World, to: usize, seq: u64) -> R {
        Waiter::until(world, || {
            self.flush_out()?;
            if self.sent(to, seq) {
                return Ok(Some(()));
            }
            self.drain()?;
            Ok(None)
        })
    }

    /// Waits until every queued datagram has left (MPI_Finalize).
    pub(crate) fn wait_all_sent(&mut self, world: &rma_win::World) -> R {
        Waiter::until(world, || {
            self.flush_out()?;
            if self.out.iter().all(VecDeque::is_empty) {
                return Ok(Some(()));
            }
            self.drain()?;
            Ok(None)
        })
    }

    /// Waits for the next message on `ctx` from `src` (its sender's field) and takes it.
    pub(crate) fn recv_raw(&mut self, world: &rma_win::World, ctx: u64, src: c_int) -> R<Vec<u8>> {
        Waiter::until(world, || {
            self.flush_out()?;
            self.drain()?;
            Ok(self
                .find(ctx, src, ANY_TAG)
                .map(|i| self.queue.remove(i).expect("found").data))
        })
    }

    /// The queue index of the first message matching (ctx, src, tag).
    fn find(&self, ctx: u64, src: c_int, tag: c_int) -> Option<usize> {
        self.queue.iter().position(|m| {
            m.ctx == ctx && (src == ANY_SOURCE || src == m.src) && (tag == ANY_TAG || tag == m.tag)
        })
    }
}

/// Receives one datagram into `buf`: its length and the sender's user id (from the
/// credentials the kernel attaches under SO_PASSCRED).
fn recv_with_uid(
    sock: &UnixDatagram,
    buf: &mut [u8],
) -> std::io::Result<(usize, Option<libc::uid_t>)> {
    // room for one SCM_CREDENTIALS control message (u64s keep it aligned for cmsghdr)
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid (null name, no iovecs); the fields are set
    // to live buffers below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: a valid socket; msg points to live buffers of the sizes it states.
    let n = unsafe {
        libc::recvmsg(
            std::os::fd::AsRawFd::as_raw_fd(sock),
            &mut msg,
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut uid = None;
    // SAFETY: msg was filled by recvmsg; the CMSG macros walk its control buffer
    // within msg_controllen, and an SCM_CREDENTIALS message holds a ucred.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_CREDENTIALS {
                let cred = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::ucred>());
                uid = Some(cred.uid);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, uid))
}

/// Delivers message `m` into `count` elements of `dt` at `buf`; its status (with
/// MPI_ERR_TRUNCATE in it when the message was longer than the buffer: what fits is
/// delivered).
///
/// # Safety
/// `buf` holds `count` elements of `dt`, not otherwise accessed.
unsafe fn deliver(m: &Msg, buf: *mut c_void, count: usize, dt: &rma_win::Datatype) -> R<Status> {
    let size = dt.size();
    let cap = size * count;
    let fits = m.data.len().min(cap);
    let whole = fits.checked_div(size).unwrap_or(0);
    // SAFETY: the caller's contract: `buf` holds `count` >= `whole` elements.
    unsafe { unpack(&m.data[..whole * size], buf, whole, dt)? };
    Ok(Status {
        source: m.src,
        tag: m.tag,
        error: if m.data.len() > cap {
            code::TRUNCATE
        } else {
            0
        },
        bytes: fits as u64,
    })
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

    /// Polls `f` until it gives a value, pausing between polls: every blocking wait
    /// of the message layer.
    fn until<T>(world: &rma_win::World, mut f: impl FnMut() -> R<Option<T>>) -> R<T> {
        let mut w = Waiter::new();
        loop {
            if let Some(v) = f()? {
                return Ok(v);
            }
            w.pause(world)?;
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
    /// Moves messages: sends what can go, takes in what arrived, and matches posted
    /// receives in the order they were posted.
    pub(crate) fn pump(&mut self) -> R {
        self.p2p.flush_out()?;
        self.p2p.drain()?;
        let mut i = 0;
        let mut delivered = false;
        while i < self.p2p.posted.len() {
            let h = self.p2p.posted[i];
            let got = match self.reqs.get(h) {
                Some(Req::Recv {
                    buf,
                    count,
                    dt,
                    src,
                    tag,
                    ctx,
                }) => match self.p2p.find(*ctx, *src, *tag) {
                    Some(q) => {
                        let m = self.p2p.queue.remove(q).expect("found");
                        // SAFETY: MPI's contract: the buffer of a posted receive
                        // belongs to MPI until the request completes.
                        Some(unsafe { deliver(&m, *buf, *count, dt)? })
                    }
                    None => None,
                },
                _ => {
                    self.p2p.posted.remove(i);
                    continue;
                }
            };
            match got {
                Some(s) => {
                    self.reqs.put(h, Req::Received(s));
                    self.p2p.posted.remove(i);
                    delivered = true;
                }
                None => i += 1,
            }
        }
        if delivered {
            self.progress();
        }
        Ok(())
    }

    /// Checks a receive's source (a rank of the communicator's remote group for an
    /// intercommunicator) and tag.
    fn check_source(&self, c: c_int, src: c_int, tag: c_int) -> R<u64> {
        let comm = self.comm(c)?;
        let n = comm.remote.as_ref().map_or(comm.size(), Vec::len);
        if !(src == ANY_SOURCE || src == PROC_NULL || usize::try_from(src).is_ok_and(|s| s < n)) {
            return Err(fail(
                code::RANK,
                format!("source {src} is not a rank of the communicator"),
            ));
        }
        if tag < ANY_TAG {
            return Err(fail(code::TAG, format!("tag {tag} is negative")));
        }
        Ok(comm.ctx)
    }

    /// Receives a matching message into `buf`, if one has arrived (after the posted
    /// receives had their turn).
    fn try_recv(
        &mut self,
        buf: *mut c_void,
        n: usize,
        dt: c_int,
        src: c_int,
        tag: c_int,
        c: c_int,
    ) -> R<Option<Status>> {
        let ctx = self.check_source(c, src, tag)?;
        let d = self.dt(dt)?;
        if src == PROC_NULL {
            return Ok(Some(Status::EMPTY));
        }
        self.pump()?;
        let Some(i) = self.p2p.find(ctx, src, tag) else {
            return Ok(None);
        };
        let m = self.p2p.queue.remove(i).expect("found");
        // SAFETY: MPI's contract: `buf` holds `n` elements of dt.
        let st = unsafe { deliver(&m, buf, n, &d)? };
        self.progress();
        if st.error != 0 {
            return Err(fail(
                code::TRUNCATE,
                format!(
                    "a message of {} bytes into a buffer of {}",
                    m.data.len(),
                    st.bytes
                ),
            ));
        }
        Ok(Some(st))
    }

    fn recv_blocking(
        &mut self,
        buf: *mut c_void,
        n: usize,
        dt: c_int,
        src: c_int,
        tag: c_int,
        c: c_int,
    ) -> R<Status> {
        let world = self.comm(c)?.world();
        Waiter::until(world, || self.try_recv(buf, n, dt, src, tag, c))
    }

    /// Queues a message; where it goes and its number (None for MPI_PROC_NULL).
    fn send_msg(
        &mut self,
        buf: *const c_void,
        n: c_int,
        dt: c_int,
        dest: c_int,
        tag: c_int,
        c: c_int,
    ) -> R<Option<(usize, u64)>> {
        let comm = self.comm(c)?;
        if dest == PROC_NULL {
            return Ok(None);
        }
        if tag < 0 {
            return Err(fail(code::TAG, format!("tag {tag} is negative")));
        }
        // an intercommunicator's destinations are ranks of its remote group
        let group = comm.remote.as_ref().unwrap_or(&comm.ranks);
        let to = usize::try_from(dest)
            .ok()
            .and_then(|d| group.get(d).copied())
            .ok_or_else(|| {
                fail(
                    code::RANK,
                    format!("rank {dest} is not in the communicator"),
                )
            })?;
        let (ctx, me) = (comm.ctx, comm.rank() as c_int);
        // SAFETY: MPI's contract: `buf` holds n elements of dt.
        let data = unsafe { pack(buf, count(n, "count")?, &self.dt(dt)?)? };
        // what this rank stored into its windows before the send is public once the
        // receiver can act on the message
        self.progress();
        let seq = self.p2p.send(to, ctx, me, tag, &data)?;
        Ok(Some((to, seq)))
    }

    /// Completes request `h` if it can; its status when complete.
    fn progress_req(&mut self, h: c_int) -> R<Option<Status>> {
        self.pump()?;
        let r = self
            .reqs
            .get(h)
            .ok_or_else(|| fail(code::REQUEST, format!("{h} is not a request")))?;
        let got = match r {
            Req::Done => Some(Status::EMPTY),
            Req::Received(s) => Some(*s),
            Req::Send { to, seq } => self.p2p.sent(*to, *seq).then_some(Status::EMPTY),
            Req::Recv { .. } => None,
        };
        if let Some(s) = got {
            self.reqs.remove(h);
            if s.error != 0 {
                return Err(fail(
                    s.error,
                    "a receive longer than its buffer (truncated)",
                ));
            }
        }
        Ok(got)
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    n: c_int,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    c: c_int,
) -> c_int {
    call("MPI_Send", On::Comm(c), |st| {
        if let Some((to, seq)) = st.send_msg(buf, n, dt, dest, tag, c)? {
            let world = st.comm(c)?.world();
            st.p2p.wait_sent(world, to, seq)?;
        }
        Ok(())
    })
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
        if let Some((to, seq)) = st.send_msg(sbuf, sn, sdt, dest, stag, c)? {
            let world = st.comm(c)?.world();
            st.p2p.wait_sent(world, to, seq)?;
        }
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
        let r = match st.send_msg(buf, n, dt, dest, tag, c)? {
            Some((to, seq)) => Req::Send { to, seq },
            None => Req::Done,
        };
        let h = st.reqs.insert(1, r);
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
        let ctx = st.check_source(c, src, tag)?;
        let dt = st.dt(dt)?;
        let count = count(n, "count")?;
        if src == PROC_NULL {
            let h = st.reqs.insert(1, Req::Received(Status::EMPTY));
            // SAFETY: MPI's contract: a request out-parameter.
            return unsafe { out(req, h, "request") };
        }
        let h = st.reqs.insert(
            1,
            Req::Recv {
                buf,
                count,
                dt,
                src,
                tag,
                ctx,
            },
        );
        st.p2p.posted.push_back(h);
        // SAFETY: MPI's contract: a request out-parameter.
        unsafe { out(req, h, "request") }
    })
}

/// MPI_Iprobe's work: the status of a matching message, if one has arrived.
fn probe(st: &mut State, src: c_int, tag: c_int, c: c_int) -> R<Option<Status>> {
    let ctx = st.check_source(c, src, tag)?;
    if src == PROC_NULL {
        return Ok(Some(Status::EMPTY));
    }
    st.pump()?;
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
pub unsafe extern "C" fn MPI_Iprobe(
    src: c_int,
    tag: c_int,
    c: c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
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
pub unsafe extern "C" fn MPI_Probe(
    src: c_int,
    tag: c_int,
    c: c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Probe", On::Comm(c), |st| {
        let world = st.comm(c)?.world();
        let s = Waiter::until(world, || probe(st, src, tag, c))?;
        // SAFETY: MPI's contract: a status or MPI_STATUS_IGNORE.
        unsafe { s.store(status) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count(
    status: *const MpiStatus,
    dt: c_int,
    n: *mut c_int,
) -> c_int {
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
    Waiter::until(world, || st.progress_req(h))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(req: *mut c_int, status: *mut MpiStatus) -> c_int {
    call("MPI_Wait", On::World, |st| {
        // SAFETY: MPI's contract: a request handle.
        let h = unsafe { crate::inp(req, "request")? };
        let s = if h == 0 {
            Status::EMPTY
        } else {
            wait_one(st, h)?
        };
        // SAFETY: MPI's contract: a status, and the request handle to reset.
        unsafe {
            s.store(status);
            out(req, 0, "request")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    req: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Test", On::World, |st| {
        // SAFETY: MPI's contract: a request handle.
        let h = unsafe { crate::inp(req, "request")? };
        let s = if h == 0 {
            Some(Status::EMPTY)
        } else {
            st.progress_req(h)?
        };
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
pub unsafe extern "C" fn MPI_Waitall(
    n: c_int,
    reqs: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    call("MPI_Waitall", On::World, |st| {
        let n = count(n, "count")?;
        for i in 0..n {
            // SAFETY: MPI's contract: n requests and n statuses.
            unsafe {
                let h = *reqs.add(i);
                let s = if h == 0 {
                    Status::EMPTY
                } else {
                    wait_one(st, h)?
                };
                s.store(nth(statuses, i));
                *reqs.add(i) = 0;
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    n: c_int,
    reqs: *mut c_int,
    flag: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
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
                let s = if h == 0 {
                    Status::EMPTY
                } else {
                    st.progress_req(h)?.unwrap_or(Status::EMPTY)
                };
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
pub unsafe extern "C" fn MPI_Waitany(
    n: c_int,
    reqs: *mut c_int,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
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
        let (i, s) = Waiter::until(world, || {
            for (i, &h) in hs.iter().enumerate() {
                if h != 0 {
                    if let Some(s) = st.progress_req(h)? {
                        return Ok(Some((i, s)));
                    }
                }
            }
            Ok(None)
        })?;
        // SAFETY: MPI's contract: the out-parameters and the requests.
        unsafe {
            s.store(status);
            *reqs.add(i) = 0;
            out(index, i as c_int, "index")
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
                return Err(fail(
                    code::REQUEST,
                    "freeing a pending receive is not supported",
                ));
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
