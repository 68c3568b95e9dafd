//! What rma's programs print through `tracing`, and when.
//!
//! rma's calls open `tracing` spans (debug level: `fence`, `lock`, `win_allocate`, ...;
//! each rank's work runs inside a `rank` span carrying its index), and rare events
//! (a transport fallback) are warnings. Nothing is printed unless a subscriber is
//! installed. [`init`] installs one from `RUST_LOG`, and rma's binaries call it
//! (`rmarun`, the examples, `rma-bench`, `rma-scale`):
//!
//! ```text
//! RUST_LOG=rma_win=debug target/release/examples/counter --ranks 2
//! ... DEBUG rank{rank=1}:fence{assert=0}: rma_win::sync: close time.busy=2.1µs time.idle=1.3µs
//! ```
//!
//! Without `RUST_LOG` nothing is installed, and a span costs one relaxed load of
//! `tracing`'s global "is anyone listening" flag.

/// The environment variable [`init`] reads (`tracing-subscriber`'s `EnvFilter` syntax:
/// `rma_win=debug`, `rma_shm=trace,rma_win=debug`, `debug`, ...).
pub const ENV_LOG: &str = "RUST_LOG";

/// Installs a subscriber that prints rma's spans (as each closes, with its busy and
/// idle time and the spans around it, the rank's included) and events to stderr,
/// filtered by `RUST_LOG`, when `RUST_LOG` is set; otherwise nothing. A `RUST_LOG`
/// that does not parse is reported on stderr and ignored. Idempotent; a subscriber
/// the program installed first wins.
pub fn init() {
    let Ok(spec) = std::env::var(ENV_LOG) else {
        return;
    };
    let filter = match tracing_subscriber::EnvFilter::try_new(&spec) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("rma: {ENV_LOG}={spec:?} is not a filter ({e}); no tracing output");
            return;
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .try_init();
}
