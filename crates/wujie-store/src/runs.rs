//! Local runs: creation (with their run-scoped token), heartbeats, finishing and the stale-run
//! rule.

use std::time::Duration;

use sqlx::AnyConnection;
use wujie_protocol::api::{
    Author, AuthorKind, CreateRun, CreatedRun, FailureKind, FinishRun, FinishedRun, IssueChange,
    IssueStatus, Run, RunStatus,
};

use crate::activity;
use crate::issues::resolve_issue;
use crate::rows::{
    RUNS_WITH_ISSUES, issue_key, load_run, parse_failure_kind, parse_run_status, run_not_found,
};
use crate::text::{Text, stored, stored_opt};
use crate::tokens::{TokenKind, insert_token, reissue_token};
use crate::{REPORTER_STOPPED, Store, StoreError, new_id, time};

/// Creates a running run on `issue_id` and its token inside the caller's transaction, for the
/// user token `token` (see [`activity::record`]), under the client's `start_key` if it gave one.
pub(crate) async fn insert_run(
    conn: &mut AnyConnection,
    issue_id: &str,
    req: &CreateRun,
    start_key: Option<&str>,
    token: Option<&str>,
) -> Result<CreatedRun, StoreError> {
    if req.provider.trim().is_empty() {
        return Err(StoreError::Invalid("a run needs a provider name".into()));
    }
    let id = new_id();
    let now = time::now();
    sqlx::query(
        "INSERT INTO runs (id, issue_id, provider, cwd, status, started_at, last_heartbeat, \
           start_key) VALUES ($1, $2, $3, $4, 'running', $5, $6, $7)",
    )
    .bind(&id)
    .bind(issue_id)
    .bind(stored(&req.provider))
    .bind(stored(&req.cwd))
    .bind(&now)
    .bind(&now)
    .bind(start_key)
    .execute(&mut *conn)
    .await?;
    if let Some(job) = &req.job {
        crate::jobs::link_run(conn, &id, issue_id, job).await?;
    }
    let started = IssueChange::RunStarted {
        run_id: id.clone(),
        provider: req.provider.clone(),
    };
    activity::record(conn, issue_id, &activity::user(), token, &started).await?;
    let in_progress =
        sqlx::query("UPDATE issues SET status = $1 WHERE id = $2 AND status = 'open'")
            .bind(IssueStatus::InProgress.as_str())
            .bind(issue_id)
            .execute(&mut *conn)
            .await?;
    if in_progress.rows_affected() == 1 {
        let status = IssueChange::Status {
            status: IssueStatus::InProgress,
        };
        activity::record(conn, issue_id, &activity::user(), token, &status).await?;
    }
    let (_, token) = insert_token(conn, TokenKind::Run, &format!("run {id}"), Some(&id)).await?;
    let run = load_run(conn, &id).await?;
    Ok(CreatedRun { run, token })
}

/// What `finish_run` finds recorded of a run.
#[derive(sqlx::FromRow)]
struct RecordedOutcome {
    status: String,
    exit_code: Option<i64>,
    error: Option<Text>,
    failure_kind: Option<String>,
    issue_id: String,
}

/// Records the outcome of run `run_id` on `issue_id`, and its activity entry, inside the
/// caller's transaction, for the user token `token` (see [`activity::record`]).
pub(crate) async fn record_end(
    conn: &mut AnyConnection,
    issue_id: &str,
    run_id: &str,
    req: &FinishRun,
    token: Option<&str>,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE runs SET status = $1, exit_code = $2, error = $3, failure_kind = NULL, \
           ended_at = $4 WHERE id = $5",
    )
    .bind(req.status.as_str())
    .bind(req.exit_code)
    .bind(stored_opt(req.error.as_deref()))
    .bind(time::now())
    .bind(run_id)
    .execute(&mut *conn)
    .await?;
    let finished = IssueChange::RunFinished {
        run_id: run_id.to_owned(),
        status: req.status,
        exit_code: req.exit_code,
        error: req.error.clone(),
    };
    let reporter = Author {
        kind: AuthorKind::Agent,
        run_id: Some(run_id.to_owned()),
    };
    activity::record(conn, issue_id, &reporter, token, &finished).await
}

impl Store {
    /// Starts a run on an issue and mints its run-scoped token (returned only here).
    pub async fn create_run(
        &self,
        issue_key_or_id: &str,
        req: &CreateRun,
    ) -> Result<CreatedRun, StoreError> {
        self.create_run_with(issue_key_or_id, req, None).await
    }

    /// [`Store::create_run`] once per `start_key`, a key the client chose for this start: asked
    /// again with the same key (the answer to the first request was lost), it returns the run
    /// the first request created, with a fresh run token (the first one, never seen by anyone,
    /// is revoked), and records nothing again.
    pub async fn create_run_once(
        &self,
        issue_key_or_id: &str,
        req: &CreateRun,
        start_key: &str,
    ) -> Result<CreatedRun, StoreError> {
        check_start_key(start_key)?;
        self.create_run_with(issue_key_or_id, req, Some(start_key))
            .await
    }

