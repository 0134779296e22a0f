//! A light model of the screen an adapter draws: where its cursor is, which rows hold text, what
//! they hold, and whether anything was drawn. That is what the overlay needs: where to open, and
//! how to draw again the rows it had to move off the screen. Tracking only that is several times
//! cheaper than a full terminal emulator, which would otherwise cap how fast output is relayed.
//!
//! The cursor follows vt100's rules (the emulator the tests check screens with), including
//! pending wrap at the right margin, scroll regions, origin mode, the saved cursor, the alternate
//! screen and resizing; a property test holds the two together. Autowrap (DECAWM) is followed
//! too, which vt100 leaves out: with it off, text reaching the right margin stays on the row's
//! last column (the host turns it off to show output drawn for a wider terminal). Cells
//! remember their character, its drawing attributes (an index into the attribute sets seen so
//! far), whether they hold ink (a non-whitespace character) and whether they are half of a wide
//! character. Erased cells are blank with default attributes. A row is *seen* when the model
//! knows every cell of it: rows that were on the terminal before the model started, rows a
//! taller window brings back from the scrollback, and rows with combining marks (not kept) are
//! not, so they are never redrawn ([`ScreenModel::restorable_rows`]). Not modelled: a
//! variation selector that widens the character before it, and character sets (DEC line
//! drawing is kept as the ASCII it was sent as).
//!
//! Pure: no I/O, and no input can make it panic.

use unicode_width::UnicodeWidthChar;

use crate::overlay::{CursorPos, TermSize};
use crate::sgr::Sgr;

/// Drawing attributes (colours, bold, underline, …) as the model tracked them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attributes(Sgr);

impl Attributes {
    /// The SGR sequence that sets exactly these attributes.
    pub fn sequence(&self) -> Vec<u8> {
        self.0.sequence()
    }
}

/// What DECSC saved: where the cursor was, origin mode and the drawing attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedCursor {
    pub pos: CursorPos,
    pub origin_mode: bool,
    pub attributes: Attributes,
}

const INK: u8 = 1;
const WIDE: u8 = 2;
const WIDE_CONT: u8 = 4;

/// The attribute set of erased cells (no colours, no styles).
const DEFAULT_ATTR: u16 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cell {
    ch: char,
    /// Index into [`Palette`].
    attr: u16,
    flags: u8,
}

impl Default for Cell {
    fn default() -> Cell {
        Cell::flagged(0)
    }
}

impl Cell {
    /// A blank cell with default attributes and these flags.
    const fn flagged(flags: u8) -> Cell {
        Cell {
            ch: ' ',
            attr: DEFAULT_ATTR,
            flags,
        }
    }

    fn is_wide(self) -> bool {
        self.flags & WIDE != 0
    }
    fn is_wide_cont(self) -> bool {
        self.flags & WIDE_CONT != 0
    }
}

/// The attribute sets cells were drawn with, each stored once; a cell keeps its set's index.
#[derive(Debug, Clone)]
struct Palette {
    sets: Vec<Sgr>,
    index: std::collections::HashMap<Sgr, u16>,
}

impl Palette {
    fn new() -> Palette {
        Palette {
            sets: vec![Sgr::default()],
            index: std::collections::HashMap::from([(Sgr::default(), DEFAULT_ATTR)]),
        }
    }

    /// The index of `sgr`, added when new. Past `u16::MAX` sets (a session that drew that many
    /// distinct colours), new ones are redrawn with default attributes.
    fn index_of(&mut self, sgr: Sgr) -> u16 {
        if let Some(&i) = self.index.get(&sgr) {
            return i;
        }
        let Ok(i) = u16::try_from(self.sets.len()) else {
            return DEFAULT_ATTR;
        };
        self.sets.push(sgr);
        self.index.insert(sgr, i);
        i
    }

