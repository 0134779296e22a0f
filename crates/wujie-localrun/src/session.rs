//! Plumbing of an adapter session ([`crate::adapter_session`]): the adapter's environment, its
//! stdout as decoded event lines (through the spool), when its stdin closes, and the user's stop
//! signals.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::signal::unix::{Signal as UnixSignal, SignalKind, signal};
use wujie_host::{HostEvent, TerminalHost, sleep_until_opt};
use wujie_store::outbox::now_ms;

use crate::error::LocalRunError;
use crate::registry::{AdapterCommand, Provider};
use crate::spool::{CHUNK, ReadLines, SpoolFile, SpoolLines};
use crate::supervisor::{Adapter, SpawnSpec};

/// The context variables of the seed's "执行环境变量" that depend on what the adapter is bound to.
#[derive(Debug, Clone, Default)]
pub struct Binding {
    pub run_id: Option<String>,
    pub issue_id: Option<String>,
    pub session_id: Option<String>,
}

/// The full `WUJIE_*` environment of an adapter. `WUJIE_SERVER_URL` is the replica `server`
/// talks to now (the one that answered the run's start), `WUJIE_SERVER_URLS` every replica,
/// that one first (a single server is a list of one).
pub fn adapter_env(
    binding: &Binding,
    workspace_id: &str,
    server: &wujie_client::Client,
    token: &str,
    provider: &Provider,
    provider_arg: &str,
    args: &[String],
) -> Vec<(String, String)> {
    let mut original_args = vec![provider_arg.to_owned()];
    original_args.extend(args.iter().cloned());
    let mut env = Vec::new();
    let mut set = |k: &str, v: &str| env.push((k.to_owned(), v.to_owned()));
    if let Some(v) = &binding.run_id {
        set("WUJIE_RUN_ID", v);
    }
    if let Some(v) = &binding.issue_id {
        set("WUJIE_ISSUE_ID", v);
    }
    if let Some(v) = &binding.session_id {
        set("WUJIE_LOCALRUN_SESSION_ID", v);
    }
    set("WUJIE_WORKSPACE_ID", workspace_id);
    set("WUJIE_SERVER_URL", server.base_url());
    set("WUJIE_SERVER_URLS", &server.replicas_in_order());
    set("WUJIE_TOKEN", token);
    set("WUJIE_LOCALRUN_PROVIDER_NAME", &provider.name);
    set(
        "WUJIE_LOCALRUN_PROVIDER_PROTOCOL",
        provider.manifest.protocol.as_str(),
    );
    set("WUJIE_LOCALRUN_PROVIDER_ORIGINAL_COMMAND", provider_arg);
    set(
        "WUJIE_LOCALRUN_PROVIDER_ORIGINAL_ARGS",
        &serde_json::to_string(&original_args).expect("strings serialize"),
    );
    env
}

/// Where a run tells its adapter the directory it may keep state in across runs.
pub use wujie_builtins::tui::PROVIDER_STATE_DIR_VAR;

/// The directory provider `name` keeps state in across runs, under the profile's state
/// directory (created by the adapter when it needs it): what an agent must find again on the
/// next run of the same issue, such as the folder holding the issue's context, which the user
/// may have told the agent to trust.
pub fn provider_state_dir(state_dir: &Path, name: &str) -> PathBuf {
    state_dir.join("provider-state").join(name)
}

/// How to start the adapter: its command with the user's arguments after its own, in `cwd`.
pub fn spawn_spec(
    command: &AdapterCommand,
    user_args: &[String],
    cwd: &Path,
    env: Vec<(String, String)>,
) -> SpawnSpec {
    let mut args = command.leading_args.clone();
    args.extend(user_args.iter().cloned());
    SpawnSpec {
        program: command.program.clone(),
        args,
        cwd: cwd.to_path_buf(),
        env,
    }
}

/// Revokes the token handed to the adapter once its session is over, so nothing it left behind
/// reads on with it. Best effort: a run's token also dies when the run's end is recorded, a
/// discussion's when it is promoted.
pub async fn revoke_adapter_token(server_url: &str, token: &str) {
    let client = match wujie_client::Client::new(server_url, wujie_client::Token::new(token)) {
        Ok(client) => client,
        Err(e) => {
            tracing::debug!("cannot revoke the adapter's token: {e}");
            return;
        }
    };
    if let Err(e) = client.revoke_own_token().await {
        tracing::debug!("the adapter's token was not revoked: {e}");
    }
}

/// The adapter's stdout as decoded lines, taken out of the pipe into the spool in chunks.
pub struct StdoutEvents {
    stdout: AsyncFd<OwnedFd>,
    spool: SpoolFile,
    lines: SpoolLines,
    buf: Vec<u8>,
    done: bool,
}

