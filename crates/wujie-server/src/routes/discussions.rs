use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use wujie_protocol::api::{
    ApiError, CreateDiscussion, CreatedDiscussion, CreatedToken, Discussion, IngestBatch,
    IngestResult, PromoteDiscussion, Promoted,
};

use super::{Body, IngestBody, PageQuery, StartKey};
use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiResult, Failure};

/// Filter of `GET /discussions`: both fields together find the discussions that recorded a
/// provider's native session id.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DiscussionFilter {
    provider: Option<String>,
    native_session_id: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/discussions", tag = "discussions", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "A key the client chose for \
         this start (a UUID): the same request sent again with it returns the discussion the \
         first one created, with a new token, instead of creating another")),
    request_body = CreateDiscussion,
    responses((status = 201, body = CreatedDiscussion, description = "The discussion and its discussion-scoped token"),
        (status = 400, body = ApiError), (status = 401, body = ApiError), (status = 403, body = ApiError),
        (status = 503, body = ApiError, description = "The database is busy; retry after Retry-After seconds")))]
pub(crate) async fn create_discussion(
    State(state): State<AppState>,
    caller: Caller,
    StartKey(start_key): StartKey,
    Body(req): Body<CreateDiscussion>,
) -> ApiResult<(StatusCode, Json<CreatedDiscussion>)> {
    caller.require_user("open discussions")?;
    let created = match start_key {
        Some(key) => state.store.create_discussion_once(&req, &key).await?,
        None => state.store.create_discussion(&req).await?,
    };
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(get, path = "/api/v1/discussions", tag = "discussions", security(("bearer" = [])),
    params(DiscussionFilter),
    responses((status = 200, body = [Discussion], description = "Newest first"),
        (status = 400, body = ApiError), (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn list_discussions(
    State(state): State<AppState>,
    caller: Caller,
    Query(filter): Query<DiscussionFilter>,
) -> ApiResult<Json<Vec<Discussion>>> {
    caller.require_user("list discussions")?;
    let found = match (filter.provider, filter.native_session_id) {
        (None, None) => state.store.list_discussions().await?,
        (Some(provider), Some(native)) => {
            state
                .store
                .find_discussions_by_native_session(&provider, &native)
                .await?
        }
        _ => {
            return Err(Failure::new(
                StatusCode::BAD_REQUEST,
                "give both provider and native_session_id to look a discussion up, or neither",
            ));
        }
    };
    Ok(Json(found))
}

#[utoipa::path(post, path = "/api/v1/discussions/{id}/tokens", tag = "discussions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Discussion id"),
        ("Idempotency-Key" = Option<String>, Header, description = "A key the client chose for \
         this request (a UUID): the same request sent again with it revokes the token the first \
         one minted, which nobody received, and mints a new one")),
    responses((status = 201, body = CreatedToken, description = "A new discussion-scoped token, shown only here"),
        (status = 404, body = ApiError), (status = 409, body = ApiError, description = "Already promoted"),
        (status = 401, body = ApiError), (status = 403, body = ApiError),
        (status = 503, body = ApiError, description = "The database is busy; retry after Retry-After seconds")))]
pub(crate) async fn create_token(
    State(state): State<AppState>,
    caller: Caller,
    StartKey(start_key): StartKey,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<CreatedToken>)> {
    caller.require_user("mint discussion tokens")?;
    let created = match start_key {
        Some(key) => state.store.create_discussion_token_once(&id, &key).await?,
        None => state.store.create_discussion_token(&id).await?,
    };
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(get, path = "/api/v1/discussions/{id}", tag = "discussions", security(("bearer" = [])),
    params(("id" = String, Path, description = "Discussion id"), PageQuery),
    responses((status = 200, body = Discussion, description = "The discussion with the next page \
         of its entries, in order (`next_after`, `more`)"),
        (status = 400, body = ApiError), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn get_discussion(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> ApiResult<Json<Discussion>> {
    let (after, max_bytes) = super::page_asked(query, "discussion entry")?;
    caller.require_discussion_read(&id)?;
    Ok(Json(
        state.store.discussion_page(&id, after, max_bytes).await?,
    ))
}

#[utoipa::path(post, path = "/api/v1/discussions/{id}/events", tag = "discussions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Discussion id")),
    request_body = IngestBatch,
    responses((status = 200, body = IngestResult, description = "One result per item, in order"),
        (status = 404, body = ApiError), (status = 413, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn ingest_events(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    IngestBody(batch): IngestBody,
) -> ApiResult<Json<IngestResult>> {
    caller.require_user("report events")?;
    let result = state
        .store
        .ingest_discussion_events(&id, &batch.items, state.config.max_event_bytes)
        .await?;
    Ok(Json(result))
}

#[utoipa::path(post, path = "/api/v1/discussions/{id}/promote", tag = "discussions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Discussion id")),
    request_body = PromoteDiscussion,
    responses((status = 201, body = Promoted, description = "The issue, its run and the run-scoped token"),
        (status = 409, body = ApiError, description = "Already promoted; the message names the issue"),
        (status = 404, body = ApiError), (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn promote(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(req): Body<PromoteDiscussion>,
) -> ApiResult<(StatusCode, Json<Promoted>)> {
    caller.require_user("promote discussions")?;
    let promoted = caller.store(&state).promote_discussion(&id, &req).await?;
    Ok((StatusCode::CREATED, Json(promoted)))
}

#[utoipa::path(delete, path = "/api/v1/discussions/{id}", tag = "discussions",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Discussion id")),
    responses((status = 204, description = "Deleted"),
        (status = 409, body = ApiError, description = "Not empty, or promoted"),
        (status = 404, body = ApiError), (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn delete_empty(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require_user("delete discussions")?;
    state.store.delete_empty_discussion(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}
