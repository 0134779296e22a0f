//! The built-in `pi` provider through the real `wujie` binary: runs of the real pi CLI against
//! the mock model server, the adapter's handling of odd pi behaviour (with a stand-in `pi`
//! script), and the rules that keep plugins from overriding or removing a built-in.
//!
//! The real-pi test fails when pi is not installed, saying to run `scripts/agents/install pi`,
//! unless `WUJIE_SKIP_AGENTS` lists pi (or says `all`).

use std::collections::HashSet;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use wujie_mockllm::agents::{Agent, AgentHome, agents_dir};
use wujie_testkit::run_output::{describe, messages_of};
use wujie_testkit::{Env, V1};

const PROMPT: &str = "Run the shell command echo hello, then say done.";

/// `wujie` with the test's profile, where `pi` is the real one pointed at the mock.
fn with_pi(env: &Env, home: &AgentHome, args: &[&str]) -> Command {
    let mut path = OsString::from(agents_dir().join("bin"));
    if let Some(inherited) = std::env::var_os("PATH") {
        path.push(":");
        path.push(inherited);
    }
    let mut cmd = env.cmd();
    cmd.env("HOME", home.home())
        .env("PATH", path)
        .envs(home.envs().iter().map(|(k, v)| (k, v)))
        .args(args);
    cmd
}

/// The ids of pi's session files (`<timestamp>_<id>.jsonl`) under its home.
fn pi_session_ids(home: &AgentHome) -> HashSet<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&home.home().join(".pi/agent/sessions"), &mut files);
    files
        .iter()
        .filter_map(|p| p.file_name()?.to_str()?.strip_suffix(".jsonl"))
        .filter_map(|name| name.rsplit_once('_').map(|(_, id)| id.to_owned()))
        .collect()
}

/// Checks one pi run on the issue and returns its pi session id.
fn assert_pi_run(run: &Value) -> String {
    assert_eq!(run["provider"], "pi", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    assert_eq!(run["exit_code"], 0, "{run:#}");

    let one = |kind: &str| {
        let found = messages_of(run, kind);
        assert_eq!(found.len(), 1, "exactly one {kind} in {run:#}");
        found[0].clone()
    };
    assert_eq!(one("user_input")["content"], PROMPT);
    let tool_use = one("tool_use");
    assert_eq!(tool_use["tool"], "bash");
    assert_eq!(tool_use["input"]["command"], "echo hello");
    let tool_result = one("tool_result");
    assert_eq!(tool_result["tool"], "bash");
    assert_eq!(tool_result["output"].as_str().map(str::trim), Some("hello"));
    assert_eq!(one("final")["content"], "done");

    // The script's default usage, once per model answer (the tool call, then "done").
    let usage = run["usage"].as_array().expect("usage");
    assert_eq!(usage.len(), 2, "{run:#}");
    for u in usage {
        assert_eq!(u["provider"], "mock");
        assert_eq!(u["model"], "mock-model");
        assert_eq!(u["input_tokens"], 10);
        assert_eq!(u["output_tokens"], 1);
    }

    let messages = run["messages"].as_array().expect("messages");
    let keys: Vec<&str> = messages
        .iter()
        .map(|m| m["source_key"].as_str().expect("source_key"))
        .collect();
    let unique: HashSet<&&str> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len(), "duplicate keys in {keys:?}");
    assert!(messages.iter().all(|m| m["source"] == "pi"), "{run:#}");
    let session = keys[0]
        .strip_prefix("session:")
        .and_then(|rest| rest.split(':').next())
        .expect("keys start with the pi session")
        .to_owned();
    assert!(
        keys.iter()
            .all(|k| k.starts_with(&format!("session:{session}:"))),
        "{keys:?}"
    );
    session
}

#[test]
fn real_pi_run_is_synced_into_the_issue() {
    let agent = Agent::Pi;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let script = agent.shell_script("echo hello", "echo hello", "hello", "done");
    let Some((mock, home)) = runtime
        .block_on(agent.require_mock(script))
        .unwrap_or_else(|error| panic!("{error}"))
    else {
        return;
    };

    let env = Env::new();
    let key = env.create_issue("pi says hello");
    let mut pi_args = vec!["run", &key, "--", "pi"];
    let model_args = home.model_args();
    pi_args.extend(model_args.iter().map(String::as_str));
    pi_args.extend(["-p", PROMPT]);

    let first = with_pi(&env, &home, &pi_args).output().expect("wujie runs");
    assert!(first.status.success(), "{}", describe(&first));
    let turns: Vec<usize> = mock.requests().iter().filter_map(|r| r.turn).collect();
    assert_eq!(turns, vec![0, 1], "the mock answered both scripted turns");

    // A second run of the same command: a new run, a new pi session, its own keys.
    let second = with_pi(&env, &home, &pi_args).output().expect("wujie runs");
    assert!(second.status.success(), "{}", describe(&second));

    let issue = env.issue(&key);
    let runs = issue["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{issue:#}");
    let sessions: Vec<String> = runs.iter().map(assert_pi_run).collect();
    assert_ne!(sessions[0], sessions[1], "each run is its own pi session");
    assert_eq!(
        pi_session_ids(&home),
        sessions.iter().cloned().collect::<HashSet<_>>(),
        "the keys name the session files pi wrote"
    );

    let comments = issue["comments"].as_array().expect("comments");
    let bodies: Vec<&str> = comments.iter().filter_map(|c| c["body"].as_str()).collect();
    assert_eq!(
        bodies.iter().filter(|b| **b == "done").count(),
        2,
        "{bodies:?}"
    );
    runtime.block_on(mock.shutdown());
}

