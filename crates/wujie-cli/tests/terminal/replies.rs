//! Terminal replies that arrive in pieces (over ssh and tmux the pieces can be hundreds of
//! milliseconds apart) while the `/wujie` menu is open: the host saw the adapter ask, so it
//! waits for the rest of the reply, forwards it whole to the adapter, keeps the menu open and
//! types nothing into the adapter's line. A lone Esc still closes the menu.

use std::time::Duration;

use wujie_testkit::term::*;
use wujie_testkit::*;

/// The adapter asks `ESC [ {ask}` with every key it echoes; the terminal (the test) answers
/// `head`, then `tail` a moment later.
fn a_reply_in_pieces_reaches_the_adapter_whole(ask: &str, head: &[u8], tail: &[u8]) {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let replies = env.work.path().join("replies");
    let terminal = Terminal {
        reports_cursor: false,
        ..Terminal::STANDARD
    };
    let args = [
        "discuss",
        "--",
        "fake-tui-v2",
        "--ask",
        ask,
        "--replies",
        replies.to_str().unwrap(),
    ];
    let mut term = Term::spawn_on(&env, WUJIE, &args, terminal);
    term.wait_text("Ctrl+D quit");
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue");
    term.send(head);
    // A slow link: the rest of the reply comes well after the escape idle time.
    std::thread::sleep(Duration::from_millis(300));
    term.send(tail);
    let whole = [head, tail].concat();
    let received = || std::fs::read(&replies).unwrap_or_default();
    wait_until(30, "the whole reply to reach the adapter", || {
        received() == whole
    });
    let screen = term.contents();
    assert!(
        screen.contains("/wujiecreateissue") && screen.contains("> /wujie\n"),
        "the menu is still open and nothing was typed into the adapter's line:\n{screen}"
    );

    term.send(b"\x1b");
    let after = term.wait_for("the menu to close", |s| !s.contains("/wujiecreateissue"));
    assert!(after.lines().any(|l| l.trim_end() == "> /wujie"), "{after}");
    term.send(b"\x15\x04");
    assert!(term.wait_exit().success(), "{}", term.contents());
    assert_eq!(
        received(),
        whole,
        "nothing else reached the adapter as a sequence"
    );
}

#[test]
fn a_cursor_position_report_in_two_pieces() {
    a_reply_in_pieces_reaches_the_adapter_whole("6n", b"\x1b[12;", b"5R");
}

#[test]
fn a_window_size_report_in_two_pieces() {
    a_reply_in_pieces_reaches_the_adapter_whole("18t", b"\x1b[8;35;", b"120t");
}

#[test]
fn a_mode_report_in_two_pieces() {
    a_reply_in_pieces_reaches_the_adapter_whole("?2004$p", b"\x1b[?2004;", b"1$y");
}
