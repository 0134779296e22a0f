//! Diagnostics never stop or wedge the work: a `wujie` whose stderr was closed by the reader
//! (`wujie run … 2>&1 | head -1`, `wujie server 2>&1 | head -3`) carries on as with a closed
//! stdout, and ends as it would have.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use wujie_testkit::*;

/// `cmd` started with stderr on a pipe whose reading end is closed at once.
fn spawn_with_closed_stderr(mut cmd: std::process::Command) -> Child {
    let mut child = cmd.stderr(Stdio::piped()).spawn().expect("wujie starts");
    drop(child.stderr.take());
    child
}

/// Waits up to `secs` for `child` to exit; kills it and fails if it does not.
fn exit_within(child: &mut Child, secs: u64, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not end within {secs} s with its stderr closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The adapter writes only to stdout: its own stderr is the same closed pipe, and an adapter
/// that writes there dies of SIGPIPE as it would without Wujie.
#[test]
fn a_run_whose_stderr_is_closed_delivers_everything_and_ends_as_its_adapter_did() {
    let env = Env::new();
    let body = "i=0; while [ $i -lt 500 ]; do printf '{\"type\":\"text\",\"content\":\"e %d\",\"source\":\"s\",\"source_key\":\"k%d\"}\\n' $i $i; i=$((i+1)); done";
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("flood", V1, body).to_str().unwrap(),
    ]);
    let key = env.create_issue("closed stderr");
    let mut cmd = env.cmd();
    cmd.args(["run", &key, "--", "flood"]).stdout(Stdio::null());
    let mut run = spawn_with_closed_stderr(cmd);
    let status = exit_within(&mut run, 60, "wujie run");
    assert_eq!(
        status.code(),
        Some(0),
        "the adapter's status, not a panic's 101"
    );
    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "succeeded", "{run:#}");
    assert_eq!(run["messages"].as_array().map(Vec::len), Some(500));
}

#[test]
fn debug_logging_to_a_closed_stderr_neither_hangs_nor_fails_a_command() {
    let env = Env::new();
    env.create_issue("listed");
    for _ in 0..4 {
        let mut cmd = env.cmd();
        cmd.env("WUJIE_LOG", "debug")
            .args(["issue", "list"])
            .stdout(Stdio::piped());
        let mut list = spawn_with_closed_stderr(cmd);
        let mut out = String::new();
        std::io::Read::read_to_string(list.stdout.as_mut().unwrap(), &mut out).unwrap();
        let status = exit_within(&mut list, 30, "wujie issue list");
        assert!(status.success(), "{status:?}");
        assert!(out.contains("listed"), "{out}");
    }
}

#[test]
fn a_server_whose_stderr_is_closed_goes_on_answering() {
    let env = Env::new();
    let token = env.ok(&["token", "create"]).trim().to_owned();
    let mut cmd = env.cmd();
    // Every request is logged at `info`: each one writes to the closed stderr.
    cmd.args(["server", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped());
    let mut server = spawn_with_closed_stderr(cmd);
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_owned();
    let client = reqwest::blocking::Client::new();
    for i in 0..20 {
        let status = client
            .get(format!("{url}/api/v1/issues"))
            .bearer_auth(&token)
            .send()
            .unwrap_or_else(|e| panic!("request {i}: {e}"))
            .status();
        assert_eq!(status, 200, "request {i}");
    }
    assert!(
        server.try_wait().unwrap().is_none(),
        "the server is still up"
    );
    let _ = server.kill();
    let _ = server.wait();
}
