//! Starting a world of processes: what `rmarun` does, as a library so that tests can
//! launch ranks from their own binary.

use crate::segment::Segment;
use crate::world::{
    format_key, fresh_key, Control, RankState, ENV_KEY, ENV_RANK, ENV_SIZE, ENV_WORLD,
};
use rma_core::{Error, Result};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How to launch a world of processes.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Number of ranks.
    pub ranks: usize,
    /// The program each rank runs.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment for every rank.
    pub env: Vec<(OsString, OsString)>,
    /// Prefix every output line with `[rank] `.
    pub prefix_output: bool,
    /// After a rank fails, how long the others may take to notice and exit on their own
    /// before they are killed.
    pub grace: Duration,
    /// Kill every rank after this long (none: no limit).
    pub timeout: Option<Duration>,
    /// Say on stderr how start-up goes (ranks started, ranks joined) once it has taken
    /// longer than a second.
    pub progress: bool,
    /// Forward this process's stdin to rank 0 (the others read end of file), through a
    /// pipe and a thread, as mpiexec does; off: every rank's stdin is empty. The thread
    /// reads this process's stdin until it ends or rank 0 closes its end, so a process
    /// that launches again, or reads stdin itself afterwards, should leave it off. A
    /// terminal is forwarded only while this process is in its foreground (a launcher
    /// started in the background leaves the terminal alone, rather than being stopped
    /// by SIGTTIN).
    pub stdin_to_rank0: bool,
}

impl LaunchOptions {
    /// `ranks` copies of `program` with no arguments, output prefixed, a 5 s grace.
    pub fn new(ranks: usize, program: impl Into<PathBuf>) -> LaunchOptions {
        LaunchOptions {
            ranks,
            program: program.into(),
            args: vec![],
            env: vec![],
            prefix_output: true,
            grace: Duration::from_secs(5),
            timeout: None,
            progress: false,
            stdin_to_rank0: false,
        }
    }
}

/// How each rank ended.
#[derive(Debug)]
pub struct LaunchReport {
    /// The exit status of each rank, by rank.
    pub statuses: Vec<ExitStatus>,
    /// The ranks that failed (non-zero exit or signal), with a description, in the order
    /// their failure was seen.
    pub failures: Vec<(usize, String)>,
    /// Whether the timeout struck.
    pub timed_out: bool,
    /// Whether a rank asked for the job to end (MPI_Abort), whatever its own exit
    /// status: the other ranks were then killed at once.
    pub aborted: bool,
    /// The ranks the launcher killed itself (after another rank failed and the grace
    /// period ran out, or at the timeout), in rank order; they are among `failures`.
    pub killed: Vec<usize>,
}

impl LaunchReport {
    /// Whether every rank exited with status 0.
    pub fn success(&self) -> bool {
        self.failures.is_empty() && !self.timed_out && !self.aborted
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".into(),
    }
}

/// One output stream of a rank, forwarded line by line with a `[rank] ` prefix.
#[derive(Debug)]
struct Stream {
    rank: usize,
    to_err: bool,
    file: std::fs::File,
    /// The start of a line whose end has not come yet.
    pending: Vec<u8>,
}

impl Stream {
    fn new(rank: usize, to_err: bool, fd: impl Into<OwnedFd>) -> Stream {
        Stream {
            rank,
            to_err,
            file: std::fs::File::from(fd.into()),
            pending: vec![],
        }
    }

    /// Writes out every whole line received so far (at the end of the stream, what is
    /// left too, with a newline added).
    fn emit(&mut self, data: &[u8], eof: bool) {
        self.pending.extend_from_slice(data);
        let whole = if eof {
            self.pending.len()
        } else {
            match self.pending.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                None => return,
            }
        };
        if whole == 0 {
            return;
        }
        let prefix = format!("[{}] ", self.rank);
        let mut buf = Vec::with_capacity(whole + 16);
        for line in self.pending[..whole].split_inclusive(|&b| b == b'\n') {
            buf.extend_from_slice(prefix.as_bytes());
            buf.extend_from_slice(line);
            if !line.ends_with(b"\n") {
                buf.push(b'\n');
            }
        }
        self.pending.drain(..whole);
        let _ = if self.to_err {
            std::io::stderr().lock().write_all(&buf)
        } else {
            std::io::stdout().lock().write_all(&buf)
        };
    }
}

