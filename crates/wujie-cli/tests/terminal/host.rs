//! The interactive terminal host: `wujie discuss` / `wujie run` with a provider whose manifest
//! says `interactive_pty: true` (examples/fake-tui-v2, an inline TUI), driven through a real PTY
//! whose output is read into a vt100 screen model, and once through tmux like a person would.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use wujie_testkit::term::*;
use wujie_testkit::*;

#[test]
fn the_menu_overlay_leaves_the_adapter_rows_as_they_were() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let term = Term::discuss(&env, &[]);
    term.wait_text("Ctrl+D quit");
    term.say("hello", "agent: SQLite or PostgreSQL?");
    term.send(b"/wuji");
    let before = term.wait_text("> /wuji");
    insta::assert_snapshot!("menu_before", stable(&before));

    term.send(b"e");
    let during = term.wait_text("/wujiecreateissue  create an issue from this discussion");
    insta::assert_snapshot!("menu_during", stable(&during));

    term.send(b"\x1b");
    let after = term.wait_for("the menu to close", |s| !s.contains("/wujiecreateissue"));
    insta::assert_snapshot!("menu_after", stable(&after));
    assert_eq!(
        after,
        before.replace("> /wuji", "> /wujie"),
        "every adapter row is back, and Esc kept the trigger text on the adapter's line"
    );
}

#[test]
fn create_issue_from_the_card_and_keep_going_in_the_same_context() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let mut term = Term::discuss(&env, &[]);
    term.wait_text("Ctrl+D quit");
    term.say("plan storage", "agent: SQLite or PostgreSQL?");
    term.say("sqlite", "agent: - WAL mode");
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue");
    term.send(b"\r");
    let card = term.wait_text("  Cancel");
    // Only the card itself: whether the adapter already echoed the erased trigger text when the
    // card opened depends on timing (its output is held back while the card is open).
    let at = card.find("New issue:").expect("the card's title");
    insta::assert_snapshot!("card", stable(&card[at..]));
    assert!(card[..at].contains("agent: - WAL mode\n>"), "{card}");
    term.send(b"\r");
    let back = term.wait_for("the card to close", |s| {
        !s.contains("Create the issue and continue")
    });
    assert!(
        back.lines().any(|l| l.trim_end() == ">"),
        "the trigger text was erased from the adapter's line:\n{back}"
    );
    // A notice says what happened, under the adapter's rows, which stay as they were.
    let notice = term.wait_text("wujie: created WUJ-1 “Use SQLite for storage”");
    let above = &notice[..notice.find("wujie: created").unwrap()];
    assert!(above.contains("agent: - WAL mode\n>"), "{notice}");
    // The same adapter process goes on: its third turn answers with a final. The first key
    // closes the notice and still reaches the adapter.
    term.say("go", "agent: done: go");
    assert!(
        !term.contents().contains("wujie: created"),
        "{}",
        term.contents()
    );
    term.send(b"\x04");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}\n{}", term.contents());

    let issues = env.json(&["issue", "list"]);
    let key = issues[0]["key"].as_str().expect("an issue was created");
    let issue = env.issue(key);
    assert_eq!(issue["title"], "Use SQLite for storage");
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "succeeded");
    let messages: Vec<_> = run["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["type"].clone(), m["content"].clone()))
        .collect();
    assert!(
        messages.contains(&("final".into(), "done: go".into())),
        "what the agent said after the promotion belongs to the run: {messages:?}"
    );
}

#[test]
fn a_native_handoff_is_confirmed_on_the_card_and_answered_with_a_frame() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let mut term = Term::discuss(&env, &["--handoff", "current_context"]);
    term.wait_text("Ctrl+D quit");
    term.say("plan storage", "agent: SQLite or PostgreSQL?");
    term.say("sqlite", "agent: - WAL mode");
    let card = term.wait_text("Ctrl+C: cancel and end this session");
    assert!(
        card.contains("Hand off to a new issue: Use SQLite for storage"),
        "{card}"
    );
    assert!(
        !card.contains("Back to the discussion"),
        "no way back from a native handoff"
    );
    term.send(b"\r");
    term.wait_text("wujie: created WUJ-1");
    // The adapter got the accepted decision on its terminal and goes on in this context (what
    // it prints while the notice is open shows once it closed); the notice closes by itself.
    term.wait_for("the notice to close and the adapter to go on", |s| {
        !s.contains("wujie: created") && s.contains("agent: executing the plan for WUJ-1")
    });
    term.send(b"\x04");
    assert!(term.wait_exit().success(), "{}", term.contents());
    let issue = env.issue("WUJ-1");
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "succeeded");
    assert!(
        run["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["content"] == "plan executed"),
        "{run}"
    );
}

