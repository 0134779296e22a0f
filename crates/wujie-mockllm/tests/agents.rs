//! Smoke tests: each real agent CLI runs one scripted turn against the mock, headless, in its
//! structured output mode: the model asks for the shell tool with `echo hello`, the agent runs
//! it, sends the result back, and the model answers `done`.
//!
//! An agent that is not installed fails its test with the install command to run, unless
//! `WUJIE_SKIP_AGENTS` lists it (or says `all`).

use serde_json::Value;
use std::process::Output;
use std::time::Duration;
use wujie_mockllm::agents::{Agent, AgentHome};
use wujie_mockllm::{LatestInput, MockLlm, RecordedRequest, Reply, Script, Turn, When};

const PROMPT: &str = "Run the shell command `echo hello`, then say done.";
/// Only there so a hung agent cannot hang the test run; never a performance assertion.
const DEADLINE: Duration = Duration::from_secs(300);

fn script(agent: Agent) -> Script {
    Script {
        models: Vec::new(),
        turns: vec![
            Turn {
                when: When {
                    user_contains: Some("echo hello".into()),
                    ..When::default()
                },
                reply: Reply {
                    tool_calls: vec![agent.shell_call("echo hello")],
                    ..Reply::default()
                },
            },
            Turn {
                when: When {
                    tool_result_contains: Some("hello".into()),
                    ..When::default()
                },
                reply: Reply {
                    text: Some("done".into()),
                    ..Reply::default()
                },
            },
        ],
    }
}

/// What one run produced.
struct Run {
    home: AgentHome,
    output: Output,
    stdout: String,
    requests: Vec<RecordedRequest>,
}

impl Run {
    /// stdout as JSON lines (non-JSON lines are dropped).
    fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn describe(&self) -> String {
        format!(
            "exit: {:?}\n--- stdout\n{}\n--- stderr\n{}\n--- model requests: {}",
            self.output.status,
            self.stdout,
            String::from_utf8_lossy(&self.output.stderr),
            self.requests
                .iter()
                .filter(|r| r.is_model_request())
                .count()
        )
    }

    /// One line per request, printed with every run so CI logs show what each agent sent.
    fn summary(&self, agent: Agent) -> String {
        let lines: Vec<String> = self
            .requests
            .iter()
            .map(|r| {
                format!(
                    "  {} {} -> {} (turn {:?})",
                    r.method, r.path, r.status, r.turn
                )
            })
            .collect();
        format!(
            "{} sent {} requests:\n{}",
            agent.name(),
            self.requests.len(),
            lines.join("\n")
        )
    }

    /// The model requests answered by the scripted turns; agents may send extra side requests
    /// (titles, summaries), which have no turn and are not counted.
    fn scripted_turns(&self) -> Vec<usize> {
        self.requests.iter().filter_map(|r| r.turn).collect()
    }
}

/// Runs the agent against a fresh mock, or returns None when the agent is to be skipped.
async fn run(agent: Agent) -> Option<Run> {
    if agent.is_skipped() {
        eprintln!("skipped {}: listed in WUJIE_SKIP_AGENTS", agent.name());
        return None;
    }
    let mock = MockLlm::start(script(agent)).await.expect("start mock");
    let home = match AgentHome::new(agent, &mock.url()) {
        Ok(home) => home,
        Err(error) => panic!("{error}"),
    };
    let mut cmd = tokio::process::Command::from(home.headless(PROMPT));
    cmd.kill_on_drop(true);
    let output = tokio::time::timeout(DEADLINE, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{} did not finish within {DEADLINE:?}", agent.name()))
        .expect("spawn agent");
    let requests = mock.requests();
    mock.shutdown().await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let run = Run {
        home,
        output,
        stdout,
        requests,
    };
    eprintln!("{}", run.summary(agent));
    Some(run)
}

/// Checks what the mock saw: the scripted turns in order, the second carrying the tool's real
/// output (a line `hello`, not merely an error quoting the command).
fn assert_mock_saw_the_turn(run: &Run) {
    assert!(run.output.status.success(), "{}", run.describe());
    assert_eq!(run.scripted_turns(), vec![0, 1], "{}", run.describe());
    let second = run
        .requests
        .iter()
        .find(|r| r.turn == Some(1))
        .expect("second request");
    match second.latest_input() {
        Some(LatestInput::ToolResult(text)) => assert!(
            shows_hello(&text),
            "the tool result has no line `hello`: {text:?}\n{}",
            run.describe()
        ),
        other => panic!(
            "the second request carries no tool result: {other:?}\n{}",
            run.describe()
        ),
    }
}

/// Whether a tool result is the output of `echo hello`: a line `hello`, or (Hermes) a JSON
/// object whose `output` is `hello`.
fn shows_hello(text: &str) -> bool {
    let json_output = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v["output"].as_str().map(|o| o.trim() == "hello"));
    json_output.unwrap_or(false) || text.lines().any(|l| l.trim() == "hello")
}

fn has(events: &[Value], pred: impl Fn(&Value) -> bool) -> bool {
    events.iter().any(pred)
}

