//! Route table of `/api/v1` and the JSON body extractor shared by the handlers.

pub(crate) mod browser_logins;
pub(crate) mod discussions;
mod ingest_body;
pub(crate) mod issues;
pub(crate) mod jobs;
pub(crate) mod meta;
pub(crate) mod runs;
mod start_key;
pub(crate) mod tokens;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequest, Request};
use axum::http::{StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};

use crate::sse;
use serde::de::DeserializeOwned;

use crate::error::Failure;
use crate::{AppState, MAX_BODY_BYTES};
pub(crate) use ingest_body::IngestBody;
pub(crate) use start_key::StartKey;

pub(crate) fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/health", get(meta::health))
        .route("/openapi.json", get(meta::openapi))
        .route("/workspace", get(meta::workspace))
        .route("/workspace/usage", get(meta::workspace_usage))
        .route(
            "/issues",
            post(issues::create_issue).get(issues::list_issues),
        )
        .route(
            "/issues/{key_or_id}",
            get(issues::get_issue).patch(issues::edit_issue),
        )
        .route("/issues/{key_or_id}/comments", post(issues::add_comment))
        .route("/issues/{key_or_id}/status", post(issues::set_status))
        .route(
            "/issues/{key_or_id}/runs",
            post(runs::create_run).get(issues::list_runs),
        )
        .route("/issues/{key_or_id}/jobs", post(jobs::create_job))
        .route("/jobs", get(jobs::list_jobs))
        .route("/jobs/claim", post(jobs::claim_job))
        .route("/jobs/{id}", get(jobs::get_job))
        .route("/jobs/{id}/lease", post(jobs::renew_lease))
        .route("/jobs/{id}/finish", post(jobs::finish_job))
        .route("/jobs/{id}/release", post(jobs::release_job))
        .route("/jobs/{id}/rerun", post(jobs::rerun_job))
        .route("/jobs/{id}/cancel", post(jobs::cancel_job))
        .route("/issues/{key_or_id}/events", get(sse::issue_feed))
        .route("/events", get(sse::workspace_feed))
        .route("/runs/{id}", get(runs::get_run))
        .route("/runs/{id}/git", get(runs::get_run_git))
        .route("/runs/{id}/messages", get(runs::run_messages))
        .route("/runs/{id}/events", post(runs::ingest_events))
        .route("/runs/{id}/heartbeat", post(runs::heartbeat))
        .route("/runs/{id}/finish", post(runs::finish_run))
        .route("/runs/{id}/cancel", post(runs::cancel_run))
        .route("/runs/{id}/control", get(runs::run_control))
        .route(
            "/tokens",
            post(tokens::create_token).get(tokens::list_tokens),
        )
        .route("/tokens/current", delete(tokens::revoke_current))
        .route("/tokens/{id}", delete(tokens::revoke_token))
        .route(
            "/discussions",
            post(discussions::create_discussion).get(discussions::list_discussions),
        )
        .route(
            "/discussions/{id}",
            get(discussions::get_discussion).delete(discussions::delete_empty),
        )
        .route("/discussions/{id}/events", post(discussions::ingest_events))
        .route("/discussions/{id}/tokens", post(discussions::create_token))
        .route("/discussions/{id}/promote", post(discussions::promote))
        .route(
            "/browser-logins",
            post(browser_logins::create_browser_login),
        );
    Router::new()
        .nest("/api/v1", api)
        .merge(crate::web::router())
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(run_to_completion))
        .with_state(state)
}

/// Handle each request on its own task. The HTTP server drops a request's future when the
/// client goes away; mid-transaction that would leave SQLite's write lock held until the
/// connection is next used, and every other writer would wait on it. A detached task always
/// commits or rolls back.
async fn run_to_completion(req: Request, next: Next) -> Response {
    match tokio::spawn(next.run(req)).await {
        Ok(response) => response,
        Err(_) => Failure::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request handler stopped unexpectedly; retry later or check the server log",
        )
        .into_response(),
    }
}

