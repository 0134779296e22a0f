//! The insertion area below the adapter's input line, drawn with plain escape sequences.
//!
//! Never uses the alternate screen. Opening:
//! 1. If fewer rows are free below the adapter's content than the area wants, the content moves
//!    up by the missing number of rows first, and the cursor with it, so it stays on the
//!    adapter's input line. When the host can draw the rows right above the input line again
//!    ([`Placement::restorable_rows`], from its shadow screen; usually the adapter's own), the
//!    oldest of them (the top of that block) are deleted (DL `CSI n M`, which never feeds the
//!    terminal's scrollback and leaves the rows above them, a shell's output say, where they
//!    are), so the rows right above the input line, what the adapter printed last, stay in
//!    view; closing inserts them back and draws them: the screen and the scrollback end up
//!    exactly as they were ([`Overlay::shifted`]). The area then takes what it wants, or at
//!    least `least` rows
//!    ([`Overlay::open_with`]). Otherwise (too few rows the host saw above the input line) the
//!    whole screen scrolls up (`LF` on the bottom row, for at most
//!    [`SCROLL_FOR_ROWS`] rows), the top lines go to the terminal's scrollback and come back
//!    blank on close ([`Overlay::scrolled`]). Beyond that the area takes the rows that are free,
//!    and its content is made for the height it got.
//! 2. Save the cursor (DECSC `ESC 7`, which also saves the adapter's colours and character
//!    sets), then draw in plain text (`PLAIN_TEXT`): an adapter may have left DEC line
//!    drawing in effect, which would turn the area's letters into box pieces.
//! 3. Move to the row below the margin rows that belong to the adapter: what it drew under its
//!    cursor's row (its input box's lower border, a footer of hints), as the host's shadow
//!    screen shows it ([`Placement::with_margin`]), at least [`MARGIN_ROWS`] and at most
//!    [`MARGIN_MOST_ROWS`]; they are never drawn on or deleted.
//! 4. Insert the area's lines there (IL `CSI n L`), pushing the rows below down, and draw.
//! 5. Restore the cursor (DECRC `ESC 8`), so the terminal cursor stays where the adapter left it.
//!
//! Closing goes back to the same anchor row, deletes the inserted lines (DL `CSI n M`) so the
//! pushed rows return, moves the content back down by as much as opening moved it up (IL on the
//! top row and the rows drawn again, or SD `CSI n T`), and restores the cursor again. Every
//! adapter row is then where it was, which matters to TUIs that draw their viewport at absolute
//! positions (Codex); after scrolling, only the top rows, which went to the terminal's
//! scrollback, come back blank. IL discards the rows it pushes off the bottom, so the content
//! moves far enough that those rows are blank: the host says in [`Placement::used_rows`] how
//! far down the adapter has drawn. When even moving cannot make
//! room (the cursor reached the top row), the area gets fewer lines; only a screen that is full
//! below the margin loses its last row to the single line the area needs.
//!
//! An adapter's scroll region (DECSTBM, as TUIs use to insert history above a fixed viewport or
//! keep a status row) is set aside while the area is open: the area resets it to the whole
//! screen right after saving the cursor, so moves, LF scrolling and IL/DL act on the whole
//! screen (and, with the full screen as region, origin mode addresses rows absolutely), and
//! closing sets it again before restoring the cursor ([`Placement::scroll_region`]).
//!
//! Coordinates are 0-based, as `vt100::Screen::cursor_position` returns them. DECSC has a
//! single slot, which the area borrows; when the adapter had saved a cursor itself, closing
//! saves that one again from the shadow screen's record (position, origin mode and attributes)
//! and returns to the adapter's cursor ([`Placement::adapter_saved`]).

use crate::screen::{Attributes, SavedCursor};
use crate::text;

/// Rows below the cursor's row that belong to the adapter (its input box border, hints) when
/// it drew nothing there yet, or when no more is known.
pub const MARGIN_ROWS: u16 = 2;

/// At most this many rows below the cursor's row count as the adapter's: an input box's lower
/// border and a footer (Codex, Gemini CLI and opencode draw up to four). Text further down is
/// not part of the input area; the area pushes it down.
pub const MARGIN_MOST_ROWS: u16 = 8;

