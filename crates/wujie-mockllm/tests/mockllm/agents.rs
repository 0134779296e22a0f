//! Smoke tests: each real agent CLI runs one scripted turn against the mock, headless, in its
//! structured output mode: the model asks for the shell tool with `echo hello`, the agent runs
//! it, sends the result back, and the model answers `done`.
//!
//! An agent that is not installed fails its test with the install command to run, unless
//! `WUJIE_SKIP_AGENTS` lists it (or says `all`).

use crate::agents::{Agent, AgentHome};
use crate::{LatestInput, MockLlm, RecordedRequest, Script};
use serde_json::{Value, json};
use std::os::unix::process::CommandExt;
use std::process::{Output, Stdio};
use std::time::Duration;

const PROMPT: &str = "Run the shell command `echo hello`, then say done.";
/// Only there so a hung agent cannot hang the test run; never a performance assertion.
const DEADLINE: Duration = Duration::from_secs(300);

fn script(agent: Agent) -> Script {
    agent.shell_script("echo hello", "echo hello", "hello", "done")
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

/// A fresh mock with the agent's script and a home pointing at it, or None when the agent is to
/// be skipped. Panics with the install command when the agent is not installed.
async fn prepare(agent: Agent) -> Option<(MockLlm, AgentHome)> {
    agent
        .require_mock(script(agent))
        .await
        .unwrap_or_else(|error| panic!("{error}"))
}

/// Spawns the agent in its own process group, stdout and stderr piped.
fn spawn(mut cmd: std::process::Command, stdin: Stdio) -> (tokio::process::Child, GroupKiller) {
    cmd.process_group(0);
    let child = tokio::process::Command::from(cmd)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agent");
    let group = GroupKiller(child.id());
    (child, group)
}

/// Runs the agent's one-shot headless command against a fresh mock.
async fn require_run(agent: Agent) -> Option<Run> {
    let (mock, home) = prepare(agent).await?;
    let (child, mut group) = spawn(home.headless(PROMPT), Stdio::null());
    let output = tokio::time::timeout(DEADLINE, wujie_process::wait_with_output(child))
        .await
        .unwrap_or_else(|_| panic!("{} did not finish within {DEADLINE:?}", agent.name()))
        .expect("wait for agent");
    group.disarm();
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

/// Whether a tool result is the output of `echo hello`: a line `hello`, (Gemini) a line
/// `Output: hello`, or (Hermes) a JSON object whose `output` is `hello`.
fn shows_hello(text: &str) -> bool {
    let json_output = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v["output"].as_str().map(|o| o.trim() == "hello"));
    json_output.unwrap_or(false)
        || text.lines().map(str::trim).any(|l| {
            let l = l.strip_prefix("Output:").map_or(l, str::trim);
            l == "hello"
        })
}

fn has(events: &[Value], pred: impl Fn(&Value) -> bool) -> bool {
    events.iter().any(pred)
}

#[tokio::test(flavor = "multi_thread")]
async fn pi() {
    let Some(run) = require_run(Agent::Pi).await else {
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
    let Some(run) = require_run(Agent::Codex).await else {
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
    let Some(run) = require_run(Agent::Grok).await else {
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
    let Some(run) = require_run(Agent::Claude).await else {
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
    let Some(run) = require_run(Agent::Opencode).await else {
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
async fn gemini() {
    let Some(run) = require_run(Agent::Gemini).await else {
        return;
    };
    assert_mock_saw_the_turn(&run);
    let events = run.events();
    let call_id = events
        .iter()
        .find(|e| {
            e["type"] == "tool_use"
                && e["tool_name"] == "run_shell_command"
                && e["parameters"]["command"] == "echo hello"
        })
        .map(|e| e["tool_id"].clone());
    let Some(call_id) = call_id else {
        panic!(
            "no run_shell_command tool_use of echo hello\n{}",
            run.describe()
        );
    };
    assert!(
        has(&events, |e| e["type"] == "tool_result"
            && e["tool_id"] == call_id
            && e["status"] == "success"
            && e["output"].to_string().contains("hello")),
        "no successful tool_result with hello for {call_id}\n{}",
        run.describe()
    );
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "message" && e["role"] == "assistant")
        .filter_map(|e| e["content"].as_str())
        .collect();
    assert_eq!(text.trim(), "done", "{}", run.describe());
    assert!(
        has(&events, |e| e["type"] == "result"
            && e["status"] == "success"),
        "no successful result\n{}",
        run.describe()
    );
}

/// Hermes has no JSONL output mode; its structured interface is ACP (`hermes acp`), driven here
/// by a minimal client: initialize, session/new, session/prompt, allowing every permission request.
#[tokio::test(flavor = "multi_thread")]
async fn hermes() {
    let Some(run) = require_run_acp(Agent::Hermes).await else {
        return;
    };
    let updates = assert_acp_turn(&run);
    assert!(
        has(&updates, |u| u["sessionUpdate"] == "tool_call"
            && u.to_string().contains("echo hello")),
        "no tool_call of echo hello\n{}",
        run.describe()
    );
    let prompt_response = run
        .events()
        .into_iter()
        .find(|m| m["id"] == 3 && m["method"].is_null());
    assert_eq!(
        prompt_response.map(|m| m["result"]["stopReason"].clone()),
        Some(json!("end_turn")),
        "{}",
        run.describe()
    );
}

/// Gemini CLI's other structured interface: ACP (`gemini --acp`).
#[tokio::test(flavor = "multi_thread")]
async fn gemini_acp() {
    let Some(run) = require_run_acp(Agent::Gemini).await else {
        return;
    };
    assert_acp_turn(&run);
}

/// The scripted turn as an ACP client sees it: the mock saw both turns, a tool call completed
/// with `hello`, and the streamed answer is `done`. Returns the `session/update`s.
fn assert_acp_turn(run: &Run) -> Vec<Value> {
    assert_mock_saw_the_turn(run);
    let updates: Vec<Value> = run
        .events()
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect();
    assert!(
        has(&updates, |u| u["sessionUpdate"] == "tool_call_update"
            && u["status"] == "completed"
            && u.to_string().contains("hello")),
        "no completed tool_call_update with hello\n{}",
        run.describe()
    );
    let text: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(text.trim(), "done", "{}", run.describe());
    updates
}

/// `AgentHome::headless` for Hermes: `hermes chat -Q -q`, plain text (the answer, then
/// `session_id: …`), so only the final text and the mock's view are checked.
#[tokio::test(flavor = "multi_thread")]
async fn hermes_chat_plain_text() {
    let Some(run) = require_run(Agent::Hermes).await else {
        return;
    };
    assert_mock_saw_the_turn(&run);
    // Hermes may print warnings (e.g. about optional scanners) before the answer.
    assert!(
        run.stdout.lines().any(|l| l.trim() == "done"),
        "no line `done`
{}",
        run.describe()
    );
}

/// Runs one prompt over ACP. The returned run's `stdout` holds every line the agent sent.
async fn require_run_acp(agent: Agent) -> Option<Run> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (mock, home) = prepare(agent).await?;
    let (mut child, mut group) = spawn(home.acp().expect("the agent speaks ACP"), Stdio::piped());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let workdir = home.workdir().to_string_lossy().into_owned();
    let mut transcript = String::new();
    let exchange = async {
        let mut outbox = vec![
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}}),
        ];
        loop {
            for message in outbox.drain(..) {
                let line = format!("{message}\n");
                stdin
                    .write_all(line.as_bytes())
                    .await
                    .expect("write to agent");
            }
            let Some(line) = lines.next_line().await.expect("read from agent") else {
                panic!(
                    "{} closed its stdout before answering the prompt",
                    agent.name()
                );
            };
            transcript.push_str(&line);
            transcript.push('\n');
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let id = message["id"].clone();
            match message["method"].as_str() {
                Some("session/request_permission") => {
                    let options = message["params"]["options"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    let allow = options
                        .iter()
                        .find(|o| o["kind"] == "allow_once")
                        .or_else(|| options.iter().find(|o| o["kind"] == "allow_always"))
                        .map(|o| o["optionId"].clone())
                        .expect("the permission request offers an allow option");
                    outbox.push(json!({"jsonrpc": "2.0", "id": id,
                        "result": {"outcome": {"outcome": "selected", "optionId": allow}}}));
                }
                Some(_) if !id.is_null() => {
                    outbox.push(json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "not supported by this test client"}}));
                }
                Some(_) => {}
                None if id == 1 => outbox.push(json!({"jsonrpc": "2.0", "id": 2,
                    "method": "session/new", "params": {"cwd": workdir, "mcpServers": []}})),
                None if id == 2 => outbox.push(json!({"jsonrpc": "2.0", "id": 3,
                    "method": "session/prompt", "params": {
                        "sessionId": message["result"]["sessionId"],
                        "prompt": [{"type": "text", "text": PROMPT}]}})),
                None if id == 3 => break,
                None => {}
            }
        }
    };
    tokio::time::timeout(DEADLINE, exchange)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{} did not answer over ACP within {DEADLINE:?}",
                agent.name()
            )
        });
    // Closing stdin ends the ACP connection: the agent should exit by itself.
    drop(stdin);
    drop(lines);
    let output = tokio::time::timeout(DEADLINE, wujie_process::wait_with_output(child))
        .await
        .unwrap_or_else(|_| panic!("{} did not exit after its stdin closed", agent.name()))
        .expect("wait for agent");
    group.disarm();
    let requests = mock.requests();
    mock.shutdown().await;
    let run = Run {
        home,
        output,
        stdout: transcript,
        requests,
    };
    eprintln!("{}", run.summary(agent));
    Some(run)
}

/// Kills the agent's whole process group when dropped before the agent was waited for (deadline
/// or failed assertion), so no tool process or helper the agent started outlives the test. Once
/// `wujie_process::wait_with_output` has cleared the group and reaped the agent it is disarmed:
/// the id may belong to another process by then.
struct GroupKiller(Option<u32>);

impl GroupKiller {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(|p| i32::try_from(p).ok()) {
            // Usually the group is already gone (ESRCH), which is fine.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
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
