//! `wujie run`: the seed's acceptance points, the environment, exit codes, cancellation and
//! adversarial adapters.

use std::process::Stdio;

use wujie_testkit::*;

fn messages(issue: &serde_json::Value) -> Vec<serde_json::Value> {
    issue["runs"][0]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn kinds(issue: &serde_json::Value) -> Vec<String> {
    messages(issue)
        .iter()
        .map(|m| m["type"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn fake_provider_acceptance_points() {
    let env = Env::new();
    env.install_example("fake-provider");
    let key = env.create_issue("WUJ acceptance");
    let out = env.run(&["run", &key, "--", "fake-provider"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "wujie run prints nothing on stdout in text mode"
    );

    let issue = env.issue(&key);
    assert_eq!(
        kinds(&issue),
        ["user_input", "text", "tool_use", "tool_result", "final"]
    );
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "fake-provider");
    assert_eq!(run["status"], "succeeded");
    assert_eq!(run["exit_code"], 0);
    let m = messages(&issue);
    assert_eq!(m[2]["tool"], "exec_command");
    assert_eq!(m[2]["input"]["command"], "echo hello");
    assert_eq!(m[3]["output"], "hello");
    assert_eq!(m[4]["source_key"], "fake:turn-1:final");
    let usage = run["usage"].as_array().unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0]["model"], "fake-model");
    assert_eq!(usage[0]["input_tokens"], 1);

    let comments = issue["comments"].as_array().unwrap();
    assert_eq!(comments.len(), 2);
    assert_eq!(comments[0]["author_kind"], "user");
    assert_eq!(comments[0]["body"], "请验证 fake provider");
    assert_eq!(comments[1]["author_kind"], "agent");
    assert_eq!(comments[1]["body"], "fake provider 验证完成。");
    assert_eq!(comments[1]["run_id"], run["id"]);

    // Text rendering of the same issue.
    let text = env.ok(&["issue", "show", &key]);
    assert!(
        text.contains("tool_use") && text.contains("exec_command"),
        "{text}"
    );
}

#[test]
fn adapter_without_run_context_fails_as_the_seed_says() {
    // The seed's fake adapter exits 2 without WUJIE_RUN_ID; here it gets one, so check the
    // opposite: the variable reaches it even when the caller's own environment had another.
    let env = Env::new();
    env.install_example("fake-provider");
    let key = env.create_issue("nested");
    let out = env
        .cmd()
        .env("WUJIE_RUN_ID", "from-the-parent")
        .env("WUJIE_LOCALRUN_SESSION_ID", "leaked")
        .args(["run", &key, "--", "fake-provider"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn argv_cwd_and_environment() {
    let env = Env::new();
    let dump = env.work.path().join("dump");
    let body = format!(
        "pwd > {d}.cwd\nprintf '%s\\n' \"$@\" > {d}.argv\nenv > {d}.env\necho 'adapter log line' >&2\necho '{m}'",
        d = dump.display(),
        m = msg("final", "ok", "k")
    );
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("envdump", V1, &body).to_str().unwrap(),
    ]);
    let key = env.create_issue("env");
    let out = env.run(&["run", &key, "--", "envdump", "--model", "demo", "two words"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("adapter log line"),
        "adapter stderr passes through"
    );

    let argv = std::fs::read_to_string(dump.with_extension("argv")).unwrap();
    assert_eq!(argv, "--model\ndemo\ntwo words\n");
    let cwd = std::fs::read_to_string(dump.with_extension("cwd")).unwrap();
    assert_eq!(
        std::path::Path::new(cwd.trim()).canonicalize().unwrap(),
        env.work.path().canonicalize().unwrap()
    );
    let vars: std::collections::HashMap<String, String> =
        std::fs::read_to_string(dump.with_extension("env"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect();
    let issue = env.issue(&key);
    assert_eq!(
        vars["WUJIE_RUN_ID"],
        issue["runs"][0]["id"].as_str().unwrap()
    );
    assert_eq!(vars["WUJIE_ISSUE_ID"], issue["id"].as_str().unwrap());
    assert!(!vars["WUJIE_WORKSPACE_ID"].is_empty());
    assert!(
        vars["WUJIE_SERVER_URL"].starts_with("http://127.0.0.1:"),
        "{}",
        vars["WUJIE_SERVER_URL"]
    );
    assert!(vars["WUJIE_TOKEN"].starts_with("wjt_"));
    assert_eq!(vars["WUJIE_LOCALRUN_PROVIDER_NAME"], "envdump");
    assert_eq!(vars["WUJIE_LOCALRUN_PROVIDER_PROTOCOL"], V1);
    assert_eq!(vars["WUJIE_LOCALRUN_PROVIDER_ORIGINAL_COMMAND"], "envdump");
    let original: Vec<String> =
        serde_json::from_str(&vars["WUJIE_LOCALRUN_PROVIDER_ORIGINAL_ARGS"]).unwrap();
    assert_eq!(original, ["envdump", "--model", "demo", "two words"]);
    assert!(
        !vars.contains_key("WUJIE_LOCALRUN_SESSION_ID"),
        "a run has no discussion session"
    );

    // The run token never shows up in anything wujie prints, nor in its database in plain text.
    let token = &vars["WUJIE_TOKEN"];
    let mut printed = out.stdout.clone();
    printed.extend_from_slice(&out.stderr);
    for args in [
        vec!["issue", "show", &key],
        vec!["--output", "json", "issue", "show", &key],
        vec!["local-run", "status"],
    ] {
        let o = env.run(&args);
        printed.extend_from_slice(&o.stdout);
        printed.extend_from_slice(&o.stderr);
    }
    assert!(!String::from_utf8_lossy(&printed).contains(token.as_str()));
    for entry in std::fs::read_dir(env.home.path().join("state")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(token.as_str()),
                "token in plain text in {}",
                path.display()
            );
        }
    }
}

#[test]
fn invalid_line_fails_the_run_and_keeps_what_came_before() {
    let env = Env::new();
    let grandchild = env.work.path().join("grandchild.pid");
    let body = format!(
        "sleep 300 &\necho $! > {}\necho '{}'\necho '{}'\necho 'plain log on stdout'\necho '{}'\nsleep 300",
        grandchild.display(),
        msg("text", "one", "k1"),
        msg("text", "two", "k2"),
        msg("text", "never", "k3"),
    );
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("chatty", V1, &body).to_str().unwrap(),
    ]);
    let key = env.create_issue("bad line");
    let out = env.run(&["run", &key, "--", "chatty"]);
    assert!(!out.status.success());
    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "failed");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains("parse localrun plugin event") && error.contains("line 3"),
        "{error}"
    );
    let contents: Vec<_> = messages(&issue)
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(contents, ["one", "two"]);
    // The adapter's whole process group was stopped, its background child included.
    let pid: i32 = std::fs::read_to_string(&grandchild)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(10, "the grandchild to be killed", || !pid_alive(pid));
}

