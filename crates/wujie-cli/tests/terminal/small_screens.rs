//! The `/wujie` menu and the issue card on small and full screens, started at the top, in the
//! middle and at the bottom of terminals from 120x35 down to 40x8: the card shows its title and
//! the first lines of its body (the rest scrolls), and after Esc every row the terminal holds is
//! as it was, the screen and the scrollback alike — no blank rows at the top, no blank lines in
//! the scrollback.

use wujie_testkit::term::*;
use wujie_testkit::*;

const LARGE: Terminal = Terminal::new(35, 120);
const MEDIUM: Terminal = Terminal::new(24, 80);
const SMALL: Terminal = Terminal::new(8, 40);

/// `seq 1 {lines}`, then `wujie discuss -- fake-tui-v2` in the same shell, on `terminal`.
fn discuss_below_output(env: &Env, terminal: Terminal, lines: u16) -> Term {
    env.install_example("fake-tui-v2");
    let script = format!("seq 1 {lines}; {WUJIE} discuss -- fake-tui-v2; echo EXIT=$?");
    Term::spawn_on(env, "sh", &["-c", &script], terminal)
}

/// Ends the session with Ctrl+U (the adapter clears its line) and Ctrl+D.
fn quit(mut term: Term) {
    term.send(b"\x15\x04");
    term.wait_text("EXIT=0");
    assert!(term.wait_exit().success());
}

/// Opens the menu and closes it with Esc: once the adapter's line is cleared again, the
/// terminal holds exactly what it held before.
fn the_menu_leaves_every_row_as_it_was(terminal: Terminal, lines: u16) {
    let env = Env::new();
    let term = discuss_below_output(&env, terminal, lines);
    term.wait_text("Ctrl+D quit");
    let before = term.history();
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue");
    term.send(b"\x1b");
    term.wait_for("the menu to close", |s| !s.contains("/wujiecreateissue"));
    term.send(b"\x15");
    term.wait_history("every row as it was before the menu", &before);
    quit(term);
}

/// Two turns (the second answer is a plan of four lines), then the card: it shows the title
/// and at least the plan's first line, says how to see the rest when it does not fit (which
/// PageDown then brings up), and after Esc the terminal holds exactly what it held before.
fn the_card_shows_its_body_and_leaves_every_row_as_it_was(terminal: Terminal, lines: u16) {
    let env = Env::new();
    let term = discuss_below_output(&env, terminal, lines);
    term.wait_text("Ctrl+D quit");
    term.say("plan storage", "agent: SQLite or PostgreSQL?");
    term.say("sqlite", "agent: - WAL mode");
    let before = term.history();
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue");
    term.send(b"\r");
    let card = term.wait_text("Cancel");
    assert!(
        card.contains("New issue: "),
        "the card shows its title:\n{card}"
    );
    assert!(
        card.contains("  # Use SQLite for storage"),
        "the card shows the first line of its body:\n{card}"
    );
    if !card.contains("  - WAL mode") {
        assert!(
            card.contains("PgDn"),
            "a body that does not fit says how to scroll it:\n{card}"
        );
        // Paging down reaches the plan's last line.
        for _ in 0..10 {
            let now = term.contents();
            if now.contains("  - WAL mode") {
                break;
            }
            term.send(b"\x1b[6~");
            term.wait_for("the body to scroll", |s| s != now);
        }
        assert!(
            term.contents().contains("  - WAL mode"),
            "{}",
            term.contents()
        );
    }
    term.send(b"\x1b");
    term.wait_for("the card to close", |s| !s.contains("Cancel"));
    term.send(b"\x15");
    term.wait_history("every row as it was before the card", &before);
    quit(term);
}

#[test]
fn menu_at_the_top_of_a_large_terminal() {
    the_menu_leaves_every_row_as_it_was(LARGE, 0);
}

#[test]
fn menu_in_the_middle_of_a_large_terminal() {
    the_menu_leaves_every_row_as_it_was(LARGE, 17);
}

#[test]
fn menu_at_the_bottom_of_a_full_large_terminal() {
    the_menu_leaves_every_row_as_it_was(LARGE, 70);
}

#[test]
fn menu_at_the_top_of_a_medium_terminal() {
    the_menu_leaves_every_row_as_it_was(MEDIUM, 0);
}

#[test]
fn menu_in_the_middle_of_a_medium_terminal() {
    the_menu_leaves_every_row_as_it_was(MEDIUM, 15);
}

#[test]
fn menu_at_the_bottom_of_a_full_medium_terminal() {
    the_menu_leaves_every_row_as_it_was(MEDIUM, 60);
}

#[test]
fn menu_at_the_top_of_a_small_terminal() {
    the_menu_leaves_every_row_as_it_was(SMALL, 0);
}

#[test]
fn menu_in_the_middle_of_a_small_terminal() {
    the_menu_leaves_every_row_as_it_was(SMALL, 3);
}

#[test]
fn menu_at_the_bottom_of_a_full_small_terminal() {
    the_menu_leaves_every_row_as_it_was(SMALL, 20);
}

#[test]
fn card_at_the_top_of_a_large_terminal() {
    the_card_shows_its_body_and_leaves_every_row_as_it_was(LARGE, 0);
}

#[test]
fn card_in_the_middle_of_a_large_terminal() {
    the_card_shows_its_body_and_leaves_every_row_as_it_was(LARGE, 17);
}

#[test]
fn card_at_the_bottom_of_a_full_large_terminal() {
    the_card_shows_its_body_and_leaves_every_row_as_it_was(LARGE, 70);
}

#[test]
fn card_at_the_top_of_a_medium_terminal() {
    the_card_shows_its_body_and_leaves_every_row_as_it_was(MEDIUM, 0);
}

#[test]
fn card_in_the_middle_of_a_medium_terminal() {
    the_card_shows_its_body_and_leaves_every_row_as_it_was(MEDIUM, 15);
}

#[test]
fn card_at_the_bottom_of_a_full_medium_terminal() {
    the_card_shows_its_body_and_leaves_every_row_as_it_was(MEDIUM, 60);
}

#[test]
fn card_at_the_top_of_a_small_terminal() {
    the_card_shows_its_body_and_leaves_every_row_as_it_was(SMALL, 0);
}

#[test]
fn card_in_the_middle_of_a_small_terminal() {
    the_card_shows_its_body_and_leaves_every_row_as_it_was(SMALL, 3);
}

#[test]
fn card_at_the_bottom_of_a_full_small_terminal() {
    the_card_shows_its_body_and_leaves_every_row_as_it_was(SMALL, 20);
}
