//! Typed HTTP client of the Wujie API (`/api/v1`). One async method per route; errors name the
//! route's path and the server's message, never the token.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Re-exported so callers can match on `ClientError` without depending on reqwest.
pub use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wujie_protocol::api::{
    ApiError, BrowserLogin, Comment, CreateComment, CreateDiscussion, CreateIssue, CreateRun,
    CreateToken, CreatedDiscussion, CreatedRun, CreatedToken, Discussion, EditIssue, FinishRun,
    FinishedRun, IngestBatch, IngestResult, IssueDetail, IssueQuery, IssueStatus, IssueSummary,
    PromoteDiscussion, Promoted, Run, RunMessagePage, RunSummary, SetIssueStatus, TokenInfo,
    Workspace,
};
use wujie_protocol::git::GitChanges;

mod feed;
mod jobs;
mod replicas;
mod retry_pause;
mod run_control;
pub use feed::{FeedEvent, IssueFeed};
pub use jobs::JobQuery;
use replicas::Replicas;
pub use retry_pause::retry_pause;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Idle connections are given up well before a server with default settings closes them (30 s
/// without a request), so a request is rarely sent on a connection the server is closing.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(15);

/// A bearer token. Its `Debug` and `Display` never show the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    pub fn new(secret: impl Into<String>) -> Token {
        Token(secret.into())
    }

    /// The secret itself, for handing to a child process's environment.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

impl From<String> for Token {
    fn from(secret: String) -> Token {
        Token(secret)
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted token>")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid server URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error("cannot build the HTTP client: {0}")]
    Build(String),
    /// The request did not get an answer (connection refused, reset, timed out). Retryable.
    #[error("{method} {path}: {message}")]
    Network {
        method: Method,
        path: String,
        message: String,
        timeout: bool,
    },
    /// The server answered with an error status and its `error` message.
    #[error("{method} {path}: server answered {status}: {message}")]
    Status {
        method: Method,
        path: String,
        status: StatusCode,
        message: String,
        /// How long the server asked to wait before sending the same again (`Retry-After`).
        retry_after: Option<Duration>,
    },
    /// The server answered 2xx with a body that is not the expected JSON.
    #[error("{method} {path}: cannot read the server's answer: {message}")]
    Decode {
        method: Method,
        path: String,
        message: String,
    },
}

impl ClientError {
    /// Whether trying the same request again later may succeed: network failures, timeouts,
    /// 5xx and 429. Other 4xx answers and undecodable answers will not change by retrying.
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Network { .. } => true,
            ClientError::Status { status, .. } => {
                status.is_server_error() || *status == StatusCode::TOO_MANY_REQUESTS
            }
            _ => false,
        }
    }

    /// How long the server asked to wait before the same request is sent again.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ClientError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The HTTP status the server answered with, if it answered with an error.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// Client of one server (or of several replicas of it) with one token. Clones share which
/// replica they talk to.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    replicas: Arc<Replicas>,
    token: Token,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("replicas", &self.replicas)
            .field("token", &self.token)
            .finish()
    }
}

