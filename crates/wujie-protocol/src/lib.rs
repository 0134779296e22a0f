//! Pure wire types and validation for Wujie: provider manifests, the stdout NDJSON event
//! protocol, control frames written to an adapter's stdin, commondev `driver.json` and the
//! sidecar JSON-RPC messages; and how an error reads as text (`error_text`).
//!
//! Invariant: this crate does no I/O and never panics on input; every parser returns typed
//! errors and the incremental ones give the same result for any chunking of the same bytes.

pub mod api;
pub mod control;
pub mod driver;
pub mod error_text;
pub mod event;
pub mod git;
pub mod jobs;
pub mod limits;
pub mod lines;
pub mod manifest;
pub mod notice;
pub mod pricing;
pub mod promotion;
pub mod sidecar;
pub mod sidecar_tools;
pub mod sse;

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_protocol;
#[cfg(test)]
#[path = "../tests/protocol/main.rs"]
mod suite;