/// Forwards every rank's output from one thread: it takes the ranks' streams from
/// `streams` as they start and waits for any of them with poll(2), until every stream
/// has ended and no more can come. (A thread per stream made starting many ranks slow:
/// every fork of the launcher copied thousands of thread stacks' mappings.)
fn forward_all(streams: mpsc::Receiver<Stream>, stop: Arc<AtomicBool>) {
    let mut open: Vec<Stream> = vec![];
    let mut more = true;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // every rank has exited and the drain time is over: a process a rank left
        // behind may hold its pipes open for ever
        if stop.load(Ordering::Relaxed) {
            return;
        }
        while more {
            match streams.try_recv() {
                Ok(s) => open.push(s),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => more = false,
            }
        }
        if open.is_empty() {
            match streams.recv() {
                Ok(s) => {
                    open.push(s);
                    continue;
                }
                Err(_) => return,
            }
        }
        let mut fds: Vec<libc::pollfd> = open
            .iter()
            .map(|s| libc::pollfd {
                fd: s.file.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // while ranks are still being started, look for new streams now and then; later
        // wake now and then to see `stop`
        let timeout = if more { 20 } else { 100 };
        // SAFETY: `fds` is a valid, writable array of `fds.len()` pollfd structs for the
        // duration of the call, and every descriptor in it is open (owned by `open`).
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if r < 0 {
            if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                std::thread::sleep(Duration::from_millis(10));
            }
            continue;
        }
        // from the end, so that swap_remove moves only streams already looked at
        for i in (0..open.len()).rev() {
            if fds[i].revents == 0 {
                continue;
            }
            match open[i].file.read(&mut buf) {
                Ok(0) => {
                    open[i].emit(&[], true);
                    open.swap_remove(i);
                }
                Ok(n) => open[i].emit(&buf[..n], false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    open[i].emit(&[], true);
                    open.swap_remove(i);
                }
            }
        }
    }
}

/// Kills a rank and whatever it started (each rank leads its own process group).
fn kill_group(child: &mut Child) {
    // SAFETY: killpg only sends a signal; the group id is the child's pid because the
    // child was started with process_group(0).
    unsafe {
        libc::killpg(child.id() as libc::pid_t, libc::SIGKILL);
    }
    let _ = child.kill();
}

/// Starts `opts.ranks` processes that join one world, forwards their output, and waits
/// for all of them.
///
/// When a rank fails, it is marked dead in the world (so the others' waits return
/// [`Error::ProcFailed`]), the others get `opts.grace` to exit on their own, and are then
/// killed. No shared segment of the world is left behind: the control segment's name is
/// removed once every rank has joined, each window segment's once every rank has mapped
/// it, and at the end every name with the world's prefix is removed, after a crash too.
/// Ranks die with the launcher (PR_SET_PDEATHSIG); if the launcher itself is killed, a
/// small reaper process (`/bin/sh`, started first) removes what is left; if both are
/// killed at once, the next world this user starts removes it
/// ([`Segment::sweep_stale`]).
///
/// Only the processes started here can join the world: each gets the world's
/// admission key ([`crate::ENV_KEY`]) in its environment, and a process without it is
/// refused a rank.
pub fn spawn(opts: &LaunchOptions) -> Result<LaunchReport> {
    // what killed worlds of this user left behind goes first
    Segment::sweep_stale();
    // started before the first segment exists, so that nothing can outlive a killed
    // launcher; it learns the world's name on its stdin (not in its arguments, which
    // every user can read)
    let mut reaper = Reaper::start();
    let key = fresh_key();
    let result = Control::create(opts.ranks, key).map(|ctl| {
        reaper.add_name(ctl.name());
        let result = run(&ctl, &format_key(key), opts, &mut reaper);
        ctl.unlink();
        Segment::unlink_prefix(ctl.name());
        result
    });
    reaper.dismiss();
    result.and_then(|r| r)
}

/// What the reaper runs: it collects world names (`rma-...`) and the ranks' pids from
/// its stdin until the launcher says `done`; if instead its stdin reaches end of file,
/// the launcher died without cleaning up (SIGKILL, say): it kills the ranks' process
/// groups (they die with the launcher anyway, by PR_SET_PDEATHSIG; this also catches
/// what they started), gives a segment creation in flight a moment to finish, and
/// removes every segment of the world. It ignores the signals a terminal sends and
/// leads its own process group. (ShmWorld names hold only letters, digits, `-` and `_`.)
const REAPER_SCRIPT: &str = r#"trap '' HUP INT TERM QUIT
names=
pids=
while read -r l; do
  case "$l" in
    done) exit 0;;
    rma-*) names="$names $l";;
    *) pids="$pids $l";;
  esac
