//! The web UI: server-rendered pages at `/` over the same store as the API, with a little
//! JavaScript (`assets/app.js`) that follows an issue's live feed, through one connection per
//! browser (`assets/feed.js`, see `live`). Every page works without JavaScript; the assets are
//! compiled into the binary.
//!
//! Agent text never runs in the page: templates escape every value (maud), Markdown is
//! rendered with raw HTML turned into text and links limited to safe schemes (`markdown`), and
//! the Content-Security-Policy allows scripts from this server's own files only.

mod actions;
mod auth;
mod code;
mod live;
mod markdown;
mod pages;
mod return_to;
mod time;
mod view;

use axum::Router;
use axum::extract::{FromRequest, Request};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde::de::DeserializeOwned;
use wujie_store::StoreError;

pub(crate) use auth::{LOGIN_CODE_TTL, LoginCodes};

use crate::AppState;
use crate::request_log::AnsweredError;

pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(pages::issues))
        .route("/board", get(pages::board))
        .route("/issues", post(actions::create_issue))
        .route("/issues/{key}", get(pages::issue))
        .route("/issues/{key}/edit", post(actions::edit_issue))
        .route("/issues/{key}/comments", post(actions::comment))
        .route("/issues/{key}/status", post(actions::set_status))
        .route("/issues/{key}/jobs", post(actions::assign))
        .route("/issues/{key}/jobs/{id}/cancel", post(actions::cancel_job))
        .route("/runs/{id}/cancel", post(actions::cancel_run))
        .route("/live", get(live::issues_feed))
        .route("/discussions", get(pages::discussions))
        .route("/discussions/{id}", get(pages::discussion))
        .route("/discussions/{id}/promote", post(actions::promote))
        .route(
            "/login",
            get(auth::handlers::login_page).post(auth::handlers::login_with_token),
        )
        .route("/logout", post(auth::handlers::logout))
        .route("/assets/style.css", get(style))
        .route("/assets/app.js", get(script))
        .route("/assets/feed.js", get(feed_worker))
        .layer(middleware::map_response(security_headers))
}

/// Scripts and styles only from this server's files; no frames, no plugins, forms post only
/// here. With this, even markup that slipped through could not run a script.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; \
     frame-ancestors 'none'";

async fn security_headers(response: Response) -> Response {
    secured(response)
}

/// The answer to an address that is no page: a 404 page, with the pages' headers.
pub(crate) fn no_page() -> Response {
    error_page(
        StatusCode::NOT_FOUND,
        "there is no page at this address; check the link, or start from the issues",
    )
}

/// An error page with the pages' security headers, for answers outside any page's handler.
pub(crate) fn error_page(status: StatusCode, message: &str) -> Response {
    secured(WebError::new(status, message).into_response())
}

fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = [
        ("content-security-policy", CONTENT_SECURITY_POLICY),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        // Not `no-referrer`: under it a browser sends `Origin: null` with a form post, and
        // the origin check could not tell our own pages from any other.
        ("referrer-policy", "same-origin"),
    ];
    for (name, value) in set {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", include_str!("assets/style.css"))
}

async fn script() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/app.js"),
    )
}

async fn feed_worker() -> Response {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("assets/feed.js"),
    )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (CACHE_CONTROL, HeaderValue::from_static("max-age=300")),
        ],
        body,
    )
        .into_response()
}

/// An answer other than the page asked for: to the login page (which then goes on to `next`),
/// or an error page.
#[derive(Debug)]
pub(crate) enum WebError {
    LoginNeeded { next: Option<return_to::ReturnTo> },
    Page { status: StatusCode, message: String },
}

impl WebError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> WebError {
        WebError::Page {
            status,
            message: message.into(),
        }
    }
}

impl From<StoreError> for WebError {
    /// The same status and message as the API's answer to that store error.
    fn from(e: StoreError) -> Self {
        crate::error::Failure::from(e).into()
    }
}

impl From<crate::error::Failure> for WebError {
    fn from(f: crate::error::Failure) -> Self {
        let (status, message) = f.parts();
        WebError::new(status, message)
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        match self {
            WebError::LoginNeeded { next } => {
                let login = next.map_or_else(|| "/login".to_owned(), |next| next.login_href());
                see_other(&login)
            }
            WebError::Page { status, message } => {
                let mut response =
                    (status, html(view::error_page(status.as_u16(), &message))).into_response();
                response.extensions_mut().insert(AnsweredError(message));
                response
            }
        }
    }
}

/// Reads an `application/x-www-form-urlencoded` body within the server's body timeout.
pub(crate) async fn read_form<T: DeserializeOwned>(
    req: Request,
    state: &AppState,
) -> Result<T, WebError> {
    let form = crate::routes::within_body_timeout(state, axum::Form::<T>::from_request(req, state))
        .await?;
    match form {
        Ok(axum::Form(value)) => Ok(value),
        Err(rejection) => Err(WebError::new(
            rejection.status(),
            format!("the form could not be read: {}", rejection.body_text()),
        )),
    }
}

/// A rendered page as a response.
pub(crate) fn html(markup: maud::Markup) -> Html<String> {
    Html(markup.into_string())
}

/// After a form is handled: back to a page (303, so a reload does not post again).
pub(crate) fn see_other(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(value) => (StatusCode::SEE_OTHER, [(LOCATION, value)]).into_response(),
        Err(_) => WebError::new(StatusCode::BAD_REQUEST, "not a valid address").into_response(),
    }
}
