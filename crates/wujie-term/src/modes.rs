//! The terminal modes an adapter set, followed through its output ([`TerminalModes`]): the
//! alternate screen, cursor visibility, mouse reporting, focus events, bracketed paste,
//! application cursor keys and keypad, the kitty keyboard protocol, xterm's modifyOtherKeys and
//! synchronized output.
//!
//! A job stopped with Ctrl+Z must hand the shell a terminal in its defaults, and get its own
//! modes back when it is continued: [`TerminalModes::leave`] is what returns the terminal to
//! its defaults from the modes set now, [`TerminalModes::restore`] what sets them again.
//!
//! Only escape sequences are looked at (plain text is skipped with one search for ESC), so
//! following every byte an adapter prints costs next to nothing. Strings (OSC, DCS, APC, PM,
//! SOS) are skipped to their end. Any chunking of the same output gives the same modes.
//!
//! Pure: no I/O, and no input can make it panic.

/// How many entries of the kitty keyboard protocol's stack are kept per screen; a push onto a
/// full stack drops the oldest, as the protocol says terminals do.
pub const KITTY_STACK_CAP: usize = 16;

/// The most parameter bytes of a CSI sequence looked at; a longer one is skipped (no mode
/// sequence is anywhere near as long).
const CSI_PARAMS_CAP: usize = 64;

/// Where the parser is in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and intermediate bytes: waiting for the final byte.
    EscapeIntermediate,
    /// In a CSI sequence.
    Csi,
    /// In a string (OSC, DCS, APC, PM, SOS), until BEL or ST.
    String,
    /// ESC inside a string: `\` ends it (ST); anything else ends it and goes on as after ESC.
    StringEscape,
}

/// Which private mode put the terminal on the alternate screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AltScreen {
    /// `?47`: switch only.
    Switch,
    /// `?1047`: cleared when left.
    Clear,
    /// `?1049`: the cursor saved on entry, the screen cleared.
    SaveCursor,
}

impl AltScreen {
    fn mode(self) -> u16 {
        match self {
            AltScreen::Switch => 47,
            AltScreen::Clear => 1047,
            AltScreen::SaveCursor => 1049,
        }
    }
}

/// The mouse tracking modes: one at a time, as terminals keep them.
const MOUSE_TRACKING: [u16; 4] = [9, 1000, 1002, 1003];
/// The mouse encodings, each on or off.
const MOUSE_ENCODINGS: [u16; 4] = [1005, 1006, 1015, 1016];

/// The kitty keyboard protocol on one screen: the flags pushed, oldest first, and the flags
/// set with the stack empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct KittyKeys {
    stack: Vec<u16>,
    base: u16,
}

impl KittyKeys {
    fn push(&mut self, flags: u16) {
        if self.stack.len() == KITTY_STACK_CAP {
            self.stack.remove(0);
        }
        self.stack.push(flags);
    }

    fn pop(&mut self, count: u16) {
        let keep = self.stack.len().saturating_sub(usize::from(count.max(1)));
        self.stack.truncate(keep);
    }

    /// `CSI = flags ; how u`: 1 sets the flags, 2 adds them, 3 takes them away.
    fn set(&mut self, flags: u16, how: u16) {
        let current = self.stack.last_mut().unwrap_or(&mut self.base);
        *current = match how {
            2 => *current | flags,
            3 => *current & !flags,
            _ => flags,
        };
    }

    fn leave(&self, out: &mut Vec<u8>) {
        if !self.stack.is_empty() {
            out.extend_from_slice(format!("\x1b[<{}u", self.stack.len()).as_bytes());
        }
        if self.base != 0 {
            out.extend_from_slice(b"\x1b[=0;1u");
        }
    }

    fn restore(&self, out: &mut Vec<u8>) {
        if self.base != 0 {
            out.extend_from_slice(format!("\x1b[={};1u", self.base).as_bytes());
        }
        for flags in &self.stack {
            out.extend_from_slice(format!("\x1b[>{flags}u").as_bytes());
        }
    }
}