    fn get(&self, index: u16) -> Sgr {
        self.sets
            .get(usize::from(index))
            .copied()
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Pos {
    row: u16,
    col: u16,
}

#[derive(Debug, Clone)]
struct Row {
    cells: Vec<Cell>,
    /// False while no cell can hold half of a wide character (nothing wide was written since
    /// the row was cleared), so plain text needs no look at its neighbours.
    wide: bool,
    /// The model knows every cell of the row (see the module's documentation).
    seen: bool,
}

impl Row {
    fn new(cols: u16) -> Row {
        Row {
            cells: vec![Cell::default(); usize::from(cols)],
            wide: false,
            seen: true,
        }
    }

    /// A row that shows what the model never saw.
    fn unseen(cols: u16) -> Row {
        Row {
            seen: false,
            ..Row::new(cols)
        }
    }

    fn reset(&mut self) {
        self.cells.fill(Cell::default());
        self.wide = false;
        self.seen = true;
    }

    fn has_ink(&self) -> bool {
        self.cells.iter().any(|c| c.flags & INK != 0)
    }

    /// Appends what draws this row again as row `index` (0-based): its characters with their
    /// attributes, from the first column, over an erased row.
    fn repaint(&self, index: u16, palette: &Palette, out: &mut Vec<u8>) {
        crate::overlay::csi(out, &[index.saturating_add(1), 1], b'H');
        out.extend_from_slice(b"\x1b[0m\x1b[2K");
        let end = self
            .cells
            .iter()
            .rposition(|c| *c != Cell::default())
            .map_or(0, |i| i + 1);
        let mut attr = DEFAULT_ATTR;
        let mut utf8 = [0u8; 4];
        for cell in &self.cells[..end] {
            if cell.is_wide_cont() {
                continue;
            }
            if cell.attr != attr {
                out.extend_from_slice(&palette.get(cell.attr).sequence());
                attr = cell.attr;
            }
            out.extend_from_slice(cell.ch.encode_utf8(&mut utf8).as_bytes());
        }
        if attr != DEFAULT_ATTR {
            out.extend_from_slice(b"\x1b[0m");
        }
    }

    /// Clears the other half of a wide character at `col`.
    fn clear_wide(&mut self, col: usize) {
        let cell = self.cells[col];
        if cell.is_wide() {
            match self.cells.get_mut(col + 1) {
                Some(next) => *next = Cell::default(),
                None => self.cells[col] = Cell::default(),
            }
        } else if cell.is_wide_cont() && col > 0 {
            self.cells[col - 1] = Cell::default();
        }
    }

    fn erase(&mut self, col: usize) {
        self.clear_wide(col);
        self.cells[col] = Cell::default();
    }

    fn insert(&mut self, at: usize, count: usize) {
        let count = count.min(self.cells.len() - at);
        if count == 0 {
            return;
        }
        let was_cont = self.cells[at].is_wide_cont();
        if was_cont {
            self.cells[at].flags &= !WIDE_CONT;
        }
        let slice = &mut self.cells[at..];
        slice.rotate_right(count);
        slice[..count].fill(Cell::default());
        if was_cont {
            self.cells[at].flags |= WIDE_CONT;
            self.wide = true;
        }
        self.truncated();
    }

    fn remove(&mut self, start: usize, end: usize) {
        if start >= end {
            return;
        }
        self.clear_wide(start);
        if end - 1 != start {
            self.clear_wide(end - 1);
        }
        let count = end - start;
        let slice = &mut self.cells[start..];
        slice[..count].fill(Cell::default());
        slice.rotate_left(count);
    }

    fn resize(&mut self, cols: u16) {
        let cols = usize::from(cols);
        if cols < self.cells.len() {
            self.cells.truncate(cols);
            self.truncated();
        } else {
            self.cells.resize(cols, Cell::default());
        }
    }

    /// A wide character cut off at the end of the row is cleared.
    fn truncated(&mut self) {
        if let Some(last) = self.cells.last_mut()
            && last.is_wide()
        {
            *last = Cell::default();
        }
    }
}

#[derive(Debug, Clone)]
struct Grid {
    rows_n: u16,
    cols: u16,
    pos: Pos,
    saved_pos: Pos,
    rows: Vec<Row>,
    scroll_top: u16,
    scroll_bottom: u16,
    origin_mode: bool,
    saved_origin_mode: bool,
    saved_sgr: Sgr,
    /// The adapter saved a cursor (DECSC) on this screen.
    saved: bool,
    /// For the primary screen: how many rows scrolled off its top, which a taller window brings
    /// back (as blank rows, since no scrollback is kept). `None` on the alternate screen.
    scrolled_off: Option<usize>,
}

impl Grid {
    fn new(size: TermSize, primary: bool) -> Grid {
        Grid {
            rows_n: size.rows,
            cols: size.cols,
            pos: Pos::default(),
            saved_pos: Pos::default(),
            rows: Vec::new(),
            scroll_top: 0,
            scroll_bottom: size.rows - 1,
            origin_mode: false,
            saved_origin_mode: false,
            saved_sgr: Sgr::default(),
            saved: false,
            scrolled_off: primary.then_some(0),
        }
    }

    fn allocate_rows(&mut self) {
        if self.rows.is_empty() {
            self.rows = (0..self.rows_n).map(|_| Row::new(self.cols)).collect();
        }
    }

    fn clear(&mut self) {
        self.pos = Pos::default();
        self.saved_pos = Pos::default();
        self.rows.iter_mut().for_each(Row::reset);
        self.scroll_top = 0;
        self.scroll_bottom = self.rows_n - 1;
        self.origin_mode = false;
        self.saved_origin_mode = false;
        self.saved_sgr = Sgr::default();
        self.saved = false;
    }

    fn set_size(&mut self, size: TermSize) {
        if size.rows == self.rows_n && size.cols == self.cols {
            return;
        }
        self.scroll_top = 0;
        self.scroll_bottom = self.rows_n - 1;
        let diff = self.rows_n.abs_diff(size.rows);
        let was_empty = self.rows.is_empty();
        let pos_diff = if was_empty {
            0
        } else if size.rows < self.rows_n {
            let below = self.rows_n - self.pos.row - 1;
            let pushed = diff.saturating_sub(below);
            self.scroll_up(pushed);
            self.rows.truncate(usize::from(size.rows));
            pushed
        } else if let Some(off) = &mut self.scrolled_off {
            let pulled = u16::try_from(*off).unwrap_or(u16::MAX).min(diff);
            *off -= usize::from(pulled);
            let cols = self.cols;
            self.rows
                .splice(0..0, (0..pulled).map(|_| Row::unseen(cols)));
            self.rows
                .resize_with(usize::from(size.rows), || Row::new(cols));
            pulled
        } else {
            let cols = self.cols;
            self.rows
                .resize_with(usize::from(size.rows), || Row::new(cols));
            0
        };
        for row in &mut self.rows {
            row.resize(size.cols);
        }
        if size.rows < self.rows_n {
            self.pos.row = self.pos.row.saturating_sub(pos_diff);
            self.saved_pos.row = self
                .saved_pos
                .row
                .saturating_sub(pos_diff)
                .min(size.rows - 1);
        } else {
            self.pos.row += pos_diff;
            self.saved_pos.row += pos_diff;
        }
        self.pos.col = self.pos.col.min(size.cols - 1);
        self.saved_pos.col = self.saved_pos.col.min(size.cols - 1);
        self.scroll_bottom = size.rows - 1;
        self.rows_n = size.rows;
        self.cols = size.cols;
    }

    fn row_mut(&mut self) -> &mut Row {
        let row = usize::from(self.pos.row);
        &mut self.rows[row]
    }

    fn set_pos(&mut self, mut pos: Pos) {
        if self.origin_mode {
            pos.row = pos.row.saturating_add(self.scroll_top);
        }
        self.pos = pos;
        self.row_clamp_top(self.origin_mode);
        self.row_clamp_bottom(self.origin_mode);
        self.col_clamp();
    }

    fn erase_all(&mut self) {
        self.rows.iter_mut().for_each(Row::reset);
    }

    fn erase_all_forward(&mut self) {
        let from = usize::from(self.pos.row) + 1;
        self.rows.iter_mut().skip(from).for_each(Row::reset);
        self.erase_row_forward();
    }

    fn erase_all_backward(&mut self) {
        let to = usize::from(self.pos.row);
        self.rows.iter_mut().take(to).for_each(Row::reset);
        self.erase_row_backward();
    }

    fn erase_row_forward(&mut self) {
        let (from, cols) = (usize::from(self.pos.col), usize::from(self.cols));
        let row = self.row_mut();
        if from == 0 {
            row.reset();
            return;
        }
        for col in from..cols {
            row.erase(col);
        }
    }

    fn erase_row_backward(&mut self) {
        let to = usize::from(self.pos.col.min(self.cols - 1));
        let row = self.row_mut();
        for col in 0..=to {
            row.erase(col);
        }
    }

    fn erase_cells(&mut self, count: u16) {
        let from = self.pos.col;
        let to = usize::from(from.saturating_add(count).min(self.cols));
        let row = self.row_mut();
        for col in usize::from(from)..to {
            row.erase(col);
        }
    }

    fn insert_cells(&mut self, count: u16) {
        let at = usize::from(self.pos.col);
        let row = self.row_mut();
        if at < row.cells.len() {
            row.insert(at, usize::from(count));
        }
    }

    fn delete_cells(&mut self, count: u16) {
        let start = self.pos.col;
        let end = start.saturating_add(count).min(self.cols);
        self.row_mut()
            .remove(usize::from(start), usize::from(end.max(start)));
    }

    fn insert_lines(&mut self, count: u16) {
        if count == 0 || !(self.scroll_top..=self.scroll_bottom).contains(&self.pos.row) {
            return;
        }
        let between = &mut self.rows[usize::from(self.pos.row)..=usize::from(self.scroll_bottom)];
        let n = usize::from(count).min(between.len());
        between.rotate_right(n);
        between[..n].iter_mut().for_each(Row::reset);
    }

    fn delete_lines(&mut self, count: u16) {
        if !(self.scroll_top..=self.scroll_bottom).contains(&self.pos.row) {
            return;
        }
        let between = &mut self.rows[usize::from(self.pos.row)..=usize::from(self.scroll_bottom)];
        let n = usize::from(count).min(between.len());
        between[..n].iter_mut().for_each(Row::reset);
        between.rotate_left(n);
    }

    fn scroll_up(&mut self, count: u16) {
        let top = self.scroll_top == 0;
        let between =
            &mut self.rows[usize::from(self.scroll_top)..=usize::from(self.scroll_bottom)];
        let n = usize::from(count).min(between.len());
        if top && let Some(off) = &mut self.scrolled_off {
            *off = off.saturating_add(n);
        }
        between[..n].iter_mut().for_each(Row::reset);
        between.rotate_left(n);
    }

    fn scroll_down(&mut self, count: u16) {
        if count == 0 {
            return;
        }
        let between =
            &mut self.rows[usize::from(self.scroll_top)..=usize::from(self.scroll_bottom)];
        let n = usize::from(count).min(between.len());
        between.rotate_right(n);
        between[..n].iter_mut().for_each(Row::reset);
    }

    fn set_scroll_region(&mut self, top: u16, bottom: u16) {
        let bottom = bottom.min(self.rows_n - 1);
        if top < bottom {
            self.scroll_top = top;
            self.scroll_bottom = bottom;
        } else {
            self.scroll_top = 0;
            self.scroll_bottom = self.rows_n - 1;
        }
        self.pos = Pos {
            row: self.scroll_top,
            col: 0,
        };
    }

    fn in_scroll_region(&self) -> bool {
        (self.scroll_top..=self.scroll_bottom).contains(&self.pos.row)
    }

    fn set_origin_mode(&mut self, on: bool) {
        self.origin_mode = on;
        self.set_pos(Pos::default());
    }

    fn row_inc_clamp(&mut self, count: u16) {
        let region = self.in_scroll_region();
        self.pos.row = self.pos.row.saturating_add(count);
        self.row_clamp_bottom(region);
    }

    fn row_inc_scroll(&mut self, count: u16) -> u16 {
        let region = self.in_scroll_region();
        self.pos.row = self.pos.row.saturating_add(count);
        let lines = self.row_clamp_bottom(region);
        if region {
            self.scroll_up(lines);
            lines
        } else {
            0
        }
    }

    fn row_dec_clamp(&mut self, count: u16) {
        let region = self.in_scroll_region();
        self.pos.row = self.pos.row.saturating_sub(count);
        self.row_clamp_top(region);
    }

    fn row_dec_scroll(&mut self, count: u16) {
        let region = self.in_scroll_region();
        let extra = count.saturating_sub(self.pos.row);
        self.pos.row = self.pos.row.saturating_sub(count);
        let lines = self.row_clamp_top(region);
        self.scroll_down(lines.saturating_add(extra));
    }

    fn row_set(&mut self, row: u16) {
        self.pos.row = row.min(self.rows_n - 1);
    }

    fn col_set(&mut self, col: u16) {
        self.pos.col = col;
        self.col_clamp();
    }

    fn col_tab(&mut self) {
        self.pos.col -= self.pos.col % 8;
        self.pos.col = self.pos.col.saturating_add(8);
        self.col_clamp();
    }

    /// Moves to the next row first when a character of `width` does not fit on this one.
    fn col_wrap(&mut self, width: u16) {
        if self.pos.col > self.cols - width {
            self.pos.col = 0;
            self.row_inc_scroll(1);
        }
    }

    /// With autowrap off: a character of `width` that does not fit goes on the row's last
    /// columns instead.
    fn col_keep(&mut self, width: u16) {
        self.pos.col = self.pos.col.min(self.cols - width);
    }

    fn row_clamp_top(&mut self, to_region: bool) -> u16 {
        if to_region && self.pos.row < self.scroll_top {
            let rows = self.scroll_top - self.pos.row;
            self.pos.row = self.scroll_top;
            rows
        } else {
            0
        }
    }

    fn row_clamp_bottom(&mut self, to_region: bool) -> u16 {
        let bottom = if to_region {
            self.scroll_bottom
        } else {
            self.rows_n - 1
        };
        if self.pos.row > bottom {
            let rows = self.pos.row - bottom;
            self.pos.row = bottom;
            rows
        } else {
            0
        }
    }

    fn col_clamp(&mut self) {
        self.pos.col = self.pos.col.min(self.cols - 1);
    }
}

/// The model. Feed it every byte the adapter's screen receives; ask it where the cursor is and
/// how many rows are used.
pub struct ScreenModel {
    parser: vte::Parser,
    state: State,
    /// The start of a UTF-8 character whose other bytes have not arrived yet.
    partial: Vec<u8>,
    /// vte is known to be in its ground state (outside any escape sequence), where printable
    /// ASCII, CR and LF are drawn without it.
    ground: bool,
}

#[derive(Clone)]
struct State {
    primary: Grid,
    alternate: Grid,
    alternate_active: bool,
    /// The drawing attributes in effect, and their index in `palette`.
    sgr: Sgr,
    attr: u16,
    palette: Palette,
    last_char: Option<char>,
    /// Autowrap (DECAWM): text reaching the right margin goes on at the next row; off, it
    /// stays on the row's last column.
    autowrap: bool,
    drawn: u64,
    /// Queries to the terminal seen so far (each answered by a reply on the user's input).
    queries: u64,
    /// An escape sequence was just completed, which leaves vte in its ground state.
    sequence_done: bool,
}

impl ScreenModel {
    pub fn new(size: TermSize) -> ScreenModel {
        ScreenModel {
            parser: vte::Parser::new(),
            state: State::new(sane(size)),
            partial: Vec::new(),
            ground: true,
        }
    }

    /// The model of a terminal that already shows something: its cursor is at `cursor` (as the
    /// terminal reported it) and everything above it, and on its row before it, counts as used
    /// (a shell's output and prompt, whose exact cells do not matter to the overlay).
    pub fn starting_at(size: TermSize, cursor: CursorPos) -> ScreenModel {
        let mut model = ScreenModel::new(size);
        let grid = &mut model.state.primary;
        let pos = Pos {
            row: cursor.row.min(grid.rows_n - 1),
            col: cursor.col.min(grid.cols - 1),
        };
        for row in &mut grid.rows[..usize::from(pos.row)] {
            row.cells[0] = Cell::flagged(INK);
            row.seen = false;
        }
        let cursor_row = &mut grid.rows[usize::from(pos.row)];
        cursor_row.cells[..usize::from(pos.col)].fill(Cell::flagged(INK));
        cursor_row.seen = pos.col == 0;
        grid.pos = pos;
        model
    }

    /// Any chunking of the same bytes gives the same model.
    pub fn feed(&mut self, bytes: &[u8]) {
        // vte 0.15 drops the byte that follows a UTF-8 character split across two calls, so a
        // character is never split: an unfinished one waits for the next chunk.
        let joined;
        let input = if self.partial.is_empty() {
            bytes
        } else {
            joined = [std::mem::take(&mut self.partial).as_slice(), bytes].concat();
            &joined
        };
        let (mut ready, rest) = input.split_at(input.len() - unfinished_utf8(input));
        while !ready.is_empty() {
            if self.ground {
                // The bulk of most output: plain text lines, drawn a row segment at a time.
                let plain = plain_prefix(ready);
                self.state.plain(&ready[..plain]);
                ready = &ready[plain..];
                // Other text (UTF-8, controls) up to the next escape: vte stays in its ground
                // state through it, unless it ends inside a character.
                let other = ready
                    .iter()
                    .position(|&b| b == 0x1b || is_plain(b))
                    .unwrap_or(ready.len());
                if other > 0 && unfinished_utf8(&ready[..other]) == 0 {
                    self.parser.advance(&mut self.state, &ready[..other]);
                    ready = &ready[other..];
                    continue;
                }
                if ready.is_empty() {
                    break;
                }
            }
            // An escape sequence (or broken UTF-8) goes through vte until it completes one.
            self.state.sequence_done = false;
            let used = self.parser.advance_until_terminated(&mut self.state, ready);
            ready = &ready[used..];
            self.ground = self.state.sequence_done;
        }
        self.partial.extend_from_slice(rest);
    }

    /// The cursor; its column equals the width while a wrap is pending at the right margin.
    pub fn cursor(&self) -> CursorPos {
        let pos = self.state.grid().pos;
        CursorPos {
            row: pos.row,
            col: pos.col,
        }
    }

    /// Rows from the top down to the last one holding ink.
    pub fn used_rows(&self) -> u16 {
        let rows = &self.state.grid().rows;
        let used = rows.iter().rposition(Row::has_ink).map_or(0, |i| i + 1);
        u16::try_from(used).unwrap_or(u16::MAX)
    }

    /// How many rows under the cursor's row belong to what the adapter drew around its input
    /// line (the input box's lower border, a footer, hints): down to the last of the `most`
    /// rows under it that holds ink; 0 when they are blank.
    pub fn rows_drawn_below_cursor(&self, most: u16) -> u16 {
        let grid = self.state.grid();
        let below = grid
            .rows
            .iter()
            .skip(usize::from(grid.pos.row) + 1)
            .take(usize::from(most));
        let drawn = below
            .enumerate()
            .rfind(|(_, row)| row.has_ink())
            .map_or(0, |(i, _)| i + 1);
        u16::try_from(drawn).unwrap_or(u16::MAX)
    }

    /// The drawing attributes in effect.
    pub fn attributes(&self) -> Attributes {
        Attributes(self.state.sgr)
    }

    /// Whether autowrap (DECAWM) is on, as it is unless the output turned it off.
    pub fn autowrap(&self) -> bool {
        self.state.autowrap
    }

    /// The size the model is for.
    pub fn size(&self) -> TermSize {
        TermSize {
            rows: self.state.primary.rows_n,
            cols: self.state.primary.cols,
        }
    }

    /// Whether origin mode (DECOM) is on.
    pub fn origin_mode(&self) -> bool {
        self.state.grid().origin_mode
    }

    /// The cursor the adapter saved itself (DECSC) on the screen in use, if it saved one.
    pub fn saved_cursor(&self) -> Option<SavedCursor> {
        let grid = self.state.grid();
        grid.saved.then_some(SavedCursor {
            pos: CursorPos {
                row: grid.saved_pos.row,
                col: grid.saved_pos.col,
            },
            origin_mode: grid.saved_origin_mode,
            attributes: Attributes(grid.saved_sgr),
        })
    }

    /// What draws the rows right above the cursor's row again, one entry per row, top row
    /// first and the row just above the cursor last: at most `most` rows, and only as far up
    /// as every row is seen (module documentation). The overlay takes these rows off the
    /// screen to make room and puts them back on close.
    pub fn restorable_rows(&self, most: u16) -> Vec<Vec<u8>> {
        let grid = self.state.grid();
        let above = &grid.rows[..usize::from(grid.pos.row)];
        let seen = above
            .iter()
            .rev()
            .take(usize::from(most))
            .take_while(|row| row.seen)
            .count();
        let first = above.len() - seen;
        above[first..]
            .iter()
            .zip(u16::try_from(first).unwrap_or(u16::MAX)..)
            .map(|(row, index)| {
                let mut out = Vec::new();
                row.repaint(index, &self.state.palette, &mut out);
                out
            })
            .collect()
    }

    /// The scroll region (top and bottom row, inclusive) when it is not the whole screen.
    pub fn scroll_region(&self) -> Option<(u16, u16)> {
        let grid = self.state.grid();
        (grid.scroll_top != 0 || grid.scroll_bottom != grid.rows_n - 1)
            .then_some((grid.scroll_top, grid.scroll_bottom))
    }

    /// Grows with every character drawn and every change to the cells: equal counts before and
    /// after some output mean it drew nothing (a title, a mode switch, a cursor hide).
    pub fn drawn(&self) -> u64 {
        self.state.drawn
    }

    /// How many queries to the terminal (cursor position, device attributes, mode and window
    /// reports, colours, …) went by so far: each one is answered on the user's input.
    pub fn queries(&self) -> u64 {
        self.state.queries
    }

    pub fn resize(&mut self, size: TermSize) {
        let size = sane(size);
        self.state.primary.set_size(size);
        self.state.alternate.set_size(size);
    }
}

/// A CSI sequence the terminal answers on the user's input: device status and cursor position
/// (`CSI 5 n`, `CSI 6 n`, `CSI ? … n`), device attributes (`CSI c`, `CSI > c`, `CSI = c`),
/// window reports (`CSI 11…21 t`), mode requests (`CSI [?] … $ p`), the kitty keyboard flags
/// (`CSI ? u`) and the version (`CSI > q`).
fn is_query(params: &vte::Params, intermediates: &[u8], action: char) -> bool {
    let first = param(params, 0, 0);
    match (intermediates, action) {
        ([], 'n') => first == 5 || first == 6,
        ([b'?'], 'n') | ([] | [b'>' | b'='], 'c') | ([b'?'], 'u') | ([b'>'], 'q') => true,
        ([], 't') => matches!(first, 11 | 13..=16 | 18..=21),
        ([b'$'] | [b'?', b'$'], 'p') => true,
        _ => false,
    }
}

/// Printable ASCII, CR or LF: what [`State::plain`] draws without vte.
fn is_plain(b: u8) -> bool {
    (b.wrapping_sub(b' ') < 0x5f) | (b == b'\n') | (b == b'\r')
}

/// Length of the leading run of [`is_plain`] bytes, checked 32 at a time (a block's check has
/// no early exit, so it vectorises); only the block holding the first other byte is searched.
fn plain_prefix(bytes: &[u8]) -> usize {
    let mut done = 0;
    for block in bytes.chunks_exact(32) {
        if !block.iter().fold(true, |all, &b| all & is_plain(b)) {
            break;
        }
        done += 32;
    }
    let rest = &bytes[done..];
    done + rest
        .iter()
        .position(|&b| !is_plain(b))
        .unwrap_or(rest.len())
}

/// How many bytes at the end of `bytes` begin a UTF-8 character that is not complete yet.
fn unfinished_utf8(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead byte
        }
        let needs = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return 0,
        };
        return if needs > back { back } else { 0 };
    }
    0
}

