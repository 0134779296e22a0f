//! `wujie run ISSUE -- PROVIDER [ARGS...]`: create a local run on the issue, start the adapter,
//! and sync everything it prints into the run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use wujie_delivery::reporter::{CloseSummary, Reporter, ReporterNotice, TargetRef, refused_error};
use wujie_host::AdapterStdin;
use wujie_host::user_input::UserInput;
use wujie_process::exit_code_of;
use wujie_protocol::api::{CreateRun, FinishRun, RunStatus};
use wujie_protocol::control::HandoffDecision;
use wujie_protocol::event::{Event, EventError, EventErrorKind};
use wujie_store::outbox::{NewTarget, Outbox, TargetKind};

use crate::connection::Connection;
use crate::error::LocalRunError;
use crate::events::items_for_line;
use crate::registry::Provider;
use crate::session::{
    Binding, QuietClose, Started, StdoutEvents, StopSignals, adapter_env, next_input,
    revoke_adapter_token,
};
use crate::supervisor::{Adapter, AdapterLife, ExitWatch, STDOUT_ABANDONED, SpawnSpec};

/// How long a cancelled adapter gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

#[derive(Debug, Clone)]
pub struct RunRequest {
    pub issue: String,
    /// The provider name as typed by the user.
    pub provider_arg: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Give up draining the outbox after this long without progress.
    pub drain_timeout: Duration,
}

#[derive(Debug)]
pub struct RunOutcome {
    pub run_id: String,
    pub issue_key: String,
    pub status: RunStatus,
    /// What `wujie run` exits with: the adapter's code, 130 after a cancel, 1 on a protocol error
    /// or when the server refused events that were read.
    pub exit_code: i32,
    pub error: Option<String>,
    pub summary: CloseSummary,
}

/// How reading the adapter's stdout ended.
enum PumpEnd {
    Eof,
    Invalid(String),
    Cancelled,
}

pub async fn run(
    conn: &Connection,
    outbox: Outbox,
    provider: &Provider,
    command: crate::registry::AdapterCommand,
    req: RunRequest,
    notice: Arc<dyn ReporterNotice>,
) -> Result<RunOutcome, LocalRunError> {
    let api = |e: wujie_client::ClientError| LocalRunError::Invalid(e.to_string());
    let issue = conn.client.get_issue(&req.issue).await.map_err(api)?;
    let workspace = conn.client.workspace().await.map_err(api)?;
    let created = conn
        .client
        .create_run(
            &issue.key,
            &CreateRun {
                provider: provider.name.clone(),
                cwd: req.cwd.to_string_lossy().into_owned(),
            },
        )
        .await
        .map_err(api)?;
    let run_id = created.run.id.clone();
    // Held until this function returns: while it is, no sync takes the run over.
    let _owner = outbox
        .add_target(&NewTarget {
            id: &run_id,
            kind: TargetKind::Run,
            server_url: &conn.server_label,
            label: &issue.key,
            reporter_pid: std::process::id(),
        })
        .await
        .map_err(|e| LocalRunError::Invalid(e.to_string()))?;
    let reporter = Reporter::start(
        outbox.clone(),
        conn.client.clone(),
        TargetRef {
            id: run_id.clone(),
            kind: TargetKind::Run,
        },
        notice,
    );

    let mut args = command.leading_args.clone();
    args.extend(req.args.iter().cloned());
    let binding = Binding {
        run_id: Some(run_id.clone()),
        issue_id: Some(issue.id.clone()),
        session_id: None,
    };
    let env = adapter_env(
        &binding,
        &workspace.id,
        &conn.url,
        &created.token,
        provider,
        &req.provider_arg,
        &req.args,
    );
    let spec = SpawnSpec {
        program: command.program.clone(),
        args,
        cwd: req.cwd.clone(),
        env,
    };
    let started = match Started::spawn(&spec, provider, false) {
        Ok(started) => started,
        Err(e) => {
            let finish = FinishRun {
                status: RunStatus::Failed,
                exit_code: None,
                error: Some(e.to_string()),
            };
            let _ = reporter.finish(&run_id, finish).await;
            let _ = reporter.close(req.drain_timeout, |_| {}).await;
            return Err(e);
        }
    };
    let heartbeat = spawn_heartbeat(conn.client.clone(), run_id.clone());

    let Started {
        mut adapter,
        to_adapter,
        host,
    } = started;
    let end = pump(
        &mut adapter,
        &to_adapter,
        host.is_none(),
        &reporter,
        &run_id,
    )
    .await;
    let end = match end {
        Ok(end) => end,
        Err(e) => {
            let _ = adapter.stop(STOP_GRACE).await;
            drop(host);
            return Err(e);
        }
    };
    let (status, exit_code, error) = match end {
        PumpEnd::Eof => {
            let code =
                exit_code_of(adapter.wait().await.map_err(|e| {
                    LocalRunError::Invalid(format!("waiting for the adapter: {e}"))
                })?);
            if code == 0 {
                (RunStatus::Succeeded, 0, None)
            } else {
                (
                    RunStatus::Failed,
                    code,
                    Some(format!("adapter exited with code {code}")),
                )
            }
        }
        PumpEnd::Invalid(message) => {
            let _ = adapter.stop(STOP_GRACE).await;
            (RunStatus::Failed, 1, Some(message))
        }
        PumpEnd::Cancelled => {
            let _ = adapter.stop(STOP_GRACE).await;
            (
                RunStatus::Cancelled,
                130,
                Some("cancelled by the user".to_owned()),
            )
        }
    };
    heartbeat.abort();
    revoke_adapter_token(&conn.url, &created.token).await;
    // The last of the adapter's screen output reaches the terminal before it is restored.
    if let Some(host) = host {
        host.finish().await;
    }
    let finish = FinishRun {
        status,
        exit_code: Some(exit_code),
        error: error.clone(),
    };
    reporter
        .finish(&run_id, finish)
        .await
        .map_err(|e| LocalRunError::Invalid(e.to_string()))?;
    let summary = reporter
        .close(req.drain_timeout, |left| {
            eprintln!("wujie: delivering run events… {left} left");
        })
        .await
        .map_err(|e| LocalRunError::Invalid(e.to_string()))?;
    // The deliverer records the run as failed on the server too (see `counting_refusals`).
    let (status, exit_code, error) = if summary.failed > 0 && status == RunStatus::Succeeded {
        (RunStatus::Failed, 1, Some(refused_error(summary.failed)))
    } else {
        (status, exit_code, error)
    };
    Ok(RunOutcome {
        run_id,
        issue_key: issue.key,
        status,
        exit_code,
        error,
        summary,
    })
}

