//! `wujie run ISSUE -- PROVIDER [ARGS...]`: create a local run on the issue, start the adapter,
//! and sync everything it prints into the run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wujie_delivery::reporter::{CloseSummary, Reporter, ReporterNotice, TargetRef, refused_error};
use wujie_host::AdapterStdin;
use wujie_protocol::api::{CreateRun, FinishRun, IssueDetail, RunStatus};
use wujie_protocol::control::HandoffDecision;
use wujie_protocol::event::{
    Event, EventError, EventErrorKind, MessageKind, RUN_WARNING_KEY_PREFIX,
};
use wujie_store::outbox::{NewTarget, Outbox, TargetKind, TargetLock};

use crate::adapter_session::{AdapterSession, Ending, SessionFlow};
use crate::cancel_watch::cancel_asked;
use crate::code_changes::CodeWatch;
use crate::connection::Connection;
use crate::error::LocalRunError;
use crate::events::items_for_line;
use crate::registry::{AdapterCommand, Provider};
use crate::session::{self, Binding, adapter_env, revoke_adapter_token};
use crate::spool::{ReadLines, Spool, SpoolFile};
use crate::start_retry::{START_PATIENCE, StartRetry, new_start_key};
use crate::supervisor::SpawnSpec;

#[derive(Debug, Clone)]
pub struct RunRequest {
    pub issue: String,
    /// The provider name as typed by the user.
    pub provider_arg: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The issue worktree `cwd` is, when the run has one to itself (`wujie run --worktree`).
    pub worktree: Option<PathBuf>,
    /// The job attempt the run is for, when a worker started it.
    pub job: Option<wujie_protocol::jobs::JobAttempt>,
    /// Give up draining the outbox after this long without progress.
    pub drain_timeout: Duration,
    /// The profile's state directory: the provider keeps what must outlive a run under it
    /// (see [`crate::session::provider_state_dir`]).
    pub state_dir: PathBuf,
}

#[derive(Debug)]
pub struct RunOutcome {
    pub run_id: String,
    pub issue_key: String,
    pub status: RunStatus,
    /// What `wujie run` exits with: the adapter's code, 130 after a cancel (Ctrl+C, or asked
    /// from anywhere: then `status` is `Cancelled` and `error` names who), 1 on a protocol
    /// error or when the server refused events that were read.
    pub exit_code: i32,
    pub error: Option<String>,
    pub summary: CloseSummary,
    /// What the adapter said went wrong with the run itself rather than the agent (a session
    /// log it could not find), for the run's summary: said once while the agent ran, where
    /// its screen may have covered it.
    pub warnings: Vec<String>,
}

/// A run created on the server, with its reporter.
struct OpenRun {
    issue: IssueDetail,
    workspace_id: String,
    run_id: String,
    token: String,
    reporter: Reporter,
    /// What the adapter prints, on its way to the outbox.
    spool: Spool,
    /// Held while the run is reported: no sync takes it over meanwhile.
    _owner: TargetLock,
}

pub async fn run(
    conn: &Connection,
    outbox: Outbox,
    provider: &Provider,
    command: AdapterCommand,
    req: RunRequest,
    notice: Arc<dyn ReporterNotice>,
) -> Result<RunOutcome, LocalRunError> {
    provider.check_start(&req.args)?;
    let (open, spool_file) = open_run(conn, outbox, provider, &req, notice).await?;
    // Before the adapter starts, so that what it changes is measured from here.
    let code = match open.reporter.recorder() {
        Ok(recorder) => {
            CodeWatch::start(&req.cwd, req.worktree.as_deref(), &open.run_id, recorder).await
        }
        Err(_) => None,
    };
    let spec = spawn_spec(&open, conn, provider, &command, &req);
    let (mut session, host) = match AdapterSession::spawn(&spec, provider, false, spool_file) {
        Ok(started) => started,
        Err(e) => {
            if let Some(code) = code {
                code.finish().await;
            }
            let finish = FinishRun {
                status: RunStatus::Failed,
                exit_code: None,
                error: Some(wujie_protocol::error_text::with_causes(&e)),
            };
            // The spool first, as in `close_run`.
            open.spool.end().await;
            let _ = open.reporter.finish(&open.run_id, finish).await;
            let _ = open.reporter.close(req.drain_timeout, |_| {}).await;
            return Err(e);
        }
    };
    let heartbeat = spawn_heartbeat(conn.client.clone(), open.run_id.clone());
    // A cancel asked from anywhere stops the adapter as Ctrl+C does, terminal or not.
    session.stop_when(cancel_asked(
        conn.client.clone(),
        open.run_id.clone(),
        open.issue.key.clone(),
    ));
    let mut flow = RunFlow {
        reporter: &open.reporter,
        target_id: &open.run_id,
        to_adapter: session.stdin(),
        code: code.as_ref(),
        warnings: Vec::new(),
    };
    let ending = session.run(&mut flow).await?;
    let warnings = flow.warnings;
    heartbeat.abort();
    // The end snapshot is recorded before the run's end, which the server takes as the last.
    if let Some(code) = code {
        code.finish().await;
    }
    revoke_adapter_token(&conn.client.replicas_in_order(), &open.token).await;
    // The last of the adapter's screen output reaches the terminal before it is restored.
    if let Some(host) = host {
        host.finish().await;
    }
    close_run(open, ending, req.drain_timeout, warnings).await
}

