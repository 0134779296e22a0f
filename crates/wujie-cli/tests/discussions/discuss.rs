//! `wujie discuss` and discussions: v2 only, entry filtering, native handoff (accept, reject,
//! failure, cancel), resume by native id and by id, promotion.

use std::process::Stdio;

use wujie_testkit::*;

/// The decision frame the example adapter received, as it logged it on stderr.
fn decision(stderr: &str) -> serde_json::Value {
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("handoff decision: "))
        .unwrap_or_else(|| panic!("no decision in stderr:\n{stderr}"));
    serde_json::from_str(line).unwrap()
}

fn discuss_json(env: &Env, args: &[&str]) -> (serde_json::Value, String) {
    let mut all = vec!["--output", "json", "discuss"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "discuss failed: {stderr}");
    (
        serde_json::from_slice(&out.stdout).expect("one JSON document"),
        stderr,
    )
}

#[test]
fn native_handoff_accepted_in_both_modes() {
    for mode in ["current_context", "native_clear"] {
        let env = Env::new();
        env.install_example("fake-provider-v2");
        let (report, stderr) = discuss_json(
            &env,
            &[
                "--confirm",
                "accept",
                "--",
                "fake-provider-v2",
                "--script",
                "--mode",
                mode,
            ],
        );
        let key = report["issue_key"].as_str().expect("promoted").to_owned();
        let run_id = report["run_id"].as_str().unwrap().to_owned();
        let frame = decision(&stderr);
        assert_eq!(frame["event"], "handoff_decision");
        assert_eq!(frame["request_id"], "handoff-1");
        assert_eq!(frame["accepted"], true);
        assert_eq!(frame["mode"], mode);
        assert_eq!(frame["issue_key"], key.as_str());
        assert_eq!(frame["run_id"], run_id.as_str());
        assert!(!frame.to_string().contains("wjt_"), "no token in the frame");
        assert!(
            frame.get("description").is_none() && !frame.to_string().contains("SQLite for storage"),
            "no plan text in the frame"
        );

        let issue = env.issue(&key);
        assert_eq!(
            issue["title"], "Use SQLite for storage",
            "title from the latest plan"
        );
        assert!(issue["description"].as_str().unwrap().contains("WAL mode"));
        assert_eq!(issue["discussion_id"], report["discussion_id"]);
        let run = &issue["runs"][0];
        assert_eq!(run["id"], run_id.as_str());
        assert_eq!(run["status"], "succeeded");
        let kinds: Vec<_> = run["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            kinds,
            ["text", "tool_use", "tool_result", "final"],
            "events after the decision go to the run"
        );

        let d = env.json(&[
            "discussion",
            "show",
            report["discussion_id"].as_str().unwrap(),
        ]);
        assert_eq!(d["status"], "promoted");
        assert_eq!(d["issue_key"], key.as_str());
        let entry_kinds: Vec<_> = d["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            entry_kinds,
            ["user_input", "question", "user_input", "plan"],
            "thinking, session and usage are not entries"
        );
        assert_eq!(
            d["native_session_ids"],
            serde_json::json!([format!(
                "native-{}",
                report["discussion_id"].as_str().unwrap()
            )])
        );
        assert_eq!(
            d["usage"][0]["output_tokens"], 34,
            "usage is recorded against the discussion"
        );

        // A promoted discussion cannot be resumed as a discussion.
        let err = env.fails(&[
            "discuss",
            "--resume",
            d["id"].as_str().unwrap(),
            "--",
            "fake-provider-v2",
            "--script",
        ]);
        assert!(
            err.contains(&key) && err.contains(&format!("wujie run {key} -- fake-provider-v2")),
            "{err}"
        );
    }
}