/// The modes the output set, and where the parser is in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalModes {
    parse: Parse,
    /// Parameter and intermediate bytes of the CSI sequence being read.
    csi: Vec<u8>,
    /// The CSI sequence being read is longer than [`CSI_PARAMS_CAP`]: it is skipped.
    csi_overflow: bool,
    alt_screen: Option<AltScreen>,
    cursor_hidden: bool,
    mouse_tracking: Option<u16>,
    /// The mouse encodings on, as in [`MOUSE_ENCODINGS`].
    mouse_encodings: [bool; 4],
    focus_events: bool,
    bracketed_paste: bool,
    app_cursor_keys: bool,
    app_keypad: bool,
    synchronized: bool,
    /// modifyOtherKeys level (0: off).
    modify_other_keys: u16,
    kitty_main: KittyKeys,
    kitty_alt: KittyKeys,
}

impl Default for TerminalModes {
    fn default() -> TerminalModes {
        TerminalModes::new()
    }
}

impl TerminalModes {
    /// A terminal in its defaults.
    pub fn new() -> TerminalModes {
        TerminalModes {
            parse: Parse::Ground,
            csi: Vec::new(),
            csi_overflow: false,
            alt_screen: None,
            cursor_hidden: false,
            mouse_tracking: None,
            mouse_encodings: [false; 4],
            focus_events: false,
            bracketed_paste: false,
            app_cursor_keys: false,
            app_keypad: false,
            synchronized: false,
            modify_other_keys: 0,
            kitty_main: KittyKeys::default(),
            kitty_alt: KittyKeys::default(),
        }
    }

