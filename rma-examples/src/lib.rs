//! Shared helpers of the example programs.
#![forbid(unsafe_code)]
