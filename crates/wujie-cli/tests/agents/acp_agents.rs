//! The built-in `acp` provider driving real agents over the Agent Client Protocol, each pointed
//! at the mock model server: a scripted shell tool call, its result, the final reply and the
//! usage land on the issue, and the agent's permission request is answered by `--allow`.
//!
//! A test fails when its agent is not installed, saying to run `scripts/agents/install NAME`,
//! unless `WUJIE_SKIP_AGENTS` lists the agent (or says `all`).

use std::collections::HashSet;
use std::ffi::OsString;

use serde_json::Value;
use wujie_mockllm::agents::{Agent, agents_dir};
use wujie_mockllm::{Reply, Turn, When};
use wujie_testkit::Env;
use wujie_testkit::run_output::{describe, messages_of, one};

const PROMPT: &str = "Run the shell command echo hello, then say done.";

/// One agent pointed at the mock model server, with an issue to run it on.
struct AgentAtMock {
    runtime: tokio::runtime::Runtime,
    mock: wujie_mockllm::MockLlm,
    home: wujie_mockllm::agents::AgentHome,
    env: Env,
    key: String,
}

impl AgentAtMock {
    /// The agent, its mock scripted to run `echo hello` and say `done`, then to answer a prompt
    /// that says "say again" with `again`; `None` when the agent is skipped.
    fn require(agent: Agent) -> Option<AgentAtMock> {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let mut script = agent.shell_script("echo hello", "echo hello", "hello", "done");
        script.turns.push(Turn {
            when: When {
                user_contains: Some("say again".to_owned()),
                ..When::default()
            },
            reply: Reply {
                text: Some("again".to_owned()),
                ..Reply::default()
            },
        });
        let (mock, home) = runtime
            .block_on(agent.require_mock(script))
            .unwrap_or_else(|error| panic!("{error}"))?;
        let env = Env::new();
        let key = env.create_issue(&format!("{} over ACP", agent.name()));
        Some(AgentAtMock {
            runtime,
            mock,
            home,
            env,
            key,
        })
    }

    /// `wujie run KEY -- acp --allow once OPTIONS… -- AGENT ACP-ARGS…` in the agent's work
    /// directory and home; it must succeed.
    fn run(&self, options: &[&str]) {
        self.run_agent_with(options, &[]);
    }

    /// [`Self::run`] with `more` after the agent's ACP arguments; what `wujie` printed.
    fn run_agent_with(&self, options: &[&str], more: &[&str]) -> std::process::Output {
        let acp = self.home.acp().expect("the agent speaks ACP");
        let program = acp.get_program().to_str().expect("utf-8 path").to_owned();
        let agent_args: Vec<String> = acp
            .get_args()
            .map(|a| a.to_str().expect("utf-8 argument").to_owned())
            .chain(more.iter().map(|a| a.to_string()))
            .collect();
        let mut args = vec!["run", &self.key, "--", "acp", "--allow", "once"];
        args.extend(options);
        args.push("--");
        args.push(&program);
        args.extend(agent_args.iter().map(String::as_str));
        let mut path = OsString::from(agents_dir().join("bin"));
        if let Some(inherited) = std::env::var_os("PATH") {
            path.push(":");
            path.push(inherited);
        }
        let out = self
            .env
            .cmd()
            .current_dir(self.home.workdir())
            .env("HOME", self.home.home())
            .env("PATH", path)
            .envs(self.home.envs().iter().map(|(k, v)| (k, v)))
            .args(&args)
            .output()
            .expect("wujie runs");
        assert!(out.status.success(), "{}", describe(&out));
        out
    }

    /// The issue's runs, oldest first.
    fn runs(&self) -> Vec<Value> {
        let mut runs = self.env.issue(&self.key)["runs"]
            .as_array()
            .expect("runs")
            .clone();
        runs.sort_by(|a, b| a["started_at"].as_str().cmp(&b["started_at"].as_str()));
        runs
    }

