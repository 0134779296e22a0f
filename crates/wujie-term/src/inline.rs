//! An area drawn where the output ends, for the issue card when no terminal host relays the
//! adapter (a provider on pipes, whose output goes straight to the terminal and is quiet
//! while it waits for the decision).
//!
//! Opening starts a fresh line and prints the lines; the cursor stays at the end of the last
//! one. Redrawing and closing go back to the area's first row relative to the cursor (CR, then
//! CUU), so nothing needs to know where on the screen the area is, and erase to the end of the
//! screen (ED). Lines are cut to the width, so none of them wraps and the row count is exact.

use crate::overlay::{OverlayLine, TermSize, csi, render_line};

/// The area on screen.
#[derive(Debug, Clone)]
#[must_use = "the area stays on screen until `close` is called"]
pub struct InlineArea {
    cols: u16,
    /// Most rows: the terminal's minus one, so the first row never scrolls away while drawn.
    max_rows: u16,
    /// Rows drawn now (at least one).
    rows: u16,
}

impl InlineArea {
    /// Most rows an area can have on a terminal of `size`.
    pub fn max_rows_for(size: TermSize) -> u16 {
        size.rows.saturating_sub(1).max(1)
    }

    /// Starts a fresh line and draws `lines` (at most [`InlineArea::max_rows_for`] of them).
    pub fn open(size: TermSize, lines: &[OverlayLine], out: &mut Vec<u8>) -> InlineArea {
        let mut area = InlineArea {
            cols: size.cols.max(1),
            max_rows: Self::max_rows_for(size),
            rows: 1,
        };
        out.extend_from_slice(b"\x1b[0m\r\n");
        area.draw(lines, out);
        area
    }

    /// Most rows the content may have.
    pub fn max_rows(&self) -> u16 {
        self.max_rows
    }

    /// Replaces the content.
    pub fn redraw(&mut self, lines: &[OverlayLine], out: &mut Vec<u8>) {
        self.back_to_top(out);
        self.draw(lines, out);
    }

    /// Erases the area; the cursor ends at the start of its first row.
    pub fn close(self, out: &mut Vec<u8>) {
        self.back_to_top(out);
    }

    fn back_to_top(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\x1b[0m\r");
        if self.rows > 1 {
            csi(out, &[self.rows - 1], b'A');
        }
        out.extend_from_slice(b"\x1b[J");
    }

    fn draw(&mut self, lines: &[OverlayLine], out: &mut Vec<u8>) {
        let shown = &lines[..lines.len().min(usize::from(self.max_rows))];
        for (i, line) in shown.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b"\r\n");
            }
            render_line(line, self.cols, out);
        }
        self.rows = u16::try_from(shown.len()).unwrap_or(1).max(1);
    }
}