    async fn create_run_with(
        &self,
        issue_key_or_id: &str,
        req: &CreateRun,
        start_key: Option<&str>,
    ) -> Result<CreatedRun, StoreError> {
        let mut w = self.write().await?;
        let issue_id = resolve_issue(&mut w.tx, issue_key_or_id).await?;
        let started = match start_key {
            Some(key) => run_started_by(&mut w.tx, key, &issue_id).await?,
            None => None,
        };
        let created = match started {
            Some(run_id) => CreatedRun {
                token: reissue_token(&mut w.tx, TokenKind::Run, &run_id).await?,
                run: load_run(&mut w.tx, &run_id).await?,
            },
            None => insert_run(&mut w.tx, &issue_id, req, start_key, w.author_token).await?,
        };
        w.commit().await?;
        Ok(created)
    }

    /// A run with its usage and its latest messages (arrival order) up to
    /// [`crate::ANSWER_MESSAGE_BYTES`].
    pub async fn run(&self, run_id: &str) -> Result<Run, StoreError> {
        let mut conn = self.pool().acquire().await?;
        load_run(&mut conn, run_id).await
    }

    /// The issue a run is on: its id and key.
    pub async fn run_issue(&self, run_id: &str) -> Result<(String, String), StoreError> {
        let row: Option<(String, i64, String)> = sqlx::query_as(&format!(
            "SELECT r.issue_id, i.seq, w.key_prefix FROM {RUNS_WITH_ISSUES} WHERE r.id = $1"
        ))
        .bind(run_id)
        .fetch_optional(self.pool())
        .await?;
        let (issue_id, seq, prefix) = row.ok_or_else(|| run_not_found(run_id))?;
        Ok((issue_id, issue_key(&prefix, seq)))
    }

    /// Records that the run's reporter is alive. A run failed by the stale-run rule is running
    /// again: its reporter was only paused (e.g. a suspended laptop), not gone.
    pub async fn heartbeat(&self, run_id: &str) -> Result<(), StoreError> {
        // It records no activity, so it takes no activity lock: every running reporter sends
        // heartbeats, and queued there they would hold up the starts and comments that need
        // it. Its one row lock is all it waits for, so it cannot close a cycle of waits.
        let mut w = self.write_unserialized().await?;
        let done = sqlx::query(
            "UPDATE runs SET last_heartbeat = $1, \
               status = CASE WHEN failure_kind = $2 THEN 'running' ELSE status END, \
               ended_at = CASE WHEN failure_kind = $2 THEN NULL ELSE ended_at END, \
               error = CASE WHEN failure_kind = $2 THEN NULL ELSE error END, \
               failure_kind = CASE WHEN failure_kind = $2 THEN NULL ELSE failure_kind END \
             WHERE id = $3",
        )
        .bind(time::now())
        .bind(FailureKind::Stale.as_str())
        .bind(run_id)
        .execute(&mut *w.tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(run_not_found(run_id));
        }
        w.commit().await
    }

    /// Records a run's outcome. Allowed while running, and over a failure recorded by the
    /// stale-run rule (a late reporter knows the real outcome), which it replaces with an end
    /// whatever its error says. Finishing again with the same outcome is a no-op; with another
    /// one it is a conflict.
    pub async fn finish_run(
        &self,
        run_id: &str,
        req: &FinishRun,
    ) -> Result<FinishedRun, StoreError> {
        if req.status == RunStatus::Running {
            return Err(StoreError::Invalid(
                "a run cannot be finished with status running; use succeeded, failed or cancelled"
                    .into(),
            ));
        }
        let mut w = self.write().await?;
        let row: Option<RecordedOutcome> = sqlx::query_as(
            "SELECT status, exit_code, error, failure_kind, issue_id FROM runs WHERE id = $1",
        )
        .bind(run_id)
        .fetch_optional(&mut *w.tx)
        .await?;
        let RecordedOutcome {
            status,
            exit_code,
            error,
            failure_kind,
            issue_id,
        } = row.ok_or_else(|| run_not_found(run_id))?;
        let status = parse_run_status(&status)?;
        let stale = parse_failure_kind(failure_kind.as_deref())? == Some(FailureKind::Stale);
        if status == RunStatus::Running || stale {
            record_end(&mut w.tx, &issue_id, run_id, req, w.author_token).await?;
            if matches!(req.exit_code, Some(127 | 2)) {
                mark_if_not_started(&mut w.tx, run_id, &issue_id, w.author_token).await?;
            }
        } else if !(status == req.status
            && exit_code == req.exit_code.map(i64::from)
            && error.map(String::from) == req.error)
        {
            return Err(StoreError::Conflict(format!(
                "run {run_id} already finished as {}{}; a run's outcome is recorded once",
                status.as_str(),
                exit_code
                    .map(|c| format!(" (exit code {c})"))
                    .unwrap_or_default()
            )));
        }
        #[derive(sqlx::FromRow)]
        struct Ended {
            status: String,
            exit_code: Option<i64>,
            error: Option<Text>,
            ended_at: Option<String>,
        }
        let ended: Ended =
            sqlx::query_as("SELECT status, exit_code, error, ended_at FROM runs WHERE id = $1")
                .bind(run_id)
                .fetch_one(&mut *w.tx)
                .await?;
        w.commit().await?;
        Ok(FinishedRun {
            id: run_id.to_owned(),
            status: parse_run_status(&ended.status)?,
            exit_code: ended.exit_code.and_then(|c| i32::try_from(c).ok()),
            error: ended.error.map(String::from),
            ended_at: ended.ended_at,
        })
    }