/// A zero dimension would make every position invalid; the model keeps at least one cell.
fn sane(size: TermSize) -> TermSize {
    TermSize {
        rows: size.rows.max(1),
        cols: size.cols.max(1),
    }
}

impl State {
    fn new(size: TermSize) -> State {
        let mut primary = Grid::new(size, true);
        primary.allocate_rows();
        State {
            primary,
            alternate: Grid::new(size, false),
            alternate_active: false,
            sgr: Sgr::default(),
            attr: DEFAULT_ATTR,
            palette: Palette::new(),
            last_char: None,
            autowrap: true,
            drawn: 0,
            queries: 0,
            sequence_done: false,
        }
    }

    /// A C0 control character.
    fn control(&mut self, byte: u8) {
        let grid = self.grid_mut();
        match byte {
            8 => grid.pos.col = grid.pos.col.saturating_sub(1),
            9 => grid.col_tab(),
            10..=12 => {
                grid.row_inc_scroll(1);
            }
            13 => grid.col_set(0),
            _ => {}
        }
    }

    /// Printable ASCII, CR and LF, as vte would deliver them in its ground state.
    fn plain(&mut self, mut bytes: &[u8]) {
        while let Some(at) = memchr::memchr2(b'\n', b'\r', bytes) {
            self.printable(&bytes[..at]);
            self.control(bytes[at]);
            bytes = &bytes[at + 1..];
        }
        self.printable(bytes);
    }