/// Encodes one path segment (keys and ids are plain, but a user may type anything).
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Client {
    /// `base_url` is the server's root, e.g. `http://127.0.0.1:7070`, or the roots of several
    /// replicas of one server separated by commas: a request that cannot connect to one is
    /// sent to the next, and after a request that got no answer the next request goes to the
    /// next replica.
    pub fn new(base_url: &str, token: Token) -> Result<Client, ClientError> {
        let replicas = Arc::new(Replicas::parse(base_url)?);
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .build()
            .map_err(|e| ClientError::Build(e.to_string()))?;
        Ok(Client {
            http,
            replicas,
            token,
        })
    }

    /// The root of the server (the replica) requests go to now.
    pub fn base_url(&self) -> &str {
        self.replicas.url(self.replicas.current())
    }

    /// The roots of every replica, comma-separated, [`Client::base_url`] first and then the
    /// others in the order given: a list for [`Client::new`] that starts where this one is.
    pub fn replicas_in_order(&self) -> String {
        self.replicas.in_order()
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<reqwest::Response, ClientError> {
        self.send_keyed(method, path, body, None).await
    }

    /// `send` with an `Idempotency-Key` header when `start_key` is given.
    async fn send_keyed(
        &self,
        method: Method,
        path: &str,
        mut body: Option<Vec<u8>>,
        start_key: Option<&str>,
    ) -> Result<reqwest::Response, ClientError> {
        let first = self.replicas.current();
        let mut attempt = 0;
        let resp = loop {
            let index = first + attempt;
            let last = attempt + 1 == self.replicas.len();
            let url = format!("{}/api/v1{path}", self.replicas.url(index));
            let mut req = self
                .http
                .request(method.clone(), &url)
                .bearer_auth(&self.token.0);
            if let Some(key) = start_key {
                req = req.header("idempotency-key", key);
            }
            // Kept for the next replica while there is one.
            let this_body = if last { body.take() } else { body.clone() };
            if let Some(bytes) = this_body {
                req = req
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(bytes);
            }
            match req.send().await {
                Ok(resp) => {
                    self.replicas.answered(index);
                    break resp;
                }
                // Not connected, so nothing was sent: another replica may take any request.
                Err(e) if e.is_connect() && !last => attempt += 1,
                Err(e) => {
                    self.replicas.failed(index);
                    return Err(network_error(&method, path, e));
                }
            }
        };
        if resp.status().is_success() {
            return Ok(resp);
        }
        Err(status_error(method, path.to_owned(), resp).await)
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&(dyn ErasedBody + Sync)>,
    ) -> Result<T, ClientError> {
        self.call_keyed(method, path, body, None).await
    }

    /// `call` with an `Idempotency-Key` header when `start_key` is given.
    async fn call_keyed<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&(dyn ErasedBody + Sync)>,
        start_key: Option<&str>,
    ) -> Result<T, ClientError> {
        let body = match body {
            Some(body) => Some(body.to_json().map_err(|e| ClientError::Decode {
                method: method.clone(),
                path: path.to_string(),
                message: format!("cannot encode the request: {e}"),
            })?),
            None => None,
        };
        self.call_encoded(method, path, body, start_key).await
    }

    /// `call_keyed` with a body that is already JSON: sends the request and decodes the JSON
    /// of its answer.
    async fn call_encoded<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        start_key: Option<&str>,
    ) -> Result<T, ClientError> {
        let resp = self
            .send_keyed(method.clone(), path, body, start_key)
            .await?;
        let bytes = resp
            .bytes()
            .await
            .map_err(|e| network_error(&method, path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| ClientError::Decode {
            method,
            path: path.to_string(),
            message: e.to_string(),
        })
    }

    /// `GET /health`; needs no valid token.
    pub async fn health(&self) -> Result<(), ClientError> {
        let _: serde_json::Value = self.call(Method::GET, "/health", None).await?;
        Ok(())
    }

    pub async fn workspace(&self) -> Result<Workspace, ClientError> {
        self.call(Method::GET, "/workspace", None).await
    }

    /// The workspace's usage, summed per provider and model.
    pub async fn workspace_usage(&self) -> Result<Vec<wujie_protocol::event::Usage>, ClientError> {
        self.call(Method::GET, "/workspace/usage", None).await
    }

    pub async fn create_issue(&self, req: &CreateIssue) -> Result<IssueDetail, ClientError> {
        self.call(Method::POST, "/issues", Some(req)).await
    }

    pub async fn list_issues(&self) -> Result<Vec<IssueSummary>, ClientError> {
        self.call(Method::GET, "/issues", None).await
    }

    /// Issues matching `query` (status, text in titles, descriptions and comments), newest
    /// first.
    pub async fn search_issues(
        &self,
        query: &IssueQuery,
    ) -> Result<Vec<IssueSummary>, ClientError> {
        let mut params = Vec::new();
        if let Some(status) = query.status {
            params.push(format!("status={}", status.as_str()));
        }
        if let Some(text) = &query.search {
            params.push(format!("search={}", segment(text)));
        }
        if let Some(limit) = query.limit {
            params.push(format!("limit={limit}"));
        }
        let path = if params.is_empty() {
            "/issues".to_owned()
        } else {
            format!("/issues?{}", params.join("&"))
        };
        self.call(Method::GET, &path, None).await
    }

    pub async fn edit_issue(
        &self,
        key_or_id: &str,
        req: &EditIssue,
    ) -> Result<IssueDetail, ClientError> {
        let path = format!("/issues/{}", segment(key_or_id));
        self.call(Method::PATCH, &path, Some(req)).await
    }

    /// Closes (`Done`, `Closed`) or reopens (`Open`) an issue.
    pub async fn set_issue_status(
        &self,
        key_or_id: &str,
        status: IssueStatus,
    ) -> Result<IssueDetail, ClientError> {
        let path = format!("/issues/{}/status", segment(key_or_id));
        self.call(Method::POST, &path, Some(&SetIssueStatus { status }))
            .await
    }

    /// The issue's runs without their transcripts, oldest first.
    pub async fn issue_runs(&self, key_or_id: &str) -> Result<Vec<RunSummary>, ClientError> {
        let path = format!("/issues/{}/runs", segment(key_or_id));
        self.call(Method::GET, &path, None).await
    }

    /// Opens the issue's live feed, after `last_event_id` when resuming.
    pub async fn follow_issue(
        &self,
        key_or_id: &str,
        last_event_id: Option<&str>,
    ) -> Result<IssueFeed, ClientError> {
        self.follow(
            format!("/issues/{}/events", segment(key_or_id)),
            last_event_id,
        )
        .await
    }

    /// Follows every issue's changes (no run messages), resuming after `last_event_id`.
    pub async fn follow_workspace(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<IssueFeed, ClientError> {
        self.follow("/events".to_owned(), last_event_id).await
    }

    async fn follow(
        &self,
        path: String,
        last_event_id: Option<&str>,
    ) -> Result<IssueFeed, ClientError> {
        let url = format!("{}/api/v1{path}", self.base_url());
        // No whole-request timeout: a feed lasts as long as its runs. The server's keep-alive
        // comments arrive far more often than the read timeout.
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(feed::READ_TIMEOUT)
            .build()
            .map_err(|e| ClientError::Build(e.to_string()))?;
        let mut req = http
            .get(&url)
            .bearer_auth(&self.token.0)
            .header(reqwest::header::ACCEPT, "text/event-stream");
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| network_error(&Method::GET, &path, e))?;
        if !resp.status().is_success() {
            return Err(status_error(Method::GET, path, resp).await);
        }
        Ok(IssueFeed::new(resp, path))
    }

    /// By key (`WUJ-3`, any case) or id.
    pub async fn get_issue(&self, key_or_id: &str) -> Result<IssueDetail, ClientError> {
        self.call(
            Method::GET,
            &format!("/issues/{}", segment(key_or_id)),
            None,
        )
        .await
    }

    pub async fn add_comment(
        &self,
        key_or_id: &str,
        req: &CreateComment,
    ) -> Result<Comment, ClientError> {
        let path = format!("/issues/{}/comments", segment(key_or_id));
        self.call(Method::POST, &path, Some(req)).await
    }

    pub async fn create_run(
        &self,
        key_or_id: &str,
        req: &CreateRun,
    ) -> Result<CreatedRun, ClientError> {
        let path = format!("/issues/{}/runs", segment(key_or_id));
        self.call(Method::POST, &path, Some(req)).await
    }

    /// `create_run` that creates one run however often it is sent with the same `start_key`
    /// (a new UUID per start): sent again after its answer was lost, it returns the run the
    /// first request created, with a new token.
    pub async fn create_run_once(
        &self,
        key_or_id: &str,
        req: &CreateRun,
        start_key: &str,
    ) -> Result<CreatedRun, ClientError> {
        let path = format!("/issues/{}/runs", segment(key_or_id));
        self.call_keyed(Method::POST, &path, Some(req), Some(start_key))
            .await
    }

    pub async fn get_run(&self, run_id: &str) -> Result<Run, ClientError> {
        self.call(Method::GET, &format!("/runs/{}", segment(run_id)), None)
            .await
    }

    /// One page of the run's transcript: the messages after position `after` (0: from the
    /// first), at most `max_bytes` of them (the server's default page when `None`). The next
    /// page is after the answer's `next_after`, while it says `more`.
    pub async fn run_messages(
        &self,
        run_id: &str,
        after: i64,
        max_bytes: Option<u64>,
    ) -> Result<RunMessagePage, ClientError> {
        let mut path = format!("/runs/{}/messages?after={after}", segment(run_id));
        if let Some(max_bytes) = max_bytes {
            path.push_str(&format!("&max_bytes={max_bytes}"));
        }
        self.call(Method::GET, &path, None).await
    }

    /// The run's code changes as of its latest snapshot, with the patches.
    pub async fn run_git(&self, run_id: &str) -> Result<GitChanges, ClientError> {
        self.call(Method::GET, &format!("/runs/{}/git", segment(run_id)), None)
            .await
    }

    /// What turn `turn` (from 1) of the run changed, with the patches.
    pub async fn run_git_turn(&self, run_id: &str, turn: u32) -> Result<GitChanges, ClientError> {
        let path = format!("/runs/{}/git?turn={turn}", segment(run_id));
        self.call(Method::GET, &path, None).await
    }

    pub async fn ingest_run_events(
        &self,
        run_id: &str,
        batch: &IngestBatch,
    ) -> Result<IngestResult, ClientError> {
        let path = format!("/runs/{}/events", segment(run_id));
        self.call(Method::POST, &path, Some(batch)).await
    }

    /// `ingest_run_events` with the batch already encoded (see [`EncodedBatch`]): the reporter
    /// sends rows as they are stored in its outbox, without decoding and encoding them again.
    pub async fn ingest_run_events_encoded(
        &self,
        run_id: &str,
        batch: EncodedBatch,
    ) -> Result<IngestResult, ClientError> {
        let path = format!("/runs/{}/events", segment(run_id));
        self.call_encoded(Method::POST, &path, Some(batch.0), None)
            .await
    }

    /// `ingest_discussion_events` with the batch already encoded.
    pub async fn ingest_discussion_events_encoded(
        &self,
        id: &str,
        batch: EncodedBatch,
    ) -> Result<IngestResult, ClientError> {
        let path = format!("/discussions/{}/events", segment(id));
        self.call_encoded(Method::POST, &path, Some(batch.0), None)
            .await
    }

    pub async fn heartbeat(&self, run_id: &str) -> Result<(), ClientError> {
        let path = format!("/runs/{}/heartbeat", segment(run_id));
        self.send(Method::POST, &path, None).await?;
        Ok(())
    }

    pub async fn finish_run(
        &self,
        run_id: &str,
        req: &FinishRun,
    ) -> Result<FinishedRun, ClientError> {
        let path = format!("/runs/{}/finish", segment(run_id));
        self.call(Method::POST, &path, Some(req)).await
    }

    pub async fn create_token(&self, req: &CreateToken) -> Result<CreatedToken, ClientError> {
        self.call(Method::POST, "/tokens", Some(req)).await
    }

    /// Every user token (names, dates, status; never a secret).
    pub async fn list_tokens(&self) -> Result<Vec<TokenInfo>, ClientError> {
        self.call(Method::GET, "/tokens", None).await
    }

    /// Revokes the token with this id: later requests with it get 401, on every replica.
    pub async fn revoke_token(&self, id: &str) -> Result<(), ClientError> {
        let path = format!("/tokens/{}", segment(id));
        self.send(Method::DELETE, &path, None).await?;
        Ok(())
    }

    /// Revokes this client's own token: later requests with it get 401.
    pub async fn revoke_own_token(&self) -> Result<(), ClientError> {
        self.send(Method::DELETE, "/tokens/current", None).await?;
        Ok(())
    }

    pub async fn create_discussion(
        &self,
        req: &CreateDiscussion,
    ) -> Result<CreatedDiscussion, ClientError> {
        self.call(Method::POST, "/discussions", Some(req)).await
    }

    /// `create_discussion` that creates one discussion however often it is sent with the same
    /// `start_key` (see [`Client::create_run_once`]).
    pub async fn create_discussion_once(
        &self,
        req: &CreateDiscussion,
        start_key: &str,
    ) -> Result<CreatedDiscussion, ClientError> {
        self.call_keyed(Method::POST, "/discussions", Some(req), Some(start_key))
            .await
    }

    /// Newest first.
    pub async fn list_discussions(&self) -> Result<Vec<Discussion>, ClientError> {
        self.call(Method::GET, "/discussions", None).await
    }

    /// The discussion with every entry: its pages read one after the other.
    pub async fn get_discussion(&self, id: &str) -> Result<Discussion, ClientError> {
        let mut whole = self.discussion_page(id, 0, None).await?;
        while whole.more {
            let page = self.discussion_page(id, whole.next_after, None).await?;
            // A page that moves on no further would be asked for again and again.
            if page.entries.is_empty() {
                break;
            }
            whole.next_after = page.next_after;
            whole.more = page.more;
            whole.entries.extend(page.entries);
        }
        Ok(whole)
    }

    /// The discussion with its entries after position `after` that fit in `max_bytes` (the
    /// server's default page without it).
    pub async fn discussion_page(
        &self,
        id: &str,
        after: i64,
        max_bytes: Option<u64>,
    ) -> Result<Discussion, ClientError> {
        let mut path = format!("/discussions/{}?after={after}", segment(id));
        if let Some(max_bytes) = max_bytes {
            path.push_str(&format!("&max_bytes={max_bytes}"));
        }
        self.call(Method::GET, &path, None).await
    }

    /// Deletes an open discussion that recorded nothing.
    pub async fn delete_empty_discussion(&self, id: &str) -> Result<(), ClientError> {
        let path = format!("/discussions/{}", segment(id));
        self.send(Method::DELETE, &path, None).await?;
        Ok(())
    }

    /// Discussions of `provider` that recorded the native session id `native_session_id`.
    pub async fn find_discussions_by_native_session(
        &self,
        provider: &str,
        native_session_id: &str,
    ) -> Result<Vec<Discussion>, ClientError> {
        let path = format!(
            "/discussions?provider={}&native_session_id={}",
            segment(provider),
            segment(native_session_id)
        );
        self.call(Method::GET, &path, None).await
    }

    pub async fn ingest_discussion_events(
        &self,
        id: &str,
        batch: &IngestBatch,
    ) -> Result<IngestResult, ClientError> {
        let path = format!("/discussions/{}/events", segment(id));
        self.call(Method::POST, &path, Some(batch)).await
    }

    /// A new discussion-scoped token for resuming an open discussion; returns the secret.
    pub async fn discussion_token(&self, id: &str) -> Result<String, ClientError> {
        self.discussion_token_keyed(id, None).await
    }

    /// [`Client::discussion_token`] under `start_key`: sent again with the same key, the token
    /// the first request minted is revoked (its answer was lost: nobody holds it).
    pub async fn discussion_token_once(
        &self,
        id: &str,
        start_key: &str,
    ) -> Result<String, ClientError> {
        self.discussion_token_keyed(id, Some(start_key)).await
    }

    async fn discussion_token_keyed(
        &self,
        id: &str,
        start_key: Option<&str>,
    ) -> Result<String, ClientError> {
        let path = format!("/discussions/{}/tokens", segment(id));
        let created: CreatedToken = self
            .call_keyed(Method::POST, &path, None, start_key)
            .await?;
        Ok(created.token)
    }

    pub async fn promote_discussion(
        &self,
        id: &str,
        req: &PromoteDiscussion,
    ) -> Result<Promoted, ClientError> {
        let path = format!("/discussions/{}/promote", segment(id));
        self.call(Method::POST, &path, Some(req)).await
    }

    /// A one-time link (path on this server) that logs a browser in as this client's user.
    pub async fn create_browser_login(&self) -> Result<BrowserLogin, ClientError> {
        self.call(Method::POST, "/browser-logins", None).await
    }
}

