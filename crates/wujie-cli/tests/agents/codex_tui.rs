//! The real Codex CLI in its own terminal UI through the built-in `codex` provider,
//! against the mock model server, driven in tmux like a person: plan, `/wujie`, create the
//! issue from the card, keep going in the same Codex session. Codex draws its inline viewport
//! at absolute positions, so this is where an overlay that moved the agent's rows would show.
//!
//! Fails when Codex is not installed, saying to run `scripts/agents/install codex`, unless
//! `WUJIE_SKIP_AGENTS` lists codex (or says `all`).

use wujie_mockllm::Script;
use wujie_mockllm::agents::Agent;
use wujie_testkit::*;

const COMPOSER: &str = "Ask Codex to do anything";

/// The screen's rows from the first non-blank one to the last non-blank one.
fn inked_rows(screen: &str) -> Vec<&str> {
    let rows: Vec<&str> = screen.lines().collect();
    let inked = |r: &&str| !r.trim().is_empty();
    let first = rows.iter().position(inked).unwrap_or(0);
    let last = rows.iter().rposition(inked).map_or(0, |i| i + 1);
    rows[first..last.max(first)].to_vec()
}

/// Types `text`, then Enter a moment later: Codex takes keys that arrive together with the
/// text as part of a paste, where Enter is a newline rather than "send".
fn say(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    tmux.wait_text(&format!("› {text}"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    tmux.keys(&["Enter"]);
}

/// [`say`] `text`, then wait for the mock's answer under it.
fn say_and_see_pong(tmux: &Tmux, text: &str) {
    say(tmux, text);
    tmux.wait_for(&format!("the answer to {text:?}"), |s| {
        s.split(text)
            .nth(1)
            .is_some_and(|after| after.contains("• pong"))
    });
}

#[test]
fn codex_in_its_own_terminal_ui_becomes_an_issue_and_keeps_going() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // Without a script the mock answers every request with `pong`.
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Codex, Script::default())
    else {
        return;
    };
    let env = Env::new();

    let tmux = tui_agent::start_wujie_below_output(&env, &home, "codex", "discuss -- codex");
    tmux.wait_text(COMPOSER);
    say(&tmux, "plan the storage layer");
    tmux.wait_text("• pong");
    say(&tmux, "use sqlite");
    let before = tmux.wait_settled("the second answer", |s| {
        s.matches("• pong").count() == 2 && s.contains(COMPOSER)
    });

    tmux.keys(&["-l", "/wujie"]);
    let menu = tmux.wait_text("/wujiecreateissue");
    assert!(menu.contains("› /wujie"), "{menu}");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Create the issue and continue in this context");
    tmux.keys(&["Enter"]);
    tmux.wait_text("wujie: created WUJ-1");
    // The notice closes by itself; Codex's rows are as they were (those scrolled away to make
    // room come back blank at the top).
    let after = tmux.wait_settled("the notice to close", |s| {
        !s.contains("wujie: created") && s.contains(COMPOSER)
    });
    // Compared as a block: Codex's viewport may sit a few rows higher afterwards, because it
    // grows for its own slash-command popup while the erased `/wujie` passes through `/w`
    // and does not shrink back (as when a person types and deletes it).
    let (kept, all) = (inked_rows(&after), inked_rows(&before));
    assert!(kept.len() >= 10, "most of the screen is kept:\n{after}");
    assert_eq!(
        kept,
        all[all.len().saturating_sub(kept.len())..],
        "Codex's rows moved\nbefore:\n{before}\nafter:\n{after}"
    );

    // The same Codex session goes on; what it says now belongs to the issue's run.
    say(&tmux, "go ahead");
    tmux.wait_for("the third answer", |s| s.matches("• pong").count() >= 3);
    // Codex shows the answer before it ends the turn; a Ctrl+C in between would abort the turn
    // (its answer then is not final and its usage never comes), so quit only once the issue
    // holds the finished turn.
    wait_until(60, "the third turn to be synced as finished", || {
        let run = &env.issue("WUJ-1")["runs"][0];
        let finished = run["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["type"] == "final"));
        finished && run["usage"].as_array().is_some_and(|u| !u.is_empty())
    });
    // Ctrl+C on an idle, empty composer quits Codex; one that comes while the turn is still
    // finishing only ends the turn, so it is pressed again until Codex is gone (the shell
    // ignores it once wujie has exited).
    let end = (0..10)
        .find_map(|_| {
            tmux.keys(&["C-c"]);
            tmux.poll_for(std::time::Duration::from_secs(3), |s| s.contains("EXIT="))
        })
        .unwrap_or_else(|| panic!("Codex did not quit on Ctrl+C:\n{}", tmux.screen()));
    assert!(end.contains("EXIT=0"), "{end}");

    let issue = env.issue("WUJ-1");
    assert_eq!(issue["title"], "plan the storage layer");
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "codex");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    let said: Vec<(String, String)> = run["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["type"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        said,
        [
            ("user_input".to_owned(), "go ahead".to_owned()),
            ("final".to_owned(), "pong".to_owned())
        ],
        "{run:#}"
    );
    assert!(!run["usage"].as_array().unwrap().is_empty(), "{run:#}");
    let discussion = &env.json(&["discussion", "list"])[0];
    assert_eq!(discussion["status"], "promoted");
    let entries = env.json(&["discussion", "show", discussion["id"].as_str().unwrap()]);
    let kinds: Vec<&str> = entries["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["user_input", "final", "user_input", "final"]);
    runtime.block_on(mock.shutdown());
}

/// `/new` starts another Codex thread, in a rollout of its own: the turn after it is this
/// run's too, and is synced (before, only the first rollout was read).
#[test]
fn codex_turn_after_new_is_synced_too() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Codex, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("two threads");
    let tmux = tui_agent::start_wujie(&env, &home, "codex-new", &format!("run {key} -- codex"));
    tmux.wait_text(COMPOSER);
    say(&tmux, "first question");
    tmux.wait_text("• pong");
    tmux.wait_text(COMPOSER);
    say(&tmux, "/new");
    tmux.wait_for("the new thread", |s| !s.contains("• pong"));
    tmux.wait_text(COMPOSER);
    say(&tmux, "second question");
    tmux.wait_text("• pong");
    wait_until(60, "both turns to be synced", || {
        let run = &env.issue(&key)["runs"][0];
        let said = tui_agent::said(&run["messages"]);
        said.iter().filter(|(kind, _)| kind == "final").count() == 2
    });
    let run = &env.issue(&key)["runs"][0];
    let prompts = tui_agent::of_kinds(tui_agent::said(&run["messages"]), &["user_input"]);
    assert_eq!(
        prompts,
        tui_agent::pairs(&[
            ("user_input", "first question"),
            ("user_input", "second question")
        ]),
        "{run:#}"
    );
    drop(tmux);
    runtime.block_on(mock.shutdown());
}

