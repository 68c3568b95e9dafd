//! The C interface's message layer attacked by another local user: descriptors sent
//! to the job's sockets, a flood of datagrams, the sockets' names bound before the job
//! starts. The job is `tests/c/attacked.c` under rma-shm's launcher (what `rmarun`
//! runs); the attacker is a process forked from this test that takes the uid of a
//! second user, `rmatest2`, which the tests create with `useradd` when it is missing.
//! That needs root: run as another user, the tests print a note and pass without
//! attacking. Needs a C compiler (`cc`, or `$RMA_CC`).
//!
//! Every wait here has its own deadline, and the job its own timeout, so that a job
//! the attack stops makes the test fail instead of hanging.

mod common;
use common::lib_dir;
use rma_shm::launch::{spawn, LaunchOptions, LaunchReport};
use std::path::PathBuf;
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The second user the attacks run as.
const STRANGER: &str = "rmatest2";

/// Compiles `tests/c/<name>.c` with rmacc under a name of its own (`tag`, so that
/// tests running at once never write the same file); the program's path.
fn compile(name: &str, tag: &str) -> PathBuf {
    common::compile(name, &format!("capi-{name}-{tag}"))
}

/// The second user's ids.
#[derive(Clone, Copy, Debug)]
struct Stranger {
    uid: libc::uid_t,
    gid: libc::gid_t,
}

