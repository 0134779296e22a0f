//! Where the area opens under an adapter that draws more than two rows under its input line (an
//! input box's lower border, a blank row, a footer of one or two rows, as Codex, Gemini CLI and
//! opencode do): under all of them, as the host's shadow screen shows them, and never between.

use proptest::prelude::*;

use super::overlay::{close_restores, rows_formatted, rows_text};
use wujie_term::{
    MARGIN_MOST_ROWS, MARGIN_ROWS, Menu, Overlay, OverlayLine, Placement, ScreenModel, TermSize,
    default_commands,
};

fn parser(size: TermSize) -> vt100::Parser {
    super::overlay::parser(size.rows, size.cols)
}

/// The terminal and the host's shadow screen after the adapter drew `bytes`.
fn drawn(size: TermSize, bytes: &[u8]) -> (vt100::Parser, ScreenModel) {
    let mut term = parser(size);
    term.process(bytes);
    let mut shadow = ScreenModel::new(size);
    shadow.feed(bytes);
    (term, shadow)
}

/// What the host passes (`ScreenLock::placement`).
fn placement(size: TermSize, shadow: &ScreenModel) -> Placement {
    Placement::new(size, shadow.cursor())
        .with_margin(shadow.rows_drawn_below_cursor(MARGIN_MOST_ROWS))
        .with_used_rows(shadow.used_rows())
        .with_restorable_rows(shadow.restorable_rows(size.rows))
}

fn menu_lines(size: TermSize) -> Vec<OverlayLine> {
    Menu::new(default_commands(), "").lines(size.cols, Overlay::capacity(size).min(6))
}

/// Gemini CLI's layout: the input box, a blank row and a footer of two rows under it.
const GEMINI_LIKE: &str = "header one\r\nheader two\r\n\r\n\
    ╭──────────────────────────╮\r\n\
    │ > /wujie                 │\r\n\
    ╰──────────────────────────╯\r\n\
    \r\n\
    ~/project    no sandbox\r\n\
    gemini-2.5-pro (100% context left)\
    \x1b[4A\r\x1b[10C";

#[test]
fn the_area_opens_under_a_footer_drawn_under_the_input_box_not_inside_it() {
    let size = TermSize { rows: 20, cols: 40 };
    let (mut term, shadow) = drawn(size, GEMINI_LIKE.as_bytes());
    assert_eq!(shadow.cursor().row, 4);
    assert_eq!(shadow.rows_drawn_below_cursor(MARGIN_MOST_ROWS), 4);
    let before = term.screen().clone();
    let lines = menu_lines(size);
    let mut out = Vec::new();
    let overlay = Overlay::open(placement(size, &shadow), &lines, &mut out).unwrap();
    term.process(&out);
    assert_eq!(overlay.top(), 9, "right under the footer's last row");
    assert_eq!(overlay.scrolled() + overlay.shifted(), 0);
    assert_eq!(
        rows_formatted(term.screen())[..9],
        rows_formatted(&before)[..9],
        "the input box and the whole footer are where they were, untouched"
    );
    assert!(rows_text(term.screen())[9].contains("/wujie"));
    assert_eq!(term.screen().cursor_position(), (4, 10));
    close_restores(&mut term, overlay, &before);
    assert_eq!(term.screen().cursor_position(), (4, 10));
}

#[test]
fn a_footer_on_the_last_row_moves_up_with_the_input_box_and_the_area_opens_under_it() {
    // A full-screen agent (opencode): conversation rows, then its input box and a status row
    // on the last row of the screen. Every row was drawn while the host watched, so the oldest
    // leave the screen and come back on close.
    let size = TermSize { rows: 16, cols: 40 };
    let mut bytes = Vec::new();
    for i in 0..10 {
        bytes.extend_from_slice(format!("conversation {i}\r\n").as_bytes());
    }
    bytes.extend_from_slice(
        "┃\r\n┃ /wujie\r\n┃\r\n┃ Build  model\r\n\r\nctrl+p commands\x1b[4A\r\x1b[8C".as_bytes(),
    );
    let (mut term, shadow) = drawn(size, &bytes);
    assert_eq!(shadow.cursor().row, 11);
    let before = term.screen().clone();
    let lines = menu_lines(size);
    let height = u16::try_from(lines.len()).unwrap();
    let mut out = Vec::new();
    let overlay = Overlay::open(placement(size, &shadow), &lines, &mut out).unwrap();
    term.process(&out);
    assert_eq!(overlay.height(), height);
    assert_eq!(overlay.shifted(), height, "the oldest rows made the room");
    assert_eq!(overlay.top(), 16 - height);
    let during = rows_text(term.screen());
    let original = rows_text(&before);
    assert_eq!(
        during[..usize::from(16 - height)],
        original[usize::from(height)..],
        "{during:#?}"
    );
    assert_eq!(term.screen().scrollback_len(), 0);
    close_restores(&mut term, overlay, &before);
}

