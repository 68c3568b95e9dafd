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
//!
//! `RMA_TRACE=FILE` also records every rma span of every rank into one Chrome trace
//! file for <https://ui.perfetto.dev> (the `timeline` module's documentation).

pub use crate::timeline::ENV_TRACE;

/// The environment variable [`init`] reads (`tracing-subscriber`'s `EnvFilter` syntax:
/// `rma_win=debug`, `rma_shm=trace,rma_win=debug`, `debug`, ...).
pub const ENV_LOG: &str = "RUST_LOG";

/// Installs a subscriber that prints rma's spans (as each closes, with its busy and
/// idle time and the spans around it, the rank's included) and events to stderr,
/// filtered by `RUST_LOG`, when `RUST_LOG` is set, and that records the timeline into
/// the file `RMA_TRACE` names, when it is set; otherwise nothing. A `RUST_LOG` that
/// does not parse is reported on stderr and ignored. Idempotent; a subscriber the
/// program installed first wins.
///
/// A process that rmarun started appends to the timeline file rmarun created; any
/// other process creates it afresh ([`init_with`] decides otherwise).
pub fn init() {
    init_with(std::env::var_os(crate::ENV_WORLD).is_none());
}

/// [`init`], with `fresh` saying whether this process starts the run and so creates
/// the `RMA_TRACE` file (false: a rank that a launcher started appends to it).
pub fn init_with(fresh: bool) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let log = std::env::var(ENV_LOG).ok().and_then(|spec| {
        match tracing_subscriber::EnvFilter::try_new(&spec) {
            Ok(f) => Some(f),
            Err(e) => {
                // not eprintln: a closed stderr must not make a program panic
                let _ = std::io::Write::write_fmt(
                    &mut std::io::stderr(),
                    format_args!(
                        "rma: {ENV_LOG}={spec:?} is not a filter ({e}); no tracing output\n"
                    ),
                );
                None
            }
        }
    });
    let timeline = crate::timeline::Timeline::from_env(fresh);
    if log.is_none() && timeline.is_none() {
        return;
    }
    let fmt = log.map(|filter| {
        tracing_subscriber::fmt::layer()
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_writer(std::io::stderr)
            .with_filter(filter)
    });
    let timeline = timeline.map(|t| {
        t.with_filter(tracing_subscriber::filter::filter_fn(|m| {
            m.target().starts_with("rma")
        }))
    });
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(timeline)
        .try_init();
}
