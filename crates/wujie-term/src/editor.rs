//! A line editor for a conversation on the user's terminal: the prompt line of a provider that
//! talks to its agent itself (the built-in `acp` provider) instead of showing the agent's UI.
//!
//! It takes the [`InputEvent`]s of an [`crate::InputScanner`] and answers with the bytes that
//! redraw its input area and, when the user is done, an [`EditorAction`]:
//! - typing inserts at the cursor; Left/Right, Home/End (also Ctrl+A/Ctrl+E) move; Backspace,
//!   Delete, Ctrl+U (to the start), Ctrl+K (to the end) and Ctrl+W (a word) delete;
//! - Up/Down walk the history of submitted prompts (the line being written is kept and comes
//!   back below the newest entry);
//! - a bracketed paste is inserted as text, line breaks included, so a multi-line paste is one
//!   prompt; Enter submits it;
//! - Ctrl+C clears the line ([`EditorAction::Interrupt`]); Ctrl+D on an empty line ends
//!   ([`EditorAction::Eof`]), elsewhere it deletes the character under the cursor.
//!
//! The input area is drawn from the row the cursor is on, and rows are laid out here (not by the
//! terminal's autowrap): each row is written with an explicit line break, so what the terminal
//! shows does not depend on how it handles the last column. Rows after the first are indented
//! under the prompt. A text taller than the screen shows the rows around the cursor. Every
//! redraw goes back to the top of the previous drawing by relative moves, so the area may start
//! anywhere on the screen, and the screen may scroll under it.

use unicode_width::UnicodeWidthChar;

use crate::keys::Key;
use crate::overlay::TermSize;
use crate::scanner::{InputEvent, InputKind};

/// Longest prompt kept, in characters; input beyond it is dropped (a runaway paste must not
/// exhaust memory or make every redraw slow).
pub const PROMPT_CAP: usize = 1 << 20;
/// Most prompts kept in the history; the oldest go first.
pub const HISTORY_CAP: usize = 1000;

/// What the user did, beyond editing the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorAction {
    /// Nothing to act on (the line may have changed; its redraw is in the output).
    None,
    /// Enter on a line that is not blank: the prompt. It was added to the history, the area
    /// was left on the screen with the cursor on the row below it, and the line is empty again.
    Submit(String),
    /// Ctrl+C. The line was left on the screen as it was and cleared; `was_empty` tells whether
    /// it held anything.
    Interrupt { was_empty: bool },
    /// Ctrl+D on an empty line: the user is done.
    Eof,
}

/// The editor's state; see the module documentation.
#[derive(Debug, Clone)]
pub struct LineEditor {
    prompt: String,
    prompt_width: usize,
    text: Vec<char>,
    /// Index into `text` (0..=len).
    cursor: usize,
    history: Vec<String>,
    /// The history entry shown while walking it; `None` while editing the draft.
    browsing: Option<usize>,
    /// The line being written when the walk through the history started.
    draft: Vec<char>,
    /// The end of a paste piece that split a UTF-8 character, for the next piece.
    paste_carry: Vec<u8>,
    /// The cursor's row within what was drawn last (0 = the area's top row); `None` when
    /// nothing of the area is on the screen.
    drawn_row: Option<usize>,
}

/// The input area laid out for one width.
struct Layout {
    rows: Vec<String>,
    cursor_row: usize,
    cursor_col: usize,
    prefix_width: usize,
}

impl LineEditor {
    /// An editor showing `prompt` (plain text, one line) before the input.
    pub fn new(prompt: &str) -> LineEditor {
        let prompt: String = prompt
            .chars()
            .filter(|c| !c.is_control())
            .take(64)
            .collect();
        LineEditor {
            prompt_width: crate::text::width(&prompt),
            prompt,
            text: Vec::new(),
            cursor: 0,
            history: Vec::new(),
            browsing: None,
            draft: Vec::new(),
            paste_carry: Vec::new(),
            drawn_row: None,
        }
    }

    /// The line as it is now.
    pub fn text(&self) -> String {
        self.text.iter().collect()
    }

    /// The cursor, as a character index into [`LineEditor::text`].
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The prompts submitted so far, oldest first.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Applies one input event; the redraw it needs is appended to `out`.
    pub fn handle(
        &mut self,
        event: &InputEvent,
        size: TermSize,
        out: &mut Vec<u8>,
    ) -> EditorAction {
        match event.kind {
            InputKind::Paste { complete, .. } => {
                let before = (self.text.len(), self.cursor);
                self.paste(event.payload(), complete);
                if (self.text.len(), self.cursor) != before {
                    self.redraw(size, out);
                }
                EditorAction::None
            }
            InputKind::Typing => self.key(&event.bytes, size, out),
            InputKind::Reply(_)
            | InputKind::String { .. }
            | InputKind::Focus { .. }
            | InputKind::Mouse(_) => EditorAction::None,
        }
    }