    fn shutdown(self) {
        self.runtime.block_on(self.mock.shutdown());
    }
}

/// `wujie run KEY -- acp --allow once -p PROMPT -- AGENT ACP-ARGS…`; returns the run as the
/// issue shows it, after the checks every agent passes.
fn require_run(agent: Agent) -> Option<Value> {
    let at_mock = AgentAtMock::require(agent)?;
    at_mock.run(&["-p", PROMPT]);
    let calls = at_mock.mock.requests().len();
    assert!(
        calls >= 2,
        "the mock answered the tool call and the reply ({calls} requests)"
    );
    // The issue reached the model with the prompt.
    let title = format!("{} over ACP", agent.name());
    let requests = at_mock.mock.model_requests();
    assert!(
        requests.iter().any(|r| r.body.to_string().contains(&title)),
        "no model request held the issue {title:?}: {requests:#?}"
    );
    let run = at_mock.runs().remove(0);
    at_mock.shutdown();
    check_run(&run);
    Some(run)
}

/// What every agent's run holds: status, the prompt once, the final reply, unique keys.
fn check_run(run: &Value) {
    assert_eq!(run["provider"], "acp", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    // The prompt is reported once, whether or not the agent echoes it.
    let inputs = messages_of(run, "user_input");
    assert_eq!(inputs.len(), 1, "{run:#}");
    assert_eq!(inputs[0]["content"], PROMPT, "{run:#}");
    let finals = messages_of(run, "final");
    assert_eq!(finals.len(), 1, "{run:#}");
    assert_eq!(finals[0]["content"], "done", "{run:#}");
    let keys: Vec<&str> = run["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["source_key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys.iter().collect::<HashSet<_>>().len(),
        keys.len(),
        "{keys:?}"
    );
}

/// The agent's session id, from the keys of a run's messages (`session:ID:turn:…`).
fn session_of(run: &Value) -> String {
    let key = run["messages"][0]["source_key"].as_str().expect("a key");
    let rest = key.strip_prefix("session:").expect("a session key");
    rest.split(":turn:").next().expect("a turn").to_owned()
}

/// A second run resumes the first one's session with `--resume`: the agent replays the first
/// turn, which is not reported again; the new turn is numbered after it.
fn resume_reports_only_the_new_turn(agent: Agent) {
    let Some(at_mock) = AgentAtMock::require(agent) else {
        return;
    };
    at_mock.run(&["-p", PROMPT]);
    let first = at_mock.runs().remove(0);
    check_run(&first);
    let session = session_of(&first);
    at_mock.run(&["--resume", &session, "-p", "Now say again."]);
    let runs = at_mock.runs();
    at_mock.shutdown();
    let resumed = &runs[1];
    assert_eq!(resumed["status"], "succeeded", "{resumed:#}");
    let said: Vec<(&str, &str, &str)> = resumed["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["type"].as_str().unwrap_or_default(),
                m["content"].as_str().unwrap_or_default(),
                m["source_key"].as_str().unwrap_or_default(),
            )
        })
        .filter(|(kind, ..)| *kind != "thinking")
        .collect();
    let turn = format!("session:{session}:turn:2");
    assert_eq!(
        said,
        [
            (
                "user_input",
                "Now say again.",
                &*format!("{turn}:user:prompt")
            ),
            ("final", "again", &*format!("{turn}:final")),
        ],
        "{resumed:#}"
    );
    // The new turn's one model request; the first turn's requests are not counted again.
    assert_eq!(usage(resumed), [("mock-model".to_owned(), 10, 1)]);
}

