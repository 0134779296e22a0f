//! Gaps found by plugins written from the specification alone.

use wujie_testkit::*;

/// A v2 adapter that, `delay` seconds after it started, asks for a handoff and logs the first
/// line it then reads on stdin (the decision frame), then answers.
fn late_asker(env: &Env, name: &str, delay: &str, capability: bool) -> std::path::PathBuf {
    let log = env.work.path().join(format!("{name}.log"));
    let body = format!(
        r#"sleep {delay}
echo '{{"event":"handoff_ready","request_id":"late","mode":"native_clear"}}'
IFS= read -r line; echo "read: $line" >> {log}
echo '{final_}'"#,
        log = log.display(),
        final_ = msg("final", "done", "f"),
    );
    let dir = env.work.path().join(name);
    write_plugin(&dir, name, V2, &body);
    let manifest = dir.join("provider.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["capabilities"]["native_plan_handoff"] = capability.into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    log
}

/// wujie's own stdin is at end of file from the start (`Env::cmd` gives it /dev/null): the
/// refusal must still reach an adapter that asks a while later, in a run and in a discussion
/// of a provider without the capability.
#[test]
fn a_refused_handoff_reaches_the_adapter_although_wujies_stdin_ended() {
    let env = Env::new();
    for (i, delay) in ["0", "0.3", "0.8"].into_iter().enumerate() {
        let name = format!("asker{i}");
        let log = late_asker(&env, &name, delay, false);
        let key = env.create_issue(&format!("bound {i}"));
        env.ok(&["run", &key, "--", &name]);
        let read = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            read.contains("\"accepted\":false") && read.contains("wujie discuss"),
            "run, after {delay} s: {read:?}"
        );
        std::fs::remove_file(&log).unwrap();

        env.ok(&["discuss", "--", &name]);
        let read = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            read.contains("\"accepted\":false") && read.contains("native_plan_handoff"),
            "discussion, after {delay} s: {read:?}"
        );
    }
}

#[test]
fn a_script_whose_interpreter_is_missing_names_the_interpreter() {
    let env = Env::new();
    let dir = env.work.path().join("shebang");
    write_plugin(&dir, "shebang", V1, "");
    std::fs::write(
        dir.join("adapter"),
        "#!/opt/nowhere/bin/python3\nprint('hello')\n",
    )
    .unwrap();
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    let key = env.create_issue("shebang");
    let stderr = env.fails(&["run", &key, "--", "shebang"]);
    assert!(
        stderr.contains("interpreter \"/opt/nowhere/bin/python3\""),
        "{stderr}"
    );
    assert!(stderr.contains("#! line"), "{stderr}");
}

/// A team server, a laptop logged in to it with the provider `slow` installed: one event, then
/// the rest once the returned file exists.
fn laptop_of_a_team_server() -> (Env, Env, Server, std::path::PathBuf) {
    let team = Env::new();
    let server = Server::start(&team, &[]);
    let token = team.ok(&["token", "create"]).trim().to_owned();
    let laptop = Env::new();
    laptop.ok(&["login", "--server", &server.url, "--token", &token]);
    let go = laptop.work.path().join("go");
    let body = format!(
        "echo '{}'\nwhile [ ! -e {go} ]; do sleep 0.05; done\necho '{}'\necho '{}'",
        msg("text", "one", "k1"),
        msg("text", "two", "k2"),
        msg("final", "three", "k3"),
        go = go.display(),
    );
    laptop.ok(&[
        "local-run",
        "provider",
        "install",
        laptop.plugin("slow", V1, &body).to_str().unwrap(),
    ]);
    (team, laptop, server, go)
}

