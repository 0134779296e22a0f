//! What opencode prints on stderr as it quits when its HTTP server is on (the `--port` the
//! provider adds to read its events): one dump per request the server aborted,
//!
//! ```text
//! AbortError: The operation was aborted.
//! DOMException {
//!   line: 2,
//!   …
//! }
//!       at /$bunfs/root/chunk-….js:2
//! ```
//!
//! about forty lines each, on the user's terminal after the agent's screen is gone. Without
//! the provider opencode prints none of it, so [`AbortDumps`] takes these dumps out of the
//! agent's stderr and passes everything else on, byte for byte, a whole line at a time.

/// The longest line held back to be judged; a longer one is passed on as it comes (no dump
/// has such a line), so the filter holds little whatever the agent prints.
const MAX_HELD_LINE: usize = 64 * 1024;

/// The first line of a dump, without its colours.
const DUMP_START: &str = "AbortError: The operation was aborted.";

/// Where the filter is in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Passing lines on.
    Passing,
    /// Inside a dump, before the line that closes its object (`}`).
    InDump,
    /// After the closing `}`: the dump's `at …` lines follow.
    AfterDump,
}

/// An incremental filter of an agent's stderr (see the module comment): the same output
/// whatever the chunks.
#[derive(Debug)]
pub struct AbortDumps {
    state: State,
    /// The line begun and not ended yet.
    partial: Vec<u8>,
}

impl Default for AbortDumps {
    fn default() -> Self {
        AbortDumps {
            state: State::Passing,
            partial: Vec::new(),
        }
    }
}

impl AbortDumps {
    /// What of `chunk` (with what came before it) is passed on now: every whole line that is
    /// not part of a dump.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for &byte in chunk {
            self.partial.push(byte);
            if byte == b'\n' {
                let line = std::mem::take(&mut self.partial);
                if self.passes(&line) {
                    out.extend_from_slice(&line);
                }
            } else if self.partial.len() >= MAX_HELD_LINE {
                let head = std::mem::take(&mut self.partial);
                if self.state == State::Passing {
                    out.extend_from_slice(&head);
                }
            }
        }
        out
    }

    /// The stream ended: a last line without `'\n'`, unless it is part of a dump.
    pub fn finish(&mut self) -> Vec<u8> {
        let line = std::mem::take(&mut self.partial);
        if !line.is_empty() && self.passes(&line) {
            line
        } else {
            Vec::new()
        }
    }

    /// Whether `line` is passed on, moving through a dump.
    fn passes(&mut self, line: &[u8]) -> bool {
        let text = plain(line);
        let text = text.trim_end();
        loop {
            match self.state {
                State::Passing if text == DUMP_START => {
                    self.state = State::InDump;
                    return false;
                }
                State::Passing => return true,
                State::InDump => {
                    if text == "}" {
                        self.state = State::AfterDump;
                    }
                    return false;
                }
                State::AfterDump if text.trim_start().starts_with("at ") => return false,
                // The dump is over: this line is judged afresh (it may begin the next one).
                State::AfterDump => self.state = State::Passing,
            }
        }
    }
}

/// `line` as text without its terminal escape sequences (CSI sequences: the colours Bun puts
/// in a dump).
fn plain(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, up to the final byte.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dump as opencode 1.18 prints it, colours included.
    const DUMP: &str = "\x1b[0m\x1b[31mAbortError\x1b[0m\x1b[2m:\x1b[0m \x1b[1mThe operation was aborted.\x1b[0m\n\
DOMException {\n  \x1b[0mline\x1b[2m:\x1b[0m \x1b[0m\x1b[33m2\x1b[0m\x1b[0m\x1b[2m,\x1b[0m\n  \
code: 20,\n  name: \"AbortError\",\n  toString: [Function: toString],\n}\n      at /$bunfs/root/chunk-5z1jv3fy.js:2\n";

    fn filtered(input: &str) -> String {
        let mut filter = AbortDumps::default();
        let mut out = filter.feed(input.as_bytes());
        out.extend(filter.finish());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dumps_go_and_everything_else_stays() {
        let input = format!("before\n{DUMP}{DUMP}between\n{DUMP}after");
        assert_eq!(filtered(&input), "before\nbetween\nafter");
    }

    #[test]
    fn other_errors_stay_as_they_are() {
        let input = "Error: something else\n  at x\n}\n\x1b[31mred\x1b[0m\n";
        assert_eq!(filtered(input), input);
    }

    #[test]
    fn a_dump_cut_off_by_the_end_is_not_passed_on() {
        assert_eq!(filtered(&DUMP[..DUMP.len() / 2]), "");
    }

    #[test]
    fn any_chunking_gives_the_same_output() {
        let input = format!("a\n{DUMP}b\n{DUMP}c");
        crate::tui::testing::assert_chunking_changes_nothing(
            input.as_bytes(),
            &[1, 2, 3, 5, 7, 13, 64],
            |chunks| {
                let mut filter = AbortDumps::default();
                let mut out: Vec<u8> = chunks.iter().flat_map(|c| filter.feed(c)).collect();
                out.extend(filter.finish());
                out
            },
        );
    }

    #[test]
    fn a_long_line_is_passed_on_without_being_held_whole() {
        let mut filter = AbortDumps::default();
        let long = vec![b'x'; MAX_HELD_LINE * 2];
        assert!(filter.feed(&long).len() >= MAX_HELD_LINE);
        let mut out = filter.feed(b"\n");
        out.extend(filter.finish());
        assert!(out.ends_with(b"\n"));
    }
}
