//! `wujie discuss -- PROVIDER [ARGS...]`: plan with a v2 provider before an issue exists, then
//! promote the conversation into an issue in place, keeping the agent's context.
//!
//! The adapter reports into a discussion (only user input, questions, plans and finals become
//! entries; the server filters). A native `handoff_ready` is confirmed (`--confirm`), the issue
//! and run are created through the promotion state machine, the reporter switches to the run,
//! and exactly one `handoff_decision` frame answers the adapter on its stdin.
//!
//! For `interactive_pty` providers the terminal host relays the user's terminal and draws the
//! cards: `/wujiecreateissue` from its menu goes through the same pending-promotion path as a
//! native handoff (without a decision frame: the adapter never asked). On that card "Back to
//! the discussion" closes it; "Cancel" ends the session like Ctrl+C on a native card.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wujie_delivery::reporter::{CloseSummary, Reporter, ReporterNotice, TargetRef};
use wujie_host::{AdapterStdin, HostEvent, InlineCard, TerminalHost};
use wujie_protocol::api::{
    CreateDiscussion, Discussion, DiscussionStatus, FinishRun, PromoteDiscussion, RunStatus,
};
use wujie_protocol::control::HandoffDecision;
use wujie_protocol::event::{Event, EventError, EventErrorKind, HandoffMode, MessageKind};
use wujie_protocol::manifest::ProtocolVersion;
use wujie_protocol::promotion::IssueDraft;
use wujie_store::outbox::{NewTarget, Outbox, SpoolMark, TargetKind, TargetLock};

use crate::adapter_session::{AdapterSession, Ending, Handled, SessionFlow};
use crate::code_changes::CodeWatch;
use crate::connection::Connection;
use crate::error::LocalRunError;
use crate::events::items_for_line;
use crate::promotion;
use crate::registry::{AdapterCommand, Provider};
use crate::run::own_run_target;
use crate::session::{Binding, adapter_env, host_event, revoke_adapter_token, spawn_spec};
use crate::spool::{self, ReadLines, Spool};
use crate::start_retry::{START_PATIENCE, StartRetry, new_start_key};
use crate::supervisor::SpawnSpec;
use wujie_term::text::{Layout, terminal_safe};
use wujie_term::{CREATE_ISSUE, CardChoice, IssueCard};

/// Why a handoff is refused once the user's input ended.
const INPUT_ENDED: &str = "the input ended, so nothing can confirm; pass --confirm accept";

/// Between a cancelling decision frame and SIGTERM: time for the adapter to read the frame.
const DECISION_READ_PAUSE: Duration = Duration::from_millis(200);

/// How long `/wujiecreateissue` waits for the reply on screen to be reported before it shows
/// the card without it (and says so).
const TURN_REPORT_WAIT: Duration = Duration::from_secs(2);

/// Where `/wujiecreateissue` stands with the turn on screen: the card must hold the reply the
/// user saw, yet an agent's log may report a reply only once the next prompt shows that it
/// ended its turn (Gemini CLI's does).
enum CardWait {
    /// No card asked for, or the card needs nothing more.
    Idle,
    /// The last prompt's reply is not reported yet: the card opens once it is, or when this
    /// deadline passes.
    ForTurn(std::pin::Pin<Box<tokio::time::Sleep>>),
    /// The deadline passed without the reply; the card opens now, saying so.
    GaveUp,
}

/// How a native handoff is confirmed when no terminal card is available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmMode {
    /// Ask on the terminal; without a terminal the answer is "no".
    Ask,
    Accept,
    Reject,
}

#[derive(Debug, Clone)]
pub struct DiscussRequest {
    pub provider_arg: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub resume: Option<String>,
    pub confirm: ConfirmMode,
    pub stdin_is_terminal: bool,
    pub drain_timeout: Duration,
}

#[derive(Debug)]
pub struct PromotedRun {
    pub issue_key: String,
    pub run_id: String,
    pub status: RunStatus,
    /// The provider's arguments that resume the agent's own session, which holds the
    /// discussion and the work so far; `None` when the provider cannot say.
    pub resume_args: Option<Vec<String>>,
}

#[derive(Debug)]
pub struct DiscussOutcome {
    pub discussion_id: String,
    pub provider: String,
    pub resumed: bool,
    pub promoted: Option<PromotedRun>,
    pub cancelled: bool,
    pub exit_code: i32,
    pub summary: CloseSummary,
    /// The adapter did not start (it exited 127 or 2 having said nothing) and the new
    /// discussion it would have held was deleted.
    pub did_not_start: bool,
}