/// `wujie run KEY -- slow` on the laptop, once its first event reached the server and the
/// server was killed.
fn run_until_the_server_dies(
    team: &Env,
    laptop: &Env,
    server: &mut Server,
    key: &str,
) -> std::process::Child {
    let child = laptop
        .cmd()
        .args(["run", "--drain-timeout", "1", key, "--", "slow"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(30, "the first event on the server", || {
        team.issue(key)["runs"][0]["messages"]
            .as_array()
            .is_some_and(|m| m.len() == 1)
    });
    server.kill();
    child
}

#[test]
fn a_run_that_could_not_deliver_says_how_many_events_wait_in_the_outbox() {
    let (team, laptop, mut server, go) = laptop_of_a_team_server();
    let key = laptop.create_issue("unreachable");
    let child = run_until_the_server_dies(&team, &laptop, &mut server, &key);
    std::fs::write(&go, "").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stderr
        .lines()
        .find(|l| l.contains(&format!("on {key} succeeded")))
        .unwrap_or_else(|| panic!("no summary line: {stderr}"));
    assert!(
        summary.contains("2 events waiting in the outbox"),
        "{summary}"
    );
    assert!(!summary.contains("0 events synced"), "{summary}");
}

#[test]
fn the_profiles_own_server_needs_no_login() {
    let env = Env::new();
    let mut server = Server::start(&env, &[]);
    let created = env.json(&[
        "--server",
        &format!("{}/", server.url),
        "issue",
        "create",
        "--title",
        "through my own server",
    ]);
    let key = created["key"].as_str().unwrap();
    assert_eq!(env.issue(key)["title"], "through my own server");

    // Another profile gets no token for it, and neither does this one once it stopped: then
    // it is told that nothing answers there, which a login would not fix.
    let other = Env::new();
    let stderr = other.fails(&["--server", &server.url, "issue", "list"]);
    assert!(stderr.contains("no token for"), "{stderr}");
    server.kill();
    let stderr = env.fails(&["--server", &server.url, "issue", "list"]);
    assert!(
        stderr.contains(&format!("no server answers at {}", server.url))
            && stderr.contains("start it with `wujie server`")
            && !stderr.contains("no token"),
        "{stderr}"
    );
}

#[test]
fn a_native_resume_the_args_do_not_spell_out_continues_the_same_discussion() {
    let env = Env::new();
    let body = r#"native=native-1
for a in "$@"; do case "$a" in --resume=*) native="${a#--resume=}";; esac; done
echo "{\"event\":\"session\",\"session_id\":\"$native\"}"
echo "{\"type\":\"user_input\",\"content\":\"turn $#\",\"source\":\"t\",\"source_key\":\"turn-$#\"}""#;
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("resumer", V2, body).to_str().unwrap(),
    ]);
    let first = env.json(&["discuss", "--", "resumer"]);
    let second = env.json(&["discuss", "--", "resumer", "--resume=native-1"]);
    assert_eq!(second["discussion_id"], first["discussion_id"], "{second}");
    assert_eq!(second["resumed"], true);
    let all = env.json(&["discussion", "list"]);
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 1, "one discussion per native session: {all:?}");
    let entries: Vec<&str> = all[0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(entries, ["turn 0", "turn 1"]);
}

/// The outbox deleted under a run that could not deliver (`rm -rf ~/.local/state/…` while the
/// server is down): what the run held is written back, and the next sync finds it.
#[test]
fn an_outbox_deleted_under_a_run_is_written_back_with_what_it_held() {
    let (team, laptop, mut server, go) = laptop_of_a_team_server();
    let key = laptop.create_issue("outbox deleted");
    let child = run_until_the_server_dies(&team, &laptop, &mut server, &key);
    let state = laptop.home.path().join("state");
    for name in ["outbox.db", "outbox.db-wal", "outbox.db-shm"] {
        let _ = std::fs::remove_file(state.join(name));
    }
    std::fs::write(&go, "").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("was deleted while this run used it; it was written back"),
        "{stderr}"
    );
    let status = laptop.json(&["local-run", "status", "--output", "json"]);
    let pending: i64 = status
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["pending"].as_i64().unwrap())
        .sum();
    assert_eq!(pending, 2, "{status}");
}
