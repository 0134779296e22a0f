//! Spawning an adapter in its own process group and stopping that whole group.
//!
//! The adapter gets its own process group so that a Ctrl+C in the user's terminal reaches
//! `wujie` (which then decides: mark the run cancelled, signal the group) and so that killing
//! the adapter also kills whatever it spawned, leaving no orphans. Once the adapter has exited,
//! whatever is left of its group is killed before it is reaped; an adapter whose `wujie` dies
//! (even by SIGKILL) is killed by the kernel on Linux (`wujie_process::parent_death_hook`).

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use wujie_process::marks::{MARK_ENV, MARK_GRACE, Mark, MarkedStop, stop_mark};

use wujie_term::TermSize;

use crate::error::LocalRunError;
use crate::spawn_error::spawn_failed;

/// Every variable Wujie sets for an adapter; inherited copies are removed first so a run started
/// from inside another run never sees its parent's context.
pub const WUJIE_ENV_VARS: [&str; 12] = [
    "WUJIE_RUN_ID",
    "WUJIE_ISSUE_ID",
    "WUJIE_LOCALRUN_SESSION_ID",
    "WUJIE_WORKSPACE_ID",
    "WUJIE_SERVER_URL",
    "WUJIE_SERVER_URLS",
    "WUJIE_TOKEN",
    "WUJIE_LOCALRUN_PROVIDER_NAME",
    "WUJIE_LOCALRUN_PROVIDER_PROTOCOL",
    "WUJIE_LOCALRUN_PROVIDER_ORIGINAL_COMMAND",
    "WUJIE_LOCALRUN_PROVIDER_ORIGINAL_ARGS",
    crate::session::PROVIDER_STATE_DIR_VAR,
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
    /// What the adapter and everything it starts carry, to find them however they left its
    /// process group (`wujie_process::marks`).
    mark: Mark,
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
        wujie_process::die_with_parent(&mut cmd);
        for var in WUJIE_ENV_VARS {
            cmd.env_remove(var);
        }
        let mark = Mark::new();
        cmd.envs(spec.env.iter().map(|(k, v)| (k, v)))
            .env(MARK_ENV, mark.value());
        let mut child = cmd.spawn().map_err(|e| spawn_failed(&spec.program, e))?;
        Ok(Adapter {
            stdout: child.stdout.take(),
            stdin: child.stdin.take(),
            child,
            mark,
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
        let failed = |source: pty_process::Error| LocalRunError::SpawnPty {
            program: spec.program.clone(),
            source,
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
        let cmd = pty_process::Command::new(&spec.program)
            .args(&spec.args)
            .current_dir(&spec.cwd)
            .stdout(Stdio::piped())
            .kill_on_drop(false);
        // SAFETY: the hook makes only async-signal-safe system calls, as `pre_exec` requires
        // (see `wujie_process::parent_death_hook`).
        #[allow(unsafe_code)]
        let mut cmd = unsafe { cmd.pre_exec(wujie_process::parent_death_hook()) };
        for var in WUJIE_ENV_VARS {
            cmd = cmd.env_remove(var);
        }
        let mark = Mark::new();
        let mut child = cmd
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .env(MARK_ENV, mark.value())
            .spawn(pts)
            .map_err(|e| match e {
                pty_process::Error::Io(e) => spawn_failed(&spec.program, e),
                other => failed(other),
            })?;
        let adapter = Adapter {
            stdout: child.stdout.take(),
            stdin: None,
            child,
            mark,
        };
        Ok((adapter, pty))
    }

    /// Wait for the adapter to exit, stop what is left of its group and every process it
    /// started wherever that went, and reap it.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = wujie_process::reap_stopping_leftovers(&mut self.child).await?;
        self.stop_marked().await;
        Ok(status)
    }

    /// Signal the whole group; an already-gone group is not an error. Nothing is sent once the
    /// adapter was reaped, since its group id may belong to another process by then.
    pub fn signal(&self, signal: Signal) {
        wujie_process::signal_group(&self.child, signal);
    }

    /// TERM the group, then KILL it if the adapter has not exited within `grace`; members that
    /// Signal the adapter alone, not the agent it started (see
    /// [`wujie_process::USER_AT_INPUT`]); nothing once it was reaped.
    pub fn signal_alone(&self, signal: Signal) {
        wujie_process::signal_child(&self.child, signal);
    }

    /// outlive the adapter are killed too.
    pub async fn stop(&mut self, grace: Duration) -> std::io::Result<ExitStatus> {
        let status = wujie_process::stop_group(&mut self.child, grace).await?;
        self.stop_marked().await;
        Ok(status)
    }

    /// Ends what the adapter started outside its group (`setsid`, a double fork); says so when
    /// something of it would not go.
    async fn stop_marked(&self) {
        if let MarkedStop::Done { left } = stop_mark(&self.mark, MARK_GRACE).await
            && !left.is_empty()
        {
            wujie_process::stderr_line!(
                "wujie: {} processes the adapter started are still running after SIGKILL (pids {left:?}).",
                left.len()
            );
        }
    }
}

/// How long a stopped adapter gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// How long the adapter's stdout may stay open and silent after the adapter itself exited
/// (held by something it started) before what is left of its group is killed, and again after
/// that before reading stops for good (a descendant that left the group with `setsid` still
/// holds it).
pub const STDOUT_LINGER: Duration = Duration::from_secs(2);
/// Output read after the exit keeps the group alive this long at most: what the adapter printed
/// before it exited is read whatever the reporter's pace, yet a descendant printing on and on
/// cannot keep `wujie` waiting.
pub const STDOUT_DRAIN_MAX: Duration = Duration::from_secs(10);

/// What [`ExitWatch::next`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdapterLife {
    /// The adapter itself exited (it is not reaped yet).
    Exited,
    /// Its stdout stayed open [`STDOUT_LINGER`] after the exit, and again after its group was
    /// killed: stop reading it.
    StdoutAbandoned,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Running,
    Exited,
    LeftoversKilled,
    Done,
}