    /// A run of printable ASCII: whole row segments at once, unless a segment touches half of a
    /// wide character or the cursor waits to wrap, which [`State::text`] handles per character.
    fn printable(&mut self, mut run: &[u8]) {
        while !run.is_empty() {
            let grid = if self.alternate_active {
                &mut self.alternate
            } else {
                &mut self.primary
            };
            let Pos { row, col } = grid.pos;
            let fits = usize::from(grid.cols.saturating_sub(col)).min(run.len());
            let (row, col) = (usize::from(row), usize::from(col));
            let line = &mut grid.rows[row];
            let cells = &mut line.cells;
            let near = &cells[col.saturating_sub(1)..(col + fits + 1).min(cells.len())];
            if fits == 0 || (line.wide && near.iter().any(|c| c.flags & (WIDE | WIDE_CONT) != 0)) {
                let step = fits.max(1);
                for &b in &run[..step] {
                    self.text(char::from(b));
                }
                run = &run[step..];
                continue;
            }
            let attr = self.attr;
            for (cell, &b) in cells[col..col + fits].iter_mut().zip(run) {
                *cell = Cell {
                    ch: char::from(b),
                    attr,
                    flags: if b == b' ' { 0 } else { INK },
                };
            }
            grid.pos.col += fits as u16;
            self.drawn += fits as u64;
            self.last_char = Some(char::from(run[fits - 1]));
            run = &run[fits..];
        }
    }

