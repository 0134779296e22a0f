//! `wujie local-run provider check DIR [-- ARGS]`: the examples and the samples pass it, and
//! deliberately broken plugins fail it with the rule they break named (and only that one).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use wujie_mockllm::Script;
use wujie_mockllm::agents::{Agent, agents_dir};
use wujie_testkit::*;

/// (exit code, the JSON report) of `provider check DIR EXTRA…`.
fn check(env: &Env, dir: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec![
        "--output",
        "json",
        "local-run",
        "provider",
        "check",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = env.run(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "not one JSON document ({e}):\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), report)
}

fn with_verdict(report: &serde_json::Value, verdict: &str) -> Vec<String> {
    report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["verdict"] == verdict)
        .map(|r| r["rule"].as_str().unwrap().to_owned())
        .collect()
}

fn passes(env: &Env, dir: &Path, extra: &[&str]) -> serde_json::Value {
    let (code, report) = check(env, dir, extra);
    assert_eq!(
        with_verdict(&report, "fail"),
        Vec::<String>::new(),
        "{report:#}"
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["passed"], true);
    report
}

/// Fails with exactly `rules`, each with its fix.
fn fails_with(env: &Env, dir: &Path, rules: &[&str]) -> serde_json::Value {
    let (code, report) = check(env, dir, &["--timeout", "10"]);
    assert_eq!(with_verdict(&report, "fail"), rules, "{report:#}");
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["passed"], false);
    for rule in report["rules"].as_array().unwrap() {
        if rule["verdict"] == "fail" {
            assert!(
                rule["fix"].as_str().is_some_and(|f| !f.is_empty()),
                "{rule:#}"
            );
        }
    }
    report
}

/// [`fails_with`], and the report says `says`.
fn fails_saying(env: &Env, dir: &Path, rules: &[&str], says: &str) {
    let report = fails_with(env, dir, rules);
    assert!(report.to_string().contains(says), "{report:#}");
}

/// The result of the rule `id` in `report`.
fn rule<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == id)
        .unwrap_or_else(|| panic!("no rule {id}: {report:#}"))
}

