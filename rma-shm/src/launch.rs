//! Starting a world of processes: what `rmarun` does, as a library so that tests can
//! launch ranks from their own binary.

use crate::segment::Segment;
use crate::world::{fresh_name, Control, RankState, ENV_RANK, ENV_SIZE, ENV_WORLD};
use rma_core::{Error, Result};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
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
}

impl LaunchReport {
    /// Whether every rank exited with status 0.
    pub fn success(&self) -> bool {
        self.failures.is_empty() && !self.timed_out
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s}"),
        _ => "ended".into(),
    }
}

fn forward(
    rank: usize,
    prefix: bool,
    stream: impl std::io::Read + Send + 'static,
    to_err: bool,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let mut buf = Vec::with_capacity(line.len() + 8);
                    if prefix {
                        buf.extend_from_slice(format!("[{rank}] ").as_bytes());
                    }
                    buf.extend_from_slice(&line);
                    if !buf.ends_with(b"\n") {
                        buf.push(b'\n');
                    }
                    let _ = if to_err {
                        std::io::stderr().lock().write_all(&buf)
                    } else {
                        std::io::stdout().lock().write_all(&buf)
                    };
                }
            }
        }
    })
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
/// small reaper process (`/bin/sh`, started first) removes what is left.
pub fn spawn(opts: &LaunchOptions) -> Result<LaunchReport> {
    let name = fresh_name();
    // started before the first segment exists, so that nothing can outlive a killed
    // launcher
    let mut reaper = Reaper::start(&name);
    let result = Control::create(&name, opts.ranks).map(|ctl| {
        let result = run(&name, &ctl, opts, &mut reaper);
        ctl.unlink();
        result
    });
    Segment::unlink_prefix(&name);
    reaper.dismiss();
    result.and_then(|r| r)
}

/// What the reaper runs: it collects the ranks' pids from its stdin until the launcher
/// says `done`; if instead its stdin reaches end of file, the launcher died without
/// cleaning up (SIGKILL, say): it kills the ranks' process groups (they die with the
/// launcher anyway, by PR_SET_PDEATHSIG; this also catches what they started), gives
/// a segment creation in flight a moment to finish, and removes every segment of the
/// world. It ignores the signals a terminal sends and leads its own process group.
const REAPER_SCRIPT: &str = r#"trap '' HUP INT TERM QUIT
pids=
while read -r p; do
  [ "$p" = done ] && exit 0
  pids="$pids $p"
done
for p in $pids; do kill -9 "-$p" 2>/dev/null; done
sleep 0.1
rm -f -- "/dev/shm/$1" "/dev/shm/$1"-*
"#;

/// A process that removes the world's segments if the launcher dies without doing it
/// (a killed launcher runs no clean-up code of its own).
struct Reaper {
    child: Option<Child>,
}

impl Reaper {
    fn start(name: &str) -> Reaper {
        let child = Command::new("/bin/sh")
            .args(["-c", REAPER_SCRIPT, "rma-reaper", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        match child {
            Ok(c) => Reaper { child: Some(c) },
            Err(e) => {
                tracing::warn!("no reaper for world {name} ({e}): a killed launcher may leave segments in /dev/shm");
                Reaper { child: None }
            }
        }
    }

    /// Tells the reaper about a rank's process (its group).
    fn rank_started(&mut self, pid: u32) {
        if let Some(stdin) = self.child.as_mut().and_then(|c| c.stdin.as_mut()) {
            let _ = writeln!(stdin, "{pid}");
        }
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

fn run(
    name: &str,
    ctl: &Control,
    opts: &LaunchOptions,
    reaper: &mut Reaper,
) -> Result<LaunchReport> {
    let n = opts.ranks;
    let launcher = std::process::id();
    let mut children: Vec<Option<Child>> = Vec::with_capacity(n);
    let mut forwarders = vec![];
    for rank in 0..n {
        let mut cmd = Command::new(&opts.program);
        cmd.args(&opts.args)
            .env(ENV_WORLD, name)
            .env(ENV_RANK, rank.to_string())
            .env(ENV_SIZE, n.to_string())
            .stdin(Stdio::null())
            .process_group(0);
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        if opts.prefix_output {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid, _exit). If the launcher died
        // before prctl took effect, the death signal will never come: the child then
        // leaves at once rather than run as an orphan rank.
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
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(mut child) => {
                reaper.rank_started(child.id());
                if let Some(out) = child.stdout.take() {
                    forwarders.push(forward(rank, true, out, false));
                }
                if let Some(err) = child.stderr.take() {
                    forwarders.push(forward(rank, true, err, true));
                }
                children.push(Some(child));
            }
            Err(e) => {
                ctl.set_abort();
                for c in children.iter_mut().flatten() {
                    kill_group(c);
                    let _ = c.wait();
                }
                return Err(Error::Os {
                    context: format!("starting rank {rank}: {}", opts.program.display()),
                    source: e,
                });
            }
        }
    }

    let start = Instant::now();
    let mut statuses: Vec<Option<ExitStatus>> = vec![None; n];
    let mut failures = vec![];
    let mut unlinked = false;
    let mut kill_at: Option<Instant> = None;
    let mut timed_out = false;
    while statuses.iter().any(Option::is_none) {
        if !unlinked && ctl.attached() == n {
            ctl.unlink();
            unlinked = true;
        }
        for rank in 0..n {
            if statuses[rank].is_some() {
                continue;
            }
            let Some(child) = children[rank].as_mut() else {
                continue;
            };
            if let Ok(Some(status)) = child.try_wait() {
                statuses[rank] = Some(status);
                if status.success() {
                    if ctl.state(rank) != RankState::Exited as u32 {
                        ctl.set_state(rank, RankState::Exited);
                    }
                } else {
                    ctl.set_state(rank, RankState::Dead);
                    failures.push((rank, describe(status)));
                    kill_at.get_or_insert(Instant::now() + opts.grace);
                }
            }
        }
        let now = Instant::now();
        if let Some(limit) = opts.timeout {
            if !timed_out && now.duration_since(start) >= limit {
                timed_out = true;
                kill_at = Some(now);
            }
        }
        if kill_at.is_some_and(|t| now >= t) {
            ctl.set_abort();
            for (rank, child) in children.iter_mut().enumerate() {
                if statuses[rank].is_none() {
                    if let Some(c) = child.as_mut() {
                        kill_group(c);
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for f in forwarders {
        let _ = f.join();
    }
    Ok(LaunchReport {
        statuses: statuses
            .into_iter()
            .map(|s| s.unwrap_or_default())
            .collect(),
        failures,
        timed_out,
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
