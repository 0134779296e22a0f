//! Fast typing around the `/wujie` trigger: keys typed while the menu is about to open go to
//! the menu once it opens, a filter that matches nothing gives the keys to the adapter, and
//! Ctrl+U in the menu clears its filter (then the adapter's line).

use wujie_testkit::term::*;
use wujie_testkit::*;

fn discussion(env: &Env) -> Term {
    env.install_example("fake-tui-v2");
    let term = Term::discuss(env, &[]);
    term.wait_text("Ctrl+D quit");
    term
}

fn input_row(screen: &str) -> &str {
    screen
        .lines()
        .find(|l| l.starts_with('>'))
        .map_or("", str::trim_end)
}

#[test]
fn a_command_typed_on_at_once_is_not_a_command_and_stays_with_the_adapter() {
    let env = Env::new();
    let mut term = discussion(&env);
    term.send(b"/wujieabc");
    term.wait_for("the adapter's echo", |s| input_row(s) == "> /wujieabc");
    // Ctrl+U reaches the adapter, which clears its line.
    term.send(b"\x15");
    let cleared = term.wait_for("the adapter to clear its line", |s| input_row(s) == ">");
    assert!(!cleared.contains("no matching command"), "{cleared}");
    term.say("hello", "agent: SQLite or PostgreSQL?");
    term.send(b"\x04");
    assert!(term.wait_exit().success(), "{}", term.contents());
}

#[test]
fn enter_right_after_the_trigger_chooses_in_the_menu_instead_of_sending_it() {
    let env = Env::new();
    let mut term = discussion(&env);
    term.say("plan storage", "agent: SQLite or PostgreSQL?");
    term.send(b"/wujie\r");
    let screen = term.wait_for("the card, or the trigger sent as a prompt", |s| {
        s.contains("Create the issue and continue") || s.contains("you: /wujie")
    });
    assert!(
        screen.contains("Create the issue and continue") && !screen.contains("you: /wujie"),
        "Enter went to the menu, not to the adapter:\n{screen}"
    );
    term.send(b"\x1b");
    term.wait_for("the card to close", |s| !s.contains("Create the issue"));
    term.send(b"\x04");
    assert!(term.wait_exit().success(), "{}", term.contents());
}

#[test]
fn ctrl_u_in_the_menu_clears_its_filter_then_the_adapters_line() {
    let env = Env::new();
    let mut term = discussion(&env);
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue");
    // `c` still matches; Ctrl+U takes it back; `x` then matches nothing, which closes the
    // menu and hands the key to the adapter.
    term.send(b"c\x15x");
    term.wait_for("the unmatched filter to close the menu", |s| {
        !s.contains("/wujiecreateissue") && input_row(s) == "> /wujiex"
    });
    term.send(b"\x15");
    term.wait_for("the adapter to clear its line", |s| input_row(s) == ">");
    // With nothing typed into the menu, Ctrl+U closes it and clears the adapter's line.
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue");
    term.send(b"\x15");
    term.wait_for("the menu to close and the line to clear", |s| {
        !s.contains("/wujiecreateissue") && input_row(s) == ">"
    });
    term.send(b"\x04");
    assert!(term.wait_exit().success(), "{}", term.contents());
}
