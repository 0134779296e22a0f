//! Exactly-once delivery under faults: a server killed mid-run, a server down, `wujie` killed
//! with SIGKILL, a lost response, and a permanent refusal of one event.

use std::process::Stdio;
use std::sync::atomic::Ordering;

use wujie_testkit::lossy_proxy::LossyProxy;
use wujie_testkit::*;

/// An adapter printing `count` text events and one usage event (1 input token) per 10 of them;
/// after `pause_after` events it touches `<dir>/paused` and waits for `<dir>/go`.
fn counting_adapter(dir: &std::path::Path, count: usize, pause_after: usize) -> String {
    format!(
        r#"i=0
while [ $i -lt {count} ]; do
  if [ $i -eq {pause_after} ]; then touch {d}/paused; while [ ! -e {d}/go ]; do sleep 0.05; done; fi
  printf '{{"type":"text","content":"event %d","source":"count","source_key":"e%d"}}\n' $i $i
  if [ $((i % 10)) -eq 0 ]; then printf '{{"usage":{{"provider":"p","model":"m","input_tokens":1,"output_tokens":2}}}}\n'; fi
  i=$((i+1))
done"#,
        d = dir.display()
    )
}

/// Run `count` events on a new issue of the laptop profile; when the adapter pauses after
/// `pause_after` events, kill the team server and let the adapter finish. Returns the issue key
/// and `wujie run`'s output.
fn run_through_outage(
    laptop: &Env,
    server: &mut Server,
    count: usize,
    pause_after: usize,
    title: &str,
) -> (String, std::process::Output) {
    let dir = laptop.work.path().to_path_buf();
    let plugin = laptop.plugin("count", V1, &counting_adapter(&dir, count, pause_after));
    laptop.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = laptop.create_issue(title);
    let run = laptop
        .cmd()
        .args(["run", &key, "--drain-timeout", "1", "--", "count"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(60, "the adapter to pause", || dir.join("paused").exists());
    server.kill();
    std::fs::write(dir.join("go"), "").unwrap();
    (key, run.wait_with_output().unwrap())
}

/// The team server (profile A) and a laptop profile B logged in to it.
pub(super) fn team_and_laptop(server_args: &[&str]) -> (Env, Server, Env) {
    let team = Env::new();
    let server = Server::start(&team, server_args);
    let token = team.ok(&["token", "create"]).trim().to_owned();
    let laptop = Env::new();
    laptop.ok(&["login", "--server", &server.url, "--token", &token]);
    (team, server, laptop)
}

/// Restart the team server on the same address (the laptop's profile points at it).
pub(super) fn restart(team: &Env, old: &mut Server, extra: &[&str]) -> Server {
    old.kill();
    let addr = old.url.trim_start_matches("http://").to_owned();
    let mut args = vec!["--listen", addr.as_str()];
    args.extend_from_slice(extra);
    Server::start_args(team, &args)
}

fn assert_exact(issue: &serde_json::Value, count: usize) {
    let run = &issue["runs"][0];
    let messages = run["messages"].as_array().unwrap();
    assert_eq!(messages.len(), count, "every event stored exactly once");
    let mut keys: Vec<&str> = messages
        .iter()
        .map(|m| m["source_key"].as_str().unwrap())
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), count, "no duplicates");
    // Arrival order is the adapter's order.
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m["content"], format!("event {i}"));
    }
    let usage = run["usage"].as_array().unwrap();
    let input: u64 = usage
        .iter()
        .map(|u| u["input_tokens"].as_u64().unwrap())
        .sum();
    let output: u64 = usage
        .iter()
        .map(|u| u["output_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(input, count.div_ceil(10) as u64, "usage totals exact");
    assert_eq!(output, 2 * count.div_ceil(10) as u64);
}

#[test]
fn server_killed_mid_run_then_restarted() {
    let (team, mut server, laptop) = team_and_laptop(&[]);
    let (key, out) = run_through_outage(&laptop, &mut server, 10_000, 5_000, "server dies");
    assert!(
        out.status.success(),
        "the adapter's status, not the server's"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("local-run sync"),
        "tells how to deliver: {stderr}"
    );

    let status = laptop.json(&["local-run", "status"]);
    assert!(status[0]["pending"].as_i64().unwrap() > 0, "{status}");

    let _server = restart(&team, &mut server, &[]);
    let report = laptop.json(&["local-run", "sync"]);
    assert_eq!(report["pending"], 0, "{report}");
    let issue = laptop.issue(&key);
    assert_exact(&issue, 10_000);
    assert_eq!(
        issue["runs"][0]["status"], "succeeded",
        "the run's real end was delivered too"
    );
    assert_eq!(laptop.json(&["local-run", "status"]), serde_json::json!([]));
}

#[test]
fn server_down_while_the_adapter_runs_then_sync() {
    let (team, mut server, laptop) = team_and_laptop(&[]);
    // The run exists; from the first event on, the server is gone.
    let (key, out) = run_through_outage(&laptop, &mut server, 2_000, 0, "server down");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not delivered") && stderr.contains("local-run sync"),
        "{stderr}"
    );

    // Sync while still down fails clearly and keeps everything.
    let out = laptop.run(&["local-run", "sync", "--idle-timeout", "1"]);
    assert!(!out.status.success());
    let _server = restart(&team, &mut server, &[]);
    laptop.ok(&["local-run", "sync"]);
    assert_exact(&laptop.issue(&key), 2_000);
}