/// `wujie discuss -- {provider_args}` from a shell on the terminal, which prints after it its
/// exit status and the terminal's line-editing, signal and echo modes, to check that `wujie`
/// gave the terminal back as it found it.
fn discuss_then_terminal_modes(env: &Env, provider_args: &str) -> Term {
    let script = format!(
        "{WUJIE} discuss -- {provider_args}; echo EXIT=$?; stty -a | tr ' ' '\\n' | grep -E '^-?(icanon|echo|isig)$' | tr '\\n' ' '; echo"
    );
    Term::spawn(env, "sh", &["-c", &script])
}

/// Waits for the modes [`discuss_then_terminal_modes`] prints and checks they are all on again.
fn assert_terminal_restored(term: &Term) -> String {
    let screen = term.wait_for("the terminal modes", |s| s.contains("icanon"));
    assert!(
        screen.contains("icanon isig echo") || screen.contains("isig icanon echo"),
        "line editing, signals and echo are back on:\n{screen}"
    );
    assert!(
        !screen.contains("-icanon") && !screen.contains("-echo") && !screen.contains("-isig"),
        "{screen}"
    );
    screen
}

#[test]
fn a_provider_on_pipes_gets_the_card_where_its_output_ends() {
    let env = Env::new();
    env.install_example("fake-provider-v2");
    let mut term = Term::spawn(
        &env,
        WUJIE,
        &["discuss", "--", "fake-provider-v2", "--script"],
    );
    let card = term.wait_text("Ctrl+C: cancel and end this session");
    let at = card
        .find("Hand off to a new issue:")
        .expect("the card's title");
    insta::assert_snapshot!("inline_card", stable(&card[at..]));
    term.send(b"\r");
    let after = term.wait_text("handoff decision:");
    assert!(
        !after.contains("Hand off to a new issue") && after.contains("wujie: created WUJ-1"),
        "the card made way for what happened:\n{after}"
    );
    assert!(term.wait_exit().success(), "{}", term.contents());
    let run = &env.issue("WUJ-1")["runs"][0];
    assert_eq!(run["status"], "succeeded");
}

#[test]
fn ctrl_c_on_the_card_of_a_provider_on_pipes_cancels_and_gives_the_terminal_back() {
    let env = Env::new();
    env.install_example("fake-provider-v2");
    let term = discuss_then_terminal_modes(&env, "fake-provider-v2 --script");
    term.wait_text("Ctrl+C: cancel and end this session");
    term.send(b"\x03");
    let screen = assert_terminal_restored(&term);
    assert!(
        screen.contains("EXIT=130"),
        "a cancelled session:\n{screen}"
    );
    assert!(env.json(&["issue", "list"]).as_array().unwrap().is_empty());
    assert_eq!(env.json(&["discussion", "list"])[0]["status"], "open");
}

#[test]
fn a_resize_reaches_the_adapter() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let term = Term::discuss(&env, &[]);
    term.wait_text(&format!("{COLS}x{ROWS}"));
    term.resize(20, 60);
    term.wait_text("60x20");
}

/// `wujie discuss -- fake-tui-v2 ADAPTER_ARGS…` with the `/wujie` menu open (the env is kept
/// alive with the terminal).
fn with_the_menu_open(adapter_args: &[&str]) -> (Env, Term) {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let term = Term::discuss(&env, adapter_args);
    term.wait_text("Ctrl+D quit");
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue  create an issue from this discussion");
    (env, term)
}

/// Resizes to 60x20 with the menu open; the screen once the adapter's repaint and the menu,
/// once, are on it.
fn resized_with_the_menu_back(term: &Term) -> String {
    term.resize(20, 60);
    term.wait_for("the repaint and the menu at the new size", |s| {
        s.contains("60x20") && s.matches("/wujiecreateissue").count() == 1
    })
}

#[test]
fn a_resize_while_the_menu_is_open_lets_the_adapter_redraw_then_opens_the_menu_again() {
    let (_env, term) = with_the_menu_open(&[]);
    // The adapter redraws for the new size first, then the menu opens again under it, once.
    let screen = resized_with_the_menu_back(&term);
    assert!(screen.contains("> /wujie"), "{screen}");
    term.send(b"\x1b");
    let after = term.wait_for("the menu to close", |s| !s.contains("/wujiecreateissue"));
    assert!(after.contains("60x20"), "{after}");
}