async fn open_run(
    conn: &Connection,
    outbox: Outbox,
    provider: &Provider,
    req: &RunRequest,
    notice: Arc<dyn ReporterNotice>,
) -> Result<(OpenRun, SpoolFile), LocalRunError> {
    // A start storm (a team's laptops at once) or a replica restarting must not fail the run
    // before it began: every request of the start is retried for a while (see `start_retry`),
    // the create under one start key, so it creates one run however often it is sent.
    let mut retry = StartRetry::new(START_PATIENCE);
    let issue = retry
        .call(&format!("cannot read issue {}", req.issue), || {
            conn.client.get_issue(&req.issue)
        })
        .await?;
    let workspace = retry
        .call("cannot read the workspace", || conn.client.workspace())
        .await?;
    let create = CreateRun {
        provider: provider.name.clone(),
        cwd: req.cwd.to_string_lossy().into_owned(),
        job: req.job.clone(),
    };
    let start_key = new_start_key();
    let created = retry
        .call(&format!("cannot create a run on {}", issue.key), || {
            conn.client.create_run_once(&issue.key, &create, &start_key)
        })
        .await?;
    let run_id = created.run.id.clone();
    let (owner, target) = own_run_target(&outbox, conn, &run_id, &issue.key).await?;
    let reporter = Reporter::start(outbox.clone(), conn.client.clone(), target, notice);
    let (spool, spool_file) = Spool::create(&outbox, &run_id, reporter.spool_committed()).await?;
    let open = OpenRun {
        issue,
        workspace_id: workspace.id,
        run_id,
        token: created.token,
        reporter,
        spool,
        _owner: owner,
    };
    Ok((open, spool_file))
}

fn spawn_spec(
    open: &OpenRun,
    conn: &Connection,
    provider: &Provider,
    command: &AdapterCommand,
    req: &RunRequest,
) -> SpawnSpec {
    let binding = Binding {
        run_id: Some(open.run_id.clone()),
        issue_id: Some(open.issue.id.clone()),
        session_id: None,
    };
    let mut env = adapter_env(
        &binding,
        &open.workspace_id,
        &conn.client,
        &open.token,
        provider,
        &req.provider_arg,
        &req.args,
    );
    env.push((
        session::PROVIDER_STATE_DIR_VAR.to_owned(),
        session::provider_state_dir(&req.state_dir, &provider.name)
            .to_string_lossy()
            .into_owned(),
    ));
    session::spawn_spec(command, &req.args, &req.cwd, env)
}

/// Record the run's end and deliver what is left of its events.
async fn close_run(
    open: OpenRun,
    ending: Ending,
    drain_timeout: Duration,
    warnings: Vec<String>,
) -> Result<RunOutcome, LocalRunError> {
    let finish = FinishRun {
        status: ending.status,
        exit_code: Some(ending.exit_code),
        error: ending.error.clone(),
    };
    open.reporter
        .flush()
        .await
        .map_err(LocalRunError::reporter(
            "cannot record the adapter's events",
        ))?;
    // Every line the session handled is committed now. The spool goes before the end is
    // recorded: once recorded, the end may be delivered at once, and the outbox forgets a
    // delivered run only when no spool of it is left (else it stayed listed, done, for ever).
    open.spool.end().await;
    open.reporter
        .finish(&open.run_id, finish)
        .await
        .map_err(LocalRunError::reporter("cannot record the end of the run"))?;
    let mut progress = wujie_process::stderr::Progress::new();
    let summary = open
        .reporter
        .close(drain_timeout, |left| {
            progress.show(format_args!("wujie: delivering run events… {left} left"));
        })
        .await
        .map_err(LocalRunError::reporter("cannot deliver the run's events"))?;
    progress.done();
    // The deliverer records the run as failed on the server too (see `counting_refusals`).
    let ending = if summary.failed > 0 && ending.status == RunStatus::Succeeded {
        Ending {
            status: RunStatus::Failed,
            exit_code: 1,
            error: Some(refused_error(summary.failed)),
        }
    } else {
        ending
    };
    Ok(RunOutcome {
        run_id: open.run_id,
        issue_key: open.issue.key,
        status: ending.status,
        exit_code: ending.exit_code,
        error: ending.error,
        summary,
        warnings,
    })
}