/// An adapter that floods `count` text events `event 0` … (awk writes them in large chunks,
/// as fast as the pipe takes them), then stops itself (SIGSTOP) with everything printed.
fn flooding_adapter(dir: &std::path::Path, count: usize) -> String {
    format!(
        r#"echo $$ > {d}/adapter.pid
awk 'BEGIN {{ for (i = 0; i < {count}; i++) printf "{{\"type\":\"text\",\"content\":\"event %d\",\"source\":\"count\",\"source_key\":\"e%d\"}}\n", i, i }}'
kill -STOP $$"#,
        d = dir.display()
    )
}

/// Whether the process `pid` is stopped (state T in /proc/PID/stat).
fn is_stopped(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('T'))
    })
}

/// What a SIGKILLed `wujie run` had read of a flood of `count` events on a new issue of
/// `laptop`: the issue's key, the events it had taken out of the adapter's pipe, and those it
/// left there. Measured, not guessed: the adapter printed exactly `count` lines and stopped
/// itself; the test opens the adapter's stdout pipe as a second reader, kills `wujie` and reads
/// what is left in the pipe: every line (or rest of a line) there is one `wujie` had not read.
fn flood_then_kill_wujie(laptop: &Env, count: usize) -> (String, usize, usize) {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;

    let dir = laptop.work.path().to_path_buf();
    let plugin = laptop.plugin("flood", V1, &flooding_adapter(&dir, count));
    laptop.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = laptop.create_issue("wujie dies");
    let mut run = laptop
        .cmd()
        .args(["run", &key, "--", "flood"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let adapter_pid = dir.join("adapter.pid");
    wait_until(60, "the adapter to print everything and stop", || {
        std::fs::read_to_string(&adapter_pid)
            .ok()
            .and_then(|pid| pid.trim().parse().ok())
            .is_some_and(is_stopped)
    });
    let adapter = std::fs::read_to_string(&adapter_pid).unwrap();
    // A second reader of the adapter's stdout, taken while `wujie` still holds its own.
    let mut pipe = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(format!("/proc/{}/fd/1", adapter.trim()))
        .unwrap();
    run.kill().unwrap();
    run.wait().unwrap();
    // The adapter is stopped (or gone with wujie): what the pipe holds now is all it will.
    let mut unread = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => unread.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("reading the adapter's pipe: {e}"),
        }
    }
    let adapter: i32 = adapter.trim().parse().unwrap();
    signal_group(adapter, nix::sys::signal::Signal::SIGKILL);
    let not_read = unread.iter().filter(|b| **b == b'\n').count();
    (key, count - not_read, not_read)
}