fn id_of(flag: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, STRANGER]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// The second user, created if missing; None (with a note) when this process cannot
/// become another user.
fn stranger(test: &str) -> Option<Stranger> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "note: {test} skipped: attacking as a second user needs root (to create \
             {STRANGER} and take its uid)"
        );
        return None;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let (Some(uid), Some(gid)) = (id_of("-u"), id_of("-g")) {
            assert_ne!(uid, 0, "{STRANGER} must not be root");
            return Some(Stranger { uid, gid });
        }
        // tests running at once may race to create it: the loser's useradd fails and
        // the next look-up finds the winner's user
        let made = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
            ])
            .arg(STRANGER)
            .status();
        if let Err(e) = made {
            eprintln!("note: {test} skipped: cannot run useradd to create {STRANGER}: {e}");
            return None;
        }
        assert!(
            Instant::now() < deadline,
            "cannot create the user {STRANGER}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A running job of `attacked.c` and its control directory.
struct Job {
    ctl: PathBuf,
    ranks: usize,
    done: JoinHandle<LaunchReport>,
}

impl Job {
    /// Starts `ranks` ranks; with `go`, they go on to MPI_Init at once, else they wait
    /// for the file `go` (`job.mark("go")`).
    fn start(test: &str, ranks: usize, go: bool) -> Job {
        let ctl = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("attacked-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&ctl);
        std::fs::create_dir_all(&ctl).expect("the control directory");
        if go {
            std::fs::write(ctl.join("go"), "").expect("the go file");
        }
        let mut o = LaunchOptions::new(ranks, compile("attacked", test));
        o.args = vec![ctl.clone().into()];
        // the library built for this run, not another copy on cargo's library path
        // (which comes before the program's RUNPATH)
        o.env = vec![("LD_LIBRARY_PATH".into(), lib_dir().into())];
        o.prefix_output = true;
        o.grace = Duration::from_secs(5);
        // the job's own deadline: past it, the launcher kills every rank
        o.timeout = Some(Duration::from_secs(100));
        let done = std::thread::spawn(move || spawn(&o).expect("launching the ranks"));
        Job { ctl, ranks, done }
    }

    /// The contents of `<prefix>.<rank>` for every rank, once all are there.
    fn files(&self, prefix: &str, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        loop {
            let got: Vec<Option<String>> = (0..self.ranks)
                .map(|r| std::fs::read_to_string(self.ctl.join(format!("{prefix}.{r}"))).ok())
                .collect();
            if got.iter().all(Option::is_some) {
                return got.into_iter().map(Option::unwrap_or_default).collect();
            }
            assert!(
                !self.done.is_finished(),
                "the job ended before every rank wrote {prefix}.<rank>"
            );
            assert!(
                Instant::now() < deadline,
                "not every rank wrote {prefix}.<rank> within {within:?}: {got:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The world's name (from the ranks' start files).
    fn world(&self) -> String {
        let starts = self.files("start", Duration::from_secs(60));
        let world = starts[0].split_whitespace().next().unwrap_or("").to_owned();
        assert!(world.starts_with("rma-"), "a world name: {starts:?}");
        world
    }

    fn mark(&self, name: &str) {
        std::fs::write(self.ctl.join(name), "").expect("a control file");
    }

    /// Whether the job ended within `within`.
    fn ends_within(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while !self.done.is_finished() {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        true
    }

    fn report(self) -> LaunchReport {
        let r = self.done.join().expect("the launcher thread");
        let _ = std::fs::remove_dir_all(&self.ctl);
        r
    }
}

/// A Unix socket address an attacker aims at or binds.
#[derive(Clone, Copy)]
struct Addr {
    sa: libc::sockaddr_un,
    len: libc::socklen_t,
}

impl std::fmt::Debug for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let off = std::mem::size_of::<libc::sa_family_t>();
        let n = self.len as usize - off;
        let mut bytes: Vec<u8> = self.sa.sun_path[..n].iter().map(|&c| c as u8).collect();
        if bytes.last() == Some(&0) {
            bytes.pop(); // a path's terminating NUL
        }
        write!(f, "{:?}", String::from_utf8_lossy(&bytes))
    }
}

impl Addr {
    /// An abstract name (`@name` in /proc/net/unix).
    fn abstract_name(name: &[u8]) -> Addr {
        Addr::of(&[&[0u8][..], name].concat(), false)
    }

    /// A path in the filesystem.
    fn path(path: &[u8]) -> Addr {
        Addr::of(path, true)
    }

    fn of(bytes: &[u8], nul: bool) -> Addr {
        // SAFETY: an all-zero sockaddr_un is valid.
        let mut sa: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
        assert!(bytes.len() < sa.sun_path.len(), "a socket name too long");
        for (d, &s) in sa.sun_path.iter_mut().zip(bytes) {
            *d = s as libc::c_char;
        }
        let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + usize::from(nul);
        Addr {
            sa,
            len: len as libc::socklen_t,
        }
    }

    fn ptr(&self) -> *const libc::sockaddr {
        (&self.sa as *const libc::sockaddr_un).cast()
    }
}

/// The names the job's message sockets have, as any local user can find them: the
/// abstract names `rma-capi-<world>-<rank>` (the world's name is visible in /dev/shm),
/// and every socket in /proc/net/unix whose name holds the world's name.
fn targets(world: &str, ranks: usize) -> Vec<Addr> {
    let job: String = world.chars().filter(char::is_ascii_alphanumeric).collect();
    let mut names: Vec<Vec<u8>> = (0..ranks)
        .map(|r| format!("@rma-capi-{job}-{r}").into_bytes())
        .collect();
    let table = std::fs::read("/proc/net/unix").expect("/proc/net/unix");
    for line in table.split(|&b| b == b'\n').skip(1) {
        // the path is the eighth field, when there is one
        let Some(name) = line.split(|&b| b == b' ').filter(|f| !f.is_empty()).nth(7) else {
            continue;
        };
        let holds = |w: &[u8]| name.windows(w.len()).any(|x| x == w);
        if (holds(world.as_bytes()) || holds(job.as_bytes())) && !names.contains(&name.to_vec()) {
            names.push(name.to_vec());
        }
    }
    names
        .iter()
        .map(|n| match n.strip_prefix(b"@") {
            Some(a) => Addr::abstract_name(a),
            None => Addr::path(n),
        })
        .collect()
}

/// Whether /proc/net/unix lists a socket whose name holds the world's name: the job's
/// sockets are there for an attacker to find (the attack aims at something).
fn listed(world: &str) -> bool {
    let job: String = world.chars().filter(char::is_ascii_alphanumeric).collect();
    let table = std::fs::read_to_string("/proc/net/unix").expect("/proc/net/unix");
    table.contains(world) || table.contains(&job)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn sleep_ms(ms: i64) {
    let t = libc::timespec {
        tv_sec: 0,
        tv_nsec: ms * 1_000_000,
    };
    // SAFETY: a valid timespec; a null remainder is allowed.
    unsafe { libc::nanosleep(&t, std::ptr::null_mut()) };
}

fn monotonic_s() -> i64 {
    // SAFETY: an all-zero timespec is valid.
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a valid clock id and a writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec
}

/// A process that the attacker runs in: forked from this one, in a process group of
/// its own, with the second user's uid, gid and no supplementary groups.
struct Attacker {
    pid: libc::pid_t,
}

impl Attacker {
    /// Forks and runs `attack` as the stranger; its result is the exit status.
    /// `attack` may make only async-signal-safe calls (system calls on memory
    /// prepared beforehand, no allocation): the process is forked from a threaded one.
    fn fork(s: Stranger, attack: impl FnOnce() -> i32) -> Attacker {
        // SAFETY: the child makes only async-signal-safe calls (setpgid, setgroups,
        // setgid, setuid, what `attack` does, _exit), as fork from a threaded process
        // requires.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            // SAFETY: system calls without memory arguments (setgroups with none).
            let dropped = unsafe {
                libc::setpgid(0, 0) == 0
                    && libc::setgroups(0, std::ptr::null()) == 0
                    && libc::setgid(s.gid) == 0
                    && libc::setuid(s.uid) == 0
                    && libc::geteuid() == s.uid
            };
            let code = if dropped { attack() } else { 100 };
            // SAFETY: ends the child without running this process's exit handlers.
            unsafe { libc::_exit(code) };
        }
        Attacker { pid }
    }

    /// Waits up to `within` for the attacker to exit; its exit status, or None (and the
    /// attacker killed) when it did not.
    fn wait(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        loop {
            let mut st = 0;
            // SAFETY: our own child; a writable status.
            let r = unsafe { libc::waitpid(self.pid, &mut st, libc::WNOHANG) };
            if r == self.pid {
                self.pid = 0;
                return libc::WIFEXITED(st).then(|| libc::WEXITSTATUS(st));
            }
            if Instant::now() > deadline {
                self.kill();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        if self.pid > 0 {
            // SAFETY: signals our own child's process group, then reaps the child.
            unsafe {
                libc::kill(-self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
            self.pid = 0;
        }
    }
}

impl Drop for Attacker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A pipe the attacker reports through: (read end, write end).
fn pipe() -> (std::fs::File, libc::c_int) {
    let mut fds = [0; 2];
    // SAFETY: a writable array of two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    use std::os::fd::FromRawFd;
    // SAFETY: the read end is ours alone from here on.
    (unsafe { std::fs::File::from_raw_fd(fds[0]) }, fds[1])
}

fn close(fd: libc::c_int) {
    // SAFETY: a descriptor this test opened and no longer uses.
    unsafe { libc::close(fd) };
}

/// Reads exactly `buf.len()` bytes from the attacker's pipe within `within` (the
/// attacker closes its end when it dies, which ends the read early).
fn read_report(mut from: std::fs::File, buf: &mut [u8], within: Duration) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut local = vec![0u8; buf.len()];
    std::thread::spawn(move || {
        use std::io::Read;
        let ok = from.read_exact(&mut local).is_ok();
        let _ = tx.send((ok, local));
    });
    match rx.recv_timeout(within) {
        Ok((true, got)) => {
            buf.copy_from_slice(&got);
            true
        }
        _ => false,
    }
}

/// The world's message-socket directories left in /dev/shm (none once the job ended).
fn left_in_shm(world: &str) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(world) && n.contains("capi"))
                .collect()
        })
        .unwrap_or_default()
}

/// Sends 100 datagrams, each carrying three descriptors (SCM_RIGHTS), to each of the
/// job's sockets; the job counts its open descriptors before and after. Before the
/// fix, each delivered datagram left its three descriptors open in the receiving
/// rank (the uid filter dropped the datagram after recvmsg had installed them).
#[test]
fn descriptors_sent_by_another_user_are_never_left_open_in_a_rank() {
    let Some(s) = stranger("descriptors_sent_by_another_user") else {
        return;
    };
    let job = Job::start("fds", 2, true);
    let world = job.world();
    job.files("ready", Duration::from_secs(60));
    assert!(
        listed(&world),
        "the job's sockets are not in /proc/net/unix"
    );
    let aims = targets(&world, job.ranks);
    let nulls: Vec<std::fs::File> = (0..3)
        .map(|_| std::fs::File::open("/dev/null").expect("/dev/null"))
        .collect();
    let fds: Vec<libc::c_int> = nulls.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
    let (report, w) = pipe();
    let mut attacker = Attacker::fork(s, || {
        let deadline = monotonic_s() + 20;
        let mut sent: u64 = 0;
        for a in &aims {
            // SAFETY: plain system calls on memory of this stack frame (async-signal-safe).
            unsafe {
                let sock = libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
                if sock < 0 {
                    return 101;
                }
                let mut control = [0u64; 8];
                let mut byte = [0u8; 32];
                let mut iov = libc::iovec {
                    iov_base: byte.as_mut_ptr().cast(),
                    iov_len: byte.len(),
                };
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_name = a.ptr() as *mut libc::c_void;
                msg.msg_namelen = a.len;
                msg.msg_iov = &mut iov;
                msg.msg_iovlen = 1;
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = libc::CMSG_SPACE(12) as _;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(12) as _;
                std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), 3);
                'datagrams: for _ in 0..100 {
                    loop {
                        if libc::sendmsg(sock, &msg, libc::MSG_DONTWAIT) >= 0 {
                            sent += 1;
                            break;
                        }
                        let e = errno();
                        if (e == libc::EAGAIN || e == libc::EWOULDBLOCK) && monotonic_s() < deadline
                        {
                            // the rank's queue is full: it drains it while it runs
                            sleep_ms(1);
                            continue;
                        }
                        break 'datagrams;
                    }
                }
                libc::close(sock);
            }
        }
        let bytes = sent.to_le_bytes();
        // SAFETY: writes 8 bytes from a live array to the report pipe.
        unsafe { libc::write(w, bytes.as_ptr().cast(), 8) };
        0
    });
    close(w);
    let mut sent = [0u8; 8];
    let reported = read_report(report, &mut sent, Duration::from_secs(60));
    let status = attacker.wait(Duration::from_secs(30));
    drop(nulls);
    let sent = u64::from_le_bytes(sent);
    assert!(
        reported && status == Some(0),
        "the attacker failed (status {status:?})"
    );
    // the ranks go on for 40 rounds of messages, taking in whatever was sent
    job.mark("attacking");
    let r = job.report();
    assert!(
        !r.timed_out,
        "the job did not finish (the attacker delivered {sent} datagrams to {aims:?})"
    );
    assert!(
        r.success(),
        "{:?}: descriptors added to a rank, or its messages broken, by {sent} datagrams \
         another user sent to {aims:?}",
        r.failures
    );
    assert_eq!(
        left_in_shm(&world),
        Vec::<String>::new(),
        "left in /dev/shm"
    );
}

