use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use wujie_protocol::api::{
    ApiError, Comment, CreateComment, CreateIssue, EditIssue, IssueDetail, IssueQuery,
    IssueSummary, RunSummary, SetIssueStatus,
};

use super::Body;
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiResult;
use wujie_store::StoreError;

#[utoipa::path(post, path = "/api/v1/issues", tag = "issues", security(("bearer" = [])),
    request_body = CreateIssue,
    responses((status = 201, body = IssueDetail), (status = 400, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn create_issue(
    State(state): State<AppState>,
    caller: Caller,
    Body(req): Body<CreateIssue>,
) -> ApiResult<(StatusCode, Json<IssueDetail>)> {
    caller.require_user("create issues")?;
    Ok((
        StatusCode::CREATED,
        Json(caller.store(&state).create_issue(&req).await?),
    ))
}

#[utoipa::path(get, path = "/api/v1/issues", tag = "issues", security(("bearer" = [])),
    params(IssueQuery),
    responses((status = 200, body = [IssueSummary]), (status = 400, body = ApiError),
        (status = 401, body = ApiError)))]
pub(crate) async fn list_issues(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<IssueQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<Vec<IssueSummary>>> {
    caller.require_user("list issues")?;
    let query = super::query_params(
        query,
        "status is one of open, in_progress, done, closed and limit a number",
    )?;
    Ok(Json(state.store.list_issues(&query).await?))
}

#[utoipa::path(patch, path = "/api/v1/issues/{key_or_id}", tag = "issues",
    security(("bearer" = [])),
    params(("key_or_id" = String, Path, description = "Issue key (any case) or id")),
    request_body = EditIssue,
    responses((status = 200, body = IssueDetail), (status = 400, body = ApiError),
        (status = 404, body = ApiError), (status = 401, body = ApiError),
        (status = 403, body = ApiError)))]
pub(crate) async fn edit_issue(
    State(state): State<AppState>,
    caller: Caller,
    Path(key_or_id): Path<String>,
    Body(req): Body<EditIssue>,
) -> ApiResult<Json<IssueDetail>> {
    caller.require_user("edit issues")?;
    let author = caller.author();
    Ok(Json(
        caller
            .store(&state)
            .edit_issue(&key_or_id, &req, &author)
            .await?,
    ))
}

#[utoipa::path(post, path = "/api/v1/issues/{key_or_id}/status", tag = "issues",
    security(("bearer" = [])),
    params(("key_or_id" = String, Path, description = "Issue key (any case) or id")),
    request_body = SetIssueStatus,
    responses((status = 200, body = IssueDetail), (status = 400, body = ApiError),
        (status = 404, body = ApiError), (status = 401, body = ApiError),
        (status = 403, body = ApiError)))]
pub(crate) async fn set_status(
    State(state): State<AppState>,
    caller: Caller,
    Path(key_or_id): Path<String>,
    Body(req): Body<SetIssueStatus>,
) -> ApiResult<Json<IssueDetail>> {
    caller.require_user("close or reopen issues")?;
    let author = caller.author();
    let detail = caller
        .store(&state)
        .set_issue_status(&key_or_id, req.status, &author)
        .await?;
    Ok(Json(detail))
}

#[utoipa::path(get, path = "/api/v1/issues/{key_or_id}/runs", tag = "issues",
    security(("bearer" = [])),
    params(("key_or_id" = String, Path, description = "Issue key (any case) or id")),
    responses((status = 200, body = [RunSummary]), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    caller: Caller,
    Path(key_or_id): Path<String>,
) -> ApiResult<Json<Vec<RunSummary>>> {
    let issue_id = state.store.resolve_issue(&key_or_id).await?;
    caller.require_issue_read(&issue_id, &key_or_id)?;
    Ok(Json(state.store.issue_runs(&issue_id).await?))
}

#[utoipa::path(get, path = "/api/v1/issues/{key_or_id}", tag = "issues", security(("bearer" = [])),
    params(("key_or_id" = String, Path, description = "Issue key such as WUJ-3 (any case) or id")),
    responses((status = 200, body = IssueDetail), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn get_issue(
    State(state): State<AppState>,
    caller: Caller,
    Path(key_or_id): Path<String>,
) -> ApiResult<Json<IssueDetail>> {
    let issue_id = match state.store.resolve_issue(&key_or_id).await {
        Ok(id) => id,
        // A scoped token gets the same answer for a key that does not exist as for one it may
        // not read, so it cannot probe which keys exist.
        Err(StoreError::NotFound(_)) if !caller.is_user() => {
            return Err(Caller::cannot_read_issue(&key_or_id));
        }
        Err(e) => return Err(e.into()),
    };
    caller.require_issue_read(&issue_id, &key_or_id)?;
    Ok(Json(state.store.issue(&issue_id).await?))
}

#[utoipa::path(post, path = "/api/v1/issues/{key_or_id}/comments", tag = "issues",
    security(("bearer" = [])),
    params(("key_or_id" = String, Path, description = "Issue key or id")),
    request_body = CreateComment,
    responses((status = 201, body = Comment), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn add_comment(
    State(state): State<AppState>,
    caller: Caller,
    Path(key_or_id): Path<String>,
    Body(req): Body<CreateComment>,
) -> ApiResult<(StatusCode, Json<Comment>)> {
    // Refused before the key is looked up, so a token that may not comment cannot learn
    // which keys exist.
    caller.require_issue_comment(&key_or_id)?;
    let issue_id = state.store.resolve_issue(&key_or_id).await?;
    let author = caller.author();
    let comment = caller
        .store(&state)
        .add_comment(&issue_id, &req.body, &author)
        .await?;
    Ok((StatusCode::CREATED, Json(comment)))
}