/// The run's usage events as (model, input, output).
fn usage(run: &Value) -> Vec<(String, u64, u64)> {
    run["usage"]
        .as_array()
        .expect("usage")
        .iter()
        .map(|u| {
            (
                u["model"].as_str().unwrap_or_default().to_owned(),
                u["input_tokens"].as_u64().unwrap_or_default(),
                u["output_tokens"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

// The mock answers each of the two model requests with 10 input and 1 output tokens.

#[test]
fn gemini_over_acp_runs_a_tool_and_replies() {
    let Some(run) = require_run(Agent::Gemini) else {
        return;
    };
    assert_eq!(one(&run, "tool_use")["tool"], "echo hello", "{run:#}");
    // Gemini CLI sends no tool output over ACP: its result says only that the call completed.
    assert_eq!(one(&run, "tool_result")["output"], "", "{run:#}");
    // The turn's totals, from `_meta.quota`.
    assert_eq!(usage(&run), [("mock-model".to_owned(), 20, 2)]);
}

#[test]
fn grok_over_acp_runs_a_tool_under_allow_once_and_replies() {
    let Some(run) = require_run(Agent::Grok) else {
        return;
    };
    // Grok asks permission before it runs a command (seen by hand); this test shows only that
    // the command ran under `--allow once`, not the request itself.
    let tool_use = one(&run, "tool_use");
    assert_eq!(tool_use["tool"], "run_terminal_command", "{run:#}");
    assert_eq!(tool_use["input"]["command"], "echo hello", "{run:#}");
    assert_eq!(
        one(&run, "tool_result")["output"].as_str().map(str::trim),
        Some("hello"),
        "{run:#}"
    );
    assert_eq!(usage(&run), [("mock-model".to_owned(), 20, 2)]);
}

#[test]
fn hermes_over_acp_runs_a_tool_and_replies() {
    let Some(run) = require_run(Agent::Hermes) else {
        return;
    };
    // Hermes sends no rawInput; its tool title carries the command.
    let tool_use = one(&run, "tool_use");
    assert_eq!(tool_use["tool"], "terminal: echo hello", "{run:#}");
    let output = one(&run, "tool_result")["output"]
        .as_str()
        .unwrap_or_default();
    assert!(output.contains("hello"), "{run:#}");
    // The prompt response's draft `usage` field; Hermes names no model there, its
    // `session/new` answer does.
    assert_eq!(usage(&run), [("mock-model".to_owned(), 20, 2)]);
}

#[test]
fn opencode_over_acp_runs_a_tool_and_replies() {
    let Some(run) = require_run(Agent::Opencode) else {
        return;
    };
    let tool_use = one(&run, "tool_use");
    assert_eq!(tool_use["tool"], "bash", "{run:#}");
    assert_eq!(tool_use["input"]["command"], "echo hello", "{run:#}");
    assert_eq!(
        one(&run, "tool_result")["output"].as_str().map(str::trim),
        Some("hello"),
        "{run:#}"
    );
    // opencode's answer counts only the turn's last model request; its own record of each
    // request (read from its server) counts both, with the model each used.
    assert_eq!(
        usage(&run),
        [
            ("mock-model".to_owned(), 10, 1),
            ("mock-model".to_owned(), 10, 1)
        ]
    );
}

#[test]
fn opencode_over_acp_whose_record_cannot_be_read_says_its_usage_is_the_last_requests() {
    let Some(at_mock) = AgentAtMock::require(Agent::Opencode) else {
        return;
    };
    // On port 0 the provider cannot know where opencode's server is.
    let out = at_mock.run_agent_with(&["-p", PROMPT], &["--port", "0"]);
    let run = at_mock.runs().remove(0);
    at_mock.shutdown();
    check_run(&run);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "opencode's record of each model request cannot be read: its --port is 0 or not a port number"
        ) && stderr.contains("its last model request"),
        "{}",
        describe(&out)
    );
    assert_eq!(usage(&run), [("mock-model".to_owned(), 10, 1)]);
}

#[test]
fn hermes_over_acp_resumes_its_session_and_reports_only_the_new_turn() {
    resume_reports_only_the_new_turn(Agent::Hermes);
}

#[test]
fn opencode_over_acp_resumes_its_session_and_reports_only_the_new_turn() {
    resume_reports_only_the_new_turn(Agent::Opencode);
}
