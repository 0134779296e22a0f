//! A start that fails at once leaves nothing on the issue: a built-in provider whose agent is
//! not installed (what its adapter would exit 127 for) or whose arguments it refuses (2) is
//! refused before a run is created; a plugin's adapter that exits so having recorded nothing
//! leaves a run marked as not started, which the issue does not list. `wujie run` says why.

use wujie_testkit::*;

/// `wujie run` with a PATH that holds no agent CLI and no override variables.
fn run_without_agents(env: &Env, args: &[&str]) -> std::process::Output {
    let empty = env.work.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let mut cmd = env.cmd();
    for (name, _) in std::env::vars() {
        if name.starts_with("WUJIE_") && name.ends_with("_BIN") {
            cmd.env_remove(name);
        }
    }
    cmd.env("PATH", &empty)
        .args(args)
        .output()
        .expect("wujie runs")
}

/// The issue has no run and stayed open.
fn untouched(env: &Env, key: &str) {
    let issue = env.issue(key);
    assert_eq!(issue["runs"], serde_json::json!([]), "{issue}");
    assert_eq!(issue["status"], "open", "{issue}");
}

#[test]
fn a_missing_agent_creates_no_run_and_says_what_to_install() {
    let env = Env::new();
    let key = env.create_issue("Needs claude");
    let out = run_without_agents(&env, &["run", &key, "--", "claude"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains(
            "claude cannot start, so nothing was created on the server: claude was not found"
        ),
        "{err}"
    );
    assert!(
        err.contains("WUJIE_CLAUDE_BIN"),
        "how to point at it: {err}"
    );
    assert!(err.contains("npm install -g"), "how to install it: {err}");
    untouched(&env, &key);
}

#[test]
fn arguments_a_built_in_provider_refuses_create_no_run() {
    let env = Env::new();
    let key = env.create_issue("Bad arguments");
    // The refusal comes before the agent is looked for: pi need not be installed.
    let out = run_without_agents(&env, &["run", &key, "--", "pi", "--mode", "text"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("pi cannot start"), "{err}");
    assert!(err.contains("--mode"), "names the argument: {err}");
    untouched(&env, &key);
}

#[test]
fn a_plugin_that_exits_127_or_2_is_reported_as_not_started_and_not_listed() {
    let env = Env::new();
    let dir = env.plugin(
        "needs-agent",
        V1,
        "echo 'needs-agent: agent-cli: command not found' >&2\nexit 127\n",
    );
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    let key = env.create_issue("Plugin without its agent");
    let out = env.run(&["run", &key, "--", "needs-agent"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains("it did not start: its agent could not be run, see above"),
        "{err}"
    );
    untouched(&env, &key);

    let dir = env.plugin(
        "picky",
        V1,
        "echo 'picky: unknown option --fast' >&2\nexit 2\n",
    );
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    let out = env.run(&["run", &key, "--", "picky", "--fast"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("its arguments were refused"), "{err}");
    untouched(&env, &key);
    // A run that did something is listed whatever it exits with.
    let dir = env.plugin(
        "talker",
        V1,
        &format!("echo '{}'\nexit 2\n", msg("final", "done", "m1")),
    );
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    env.run(&["run", &key, "--", "talker"]);
    assert_eq!(env.issue(&key)["runs"].as_array().map(Vec::len), Some(1));
}