#[test]
fn rejected_and_unconfirmable_handoffs_create_nothing() {
    let env = Env::new();
    env.install_example("fake-provider-v2");
    let (report, stderr) = discuss_json(
        &env,
        &["--confirm", "reject", "--", "fake-provider-v2", "--script"],
    );
    assert!(report["issue_key"].is_null());
    let frame = decision(&stderr);
    assert_eq!(frame["accepted"], false);
    assert!(frame["error"].as_str().unwrap().contains("declined"));
    assert!(stderr.contains("plan not executed"));

    // `ask` with no terminal answers no, and says how to accept.
    let (report2, stderr) = discuss_json(&env, &["--", "fake-provider-v2", "--script"]);
    let frame = decision(&stderr);
    assert_eq!(frame["accepted"], false);
    assert_eq!(
        frame["error"],
        "no terminal to confirm; pass --confirm accept"
    );
    assert!(env.json(&["issue", "list"]).as_array().unwrap().is_empty());
    for r in [&report, &report2] {
        let d = env.json(&["discussion", "show", r["discussion_id"].as_str().unwrap()]);
        assert_eq!(d["status"], "open");
    }
}

#[test]
fn v1_providers_keep_the_issue_first_contract() {
    let env = Env::new();
    env.install_example("fake-provider");
    let err = env.fails(&["discuss", "--", "fake-provider"]);
    assert!(
        err.contains("Issue-first") && err.contains("v2") && err.contains("wujie run"),
        "{err}"
    );
}

#[test]
fn environment_before_binding_and_resume() {
    let env = Env::new();
    env.install_example("fake-provider-v2");
    let dump = env.work.path().join("env.txt");
    // Wrap the example to capture its environment, keeping its behaviour.
    let dir = env.work.path().join("wrapped");
    std::fs::create_dir_all(&dir).unwrap();
    let example = examples()
        .join("fake-provider-v2/wujie-localrun-fake-v2")
        .canonicalize()
        .unwrap();
    write_plugin(
        &dir,
        "wrapped",
        V2,
        &format!(
            "env > {}\nexec {} \"$@\"",
            dump.display(),
            example.display()
        ),
    );
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);

    let (first, _) = discuss_json(&env, &["--", "wrapped", "--script", "--no-handoff"]);
    let id = first["discussion_id"].as_str().unwrap().to_owned();
    let vars = std::fs::read_to_string(&dump).unwrap();
    assert!(vars.contains(&format!("WUJIE_LOCALRUN_SESSION_ID={id}")));
    assert!(
        !vars.contains("WUJIE_RUN_ID=") && !vars.contains("WUJIE_ISSUE_ID="),
        "{vars}"
    );
    assert!(
        vars.contains("WUJIE_TOKEN=wjt_")
            && vars.contains("WUJIE_LOCALRUN_PROVIDER_PROTOCOL=wujie-localrun-provider.v2")
    );
    let entries_before = env.json(&["discussion", "show", &id])["entries"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(entries_before, 4);

    // A native session id in the arguments lands on the same open discussion.
    let native = format!("native-{id}");
    let (second, _) = discuss_json(
        &env,
        &[
            "--",
            "wrapped",
            "--script",
            "--no-handoff",
            "--resume",
            &native,
        ],
    );
    assert_eq!(second["discussion_id"], id.as_str());
    assert_eq!(second["resumed"], true);
    assert!(
        std::fs::read_to_string(&dump)
            .unwrap()
            .contains(&format!("WUJIE_LOCALRUN_SESSION_ID={id}"))
    );
    // The replayed turns carry the same source keys: no duplicate entries.
    let d = env.json(&["discussion", "show", &id]);
    assert_eq!(d["entries"].as_array().unwrap().len(), entries_before);
    assert_eq!(d["native_session_ids"], serde_json::json!([native]));

    // And by --resume.
    let (third, _) = discuss_json(
        &env,
        &["--resume", &id, "--", "wrapped", "--script", "--no-handoff"],
    );
    assert_eq!(third["discussion_id"], id.as_str());

    // A discussion whose adapter is gone can be promoted from the command line.
    let issue = env.json(&[
        "discussion",
        "promote",
        &id,
        "--title",
        "Store data in SQLite",
    ]);
    assert_eq!(issue["title"], "Store data in SQLite");
    assert!(issue["description"].as_str().unwrap().contains("WAL mode"));
    let err = env.fails(&["discussion", "promote", &id]);
    assert!(err.contains(issue["key"].as_str().unwrap()), "{err}");
    let list = env.json(&["discussion", "list"]);
    assert_eq!(list[0]["status"], "promoted");
}

