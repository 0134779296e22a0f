//! Job control in an interactive shell (bash in tmux): Ctrl+Z, or SIGTSTP to `wujie`, stops
//! the session like any shell job — the adapter stops with it, the shell reports the job as
//! stopped and has the terminal — and `fg` brings both back: raw mode again, the adapter
//! redraws and takes the keys. A menu or card up at the stop is up again after it (on a PTY
//! of the test's own, which continues `wujie` as `fg` does). The terminal modes a full-screen
//! adapter set (alternate screen, hidden cursor, mouse) are left for the shell while stopped,
//! and set again after `fg`.

use std::path::Path;

use nix::sys::signal::Signal;
use wujie_testkit::term::*;
use wujie_testkit::*;

/// bash in tmux, with `wujie ARGS` started under some shell output, once the adapter is up.
fn bash_in_tmux(env: &Env, name: &str, args: &str) -> Tmux {
    env.install_example("fake-tui-v2");
    let shell = format!(
        "cd {work} && exec env -i PATH=\"$PATH\" HOME={home} TERM=xterm-256color \
         WUJIE_HOME={home} PS1='$ ' bash --norc --noprofile -i",
        work = env.work.path().display(),
        home = env.home.path().display(),
    );
    let tmux = Tmux::start(name, &shell, 100, 30);
    tmux.wait_for("the prompt", |s| s.trim_end().ends_with('$'));
    tmux.keys(&["-l", &format!("seq 1 3; {WUJIE} {args}")]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("Ctrl+D quit");
    tmux
}

/// The state letter (`/proc/PID/stat`) of process `pid`.
fn state_of_pid(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// The process running in `cwd` whose command line contains `program`.
fn pid_of(program: &str, cwd: &Path) -> Option<i32> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let here = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
        if String::from_utf8_lossy(&cmdline).contains(program) && here.as_deref() == Some(cwd) {
            return pid.parse().ok();
        }
    }
    None
}

/// The state letter of the process running in `cwd` whose command line contains `program`.
fn state_of(program: &str, cwd: &Path) -> Option<char> {
    state_of_pid(pid_of(program, cwd)?)
}