    /// Draws the input area again where it was (or, when it is not on the screen, from the
    /// cursor's row, which must be at the start of an empty row).
    pub fn redraw(&mut self, size: TermSize, out: &mut Vec<u8>) {
        let layout = self.layout(size);
        let max_rows = usize::from(size.rows).saturating_sub(1).max(1);
        let top = (layout.cursor_row + 1).saturating_sub(max_rows);
        let bottom = layout.rows.len().min(top + max_rows);
        self.erase(out);
        for (shown, row) in layout.rows[top..bottom].iter().enumerate() {
            if shown > 0 {
                out.extend_from_slice(b"\r\n");
            }
            let at = top + shown;
            if layout.prefix_width > 0 {
                if at == 0 {
                    out.extend_from_slice(self.prompt.as_bytes());
                } else if shown == 0 {
                    // Rows above are off the screen.
                    out.extend_from_slice("…".as_bytes());
                    pad(out, layout.prefix_width - 1);
                } else {
                    pad(out, layout.prefix_width);
                }
            }
            out.extend_from_slice(row.as_bytes());
        }
        let last = bottom - 1 - top;
        let row = layout.cursor_row - top;
        out.push(b'\r');
        move_up(out, last - row);
        let col = layout.prefix_width + layout.cursor_col;
        if col > 0 {
            out.extend_from_slice(format!("\x1b[{col}C").as_bytes());
        }
        self.drawn_row = Some(row);
    }

    /// Takes the input area off the screen (to print something in its place, then
    /// [`LineEditor::redraw`]); the cursor is left where the area started.
    pub fn erase(&mut self, out: &mut Vec<u8>) {
        if let Some(row) = self.drawn_row.take() {
            out.push(b'\r');
            move_up(out, row);
            out.extend_from_slice(b"\x1b[J");
        }
    }

    fn key(&mut self, bytes: &[u8], size: TermSize, out: &mut Vec<u8>) -> EditorAction {
        let changed = match bytes {
            [0x03] => {
                let was_empty = self.text.is_empty();
                self.leave_line(size, out);
                return EditorAction::Interrupt { was_empty };
            }
            [0x04] if self.text.is_empty() => return EditorAction::Eof,
            [0x04] | [0x1b, b'[', b'3', b'~'] => self.delete_range(self.cursor, self.cursor + 1),
            [b'\r'] | [b'\n'] => {
                let prompt = self.text();
                if prompt.trim().is_empty() {
                    self.delete_range(0, self.text.len())
                } else {
                    self.leave_line(size, out);
                    self.remember(&prompt);
                    return EditorAction::Submit(prompt);
                }
            }
            [0x7f] | [0x08] => self.delete_range(self.cursor.saturating_sub(1), self.cursor),
            [0x15] => self.delete_range(0, self.cursor),
            [0x0b] => self.delete_range(self.cursor, self.text.len()),
            [0x17] => self.delete_range(self.word_start(), self.cursor),
            [0x01] | [0x1b, b'[', b'H'] | [0x1b, b'O', b'H'] | [0x1b, b'[', b'1' | b'7', b'~'] => {
                self.move_to(0)
            }
            [0x05] | [0x1b, b'[', b'F'] | [0x1b, b'O', b'F'] | [0x1b, b'[', b'4' | b'8', b'~'] => {
                self.move_to(self.text.len())
            }
            _ => match Key::decode(bytes) {
                Key::Left => self.move_to(self.cursor.saturating_sub(1)),
                Key::Right => self.move_to((self.cursor + 1).min(self.text.len())),
                Key::Up => self.older(),
                Key::Down => self.newer(),
                Key::Char(c) => self.insert(&[c]),
                _ => false,
            },
        };
        if changed {
            self.redraw(size, out);
        }
        EditorAction::None
    }

    /// Leaves the line on the screen as it is, cursor after it on a fresh row, and starts an
    /// empty one (not drawn yet).
    fn leave_line(&mut self, size: TermSize, out: &mut Vec<u8>) {
        self.cursor = self.text.len();
        self.redraw(size, out);
        out.extend_from_slice(b"\r\n");
        self.drawn_row = None;
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
    }

    fn remember(&mut self, prompt: &str) {
        if self.history.last().map(String::as_str) != Some(prompt) {
            self.history.push(prompt.to_owned());
        }
        if self.history.len() > HISTORY_CAP {
            let extra = self.history.len() - HISTORY_CAP;
            self.history.drain(..extra);
        }
    }