/// The area scrolls the adapter's content up to get at most this many rows; beyond that it
/// takes the rows that are free. (Each row scrolled comes back blank at the top on close.)
pub const SCROLL_FOR_ROWS: u16 = 6;

/// Attributes off, G0 designated ASCII (`ESC ( B`) and shifted in (SI): what the area's text
/// is drawn with, whatever the adapter left set. DECRC gives the adapter back its own.
const PLAIN_TEXT: &[u8] = b"\x1b[0m\x1b(B\x0f";

/// Terminal size in cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSize {
    pub cols: u16,
    pub rows: u16,
}

/// A cursor position, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CursorPos {
    pub row: u16,
    pub col: u16,
}

/// Where the adapter's cursor and content are when the overlay opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub size: TermSize,
    /// The adapter's cursor (its input line), from the host's shadow screen.
    pub cursor: CursorPos,
    /// Rows below the cursor's row that belong to the adapter ([`Placement::with_margin`]).
    pub margin: u16,
    /// How many rows from the top hold adapter content: 1 + the index of the last non-blank
    /// row of the shadow screen. Rows below the margin up to here are kept on screen (the
    /// screen scrolls further instead of letting IL push them off the bottom).
    pub used_rows: u16,
    /// The adapter's scroll region (top and bottom row, inclusive) when it is not the whole
    /// screen; set aside while the area is open.
    pub scroll_region: Option<(u16, u16)>,
    /// A cursor the adapter saved itself (DECSC), put back into DECSC's slot on close.
    pub adapter_saved: Option<SavedCursor>,
    /// The adapter's drawing attributes and origin mode now, to come back to after that.
    pub attributes: Attributes,
    pub origin_mode: bool,
    /// What draws the rows right above the cursor's row again, one entry per row, the row just
    /// above the cursor last, as far up as the host knows them
    /// ([`crate::ScreenModel::restorable_rows`]): the area may take these rows off the screen,
    /// since closing puts them back exactly.
    pub restorable_rows: Vec<Vec<u8>>,
}

impl Placement {
    /// A placement where nothing is drawn below the cursor's two margin rows (the usual inline
    /// TUI layout: the input box and its hints are the last thing on screen).
    pub fn new(size: TermSize, cursor: CursorPos) -> Self {
        Self {
            size,
            cursor,
            margin: MARGIN_ROWS,
            used_rows: 0,
            scroll_region: None,
            adapter_saved: None,
            attributes: Attributes::default(),
            origin_mode: false,
            restorable_rows: Vec::new(),
        }
    }

    /// The same placement with the drawing of the rows above the cursor (`rows`, top first).
    pub fn with_restorable_rows(self, rows: Vec<Vec<u8>>) -> Self {
        Self {
            restorable_rows: rows,
            ..self
        }
    }

    /// The same placement for an adapter that drew `rows` rows under its cursor's row (its
    /// input box's lower border, a footer; what
    /// [`crate::ScreenModel::rows_drawn_below_cursor`] counts): the area goes under them.
    /// Fewer than [`MARGIN_ROWS`] count as that many; more than [`MARGIN_MOST_ROWS`], or more
    /// than leave a row for the area, as the most there is room for.
    pub fn with_margin(self, rows: u16) -> Self {
        Self {
            margin: rows,
            ..self
        }
    }

    /// The same placement, keeping `used_rows` rows of adapter content.
    pub fn with_used_rows(self, used_rows: u16) -> Self {
        Self { used_rows, ..self }
    }

    /// The same placement for an adapter that set the scroll region `region` (top and bottom
    /// row, 0-based, inclusive; `None` for the whole screen).
    pub fn with_scroll_region(self, region: Option<(u16, u16)>) -> Self {
        Self {
            scroll_region: region,
            ..self
        }
    }

    /// The same placement for an adapter that saved a cursor itself (`saved`), draws with
    /// `attributes` and has origin mode `origin_mode` (all from the shadow screen).
    pub fn with_cursor_state(
        self,
        saved: Option<SavedCursor>,
        attributes: Attributes,
        origin_mode: bool,
    ) -> Self {
        Self {
            adapter_saved: saved,
            attributes,
            origin_mode,
            ..self
        }
    }
}