/// A v2 adapter scripted by the test: it plans, waits for `<dir>/go`, asks for a handoff, then
/// logs what arrives on stdin and any SIGTERM, in order, to `<dir>/log`.
fn scripted_v2(env: &Env, name: &str, handoff: bool, extra_before_go: &str) -> std::path::PathBuf {
    let d = env.work.path().display().to_string();
    let body = format!(
        r#"trap 'echo TERM >> {d}/log; exit 143' TERM
echo '{{"event":"session","session_id":"n-1"}}'
echo '{plan}'
{extra_before_go}
while [ ! -e {d}/go ]; do sleep 0.05; done
echo '{{"event":"handoff_ready","request_id":"h-1","mode":"current_context"}}'
while IFS= read -r line; do echo "$line" >> {d}/log; done"#,
        plan =
            serde_json::json!({"type":"plan","content":"# Plan A","source":"s","source_key":"p1"}),
    );
    let dir = env.work.path().join(name);
    write_plugin(&dir, name, V2, &body);
    let manifest = dir.join("provider.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["capabilities"]["native_plan_handoff"] = handoff.into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    env.work.path().join("log")
}

#[test]
fn creation_failure_answers_no_and_the_discussion_goes_on() {
    let team = Env::new();
    let mut server = Server::start(&team, &[]);
    let token = team.ok(&["token", "create"]).trim().to_owned();
    let env = Env::new();
    env.ok(&["login", "--server", &server.url, "--token", &token]);
    let log = scripted_v2(&env, "flaky", true, "");
    let child = env
        .cmd()
        .args([
            "discuss",
            "--confirm",
            "accept",
            "--drain-timeout",
            "1",
            "--",
            "flaky",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The plan reaches the server; then the server goes away before the handoff.
    wait_until(30, "the plan to be stored", || {
        team.json(&["discussion", "list"])
            .as_array()
            .is_some_and(|l| {
                l.first()
                    .is_some_and(|d| !d["entries"].as_array().unwrap().is_empty())
            })
    });
    server.kill();
    std::fs::write(env.work.path().join("go"), "").unwrap();
    wait_until(60, "the decision", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("handoff_decision"))
    });
    let frame_line = std::fs::read_to_string(&log).unwrap();
    let frame: serde_json::Value = serde_json::from_str(
        frame_line
            .trim()
            .strip_prefix("\u{1e}WUJIE ")
            .expect("a control frame"),
    )
    .unwrap();
    assert_eq!(frame["accepted"], false);
    let error = frame["error"].as_str().unwrap();
    assert!(error.contains("could not be reached"), "{error}");
    assert!(
        !error.contains("127.0.0.1") && !error.contains("wjt_"),
        "redacted: {error}"
    );
    // This adapter keeps waiting after a refusal; the user ends the session with Ctrl+C and the
    // discussion stays open for later.
    assert!(signal_pid(
        child.id() as i32,
        nix::sys::signal::Signal::SIGINT
    ));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--resume"), "says how to resume: {stderr}");
    let _server = Server::start_args(
        &team,
        &["--listen", server.url.trim_start_matches("http://")],
    );
    let d = &team.json(&["discussion", "list"])[0];
    assert_eq!(d["status"], "open");
    assert!(team.json(&["issue", "list"]).as_array().unwrap().is_empty());
}

#[test]
fn ctrl_c_answers_no_before_stopping_the_adapter() {
    let env = Env::new();
    let log = scripted_v2(&env, "waiter", true, "");
    std::fs::write(env.work.path().join("go"), "").unwrap();
    // `ask` needs a terminal: run wujie under script(1), which gives it one.
    let cmd = format!(
        "WUJIE_HOME={} {} discuss -- waiter",
        env.home.path().display(),
        WUJIE
    );
    let mut child = std::process::Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .current_dir(env.work.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the card, then interrupt wujie itself.
    wait_until(30, "the discussion to exist", || {
        env.json(&["discussion", "list"])
            .as_array()
            .is_some_and(|l| !l.is_empty())
    });
    let pid = wait_for_wujie_pid(&env);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(signal_pid(pid, nix::sys::signal::Signal::SIGINT));
    let _ = child.stdin.take();
    let _ = child.wait();
    wait_until(10, "the adapter to log", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("TERM"))
    });
    let log = std::fs::read_to_string(&log).unwrap();
    let frame_at = log.find("handoff_decision").expect("a decision was sent");
    let term_at = log.find("TERM").unwrap();
    assert!(frame_at < term_at, "decision before termination:\n{log}");
    assert!(log.contains("\"accepted\":false"), "{log}");
    let d = &env.json(&["discussion", "list"])[0];
    assert_eq!(d["status"], "open", "the discussion is kept");
}

