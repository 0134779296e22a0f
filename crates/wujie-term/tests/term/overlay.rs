//! The overlay applied to a vt100 model of the real terminal: the adapter's rows, margin rows,
//! cursor and colours survive open, redraw and close.

use proptest::prelude::*;
use std::num::NonZeroU16;
use wujie_term::{
    CursorPos, IssueCard, LineStyle, MARGIN_ROWS, Menu, MenuItem, Overlay, OverlayError,
    OverlayLine, Placement, ScreenModel, TermSize, default_commands,
};

pub(super) fn parser(rows: u16, cols: u16) -> vt100::Parser {
    let nz = |n: u16| NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN);
    vt100::Parser::new(nz(rows), nz(cols), 100)
}

/// A terminal showing an adapter: `lines` from the top, the cursor at `cursor` and a red
/// drawing colour left active (DECRC must bring it back).
fn adapter_screen(rows: u16, cols: u16, lines: &[&str], cursor: (u16, u16)) -> vt100::Parser {
    let mut p = parser(rows, cols);
    for (i, line) in lines.iter().enumerate() {
        p.process(format!("\x1b[{};1H\x1b[3{}m{line}", i + 1, i % 7 + 1).as_bytes());
    }
    p.process(format!("\x1b[{};{}H\x1b[0;31;1m", cursor.0 + 1, cursor.1 + 1).as_bytes());
    p
}

pub(super) fn rows_text(s: &vt100::Screen) -> Vec<String> {
    let (_, cols) = s.size();
    s.rows(0, cols.get()).collect()
}

pub(super) fn rows_formatted(s: &vt100::Screen) -> Vec<String> {
    let (_, cols) = s.size();
    s.rows_formatted(0, cols.get()).collect()
}

/// Screen text with row numbers and the cursor, for snapshots.
fn render(p: &vt100::Screen) -> String {
    let mut out = String::new();
    for (i, row) in rows_text(p).iter().enumerate() {
        out.push_str(&format!("{i:2}|{}|\n", row));
    }
    let (row, col) = p.cursor_position();
    out.push_str(&format!("cursor: {row},{col}"));
    out
}

fn size_of(p: &vt100::Parser) -> TermSize {
    let (rows, cols) = p.screen().size();
    TermSize {
        cols: cols.get(),
        rows: rows.get(),
    }
}

/// What the host passes: size, cursor and how far down the adapter has drawn.
fn place(s: &vt100::Screen) -> Placement {
    let (rows, cols) = s.size();
    let (row, col) = s.cursor_position();
    let used = rows_text(s)
        .iter()
        .rposition(|r| !r.trim().is_empty())
        .map_or(0, |i| i + 1);
    Placement::new(
        TermSize {
            cols: cols.get(),
            rows: rows.get(),
        },
        CursorPos { row, col },
    )
    .with_used_rows(u16::try_from(used).unwrap())
}

fn menu_lines(size: TermSize, query: &str) -> Vec<OverlayLine> {
    let mut items = default_commands();
    items.push(MenuItem::new("/wujiestatus", "show the discussion status"));
    items.push(MenuItem::new("/wujiecancel", "cancel"));
    Menu::new(items, query).lines(size.cols, Overlay::capacity(size).min(6))
}

/// Closes `overlay` on `term`: every row (with its attributes) and the cursor are as `before`.
pub(super) fn close_restores(term: &mut vt100::Parser, overlay: Overlay, before: &vt100::Screen) {
    let mut out = Vec::new();
    overlay.close(&mut out);
    term.process(&out);
    assert_eq!(rows_formatted(term.screen()), rows_formatted(before));
    assert_eq!(term.screen().cursor_position(), before.cursor_position());
}

/// Checks the state after close equals the state before: every adapter row where it was, except
/// the top `scrolled` rows, which opening pushed into the scrollback and closing brings back blank.
fn assert_restored(before: &vt100::Screen, after: &vt100::Screen, scrolled: u16) {
    let keep = rows_text(before).len() - usize::from(scrolled);
    assert_restored_rows(before, after, scrolled, keep);
}

/// The `keep` rows from row `scrolled` on are the adapter's rows as before, the others blank,
/// and the cursor and drawing attributes are back.
fn assert_restored_rows(before: &vt100::Screen, after: &vt100::Screen, scrolled: u16, keep: usize) {
    let s = usize::from(scrolled);
    let b = rows_formatted(before);
    let a = rows_formatted(after);
    assert_eq!(
        a[s..s + keep],
        b[s..s + keep],
        "adapter rows changed\nbefore:\n{}\nafter:\n{}",
        render(before),
        render(after)
    );
    let text = rows_text(after);
    assert!(
        text[..s]
            .iter()
            .chain(&text[s + keep..])
            .all(|r| r.trim().is_empty()),
        "rows outside the adapter's kept rows are not blank:\n{}",
        render(after)
    );
    assert_eq!(
        after.cursor_position(),
        before.cursor_position(),
        "cursor not restored"
    );
    assert_eq!(
        after.attributes_formatted(),
        before.attributes_formatted(),
        "drawing attributes not restored"
    );
}

