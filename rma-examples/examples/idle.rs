//! Idle cost: every rank opens a window, fences, sleeps (default 2 s; `--n` sets the
//! milliseconds) with the window open, fences again, and reports the CPU time its
//! process used meanwhile. A transport with a progress engine should cost close to
//! nothing while idle. Run with ranks as threads (one process: the total) or under
//! rmarun (one line per process; add them up).

use rma_examples::{run, Flags};
use rma_win::{Assert, Window};
use std::time::{Duration, Instant};

/// CPU time of this process so far: the sum over its threads of the nanoseconds each
/// spent on a CPU (/proc/self/task/*/schedstat, first field).
fn cpu_time() -> Option<Duration> {
    let mut ns = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        ns += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(ns))
}

fn main() {
    let flags = Flags::parse(2000);
    let info = flags.info();
    run(&flags, |world| {
        let win = Window::allocate::<f64>(world, 1024, &info)?;
        win.fence(Assert::NONE)?;
        let (cpu0, wall0) = (cpu_time(), Instant::now());
        std::thread::sleep(Duration::from_millis(flags.n as u64));
        let (cpu1, wall) = (cpu_time(), wall0.elapsed());
        win.fence(Assert::NONE)?;
        let used = match (cpu0, cpu1) {
            (Some(a), Some(b)) => format!("{:.3} ms", b.saturating_sub(a).as_secs_f64() * 1e3),
            _ => "unknown".into(),
        };
        if world.rank() == 0 || world.mode() == rma_win::LaunchMode::Processes {
            println!(
                "idle: rank {} of {} ({:?}), transport {}: process CPU {used} over {} ms asleep",
                world.rank(),
                world.size(),
                world.mode(),
                win.transport_name(),
                wall.as_millis()
            );
        }
        Ok(true)
    })
}
