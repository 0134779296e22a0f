//! A running sidecar: a child process in its own process group, spoken to with JSON-RPC 2.0 over
//! stdin/stdout (one JSON per line). Its stderr goes to a log file whose tail is attached to
//! every error. On a timeout, on close and on drop the whole process group is killed (TERM, then
//! KILL after a grace period), so an agent's tool subprocesses never outlive it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use wujie_protocol::sidecar::{
    self as rpc, CloseResult, Incoming, PingResult, PromptResult, Request, StateResult,
};

use crate::error::{CommondevError, Result, StderrTail};

/// How long each call may take. Every timeout kills the sidecar's process tree.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// The `ping` handshake (the contract says 10 s).
    pub ping: Duration,
    /// One `prompt` (an agent turn with tools can be long).
    pub prompt: Duration,
    /// `state` and `close`.
    pub quick: Duration,
    /// Between TERM and KILL.
    pub kill_grace: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            ping: Duration::from_secs(10),
            prompt: Duration::from_secs(600),
            quick: Duration::from_secs(30),
            kill_grace: Duration::from_secs(2),
        }
    }
}

/// What to run: program, arguments, extra environment, working directory, stderr log.
#[derive(Debug, Clone)]
pub struct SidecarCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub stderr_log: PathBuf,
}

#[derive(Debug)]
pub struct Sidecar {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    log: PathBuf,
    timeouts: Timeouts,
    /// A human name for errors: the driver file.
    driver: String,
}

impl Sidecar {
    /// Starts the sidecar and completes the `ping` handshake within `timeouts.ping`.
    pub async fn start(
        command: &SidecarCommand,
        timeouts: Timeouts,
        driver: String,
    ) -> Result<(Self, PingResult)> {
        let mut sidecar = Self::spawn(command, timeouts, driver)?;
        match sidecar.ping().await {
            Ok(ping) => Ok((sidecar, ping)),
            Err(CommondevError::CallTimeout { after, stderr, .. }) => {
                Err(CommondevError::PingTimeout {
                    after,
                    driver: sidecar.driver.clone(),
                    stderr,
                })
            }
            Err(other) => {
                sidecar.kill_tree().await;
                Err(other)
            }
        }
    }

