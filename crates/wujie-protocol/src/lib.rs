//! Pure wire types and validation for Wujie: provider manifests, the stdout NDJSON event
//! protocol, control frames written to an adapter's stdin, commondev `driver.json` and the
//! sidecar JSON-RPC messages.
//!
//! Invariant: this crate does no I/O and never panics on input; every parser returns typed
//! errors and the incremental ones give the same result for any chunking of the same bytes.

pub mod api;
pub mod control;
pub mod driver;
pub mod event;
pub mod limits;
pub mod lines;
pub mod manifest;
pub mod pricing;
pub mod sidecar;
pub mod sidecar_tools;
