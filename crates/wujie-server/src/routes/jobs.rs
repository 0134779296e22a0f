//! Jobs: runs queued from the tracker and the requests of the workers that run them.
//! Every route takes a user token: a run token (an agent's) can queue, claim or end nothing.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use wujie_protocol::api::ApiError;
use wujie_protocol::jobs::{
    ClaimJob, ClaimedJob, CreateJob, FinishJob, Job, JobStatus, ReleaseJob, RenewLease,
};
use wujie_store::{JobFilter, MAX_JOB_PAGE};

use super::Body;
use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiResult, Failure};

/// `GET /jobs` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct JobQuery {
    /// Only the jobs of this issue (key or id).
    issue: Option<String>,
    /// Only jobs in these statuses, comma-separated (queued, running, succeeded, failed,
    /// cancelled).
    status: Option<String>,
    /// At most this many, newest first (1 to 1000, default 100).
    limit: Option<u32>,
}

impl JobQuery {
    fn filter(self) -> Result<JobFilter, Failure> {
        let statuses = match &self.status {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(|name| {
                    JobStatus::from_name(name.trim()).ok_or_else(|| {
                        Failure::new(
                            StatusCode::BAD_REQUEST,
                            format!(
                                "unknown job status {name:?}; use queued, running, succeeded, \
                                 failed or cancelled"
                            ),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        let limit = self.limit.unwrap_or(100);
        if !(1..=MAX_JOB_PAGE).contains(&limit) {
            return Err(Failure::new(
                StatusCode::BAD_REQUEST,
                format!("limit must be 1 to {MAX_JOB_PAGE}"),
            ));
        }
        Ok(JobFilter {
            issue: self.issue,
            statuses,
            limit,
        })
    }
}

#[utoipa::path(post, path = "/api/v1/issues/{key_or_id}/jobs", tag = "jobs",
    security(("bearer" = [])),
    params(("key_or_id" = String, Path, description = "Issue key (any case) or id")),
    request_body = CreateJob,
    responses((status = 201, body = Job, description = "The job, waiting for a worker"),
        (status = 400, body = ApiError), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn create_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(key_or_id): Path<String>,
    Body(req): Body<CreateJob>,
) -> ApiResult<(StatusCode, Json<Job>)> {
    caller.require_user("queue jobs")?;
    let job = caller.store(&state).create_job(&key_or_id, &req).await?;
    Ok((StatusCode::CREATED, Json(job)))
}

#[utoipa::path(get, path = "/api/v1/jobs", tag = "jobs", security(("bearer" = [])),
    params(JobQuery),
    responses((status = 200, body = [Job], description = "Newest first"),
        (status = 400, body = ApiError), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn list_jobs(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<JobQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<Vec<Job>>> {
    caller.require_user("list jobs")?;
    let query = super::query_params(query, "")?;
    Ok(Json(state.store.jobs(&query.filter()?).await?))
}

#[utoipa::path(get, path = "/api/v1/jobs/{id}", tag = "jobs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = Job), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn get_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Job>> {
    caller.require_user("read jobs")?;
    Ok(Json(state.store.job(&id).await?))
}

#[utoipa::path(post, path = "/api/v1/jobs/claim", tag = "jobs", security(("bearer" = [])),
    request_body = ClaimJob,
    responses((status = 200, body = ClaimedJob, description = "A job, now leased to the worker"),
        (status = 204, description = "No job waits that the worker can run"),
        (status = 400, body = ApiError), (status = 401, body = ApiError),
        (status = 403, body = ApiError)))]
pub(crate) async fn claim_job(
    State(state): State<AppState>,
    caller: Caller,
    Body(req): Body<ClaimJob>,
) -> ApiResult<Response> {
    caller.require_user("claim jobs")?;
    Ok(match caller.store(&state).claim_job(&req).await? {
        Some(claimed) => Json(claimed).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}

#[utoipa::path(post, path = "/api/v1/jobs/{id}/lease", tag = "jobs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Job id")),
    request_body = RenewLease,
    responses((status = 200, body = Job, description = "The lease, extended"),
        (status = 409, body = ApiError, description = "The attempt no longer holds the lease"),
        (status = 404, body = ApiError), (status = 401, body = ApiError),
        (status = 403, body = ApiError)))]
pub(crate) async fn renew_lease(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(req): Body<RenewLease>,
) -> ApiResult<Json<Job>> {
    caller.require_user("renew job leases")?;
    Ok(Json(state.store.renew_job_lease(&id, &req).await?))
}

#[utoipa::path(post, path = "/api/v1/jobs/{id}/finish", tag = "jobs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Job id")),
    request_body = FinishJob,
    responses((status = 200, body = Job, description = "The job, ended"),
        (status = 409, body = ApiError, description = "The attempt no longer holds the lease"),
        (status = 400, body = ApiError), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn finish_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(req): Body<FinishJob>,
) -> ApiResult<Json<Job>> {
    caller.require_user("end jobs")?;
    Ok(Json(state.store.finish_job(&id, &req).await?))
}

#[utoipa::path(post, path = "/api/v1/jobs/{id}/release", tag = "jobs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Job id")),
    request_body = ReleaseJob,
    responses((status = 200, body = Job, description = "The job, waiting for a worker again"),
        (status = 409, body = ApiError, description = "The attempt no longer holds the lease"),
        (status = 404, body = ApiError), (status = 401, body = ApiError),
        (status = 403, body = ApiError)))]
pub(crate) async fn release_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(req): Body<ReleaseJob>,
) -> ApiResult<Json<Job>> {
    caller.require_user("give back jobs")?;
    Ok(Json(state.store.release_job(&id, req.attempt).await?))
}

#[utoipa::path(post, path = "/api/v1/jobs/{id}/rerun", tag = "jobs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Job id")),
    responses((status = 201, body = Job, description = "A new job, as the old one was asked for"),
        (status = 404, body = ApiError), (status = 401, body = ApiError),
        (status = 403, body = ApiError)))]
pub(crate) async fn rerun_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<Job>)> {
    caller.require_user("queue jobs")?;
    let job = caller.store(&state).rerun_job(&id).await?;
    Ok((StatusCode::CREATED, Json(job)))
}

#[utoipa::path(post, path = "/api/v1/jobs/{id}/cancel", tag = "jobs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Job id")),
    responses((status = 200, body = Job, description = "The job, cancelled before a worker took it"),
        (status = 409, body = ApiError, description = "It is running (cancel its run) or ended"),
        (status = 404, body = ApiError), (status = 401, body = ApiError),
        (status = 403, body = ApiError)))]
pub(crate) async fn cancel_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Job>> {
    caller.require_user("cancel jobs")?;
    Ok(Json(caller.store(&state).cancel_job(&id).await?))
}