    /// Fails runs still `running` whose last heartbeat (or start) is older than `older_than`,
    /// with error "reporter stopped" and failure kind [`FailureKind::Stale`]. Returns how many runs it failed. Several server
    /// processes may sweep at once and each run is still failed once, by one of them: the
    /// update's condition is checked again on a row another sweep is updating (after that one
    /// commits), so the second finds it no longer running and skips it; the activity entry
    /// goes with the update that failed the run.
    pub async fn mark_stale_runs(&self, older_than: Duration) -> Result<u64, StoreError> {
        let cutoff = time::before_now(older_than);
        let mut w = self.write().await?;
        let failed: Vec<(String, String)> = sqlx::query_as(
            "UPDATE runs SET status = 'failed', error = $1, failure_kind = $2, ended_at = $3 \
             WHERE status = 'running' AND COALESCE(last_heartbeat, started_at) < $4 \
             RETURNING id, issue_id",
        )
        .bind(REPORTER_STOPPED)
        .bind(FailureKind::Stale.as_str())
        .bind(time::now())
        .bind(cutoff)
        .fetch_all(&mut *w.tx)
        .await?;
        for (run_id, issue_id) in &failed {
            // The same change `finish_run` records.
            let finished = IssueChange::RunFinished {
                run_id: run_id.clone(),
                status: RunStatus::Failed,
                exit_code: None,
                error: Some(REPORTER_STOPPED.to_owned()),
            };
            let reporter = Author {
                kind: AuthorKind::Agent,
                run_id: Some(run_id.clone()),
            };
            activity::record(&mut w.tx, issue_id, &reporter, w.author_token, &finished).await?;
        }
        w.commit().await?;
        Ok(failed.len() as u64)
    }
}

/// A run that ended 127 (its agent could not be run) or 2 (its arguments were refused) having
/// recorded no message and no usage never started: it is marked so, which leaves it out of
/// the issue's runs, and an issue it made `in_progress` with no other run is open again.
async fn mark_if_not_started(
    conn: &mut AnyConnection,
    run_id: &str,
    issue_id: &str,
    token: Option<&str>,
) -> Result<(), StoreError> {
    let marked = sqlx::query(
        "UPDATE runs SET did_not_start = 1 WHERE id = $1 \
           AND NOT EXISTS (SELECT 1 FROM run_messages WHERE run_id = $2) \
           AND NOT EXISTS (SELECT 1 FROM run_usage WHERE run_id = $3)",
    )
    .bind(run_id)
    .bind(run_id)
    .bind(run_id)
    .execute(&mut *conn)
    .await?;
    if marked.rows_affected() == 0 {
        return Ok(());
    }
    let reopened = sqlx::query(
        "UPDATE issues SET status = 'open' WHERE id = $1 AND status = 'in_progress' \
           AND NOT EXISTS (SELECT 1 FROM runs WHERE issue_id = $2 AND did_not_start = 0)",
    )
    .bind(issue_id)
    .bind(issue_id)
    .execute(&mut *conn)
    .await?;
    if reopened.rows_affected() == 1 {
        let status = IssueChange::Status {
            status: IssueStatus::Open,
        };
        activity::record(conn, issue_id, &activity::user(), token, &status).await?;
    }
    Ok(())
}

/// Longest start key a client may choose (a UUID is 36 characters).
const MAX_START_KEY_LEN: usize = 200;

/// A start key (`Idempotency-Key`) names one start of a run or discussion: not empty, and short.
pub(crate) fn check_start_key(key: &str) -> Result<(), StoreError> {
    if key.trim().is_empty() || key.len() > MAX_START_KEY_LEN {
        return Err(StoreError::Invalid(format!(
            "an idempotency key must have 1 to {MAX_START_KEY_LEN} characters; send a new \
             UUID for every start"
        )));
    }
    Ok(())
}

/// The run an earlier request with `start_key` created, if any. The key names one start: on
/// another issue it is refused rather than taken for that issue's run.
async fn run_started_by(
    conn: &mut AnyConnection,
    start_key: &str,
    issue_id: &str,
) -> Result<Option<String>, StoreError> {
    let row: Option<(String, String)> =
        sqlx::query_as("SELECT id, issue_id FROM runs WHERE start_key = $1")
            .bind(start_key)
            .fetch_optional(&mut *conn)
            .await?;
    match row {
        Some((run_id, on)) if on == issue_id => Ok(Some(run_id)),
        Some((run_id, _)) => Err(StoreError::Conflict(format!(
            "the start key {start_key:?} already started run {run_id} on another issue; \
             use a new key for every start"
        ))),
        None => Ok(None),
    }
}