const ADAPTER: &[&str] = &[
    "$ wujie discuss",
    "assistant: let us plan the change",
    "  1. parse input",
    "  2. draw the menu",
    "╭──────────────────────────────╮",
    "│ > /wujie                     │",
    "╰──────────────────────────────╯",
    "  ? for shortcuts",
];

#[test]
fn open_and_close_in_the_middle_of_the_screen() {
    let mut term = adapter_screen(14, 40, ADAPTER, (5, 10));
    let before = term.screen().clone();
    let size = size_of(&term);
    let mut out = Vec::new();
    let overlay = Overlay::open(place(term.screen()), &menu_lines(size, ""), &mut out).unwrap();
    assert!(
        !out.windows(6)
            .any(|w| w == b"\x1b[?104" || w == b"\x1b[?47" || w == b"\x1b[?10"),
        "alternate screen used"
    );
    term.process(&out);
    assert_eq!(overlay.scrolled(), 0);
    assert_eq!(overlay.top(), 5 + 1 + MARGIN_ROWS);
    insta::assert_snapshot!("middle_before", render(&before));
    insta::assert_snapshot!("middle_during", render(term.screen()));
    // Everything up to and including the margin rows is untouched; the cursor stays put.
    assert_eq!(
        rows_formatted(term.screen())[..8],
        rows_formatted(&before)[..8]
    );
    assert_eq!(term.screen().cursor_position(), (5, 10));
    out.clear();
    overlay.close(&mut out);
    term.process(&out);
    insta::assert_snapshot!("middle_after", render(term.screen()));
    assert_restored(&before, term.screen(), 0);
}

#[test]
fn rows_below_the_margin_are_pushed_down_and_come_back() {
    let mut lines = ADAPTER.to_vec();
    lines.extend(["below one", "below two"]);
    let mut term = adapter_screen(16, 30, &lines, (5, 10));
    let before = term.screen().clone();
    let size = size_of(&term);
    let mut out = Vec::new();
    let overlay = Overlay::open(place(term.screen()), &menu_lines(size, ""), &mut out).unwrap();
    term.process(&out);
    insta::assert_snapshot!("pushed_during", render(term.screen()));
    assert_eq!(rows_text(term.screen())[8 + 3], "below one");
    out.clear();
    overlay.close(&mut out);
    term.process(&out);
    assert_restored(&before, term.screen(), 0);
}

#[test]
fn near_the_bottom_the_screen_scrolls_up_first() {
    // Margins on rows 4 and 5 leave two free rows for three lines: scroll by one.
    let mut term = adapter_screen(8, 40, &ADAPTER[2..], (3, 10));
    let before = term.screen().clone();
    let size = size_of(&term);
    let lines = menu_lines(size, "");
    assert_eq!(lines.len(), 3);
    let mut out = Vec::new();
    let overlay = Overlay::open(place(term.screen()), &lines, &mut out).unwrap();
    term.process(&out);
    assert_eq!(overlay.scrolled(), 1);
    assert_eq!(overlay.height(), 3);
    insta::assert_snapshot!("bottom_before", render(&before));
    insta::assert_snapshot!("bottom_during", render(term.screen()));
    assert_eq!(term.screen().cursor_position(), (2, 10));
    // The adapter's rows moved up intact, margin included.
    assert_eq!(
        rows_formatted(term.screen())[..5],
        rows_formatted(&before)[1..6]
    );
    out.clear();
    overlay.close(&mut out);
    term.process(&out);
    insta::assert_snapshot!("bottom_after", render(term.screen()));
    assert_restored(&before, term.screen(), 1);
}

#[test]
fn cursor_on_the_last_row_scrolls_its_margin_into_view() {
    let mut term = adapter_screen(
        10,
        30,
        &["a", "b", "c", "d", "e", "f", "g", "h", "i", "> /wujie"],
        (9, 8),
    );
    let before = term.screen().clone();
    let size = size_of(&term);
    let mut out = Vec::new();
    let overlay = Overlay::open(place(term.screen()), &menu_lines(size, ""), &mut out).unwrap();
    term.process(&out);
    assert_eq!(overlay.scrolled(), 5);
    assert_eq!(overlay.top(), 4 + 1 + MARGIN_ROWS);
    insta::assert_snapshot!("last_row_during", render(term.screen()));
    out.clear();
    overlay.close(&mut out);
    term.process(&out);
    assert_restored(&before, term.screen(), 5);
}

