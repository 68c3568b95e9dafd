//! Point-to-point messages and requests.
//!
//! Messages travel as datagrams between the ranks' Unix sockets, in fragments of at
//! most 64 KiB. Every send is eager: it returns once the kernel holds the message. A
//! rank that cannot send because the receiver's queue is full drains its own socket
//! meanwhile, so two ranks sending to each other never deadlock. A receive matches, in
//! arrival order, on the communicator's context, the source and the tag, as MPI orders
//! messages between one pair of ranks.
//!
//! # Where the sockets live, and why there
//!
//! Each rank's socket is a file, `<rank>`, in a directory that rank 0 makes for the
//! job at MPI_Init: `/dev/shm/<world>-capi-<16 random hex digits>`, created
//! exclusively (another name is tried if one exists), mode 0700, owned by the job's
//! user. Rank 0 hands its path to the others through the world's control segment
//! (itself owner-only); each rank checks that it is such a directory of its own user
//! before it binds its socket there. Sending to a socket file needs search permission
//! on its directory, so no other user (root aside) can send a datagram to the job, nor
//! bind a name it needs: the random part cannot be guessed, and a taken name is
//! skipped. The ranks remove their sockets when they end, and the last one the
//! directory; a directory left by a killed job (no socket in it answers, and it is a
//! minute old) is removed by the next job's rank 0.
//!
//! Sockets in Linux's abstract namespace, as this layer used before, are open to every
//! local user: any of them could send datagrams (with descriptors in them) to the
//! job, fill its receive queues, or bind its names before it started. The other ways
//! to close them, socket pairs made by the launcher (rmarun would have to know this
//! layer, and each rank would hold descriptors of every peer) or queues in shared
//! memory (a second transport to write and make fair), cost more than a directory.
//!
//! As a second line behind the directory (root can still send), a datagram that
//! carries descriptors is dropped and the descriptors closed at once, the kernel
//! attaches each datagram's sender credentials (SO_PASSCRED) and datagrams from
//! another user are dropped, and one call takes in at most `DRAIN_BATCH` (128) datagrams,
//! so no stream of them keeps a call from returning. Datagrams of this job's user that
//! do not parse are an error.
//!
//! Every wait checks the peers' liveness: a dead peer ends it with
//! MPI_ERR_PROC_FAILED within the world's liveness interval.

use crate::dtype::{pack, unpack};
use crate::{call, code, count, fail, out, Lease, On, State, R};
use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::{Duration, Instant};

const ANY_SOURCE: c_int = -2;
const ANY_TAG: c_int = -1;
pub(crate) const PROC_NULL: c_int = -1;
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
    /// A nonblocking collective, in `P2p::colls` until complete.
    Coll(Box<crate::nbc::Coll>),
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
    pub(crate) const EMPTY: Status = Status {
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
    sock: UnixDatagram,
    /// Every rank's socket, by MPI_COMM_WORLD rank.
    addrs: Vec<SocketAddr>,
    /// This rank's socket file and the job's directory, removed when this rank ends
    /// (held for its drop; None in unit tests over a socket pair).
    _place: Option<Place>,
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
    /// Nonblocking collectives not yet complete, in the order they started.
    pub(crate) colls: Vec<c_int>,
    /// Persistent requests (MPI_Send_init, MPI_Recv_init) by handle: the handle is
    /// also in the request table, as `Req::Done` while inactive and as the started
    /// send or receive while active.
    persist: std::collections::BTreeMap<c_int, Persist>,
    /// Messages taken by a matched probe (MPI_Mprobe), by message handle, until
    /// MPI_Mrecv receives them.
    matched: crate::Table<Msg>,
}

/// MPI_MESSAGE_NO_PROC: a matched probe of MPI_PROC_NULL.
const MESSAGE_NO_PROC: c_int = 1;

/// What a persistent request starts each time.
#[derive(Clone, Copy)]
enum Persist {
    Send {
        buf: *const c_void,
        n: c_int,
        dt: c_int,
        dest: c_int,
        tag: c_int,
        c: c_int,
    },
    Recv {
        buf: *mut c_void,
        n: c_int,
        dt: c_int,
        src: c_int,
        tag: c_int,
        c: c_int,
    },
}

/// The longest message accepted (a longer announced length is a malformed datagram).
const MAX_MESSAGE: usize = 1 << 34;

/// The most datagrams one call takes in from the socket: whatever arrives, a call
/// that drains returns after this many, and its wait (if it waits) goes on with the
/// liveness checks and pauses of every wait.
pub(crate) const DRAIN_BATCH: usize = 128;

/// Where the job's socket directories are made.
const SOCKET_BASE: &str = "/dev/shm";
/// What a socket directory's name holds before its random part.
const DIR_MARK: &str = "-capi-";
/// How many names rank 0 tries for the directory (a name is taken only if someone
/// guessed 64 random bits).
const DIR_ATTEMPTS: usize = 16;
/// How old a directory with no live socket in it must be before another job removes
/// it: rank 0 binds its socket right after making the directory, so a live job's is
/// never empty for more than an instant.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// A socket file of this process and the directory it is in: removed when dropped
/// (the directory only once it is empty, so the last rank of the job to end removes
/// it), and only by the process that bound the socket (a forked child that exits
/// leaves them).
#[derive(Debug)]
struct Place {
    dir: std::path::PathBuf,
    file: std::path::PathBuf,
    pid: u32,
}

