//! A running sidecar: a child process in its own process group, spoken to with JSON-RPC 2.0 over
//! stdin/stdout (one JSON per line). Its stderr goes to a log file whose tail (of this run only)
//! is attached to every error. On a timeout, on close, on error and on drop its whole process
//! tree is stopped ([`crate::tree`]), so an agent's tool subprocesses never outlive it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};
use wujie_process::marks::{MARK_ENV, Mark};
use wujie_protocol::sidecar::{
    self as rpc, CloseResult, Incoming, PingResult, PromptResult, Request, StateResult,
};

use crate::error::{CommondevError, Result, StderrTail};
use crate::tree::{ProcessTree, RemoteGroup, TreeStop};

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
    /// Over ssh: the sidecar's process group on the host, stopped with a second ssh command.
    pub remote_group: Option<RemoteGroup>,
}

#[derive(Debug)]
pub struct Sidecar {
    tree: ProcessTree,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    log: PathBuf,
    /// Where this run's lines begin in the log (earlier runs of the branch append to it too).
    log_start: u64,
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
            Err(CommondevError::CallTimeout {
                after,
                stderr,
                stopped,
                ..
            }) => Err(CommondevError::PingTimeout {
                after,
                driver: sidecar.driver.clone(),
                stderr,
                stopped,
            }),
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
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&command.stderr_log)
            .map_err(|source| CommondevError::Io {
                what: "could not open the sidecar log",
                path: command.stderr_log.clone(),
                source,
            })?;
        let log_start = log_file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .envs(&command.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            // Its own process group, so that the whole tree can be killed at once; the mark
            // finds what left the group, for `wujie`'s guard should `wujie` be SIGKILLed.
            .env(MARK_ENV, Mark::new().value())
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
            tree: ProcessTree::new(child, command.remote_group.clone(), timeouts.kill_grace),
            stdin,
            stdout: BufReader::new(stdout).lines(),
            next_id: 1,
            log: command.stderr_log.clone(),
            log_start,
            timeouts,
            driver,
        })
    }

    /// The last lines this sidecar wrote to its stderr log.
    pub fn stderr_tail(&self) -> StderrTail {
        stderr_tail(&self.log, self.log_start)
    }

    async fn decode<T>(&mut self, decoded: std::result::Result<T, rpc::ResultError>) -> Result<T> {
        decoded.map_err(|error| CommondevError::BadResult {
            error,
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
                let stopped = self.kill_tree().await;
                Err(CommondevError::CallTimeout {
                    method: method.to_owned(),
                    after: timeout,
                    stderr: self.stderr_tail(),
                    stopped: Box::new(stopped),
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
                // One request is pending at a time: an answer to another id is a broken
                // contract, and waiting on would only end in the call's timeout.
                Ok(Incoming::Response { id: got, .. }) => {
                    self.kill_tree().await;
                    return Err(CommondevError::Protocol {
                        method: method.to_owned(),
                        detail: format!(
                            "it answered request id {got}, but the pending request has id {id} \
                             (answer each request with its own id)"
                        ),
                        stderr: self.stderr_tail(),
                    });
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
        let exited = self.tree.exited_within(self.timeouts.kill_grace).await;
        let (status, stopped) = self.tree.stop().await;
        let mut status = match status {
            Some(status) if exited => status.to_string(),
            _ => "closed its stdout".to_owned(),
        };
        if !stopped.verified() {
            status = format!("{status}; {stopped}");
        }
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
        // A sidecar that honours `close` exits by itself; the tree goes either way.
        self.tree.exited_within(self.timeouts.kill_grace).await;
        let stopped = self.kill_tree().await;
        if !stopped.verified() {
            tracing::warn!(driver = %self.driver, %stopped, "closing a sidecar");
        }
        result
    }

    /// Stops the whole process tree (TERM, KILL after the grace period, checked) and reaps the
    /// sidecar. Dropping a `Sidecar` does the same in the background.
    pub async fn kill_tree(&mut self) -> TreeStop {
        self.tree.stop().await.1
    }
}

/// The last ~40 lines (at most 4 KiB) of a log file, from byte `from` on.
pub fn stderr_tail(log: &std::path::Path, from: u64) -> StderrTail {
    let text = std::fs::read(log).unwrap_or_default();
    let from = usize::try_from(from).unwrap_or(usize::MAX).min(text.len());
    let start = text.len().saturating_sub(4096).max(from);
    let text = String::from_utf8_lossy(&text[start..]).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    StderrTail {
        log: log.to_path_buf(),
        tail,
    }
}