#[test]
fn a_resize_with_the_menu_open_waits_for_an_adapter_that_repaints_late() {
    let (_env, term) = with_the_menu_open(&["--repaint-after", "400"]);
    // The repaint, 400 ms after the resize, is on the screen with the menu opened again under
    // it, not held back under a menu that opened before it.
    let screen = resized_with_the_menu_back(&term);
    let (repaint, menu) = (screen.find("60x20"), screen.find("/wujiecreateissue"));
    assert!(repaint < menu, "{screen}");
}

#[test]
fn what_was_typed_into_the_menu_is_kept_when_a_resize_opens_it_again() {
    let (_env, term) = with_the_menu_open(&[]);
    // Typed into the menu (its filter), not yet the adapter's.
    term.send(b"cr");
    resized_with_the_menu_back(&term);
    // Esc gives the adapter what the menu took: nothing typed was lost with the resize.
    term.send(b"\x1b");
    let after = term.wait_for("the menu to close", |s| !s.contains("/wujiecreateissue"));
    assert!(
        after.lines().any(|l| l.trim_end() == "> /wujiecr"),
        "{after}"
    );
}

#[test]
fn output_waits_while_the_menu_is_open_and_past_the_cap_the_adapter_waits_too() {
    use wujie_host::HOLD_CAP;
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let progress = env.work.path().join("flood");
    let took =
        || -> usize { std::fs::read_to_string(&progress).map_or(0, |s| s.trim().parse().unwrap()) };
    let term = Term::discuss(&env, &["--flood", progress.to_str().unwrap()]);
    term.wait_text("Ctrl+D quit");
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue  create an issue from this discussion");
    // A paste reaches the adapter while the menu is open; it then prints 4 MiB. Wait until it
    // is stuck.
    term.send(b"\x1b[200~x\x1b[201~");
    let mut last = (took(), Instant::now());
    wait_until(30, "the adapter's output to stop being taken", || {
        let now = took();
        if now != last.0 {
            last = (now, Instant::now());
        }
        now > 0 && last.1.elapsed() > Duration::from_millis(500)
    });
    let stalled = took();
    // Held back: at most the cap, plus what one read and the PTY's own buffers take.
    assert!(
        stalled <= HOLD_CAP + (512 << 10),
        "the terminal took {stalled} bytes while the menu was open"
    );
    let during = term.contents();
    assert!(
        during.contains("/wujiecreateissue") && !during.contains("flood x"),
        "nothing of the adapter's output reached the screen under the menu:\n{during}"
    );
    term.send(b"\x1b");
    let after = term.wait_text("flood done");
    assert!(!after.contains("/wujiecreateissue"), "{after}");
    assert_eq!(took(), 4 << 20, "everything held was let through");
}

#[test]
fn ctrl_c_reaches_the_adapter_as_a_byte_and_wujie_exits_with_its_status() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let mut term = Term::discuss(&env, &[]);
    term.wait_text("Ctrl+D quit");
    term.send(b"\x03");
    let status = term.wait_exit();
    assert_eq!(
        status.code(),
        Some(130),
        "the adapter quit on the byte; {}",
        term.contents()
    );
}

#[test]
fn the_terminal_is_restored_after_the_adapter_crashes() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let term = discuss_then_terminal_modes(&env, "fake-tui-v2 --crash-after 1");
    term.wait_text("Ctrl+D quit");
    term.send(b"boom\r");
    term.wait_text("EXIT=3");
    assert_terminal_restored(&term);
}

/// The `wujie` process started by the shell `parent`.
fn wujie_child_of(parent: u32) -> i32 {
    wait_for_wujie("wujie to start", |_, _, stat| {
        let ppid = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().nth(1));
        ppid == Some(&parent.to_string())
    })
}

#[test]
fn the_terminal_is_restored_after_sigterm() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let term = discuss_then_terminal_modes(&env, "fake-tui-v2");
    term.wait_text("Ctrl+D quit");
    let pid = wujie_child_of(term.child.id());
    assert!(pid > 0);
    assert!(signal_pid(pid, nix::sys::signal::Signal::SIGTERM));
    let screen = assert_terminal_restored(&term);
    assert!(screen.contains("EXIT=130"), "a cancelled session: {screen}");
}

