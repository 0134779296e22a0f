//! The real Grok Build in its own terminal UI as an interactive provider
//! (`localrun-providers/grok`), against the mock model server, driven in tmux like a person:
//! a discussion with a scripted tool call, `/wujie`, create, and the same grok session going on
//! in the issue's run; `wujie run KEY -- grok` with the issue's context reaching the model, and
//! a resume that reports nothing twice; `/new` and `/resume` in the TUI re-binding the sync.
//!
//! Fails when grok is not installed, saying to run `scripts/agents/install grok`, unless
//! `WUJIE_SKIP_AGENTS` lists grok (or says `all`).

use std::time::Duration;

use wujie_mockllm::Script;
use wujie_mockllm::agents::Agent;
use wujie_testkit::tui_agent::*;
use wujie_testkit::*;

/// The bottom hint line of grok's TUI: it is up and waiting for a prompt.
const READY: &str = "Shift+Tab:mode";

/// A tool call for `echo hello`, its answer `done`, and `pong` for anything else.
fn script() -> Script {
    Script::from_json(
        r#"{"turns": [
            {"when": {"user_contains": "echo hello"},
             "reply": {"tool_calls": [{"tool": "run_terminal_command",
                       "arguments": {"command": "echo hello", "description": "say hello"}}]}},
            {"when": {"tool_result_contains": "hello"},
             "reply": {"thinking": "It worked.", "text": "done",
                       "usage": {"input_tokens": 20, "output_tokens": 2}}},
            {"when": {}, "reply": {"text": "pong"}}
        ]}"#,
    )
    .expect("script")
}

/// Grok's TUI, inline (the sample runs it with --no-alt-screen).
const UI: Ui = Ui {
    ready: READY,
    starts_within: Duration::from_secs(60),
    cols: 100,
    rows: 32,
};

/// None when grok is skipped (which the harness says).
fn require_grok() -> Option<TuiAgent> {
    TuiAgent::require(Agent::Grok, script(), UI)
}

/// The session directories grok wrote.
fn grok_sessions(grok: &TuiAgent) -> Vec<String> {
    let mut ids: Vec<String> = glob_dirs(&grok.home.home().join(".grok").join("sessions"));
    ids.sort();
    ids
}

/// Names of the directories two levels under `root` (sessions/<cwd>/<id>).
fn glob_dirs(root: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for cwd in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for session in std::fs::read_dir(cwd.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if session.path().join("updates.jsonl").exists() {
                found.push(session.file_name().to_string_lossy().into_owned());
            }
        }
    }
    found
}

/// Whether grok shows a conversation line starting with `text` (its lines carry a time on
/// the right).
fn shows(screen: &str, text: &str) -> bool {
    screen.lines().any(|l| {
        let l = l.trim();
        l == text || l.starts_with(&format!("{text} "))
    })
}

/// The screen's rows from the first non-blank one to the last, without the gutter mark grok
/// moves between blocks as it redraws (`❙`).
fn inked_rows(screen: &str) -> Vec<String> {
    let rows: Vec<String> = screen.lines().map(|l| l.replace('❙', " ")).collect();
    let inked = |r: &String| !r.trim().is_empty();
    let first = rows.iter().position(inked).unwrap_or(0);
    let last = rows.iter().rposition(inked).map_or(0, |i| i + 1);
    rows[first..last.max(first)].to_vec()
}

/// Whether grok shows `pong` under the prompt `prompt` (not only an earlier answer).
fn pong_after(screen: &str, prompt: &str) -> bool {
    screen
        .lines()
        .skip_while(|l| !l.contains(&format!("❯ {prompt}")))
        .any(|l| shows(l, "pong"))
}