/// The error an answer with a failing status stands for: the server's `error` message (or
/// what the body says, or the status's name), and how long it asked to wait.
async fn status_error(method: Method, path: String, resp: reqwest::Response) -> ClientError {
    let status = resp.status();
    let retry_after = retry_pause::retry_after(resp.headers());
    let text = resp.text().await.unwrap_or_default();
    let message = serde_json::from_str::<ApiError>(&text)
        .map(|e| e.error)
        .unwrap_or_else(|_| {
            if text.trim().is_empty() {
                status
                    .canonical_reason()
                    .unwrap_or("no message")
                    .to_string()
            } else {
                text.chars().take(500).collect()
            }
        });
    ClientError::Status {
        method,
        path,
        status,
        message,
        retry_after,
    }
}

pub(crate) fn network_error(method: &Method, path: &str, e: reqwest::Error) -> ClientError {
    let timeout = e.is_timeout();
    let connect = e.is_connect();
    // The path is named separately; the full URL adds nothing and the chain's innermost
    // cause ("Connection refused") is what a user can act on.
    let e = e.without_url();
    let mut cause = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(inner) = source {
        cause = format!("{cause}: {inner}");
        source = inner.source();
    }
    let message = if timeout {
        format!(
            "timed out waiting for the server ({cause}); check that it is running and reachable"
        )
    } else if connect {
        format!(
            "cannot connect to the server ({cause}); check the server URL and that it is running"
        )
    } else {
        format!("request failed: {cause}")
    };
    ClientError::Network {
        method: method.clone(),
        path: path.to_string(),
        message,
        timeout,
    }
}

