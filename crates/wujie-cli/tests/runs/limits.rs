//! One set of limits: a line past them fails the run at read time, naming the line, and a run
//! never reports success while the server refused an event it read.

use wujie_testkit::*;

/// A `tool_use` line nested `depth` levels deep (the line's object is level 1).
fn nested_line(depth: usize, key: &str) -> String {
    let inner = depth - 2;
    format!(
        r#"{{"type":"tool_use","tool":"t","input":{{"x":{}1{}}},"source":"t","source_key":"{key}"}}"#,
        "[".repeat(inner),
        "]".repeat(inner)
    )
}

#[test]
fn a_line_nested_past_the_limit_fails_the_run_and_names_the_line() {
    let env = Env::new();
    let body = format!(
        "echo '{}'\necho '{}'\necho '{}'",
        msg("text", "before", "k1"),
        nested_line(100, "deep"),
        msg("final", "after", "k3"),
    );
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("deep", V1, &body).to_str().unwrap(),
    ]);
    let key = env.create_issue("deep");
    let out = env.run(&["run", &key, "--", "deep"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("line 2"), "{stderr}");
    assert!(
        stderr.contains("nested deeper than the limit of 64"),
        "{stderr}"
    );
    let issue = env.issue(&key);
    assert_eq!(issue["runs"][0]["status"], "failed");
    let keys: Vec<&str> = issue["runs"][0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["source_key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["k1"], "what came before the line is kept");
}

#[test]
fn a_run_whose_event_the_server_refused_does_not_succeed() {
    let team = Env::new();
    let server = Server::start(&team, &["--max-event-bytes", "300"]);
    let token = team.ok(&["token", "create"]).trim().to_owned();
    let laptop = Env::new();
    laptop.ok(&["login", "--server", &server.url, "--token", &token]);
    let body = format!(
        "echo '{}'\necho '{}'\necho '{}'",
        msg("text", "small", "k1"),
        msg("text", &"x".repeat(1000), "big"),
        msg("final", "done", "k3"),
    );
    laptop.ok(&[
        "local-run",
        "provider",
        "install",
        laptop.plugin("big", V1, &body).to_str().unwrap(),
    ]);
    let key = laptop.create_issue("refused");
    let out = laptop.run(&["run", &key, "--", "big"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("refused event \"big\""), "{stderr}");
    assert!(!stderr.contains(" succeeded"), "{stderr}");
    let run = &laptop.issue(&key)["runs"][0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["exit_code"], 0, "the adapter's own code is kept");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(error.contains("refused 1 of the events"), "{error}");
    assert_eq!(run["messages"].as_array().unwrap().len(), 2);
}
