//! The built-in `acp` provider driving real agents over the Agent Client Protocol, each pointed
//! at the mock model server: a scripted shell tool call, its result, the final reply and the
//! usage land on the issue, and the agent's permission request is answered by `--allow`.
//!
//! A test fails when its agent is not installed, saying to run `scripts/agents/install NAME`,
//! unless `WUJIE_SKIP_AGENTS` lists the agent (or says `all`).

mod common;

use std::collections::HashSet;
use std::ffi::OsString;

use common::Env;
use common::run_output::{describe, messages_of, one};
use serde_json::Value;
use wujie_mockllm::agents::{Agent, agents_dir};

const PROMPT: &str = "Run the shell command echo hello, then say done.";

/// `wujie run KEY -- acp --allow once -p PROMPT -- AGENT ACP-ARGS…` in the agent's work
/// directory and home; returns the run as the issue shows it.
fn run_agent(agent: Agent) -> Option<Value> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let script = agent.shell_script("echo hello", "echo hello", "hello", "done");
    let (mock, home) = runtime
        .block_on(agent.with_mock(script))
        .unwrap_or_else(|error| panic!("{error}"))?;
    let acp = home.acp().expect("the agent speaks ACP");
    let program = acp.get_program().to_str().expect("utf-8 path").to_owned();
    let agent_args: Vec<String> = acp
        .get_args()
        .map(|a| a.to_str().expect("utf-8 argument").to_owned())
        .collect();

    let env = Env::new();
    let key = env.create_issue(&format!("{} over ACP", agent.name()));
    let mut args = vec![
        "run", &key, "--", "acp", "--allow", "once", "-p", PROMPT, "--",
    ];
    args.push(&program);
    args.extend(agent_args.iter().map(String::as_str));
    let mut path = OsString::from(agents_dir().join("bin"));
    if let Some(inherited) = std::env::var_os("PATH") {
        path.push(":");
        path.push(inherited);
    }
    let out = env
        .cmd()
        .current_dir(home.workdir())
        .env("HOME", home.home())
        .env("PATH", path)
        .envs(home.envs().iter().map(|(k, v)| (k, v)))
        .args(&args)
        .output()
        .expect("wujie runs");
    assert!(out.status.success(), "{}", describe(&out));
    let calls = mock.requests().len();
    assert!(
        calls >= 2,
        "the mock answered the tool call and the reply ({calls} requests)"
    );
    runtime.block_on(mock.shutdown());

    let issue = env.issue(&key);
    let run = issue["runs"][0].clone();
    assert_eq!(run["provider"], "acp", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    // The prompt is reported once, whether or not the agent echoes it.
    let inputs = messages_of(&run, "user_input");
    assert_eq!(inputs.len(), 1, "{run:#}");
    assert_eq!(inputs[0]["content"], PROMPT, "{run:#}");
    let finals = messages_of(&run, "final");
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
    Some(run)
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
    let Some(run) = run_agent(Agent::Gemini) else {
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
    let Some(run) = run_agent(Agent::Grok) else {
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
    let Some(run) = run_agent(Agent::Hermes) else {
        return;
    };
    // Hermes sends no rawInput; its tool title carries the command.
    let tool_use = one(&run, "tool_use");
    assert_eq!(tool_use["tool"], "terminal: echo hello", "{run:#}");
    let output = one(&run, "tool_result")["output"]
        .as_str()
        .unwrap_or_default();
    assert!(output.contains("hello"), "{run:#}");
    // The prompt response's draft `usage` field; Hermes names no model there.
    assert_eq!(usage(&run), [("unknown".to_owned(), 20, 2)]);
}

#[test]
fn opencode_over_acp_runs_a_tool_and_replies() {
    let Some(run) = run_agent(Agent::Opencode) else {
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
    // opencode's `usage` counts only the turn's last model request.
    assert_eq!(usage(&run), [("unknown".to_owned(), 10, 1)]);
}
