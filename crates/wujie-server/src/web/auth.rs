//! Logging a browser in: a user token (pasted into the login form, or behind a one-time login
//! link that `wujie ui` prints) opens a session held in this server's memory, named by an
//! HttpOnly, SameSite=Strict cookie. Every state-changing request from a page must come from
//! this server's own origin (`Origin` header) and carry the session's CSRF token in its form.
//!
//! Only SHA-256 hashes of login codes and session ids are kept, so a memory dump of the
//! server gives neither. A session remembers the id of the token that opened it and ends as
//! soon as that token is revoked. The CSRF token is derived from the session id, never stored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::{COOKIE, HOST, ORIGIN};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use rand::RngCore;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use super::WebError;
use crate::AppState;

/// A login link works once, for this long after `wujie ui` printed it.
pub(crate) const LOGIN_CODE_TTL: Duration = Duration::from_secs(5 * 60);
/// A browser stays logged in this long (or until its token is revoked, or the server stops).
const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// Bounds on what unauthenticated or forgotten browsers can make the server hold.
const MAX_PENDING_CODES: usize = 256;
const MAX_SESSIONS: usize = 4096;

const SESSION_COOKIE: &str = "wujie_session";

/// The server's login codes and browser sessions. Clones share them.
#[derive(Clone, Default)]
pub(crate) struct BrowserAuth(Arc<Mutex<Sessions>>);

#[derive(Default)]
struct Sessions {
    /// hash of a login code → the token it logs in as, and until when.
    codes: HashMap<String, Grant>,
    /// hash of a session id → the token it speaks for, and until when.
    sessions: HashMap<String, Grant>,
}

struct Grant {
    token_id: String,
    expires: Instant,
}

fn random_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Equal without an early exit, so the time taken does not tell how much of a guess matched.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |diff, (x, y)| diff | (x ^ y))
            == 0
}

impl BrowserAuth {
    fn lock(&self) -> MutexGuard<'_, Sessions> {
        // A panic while holding the lock leaves plain maps behind, still consistent.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A one-time login code for `token_id`, or `None` when too many are waiting unused.
    pub(crate) fn mint_login_code(&self, token_id: &str) -> Option<String> {
        let mut state = self.lock();
        let now = Instant::now();
        state.codes.retain(|_, g| g.expires > now);
        if state.codes.len() >= MAX_PENDING_CODES {
            return None;
        }
        let code = random_secret();
        state.codes.insert(
            hash(&code),
            Grant {
                token_id: token_id.to_owned(),
                expires: now + LOGIN_CODE_TTL,
            },
        );
        Some(code)
    }

    /// Takes a login code: the token id it was minted for, once, while it has not expired.
    fn redeem(&self, code: &str) -> Option<String> {
        let grant = self.lock().codes.remove(&hash(code))?;
        (grant.expires > Instant::now()).then_some(grant.token_id)
    }

    /// Opens a session for `token_id`; returns its id (the cookie's value).
    fn open_session(&self, token_id: &str) -> String {
        let mut state = self.lock();
        let now = Instant::now();
        state.sessions.retain(|_, g| g.expires > now);
        if state.sessions.len() >= MAX_SESSIONS {
            // The session closest to its end goes first.
            if let Some(oldest) = state
                .sessions
                .iter()
                .min_by_key(|(_, g)| g.expires)
                .map(|(k, _)| k.clone())
            {
                state.sessions.remove(&oldest);
            }
        }
        let id = random_secret();
        state.sessions.insert(
            hash(&id),
            Grant {
                token_id: token_id.to_owned(),
                expires: now + SESSION_TTL,
            },
        );
        id
    }

    fn session_token(&self, session_id: &str) -> Option<String> {
        let state = self.lock();
        let grant = state.sessions.get(&hash(session_id))?;
        (grant.expires > Instant::now()).then(|| grant.token_id.clone())
    }

    fn close_session(&self, session_id: &str) {
        self.lock().sessions.remove(&hash(session_id));
    }
}

fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
        .filter(|v| !v.is_empty())
}

/// True when the page was served over TLS by a proxy in front of this server (the server
/// itself speaks plain HTTP on loopback).
fn served_over_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

