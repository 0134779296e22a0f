//! The user's terminal: its size, writing to it, and raw mode that is always undone.
//!
//! Raw mode is restored when the guard drops (normal exit and error paths), by a panic hook
//! (a panic that unwinds past the host or aborts the runtime), and on SIGTERM/SIGHUP because the
//! pumps turn those signals into an ordinary return that drops the guard. While `wujie` is
//! stopped as a shell job the terminal has its own settings back ([`pause_raw_mode`]).

use std::io::{IsTerminal, Write};
use std::sync::{Mutex, Once};

use rustix::termios::{OptionalActions, Termios, tcgetattr, tcgetwinsize, tcsetattr};
use wujie_term::TermSize;

/// The settings to put back, shared with the panic hook.
static SAVED: Mutex<Option<Termios>> = Mutex::new(None);
static PANIC_HOOK: Once = Once::new();

/// The size of the user's terminal (stdin, else stderr), or 80×24 when neither is a terminal.
pub fn terminal_size() -> TermSize {
    let from = |size: rustix::termios::Winsize| {
        (size.ws_col > 0 && size.ws_row > 0).then_some(TermSize {
            cols: size.ws_col,
            rows: size.ws_row,
        })
    };
    tcgetwinsize(std::io::stdin())
        .ok()
        .and_then(from)
        .or_else(|| tcgetwinsize(std::io::stderr()).ok().and_then(from))
        .unwrap_or(TermSize { cols: 80, rows: 24 })
}

/// Writes to the user's terminal (our stderr: stdout may carry a command's JSON) at once.
pub fn write_to_terminal(bytes: &[u8]) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(bytes);
    let _ = err.flush();
}

/// True when the user's stdin is a terminal (then it is put in raw mode while the host runs).
pub fn stdin_is_terminal() -> bool {
    std::io::stdin().is_terminal()
}

/// Raw mode on the user's stdin for as long as this lives.
#[derive(Debug)]
pub struct RawMode {
    _private: (),
}

impl RawMode {
    /// Switches stdin to raw mode: no echo, no line editing, no signals from Ctrl+C/Ctrl+Z
    /// (they reach the adapter as bytes and its own terminal raises them).
    pub fn enable() -> std::io::Result<RawMode> {
        let stdin = std::io::stdin();
        let original = tcgetattr(&stdin)?;
        let mut raw = original.clone();
        raw.make_raw();
        *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some(original);
        PANIC_HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        tcsetattr(&stdin, OptionalActions::Drain, &raw)?;
        Ok(RawMode { _private: () })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        restore();
    }
}

/// While `wujie` is stopped as a shell job: the terminal's own settings, for the shell.
pub fn pause_raw_mode() {
    let saved = SAVED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(original) = saved {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &original);
    }
}

/// Back from a stop: raw mode again (when it is on at all).
pub fn resume_raw_mode() {
    let saved = SAVED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(mut raw) = saved {
        raw.make_raw();
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &raw);
    }
}

/// Puts the saved settings back, once.
fn restore() {
    let saved = SAVED.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(original) = saved {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &original);
    }
}
