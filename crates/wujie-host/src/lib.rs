//! The interactive terminal host for providers whose manifest says `interactive_pty: true`:
//! the adapter runs on a PTY of its own, the user's terminal is in raw mode and relayed to it
//! byte for byte, and in discussions `/wujie` opens the command menu and the issue card as an
//! overlay drawn over the adapter's screen. Providers on pipes get the issue card where their
//! output ends ([`InlineCard`]) when the user is at a terminal.

//!
//! Also here: the user's stdin read on a thread of its own ([`user_input`]) and the single
//! writer of the adapter's stdin ([`AdapterStdin`]), which adapters on pipes use too.

mod error;
mod host;
mod inline_card;
mod master;
mod mode;
mod output;
mod raw;
mod relay;
mod start;
mod stdin;
mod stop_pipe;
pub mod user_input;

pub use error::HostError;
pub use host::{HostEvent, JobControl, PreparedTerminal, TerminalHost};
pub use inline_card::InlineCard;
pub use master::PtyWriter;
pub use output::HOLD_CAP;
pub use raw::{RawMode, stdin_is_terminal, terminal_size};
pub use stdin::{AdapterStdin, StdinSink};

/// Sleeps until `at`; never resolves without a deadline (for optional `select!` timers).
pub async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_host;
#[cfg(test)]
#[path = "../tests/user_input.rs"]
mod suite;
