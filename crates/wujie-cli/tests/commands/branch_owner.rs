//! A branch's tool processes die with the `wujie` process that owns them, however it goes
//! away: SIGINT/SIGTERM to `wujie branch prompt` or `wujie mcp`, the MCP client closing stdin,
//! or the client cancelling the call (`notifications/cancelled`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::Signal;
use wujie_testkit::*;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Installs commondev's misbehaving fixture as driver `hangs`: its prompt starts `sleep 300`
/// (pid in `<work>/grandchild.pid`) and never answers.
fn hanging_driver(env: &Env) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../wujie-commondev/tests/fixtures/drivers/misbehaving");
    copy_dir(
        &fixture,
        &env.home.path().join("data/commondev/runtime/hangs"),
    );
    std::fs::write(env.work.path().join("behaviour"), "hang").unwrap();
}

fn pid_file(env: &Env, name: &str) -> PathBuf {
    env.work.path().join(name)
}

fn read_pid(path: &Path) -> i32 {
    let mut pid = 0;
    wait_until(60, &format!("{}", path.display()), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        pid > 0
    });
    pid
}

/// Waits (bounded) for the child to exit and returns its exit code or signal.
fn wait_exit(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let mut status = None;
    wait_until(60, what, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status.unwrap()
}

fn assert_tree_gone(env: &Env) {
    for name in ["grandchild.pid", "sidecar.pid"] {
        let pid = read_pid(&pid_file(env, name));
        wait_until(10, &format!("{name} {pid} to be gone"), || !pid_alive(pid));
    }
}

fn open_branch(env: &Env) {
    env.ok(&[
        "branch",
        "open",
        "--project",
        "p",
        "--branch",
        "b",
        "--agent-cli",
        "hangs",
        "--workdir",
        env.work.path().to_str().unwrap(),
    ]);
}

#[test]
fn a_prompt_stopped_by_a_signal_is_reported_on_its_issue() {
    let env = Env::new();
    hanging_driver(&env);
    let key = env.create_issue("delegated");
    env.ok(&[
        "branch",
        "open",
        "--project",
        "p",
        "--branch",
        "b",
        "--agent-cli",
        "hangs",
        "--workdir",
        env.work.path().to_str().unwrap(),
        "--issue",
        &key,
    ]);
    let mut child = env
        .cmd()
        .args([
            "branch",
            "prompt",
            "--project",
            "p",
            "--branch",
            "b",
            "work",
        ])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    read_pid(&pid_file(&env, "grandchild.pid"));
    assert!(signal_pid(child.id() as i32, Signal::SIGTERM));
    wait_exit(&mut child, "wujie branch prompt to exit");
    assert_tree_gone(&env);
    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "failed", "{issue}");
    assert_eq!(run["messages"][0]["content"], "work", "{run}");
    let last = run["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("stopped before the agent answered"),
        "{run}"
    );
}

#[test]
fn a_signal_to_branch_prompt_stops_the_tree() {
    for (signal, code) in [(Signal::SIGTERM, 143), (Signal::SIGINT, 130)] {
        let env = Env::new();
        hanging_driver(&env);
        open_branch(&env);
        let mut child = env
            .cmd()
            .args([
                "branch",
                "prompt",
                "--project",
                "p",
                "--branch",
                "b",
                "work",
            ])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        read_pid(&pid_file(&env, "grandchild.pid"));
        assert!(signal_pid(child.id() as i32, signal));
        let status = wait_exit(&mut child, "wujie branch prompt to exit");
        assert_eq!(status.code(), Some(code), "{signal:?}");
        assert_tree_gone(&env);
    }
}

/// `wujie mcp` spoken to with newline-delimited JSON-RPC, as an MCP client does on stdio.
struct McpClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl McpClient {
    fn start(env: &Env) -> McpClient {
        let mut child = env
            .cmd()
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = McpClient {
            stdin: child.stdin.take(),
            child,
            lines,
        };
        client.send(
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "test", "version": "1"}}}),
        );
        client.answer(1);
        client.send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: serde_json::Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn call(&mut self, id: u64, tool: &str, arguments: serde_json::Value) {
        self.send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}),
        );
    }

    fn answer(&mut self, id: u64) -> serde_json::Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("no answer from wujie mcp");
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            if value["id"] == id {
                return value;
            }
        }
    }

    /// Opens branch p/b on the hanging driver and starts a prompt as request 3.
    fn prompt_that_hangs(&mut self, env: &Env) {
        self.call(
            2,
            "commondev_branch_open",
            serde_json::json!({"project": "p", "branch": "b",
            "agent_cli": "hangs", "workdir": env.work.path()}),
        );
        let opened = self.answer(2);
        assert_eq!(opened["result"]["isError"], false, "{opened}");
        self.call(
            3,
            "commondev_branch_prompt",
            serde_json::json!({"project": "p", "branch": "b",
            "text": "work"}),
        );
        read_pid(&pid_file(env, "grandchild.pid"));
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mcp_exits_and_stops_the_tree_when_its_stdin_closes() {
    let env = Env::new();
    hanging_driver(&env);
    let mut client = McpClient::start(&env);
    client.prompt_that_hangs(&env);
    client.stdin.take();
    let status = wait_exit(&mut client.child, "wujie mcp to exit after stdin closed");
    assert!(status.success(), "{status:?}");
    assert_tree_gone(&env);
}

#[test]
fn a_signal_to_mcp_stops_the_tree() {
    let env = Env::new();
    hanging_driver(&env);
    let mut client = McpClient::start(&env);
    client.prompt_that_hangs(&env);
    assert!(signal_pid(client.child.id() as i32, Signal::SIGTERM));
    let status = wait_exit(&mut client.child, "wujie mcp to exit on SIGTERM");
    assert_eq!(status.code(), Some(143));
    assert_tree_gone(&env);
}

#[test]
fn a_cancelled_mcp_call_stops_its_tree() {
    let env = Env::new();
    hanging_driver(&env);
    let mut client = McpClient::start(&env);
    client.prompt_that_hangs(&env);
    client.send(
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3, "reason": "the user changed their mind"}}),
    );
    assert_tree_gone(&env);
    // The server is still there and the branch still usable.
    client.call(4, "commondev_branch_list", serde_json::json!({}));
    let listed = client.answer(4);
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    assert!(client.child.try_wait().unwrap().is_none());
    client.stdin.take();
    wait_exit(&mut client.child, "wujie mcp to exit");
}
