//! The mock model server over HTTP, and one smoke test per real agent CLI against it.

mod agents;
mod server;