/// An adapter with a two-row header outside its scroll region (rows 2..=20 of 24) and origin
/// mode on, its cursor on `cursor` (absolute), a drawing colour left active.
fn adapter_with_region(cursor: (u16, u16), lines: usize) -> vt100::Parser {
    let mut p = parser(24, 40);
    p.process(b"\x1b[1;1Hheader one\x1b[2;1Hheader two");
    for i in 0..lines {
        p.process(format!("\x1b[{};1Hline {i}", i + 3).as_bytes());
    }
    // DECSTBM and DECOM both home the cursor; with DECOM rows count from the region's top.
    p.process(b"\x1b[3;21r\x1b[?6h");
    p.process(format!("\x1b[{};{}H\x1b[0;32m", cursor.0 - 2 + 1, cursor.1 + 1).as_bytes());
    p
}

/// Opens the menu over [`adapter_with_region`]'s screen, telling the overlay about the region.
fn open_menu_over_region(term: &mut vt100::Parser) -> (Overlay, Vec<OverlayLine>) {
    let lines = menu_lines(size_of(term), "");
    let placement = place(term.screen()).with_scroll_region(Some((2, 20)));
    let mut out = Vec::new();
    let overlay = Overlay::open(placement, &lines, &mut out).unwrap();
    term.process(&out);
    (overlay, lines)
}

#[test]
fn a_scroll_region_and_origin_mode_are_set_aside_and_restored() {
    let mut term = adapter_with_region((6, 7), 5);
    let before = term.screen().clone();
    assert_eq!(before.cursor_position(), (6, 7));
    let (overlay, lines) = open_menu_over_region(&mut term);
    assert_eq!(overlay.scrolled(), 0);
    // Drawn where the rows are, not where origin mode would move them.
    assert_eq!(rows_text(term.screen())[6 + 1 + 2], lines[0].text);
    assert_eq!(term.screen().cursor_position(), (6, 7));
    let mut out = Vec::new();
    overlay.close(&mut out);
    term.process(&out);
    assert_restored(&before, term.screen(), 0);
    // The region and origin mode are the adapter's again: the same output (a move relative to
    // the region, then lines that scroll it) does the same as on a screen that never had the
    // overlay, the header staying put.
    let mut twin = adapter_with_region((6, 7), 5);
    for p in [&mut term, &mut twin] {
        p.process(b"\x1b[19;1Hbottom\r\nscrolled once\r\nscrolled twice");
    }
    assert_eq!(rows_formatted(term.screen()), rows_formatted(twin.screen()));
    assert_eq!(rows_text(term.screen())[0], "header one");
    assert_eq!(rows_text(term.screen())[18], "bottom");
}

#[test]
fn with_a_scroll_region_the_whole_screen_scrolls_to_make_room() {
    // The cursor on the region's last row: the area needs the screen to scroll, which an LF
    // on the bottom row does only once the region is set aside.
    let mut term = adapter_with_region((20, 4), 18);
    let before = term.screen().clone();
    let (overlay, lines) = open_menu_over_region(&mut term);
    let scrolled = overlay.scrolled();
    assert!(scrolled > 0);
    assert_eq!(
        term.screen().cursor_position(),
        (20 - scrolled, 4),
        "the cursor moved up with the adapter's content"
    );
    assert_eq!(
        rows_text(term.screen())[usize::from(20 - scrolled + 1 + 2)],
        lines[0].text
    );
    let mut out = Vec::new();
    overlay.close(&mut out);
    term.process(&out);
    assert_restored(&before, term.screen(), scrolled);
}

/// An adapter that saved its cursor (DECSC) on row 2 in red and went on drawing in green; the
/// cursor now on its input line.
const SAVES_ITS_CURSOR: &[u8] =
    b"\x1b[1;1Hheader\x1b[3;5H\x1b[31msaved here\x1b7\x1b[32m\x1b[5;1H> /wujie";