/// Read the adapter's stdout to its end and until the adapter exited, recording every event
/// and passing the user's input through. An invalid line ends reading at once; a stop signal
/// asks the adapter's group to terminate (a second one, or the grace period, kills it) while
/// what it still prints is kept. Stdout held open by something the adapter started is read
/// only for a bounded time after the adapter exited ([`ExitWatch`]).
async fn pump(
    adapter: &mut Adapter,
    to_adapter: &AdapterStdin,
    forward_input: bool,
    reporter: &Reporter,
    target_id: &str,
) -> Result<PumpEnd, LocalRunError> {
    let mut events = StdoutEvents::take_from(adapter)?;
    let adapter = &*adapter;
    let mut life = ExitWatch::new(adapter);
    let (mut stdout_open, mut exited) = (true, false);
    let mut signals = StopSignals::install()?;
    // The user's stdin, unless the terminal host relays it.
    let mut from_user = forward_input.then(UserInput::spawn);
    let mut close = QuietClose::default();
    let mut cancelled = false;
    // Armed by the first stop signal.
    let kill_at = tokio::time::sleep(Duration::from_secs(365 * 24 * 3600));
    tokio::pin!(kill_at);
    let end = |cancelled: bool| {
        if cancelled {
            PumpEnd::Cancelled
        } else {
            PumpEnd::Eof
        }
    };
    loop {
        tokio::select! {
            read = events.next(), if stdout_open => {
                let Some(read) = read? else {
                    if exited {
                        return Ok(end(cancelled));
                    }
                    stdout_open = false;
                    continue;
                };
                close.on_output();
                let mut items = Vec::new();
                let mut invalid = None;
                for line in read.lines {
                    match line {
                        Ok(line) => {
                            for event in &line.events {
                                if let Event::HandoffReady { request_id, .. } = event {
                                    refuse_handoff(to_adapter, request_id).await;
                                }
                            }
                            items.extend(
                                items_for_line(target_id, line)
                                    .into_iter()
                                    .map(|i| (i, read.read_at_ms)),
                            );
                        }
                        Err(EventError {
                            kind: EventErrorKind::UnknownHandoffMode { request_id, .. },
                            ..
                        }) => refuse_handoff(to_adapter, &request_id).await,
                        Err(e) => {
                            invalid = Some(e.to_string());
                            break;
                        }
                    }
                }
                reporter
                    .record(target_id, items)
                    .await
                    .map_err(|e| LocalRunError::Invalid(e.to_string()))?;
                // After a cancel, nothing the adapter's descendants print delays the end.
                if !cancelled {
                    life.on_output();
                }
                if let Some(message) = invalid {
                    return Ok(PumpEnd::Invalid(message));
                }
            }
            input = next_input(&mut from_user), if from_user.is_some() => match input {
                Some(bytes) => to_adapter.send(bytes).await,
                // End of the user's input closes the adapter's stdin too.
                None => {
                    from_user = None;
                    close.arm();
                }
            },
            () = close.due(), if close.is_armed() => to_adapter.close().await,
            () = signals.recv() => {
                if cancelled {
                    adapter.signal(Signal::SIGKILL);
                } else {
                    cancelled = true;
                    adapter.signal(Signal::SIGTERM);
                    kill_at.as_mut().reset(tokio::time::Instant::now() + STOP_GRACE);
                }
            }
            () = &mut kill_at, if cancelled => adapter.signal(Signal::SIGKILL),
            change = life.next(adapter) => match change {
                AdapterLife::Exited if !stdout_open => return Ok(end(cancelled)),
                AdapterLife::Exited => exited = true,
                AdapterLife::StdoutAbandoned => {
                    eprintln!("wujie: {STDOUT_ABANDONED}");
                    return Ok(end(cancelled));
                }
            },
        }
    }
}

/// A run is already bound to its issue: a plan handoff has nothing to create.
async fn refuse_handoff(to_adapter: &AdapterStdin, request_id: &str) {
    let decision = HandoffDecision {
        request_id: request_id.to_owned(),
        accepted: false,
        mode: None,
        issue_id: None,
        issue_key: None,
        run_id: None,
        error: Some(
            "plan handoff is only available in `wujie discuss`; this run already belongs to an issue"
                .to_owned(),
        ),
    };
    to_adapter.send_flushed(decision.encode_frame()).await;
}

/// Keep the run from being declared stale by the server's sweeper (the outbox needs none: the
/// target's lock says the reporter is alive).
fn spawn_heartbeat(client: wujie_client::Client, run_id: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(30));
        loop {
            tick.tick().await;
            let _ = client.heartbeat(&run_id).await;
        }
    })
}