/// Where a `wujie discuss` lands: a new discussion, or an open one being resumed. Its
/// requests are retried while the server is unavailable (see `start_retry`).
async fn find_or_create(
    conn: &Connection,
    provider: &Provider,
    req: &DiscussRequest,
    retry: &mut StartRetry,
) -> Result<(Discussion, String, bool), LocalRunError> {
    let existing = match &req.resume {
        Some(id) => Some(
            retry
                .call(&format!("cannot read discussion {id}"), || {
                    conn.client.get_discussion(id)
                })
                .await?,
        ),
        None => {
            let mut found = None;
            for arg in req
                .args
                .iter()
                .filter(|a| !a.starts_with('-') && !a.is_empty())
            {
                let hits = retry
                    .call(
                        &format!("cannot look up the discussions of session {arg}"),
                        || {
                            conn.client
                                .find_discussions_by_native_session(&provider.name, arg)
                        },
                    )
                    .await?;
                if let Some(d) = hits.into_iter().next() {
                    found = Some(d);
                    break;
                }
            }
            found
        }
    };
    match existing {
        Some(d) if d.status == DiscussionStatus::Promoted => {
            Err(LocalRunError::DiscussionPromoted {
                issue_key: d.issue_key.clone().unwrap_or_default(),
                id: d.id,
                provider: d.provider,
            })
        }
        Some(d) => {
            if d.provider != provider.name {
                return Err(LocalRunError::DiscussionProvider {
                    id: d.id,
                    provider: d.provider,
                    asked: provider.name.clone(),
                });
            }
            // Sent again under the same key, the request revokes the token the first one
            // minted, whose answer was lost.
            let start_key = new_start_key();
            let token = retry
                .call(
                    &format!("cannot get a token for discussion {}", d.id),
                    || conn.client.discussion_token_once(&d.id, &start_key),
                )
                .await?;
            Ok((d, token, true))
        }
        None => {
            let create = CreateDiscussion {
                provider: provider.name.clone(),
                cwd: req.cwd.to_string_lossy().into_owned(),
            };
            let start_key = new_start_key();
            let created = retry
                .call("cannot create a discussion", || {
                    conn.client.create_discussion_once(&create, &start_key)
                })
                .await?;
            Ok((created.discussion, created.token, false))
        }
    }
}

/// Refuse v1 providers with the seed's answer.
pub fn require_v2(provider: &Provider) -> Result<(), LocalRunError> {
    if provider.manifest.protocol == ProtocolVersion::V2 {
        return Ok(());
    }
    Err(LocalRunError::IssueFirstProvider(provider.name.clone()))
}

/// A promotion waiting for the user's answer.
struct Pending {
    /// The adapter's native request, answered with a decision frame; `None` for
    /// `/wujiecreateissue`, which the adapter does not know about.
    handoff: Option<(String, HandoffMode)>,
    discussion_id: String,
    /// What the card shows is what this creates.
    request: PromoteDiscussion,
}

