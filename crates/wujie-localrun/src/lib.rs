//! Local runs: the provider registry (built-in → config → installed), plugin installation,
//! the supervisor that spawns adapters, the event reader, and the `run` and `discuss` flows.
//! The terminal host is `wujie-host`, the built-in providers `wujie-builtins`, the reporter
//! with its durable outbox `wujie-delivery`.

mod adapter_session;
pub mod agent_versions;
mod cancel_watch;
pub mod check;
mod code_changes;
pub mod connection;
pub mod discuss;
pub mod error;
pub mod events;
pub mod install;
pub mod own_server;
pub mod profile;
pub mod promotion;
pub mod registry;
pub mod run;
pub mod session;
mod small_file;
mod spawn_error;
pub mod spool;
mod start_retry;
pub mod supervisor;
pub mod sync;
pub mod turns;

pub use code_changes::TurnStart;
pub use error::LocalRunError;

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_localrun;
#[cfg(test)]
#[path = "../tests/localrun/main.rs"]
mod suite;
