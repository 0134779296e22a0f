//! Logging a browser in: a user token (pasted into the login form, or behind a one-time login
//! link that `wujie ui` prints) opens a session kept in the database (so it outlives a restart
//! of the server), named by an HttpOnly, SameSite=Lax cookie of this server's own. Every
//! state-changing request from a page must come from this server's own origin (`Origin`
//! header) and carry the session's CSRF token in its form.
//!
//! Only SHA-256 hashes of login codes (in memory) and session ids (in the store) are kept, so
//! neither a memory dump nor the database gives one. A session remembers the id of the token
//! that opened it and ends as soon as that token is revoked or expires. The CSRF token is
//! derived from the session id, never stored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::{COOKIE, HOST, ORIGIN};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use rand::RngCore;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use wujie_store::{Store, StoreError};

use super::WebError;
use super::return_to::ReturnTo;
use crate::AppState;

/// A login link works once, for this long after `wujie ui` printed it.
pub(crate) const LOGIN_CODE_TTL: Duration = Duration::from_secs(5 * 60);
/// A browser stays logged in this long (or until its token is revoked or expires).
const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// Bound on what unauthenticated or forgotten browsers can make the server hold.
const MAX_PENDING_CODES: usize = 256;

/// The session cookie's name, with the port the browser reached us at: cookies are kept per
/// host, not per port, so two servers on one host would otherwise replace each other's.
const SESSION_COOKIE: &str = "wujie_session";

/// The server's unused login codes. Clones share them. They live in memory only: a code is
/// good for minutes, and `wujie ui` prints a new one when it starts again.
#[derive(Clone, Default)]
pub(crate) struct LoginCodes(Arc<Mutex<HashMap<String, Grant>>>);

/// hash of a login code → the token it logs in as, and until when.
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

impl LoginCodes {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Grant>> {
        // A panic while holding the lock leaves a plain map behind, still consistent.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A one-time login code for `token_id`, or `None` when too many are waiting unused.
    pub(crate) fn mint(&self, token_id: &str) -> Option<String> {
        let mut codes = self.lock();
        let now = Instant::now();
        codes.retain(|_, g| g.expires > now);
        if codes.len() >= MAX_PENDING_CODES {
            return None;
        }
        let code = random_secret();
        codes.insert(
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
        let grant = self.lock().remove(&hash(code))?;
        (grant.expires > Instant::now()).then_some(grant.token_id)
    }
}

/// The session cookie's name for a request: suffixed with the port in its `Host`.
fn cookie_name(headers: &HeaderMap) -> String {
    let port = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|host| host.rsplit_once(':'))
        .map(|(_, port)| port)
        .filter(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    match port {
        Some(port) => format!("{SESSION_COOKIE}_{port}"),
        None => SESSION_COOKIE.to_owned(),
    }
}

fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    let name = cookie_name(headers);
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(found, _)| *found == name)
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
    // Lax: a link from another site opens the page logged in. What changes anything is a
    // POST, which Lax keeps the cookie from, and which needs our Origin and the CSRF token.
    let cookie = format!(
        "{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        cookie_name(headers),
        max_age.as_secs()
    );
    // Hex digits, a port's digits and fixed ASCII only.
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
#[derive(Clone)]
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

    /// The user token that logged the browser in, which its live feeds count against.
    pub(crate) fn token_id(&self) -> &str {
        &self.token_id
    }

