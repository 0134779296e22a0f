//! After the discussion became an issue: the `/wujie` menu says so instead of offering to
//! create one, and the notice that said it happened is not printed a second time when the
//! session ends.

use wujie_testkit::term::*;
use wujie_testkit::*;

#[test]
fn after_promotion_the_menu_shows_the_issue_and_notices_are_printed_once() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let mut term = Term::discuss(&env, &[]);
    term.wait_text("Ctrl+D quit");
    term.say("plan storage", "agent: SQLite or PostgreSQL?");
    term.say("sqlite", "agent: - WAL mode");
    term.create_issue_from_menu("WUJ-1");
    term.wait_for("the notice to close", |s| !s.contains("wujie: created"));

    term.send(b"/wujie");
    let menu = term.wait_text("/wujiecreateissue");
    assert!(
        menu.contains("this discussion is already issue WUJ-1")
            && !menu.contains("create an issue from this discussion"),
        "{menu}"
    );
    term.send(b"\x1b");
    term.wait_for("the menu to close", |s| !s.contains("already issue"));
    term.send(b"\x15\x04");
    assert!(term.wait_exit().success(), "{}", term.contents());
    let end = term.contents();
    assert!(
        end.contains("WUJ-1"),
        "the session's summary names the issue:\n{end}"
    );
    assert!(
        !end.contains("wujie: created WUJ-1"),
        "the notice was shown once, during the session:\n{end}"
    );
}