pub async fn discuss(
    conn: &Connection,
    outbox: Outbox,
    provider: &Provider,
    command: AdapterCommand,
    req: DiscussRequest,
    notice: Arc<dyn ReporterNotice>,
) -> Result<DiscussOutcome, LocalRunError> {
    require_v2(provider)?;
    provider.check_start(&req.args)?;
    let mut retry = StartRetry::new(START_PATIENCE);
    let (discussion, token, resumed) = find_or_create(conn, provider, &req, &mut retry).await?;
    // Resumed by its id, the discussion goes on in the agent session it recorded last, so the
    // agent has the earlier turns too.
    let mut req = req;
    if req.resume.is_some()
        && let Some(native) = discussion.native_session_ids.last()
        && let Some(args) = provider.resume_args(&req.args, native)
    {
        req.args = args;
    }
    let workspace = retry
        .call("cannot read the workspace", || conn.client.workspace())
        .await?;
    let spec = discussion_spawn_spec(
        conn,
        provider,
        &command,
        &req,
        &workspace.id,
        &discussion.id,
        &token,
    );
    // Held until this function returns: while it is, no sync takes the discussion over.
    let _owner = add_discussion_target(&outbox, conn, &discussion.id).await?;
    let target = TargetRef {
        id: discussion.id.clone(),
        kind: TargetKind::Discussion,
    };
    let reporter = Reporter::start(outbox.clone(), conn.client.clone(), target.clone(), notice);
    let (spool, spool_file) =
        Spool::create(&outbox, &discussion.id, reporter.spool_committed()).await?;
    let (session, host) = match AdapterSession::spawn(&spec, provider, true, spool_file) {
        Ok(started) => started,
        Err(e) => {
            spool.end().await;
            return Err(e);
        }
    };
    let mut flow = Flow {
        conn,
        outbox: &outbox,
        reporter: &reporter,
        provider,
        req: &req,
        target,
        to_adapter: session.stdin(),
        host,
        pending: None,
        inline_card: None,
        typed: String::new(),
        promoted: None,
        promoted_owner: None,
        attached_owner: None,
        may_attach: !resumed,
        abandoned: None,
        discussion_id: discussion.id.clone(),
        input_ended: false,
        turn_open: false,
        card_wait: CardWait::Idle,
        native_session: None,
        code: None,
    };
    let ending = session.run(&mut flow).await?;
    revoke_adapter_token(&conn.client.replicas_in_order(), &token).await;
    flow.finish_host().await;
    // The end snapshot of the promoted run's code, recorded before the run's end.
    if let Some(code) = flow.code.take() {
        code.finish().await;
    }
    let resume_args = flow
        .native_session
        .take()
        .and_then(|native| provider.resume_args(&req.args, &native));
    reporter.flush().await.map_err(LocalRunError::reporter(
        "cannot record the adapter's events",
    ))?;
    // Every line the session handled is committed now. The spool goes before the promoted
    // run's end is recorded, as in `wujie run`: its lines went to that run after the
    // promotion, and a delivered run is forgotten only when no spool of it is left.
    spool.end().await;
    let promoted =
        finish_promoted_run(&reporter, flow.promoted.take(), &ending, resume_args).await?;
    // (the discussion this session started with, the one it continued instead)
    let attached = flow
        .abandoned
        .take()
        .map(|a| (a, flow.discussion_id.clone()));
    let mut progress = wujie_process::stderr::Progress::new();
    let summary = reporter
        .close(req.drain_timeout, |left| {
            progress.show(format_args!(
                "wujie: delivering discussion events… {left} left"
            ));
        })
        .await
        .map_err(LocalRunError::reporter(
            "cannot deliver the discussion's events",
        ))?;
    progress.done();
    let did_not_start = !resumed
        && attached.is_none()
        && promoted.is_none()
        && did_not_start(&ending)
        && delete_unstarted(conn, &discussion.id).await;
    let (discussion_id, resumed) =
        settle_discussions(conn, &outbox, &summary, discussion.id, attached, resumed).await;
    Ok(DiscussOutcome {
        discussion_id,
        provider: provider.name.clone(),
        resumed,
        promoted,
        cancelled: ending.status == RunStatus::Cancelled,
        did_not_start,
        exit_code: ending.exit_code,
        summary,
    })
}

/// Whether the adapter ended as one that never started: its agent missing (127, as a shell
/// reports a command not found) or its arguments refused (2, a usage error).
fn did_not_start(ending: &Ending) -> bool {
    matches!(ending.exit_code, 127 | 2)
}

/// Deletes the discussion a session that never started created, if it recorded nothing (the
/// server refuses to delete one that did); whether it is gone.
async fn delete_unstarted(conn: &Connection, id: &str) -> bool {
    match conn.client.delete_empty_discussion(id).await {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!("discussion {id} stays: {e}");
            false
        }
    }
}

/// How to start the adapter for the discussion `discussion_id`.
fn discussion_spawn_spec(
    conn: &Connection,
    provider: &Provider,
    command: &AdapterCommand,
    req: &DiscussRequest,
    workspace_id: &str,
    discussion_id: &str,
    token: &str,
) -> SpawnSpec {
    let binding = Binding {
        session_id: Some(discussion_id.to_owned()),
        ..Binding::default()
    };
    let env = adapter_env(
        &binding,
        workspace_id,
        &conn.client,
        token,
        provider,
        &req.provider_arg,
        &req.args,
    );
    spawn_spec(command, &req.args, &req.cwd, env)
}

/// Report discussion `id` from this process. A discussion taken over from a process that died
/// (resumed, or continued by this session) first gets what that process's spool held, so that
/// its lines come before this session's.
async fn add_discussion_target(
    outbox: &Outbox,
    conn: &Connection,
    id: &str,
) -> Result<TargetLock, LocalRunError> {
    let owner = outbox
        .add_target(&NewTarget {
            id,
            kind: TargetKind::Discussion,
            server_url: &conn.server_label,
            label: "discussion",
            reporter_pid: std::process::id(),
        })
        .await
        .map_err(LocalRunError::outbox(format!(
            "cannot record discussion {id} in the outbox"
        )))?;
    spool::recover(outbox, id).await?;
    Ok(owner)
}

