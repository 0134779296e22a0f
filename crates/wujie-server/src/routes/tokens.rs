use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use wujie_protocol::api::{ApiError, CreateToken, CreatedToken};

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
        Json(state.store.create_user_token(&req.name).await?),
    ))
}

#[utoipa::path(delete, path = "/api/v1/tokens/current", tag = "tokens", security(("bearer" = [])),
    responses((status = 204, description = "The token of this request no longer works"),
        (status = 401, body = ApiError)))]
pub(crate) async fn revoke_current(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<StatusCode> {
    state.store.revoke_token(caller.token_id()).await?;
    Ok(StatusCode::NO_CONTENT)
}
