//! The built-in `acp` provider through the real `wujie` binary, against a stand-in ACP agent
//! of these tests' own (`tests/fixtures/fake_acp_agent.py`): a scripted turn with a tool call,
//! a permission request answered per `--allow`, unknown update kinds that must not fail the
//! run, an agent that exits mid-turn, and lines that are not JSON-RPC.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use wujie_testkit::Env;
use wujie_testkit::run_output::{describe, messages_of, one};

const PROMPT: &str = "Run echo hello, then say done.";
const CONTEXT_MARKER: &str = "the-storage-layer-needs-sqlite";

fn fake_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_acp_agent.py")
}

/// `wujie run KEY -- acp OPTIONS… -- python3 fake_acp_agent.py` in `mode`; returns the output
/// and every message the agent received.
fn run_fake(env: &Env, key: &str, mode: &str, options: &[&str]) -> (Output, Vec<Value>) {
    let log = env
        .work
        .path()
        .join(format!("acp-{mode}-{}.log", options.join("_")));
    let agent = fake_agent();
    let mut args = vec!["run", key, "--", "acp"];
    args.extend(options);
    args.extend(["--", "python3", agent.to_str().unwrap()]);
    let out = env
        .cmd()
        .env("FAKE_ACP_MODE", mode)
        .env("FAKE_ACP_LOG", &log)
        .args(&args)
        .output()
        .expect("wujie runs");
    (out, wujie_testkit::json_lines(&log))
}

/// The client's answer to the agent's permission request.
fn permission_answer(received: &[Value]) -> Value {
    received
        .iter()
        .find(|m| m.get("result").is_some_and(|r| r.get("outcome").is_some()))
        .map(|m| m["result"]["outcome"].clone())
        .unwrap_or_else(|| panic!("no permission answer in {received:#?}"))
}

