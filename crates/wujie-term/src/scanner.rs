//! Incremental, lossless scanner for the bytes a user's terminal sends.
//!
//! The host reads its real terminal, feeds every chunk to [`InputScanner::feed`] and forwards
//! the returned events' bytes to the adapter PTY. The scanner only *classifies*: concatenating
//! the bytes of every event (including those from [`InputScanner::flush_idle`]) gives back the
//! input exactly, and the events do not depend on how the input was split into chunks (as long
//! as `flush_idle` is not called in between).
//!
//! # What is recognised
//! - Typing: one event per key — one UTF-8 character, one control byte, one `ESC x` (Alt key),
//!   one SS3 key (`ESC O A`) or one CSI key (`ESC [ 1 ; 5 C`, `ESC [ 3 ~`, …).
//! - Strings: OSC (`ESC ]`), DCS (`ESC P`), APC (`ESC _`), PM (`ESC ^`), SOS (`ESC X`), ended by
//!   BEL or ST (`ESC \`). The 8-bit ST (0x9C) is **not** a terminator: the user's terminal sends
//!   UTF-8, where 0x9C is a continuation byte of ordinary characters inside the payload. A string
//!   interrupted by another escape (`ESC` not followed by `\`) or by a C0 control other than BEL
//!   is not a terminal reply: its bytes become a typing event (they were most likely `Alt-]` and
//!   friends) and scanning resumes at the interrupting byte, so later keys are never swallowed.
//! - Terminal replies (CSI): cursor position `CSI r;c R` and DECXCPR `CSI ? r;c[;p] R`, device
//!   attributes `CSI ? … c` / `CSI > … c` / `CSI = … c`, device status `CSI 0 n` / `CSI 3 n` /
//!   `CSI ? … n`, mode reports `CSI [?] … $ y`, window reports `CSI Ps ; … t`, and the kitty
//!   keyboard flags reply `CSI ? flags u`. `CSI 1;m R` is also what some terminals send for a
//!   modified F3; it is classified as a cursor report (modern terminals moved F3 elsewhere).
//! - Bracketed paste `ESC[200~ … ESC[201~`: everything in between is content, byte for byte
//!   (escapes included); only the end marker ends it, also when split across chunks.
//! - Focus `CSI I` / `CSI O`; mouse in SGR form `CSI < b;x;y M|m` and X10 form `CSI M` followed
//!   by exactly three raw bytes (any values; the UTF-8 coordinates of mode 1005 are not
//!   supported, their extra bytes become typing).
//!
//! # Bounded memory
//! - A CSI sequence longer than [`CSI_CAP`] bytes is malformed: its bytes become typing.
//! - A string longer than [`STRING_CAP`] bytes is given up: its bytes become typing and scanning
//!   goes back to ground (the adapter still receives every byte unchanged).
//! - A paste is buffered up to [`PASTE_CAP`] bytes; a longer paste is emitted in pieces of that
//!   size marked incomplete, and the paste goes on until its end marker.
//!
//! # Idle flush
//! A lone `ESC` (the Escape key) cannot be told from the start of a sequence until more bytes
//! arrive or the input goes quiet. The caller measures the silence: when [`InputScanner::pending`]
//! is not [`Pending::Nothing`] and no byte arrived for a while (about 50 ms for
//! [`Pending::Escape`] and [`Pending::Csi`], up to about 1 s for a [`Pending::Csi`] while the
//! terminal owes a reply, about 1 s for [`Pending::String`] and [`Pending::Paste`]), it calls
//! [`InputScanner::flush_idle`], which emits the held bytes as typing (an unfinished paste is
//! emitted as an incomplete paste and paste mode ends).