/// The run a promotion created ends with the session.
async fn finish_promoted_run(
    reporter: &Reporter,
    promoted: Option<(String, String)>,
    ending: &Ending,
    resume_args: Option<Vec<String>>,
) -> Result<Option<PromotedRun>, LocalRunError> {
    let Some((issue_key, run_id)) = promoted else {
        return Ok(None);
    };
    let finish = FinishRun {
        status: ending.status,
        exit_code: Some(ending.exit_code),
        error: ending.error.clone(),
    };
    reporter
        .finish(&run_id, finish)
        .await
        .map_err(LocalRunError::reporter("cannot record the end of the run"))?;
    Ok(Some(PromotedRun {
        issue_key,
        run_id,
        status: ending.status,
        resume_args,
    }))
}

/// Once delivered, the session's discussions leave the outbox (a discussion has no end to
/// record), and the one it abandoned for the one it continued (`attached`) is deleted if it
/// stayed empty. Returns the discussion the session ended in, and whether it existed before.
async fn settle_discussions(
    conn: &Connection,
    outbox: &Outbox,
    summary: &CloseSummary,
    started: String,
    attached: Option<(String, String)>,
    resumed: bool,
) -> (String, bool) {
    if summary.pending == 0 {
        let _ = outbox.finish_delivered(&started).await;
        if let Some((_, continued)) = &attached {
            let _ = outbox.finish_delivered(continued).await;
        }
    }
    let Some((abandoned, continued)) = attached else {
        return (started, resumed);
    };
    // Whatever it recorded before the session id was delivered to it (usually nothing); only
    // an empty discussion is deleted.
    if let Err(e) = conn.client.delete_empty_discussion(&abandoned).await {
        tracing::debug!("discussion {abandoned} stays: {e}");
    }
    (continued, true)
}

/// `wujie discuss`'s part of the session.
struct Flow<'a> {
    conn: &'a Connection,
    outbox: &'a Outbox,
    reporter: &'a Reporter,
    provider: &'a Provider,
    req: &'a DiscussRequest,
    /// Where events go now: the discussion, then the run once promoted.
    target: TargetRef,
    to_adapter: AdapterStdin,
    /// The terminal host when the adapter is on a PTY; it draws the menu and the cards.
    host: Option<TerminalHost>,
    /// A promotion waiting for the user's answer on the terminal.
    pending: Option<Pending>,
    /// The card for `pending` when the adapter is on pipes and the user at a terminal.
    inline_card: Option<InlineCard>,
    /// The answer typed so far to the plain prompt.
    typed: String,
    /// (issue key, run id) once promoted.
    promoted: Option<(String, String)>,
    /// The promoted run's target lock, held until the discussion's flow ends.
    promoted_owner: Option<TargetLock>,
    /// The target lock of the discussion this session continues (see `attach`).
    attached_owner: Option<TargetLock>,
    /// A new discussion may still turn out to continue an existing one (see `attach`).
    may_attach: bool,
    /// The discussion this session started with, once it attached to an existing one.
    abandoned: Option<String>,
    /// The discussion this session reports into (until a promotion, then its origin).
    discussion_id: String,
    /// The user's input (on pipes) ended: nothing can confirm a handoff any more.
    input_ended: bool,
    /// A user prompt was reported and nothing that ends its turn after it yet.
    turn_open: bool,
    card_wait: CardWait,
    /// The agent's own session, as the adapter reported it last.
    native_session: Option<String>,
    /// The code of the promoted run, from the promotion on (`None` before it, or outside a
    /// git work tree): told when a turn ends, for a snapshot, as `wujie run` is.
    code: Option<CodeWatch>,
}

