//! The built-in `codex` provider through the real `wujie` binary: the real Codex CLI in its own
//! terminal UI, driven in tmux against the mock model server, bound to an issue: a prompt whose
//! answer runs a tool, usage as the mock counted it, the issue as Codex's developer
//! instructions; then a resume of the same thread; and the error a user sees without Codex.
//! (`codex_tui.rs` drives `/wujie` in a discussion.)
//!
//! The real-CLI test fails when Codex is not installed, saying to run
//! `scripts/agents/install codex`, unless `WUJIE_SKIP_AGENTS` lists codex (or says `all`).

use serde_json::Value;
use wujie_mockllm::Script;
use wujie_mockllm::agents::{Agent, AgentHome};
use wujie_testkit::*;

const COMPOSER: &str = "Ask Codex to do anything";
const PROMPT: &str = "Run the shell command echo hello";
const CONTEXT_MARKER: &str = "the-storage-layer-needs-sqlite";

/// The prompt gets a text and an `exec_command` of `echo hello` (usage 11/3), its result
/// thinking and the answer `done` (usage 20/2).
fn script() -> Script {
    Script::from_json(include_str!(
        "../../../wujie-builtins/tests/fixtures/codex_echo_hello.script.json"
    ))
    .expect("the fixture script parses")
}

/// Types `text`, then Enter a moment later (keys arriving with the text count as a paste).
fn say(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    tmux.wait_text(&format!("› {text}"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    tmux.keys(&["Enter"]);
}

/// Ctrl+C until Codex is gone (one that comes while a turn finishes only ends the turn).
fn quit(tmux: &Tmux) -> String {
    (0..10)
        .find_map(|_| {
            tmux.keys(&["C-c"]);
            tmux.poll_for(std::time::Duration::from_secs(3), |s| s.contains("EXIT="))
        })
        .unwrap_or_else(|| panic!("Codex did not quit on Ctrl+C:\n{}", tmux.screen()))
}

fn said(run: &Value) -> Vec<(String, String)> {
    tui_agent::said_with_tools(&run["messages"], tui_agent::tool_name)
}

/// The thread ids of Codex's rollout logs (`rollout-<ts>-<id>.jsonl`; the id is a UUID).
fn thread_ids(home: &AgentHome) -> Vec<String> {
    let mut ids = Vec::new();
    let mut dirs = vec![home.home().join(".codex/sessions")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Some(name) = path.file_name().and_then(|n| n.to_str())
                && let Some(stem) = name.strip_suffix(".jsonl")
                && stem.len() > 36
            {
                ids.push(stem[stem.len() - 36..].to_owned());
            }
        }
    }
    ids
}

#[test]
fn codex_in_its_own_terminal_ui_reports_a_tool_run_with_usage_and_the_issue_as_context() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Codex, script()) else {
        return;
    };
    let env = Env::new();
    let key = tui_agent::create_marked_issue(&env, CONTEXT_MARKER);

    // Without asking before it runs a command: the test does not answer approval prompts.
    let tmux = tui_agent::start_wujie(
        &env,
        &home,
        "codex-run",
        &format!("run {key} -- codex --dangerously-bypass-approvals-and-sandbox"),
    );
    tmux.wait_text(COMPOSER);
    say(&tmux, PROMPT);
    tmux.wait_for("the answer", |s| s.contains("• done"));
    // Codex draws the answer a moment before it logs the turn's end (`task_complete`), which
    // is what makes the answer the turn's final: wait for that to be synced before quitting,
    // as a person reads the answer before leaving. (Quitting in between reports it as text.)
    wait_until(30, "the turn's final answer to be synced", || {
        env.issue(&key)["runs"][0]["messages"]
            .as_array()
            .is_some_and(|messages| messages.iter().any(|m| m["type"] == "final"))
    });
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let run = &tui_agent::first_run_succeeded(&env, &key, "codex");
    let expected = tui_agent::pairs(&[
        ("user_input", PROMPT),
        ("text", "I will run it."),
        ("tool_use", r#"exec_command {"cmd":"echo hello"}"#),
        ("tool_result", "exec_command"),
        ("thinking", "It worked."),
        ("final", "done"),
    ]);
    assert_eq!(said(run), expected, "{run:#}");
    let result = &run["messages"][3]["output"];
    assert!(
        result.as_str().is_some_and(|o| o.contains("hello")),
        "{run:#}"
    );

    // Usage: each request the mock answered, as it counted it. (Codex's terminal UI also
    // sends a request no scripted turn matches; the mock refuses it with 400 and no usage.)
    let answered: Vec<_> = mock
        .model_requests()
        .into_iter()
        .filter(|r| r.status == 200)
        .collect();
    assert_eq!(
        answered.len(),
        2,
        "two answered model requests: {answered:#?}"
    );
    let usage = tui_agent::usage_of(run);
    assert_eq!(usage, [(11, 3), (20, 2)], "{run:#}");

    // The issue reached the model as developer instructions, not as the user's message.
    let first = answered[0].body["input"].as_array().expect("input items");
    let carrying: Vec<&Value> = first
        .iter()
        .filter(|item| item.to_string().contains(CONTEXT_MARKER))
        .collect();
    assert_eq!(carrying.len(), 1, "{first:#?}");
    assert_eq!(carrying[0]["role"], "developer", "{first:#?}");
    drop(tmux);

    // A resume of the same thread reports nothing of what it already had.
    let ids = thread_ids(&home);
    assert_eq!(ids.len(), 1, "{ids:?}");
    // By its id (the log is known before Codex starts): quit at once.
    let tmux = tui_agent::start_wujie(
        &env,
        &home,
        "codex-resume",
        &format!("run {key} -- codex resume {}", ids[0]),
    );
    tmux.wait_text(COMPOSER);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
    // As `--last` (Codex picks the log; it is found once Codex holds it open, on the first
    // new record): the same prompt again reports only the new turn.
    let tmux = tui_agent::start_wujie(
        &env,
        &home,
        "codex-last",
        &format!("run {key} -- codex --dangerously-bypass-approvals-and-sandbox resume --last"),
    );
    tmux.wait_text(COMPOSER);
    say(&tmux, PROMPT);
    tmux.wait_for("the second answer", |s| s.matches("• done").count() >= 2);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let issue = env.issue(&key);
    let runs = issue["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{issue:#}");
    let (quiet, again): (Vec<&Value>, Vec<&Value>) = runs
        .iter()
        .filter(|r| r["id"] != run["id"])
        .partition(|r| r["messages"] == serde_json::json!([]));
    assert_eq!((quiet.len(), again.len()), (1, 1), "{issue:#}");
    assert_eq!(quiet[0]["usage"], serde_json::json!([]), "{issue:#}");
    assert_eq!(said(again[0]), expected, "only the new turn: {issue:#}");
    let usage = tui_agent::usage_of(again[0]);
    assert_eq!(usage, [(11, 3), (20, 2)], "{issue:#}");
    assert_eq!(thread_ids(&home), ids, "both resumed the same thread");
    runtime.block_on(mock.shutdown());
}

#[test]
fn without_codex_the_adapter_says_what_it_looked_for() {
    let env = Env::new();
    let err = tui_agent::adapter_without_agent(&env, "codex", "WUJIE_CODEX_BIN");
    assert!(
        err.contains("codex") && err.contains("WUJIE_CODEX_BIN") && err.contains("npm install"),
        "{err}"
    );
    tui_agent::assert_built_in_interactive(&env, "codex");
}
