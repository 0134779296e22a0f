//! The built-in `claude` provider through the real `wujie` binary: the real Claude Code in its
//! own terminal UI, driven in tmux against the mock model server, bound to an issue; then a
//! resume of the same session; a discussion turned into an issue with `/wujie`; and the
//! errors a user sees without Claude Code.
//!
//! The real-CLI test fails when Claude Code is not installed, saying to run
//! `scripts/agents/install claude`, unless `WUJIE_SKIP_AGENTS` lists claude (or says `all`).

mod common;

use common::*;
use serde_json::Value;
use wujie_mockllm::Script;
use wujie_mockllm::agents::{Agent, AgentHome};

const PROMPT: &str = "Run the shell command echo hello";
const CONTEXT_MARKER: &str = "the-storage-layer-needs-sqlite";

/// The script: the prompt gets a text and a `Bash` call of `echo hello` (usage 11/3), its
/// result thinking and the answer `done` (usage 20/2).
fn script() -> Script {
    Script::from_json(include_str!(
        "../../wujie-builtins/tests/fixtures/claude_echo_hello.script.json"
    ))
    .expect("the fixture script parses")
}

/// `wujie ARGS` in tmux, in the agent's work directory with its environment, then `EXIT=<code>`.
fn start(env: &Env, home: &AgentHome, name: &str, wujie_args: &str) -> Tmux {
    Tmux::start(
        name,
        &tui_agent::agent_shell(home, env, wujie_args),
        100,
        30,
    )
}

/// Claude Code's input box is ready.
fn wait_ready(tmux: &Tmux) {
    tmux.wait_settled("Claude Code's input box", |s| {
        s.contains("❯") && s.contains("shift+tab")
    });
}

/// Types `text`, then Enter a moment later (keys arriving with the text count as a paste).
fn say(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    // Claude Code draws a no-break space after its prompt sign.
    tmux.wait_for(&format!("{text:?} in the input box"), |s| {
        s.lines().any(|l| l.starts_with('❯') && l.ends_with(text))
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    tmux.keys(&["Enter"]);
}

/// Quits Claude Code with `/exit` and returns the final screen.
fn quit(tmux: &Tmux) -> String {
    say(tmux, "/exit");
    tmux.wait_text("EXIT=")
}

fn said(run: &Value) -> Vec<(String, String)> {
    run["messages"]
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
                    m["output"].as_str().unwrap_or_default()
                ),
                _ => m["content"].as_str().unwrap_or_default().to_owned(),
            };
            (kind, what)
        })
        .collect()
}

/// The ids of Claude Code's session transcripts under its config directory.
fn session_ids(home: &AgentHome) -> Vec<String> {
    let projects = home.home().join(".claude/projects");
    let mut ids = Vec::new();
    for dir in std::fs::read_dir(projects).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Some(id) = file
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
            {
                ids.push(id.to_owned());
            }
        }
    }
    ids
}