impl SessionFlow for Flow<'_> {
    async fn on_lines(
        &mut self,
        read: ReadLines,
        stopping: bool,
    ) -> Result<Option<String>, LocalRunError> {
        let mut items = Vec::new();
        for line in read.lines {
            let line = match line {
                Ok(line) => line,
                Err(EventError {
                    kind: EventErrorKind::UnknownHandoffMode { request_id, mode },
                    line_no,
                }) => {
                    self.record(std::mem::take(&mut items), read.marks.after(line_no))
                        .await?;
                    let error = format!(
                        "unknown handoff mode {mode:?}: use current_context or native_clear"
                    );
                    self.refuse(&request_id, None, error).await;
                    continue;
                }
                Err(e) => {
                    // It ends the session: the lines after it are not handled.
                    self.record(items, read.marks.after(e.line_no - 1)).await?;
                    self.cancel_pending("the adapter printed an invalid line")
                        .await;
                    self.say(e.to_string()).await;
                    return Ok(Some(e.to_string()));
                }
            };
            for event in &line.events {
                if !matches!(event, Event::Session { .. } | Event::HandoffReady { .. }) {
                    continue;
                }
                // Everything before a request is recorded where it belongs first; the lines from
                // this one on go where the request sends them (a discussion this session
                // continues, the run of a promotion), also when read again from the spool.
                let before = read.marks.after(line.line_no - 1);
                self.record(std::mem::take(&mut items), before.clone())
                    .await?;
                self.on_request(event, stopping).await?;
                self.record(Vec::new(), before).await?;
            }
            self.follow_turn(&line.events);
            let at = read.read_at_ms;
            items.extend(
                items_for_line(&self.target.id, line)
                    .into_iter()
                    .map(|i| (i, at)),
            );
        }
        self.record(items, read.marks.all()).await?;
        if matches!(self.card_wait, CardWait::ForTurn(_)) && !self.turn_open {
            self.card_wait = CardWait::Idle;
            self.show_create_card().await;
        }
        Ok(None)
    }

    async fn on_input(&mut self, bytes: Vec<u8>) -> Result<Handled, LocalRunError> {
        if self.pending.is_none() {
            return Ok(Handled::Forward(bytes));
        }
        let choice = match &mut self.inline_card {
            Some(card) => card.input(&bytes),
            None => typed_answer(&mut self.typed, &bytes),
        };
        match choice {
            Some(choice) if self.decide(choice).await? => Ok(Handled::Stop),
            _ => Ok(Handled::Kept),
        }
    }

    /// No one is left to confirm a handoff: one waiting is answered "no" now, a later one like
    /// any unconfirmable one. The adapter's stdin closes once its output was quiet for a
    /// moment, so a request it printed just before is still answered first.
    async fn on_input_end(&mut self) {
        self.input_ended = true;
        self.cancel_pending(INPUT_ENDED).await;
    }

    /// The host's next event; a `/wujiecreateissue` that waited in vain for the turn on
    /// screen comes back as one once the wait is over.
    async fn host_event(&mut self) -> HostEvent {
        let CardWait::ForTurn(deadline) = &mut self.card_wait else {
            return host_event(&mut self.host).await;
        };
        tokio::select! {
            event = host_event(&mut self.host) => event,
            () = deadline.as_mut() => {
                self.card_wait = CardWait::GaveUp;
                HostEvent::Command(CREATE_ISSUE.to_owned())
            }
        }
    }

    async fn on_host_event(&mut self, event: HostEvent) -> Result<Handled, LocalRunError> {
        match event {
            HostEvent::Command(command) if command == CREATE_ISSUE => {
                Ok(self.on_create_issue().await)
            }
            HostEvent::Command(_) => Ok(Handled::Kept),
            HostEvent::Card(choice) if self.decide(choice).await? => Ok(Handled::Stop),
            HostEvent::Card(_) => Ok(Handled::Kept),
        }
    }

    /// The decision goes out before the adapter is told to stop.
    async fn before_stop(&mut self) {
        self.cancel_pending("cancelled by the user").await;
    }

    /// A message for the user: at once on a plain terminal; while the terminal host owns the
    /// screen, as a notice in its overlay (writing into the adapter's screen would break it;
    /// without room there, after the session).
    async fn say(&mut self, message: String) {
        match &self.host {
            Some(host) => host.notice(message).await,
            None => wujie_process::stderr_line!("wujie: {message}"),
        }
    }
}