    fn grid(&self) -> &Grid {
        if self.alternate_active {
            &self.alternate
        } else {
            &self.primary
        }
    }

    fn grid_mut(&mut self) -> &mut Grid {
        if self.alternate_active {
            &mut self.alternate
        } else {
            &mut self.primary
        }
    }

    fn save_cursor(&mut self) {
        let sgr = self.sgr;
        let grid = self.grid_mut();
        grid.saved_pos = grid.pos;
        grid.saved_origin_mode = grid.origin_mode;
        grid.saved_sgr = sgr;
        grid.saved = true;
    }

    fn restore_cursor(&mut self) {
        let grid = self.grid_mut();
        grid.pos = grid.saved_pos;
        grid.origin_mode = grid.saved_origin_mode;
        self.sgr = grid.saved_sgr;
        self.attr = self.palette.index_of(self.sgr);
    }

    fn enter_alternate(&mut self) {
        self.alternate_active = true;
        self.alternate.allocate_rows();
    }

    /// The common case of [`State::text`]: printable ASCII that neither wraps nor touches half of
    /// a wide character. Returns false, having done nothing, otherwise.
    #[inline]
    fn ascii(&mut self, c: char) -> bool {
        let grid = if self.alternate_active {
            &mut self.alternate
        } else {
            &mut self.primary
        };
        let Pos { row, col } = grid.pos;
        if col >= grid.cols {
            return false;
        }
        let (row, col) = (usize::from(row), usize::from(col));
        let cells = &mut grid.rows[row].cells;
        if cells[col].is_wide() || (col > 0 && cells[col - 1].is_wide()) {
            return false;
        }
        cells[col] = Cell {
            ch: c,
            attr: self.attr,
            flags: if c == ' ' { 0 } else { INK },
        };
        grid.pos.col += 1;
        self.last_char = Some(c);
        self.drawn += 1;
        true
    }

