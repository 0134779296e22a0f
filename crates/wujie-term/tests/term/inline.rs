//! The inline area (the card where the output ends) applied to a vt100 model of the terminal.

use std::num::NonZeroU16;
use wujie_term::{InlineArea, IssueCard, LineStyle, OverlayLine, TermSize};

fn terminal(rows: u16, cols: u16) -> vt100::Parser {
    vt100::Parser::new(
        NonZeroU16::new(rows).unwrap(),
        NonZeroU16::new(cols).unwrap(),
        0,
    )
}

fn rows_text(p: &vt100::Parser) -> Vec<String> {
    let (_, cols) = p.screen().size();
    p.screen().rows(0, cols.get()).collect()
}

fn card(size: TermSize, rows: u16) -> Vec<OverlayLine> {
    IssueCard::native_handoff(
        "Use SQLite for storage",
        "# Use SQLite for storage\n\n- one file per profile\n- WAL mode",
        true,
    )
    .lines(size.cols, rows)
}

#[test]
fn drawn_under_the_output_redrawn_in_place_and_erased() {
    let size = TermSize { cols: 40, rows: 12 };
    let mut term = terminal(size.rows, size.cols);
    term.process(b"agent: here is the plan\r\nagent: waiting for a decision");
    let before = rows_text(&term);
    let mut out = Vec::new();
    let lines = card(size, 6);
    let mut area = InlineArea::open(size, &lines, &mut out);
    term.process(&out);
    let during = rows_text(&term);
    assert_eq!(during[..2], before[..2], "the output above stays");
    assert_eq!(during[2], lines[0].text, "the card starts on a fresh line");
    assert_eq!(
        during[2 + lines.len() - 1].trim_end(),
        lines.last().unwrap().text
    );

    // Fewer lines: nothing of the taller version is left below.
    out.clear();
    area.redraw(&lines[..2], &mut out);
    term.process(&out);
    let shorter = rows_text(&term);
    assert_eq!(shorter[2..4], during[2..4]);
    assert!(
        shorter[4..].iter().all(|r| r.trim().is_empty()),
        "{shorter:?}"
    );

    out.clear();
    area.close(&mut out);
    term.process(&out);
    assert_eq!(rows_text(&term), {
        let mut expected = before.clone();
        expected[2] = String::new();
        expected
    });
    assert_eq!(term.screen().cursor_position(), (2, 0));
}

#[test]
fn at_the_bottom_the_output_scrolls_and_the_area_still_comes_back_whole() {
    let size = TermSize { cols: 30, rows: 6 };
    let mut term = terminal(size.rows, size.cols);
    for i in 0..10 {
        term.process(format!("line {i}\r\n").as_bytes());
    }
    term.process(b"last");
    let mut out = Vec::new();
    let lines: Vec<_> = (0..9)
        .map(|i| OverlayLine::new(format!("card {i} {}", "x".repeat(40)), LineStyle::Plain))
        .collect();
    let area = InlineArea::open(size, &lines, &mut out);
    assert_eq!(area.max_rows(), 5);
    term.process(&out);
    let during = rows_text(&term);
    assert_eq!(during[0], "last", "the output's last row stays in view");
    // Cut to the width: no line wrapped, so exactly max_rows rows were used.
    assert!(during[1].starts_with("card 0") && during[1].ends_with('…'));
    assert!(during[5].starts_with("card 4"));
    out.clear();
    area.close(&mut out);
    term.process(&out);
    let after = rows_text(&term);
    assert_eq!(after[0], "last");
    assert!(after[1..].iter().all(|r| r.trim().is_empty()), "{after:?}");
    assert_eq!(term.screen().cursor_position(), (1, 0));
}
