//! Bounds on waits for shared state other ranks hold.

use std::sync::OnceLock;
use std::time::Duration;

/// Environment variable: how long (milliseconds) a wait on shared state held by a live
/// peer — a chunk lock of the atomicity domain, a passive-target lock, an epoch
/// counter — may make no progress before it ends in [`crate::Error::Stalled`].
/// Default 5000. A dead holder is noticed much sooner, by the liveness checks.
pub const ENV_STALL_MS: &str = "RMA_STALL_MS";

const DEFAULT_STALL_MS: u64 = 5000;

/// The stall bound ([`ENV_STALL_MS`]), read once per process; a value that is not a
/// positive number of milliseconds gives the default.
pub fn stall_limit() -> Duration {
    static LIMIT: OnceLock<Duration> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let ms = std::env::var(ENV_STALL_MS)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&ms| ms > 0)
            .unwrap_or(DEFAULT_STALL_MS);
        Duration::from_millis(ms)
    })
}