/// How many of the adapter's warnings a run's summary repeats, and how much of each.
const MAX_WARNINGS: usize = 3;
const WARNING_CHARS: usize = 1_000;

/// `wujie run`'s part of the session: every event goes to the run; a handoff is refused.
struct RunFlow<'a> {
    reporter: &'a Reporter,
    target_id: &'a str,
    to_adapter: AdapterStdin,
    /// Told when a turn ends, for a snapshot of the code; `None` outside a git work tree.
    code: Option<&'a CodeWatch>,
    /// See [`RunOutcome::warnings`].
    warnings: Vec<String>,
}

impl SessionFlow for RunFlow<'_> {
    async fn on_lines(
        &mut self,
        read: ReadLines,
        _stopping: bool,
    ) -> Result<Option<String>, LocalRunError> {
        let mut items = Vec::new();
        let mut invalid = None;
        for line in read.lines {
            let line = match line {
                Ok(line) => line,
                Err(EventError {
                    kind: EventErrorKind::UnknownHandoffMode { request_id, .. },
                    ..
                }) => {
                    refuse_handoff(&self.to_adapter, &request_id).await;
                    continue;
                }
                Err(e) => {
                    invalid = Some(e);
                    break;
                }
            };
            for event in &line.events {
                match event {
                    Event::HandoffReady { request_id, .. } => {
                        refuse_handoff(&self.to_adapter, request_id).await;
                    }
                    Event::Message(m) if m.kind == MessageKind::Final => {
                        if let Some(code) = self.code {
                            code.turn_ended();
                        }
                    }
                    // The built-in adapters' own errors, keyed apart from the agent's.
                    Event::Message(m)
                        if m.kind == MessageKind::Error
                            && m.source_key.starts_with(RUN_WARNING_KEY_PREFIX) =>
                    {
                        // A few short ones: they are said again, not kept.
                        if let Some(text) = &m.content
                            && self.warnings.len() < MAX_WARNINGS
                        {
                            let text: String = text.chars().take(WARNING_CHARS).collect();
                            if !self.warnings.contains(&text) {
                                self.warnings.push(text);
                            }
                        }
                    }
                    _ => {}
                }
            }
            let at = read.read_at_ms;
            items.extend(
                items_for_line(self.target_id, line)
                    .into_iter()
                    .map(|i| (i, at)),
            );
        }
        // An invalid line ends the session: the lines after it are not handled.
        let handled = match &invalid {
            Some(e) => read.marks.after(e.line_no - 1),
            None => read.marks.all(),
        };
        self.reporter
            .record_spooled(self.target_id, items, handled)
            .await
            .map_err(LocalRunError::reporter(
                "cannot record the adapter's events",
            ))?;
        Ok(invalid.map(|e| e.to_string()))
    }

    async fn say(&mut self, message: String) {
        wujie_process::stderr_line!("wujie: {message}");
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
/// target's lock says the reporter is alive). The first one is due a period after the start:
/// the run was created with a heartbeat, and a start storm need not carry one more request.
fn spawn_heartbeat(client: wujie_client::Client, run_id: String) -> tokio::task::JoinHandle<()> {
    const PERIOD: Duration = Duration::from_secs(30);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + PERIOD, PERIOD);
        loop {
            tick.tick().await;
            let _ = client.heartbeat(&run_id).await;
        }
    })
}

/// Records run `run_id` of issue `issue_key` in the outbox as this process's (what it reads
/// waits there for delivery), and the reporter's target for it.
pub(crate) async fn own_run_target(
    outbox: &Outbox,
    conn: &Connection,
    run_id: &str,
    issue_key: &str,
) -> Result<(TargetLock, TargetRef), LocalRunError> {
    let owner = outbox
        .add_target(&NewTarget {
            id: run_id,
            kind: TargetKind::Run,
            server_url: &conn.server_label,
            label: issue_key,
            reporter_pid: std::process::id(),
        })
        .await
        .map_err(LocalRunError::outbox(format!(
            "cannot record run {run_id} in the outbox"
        )))?;
    let target = TargetRef {
        id: run_id.to_owned(),
        kind: TargetKind::Run,
    };
    Ok((owner, target))
}
