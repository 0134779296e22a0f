//! The native handoff card comes after what the adapter printed before it asked for it: the
//! plan it streamed line by line and the input box it drew under it are on the screen above the
//! card, not held back behind it until the card closes.

use wujie_testkit::term::*;
use wujie_testkit::*;

#[test]
fn the_handoff_card_opens_under_everything_the_adapter_printed_before_asking() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let args = ["--handoff", "current_context", "--plan-steps", "3000"];
    let mut term = Term::discuss(&env, &args);
    term.wait_text("Ctrl+D quit");
    term.say("plan storage", "agent: SQLite or PostgreSQL?");
    term.send(b"sqlite");
    term.wait_text("> sqlite");
    term.send(b"\r");
    let card = term.wait_text("Ctrl+C: cancel and end this session");
    let title = card
        .find("Hand off to a new issue: Use SQLite for storage")
        .expect("the card's title");
    let above = &card[..title];
    assert!(
        above.contains("agent: - step 3000") && above.contains("Ctrl+D quit"),
        "the plan's last line and the adapter's input box are above the card:\n{card}"
    );
    term.send(b"\r");
    term.wait_for("the adapter to go on", |s| {
        s.contains("agent: executing the plan for WUJ-1")
    });
    term.send(b"\x04");
    assert!(term.wait_exit().success(), "{}", term.contents());
}