/// Four processes of another user send to the job's sockets without a pause, for as
/// long as the job runs, while its ranks pass 40 rounds of messages. None of their
/// datagrams may reach the job's receive queues (where they would take the room the
/// job's own sends wait for, and keep `drain` taking them in), and the job must finish
/// its rounds (within 60 s: each takes milliseconds). Before the fix every datagram
/// of the flood was queued at a rank (each flooder reports how many of its first 50
/// were).
#[test]
fn a_flood_from_another_user_never_reaches_the_jobs_queues_nor_stops_it() {
    let Some(s) = stranger("a_flood_from_another_user") else {
        return;
    };
    let job = Job::start("flood", 2, true);
    let world = job.world();
    job.files("ready", Duration::from_secs(60));
    let aims = targets(&world, job.ranks);
    let (report, w) = pipe();
    let mut flooders: Vec<Attacker> = (0..4)
        .map(|i| {
            let a = aims[i % aims.len()];
            Attacker::fork(s, move || {
                // SAFETY: plain system calls on memory of this stack frame.
                unsafe {
                    let sock =
                        libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
                    if sock < 0 {
                        return 101;
                    }
                    let junk = [0x5au8; 64];
                    let (mut tries, mut delivered) = (0u8, 0u8);
                    loop {
                        // blocking: woken as soon as the rank's queue has room
                        let r =
                            libc::sendto(sock, junk.as_ptr().cast(), junk.len(), 0, a.ptr(), a.len);
                        if r >= 0 {
                            delivered = delivered.saturating_add(1);
                        } else {
                            sleep_ms(1);
                        }
                        if tries < 50 {
                            tries += 1;
                            if tries == 50 {
                                libc::write(w, (&delivered as *const u8).cast(), 1);
                            }
                        }
                    }
                }
            })
        })
        .collect();
    close(w);
    let mut delivered = [0u8; 4];
    assert!(
        read_report(report, &mut delivered, Duration::from_secs(30)),
        "the flood did not start"
    );
    job.mark("attacking");
    let finished = job.ends_within(Duration::from_secs(60));
    for f in &mut flooders {
        f.kill();
    }
    let r = job.report();
    assert!(
        finished,
        "the job did not finish 40 rounds of messages in 60 s while another user \
         flooded {aims:?}"
    );
    assert!(r.success(), "{:?}", r.failures);
    assert_eq!(
        delivered, [0; 4],
        "datagrams of another user's flood (of 50 per flooder) queued at the job's \
         sockets {aims:?}"
    );
    assert_eq!(
        left_in_shm(&world),
        Vec::<String>::new(),
        "left in /dev/shm"
    );
}