done
for p in $pids; do kill -9 "-$p" 2>/dev/null; done
sleep 0.1
for n in $names; do rm -f -- "/dev/shm/$n" "/dev/shm/$n"-*; done
"#;

/// A process that removes the world's segments if the launcher dies without doing it
/// (a killed launcher runs no clean-up code of its own).
struct Reaper {
    child: Option<Child>,
}

impl Reaper {
    fn start() -> Reaper {
        let child = Command::new("/bin/sh")
            .args(["-c", REAPER_SCRIPT, "rma-reaper"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        match child {
            Ok(c) => Reaper { child: Some(c) },
            Err(e) => {
                tracing::warn!("no reaper ({e}): a killed launcher may leave segments in /dev/shm");
                Reaper { child: None }
            }
        }
    }

    fn tell(&mut self, line: &str) {
        if let Some(stdin) = self.child.as_mut().and_then(|c| c.stdin.as_mut()) {
            let _ = writeln!(stdin, "{line}");
        }
    }

    /// Tells the reaper the name of the world, whose segments it removes.
    fn add_name(&mut self, name: &str) {
        if crate::world::valid_name(name) {
            self.tell(name);
        }
    }

    /// Tells the reaper about a rank's process (its group).
    fn rank_started(&mut self, pid: u32) {
        self.tell(&pid.to_string());
    }

    /// The launcher cleaned up itself: the reaper leaves without doing anything.
    fn dismiss(&mut self) {
        if let Some(mut c) = self.child.take() {
            if let Some(mut stdin) = c.stdin.take() {
                let _ = writeln!(stdin, "done");
            }
            let _ = c.wait();
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // reached only if `spawn` unwinds: the reaper cleans up as after a kill
        if let Some(mut c) = self.child.take() {
            drop(c.stdin.take());
            let _ = c.wait();
        }
    }
}

/// Raises this process's soft limit on open files to at least `needed` (capped at the
/// hard limit), for the pipes of many ranks' output; returns the limit to restore.
fn raise_open_files(needed: u64) -> Option<libc::rlimit> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `old` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) } != 0 || old.rlim_cur >= needed {
        return None;
    }
    let new = libc::rlimit {
        rlim_cur: needed.min(old.rlim_max),
        rlim_max: old.rlim_max,
    };
    // SAFETY: `new` is a valid rlimit whose soft limit does not exceed the hard one.
    (unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0).then_some(old)
}