#[test]
fn a_scripted_turn_lands_on_the_issue_with_keys_from_the_protocol_ids() {
    let env = Env::new();
    let key = wujie_testkit::tui_agent::create_marked_issue(&env, CONTEXT_MARKER);
    let (out, received) = run_fake(&env, &key, "ok", &["--allow", "once", "-p", PROMPT]);
    assert!(out.status.success(), "{}", describe(&out));

    let methods: Vec<&str> = received
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert_eq!(methods, ["initialize", "session/new", "session/prompt"]);
    let init = &received[0]["params"];
    assert_eq!(init["protocolVersion"], 1);
    // Nothing is advertised that the client does not implement.
    assert_eq!(
        init["clientCapabilities"]["fs"]["readTextFile"], false,
        "{init:#}"
    );
    assert_eq!(
        init["clientCapabilities"]["fs"]["writeTextFile"], false,
        "{init:#}"
    );
    assert_eq!(init["clientCapabilities"]["terminal"], false, "{init:#}");
    let cwd = received[1]["params"]["cwd"].as_str().expect("cwd");
    assert!(Path::new(cwd).is_absolute(), "{cwd}");
    // The issue goes with the prompt as read-only context, the ACP way for an agent that takes
    // embedded context: a resource of its own, before what the user typed.
    let prompt = received[2]["params"]["prompt"].as_array().expect("blocks");
    assert_eq!(prompt.len(), 2, "{prompt:#?}");
    assert_eq!(prompt[0]["type"], "resource", "{prompt:#?}");
    let context = &prompt[0]["resource"];
    assert!(
        context["uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("wujie:")),
        "{context:#}"
    );
    let text = context["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&key) && text.contains("echo something") && text.contains(CONTEXT_MARKER),
        "{text}"
    );
    assert_eq!(prompt[1]["text"], PROMPT);
    assert_eq!(
        permission_answer(&received),
        serde_json::json!({"outcome": "selected", "optionId": "yes-once"})
    );

    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "acp", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    let t = "session:fake-session-1:turn:1";
    assert_eq!(one(run, "user_input")["content"], PROMPT);
    assert_eq!(
        one(run, "user_input")["source_key"],
        format!("{t}:user:prompt")
    );
    assert_eq!(one(run, "thinking")["content"], "Let me think.");
    assert_eq!(one(run, "text")["content"], "I will run it.");
    assert_eq!(one(run, "text")["source_key"], format!("{t}:text:a1"));
    let tool_use = one(run, "tool_use");
    assert_eq!(tool_use["tool"], "echo hello");
    assert_eq!(tool_use["input"]["command"], "echo hello");
    assert_eq!(tool_use["source_key"], format!("{t}:tool:call-1:use"));
    let tool_result = one(run, "tool_result");
    assert_eq!(tool_result["output"], "hello");
    assert_eq!(tool_result["source_key"], format!("{t}:tool:call-1:result"));
    assert_eq!(
        one(run, "plan")["content"],
        "[completed] run echo\n[in_progress] say done"
    );
    assert_eq!(one(run, "final")["content"], "done");
    assert_eq!(one(run, "final")["source_key"], format!("{t}:final"));
    assert!(messages_of(run, "error").is_empty(), "{run:#}");

    let usage = run["usage"].as_array().expect("usage");
    assert_eq!(usage.len(), 1, "{run:#}");
    assert_eq!(usage[0]["provider"], "fake-agent");
    assert_eq!(usage[0]["input_tokens"], 30);
    assert_eq!(usage[0]["output_tokens"], 3);
    assert_eq!(usage[0]["cache_read_tokens"], 4);

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
    let comments: Vec<&str> = issue["comments"]
        .as_array()
        .expect("comments")
        .iter()
        .filter_map(|c| c["body"].as_str())
        .collect();
    assert!(comments.contains(&"done"), "{comments:?}");
}

#[test]
fn permission_requests_follow_the_policy_and_with_no_terminal_are_rejected_with_a_note() {
    let env = Env::new();
    let key = env.create_issue("acp permissions");
    for (options, option_id) in [
        (&["--allow", "always"][..], "yes-always"),
        (&["--allow", "reject"][..], "no"),
        (&[][..], "no"),
    ] {
        let mut args = options.to_vec();
        args.extend(["-p", PROMPT]);
        let (out, received) = run_fake(&env, &key, "ok", &args);
        assert!(out.status.success(), "{options:?}: {}", describe(&out));
        assert_eq!(
            permission_answer(&received),
            serde_json::json!({"outcome": "selected", "optionId": option_id}),
            "{options:?}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let noted = stderr.contains("no terminal to ask on") && stderr.contains("--allow once");
        assert_eq!(noted, options.is_empty(), "{options:?}: {stderr}");
    }
    let issue = env.issue(&key);
    let runs = issue["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3, "{issue:#}");
    assert_eq!(one(&runs[0], "tool_result")["output"], "hello");
    for rejected in &runs[1..] {
        assert_eq!(
            one(rejected, "tool_result")["output"],
            "failed: permission denied"
        );
    }
}

#[test]
fn an_agent_that_exits_mid_turn_fails_the_run_and_keeps_what_it_said() {
    let env = Env::new();
    let key = env.create_issue("acp agent dies");
    let (out, _) = run_fake(&env, &key, "exit", &["-p", PROMPT]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));

    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "failed", "{run:#}");
    assert_eq!(one(run, "thinking")["content"], "Let me think.");
    let error = one(run, "error")["content"].as_str().unwrap().to_owned();
    assert_eq!(error, "the turn broke off: Incoming transport closed");
    assert_eq!(one(run, "final")["content"], "I was about to");
}

#[test]
fn lines_that_are_not_json_rpc_do_not_end_the_turn() {
    let env = Env::new();
    let key = env.create_issue("acp garbage");
    let (out, _) = run_fake(&env, &key, "garbage", &["--allow", "once", "-p", PROMPT]);
    assert!(out.status.success(), "{}", describe(&out));
    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "succeeded", "{run:#}");
    assert_eq!(one(run, "tool_result")["output"], "hello");
    assert_eq!(one(run, "final")["content"], "done");
}

#[test]
fn bad_arguments_and_a_missing_agent_are_clear_errors() {
    let env = Env::new();
    let key = env.create_issue("acp bad args");
    for (args, says) in [
        (&["acp", "-p", "hi"][..], "no agent command after `--`"),
        (&["acp", "--", "python3"][..], "no prompt: pass -p TEXT"),
        (
            &["acp", "--allow", "maybe", "-p", "hi", "--", "x"][..],
            "\"maybe\" is not a policy",
        ),
        (
            &["acp", "--bogus", "--", "x"][..],
            "unknown option \"--bogus\"",
        ),
    ] {
        let mut full = vec!["run", &key, "--"];
        full.extend(args);
        let out = env.run(&full);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(says) && stderr.contains("usage: acp"),
            "{stderr}"
        );
    }
    let out = env.run(&[
        "run",
        &key,
        "--",
        "acp",
        "-p",
        "hi",
        "--",
        "/nonexistent/agent",
    ]);
    assert_eq!(out.status.code(), Some(127), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("could not start the agent \"/nonexistent/agent\""),
        "{stderr}"
    );
    // The system's reason comes once, after what was being done.
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
}
