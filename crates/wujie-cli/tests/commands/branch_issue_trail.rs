//! The issue trail of a branch opened with `--issue`: an unknown issue is refused at open, a
//! failed turn is reported (prompt + error, run failed), and a turn's tool calls are reported.

use std::path::Path;

use wujie_testkit::*;

fn install_fixture(env: &Env, fixture: &str, cli: &str) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../wujie-commondev/tests/fixtures/drivers")
        .join(fixture);
    let to = env.home.path().join("data/commondev/runtime").join(cli);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn open_args<'a>(env: &'a Env, cli: &'a str, issue: &'a str) -> Vec<&'a str> {
    vec![
        "branch",
        "open",
        "--project",
        "p",
        "--branch",
        "b",
        "--agent-cli",
        cli,
        "--workdir",
        env.work.path().to_str().unwrap(),
        "--issue",
        issue,
    ]
}

const PROMPT: [&str; 7] = [
    "branch",
    "prompt",
    "--project",
    "p",
    "--branch",
    "b",
    "look around",
];

#[test]
fn an_unknown_issue_is_refused_at_open() {
    let env = Env::new();
    install_fixture(&env, "alpha", "alpha");
    let err = env.fails(&open_args(&env, "alpha", "WUJ-999"));
    assert!(
        err.contains("WUJ-999") && err.contains("no such issue"),
        "{err}"
    );
    // No branch was recorded.
    let listed = env.json(&["branch", "list"]);
    assert_eq!(listed["branches"].as_array().unwrap().len(), 0, "{listed}");
}

#[test]
fn a_failed_turn_is_reported_with_its_prompt_and_error() {
    let env = Env::new();
    install_fixture(&env, "misbehaving", "bad");
    std::fs::write(env.work.path().join("behaviour"), "blank").unwrap();
    let key = env.create_issue("delegated");
    env.ok(&open_args(&env, "bad", &key));
    let err = env.fails(&PROMPT);
    assert!(err.contains("session_id"), "{err}");
    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "failed", "{issue}");
    let messages = run["messages"].as_array().unwrap();
    assert_eq!(messages[0]["type"], "user_input", "{run}");
    assert_eq!(messages[0]["content"], "look around");
    let last = messages.last().unwrap();
    assert_eq!(last["type"], "error", "{run}");
    assert!(
        last["content"].as_str().unwrap().contains("session_id"),
        "{run}"
    );
}

#[test]
fn a_turns_tool_calls_are_reported() {
    let env = Env::new();
    install_fixture(&env, "tooluser", "tools");
    let key = env.create_issue("delegated");
    env.ok(&open_args(&env, "tools", &key));
    let reply = env.ok(&PROMPT);
    assert_eq!(reply.trim(), "there is a.txt");
    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "succeeded", "{issue}");
    let kinds: Vec<&str> = run["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["user_input", "tool_use", "tool_result", "final"],
        "{run}"
    );
    let tool = &run["messages"][1];
    assert_eq!(tool["tool"], "bash", "{run}");
    assert_eq!(tool["input"]["command"], "ls", "{run}");
    assert_eq!(run["messages"][2]["output"], "a.txt", "{run}");
}
