//! Connects commondev branches to the tracker: a branch opened with `issue` (which must exist)
//! reports each prompt, its tool calls, its reply or error, and what it changed in the code (a
//! snapshot of the work tree at the prompt and one at the reply) as a local run on that issue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use wujie_commondev::store::BranchRecord;
use wujie_commondev::{BranchObserver, IssueCheck};
use wujie_localrun::TurnStart;
use wujie_localrun::turns::{Turn, TurnOutcome, report_turn};
use wujie_protocol::error_text::with_causes;
use wujie_protocol::git::GitChanges;
use wujie_protocol::sidecar_tools::ToolCall;

use crate::context::Context;

/// Observer handed to `BranchSessions`: collects finished turns and reports them in the
/// background, so a slow or unreachable server never delays the agent.
pub struct IssueTurns {
    /// The turn under way per branch label.
    pending: Mutex<HashMap<String, PendingTurn>>,
    tx: Mutex<Option<mpsc::UnboundedSender<FinishedTurn>>>,
    profile: wujie_localrun::profile::Profile,
    server: Option<String>,
}

/// The task delivering turns; `finish` waits for what was queued.
pub struct TurnDelivery(JoinHandle<()>);

/// A turn under way: its prompt, its tool calls so far, and the code as it began.
struct PendingTurn {
    prompt: String,
    tool_calls: Vec<ToolCall>,
    code: Option<JoinHandle<Option<TurnStart>>>,
}

/// What a turn changed in the code, being read as it ended.
type CodeAtEnd = JoinHandle<Option<GitChanges>>;

/// A turn that ended, with what it changed in the code once that is read.
type FinishedTurn = (Turn, Option<CodeAtEnd>);

/// Reads the code as a turn begins (on the blocking pool: git never delays the prompt).
fn code_at_start(branch: &BranchRecord) -> Option<JoinHandle<Option<TurnStart>>> {
    // A remote branch's work tree is on another machine.
    if branch.runtime != "local" {
        return None;
    }
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    let workdir = branch.workdir.clone();
    let label = branch.label.clone();
    Some(runtime.spawn_blocking(move || {
        TurnStart::take(&workdir)
            .inspect_err(|e| {
                wujie_process::stderr_line!(
                    "wujie: cannot read the code as {label}'s turn begins; its report has no code \
                     changes: {}",
                    with_causes(e)
                );
            })
            .ok()
            .flatten()
    }))
}

/// Reads what the turn changed, as the work tree is now: started at once, so that the next
/// turn's work is not counted as this one's.
fn code_at_end(branch: &BranchRecord, start: JoinHandle<Option<TurnStart>>) -> Option<CodeAtEnd> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    let worktree = branch.worktree.as_ref().map(|w| w.display().to_string());
    let label = branch.label.clone();
    Some(runtime.spawn(async move {
        let start = start.await.ok()??;
        let read = tokio::task::spawn_blocking(move || start.changes_now(worktree)).await;
        read.ok()?
            .inspect_err(|e| {
                wujie_process::stderr_line!(
                    "wujie: cannot read what {label}'s turn changed in the code: {}",
                    with_causes(e)
                );
            })
            .ok()
    }))
}

impl IssueTurns {
    pub fn start(ctx: &Context) -> (Arc<IssueTurns>, TurnDelivery) {
        let (tx, mut rx) = mpsc::unbounded_channel::<FinishedTurn>();
        let profile = ctx.profile.clone();
        let server = ctx.server_flag.clone();
        let task = tokio::spawn(async move {
            let mut conn = None;
            while let Some((mut turn, code)) = rx.recv().await {
                if let Some(code) = code {
                    turn.code = code.await.ok().flatten();
                }
                if conn.is_none() {
                    match wujie_localrun::connection::Connection::open(
                        &profile,
                        server.as_deref(),
                        &crate::context::env_var,
                    )
                    .await
                    {
                        Ok(c) => conn = Some(c),
                        Err(e) => {
                            wujie_process::stderr_line!(
                                "wujie: cannot report the turn to {}: {}",
                                turn.issue,
                                crate::user_error::text(&e)
                            );
                            continue;
                        }
                    }
                }
                let Some(c) = &conn else { continue };
                if let Err(e) = report_turn(&c.client, &turn).await {
                    wujie_process::stderr_line!(
                        "wujie: cannot report the turn to {}: {}",
                        turn.issue,
                        crate::user_error::client_error(&e)
                    );
                }
            }
            if let Some(c) = conn {
                c.close().await;
            }
        });
        let observer = Arc::new(IssueTurns {
            pending: Mutex::new(HashMap::new()),
            tx: Mutex::new(Some(tx)),
            profile: ctx.profile.clone(),
            server: ctx.server_flag.clone(),
        });
        (observer, TurnDelivery(task))
    }

