//! The real Hermes Agent in its chat REPL as an interactive provider
//! (`localrun-providers/hermes`), against the mock model server, driven in tmux like a person:
//! a discussion with a scripted tool call, `/wujie`, create, and the same Hermes session going
//! on in the issue's run; `wujie run KEY -- hermes` with the issue's context reaching the
//! model, and a resume that reports nothing twice.
//!
//! Fails when hermes is not installed, saying to run `scripts/agents/install hermes`, unless
//! `WUJIE_SKIP_AGENTS` lists hermes (or says `all`).

use std::time::Duration;

use wujie_mockllm::Script;
use wujie_mockllm::agents::Agent;
use wujie_testkit::tui_agent::*;

/// Hermes' status bar: it is up and waiting for a prompt.
const READY: &str = "⚕ mock-model";

/// A `terminal` call for `echo hello`, its answer `done`, and `pong` for anything else.
fn script() -> Script {
    Script::from_json(
        r#"{"turns": [
            {"when": {"user_contains": "echo hello"},
             "reply": {"text": "Running it.",
                       "tool_calls": [{"tool": "terminal", "arguments": {"command": "echo hello"}}]}},
            {"when": {"tool_result_contains": "hello"},
             "reply": {"text": "done", "usage": {"input_tokens": 20, "output_tokens": 2}}},
            {"when": {}, "reply": {"text": "pong"}}
        ]}"#,
    )
    .expect("script")
}

/// Hermes takes a while to start (it probes the model server first).
const UI: Ui = Ui {
    ready: READY,
    starts_within: Duration::from_secs(180),
    cols: 110,
    rows: 40,
};

fn require_hermes() -> Option<TuiAgent> {
    TuiAgent::require(Agent::Hermes, script(), UI)
}

/// Whether Hermes shows a line that is `text` (its answers are indented in a box).
fn shows(screen: &str, text: &str) -> bool {
    screen.lines().any(|l| l.trim() == text)
}

/// Whether Hermes shows `pong` under the prompt `prompt` (not only an earlier answer).
fn pong_after(screen: &str, prompt: &str) -> bool {
    screen
        .lines()
        .skip_while(|l| !l.contains(prompt))
        .any(|l| l.trim() == "pong")
}

/// The session id Hermes shows in its banner (`Session: 20261201_071244_ec618d`).
fn banner_session(screen: &str) -> String {
    screen
        .lines()
        .find_map(|l| l.split("Session: ").nth(1))
        .map(|rest| rest.split_whitespace().next().unwrap_or("").to_owned())
        .unwrap_or_else(|| panic!("no session in the banner:\n{screen}"))
}

#[test]
fn a_hermes_discussion_with_a_tool_call_becomes_an_issue_and_keeps_going() {
    let Some(hermes) = require_hermes() else {
        return;
    };
    let tmux = hermes.tmux("hermes-discuss", "discuss -- hermes --yolo");
    let session = banner_session(&tmux.screen());
    say(&tmux, "please run echo hello");
    tmux.wait_settled("the answer after the tool call", |s| {
        shows(s, "done") && s.contains("❯")
    });

    let menu = open_wujie_menu(&tmux);
    let input_row = menu.lines().position(|l| l.starts_with("❯ /wujie"));
    let menu_row = menu.lines().position(|l| l.contains("/wujiecreateissue"));
    assert!(
        matches!((input_row, menu_row), (Some(i), Some(m)) if m > i),
        "the menu opens under Hermes' input line:\n{menu}"
    );
    hermes.create_from_menu(&tmux);
    assert!(shows(&tmux.screen(), "done"), "{}", tmux.screen());

    say(&tmux, "go ahead");
    tmux.wait_for("the next answer", |s| shows(s, "pong"));
    quit_ok(&tmux);

    let shown = hermes.assert_promoted_then_ran();
    assert_eq!(shown["native_session_ids"], serde_json::json!([session]));
    hermes.shutdown();
}

