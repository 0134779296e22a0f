//! Tracks the user's current input line from scanner events, well enough to see the trigger.
//!
//! The adapter owns its input line and may edit it in ways the host cannot see (history,
//! completion, cursor movement). So the tracker is deliberately modest: printable characters
//! append, Backspace removes one character, Enter / Ctrl-C / Ctrl-U start a fresh empty line,
//! and any other key (arrows, Tab, Alt keys, other control bytes) makes the line *unknown* until
//! the next fresh line. Replies, strings, focus and mouse events never change it.

use crate::scanner::{InputEvent, InputKind};

/// The text that opens the command menu when it starts the input line.
pub const TRIGGER: &str = "/wujie";

/// Lines longer than this (bytes) are treated as unknown; the trigger only needs the start.
pub const LINE_CAP: usize = 4096;

/// The tracked input line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputLine {
    text: String,
    unknown: bool,
    /// A paste has started but its end marker has not been seen yet.
    in_paste: bool,
}

impl InputLine {
    pub fn new() -> Self {
        Self::default()
    }

    /// Updates the line with one scanner event.
    pub fn apply(&mut self, event: &InputEvent) {
        match event.kind {
            InputKind::Typing => self.key(&event.bytes),
            InputKind::Paste { complete, .. } => {
                self.in_paste = !complete;
                self.append(&String::from_utf8_lossy(event.payload()));
            }
            InputKind::Reply(_)
            | InputKind::String { .. }
            | InputKind::Focus { .. }
            | InputKind::Mouse(_) => {}
        }
    }

    /// Starts a fresh, known, empty line (e.g. after the host erased the trigger text itself).
    pub fn clear(&mut self) {
        self.text.clear();
        self.unknown = false;
        self.in_paste = false;
    }

    /// The line's text, or `None` when it is unknown.
    pub fn text(&self) -> Option<&str> {
        (!self.unknown).then_some(self.text.as_str())
    }

    /// When the line is the trigger followed by a word (possibly empty), that word: `Some("")`
    /// for `/wujie`, `Some("c")` for `/wujiec`. `None` otherwise, and while a paste is still
    /// incomplete (the trigger is only checked after the paste's end marker).
    pub fn trigger_query(&self) -> Option<&str> {
        if self.in_paste {
            return None;
        }
        let rest = self.text()?.strip_prefix(TRIGGER)?;
        (!rest.chars().any(|c| c.is_whitespace() || c.is_control())).then_some(rest)
    }

    fn key(&mut self, bytes: &[u8]) {
        match bytes {
            [0x7f] | [0x08] => {
                self.text.pop();
            }
            [b'\r'] | [b'\n'] | [0x03] | [0x15] => self.clear(),
            _ => match std::str::from_utf8(bytes) {
                Ok(s) if s.chars().count() == 1 && !s.chars().any(char::is_control) => {
                    self.append(s)
                }
                _ => self.forget(),
            },
        }
    }

    fn append(&mut self, s: &str) {
        if self.unknown {
            return;
        }
        if self.text.len() + s.len() > LINE_CAP {
            self.forget();
            return;
        }
        self.text.push_str(s);
    }

    fn forget(&mut self) {
        self.text.clear();
        self.unknown = true;
    }
}
