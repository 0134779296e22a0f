//! The conversation on the user's terminal: the adapter's stdin and stderr are the terminal
//! `wujie` gives it (a PTY relayed to the user's own), its stdout stays events.
//!
//! The terminal is switched to raw mode (keys arrive one by one, Ctrl+C as a byte instead of a
//! signal to the adapter and its agent; output keeps its line-feed translation) with bracketed
//! paste on, and put back when the console is dropped. Keys go through [`InputScanner`] into
//! the [`LineEditor`] of `wujie-term`; during a turn only Ctrl+C (cancel) and the end of input
//! matter, and a permission question takes a digit. What the agent says is streamed as it
//! comes ([`ConsoleOut`]), passed through `terminal_safe` like every text from elsewhere.

use std::collections::{HashMap, VecDeque};
use std::io::{IsTerminal, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::termios::{LocalModes, OptionalActions, Termios, tcgetattr, tcgetwinsize, tcsetattr};
use serde_json::Value;
use tokio::sync::mpsc;
use wujie_term::text::{Layout, terminal_safe};
use wujie_term::{EditorAction, InputEvent, InputScanner, LineEditor, Pending, TermSize};

/// The prompt before the user's input.
pub const PROMPT: &str = "> ";

/// How long an unfinished escape sequence may wait for its next byte before it is taken as it
/// is (a lone Esc); pieces of a paste may be further apart.
const ESCAPE_IDLE: Duration = Duration::from_millis(25);
const PASTE_IDLE: Duration = Duration::from_secs(1);

/// Whether a user is at the adapter's terminal. `wujie run` starts the adapter on a PTY of its
/// own either way, and puts that PTY in raw mode when its own stdin is no terminal (input piped
/// in); a PTY that still edits lines itself (canonical mode, as it is created) has the user's
/// terminal behind it.
pub fn user_at_terminal() -> bool {
    let stdin = std::io::stdin();
    stdin.is_terminal()
        && tcgetattr(&stdin).is_ok_and(|t| t.local_modes.contains(LocalModes::ICANON))
}

/// What the user did while a turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnInput {
    /// Ctrl+C: cancel the turn.
    Cancel,
    /// The terminal's input ended (it was closed).
    Closed,
}

/// How the user answered a question with numbered choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The choice at this index.
    Picked(usize),
    /// Esc: no.
    Refused,
    /// Ctrl+C: no, and stop the turn.
    CancelTurn,
    /// The terminal's input ended.
    Closed,
}

/// The user's side of the conversation: keys in, the prompt drawn.
pub struct Console {
    keys: mpsc::Receiver<Vec<u8>>,
    scanner: InputScanner,
    events: VecDeque<InputEvent>,
    editor: LineEditor,
    out: ConsoleOut,
    _raw: RawTerminal,
}