    fn text(&mut self, c: char) {
        // Printable ASCII is nearly all output; it skips the width table.
        let (width, ink) = if (' '..='~').contains(&c) {
            (1, if c == ' ' { 0 } else { INK })
        } else {
            let width = match c.width() {
                None if u32::from(c) < 256 => return,
                w => w.unwrap_or(1).min(2) as u16,
            };
            (width, if c.is_whitespace() { 0 } else { INK })
        };
        let (attr, autowrap) = (self.attr, self.autowrap);
        let grid = if self.alternate_active {
            &mut self.alternate
        } else {
            &mut self.primary
        };
        let (pos, cols) = (grid.pos, grid.cols);
        if width > cols || (width == 0 && pos.col == 0) {
            return;
        }
        self.drawn += 1;
        let (row, col, was_wide, is_wide) = if width == 0 {
            // A combining mark joins the character before the cursor.
            let row = usize::from(pos.row);
            let mut col = usize::from(pos.col.min(cols) - 1);
            if grid.rows[row].cells[col].is_wide_cont() && col > 0 {
                col -= 1;
            }
            // Not kept: the row can no longer be drawn again as it is.
            grid.rows[row].seen = false;
            let cell = &mut grid.rows[row].cells[col];
            cell.flags |= ink;
            (row, col, cell.is_wide(), cell.is_wide())
        } else {
            if autowrap {
                grid.col_wrap(width);
            } else {
                grid.col_keep(width);
            }
            let (row, col) = (usize::from(grid.pos.row), usize::from(grid.pos.col));
            let cell = &mut grid.rows[row].cells[col];
            let was_wide = cell.is_wide();
            *cell = Cell {
                ch: c,
                attr,
                flags: ink | if width == 2 { WIDE } else { 0 },
            };
            grid.pos.col = grid.pos.col.saturating_add(width);
            self.last_char = Some(c);
            (row, col, was_wide, width == 2)
        };
        let line = &mut grid.rows[row];
        line.wide |= is_wide;
        // Writing over half of a wide character clears the other half.
        let cells = &mut line.cells;
        if col > 0 && cells[col - 1].is_wide() {
            cells[col - 1] = Cell::default();
        }
        if was_wide
            && !is_wide
            && let Some(next) = cells.get_mut(col + 1)
        {
            *next = Cell::default();
        }
        if !was_wide && is_wide && col + 1 < cells.len() {
            let next_was_wide = cells[col + 1].is_wide();
            cells[col + 1] = Cell::flagged(WIDE_CONT);
            if next_was_wide && let Some(next_next) = cells.get_mut(col + 2) {
                *next_next = Cell::default();
            }
        }
    }

