//! Jobs: runs queued from the tracker and claimed by workers under a lease (see
//! [`wujie_protocol::jobs`]).
//!
//! A claim takes the oldest job the worker can run that is `queued`, or `running` with a lease
//! that ran out, and counts an attempt. On PostgreSQL, workers of many machines claim at once:
//! the candidate row is locked with `FOR UPDATE SKIP LOCKED`, so two claims never take the same
//! job and neither waits for the other. On SQLite the claim is one IMMEDIATE transaction (one
//! writer at a time). A claim that finds nothing never opens a write transaction: idle workers
//! ask every second, and on SQLite a write would queue behind every other writer.

use std::time::Duration;

use sqlx::AnyConnection;
use wujie_protocol::api::{Author, AuthorKind, IssueChange, RunStatus};
use wujie_protocol::jobs::{
    ClaimJob, ClaimedJob, CreateJob, FinishJob, Job, JobAttempt, JobStatus, MAX_JOB_ARG_BYTES,
    MAX_JOB_ARGS, MAX_LEASE_SECS, MAX_PROMPT_BYTES, MIN_LEASE_SECS, RenewLease,
};

use crate::dialect::Backend;
use crate::issues::resolve_issue;
use crate::rows::issue_key;
use crate::text::{Text, stored, stored_opt};
use crate::{REPORTER_STOPPED, Store, StoreError, activity, new_id, time};

/// Most jobs one listing returns.
pub const MAX_JOB_PAGE: u32 = 1000;

const JOB_COLUMNS: &str = "j.id, j.issue_id, i.seq AS issue_seq, w.key_prefix, j.provider, \
     j.args, j.prompt, j.worker_label, j.status, j.attempts, j.worker, j.lease_expires_at, \
     j.run_id, j.error, j.requested_by, j.rerun_of, j.created_at, j.updated_at";
const JOBS_WITH_ISSUES: &str =
    "jobs j JOIN issues i ON i.id = j.issue_id JOIN workspaces w ON w.id = i.workspace_id";

#[derive(sqlx::FromRow)]
struct JobRow {
    id: String,
    issue_id: String,
    issue_seq: i64,
    key_prefix: String,
    provider: Text,
    args: Text,
    prompt: Option<Text>,
    worker_label: Option<Text>,
    status: String,
    attempts: i64,
    worker: Option<Text>,
    lease_expires_at: Option<String>,
    run_id: Option<String>,
    error: Option<Text>,
    requested_by: Option<Text>,
    rerun_of: Option<String>,
    created_at: String,
    updated_at: String,
}