    /// Follows the next chunk of output.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.parse == Parse::Ground {
                let Some(at) = memchr::memchr(0x1b, bytes) else {
                    return;
                };
                self.parse = Parse::Escape;
                bytes = &bytes[at + 1..];
                continue;
            }
            self.step(bytes[0]);
            bytes = &bytes[1..];
        }
    }

    /// Whether the alternate screen is on.
    pub fn alternate_screen(&self) -> bool {
        self.alt_screen.is_some()
    }

    /// Whether the cursor is hidden.
    pub fn cursor_hidden(&self) -> bool {
        self.cursor_hidden
    }

    /// Whether the terminal reports the mouse (any tracking mode).
    pub fn mouse(&self) -> bool {
        self.mouse_tracking.is_some()
    }

    /// Whether every mode is in its default: [`TerminalModes::leave`] is empty then.
    pub fn is_default(&self) -> bool {
        self.leave().is_empty()
    }

    /// The bytes that return the terminal to its defaults from the modes set now (the
    /// alternate screen left last but for what belongs to the main screen, so the shell gets
    /// its screen back as it was).
    pub fn leave(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.synchronized {
            private(&mut out, 2026, false);
        }
        if let Some(alt) = self.alt_screen {
            // The alternate screen's keyboard flags go with it.
            self.kitty_alt.leave(&mut out);
            private(&mut out, alt.mode(), false);
        }
        self.kitty_main.leave(&mut out);
        if self.modify_other_keys != 0 {
            out.extend_from_slice(b"\x1b[>4;0m");
        }
        if let Some(mode) = self.mouse_tracking {
            private(&mut out, mode, false);
        }
        for (on, mode) in self.mouse_encodings.iter().zip(MOUSE_ENCODINGS) {
            if *on {
                private(&mut out, mode, false);
            }
        }
        if self.focus_events {
            private(&mut out, 1004, false);
        }
        if self.bracketed_paste {
            private(&mut out, 2004, false);
        }
        if self.app_cursor_keys {
            private(&mut out, 1, false);
        }
        if self.app_keypad {
            out.extend_from_slice(b"\x1b>");
        }
        if self.cursor_hidden {
            private(&mut out, 25, true);
        }
        out
    }

    /// The bytes that set the modes again on a terminal in its defaults (the alternate screen
    /// entered again, cleared when it was entered so: the adapter is asked to repaint).
    pub fn restore(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.cursor_hidden {
            private(&mut out, 25, false);
        }
        if self.app_keypad {
            out.extend_from_slice(b"\x1b=");
        }
        if self.app_cursor_keys {
            private(&mut out, 1, true);
        }
        if self.bracketed_paste {
            private(&mut out, 2004, true);
        }
        if self.focus_events {
            private(&mut out, 1004, true);
        }
        for (on, mode) in self.mouse_encodings.iter().zip(MOUSE_ENCODINGS) {
            if *on {
                private(&mut out, mode, true);
            }
        }
        if let Some(mode) = self.mouse_tracking {
            private(&mut out, mode, true);
        }
        if self.modify_other_keys != 0 {
            out.extend_from_slice(format!("\x1b[>4;{}m", self.modify_other_keys).as_bytes());
        }
        self.kitty_main.restore(&mut out);
        if let Some(alt) = self.alt_screen {
            private(&mut out, alt.mode(), true);
            self.kitty_alt.restore(&mut out);
        }
        if self.synchronized {
            private(&mut out, 2026, true);
        }
        out
    }

    fn step(&mut self, byte: u8) {
        // CAN and SUB cancel any sequence; ESC starts a new one (and ends a string).
        match (self.parse, byte) {
            (Parse::Ground, 0x1b) => self.parse = Parse::Escape,
            (Parse::Ground, _) => {}
            (_, 0x18 | 0x1a) => self.parse = Parse::Ground,
            (Parse::String, 0x07) => self.parse = Parse::Ground,
            (Parse::String, 0x1b) => self.parse = Parse::StringEscape,
            (Parse::String, _) => {}
            (Parse::StringEscape, b'\\') => self.parse = Parse::Ground,
            (_, 0x1b) => self.parse = Parse::Escape,
            // Other controls, DEL and bytes past ASCII inside a sequence are not part of it.
            (_, 0x00..=0x1f | 0x7f..=0xff) => {}
            (Parse::Escape | Parse::StringEscape, _) => self.escape(byte),
            (Parse::EscapeIntermediate, 0x20..=0x2f) => {}
            (Parse::EscapeIntermediate, _) => self.parse = Parse::Ground,
            (Parse::Csi, _) => self.csi_byte(byte),
        }
    }

    fn escape(&mut self, byte: u8) {
        self.parse = Parse::Ground;
        match byte {
            b'[' => {
                self.parse = Parse::Csi;
                self.csi.clear();
                self.csi_overflow = false;
            }
            b']' | b'P' | b'_' | b'^' | b'X' => self.parse = Parse::String,
            0x20..=0x2f => self.parse = Parse::EscapeIntermediate,
            b'=' => self.app_keypad = true,
            b'>' => self.app_keypad = false,
            b'c' => *self = TerminalModes::new(),
            _ => {}
        }
    }

    /// A printable byte of a CSI sequence.
    fn csi_byte(&mut self, byte: u8) {
        if byte >= 0x40 {
            self.parse = Parse::Ground;
            if !self.csi_overflow {
                let body = std::mem::take(&mut self.csi);
                self.csi_dispatch(&body, byte);
                self.csi = body;
            }
        } else if self.csi.len() < CSI_PARAMS_CAP {
            self.csi.push(byte);
        } else {
            self.csi_overflow = true;
        }
    }

    fn csi_dispatch(&mut self, body: &[u8], action: u8) {
        let (prefix, rest) = match body.first() {
            Some(p @ (b'?' | b'>' | b'<' | b'=')) => (Some(*p), &body[1..]),
            _ => (None, body),
        };
        // Intermediate bytes (0x20–0x2f) come after the parameters.
        let split = rest
            .iter()
            .position(|b| (0x20..=0x2f).contains(b))
            .unwrap_or(rest.len());
        let (params, intermediates) = rest.split_at(split);
        let params = Params(params);
        match (prefix, intermediates, action) {
            (Some(b'?'), [], b'h') => params.each(|mode| self.private_mode(mode, true)),
            (Some(b'?'), [], b'l') => params.each(|mode| self.private_mode(mode, false)),
            // DECSTR, a soft reset.
            (None, [b'!'], b'p') => {
                self.cursor_hidden = false;
                self.app_cursor_keys = false;
                self.app_keypad = false;
            }
            (Some(b'>'), [], b'u') => {
                let flags = params.get(0).unwrap_or(0);
                self.kitty_mut().push(flags);
            }
            (Some(b'<'), [], b'u') => {
                let count = params.get(0).unwrap_or(1);
                self.kitty_mut().pop(count);
            }
            (Some(b'='), [], b'u') => {
                let flags = params.get(0).unwrap_or(0);
                let how = params.get(1).unwrap_or(1);
                self.kitty_mut().set(flags, how);
            }
            // xterm's key modifier options: resource 4 is modifyOtherKeys.
            (Some(b'>'), [], b'm') if params.get(0) == Some(4) => {
                self.modify_other_keys = params.get(1).unwrap_or(0);
            }
            (Some(b'>'), [], b'n') if params.get(0) == Some(4) => self.modify_other_keys = 0,
            _ => {}
        }
    }

    fn kitty_mut(&mut self) -> &mut KittyKeys {
        if self.alt_screen.is_some() {
            &mut self.kitty_alt
        } else {
            &mut self.kitty_main
        }
    }

    fn private_mode(&mut self, mode: u16, on: bool) {
        match mode {
            1 => self.app_cursor_keys = on,
            25 => self.cursor_hidden = !on,
            47 | 1047 | 1049 => {
                let alt = match mode {
                    47 => AltScreen::Switch,
                    1047 => AltScreen::Clear,
                    _ => AltScreen::SaveCursor,
                };
                self.alt_screen = on.then_some(alt);
            }
            m if MOUSE_TRACKING.contains(&m) => {
                // Setting one tracking mode replaces another; resetting any turns tracking off.
                self.mouse_tracking = on.then_some(m);
            }
            m => {
                if let Some(i) = MOUSE_ENCODINGS.iter().position(|&e| e == m) {
                    self.mouse_encodings[i] = on;
                }
                match m {
                    1004 => self.focus_events = on,
                    2004 => self.bracketed_paste = on,
                    2026 => self.synchronized = on,
                    _ => {}
                }
            }
        }
    }
}

/// Appends `CSI ? mode h` (`on`) or `CSI ? mode l`.
fn private(out: &mut Vec<u8>, mode: u16, on: bool) {
    let action = if on { 'h' } else { 'l' };
    out.extend_from_slice(format!("\x1b[?{mode}{action}").as_bytes());
}

/// The `;`-separated parameters of a CSI sequence (a `:` sub-parameter goes with its
/// parameter and is not looked at).
struct Params<'a>(&'a [u8]);

impl Params<'_> {
    /// The `i`th parameter, `None` when it is empty or missing.
    fn get(&self, i: usize) -> Option<u16> {
        self.0.split(|&b| b == b';').nth(i).and_then(number)
    }

    fn each(&self, mut f: impl FnMut(u16)) {
        for param in self.0.split(|&b| b == b';') {
            if let Some(n) = number(param) {
                f(n);
            }
        }
    }
}

/// The decimal number a parameter starts with (up to a `:`), saturating; `None` when empty.
fn number(param: &[u8]) -> Option<u16> {
    let digits = param.split(|&b| b == b':').next().unwrap_or_default();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0u16, |n, d| {
        n.saturating_mul(10).saturating_add(u16::from(d - b'0'))
    }))
}