impl Console {
    /// Takes over the terminal on stdin/stderr; see the module documentation.
    pub fn open() -> std::io::Result<Console> {
        let raw = RawTerminal::enable()?;
        let (tx, keys) = mpsc::channel(64);
        std::thread::Builder::new()
            .name("acp-keys".to_owned())
            .spawn(move || {
                let mut buf = [0u8; 4096];
                let mut stdin = std::io::stdin().lock();
                // Ends with the input (EOF or an error) or when the console is gone.
                while let Ok(n @ 1..) = stdin.read(&mut buf) {
                    if tx.blocking_send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            })?;
        let out = ConsoleOut::default();
        out.write(b"\x1b[?2004h");
        Ok(Console {
            keys,
            scanner: InputScanner::new(),
            events: VecDeque::new(),
            editor: LineEditor::new(PROMPT),
            out,
            _raw: raw,
        })
    }

    /// Where the agent's output and notes go.
    pub fn out(&self) -> ConsoleOut {
        self.out.clone()
    }

    /// The user's next prompt; `None` when they end the conversation (Ctrl+D) or the input
    /// ends. Ctrl+C at an empty prompt says how to leave.
    pub async fn read_prompt(&mut self) -> Option<String> {
        self.out.end_line();
        let mut drawn = Vec::new();
        self.editor.redraw(terminal_size(), &mut drawn);
        self.out.write(&drawn);
        loop {
            let event = self.next_event().await?;
            let mut drawn = Vec::new();
            let action = self.editor.handle(&event, terminal_size(), &mut drawn);
            self.out.write(&drawn);
            match action {
                EditorAction::None => {}
                EditorAction::Submit(prompt) => {
                    self.out.at_line_start();
                    return Some(prompt);
                }
                EditorAction::Interrupt { was_empty } => {
                    self.out.at_line_start();
                    if was_empty {
                        self.out.note("(Ctrl+D ends the conversation)");
                    }
                    let mut drawn = Vec::new();
                    self.editor.redraw(terminal_size(), &mut drawn);
                    self.out.write(&drawn);
                }
                EditorAction::Eof => {
                    self.out.write(b"\r\n");
                    self.out.at_line_start();
                    return None;
                }
            }
        }
    }

    /// Waits, while a turn runs, for Ctrl+C or the end of input; other keys are dropped (the
    /// prompt is not on the screen).
    pub async fn turn_input(&mut self) -> TurnInput {
        loop {
            match self.next_event().await {
                None => return TurnInput::Closed,
                Some(event) if event.is_typing() && event.bytes == [0x03] => {
                    return TurnInput::Cancel;
                }
                Some(_) => {}
            }
        }
    }

    /// Asks `question` with `options` numbered from 1 and waits for a digit.
    pub async fn choose(&mut self, question: &str, options: &[String]) -> Choice {
        self.out.note(question);
        let listed: Vec<String> = options
            .iter()
            .enumerate()
            .map(|(i, name)| format!("{}) {}", i + 1, terminal_safe(name, Layout::Inline)))
            .collect();
        self.out
            .note(&format!("{}   (Esc: refuse)", listed.join("   ")));
        loop {
            let Some(event) = self.next_event().await else {
                return Choice::Closed;
            };
            if !event.is_typing() {
                continue;
            }
            match event.bytes.as_slice() {
                [0x1b] => {
                    self.out.note("→ refused");
                    return Choice::Refused;
                }
                [0x03] => return Choice::CancelTurn,
                [digit @ b'1'..=b'9'] => {
                    let at = usize::from(digit - b'1');
                    if let Some(name) = options.get(at) {
                        self.out
                            .note(&format!("→ {}", terminal_safe(name, Layout::Inline)));
                        return Choice::Picked(at);
                    }
                }
                _ => {}
            }
        }
    }

    async fn next_event(&mut self) -> Option<InputEvent> {
        loop {
            if let Some(event) = self.events.pop_front() {
                return Some(event);
            }
            let idle = match self.scanner.pending() {
                Pending::Nothing => None,
                Pending::Escape | Pending::Csi => Some(ESCAPE_IDLE),
                Pending::String | Pending::Paste => Some(PASTE_IDLE),
            };
            let received = match idle {
                None => self.keys.recv().await,
                Some(idle) => match tokio::time::timeout(idle, self.keys.recv()).await {
                    Ok(received) => received,
                    Err(_) => {
                        self.events.extend(self.scanner.flush_idle());
                        continue;
                    }
                },
            };
            match received {
                Some(bytes) => self.events.extend(self.scanner.feed(&bytes)),
                None => {
                    self.events.extend(self.scanner.flush_idle());
                    return self.events.pop_front();
                }
            }
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.out.end_line();
        self.out.write(b"\x1b[?2004l");
    }
}

/// What the agent sends, as it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stream {
    Reply,
    Thought,
}

/// Writes to the terminal (stderr), for the conversation and for the agent's updates, which
/// arrive on another task.
#[derive(Clone, Default)]
pub struct ConsoleOut {
    state: Arc<Mutex<OutState>>,
}

#[derive(Default)]
struct OutState {
    /// Something was written since the last line break.
    mid_line: bool,
    /// What the text being streamed is.
    streaming: Option<Stream>,
    /// Tool calls' titles by `toolCallId` (updates often leave the title out).
    tool_titles: HashMap<String, String>,
}

impl ConsoleOut {
    /// Shows one `session/update`'s params as it comes: replies and thoughts (dimmed) as
    /// text, a tool call as a line with its title, a failed one as such. Other updates are
    /// only reported, not shown.
    pub fn show_update(&self, params: &Value) {
        let Some(update) = params.get("update") else {
            return;
        };
        let text = || {
            update
                .pointer("/content/text")
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let call = update
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(title) = update
            .get("title")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            self.lock()
                .tool_titles
                .insert(call.to_owned(), title.to_owned());
        }
        let title = || {
            self.lock()
                .tool_titles
                .get(call)
                .cloned()
                .unwrap_or_else(|| "a tool call".to_owned())
        };
        match update.get("sessionUpdate").and_then(Value::as_str) {
            Some("agent_message_chunk") => self.stream(Stream::Reply, text()),
            Some("agent_thought_chunk") => self.stream(Stream::Thought, text()),
            Some("tool_call") => self.note(&format!("• {}", title())),
            Some("tool_call_update")
                if update.get("status").and_then(Value::as_str) == Some("failed") =>
            {
                self.note(&format!("• {} failed", title()));
            }
            _ => {}
        }
    }

