//! Shared-memory substrate and transports (in progress: see the project issues).
#![forbid(unsafe_code)]