impl Flow<'_> {
    /// The adapter's requests among its events: a native session id (see `attach`) and a
    /// handoff (refused once the session is stopping).
    async fn on_request(&mut self, event: &Event, stopping: bool) -> Result<(), LocalRunError> {
        match event {
            Event::Session { session_id } => {
                self.native_session = Some(session_id.clone());
                self.attach(session_id).await
            }
            Event::HandoffReady { request_id, mode } if stopping => {
                let error = "cancelled by the user".to_owned();
                self.refuse(request_id, Some(*mode), error).await;
                Ok(())
            }
            Event::HandoffReady { request_id, mode } => self.on_handoff(request_id, *mode).await,
            _ => Ok(()),
        }
    }

    /// The last of the adapter's screen output reaches the terminal before it is restored.
    /// Notices the host had no room for are printed now; the others were seen once already.
    async fn finish_host(&mut self) {
        if let Some(host) = self.host.take() {
            for notice in host.finish().await {
                wujie_process::stderr_line!("wujie: {notice}");
            }
        }
    }

    /// A native resume the arguments do not spell out as a separate word (`--resume=ID`,
    /// `--continue`) shows only in the adapter's `session` event. When an open discussion of
    /// this provider already recorded that native id, this session continues it: later events
    /// go there, and the new discussion, if it stayed empty, is deleted at the end.
    async fn attach(&mut self, native: &str) -> Result<(), LocalRunError> {
        if !std::mem::take(&mut self.may_attach) || self.target.kind != TargetKind::Discussion {
            return Ok(());
        }
        let hits = match self
            .conn
            .client
            .find_discussions_by_native_session(&self.provider.name, native)
            .await
        {
            Ok(hits) => hits,
            Err(e) => {
                tracing::debug!("cannot look the native session up: {e}");
                return Ok(());
            }
        };
        let Some(existing) = hits
            .into_iter()
            .find(|d| d.id != self.target.id && d.status == DiscussionStatus::Open)
        else {
            return Ok(());
        };
        // Held, like the others, until the discussion's flow ends.
        self.attached_owner =
            Some(add_discussion_target(self.outbox, self.conn, &existing.id).await?);
        let target = TargetRef {
            id: existing.id.clone(),
            kind: TargetKind::Discussion,
        };
        self.reporter.add_target(target.clone());
        self.abandoned = Some(std::mem::replace(&mut self.target, target).id);
        self.discussion_id = existing.id.clone();
        self.say(format!(
            "native session {native} continues discussion {}",
            existing.id
        ))
        .await;
        Ok(())
    }

    /// Record items for the current target, with how far into the spool every line is
    /// handled once they are committed.
    async fn record(
        &self,
        items: Vec<(wujie_protocol::api::IngestItem, i64)>,
        handled: SpoolMark,
    ) -> Result<(), LocalRunError> {
        self.reporter
            .record_spooled(&self.target.id, items, handled)
            .await
            .map_err(LocalRunError::reporter(
                "cannot record the adapter's events",
            ))
    }

    async fn send_decision(&self, decision: HandoffDecision) {
        self.to_adapter.send_flushed(decision.encode_frame()).await;
    }

    async fn refuse(&mut self, request_id: &str, mode: Option<HandoffMode>, error: String) {
        self.say(format!("handoff {request_id:?} refused: {error}"))
            .await;
        self.send_decision(HandoffDecision {
            request_id: request_id.to_owned(),
            accepted: false,
            mode,
            issue_id: None,
            issue_key: None,
            run_id: None,
            error: Some(error),
        })
        .await;
    }

    /// Answer a waiting handoff with "no" and give the adapter a moment to read it before the
    /// caller signals it.
    async fn cancel_pending(&mut self, why: &str) {
        self.inline_card = None;
        if let Some((request_id, mode)) = self.pending.take().and_then(|p| p.handoff) {
            self.refuse(&request_id, Some(mode), why.to_owned()).await;
            tokio::time::sleep(DECISION_READ_PAUSE).await;
        }
    }

    /// Whether the turn on screen is still to be reported, from a line's events.
    fn follow_turn(&mut self, events: &[Event]) {
        if self.target.kind != TargetKind::Discussion {
            // The promoted run's turns: each one's end is a snapshot of the code.
            let finals = events
                .iter()
                .filter(|e| matches!(e, Event::Message(m) if m.kind == MessageKind::Final));
            if let Some(code) = &self.code {
                finals.for_each(|_| code.turn_ended());
            }
            return;
        }
        for event in events {
            if let Event::Message(message) = event {
                match message.kind {
                    MessageKind::UserInput => self.turn_open = true,
                    // What ends a turn: the answer, a question back to the user, the plan
                    // (the card's content), or an error.
                    MessageKind::Final
                    | MessageKind::Question
                    | MessageKind::Plan
                    | MessageKind::Error => self.turn_open = false,
                    _ => {}
                }
            }
        }
    }

    /// `/wujiecreateissue` from the menu: show the card for the discussion so far, once the
    /// reply to the last prompt is in it. The menu opened from the agent's input line, so
    /// the turn on screen has ended: the adapter is told, and the card waits (at most
    /// [`TURN_REPORT_WAIT`]) for the reply it held back.
    async fn on_create_issue(&mut self) -> Handled {
        if let Some((key, _)) = &self.promoted {
            let message = format!("this discussion is already issue {key}");
            self.say(message).await;
            return Handled::Kept;
        }
        if self.pending.is_some() {
            return Handled::Kept;
        }
        match std::mem::replace(&mut self.card_wait, CardWait::Idle) {
            CardWait::ForTurn(deadline) => {
                self.card_wait = CardWait::ForTurn(deadline);
                Handled::Kept
            }
            CardWait::GaveUp => {
                self.show_create_card().await;
                // After the card: the terminal host shows a notice once the card is closed.
                let waited = TURN_REPORT_WAIT.as_secs();
                self.say(format!(
                    "the agent's reply to the last prompt was not reported within {waited} s; the card held the discussion without it"
                ))
                .await;
                Handled::Kept
            }
            CardWait::Idle if self.turn_open => {
                self.card_wait = CardWait::ForTurn(Box::pin(tokio::time::sleep(TURN_REPORT_WAIT)));
                Handled::UserAtInput
            }
            CardWait::Idle => {
                self.show_create_card().await;
                Handled::Kept
            }
        }
    }

    /// The `/wujiecreateissue` card for the discussion as delivered.
    async fn show_create_card(&mut self) {
        match self.delivered_discussion().await {
            Ok(discussion) => self.ask(self.pending(None, &discussion)).await,
            Err(error) => {
                self.say(format!("could not prepare the issue: {error}"))
                    .await
            }
        }
    }

    /// Put the pending promotion in front of the user: the card in the terminal host's overlay,
    /// the card where the output ends when the adapter is on pipes and the user at a terminal,
    /// else the plain prompt.
    async fn ask(&mut self, pending: Pending) {
        let (title, description) = (&pending.request.title, &pending.request.description);
        let card = match pending.handoff {
            None => IssueCard::create_issue(title, description),
            Some((_, mode)) => {
                IssueCard::native_handoff(title, description, mode == HandoffMode::CurrentContext)
            }
        };
        match &self.host {
            Some(host) => host.show_card(card).await,
            // The card needs raw mode; a terminal that refuses it gets the plain prompt.
            None => match InlineCard::open(card) {
                Ok(card) => self.inline_card = Some(card),
                Err(e) => {
                    tracing::debug!("no raw mode for the card ({e}); asking plainly");
                    print_card(&pending.request, pending.handoff.as_ref().map(|(_, m)| *m));
                }
            },
        }
        self.pending = Some(pending);
    }

    /// The user's answer to the pending promotion. Returns true when the session ends
    /// (cancel): the caller stops the adapter.
    async fn decide(&mut self, choice: CardChoice) -> Result<bool, LocalRunError> {
        // The terminal gets its own mode back before anything else is printed.
        self.inline_card = None;
        match choice {
            CardChoice::Create => {
                if let Some(pending) = self.pending.take() {
                    self.accept(pending).await?;
                }
                Ok(false)
            }
            CardChoice::BackToDiscussion => {
                self.pending = None;
                Ok(false)
            }
            // The `/wujiecreateissue` card can always go back to the discussion: cancelling
            // it (Cancel, Ctrl+C) only closes it. Only cancelling a native handoff ends the session.
            CardChoice::Cancel if self.pending.as_ref().is_some_and(|p| p.handoff.is_none()) => {
                self.pending = None;
                Ok(false)
            }
            CardChoice::Cancel => {
                self.cancel_pending("cancelled by the user").await;
                self.pending = None;
                Ok(true)
            }
        }
    }

    async fn on_handoff(
        &mut self,
        request_id: &str,
        mode: HandoffMode,
    ) -> Result<(), LocalRunError> {
        if !self.provider.manifest.capabilities.native_plan_handoff {
            let error = format!(
                "provider {:?} did not declare capabilities.native_plan_handoff; use /wujiecreateissue or `wujie discussion promote`",
                self.provider.name
            );
            self.refuse(request_id, Some(mode), error).await;
            return Ok(());
        }
        if self.pending.is_some() {
            let error = "another issue promotion is waiting for confirmation".to_owned();
            self.refuse(request_id, Some(mode), error).await;
            return Ok(());
        }
        if let Some((key, _)) = &self.promoted {
            let error = format!("this discussion is already issue {key}");
            self.refuse(request_id, Some(mode), error).await;
            return Ok(());
        }
        let discussion = match self.delivered_discussion().await {
            Ok(d) => d,
            Err(error) => {
                self.refuse(request_id, Some(mode), error).await;
                return Ok(());
            }
        };
        let pending = self.pending(Some((request_id.to_owned(), mode)), &discussion);
        match self.req.confirm {
            ConfirmMode::Accept => self.accept(pending).await,
            ConfirmMode::Reject => {
                self.refuse(
                    request_id,
                    Some(mode),
                    "declined (--confirm reject)".to_owned(),
                )
                .await;
                Ok(())
            }
            ConfirmMode::Ask if !self.req.stdin_is_terminal && self.host.is_none() => {
                self.refuse(
                    request_id,
                    Some(mode),
                    "no terminal to confirm; pass --confirm accept".to_owned(),
                )
                .await;
                Ok(())
            }
            ConfirmMode::Ask if self.input_ended => {
                self.refuse(request_id, Some(mode), INPUT_ENDED.to_owned())
                    .await;
                Ok(())
            }
            ConfirmMode::Ask => {
                self.ask(pending).await;
                Ok(())
            }
        }
    }

    /// The discussion as the server has it once every entry read so far was delivered.
    async fn delivered_discussion(&self) -> Result<Discussion, String> {
        let unreachable = || "the Wujie server could not be reached".to_owned();
        self.reporter.flush().await.map_err(|_| unreachable())?;
        if !self
            .reporter
            .wait_delivered(&self.target.id, Duration::from_secs(10))
            .await
        {
            return Err(unreachable());
        }
        self.conn
            .client
            .get_discussion(&self.target.id)
            .await
            .map_err(|e| promotion::redacted(&e))
    }

    /// The promotion of `discussion` as it stands, for the user to confirm: the agent goes on
    /// with the work on the new issue, here.
    fn pending(&self, handoff: Option<(String, HandoffMode)>, discussion: &Discussion) -> Pending {
        let cwd = self.req.cwd.to_string_lossy();
        Pending {
            handoff,
            discussion_id: discussion.id.clone(),
            request: IssueDraft::from_discussion(discussion).request(discussion, &cwd, true),
        }
    }

    async fn accept(&mut self, pending: Pending) -> Result<(), LocalRunError> {
        let promoted = self
            .conn
            .client
            .promote_discussion(&pending.discussion_id, &pending.request)
            .await;
        match promoted {
            Err(e) => {
                let error = promotion::redacted(&e);
                match pending.handoff {
                    Some((request_id, mode)) => self.refuse(&request_id, Some(mode), error).await,
                    None => {
                        self.say(format!("could not create the issue: {error}"))
                            .await
                    }
                }
                Ok(())
            }
            Ok(promoted) => {
                let run_id = promoted.run.id.clone();
                let (owner, target) =
                    own_run_target(self.outbox, self.conn, &run_id, &promoted.issue.key).await?;
                self.reporter.add_target(target.clone());
                // What the agent changes from here on is the run's, measured from now.
                if let Ok(recorder) = self.reporter.recorder() {
                    self.code = CodeWatch::start(&self.req.cwd, None, &run_id, recorder).await;
                }
                self.promoted_owner = Some(owner);
                self.target = target;
                self.say(format!(
                    "created {} “{}”; the agent continues there (run {run_id}).",
                    promoted.issue.key, promoted.issue.title
                ))
                .await;
                if let Some((request_id, mode)) = pending.handoff {
                    self.send_decision(HandoffDecision {
                        request_id,
                        accepted: true,
                        mode: Some(mode),
                        issue_id: Some(promoted.issue.id.clone()),
                        issue_key: Some(promoted.issue.key.clone()),
                        run_id: Some(run_id.clone()),
                        error: None,
                    })
                    .await;
                }
                if let Some(host) = &self.host {
                    host.promoted(promoted.issue.key.clone()).await;
                }
                self.promoted = Some((promoted.issue.key, run_id));
                Ok(())
            }
        }
    }
}