#[test]
fn a_cursor_the_adapter_saved_itself_is_still_there_after_the_overlay() {
    for lines_in_the_way in [0usize, 14] {
        let (rows, cols) = (16, 40);
        let mut adapter = SAVES_ITS_CURSOR.to_vec();
        // Rows below the input line make the area scroll the screen to open.
        for i in 0..lines_in_the_way {
            adapter.extend_from_slice(format!("\x1b[{};1Hbelow {i}", 6 + i).as_bytes());
        }
        adapter.extend_from_slice(b"\x1b[5;9H");
        let mut term = parser(rows, cols);
        term.process(&adapter);
        let mut model = ScreenModel::new(size_of(&term));
        model.feed(&adapter);
        let before = term.screen().clone();
        let placement = place(term.screen()).with_cursor_state(
            model.saved_cursor(),
            model.attributes(),
            model.origin_mode(),
        );
        let mut out = Vec::new();
        let overlay = Overlay::open(placement, &menu_lines(size_of(&term), ""), &mut out).unwrap();
        let scrolled = overlay.scrolled();
        overlay.close(&mut out);
        term.process(&out);
        assert_eq!(scrolled > 0, lines_in_the_way > 0);
        assert_restored(&before, term.screen(), scrolled);
        // DECRC gives the adapter its own saved cursor and colour, as on a screen that never
        // had the overlay.
        let mut twin = parser(rows, cols);
        twin.process(&adapter);
        for p in [&mut term, &mut twin] {
            p.process(b"\x1b8");
        }
        assert_eq!(term.screen().cursor_position(), (2, 14));
        assert_eq!(
            term.screen().attributes_formatted(),
            twin.screen().attributes_formatted()
        );
    }
}

/// An adapter with a scroll region (rows 2..=20 of 24) that saved its cursor in red with origin
/// mode `saved_in_origin_mode`, then went on in green with origin mode `origin_mode_now`, its
/// cursor on its input line (absolute row 8); `lines_in_the_way` rows drawn below that line
/// make the area scroll the screen to open.
fn region_adapter_that_saved(
    saved_in_origin_mode: bool,
    origin_mode_now: bool,
    lines_in_the_way: usize,
) -> Vec<u8> {
    let decom = |on: bool| if on { "\x1b[?6h" } else { "\x1b[?6l" };
    let mut adapter = String::from("\x1b[1;1Hheader one\x1b[2;1Hheader two");
    for i in 0..lines_in_the_way {
        adapter.push_str(&format!("\x1b[{};1Hbelow {i}", 10 + i));
    }
    adapter.push_str("\x1b[3;21r");
    // Row 5 and column 5 (0-based 4, 4), counted from the region's top in origin mode.
    let saved_row = if saved_in_origin_mode { 3 } else { 5 };
    adapter.push_str(&format!(
        "{}\x1b[{saved_row};5H\x1b[31msaved here\x1b7",
        decom(saved_in_origin_mode)
    ));
    let input_row = if origin_mode_now { 7 } else { 9 };
    adapter.push_str(&format!(
        "{}\x1b[32m\x1b[{input_row};1H> /wujie",
        decom(origin_mode_now)
    ));
    adapter.into_bytes()
}

#[test]
fn a_cursor_saved_in_origin_mode_is_still_there_after_the_overlay() {
    for (saved_in_origin_mode, origin_mode_now) in [(true, true), (true, false), (false, true)] {
        for lines_in_the_way in [0usize, 14] {
            let case = format!(
                "saved in origin mode {saved_in_origin_mode}, origin mode now {origin_mode_now}, \
                 {lines_in_the_way} lines in the way"
            );
            let adapter =
                region_adapter_that_saved(saved_in_origin_mode, origin_mode_now, lines_in_the_way);
            let mut term = parser(24, 40);
            term.process(&adapter);
            let mut model = ScreenModel::new(size_of(&term));
            model.feed(&adapter);
            assert_eq!(
                model.saved_cursor().map(|s| s.origin_mode),
                Some(saved_in_origin_mode),
                "{case}"
            );
            let before = term.screen().clone();
            let placement = place(term.screen())
                .with_scroll_region(model.scroll_region())
                .with_cursor_state(
                    model.saved_cursor(),
                    model.attributes(),
                    model.origin_mode(),
                );
            let mut out = Vec::new();
            let overlay =
                Overlay::open(placement, &menu_lines(size_of(&term), ""), &mut out).unwrap();
            let scrolled = overlay.scrolled();
            assert_eq!(scrolled > 0, lines_in_the_way > 0, "{case}");
            overlay.close(&mut out);
            term.process(&out);
            assert_restored(&before, term.screen(), scrolled);

            // The adapter's next moves (absolute or region-relative, as its origin mode says)
            // and its own DECRC do what they do on a screen that never had the overlay.
            let mut twin = parser(24, 40);
            twin.process(&adapter);
            for p in [&mut term, &mut twin] {
                p.process(b"\x1b[2;3Hmoved\x1b8restored");
            }
            assert_eq!(
                term.screen().cursor_position(),
                twin.screen().cursor_position(),
                "{case}"
            );
            assert_eq!(term.screen().cursor_position(), (4, 22), "{case}");
            assert_eq!(
                term.screen().attributes_formatted(),
                twin.screen().attributes_formatted(),
                "{case}"
            );
            let from = usize::from(scrolled);
            assert_eq!(
                rows_formatted(term.screen())[from..],
                rows_formatted(twin.screen())[from..],
                "{case}"
            );
        }
    }
}