    fn spawn(command: &SidecarCommand, timeouts: Timeouts, driver: String) -> Result<Self> {
        if let Some(dir) = command.stderr_log.parent() {
            std::fs::create_dir_all(dir).map_err(|source| CommondevError::Io {
                what: "could not create the log directory",
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&command.stderr_log)
            .map_err(|source| CommondevError::Io {
                what: "could not open the sidecar log",
                path: command.stderr_log.clone(),
                source,
            })?;
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .envs(&command.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            // Its own process group, so that the whole tree can be killed at once.
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = &command.cwd {
            cmd.current_dir(cwd);
        }
        let mut child = cmd.spawn().map_err(|source| CommondevError::Spawn {
            program: command.program.display().to_string(),
            source,
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(CommondevError::Spawn {
                program: command.program.display().to_string(),
                source: std::io::Error::other("stdin/stdout pipes were not created"),
            });
        };
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            next_id: 1,
            log: command.stderr_log.clone(),
            timeouts,
            driver,
        })
    }

    /// The last lines of the sidecar's stderr log.
    pub fn stderr_tail(&self) -> StderrTail {
        stderr_tail(&self.log)
    }

    async fn decode<T>(&mut self, decoded: std::result::Result<T, rpc::ResultError>) -> Result<T> {
        decoded.map_err(|source| CommondevError::BadResult {
            source,
            stderr: self.stderr_tail(),
        })
    }

    /// Sends one request and waits for its response. On timeout the process tree is killed.
    pub async fn call(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let line = Request::new(id, method, params).to_line();
        match tokio::time::timeout(timeout, self.exchange(id, method, &line)).await {
            Ok(result) => result,
            Err(_) => {
                self.kill_tree().await;
                Err(CommondevError::CallTimeout {
                    method: method.to_owned(),
                    after: timeout,
                    stderr: self.stderr_tail(),
                })
            }
        }
    }

    async fn exchange(&mut self, id: u64, method: &str, line: &str) -> Result<Value> {
        let written = async {
            self.stdin.write_all(line.as_bytes()).await?;
            self.stdin.flush().await
        }
        .await;
        if written.is_err() {
            return Err(self.exited(method).await);
        }
        loop {
            let next = match self.stdout.next_line().await {
                Ok(Some(next)) => next,
                Ok(None) | Err(_) => return Err(self.exited(method).await),
            };
            if next.trim().is_empty() {
                continue;
            }
            match rpc::parse_line(&next) {
                Ok(Incoming::Response { id: got, outcome }) if got == id => {
                    return outcome.map_err(|error| CommondevError::Rpc {
                        method: method.to_owned(),
                        error: Box::new(error),
                        stderr: self.stderr_tail(),
                    });
                }
                Ok(Incoming::Response { id: got, .. }) => {
                    tracing::warn!(
                        expected = id,
                        got,
                        "sidecar answered a request that is not pending"
                    );
                }
                Ok(Incoming::Notification { method }) => {
                    tracing::debug!(%method, "sidecar notification");
                }
                Err(e) => {
                    return Err(CommondevError::Protocol {
                        method: method.to_owned(),
                        detail: format!("{e} (stdout is reserved for JSON-RPC; log to stderr)"),
                        stderr: self.stderr_tail(),
                    });
                }
            }
        }
    }

    async fn exited(&mut self, method: &str) -> CommondevError {
        let status = if wujie_process::exited_within(&self.child, self.timeouts.kill_grace).await {
            match self.kill_tree().await {
                Some(status) => status.to_string(),
                None => "closed its stdout".to_owned(),
            }
        } else {
            self.kill_tree().await;
            "closed its stdout".to_owned()
        };
        CommondevError::SidecarExited {
            method: method.to_owned(),
            status,
            stderr: self.stderr_tail(),
        }
    }

    pub async fn ping(&mut self) -> Result<PingResult> {
        let value = self.call("ping", None, self.timeouts.ping).await?;
        self.decode(rpc::decode_ping(value)).await
    }

    pub async fn prompt(&mut self, text: &str, session_label: &str) -> Result<PromptResult> {
        let params = serde_json::json!({"text": text, "session_id": session_label});
        let value = self
            .call("prompt", Some(params), self.timeouts.prompt)
            .await?;
        self.decode(rpc::decode_prompt(value)).await
    }

    pub async fn state(&mut self) -> Result<StateResult> {
        let value = self.call("state", None, self.timeouts.quick).await?;
        self.decode(rpc::decode_state(value)).await
    }

    /// Asks the sidecar to close, then makes sure its whole tree is gone.
    pub async fn close(mut self) -> Result<CloseResult> {
        let result = match self.call("close", None, self.timeouts.quick).await {
            Ok(value) => self.decode(rpc::decode_close(value)).await,
            Err(e) => Err(e),
        };
        // A sidecar that honours `close` exits by itself; the group goes either way.
        wujie_process::exited_within(&self.child, self.timeouts.kill_grace).await;
        self.kill_tree().await;
        result
    }

    /// TERM the process group, KILL it after the grace period, and reap the sidecar; returns
    /// its exit status unless it was reaped before.
    pub async fn kill_tree(&mut self) -> Option<std::process::ExitStatus> {
        // Already reaped: its group id may belong to another process now.
        self.child.id()?;
        wujie_process::stop_group(&mut self.child, self.timeouts.kill_grace)
            .await
            .ok()
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        // Only while the sidecar is unreaped: its group id is still its own.
        wujie_process::signal_group(&self.child, Signal::SIGKILL);
    }
}

/// The last ~40 lines (at most 4 KiB) of a log file.
pub fn stderr_tail(log: &std::path::Path) -> StderrTail {
    let text = std::fs::read(log).unwrap_or_default();
    let start = text.len().saturating_sub(4096);
    let text = String::from_utf8_lossy(&text[start..]).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    StderrTail {
        log: log.to_path_buf(),
        tail,
    }
}