/// The answer to the plain prompt, once a whole line was typed: Enter, `y` or `create`
/// create; anything else cancels.
fn typed_answer(answer: &mut String, bytes: &[u8]) -> Option<CardChoice> {
    answer.push_str(&String::from_utf8_lossy(bytes));
    let end = answer.find('\n')?;
    let line = answer[..end].trim().to_lowercase();
    answer.clear();
    Some(
        if matches!(line.as_str(), "" | "y" | "yes" | "c" | "create") {
            CardChoice::Create
        } else {
            CardChoice::Cancel
        },
    )
}

/// The plain confirmation prompt, for a terminal that cannot be switched to raw mode.
fn print_card(draft: &PromoteDiscussion, mode: Option<HandoffMode>) {
    let preview: Vec<&str> = draft.description.lines().take(8).collect();
    let mode = mode.map_or("/wujiecreateissue", HandoffMode::as_str);
    wujie_process::stderr_line!("\n┌ Create an issue from this discussion ({mode})");
    wujie_process::stderr_line!("│ {}", terminal_safe(&draft.title, Layout::Inline));
    for line in preview {
        wujie_process::stderr_line!("│   {}", terminal_safe(line, Layout::Inline));
    }
    wujie_process::stderr_line!(
        "└ Press Enter (or y) to create it and continue in this context; n or Ctrl+C cancels."
    );
}
