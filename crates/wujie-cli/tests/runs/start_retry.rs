//! `wujie run` started while its server is down, restarting or busy waits for it (saying so
//! once on stderr) and starts the run once, instead of failing at its start. The PostgreSQL
//! test is skipped with a message when PostgreSQL is not installed, failed when
//! WUJIE_REQUIRE_ALL is set.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wujie_testkit::lossy_proxy::LossyProxy;
use wujie_testkit::*;

const RETRYING: &str = "; retrying for up to 60 s";

/// A shell adapter printing three messages.
fn three_messages() -> String {
    (1..=3)
        .map(|k| {
            format!(
                "echo '{}'",
                msg("text", &format!("line {k}"), &format!("k{k}"))
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a child prints on stderr, collected line by line as it comes.
struct Stderr(Arc<Mutex<Vec<String>>>);

impl Stderr {
    fn of(child: &mut Child) -> Stderr {
        let pipe = child.stderr.take().expect("stderr piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let into = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                into.lock().expect("lines").push(line);
            }
        });
        Stderr(lines)
    }

    fn matching(&self, text: &str) -> Vec<String> {
        let lines = self.0.lock().expect("lines");
        lines.iter().filter(|l| l.contains(text)).cloned().collect()
    }

    fn all(&self) -> String {
        self.0.lock().expect("lines").join("\n")
    }
}

/// A laptop logged in to `server` with a fresh token of `server_env`'s profile, with the
/// three-message adapter installed as `three`, and an issue to run on.
fn laptop_of(server_env: &Env, server: &Server) -> (Env, String, String) {
    let token = server_env.team_token(&server.url, "laptop");
    let laptop = Env::new();
    laptop.ok(&["--server", &server.url, "login", "--token", &token]);
    let plugin = laptop.plugin("three", V1, &three_messages());
    laptop.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = laptop.create_issue("started while the server is unavailable");
    (laptop, token, key)
}

fn start_run(laptop: &Env, key: &str) -> (Child, Stderr) {
    let mut run = laptop
        .cmd()
        .args(["run", key, "--", "three"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wujie run starts");
    let stderr = Stderr::of(&mut run);
    (run, stderr)
}

fn wait_ok(mut run: Child, stderr: &Stderr) {
    let status = run.wait().expect("wujie run ends");
    assert!(status.success(), "wujie run: {status:?}\n{}", stderr.all());
}

fn get(url: &str, token: &str, path: &str) -> Value {
    let r = reqwest::blocking::Client::new()
        .get(format!("{url}/api/v1{path}"))
        .bearer_auth(token)
        .send()
        .expect("request");
    assert!(r.status().is_success(), "GET {path}: {}", r.status());
    r.json().expect("json")
}

/// Issue `key` has one run, however often its start was sent: succeeded, with the adapter's
/// three messages.
fn assert_one_run_of_three_messages(url: &str, token: &str, key: &str) {
    let issue = get(url, token, &format!("/issues/{key}"));
    let runs = issue["runs"].as_array().expect("runs");
    assert_eq!(
        runs.len(),
        1,
        "one run, however often its start was sent: {issue}"
    );
    assert_eq!(runs[0]["status"], "succeeded");
    let run_id = runs[0]["id"].as_str().expect("run id");
    let stored = get(url, token, &format!("/runs/{run_id}"));
    assert_eq!(stored["messages"].as_array().expect("messages").len(), 3);
}

#[test]
fn a_run_started_while_its_server_is_down_starts_once_the_server_is_up() {
    let server_env = Env::new();
    let mut server = Server::start(&server_env, &[]);
    let (laptop, token, key) = laptop_of(&server_env, &server);
    let listen = server.url.trim_start_matches("http://").to_owned();
    server.kill();

    let (run, stderr) = start_run(&laptop, &key);
    wait_until(60, "wujie run to say that it retries", || {
        !stderr.matching(RETRYING).is_empty()
    });
    let server = Server::start_args(&server_env, &["--listen", &listen]);
    wait_ok(run, &stderr);

    let said = stderr.matching(RETRYING);
    assert_eq!(
        said,
        ["wujie: the server cannot be reached; retrying for up to 60 s"],
        "{}",
        stderr.all()
    );
    assert_one_run_of_three_messages(&server.url, &token, &key);
}

#[test]
fn a_run_started_while_the_database_is_busy_waits_for_it_and_starts_once() {
    let Some(cluster) = wujie_pgtest::require_cluster() else {
        return;
    };
    let url = cluster.create_database();
    let database = wujie_pgtest::database_name(&url).to_owned();
    let server_env = Env::new();
    let server = Server::start(
        &server_env,
        &["--database", &url, "--database-max-connections", "1"],
    );
    let (laptop, token, key) = laptop_of(&server_env, &server);

    // Another session holds a table lock (a migration, a maintenance job); a request waiting
    // behind it holds the server's one connection, so requests meanwhile find none free.
    let lock = cluster.hold_transaction(&database, "LOCK TABLE issues IN ACCESS EXCLUSIVE MODE");
    let blocked = {
        let (url, token) = (server.url.clone(), token.clone());
        std::thread::spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(600))
                .build()
                .expect("client")
                .post(format!("{url}/api/v1/issues"))
                .bearer_auth(token)
                .json(&json!({"title": "waits for the lock"}))
                .send()
                .expect("an answer")
                .status()
        })
    };
    cluster.wait_for_lock_waiters(&database, 1);

    let (run, stderr) = start_run(&laptop, &key);
    wait_until(120, "wujie run to say that the server is busy", || {
        !stderr.matching(RETRYING).is_empty()
    });
    drop(lock);
    assert_eq!(blocked.join().expect("request thread").as_u16(), 201);
    wait_ok(run, &stderr);

    assert_eq!(
        stderr.matching(RETRYING),
        ["wujie: the server is busy; retrying for up to 60 s"],
        "{}",
        stderr.all()
    );
    let count = |sql: &str| cluster.psql(&database, sql);
    assert_eq!(count("SELECT COUNT(*) FROM runs"), "1");
    assert_eq!(count("SELECT COUNT(*) FROM run_messages"), "3");
    let issue = get(&server.url, &token, &format!("/issues/{key}"));
    assert_eq!(issue["runs"][0]["status"], "succeeded", "{issue}");
}

#[test]
fn a_run_start_whose_answer_was_lost_is_sent_again_and_creates_one_run() {
    let server_env = Env::new();
    let server = Server::start(&server_env, &[]);
    let token = server_env.team_token(&server.url, "laptop");
    let proxy = LossyProxy::start(&server.url, |request| {
        request.starts_with(b"POST /api/v1/issues/WUJ-1/runs ")
    });
    let laptop = Env::new();
    laptop.ok(&["--server", &proxy.url, "login", "--token", &token]);
    let plugin = laptop.plugin("three", V1, &three_messages());
    laptop.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = laptop.create_issue("its first answer is lost");
    assert_eq!(key, "WUJ-1");

    let (run, stderr) = start_run(&laptop, &key);
    wait_ok(run, &stderr);
    assert!(
        proxy.lost.load(std::sync::atomic::Ordering::SeqCst),
        "the proxy lost the answer to the run's creation"
    );
    assert_eq!(stderr.matching(RETRYING).len(), 1, "{}", stderr.all());
    assert_one_run_of_three_messages(&server.url, &token, &key);
}

#[test]
fn a_discussion_started_while_its_server_is_down_starts_once_the_server_is_up() {
    let server_env = Env::new();
    let mut server = Server::start(&server_env, &[]);
    let (laptop, token, _) = laptop_of(&server_env, &server);
    laptop.install_example("fake-provider-v2");
    let listen = server.url.trim_start_matches("http://").to_owned();
    server.kill();

    let mut discuss = laptop
        .cmd()
        .args(["--output", "json", "discuss", "--"])
        .args(["fake-provider-v2", "--script", "--no-handoff"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wujie discuss starts");
    let stderr = Stderr::of(&mut discuss);
    wait_until(60, "wujie discuss to say that it retries", || {
        !stderr.matching(RETRYING).is_empty()
    });
    let server = Server::start_args(&server_env, &["--listen", &listen]);
    let out = discuss.wait_with_output().expect("wujie discuss ends");
    assert!(
        out.status.success(),
        "wujie discuss: {:?}\n{}",
        out.status,
        stderr.all()
    );
    let outcome: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let id = outcome["discussion_id"].as_str().expect("discussion id");
    let all = get(&server.url, &token, "/discussions");
    assert_eq!(all.as_array().expect("discussions").len(), 1, "{all}");
    let discussion = get(&server.url, &token, &format!("/discussions/{id}"));
    assert_eq!(discussion["entries"].as_array().expect("entries").len(), 4);
}
