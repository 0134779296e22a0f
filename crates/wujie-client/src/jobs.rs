//! The jobs routes: queue runs from the tracker, and the requests of the workers that run them.

use reqwest::{Method, StatusCode};
use wujie_protocol::jobs::{
    ClaimJob, ClaimedJob, CreateJob, FinishJob, Job, JobStatus, ReleaseJob, RenewLease,
};

use crate::{Client, ClientError, network_error, segment};

/// Which jobs [`Client::list_jobs`] asks for.
#[derive(Debug, Clone, Default)]
pub struct JobQuery {
    pub issue: Option<String>,
    pub statuses: Vec<JobStatus>,
    pub limit: Option<u32>,
}

impl Client {
    pub async fn create_job(&self, issue: &str, req: &CreateJob) -> Result<Job, ClientError> {
        let path = format!("/issues/{}/jobs", segment(issue));
        self.call(Method::POST, &path, Some(req)).await
    }

    /// Jobs, newest first.
    pub async fn list_jobs(&self, query: &JobQuery) -> Result<Vec<Job>, ClientError> {
        let mut params = Vec::new();
        if let Some(issue) = &query.issue {
            params.push(format!("issue={}", segment(issue)));
        }
        if !query.statuses.is_empty() {
            let names: Vec<&str> = query.statuses.iter().map(|s| s.as_str()).collect();
            params.push(format!("status={}", names.join(",")));
        }
        if let Some(limit) = query.limit {
            params.push(format!("limit={limit}"));
        }
        let path = if params.is_empty() {
            "/jobs".to_owned()
        } else {
            format!("/jobs?{}", params.join("&"))
        };
        self.call(Method::GET, &path, None).await
    }

    pub async fn get_job(&self, id: &str) -> Result<Job, ClientError> {
        let path = format!("/jobs/{}", segment(id));
        self.call(Method::GET, &path, None).await
    }

    /// The oldest job this worker can run, now leased to it; `None` when none waits.
    pub async fn claim_job(&self, req: &ClaimJob) -> Result<Option<ClaimedJob>, ClientError> {
        let path = "/jobs/claim";
        let body = serde_json::to_vec(req).map_err(|e| ClientError::Decode {
            method: Method::POST,
            path: path.to_owned(),
            message: format!("cannot encode the request: {e}"),
        })?;
        let resp = self.send(Method::POST, path, Some(body)).await?;
        if resp.status() == StatusCode::NO_CONTENT {
            return Ok(None);
        }
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| network_error(&Method::POST, path, e))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| ClientError::Decode {
                method: Method::POST,
                path: path.to_owned(),
                message: e.to_string(),
            })
    }

    pub async fn renew_job_lease(&self, id: &str, req: &RenewLease) -> Result<Job, ClientError> {
        let path = format!("/jobs/{}/lease", segment(id));
        self.call(Method::POST, &path, Some(req)).await
    }

    pub async fn finish_job(&self, id: &str, req: &FinishJob) -> Result<Job, ClientError> {
        let path = format!("/jobs/{}/finish", segment(id));
        self.call(Method::POST, &path, Some(req)).await
    }

    pub async fn release_job(&self, id: &str, attempt: u32) -> Result<Job, ClientError> {
        let path = format!("/jobs/{}/release", segment(id));
        self.call(Method::POST, &path, Some(&ReleaseJob { attempt }))
            .await
    }

    /// Cancels job `id`, which no worker has taken yet.
    pub async fn cancel_job(&self, id: &str) -> Result<Job, ClientError> {
        let path = format!("/jobs/{}/cancel", segment(id));
        self.call(Method::POST, &path, None).await
    }

    /// Queues job `id` again as a new job.
    pub async fn rerun_job(&self, id: &str) -> Result<Job, ClientError> {
        let path = format!("/jobs/{}/rerun", segment(id));
        self.call(Method::POST, &path, None).await
    }
}