/// A stand-in for pi: a shell script named `pi` in its own directory.
fn fake_pi(env: &Env, body: &str) -> PathBuf {
    let dir = env.work.path().join("fake-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("pi");
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn adapter_keeps_pi_noise_off_stdout_and_passes_its_exit_code() {
    let env = Env::new();
    let pi = fake_pi(
        &env,
        r#"echo "pi: a banner on stdout"
printf '%s\n' "{\"type\":\"session\",\"version\":3,\"id\":\"s-1\"}"
printf '%s\n' "{\"type\":\"tool_execution_start\",\"toolCallId\":\"c1\",\"toolName\":\"bash\",\"args\":{\"argv\":\"$*\"}}"
printf '%s\n' '{"type":"something_new"}'
exit 3"#,
    );
    let key = env.create_issue("fake pi");
    let out = env
        .cmd()
        .env("WUJIE_PI_BIN", &pi)
        .args(["run", &key, "--", "pi", "-p", "fix it", "--help"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("pi: a banner on stdout"), "{stderr}");

    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "failed", "{run:#}");
    assert_eq!(run["exit_code"], 3, "{run:#}");
    // The banner was no protocol error, and pi got `--mode json` plus the user's arguments.
    let tool_use = messages_of(run, "tool_use");
    assert_eq!(tool_use.len(), 1, "{run:#}");
    assert_eq!(tool_use[0]["input"]["argv"], "--mode json -p fix it --help");
    assert_eq!(
        tool_use[0]["source_key"],
        "session:s-1:turn:none:tool:c1:use"
    );
}

#[test]
fn adapter_refuses_a_mode_switch_and_names_where_it_looked_for_pi() {
    let env = Env::new();
    let pi = fake_pi(&env, "echo should not run >&2; exit 9");
    let key = env.create_issue("bad args");
    let out = env
        .cmd()
        .env("WUJIE_PI_BIN", &pi)
        .args(["run", &key, "--", "pi", "--mode", "rpc"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        stderr.contains("\"--mode\"") && !stderr.contains("should not run"),
        "{stderr}"
    );

    let out = env
        .cmd()
        .env("PATH", "/nonexistent-bin")
        .args(["run", &key, "--", "pi", "-p", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{}", describe(&out));
    assert!(
        stderr.contains("WUJIE_PI_BIN") && stderr.contains("/nonexistent-bin"),
        "{stderr}"
    );

    let err = env.fails(&["adapter", "nope"]);
    assert!(
        err.contains("no built-in provider named \"nope\"") && err.contains("pi"),
        "{err}"
    );
}

#[test]
fn pi_is_built_in_and_cannot_be_overridden_disabled_or_removed() {
    let env = Env::new();
    let list = env.json(&["local-run", "provider", "list"]);
    let pi = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "pi")
        .unwrap_or_else(|| panic!("pi listed: {list:#}"));
    assert_eq!(pi["kind"], "builtin");
    assert_eq!(pi["display_name"], "pi (built in)");
    assert_eq!(pi["protocol"], V1);
    assert_eq!(pi["enabled"], true);

    // A plugin named pi cannot be installed…
    let plugin = env.plugin("pi", V1, "exit 0");
    let err = env.fails(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    assert!(err.contains("conflict"), "{err}");

    // …nor configured by hand: the list shows the conflict, the built-in stays.
    std::fs::create_dir_all(env.config_path().parent().unwrap()).unwrap();
    let config = serde_json::json!({"localrun_providers": {"pi": {
        "manifest_path": plugin.join("provider.json"), "enabled": true}}});
    std::fs::write(env.config_path(), config.to_string()).unwrap();
    let text = env.ok(&["local-run", "provider", "list"]);
    assert!(text.contains("conflict"), "{text}");
    let list = env.json(&["local-run", "provider", "list"]);
    let rows: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "pi")
        .collect();
    assert_eq!(rows.len(), 2, "{list:#}");
    assert_eq!(rows[0]["kind"], "builtin");
    assert!(
        rows[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("conflict")),
        "{list:#}"
    );

    for verb in ["disable", "remove"] {
        let err = env.fails(&["local-run", "provider", verb, "pi"]);
        assert!(
            err.contains("built-in") && err.contains("cannot be disabled or removed"),
            "{verb}: {err}"
        );
    }
}

/// A job assigned to pi from the tracker: a worker runs the real pi, headless, in the issue's
/// worktree, with the issue as its task; its transcript and what it changed land on the issue.
#[test]
fn a_job_assigned_to_pi_runs_on_a_worker_with_the_issue_as_its_task() {
    let agent = Agent::Pi;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let command = "echo hello > note.txt && cat note.txt";
    let script = agent.shell_script("hello into note.txt", command, "hello", "done");
    let Some((mock, home)) = runtime
        .block_on(agent.require_mock(script))
        .unwrap_or_else(|error| panic!("{error}"))
    else {
        return;
    };
    let Some(git) = wujie_require::require("git") else {
        return;
    };
    let env = Env::new();
    let repo = env.work.path().join("project");
    std::fs::create_dir(&repo).unwrap();
    let run_git = |args: &[&str]| {
        let out = Command::new(&git)
            .current_dir(&repo)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", describe(&out));
    };
    run_git(&["init", "-q", "-b", "main"]);
    run_git(&["config", "user.name", "Ada Tester"]);
    run_git(&["config", "user.email", "ada@example.test"]);
    std::fs::write(repo.join("README"), "project\n").unwrap();
    run_git(&["add", "-A"]);
    run_git(&["commit", "-q", "-m", "base"]);

    let key = env.create_issue("Write hello into note.txt");
    let mut assign = vec!["issue", "assign", &key, "--agent", "pi", "--"];
    let model_args = home.model_args();
    assign.extend(model_args.iter().map(String::as_str));
    env.ok(&assign);
    let worker = with_pi(
        &env,
        &home,
        &[
            "worker",
            "--repo",
            repo.to_str().unwrap(),
            "--exit-when-idle",
        ],
    )
    .output()
    .expect("wujie runs");
    assert!(worker.status.success(), "{}", describe(&worker));

    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(
        (run["provider"].as_str(), run["status"].as_str()),
        (Some("pi"), Some("succeeded")),
        "{issue:#}"
    );
    let said = messages_of(run, "user_input");
    assert_eq!(said.len(), 1, "{run:#}");
    assert_eq!(
        said[0]["content"],
        format!("{key}: Write hello into note.txt")
    );
    assert_eq!(messages_of(run, "final")[0]["content"], "done");
    let files: Vec<&str> = run["git"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(files, ["note.txt"], "{run:#}");
    let job = &env.json(&["jobs", "--issue", &key])[0];
    assert_eq!(
        (job["status"].as_str(), job["run_id"].as_str()),
        (Some("succeeded"), run["id"].as_str())
    );
    runtime.block_on(mock.shutdown());
}

/// A pi whose package says `version`, as npm installs it: `node_modules/<package>/dist/cli.js`
/// with the package's manifest above it. It prints one reply and ends.
fn pi_package(env: &Env, version: &str) -> PathBuf {
    let package = env.work.path().join(format!(
        "pi-{version}/node_modules/@mariozechner/pi-coding-agent"
    ));
    std::fs::create_dir_all(package.join("dist")).unwrap();
    std::fs::write(
        package.join("package.json"),
        format!(r#"{{"name": "@mariozechner/pi-coding-agent", "version": "{version}"}}"#),
    )
    .unwrap();
    let cli = package.join("dist/cli.js");
    std::fs::write(
        &cli,
        "#!/bin/sh\nprintf '%s\\n' '{\"type\":\"session\",\"version\":3,\"id\":\"s-1\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
    cli
}

#[test]
fn a_pi_version_that_was_not_tested_is_said_once_before_the_run() {
    let env = Env::new();
    let key = env.create_issue("a newer pi");
    let run_with = |pi: &PathBuf| {
        let out = env
            .cmd()
            .env("WUJIE_PI_BIN", pi)
            .args(["run", &key, "--", "pi", "-p", "hi"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let newer = pi_package(&env, "99.0.0");
    let stderr = run_with(&newer);
    let said = "wujie: note: pi 99.0.0 is not a version this wujie was tested with (0.73.1)";
    assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
    // Once for that version; the tested one goes quietly.
    assert!(!run_with(&newer).contains("note: pi"));
    assert!(!run_with(&pi_package(&env, "0.73.1")).contains("note: pi"));
}