#[test]
fn piped_input_drives_an_interactive_provider() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let mut child = env
        .cmd()
        .args(["--output", "json", "discuss", "--", "fake-tui-v2"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"plan storage\rsqlite\r")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = env.json(&[
        "discussion",
        "show",
        report["discussion_id"].as_str().unwrap(),
    ]);
    let kinds: Vec<_> = d["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["user_input", "question", "user_input", "plan"]);
}

#[test]
fn run_relays_an_interactive_provider_on_a_terminal() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let key = env.create_issue("tui run");
    let mut term = Term::spawn(&env, WUJIE, &["run", &key, "--", "fake-tui-v2"]);
    term.wait_text("Ctrl+D quit");
    term.say("hello", "agent: SQLite or PostgreSQL?");
    term.send(b"\x04");
    assert!(term.wait_exit().success(), "{}", term.contents());
    let run = &env.issue(&key)["runs"][0];
    assert_eq!(run["status"], "succeeded");
    let kinds: Vec<_> = run["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap().to_owned())
        .collect();
    assert!(kinds.contains(&"user_input".to_owned()), "{kinds:?}");
}

#[test]
fn run_exits_with_the_adapters_status() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    let key = env.create_issue("crashy");
    let mut child = env
        .cmd()
        .args(["run", &key, "--", "fake-tui-v2", "--crash-after", "1"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"boom\r").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(env.issue(&key)["runs"][0]["status"], "failed");
}

/// `wujie discuss -- fake-tui-v2{args}` from a shell in tmux (100×30), below twelve lines the
/// shell printed first (as people start it), once the fake TUI shows its box; the shell prints
/// `EXIT=<status>` after it.
fn discuss_in_tmux(env: &Env, name: &str, args: &str) -> Tmux {
    env.install_example("fake-tui-v2");
    let shell = format!(
        "unset WUJIE_RUN_ID WUJIE_ISSUE_ID WUJIE_TOKEN WUJIE_SERVER_URL; cd {work} && seq 1 12 && WUJIE_HOME={home} {WUJIE} discuss -- fake-tui-v2{args}; echo EXIT=$?; sleep 30",
        work = env.work.path().display(),
        home = env.home.path().display(),
    );
    let tmux = Tmux::start(name, &shell, 100, 30);
    tmux.wait_text("Ctrl+D quit");
    tmux
}

#[test]
fn a_person_creates_an_issue_from_a_discussion_in_tmux() {
    let env = Env::new();
    let tmux = discuss_in_tmux(&env, "fake-tui", "");
    tmux.keys(&["-l", "we need a tracker"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("SQLite or PostgreSQL?");
    tmux.keys(&["-l", "sqlite please"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("WAL mode");
    tmux.keys(&["-l", "/wujie"]);
    let menu = tmux.wait_text("/wujiecreateissue");
    let rows: Vec<&str> = menu.lines().collect();
    let input = rows
        .iter()
        .position(|r| r.trim_end() == "> /wujie")
        .unwrap();
    assert!(
        rows[input + 2].contains("Ctrl+D quit") && rows[input + 3].contains("/wujiecreateissue"),
        "the menu comes under the adapter's two margin rows:\n{menu}"
    );
    tmux.keys(&["Enter"]);
    tmux.wait_text("Create the issue and continue in this context");
    tmux.keys(&["Enter"]);
    tmux.keys(&["-l", "carry on"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("done: carry on");
    tmux.keys(&["C-d"]);
    let screen = tmux.wait_text("EXIT=0");
    assert!(screen.contains("became"), "{screen}");

    let issues = env.json(&["issue", "list"]);
    let key = issues[0]["key"].as_str().expect("an issue exists");
    let issue = env.issue(key);
    assert_eq!(issue["runs"][0]["status"], "succeeded");
    assert!(issue["discussion_id"].is_string());
}

#[test]
fn the_menu_is_plain_text_over_an_adapter_that_left_line_drawing_on() {
    let env = Env::new();
    let tmux = discuss_in_tmux(&env, "line-drawing", " --line-drawing");
    tmux.keys(&["-l", "/wujie"]);
    // tmux marks cells drawn in DEC line drawing with SO: the echo of what was typed has it,
    // the menu must not.
    let shown = tmux.wait_styled("the menu", |s| s.contains("/wujiecreateissue"));
    let input_row = shown.lines().find(|l| l.starts_with("> ")).unwrap();
    assert!(input_row.contains("\u{e}/wujie"), "{input_row:?}");
    let menu_row = shown
        .lines()
        .find(|l| l.contains("/wujiecreateissue"))
        .unwrap();
    assert!(!menu_row.contains('\u{e}'), "{menu_row:?}");

    // Closing gives the adapter its character set back: the next letter it echoes is drawn
    // in line drawing too.
    tmux.keys(&["Escape"]);
    tmux.wait_for("the menu to close", |s| !s.contains("/wujiecreateissue"));
    tmux.keys(&["-l", "q"]);
    tmux.wait_styled("the echo of q in line drawing", |s| {
        s.contains("\u{e}/wujieq")
    });
    tmux.keys(&["C-u", "C-d"]);
    tmux.wait_text("EXIT=0");
}