/// Another user binds the names the job's sockets would have before the ranks reach
/// MPI_Init (the world's name is in /dev/shm as soon as the launcher made it). Before
/// the fix every rank's MPI_Init failed: its abstract name was taken.
#[test]
fn names_bound_by_another_user_before_start_up_do_not_stop_mpi_init() {
    let Some(s) = stranger("names_bound_by_another_user") else {
        return;
    };
    let job = Job::start("squat", 3, false);
    let world = job.world();
    // what an attacker can bind: the names the ranks will use, as far as they can be
    // told from the world's name
    let squat = targets(&world, job.ranks);
    let (report, w) = pipe();
    let _squatter = Attacker::fork(s, || {
        let mut bound = 0u8;
        for a in &squat {
            // SAFETY: plain system calls on memory of this stack frame.
            unsafe {
                let sock = libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
                if sock >= 0 && libc::bind(sock, a.ptr(), a.len) == 0 {
                    bound += 1;
                }
            }
        }
        // SAFETY: writes one byte from a live local, then sleeps until killed.
        unsafe {
            libc::write(w, (&bound as *const u8).cast(), 1);
            loop {
                libc::pause();
            }
        }
    });
    close(w);
    let mut bound = [0u8; 1];
    assert!(
        read_report(report, &mut bound, Duration::from_secs(30)),
        "the squatter did not report"
    );
    assert_eq!(
        usize::from(bound[0]),
        squat.len(),
        "the squatter could not bind every name of {squat:?}"
    );
    job.mark("attacking");
    job.mark("go");
    let r = job.report();
    assert!(
        r.success(),
        "{:?} (another user had bound {squat:?})",
        r.failures
    );
    assert_eq!(
        left_in_shm(&world),
        Vec::<String>::new(),
        "left in /dev/shm"
    );
}