/// The contents of the messages of the issue's first run, in order.
fn first_run_contents(issue: &serde_json::Value) -> Vec<String> {
    issue["runs"][0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// The issue holds exactly the first `read` events of the flood, once each and in order, on a
/// run its reporter did not end.
fn assert_read_events_arrived(issue: &serde_json::Value, read: usize, not_read: usize) {
    let contents = first_run_contents(issue);
    let expected: Vec<String> = (0..read).map(|i| format!("event {i}")).collect();
    assert!(
        contents == expected,
        "of {} events printed, wujie had read {read} ({not_read} left in the pipe), and {} \
         arrived (first missing: {:?})",
        read + not_read,
        contents.len(),
        expected.iter().zip(&contents).position(|(e, c)| e != c)
    );
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "failed");
    assert_eq!(run["error"], "reporter stopped");
}

/// `wujie run` is SIGKILLed while it is still reading a flood of events, at several sizes of
/// flood (see `flood_then_kill_wujie` for how what it had read is measured). After
/// `local-run sync` the issue must hold exactly the lines it had read, once each and in order:
/// a line lost between being read and being committed to the outbox shows as one missing.
#[test]
fn sigkilled_wujie_loses_nothing_it_had_read() {
    for count in [500, 5_000, 50_000] {
        let (_team, _server, laptop) = team_and_laptop(&[]);
        let (key, read, not_read) = flood_then_kill_wujie(&laptop, count);
        laptop.ok(&["local-run", "sync"]);
        assert_read_events_arrived(&laptop.issue(&key), read, not_read);
        eprintln!("{count} printed: {read} read by wujie, {not_read} left in the pipe");
    }
}

/// What a SIGKILLed `wujie run` had read is delivered by the sync the next `wujie run` starts
/// in the background, with no `local-run sync`: it commits the spool the killed one left.
#[test]
fn the_next_run_delivers_what_a_sigkilled_wujie_had_read() {
    let (_team, _server, laptop) = team_and_laptop(&[]);
    let (key, read, not_read) = flood_then_kill_wujie(&laptop, 20_000);
    let dir = laptop.work.path().to_path_buf();
    let waiting = format!("while [ ! -e {}/go ]; do sleep 0.05; done", dir.display());
    let plugin = laptop.plugin("waiting", V1, &waiting);
    laptop.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let next_issue = laptop.create_issue("the next run");
    let mut next = laptop
        .cmd()
        .args(["run", &next_issue, "--", "waiting"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(60, "the killed run's end to be delivered", || {
        laptop.issue(&key)["runs"][0]["status"] == "failed"
    });
    std::fs::write(dir.join("go"), "").unwrap();
    assert!(next.wait().unwrap().success());
    assert_read_events_arrived(&laptop.issue(&key), read, not_read);
    assert_eq!(laptop.json(&["local-run", "status"]), serde_json::json!([]));
}

#[test]
fn a_lost_response_does_not_duplicate() {
    let team = Env::new();
    let server = Server::start(&team, &[]);
    let token = team.ok(&["token", "create"]).trim().to_owned();
    // The first event batch is stored, but the reporter never hears so and sends it again.
    let proxy = LossyProxy::start(&server.url, |request| {
        String::from_utf8_lossy(request).contains("/events HTTP/1.1")
    });
    let laptop = Env::new();
    laptop.ok(&["login", "--server", &proxy.url, "--token", &token]);
    let dir = laptop.work.path().to_path_buf();
    laptop.ok(&[
        "local-run",
        "provider",
        "install",
        laptop
            .plugin("count", V1, &counting_adapter(&dir, 1_000, 0))
            .to_str()
            .unwrap(),
    ]);
    let key = laptop.create_issue("lost response");
    std::fs::write(dir.join("go"), "").unwrap();
    laptop.ok(&["run", &key, "--", "count"]);
    assert!(
        proxy.lost.load(Ordering::SeqCst),
        "the proxy did drop a response"
    );
    assert_exact(&team.issue(&key), 1_000);
}

#[test]
fn a_permanently_refused_event_is_kept_and_reported() {
    let (_team, _server, laptop) = team_and_laptop(&["--max-event-bytes", "2000"]);
    let big = "y".repeat(5000);
    let body = format!(
        "echo '{}'\necho '{}'\necho '{}'",
        msg("text", "before", "a"),
        msg("text", &big, "too-big"),
        msg("final", "after", "b")
    );
    laptop.ok(&[
        "local-run",
        "provider",
        "install",
        laptop.plugin("big", V1, &body).to_str().unwrap(),
    ]);
    let key = laptop.create_issue("refusal");
    let out = laptop.run(&["run", &key, "--", "big"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the adapter succeeded, but a run never does while an event it read was refused: {stderr}"
    );
    assert!(
        stderr.contains("refused") && stderr.contains("too-big"),
        "{stderr}"
    );
    let issue = laptop.issue(&key);
    let contents: Vec<_> = issue["runs"][0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].clone())
        .collect();
    assert_eq!(contents, ["before", "after"]);
    let status = laptop.json(&["local-run", "status"]);
    assert_eq!(status[0]["failed"], 1, "{status}");
    let text = laptop.ok(&["local-run", "status"]);
    assert!(
        text.contains("too-big") || text.contains("refused"),
        "{text}"
    );
}
