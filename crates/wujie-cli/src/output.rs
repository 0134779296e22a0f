//! Printing: one JSON document on stdout for `--output json`, readable text otherwise.
//!
//! Everything goes through [`write_stdout`] (the `outln!` macro), so that a reader that stops
//! reading (`wujie issue list | head -1`) ends the command quietly with status 0, and any other
//! write error is reported as an error. Stored strings in text output go through
//! [`inline`]/[`block`] so they cannot drive the user's terminal; JSON keeps them exact.

use std::borrow::Cow;
use std::io::Write;

use std::io::IsTerminal;

use anyhow::Result;
use serde::Serialize;
use wujie_protocol::api::IssueStatus;
use wujie_term::text::{Layout, terminal_safe};

/// Writes one line (`format_args!` style) to stdout; `?` hands a closed stdout up to `main`.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}
pub(crate) use outln;

/// Stdout's reader went away. Not a failure of the command: `main` exits 0 without a word.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout was closed")
    }
}

impl std::error::Error for StdoutClosed {}

pub fn write_stdout(args: std::fmt::Arguments<'_>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// The `--output json` document, pretty-printed.
pub fn print_json<T: Serialize + ?Sized>(value: &T) -> Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    outln!("{json}");
    Ok(())
}

/// One JSON object on one line, for commands whose `--output json` is a stream (NDJSON).
pub fn print_json_line<T: Serialize + ?Sized>(value: &T) -> Result<()> {
    let json = serde_json::to_string(value)?;
    outln!("{json}");
    Ok(())
}

/// `n` events in words: "1 event", "2 events".
pub fn events(n: impl Into<i128>) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { "event" } else { "events" })
}

/// A stored string printed within a line of text.
pub fn inline(text: &str) -> Cow<'_, str> {
    terminal_safe(text, Layout::Inline)
}

/// A stored string printed as lines of its own.
pub fn block(text: &str) -> Cow<'_, str> {
    terminal_safe(text, Layout::Block)
}

/// A stored string shortened to one line of at most `max` terminal columns for tables (a CJK
/// character takes two), ending in `…` when something was cut.
pub fn one_line(text: &str, max: usize) -> String {
    wujie_term::text::fit(&inline(text), max)
}

/// The width of the terminal stdout is, or None when stdout is not a terminal (a pipe, a
/// file), where nothing needs cutting to fit.
pub fn stdout_columns() -> Option<usize> {
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    rustix::termios::tcgetwinsize(&stdout)
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|cols| *cols > 0)
}

/// Whether what goes to stdout is coloured: it is a terminal, `NO_COLOR` (no-color.org) is not
/// set to anything, and the terminal is not `TERM=dumb`.
pub fn colour_stdout() -> bool {
    std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// An issue's status padded to `width` columns, in its colour when `colour` is on: open
/// green, in progress yellow, done magenta, closed grey.
pub fn issue_status(status: IssueStatus, width: usize, colour: bool) -> String {
    let text = format!("{:<width$}", status.as_str());
    if !colour {
        return text;
    }
    let sgr = match status {
        IssueStatus::Open => "32",
        IssueStatus::InProgress => "33",
        IssueStatus::Done => "35",
        IssueStatus::Closed => "90",
    };
    // The padding stays outside the colour, so that a column of them lines up as text.
    let name = status.as_str();
    format!("\x1b[{sgr}m{name}\x1b[0m{}", &text[name.len()..])
}