#[tokio::test(flavor = "multi_thread")]
async fn pi() {
    let Some(run) = run(Agent::Pi).await else {
        return;
    };
    assert_mock_saw_the_turn(&run);
    let events = run.events();
    assert!(
        has(&events, |e| e["type"] == "tool_execution_start"
            && e["toolName"] == "bash"),
        "no bash tool execution\n{}",
        run.describe()
    );
    assert!(
        has(&events, |e| e["type"] == "tool_execution_end"
            && e["result"].to_string().contains("hello")
            && e["isError"] == false),
        "no tool result with hello\n{}",
        run.describe()
    );
    assert!(
        has(&events, |e| e["type"] == "message_end"
            && e["message"]["role"] == "assistant"
            && e["message"]["content"].to_string().contains("\"done\"")),
        "no final answer done\n{}",
        run.describe()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn codex() {
    let Some(run) = run(Agent::Codex).await else {
        return;
    };
    assert_mock_saw_the_turn(&run);
    let events = run.events();
    assert!(
        has(&events, |e| e["type"] == "item.completed"
            && e["item"]["type"] == "command_execution"
            && e["item"]["command"].to_string().contains("echo hello")
            && e["item"]["aggregated_output"]
                .to_string()
                .contains("hello")),
        "no completed command_execution of echo hello\n{}",
        run.describe()
    );
    assert!(
        has(&events, |e| e["type"] == "item.completed"
            && e["item"]["type"] == "agent_message"
            && e["item"]["text"] == "done"),
        "no final agent_message done\n{}",
        run.describe()
    );
    assert!(
        has(&events, |e| e["type"] == "turn.completed"),
        "{}",
        run.describe()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn grok() {
    let Some(run) = run(Agent::Grok).await else {
        return;
    };
    assert_mock_saw_the_turn(&run);
    let events = run.events();
    // Grok 0.2.111's streaming-json prints text, usage and end but no tool events; the tool call
    // and its result are in the session's own ACP transcript, `updates.jsonl`.
    let session = events
        .iter()
        .find(|e| e["type"] == "end")
        .and_then(|e| e["sessionId"].as_str());
    let session =
        session.unwrap_or_else(|| panic!("no end event with sessionId\n{}", run.describe()));
    let updates = find_file(
        &run.home.home().join(".grok/sessions"),
        session,
        "updates.jsonl",
    )
    .unwrap_or_else(|| panic!("no updates.jsonl for session {session}\n{}", run.describe()));
    let updates: Vec<Value> = std::fs::read_to_string(&updates)
        .expect("read updates.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|l| l["params"]["update"].clone())
        .collect();
    assert!(
        has(&updates, |u| u["sessionUpdate"] == "tool_call"
            && u["rawInput"]["command"] == "echo hello"),
        "no tool_call of echo hello in the transcript: {updates:#?}"
    );
    assert!(
        has(&updates, |u| u["sessionUpdate"] == "tool_call_update"
            && u["status"] == "completed"
            && u["content"].to_string().contains("hello")),
        "no completed tool_call_update with hello in the transcript: {updates:#?}"
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .filter_map(|e| e["data"].as_str())
        .collect();
    assert!(
        text.contains("done"),
        "no final text done\n{}",
        run.describe()
    );
    assert!(has(&events, |e| e["type"] == "end"), "{}", run.describe());
}

#[tokio::test(flavor = "multi_thread")]
async fn claude() {
    let Some(run) = run(Agent::Claude).await else {
        return;
    };
    assert_mock_saw_the_turn(&run);
    let events = run.events();
    let blocks = |e: &Value| {
        e["message"]["content"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    assert!(
        has(&events, |e| e["type"] == "assistant"
            && blocks(e).iter().any(|b| b["type"] == "tool_use"
                && b["name"] == "Bash"
                && b["input"]["command"] == "echo hello")),
        "no Bash tool_use of echo hello\n{}",
        run.describe()
    );
    assert!(
        has(&events, |e| e["type"] == "user"
            && blocks(e).iter().any(|b| b["type"] == "tool_result"
                && b["is_error"] != true
                && b["content"].to_string().contains("hello"))),
        "no tool_result with hello\n{}",
        run.describe()
    );
    assert!(
        has(&events, |e| e["type"] == "result"
            && e["subtype"] == "success"
            && e["result"] == "done"),
        "no successful result done\n{}",
        run.describe()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn opencode() {
    let Some(run) = run(Agent::Opencode).await else {
        return;
    };
    assert_mock_saw_the_turn(&run);
    let events = run.events();
    assert!(
        has(&events, |e| e["type"] == "tool_use"
            && e["part"]["tool"] == "bash"
            && e["part"]["state"]["status"] == "completed"
            && e["part"]["state"]["input"]["command"] == "echo hello"
            && e["part"]["state"]["output"]
                .to_string()
                .contains("hello")),
        "no completed bash tool_use of echo hello with its output\n{}",
        run.describe()
    );
    assert!(
        has(&events, |e| e["type"] == "text"
            && e["part"]["text"] == "done"),
        "no final text done\n{}",
        run.describe()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hermes() {
    let Some(run) = run(Agent::Hermes).await else {
        return;
    };
    assert_mock_saw_the_turn(&run);
    assert!(
        run.stdout.contains("done"),
        "no final text done\n{}",
        run.describe()
    );
}

/// The file `name` in a directory `dir_name` somewhere below `root`.
fn find_file(root: &std::path::Path, dir_name: &str, name: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == dir_name) && path.join(name).is_file() {
                return Some(path.join(name));
            }
            if let Some(found) = find_file(&path, dir_name, name) {
                return Some(found);
            }
        }
    }
    None
}