#[test]
fn a_grok_discussion_with_a_tool_call_becomes_an_issue_and_keeps_going() {
    let Some(grok) = require_grok() else {
        return;
    };
    let tmux = grok.tmux("grok-discuss", "discuss -- grok --always-approve");
    say(&tmux, "please run echo hello");
    let before = tmux.wait_settled("the answer after the tool call", |s| {
        shows(s, "done") && s.contains(READY)
    });
    assert!(
        before.contains("say hello"),
        "the tool call is shown:\n{before}"
    );

    let menu = open_wujie_menu(&tmux);
    // The menu opens under grok's input box (inline: grok runs with --no-alt-screen), and
    // grok's conversation is still on the screen above it.
    let box_row = menu.lines().position(|l| l.contains("❯ /wujie"));
    let menu_row = menu.lines().position(|l| l.contains("/wujiecreateissue"));
    assert!(
        matches!((box_row, menu_row), (Some(b), Some(m)) if m > b),
        "menu under the input box:\n{menu}"
    );
    assert!(shows(&menu, "done"), "{menu}");
    let after = grok.create_from_menu(&tmux);
    // Grok's screen is intact: its rows are where grok drew them (the menu and card needed
    // rows under the input box, at the bottom of the window: what was scrolled up to make room
    // is scrolled back, and the rows that left the top of the screen come back blank).
    let (kept, all) = (inked_rows(&after), inked_rows(&before));
    assert!(kept.len() >= 20, "most of the screen is kept:\n{after}");
    assert_eq!(
        kept,
        all[all.len().saturating_sub(kept.len())..],
        "grok's rows moved\nbefore:\n{before}\nafter:\n{after}"
    );
    let row = |s: &str, text: &str| s.lines().position(|l| l.contains(text));
    assert_eq!(row(&after, READY), row(&before, READY));

    // The same grok session goes on; what it says now belongs to the issue's run.
    say(&tmux, "go ahead");
    tmux.wait_for("the third answer", |s| shows(s, "pong"));
    quit_ok(&tmux);

    let shown = grok.assert_promoted_then_ran();
    // One grok session throughout: the one the adapter named with --session-id, recorded
    // on the discussion so that `wujie discuss -- grok --resume ID` finds it.
    let sessions = grok_sessions(&grok);
    assert_eq!(sessions.len(), 1);
    assert_eq!(
        shown["native_session_ids"],
        serde_json::json!(sessions),
        "{shown:#}"
    );
    grok.shutdown();
}

#[test]
fn grok_on_an_issue_gets_its_context_and_resume_or_continue_report_nothing_twice() {
    let Some(grok) = require_grok() else {
        return;
    };
    let key = grok.create_context_issue();

    let tmux = grok.tmux("grok-run", &format!("run {key} -- grok"));
    say(&tmux, "hi");
    tmux.wait_for("the answer", |s| shows(s, "pong"));
    quit_ok(&tmux);
    drop(tmux);
    grok.assert_context_reached_the_model();
    // The context is context, not something the user said (grok wraps the user's text in
    // <user_query>, and sends it for a session title too).
    let users = grok.user_prompts();
    assert!(!users.is_empty());
    for user in &users {
        assert!(
            user.contains("hi") && !user.contains(CONTEXT_TITLE),
            "{users:?}"
        );
    }
    let sessions = grok_sessions(&grok);
    assert_eq!(sessions.len(), 1, "{sessions:?}");

    // Resume the same grok session in a second run: only the new turn is reported.
    let tmux = grok.tmux(
        "grok-resume",
        &format!("run {key} -- grok --resume {}", sessions[0]),
    );
    say(&tmux, "again");
    tmux.wait_for("the second answer", |s| pong_after(s, "again"));
    quit_ok(&tmux);
    drop(tmux);

    // `-c`: grok picks the directory's latest session; the adapter locks onto the one this
    // grok opened (its pid in active_sessions.json) and reports only the new turn.
    let tmux = grok.tmux("grok-continue", &format!("run {key} -- grok -c"));
    say(&tmux, "more");
    tmux.wait_for("the third answer", |s| pong_after(s, "more"));
    quit_ok(&tmux);

    let issue = grok.env.issue(&key);
    assert_eq!(issue["runs"].as_array().unwrap().len(), 3, "{issue:#}");
    assert_a_run_holds_only(&issue, "more", "the continued run has only its own turn");
    assert_a_run_holds_only(&issue, "hi", "the first run has its turn");
    assert_a_run_holds_only(&issue, "again", "the resumed run has only its own turn");
    assert_eq!(
        grok_sessions(&grok),
        sessions,
        "the same session was resumed"
    );
    grok.shutdown();
}

