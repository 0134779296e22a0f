//! The built-in `opencode` provider through the real `wujie` binary: the real opencode in its
//! own terminal UI, driven in tmux against the mock model server. Bound to an issue: a prompt
//! whose answer runs a tool, usage as the mock counted it, the issue as opencode's
//! instructions; then a resume of the same session. In a discussion: `/wujie`, create the
//! issue, the same session going on. And what a user sees without opencode or with an argument
//! the provider cannot work with.
//!
//! The real-CLI tests fail when opencode is not installed, saying to run
//! `scripts/agents/install opencode`, unless `WUJIE_SKIP_AGENTS` lists opencode (or says `all`).

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;
use wujie_mockllm::agents::{Agent, AgentHome};
use wujie_mockllm::{MockLlm, Script};

const PROMPT: &str = "Run the shell command echo hello";
const CONTEXT_MARKER: &str = "the-storage-layer-needs-sqlite";
/// opencode's status line under its input box, there once it is ready for a prompt.
const READY: &str = "ctrl+p commands";
/// What that line says while opencode works on a turn.
const BUSY: &str = "esc interrupt";
/// How long opencode may take to start or to answer on a busy machine (only so a hang fails).
const PATIENCE: Duration = Duration::from_secs(240);

/// The prompt gets a text and a `bash` call of `echo hello` (usage 11/3), its result thinking
/// and the answer `done` (usage 20/2).
fn script() -> Script {
    Script::from_json(include_str!(
        "../../wujie-builtins/tests/fixtures/opencode_echo_hello.script.json"
    ))
    .expect("the fixture script parses")
}

fn with_mock(runtime: &tokio::runtime::Runtime, script: Script) -> Option<(MockLlm, AgentHome)> {
    runtime
        .block_on(Agent::Opencode.with_mock(script))
        .unwrap_or_else(|error| panic!("{error}"))
}

/// `wujie ARGS` in tmux below some earlier output, in the agent's work directory with its
/// environment, then `EXIT=<code>`; once opencode is ready for a prompt.
fn start(env: &Env, home: &AgentHome, name: &str, wujie_args: &str) -> Tmux {
    let shell = format!(
        "seq 1 12; {}",
        tui_agent::agent_shell(home, env, wujie_args)
    );
    let tmux = Tmux::start(name, &shell, 100, 30);
    wait(&tmux, "opencode to start", |s| s.contains(READY));
    tmux
}

fn wait(tmux: &Tmux, what: &str, cond: impl Fn(&str) -> bool) -> String {
    tmux.poll_for(PATIENCE, cond)
        .unwrap_or_else(|| panic!("timed out waiting for {what}; screen:\n{}", tmux.screen()))
}

/// Types `text`, and Enter once opencode shows it in its input box.
fn say(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    wait(tmux, &format!("{text:?} in the input box"), |s| {
        s.lines()
            .any(|l| l.trim_start().starts_with('┃') && l.trim_end().ends_with(text))
    });
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["Enter"]);
}

/// Whether opencode shows `text` as a line of the conversation.
fn shows(screen: &str, text: &str) -> bool {
    screen.lines().any(|l| l.trim() == text)
}

/// Waits for the turn just sent to start and to end with `answer` on the screen.
fn answered(tmux: &Tmux, answer: &str) {
    wait(tmux, "the turn to start", |s| s.contains(BUSY));
    wait(tmux, &format!("the answer {answer:?}"), |s| {
        !s.contains(BUSY) && s.contains(READY) && shows(s, answer)
    });
}

/// `/exit`; the screen with wujie's exit status, and the session opencode names on leaving
/// (`Continue  opencode -s ses_…`).
fn quit(tmux: &Tmux) -> (String, String) {
    say(tmux, "/exit");
    let end = wait(tmux, "wujie to exit", |s| s.contains("EXIT="));
    assert!(end.contains("EXIT=0"), "{end}");
    let session = end
        .lines()
        .find_map(|l| l.split("opencode -s ").nth(1))
        .map(|id| id.trim().to_owned())
        .unwrap_or_else(|| panic!("opencode named its session:\n{end}"));
    (end, session)
}

fn said(messages: &Value) -> Vec<(String, String)> {
    messages
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let kind = m["type"].as_str().unwrap_or_default().to_owned();
            let what = match kind.as_str() {
                "tool_use" => format!("{} {}", m["tool"].as_str().unwrap_or_default(), m["input"]),
                "tool_result" => format!(
                    "{} {}",
                    m["tool"].as_str().unwrap_or_default(),
                    m["output"].as_str().unwrap_or_default().trim()
                ),
                _ => m["content"].as_str().unwrap_or_default().to_owned(),
            };
            (kind, what)
        })
        .collect()
}