    /// A line of our own (dimmed), on a line of its own.
    pub fn note(&self, text: &str) {
        let text = terminal_safe(text, Layout::Inline);
        let mut state = self.lock();
        let mut bytes = Vec::new();
        if state.mid_line {
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(format!("\x1b[2m{text}\x1b[22m\r\n").as_bytes());
        state.mid_line = false;
        state.streaming = None;
        write_stderr(&bytes);
    }

    /// Ends what was streamed with a line break, if it did not end with one.
    pub fn end_line(&self) {
        let mut state = self.lock();
        if state.mid_line {
            write_stderr(b"\r\n");
        }
        state.mid_line = false;
        state.streaming = None;
    }

    fn stream(&self, kind: Stream, text: &str) {
        if text.is_empty() {
            return;
        }
        let safe = terminal_safe(text, Layout::Block);
        let mut state = self.lock();
        let mut bytes = Vec::new();
        if state.streaming != Some(kind) && state.mid_line {
            bytes.extend_from_slice(b"\r\n");
        }
        let (on, off): (&[u8], &[u8]) = match kind {
            Stream::Reply => (b"", b""),
            Stream::Thought => (b"\x1b[2m", b"\x1b[22m"),
        };
        bytes.extend_from_slice(on);
        bytes.extend_from_slice(safe.replace('\n', "\r\n").as_bytes());
        bytes.extend_from_slice(off);
        state.mid_line = !safe.ends_with('\n');
        state.streaming = Some(kind);
        write_stderr(&bytes);
    }

    fn write(&self, bytes: &[u8]) {
        let _state = self.lock();
        write_stderr(bytes);
    }

    /// The line editor left the cursor at the start of a row.
    fn at_line_start(&self) {
        let mut state = self.lock();
        state.mid_line = false;
        state.streaming = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OutState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn write_stderr(bytes: &[u8]) {
    let mut err = std::io::stderr().lock();
    // The terminal gone means the user is: nothing to report it to.
    let _ = err.write_all(bytes).and_then(|()| err.flush());
}

fn terminal_size() -> TermSize {
    tcgetwinsize(std::io::stderr())
        .ok()
        .filter(|s| s.ws_col > 0 && s.ws_row > 0)
        .map_or(TermSize { cols: 80, rows: 24 }, |s| TermSize {
            cols: s.ws_col,
            rows: s.ws_row,
        })
}

/// Raw mode on stdin, with output processing kept (a line feed still starts a new line), for as
/// long as this lives.
struct RawTerminal {
    original: Termios,
}

impl RawTerminal {
    fn enable() -> std::io::Result<RawTerminal> {
        let stdin = std::io::stdin();
        let original = tcgetattr(&stdin)?;
        let mut raw = original.clone();
        raw.make_raw();
        raw.output_modes = original.output_modes;
        tcsetattr(&stdin, OptionalActions::Now, &raw)?;
        Ok(RawTerminal { original })
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.original);
    }
}