#[test]
fn hermes_on_an_issue_gets_its_context_and_a_resume_reports_nothing_twice() {
    let Some(hermes) = require_hermes() else {
        return;
    };
    let key = hermes.create_context_issue();
    let tmux = hermes.tmux("hermes-run", &format!("run {key} -- hermes --yolo"));
    let session = banner_session(&tmux.screen());
    say(&tmux, "hi");
    tmux.wait_for("the answer", |s| shows(s, "pong"));
    quit_ok(&tmux);
    drop(tmux);
    hermes.assert_context_reached_the_model();

    let tmux = hermes.tmux(
        "hermes-resume",
        &format!("run {key} -- hermes --yolo --resume {session}"),
    );
    say(&tmux, "again");
    tmux.wait_settled("the second answer", |s| pong_after(s, "again"));
    quit_ok(&tmux);

    let issue = hermes.env.issue(&key);
    let runs = issue["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{issue:#}");
    assert_a_run_holds_only(&issue, "hi", "the first run has its turn");
    assert_a_run_holds_only(&issue, "again", "the resumed run has only its own turn");
    // The resumed run counts only its own tokens: one turn answered like the first run's, not
    // the session's total (which would add the first run's again).
    let input_tokens = |prompt: &str| -> u64 {
        let run = runs
            .iter()
            .find(|r| said(&r["messages"])[0].1 == prompt)
            .unwrap();
        run["usage"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["input_tokens"].as_u64().unwrap())
            .sum()
    };
    let (input, first_input) = (input_tokens("again"), input_tokens("hi"));
    assert!(input > 0 && input <= first_input, "{issue:#}");
    hermes.shutdown();
}

#[test]
fn discuss_with_hermes_resume_lands_on_the_same_discussion_without_duplicates() {
    let Some(hermes) = require_hermes() else {
        return;
    };
    let tmux = hermes.tmux("hermes-discuss-1", "discuss -- hermes --yolo");
    let session = banner_session(&tmux.screen());
    say(&tmux, "first");
    tmux.wait_for("the first answer", |s| shows(s, "pong"));
    quit_ok(&tmux);
    drop(tmux);

    let tmux = hermes.tmux(
        "hermes-discuss-2",
        &format!("discuss -- hermes --yolo --resume {session}"),
    );
    say(&tmux, "second");
    tmux.wait_settled("the second answer", |s| pong_after(s, "second"));
    quit_ok(&tmux);

    let shown = hermes.only_discussion();
    assert_eq!(
        said(&shown["entries"]),
        pong_turns(&["first", "second"]),
        "{shown:#}"
    );
    assert_eq!(shown["native_session_ids"], serde_json::json!([session]));
    hermes.shutdown();
}

/// `/new` in Hermes' REPL moves it to a new session: the turn there is synced to the same run.
#[test]
fn a_hermes_turn_after_new_is_synced_too() {
    let Some(hermes) = require_hermes() else {
        return;
    };
    let key = hermes.env.create_issue("two sessions");
    let tmux = hermes.tmux("hermes-new", &format!("run {key} -- hermes --yolo"));
    say(&tmux, "first question");
    tmux.wait_for("the first answer", |s| pong_after(s, "first question"));
    say(&tmux, "/new");
    // Hermes may ask to confirm that the conversation is left (it did in some runs).
    let asked = tmux.wait_for("the new session or Hermes' question", |s| {
        s.contains("New session started!") || s.contains("Approve Once")
    });
    if !asked.contains("New session started!") {
        // "Approve Once" takes the key itself.
        tmux.keys(&["-l", "1"]);
    }
    tmux.wait_settled("the new session", |s| {
        s.contains("New session started!") && s.contains(READY)
    });
    say(&tmux, "second question");
    tmux.wait_settled("the second answer", |s| pong_after(s, "second question"));
    quit_ok(&tmux);
    drop(tmux);

    let run = first_run_succeeded(&hermes.env, &key, "hermes");
    assert_eq!(
        of_kinds(said(&run["messages"]), &["user_input", "final"]),
        pong_turns(&["first question", "second question"]),
        "{run:#}"
    );
    hermes.shutdown();
}

/// Ctrl+Z under `wujie run`: the shell gets its terminal in its own modes, and after `fg`
/// Hermes answers a prompt.
#[test]
fn ctrl_z_stops_hermes_for_the_shell_and_fg_brings_it_back() {
    let Some(hermes) = require_hermes() else {
        return;
    };
    let key = hermes.env.create_issue("stop and go on");
    let tmux = hermes.shell("hermes-ctrl-z", &format!("run {key} -- hermes --yolo"));
    let (modes, _) = ctrl_z_then_fg(&tmux, UI.starts_within, |s| s.contains(READY));
    tmux.wait_modes(&modes.running);
    say(&tmux, "back after fg");
    tmux.wait_for("the answer after fg", |s| pong_after(s, "back after fg"));
    hermes.shutdown();
}
