//! Text helpers: making stored text safe to print ([`terminal_safe`]), and display-width aware
//! truncating and wrapping for the overlay.

use std::borrow::Cow;
use std::fmt::Write as _;

use unicode_width::UnicodeWidthChar;

/// Where a stored string is printed, which decides what of its layout it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Within one line (a title, a table cell): line breaks and tabs become spaces.
    Inline,
    /// As a block of lines of its own (a description): line breaks and tabs are kept, and a
    /// `\r\n` line end becomes `\n`.
    Block,
}

/// `text` as it may be written to a user's terminal. Text stored by anyone (issue titles,
/// comments, what an agent printed) must not drive the terminal: every control character that
/// is not layout — C0 controls, DEL, C1 controls (some terminals take U+009B as CSI) — and the
/// bidirectional overrides that make text display in another order than it reads are written
/// as visible escapes (`\x1b`, `\u{9b}`, `\u{202e}`). An escape sequence thereby loses its
/// introducer and is shown as plain characters. Text without such characters is returned as
/// it is. Machine output (JSON) keeps the exact string and does not use this.
pub fn terminal_safe(text: &str, layout: Layout) -> Cow<'_, str> {
    if !text.chars().any(needs_care) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, layout) {
            // The `\n` that follows is handled on its own.
            ('\r', _) if chars.peek() == Some(&'\n') => {}
            ('\n' | '\t', Layout::Block) => out.push(c),
            ('\n' | '\t', Layout::Inline) => out.push(' '),
            (c, _) if needs_care(c) => escape(c, &mut out),
            (c, _) => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn needs_care(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// Embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), the characters behind
/// "Trojan Source": they reorder how the rest of the line is displayed.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(c: char, out: &mut String) {
    let code = u32::from(c);
    // Writing to a String cannot fail.
    let _ = if code <= 0x7f {
        write!(out, "\\x{code:02x}")
    } else {
        write!(out, "\\u{{{code:x}}}")
    };
}

/// Display width of one character after sanitising (what [`sanitize`] blanks counts as one
/// space).
fn char_width(c: char) -> usize {
    if needs_care(c) {
        1
    } else {
        c.width().unwrap_or(0)
    }
}

/// Blanks what [`terminal_safe`] escapes (controls, which could inject escape sequences or move
/// the cursor, and bidirectional overrides): the overlay lays text out by width, and a space
/// keeps one column where an escape would take several.
fn sanitize(c: char) -> char {
    if needs_care(c) { ' ' } else { c }
}

/// Display width of `s` in terminal columns, as [`fit`] counts it.
pub fn width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// `s` sanitised and cut to at most `max` columns. A character that would cross the limit
/// (e.g. a CJK character in the last column) is left out. When something was cut and there is
/// room, the last visible column shows `…`.
pub fn fit(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.chars().map(sanitize).collect();
    }
    let mut out = String::new();
    let budget = max.saturating_sub(1);
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(sanitize(c));
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// Wraps `s` to lines of at most `max` columns: paragraphs split on newlines, words kept whole
/// when they fit, longer words (and CJK runs) broken at the column limit.
pub fn wrap(s: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut lines = Vec::new();
    for paragraph in s.lines() {
        let mut line = String::new();
        let mut used = 0;
        for word in paragraph.split_whitespace() {
            let w = width(word);
            let gap = usize::from(used > 0);
            if used + gap + w <= max {
                if gap == 1 {
                    line.push(' ');
                }
                line.push_str(&word.chars().map(sanitize).collect::<String>());
                used += gap + w;
                continue;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                used = 0;
            }
            for c in word.chars() {
                let cw = char_width(c);
                if used + cw > max && used > 0 {
                    lines.push(std::mem::take(&mut line));
                    used = 0;
                }
                if cw <= max {
                    line.push(sanitize(c));
                    used += cw;
                }
            }
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_are_shown_not_executed() {
        let title = "x\x1b]0;pwned\x07\x1b[2J";
        assert_eq!(
            terminal_safe(title, Layout::Inline),
            "x\\x1b]0;pwned\\x07\\x1b[2J"
        );
        assert_eq!(terminal_safe("a\u{9b}31m", Layout::Block), "a\\u{9b}31m");
        assert_eq!(
            terminal_safe("abc\u{202e}fed", Layout::Inline),
            "abc\\u{202e}fed"
        );
        assert_eq!(terminal_safe("del\x7f", Layout::Inline), "del\\x7f");
    }

    #[test]
    fn layout_decides_about_line_breaks_and_tabs() {
        let text = "one\r\ntwo\tcols\nthree\rover";
        assert_eq!(
            terminal_safe(text, Layout::Block),
            "one\ntwo\tcols\nthree\\x0dover"
        );
        assert_eq!(
            terminal_safe(text, Layout::Inline),
            "one two cols three\\x0dover"
        );
    }

    #[test]
    fn the_overlay_blanks_what_printing_escapes() {
        assert_eq!(fit("a\x1b[2J\u{202e}b", 10), "a [2J b");
        assert_eq!(wrap("x\u{9b}y", 10), ["x y"]);
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "Fix the 登录 page — «now» ✓";
        assert!(matches!(
            terminal_safe(text, Layout::Inline),
            Cow::Borrowed(t) if t == text
        ));
    }
}