    /// Stop accepting turns (the delivery task ends once the queue is empty).
    pub fn close(&self) {
        self.tx.lock().expect("turns lock").take();
    }
}

impl TurnDelivery {
    pub async fn finish(self) {
        let _ = self.0.await;
    }
}

impl IssueTurns {
    fn finish_turn(&self, branch: &BranchRecord, outcome: TurnOutcome) {
        let Some(issue) = &branch.issue else { return };
        // A turn ends once: a late failure (the caller went away while the sidecar closed
        // after replying) finds nothing pending and reports nothing.
        let Some(pending) = self
            .pending
            .lock()
            .expect("turns lock")
            .remove(&branch.label)
        else {
            return;
        };
        let code = pending.code.and_then(|start| code_at_end(branch, start));
        let turn = Turn {
            issue: issue.clone(),
            agent_cli: branch.agent_cli.clone(),
            workdir: branch.workdir.to_string_lossy().into_owned(),
            label: branch.label.clone(),
            session_id: branch.session_id().to_owned(),
            prompt: pending.prompt,
            tool_calls: pending.tool_calls,
            outcome,
            code: None,
        };
        if let Some(tx) = self.tx.lock().expect("turns lock").as_ref() {
            let _ = tx.send((turn, code));
        }
    }
}

impl BranchObserver for IssueTurns {
    fn on_prompt(&self, branch: &BranchRecord, text: &str) {
        if branch.issue.is_some() {
            let pending = PendingTurn {
                prompt: text.to_owned(),
                tool_calls: Vec::new(),
                code: code_at_start(branch),
            };
            self.pending
                .lock()
                .expect("turns lock")
                .insert(branch.label.clone(), pending);
        }
    }

    fn on_tool_calls(&self, branch: &BranchRecord, calls: &[ToolCall]) {
        if let Some(pending) = self
            .pending
            .lock()
            .expect("turns lock")
            .get_mut(&branch.label)
        {
            pending.tool_calls.extend_from_slice(calls);
        }
    }

    fn on_reply(&self, branch: &BranchRecord, reply: &str) {
        self.finish_turn(branch, TurnOutcome::Replied(reply.to_owned()));
    }

    fn on_failure(&self, branch: &BranchRecord, error: &str) {
        self.finish_turn(branch, TurnOutcome::Failed(error.to_owned()));
    }

    fn check_issue<'a>(&'a self, issue: &'a str) -> IssueCheck<'a> {
        Box::pin(async move {
            let conn = wujie_localrun::connection::Connection::open(
                &self.profile,
                self.server.as_deref(),
                &crate::context::env_var,
            )
            .await
            .map_err(|e| {
                format!(
                    "the tracker could not be reached ({})",
                    crate::user_error::text(&e)
                )
            })?;
            let found = conn.client.get_issue(issue).await;
            conn.close().await;
            match found {
                Ok(_) => Ok(()),
                Err(wujie_client::ClientError::Status { status, .. }) if status.as_u16() == 404 => {
                    Err("no such issue on the tracker".to_owned())
                }
                Err(e) => Err(format!(
                    "the tracker could not be asked ({})",
                    crate::user_error::client_error(&e)
                )),
            }
        })
    }
}