/// A plugin whose manifest is `manifest` (merged over a valid v1 one) and whose adapter is the
/// shell script `body`.
fn plugin(env: &Env, name: &str, manifest: serde_json::Value, body: &str) -> PathBuf {
    let dir = env.work.path().join("plugins").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut full = serde_json::json!({
        "schema_version": 1,
        "name": name,
        "command": "./adapter",
        "protocol": V1,
        "capabilities": {"structured_events": true, "issue_context": "env", "usage": true}
    });
    for (k, v) in manifest.as_object().unwrap() {
        full[k] = v.clone();
    }
    std::fs::write(dir.join("provider.json"), full.to_string()).unwrap();
    let script = dir.join("adapter");
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A v1 plugin whose adapter does `script` once it has checked that it is in a run.
fn run_plugin(env: &Env, name: &str, script: &str) -> PathBuf {
    plugin(
        env,
        name,
        serde_json::json!({}),
        &format!("{NEEDS_RUN}\n{script}"),
    )
}

const NEEDS_RUN: &str =
    r#"[ -n "$WUJIE_RUN_ID" ] || { echo "WUJIE_RUN_ID is required" >&2; exit 2; }"#;
const NEEDS_CONTEXT: &str = r#"[ -n "$WUJIE_RUN_ID$WUJIE_LOCALRUN_SESSION_ID" ] || { echo "no run or discussion" >&2; exit 2; }"#;

fn line(json: &str) -> String {
    format!("printf '%s\\n' '{json}'")
}

fn good_v1_events() -> String {
    [
        line(r#"{"type":"user_input","content":"hi","source":"t","source_key":"k:1:user"}"#),
        line(r#"{"type":"final","content":"done","source":"t","source_key":"k:1:final"}"#),
        line(r#"{"usage":{"provider":"t","model":"m","input_tokens":1,"output_tokens":2}}"#),
    ]
    .join("\n")
}

#[test]
fn the_examples_pass() {
    let env = Env::new();
    let report = passes(&env, &examples().join("fake-provider"), &[]);
    assert_eq!(report["provider"], "fake-provider");
    assert_eq!(
        with_verdict(&report, "skipped"),
        ["v2_discussion", "v2_session_event", "native_plan_handoff"]
    );
    // v2 with native handoff: the canned conversation reaches the plan, the check declines it.
    let report = passes(
        &env,
        &examples().join("fake-provider-v2"),
        &["--", "--script"],
    );
    assert_eq!(with_verdict(&report, "skipped"), Vec::<String>::new());
    // An interactive one, typed into like a person.
    passes(
        &env,
        &examples().join("fake-tui-v2"),
        &[
            "--timeout",
            "10",
            "--input",
            "plan it",
            "--input",
            "use sqlite",
            "--",
            "--handoff",
            "current_context",
        ],
    );
}

/// `provider check localrun-providers/NAME CHECK_ARGS…` with the real agent against the mock,
/// in its home; the report, which must have no failed rule. None when the agent is skipped.
fn sample_passes(agent: Agent, name: &str, check_args: &[&str]) -> Option<serde_json::Value> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (mock, home) = runtime
        .block_on(agent.require_mock(Script::default()))
        .unwrap_or_else(|error| panic!("{error}"))?;
    let env = Env::new();
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../localrun-providers")
        .join(name);
    let path = format!(
        "{}:{}",
        agents_dir().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = env
        .cmd()
        .current_dir(home.workdir())
        .env("HOME", home.home())
        .env("PATH", path)
        .envs(home.envs().iter().map(|(k, v)| (k, v)))
        .args(["--output", "json", "local-run", "provider", "check"])
        .arg(&sample)
        .args(check_args)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    assert_eq!(
        with_verdict(&report, "fail"),
        Vec::<String>::new(),
        "{report:#}"
    );
    assert!(out.status.success(), "{report:#}");
    // The agent answered in each start, so the events were really checked.
    assert_eq!(rule(&report, "event_fields")["verdict"], "pass");
    assert!(
        rule(&report, "event_fields")["detail"]
            .as_str()
            .unwrap()
            .starts_with('2'),
        "user_input + final: {report:#}"
    );
    assert_eq!(
        rule(&report, "usage_fields")["verdict"],
        "pass",
        "{report:#}"
    );
    assert_eq!(rule(&report, "v2_session_event")["verdict"], "pass");
    // Each start is a new native session: not a replay of the same events.
    assert_eq!(
        rule(&report, "stable_keys")["verdict"],
        "skipped",
        "{report:#}"
    );
    runtime.block_on(mock.shutdown());
    Some(report)
}

#[test]
fn the_grok_sample_passes_with_the_real_grok() {
    // Grok's initial prompt (its positional argument) makes every start answer.
    sample_passes(Agent::Grok, "grok", &["--timeout", "60", "--", "say hi"]);
}

#[test]
fn the_hermes_sample_passes_with_the_real_hermes() {
    sample_passes(
        Agent::Hermes,
        "hermes",
        &["--timeout", "120", "--input", "say hi", "--", "--yolo"],
    );
}

/// A plugin that logs a line to stdout before its events.
fn chatty_plugin(env: &Env) -> PathBuf {
    run_plugin(
        env,
        "chatty",
        &format!("echo 'starting up'\n{}", good_v1_events()),
    )
}

#[test]
fn a_log_line_on_stdout_fails_stdout_json() {
    let env = Env::new();
    let dir = chatty_plugin(&env);
    let report = fails_with(&env, &dir, &["stdout_json"]);
    let rule = &report["rules"].as_array().unwrap()[4];
    assert_eq!(rule["rule"], "stdout_json");
    assert!(
        rule["detail"]
            .as_str()
            .unwrap()
            .contains("line 1 is not a JSON object: \"starting up\""),
        "{rule:#}"
    );
}

#[test]
fn missing_fields_and_wrong_types_fail_event_fields() {
    let env = Env::new();
    for (name, event) in [
        (
            "no-key",
            r#"{"type":"final","content":"done","source":"t"}"#,
        ),
        (
            "string-input",
            r#"{"type":"tool_use","tool":"sh","input":"echo hi","source":"t","source_key":"k"}"#,
        ),
    ] {
        let dir = run_plugin(&env, name, &line(event));
        fails_with(&env, &dir, &["event_fields"]);
    }
}

#[test]
fn keys_from_the_clock_fail_stable_keys() {
    let env = Env::new();
    let dir = run_plugin(
        &env,
        "clock-keys",
        "printf '%s\\n' \"{\\\"type\\\":\\\"final\\\",\\\"content\\\":\\\"done\\\",\\\"source\\\":\\\"t\\\",\\\"source_key\\\":\\\"k:$(date +%s%N)\\\"}\"",
    );
    let report = fails_with(&env, &dir, &["stable_keys"]);
    let rule = rule(&report, "stable_keys");
    assert!(
        rule["detail"].as_str().unwrap().contains("1 new rows"),
        "{rule:#}"
    );
}

#[test]
fn one_key_for_two_events_fails_unique_keys() {
    let env = Env::new();
    let dir = run_plugin(
        &env,
        "same-key",
        &format!(
            "{}\n{}",
            line(r#"{"type":"text","content":"one","source":"t","source_key":"k"}"#),
            line(r#"{"type":"final","content":"two","source":"t","source_key":"k"}"#)
        ),
    );
    fails_with(&env, &dir, &["unique_keys"]);
}

#[test]
fn unsupported_usage_fields_fail_usage_fields() {
    let env = Env::new();
    let dir = run_plugin(
        &env,
        "usage-extra",
        &line(
            r#"{"usage":{"provider":"t","model":"m","input_tokens":1,"output_tokens":2,"total_tokens":3}}"#,
        ),
    );
    fails_saying(&env, &dir, &["usage_fields"], "total_tokens");
}

#[test]
fn exiting_0_without_a_run_fails_failure_exit_and_a_failed_run_fails_run_exit() {
    let env = Env::new();
    let careless = plugin(&env, "careless", serde_json::json!({}), &good_v1_events());
    fails_with(&env, &careless, &["failure_exit"]);
    let failing = run_plugin(&env, "failing", "echo 'model unreachable' >&2\nexit 1");
    fails_with(&env, &failing, &["run_exit"]);
}

#[test]
fn a_v2_plugin_that_needs_a_run_or_never_names_its_session_fails_the_v2_rules() {
    let env = Env::new();
    let session = line(r#"{"event":"session","session_id":"native-1"}"#);
    let v2 = |name: &str, script: String| {
        let body = format!("{script}\n{}", good_v1_events());
        plugin(&env, name, serde_json::json!({"protocol": V2}), &body)
    };
    let run_only = v2("run-only", format!("{NEEDS_RUN}\n{session}"));
    fails_with(&env, &run_only, &["v2_discussion", "v2_session_event"]);
    let nameless = v2("nameless", NEEDS_CONTEXT.to_owned());
    fails_with(&env, &nameless, &["v2_session_event"]);
    let good = v2("good-v2", format!("{NEEDS_CONTEXT}\n{session}"));
    passes(&env, &good, &[]);
}

#[test]
fn a_handoff_that_does_not_wait_or_ignores_a_refusal_fails_native_plan_handoff() {
    let env = Env::new();
    let manifest = serde_json::json!({"protocol": V2, "capabilities": {
        "structured_events": true, "usage": false, "native_plan_handoff": true}});
    let head = format!(
        "{NEEDS_CONTEXT}\n{}\n{}",
        line(r#"{"event":"session","session_id":"native-1"}"#),
        line(r#"{"event":"handoff_ready","request_id":"h-1","mode":"current_context"}"#)
    );
    let executed =
        line(r#"{"type":"final","content":"plan executed","source":"t","source_key":"k:exec"}"#);
    for (name, rest, says) in [
        ("eager", executed.clone(), "went on before the decision"),
        (
            "deaf",
            format!("read decision\n{executed}"),
            "acted after accepted:false",
        ),
    ] {
        let dir = plugin(&env, name, manifest.clone(), &format!("{head}\n{rest}"));
        fails_saying(&env, &dir, &["native_plan_handoff"], says);
    }
    let careful = plugin(
        &env,
        "careful",
        manifest,
        &format!(
            "{head}\nread decision\ncase \"$decision\" in *'\"accepted\":true'*) {executed};; esac"
        ),
    );
    passes(&env, &careful, &[]);
}

#[test]
fn manifest_name_and_command_problems_are_named() {
    let env = Env::new();
    let schema = plugin(
        &env,
        "schema",
        serde_json::json!({"schema_version": 2}),
        "exit 0",
    );
    fails_saying(&env, &schema, &["manifest"], "schema");
    let builtin = plugin(&env, "pi", serde_json::json!({}), &good_v1_events());
    fails_with(&env, &builtin, &["name", "failure_exit"]);
    let dir = plugin(&env, "not-executable", serde_json::json!({}), "exit 0");
    std::fs::set_permissions(dir.join("adapter"), std::fs::Permissions::from_mode(0o644)).unwrap();
    fails_saying(&env, &dir, &["command"], "not executable");
}

#[test]
fn the_text_report_names_the_rule_and_the_fix() {
    let env = Env::new();
    let dir = chatty_plugin(&env);
    let out = env.run(&["local-run", "provider", "check", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("FAIL  stdout_json"), "{text}");
    assert!(text.contains("fix: write logs, debug output"), "{text}");
    assert!(text.contains("pass  event_fields"), "{text}");
    assert!(
        text.contains("rules: 9 passed, 1 failed, 3 skipped"),
        "{text}"
    );
}
