use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use wujie_protocol::api::{ApiError, Workspace};

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