fn run_body(env: &Env, name: &str, body: &str) -> (std::process::Output, serde_json::Value) {
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin(name, V1, body).to_str().unwrap(),
    ]);
    let key = env.create_issue(name);
    let out = env.run(&["run", &key, "--", name]);
    (out, env.issue(&key))
}

#[test]
fn json_split_over_two_lines_fails_on_the_first() {
    let env = Env::new();
    let (out, issue) = run_body(
        &env,
        "split",
        "printf '{\"type\":\"text\",\\n\"content\":\"x\",\"source\":\"s\",\"source_key\":\"k\"}\\n'",
    );
    assert!(!out.status.success());
    assert!(
        issue["runs"][0]["error"]
            .as_str()
            .unwrap()
            .contains("line 1")
    );
}

#[test]
fn blank_lines_are_ignored() {
    let env = Env::new();
    let body = format!(
        "echo\necho '{}'\necho '   '\necho\necho '{}'",
        msg("text", "a", "1"),
        msg("final", "b", "2")
    );
    let (out, issue) = run_body(&env, "blanks", &body);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(kinds(&issue), ["text", "final"]);
}

#[test]
fn wrong_field_types_fail() {
    let env = Env::new();
    for (name, line) in [
        (
            "input-string",
            r#"{"type":"tool_use","tool":"t","input":"ls","source":"s","source_key":"k"}"#,
        ),
        (
            "output-object",
            r#"{"type":"tool_result","tool":"t","output":{"a":1},"source":"s","source_key":"k"}"#,
        ),
        (
            "no-source-key",
            r#"{"type":"text","content":"x","source":"s"}"#,
        ),
        (
            "unknown-type",
            r#"{"type":"shout","content":"x","source":"s","source_key":"k"}"#,
        ),
        ("array", r#"[1,2]"#),
    ] {
        let (out, issue) = run_body(&env, name, &format!("echo '{line}'"));
        assert!(!out.status.success(), "{name}");
        let error = issue["runs"][0]["error"].as_str().unwrap().to_owned();
        assert!(
            error.contains("parse localrun plugin event") && error.contains("line 1"),
            "{name}: {error}"
        );
    }
}

#[test]
fn one_mebibyte_content_is_stored_whole() {
    let env = Env::new();
    let body = "head -c 1048576 /dev/zero | tr '\\0' 'x' > big.txt\nprintf '{\"type\":\"text\",\"source\":\"s\",\"source_key\":\"big\",\"content\":\"%s\"}\\n' \"$(cat big.txt)\"";
    let (out, issue) = run_body(&env, "big", body);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        messages(&issue)[0]["content"].as_str().unwrap().len(),
        1 << 20
    );
}

