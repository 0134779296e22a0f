use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use wujie_protocol::api::{ApiError, Workspace};
use wujie_protocol::event::Usage;

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiResult;

#[utoipa::path(get, path = "/api/v1/health", tag = "meta",
    responses((status = 200, description = "The server is up: `{\"ok\":true}`")))]
pub(crate) async fn health() -> Json<Value> {
    Json(json!({ "ok": true }))
}

#[utoipa::path(get, path = "/api/v1/openapi.json", tag = "meta",
    responses((status = 200, description = "This document")))]
pub(crate) async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(crate::openapi_document())
}

#[utoipa::path(get, path = "/api/v1/workspace", tag = "meta", security(("bearer" = [])),
    responses((status = 200, body = Workspace), (status = 401, body = ApiError)))]
pub(crate) async fn workspace(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Workspace>> {
    caller.require_user("read the workspace")?;
    Ok(Json(state.store.workspace().await?))
}

/// The workspace's token usage, summed per provider and model over every run and discussion
/// (what it cost is priced by the caller's own price table).
#[utoipa::path(get, path = "/api/v1/workspace/usage", tag = "meta", security(("bearer" = [])),
    responses((status = 200, description = "Usage per (provider, model): `[{provider, model, \
        input_tokens, output_tokens, cache_read_tokens, cache_write_tokens}]`",
        body = Vec<Object>), (status = 401, body = ApiError)))]
pub(crate) async fn workspace_usage(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<Usage>>> {
    caller.require_user("read the workspace's usage")?;
    Ok(Json(state.store.workspace_usage().await?))
}
