//! Keys the menu and the issue card understand, decoded from one typing event's bytes.

/// A decoded key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    Left,
    Right,
    /// Page Up and Page Down (`ESC [ 5 ~`, `ESC [ 6 ~`): the card scrolls its body.
    PageUp,
    PageDown,
    Tab,
    BackTab,
    Enter,
    Esc,
    Backspace,
    CtrlC,
    /// Ctrl+U: clear the line (for the menu: its filter).
    CtrlU,
    Char(char),
    /// Any other key; the menu ignores it.
    Other,
}

impl Key {
    /// Decodes the bytes of one [`crate::InputKind::Typing`] event. Arrows are accepted in CSI
    /// (`ESC [ A`, also with modifiers `ESC [ 1 ; 5 A`) and SS3 (`ESC O A`) form.
    pub fn decode(bytes: &[u8]) -> Key {
        match bytes {
            [0x1b] => Key::Esc,
            [b'\r'] | [b'\n'] => Key::Enter,
            [b'\t'] => Key::Tab,
            [0x7f] | [0x08] => Key::Backspace,
            [0x03] => Key::CtrlC,
            [0x15] => Key::CtrlU,
            [0x1b, b'[', b'Z'] => Key::BackTab,
            [0x1b, b'O', last] => arrow(*last),
            [0x1b, b'[', b'5', b'~'] => Key::PageUp,
            [0x1b, b'[', b'6', b'~'] => Key::PageDown,
            [0x1b, b'[', params @ .., last]
                if params.iter().all(|b| b.is_ascii_digit() || *b == b';') =>
            {
                arrow(*last)
            }
            _ => match std::str::from_utf8(bytes) {
                Ok(s) => {
                    let mut chars = s.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) if !c.is_control() => Key::Char(c),
                        _ => Key::Other,
                    }
                }
                Err(_) => Key::Other,
            },
        }
    }
}

fn arrow(last: u8) -> Key {
    match last {
        b'A' => Key::Up,
        b'B' => Key::Down,
        b'C' => Key::Right,
        b'D' => Key::Left,
        _ => Key::Other,
    }
}

/// Bytes that erase `chars` characters before the cursor of the adapter's input line: one DEL
/// (0x7F, what the Backspace key sends) per character.
pub fn erase_chars(chars: usize) -> Vec<u8> {
    vec![0x7f; chars]
}