/// Request bodies, type-erased so `send` is not generic (one copy of the request code).
/// An ingest batch body built from items that are already JSON (`IngestItem`s encoded by this
/// program). The server validates every item as usual.
#[derive(Debug, Clone)]
pub struct EncodedBatch(Vec<u8>);

impl EncodedBatch {
    pub fn from_items<'a>(items: impl IntoIterator<Item = &'a str>) -> EncodedBatch {
        let mut body = b"{\"items\":[".to_vec();
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(item.as_bytes());
        }
        body.extend_from_slice(b"]}");
        EncodedBatch(body)
    }
}

trait ErasedBody {
    fn to_json(&self) -> Result<Vec<u8>, serde_json::Error>;
}

impl<T: Serialize> ErasedBody for T {
    fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_never_printed() {
        let t = Token::new("wjt_secretsecret");
        assert!(!format!("{t:?}").contains("secret"));
        assert!(!format!("{t}").contains("secret"));
        let c = Client::new("http://127.0.0.1:1", t).expect("client");
        assert!(!format!("{c:?}").contains("secretsecret"));
    }

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(segment("WUJ-3"), "WUJ-3");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }

    #[test]
    fn retryable_statuses() {
        let status = |s: u16| ClientError::Status {
            method: Method::GET,
            path: "/x".into(),
            status: StatusCode::from_u16(s).expect("status"),
            message: String::new(),
            retry_after: None,
        };
        assert!(status(500).is_retryable());
        assert!(status(503).is_retryable());
        assert!(status(429).is_retryable());
        assert!(!status(400).is_retryable());
        assert!(!status(401).is_retryable());
        assert!(!status(409).is_retryable());
    }
}