/// How one overlay line looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineStyle {
    Plain,
    /// Bold (titles).
    Title,
    /// Dim (descriptions, hints).
    Dim,
    /// Reverse video (the selected entry).
    Selected,
}

/// One line of overlay content. The text is sanitised and cut to the terminal width when drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlayLine {
    pub text: String,
    pub style: LineStyle,
}

impl OverlayLine {
    pub fn new(text: impl Into<String>, style: LineStyle) -> Self {
        Self {
            text: text.into(),
            style,
        }
    }
}

/// Why no overlay could be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverlayError {
    #[error(
        "the terminal is {cols}x{rows}; the menu needs at least 1 column and {min_rows} rows \
         (the input line, two margin rows and one line); enlarge the terminal and try again"
    )]
    TooSmall { cols: u16, rows: u16, min_rows: u16 },
}

/// An open insertion area. Dropping it without [`Overlay::close`] leaves the lines on screen.
#[derive(Debug, Clone)]
#[must_use = "an overlay stays on screen until `close` is called"]
pub struct Overlay {
    size: TermSize,
    /// First inserted row.
    top: u16,
    /// Inserted rows.
    height: u16,
    /// Most rows the area may grow to without scrolling again.
    max_height: u16,
    scrolled: u16,
    /// Rows deleted on open, the row the first of them was on, and what draws them again.
    shifted: u16,
    shifted_at: u16,
    restore: Vec<u8>,
    /// Rows below the adapter's cursor row that are the adapter's (the area is under them).
    margin: u16,
    /// The adapter's scroll region, set again on close.
    scroll_region: Option<(u16, u16)>,
    /// Where the adapter's cursor is (once closed), and what DECSC's slot held before.
    cursor: CursorPos,
    adapter_saved: Option<SavedCursor>,
    attributes: Attributes,
    origin_mode: bool,
    drawn: Vec<OverlayLine>,
}

impl Overlay {
    /// Most lines an area can ever have on a terminal of this size (when the cursor is at the
    /// top): the rows minus the cursor's row and the two margin rows.
    pub fn capacity(size: TermSize) -> u16 {
        if size.cols == 0 {
            return 0;
        }
        size.rows.saturating_sub(1 + MARGIN_ROWS)
    }

    /// Opens an area for `lines` (at least one line, at most [`Overlay::capacity`]; lines that
    /// do not fit are not drawn) and appends the bytes to write to the real terminal to `out`.
    pub fn open(
        place: Placement,
        lines: &[OverlayLine],
        out: &mut Vec<u8>,
    ) -> Result<Overlay, OverlayError> {
        let wanted = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        Self::open_with(place, wanted, wanted, |_| lines.to_vec(), out)
    }

    /// Opens an area that would like `wanted` rows and makes do with `least` when only that
    /// many can be had without losing a row (see the module's documentation); `lines` gives
    /// the content for the height it gets (a card keeps its choices when it is shorter than it
    /// wanted).
    pub fn open_with(
        place: Placement,
        wanted: u16,
        least: u16,
        lines: impl FnOnce(u16) -> Vec<OverlayLine>,
        out: &mut Vec<u8>,
    ) -> Result<Overlay, OverlayError> {
        let Placement {
            size,
            cursor,
            margin,
            used_rows,
            scroll_region,
            adapter_saved,
            attributes,
            origin_mode,
            restorable_rows,
        } = place;
        let capacity = Self::capacity(size);
        if capacity == 0 {
            return Err(OverlayError::TooSmall {
                cols: size.cols,
                rows: size.rows,
                min_rows: MARGIN_ROWS + 2,
            });
        }
        // The adapter's cursor, where it is again once the area closed.
        let cursor = CursorPos {
            row: cursor.row.min(size.rows - 1),
            col: cursor.col,
        };
        let wanted = clamp_lines(usize::from(wanted), capacity);
        // At least one row is left for the area, whatever the margin.
        let margin = margin
            .clamp(MARGIN_ROWS, MARGIN_MOST_ROWS)
            .min(size.rows - 2);
        let room = Room::plan(
            size,
            cursor.row,
            margin,
            used_rows,
            &restorable_rows,
            wanted,
            least,
        );
        if scroll_region.is_some() {
            set_aside_scroll_region(out);
        }
        room.scroll_up(size, out);
        room.shift_out(out);
        let (top, height, max_height) = room.area_rows(size, wanted);
        insert_area_rows(top, height, out);
        let mut overlay = Overlay {
            size,
            top,
            height,
            max_height,
            scrolled: room.scrolled,
            shifted: room.shifted,
            shifted_at: room.shifted_at,
            restore: room.restore,
            margin,
            scroll_region,
            cursor,
            adapter_saved,
            attributes,
            origin_mode,
            drawn: Vec::new(),
        };
        overlay.draw(&lines(height), out);
        out.extend_from_slice(b"\x1b8");
        Ok(overlay)
    }