fn usage(run: &Value) -> Vec<(u64, u64)> {
    run["usage"]
        .as_array()
        .expect("usage")
        .iter()
        .map(|u| {
            (
                u["input_tokens"].as_u64().unwrap(),
                u["output_tokens"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn opencode_in_its_own_terminal_ui_reports_a_tool_run_with_usage_and_the_issue_as_context() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = with_mock(&runtime, script()) else {
        return;
    };
    let env = Env::new();
    let issue = env.json(&[
        "issue",
        "create",
        "--title",
        "echo something",
        "--description",
        &format!("Remember: {CONTEXT_MARKER}."),
    ]);
    let key = issue["key"].as_str().expect("key").to_owned();

    let tmux = start(
        &env,
        &home,
        "opencode-run",
        &format!("run {key} -- opencode"),
    );
    say(&tmux, PROMPT);
    answered(&tmux, "done");
    let (_, session) = quit(&tmux);
    drop(tmux);

    let run = &env.issue(&key)["runs"][0];
    assert_eq!(run["provider"], "opencode", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    let expected: Vec<(String, String)> = [
        ("user_input", PROMPT),
        ("text", "I will run it."),
        (
            "tool_use",
            r#"bash {"command":"echo hello","description":"Run the command"}"#,
        ),
        ("tool_result", "bash hello"),
        ("thinking", "It worked."),
        ("final", "done"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(said(&run["messages"]), expected, "{run:#}");

    // Usage: each request the mock answered, as it counted it. (opencode also asks for a
    // session title, which no scripted turn matches: the mock refuses it, with no usage.)
    let requests: Vec<_> = mock
        .model_requests()
        .into_iter()
        .filter(|r| r.status == 200)
        .collect();
    assert_eq!(requests.len(), 2, "two answered requests: {requests:#?}");
    assert_eq!(usage(run), [(11, 3), (20, 2)], "{run:#}");

    // The issue reached the model as instructions in the system prompt, not as the user's.
    let messages = requests[0].body["messages"].as_array().expect("messages");
    let carrying: Vec<&Value> = messages
        .iter()
        .filter(|m| m.to_string().contains(CONTEXT_MARKER))
        .collect();
    assert_eq!(carrying.len(), 1, "{messages:#?}");
    assert_eq!(carrying[0]["role"], "system", "{messages:#?}");

    // A resume of the same session: what it held is not reported again, the new turn is.
    let tmux = start(
        &env,
        &home,
        "opencode-resume",
        &format!("run {key} -- opencode -s {session}"),
    );
    say(&tmux, PROMPT);
    answered(&tmux, "done");
    let (_, resumed) = quit(&tmux);
    assert_eq!(resumed, session, "the same session went on");
    let issue = env.issue(&key);
    let again = issue["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] != run["id"])
        .unwrap_or_else(|| panic!("a second run: {issue:#}"));
    assert_eq!(again["status"], "succeeded", "{again:#}");
    assert_eq!(
        said(&again["messages"]),
        expected,
        "only the new turn: {again:#}"
    );
    assert_eq!(usage(again), [(11, 3), (20, 2)], "{again:#}");
    runtime.block_on(mock.shutdown());
}

#[test]
fn opencode_planning_in_a_discussion_becomes_an_issue_with_wujie_and_keeps_going() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // Without a script the mock answers every request with `pong`.
    let Some((mock, home)) = with_mock(&runtime, Script::default()) else {
        return;
    };
    let env = Env::new();
    let tmux = start(&env, &home, "opencode-discuss", "discuss -- opencode");
    say(&tmux, "plan the storage layer");
    answered(&tmux, "pong");

    let menu = tui_agent::open_wujie_menu(&tmux);
    assert!(menu.contains("/wujie"), "{menu}");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Create the issue and continue in this context");
    tmux.keys(&["Enter"]);
    tmux.wait_text("wujie: created WUJ-1");
    tmux.wait_settled("the notice to close", |s| {
        !s.contains("wujie: created") && s.contains(READY)
    });

    // The same opencode session goes on; what it says now belongs to the issue's run.
    say(&tmux, "go ahead");
    answered(&tmux, "pong");
    let (_, session) = quit(&tmux);
    drop(tmux);

    let issue = env.issue("WUJ-1");
    assert_eq!(issue["title"], "plan the storage layer");
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "opencode", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    assert_eq!(
        tui_agent::said(&run["messages"]),
        tui_agent::pong_turns(&["go ahead"]),
        "{run:#}"
    );
    assert_eq!(run["usage"].as_array().map(Vec::len), Some(1), "{run:#}");
    let discussion = &env.json(&["discussion", "list"])[0];
    assert_eq!(discussion["status"], "promoted");
    let shown = env.json(&["discussion", "show", discussion["id"].as_str().unwrap()]);
    assert_eq!(
        tui_agent::said(&shown["entries"]),
        tui_agent::pong_turns(&["plan the storage layer"]),
        "{shown:#}"
    );
    // The session opencode created is the discussion's, so a resume of it finds it.
    assert_eq!(
        shown["native_session_ids"],
        serde_json::json!([session]),
        "{shown:#}"
    );
    runtime.block_on(mock.shutdown());
}

#[test]
fn opencode_is_built_in_and_says_what_it_needs() {
    let env = Env::new();
    let list = env.json(&["local-run", "provider", "list"]);
    let opencode = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "opencode")
        .unwrap_or_else(|| panic!("opencode listed: {list:#}"));
    assert_eq!(opencode["kind"], "builtin", "{opencode:#}");
    assert_eq!(opencode["protocol"], V2, "{opencode:#}");

    let out = env
        .cmd()
        .args(["adapter", "opencode"])
        .env("PATH", "/nonexistent")
        .env_remove("WUJIE_OPENCODE_BIN")
        .output()
        .expect("wujie runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains("\"opencode\"")
            && err.contains("WUJIE_OPENCODE_BIN")
            && err.contains("npm install -g opencode-ai"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no events: {:?}", out.stdout);

    for arg in ["--mini", "serve"] {
        let out = env
            .cmd()
            .args(["adapter", "opencode", arg])
            .env("WUJIE_OPENCODE_BIN", "/bin/true")
            .output()
            .expect("wujie runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(arg) && err.contains("opencode"), "{err}");
    }
}