#[test]
fn claude_code_in_its_own_terminal_ui_reports_a_tool_run_with_usage_and_the_issue_as_context() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = runtime
        .block_on(Agent::Claude.with_mock(script()))
        .unwrap_or_else(|error| panic!("{error}"))
    else {
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

    // Claude Code 2.1's default permission mode (auto) runs a plain `echo` without asking.
    let tmux = start(&env, &home, "claude", &format!("run {key} -- claude"));
    wait_ready(&tmux);
    say(&tmux, PROMPT);
    tmux.wait_for("the answer", |s| s.contains("● done"));
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let run = &env.issue(&key)["runs"][0];
    assert_eq!(run["provider"], "claude", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    let expected: Vec<(String, String)> = [
        ("user_input", PROMPT),
        ("text", "I will run it."),
        (
            "tool_use",
            r#"Bash {"command":"echo hello","description":"Run the command"}"#,
        ),
        ("tool_result", "Bash hello"),
        ("thinking", "It worked."),
        ("final", "done"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    assert_eq!(said(run), expected, "{run:#}");

    // Usage: each model request exactly as the mock counted it.
    let answered = mock.model_requests();
    assert_eq!(answered.len(), 2, "two model requests: {answered:#?}");
    let usage: Vec<(u64, u64)> = run["usage"]
        .as_array()
        .expect("usage")
        .iter()
        .map(|u| {
            (
                u["input_tokens"].as_u64().unwrap(),
                u["output_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(usage, [(11, 3), (20, 2)], "{run:#}");

    // The issue reached the model as system context, never as a user message.
    let first = &answered[0].body;
    assert!(
        first["system"].to_string().contains(CONTEXT_MARKER),
        "{first:#}"
    );
    assert!(
        !first["messages"].to_string().contains(CONTEXT_MARKER),
        "{first:#}"
    );
    drop(tmux);

    // A resume of the same session: the earlier conversation is the baseline, nothing is
    // reported twice; what is said now is.
    let ids = session_ids(&home);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let tmux = start(
        &env,
        &home,
        "claude-resume",
        &format!("run {key} -- claude --resume {}", ids[0]),
    );
    wait_ready(&tmux);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
    let issue = env.issue(&key);
    let resumed = issue["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] != run["id"])
        .unwrap_or_else(|| panic!("a second run: {issue:#}"));
    assert_eq!(resumed["status"], "succeeded", "{resumed:#}");
    assert_eq!(said(resumed), [], "{resumed:#}");
    assert_eq!(resumed["usage"], serde_json::json!([]), "{resumed:#}");
    assert_eq!(
        session_ids(&home),
        ids,
        "the resume wrote the same transcript"
    );
    runtime.block_on(mock.shutdown());
}

#[test]
fn claude_is_built_in_as_an_interactive_provider() {
    let env = Env::new();
    let list = env.json(&["local-run", "provider", "list"]);
    let claude = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "claude")
        .unwrap_or_else(|| panic!("claude listed: {list:#}"));
    assert_eq!(claude["kind"], "builtin", "{claude:#}");
    assert_eq!(claude["protocol"], V2, "{claude:#}");
}

#[test]
fn without_claude_code_the_adapter_says_what_it_looked_for() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["adapter", "claude"])
        .env("PATH", "/nonexistent")
        .env_remove("WUJIE_CLAUDE_BIN")
        .output()
        .expect("wujie runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains("claude") && err.contains("WUJIE_CLAUDE_BIN") && err.contains("npm install"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no events: {:?}", out.stdout);

    let out = env
        .cmd()
        .args(["adapter", "claude", "--no-session-persistence"])
        .env("WUJIE_CLAUDE_BIN", "/bin/true")
        .output()
        .expect("wujie runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--no-session-persistence"), "{err}");
}

#[test]
fn claude_code_planning_in_a_discussion_becomes_an_issue_with_wujie_and_keeps_going() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // Without a script the mock answers every request with `pong`.
    let Some((mock, home)) = runtime
        .block_on(Agent::Claude.with_mock(Script::default()))
        .unwrap_or_else(|error| panic!("{error}"))
    else {
        return;
    };
    let env = Env::new();
    let tmux = start(&env, &home, "claude-discuss", "discuss -- claude");
    wait_ready(&tmux);
    say(&tmux, "plan the storage layer");
    tmux.wait_for("the first answer", |s| s.contains("● pong"));
    wait_ready(&tmux);

    tmux.keys(&["-l", "/wujie"]);
    tmux.wait_text("/wujiecreateissue");
    tmux.keys(&["Enter"]);
    tmux.wait_text("Create the issue and continue in this context");
    tmux.keys(&["Enter"]);
    tmux.wait_text("wujie: created WUJ-1");
    tmux.wait_settled("the notice to close", |s| {
        !s.contains("wujie: created") && s.contains("shift+tab")
    });

    // The same Claude Code session goes on; what it says now belongs to the issue's run.
    say(&tmux, "go ahead");
    tmux.wait_for("the second answer", |s| s.matches("● pong").count() >= 2);
    wait_ready(&tmux);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let issue = env.issue("WUJ-1");
    assert_eq!(issue["title"], "plan the storage layer");
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "claude", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    let expected = [
        ("user_input".to_owned(), "go ahead".to_owned()),
        ("final".to_owned(), "pong".to_owned()),
    ];
    assert_eq!(said(run), expected, "{run:#}");
    assert_eq!(run["usage"].as_array().map(Vec::len), Some(1), "{run:#}");
    let discussion = &env.json(&["discussion", "list"])[0];
    assert_eq!(discussion["status"], "promoted");
    let entries = env.json(&["discussion", "show", discussion["id"].as_str().unwrap()]);
    let kinds: Vec<&str> = entries["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    // The discussion keeps what was said before the issue existed.
    assert_eq!(kinds, ["user_input", "final"]);
    runtime.block_on(mock.shutdown());
}