/// Ctrl+Z under `wujie run`: Codex stops itself, as it does in a shell, so the shell gets its
/// terminal in its own modes; after `fg` Codex draws its composer under what the shell printed
/// meanwhile, which stays, as does the scrollback above the run (a repaint forced by a change
/// of size made Codex clear both), and what is typed lands in its composer: it answers a
/// prompt. SIGTSTP sent to `wujie` still stops it, and it answers after that `fg` too.
#[test]
fn ctrl_z_stops_codex_for_the_shell_and_fg_brings_its_composer_back() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Codex, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("stop and go on");
    let run = format!("run {key} -- codex");
    let tmux = tui_agent::start_wujie_in_shell(&env, &home, "codex-ctrl-z", &run, (100, 30));
    tmux.wait_text(COMPOSER);
    tui_agent::ctrl_z_then_fg(&tmux, std::time::Duration::from_secs(60), |s| {
        s.split("shell-42")
            .nth(1)
            .is_some_and(|after| after.contains(COMPOSER) && after.contains("for shortcuts"))
    });
    say_and_see_pong(&tmux, "back after fg");
    let history = tmux.tmux(&["capture-pane", "-p", "-S", "-300"]);
    let seq_lines = history
        .lines()
        .filter(|l| l.trim().parse::<u32>().is_ok_and(|n| (1..=12).contains(&n)))
        .count();
    assert_eq!(
        seq_lines, 12,
        "the shell's output above the run:\n{history}"
    );

    // SIGTSTP to `wujie` stops Codex's group from outside; after `fg` it is made to repaint
    // (by a change of size) and answers again.
    let wujie = tui_agent::wujie_run_in(&home);
    let stop = || assert!(signal_pid(wujie, nix::sys::signal::Signal::SIGTSTP));
    tui_agent::stop_then_fg(&tmux, stop, std::time::Duration::from_secs(60), |s| {
        s.contains(COMPOSER)
    });
    say_and_see_pong(&tmux, "back again");
    runtime.block_on(mock.shutdown());
}

/// Ctrl+Z in `wujie discuss`: Codex stops itself and, after `fg`, comes back with its input
/// line as it was, so `/wujie` typed then opens the menu (the key given to Codex does not make
/// the line unknown to the trigger).
#[test]
fn after_ctrl_z_and_fg_in_a_codex_discussion_wujie_opens_the_menu() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Codex, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let tmux = tui_agent::start_wujie_in_shell(
        &env,
        &home,
        "codex-discuss-ctrl-z",
        "discuss -- codex",
        (100, 30),
    );
    tmux.wait_text(COMPOSER);
    tui_agent::ctrl_z_then_fg(&tmux, std::time::Duration::from_secs(60), |s| {
        s.split("shell-42")
            .nth(1)
            .is_some_and(|after| after.contains(COMPOSER))
    });
    tmux.keys(&["-l", "/wujie"]);
    tmux.wait_text("/wujiecreateissue");
    tmux.keys(&["Escape"]);
    runtime.block_on(mock.shutdown());
}
