//! Benchmarks of rma (criterion, `cargo xtask bench`). See `benches/README.md` for what
//! each scenario measures.
#![forbid(unsafe_code)]

/// The `-t` value of the bench binaries (`rma-bench`, `rma-scale`): a finite number of
/// seconds per repetition above 0 and at most 60 (anything else would make an endless
/// or overflowing run).
pub fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 && t <= 60.0 => Ok(t),
        _ => Err(format!("{s:?} is not a number of seconds in (0, 60]")),
    }
}