impl JobRow {
    fn into_job(self) -> Result<Job, StoreError> {
        let status = JobStatus::from_name(&self.status).ok_or_else(|| {
            StoreError::Invalid(format!(
                "unknown job status {:?} in the database",
                self.status
            ))
        })?;
        Ok(Job {
            id: self.id,
            issue_id: self.issue_id,
            issue_key: issue_key(&self.key_prefix, self.issue_seq),
            provider: self.provider.into(),
            args: serde_json::from_str(&String::from(self.args))?,
            prompt: self.prompt.map(String::from),
            worker_label: self.worker_label.map(String::from),
            status,
            attempts: u32::try_from(self.attempts).unwrap_or(0),
            worker: self.worker.map(String::from),
            lease_expires_at: self.lease_expires_at,
            run_id: self.run_id,
            error: self.error.map(String::from),
            requested_by: self.requested_by.map(String::from),
            rerun_of: self.rerun_of,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

/// Which jobs a listing returns, newest first.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// Only the jobs of this issue (key or id).
    pub issue: Option<String>,
    /// Only jobs in one of these statuses (all when empty).
    pub statuses: Vec<JobStatus>,
    /// At most this many (capped at [`MAX_JOB_PAGE`]).
    pub limit: u32,
}

fn job_not_found(id: &str) -> StoreError {
    StoreError::NotFound(format!("job {id} not found; `wujie jobs` lists the jobs"))
}

async fn load_job(conn: &mut AnyConnection, id: &str) -> Result<Job, StoreError> {
    let row: Option<JobRow> = sqlx::query_as(&format!(
        "SELECT {JOB_COLUMNS} FROM {JOBS_WITH_ISSUES} WHERE j.id = $1"
    ))
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    row.ok_or_else(|| job_not_found(id))?.into_job()
}

fn check_new_job(req: &CreateJob) -> Result<(), StoreError> {
    let provider = req.provider.trim();
    if provider.is_empty() || provider.len() > 128 {
        return Err(StoreError::Invalid(
            "a job needs a provider name (at most 128 bytes), e.g. pi".into(),
        ));
    }
    if req.args.len() > MAX_JOB_ARGS
        || req.args.iter().map(String::len).sum::<usize>() > MAX_JOB_ARG_BYTES
    {
        return Err(StoreError::Invalid(format!(
            "a job takes at most {MAX_JOB_ARGS} arguments of at most {} KiB in all",
            MAX_JOB_ARG_BYTES / 1024
        )));
    }
    if let Some(prompt) = &req.prompt {
        if prompt.trim().is_empty() {
            return Err(StoreError::Invalid(
                "the prompt is empty; leave it out to give the agent the issue's title and \
                 description"
                    .into(),
            ));
        }
        if prompt.len() > MAX_PROMPT_BYTES {
            return Err(StoreError::Invalid(format!(
                "the prompt is {} bytes; at most {MAX_PROMPT_BYTES} are allowed",
                prompt.len()
            )));
        }
    }
    if let Some(label) = &req.worker_label
        && (label.trim().is_empty() || label.len() > 128)
    {
        return Err(StoreError::Invalid(
            "a worker label is 1 to 128 bytes, e.g. gpu or build-box".into(),
        ));
    }
    Ok(())
}

fn check_lease(secs: u32) -> Result<(), StoreError> {
    if !(MIN_LEASE_SECS..=MAX_LEASE_SECS).contains(&secs) {
        return Err(StoreError::Invalid(format!(
            "a lease lasts {MIN_LEASE_SECS} to {MAX_LEASE_SECS} seconds, not {secs}"
        )));
    }
    Ok(())
}

/// `$first, $first+1, …` for `n` values.
fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The condition a claim's candidates meet, binding `$1` (now), then the providers, then the
/// labels.
fn claimable(req: &ClaimJob) -> String {
    let providers = placeholders(2, req.providers.len());
    let labels = if req.labels.is_empty() {
        "j.worker_label IS NULL".to_owned()
    } else {
        format!(
            "(j.worker_label IS NULL OR j.worker_label IN ({}))",
            placeholders(2 + req.providers.len(), req.labels.len())
        )
    };
    format!(
        "(j.status = 'queued' OR (j.status = 'running' AND j.lease_expires_at < $1)) \
         AND j.provider IN ({providers}) AND {labels}"
    )
}

/// The task for the agent when the job carries no prompt.
fn issue_task(key: &str, title: &str, description: &str) -> String {
    if description.trim().is_empty() {
        format!("{key}: {title}")
    } else {
        format!("{key}: {title}\n\n{description}")
    }
}

/// The attempt `attempt` of job `id`, checked to hold the lease still.
async fn current_attempt(
    conn: &mut AnyConnection,
    id: &str,
    attempt: u32,
) -> Result<Job, StoreError> {
    let job = load_job(conn, id).await?;
    holds_lease(&job, attempt)?;
    Ok(job)
}

/// Refuses `attempt` when it no longer holds `job`'s lease, saying who does or what became of it.
fn holds_lease(job: &Job, attempt: u32) -> Result<(), StoreError> {
    if job.status == JobStatus::Running && job.attempts == attempt {
        return Ok(());
    }
    let now = match job.status {
        JobStatus::Running => format!(
            "attempt {} runs it now{}",
            job.attempts,
            job.worker
                .as_deref()
                .map(|w| format!(" on {w}"))
                .unwrap_or_default()
        ),
        JobStatus::Queued => "it waits for a worker again".to_owned(),
        end => format!("it ended as {}", end.as_str()),
    };
    Err(StoreError::Conflict(format!(
        "attempt {attempt} of job {} no longer holds the job's lease: {now}",
        job.id
    )))
}

/// Links a new run to the job attempt it was started for, inside the run's transaction;
/// refused when the attempt lost the lease (another worker runs the job now).
pub(crate) async fn link_run(
    conn: &mut AnyConnection,
    run_id: &str,
    issue_id: &str,
    job: &JobAttempt,
) -> Result<(), StoreError> {
    let current = current_attempt(conn, &job.job_id, job.attempt).await?;
    if current.issue_id != issue_id {
        return Err(StoreError::Conflict(format!(
            "job {} is for issue {}, not this one",
            job.job_id, current.issue_key
        )));
    }
    sqlx::query("UPDATE runs SET job_id = $1, job_attempt = $2 WHERE id = $3")
        .bind(&job.job_id)
        .bind(i64::from(job.attempt))
        .bind(run_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE jobs SET run_id = $1, updated_at = $2 WHERE id = $3")
        .bind(run_id)
        .bind(time::now())
        .bind(&job.job_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

impl Store {
    /// Queues a job on an issue for the user token this store writes for.
    pub async fn create_job(
        &self,
        issue_key_or_id: &str,
        req: &CreateJob,
    ) -> Result<Job, StoreError> {
        check_new_job(req)?;
        let mut w = self.write().await?;
        let issue_id = resolve_issue(&mut w.tx, issue_key_or_id).await?;
        let id = insert_job(&mut w.tx, &issue_id, req, w.author_token, None).await?;
        let job = load_job(&mut w.tx, &id).await?;
        w.commit().await?;
        Ok(job)
    }

    /// Queues job `id` again, as it was asked for, as a new job.
    pub async fn rerun_job(&self, id: &str) -> Result<Job, StoreError> {
        let mut w = self.write().await?;
        let old = load_job(&mut w.tx, id).await?;
        let req = CreateJob {
            provider: old.provider,
            args: old.args,
            prompt: old.prompt,
            worker_label: old.worker_label,
        };
        let new = insert_job(&mut w.tx, &old.issue_id, &req, w.author_token, Some(id)).await?;
        let job = load_job(&mut w.tx, &new).await?;
        w.commit().await?;
        Ok(job)
    }

    pub async fn job(&self, id: &str) -> Result<Job, StoreError> {
        let mut conn = self.pool().acquire().await?;
        load_job(&mut conn, id).await
    }

    /// Jobs, newest first.
    pub async fn jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let issue_id = match &filter.issue {
            Some(issue) => Some(resolve_issue(&mut conn, issue).await?),
            None => None,
        };
        let mut conditions = Vec::new();
        let mut next = 1;
        if issue_id.is_some() {
            conditions.push(format!("j.issue_id = ${next}"));
            next += 1;
        }
        if !filter.statuses.is_empty() {
            conditions.push(format!(
                "j.status IN ({})",
                placeholders(next, filter.statuses.len())
            ));
        }
        let condition = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let limit = filter.limit.clamp(1, MAX_JOB_PAGE);
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM {JOBS_WITH_ISSUES} {condition} \
             ORDER BY j.created_at DESC, j.id DESC LIMIT {limit}"
        );
        let mut query = sqlx::query_as::<_, JobRow>(&sql);
        if let Some(issue_id) = &issue_id {
            query = query.bind(issue_id);
        }
        for status in &filter.statuses {
            query = query.bind(status.as_str());
        }
        let rows = query.fetch_all(&mut *conn).await?;
        rows.into_iter().map(JobRow::into_job).collect()
    }

    /// Claims the oldest job the worker can run, or `None` when none waits. A job claimed
    /// again after its lease ran out gets its interrupted run failed (when it was still
    /// running), as its reporter is gone with the worker.
    pub async fn claim_job(&self, req: &ClaimJob) -> Result<Option<ClaimedJob>, StoreError> {
        check_lease(req.lease_secs)?;
        if req.providers.is_empty() {
            return Err(StoreError::Invalid(
                "a worker that can run no provider can claim no job".into(),
            ));
        }
        if req.worker.trim().is_empty() || req.worker.len() > 256 {
            return Err(StoreError::Invalid(
                "a worker's name is 1 to 256 bytes".into(),
            ));
        }
        let condition = claimable(req);
        let now = time::now();
        // Looked for first without a write transaction: nearly every claim finds nothing.
        let probe = format!("SELECT j.id FROM jobs j WHERE {condition} LIMIT 1");
        let found: Option<(String,)> = bind_claim(sqlx::query_as(&probe), &now, req)
            .fetch_optional(self.pool())
            .await?;
        if found.is_none() {
            return Ok(None);
        }
        let lock = match self.backend {
            Backend::Postgres => " FOR UPDATE OF j SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let pick = format!(
            "SELECT j.id, j.run_id FROM jobs j WHERE {condition} \
             ORDER BY j.created_at, j.id LIMIT 1{lock}"
        );
        let mut w = self.write_unserialized().await?;
        let picked: Option<(String, Option<String>)> = bind_claim(sqlx::query_as(&pick), &now, req)
            .fetch_optional(&mut *w.tx)
            .await?;
        let Some((id, interrupted_run)) = picked else {
            return Ok(None);
        };
        sqlx::query(
            "UPDATE jobs SET status = 'running', attempts = attempts + 1, worker = $1, \
               lease_expires_at = $2, run_id = NULL, error = NULL, updated_at = $3 WHERE id = $4",
        )
        .bind(stored(&req.worker))
        .bind(time::after_now(Duration::from_secs(req.lease_secs.into())))
        .bind(&now)
        .bind(&id)
        .execute(&mut *w.tx)
        .await?;
        let job = load_job(&mut w.tx, &id).await?;
        let (title, description): (Text, Text) =
            sqlx::query_as("SELECT title, description FROM issues WHERE id = $1")
                .bind(&job.issue_id)
                .fetch_one(&mut *w.tx)
                .await?;
        w.commit().await?;
        if let Some(run_id) = interrupted_run {
            self.fail_interrupted_run(&run_id).await?;
        }
        let prompt = match &job.prompt {
            Some(prompt) => prompt.clone(),
            None => issue_task(&job.issue_key, &title.0, &description.0),
        };
        Ok(Some(ClaimedJob {
            attempt: job.attempts,
            prompt,
            job,
        }))
    }

    /// Fails the run of an attempt whose worker lost the lease, if it is still running, as
    /// the stale-run rule would (the same end `local-run sync` records later for it, so that
    /// one is a no-op), but for good.
    async fn fail_interrupted_run(&self, run_id: &str) -> Result<(), StoreError> {
        let mut w = self.write().await?;
        let failed: Option<(String,)> = sqlx::query_as(
            "UPDATE runs SET status = 'failed', error = $1, failure_kind = NULL, ended_at = $2 \
             WHERE id = $3 AND status = 'running' RETURNING issue_id",
        )
        .bind(REPORTER_STOPPED)
        .bind(time::now())
        .bind(run_id)
        .fetch_optional(&mut *w.tx)
        .await?;
        if let Some((issue_id,)) = failed {
            let finished = IssueChange::RunFinished {
                run_id: run_id.to_owned(),
                status: RunStatus::Failed,
                exit_code: None,
                error: Some(REPORTER_STOPPED.to_owned()),
            };
            let reporter = Author {
                kind: AuthorKind::Agent,
                run_id: Some(run_id.to_owned()),
            };
            activity::record(&mut w.tx, &issue_id, &reporter, w.author_token, &finished).await?;
        }
        w.commit().await
    }

    /// Extends the lease of the attempt that holds the job.
    pub async fn renew_job_lease(&self, id: &str, req: &RenewLease) -> Result<Job, StoreError> {
        check_lease(req.lease_secs)?;
        let mut w = self.write_unserialized().await?;
        current_attempt(&mut w.tx, id, req.attempt).await?;
        sqlx::query("UPDATE jobs SET lease_expires_at = $1, updated_at = $2 WHERE id = $3")
            .bind(time::after_now(Duration::from_secs(req.lease_secs.into())))
            .bind(time::now())
            .bind(id)
            .execute(&mut *w.tx)
            .await?;
        let job = load_job(&mut w.tx, id).await?;
        w.commit().await?;
        Ok(job)
    }

    /// Records how the attempt that holds the job ended. The same end sent again (its answer
    /// was lost) is answered with the job as it is.
    pub async fn finish_job(&self, id: &str, req: &FinishJob) -> Result<Job, StoreError> {
        if !req.status.is_end() {
            return Err(StoreError::Invalid(
                "a job ends as succeeded, failed or cancelled".into(),
            ));
        }
        let mut w = self.write_unserialized().await?;
        let job = load_job(&mut w.tx, id).await?;
        if job.attempts == req.attempt && job.status == req.status && job.error == req.error {
            return Ok(job);
        }
        holds_lease(&job, req.attempt)?;
        sqlx::query(
            "UPDATE jobs SET status = $1, error = $2, lease_expires_at = NULL, updated_at = $3 \
             WHERE id = $4",
        )
        .bind(req.status.as_str())
        .bind(stored_opt(req.error.as_deref()))
        .bind(time::now())
        .bind(id)
        .execute(&mut *w.tx)
        .await?;
        let job = load_job(&mut w.tx, id).await?;
        w.commit().await?;
        Ok(job)
    }

    /// Cancels a job no worker has taken yet. A running one is cancelled through its run
    /// (`cancel_run`), whose end the worker then records as the job's.
    pub async fn cancel_job(&self, id: &str) -> Result<Job, StoreError> {
        let mut w = self.write_unserialized().await?;
        let job = load_job(&mut w.tx, id).await?;
        match job.status {
            JobStatus::Queued => {}
            JobStatus::Running => {
                return Err(StoreError::Conflict(format!(
                    "job {id} is running{}: cancel its run instead (`wujie issue cancel {}`)",
                    job.worker
                        .as_deref()
                        .map(|w| format!(" on {w}"))
                        .unwrap_or_default(),
                    job.issue_key
                )));
            }
            end => {
                return Err(StoreError::Conflict(format!(
                    "job {id} already ended as {}",
                    end.as_str()
                )));
            }
        }
        let error = match token_name(&mut w.tx, w.author_token).await? {
            Some(name) => format!("cancelled by {name} before a worker took it"),
            None => "cancelled before a worker took it".to_owned(),
        };
        sqlx::query(
            "UPDATE jobs SET status = 'cancelled', error = $1, updated_at = $2 \
             WHERE id = $3 AND status = 'queued'",
        )
        .bind(stored(&error))
        .bind(time::now())
        .bind(id)
        .execute(&mut *w.tx)
        .await?;
        let job = load_job(&mut w.tx, id).await?;
        w.commit().await?;
        Ok(job)
    }

    /// The attempt that holds the job gives it back: it waits for a worker again.
    pub async fn release_job(&self, id: &str, attempt: u32) -> Result<Job, StoreError> {
        let mut w = self.write_unserialized().await?;
        current_attempt(&mut w.tx, id, attempt).await?;
        sqlx::query(
            "UPDATE jobs SET status = 'queued', lease_expires_at = NULL, updated_at = $1 \
             WHERE id = $2",
        )
        .bind(time::now())
        .bind(id)
        .execute(&mut *w.tx)
        .await?;
        let job = load_job(&mut w.tx, id).await?;
        w.commit().await?;
        Ok(job)
    }
}

fn bind_claim<'q, O>(
    mut query: sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>>,
    now: &'q str,
    req: &'q ClaimJob,
) -> sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>> {
    query = query.bind(now);
    for provider in &req.providers {
        query = query.bind(stored(provider));
    }
    for label in &req.labels {
        query = query.bind(stored(label));
    }
    query
}

/// The name of the user token `token`, who asked for a change.
async fn token_name(
    conn: &mut AnyConnection,
    token: Option<&str>,
) -> Result<Option<String>, StoreError> {
    let Some(token) = token else {
        return Ok(None);
    };
    let name: Option<(Text,)> = sqlx::query_as("SELECT name FROM tokens WHERE id = $1")
        .bind(token)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(name.map(|(name,)| name.0))
}

async fn insert_job(
    conn: &mut AnyConnection,
    issue_id: &str,
    req: &CreateJob,
    token: Option<&str>,
    rerun_of: Option<&str>,
) -> Result<String, StoreError> {
    let requested_by = token_name(conn, token).await?;
    let id = new_id();
    let now = time::now();
    sqlx::query(
        "INSERT INTO jobs (id, issue_id, provider, args, prompt, worker_label, status, \
           requested_by, rerun_of, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8, $9, $10)",
    )
    .bind(&id)
    .bind(issue_id)
    .bind(stored(req.provider.trim()))
    .bind(stored(&serde_json::to_string(&req.args)?))
    .bind(stored_opt(req.prompt.as_deref()))
    .bind(stored_opt(req.worker_label.as_deref().map(str::trim)))
    .bind(stored_opt(requested_by.as_deref()))
    .bind(rerun_of)
    .bind(&now)
    .bind(&now)
    .execute(&mut *conn)
    .await?;
    Ok(id)
}