#[test]
fn without_anything_drawn_under_the_input_line_the_two_margin_rows_stay_the_rule() {
    let size = TermSize { rows: 12, cols: 30 };
    let (_, shadow) = drawn(size, b"$ agent\r\n> /wujie");
    assert_eq!(shadow.rows_drawn_below_cursor(MARGIN_MOST_ROWS), 0);
    let mut out = Vec::new();
    let overlay = Overlay::open(placement(size, &shadow), &menu_lines(size), &mut out).unwrap();
    assert_eq!(overlay.top(), 1 + 1 + MARGIN_ROWS);
}

#[test]
fn text_further_down_than_a_footer_goes_is_pushed_down_not_stepped_over() {
    // Something far under the input line is not the adapter's input area: the area opens
    // under the margin and pushes it down, as before.
    let size = TermSize { rows: 24, cols: 30 };
    let far = MARGIN_MOST_ROWS + 3;
    let bytes = format!("> /wujie\x1b[{};1Hold output\x1b[1;9H", far + 1);
    let (mut term, shadow) = drawn(size, bytes.as_bytes());
    assert_eq!(shadow.rows_drawn_below_cursor(MARGIN_MOST_ROWS), 0);
    let mut out = Vec::new();
    let overlay = Overlay::open(placement(size, &shadow), &menu_lines(size), &mut out).unwrap();
    term.process(&out);
    assert_eq!(overlay.top(), 1 + MARGIN_ROWS);
    let shown = rows_text(term.screen());
    assert_eq!(shown[usize::from(far + overlay.height())], "old output");
}

proptest! {
    #[test]
    fn rows_drawn_under_the_input_line_stay_intact_above_the_area(
        rows in 4u16..20,
        cols in 4u16..24,
        row in 0u16..20,
        above in 0u16..20,
        below in prop::collection::vec(any::<bool>(), 0..12),
        wanted in 1u16..10,
    ) {
        // Rows of text above the cursor's row and, under it, text on the rows `below` marks.
        let row = row.min(rows - 1);
        let mut bytes = Vec::new();
        for i in row.saturating_sub(above)..row {
            bytes.extend_from_slice(format!("\x1b[{};1Habove{i}", i + 1).as_bytes());
        }
        bytes.extend_from_slice(format!("\x1b[{};1H> in", row + 1).as_bytes());
        for (i, drawn) in (row + 1..rows).zip(&below) {
            if *drawn {
                bytes.extend_from_slice(format!("\x1b[{};1Hfoot{i}", i + 1).as_bytes());
            }
        }
        bytes.extend_from_slice(format!("\x1b[{};2H\x1b[0;32m", row + 1).as_bytes());
        let size = TermSize { rows, cols };
        let (mut term, shadow) = drawn(size, &bytes);
        let footer = shadow.rows_drawn_below_cursor(MARGIN_MOST_ROWS);
        let before = term.screen().clone();
        let lines: Vec<OverlayLine> = menu_lines(size).into_iter().cycle().take(usize::from(wanted)).collect();
        let mut out = Vec::new();
        let overlay = Overlay::open(placement(size, &shadow), &lines, &mut out).unwrap();
        term.process(&out);
        prop_assert!(overlay.height() >= 1);
        prop_assert!(overlay.top() + overlay.height() <= rows);
        let moved = overlay.scrolled() + overlay.shifted();
        let input = row - moved;
        prop_assert_eq!(term.screen().cursor_position(), (input, 1));
        // The footer, unless it leaves no row for the area, is above the area, intact.
        let kept = footer.min(rows - 2);
        prop_assert!(overlay.top() > input + kept);
        let during = rows_formatted(term.screen());
        let original = rows_formatted(&before);
        for r in input..=input + kept {
            prop_assert_eq!(&during[usize::from(r)], &original[usize::from(r + moved)], "row {}", r);
        }
        out.clear();
        let scrolled = overlay.scrolled();
        overlay.close(&mut out);
        term.process(&out);
        prop_assert_eq!(term.screen().cursor_position(), before.cursor_position());
        // Rows scrolled into the scrollback come back blank; the others come back as they were,
        // but for the last row when the screen was full under the cursor and nothing could move.
        let after = rows_formatted(term.screen());
        for r in usize::from(scrolled)..usize::from(rows) - 1 {
            prop_assert_eq!(&after[r], &original[r], "row {} after close", r);
        }
    }
}