/// Under `/api` a JSON error, like every API answer; anywhere else a page, as a browser
/// that followed a wrong link expects.
async fn no_route(uri: Uri) -> Response {
    let path = uri.path();
    if path == "/api" || path.starts_with("/api/") {
        Failure::new(
            StatusCode::NOT_FOUND,
            "no such API route; /api/v1/openapi.json lists the routes",
        )
        .into_response()
    } else {
        crate::web::no_page()
    }
}

/// A route asked with a method it does not take: said in words, JSON under `/api` and a page
/// anywhere else, as for a route that is not there.
async fn wrong_method(method: axum::http::Method, uri: Uri) -> Response {
    let path = uri.path();
    let status = StatusCode::METHOD_NOT_ALLOWED;
    if path == "/api" || path.starts_with("/api/") {
        Failure::new(
            status,
            format!(
                "{path} does not take {method}; /api/v1/openapi.json lists what each route takes"
            ),
        )
        .into_response()
    } else {
        crate::web::error_page(
            status,
            "this page cannot be asked for that way; open it from a link",
        )
    }
}

/// `Json<T>` whose rejections are `ApiError` bodies like every other error.
/// The parameters of a query string, or a 400 that says what was wrong with it and, when
/// `expected` is not empty, what the parameters take.
pub(crate) fn query_params<T>(
    query: Result<axum::extract::Query<T>, axum::extract::rejection::QueryRejection>,
    expected: &str,
) -> Result<T, Failure> {
    query.map(|q| q.0).map_err(|e| {
        let text = e.body_text();
        let message = if expected.is_empty() {
            format!("invalid query: {text}")
        } else {
            format!("invalid query: {text}; {expected}")
        };
        Failure::new(StatusCode::BAD_REQUEST, message)
    })
}

/// A forward page of a log (a run's messages, a discussion's entries), bounded in bytes.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// After this position (the `next_after` of the previous page; default 0, from the first).
    after: Option<i64>,
    /// At most this many bytes (of the stored texts), 1 to 16 MiB, default 1 MiB; a single one
    /// bigger than that comes alone.
    max_bytes: Option<u64>,
}

/// The `after` and `max_bytes` of the page of `what`s asked for, or a 400 that says what they
/// take.
pub(crate) fn page_asked(
    query: Result<axum::extract::Query<PageQuery>, axum::extract::rejection::QueryRejection>,
    what: &str,
) -> Result<(i64, u64), Failure> {
    use wujie_store::{DEFAULT_MESSAGE_PAGE_BYTES, MAX_MESSAGE_PAGE_BYTES};
    let query = query_params(
        query,
        &format!(
            "after is the position of a {what} (a whole number, the next_after of the previous \
             page) and max_bytes a number of bytes"
        ),
    )?;
    let max_bytes = query.max_bytes.unwrap_or(DEFAULT_MESSAGE_PAGE_BYTES);
    if !(1..=MAX_MESSAGE_PAGE_BYTES).contains(&max_bytes) {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            format!("max_bytes must be 1 to {MAX_MESSAGE_PAGE_BYTES} (16 MiB), not {max_bytes}"),
        ));
    }
    let after = query.after.unwrap_or(0);
    if after < 0 {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            format!("after must be a {what} position, 0 or more, not {after}"),
        ));
    }
    Ok((after, max_bytes))
}

pub(crate) struct Body<T>(pub(crate) T);

impl<T> FromRequest<AppState> for Body<T>
where
    T: DeserializeOwned,
{
    type Rejection = Failure;

    /// A body that does not arrive within `body_read_timeout` is answered with 408, so a
    /// client trickling it cannot hold the connection.
    async fn from_request(req: Request, state: &AppState) -> Result<Self, Failure> {
        let json = within_body_timeout(state, axum::Json::<T>::from_request(req, state)).await?;
        Ok(Body(json?.0))
    }
}

/// Reads a request's body (`read`), or answers 408 when it does not arrive within
/// `body_read_timeout`.
pub(crate) async fn within_body_timeout<T>(
    state: &AppState,
    read: impl std::future::Future<Output = T>,
) -> Result<T, Failure> {
    let limit = state.config.body_read_timeout;
    tokio::time::timeout(limit, read).await.map_err(|_| {
        Failure::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} s; send it at once",
                limit.as_secs()
            ),
        )
    })
}
