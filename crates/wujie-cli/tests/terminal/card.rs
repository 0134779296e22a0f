//! The `/wujiecreateissue` card in the terminal host "can still go back to the discussion":
//! Cancel, Esc and Ctrl+C close it, the adapter keeps running, and nothing is created. A card
//! asked for while the reply on screen is not reported yet waits for it, boundedly, and says
//! when it gave up.

use wujie_testkit::term::*;
use wujie_testkit::*;

/// Leaves the card for the discussion with `keys` and checks that the discussion goes on.
fn the_card_closes_and_the_discussion_goes_on(keys: &[u8]) {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let mut term = Term::discuss(&env, &[]);
    term.wait_text("Ctrl+D quit");
    term.say("plan storage", "agent: SQLite or PostgreSQL?");
    let before = term.contents();
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue");
    term.send(b"\r");
    term.wait_text("  Cancel");
    term.send(keys);
    let after = term.wait_for("the card to close and the trigger text to go", |s| {
        !s.contains("Back to the discussion") && !s.contains("> /wujie")
    });
    assert_eq!(stable(&after), stable(&before), "every adapter row is back");
    // The same adapter process answers the next line: its second turn gives the plan.
    term.say("sqlite", "agent: - WAL mode");
    term.send(b"\x04");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}\n{}", term.contents());
    assert!(env.json(&["issue", "list"]).as_array().unwrap().is_empty());
    assert_eq!(env.json(&["discussion", "list"])[0]["status"], "open");
}

#[test]
fn ctrl_c_on_the_card_goes_back_to_the_discussion() {
    the_card_closes_and_the_discussion_goes_on(b"\x03");
}

#[test]
fn esc_on_the_card_goes_back_to_the_discussion() {
    the_card_closes_and_the_discussion_goes_on(b"\x1b");
}

#[test]
fn choosing_cancel_on_the_card_goes_back_to_the_discussion() {
    the_card_closes_and_the_discussion_goes_on(b"\x1b[B\x1b[B\r");
}

#[test]
fn a_card_waiting_in_vain_for_the_reply_on_screen_opens_and_says_so() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let mut term = Term::discuss(&env, &["--unreported"]);
    term.wait_text("Ctrl+D quit");
    term.say("plan storage", "agent: SQLite or PostgreSQL?");
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue");
    term.send(b"\r");
    term.wait_text("  Cancel");
    term.send(b"\x1b");
    term.wait_text("reply to the last prompt was not reported within 2 s");
    term.send(b"\x04");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}\n{}", term.contents());
}
