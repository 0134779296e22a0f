//! The `Idempotency-Key` header of the requests that start a run or a discussion: a client
//! that did not get the answer sends the same request with the same key again, and the store
//! returns what the first one started instead of starting a second.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;

use crate::AppState;
use crate::error::Failure;

/// The request's start key, if it sent one.
pub(crate) struct StartKey(pub(crate) Option<String>);

impl FromRequestParts<AppState> for StartKey {
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Failure> {
        let Some(value) = parts.headers.get("idempotency-key") else {
            return Ok(StartKey(None));
        };
        let key = value.to_str().map_err(|_| {
            Failure::new(
                StatusCode::BAD_REQUEST,
                "the Idempotency-Key header is not plain ASCII text; send a UUID",
            )
        })?;
        Ok(StartKey(Some(key.to_owned())))
    }
}
