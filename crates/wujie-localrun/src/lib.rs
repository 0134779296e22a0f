//! Local runs: the provider registry (built-in → config → installed), plugin installation,
//! the supervisor that spawns adapters, the event reader and the reporter with its durable
//! outbox.

pub mod builtin;
pub mod check;
pub mod connection;
pub mod discuss;
pub mod error;
pub mod events;
pub mod install;
pub mod profile;
pub mod promotion;
pub mod registry;
pub mod reporter;
pub mod run;
pub mod session;
mod small_file;
mod spawn_error;
mod stop_pipe;
pub mod supervisor;
pub mod sync;
pub mod terminal;
pub mod turns;
pub mod user_input;

pub use error::LocalRunError;