/// Follows the adapter's exit while its stdout is read, so reading never outlasts the adapter
/// by more than a bounded time. Cancel-safe: use it as a `select!` branch.
pub struct ExitWatch {
    exit: std::pin::Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>>,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    stage: Stage,
    exited_at: Option<tokio::time::Instant>,
}

impl ExitWatch {
    pub fn new(adapter: &Adapter) -> ExitWatch {
        ExitWatch {
            exit: Box::pin(wujie_process::exit_of(&adapter.child)),
            deadline: Box::pin(tokio::time::sleep(STDOUT_LINGER)),
            stage: Stage::Running,
            exited_at: None,
        }
    }

    /// Output was read and recorded: the linger after the exit counts from now (up to
    /// [`STDOUT_DRAIN_MAX`] after the exit), so time spent recording never counts as silence.
    pub fn on_output(&mut self) {
        if self.stage == Stage::Exited
            && self
                .exited_at
                .is_some_and(|at| at.elapsed() < STDOUT_DRAIN_MAX)
        {
            self.rearm();
        }
    }

    /// The next change; never resolves after [`AdapterLife::StdoutAbandoned`].
    pub async fn next(&mut self, adapter: &Adapter) -> AdapterLife {
        loop {
            match self.stage {
                Stage::Running => {
                    // An error waiting means the child is gone already.
                    let _ = self.exit.as_mut().await;
                    self.stage = Stage::Exited;
                    self.exited_at = Some(tokio::time::Instant::now());
                    self.rearm();
                    return AdapterLife::Exited;
                }
                Stage::Exited => {
                    self.deadline.as_mut().await;
                    // The leader is a zombie, so its group id is still its own.
                    adapter.signal(Signal::SIGKILL);
                    self.stage = Stage::LeftoversKilled;
                    self.rearm();
                }
                Stage::LeftoversKilled => {
                    self.deadline.as_mut().await;
                    self.stage = Stage::Done;
                    return AdapterLife::StdoutAbandoned;
                }
                Stage::Done => std::future::pending::<()>().await,
            }
        }
    }

    fn rearm(&mut self) {
        self.deadline
            .as_mut()
            .reset(tokio::time::Instant::now() + STDOUT_LINGER);
    }
}

/// What `wujie` tells the user when it stops reading an exited adapter's stdout.
pub const STDOUT_ABANDONED: &str = "the adapter exited, but a process it started outside its process group still holds its output open; no longer reading it";
