//! The terminal host started the way people start it: from a shell that already printed
//! something, with the cursor at the top, in the middle or at the bottom of the screen, on
//! terminals from 120x35 down to 40x8. The `/wujie` menu must open under the adapter's two
//! margin rows, leave the cursor on the adapter's input line, and give every adapter row
//! back when it closes.

use wujie_testkit::term::*;
use wujie_testkit::*;

/// `seq 1 {lines}`, then `wujie discuss -- fake-tui-v2` in the same shell, on `terminal`.
fn discuss_below_output(env: &Env, terminal: Terminal, lines: u16) -> Term {
    env.install_example("fake-tui-v2");
    let script = format!("seq 1 {lines}; {WUJIE} discuss -- fake-tui-v2; echo EXIT=$?");
    Term::spawn_on(env, "sh", &["-c", &script], terminal)
}

fn rows(screen: &str, count: u16) -> Vec<String> {
    let mut rows: Vec<String> = screen.lines().map(|l| l.trim_end().to_owned()).collect();
    rows.resize(usize::from(count), String::new());
    rows
}

fn cursor(term: &Term) -> (u16, u16) {
    term.screen.lock().unwrap().screen().cursor_position()
}

/// Opens the menu with `/wujie`, checks where it is, closes it with Esc and checks that the
/// adapter's rows and cursor are back and that typing still goes to its input line.
fn menu_under_the_margin_and_back(terminal: Terminal, lines: u16) {
    let env = Env::new();
    let mut term = discuss_below_output(&env, terminal, lines);
    let before = rows(&term.wait_text("Ctrl+D quit"), terminal.rows);
    let (row, col) = cursor(&term);
    assert_eq!(
        before[usize::from(row)],
        ">",
        "the cursor is in the box: {before:#?}"
    );
    if terminal.reports_cursor && lines > 0 && lines + 4 <= terminal.rows {
        // The old output is still there, right above the adapter's first line.
        assert_eq!(
            before[usize::from(lines) - 1],
            lines.to_string(),
            "{before:#?}"
        );
    }

    term.send(b"/wujie");
    let during = rows(&term.wait_text("/wujiecreateissue"), terminal.rows);
    let input = during
        .iter()
        .position(|r| r == "> /wujie")
        .unwrap_or_else(|| panic!("the adapter's input line: {during:#?}"));
    assert!(during[input + 1].starts_with('─'), "{during:#?}");
    assert!(during[input + 2].contains("Ctrl+D quit"), "{during:#?}");
    assert!(
        during[input + 3].contains("/wujiecreateissue"),
        "the menu comes right under the two margin rows: {during:#?}"
    );
    assert_eq!(
        cursor(&term),
        (u16::try_from(input).unwrap(), col + 6),
        "the cursor stays on the adapter's input line: {during:#?}"
    );

    term.send(b"\x1b");
    let after = rows(
        &term.wait_for("the menu to close", |s| !s.contains("/wujiecreateissue")),
        terminal.rows,
    );
    let mut expected = before.clone();
    expected[usize::from(row)] = "> /wujie".to_owned();
    // Rows the menu had to scroll away at the top come back blank (they are in the
    // scrollback); every other row is as it was.
    let blank_top = after.iter().take_while(|r| r.is_empty()).count();
    assert_eq!(
        after[blank_top..],
        expected[blank_top..],
        "every adapter row is back where it was"
    );
    assert_eq!(cursor(&term), (row, col + 6), "{after:#?}");

    // Typing still goes into the adapter's box, not into the old output.
    term.send(b"x");
    let typed = rows(&term.wait_text("> /wujiex"), terminal.rows);
    assert_eq!(typed[usize::from(row)], "> /wujiex", "{typed:#?}");
    term.send(b"\x15\x04");
    term.wait_text("EXIT=0");
    assert!(term.wait_exit().success());
}

const LARGE: Terminal = Terminal::new(35, 120);
const MEDIUM: Terminal = Terminal::new(24, 80);
const SMALL: Terminal = Terminal::new(8, 40);

#[test]
fn at_the_top_of_a_large_terminal() {
    menu_under_the_margin_and_back(LARGE, 0);
}

#[test]
fn in_the_middle_of_a_large_terminal() {
    menu_under_the_margin_and_back(LARGE, 17);
}

#[test]
fn at_the_bottom_of_a_full_large_terminal() {
    menu_under_the_margin_and_back(LARGE, 70);
}

#[test]
fn at_the_top_of_a_medium_terminal() {
    menu_under_the_margin_and_back(MEDIUM, 0);
}

#[test]
fn in_the_middle_of_a_medium_terminal() {
    menu_under_the_margin_and_back(MEDIUM, 15);
}

#[test]
fn at_the_bottom_of_a_full_medium_terminal() {
    menu_under_the_margin_and_back(MEDIUM, 60);
}

#[test]
fn at_the_top_of_a_small_terminal() {
    menu_under_the_margin_and_back(SMALL, 0);
}

#[test]
fn in_the_middle_of_a_small_terminal() {
    menu_under_the_margin_and_back(SMALL, 3);
}

#[test]
fn at_the_bottom_of_a_full_small_terminal() {
    menu_under_the_margin_and_back(SMALL, 20);
}

#[test]
fn a_terminal_that_does_not_report_its_cursor_gets_the_menu_in_the_right_place_too() {
    let terminal = Terminal {
        reports_cursor: false,
        ..MEDIUM
    };
    menu_under_the_margin_and_back(terminal, 5);
}
