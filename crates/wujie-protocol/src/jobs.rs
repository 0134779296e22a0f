//! Jobs: runs asked for from the tracker (`wujie issue assign`) and run by a `wujie worker` that
//! claims them. The bodies of `/api/v1/jobs…`, shared like those of [`crate::api`].
//!
//! A job is claimed under a lease: the worker renews it while the job's run goes on, and a job
//! whose lease ran out (its worker died) is claimed again by another. Each claim is an attempt,
//! numbered from 1; every later request of the worker names its attempt, so a worker that lost
//! the lease can change nothing of the job.

use serde::{Deserialize, Serialize};

/// Longest lease a worker may take; a job whose worker died waits at most this long.
pub const MAX_LEASE_SECS: u32 = 3600;
/// Shortest lease a worker may take (renewed a third of the way through, so shorter would
/// mean a renewal per second).
pub const MIN_LEASE_SECS: u32 = 3;
/// Longest prompt a job may carry (the issue's description is at most 1 MiB).
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;
/// Most arguments, and the most bytes of them, a job may pass to its provider.
pub const MAX_JOB_ARGS: usize = 256;
pub const MAX_JOB_ARG_BYTES: usize = 64 * 1024;

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Waiting for a worker.
    Queued,
    /// A worker holds its lease and runs it.
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Succeeded => "succeeded",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    pub fn from_name(name: &str) -> Option<JobStatus> {
        Some(match name {
            "queued" => JobStatus::Queued,
            "running" => JobStatus::Running,
            "succeeded" => JobStatus::Succeeded,
            "failed" => JobStatus::Failed,
            "cancelled" => JobStatus::Cancelled,
            _ => return None,
        })
    }

    /// Whether the job is over: nothing claims it again.
    pub fn is_end(self) -> bool {
        !matches!(self, JobStatus::Queued | JobStatus::Running)
    }
}

/// `POST /issues/{key}/jobs`: queue a run of `provider` on the issue.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateJob {
    /// A provider that works without a terminal (`pi`, a plugin that declares it).
    pub provider: String,
    /// Arguments for the provider's adapter, as after `wujie run KEY -- PROVIDER`.
    #[serde(default)]
    pub args: Vec<String>,
    /// The agent's task; without it, the issue's title and description when the job starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Only a worker started with this label runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_label: Option<String>,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    pub issue_id: String,
    pub issue_key: String,
    pub provider: String,
    pub args: Vec<String>,
    /// Null: the issue's title and description.
    pub prompt: Option<String>,
    pub worker_label: Option<String>,
    pub status: JobStatus,
    /// Claims so far; a job claimed again after its worker died has more than one.
    pub attempts: u32,
    /// The worker that holds (or last held) the job.
    pub worker: Option<String>,
    /// While running: when the lease ends unless the worker renews it.
    pub lease_expires_at: Option<String>,
    /// The run of the latest attempt, once it started.
    pub run_id: Option<String>,
    /// Why it failed, when it did before or without a run's own error.
    pub error: Option<String>,
    /// The name of the token that queued it.
    pub requested_by: Option<String>,
    /// The job this one runs again (`wujie rerun`).
    pub rerun_of: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// `POST /jobs/claim`: what a worker can run.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimJob {
    /// How the worker is shown (default `host:pid`).
    pub worker: String,
    /// The worker's labels: it takes jobs without a label and jobs with one of these.
    #[serde(default)]
    pub labels: Vec<String>,
    /// The providers it can run; it takes only jobs of these.
    pub providers: Vec<String>,
    /// How long the lease lasts unless renewed.
    pub lease_secs: u32,
}

/// Answer to a claim that found a job.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimedJob {
    pub job: Job,
    /// This claim's attempt number, named by every later request of the worker.
    pub attempt: u32,
    /// The task for the agent: the job's prompt, or the issue's title and description now.
    pub prompt: String,
}

/// `POST /jobs/{id}/lease`: renew the lease of an attempt.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenewLease {
    pub attempt: u32,
    pub lease_secs: u32,
}

/// `POST /jobs/{id}/finish`: how an attempt ended.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinishJob {
    pub attempt: u32,
    /// succeeded, failed or cancelled.
    pub status: JobStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `POST /jobs/{id}/release`: the worker gives the lease back; the job waits for a worker again.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseJob {
    pub attempt: u32,
}

/// What a run started for a job says of it (`CreateRun.job`): the server links the run to the
/// job's attempt, refusing when the attempt no longer holds the lease.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobAttempt {
    pub job_id: String,
    pub attempt: u32,
}

impl JobAttempt {
    /// `ID:ATTEMPT`, as `wujie run --job` takes it.
    pub fn parse(text: &str) -> Option<JobAttempt> {
        let (id, attempt) = text.rsplit_once(':')?;
        let attempt = attempt.parse().ok().filter(|a| *a > 0)?;
        (!id.is_empty()).then(|| JobAttempt {
            job_id: id.to_owned(),
            attempt,
        })
    }
}

impl std::fmt::Display for JobAttempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.job_id, self.attempt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_attempt_reads_back_what_it_writes_and_refuses_the_rest() {
        let attempt = JobAttempt {
            job_id: "j1".into(),
            attempt: 3,
        };
        assert_eq!(JobAttempt::parse(&attempt.to_string()), Some(attempt));
        for bad in ["", "j1", "j1:", ":2", "j1:0", "j1:x", "j1:-1"] {
            assert_eq!(JobAttempt::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn statuses_read_back_what_they_write() {
        for s in [
            JobStatus::Queued,
            JobStatus::Running,
            JobStatus::Succeeded,
            JobStatus::Failed,
            JobStatus::Cancelled,
        ] {
            assert_eq!(JobStatus::from_name(s.as_str()), Some(s));
        }
        assert_eq!(JobStatus::from_name("done"), None);
    }
}