    /// A change to the cells of the screen in use; it counts as drawing.
    fn edit(&mut self, change: impl FnOnce(&mut Grid)) {
        self.drawn += 1;
        change(self.grid_mut());
    }

    fn csi(&mut self, params: &vte::Params, intermediates: &[u8], action: char) {
        let first = || param(params, 0, 0);
        let count = || first().max(1);
        let n = count();
        match (intermediates.first(), action) {
            (None, 'm') => {
                self.sgr.apply(params.iter());
                self.attr = self.palette.index_of(self.sgr);
            }
            (None, '@') => self.edit(|g| g.insert_cells(n)),
            (None, 'A') => self.grid_mut().row_dec_clamp(count()),
            (None, 'B') => self.grid_mut().row_inc_clamp(count()),
            (None, 'C') => {
                let grid = self.grid_mut();
                grid.pos.col = grid.pos.col.saturating_add(count());
                grid.col_clamp();
            }
            (None, 'D') => {
                let grid = self.grid_mut();
                grid.pos.col = grid.pos.col.saturating_sub(count());
            }
            (None, 'E') => {
                let grid = self.grid_mut();
                grid.col_set(0);
                grid.row_inc_clamp(count());
            }
            (None, 'F') => {
                let grid = self.grid_mut();
                grid.col_set(0);
                grid.row_dec_clamp(count());
            }
            (None, 'G' | '`') => self.grid_mut().col_set(count() - 1),
            (None, 'H' | 'f') => {
                let row = param(params, 0, 0).max(1) - 1;
                let col = param(params, 1, 0).max(1) - 1;
                self.grid_mut().set_pos(Pos { row, col });
            }
            (None | Some(b'?'), 'J') => self.edit(|g| match first() {
                0 => g.erase_all_forward(),
                1 => g.erase_all_backward(),
                2 => g.erase_all(),
                // Erasing the scrollback also forgets the rows that scrolled off.
                3 => {
                    if let Some(off) = &mut g.scrolled_off {
                        *off = 0;
                    }
                }
                _ => {}
            }),
            (None | Some(b'?'), 'K') => self.edit(|g| match first() {
                0 => g.erase_row_forward(),
                1 => g.erase_row_backward(),
                2 => g.row_mut().reset(),
                _ => {}
            }),
            (None, 'L') => self.edit(|g| g.insert_lines(n)),
            (None, 'M') => self.edit(|g| g.delete_lines(n)),
            (None, 'P') => self.edit(|g| g.delete_cells(n)),
            (None, 'S') => self.edit(|g| g.scroll_up(n)),
            (None, 'T') => self.edit(|g| g.scroll_down(n)),
            (None, 'X') => self.edit(|g| g.erase_cells(n)),
            (None, 'b') => {
                if let Some(c) = self.last_char {
                    for _ in 0..count() {
                        self.text(c);
                    }
                }
            }
            (None, 'd') => self.grid_mut().row_set(count() - 1),
            (None, 'r') => {
                let rows = self.grid().rows_n;
                let top = param(params, 0, 0).max(1);
                let bottom = match param(params, 1, 0) {
                    0 => rows,
                    b => b,
                };
                self.grid_mut().set_scroll_region(top - 1, bottom - 1);
            }
            (Some(b'?'), 'h') => {
                for p in params.iter() {
                    match p {
                        [6] => self.grid_mut().set_origin_mode(true),
                        [7] => self.autowrap = true,
                        [47] => self.enter_alternate(),
                        [1049] => {
                            self.save_cursor();
                            self.alternate.clear();
                            self.enter_alternate();
                        }
                        _ => {}
                    }
                }
            }
            (Some(b'?'), 'l') => {
                for p in params.iter() {
                    match p {
                        [6] => self.grid_mut().set_origin_mode(false),
                        [7] => self.autowrap = false,
                        [47] => self.alternate_active = false,
                        [1049] => {
                            self.alternate_active = false;
                            self.restore_cursor();
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

/// The `i`th parameter's first value, or `default` when it is missing.
fn param(params: &vte::Params, i: usize, default: u16) -> u16 {
    params
        .iter()
        .nth(i)
        .and_then(|p| p.first().copied())
        .unwrap_or(default)
}

impl vte::Perform for State {
    #[inline]
    fn print(&mut self, c: char) {
        if (' '..='~').contains(&c) && self.ascii(c) {
            return;
        }
        // vt100 leaves replacement characters and C1 controls undrawn.
        if c != '\u{fffd}' && !('\u{80}'..'\u{a0}').contains(&c) {
            self.text(c);
        }
    }

    fn execute(&mut self, byte: u8) {
        self.control(byte);
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], bell_terminated: bool) {
        // Ended by ESC \ instead, the backslash is still to come (as an escape sequence).
        self.sequence_done = bell_terminated;
        // `OSC 10 ; ?`, `OSC 4 ; n ; ?`, `OSC 52 ; c ; ?`: colour and clipboard queries.
        if params.iter().skip(1).any(|p| *p == b"?") {
            self.queries += 1;
        }
    }

    fn hook(&mut self, _params: &vte::Params, intermediates: &[u8], _ignore: bool, action: char) {
        // XTGETTCAP `DCS + q` and DECRQSS `DCS $ q`.
        if action == 'q' && matches!(intermediates, [b'+' | b'$']) {
            self.queries += 1;
        }
    }

    fn terminated(&self) -> bool {
        self.sequence_done
    }

    fn csi_dispatch(
        &mut self,
        params: &vte::Params,
        intermediates: &[u8],
        _ignore: bool,
        action: char,
    ) {
        self.sequence_done = true;
        if is_query(params, intermediates, action) {
            self.queries += 1;
        }
        self.csi(params, intermediates, action);
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _ignore: bool, byte: u8) {
        self.sequence_done = true;
        if !intermediates.is_empty() {
            return;
        }
        match byte {
            b'7' => self.save_cursor(),
            b'8' => self.restore_cursor(),
            b'M' => self.grid_mut().row_dec_scroll(1),
            b'c' => {
                self.drawn += 1;
                let size = TermSize {
                    rows: self.primary.rows_n,
                    cols: self.primary.cols,
                };
                *self = State {
                    drawn: self.drawn,
                    queries: self.queries,
                    sequence_done: true,
                    ..State::new(size)
                };
            }
            _ => {}
        }
    }
}
