//! Who delivers a run's events: a live reporter keeps its outbox target however long it was
//! stopped, and a dead one's target is taken over at once.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use wujie_testkit::spawned::Spawned;
use wujie_testkit::*;

/// An adapter printing `first` text events, then touching `<dir>/paused` and waiting for
/// `<dir>/go`, then printing `rest` more and exiting with `code`. It writes its pid to
/// `<dir>/adapter.pid` first.
fn pausing_adapter(dir: &Path, first: usize, rest: usize, code: i32) -> String {
    format!(
        r#"echo $$ > {d}/adapter.pid
i=0
while [ $i -lt {total} ]; do
  if [ $i -eq {first} ]; then touch {d}/paused; while [ ! -e {d}/go ]; do sleep 0.05; done; fi
  printf '{{"type":"text","content":"event %d","source":"count","source_key":"e%d"}}\n' $i $i
  i=$((i+1))
done
exit {code}"#,
        d = dir.display(),
        total = first + rest,
    )
}

fn start_run(env: &Env, key: &str, provider: &str) -> Spawned {
    let child = env
        .cmd()
        .args(["run", key, "--", provider])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Spawned::new(child, vec![env.work.path().join("adapter.pid")])
}

fn install(env: &Env, name: &str, body: &str) {
    let dir = env.plugin(name, V1, body);
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
}

fn delivered(env: &Env, key: &str) -> usize {
    env.issue(key)["runs"][0]["messages"]
        .as_array()
        .map_or(0, Vec::len)
}

fn assert_events_once(issue: &serde_json::Value, count: usize) {
    let messages = issue["runs"][0]["messages"].as_array().unwrap();
    let contents: Vec<&str> = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..count).map(|i| format!("event {i}")).collect();
    assert_eq!(
        contents, expected,
        "every event stored once, in the adapter's order"
    );
}

#[test]
fn a_stopped_run_keeps_its_events_while_other_runs_sync() {
    // A standalone server: a stopped `wujie` with an embedded one could hold the store's
    // write lock while it is stopped, and this test is about the outbox.
    let team = Env::new();
    let server = Server::start(&team, &[]);
    let token = team.ok(&["token", "create"]).trim().to_owned();
    let env = Env::new();
    env.ok(&["login", "--server", &server.url, "--token", &token]);
    let dir = env.work.path().to_path_buf();
    install(&env, "count", &pausing_adapter(&dir, 30, 30, 3));
    install(
        &env,
        "quick",
        &format!("echo '{}'", msg("text", "other run", "o1")),
    );
    let key = env.create_issue("stopped reporter");
    let other = env.create_issue("another run");

    let mut run = start_run(&env, &key, "count");
    wait_until(60, "the adapter to pause", || dir.join("paused").exists());
    // Stopped once idle, so that it holds no SQLite write lock of the shared outbox.
    wait_until(60, "the first events to be delivered", || {
        delivered(&env, &key) == 30 && env.json(&["local-run", "status"])[0]["pending"] == 0
    });
    assert!(signal_pid(run.pid(), Signal::SIGSTOP));
    // Longer than any clock-based liveness rule would allow a silent reporter.
    std::thread::sleep(Duration::from_secs(40));

    // Another run starts a background sync of the outbox; so does `local-run sync`.
    env.ok(&["run", &other, "--", "quick"]);
    env.ok(&["local-run", "sync"]);
    let status = env.json(&["local-run", "status"]);
    let target = status
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["label"] == key.as_str())
        .unwrap_or_else(|| panic!("the stopped run's target is still there: {status}"));
    assert_eq!(target["state"], "active", "{status}");

    assert!(signal_pid(run.pid(), Signal::SIGCONT));
    std::fs::write(dir.join("go"), "").unwrap();
    let code = run.wait(120, "the continued run to end");
    assert_eq!(code, Some(3), "the adapter's exit code: {}", run.stderr());

    let issue = env.issue(&key);
    assert_events_once(&issue, 60);
    let stored = &issue["runs"][0];
    assert_eq!(stored["status"], "failed", "{stored}");
    assert_eq!(stored["exit_code"], 3, "{stored}");
    assert_eq!(stored["error"], "adapter exited with code 3", "{stored}");
    assert_eq!(env.json(&["local-run", "status"]), serde_json::json!([]));
}