fn stopped_and_back(name: &str, stop: impl FnOnce(&Env, &Tmux)) {
    let env = Env::new();
    let tmux = bash_in_tmux(&env, name, "discuss -- fake-tui-v2");
    tmux.keys(&["-l", "hel"]);
    tmux.wait_text("> hel");
    stop(&env, &tmux);
    tmux.wait_text("Stopped");
    let adapter = "wujie-localrun-fake-tui";
    wait_until(30, "the adapter to stop with wujie", || {
        state_of(adapter, env.work.path()) == Some('T')
    });
    // The shell has the terminal, with its own settings.
    tmux.keys(&["-l", "echo shell-$((6*7))"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("shell-42");

    tmux.keys(&["-l", "fg"]);
    tmux.keys(&["Enter"]);
    wait_until(30, "the adapter to go on", || {
        state_of(adapter, env.work.path()).is_some_and(|s| s != 'T')
    });
    // It redrew its box (with the line it had) under what the shell printed.
    let back = tmux.wait_for("the adapter's redraw", |s| {
        s.rfind("> hel")
            .is_some_and(|at| s.find("shell-42").is_some_and(|shell| shell < at))
    });
    assert!(back.contains("Ctrl+D quit"), "{back}");
    tmux.keys(&["-l", "lo"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("agent: SQLite or PostgreSQL?");
    tmux.keys(&["C-d"]);
    tmux.wait_text("is still open");
    tmux.keys(&["-l", "echo EXIT=$?"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("EXIT=0");
}

#[test]
fn ctrl_z_stops_the_session_and_fg_brings_it_back() {
    stopped_and_back("ctrl-z", |_, tmux| tmux.keys(&["C-z"]));
}

#[test]
fn sigtstp_to_wujie_stops_the_session_and_fg_brings_it_back() {
    stopped_and_back("sigtstp", |env, _| {
        let pid = wait_for_wujie("this test's wujie", |pid, _, _| {
            std::fs::read_link(format!("/proc/{pid}/cwd"))
                .ok()
                .as_deref()
                == Some(env.work.path())
        });
        assert!(signal_pid(pid, nix::sys::signal::Signal::SIGTSTP));
    });
}

/// `wujie ARGS` with the adapter drawing full-screen: Ctrl+Z gives the shell its screen, its
/// cursor and no mouse reporting; `fg` gives the adapter its modes back and a repaint.
fn full_screen_stopped_and_back(env: &Env, name: &str, args: &str) {
    let tmux = bash_in_tmux(env, name, &format!("{args} -- fake-tui-v2 --fullscreen"));
    tmux.wait_modes("1 0 1");
    tmux.keys(&["-l", "hel"]);
    tmux.wait_text("> hel");
    tmux.keys(&["C-z"]);
    let stopped = tmux.wait_text("Stopped");
    assert_eq!(tmux.modes(), "0 1 0", "{stopped}");
    // The shell's screen, as it was before the adapter started.
    assert!(
        stopped.contains("\n3\n") && !stopped.contains("> hel"),
        "{stopped}"
    );
    tmux.keys(&["-l", "echo shell-$((6*7))"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("shell-42");
    assert_eq!(tmux.modes(), "0 1 0");

    tmux.keys(&["-l", "fg"]);
    tmux.keys(&["Enter"]);
    tmux.wait_modes("1 0 1");
    let back = tmux.wait_text("Ctrl+D quit");
    assert!(!back.contains("shell-42"), "repainted in full: {back}");
    tmux.keys(&["-l", "lo"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("agent: SQLite or PostgreSQL?");
    tmux.keys(&["C-d"]);
    tmux.wait_for("the shell's prompt after wujie's last word", |s| {
        s.trim_end().ends_with('$') && (s.contains("is still open") || s.contains("succeeded"))
    });
    assert_eq!(tmux.modes(), "0 1 0");
    tmux.keys(&["-l", "echo EXIT=$?"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("EXIT=0");
}

#[test]
fn an_adapter_killed_in_full_screen_leaves_the_shell_its_screen_and_modes() {
    let env = Env::new();
    let tmux = bash_in_tmux(&env, "killed-full", "discuss -- fake-tui-v2 --fullscreen");
    tmux.wait_modes("1 0 1");
    let adapter = pid_of("wujie-localrun-fake-tui", env.work.path()).expect("the adapter");
    assert!(signal_pid(adapter, Signal::SIGKILL));
    // It could not leave its modes itself: wujie does, and the shell has its screen back.
    let shell = tmux.wait_for("the shell's prompt on its own screen", |s| {
        s.contains("\n3\n") && s.trim_end().ends_with('$')
    });
    assert_eq!(tmux.modes(), "0 1 0", "{shell}");
}

#[test]
fn ctrl_z_leaves_a_full_screen_adapters_modes_to_the_shell_and_fg_sets_them_again() {
    let env = Env::new();
    full_screen_stopped_and_back(&env, "ctrl-z-full", "discuss");
}

#[test]
fn ctrl_z_under_wujie_run_leaves_the_modes_and_fg_sets_them_again() {
    let env = Env::new();
    let key = env.create_issue("full-screen");
    full_screen_stopped_and_back(&env, "ctrl-z-run", &format!("run {key}"));
}

/// An adapter whose manifest says its agent takes Ctrl+Z itself gets the key and `wujie` runs
/// on; a second Ctrl+Z right after stops the session (the agent's own stop would be discarded),
/// and `fg` brings it back.
#[test]
fn an_agent_that_takes_ctrl_z_gets_it_and_a_second_one_stops_the_session() {
    let env = Env::new();
    install_fake_tui_saying(&env, "fake-tui-ctrl-z", "takes_ctrl_z");
    let tmux = bash_in_tmux(
        &env,
        "ctrl-z-taken",
        "discuss -- fake-tui-ctrl-z --fullscreen",
    );
    tmux.wait_modes("1 0 1");

    tmux.keys(&["C-z"]);
    let got = tmux.wait_text("agent: got Ctrl+Z");
    assert!(!got.contains("Stopped"), "{got}");
    assert_eq!(tmux.modes(), "1 0 1");
    tmux.keys(&["C-z"]);
    tmux.wait_for("bash to report the job stopped", |s| {
        s.contains("Stopped") && s.trim_end().ends_with('$')
    });
    assert_eq!(tmux.modes(), "0 1 0");
    tmux.keys(&["-l", "fg"]);
    tmux.keys(&["Enter"]);
    tmux.wait_modes("1 0 1");
    tmux.wait_text("Ctrl+D quit");
    tmux.keys(&["-l", "hello"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("agent: SQLite or PostgreSQL?");
}

/// Installs the fake TUI as provider `name`, its manifest saying `capability` too.
fn install_fake_tui_saying(env: &Env, name: &str, capability: &str) {
    let dir = env.work.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let adapter = examples().join("fake-tui-v2/wujie-localrun-fake-tui");
    let manifest = serde_json::json!({
        "schema_version": 1,
        "name": name,
        "command": adapter.canonicalize().unwrap(),
        "protocol": V2,
        "capabilities": {"interactive_pty": true, "structured_events": true, capability: true}
    });
    std::fs::write(dir.join("provider.json"), manifest.to_string()).unwrap();
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
}

/// An adapter whose manifest says its agent repaints only on a change of size (`fg` cleared
/// its alternate screen): its terminal is made narrower and set back, and it repaints.
#[test]
fn an_agent_that_repaints_only_on_a_change_of_size_is_back_in_full_after_fg() {
    let env = Env::new();
    install_fake_tui_saying(&env, "fake-tui-resize", "resize_to_repaint");
    let args = "discuss -- fake-tui-resize --fullscreen --size-changes";
    let tmux = bash_in_tmux(&env, "ctrl-z-resize", args);
    tmux.wait_modes("1 0 1");
    tmux.keys(&["C-z"]);
    tmux.wait_text("Stopped");
    assert_eq!(tmux.modes(), "0 1 0");
    tmux.keys(&["-l", "fg"]);
    tmux.keys(&["Enter"]);
    tmux.wait_modes("1 0 1");
    // Drawn for its own width again last (the hint says the size it drew for).
    tmux.wait_text("Ctrl+D quit · 100x30");
    tmux.keys(&["-l", "hello"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("agent: SQLite or PostgreSQL?");
}

/// Ctrl+Z on the terminal: `wujie` stops, and `gone` leaves the screen with it; then `wujie`
/// is continued as the shell's `fg` does.
fn stop_and_continue(term: &Term, gone: &str) {
    let pid = i32::try_from(term.child.id()).unwrap();
    term.send(b"\x1a");
    wait_until(30, "wujie to stop", || state_of_pid(pid) == Some('T'));
    term.wait_for(&format!("{gone:?} to go with the stop"), |s| {
        !s.contains(gone)
    });
    assert!(signal_pid(pid, Signal::SIGCONT));
}

/// A discussion with one turn done and `/wujie` typed: the menu is up.
fn with_the_menu_up(env: &Env) -> Term {
    env.install_example("fake-tui-v2");
    let term = Term::discuss(env, &[]);
    term.wait_text("Ctrl+D quit");
    term.say("plan storage", "agent: SQLite or PostgreSQL?");
    term.send(b"/wujie");
    term.wait_text("/wujiecreateissue");
    term
}

#[test]
fn the_menu_up_at_a_stop_opens_again_after_it() {
    let env = Env::new();
    let mut term = with_the_menu_up(&env);
    stop_and_continue(&term, "/wujiecreateissue");
    term.wait_for("the menu again", |s| s.contains("/wujiecreateissue"));
    // It is the menu: Enter opens the card, which goes back to the discussion.
    term.send(b"\r");
    term.wait_text("Back to the discussion");
    term.send(b"\x1b");
    term.wait_for("the card to close", |s| {
        !s.contains("Back to the discussion")
    });
    term.send(b"\x04");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}\n{}", term.contents());
}

#[test]
fn the_card_up_at_a_stop_is_up_again_after_it_and_still_decides() {
    let env = Env::new();
    let mut term = with_the_menu_up(&env);
    term.send(b"\r");
    term.wait_text("Back to the discussion");
    stop_and_continue(&term, "Back to the discussion");
    term.wait_text("Back to the discussion");
    term.send(b"\r");
    term.wait_text("created WUJ-1");
    term.send(b"\x04");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}\n{}", term.contents());
    let issues = env.json(&["issue", "list"]);
    assert_eq!(issues.as_array().unwrap().len(), 1, "{issues}");
}