    /// False once the session has ended: logged out, expired, or its token revoked or expired.
    pub(crate) async fn still_logged_in(&self, store: &Store) -> Result<bool, StoreError> {
        Ok(store
            .browser_session_token(&self.session_id)
            .await?
            .is_some())
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, WebError> {
        // After logging in, back to the page asked for (a form's POST is not a page).
        let login_needed = || WebError::LoginNeeded {
            next: (parts.method == Method::GET)
                .then(|| parts.uri.path_and_query())
                .flatten()
                .and_then(|pq| ReturnTo::parse(pq.as_str()))
                .filter(|next| next.path() != "/"),
        };
        let session_id = session_cookie(&parts.headers).ok_or_else(login_needed)?;
        let token_id = state
            .store
            .browser_session_token(session_id)
            .await?
            .ok_or_else(login_needed)?;
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
    use axum::http::{HeaderMap, HeaderValue, StatusCode};
    use axum::response::{IntoResponse, Response};
    use serde::Deserialize;
    use wujie_store::Principal;

    use super::{CsrfForm, SESSION_TTL, check_origin, cookie_header, session_cookie};
    use crate::AppState;
    use crate::web::return_to::ReturnTo;
    use crate::web::{WebError, html, read_form, view};

    #[derive(Deserialize)]
    pub(crate) struct LoginLink {
        code: Option<String>,
        #[serde(default)]
        next: String,
    }

    #[derive(Deserialize)]
    pub(crate) struct TokenForm {
        #[serde(default)]
        token: String,
        #[serde(default)]
        next: String,
    }

    #[derive(Deserialize)]
    pub(crate) struct Nothing {}

    async fn logged_in(
        state: &AppState,
        token_id: &str,
        headers: &HeaderMap,
        next: Option<ReturnTo>,
    ) -> Result<Response, WebError> {
        let session = state
            .store
            .open_browser_session(token_id, SESSION_TTL)
            .await?;
        let to = next.as_ref().map_or("/", ReturnTo::path);
        // A path of ours is visible ASCII, which a header value takes.
        let location = HeaderValue::from_str(to).unwrap_or(HeaderValue::from_static("/"));
        Ok((
            StatusCode::SEE_OTHER,
            [
                (SET_COOKIE, cookie_header(&session, SESSION_TTL, headers)),
                (LOCATION, location),
            ],
        )
            .into_response())
    }

    /// `GET /login`: the token form, or, with `?code=`, a one-time login link; `next` is the
    /// page to go on to.
    pub(crate) async fn login_page(
        State(state): State<AppState>,
        Query(link): Query<LoginLink>,
        headers: HeaderMap,
    ) -> Result<Response, WebError> {
        let next = ReturnTo::parse(&link.next);
        let Some(code) = link.code else {
            return Ok(html(view::login(None, next.as_ref())).into_response());
        };
        match state.login_codes.redeem(&code) {
            Some(token_id) => logged_in(&state, &token_id, &headers, next).await,
            None => Ok((
                StatusCode::BAD_REQUEST,
                html(view::login(
                    Some(
                        "This login link was already used or has expired (links work once, \
                         for 5 minutes). Run `wujie ui` again for a new one, or paste a token \
                         below.",
                    ),
                    next.as_ref(),
                )),
            )
                .into_response()),
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
        let next = ReturnTo::parse(&form.next);
        let refused = |message: &str| {
            Ok((
                StatusCode::UNAUTHORIZED,
                html(view::login(Some(message), next.as_ref())),
            )
                .into_response())
        };
        match state.store.verify_token(form.token.trim()).await? {
            Some(Principal::User { token_id }) => {
                logged_in(&state, &token_id, &headers, next.clone()).await
            }
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
    ) -> Result<Response, WebError> {
        if let Some(session) = session_cookie(&headers) {
            state.store.close_browser_session(session).await?;
            // The session's open pages stop following their issues now, not at their next check.
            state.config.open_feeds.access_changed();
        }
        Ok((
            StatusCode::SEE_OTHER,
            [
                (
                    SET_COOKIE,
                    cookie_header("", std::time::Duration::ZERO, &headers),
                ),
                (LOCATION, HeaderValue::from_static("/login")),
            ],
        )
            .into_response())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_code_works_once() {
        let codes = LoginCodes::default();
        let code = codes.mint("t1").expect("code");
        assert_eq!(codes.redeem(&code).as_deref(), Some("t1"));
        assert_eq!(codes.redeem(&code), None);
        assert_eq!(codes.redeem("not-a-code"), None);
    }

    #[test]
    fn only_hashes_are_kept() {
        let codes = LoginCodes::default();
        let code = codes.mint("t1").expect("code");
        let kept = codes.lock();
        assert!(!kept.contains_key(&code));
        assert!(kept.contains_key(&hash(&code)));
    }

    #[test]
    fn an_expired_code_is_refused() {
        let codes = LoginCodes::default();
        let code = codes.mint("t1").expect("code");
        codes
            .lock()
            .values_mut()
            .for_each(|g| g.expires = Instant::now());
        assert_eq!(codes.redeem(&code), None);
    }

    #[test]
    fn unused_codes_are_bounded() {
        let codes = LoginCodes::default();
        for _ in 0..MAX_PENDING_CODES {
            assert!(codes.mint("t").is_some());
        }
        assert!(codes.mint("t").is_none());
    }

    #[test]
    fn the_session_cookie_is_this_servers_own_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("127.0.0.1:7878"));
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=1; wujie_session_7979=other; wujie_session_7878=abc; b=2"),
        );
        assert_eq!(session_cookie(&headers), Some("abc"));
        headers.insert(COOKIE, HeaderValue::from_static("wujie_session_7878="));
        assert_eq!(session_cookie(&headers), None);
        // Without a port in Host (a proxy on 443), the plain name.
        headers.insert(HOST, HeaderValue::from_static("wujie.example"));
        headers.insert(COOKIE, HeaderValue::from_static("wujie_session=abc"));
        assert_eq!(session_cookie(&headers), Some("abc"));
        headers.insert(HOST, HeaderValue::from_static("[::1]"));
        assert_eq!(cookie_name(&headers), "wujie_session");
        headers.insert(HOST, HeaderValue::from_static("[::1]:8080"));
        assert_eq!(cookie_name(&headers), "wujie_session_8080");
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
    fn the_cookie_is_http_only_lax_and_secure_over_tls() {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("127.0.0.1:7878"));
        let plain = cookie_header("abc", SESSION_TTL, &headers);
        let plain = plain.to_str().expect("ascii");
        assert!(plain.starts_with("wujie_session_7878=abc;"), "{plain}");
        assert!(plain.contains("HttpOnly") && plain.contains("SameSite=Lax"));
        assert!(!plain.contains("Secure"));
        headers.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        let tls = cookie_header("abc", SESSION_TTL, &headers);
        assert!(tls.to_str().expect("ascii").ends_with("; Secure"));
    }
}