/// Largest CSI sequence kept before it is treated as malformed (bytes, including `ESC [`).
pub const CSI_CAP: usize = 256;
/// Largest OSC/DCS/APC/PM/SOS string kept before it is given up as typing (bytes).
pub const STRING_CAP: usize = 1 << 20;
/// Largest piece of a bracketed paste held before it is emitted as an incomplete paste (bytes).
pub const PASTE_CAP: usize = 1 << 20;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;
const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// What a run of input bytes is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A key the user typed (see [`crate::Key::decode`]).
    Typing,
    /// Bracketed-paste bytes. `starts` is true when the bytes begin with `ESC[200~`;
    /// `complete` is true when they end with `ESC[201~`. A paste under [`PASTE_CAP`] bytes is a
    /// single event with both flags set.
    Paste { starts: bool, complete: bool },
    /// A CSI terminal reply.
    Reply(ReplyKind),
    /// A terminated OSC/DCS/APC/PM/SOS string (terminal replies such as colours or XTGETTCAP).
    String {
        kind: StringKind,
        terminator: Terminator,
    },
    /// Focus in (`gained`) or out.
    Focus { gained: bool },
    /// A mouse report.
    Mouse(MouseEncoding),
}

/// Which CSI reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    /// `CSI r;c R` or DECXCPR `CSI ? r;c[;p] R`.
    CursorPosition,
    /// `CSI ? … c`, `CSI > … c`, `CSI = … c`.
    DeviceAttributes,
    /// `CSI 0 n`, `CSI 3 n`, `CSI ? … n`.
    DeviceStatus,
    /// DECRPM `CSI [?] … $ y`.
    ModeReport,
    /// `CSI Ps ; … t` (window state, position and size reports).
    WindowReport,
    /// Kitty keyboard protocol flags `CSI ? flags u`.
    KeyboardFlags,
}

/// Which control string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringKind {
    Osc,
    Dcs,
    Apc,
    Pm,
    Sos,
}

/// How a control string ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminator {
    /// BEL (0x07).
    Bel,
    /// ST as `ESC \`.
    St,
}

/// Mouse report encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseEncoding {
    /// `CSI < b ; x ; y M|m`.
    Sgr,
    /// `CSI M` + three raw bytes.
    X10,
}

/// One classified piece of input with its exact raw bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputEvent {
    pub kind: InputKind,
    pub bytes: Vec<u8>,
}

impl InputEvent {
    /// For a paste, its content without the `ESC[200~` / `ESC[201~` markers; otherwise the raw
    /// bytes.
    pub fn payload(&self) -> &[u8] {
        match self.kind {
            InputKind::Paste { starts, complete } => {
                let mut content = self.bytes.as_slice();
                if starts {
                    content = content.strip_prefix(PASTE_START).unwrap_or(content);
                }
                if complete {
                    content = content.strip_suffix(PASTE_END).unwrap_or(content);
                }
                content
            }
            _ => &self.bytes,
        }
    }

    /// True for a key press (the only kind that changes the tracked input line besides paste).
    pub fn is_typing(&self) -> bool {
        self.kind == InputKind::Typing
    }
}

/// What the scanner holds while waiting for more bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pending {
    /// Nothing: every byte fed so far has been emitted.
    Nothing,
    /// A lone `ESC`, an unfinished escape sequence or UTF-8 character.
    Escape,
    /// An unfinished CSI sequence (`ESC [` and more): most likely a terminal reply that
    /// arrives in pieces, since a key's sequence comes whole.
    Csi,
    /// An unterminated OSC/DCS/APC/PM/SOS string.
    String,
    /// A bracketed paste whose end marker has not arrived.
    Paste,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    /// A UTF-8 lead byte and some continuation bytes; `need` more to come.
    Utf8 {
        need: u8,
    },
    /// `ESC`.
    Escape,
    /// `ESC O`.
    Ss3,
    /// `ESC [` and parameter/intermediate bytes.
    Csi,
    /// `ESC [ M` and up to two of its three raw bytes.
    X10Mouse,
    /// A control string; `esc` is true when the last byte was an `ESC` that may start ST.
    String {
        kind: StringKind,
        esc: bool,
    },
    /// Inside a bracketed paste; `matched` bytes of the end marker are at the end of `buf`,
    /// `starts` is true while `buf` begins with the start marker.
    Paste {
        matched: usize,
        starts: bool,
    },
}

/// Incremental scanner; see the module documentation.
#[derive(Debug, Clone)]
pub struct InputScanner {
    state: State,
    buf: Vec<u8>,
}

