//! The interactive terminal host for providers whose manifest says `interactive_pty: true`:
//! the adapter runs on a PTY of its own, the user's terminal is in raw mode and relayed to it
//! byte for byte, and in discussions `/wujie` opens the command menu and the issue card as an
//! overlay drawn over the adapter's screen. Providers on pipes get the issue card where their
//! output ends ([`InlineCard`]) when the user is at a terminal.

mod host;
mod inline_card;
mod master;
mod output;
mod raw;
mod start;

pub use host::{HostEvent, PreparedTerminal, TerminalHost};
pub use inline_card::InlineCard;
pub use master::PtyWriter;
pub use output::HOLD_CAP;
pub use raw::{RawMode, stdin_is_terminal, terminal_size};
