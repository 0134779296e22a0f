//! `wujie local-run sync` / `status`: deliver what earlier runs left in the outbox.
//!
//! A target whose reporter is still alive — however long it has been stopped — is left to it:
//! the reporter holds the target's lock (see `wujie_store::outbox`). A target whose lock nobody
//! holds is taken over at once; what its reporter had taken out of the adapter's stdout but not
//! committed is committed first, from its spool (see `crate::spool`). If its reporter died
//! without recording how the run ended (SIGKILL, power loss, closed terminal), the run is
//! finished as failed with "reporter stopped" — what is known — after all its events are
//! delivered.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use wujie_delivery::reporter::{Reporter, ReporterNotice, TargetRef};
use wujie_protocol::api::{FinishRun, RunStatus};
use wujie_store::REPORTER_STOPPED;
use wujie_store::outbox::{Outbox, TargetKind, TargetState};

use crate::connection::Connection;
use crate::error::LocalRunError;
use crate::profile::Profile;
use crate::spool;

#[derive(Debug, Clone, Serialize)]
pub struct TargetStatus {
    pub id: String,
    pub kind: &'static str,
    pub label: String,
    pub server: String,
    pub pending: i64,
    pub failed: i64,
    /// `active` while a live `wujie` is delivering it, else `waiting`.
    pub state: &'static str,
    pub finish_pending: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct SyncedTarget {
    pub id: String,
    pub label: String,
    pub delivered: u64,
    pub pending: i64,
    pub failed: i64,
    pub finished: bool,
    pub error: Option<String>,
}

fn kind_str(kind: TargetKind) -> &'static str {
    match kind {
        TargetKind::Run => "run",
        TargetKind::Discussion => "discussion",
    }
}

pub async fn status(outbox: &Outbox) -> Result<Vec<TargetStatus>, LocalRunError> {
    let targets = outbox
        .targets()
        .await
        .map_err(LocalRunError::outbox("cannot list the outbox's targets"))?;
    Ok(targets
        .iter()
        .map(|t| TargetStatus {
            id: t.id.clone(),
            kind: kind_str(t.kind),
            label: t.label.clone(),
            server: t.server_url.clone(),
            pending: t.pending,
            failed: t.failed,
            state: if outbox.is_owned(&t.id) {
                "active"
            } else {
                "waiting"
            },
            finish_pending: t.kind == TargetKind::Run && !t.finish_sent,
        })
        .collect())
}

/// Deliver every target not owned by a live reporter. `progress(label, left)` is called as
/// delivery goes on.
pub async fn sync(
    profile: &Profile,
    outbox: &Outbox,
    notice: Arc<dyn ReporterNotice>,
    idle_timeout: Duration,
    progress: &mut (dyn FnMut(&str, i64) + Send),
) -> Result<Vec<SyncedTarget>, LocalRunError> {
    spool::remove_orphans(outbox).await;
    let targets = outbox
        .targets()
        .await
        .map_err(LocalRunError::outbox("cannot list the outbox's targets"))?;
    let mut out = Vec::new();
    let mut connections: Vec<(String, Connection)> = Vec::new();
    for listed in targets {
        if !has_work(&listed) && !delivered_run(&listed) {
            continue;
        }
        // Held until this target is done: a live reporter keeps it, and two syncs never
        // deliver one target at the same time.
        let Some(_owner) = outbox
            .claim(&listed.id)
            .map_err(LocalRunError::outbox(format!(
                "cannot claim {}",
                listed.label
            )))?
        else {
            continue;
        };
        // What the previous owner left, read again now that nobody else can change it; what
        // it had taken out of the adapter's stdout but not committed, committed now.
        if listed.spooled
            && let Err(e) = spool::recover(outbox, &listed.id).await
        {
            out.push(not_synced(&listed, e));
            continue;
        }
        let Some(t) = outbox
            .target(&listed.id)
            .await
            .map_err(LocalRunError::outbox(format!(
                "cannot read {}",
                listed.label
            )))?
        else {
            outbox.forget_lock_file(&listed.id);
            continue;
        };
        if !has_work(&t) {
            // Nothing left to send: a discussion once its spool gave nothing (it has no end
            // to send), a run whose end was delivered (its reporter died before it forgot the
            // run, or an earlier version left it). Forgotten, unless refused rows need a look.
            if t.kind == TargetKind::Discussion || delivered_run(&t) {
                let _ = outbox.finish_delivered(&t.id).await;
            }
            continue;
        }
        let conn = match connection_for(&mut connections, profile, &t.server_url).await {
            Ok(conn) => conn,
            Err(e) => {
                out.push(not_synced(&t, e));
                continue;
            }
        };
        out.push(deliver(outbox, conn, t, notice.clone(), idle_timeout, progress).await?);
    }
    for (_, c) in connections {
        c.close().await;
    }
    Ok(out)
}