fn cookie_header(value: &str, max_age: Duration, headers: &HeaderMap) -> HeaderValue {
    let secure = if served_over_tls(headers) {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        max_age.as_secs()
    );
    // Hex digits and fixed ASCII only.
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A state-changing request must come from a page of this server: its `Origin` is the origin
/// the browser reached us at. A form posted by another site carries that site's origin.
fn check_origin(headers: &HeaderMap) -> Result<(), WebError> {
    let host = headers.get(HOST).and_then(|h| h.to_str().ok());
    let origin = headers.get(ORIGIN).and_then(|o| o.to_str().ok());
    let scheme = if served_over_tls(headers) {
        "https"
    } else {
        "http"
    };
    match (host, origin) {
        (Some(host), Some(origin)) if origin == format!("{scheme}://{host}") => Ok(()),
        (_, None) => Err(WebError::new(
            StatusCode::FORBIDDEN,
            "the request carries no Origin header, so it cannot be told apart from a forged \
             one; send it from the page in a current browser",
        )),
        _ => Err(WebError::new(
            StatusCode::FORBIDDEN,
            "the request came from another site's page and was refused; use this server's own \
             pages",
        )),
    }
}

/// The logged-in browser behind a request.
pub(crate) struct Viewer {
    session_id: String,
    /// The user token that logged the browser in.
    token_id: String,
}

impl Viewer {
    /// The token a page's forms must send back: derived from the session id, which only this
    /// browser (its HttpOnly cookie) and the server know.
    pub(crate) fn csrf_token(&self) -> String {
        hash(&format!("wujie-csrf:{}", self.session_id))
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, WebError> {
        let session_id = session_cookie(&parts.headers).ok_or(WebError::LoginNeeded)?;
        let token_id = state
            .browser
            .session_token(session_id)
            .ok_or(WebError::LoginNeeded)?;
        if !state.store.user_token_active(&token_id).await? {
            state.browser.close_session(session_id);
            return Err(WebError::LoginNeeded);
        }
        Ok(Viewer {
            session_id: session_id.to_owned(),
            token_id,
        })
    }
}

/// A form posted by a logged-in page: from this server's origin, with the session's CSRF
/// token (field `csrf`). Handlers of state-changing requests take their input only this way.
pub(crate) struct CsrfForm<T> {
    pub(crate) form: T,
    /// The user token that logged the browser in: who the change is recorded as.
    pub(crate) token_id: String,
}

#[derive(Deserialize)]
struct WithCsrf<T> {
    #[serde(default)]
    csrf: String,
    #[serde(flatten)]
    fields: T,
}

impl<T: DeserializeOwned + Send> FromRequest<AppState> for CsrfForm<T> {
    type Rejection = WebError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, WebError> {
        let (mut parts, body) = req.into_parts();
        check_origin(&parts.headers)?;
        let viewer = Viewer::from_request_parts(&mut parts, state).await?;
        let req = Request::from_parts(parts, body);
        let form: WithCsrf<T> = super::read_form(req, state).await?;
        if !same(&form.csrf, &viewer.csrf_token()) {
            return Err(WebError::new(
                StatusCode::FORBIDDEN,
                "the form's security token does not match this browser's session (it may be \
                 from an older page); reload the page and try again",
            ));
        }
        Ok(CsrfForm {
            form: form.fields,
            token_id: viewer.token_id,
        })
    }
}

pub(crate) mod handlers {
    //! `/login` and `/logout`.

    use axum::extract::{Query, State};
    use axum::http::header::{LOCATION, SET_COOKIE};
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use serde::Deserialize;
    use wujie_store::Principal;

    use super::{CsrfForm, SESSION_TTL, check_origin, cookie_header, session_cookie};
    use crate::AppState;
    use crate::web::{WebError, html, read_form, view};

    #[derive(Deserialize)]
    pub(crate) struct LoginLink {
        code: Option<String>,
    }

    #[derive(Deserialize)]
    pub(crate) struct TokenForm {
        #[serde(default)]
        token: String,
    }

    #[derive(Deserialize)]
    pub(crate) struct Nothing {}

    fn logged_in(state: &AppState, token_id: &str, headers: &HeaderMap) -> Response {
        let session = state.browser.open_session(token_id);
        (
            StatusCode::SEE_OTHER,
            [
                (SET_COOKIE, cookie_header(&session, SESSION_TTL, headers)),
                (LOCATION, axum::http::HeaderValue::from_static("/")),
            ],
        )
            .into_response()
    }

    /// `GET /login`: the token form, or, with `?code=`, a one-time login link.
    pub(crate) async fn login_page(
        State(state): State<AppState>,
        Query(link): Query<LoginLink>,
        headers: HeaderMap,
    ) -> Response {
        let Some(code) = link.code else {
            return html(view::login(None)).into_response();
        };
        match state.browser.redeem(&code) {
            Some(token_id) => logged_in(&state, &token_id, &headers),
            None => (
                StatusCode::BAD_REQUEST,
                html(view::login(Some(
                    "This login link was already used or has expired (links work once, for 5 \
                     minutes). Run `wujie ui` again for a new one, or paste a token below.",
                ))),
            )
                .into_response(),
        }
    }

    /// `POST /login`: a pasted user token.
    pub(crate) async fn login_with_token(
        State(state): State<AppState>,
        req: axum::extract::Request,
    ) -> Result<Response, WebError> {
        check_origin(req.headers())?;
        let headers = req.headers().clone();
        let form: TokenForm = read_form(req, &state).await?;
        let refused = |message: &str| {
            Ok((StatusCode::UNAUTHORIZED, html(view::login(Some(message)))).into_response())
        };
        match state.store.verify_token(form.token.trim()).await? {
            Some(Principal::User { token_id }) => Ok(logged_in(&state, &token_id, &headers)),
            Some(_) => refused(
                "That token belongs to one run or discussion; log in with a user token \
                 (`wujie token create`).",
            ),
            None => refused(
                "That token is unknown or revoked. Use `wujie ui` for a login link, or a token \
                 from `wujie token create`.",
            ),
        }
    }

    /// `POST /logout`.
    pub(crate) async fn logout(
        State(state): State<AppState>,
        headers: HeaderMap,
        CsrfForm {
            form: Nothing {}, ..
        }: CsrfForm<Nothing>,
    ) -> Response {
        if let Some(session) = session_cookie(&headers) {
            state.browser.close_session(session);
        }
        (
            StatusCode::SEE_OTHER,
            [
                (
                    SET_COOKIE,
                    cookie_header("", std::time::Duration::ZERO, &headers),
                ),
                (LOCATION, axum::http::HeaderValue::from_static("/login")),
            ],
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_code_works_once() {
        let auth = BrowserAuth::default();
        let code = auth.mint_login_code("t1").expect("code");
        assert_eq!(auth.redeem(&code).as_deref(), Some("t1"));
        assert_eq!(auth.redeem(&code), None);
        assert_eq!(auth.redeem("not-a-code"), None);
    }

    #[test]
    fn only_hashes_are_kept() {
        let auth = BrowserAuth::default();
        let code = auth.mint_login_code("t1").expect("code");
        let session = auth.open_session("t1");
        let state = auth.lock();
        assert!(!state.codes.contains_key(&code));
        assert!(state.codes.contains_key(&hash(&code)));
        assert!(!state.sessions.contains_key(&session));
        assert!(state.sessions.contains_key(&hash(&session)));
    }

    #[test]
    fn an_expired_code_is_refused() {
        let auth = BrowserAuth::default();
        let code = auth.mint_login_code("t1").expect("code");
        auth.lock()
            .codes
            .values_mut()
            .for_each(|g| g.expires = Instant::now());
        assert_eq!(auth.redeem(&code), None);
    }

    #[test]
    fn unused_codes_are_bounded() {
        let auth = BrowserAuth::default();
        for _ in 0..MAX_PENDING_CODES {
            assert!(auth.mint_login_code("t").is_some());
        }
        assert!(auth.mint_login_code("t").is_none());
    }

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=1; wujie_session=abc; b=2"),
        );
        assert_eq!(session_cookie(&headers), Some("abc"));
        headers.insert(COOKIE, HeaderValue::from_static("wujie_session="));
        assert_eq!(session_cookie(&headers), None);
    }

    #[test]
    fn origins_other_than_our_own_are_refused() {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("127.0.0.1:7878"));
        assert!(check_origin(&headers).is_err(), "no Origin");
        headers.insert(ORIGIN, HeaderValue::from_static("http://evil.example"));
        assert!(check_origin(&headers).is_err());
        headers.insert(ORIGIN, HeaderValue::from_static("http://127.0.0.1:7878"));
        assert!(check_origin(&headers).is_ok());
        headers.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        assert!(check_origin(&headers).is_err(), "scheme differs");
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_secure_over_tls() {
        let mut headers = HeaderMap::new();
        let plain = cookie_header("abc", SESSION_TTL, &headers);
        let plain = plain.to_str().expect("ascii");
        assert!(plain.contains("HttpOnly") && plain.contains("SameSite=Strict"));
        assert!(!plain.contains("Secure"));
        headers.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        let tls = cookie_header("abc", SESSION_TTL, &headers);
        assert!(tls.to_str().expect("ascii").ends_with("; Secure"));
    }
}