impl Drop for Place {
    fn drop(&mut self) {
        if std::process::id() == self.pid {
            let _ = std::fs::remove_file(&self.file);
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

impl P2p {
    /// Opens this rank's socket (collective over the world: every rank calls it at
    /// MPI_Init). Rank 0 makes the job's directory and binds first; the others bind in
    /// the directory it names, once they checked that it is a private directory of
    /// their own user.
    pub(crate) fn new(world: &rma_win::World) -> R<P2p> {
        let (me, size) = (world.rank(), world.size());
        let made = (me == 0).then(|| {
            sweep_stale();
            make_dir(&job_prefix()).and_then(|dir| bind_in(&dir, 0))
        });
        // rank 0's directory, or why there is none (every rank takes part either way)
        let offer = match &made {
            Some(Ok((_, place))) => [&[1u8][..], place.dir.as_os_str().as_encoded_bytes()].concat(),
            Some(Err(_)) => vec![0],
            None => vec![],
        };
        let all = world.allgather(&offer)?;
        let (sock, place) = match made {
            Some(m) => m?,
            None => {
                let dir = match all.first().and_then(|o| o.split_first()) {
                    Some((1, path)) => std::str::from_utf8(path)
                        .ok()
                        .map(std::path::PathBuf::from)
                        .filter(|d| is_private_dir(d))
                        .ok_or_else(|| {
                            fail(
                                code::INTERN,
                                "rank 0 named no private directory of this user for the message sockets",
                            )
                        })?,
                    _ => {
                        return Err(fail(
                            code::OTHER,
                            "rank 0 could not make the directory of the message sockets",
                        ))
                    }
                };
                bind_in(&dir, me)?
            }
        };
        let addrs = (0..size)
            .map(|r| {
                SocketAddr::from_pathname(place.dir.join(r.to_string()))
                    .map_err(|e| fail(code::OTHER, format!("message socket name: {e}")))
            })
            .collect::<R<Vec<_>>>()?;
        Ok(P2p::with_socket(sock, addrs, Some(place), me))
    }

    /// This rank's end over `sock`, bound at `place`, with the peers' `addrs`.
    fn with_socket(
        sock: UnixDatagram,
        addrs: Vec<SocketAddr>,
        place: Option<Place>,
        me: usize,
    ) -> P2p {
        let size = addrs.len();
        P2p {
            sock,
            addrs,
            _place: place,
            me: me as u32,
            queue: VecDeque::new(),
            partial: (0..size).map(|_| None).collect(),
            out: (0..size).map(|_| VecDeque::new()).collect(),
            next_seq: 0,
            posted: VecDeque::new(),
            colls: Vec::new(),
            persist: std::collections::BTreeMap::new(),
            matched: crate::Table::new(),
        }
    }

    /// Takes in the datagrams waiting on the socket, at most [`DRAIN_BATCH`] of them
    /// (the rest waits for the next call). A datagram with descriptors in it, or from
    /// another user, is dropped (its descriptors closed); one of this user that does
    /// not parse as one of this job's is an error, not a crash.
    fn drain(&mut self) -> R {
        let mut buf = vec![0u8; HEADER + FRAGMENT];
        let bad = |why: &str| {
            fail(
                code::INTERN,
                format!("a malformed datagram on the message socket ({why}): not from a rank of this job?"),
            )
        };
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        for _ in 0..DRAIN_BATCH {
            let n = match recv_datagram(&self.sock, &mut buf) {
                Ok(Datagram::From { len, uid: Some(u) }) if u == uid => len,
                // another user's (or one without credentials): not from this job
                Ok(Datagram::From { .. }) | Ok(Datagram::Foreign) => continue,
                Ok(Datagram::Truncated) => return Err(bad("longer than a fragment")),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(fail(code::OTHER, format!("receiving a message: {e}"))),
            };
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
        Ok(())
    }

    /// Hands the receivers' sockets what they take now; the rest stays queued.
    pub(crate) fn flush_out(&mut self) -> R {
        for to in 0..self.out.len() {
            while let Some((_, dgram)) = self.out[to].front() {
                match self.sock.send_to_addr(dgram, &self.addrs[to]) {
                    Ok(_) => {
                        self.out[to].pop_front();
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock
                                | std::io::ErrorKind::ConnectionRefused
                                | std::io::ErrorKind::NotFound
                                | std::io::ErrorKind::Interrupted
                        ) =>
                    {
                        // the receiver's queue is full (or its socket gone: a rank that
                        // ended, which the wait's liveness check reports)
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

    /// Takes the first message that arrived on (ctx, src, tag), if any.
    pub(crate) fn take(&mut self, ctx: u64, src: c_int, tag: c_int) -> Option<Vec<u8>> {
        let i = self.find(ctx, src, tag)?;
        self.queue.remove(i).map(|m| m.data)
    }

    /// Whether send number `seq` to `to` has left this process.
    pub(crate) fn sent(&self, to: usize, seq: u64) -> bool {
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

/// What one receive took from the socket.
#[derive(Debug, PartialEq, Eq)]
enum Datagram {
    /// A datagram of `len` bytes without descriptors, and its sender's user id (from
    /// the credentials the kernel attaches under SO_PASSCRED).
    From {
        len: usize,
        uid: Option<libc::uid_t>,
    },
    /// A datagram that carried descriptors, or more control data than fits (which
    /// this job never sends): dropped, every descriptor it brought closed.
    Foreign,
    /// A datagram longer than the buffer.
    Truncated,
}

/// Room for the control data one datagram can bring: an SCM_CREDENTIALS message and
/// an SCM_RIGHTS one of the most descriptors the kernel passes in one (253,
/// SCM_MAX_FD), in u64s to keep it aligned for cmsghdr.
const CONTROL_WORDS: usize = 192;

/// Receives one datagram into `buf` (without waiting). Descriptors that came with it
/// are closed before this returns (the kernel installs them in this process as it
/// delivers the datagram; MSG_CMSG_CLOEXEC keeps them from a program's exec meanwhile).
fn recv_datagram(sock: &UnixDatagram, buf: &mut [u8]) -> std::io::Result<Datagram> {
    recv_with_control(sock, buf, &mut [0u64; CONTROL_WORDS])
}

/// [`recv_datagram`] with room for `control` of control data (less than a datagram
/// brings: MSG_CTRUNC).
fn recv_with_control(
    sock: &UnixDatagram,
    buf: &mut [u8],
    control: &mut [u64],
) -> std::io::Result<Datagram> {
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
    msg.msg_controllen = std::mem::size_of_val(control) as _;
    // SAFETY: a valid socket; msg points to live buffers of the sizes it states.
    let n = unsafe {
        libc::recvmsg(
            std::os::fd::AsRawFd::as_raw_fd(sock),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (mut uid, mut rights) = (None, false);
    // SAFETY: msg was filled by recvmsg, which set msg_controllen to the control data
    // it wrote (less than the buffer under MSG_CTRUNC); the CMSG macros walk that data
    // and never past it. An SCM_CREDENTIALS message holds a ucred, an SCM_RIGHTS one
    // cmsg_len - CMSG_LEN(0) bytes of descriptors, which this process now owns and
    // nothing else refers to: closing them is sound. Reads are unaligned-safe.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET {
                if (*c).cmsg_type == libc::SCM_CREDENTIALS {
                    let cred = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::ucred>());
                    uid = Some(cred.uid);
                } else if (*c).cmsg_type == libc::SCM_RIGHTS {
                    rights = true;
                    let bytes = ((*c).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                    let fds = libc::CMSG_DATA(c).cast::<c_int>();
                    for i in 0..bytes / std::mem::size_of::<c_int>() {
                        libc::close(std::ptr::read_unaligned(fds.add(i)));
                    }
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    if rights || msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Ok(Datagram::Foreign);
    }
    if msg.msg_flags & libc::MSG_TRUNC != 0 {
        return Ok(
            if uid
                == Some(
                    // SAFETY: getuid has no preconditions.
                    unsafe { libc::getuid() },
                )
            {
                Datagram::Truncated
            } else {
                Datagram::Foreign
            },
        );
    }
    Ok(Datagram::From {
        len: n as usize,
        uid,
    })
}

/// What the job's directory name starts with: the world's name (an rma world's names
/// hold only letters, digits, `-` and `_`), else `rma`.
fn job_prefix() -> String {
    std::env::var("RMA_WORLD")
        .ok()
        .filter(|w| {
            w.starts_with("rma")
                && w.len() <= 48
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .unwrap_or_else(|| "rma".into())
}

/// 64 random bits from the kernel (a clock-and-pid mix if /dev/urandom cannot be
/// read: then a name may be guessed, but a taken name is still never used).
fn random_u64() -> u64 {
    use std::io::Read;
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok()
    {
        return u64::from_ne_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (t ^ (u64::from(std::process::id()) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Makes the job's directory under a fresh name: created exclusively (a name that
/// exists, whoever made it, is skipped), then set to 0700 whatever the umask.
fn make_dir(prefix: &str) -> R<std::path::PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let mut last = None;
    for _ in 0..DIR_ATTEMPTS {
        let dir = std::path::Path::new(SOCKET_BASE)
            .join(format!("{prefix}{DIR_MARK}{:016x}", random_u64()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                // mkdir made it (never following a link), in a sticky directory where
                // no other user can replace it
                if let Err(e) =
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
                {
                    let _ = std::fs::remove_dir(&dir);
                    return Err(fail(
                        code::OTHER,
                        format!("message sockets' directory: {e}"),
                    ));
                }
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(dir),
            Err(e) => {
                return Err(fail(
                    code::OTHER,
                    format!("cannot make the message sockets' directory in {SOCKET_BASE}: {e}"),
                ))
            }
        }
    }
    Err(fail(
        code::OTHER,
        format!(
            "cannot make the message sockets' directory: {} and {} other names exist",
            last.map_or_else(String::new, |d| d.display().to_string()),
            DIR_ATTEMPTS - 1
        ),
    ))
}

/// Whether `dir` is a job directory of this user: `SOCKET_BASE/<prefix>-capi-<16 hex>`,
/// a directory itself (not a link), owned by this user, with no access for others.
fn is_private_dir(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let named = dir.parent() == Some(std::path::Path::new(SOCKET_BASE))
        && dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_dir_name);
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    named
        && std::fs::symlink_metadata(dir)
            .is_ok_and(|m| m.file_type().is_dir() && m.uid() == me && m.mode() & 0o777 == 0o700)
}

/// Whether `name` has the shape of a job directory's name.
fn is_dir_name(name: &str) -> bool {
    name.starts_with("rma")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && name
            .rsplit_once(DIR_MARK)
            .is_some_and(|(_, tag)| tag.len() == 16 && tag.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Binds rank `rank`'s socket in `dir` (non-blocking, with SO_PASSCRED): the socket
/// and its place, which removes the file (and the directory, once empty) when dropped.
fn bind_in(dir: &std::path::Path, rank: usize) -> R<(UnixDatagram, Place)> {
    use std::os::unix::fs::PermissionsExt;
    let file = dir.join(rank.to_string());
    let sock = UnixDatagram::bind(&file).map_err(|e| {
        fail(
            code::OTHER,
            format!("cannot open the message socket {}: {e}", file.display()),
        )
    })?;
    let place = Place {
        dir: dir.to_owned(),
        file,
        pid: std::process::id(),
    };
    // whatever the umask, the ranks (this user) may write to it
    std::fs::set_permissions(&place.file, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| fail(code::OTHER, format!("message socket: {e}")))?;
    sock.set_nonblocking(true)
        .map_err(|e| fail(code::OTHER, format!("message socket: {e}")))?;
    pass_credentials(&sock)?;
    Ok((sock, place))
}

/// Has the kernel attach each sender's credentials to the datagrams `sock` receives
/// (SO_PASSCRED), so that datagrams from other users (root's, say: the directory keeps
/// out everyone else) are told apart.
fn pass_credentials(sock: &UnixDatagram) -> R {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor and a c_int option value of its size.
    let rc = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(sock),
            libc::SOL_SOCKET,
            libc::SO_PASSCRED,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(fail(code::OTHER, "message socket: SO_PASSCRED refused"));
    }
    Ok(())
}

/// Removes the job directories of this user that killed jobs left behind: at least
/// [`STALE_AFTER`] old, and no socket in them bound by a live process (a connect to
/// each is refused). A live job's directory always holds rank 0's live socket
/// (bound right after the directory was made), whatever namespace its processes are in.
fn sweep_stale() {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let Ok(entries) = std::fs::read_dir(SOCKET_BASE) else {
        return;
    };
    for e in entries.flatten() {
        if !e.file_name().to_str().is_some_and(is_dir_name) {
            continue;
        }
        let path = e.path();
        let old = std::fs::symlink_metadata(&path).is_ok_and(|m| {
            m.file_type().is_dir()
                && m.uid() == me
                && m.modified()
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age >= STALE_AFTER)
        });
        if !old {
            continue;
        }
        let Ok(inside) = std::fs::read_dir(&path) else {
            continue;
        };
        let live = inside.flatten().any(|s| {
            s.file_type().is_ok_and(|t| {
                use std::os::unix::fs::FileTypeExt;
                t.is_socket()
            }) && UnixDatagram::unbound()
                .and_then(|u| u.connect(s.path()))
                .map_or_else(
                    |e| {
                        !matches!(
                            e.kind(),
                            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                        )
                    },
                    |()| true,
                )
        });
        if !live {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
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
        self.check(world)?;
        self.sleep();
        Ok(())
    }

    /// Checks the peers' liveness now and then.
    fn check(&mut self, world: &rma_win::World) -> R {
        if self.last_check.elapsed() > Duration::from_millis(100) {
            self.last_check = Instant::now();
            world.check_peers()?;
        }
        Ok(())
    }

    /// The pause itself: a spin and yield at first, then sleeps growing to 1 ms.
    fn sleep(&mut self) {
        self.spins += 1;
        if self.spins < 200 {
            std::hint::spin_loop();
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(u64::from(self.spins.min(1000))));
        }
    }
}

/// Polls `f` on the state until it gives a value: every wait of a call that holds a
/// [`Lease`]. Between polls the state is released (at MPI_THREAD_SERIALIZED and
/// MULTIPLE), so other threads' calls run while this one waits, and their messages
/// can be what it waits for.
pub(crate) fn wait_on<T>(l: &mut Lease, mut f: impl FnMut(&mut State) -> R<Option<T>>) -> R<T> {
    let mut w = Waiter::new();
    loop {
        if let Some(v) = f(l)? {
            return Ok(v);
        }
        w.check(l.world0())?;
        l.pause(|| w.sleep())?;
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
        self.collect();
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
            Req::Coll(_) => self.finish_coll(h)?,
        };
        if let Some(s) = got {
            self.reqs.remove(h);
            if self.p2p.persist.contains_key(&h) {
                // a persistent request goes back to inactive
                self.reqs.put(h, Req::Done);
            }
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
        let s = recv_blocking(st, buf, count(n, "count")?, dt, src, tag, c)?;
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
        let s = recv_blocking(st, rbuf, count(rn, "recvcount")?, rdt, src, rtag, c)?;
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
        let r = st.isend(buf, n, dt, dest, tag, c)?;
        let h = st.reqs.insert(1, r);
        // SAFETY: MPI's contract: a request out-parameter.
        unsafe { out(req, h, "request") }
    })
}

impl State {
    /// A started send's request.
    fn isend(
        &mut self,
        buf: *const c_void,
        n: c_int,
        dt: c_int,
        dest: c_int,
        tag: c_int,
        c: c_int,
    ) -> R<Req> {
        Ok(match self.send_msg(buf, n, dt, dest, tag, c)? {
            Some((to, seq)) => Req::Send { to, seq },
            None => Req::Done,
        })
    }

    /// Posts a receive as request `h` (a new handle if None); its handle.
    #[allow(clippy::too_many_arguments)]
    fn irecv(
        &mut self,
        h: Option<c_int>,
        buf: *mut c_void,
        n: c_int,
        dt: c_int,
        src: c_int,
        tag: c_int,
        c: c_int,
    ) -> R<c_int> {
        let ctx = self.check_source(c, src, tag)?;
        let dt = self.dt(dt)?;
        let count = count(n, "count")?;
        let r = if src == PROC_NULL {
            Req::Received(Status::EMPTY)
        } else {
            Req::Recv {
                buf,
                count,
                dt,
                src,
                tag,
                ctx,
            }
        };
        let h = match h {
            Some(h) => {
                self.reqs.put(h, r);
                h
            }
            None => self.reqs.insert(1, r),
        };
        if src != PROC_NULL {
            self.p2p.posted.push_back(h);
        }
        Ok(h)
    }

    /// What a request handle holds once its operation completed: the handle itself
    /// for a persistent request (inactive again), else MPI_REQUEST_NULL.
    fn after(&self, h: c_int) -> c_int {
        if self.p2p.persist.contains_key(&h) {
            h
        } else {
            0
        }
    }

    /// Whether `h` is a persistent request not started.
    fn inactive(&self, h: c_int) -> bool {
        self.p2p.persist.contains_key(&h) && matches!(self.reqs.get(h), Some(Req::Done))
    }

    /// Starts persistent request `h`.
    fn start_persistent(&mut self, h: c_int) -> R {
        let p = *self
            .p2p
            .persist
            .get(&h)
            .ok_or_else(|| fail(code::REQUEST, format!("{h} is not a persistent request")))?;
        if !matches!(self.reqs.get(h), Some(Req::Done)) {
            return Err(fail(
                code::REQUEST,
                format!("persistent request {h} is already active"),
            ));
        }
        match p {
            Persist::Send {
                buf,
                n,
                dt,
                dest,
                tag,
                c,
            } => {
                let r = self.isend(buf, n, dt, dest, tag, c)?;
                self.reqs.put(h, r);
            }
            Persist::Recv {
                buf,
                n,
                dt,
                src,
                tag,
                c,
            } => {
                self.irecv(Some(h), buf, n, dt, src, tag, c)?;
            }
        }
        Ok(())
    }

    /// Makes a persistent request, inactive; its handle.
    fn persistent(&mut self, p: Persist) -> c_int {
        let h = self.reqs.insert(1, Req::Done);
        self.p2p.persist.insert(h, p);
        h
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Send_init(
    buf: *const c_void,
    n: c_int,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    call("MPI_Send_init", On::Comm(c), |st| {
        // checked now, as MPI_Isend would
        st.comm(c)?;
        st.dt(dt)?;
        count(n, "count")?;
        if req.is_null() {
            return Err(fail(code::ARG, "request is NULL"));
        }
        let h = st.persistent(Persist::Send {
            buf,
            n,
            dt,
            dest,
            tag,
            c,
        });
        // SAFETY: MPI's contract: a request out-parameter (checked non-null).
        unsafe { out(req, h, "request") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend_init(
    buf: *const c_void,
    n: c_int,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // a ready send may be a standard send (as MPI_Rsend)
    // SAFETY: MPI's contract, forwarded.
    unsafe { MPI_Send_init(buf, n, dt, dest, tag, c, req) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_init(
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    src: c_int,
    tag: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    call("MPI_Recv_init", On::Comm(c), |st| {
        st.check_source(c, src, tag)?;
        st.dt(dt)?;
        count(n, "count")?;
        if req.is_null() {
            return Err(fail(code::ARG, "request is NULL"));
        }
        let h = st.persistent(Persist::Recv {
            buf,
            n,
            dt,
            src,
            tag,
            c,
        });
        // SAFETY: MPI's contract: a request out-parameter (checked non-null).
        unsafe { out(req, h, "request") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Start(req: *mut c_int) -> c_int {
    call("MPI_Start", On::World, |st| {
        // SAFETY: MPI's contract: a request handle.
        let h = unsafe { crate::inp(req, "request")? };
        st.start_persistent(h)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(n: c_int, reqs: *mut c_int) -> c_int {
    call("MPI_Startall", On::World, |st| {
        // SAFETY: MPI's contract: n request handles.
        let hs = unsafe { crate::arr(reqs.cast_const(), n, "requests")? }.to_vec();
        hs.into_iter().try_for_each(|h| st.start_persistent(h))
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
        let h = st.irecv(None, buf, n, dt, src, tag, c)?;
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

/// A matched probe: takes the first message matching (src, tag) on `c` out of the
/// queue, if one has arrived; its message handle and status.
fn mprobe(st: &mut State, src: c_int, tag: c_int, c: c_int) -> R<Option<(c_int, Status)>> {
    let ctx = st.check_source(c, src, tag)?;
    if src == PROC_NULL {
        return Ok(Some((MESSAGE_NO_PROC, Status::EMPTY)));
    }
    st.pump()?;
    let Some(i) = st.p2p.find(ctx, src, tag) else {
        return Ok(None);
    };
    let m = st.p2p.queue.remove(i).expect("found");
    let s = Status {
        source: m.src,
        tag: m.tag,
        error: 0,
        bytes: m.data.len() as u64,
    };
    Ok(Some((st.p2p.matched.insert(2, m), s)))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mprobe(
    src: c_int,
    tag: c_int,
    c: c_int,
    message: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Mprobe", On::Comm(c), |st| {
        st.comm(c)?;
        if message.is_null() {
            return Err(fail(code::ARG, "message is NULL"));
        }
        let (h, s) = wait_on(st, |st| mprobe(st, src, tag, c))?;
        // SAFETY: MPI's contract: a message handle (checked non-null) and a status.
        unsafe {
            s.store(status);
            out(message, h, "message")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Improbe(
    src: c_int,
    tag: c_int,
    c: c_int,
    flag: *mut c_int,
    message: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Improbe", On::Comm(c), |st| {
        if message.is_null() {
            return Err(fail(code::ARG, "message is NULL"));
        }
        let got = mprobe(st, src, tag, c)?;
        st.progress();
        // SAFETY: MPI's contract: the out-parameters (message checked non-null).
        unsafe {
            if let Some((h, s)) = got {
                s.store(status);
                out(message, h, "message")?;
            }
            out(flag, c_int::from(got.is_some()), "flag")
        }
    })
}

/// Receives matched message `*message` into `buf`; its status, the handle reset.
///
/// # Safety
/// MPI's contract: `message` points to a message handle, `buf` holds `n` elements of
/// `dt`.
unsafe fn mrecv(
    st: &mut State,
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    message: *mut c_int,
) -> R<Status> {
    // SAFETY: the caller's contract.
    let h = unsafe { crate::inp(message, "message")? };
    let d = st.dt(dt)?;
    let n = count(n, "count")?;
    let s = if h == MESSAGE_NO_PROC {
        Status::EMPTY
    } else {
        let m = st
            .p2p
            .matched
            .remove(h)
            .ok_or_else(|| fail(code::REQUEST, format!("{h} is not a matched message")))?;
        // SAFETY: the caller's contract.
        let s = unsafe { deliver(&m, buf, n, &d)? };
        st.progress();
        s
    };
    // SAFETY: the caller's contract.
    unsafe { out(message, 0, "message")? };
    if s.error != 0 {
        return Err(fail(
            code::TRUNCATE,
            "a matched message longer than its buffer (truncated)",
        ));
    }
    Ok(s)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv(
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    message: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Mrecv", On::World, |st| {
        // SAFETY: MPI's contract, forwarded.
        let s = unsafe { mrecv(st, buf, n, dt, message)? };
        // SAFETY: MPI's contract: a status.
        unsafe { s.store(status) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv(
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    message: *mut c_int,
    req: *mut c_int,
) -> c_int {
    call("MPI_Imrecv", On::World, |st| {
        if req.is_null() {
            return Err(fail(code::ARG, "request is NULL"));
        }
        // the message is here already: received at once, completed by a wait
        // SAFETY: MPI's contract, forwarded.
        let s = unsafe { mrecv(st, buf, n, dt, message)? };
        let h = st.reqs.insert(1, Req::Received(s));
        // SAFETY: MPI's contract: a request handle (checked non-null).
        unsafe { out(req, h, "request") }
    })
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
        st.comm(c)?;
        let s = wait_on(st, |st| probe(st, src, tag, c))?;
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

/// The bytes a status reports.
fn status_bytes(s: &MpiStatus) -> u64 {
    (s.count_lo as u32 as u64) | ((s.count_hi as u32 as u64) << 32)
}

/// A status argument the program filled or the library did (not MPI_STATUS_IGNORE).
///
/// # Safety
/// `p` is null, MPI_STATUS_IGNORE, or points to an MPI_Status.
unsafe fn status_in<'a>(p: *const MpiStatus) -> R<&'a MpiStatus> {
    if p.is_null() || p as usize == STATUS_IGNORE {
        return Err(fail(code::ARG, "no status"));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { &*p })
}

/// The basic elements of `dt` in `bytes` (MPI_Get_elements): whole instances times
/// their elements, and for a type of one basic type a partial instance's elements
/// too; MPI_UNDEFINED for a partial element, or a partial instance of a type that
/// mixes basic types (rma keeps no per-element sizes to count those).
fn elements(dt: &rma_win::Datatype, bytes: u64) -> i64 {
    let undefined = i64::from(crate::comm::UNDEFINED);
    let size = dt.size() as u64;
    if size == 0 {
        return if bytes == 0 { 0 } else { undefined };
    }
    if dt.basic_type().is_some() {
        // one basic type: every element has the same size
        let each = (size / dt.element_count().max(1) as u64).max(1);
        return if bytes % each == 0 {
            (bytes / each) as i64
        } else {
            undefined
        };
    }
    if bytes % size == 0 {
        ((bytes / size) * dt.element_count() as u64) as i64
    } else {
        undefined
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_x(
    status: *const MpiStatus,
    dt: c_int,
    n: *mut i64,
) -> c_int {
    call("MPI_Get_elements_x", On::World, |st| {
        // SAFETY: MPI's contract: a status the library filled.
        let s = unsafe { status_in(status)? };
        let v = elements(&st.dt(dt)?, status_bytes(s));
        // SAFETY: MPI's contract: an MPI_Count out-parameter.
        unsafe { out(n, v, "count") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements(
    status: *const MpiStatus,
    dt: c_int,
    n: *mut c_int,
) -> c_int {
    call("MPI_Get_elements", On::World, |st| {
        // SAFETY: MPI's contract: a status the library filled.
        let s = unsafe { status_in(status)? };
        let v = elements(&st.dt(dt)?, status_bytes(s));
        let v = c_int::try_from(v).unwrap_or(crate::comm::UNDEFINED);
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(n, v, "count") }
    })
}

/// Sets the count a status reports to `n` elements of `dt`.
///
/// # Safety
/// `status` points to an MPI_Status (not MPI_STATUS_IGNORE).
unsafe fn set_elements(st: &State, status: *mut MpiStatus, dt: c_int, n: i64) -> R {
    if status.is_null() || status as usize == STATUS_IGNORE {
        return Err(fail(code::ARG, "no status"));
    }
    let d = st.dt(dt)?;
    let n = u64::try_from(n).map_err(|_| fail(code::COUNT, format!("count {n} is negative")))?;
    // the bytes of n elements (of the type's average element size: exact for a type
    // of one basic type, the one MPI_Get_elements counts partial instances of)
    let per = (d.size() as u64) / (d.element_count().max(1) as u64);
    let bytes = n
        .checked_mul(per)
        .ok_or_else(|| fail(code::COUNT, "the count overflows"))?;
    // SAFETY: the caller's contract.
    let s = unsafe { &mut *status };
    s.count_lo = bytes as u32 as c_int;
    s.count_hi = (bytes >> 32) as c_int;
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements(
    status: *mut MpiStatus,
    dt: c_int,
    n: c_int,
) -> c_int {
    // SAFETY: MPI's contract: a status.
    call("MPI_Status_set_elements", On::World, |st| unsafe {
        set_elements(st, status, dt, i64::from(n))
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_elements_x(
    status: *mut MpiStatus,
    dt: c_int,
    n: i64,
) -> c_int {
    // SAFETY: MPI's contract: a status.
    call("MPI_Status_set_elements_x", On::World, |st| unsafe {
        set_elements(st, status, dt, n)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Status_set_cancelled(status: *mut MpiStatus, flag: c_int) -> c_int {
    call("MPI_Status_set_cancelled", On::World, |_| {
        if status.is_null() || status as usize == STATUS_IGNORE {
            return Err(fail(code::ARG, "no status"));
        }
        // SAFETY: MPI's contract: a status.
        unsafe { (*status).cancelled = c_int::from(flag != 0) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) -> c_int {
    call("MPI_Test_cancelled", On::World, |_| {
        // SAFETY: MPI's contract: a status.
        let s = unsafe { status_in(status)? };
        // SAFETY: MPI's contract: an int out-parameter.
        unsafe { out(flag, s.cancelled, "flag") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend(
    buf: *const c_void,
    n: c_int,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    c: c_int,
) -> c_int {
    // a ready send may be a standard send (MPI 3.1, 3.4): the receive is posted, by
    // the program's contract, and rma's sends are eager anyway
    // SAFETY: MPI's contract, forwarded.
    unsafe { MPI_Send(buf, n, dt, dest, tag, c) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Irsend(
    buf: *const c_void,
    n: c_int,
    dt: c_int,
    dest: c_int,
    tag: c_int,
    c: c_int,
    req: *mut c_int,
) -> c_int {
    // as MPI_Rsend
    // SAFETY: MPI's contract, forwarded.
    unsafe { MPI_Isend(buf, n, dt, dest, tag, c, req) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    n: c_int,
    dt: c_int,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    c: c_int,
    status: *mut MpiStatus,
) -> c_int {
    // the send packs the buffer into its message before the receive writes it
    // SAFETY: MPI's contract, forwarded (one buffer for both, as this call allows).
    unsafe { MPI_Sendrecv(buf, n, dt, dest, stag, buf, n, dt, src, rtag, c, status) }
}

/// Waits for request `h`; its status.
pub(crate) fn wait_one(l: &mut Lease, h: c_int) -> R<Status> {
    wait_on(l, |st| st.progress_req(h))
}

/// Waits for a message matching (src, tag) on `c` and receives it into `buf`.
fn recv_blocking(
    l: &mut Lease,
    buf: *mut c_void,
    n: usize,
    dt: c_int,
    src: c_int,
    tag: c_int,
    c: c_int,
) -> R<Status> {
    wait_on(l, |st| st.try_recv(buf, n, dt, src, tag, c))
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
        let after = st.after(h);
        // SAFETY: MPI's contract: a status, and the request handle to reset.
        unsafe {
            s.store(status);
            out(req, after, "request")
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
        let after = st.after(h);
        // SAFETY: MPI's contract: the out-parameters.
        unsafe {
            if let Some(s) = s {
                s.store(status);
                out(req, after, "request")?;
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
                *reqs.add(i) = st.after(h);
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
                let after = st.after(h);
                // SAFETY: MPI's contract: n requests and statuses.
                unsafe {
                    s.store(nth(statuses, i));
                    *reqs.add(i) = after;
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
        // null handles and inactive persistent requests take no part (MPI 3.1, 3.7.5)
        let active: Vec<bool> = hs.iter().map(|&h| h != 0 && !st.inactive(h)).collect();
        if !active.contains(&true) {
            // SAFETY: MPI's contract: the out-parameters.
            unsafe {
                Status::EMPTY.store(status);
                return out(index, crate::comm::UNDEFINED, "index");
            }
        }
        let (i, s) = wait_on(st, |st| {
            for (i, &h) in hs.iter().enumerate() {
                if active[i] {
                    if let Some(s) = st.progress_req(h)? {
                        return Ok(Some((i, s)));
                    }
                }
            }
            Ok(None)
        })?;
        let after = st.after(hs[i]);
        // SAFETY: MPI's contract: the out-parameters and the requests.
        unsafe {
            s.store(status);
            *reqs.add(i) = after;
            out(index, i as c_int, "index")
        }
    })
}

/// The requests of an array that take part in a wait or test: (index, handle), leaving
/// out null handles and inactive persistent requests.
///
/// # Safety
/// `reqs` holds `n` request handles.
unsafe fn active(st: &State, n: c_int, reqs: *const c_int) -> R<Vec<(usize, c_int)>> {
    // SAFETY: the caller's contract.
    let hs = unsafe { crate::arr(reqs, n, "requests")? };
    Ok(hs
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, h)| h != 0 && !st.inactive(h))
        .collect())
}

/// Completes every request of `act` that can complete now: (index, status) of each.
fn complete_some(st: &mut State, act: &[(usize, c_int)]) -> R<Vec<(usize, Status)>> {
    let mut done = Vec::new();
    for &(i, h) in act {
        if let Some(s) = st.progress_req(h)? {
            done.push((i, s));
        }
    }
    Ok(done)
}

/// Writes the completed requests of MPI_Waitsome and MPI_Testsome out.
///
/// # Safety
/// MPI's contract: `reqs` holds the requests, `indices` and `statuses` room for as
/// many entries as there are requests.
unsafe fn report_some(
    st: &State,
    hs: &[(usize, c_int)],
    done: &[(usize, Status)],
    reqs: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> R {
    for (k, &(i, s)) in done.iter().enumerate() {
        let h = hs.iter().find(|&&(j, _)| j == i).map_or(0, |&(_, h)| h);
        // SAFETY: the caller's contract.
        unsafe {
            *reqs.add(i) = st.after(h);
            *indices.add(k) = i as c_int;
            s.store(nth(statuses, k));
        }
    }
    // SAFETY: the caller's contract.
    unsafe { out(outcount, done.len() as c_int, "outcount") }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    n: c_int,
    reqs: *mut c_int,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Testany", On::World, |st| {
        // SAFETY: MPI's contract: n requests.
        let act = unsafe { active(st, n, reqs)? };
        let first = act
            .iter()
            .find_map(|&(i, h)| st.progress_req(h).transpose().map(|s| s.map(|s| (i, h, s))))
            .transpose()?;
        st.progress();
        // SAFETY: MPI's contract: the out-parameters and the requests.
        unsafe {
            match first {
                Some((i, h, s)) => {
                    *reqs.add(i) = st.after(h);
                    s.store(status);
                    out(index, i as c_int, "index")?;
                    out(flag, 1, "flag")
                }
                None => {
                    if act.is_empty() {
                        Status::EMPTY.store(status);
                    }
                    out(index, crate::comm::UNDEFINED, "index")?;
                    out(flag, c_int::from(act.is_empty()), "flag")
                }
            }
        }
    })
}

/// MPI_Waitsome (`wait`) and MPI_Testsome: completes what can be of the active
/// requests, waiting for at least one when `wait`.
///
/// # Safety
/// MPI's contract: `reqs` holds `n` requests, `indices` and `statuses` room for as
/// many entries.
unsafe fn some(
    st: &mut Lease,
    n: c_int,
    reqs: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
    wait: bool,
) -> R {
    // SAFETY: the caller's contract.
    let act = unsafe { active(st, n, reqs)? };
    if act.is_empty() {
        // SAFETY: the caller's contract: an int out-parameter.
        return unsafe { out(outcount, crate::comm::UNDEFINED, "outcount") };
    }
    let done = if wait {
        wait_on(st, |st| {
            let d = complete_some(st, &act)?;
            Ok((!d.is_empty()).then_some(d))
        })?
    } else {
        let d = complete_some(st, &act)?;
        st.progress();
        d
    };
    // SAFETY: the caller's contract.
    unsafe { report_some(st, &act, &done, reqs, outcount, indices, statuses) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    n: c_int,
    reqs: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Waitsome", On::World, |st| unsafe {
        some(st, n, reqs, outcount, indices, statuses, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    n: c_int,
    reqs: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    // SAFETY: MPI's contract, forwarded.
    call("MPI_Testsome", On::World, |st| unsafe {
        some(st, n, reqs, outcount, indices, statuses, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(
    req: c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    call("MPI_Request_get_status", On::World, |st| {
        let s = if req == 0 || st.inactive(req) {
            Some(Status::EMPTY)
        } else {
            let s = st.progress_req(req)?;
            if let Some(s) = s {
                // the request stays until a wait or test frees it
                st.reqs.put(req, Req::Received(s));
            }
            s
        };
        // SAFETY: MPI's contract: the out-parameters.
        unsafe {
            if let Some(s) = s {
                s.store(status);
            }
            out(flag, c_int::from(s.is_some()), "flag")
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
            Some(Req::Coll(_)) => {
                return Err(fail(
                    code::REQUEST,
                    "MPI does not allow freeing a nonblocking collective's request",
                ));
            }
            Some(_) => {
                st.reqs.remove(h);
                st.p2p.persist.remove(&h);
            }
            None => return Err(fail(code::REQUEST, format!("{h} is not a request"))),
        }
        // SAFETY: as above.
        unsafe { out(req, 0, "request") }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    /// A pipe with a non-blocking read end: (read, write).
    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: a writable array of two descriptors.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        assert_eq!(rc, 0, "pipe2");
        // SAFETY: two fresh descriptors that nothing else owns.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// Whether no write end of the pipe is open anywhere in this process (a read sees
    /// end of file rather than EAGAIN).
    fn no_writer(r: &OwnedFd) -> bool {
        let mut b = [0u8; 1];
        // SAFETY: a live descriptor and a writable one-byte buffer.
        unsafe { libc::read(r.as_raw_fd(), b.as_mut_ptr().cast(), 1) == 0 }
    }

    /// Sends `payload` from `from` with `n` copies of `fd` (SCM_RIGHTS).
    fn send_with_fds(from: &UnixDatagram, payload: &[u8], fd: &OwnedFd, n: usize) {
        assert!(n <= 253);
        let mut control = [0u64; CONTROL_WORDS];
        let bytes = (n * std::mem::size_of::<c_int>()) as u32;
        let mut iov = libc::iovec {
            iov_base: payload.as_ptr() as *mut c_void,
            iov_len: payload.len(),
        };
        // SAFETY: an all-zero msghdr is valid; its fields are set to live buffers.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE is arithmetic.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(bytes) } as _;
        // SAFETY: the control buffer (1536 bytes) holds CMSG_SPACE of up to 253
        // descriptors; the header and the descriptors are written inside it, and
        // sendmsg reads the live buffers msg points to.
        let rc = unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes) as _;
            let data = libc::CMSG_DATA(c).cast::<c_int>();
            for i in 0..n {
                data.add(i).write_unaligned(fd.as_raw_fd());
            }
            libc::sendmsg(from.as_raw_fd(), &msg, 0)
        };
        assert!(rc >= 0, "sendmsg: {}", std::io::Error::last_os_error());
    }

    /// A whole message of `data` on context 7 from rank 0, as `P2p::send` frames it.
    fn datagram(data: &[u8]) -> Vec<u8> {
        let mut d = Vec::new();
        d.extend_from_slice(&7u64.to_le_bytes());
        d.extend_from_slice(&0i32.to_le_bytes());
        d.extend_from_slice(&0i32.to_le_bytes());
        d.extend_from_slice(&5i32.to_le_bytes());
        d.extend_from_slice(&0i32.to_le_bytes());
        d.extend_from_slice(&(data.len() as u64).to_le_bytes());
        d.extend_from_slice(data);
        d
    }

    /// A rank's end over one side of a socket pair (a world of one rank that sends
    /// nothing).
    fn p2p_over(sock: UnixDatagram) -> P2p {
        sock.set_nonblocking(true).expect("non-blocking");
        pass_credentials(&sock).expect("SO_PASSCRED");
        let nowhere = SocketAddr::from_pathname("/nonexistent/rma-capi-test").expect("a name");
        P2p::with_socket(sock, vec![nowhere], None, 0)
    }

    /// Before the fix the descriptors stayed open in the rank (the reproduced attack
    /// took a rank from 6 open descriptors to 306): the pipe's write end stays open.
    #[test]
    fn descriptors_that_come_with_a_datagram_are_closed_and_the_datagram_dropped() {
        let (a, b) = UnixDatagram::pair().expect("a socket pair");
        let mut p = p2p_over(b);
        let (r, w) = pipe();
        send_with_fds(&a, &datagram(b"with descriptors"), &w, 3);
        drop(w);
        // the copies in flight keep the pipe open: the check below can fail
        assert!(!no_writer(&r));
        a.send(&datagram(b"plain")).expect("send");
        p.drain().expect("drain");
        assert!(
            no_writer(&r),
            "a descriptor that came with a datagram is still open"
        );
        let got: Vec<&[u8]> = p.queue.iter().map(|m| &m.data[..]).collect();
        assert_eq!(
            got,
            [&b"plain"[..]],
            "only the datagram without descriptors is taken"
        );
    }

    /// More descriptors than the control buffer holds: the kernel installs those that
    /// fit and flags MSG_CTRUNC; they are closed, and the datagram is dropped.
    #[test]
    fn descriptors_past_the_control_buffer_are_closed_too() {
        let (a, b) = UnixDatagram::pair().expect("a socket pair");
        b.set_nonblocking(true).expect("non-blocking");
        let (r, w) = pipe();
        send_with_fds(&a, &datagram(b"x"), &w, 10);
        drop(w);
        let mut buf = vec![0u8; HEADER + FRAGMENT];
        // room for a control header and four descriptors of the ten
        let got = recv_with_control(&b, &mut buf, &mut [0u64; 4]).expect("recvmsg");
        assert_eq!(got, Datagram::Foreign);
        assert!(
            no_writer(&r),
            "a descriptor of a truncated datagram is still open"
        );
    }

    /// Before the fix `drain` took datagrams for as long as they came.
    #[test]
    fn one_drain_takes_at_most_a_batch_of_datagrams() {
        let (a, b) = UnixDatagram::pair().expect("a socket pair");
        let mut p = p2p_over(b);
        a.set_nonblocking(true).expect("non-blocking");
        for i in 0..=DRAIN_BATCH {
            a.send(&datagram(&[i as u8]))
                .unwrap_or_else(|e| panic!("datagram {i}: {e}"));
        }
        p.drain().expect("drain");
        assert_eq!(
            p.queue.len(),
            DRAIN_BATCH,
            "one call took more than its bound"
        );
        p.drain().expect("drain");
        assert_eq!(
            p.queue.len(),
            DRAIN_BATCH + 1,
            "the next call takes the rest"
        );
    }

    fn backdate(dir: &std::path::Path) {
        let old = std::time::SystemTime::now() - STALE_AFTER - Duration::from_secs(60);
        std::fs::File::open(dir)
            .and_then(|f| f.set_modified(old))
            .expect("backdating a directory");
    }

    #[test]
    fn a_jobs_directory_is_private_and_left_by_its_last_rank() {
        let dir = make_dir("rma-unit").expect("a directory");
        assert!(is_private_dir(&dir), "{}", dir.display());
        let (s0, p0) = bind_in(&dir, 0).expect("rank 0's socket");
        let (s1, p1) = bind_in(&dir, 1).expect("rank 1's socket");
        s1.send_to(b"hi", dir.join("0"))
            .expect("a send between the ranks");
        drop((s0, p0));
        assert!(
            dir.exists(),
            "removed while a rank still has its socket there"
        );
        drop((s1, p1));
        assert!(!dir.exists(), "left behind by the last rank");
        // not private: others may enter, a link, outside the base, another shape
        let open = make_dir("rma-unit").expect("a directory");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o711)).expect("chmod");
        assert!(!is_private_dir(&open));
        let link = std::path::Path::new(SOCKET_BASE)
            .join(format!("rma-unit{DIR_MARK}{:016x}", random_u64()));
        std::os::unix::fs::symlink(&open, &link).expect("a link");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        assert!(is_private_dir(&open) && !is_private_dir(&link));
        assert!(!is_private_dir(
            &open.join("..").join(open.file_name().expect("a name"))
        ));
        assert!(!is_dir_name("rma-unit-capi-0123"));
        assert!(!is_dir_name("rma-unit/x-capi-0123456789abcdef"));
        std::fs::remove_file(&link).expect("rm link");
        std::fs::remove_dir(&open).expect("rmdir");
    }

    #[test]
    fn only_old_directories_without_a_live_socket_are_swept() {
        // stale: its socket's process is gone (the file stays, nobody is bound)
        let stale = make_dir("rma-unit").expect("a directory");
        drop(UnixDatagram::bind(stale.join("0")).expect("a socket"));
        backdate(&stale);
        // live: as old, but a rank still has its socket
        let live = make_dir("rma-unit").expect("a directory");
        let (_s, _p) = bind_in(&live, 0).expect("a socket");
        backdate(&live);
        // young: empty, but just made (rank 0 is about to bind)
        let young = make_dir("rma-unit").expect("a directory");
        sweep_stale();
        assert!(!stale.exists(), "a stale directory was kept");
        assert!(live.exists(), "a live job's directory was removed");
        assert!(young.exists(), "a directory just made was removed");
        std::fs::remove_dir(&young).expect("rmdir");
    }
}
