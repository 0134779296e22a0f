//! Display-width aware text helpers: sanitising, truncating and wrapping for the overlay.

use unicode_width::UnicodeWidthChar;

/// Display width of one character after sanitising (controls count as one space).
fn char_width(c: char) -> usize {
    if c.is_control() {
        1
    } else {
        c.width().unwrap_or(0)
    }
}

/// Replaces control characters (which could inject escape sequences or move the cursor) by
/// spaces.
fn sanitize(c: char) -> char {
    if c.is_control() { ' ' } else { c }
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