#[test]
fn redraw_changes_only_what_changed() {
    let mut term = adapter_screen(14, 40, ADAPTER, (5, 10));
    let before = term.screen().clone();
    let size = size_of(&term);
    let mut out = Vec::new();
    let mut overlay = Overlay::open(place(term.screen()), &menu_lines(size, ""), &mut out).unwrap();
    term.process(&out);

    // Same line count, one line changed: no insert or delete, one line rewritten.
    let mut menu = Menu::new(default_commands(), "");
    let mut lines = menu_lines(size, "");
    lines[1].style = LineStyle::Selected;
    out.clear();
    overlay.redraw(&lines, &mut out);
    assert!(
        !has_insert_or_delete(&out),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    assert_eq!(count(&out, b"\x1b[2K"), 1);
    term.process(&out);

    // Unchanged content writes nothing.
    out.clear();
    overlay.redraw(&lines, &mut out);
    assert!(out.is_empty());

    // Narrowing to one line deletes two lines at the end of the area; widening inserts them.
    menu.handle_key(wujie_term::Key::Char('c'));
    out.clear();
    overlay.redraw(&menu.lines(size.cols, 6), &mut out);
    assert!(has_insert_or_delete(&out));
    term.process(&out);
    assert_eq!(overlay.height(), 1);
    insta::assert_snapshot!("redraw_narrowed", render(term.screen()));
    out.clear();
    overlay.redraw(&menu_lines(size, ""), &mut out);
    term.process(&out);
    assert_eq!(overlay.height(), 3);
    assert_eq!(term.screen().cursor_position(), (5, 10));
    out.clear();
    overlay.close(&mut out);
    term.process(&out);
    assert_restored(&before, term.screen(), 0);
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// Whether the bytes contain IL (`CSI n L`) or DL (`CSI n M`).
fn has_insert_or_delete(bytes: &[u8]) -> bool {
    bytes.windows(2).enumerate().any(|(i, w)| {
        w == b"\x1b[" && {
            let rest = &bytes[i + 2..];
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            matches!(rest.get(digits), Some(b'L' | b'M'))
        }
    })
}

#[test]
fn cjk_text_is_measured_by_display_width() {
    let mut term = adapter_screen(12, 21, &["讨论：计划", "> /wujie"], (1, 8));
    let before = term.screen().clone();
    let size = size_of(&term);
    let card = IssueCard::create_issue(
        "把讨论变成一个问题单",
        "第一步：解析输入。第二步：绘制菜单，中文宽字符占两列。",
    );
    let lines = card.lines(size.cols, Overlay::capacity(size));
    let mut out = Vec::new();
    let overlay = Overlay::open(place(term.screen()), &lines, &mut out).unwrap();
    term.process(&out);
    insta::assert_snapshot!("cjk_card", render(term.screen()));
    for row in overlay.top()..overlay.top() + overlay.height() {
        // No wide character was split at the right edge.
        let last = term.screen().cell(row, size.cols - 1).unwrap();
        assert!(
            !last.is_wide(),
            "row {row} ends in the left half of a wide character"
        );
    }
    out.clear();
    overlay.close(&mut out);
    term.process(&out);
    assert_restored(&before, term.screen(), 0);
}

#[test]
fn terminals_too_small_are_refused() {
    for (cols, rows) in [(10, 3), (0, 24), (80, 0), (1, 1)] {
        let mut out = Vec::new();
        let placement = Placement::new(TermSize { cols, rows }, CursorPos { row: 0, col: 0 });
        let err = Overlay::open(placement, &[], &mut out).unwrap_err();
        assert!(matches!(err, OverlayError::TooSmall { .. }));
        assert!(out.is_empty());
    }
}

#[test]
fn ten_by_four_terminal_gets_one_line() {
    let mut term = adapter_screen(4, 10, &["> /wujie", "m1", "m2"], (0, 8));
    let before = term.screen().clone();
    let size = size_of(&term);
    let mut out = Vec::new();
    let overlay = Overlay::open(place(term.screen()), &menu_lines(size, ""), &mut out).unwrap();
    term.process(&out);
    assert_eq!(overlay.height(), 1);
    insta::assert_snapshot!("ten_by_four", render(term.screen()));
    out.clear();
    overlay.close(&mut out);
    term.process(&out);
    assert_restored(&before, term.screen(), 0);
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("中文宽字符".to_owned()),
        Just("\x1b[2Jinjected\r\n\x07".to_owned()),
        Just("/wujiecreateissue  create an issue".to_owned()),
        "[a-z 中é\u{301}]{0,30}",
    ]
}

fn style_strategy() -> impl Strategy<Value = LineStyle> {
    prop_oneof![
        Just(LineStyle::Plain),
        Just(LineStyle::Title),
        Just(LineStyle::Dim),
        Just(LineStyle::Selected)
    ]
}

fn lines_strategy() -> impl Strategy<Value = Vec<OverlayLine>> {
    proptest::collection::vec(
        (text_strategy(), style_strategy()).prop_map(|(t, s)| OverlayLine::new(t, s)),
        0..12,
    )
}

proptest! {
    #[test]
    fn any_size_cursor_and_content_restores_the_screen(
        rows in 1u16..12,
        cols in 1u16..16,
        row in 0u16..12,
        col in 0u16..16,
        used in 0u16..12,
        first in lines_strategy(),
        second in lines_strategy(),
    ) {
        let (row, col) = (row.min(rows - 1), col.min(cols - 1));
        let filler: Vec<String> = (0..used.min(rows)).map(|i| format!("r{i}-{}", "x".repeat(usize::from(i)))).collect();
        let filler: Vec<&str> = filler.iter().map(String::as_str).collect();
        let mut term = adapter_screen(rows, cols, &filler, (row, col));
        let before = term.screen().clone();
        let mut out = Vec::new();
        let placement = place(&before);
        match Overlay::open(placement.clone(), &first, &mut out) {
            Err(OverlayError::TooSmall { .. }) => prop_assert!(rows < 4 && out.is_empty()),
            Ok(mut overlay) => {
                prop_assert!(overlay.height() >= 1);
                prop_assert!(overlay.top() + overlay.height() <= rows);
                term.process(&out);
                let shifted = row - overlay.scrolled();
                prop_assert_eq!(term.screen().cursor_position(), (shifted, col));
                // Margin rows and everything above are the adapter's, shifted intact.
                let keep = usize::from(shifted + 1 + MARGIN_ROWS).min(usize::from(rows));
                let s = usize::from(overlay.scrolled());
                let during = rows_formatted(term.screen());
                let original = rows_formatted(&before);
                for r in 0..keep {
                    if r + s < original.len() {
                        prop_assert_eq!(&during[r], &original[r + s]);
                    }
                }
                out.clear();
                overlay.redraw(&second, &mut out);
                term.process(&out);
                prop_assert_eq!(term.screen().cursor_position(), (shifted, col));
                // Rows IL pushed off the bottom: at most the last one, only when the cursor
                // reached the top row and the screen is full below the margin.
                let bottom = (shifted + 1 + MARGIN_ROWS).max(placement.used_rows.saturating_sub(overlay.scrolled()));
                let lost = (bottom + overlay.max_height()).saturating_sub(rows);
                prop_assert!(lost <= 1);
                if lost > 0 {
                    prop_assert_eq!(shifted, 0);
                }
                let keep = if lost == 0 { rows - overlay.scrolled() } else { bottom - lost };
                let scrolled = overlay.scrolled();
                out.clear();
                overlay.close(&mut out);
                term.process(&out);
                assert_restored_rows(&before, term.screen(), scrolled, usize::from(keep));
            }
        }
    }

    #[test]
    fn with_every_row_above_the_cursor_drawable_again_the_screen_comes_back_exactly(
        rows in 4u16..14,
        cols in 4u16..20,
        row in 0u16..14,
        col in 0u16..20,
        used in 0u16..14,
        first in lines_strategy(),
    ) {
        // The host saw the adapter draw every row (its shadow screen), so the area never needs
        // the scrollback: the content moves up only as far as the host can draw it again.
        let (row, col) = (row.min(rows - 1), col.min(cols - 1));
        let mut bytes = Vec::new();
        for i in 0..used.min(rows) {
            let text: String = format!("r{i}-{}", "x".repeat(usize::from(i))).chars().take(usize::from(cols)).collect();
            bytes.extend_from_slice(format!("\x1b[{};1H\x1b[3{}m{text}", i + 1, i % 7 + 1).as_bytes());
        }
        bytes.extend_from_slice(format!("\x1b[{};{}H\x1b[0;31;1m", row + 1, col + 1).as_bytes());
        let size = TermSize { rows, cols };
        let mut term = parser(rows, cols);
        term.process(&bytes);
        let mut shadow = ScreenModel::new(size);
        shadow.feed(&bytes);
        let before = term.screen().clone();
        let placement = Placement::new(size, shadow.cursor())
            .with_used_rows(shadow.used_rows())
            .with_restorable_rows(shadow.restorable_rows(rows));
        // As the menu opens: as many rows as it has lines, or at least one.
        let lines = u16::try_from(first.len()).unwrap();
        let mut out = Vec::new();
        let overlay = Overlay::open_with(placement, lines, 1, |_| first.clone(), &mut out).unwrap();
        term.process(&out);
        prop_assert!(overlay.height() >= 1);
        prop_assert_eq!(overlay.scrolled(), 0);
        prop_assert!(overlay.top() + overlay.height() <= rows);
        prop_assert!(overlay.top() > row - overlay.shifted() + MARGIN_ROWS);
        // Rows under the adapter's (its margin included), and rows above the cursor to move.
        let bottom = (row + 1 + MARGIN_ROWS).max(shadow.used_rows());
        let room = (rows + row).saturating_sub(bottom);
        let wanted = lines.clamp(1, Overlay::capacity(size));
        // As many rows as it wanted, or as moving the content up can make.
        prop_assert_eq!(overlay.height(), wanted.min(room).max(1));
        let during = rows_formatted(term.screen());
        let original = rows_formatted(&before);
        let moved = usize::from(overlay.shifted());
        prop_assert_eq!(&during[usize::from(row) - moved], &original[usize::from(row)]);
        prop_assert_eq!(term.screen().scrollback_len(), 0);
        out.clear();
        overlay.close(&mut out);
        term.process(&out);
        // Only a screen full below the cursor's margin with nothing above to move loses its
        // last row to the one row the area needs.
        let after = rows_formatted(term.screen());
        if room >= 1 {
            prop_assert_eq!(after, original);
        } else {
            prop_assert_eq!(&after[..usize::from(rows) - 1], &original[..usize::from(rows) - 1]);
        }
        prop_assert_eq!(term.screen().cursor_position(), before.cursor_position());
        prop_assert_eq!(term.screen().scrollback_len(), 0);
    }

    #[test]
    fn out_of_range_positions_never_panic(
        used in any::<u16>(),
        rows in any::<u16>(),
        cols in any::<u16>(),
        row in any::<u16>(),
        col in any::<u16>(),
        margin in any::<u16>(),
        first in lines_strategy(),
    ) {
        let mut out = Vec::new();
        let placement = Placement::new(TermSize { cols, rows }, CursorPos { row, col })
            .with_used_rows(used)
            .with_margin(margin);
        if let Ok(mut overlay) = Overlay::open(placement, &first, &mut out) {
            overlay.redraw(&[], &mut out);
            overlay.close(&mut out);
        }
    }
}

#[test]
fn native_handoff_card_on_a_full_height_terminal() {
    let mut term = adapter_screen(20, 50, ADAPTER, (5, 10));
    let before = term.screen().clone();
    let size = size_of(&term);
    let plan = "Keep the scanner pure. Draw the overlay with IL and DL. \
                Test every size with a vt100 model. "
        .repeat(4);
    let card = IssueCard::native_handoff("Terminal overlay", plan, false);
    let lines = card.lines(size.cols, Overlay::capacity(size));
    let mut out = Vec::new();
    let overlay = Overlay::open(place(term.screen()), &lines, &mut out).unwrap();
    term.process(&out);
    insta::assert_snapshot!("native_card", render(term.screen()));
    assert_eq!(overlay.scrolled(), 0);
    out.clear();
    overlay.close(&mut out);
    term.process(&out);
    assert_restored(&before, term.screen(), 0);
}

#[test]
fn after_a_rewrap_the_area_goes_from_under_the_reported_cursor() {
    let mut p = adapter_screen(24, 80, &["one", "two", "> hi", "rule", "hint"], (2, 4));
    let size = size_of(&p);
    let before = rows_text(p.screen());
    let mut out = Vec::new();
    let overlay = Overlay::open(place(p.screen()), &menu_lines(size, ""), &mut out).unwrap();
    p.process(&out);
    // The terminal got narrower and rewrapped a row above: everything moved one row down.
    p.process(b"\x1b[1;1H\x1b[L");
    let narrower = TermSize { cols: 40, rows: 24 };
    p.screen_mut().set_size(
        NonZeroU16::new(narrower.rows).unwrap(),
        NonZeroU16::new(narrower.cols).unwrap(),
    );
    let mut out = Vec::new();
    overlay.close_after_rewrap(CursorPos { row: 3, col: 4 }, narrower, &mut out);
    p.process(&out);
    let after = rows_text(p.screen());
    assert_eq!(after[1..6], before[..5], "the adapter's rows, one lower");
    assert!(after[6..].iter().all(|r| r.trim().is_empty()), "{after:#?}");
    assert_eq!(p.screen().cursor_position(), (3, 4));
}

#[test]
fn on_a_full_screen_rows_the_host_can_draw_again_move_off_and_come_back_exactly() {
    // Eight rows of coloured adapter output fill the screen; the cursor is on the input line
    // with its two margin rows under it. The shadow saw everything, so the area deletes the top
    // rows (never feeding the scrollback), the oldest, and closing draws them again.
    let mut bytes = Vec::new();
    for i in 0..5 {
        bytes.extend_from_slice(
            format!("\x1b[3{}mline {i} \x1b[1mbold\x1b[0m\r\n", i + 1).as_bytes(),
        );
    }
    bytes.extend_from_slice("> 中文 input\r\n── rule\r\n hints\x1b[2A\r\x1b[12C".as_bytes());
    let size = TermSize { rows: 8, cols: 40 };
    let mut term = parser(8, 40);
    term.process(&bytes);
    let mut shadow = ScreenModel::new(size);
    shadow.feed(&bytes);
    let before = term.screen().clone();
    let lines = menu_lines(size, "");
    assert_eq!(lines.len(), 3);
    let placement = Placement::new(size, shadow.cursor())
        .with_used_rows(shadow.used_rows())
        .with_restorable_rows(shadow.restorable_rows(size.rows));
    let mut out = Vec::new();
    let overlay = Overlay::open(placement, &lines, &mut out).unwrap();
    term.process(&out);
    shadow.feed(&out);
    assert_eq!((overlay.shifted(), overlay.scrolled()), (3, 0));
    assert_eq!(overlay.height(), 3);
    assert_eq!(
        term.screen().scrollback_len(),
        0,
        "nothing went to the scrollback"
    );
    assert_eq!(rows_text(term.screen())[2], "> 中文 input");
    assert_eq!(
        rows_text(term.screen())[..2],
        ["line 3 bold", "line 4 bold"],
        "the oldest rows left; what the adapter printed last is still above its input line"
    );
    assert_eq!(term.screen().cursor_position(), (2, 12));
    close_restores(&mut term, overlay, &before);
    assert_eq!(term.screen().scrollback_len(), 0);
}

#[test]
fn rows_the_host_never_saw_are_scrolled_away_as_before() {
    // Without rows it can draw again, a full screen still gets its area: by scrolling.
    let mut term = adapter_screen(8, 40, ADAPTER, (5, 10));
    let size = size_of(&term);
    let lines = menu_lines(size, "");
    let mut out = Vec::new();
    let overlay = Overlay::open(place(term.screen()), &lines, &mut out).unwrap();
    term.process(&out);
    assert_eq!(overlay.shifted(), 0);
    assert!(overlay.scrolled() > 0);
}

#[test]
fn an_input_line_one_row_above_the_bottom_still_gets_its_area_under_the_margin() {
    // Hermes' layout on a full screen: status bar, rule, the `❯` input line, and a rule on the
    // last row. The margin under the input line runs one row past the screen, so the area must
    // move the content up by that row too, else it opens with no row at all.
    let mut bytes = Vec::new();
    for i in 0..8 {
        bytes.extend_from_slice(format!("line {i}\r\n").as_bytes());
    }
    bytes.extend_from_slice("status\r\n── rule\r\n❯ /wujie\r\n── rule\x1b[1A\r\x1b[8C".as_bytes());
    let size = TermSize { rows: 12, cols: 40 };
    let mut term = parser(12, 40);
    term.process(&bytes);
    let mut shadow = ScreenModel::new(size);
    shadow.feed(&bytes);
    assert_eq!(shadow.cursor(), CursorPos { row: 10, col: 8 });
    let before = term.screen().clone();
    let lines = menu_lines(size, "");
    let placement = Placement::new(size, shadow.cursor())
        .with_used_rows(shadow.used_rows())
        .with_restorable_rows(shadow.restorable_rows(size.rows));
    let mut out = Vec::new();
    let overlay = Overlay::open(placement, &lines, &mut out).unwrap();
    term.process(&out);
    assert_eq!(overlay.height(), u16::try_from(lines.len()).unwrap());
    let shown = rows_text(term.screen());
    let input = shown
        .iter()
        .position(|r| r == "❯ /wujie")
        .expect("input line");
    assert_eq!(shown[input + 1], "── rule", "{shown:#?}");
    assert!(
        shown[input + 1 + usize::from(MARGIN_ROWS)..]
            .iter()
            .any(|r| r.contains("create")),
        "the menu is under the margin: {shown:#?}"
    );
    assert_eq!(term.screen().scrollback_len(), 0);
    close_restores(&mut term, overlay, &before);
}