impl Default for InputScanner {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether a byte was consumed by the current state or must be scanned again from ground.
enum Step {
    Consumed,
    Again,
}

impl InputScanner {
    pub fn new() -> Self {
        Self {
            state: State::Ground,
            buf: Vec::new(),
        }
    }

    /// Scans `input` and returns the events it completes, in order.
    pub fn feed(&mut self, input: &[u8]) -> Vec<InputEvent> {
        let mut out = Vec::new();
        self.feed_into(input, &mut out);
        out
    }

    /// Like [`InputScanner::feed`] but appends to `out` (lets the caller reuse a vector).
    pub fn feed_into(&mut self, input: &[u8], out: &mut Vec<InputEvent>) {
        let mut i = 0;
        while let Some(&byte) = input.get(i) {
            if let Some(taken) = self.bulk(&input[i..], out) {
                i += taken;
                continue;
            }
            match self.step(byte, out) {
                Step::Consumed => i += 1,
                Step::Again => {}
            }
        }
    }

    /// What is held back waiting for more bytes (tells the caller which idle timeout applies).
    pub fn pending(&self) -> Pending {
        match self.state {
            State::Ground => Pending::Nothing,
            State::Utf8 { .. } | State::Escape | State::Ss3 | State::X10Mouse => Pending::Escape,
            State::Csi => Pending::Csi,
            State::String { .. } => Pending::String,
            State::Paste { .. } => Pending::Paste,
        }
    }

    /// Emits whatever is held after the input went idle: a lone `ESC` or unfinished sequence or
    /// string as typing, an unfinished paste as an incomplete paste (paste mode ends).
    pub fn flush_idle(&mut self) -> Vec<InputEvent> {
        let mut out = Vec::new();
        match self.state {
            State::Ground => {}
            State::Paste { starts, .. } => {
                if !self.buf.is_empty() {
                    self.emit(
                        InputKind::Paste {
                            starts,
                            complete: false,
                        },
                        &mut out,
                    );
                }
            }
            _ => self.emit(InputKind::Typing, &mut out),
        }
        self.state = State::Ground;
        out
    }

    /// Fast path for long runs inside a paste or string: takes a slice of ordinary bytes at
    /// once. Returns how many bytes it took, or `None` when the byte-wise step must run.
    fn bulk(&mut self, input: &[u8], out: &mut Vec<InputEvent>) -> Option<usize> {
        match self.state {
            State::Paste { matched: 0, starts } => {
                let run = input.iter().position(|&b| b == ESC).unwrap_or(input.len());
                let take = run.min(PASTE_CAP.saturating_sub(self.buf.len()));
                if take == 0 {
                    return None;
                }
                self.buf.extend_from_slice(&input[..take]);
                if self.buf.len() >= PASTE_CAP {
                    self.emit_paste_piece(starts, out);
                }
                Some(take)
            }
            State::String { esc: false, .. } => {
                let run = input.iter().position(|&b| b < 0x20).unwrap_or(input.len());
                let take = run.min(STRING_CAP.saturating_sub(self.buf.len()));
                if take == 0 {
                    return None;
                }
                self.buf.extend_from_slice(&input[..take]);
                if self.buf.len() >= STRING_CAP {
                    self.give_up(out);
                }
                Some(take)
            }
            _ => None,
        }
    }

    fn step(&mut self, b: u8, out: &mut Vec<InputEvent>) -> Step {
        match self.state {
            State::Ground => {
                self.ground(b, out);
                Step::Consumed
            }
            State::Utf8 { need } => {
                if (0x80..=0xbf).contains(&b) {
                    self.buf.push(b);
                    if need <= 1 {
                        self.emit(InputKind::Typing, out);
                    } else {
                        self.state = State::Utf8 { need: need - 1 };
                    }
                    Step::Consumed
                } else {
                    self.give_up(out);
                    Step::Again
                }
            }
            State::Escape => self.escape(b, out),
            State::Ss3 => {
                if (0x40..=0x7e).contains(&b) {
                    self.buf.push(b);
                    self.emit(InputKind::Typing, out);
                    Step::Consumed
                } else {
                    self.give_up(out);
                    Step::Again
                }
            }
            State::Csi => self.csi(b, out),
            State::X10Mouse => {
                self.buf.push(b);
                if self.buf.len() >= 6 {
                    self.emit(InputKind::Mouse(MouseEncoding::X10), out);
                }
                Step::Consumed
            }
            State::String { kind, esc } => self.string(kind, esc, b, out),
            State::Paste { matched, starts } => {
                self.paste(matched, starts, b, out);
                Step::Consumed
            }
        }
    }

