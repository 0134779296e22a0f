//! The interactive terminal host for providers whose manifest says `interactive_pty: true`:
//! the adapter runs on a PTY of its own, the user's terminal is in raw mode and relayed to it
//! byte for byte, and in discussions `/wujie` opens the command menu and the issue card as an
//! overlay drawn over the adapter's screen.

mod host;
mod master;
mod output;
mod raw;

pub use host::{HostEvent, TerminalHost};
pub use master::PtyWriter;
pub use output::HOLD_CAP;
pub use raw::{RawMode, stdin_is_terminal, terminal_size};
