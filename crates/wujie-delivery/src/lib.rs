//! Delivery of a run's events: the reporter appends them to the durable outbox and delivers
//! them to the server in batches, retrying until the server acknowledged them.

pub mod next_step;
pub mod reporter;
pub mod server;