    fn ground(&mut self, b: u8, out: &mut Vec<InputEvent>) {
        self.buf.clear();
        self.buf.push(b);
        self.state = match b {
            ESC => State::Escape,
            0xc2..=0xdf => State::Utf8 { need: 1 },
            0xe0..=0xef => State::Utf8 { need: 2 },
            0xf0..=0xf4 => State::Utf8 { need: 3 },
            _ => {
                self.emit(InputKind::Typing, out);
                State::Ground
            }
        };
    }

    fn escape(&mut self, b: u8, out: &mut Vec<InputEvent>) -> Step {
        let string = |kind| State::String { kind, esc: false };
        let next = match b {
            b'[' => State::Csi,
            b'O' => State::Ss3,
            b']' => string(StringKind::Osc),
            b'P' => string(StringKind::Dcs),
            b'_' => string(StringKind::Apc),
            b'^' => string(StringKind::Pm),
            b'X' => string(StringKind::Sos),
            ESC => {
                // Escape pressed twice, or Escape followed by a sequence: the first ESC is a key.
                self.emit(InputKind::Typing, out);
                self.buf.push(ESC);
                self.state = State::Escape;
                return Step::Consumed;
            }
            0x80..=0xff => {
                self.give_up(out);
                return Step::Again;
            }
            _ => {
                // Alt + key.
                self.buf.push(b);
                self.emit(InputKind::Typing, out);
                return Step::Consumed;
            }
        };
        self.buf.push(b);
        self.state = next;
        Step::Consumed
    }

    fn csi(&mut self, b: u8, out: &mut Vec<InputEvent>) -> Step {
        match b {
            b'M' if self.buf.len() == 2 => {
                self.buf.push(b);
                self.state = State::X10Mouse;
                Step::Consumed
            }
            0x20..=0x3f => {
                if self.buf.len() >= CSI_CAP {
                    self.give_up(out);
                    return Step::Again;
                }
                self.buf.push(b);
                Step::Consumed
            }
            0x40..=0x7e => {
                self.buf.push(b);
                if self.buf == PASTE_START {
                    self.state = State::Paste {
                        matched: 0,
                        starts: true,
                    };
                } else {
                    let kind = classify_csi(&self.buf);
                    self.emit(kind, out);
                }
                Step::Consumed
            }
            _ => {
                self.give_up(out);
                Step::Again
            }
        }
    }

    fn string(&mut self, kind: StringKind, esc: bool, b: u8, out: &mut Vec<InputEvent>) -> Step {
        if esc {
            if b == b'\\' {
                self.buf.push(b);
                self.emit(
                    InputKind::String {
                        kind,
                        terminator: Terminator::St,
                    },
                    out,
                );
                return Step::Consumed;
            }
            // Not ST: the string was not a reply. Everything before this ESC is typing, and the
            // ESC starts over with the current byte.
            self.buf.pop();
            self.emit(InputKind::Typing, out);
            self.buf.push(ESC);
            self.state = State::Escape;
            return Step::Again;
        }
        match b {
            BEL => {
                self.buf.push(b);
                self.emit(
                    InputKind::String {
                        kind,
                        terminator: Terminator::Bel,
                    },
                    out,
                );
                Step::Consumed
            }
            ESC => {
                self.buf.push(b);
                self.state = State::String { kind, esc: true };
                Step::Consumed
            }
            0x00..=0x1f => {
                self.give_up(out);
                Step::Again
            }
            _ => {
                self.buf.push(b);
                if self.buf.len() >= STRING_CAP {
                    self.give_up(out);
                }
                Step::Consumed
            }
        }
    }

