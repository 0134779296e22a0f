use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use wujie_protocol::api::{ApiError, BrowserLogin};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiResult, Failure};
use crate::web::LOGIN_CODE_TTL;

#[utoipa::path(post, path = "/api/v1/browser-logins", tag = "browser",
    security(("bearer" = [])),
    responses((status = 201, body = BrowserLogin,
            description = "A one-time login link for the web UI, valid for a few minutes"),
        (status = 401, body = ApiError), (status = 403, body = ApiError),
        (status = 503, body = ApiError, description = "Too many links wait unused")))]
pub(crate) async fn create_browser_login(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<(StatusCode, Json<BrowserLogin>)> {
    caller.require_user("log a browser in")?;
    let code = state.login_codes.mint(caller.token_id()).ok_or_else(|| {
        Failure::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many login links wait unused; use one of them, or wait a few minutes",
        )
    })?;
    Ok((
        StatusCode::CREATED,
        Json(BrowserLogin {
            path: format!("/login?code={code}"),
            expires_in_seconds: LOGIN_CODE_TTL.as_secs(),
        }),
    ))
}