/// Whether a target has anything left to do: rows to deliver, a run's end to send, or a spool
/// to read (its spool is read while it is claimed, before it is looked at again).
fn has_work(t: &TargetState) -> bool {
    let needs_finish = t.kind == TargetKind::Run && !t.finish_sent;
    t.pending > 0 || needs_finish || t.spooled
}

/// A run whose end was delivered and none of whose rows was refused: the outbox keeps it only
/// while a spool still holds lines for it (refused rows keep a run for the user to look at).
fn delivered_run(t: &TargetState) -> bool {
    t.kind == TargetKind::Run && t.finish_sent && t.failed == 0
}

/// A target this sync could not deliver, and why.
fn not_synced(t: &TargetState, error: LocalRunError) -> SyncedTarget {
    SyncedTarget {
        id: t.id.clone(),
        label: t.label.clone(),
        delivered: 0,
        pending: t.pending,
        failed: t.failed,
        finished: false,
        error: Some(wujie_protocol::error_text::with_causes(&error)),
    }
}

/// The connection to the server a target was recorded for, made once per sync.
async fn connection_for<'c>(
    connections: &'c mut Vec<(String, Connection)>,
    profile: &Profile,
    label: &str,
) -> Result<&'c Connection, LocalRunError> {
    if let Some(i) = connections.iter().position(|(l, _)| l == label) {
        return Ok(&connections[i].1);
    }
    let conn = Connection::for_label(profile, label).await?;
    connections.push((label.to_owned(), conn));
    Ok(&connections.last().expect("just pushed").1)
}

/// Deliver one claimed target: its end first when the reporter that owned it never sent it.
async fn deliver(
    outbox: &Outbox,
    conn: &Connection,
    t: TargetState,
    notice: Arc<dyn ReporterNotice>,
    idle_timeout: Duration,
    progress: &mut (dyn FnMut(&str, i64) + Send),
) -> Result<SyncedTarget, LocalRunError> {
    let needs_finish = t.kind == TargetKind::Run && !t.finish_sent;
    let target = TargetRef {
        id: t.id.clone(),
        kind: t.kind,
    };
    let reporter = Reporter::start(outbox.clone(), conn.client.clone(), target, notice);
    if needs_finish {
        let finish = t
            .finish_json
            .as_deref()
            .and_then(|j| serde_json::from_str::<FinishRun>(j).ok())
            .unwrap_or(FinishRun {
                status: RunStatus::Failed,
                exit_code: None,
                error: Some(REPORTER_STOPPED.to_owned()),
            });
        reporter
            .finish(&t.id, finish)
            .await
            .map_err(LocalRunError::reporter(format!(
                "cannot record the end of {}",
                t.label
            )))?;
    }
    let label = t.label.clone();
    let summary = reporter
        .close(idle_timeout, |left| progress(&label, left))
        .await
        .map_err(LocalRunError::reporter(format!(
            "cannot deliver the events of {}",
            t.label
        )))?;
    if t.kind == TargetKind::Discussion && summary.pending == 0 {
        let _ = outbox.finish_delivered(&t.id).await;
    }
    Ok(SyncedTarget {
        id: t.id,
        label: t.label,
        delivered: summary.stats.delivered,
        pending: summary.pending,
        failed: summary.failed,
        finished: needs_finish && summary.finish_delivered,
        error: None,
    })
}