    /// Redraws with new content. Only changed lines are rewritten; lines are inserted or deleted
    /// at the end of the area only when the number of lines changed.
    pub fn redraw(&mut self, lines: &[OverlayLine], out: &mut Vec<u8>) {
        let height = clamp_lines(lines.len(), self.max_height);
        if height == self.height && padded(lines, height) == self.drawn {
            return;
        }
        // The adapter's attributes and character sets came back with the last DECRC.
        out.extend_from_slice(PLAIN_TEXT);
        if height > self.height {
            csi(out, &[self.top + self.height + 1, 1], b'H');
            csi(out, &[height - self.height], b'L');
        } else if height < self.height {
            csi(out, &[self.top + height + 1, 1], b'H');
            csi(out, &[self.height - height], b'M');
        }
        self.height = height;
        self.draw(lines, out);
        out.extend_from_slice(b"\x1b8");
    }

    /// Removes the area: deletes the inserted lines, scrolls the adapter's content back down if
    /// opening scrolled it up, and restores the adapter's cursor.
    pub fn close(self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\x1b[0m");
        csi(out, &[self.top + 1, 1], b'H');
        csi(out, &[self.height], b'M');
        if self.scrolled > 0 {
            // SD: everything goes back to the rows it had, so an adapter that draws at absolute
            // positions finds its content where it left it. The top rows come back blank: what
            // they showed is in the terminal's scrollback.
            csi(out, &[self.scrolled], b'T');
        }
        self.put_back_shifted_rows(self.shifted_at, true, out);
        if let Some((top, bottom)) = self.scroll_region {
            csi(
                out,
                &[top.saturating_add(1), bottom.saturating_add(1)],
                b'r',
            );
        }
        out.extend_from_slice(b"\x1b8");
        let moved = self.scrolled + self.shifted;
        if moved > 0 {
            csi(out, &[moved], b'B');
        }
        self.give_back_saved_cursor(out);
    }

    /// The rows opening deleted come back: blank rows are inserted at row `at` (IL, pushing
    /// off the bottom only rows the area had freed) and, with `draw` (`at` is then where the
    /// deleted rows began), drawn as they were, in plain text (whatever character set the adapter left in
    /// effect).
    fn put_back_shifted_rows(&self, at: u16, draw: bool, out: &mut Vec<u8>) {
        if self.shifted == 0 {
            return;
        }
        csi(out, &[at.saturating_add(1), 1], b'H');
        csi(out, &[self.shifted], b'L');
        if draw {
            out.extend_from_slice(PLAIN_TEXT);
            out.extend_from_slice(&self.restore);
        }
    }

    /// Removes the area after the terminal changed size to `size`, which may have rewrapped
    /// rows that no longer fit (the area's and the adapter's) and moved everything: `cursor` is
    /// where the terminal reported the adapter's cursor since. Everything under the adapter's
    /// margin rows is erased (rows the area was wrapped into included; the adapter redraws
    /// for the new size anyway), the content is scrolled back down if opening scrolled it up,
    /// and the cursor goes back to the adapter's position with its attributes and character
    /// set (DECRC, then a move).
    pub fn close_after_rewrap(self, cursor: CursorPos, size: TermSize, out: &mut Vec<u8>) {
        let rows = size.rows.max(1);
        let cursor = CursorPos {
            row: cursor.row.min(rows - 1),
            col: cursor.col.min(size.cols.max(1) - 1),
        };
        out.extend_from_slice(b"\x1b[0m");
        let below_margin = cursor.row.saturating_add(1).saturating_add(self.margin);
        if below_margin < rows {
            csi(out, &[below_margin + 1, 1], b'H');
            out.extend_from_slice(b"\x1b[J");
        }
        if self.scrolled > 0 {
            csi(out, &[self.scrolled], b'T');
        }
        // The deleted rows are drawn again where they were only when the rewrap moved nothing
        // and they are no wider than the screen; else blank rows go back right above the
        // cursor's row, which brings it back to its own (the adapter redraws for the new size
        // anyway).
        let unmoved = cursor.row.saturating_add(self.shifted) == self.cursor.row;
        if unmoved && size.cols >= self.size.cols {
            self.put_back_shifted_rows(self.shifted_at, true, out);
        } else {
            self.put_back_shifted_rows(cursor.row, false, out);
        }
        out.extend_from_slice(b"\x1b8");
        let moved = self.scrolled + self.shifted;
        let row = cursor.row.saturating_add(moved).min(rows - 1);
        csi(out, &[row + 1, cursor.col + 1], b'H');
    }

    /// DECSC has one slot, which opening borrowed. When the adapter had saved a cursor itself,
    /// save that one again (position, origin mode and attributes, from the shadow screen), then
    /// return to the adapter's cursor, origin mode and attributes. With origin mode on, moves
    /// count from the top of the adapter's scroll region (restored just before). Skipped while
    /// a wrap is pending at the right margin (a move would cancel it), and for a position saved
    /// in origin mode that the region no longer holds (no move can reach it): the adapter's
    /// slot then holds its cursor as it was when the area opened.
    fn give_back_saved_cursor(&self, out: &mut Vec<u8>) {
        let Some(saved) = self.adapter_saved else {
            return;
        };
        let cols = self.size.cols;
        let (region_top, region_bottom) = self.scroll_region.unwrap_or((0, self.size.rows - 1));
        let row_for = |row: u16, origin_mode: bool| {
            if origin_mode {
                (region_top..=region_bottom)
                    .contains(&row)
                    .then(|| (row - region_top).min(self.size.rows - 1))
            } else {
                Some(row.min(self.size.rows - 1))
            }
        };
        let (Some(saved_row), Some(row)) = (
            row_for(saved.pos.row, saved.origin_mode),
            row_for(self.cursor.row, self.origin_mode),
        ) else {
            return;
        };
        if self.cursor.col >= cols {
            return;
        }
        // DECOM homes the cursor when set or reset; the moves below come after it.
        let set_origin_mode = |on: bool, out: &mut Vec<u8>| {
            out.extend_from_slice(if on { b"\x1b[?6h" } else { b"\x1b[?6l" });
        };
        if saved.origin_mode != self.origin_mode {
            set_origin_mode(saved.origin_mode, out);
        }
        csi(out, &[saved_row + 1, saved.pos.col.min(cols - 1) + 1], b'H');
        out.extend_from_slice(&saved.attributes.sequence());
        out.extend_from_slice(b"\x1b7");
        if saved.origin_mode != self.origin_mode {
            set_origin_mode(self.origin_mode, out);
        }
        csi(out, &[row + 1, self.cursor.col + 1], b'H');
        out.extend_from_slice(&self.attributes.sequence());
    }

    /// Lines the adapter's content is scrolled up by while the area is open (0 when it fitted
    /// or was [`Overlay::shifted`]); closing scrolls it back, the top rows blank.
    pub fn scrolled(&self) -> u16 {
        self.scrolled
    }

    /// Rows deleted while the area is open (the oldest the host can draw again), which closing
    /// inserts and draws again exactly (0 when it fitted or [`Overlay::scrolled`]).
    pub fn shifted(&self) -> u16 {
        self.shifted
    }

    /// Rows currently inserted.
    pub fn height(&self) -> u16 {
        self.height
    }

    /// Most rows the content may have now (without scrolling the adapter again).
    pub fn max_height(&self) -> u16 {
        self.max_height
    }

    /// First inserted row (0-based).
    pub fn top(&self) -> u16 {
        self.top
    }

    /// Terminal size the overlay was opened for (on resize: close, then open again).
    pub fn size(&self) -> TermSize {
        self.size
    }

    fn draw(&mut self, lines: &[OverlayLine], out: &mut Vec<u8>) {
        let shown = padded(lines, self.height);
        for (i, line) in shown.iter().enumerate() {
            if self.drawn.get(i) == Some(line) {
                continue;
            }
            let row = self
                .top
                .saturating_add(u16::try_from(i).unwrap_or(u16::MAX));
            csi(out, &[row + 1, 1], b'H');
            out.extend_from_slice(b"\x1b[2K");
            render_line(line, self.size.cols, out);
        }
        self.drawn = shown;
    }
}

/// How opening makes room for the area under the adapter's rows: the oldest rows the host can
/// draw again leave the screen (`shifted`), or the whole screen scrolls up (`scrolled`), or,
/// with rows free below, neither (see the module's documentation).
struct Room {
    /// The adapter's cursor row before anything moved, and the rows under it that are its.
    row: u16,
    margin: u16,
    /// The row under the adapter's rows: under its margin, or under what it drew further down.
    bottom: u32,
    /// Rows deleted, the row the first of them was on, and what draws them again.
    shifted: u16,
    shifted_at: u16,
    restore: Vec<u8>,
    /// Rows the whole screen scrolls up by.
    scrolled: u16,
}

impl Room {
    /// Decides how the content moves up for an area that would like `wanted` rows and makes do
    /// with `least`, the adapter's cursor on `row` with `margin` rows of its own under it, its
    /// content down to `used_rows`, and `restorable_rows` above the cursor drawn again on
    /// close.
    fn plan(
        size: TermSize,
        row: u16,
        margin: u16,
        used_rows: u16,
        restorable_rows: &[Vec<u8>],
        wanted: u16,
        least: u16,
    ) -> Room {
        // The adapter's rows: up to its margin, or further down when it drew more below.
        let bottom =
            (u32::from(row) + 1 + u32::from(margin)).max(u32::from(used_rows.min(size.rows)));
        // How many rows the content must move up for an area of `height` rows under it; this
        // counts a margin that runs off the bottom of the screen.
        let lacking = |height: u16| {
            let lacking = (bottom + u32::from(height)).saturating_sub(u32::from(size.rows));
            u16::try_from(lacking).unwrap_or(u16::MAX)
        };
        // Rows above the cursor that can leave the screen and come back exactly.
        let restorable = u16::try_from(restorable_rows.len())
            .unwrap_or(u16::MAX)
            .min(row);
        let exact = restorable >= lacking(wanted.min(least.max(1)));
        let (shifted, scrolled) = if exact {
            (lacking(wanted).min(restorable), 0)
        } else {
            // Scroll so the inserted lines push only blank rows off the bottom (as far as the
            // cursor can move up), but only for up to SCROLL_FOR_ROWS rows: every row scrolled
            // is a row that shows blank after closing.
            (0, lacking(wanted.min(SCROLL_FOR_ROWS)).min(row))
        };
        // The oldest of those rows leave: the ones right above the input line, what the
        // adapter printed last (the plan a card asks about), stay in view.
        let oldest = restorable_rows.len() - usize::from(restorable);
        let restore = restorable_rows
            .iter()
            .skip(oldest)
            .take(usize::from(shifted))
            .flatten()
            .copied()
            .collect();
        Room {
            row,
            margin,
            bottom,
            shifted,
            shifted_at: row - restorable,
            restore,
            scrolled,
        }
    }