/// Whether some child of this process has ended (without reaping it): a cheap test
/// before looking at every rank's status one by one. True when it cannot tell.
fn some_child_ended() -> bool {
    // SAFETY: siginfo_t is plain data for which all-zero is valid; waitid requires it
    // zeroed to report "nothing" under WNOHANG.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is valid and writable; WNOWAIT leaves the child waitable, so this
    // reaps nothing that `Child::try_wait` expects to find.
    let r = unsafe {
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    // SAFETY: waitid filled `info` (or left it zeroed); si_pid is valid for SIGCHLD
    // information, which is all waitid reports.
    r != 0 || unsafe { info.si_pid() } != 0
}

/// Start-up progress on stderr, once start-up has taken more than a second.
#[derive(Debug)]
struct Progress {
    on: bool,
    ranks: usize,
    start: Instant,
    last: Option<Instant>,
    joined_said: bool,
}

impl Progress {
    fn new(on: bool, ranks: usize) -> Progress {
        Progress {
            on,
            ranks,
            start: Instant::now(),
            last: None,
            joined_said: false,
        }
    }

    fn say(&mut self, force: bool, what: impl FnOnce(usize, f64) -> String) {
        if !self.on {
            return;
        }
        let now = Instant::now();
        let due = now.duration_since(self.start) >= Duration::from_secs(1)
            && self
                .last
                .is_none_or(|l| now.duration_since(l) >= Duration::from_secs(1));
        if due || (force && self.last.is_some()) {
            let secs = now.duration_since(self.start).as_secs_f64();
            // a closed stderr (`rmarun ... 2>&1 | head`) loses the line, no more
            let _ = writeln!(std::io::stderr(), "rmarun: {}", what(self.ranks, secs));
            self.last = Some(now);
        }
    }

    fn started(&mut self, k: usize) {
        let all = k == self.ranks;
        self.say(all, |n, t| {
            if all {
                format!("started all {n} ranks in {t:.1} s")
            } else {
                format!("started {k} of {n} ranks ({t:.1} s)")
            }
        });
    }

    fn joined(&mut self, k: usize) {
        if k == 0 || self.joined_said {
            return;
        }
        let all = k >= self.ranks;
        self.say(all, |n, t| {
            if all {
                format!("all {n} ranks joined the world in {t:.1} s")
            } else {
                format!("{k} of {n} ranks joined the world ({t:.1} s)")
            }
        });
        self.joined_said = all;
    }
}

fn run(
    ctl: &Control,
    key: &str,
    opts: &LaunchOptions,
    reaper: &mut Reaper,
) -> Result<LaunchReport> {
    let n = opts.ranks;
    let launcher = std::process::id();
    let mut progress = Progress::new(opts.progress, n);
    let (to_forwarder, streams) = mpsc::channel();
    let stop_forwarding = Arc::new(AtomicBool::new(false));
    let stop = stop_forwarding.clone();
    let forwarder = if opts.prefix_output {
        let t = std::thread::Builder::new()
            .name("rmarun-output".into())
            .spawn(move || forward_all(streams, stop))
            .map_err(|e| Error::Os {
                context: "starting the output forwarder".into(),
                source: e,
            })?;
        Some(t)
    } else {
        None
    };
    // two pipes per rank, and some to spare
    let old_limit = if opts.prefix_output {
        raise_open_files(2 * n as u64 + 64)
    } else {
        None
    };
    let mut children: Vec<Child> = Vec::with_capacity(n);
    let mut failed_start = None;
    let forward_stdin = opts.stdin_to_rank0 && stdin_is_ours();
    for rank in 0..n {
        let mut cmd = Command::new(&opts.program);
        cmd.args(&opts.args)
            .env(ENV_WORLD, ctl.name())
            .env(ENV_RANK, rank.to_string())
            .env(ENV_SIZE, n.to_string())
            .stdin(if forward_stdin && rank == 0 {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .process_group(0);
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        // last, so that no extra variable replaces it
        cmd.env(ENV_KEY, key);
        if opts.prefix_output {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid, setrlimit, _exit). If the
        // launcher died before prctl took effect, the death signal will never come: the
        // child then leaves at once rather than run as an orphan rank. A raised limit on
        // open files is the launcher's own need: the rank gets the limit it had.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                if libc::getppid() as u32 != launcher {
                    libc::_exit(127);
                }
                if let Some(old) = old_limit.as_ref() {
                    libc::setrlimit(libc::RLIMIT_NOFILE, old);
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(mut child) => {
                reaper.rank_started(child.id());
                if let Some(mut to_rank) = child.stdin.take() {
                    // the ranks run in their own process group, so rank 0 may not read
                    // the terminal itself: copy it over (the thread ends when stdin
                    // does, or when rank 0 closes its end; it never holds up the exit)
                    let _ = std::thread::Builder::new()
                        .name("rmarun-stdin".into())
                        .spawn(move || std::io::copy(&mut std::io::stdin().lock(), &mut to_rank));
                }
                if let Some(out) = child.stdout.take() {
                    let _ = to_forwarder.send(Stream::new(rank, false, out));
                }
                if let Some(err) = child.stderr.take() {
                    let _ = to_forwarder.send(Stream::new(rank, true, err));
                }
                children.push(child);
            }
            Err(e) => {
                failed_start = Some(Error::Os {
                    context: format!("starting rank {rank}: {}", opts.program.display()),
                    source: e,
                });
                break;
            }
        }
        progress.started(rank + 1);
    }
    drop(to_forwarder);
    if let Some(old) = old_limit {
        // the pipes are open; the launcher opens no more
        // SAFETY: `old` is the valid limit read before.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) };
    }
    if let Some(e) = failed_start {
        ctl.set_abort();
        for c in children.iter_mut() {
            kill_group(c);
            let _ = c.wait();
        }
        if let Some(t) = forwarder {
            let _ = t.join();
        }
        return Err(e);
    }
    // ranks that joined already wait for this before they wait for their peers
    ctl.set_started();

    let start = Instant::now();
    let mut statuses: Vec<Option<ExitStatus>> = vec![None; n];
    let mut failures = vec![];
    let mut aborted = false;
    let mut killed = vec![];
    let mut killing = vec![false; n];
    let mut unlinked = false;
    let mut kill_at: Option<Instant> = None;
    let mut timed_out = false;
    let mut last_scan = Instant::now();
    let mut remaining = n;
    while remaining > 0 {
        if !unlinked {
            let joined = ctl.attached();
            progress.joined(joined);
            if joined == n {
                ctl.unlink();
                unlinked = true;
            }
        }
        // looking at each rank's status is a system call per rank: with many ranks,
        // only when some child has ended (and now and then regardless)
        if some_child_ended() || last_scan.elapsed() >= Duration::from_millis(100) {
            last_scan = Instant::now();
            for (rank, child) in children.iter_mut().enumerate() {
                if statuses[rank].is_some() {
                    continue;
                }
                let Ok(Some(status)) = child.try_wait() else {
                    continue;
                };
                statuses[rank] = Some(status);
                remaining -= 1;
                if status.success() {
                    if ctl.state(rank) != RankState::Exited as u32 {
                        ctl.set_state(rank, RankState::Exited);
                    }
                } else if killing[rank] && status.signal() == Some(libc::SIGKILL) {
                    ctl.set_state(rank, RankState::Dead);
                    killed.push(rank);
                    let why = if timed_out {
                        "at the timeout"
                    } else {
                        "after another rank failed"
                    };
                    failures.push((rank, format!("was killed by the launcher {why}")));
                } else {
                    ctl.set_state(rank, RankState::Dead);
                    failures.push((rank, describe(status)));
                    kill_at.get_or_insert(Instant::now() + opts.grace);
                }
            }
        }
        let now = Instant::now();
        // a rank called MPI_Abort: every rank ends at once, whatever its exit status
        if !aborted && ctl.abort_requested() {
            kill_at = Some(now);
            aborted = true;
        }
        if let Some(limit) = opts.timeout {
            if !timed_out && now.duration_since(start) >= limit {
                timed_out = true;
                kill_at = Some(now);
            }
        }
        if kill_at.is_some_and(|t| now >= t) {
            ctl.set_abort();
            for (rank, c) in children.iter_mut().enumerate() {
                if statuses[rank].is_none() {
                    killing[rank] = true;
                    kill_group(c);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if let Some(t) = forwarder {
        // every rank has exited: their output is forwarded until the pipes close, but
        // for at most the grace time (a process a rank left behind, `sleep 100 &`, keeps
        // them open), and never past the timeout
        let mut until = Instant::now() + opts.grace.max(Duration::from_millis(100));
        if let Some(limit) = opts.timeout {
            until = until.min(start + limit).max(Instant::now());
        }
        while !t.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop_forwarding.store(true, Ordering::Relaxed);
        let _ = t.join();
    }
    killed.sort_unstable();
    Ok(LaunchReport {
        statuses: statuses
            .into_iter()
            .map(|s| s.unwrap_or_default())
            .collect(),
        failures,
        aborted,
        timed_out,
        killed,
    })
}

/// Binds the calling thread to CPU `cpu` modulo the CPUs this process may use (what
/// `mpiexec --bind-to core` does for a rank). Threads the caller starts afterwards
/// inherit the binding; threads started before keep theirs.
pub fn bind_current_thread(cpu: usize) -> Result<()> {
    // SAFETY: cpu_set_t is a plain bit array for which all-zero is a valid (empty) set;
    // sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into it.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `allowed` is a valid, writable cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut allowed) } != 0 {
        return Err(Error::last_os("sched_getaffinity"));
    }
    let max = 8 * size;
    // SAFETY: every index is below CPU_SETSIZE (8 * size_of::<cpu_set_t>()).
    let cpus: Vec<usize> = (0..max)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &allowed) })
        .collect();
    let Some(&chosen) = cpus.get(cpu % cpus.len().max(1)) else {
        return Ok(());
    };
    // SAFETY: as above, all-zero is the empty set.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `chosen` came from the allowed set, so it is below CPU_SETSIZE.
    unsafe { libc::CPU_SET(chosen, &mut one) };
    // SAFETY: `one` is a valid cpu_set_t of `size` bytes; pid 0 is the calling thread.
    if unsafe { libc::sched_setaffinity(0, size, &one) } != 0 {
        return Err(Error::last_os("sched_setaffinity"));
    }
    Ok(())
}

/// Whether this process may read its stdin without being stopped: it is not a
/// terminal, or this process group is the terminal's foreground group.
fn stdin_is_ours() -> bool {
    // SAFETY: plain calls on file descriptor 0 and this process; no memory is passed.
    unsafe { libc::isatty(0) == 0 || libc::tcgetpgrp(0) == libc::getpgrp() }
}