#[test]
fn new_and_resume_in_grok_s_tui_move_the_sync_to_the_session_switched_to() {
    let Some(grok) = require_grok() else {
        return;
    };
    let tmux = grok.tmux("grok-rebind", "discuss -- grok");
    say(&tmux, "first");
    tmux.wait_for("the first answer", |s| shows(s, "pong"));
    // Grok writes its transcript as the answer's block ends, a moment after drawing it.
    wait_until(30, "grok's first transcript", || {
        grok_sessions(&grok).len() == 1
    });
    let first = grok_sessions(&grok);

    // /new: a new grok session at once; the next prompt is written there.
    say(&tmux, "/new");
    tmux.wait_for("a fresh screen", |s| !shows(s, "pong") && s.contains(READY));
    say(&tmux, "second");
    tmux.wait_for("the second answer", |s| shows(s, "pong"));

    // /resume: the picker lists the earlier sessions, newest first; the first one is picked.
    say(&tmux, "/resume");
    tmux.wait_text("Resume session");
    tmux.wait_text("› first");
    let picker = tmux.screen();
    let rows: Vec<&str> = picker.lines().filter(|l| l.contains("› ")).collect();
    let down = rows
        .iter()
        .position(|l| l.contains("› first"))
        .expect("first is listed");
    for _ in 0..down {
        tmux.keys(&["Down"]);
    }
    tmux.keys(&["Enter"]);
    tmux.wait_for("the resumed conversation", |s| {
        s.contains("❯ first") && !s.contains("Resume session")
    });
    say(&tmux, "third");
    tmux.wait_for("the third answer", |s| pong_after(s, "third"));
    quit_ok(&tmux);

    let all = grok_sessions(&grok);
    assert_eq!(all.len(), 2, "{all:?}");
    let shown = grok.show(&grok.env.json(&["discussion", "list"])[0]);
    assert_eq!(
        said(&shown["entries"]),
        pong_turns(&["first", "second", "third"]),
        "every turn once, none of the resumed history again:\n{shown:#}"
    );
    // The sync followed /new to the second session (and /resume back to the first: the third
    // turn above); each native id is recorded once, in the order first seen.
    let second: Vec<&String> = all.iter().filter(|id| **id != first[0]).collect();
    let native: Vec<&str> = shown["native_session_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(native, [first[0].as_str(), second[0].as_str()]);
    grok.shutdown();
}

#[test]
fn discuss_with_grok_s_resume_lands_on_the_same_discussion_without_duplicates() {
    let Some(grok) = require_grok() else {
        return;
    };
    let tmux = grok.tmux("grok-discuss-1", "discuss -- grok");
    say(&tmux, "first");
    tmux.wait_for("the first answer", |s| shows(s, "pong"));
    quit_ok(&tmux);
    drop(tmux);
    let sessions = grok_sessions(&grok);
    assert_eq!(sessions.len(), 1);

    let tmux = grok.tmux(
        "grok-discuss-2",
        &format!("discuss -- grok --resume {}", sessions[0]),
    );
    say(&tmux, "second");
    tmux.wait_for("the second answer", |s| pong_after(s, "second"));
    quit_ok(&tmux);

    let shown = grok.only_discussion();
    assert_eq!(
        said(&shown["entries"]),
        pong_turns(&["first", "second"]),
        "{shown:#}"
    );
    assert_eq!(shown["native_session_ids"], serde_json::json!(sessions));
    grok.shutdown();
}

#[test]
fn a_resized_terminal_reaches_grok_through_the_adapter_s_own_pty() {
    let Some(grok) = require_grok() else {
        return;
    };
    let tmux = grok.tmux("grok-resize", "discuss -- grok");
    // The input box spans the window: its top border is as wide as the window less a margin.
    let border = |s: &str| {
        s.lines()
            .find(|l| l.trim_start().starts_with('╭'))
            .map(|l| l.trim_end().chars().count())
    };
    let wide = border(&tmux.screen()).expect("the input box");
    tmux.tmux(&["resize-window", "-t", "t", "-x", "70", "-y", "32"]);
    let narrow = tmux.wait_for("grok to redraw for 70 columns", |s| {
        border(s).is_some_and(|w| w < wide && w <= 70)
    });
    say(&tmux, "hi");
    tmux.wait_for("the answer", |s| shows(s, "pong"));
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}\n{narrow}");
    grok.shutdown();
}

/// Ctrl+Z under `wujie run`: grok's mouse reporting is left for the shell, and after `fg`
/// grok answers a prompt.
#[test]
fn ctrl_z_stops_grok_for_the_shell_and_fg_brings_it_back() {
    let Some(grok) = require_grok() else {
        return;
    };
    let key = grok.env.create_issue("stop and go on");
    let tmux = grok.shell("grok-ctrl-z", &format!("run {key} -- grok"));
    let (modes, _) = ctrl_z_then_fg(&tmux, UI.starts_within, |s| s.contains(READY));
    tmux.wait_modes(&modes.running);
    say(&tmux, "back after fg");
    tmux.wait_for("the answer after fg", |s| pong_after(s, "back after fg"));
    grok.shutdown();
}
