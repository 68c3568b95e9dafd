//! Windows, epochs and RMA calls (in progress: see the project issues).
#![forbid(unsafe_code)]