/// The pid of the `wujie discuss` of this profile, from /proc.
fn wait_for_wujie_pid(env: &Env) -> i32 {
    let home = env.home.path().to_str().unwrap().to_owned();
    wait_for_wujie("wujie discuss to run", |pid, cmdline, _| {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        cmdline.contains("discuss") && String::from_utf8_lossy(&environ).contains(&home)
    })
}

#[test]
fn handoff_without_the_capability_is_refused() {
    let env = Env::new();
    let log = scripted_v2(&env, "plain", false, "");
    std::fs::write(env.work.path().join("go"), "").unwrap();
    let mut child = env
        .cmd()
        .args(["discuss", "--confirm", "accept", "--", "plain"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(30, "the decision", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("handoff_decision"))
    });
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("\"accepted\":false") && log.contains("native_plan_handoff"),
        "{log}"
    );
    assert!(env.json(&["issue", "list"]).as_array().unwrap().is_empty());
}

#[test]
fn unknown_modes_and_handoffs_in_a_run_are_answered_not_fatal() {
    let env = Env::new();
    let log = env.work.path().join("log");
    let body = format!(
        r#"echo '{{"event":"handoff_ready","request_id":"odd","mode":"clear"}}'
IFS= read -r line; echo "$line" >> {log}
echo '{final_}'"#,
        log = log.display(),
        final_ = msg("final", "still here", "f"),
    );
    let dir = env.work.path().join("odd");
    write_plugin(&dir, "odd", V2, &body);
    let manifest = dir.join("provider.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["capabilities"]["native_plan_handoff"] = true.into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);

    // In a discussion: an unknown mode is refused and the session goes on.
    env.ok(&["discuss", "--confirm", "accept", "--", "odd"]);
    let frame = std::fs::read_to_string(&log).unwrap();
    assert!(
        frame.contains("\"request_id\":\"odd\"") && frame.contains("\"accepted\":false"),
        "{frame}"
    );
    assert!(frame.contains("unknown handoff mode"), "{frame}");
    let d = &env.json(&["discussion", "list"])[0];
    assert_eq!(d["entries"][0]["content"], "still here");

    // In a run: the request is answered (a run already has its issue) and the run goes on.
    std::fs::remove_file(&log).unwrap();
    let key = env.create_issue("bound");
    env.ok(&["run", &key, "--", "odd"]);
    let frame = std::fs::read_to_string(&log).unwrap();
    assert!(
        frame.contains("\"accepted\":false") && frame.contains("wujie discuss"),
        "{frame}"
    );
    assert_eq!(env.issue(&key)["runs"][0]["status"], "succeeded");
}

#[test]
fn a_discussion_whose_adapter_never_started_is_not_kept() {
    let env = Env::new();
    // A v2 plugin whose agent is missing: it says so and exits 127 before any event.
    let dir = env.plugin(
        "needs-agent",
        V2,
        "echo 'needs-agent: agent-cli: command not found' >&2\nexit 127\n",
    );
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    let out = env.run(&["discuss", "--", "needs-agent"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(
        err.contains(
            "needs-agent did not start (exit 127; its message is above), so no discussion was kept"
        ),
        "{err}"
    );
    assert_eq!(env.json(&["discussion", "list"]), serde_json::json!([]));

    // A built-in one whose agent is not installed: refused before a discussion is created.
    let empty = env.work.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let out = env
        .cmd()
        .env_remove("WUJIE_CLAUDE_BIN")
        .env("PATH", &empty)
        .args(["discuss", "--", "claude"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(err.contains("claude cannot start"), "{err}");
    assert_eq!(env.json(&["discussion", "list"]), serde_json::json!([]));
}