    fn paste(&mut self, matched: usize, starts: bool, b: u8, out: &mut Vec<InputEvent>) {
        self.buf.push(b);
        let matched = if PASTE_END.get(matched) == Some(&b) {
            matched + 1
        } else if b == ESC {
            1
        } else {
            0
        };
        if matched == PASTE_END.len() {
            self.emit(
                InputKind::Paste {
                    starts,
                    complete: true,
                },
                out,
            );
            return;
        }
        self.state = State::Paste { matched, starts };
        if matched == 0 && self.buf.len() >= PASTE_CAP {
            self.emit_paste_piece(starts, out);
        }
    }

    fn emit_paste_piece(&mut self, starts: bool, out: &mut Vec<InputEvent>) {
        out.push(InputEvent {
            kind: InputKind::Paste {
                starts,
                complete: false,
            },
            bytes: std::mem::take(&mut self.buf),
        });
        self.state = State::Paste {
            matched: 0,
            starts: false,
        };
    }

    /// The held bytes are not a sequence after all: emit them as typing and return to ground.
    fn give_up(&mut self, out: &mut Vec<InputEvent>) {
        self.emit(InputKind::Typing, out);
    }

    fn emit(&mut self, kind: InputKind, out: &mut Vec<InputEvent>) {
        self.state = State::Ground;
        if self.buf.is_empty() {
            return;
        }
        out.push(InputEvent {
            kind,
            bytes: std::mem::take(&mut self.buf),
        });
    }
}

/// Classifies a complete CSI sequence (`ESC [` params intermediates final).
fn classify_csi(seq: &[u8]) -> InputKind {
    let Some((&last, body)) = seq.get(2..).and_then(|rest| rest.split_last()) else {
        return InputKind::Typing;
    };
    let numeric = |s: &[u8]| {
        s.iter()
            .all(|&b| b.is_ascii_digit() || b == b';' || b == b':')
    };
    let (prefix, params) = match body.first() {
        Some(&p @ (b'?' | b'>' | b'<' | b'=')) => (Some(p), &body[1..]),
        _ => (None, body),
    };
    match (last, prefix) {
        (b'I', None) if body.is_empty() => InputKind::Focus { gained: true },
        (b'O', None) if body.is_empty() => InputKind::Focus { gained: false },
        (b'M' | b'm', Some(b'<')) if numeric(params) => InputKind::Mouse(MouseEncoding::Sgr),
        (b'R', None | Some(b'?')) if is_position(params) => {
            InputKind::Reply(ReplyKind::CursorPosition)
        }
        (b'c', Some(b'?' | b'>' | b'=')) if numeric(params) => {
            InputKind::Reply(ReplyKind::DeviceAttributes)
        }
        (b'n', Some(b'?')) if numeric(params) => InputKind::Reply(ReplyKind::DeviceStatus),
        (b'n', None) if params == b"0" || params == b"3" => {
            InputKind::Reply(ReplyKind::DeviceStatus)
        }
        (b'y', None | Some(b'?')) => match params.strip_suffix(b"$") {
            Some(modes) if numeric(modes) && !modes.is_empty() => {
                InputKind::Reply(ReplyKind::ModeReport)
            }
            _ => InputKind::Typing,
        },
        (b't', None) if !params.is_empty() && numeric(params) => {
            InputKind::Reply(ReplyKind::WindowReport)
        }
        (b'u', Some(b'?')) if numeric(params) => InputKind::Reply(ReplyKind::KeyboardFlags),
        _ => InputKind::Typing,
    }
}

/// `row;col` or `row;col;page`, all non-empty decimal numbers.
fn is_position(params: &[u8]) -> bool {
    let fields = params.split(|&b| b == b';');
    let mut count = 0;
    for field in fields {
        if field.is_empty() || !field.iter().all(u8::is_ascii_digit) {
            return false;
        }
        count += 1;
    }
    (2..=3).contains(&count)
}