    /// Scrolls the whole screen up (line feeds on the bottom row; the top rows go to the
    /// terminal's scrollback) and moves the cursor up with the content.
    fn scroll_up(&self, size: TermSize, out: &mut Vec<u8>) {
        if self.scrolled == 0 {
            return;
        }
        out.extend_from_slice(b"\x1b7\x1b[0m");
        csi(out, &[size.rows, 1], b'H');
        out.extend(std::iter::repeat_n(b'\n', usize::from(self.scrolled)));
        out.extend_from_slice(b"\x1b8");
        csi(out, &[self.scrolled], b'A');
    }

    /// Deletes the rows that leave (DL, which never feeds the scrollback and leaves the rows
    /// above them where they are) and moves the cursor up with the rows under them.
    fn shift_out(&self, out: &mut Vec<u8>) {
        if self.shifted == 0 {
            return;
        }
        out.extend_from_slice(b"\x1b7\x1b[0m");
        csi(out, &[self.shifted_at + 1, 1], b'H');
        csi(out, &[self.shifted], b'M');
        out.extend_from_slice(b"\x1b8");
        csi(out, &[self.shifted], b'A');
    }

    /// Where the area goes once the content moved: its first row (under the margin), its
    /// height, and the most rows it may grow to without moving the content again. When moving
    /// could not free enough rows (the cursor reached the top row), the area shrinks rather
    /// than push adapter rows off; only a screen full below the margin loses its last row to
    /// the one line needed.
    fn area_rows(&self, size: TermSize, wanted: u16) -> (u16, u16, u16) {
        let moved = self.scrolled + self.shifted;
        let top = self.row - moved + 1 + self.margin;
        // Blank rows left at the bottom.
        let bottom = u16::try_from(self.bottom)
            .unwrap_or(u16::MAX)
            .saturating_sub(moved);
        let free = size.rows.saturating_sub(bottom);
        let height = wanted.min(size.rows - top).min(free.max(1));
        (top, height, free.max(height))
    }
}

/// Sets the adapter's scroll region aside: the whole screen is the region while the area is
/// open (DECSTBM homes the cursor; DECRC brings it back).
fn set_aside_scroll_region(out: &mut Vec<u8>) {
    out.extend_from_slice(b"\x1b7\x1b[r\x1b8");
}

/// Saves the adapter's cursor (DECSC), switches to plain text and inserts `height` blank rows
/// at `top` (IL), pushing the rows below down; the area's lines are drawn on them next.
fn insert_area_rows(top: u16, height: u16, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\x1b7");
    out.extend_from_slice(PLAIN_TEXT);
    csi(out, &[top + 1, 1], b'H');
    csi(out, &[height], b'L');
}

/// Appends `line` cut to `cols` columns in its style, attributes reset after it.
pub(crate) fn render_line(line: &OverlayLine, cols: u16, out: &mut Vec<u8>) {
    let cols = usize::from(cols);
    let visible = text::fit(&line.text, cols);
    let sgr: &[u8] = match line.style {
        LineStyle::Plain => b"",
        LineStyle::Title => b"\x1b[1m",
        LineStyle::Dim => b"\x1b[2m",
        // Not padded to the edge: a terminal that gets narrower rewraps a full-width row into
        // two, moving every row under it. The row was erased before the line is drawn.
        LineStyle::Selected => b"\x1b[7m",
    };
    out.extend_from_slice(sgr);
    out.extend_from_slice(visible.as_bytes());
    if !sgr.is_empty() {
        out.extend_from_slice(b"\x1b[0m");
    }
}

/// Exactly `height` lines: `lines` cut or padded with blank lines.
fn padded(lines: &[OverlayLine], height: u16) -> Vec<OverlayLine> {
    let height = usize::from(height);
    let mut shown: Vec<OverlayLine> = lines.iter().take(height).cloned().collect();
    shown.resize(height, OverlayLine::new("", LineStyle::Plain));
    shown
}

/// At least one line (an empty area still needs a row to exist), at most `max`.
fn clamp_lines(len: usize, max: u16) -> u16 {
    u16::try_from(len).unwrap_or(u16::MAX).clamp(1, max.max(1))
}

/// Appends `CSI p1;p2… final`.
pub(crate) fn csi(out: &mut Vec<u8>, params: &[u16], final_byte: u8) {
    out.extend_from_slice(b"\x1b[");
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            out.push(b';');
        }
        out.extend_from_slice(p.to_string().as_bytes());
    }
    out.push(final_byte);
}
