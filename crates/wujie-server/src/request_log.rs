//! One log line per request: method, path, status and time taken, with the error message for
//! every error answered. The query string is left out, and messages never hold a token (see
//! `error`), so nothing secret reaches the log.

use std::time::Instant;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// The message of an error answer, attached to the response by [`crate::error::Failure`] so the
/// log can name it without reading the body.
#[derive(Debug, Clone)]
pub(crate) struct AnsweredError(pub(crate) String);

pub(crate) async fn log_request(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let error = response
        .extensions()
        .get::<AnsweredError>()
        .map(|e| e.0.as_str());
    match error {
        Some(error) if status >= 500 => {
            tracing::error!(%method, path, status, ms, error, "request failed");
        }
        Some(error) => tracing::info!(%method, path, status, ms, error, "request refused"),
        None => tracing::info!(%method, path, status, ms, "request"),
    }
    response
}