    fn older(&mut self) -> bool {
        let next = match self.browsing {
            None if self.history.is_empty() => return false,
            None => {
                self.draft = std::mem::take(&mut self.text);
                self.history.len() - 1
            }
            Some(0) => return false,
            Some(at) => at - 1,
        };
        self.show_entry(Some(next));
        true
    }

    fn newer(&mut self) -> bool {
        match self.browsing {
            None => false,
            Some(at) if at + 1 < self.history.len() => {
                self.show_entry(Some(at + 1));
                true
            }
            Some(_) => {
                self.show_entry(None);
                true
            }
        }
    }

    fn show_entry(&mut self, entry: Option<usize>) {
        self.browsing = entry;
        self.text = match entry.and_then(|at| self.history.get(at)) {
            Some(prompt) => prompt.chars().collect(),
            None => std::mem::take(&mut self.draft),
        };
        self.cursor = self.text.len();
    }

    fn paste(&mut self, payload: &[u8], complete: bool) {
        let mut bytes = std::mem::take(&mut self.paste_carry);
        bytes.extend_from_slice(payload);
        let valid = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            // An incomplete character at the end waits for the next piece; anything else
            // invalid is replaced below.
            Err(e) if e.error_len().is_none() && !complete => e.valid_up_to(),
            Err(_) => bytes.len(),
        };
        self.paste_carry = bytes.split_off(valid);
        let text = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
        let chars: Vec<char> = text
            .chars()
            .map(|c| if c == '\r' { '\n' } else { c })
            .filter(|c| matches!(c, '\n' | '\t') || !c.is_control())
            .collect();
        self.insert(&chars);
    }

    fn insert(&mut self, chars: &[char]) -> bool {
        let room = PROMPT_CAP.saturating_sub(self.text.len());
        let take = chars.len().min(room);
        if take == 0 {
            return false;
        }
        self.text
            .splice(self.cursor..self.cursor, chars[..take].iter().copied());
        self.cursor += take;
        true
    }

    fn delete_range(&mut self, from: usize, to: usize) -> bool {
        let to = to.min(self.text.len());
        if from >= to {
            return false;
        }
        self.text.drain(from..to);
        if self.cursor > from {
            self.cursor = self.cursor.saturating_sub(to - from).max(from);
        }
        true
    }

    fn move_to(&mut self, at: usize) -> bool {
        let moved = at != self.cursor;
        self.cursor = at;
        moved
    }

    /// Where the word before the cursor starts (after the whitespace before it).
    fn word_start(&self) -> usize {
        let before = &self.text[..self.cursor];
        let end = before
            .iter()
            .rposition(|c| !c.is_whitespace())
            .map_or(0, |i| i + 1);
        before[..end]
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |i| i + 1)
    }

    fn layout(&self, size: TermSize) -> Layout {
        let cols = usize::from(size.cols).max(1);
        // The prompt needs room for at least two columns of text beside it.
        let prefix_width = if cols >= self.prompt_width + 2 {
            self.prompt_width
        } else {
            0
        };
        let usable = cols - prefix_width;
        let mut rows = vec![String::new()];
        let (mut row, mut col) = (0usize, 0usize);
        let mut cursor_at = (0, 0);
        for (i, &c) in self.text.iter().enumerate() {
            if col >= usable {
                new_row(&mut rows, &mut row, &mut col);
            }
            if c == '\n' {
                if i == self.cursor {
                    cursor_at = (row, col);
                }
                new_row(&mut rows, &mut row, &mut col);
                continue;
            }
            let (shown, width) = match c {
                '\t' => (' ', 1),
                c => match c.width() {
                    Some(w) if w <= usable => (c, w),
                    Some(_) => ('?', 1),
                    None => ('?', 1),
                },
            };
            if width > 0 && col + width > usable {
                new_row(&mut rows, &mut row, &mut col);
            }
            if i == self.cursor {
                cursor_at = (row, col);
            }
            if let Some(current) = rows.last_mut() {
                current.push(shown);
            }
            col += width;
        }
        if self.cursor >= self.text.len() {
            if col >= usable {
                new_row(&mut rows, &mut row, &mut col);
            }
            cursor_at = (row, col);
        }
        Layout {
            rows,
            cursor_row: cursor_at.0,
            cursor_col: cursor_at.1,
            prefix_width,
        }
    }
}

fn new_row(rows: &mut Vec<String>, row: &mut usize, col: &mut usize) {
    rows.push(String::new());
    *row += 1;
    *col = 0;
}

fn pad(out: &mut Vec<u8>, n: usize) {
    out.extend(std::iter::repeat_n(b' ', n));
}

fn move_up(out: &mut Vec<u8>, rows: usize) {
    if rows > 0 {
        out.extend_from_slice(format!("\x1b[{rows}A").as_bytes());
    }
}
