//! Delivery of a run's events: the reporter appends them to the durable outbox and delivers
//! them to the server in batches, retrying until the server acknowledged them.

pub mod next_step;
pub mod reporter;
pub mod server;

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_delivery;
#[cfg(test)]
#[path = "../tests/delivery_decisions.rs"]
mod suite;