impl StdoutEvents {
    /// The events of an adapter started with its stdout captured (always so by the supervisor),
    /// through `spool`.
    #[allow(unsafe_code)]
    pub fn take_from(
        adapter: &mut Adapter,
        spool: SpoolFile,
    ) -> Result<StdoutEvents, LocalRunError> {
        let stdout = adapter
            .stdout
            .take()
            .ok_or(LocalRunError::StdoutNotCaptured)?;
        let watching = |source| LocalRunError::Adapter {
            doing: "cannot watch the adapter's stdout",
            source,
        };
        // Out of tokio's own reader (which cannot splice), back to non-blocking for `AsyncFd`.
        let stdout = stdout.into_owned_fd().map_err(watching)?;
        rustix::io::ioctl_fionbio(&stdout, true).map_err(|e| watching(e.into()))?;
        // SAFETY: the `AsyncFd` owns the `OwnedFd`, which keeps its descriptor open and unchanged
        // until the `AsyncFd` drops it; nothing else closes or replaces it.
        let stdout = unsafe { AsyncFd::register_with_interest(stdout, Interest::READABLE) }
            .map_err(|e| watching(e.into_parts().1))?;
        Ok(StdoutEvents {
            stdout,
            lines: SpoolLines::new(spool.id()),
            spool,
            buf: vec![0u8; CHUNK],
            done: false,
        })
    }

    /// The next lines; `None` once stdout is closed and the last partial line was handled.
    /// Cancel-safe: a take interrupted by `select!` loses no bytes.
    pub async fn next(&mut self) -> Result<Option<ReadLines>, LocalRunError> {
        if self.done {
            return Ok(None);
        }
        let n = self.spool.take(&self.stdout, &mut self.buf).await?;
        let read_at_ms = now_ms();
        let read = if n == 0 {
            self.done = true;
            self.lines.finish(read_at_ms)
        } else {
            self.lines.feed(&self.buf[..n], read_at_ms)
        };
        Ok(Some(read))
    }
}

/// SIGINT, SIGTERM and SIGHUP to `wujie`: the user wants the adapter stopped.
pub struct StopSignals {
    int: UnixSignal,
    term: UnixSignal,
    hup: UnixSignal,
}

impl StopSignals {
    pub fn install() -> Result<StopSignals, LocalRunError> {
        let sig = |kind| signal(kind).map_err(LocalRunError::Signals);
        Ok(StopSignals {
            int: sig(SignalKind::interrupt())?,
            term: sig(SignalKind::terminate())?,
            hup: sig(SignalKind::hangup())?,
        })
    }

    pub async fn recv(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {},
            _ = self.term.recv() => {},
            _ = self.hup.recv() => {},
        }
    }
}

/// The next event from the terminal host; never resolves without a host or once it ended.
pub async fn host_event(host: &mut Option<TerminalHost>) -> HostEvent {
    if let Some(host) = host
        && let Some(event) = host.events.recv().await
    {
        return event;
    }
    std::future::pending().await
}

/// After the user's input ended, the adapter's stdin closes once the adapter has printed
/// something and its output has then been quiet for this long: a request it printed just then
/// (a handoff it may not make) is still answered on its stdin instead of racing the close.
pub const STDIN_CLOSE_QUIET: std::time::Duration = std::time::Duration::from_millis(200);

/// When to close the adapter's stdin after the end of the user's input (see
/// [`STDIN_CLOSE_QUIET`]). The quiet period never starts before the adapter's first output: an
/// adapter slow to start (an interpreter on a loaded machine) that asks for a handoff first
/// thing still finds its stdin open for the answer, however early the user's input ended.
#[derive(Debug, Default)]
pub struct QuietClose {
    /// The user's input ended and the adapter's stdin is still open.
    input_ended: bool,
    /// The adapter printed something.
    seen_output: bool,
    at: Option<tokio::time::Instant>,
}

impl QuietClose {
    /// The user's input ended: close after a quiet period that follows some output.
    pub fn arm(&mut self) {
        self.input_ended = true;
        if self.seen_output {
            self.restart();
        }
    }

    /// The adapter printed something: the quiet period starts again.
    pub fn on_output(&mut self) {
        self.seen_output = true;
        if self.input_ended {
            self.restart();
        }
    }

    fn restart(&mut self) {
        self.at = Some(tokio::time::Instant::now() + STDIN_CLOSE_QUIET);
    }

    pub fn is_armed(&self) -> bool {
        self.at.is_some()
    }

    /// Resolves when it is time to close (then disarms for good); never while unarmed.
    pub async fn due(&mut self) {
        sleep_until_opt(self.at).await;
        self.at = None;
        self.input_ended = false;
    }
}
