//! What an adapter leaves behind: a descendant that left its process group and keeps stdout
//! open, group members that outlive a normal exit, and an adapter whose `wujie` was SIGKILLed.
//! On every path, nothing the adapter started is left running.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use nix::sys::signal::Signal;
use wujie_testkit::spawned::{Spawned, pid_in};
use wujie_testkit::*;

fn start_run(env: &Env, key: &str, body: &str, pid_files: &[&str]) -> Spawned {
    let dir = env.plugin("kids", V1, body);
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    let child = env
        .cmd()
        .args(["run", key, "--", "kids"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let files = pid_files.iter().map(|f| env.work.path().join(f)).collect();
    Spawned::new(child, files)
}

fn file(env: &Env, name: &str) -> PathBuf {
    env.work.path().join(name)
}

/// A process that leaves the adapter's group (`setsid`) with the adapter's stdout, writing its
/// pid to `pid_file`.
fn escaping_sleeper(pid_file: &Path) -> String {
    format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 300' &\nwhile [ ! -s {} ]; do sleep 0.05; done",
        pid_file.display(),
        pid_file.display()
    )
}

fn contents(issue: &serde_json::Value) -> Vec<String> {
    issue["runs"][0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_descendant_that_left_the_group_with_stdout_does_not_hold_the_run() {
    let env = Env::new();
    let escaped = file(&env, "escaped.pid");
    let body = format!(
        "{}\necho '{}'\nexit 0",
        escaping_sleeper(&escaped),
        msg("text", "done", "d")
    );
    let key = env.create_issue("escaped descendant");
    let mut run = start_run(&env, &key, &body, &["escaped.pid"]);
    let code = run.wait(60, "wujie run to end after the adapter exited");
    assert_eq!(code, Some(0), "{}", run.stderr());
    let issue = env.issue(&key);
    assert_eq!(contents(&issue), ["done"]);
    assert_eq!(issue["runs"][0]["status"], "succeeded");
    gone(&escaped, "the descendant that left the group");
}

/// Waits for the process whose pid is in `pid_file` to be gone.
fn gone(pid_file: &Path, what: &str) {
    let pid = pid_in(pid_file).unwrap_or_else(|| panic!("no pid in {}", pid_file.display()));
    wait_until(15, &format!("{what} (pid {pid}) to be stopped"), || {
        !pid_alive(pid)
    });
}

#[test]
fn ctrl_c_ends_wujie_even_when_a_descendant_keeps_stdout_open() {
    let env = Env::new();
    let escaped = file(&env, "escaped.pid");
    let started = file(&env, "started");
    // The adapter ignores SIGTERM too: only the group's SIGKILL ends it.
    let body = format!(
        "echo $$ > {}\n{}\necho '{}'\ntrap '' TERM\ntouch {}\nwhile true; do sleep 0.1; done",
        file(&env, "adapter.pid").display(),
        escaping_sleeper(&escaped),
        msg("text", "working", "w"),
        started.display()
    );
    let key = env.create_issue("cancel with an escaped descendant");
    let mut run = start_run(&env, &key, &body, &["escaped.pid", "adapter.pid"]);
    wait_until(60, "the adapter to start", || started.exists());
    assert!(signal_pid(run.pid(), Signal::SIGINT));
    let code = run.wait(30, "wujie to end after Ctrl+C");
    assert_eq!(code, Some(130), "{}", run.stderr());
    let issue = env.issue(&key);
    assert_eq!(contents(&issue), ["working"]);
    assert_eq!(issue["runs"][0]["status"], "cancelled");
    let adapter = pid_in(&file(&env, "adapter.pid")).unwrap();
    assert!(!pid_alive(adapter), "the adapter was stopped");
    gone(&escaped, "the descendant that left the group");
}

/// SIGTERM and SIGHUP (the terminal closed) end the run, the adapter and what left its group.
#[test]
fn sigterm_and_sighup_end_what_left_the_group() {
    for signal in [Signal::SIGTERM, Signal::SIGHUP] {
        let env = Env::new();
        let escaped = file(&env, "escaped.pid");
        let started = file(&env, "started");
        let body = format!(
            "{}\necho '{}'\ntouch {}\nwhile true; do sleep 0.1; done",
            escaping_sleeper(&escaped),
            msg("text", "working", "w"),
            started.display()
        );
        let key = env.create_issue("stopped by a signal");
        let mut run = start_run(&env, &key, &body, &["escaped.pid"]);
        wait_until(60, "the adapter to start", || started.exists());
        assert!(signal_pid(run.pid(), signal));
        run.wait(30, "wujie to end after the signal");
        gone(
            &escaped,
            &format!("the descendant that left the group, after {signal}"),
        );
    }
}

#[test]
fn group_members_that_outlive_a_normal_exit_are_stopped() {
    let env = Env::new();
    let quiet = file(&env, "quiet.pid");
    let holding = file(&env, "holding.pid");
    // One member lets go of stdout, the other keeps it; both stay in the adapter's group.
    let body = format!(
        "sleep 300 >/dev/null 2>&1 &\necho $! > {}\nsleep 300 &\necho $! > {}\necho '{}'\nexit 0",
        quiet.display(),
        holding.display(),
        msg("text", "done", "d")
    );
    let key = env.create_issue("leftover members");
    let mut run = start_run(&env, &key, &body, &["quiet.pid", "holding.pid"]);
    let code = run.wait(60, "wujie run to end after the adapter exited");
    assert_eq!(code, Some(0), "{}", run.stderr());
    for member in [&quiet, &holding] {
        let pid = pid_in(member).unwrap();
        wait_until(10, "the group member to be stopped", || !pid_alive(pid));
    }
    let issue = env.issue(&key);
    assert_eq!(contents(&issue), ["done"]);
    assert_eq!(issue["runs"][0]["status"], "succeeded");
}

#[test]
fn the_adapter_does_not_run_on_when_wujie_is_sigkilled() {
    let env = Env::new();
    let adapter_pid = file(&env, "adapter.pid");
    let member = file(&env, "member.pid");
    let escaped = file(&env, "escaped.pid");
    // A member of the adapter's group (no parent-death signal of its own) and a process that
    // left the group.
    let body = format!(
        "sleep 300 >/dev/null 2>&1 &\necho $! > {}\n{}\necho $$ > {}\necho '{}'\nexec sleep 300",
        member.display(),
        escaping_sleeper(&escaped),
        adapter_pid.display(),
        msg("text", "working", "w")
    );
    let key = env.create_issue("orphaned adapter");
    let mut run = start_run(
        &env,
        &key,
        &body,
        &["adapter.pid", "member.pid", "escaped.pid"],
    );
    wait_until(60, "the adapter to start", || {
        pid_in(&adapter_pid).is_some()
    });
    let adapter = pid_in(&adapter_pid).unwrap();
    assert!(signal_pid(run.pid(), Signal::SIGKILL));
    run.wait(30, "the killed wujie to be reaped");
    wait_until(10, "the adapter to end with its wujie", || {
        !pid_alive(adapter)
    });
    gone(&member, "the member of the adapter's group");
    gone(&escaped, "the descendant that left the group");
}
