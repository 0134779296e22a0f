//! Resizing the window while the `/wujie` menu is open, in tmux (which rewraps rows that no
//! longer fit, as most terminals do): nothing of the menu may stay behind or be duplicated,
//! and the adapter's rows stay as the adapter draws them.

use wujie_testkit::*;

fn discuss_in_tmux(env: &Env, name: &str, cols: u16, rows: u16) -> Tmux {
    env.install_example("fake-tui-v2");
    let shell = format!(
        "unset WUJIE_RUN_ID WUJIE_ISSUE_ID WUJIE_TOKEN WUJIE_SERVER_URL; cd {work} && seq 1 5 && WUJIE_HOME={home} {WUJIE} discuss -- fake-tui-v2; echo EXIT=$?; sleep 30",
        work = env.work.path().display(),
        home = env.home.path().display(),
    );
    let tmux = Tmux::start(name, &shell, cols, rows);
    tmux.wait_text("Ctrl+D quit");
    tmux
}

fn count_rows(screen: &str, row: &str) -> usize {
    screen.lines().filter(|l| l.trim_end() == row).count()
}

#[test]
fn narrowing_the_window_while_the_menu_is_open_leaves_nothing_twice() {
    let env = Env::new();
    let tmux = discuss_in_tmux(&env, "narrow-menu", 100, 30);
    tmux.keys(&["-l", "hello"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("agent: SQLite or PostgreSQL?");
    tmux.keys(&["-l", "/wujie"]);
    tmux.wait_text("/wujiecreateissue");
    tmux.tmux(&["resize-window", "-t", "t", "-x", "50", "-y", "30"]);
    let during = tmux.wait_settled("the menu at the new width", |s| {
        s.lines().all(|l| l.trim_end().chars().count() <= 50)
    });
    assert_eq!(
        during.matches("/wujiecreateissue").count(),
        1,
        "the menu shows once:\n{during}"
    );
    assert_eq!(count_rows(&during, "> /wujie"), 1, "{during}");
    tmux.keys(&["Escape"]);
    let after = tmux.wait_settled("the adapter's redraw at the new width", |s| {
        s.contains("50x30") && !s.contains("/wujiecreateissue")
    });
    assert_eq!(
        count_rows(&after, "> /wujie"),
        1,
        "one input line:\n{after}"
    );
    assert_eq!(after.matches("Ctrl+D quit").count(), 1, "{after}");
    for line in ["fake-tui v2 — plan with me, then /wujie", "you: hello"] {
        assert_eq!(count_rows(&after, line), 1, "{line:?} once:\n{after}");
    }
    tmux.keys(&["C-u", "C-d"]);
    tmux.wait_text("EXIT=0");
}

#[test]
fn narrowing_the_window_while_the_card_is_open_leaves_nothing_twice() {
    let env = Env::new();
    let tmux = discuss_in_tmux(&env, "narrow-card", 100, 30);
    tmux.keys(&["-l", "plan storage"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("agent: SQLite or PostgreSQL?");
    tmux.keys(&["-l", "sqlite"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("agent: - WAL mode");
    tmux.keys(&["-l", "/wujie"]);
    tmux.wait_text("/wujiecreateissue");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Back to the discussion");
    tmux.tmux(&["resize-window", "-t", "t", "-x", "50", "-y", "30"]);
    let during = tmux.wait_settled("the card at the new width", |s| {
        s.lines().all(|l| l.trim_end().chars().count() <= 50) && s.contains("Back to the")
    });
    assert_eq!(during.matches("New issue:").count(), 1, "{during}");
    assert_eq!(
        during.matches("Back to the discussion").count(),
        1,
        "{during}"
    );
    tmux.keys(&["Escape"]);
    let after = tmux.wait_settled("the adapter's redraw at the new width", |s| {
        s.contains("50x30") && !s.contains("Back to the discussion")
    });
    assert_eq!(count_rows(&after, ">"), 1, "one input box:\n{after}");
    assert_eq!(after.matches("Ctrl+D quit").count(), 1, "{after}");
    assert!(!after.contains("New issue:"), "{after}");
    for line in ["you: plan storage", "you: sqlite", "agent: - WAL mode"] {
        assert_eq!(count_rows(&after, line), 1, "{line:?} once:\n{after}");
    }
    tmux.keys(&["C-d"]);
    tmux.wait_text("EXIT=0");
}
