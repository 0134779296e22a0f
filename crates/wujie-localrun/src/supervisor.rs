//! Spawning an adapter in its own process group and stopping that whole group.
//!
//! The adapter gets its own process group so that a Ctrl+C in the user's terminal reaches
//! `wujie` (which then decides: mark the run cancelled, signal the group) and so that killing
//! the adapter also kills whatever it spawned, leaving no orphans.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use wujie_term::TermSize;

use crate::error::LocalRunError;

/// Every variable Wujie sets for an adapter; inherited copies are removed first so a run started
/// from inside another run never sees its parent's context.
pub const WUJIE_ENV_VARS: [&str; 10] = [
    "WUJIE_RUN_ID",
    "WUJIE_ISSUE_ID",
    "WUJIE_LOCALRUN_SESSION_ID",
    "WUJIE_WORKSPACE_ID",
    "WUJIE_SERVER_URL",
    "WUJIE_TOKEN",
    "WUJIE_LOCALRUN_PROVIDER_NAME",
    "WUJIE_LOCALRUN_PROVIDER_PROTOCOL",
    "WUJIE_LOCALRUN_PROVIDER_ORIGINAL_COMMAND",
    "WUJIE_LOCALRUN_PROVIDER_ORIGINAL_ARGS",
];

#[derive(Debug, Clone)]
pub struct SpawnSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
}

#[derive(Debug)]
pub struct Adapter {
    child: Child,
    pub stdout: Option<ChildStdout>,
    pub stdin: Option<ChildStdin>,
}

impl Adapter {
    /// Start the adapter: stdout is a pipe (NDJSON), stderr goes straight to the user, stdin is
    /// a pipe the caller feeds (user input, control frames).
    pub fn spawn(spec: &SpawnSpec) -> Result<Adapter, LocalRunError> {
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .kill_on_drop(false);
        for var in WUJIE_ENV_VARS {
            cmd.env_remove(var);
        }
        cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
        let mut child = cmd
            .spawn()
            .map_err(|e| LocalRunError::Invalid(crate::spawn_error::describe(&spec.program, &e)))?;
        Ok(Adapter {
            stdout: child.stdout.take(),
            stdin: child.stdin.take(),
            child,
        })
    }

    /// Start an interactive adapter: its stdin and stderr are the slave of a new PTY of `size`
    /// that is its controlling terminal (it leads its own session, so its process group is its
    /// pid, as with [`Adapter::spawn`]); stdout stays a pipe for events. Returns the PTY's
    /// master side. `raw` starts the PTY in raw mode, for scripted input: bytes written before
    /// the adapter configured its terminal are then neither echoed, edited nor flushed.
    pub fn spawn_pty(
        spec: &SpawnSpec,
        size: TermSize,
        raw: bool,
    ) -> Result<(Adapter, pty_process::Pty), LocalRunError> {
        let failed = |e: pty_process::Error| {
            LocalRunError::Invalid(format!(
                "could not start adapter {} on a terminal: {e}",
                spec.program.display()
            ))
        };
        let (pty, pts) = pty_process::open().map_err(failed)?;
        pty.resize(pty_process::Size::new(size.rows, size.cols))
            .map_err(failed)?;
        if raw {
            let io = |e: rustix::io::Errno| failed(pty_process::Error::Io(e.into()));
            let mut termios = rustix::termios::tcgetattr(&pty).map_err(io)?;
            termios.make_raw();
            rustix::termios::tcsetattr(&pty, rustix::termios::OptionalActions::Now, &termios)
                .map_err(io)?;
        }
        let mut cmd = pty_process::Command::new(&spec.program)
            .args(&spec.args)
            .current_dir(&spec.cwd)
            .stdout(Stdio::piped())
            .kill_on_drop(false);
        for var in WUJIE_ENV_VARS {
            cmd = cmd.env_remove(var);
        }
        let mut child = cmd
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .spawn(pts)
            .map_err(|e| match e {
                pty_process::Error::Io(e) => {
                    LocalRunError::Invalid(crate::spawn_error::describe(&spec.program, &e))
                }
                other => failed(other),
            })?;
        let adapter = Adapter {
            stdout: child.stdout.take(),
            stdin: None,
            child,
        };
        Ok((adapter, pty))
    }

    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Signal the whole group; an already-gone group is not an error. Nothing is sent once the
    /// adapter was reaped, since its group id may belong to another process by then.
    pub fn signal(&self, signal: Signal) {
        wujie_process::signal_group(&self.child, signal);
    }

    /// TERM the group, then KILL it if the adapter has not exited within `grace`; members that
    /// outlive the adapter are killed too.
    pub async fn stop(&mut self, grace: Duration) -> std::io::Result<ExitStatus> {
        wujie_process::stop_group(&mut self.child, grace).await
    }
}

/// The exit code a shell would report: the code, or 128 + the signal number.
pub fn exit_code_of(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}
