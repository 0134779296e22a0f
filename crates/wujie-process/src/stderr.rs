//! Diagnostics on stderr that never stop the work. `eprintln!` panics when stderr cannot be
//! written, which is what happens when whoever reads it went away (`wujie run … 2>&1 | head
//! -1`, a closed terminal): a panic there would leave a run `running` with events unsent. A
//! closed stderr is treated like a closed stdout: the line is dropped and the work goes on.

use std::io::Write;

/// Writes one line to stderr; a failure to write is ignored (see the module's docs).
pub fn write_line(args: std::fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_fmt(args);
    let _ = stderr.write_all(b"\n");
}

/// `eprintln!` that drops the line when stderr cannot be written, rather than panicking.
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::stderr::write_line(::std::format_args!($($arg)*))
    };
}

/// A count that goes down while long work goes on ("… 1,204 left"), on stderr. On a terminal it
/// is one line rewritten in place and cleared at the end; elsewhere (a log, a pipe) a line at
/// most every [`Progress::LOG_EVERY`], so that a log is not flooded with counts.
pub struct Progress {
    terminal: bool,
    shown: bool,
    last: Option<std::time::Instant>,
}

impl Progress {
    /// How often a count is written where stderr is not a terminal.
    pub const LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

    pub fn new() -> Progress {
        use std::io::IsTerminal;
        Progress {
            terminal: std::io::stderr().is_terminal(),
            shown: false,
            last: None,
        }
    }

    /// Shows `text` as the current state.
    pub fn show(&mut self, text: std::fmt::Arguments<'_>) {
        self.show_on(&mut std::io::stderr().lock(), text);
    }

    fn show_on(&mut self, out: &mut impl Write, text: std::fmt::Arguments<'_>) {
        if self.terminal {
            // Carriage return and erase the line: the count replaces the one before it.
            let _ = out.write_all(b"\r\x1b[K");
            let _ = out.write_fmt(text);
            let _ = out.flush();
            self.shown = true;
        } else if self.last.is_none_or(|at| at.elapsed() >= Self::LOG_EVERY) {
            self.last = Some(std::time::Instant::now());
            let _ = out.write_fmt(text);
            let _ = out.write_all(b"\n");
        }
    }

    /// Clears the line on a terminal, so that what is written next starts clean.
    pub fn done(&mut self) {
        if self.shown {
            let _ = std::io::stderr().lock().write_all(b"\r\x1b[K");
            self.shown = false;
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(terminal: bool, counts: &[u32]) -> String {
        let mut progress = Progress {
            terminal,
            shown: false,
            last: None,
        };
        let mut out = Vec::new();
        for n in counts {
            progress.show_on(&mut out, format_args!("{n} left"));
        }
        // Not a real stderr: nothing to clear at the end.
        progress.shown = false;
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_terminal_gets_one_line_rewritten_in_place() {
        assert_eq!(
            shown(true, &[3, 2, 1]),
            "\r\x1b[K3 left\r\x1b[K2 left\r\x1b[K1 left"
        );
    }

    #[test]
    fn a_log_gets_a_line_at_most_every_ten_seconds() {
        assert_eq!(shown(false, &[3, 2, 1]), "3 left\n");
    }
}
