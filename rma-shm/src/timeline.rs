//! The epoch timeline: every rma span of every rank (epochs, RMA calls, window
//! creation and free) as one Chrome trace file, for <https://ui.perfetto.dev> or
//! `chrome://tracing`, when `RMA_TRACE=FILE` is set ([`ENV_TRACE`]).
//!
//! The file uses the trace-event format's JSON array form, whose closing `]` is
//! optional: the process that starts the run creates it with `[` (rmarun, or a program
//! running its ranks as threads), and every rank appends its events as it finishes (the
//! `rank` span closing), one `write` per batch, so ranks in several processes share one
//! file. Each event is a complete event (`"ph":"X"`) with the span's name, its fields
//! as `args`, the rank as `pid` (one track group per rank) and the thread as `tid`;
//! timestamps are microseconds of the system clock, one clock for every process.
//!
//! Off (no `RMA_TRACE`), nothing is installed and nothing is recorded; on, every span
//! rma opens, the per-call ones at `trace` level included, is recorded: about 1.5 µs
//! per window call on this project's machine (measured with rma-bench). Pending events
//! go to the file every MiB, so memory stays bounded.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Pending events are written out once they reach this many bytes (and when a rank's
/// work ends), so a long run's memory stays bounded.
const FLUSH_BYTES: usize = 1 << 20;

/// The environment variable naming the trace file.
pub const ENV_TRACE: &str = "RMA_TRACE";

/// Microseconds since the Unix epoch.
fn now_us() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

/// What a span carries from its creation to its close.
struct Open {
    /// Its fields, as JSON object members (`"target":1,"op":"MPI_SUM"`).
    args: String,
    /// The rank it runs under, if a `rank` span encloses it (or it is one).
    rank: Option<u64>,
    /// When it was first entered.
    start: Option<f64>,
}

/// Collects a span's fields as JSON members, and its `rank` field.
struct Fields<'a> {
    args: &'a mut String,
    rank: Option<u64>,
}

impl Fields<'_> {
    fn member(&mut self, name: &str, value: &str) {
        if !self.args.is_empty() {
            self.args.push(',');
        }
        let _ = write!(self.args, "\"{}\":{value}", escape(name));
    }
}

impl tracing::field::Visit for Fields<'_> {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if field.name() == "rank" {
            self.rank = Some(value);
        }
        self.member(field.name(), &value.to_string());
    }
    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        if field.name() == "rank" {
            self.rank = u64::try_from(value).ok();
        }
        self.member(field.name(), &value.to_string());
    }
    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.member(field.name(), if value { "true" } else { "false" });
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.member(field.name(), &format!("\"{}\"", escape(value)));
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.member(
            field.name(),
            &format!("\"{}\"", escape(&format!("{value:?}"))),
        );
    }
}

/// `s` as the inside of a JSON string.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The [`tracing_subscriber`] layer that records the timeline.
pub(crate) struct Timeline {
    path: PathBuf,
    /// Events not yet written, one JSON object per line, each ending in `,\n`.
    pending: Mutex<String>,
}

impl Timeline {
    /// The layer for `RMA_TRACE`, if set. `fresh`: this process starts the run, so it
    /// creates the file (replacing one from an earlier run); otherwise it appends to
    /// the file its launcher created, creating it if the launcher did not.
    pub(crate) fn from_env(fresh: bool) -> Option<Timeline> {
        let path = PathBuf::from(std::env::var_os(ENV_TRACE)?);
        // only a regular file (or none yet): opening a FIFO without a reader would
        // block this process for good, a device would swallow the trace
        if let Ok(meta) = std::fs::metadata(&path) {
            if !meta.is_file() {
                // (a closed stderr is no reason to panic: the message is lost)
                let _ = writeln!(
                    std::io::stderr(),
                    "rma: {ENV_TRACE}={} is not a regular file; no timeline",
                    path.display()
                );
                return None;
            }
        }
        let created = if fresh {
            std::fs::write(&path, "[\n")
        } else {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => f.write_all(b"[\n"),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(e),
            }
        };
        if let Err(e) = created {
            let _ = writeln!(
                std::io::stderr(),
                "rma: {ENV_TRACE}={}: {e}; no timeline",
                path.display()
            );
            return None;
        }
        Some(Timeline {
            path,
            pending: Mutex::new(String::new()),
        })
    }

    /// Appends the pending events to the file (one write).
    fn flush(&self) {
        let batch = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if batch.is_empty() {
            return;
        }
        let written = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(batch.as_bytes()));
        if let Err(e) = written {
            let _ = writeln!(
                std::io::stderr(),
                "rma: writing {ENV_TRACE}={}: {e}",
                self.path.display()
            );
        }
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A small number for the current thread (the trace's `tid`).
fn thread_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static MINE: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    MINE.with(|n| *n)
}

impl<S> Layer<S> for Timeline
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut args = String::new();
        let mut fields = Fields {
            args: &mut args,
            rank: None,
        };
        attrs.record(&mut fields);
        let rank = fields.rank.or_else(|| {
            span.scope()
                .skip(1)
                .find_map(|s| s.extensions().get::<Open>().and_then(|o| o.rank))
        });
        span.extensions_mut().insert(Open {
            args,
            rank,
            start: None,
        });
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(open) = span.extensions_mut().get_mut::<Open>() {
                open.start.get_or_insert_with(now_us);
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let name = span.name();
        let is_rank = name == "rank";
        if let Some(open) = span.extensions().get::<Open>() {
            if let Some(start) = open.start {
                let dur = (now_us() - start).max(0.0);
                let pid = open.rank.map_or(u64::from(std::process::id()), |r| r);
                let line = format!(
                    "{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{start:.3},\"dur\":{dur:.3},\"pid\":{pid},\"tid\":{},\"args\":{{{}}}}},\n",
                    escape(name),
                    escape(span.metadata().target()),
                    thread_number(),
                    open.args
                );
                let full = {
                    let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
                    pending.push_str(&line);
                    pending.len() >= FLUSH_BYTES
                };
                if full {
                    self.flush();
                }
            }
        }
        if is_rank {
            // a rank's work is over: its events go out now (the process may end
            // without dropping the subscriber)
            self.flush();
        }
    }
}
