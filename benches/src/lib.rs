//! Benchmarks of rma (criterion, `cargo xtask bench`). See `benches/README.md` for what
//! each scenario measures.
#![forbid(unsafe_code)]