#[test]
fn invalid_utf8_fails() {
    let env = Env::new();
    let (out, issue) = run_body(
        &env,
        "latin1",
        "printf '{\"type\":\"text\",\"content\":\"caf\\351\",\"source\":\"s\",\"source_key\":\"k\"}\\n'",
    );
    assert!(!out.status.success());
    assert!(
        issue["runs"][0]["error"]
            .as_str()
            .unwrap()
            .contains("line 1")
    );
}

#[test]
fn adapter_exit_code_is_wujies_exit_code() {
    let env = Env::new();
    let (out, issue) = run_body(
        &env,
        "three",
        &format!("echo '{}'\nexit 3", msg("text", "bye", "k")),
    );
    assert_eq!(out.status.code(), Some(3));
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "failed");
    assert_eq!(run["exit_code"], 3);
    assert_eq!(messages(&issue).len(), 1);
}

#[test]
fn crashing_adapter_is_a_failed_run() {
    let env = Env::new();
    let (out, issue) = run_body(
        &env,
        "crash",
        &format!("echo '{}'\nkill -SEGV $$", msg("text", "before", "k")),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 11), "{stderr}");
    assert_eq!(issue["runs"][0]["status"], "failed", "{stderr}");
    assert_eq!(messages(&issue)[0]["content"], "before");
}

#[test]
fn duplicate_source_key_is_stored_once() {
    let env = Env::new();
    let line = msg("final", "same", "dup");
    let (out, issue) = run_body(&env, "dup", &format!("echo '{line}'\necho '{line}'"));
    assert!(out.status.success());
    assert_eq!(messages(&issue).len(), 1);
    assert_eq!(
        issue["comments"].as_array().unwrap().len(),
        1,
        "one agent comment, not two"
    );
}

#[test]
fn message_and_usage_on_one_line() {
    let env = Env::new();
    let line = r#"{"type":"final","content":"done","source":"s","source_key":"f","usage":{"provider":"p","model":"m","input_tokens":5,"output_tokens":7,"extra":9}}"#;
    let (out, issue) = run_body(&env, "both", &format!("echo '{line}'"));
    assert!(out.status.success());
    assert_eq!(kinds(&issue), ["final"]);
    let usage = &issue["runs"][0]["usage"][0];
    assert_eq!(usage["output_tokens"], 7);
    assert_eq!(usage["cache_read_tokens"], 0);
    assert!(usage.get("extra").is_none());
}

#[test]
fn unknown_issue_and_provider_errors() {
    let env = Env::new();
    env.install_example("fake-provider");
    let err = env.fails(&["run", "WUJ-999", "--", "fake-provider"]);
    assert!(err.contains("WUJ-999"), "{err}");
    let key = env.create_issue("x");
    let err = env.fails(&["run", &key, "--", "nope"]);
    assert!(
        err.contains("unknown provider") && err.contains("install"),
        "{err}"
    );
}

#[test]
fn ctrl_c_cancels_the_run_and_stops_the_group() {
    let env = Env::new();
    let started = env.work.path().join("started");
    let child_pid = env.work.path().join("child.pid");
    let body = format!(
        "echo '{}'\nsleep 300 &\necho $! > {}\ntouch {}\nwait",
        msg("text", "working", "w"),
        child_pid.display(),
        started.display()
    );
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("slow", V1, &body).to_str().unwrap(),
    ]);
    let key = env.create_issue("cancel me");
    let mut child = env
        .cmd()
        .args(["run", &key, "--", "slow"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(30, "the adapter to start", || started.exists());
    assert!(signal_pid(
        child.id() as i32,
        nix::sys::signal::Signal::SIGINT
    ));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let issue = env.issue(&key);
    assert_eq!(issue["runs"][0]["status"], "cancelled");
    assert_eq!(messages(&issue)[0]["content"], "working");
    let pid: i32 = std::fs::read_to_string(&child_pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(10, "the adapter's child to be gone", || !pid_alive(pid));
}
