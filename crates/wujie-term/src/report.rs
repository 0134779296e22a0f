//! The cursor position report (CPR) the host asks the user's terminal for before the adapter
//! starts: the shadow screen must begin where the terminal's cursor really is, since `wujie`
//! is usually started from a shell that already printed something above its prompt.

use crate::overlay::{CursorPos, TermSize};

/// DSR 6: "where is the cursor?"; the terminal answers `CSI row ; col R` (1-based).
pub const CURSOR_POSITION_QUERY: &[u8] = b"\x1b[6n";

/// The position in a cursor position report `ESC [ row ; col R` (1-based, as sent), 0-based
/// and clamped to `size`; `None` for anything else (also DECXCPR `ESC [ ? row ; col ; page R`,
/// which the host never asks for).
pub fn cursor_report(bytes: &[u8], size: TermSize) -> Option<CursorPos> {
    let params = bytes.strip_prefix(b"\x1b[")?.strip_suffix(b"R")?;
    let mut fields = params.split(|&b| b == b';');
    let mut number = || -> Option<u16> {
        let field = fields.next()?;
        if field.is_empty() || field.len() > 5 || !field.iter().all(u8::is_ascii_digit) {
            return None;
        }
        // At most five digits: always fits in a u32.
        let value = field
            .iter()
            .fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
        Some(u16::try_from(value).unwrap_or(u16::MAX))
    };
    let (row, col) = (number()?, number()?);
    if fields.next().is_some() {
        return None;
    }
    // Some terminals answer 0 for "first"; a report beyond the size is clamped to it.
    let zero_based = |n: u16, len: u16| n.saturating_sub(1).min(len.saturating_sub(1));
    Some(CursorPos {
        row: zero_based(row, size.rows),
        col: zero_based(col, size.cols),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: TermSize = TermSize { cols: 80, rows: 24 };

    #[test]
    fn reads_a_report_as_a_zero_based_position() {
        assert_eq!(
            cursor_report(b"\x1b[12;5R", SIZE),
            Some(CursorPos { row: 11, col: 4 })
        );
        assert_eq!(
            cursor_report(b"\x1b[1;1R", SIZE),
            Some(CursorPos { row: 0, col: 0 })
        );
    }

    #[test]
    fn clamps_to_the_screen() {
        assert_eq!(
            cursor_report(b"\x1b[99999;0R", SIZE),
            Some(CursorPos { row: 23, col: 0 })
        );
    }

    #[test]
    fn refuses_anything_else() {
        for bytes in [
            &b"\x1b[12R"[..],
            b"\x1b[?12;5;1R",
            b"\x1b[12;5;1R",
            b"\x1b[;5R",
            b"\x1b[1x;5R",
            b"\x1b[123456;5R",
            b"\x1b[12;5",
            b"12;5R",
            b"",
        ] {
            assert_eq!(cursor_report(bytes, SIZE), None, "{bytes:?}");
        }
    }
}