/// A run whose end was delivered but which stayed in the outbox (its reporter ended before it
/// forgot the run; earlier versions could leave one so for ever) is forgotten by the next sync.
#[test]
fn a_delivered_run_left_in_the_outbox_is_forgotten_by_the_next_sync() {
    let Some(sqlite3) = wujie_require::require("sqlite3") else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("left behind");
    install(
        &env,
        "quick",
        &format!("echo '{}'", msg("text", "hi", "h1")),
    );
    env.ok(&["run", &key, "--", "quick"]);
    assert_eq!(env.json(&["local-run", "status"]), serde_json::json!([]));
    // What such a run leaves: its row, its end sent, nothing else.
    let outbox = env.home.path().join("state").join("outbox.db");
    let left = std::process::Command::new(sqlite3)
        .arg(&outbox)
        .arg(
            "INSERT INTO targets (id, kind, server_url, label, finish_json, finish_sent, created_at) \
             VALUES ('01a23d00-0000-7000-8000-000000000001', 'run', 'local', 'WUJ-1', '{}', 1, 0)",
        )
        .output()
        .expect("sqlite3 runs");
    assert!(left.status.success(), "{left:?}");
    let status = env.json(&["local-run", "status"]);
    assert_eq!(status[0]["label"], "WUJ-1", "{status}");
    assert_eq!(status[0]["finish_pending"], false, "{status}");

    env.ok(&["local-run", "sync"]);
    assert_eq!(env.json(&["local-run", "status"]), serde_json::json!([]));
}

#[test]
fn a_sigkilled_reporter_is_taken_over_at_once() {
    let env = Env::new();
    let dir = env.work.path().to_path_buf();
    install(&env, "count", &pausing_adapter(&dir, 30, 30, 0));
    let key = env.create_issue("killed reporter");

    let mut run = start_run(&env, &key, "count");
    wait_until(60, "the adapter to pause", || dir.join("paused").exists());
    // Let the reader take in what was printed before the pause, then kill without warning.
    wait_until(60, "the events printed so far to be read", || {
        let status = env.json(&["local-run", "status"]);
        delivered(&env, &key) + status[0]["pending"].as_u64().unwrap_or(0) as usize == 30
    });
    assert!(signal_pid(run.pid(), Signal::SIGKILL));
    run.wait(30, "the killed wujie to be reaped");

    // No waiting for a clock: the next sync takes the target over.
    let report = env.json(&["local-run", "sync"]);
    assert_eq!(report["pending"], 0, "{report}");
    let issue = env.issue(&key);
    assert_events_once(&issue, 30);
    let stored = &issue["runs"][0];
    assert_eq!(stored["status"], "failed");
    assert_eq!(stored["error"], "reporter stopped");
    assert_eq!(env.json(&["local-run", "status"]), serde_json::json!([]));
}

/// Holds the write lock of a SQLite database (as a `wujie` stopped in the middle of an outbox
/// write does) until dropped. Uses the `sqlite3` shell.
struct WriteLockHolder {
    child: std::process::Child,
}

impl WriteLockHolder {
    fn take(db: &Path) -> WriteLockHolder {
        use std::io::{BufRead, Write};
        let mut child = std::process::Command::new("sqlite3")
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("this test needs the sqlite3 shell");
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b".timeout 10000\nBEGIN IMMEDIATE;\nSELECT 'locked';\n")
            .unwrap();
        child.stdin = Some(stdin);
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        WriteLockHolder { child }
    }
}

impl Drop for WriteLockHolder {
    fn drop(&mut self) {
        // End of input: the shell rolls back and exits.
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

#[test]
fn a_run_waits_for_an_outbox_write_lock_held_by_a_stopped_process() {
    let env = Env::new();
    let dir = env.work.path().to_path_buf();
    install(&env, "count", &pausing_adapter(&dir, 1, 49, 0));
    let key = env.create_issue("outbox locked");
    let mut run = start_run(&env, &key, "count");
    wait_until(60, "the adapter to pause", || dir.join("paused").exists());
    wait_until(60, "the first event to be delivered", || {
        delivered(&env, &key) == 1
    });

    let lock = WriteLockHolder::take(&env.home.path().join("state").join("outbox.db"));
    std::fs::write(dir.join("go"), "").unwrap();
    // Longer than SQLite's busy timeout: the reporter must wait, not give up.
    std::thread::sleep(Duration::from_secs(15));
    assert!(
        run.child.try_wait().unwrap().is_none(),
        "wujie waits for the lock: {}",
        run.stderr()
    );
    drop(lock);

    let code = run.wait(120, "the run to end once the lock is released");
    let stderr = run.stderr();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("write lock"), "says why it waits: {stderr}");
    let issue = env.issue(&key);
    assert_events_once(&issue, 50);
    assert_eq!(issue["runs"][0]["status"], "succeeded");
}
