//! Asking for a run to be cancelled, from anywhere: the request is recorded on the run (who and
//! when) with an entry in the issue's activity log, and the run's reporter, which polls the
//! run's control state, stops the agent and records the end itself.

use wujie_protocol::api::{
    CancelRequest, FailureKind, IssueChange, RunCancel, RunControl, RunStatus,
};

use crate::activity;
use crate::rows::{issue_key, parse_failure_kind, parse_run_status, run_not_found};
use crate::text::{Text, stored_opt};
use crate::{Store, StoreError, time};

/// What cancelling reads of a run.
#[derive(sqlx::FromRow)]
struct CancelState {
    issue_id: String,
    issue_seq: i64,
    key_prefix: String,
    status: String,
    failure_kind: Option<String>,
    cancel_requested_at: Option<String>,
    cancel_requested_by: Option<Text>,
}

impl CancelState {
    fn request(&self) -> Option<CancelRequest> {
        self.cancel_requested_at.clone().map(|at| CancelRequest {
            by: self.cancel_requested_by.clone().map(String::from),
            at,
        })
    }
}

const CANCEL_STATE: &str = "SELECT r.issue_id, i.seq AS issue_seq, w.key_prefix, r.status, \
     r.failure_kind, r.cancel_requested_at, r.cancel_requested_by \
     FROM runs r JOIN issues i ON i.id = r.issue_id JOIN workspaces w ON w.id = i.workspace_id \
     WHERE r.id = $1";

impl Store {
    /// Asks for run `run_id` to be cancelled, for the user token this handle writes for
    /// ([`Store::written_by`]), whose name is recorded as who asked. Asking again while it
    /// runs changes nothing and answers the first request; a run that ended is a conflict. A run the
    /// stale-run rule failed may still have a reporter, which will hear of it.
    pub async fn cancel_run(&self, run_id: &str) -> Result<RunCancel, StoreError> {
        let mut w = self.write().await?;
        let state: CancelState = sqlx::query_as(CANCEL_STATE)
            .bind(run_id)
            .fetch_optional(&mut *w.tx)
            .await?
            .ok_or_else(|| run_not_found(run_id))?;
        let answer = |cancel: CancelRequest, already_requested: bool| RunCancel {
            run_id: run_id.to_owned(),
            issue_key: issue_key(&state.key_prefix, state.issue_seq),
            cancel,
            already_requested,
        };
        // An end is what the asker needs to know, also after an earlier request.
        let status = parse_run_status(&state.status)?;
        let stale = parse_failure_kind(state.failure_kind.as_deref())? == Some(FailureKind::Stale);
        if status != RunStatus::Running && !stale {
            return Err(StoreError::Conflict(format!(
                "run {run_id} already ended as {}; there is nothing left to cancel",
                status.as_str()
            )));
        }
        if let Some(earlier) = state.request() {
            return Ok(answer(earlier, true));
        }
        let by: Option<Text> = match w.author_token {
            Some(token) => {
                sqlx::query_scalar("SELECT name FROM tokens WHERE id = $1")
                    .bind(token)
                    .fetch_optional(&mut *w.tx)
                    .await?
            }
            None => None,
        };
        let by = by.map(String::from);
        let at = time::now();
        // On PostgreSQL another request may have asked meanwhile: the condition is checked
        // again on the row it updated, and the first request stays the one recorded.
        let asked = sqlx::query(
            "UPDATE runs SET cancel_requested_at = $1, cancel_requested_by = $2 \
             WHERE id = $3 AND cancel_requested_at IS NULL",
        )
        .bind(&at)
        .bind(stored_opt(by.as_deref()))
        .bind(run_id)
        .execute(&mut *w.tx)
        .await?;
        if asked.rows_affected() == 0 {
            let now: CancelState = sqlx::query_as(CANCEL_STATE)
                .bind(run_id)
                .fetch_one(&mut *w.tx)
                .await?;
            let earlier = now.request().ok_or_else(|| run_not_found(run_id))?;
            return Ok(answer(earlier, true));
        }
        let change = IssueChange::CancelRequested {
            run_id: run_id.to_owned(),
        };
        activity::record(
            &mut w.tx,
            &state.issue_id,
            &activity::user(),
            w.author_token,
            &change,
        )
        .await?;
        w.commit().await?;
        Ok(answer(CancelRequest { by, at }, false))
    }

    /// What run `run_id`'s reporter is asked to do: read only, by the run's key, cheap enough
    /// for every running reporter to ask every few seconds.
    pub async fn run_control(&self, run_id: &str) -> Result<RunControl, StoreError> {
        let row: Option<(Option<String>, Option<Text>)> = sqlx::query_as(
            "SELECT cancel_requested_at, cancel_requested_by FROM runs WHERE id = $1",
        )
        .bind(run_id)
        .fetch_optional(self.pool())
        .await?;
        let (at, by) = row.ok_or_else(|| run_not_found(run_id))?;
        Ok(RunControl {
            cancel: at.map(|at| CancelRequest {
                by: by.map(String::from),
                at,
            }),
        })
    }
}
