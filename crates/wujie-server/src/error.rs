//! Every non-2xx answer is an `ApiError {error}` with a message a user can act on. Messages
//! never contain a token: they are built from ids, keys and store errors only.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use wujie_protocol::api::ApiError;
use wujie_protocol::error_text::with_causes;
use wujie_store::StoreError;

use crate::request_log::AnsweredError;

#[derive(Debug)]
pub(crate) struct Failure {
    status: StatusCode,
    message: String,
    /// Seconds after which the same request may succeed (`Retry-After`), for a 503.
    retry_after: Option<u32>,
}

/// What a client waits before asking a busy database again: a pool timeout already waited
/// seconds for a connection, so a short pause is enough for the load to move on.
const BUSY_RETRY_AFTER_SECS: u32 = 1;

impl Failure {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Failure {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    pub(crate) fn unauthorized(message: impl Into<String>) -> Self {
        Failure::new(StatusCode::UNAUTHORIZED, message)
    }

    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        Failure::new(StatusCode::FORBIDDEN, message)
    }

    /// Status and message, for an answer in another shape (the web UI's error page).
    pub(crate) fn parts(self) -> (StatusCode, String) {
        (self.status, self.message)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        let status = match &e {
            StoreError::NotFound(_) => StatusCode::NOT_FOUND,
            StoreError::Conflict(_) => StatusCode::CONFLICT,
            StoreError::Invalid(_) => StatusCode::BAD_REQUEST,
            StoreError::Busy => {
                return Failure {
                    retry_after: Some(BUSY_RETRY_AFTER_SECS),
                    ..Failure::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the database is busy; retry in a moment (nothing was done)",
                    )
                };
            }
            StoreError::Unavailable(_) => {
                // Logged with the request (`request_log`), with its cause.
                return Failure {
                    retry_after: Some(BUSY_RETRY_AFTER_SECS),
                    ..Failure::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the server lost its connection to the database; retry in a moment",
                    )
                };
            }
            _ => {
                // Logged with the request (`request_log`).
                return Failure::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!(
                        "the server could not complete the request: {}; retry later or check the \
                         server log",
                        with_causes(&e)
                    ),
                );
            }
        };
        Failure::new(status, e.to_string())
    }
}

impl From<JsonRejection> for Failure {
    fn from(rejection: JsonRejection) -> Self {
        let status = rejection.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!(
                "request body is larger than the server's limit of {} bytes; send smaller batches",
                crate::MAX_BODY_BYTES
            )
        } else {
            format!("invalid request body: {}", rejection.body_text())
        };
        Failure::new(status, message)
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let logged = AnsweredError(self.message.clone());
        let mut response = (
            self.status,
            Json(ApiError {
                error: self.message,
            }),
        )
            .into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response.extensions_mut().insert(logged);
        response
    }
}

pub(crate) type ApiResult<T> = Result<T, Failure>;
