//! `wujie issue cancel` from another profile (another person, another machine) stops a
//! person's `wujie run`: the agent's whole tree is stopped as Ctrl+C stops it, the terminal
//! says who cancelled, the run ends `cancelled` naming them, and everything the agent printed
//! is on the issue once. On SQLite (a profile's own server) and on PostgreSQL.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use wujie_testkit::spawned::{Spawned, pid_in};
use wujie_testkit::*;

/// An adapter that prints three messages, starts a process that leaves its group, and then
/// runs until it is stopped; it leaves its pid, that process's and its run token in `dir`.
fn endless_adapter(dir: &Path) -> String {
    let at = |name: &str| dir.join(name).display().to_string();
    format!(
        "echo $$ > {adapter}\n\
         setsid sh -c 'echo $$ > {escaped}; exec sleep 300' &\n\
         while [ ! -s {escaped} ]; do sleep 0.05; done\n\
         printf '%s' \"$WUJIE_TOKEN\" > {token}\n\
         echo '{one}'\necho '{two}'\necho '{three}'\n\
         touch {started}\n\
         while true; do sleep 0.1; done",
        adapter = at("adapter.pid"),
        escaped = at("escaped.pid"),
        token = at("run.token"),
        started = at("started"),
        one = msg("text", "one", "1"),
        two = msg("text", "two", "2"),
        three = msg("text", "three", "3"),
    )
}

/// A profile logged in to `url` with a new user token named `name`, minted by `team`.
fn logged_in(team: &Env, url: &str, name: &str) -> Env {
    let token = team.team_token(url, name);
    let profile = Env::new();
    profile.ok(&["--server", url, "login", "--token", &token]);
    profile
}

fn contents(issue: &serde_json::Value) -> Vec<String> {
    issue["runs"][0]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["content"].as_str().expect("content").to_owned())
        .collect()
}

fn gone(pid_file: &Path, what: &str) {
    let pid = pid_in(pid_file).unwrap_or_else(|| panic!("no pid in {}", pid_file.display()));
    wait_until(15, &format!("{what} (pid {pid}) to be stopped"), || {
        !pid_alive(pid)
    });
}

/// The status of asking to cancel `run_id` on `url` with `token`.
fn cancel_status(url: &str, run_id: &str, token: &str) -> u16 {
    reqwest::blocking::Client::new()
        .post(format!("{url}/api/v1/runs/{run_id}/cancel"))
        .bearer_auth(token)
        .send()
        .expect("request")
        .status()
        .as_u16()
}

/// Bob runs an endless agent on the server `team` serves at `url`; Alice, from a profile of
/// her own, cancels it.
fn cancel_from_another_profile(team: &Env, url: &str) {
    let bob = logged_in(team, url, "bob");
    let alice = logged_in(team, url, "alice");
    let files: PathBuf = bob.work.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let plugin = bob.plugin("endless", V1, &endless_adapter(&files));
    bob.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = bob.create_issue("cancel me from elsewhere");
    let child = bob
        .cmd()
        .args(["run", &key, "--", "endless"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = Spawned::new(
        child,
        vec![files.join("adapter.pid"), files.join("escaped.pid")],
    );
    wait_until(60, "the adapter to start", || {
        files.join("started").exists()
    });
    let run_id = alice.issue(&key)["runs"][0]["id"]
        .as_str()
        .expect("run id")
        .to_owned();

    // The agent's own token cancels nothing, not even its own run.
    let run_token = std::fs::read_to_string(files.join("run.token")).unwrap();
    assert_eq!(cancel_status(url, &run_id, &run_token), 403);

    let asked = alice.json(&["issue", "cancel", &key]);
    assert_eq!(asked["jobs"], serde_json::json!([]), "{asked}");
    let asked = asked["runs"].as_array().expect("one entry per run");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["run_id"], run_id.as_str());
    assert_eq!(asked[0]["cancel"]["by"], "alice");
    assert_eq!(asked[0]["already_requested"], false);

    let code = run.wait(60, "bob's wujie run to end after alice's cancel");
    let stderr = run.stderr();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "wujie: run {run_id} on {key} was cancelled by alice; stopping the agent"
        )),
        "{stderr}"
    );
    let adapter = pid_in(&files.join("adapter.pid")).expect("adapter pid");
    assert!(!pid_alive(adapter), "the adapter was stopped");
    gone(
        &files.join("escaped.pid"),
        "the process that left the group",
    );

    let issue = alice.issue(&key);
    let ended = &issue["runs"][0];
    assert_eq!(ended["status"], "cancelled", "{ended}");
    assert_eq!(ended["exit_code"], 130);
    assert_eq!(ended["error"], "cancelled by alice");
    assert_eq!(contents(&issue), ["one", "two", "three"]);

    // Nothing is left to cancel, and the words say so.
    let none = alice.fails(&["issue", "cancel", &key]);
    assert!(
        none.contains(&format!("no run of {key} is running")),
        "{none}"
    );
    let late = alice.fails(&["issue", "cancel", &key, "--run", &run_id]);
    assert!(
        late.contains(&format!("run {run_id} already ended as cancelled")),
        "{late}"
    );
    for http in ["409", "POST", "/api/"] {
        assert!(!late.contains(http), "no HTTP in {late}");
    }
}

#[test]
fn a_cancel_from_another_profile_stops_a_persons_run_on_sqlite() {
    let team = Env::new();
    let server = Server::start(&team, &[]);
    cancel_from_another_profile(&team, &server.url);
}

#[test]
fn a_cancel_from_another_profile_stops_a_persons_run_on_postgres() {
    let Some(cluster) = wujie_pgtest::require_cluster() else {
        return;
    };
    let database = cluster.create_database();
    let team = Env::new();
    let server = Server::start(&team, &["--database", &database]);
    cancel_from_another_profile(&team, &server.url);
}
