use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use wujie_protocol::api::{ApiError, CreateToken, CreatedToken, TokenInfo};

use super::Body;
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiResult;

#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens", security(("bearer" = [])),
    request_body = CreateToken,
    responses((status = 201, body = CreatedToken, description = "The secret is shown only here"),
        (status = 400, body = ApiError), (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn create_token(
    State(state): State<AppState>,
    caller: Caller,
    Body(req): Body<CreateToken>,
) -> ApiResult<(StatusCode, Json<CreatedToken>)> {
    caller.require_user("create tokens")?;
    Ok((
        StatusCode::CREATED,
        Json(
            state
                .store
                .create_team_token(&req.name, req.expires_in_secs.map(Duration::from_secs))
                .await?,
        ),
    ))
}

#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens", security(("bearer" = [])),
    responses((status = 200, body = [TokenInfo], description = "Every user token, oldest first; never a secret"),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn list_tokens(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<TokenInfo>>> {
    caller.require_user("list tokens")?;
    Ok(Json(state.store.list_user_tokens().await?))
}

#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens", security(("bearer" = [])),
    params(("id" = String, Path, description = "The token's id, as `GET /tokens` lists it")),
    responses((status = 204, description = "The token no longer works, on any server of the database"),
        (status = 401, body = ApiError), (status = 403, body = ApiError), (status = 404, body = ApiError)))]
pub(crate) async fn revoke_token(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require_user("revoke tokens")?;
    state.store.revoke_token(&id).await?;
    // Its open feeds and browser sessions end now, not at their next check.
    state.config.open_feeds.access_changed();
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(delete, path = "/api/v1/tokens/current", tag = "tokens", security(("bearer" = [])),
    responses((status = 204, description = "The token of this request no longer works"),
        (status = 401, body = ApiError)))]
pub(crate) async fn revoke_current(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<StatusCode> {
    state.store.revoke_token(caller.token_id()).await?;
    state.config.open_feeds.access_changed();
    Ok(StatusCode::NO_CONTENT)
}
