//! How a `wujie discuss` session ends: a Ctrl+C keeps what the adapter prints while it stops
//! (as `wujie run` does), and the end of the user's input reaches an adapter that may ask for a
//! handoff once no answer can be owed to it any more.

use std::io::Write;
use std::process::{Child, Stdio};

use nix::sys::signal::Signal;
use wujie_testkit::*;

/// A `wujie` child that is killed if the test fails before it ended (its adapter dies with it).
struct Running(Child);

impl Running {
    /// Waits (bounded) for the exit and returns the output.
    fn finish(mut self, what: &str) -> std::process::Output {
        wait_until(60, what, || self.0.try_wait().unwrap().is_some());
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        use std::io::Read;
        if let Some(mut out) = self.0.stdout.take() {
            out.read_to_end(&mut stdout).unwrap();
        }
        if let Some(mut err) = self.0.stderr.take() {
            err.read_to_end(&mut stderr).unwrap();
        }
        std::process::Output {
            status: self.0.wait().unwrap(),
            stdout,
            stderr,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Installs a v2 provider `name` running `body`, with `native_plan_handoff` declared.
fn handoff_provider(env: &Env, name: &str, body: &str) {
    let dir = env.work.path().join(name);
    write_plugin(&dir, name, V2, body);
    let manifest = dir.join("provider.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["capabilities"]["native_plan_handoff"] = true.into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
}

fn entry_contents(discussion: &serde_json::Value) -> Vec<String> {
    discussion["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn ctrl_c_keeps_what_the_adapter_prints_while_it_stops() {
    let env = Env::new();
    let started = env.work.path().join("started");
    let body = format!(
        "trap 'echo '\\''{bye}'\\''; exit 143' TERM\necho '{hello}'\ntouch {started}\nwhile true; do sleep 0.05; done",
        bye = msg("final", "stopped cleanly", "bye"),
        hello = msg("final", "working", "hello"),
        started = started.display(),
    );
    handoff_provider(&env, "stopper", &body);
    let child = env
        .cmd()
        .args(["--output", "json", "discuss", "--", "stopper"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let wujie = Running(child);
    wait_until(30, "the adapter to start", || started.exists());
    assert!(signal_pid(pid, Signal::SIGINT));
    let out = wujie.finish("wujie discuss to end after Ctrl+C");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    assert_eq!(report["cancelled"], true);
    assert_eq!(report["exit_code"], 130);
    let d = env.json(&[
        "discussion",
        "show",
        report["discussion_id"].as_str().unwrap(),
    ]);
    assert_eq!(
        entry_contents(&d),
        ["working", "stopped cleanly"],
        "what the adapter printed after SIGTERM is kept:\n{stderr}"
    );
    assert_eq!(d["status"], "open");
}

#[test]
fn end_of_input_reaches_an_adapter_that_may_ask_for_a_handoff() {
    let env = Env::new();
    let log = env.work.path().join("log");
    // Prints a plan, then passes on whatever it reads until its stdin ends.
    let body = format!(
        "echo '{plan}'\nwhile IFS= read -r line; do echo \"$line\" >> {log}; done\necho '{done}'",
        plan = msg("plan", "# Plan", "p"),
        done = msg("final", "input ended", "f"),
        log = log.display(),
    );
    handoff_provider(&env, "reader", &body);
    let mut child = env
        .cmd()
        .args(["--output", "json", "discuss", "--", "reader"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let wujie = Running(child);
    input.write_all(b"hello\n").unwrap();
    wait_until(30, "the typed line to reach the adapter", || {
        std::fs::read_to_string(&log).is_ok_and(|l| l.contains("hello"))
    });
    drop(input);
    let out = wujie.finish("wujie discuss to end once its stdin closed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    assert_eq!(report["cancelled"], false);
    let d = env.json(&[
        "discussion",
        "show",
        report["discussion_id"].as_str().unwrap(),
    ]);
    let contents = entry_contents(&d);
    assert!(
        contents.iter().any(|c| c == "input ended"),
        "the adapter saw the end of its input: {contents:?}"
    );
}

#[test]
fn a_handoff_just_before_the_end_of_input_is_answered() {
    let env = Env::new();
    let log = env.work.path().join("log");
    // Asks for a handoff first thing (wujie's stdin is already at its end), logs the answer,
    // then reads on until its stdin ends.
    let body = format!(
        r#"echo '{plan}'
echo '{{"event":"handoff_ready","request_id":"h-1","mode":"current_context"}}'
IFS= read -r line; echo "$line" >> {log}
while IFS= read -r line; do :; done
echo '{done}'"#,
        plan = msg("plan", "# Plan B", "p"),
        done = msg("final", "input ended", "f"),
        log = log.display(),
    );
    handoff_provider(&env, "asker", &body);
    for (confirm, accepted) in [("accept", true), ("ask", false)] {
        let _ = std::fs::remove_file(&log);
        let child = env
            .cmd()
            .args([
                "--output",
                "json",
                "discuss",
                "--confirm",
                confirm,
                "--",
                "asker",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = Running(child).finish("wujie discuss to end with its stdin at its end");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "--confirm {confirm}: {stderr}");
        let frame = std::fs::read_to_string(&log).expect("the adapter read a decision");
        let frame: serde_json::Value = serde_json::from_str(
            frame
                .trim()
                .strip_prefix("\u{1e}WUJIE ")
                .unwrap_or_else(|| panic!("a control frame: {frame:?}")),
        )
        .unwrap();
        assert_eq!(frame["request_id"], "h-1");
        assert_eq!(frame["accepted"], accepted, "--confirm {confirm}: {frame}");
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("one JSON report");
        if accepted {
            let key = report["issue_key"].as_str().expect("promoted");
            let issue = env.issue(key);
            assert_eq!(issue["runs"][0]["status"], "succeeded");
            assert_eq!(issue["runs"][0]["messages"][0]["content"], "input ended");
        } else {
            assert!(report["issue_key"].is_null());
            assert_eq!(
                frame["error"],
                "no terminal to confirm; pass --confirm accept"
            );
        }
    }
}

#[test]
fn discussion_show_reads_every_page_of_a_long_discussion() {
    let env = Env::new();
    // Three entries of 600 KB: the server answers them a page of 1 MiB at a time.
    let body = "pad=$(head -c 600000 /dev/zero | tr '\\0' x)\n\
                for n in 0 1 2; do printf '{\"type\":\"final\",\"content\":\"%s %s\",\"source\":\"t\",\"source_key\":\"k%s\"}\\n' \"$n\" \"$pad\" \"$n\"; done";
    handoff_provider(&env, "long", body);
    let out = env.run(&["--output", "json", "discuss", "--", "long"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    let id = report["discussion_id"].as_str().unwrap();
    let d = env.json(&["discussion", "show", id]);
    let starts: Vec<String> = entry_contents(&d)
        .iter()
        .map(|c| {
            assert_eq!(c.len(), 600_002, "whole entries");
            c[..2].to_owned()
        })
        .collect();
    assert_eq!(starts, ["0 ", "1 ", "2 "]);
    // Each entry on a line of its own, cut to its start.
    let text = env.ok(&["discussion", "show", id]);
    for n in 0..3 {
        assert!(text.contains(&format!("final: {n} xxx")), "{text}");
    }
}
