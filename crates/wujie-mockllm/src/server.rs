//! The HTTP server: routes, request recording, and the embeddable [`MockLlm`] handle.

use crate::script::{LatestInput, NoAnswer, Script};
use crate::wire::{self, Api, Inspected, SseEvent};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Headers never recorded, so credentials an agent sends do not end up in test output.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
    "proxy-authorization",
];

/// The largest request body accepted.
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// One request the mock received (all paths except `/_mock/*`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// Lower-case names; credentials removed.
    pub headers: BTreeMap<String, String>,
    /// The JSON body, or `null` when there was none or it was not JSON.
    pub body: Value,
    /// The wire API for model requests; `None` for anything else (`/v1/models`, probes).
    pub api: Option<Api>,
    /// The script turn that answered, if any.
    pub turn: Option<usize>,
    /// The HTTP status the mock answered with.
    pub status: u16,
}

impl RecordedRequest {
    /// Whether this was a model request (chat, responses, messages or Gemini generate).
    pub fn is_model_request(&self) -> bool {
        self.api.is_some()
    }

    /// What the script was matched against: the latest user text or tool result.
    /// `None` for requests that are not model requests.
    pub fn latest_input(&self) -> Option<LatestInput> {
        Some(inspect(self.api?, &self.body).latest)
    }
}

#[derive(Debug)]
struct Shared {
    script: Script,
    requests: Mutex<Vec<RecordedRequest>>,
}

impl Shared {
    fn record(&self, request: RecordedRequest) {
        // A poisoned lock only means another handler panicked; the list is still usable.
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request);
    }
    fn requests(&self) -> Vec<RecordedRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A running mock server. Dropping it stops the server, like [`MockLlm::shutdown`].
#[derive(Debug)]
pub struct MockLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl MockLlm {
    /// Starts a server on 127.0.0.1 with an ephemeral port.
    pub async fn start(script: Script) -> Result<MockLlm, MockError> {
        MockLlm::bind(SocketAddr::from(([127, 0, 0, 1], 0)), script).await
    }

    /// Starts a server on the given address (port 0 picks a free port).
    pub async fn bind(addr: SocketAddr, script: Script) -> Result<MockLlm, MockError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| MockError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| MockError::Bind { addr, source })?;
        let shared = Arc::new(Shared {
            script,
            requests: Mutex::new(Vec::new()),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let app = router(shared.clone());
        let task = tokio::spawn(async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(error) = serve.await {
                tracing::error!(%error, "mock model server stopped");
            }
        });
        Ok(MockLlm {
            addr,
            shared,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The base URL, `http://127.0.0.1:PORT` (no trailing slash, no `/v1`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`.
    pub fn v1_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests()
    }

    /// Only the model requests (chat, responses, messages, Gemini generate), in arrival order.
    pub fn model_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(RecordedRequest::is_model_request)
            .collect()
    }

    /// Stops the server and waits for it to finish.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/_mock/requests", axum::routing::get(list_requests))
        .fallback(handle)
        // Agents send their whole conversation and tool schemas each turn; axum's 2 MB default
        // would cut long sessions off.
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn list_requests(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(shared.requests()).into_response()
}

/// Every request except `/_mock/*` comes here, so each is recorded exactly once.
async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let route = route(&method, &path);
    let api = match route {
        Route::Model(api) => Some(api),
        _ => None,
    };
    let (response, turn) = respond(&shared.script, route, &path, &body);
    shared.record(RecordedRequest {
        method: method.to_string(),
        path,
        query: uri.query().map(str::to_string),
        headers: headers
            .iter()
            .filter(|(name, _)| !SECRET_HEADERS.contains(&name.as_str()))
            .map(|(name, value)| {
                (
                    name.as_str().to_string(),
                    String::from_utf8_lossy(value.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
        api,
        turn,
        status: response.status().as_u16(),
    });
    response
}

#[derive(Debug, Clone)]
enum Route {
    Model(Api),
    CountTokens,
    Models,
    /// `GET /v1/models/{id}`: one model, if the script lists it.
    OneModel(String),
    NotFound,
}

fn route(method: &Method, path: &str) -> Route {
    let path = path.trim_end_matches('/');
    if method == Method::POST && wire::gemini::target(path).is_some() {
        return Route::Model(Api::GeminiGenerateContent);
    }
    // Clients differ in whether their base URL carries `/v1` (Gemini: `/v1beta`); accept all.
    let path = ["/v1beta", "/v1"]
        .iter()
        .find_map(|p| path.strip_prefix(p))
        .unwrap_or(path);
    match (method.as_str(), path) {
        ("POST", "/chat/completions") => Route::Model(Api::OpenaiChat),
        ("POST", "/responses") => Route::Model(Api::OpenaiResponses),
        ("POST", "/messages") => Route::Model(Api::AnthropicMessages),
        ("POST", "/messages/count_tokens") => Route::CountTokens,
        ("GET", "/models") => Route::Models,
        ("GET", p) if p.starts_with("/models/") => {
            Route::OneModel(p["/models/".len()..].to_string())
        }
        _ => Route::NotFound,
    }
}

fn respond(script: &Script, route: Route, path: &str, body: &Value) -> (Response, Option<usize>) {
    match route {
        Route::Model(api) => model_response(script, api, path, body),
        Route::CountTokens => (
            axum::Json(json!({"input_tokens": 10})).into_response(),
            None,
        ),
        Route::Models => {
            let data: Vec<Value> = script
                .model_ids()
                .iter()
                .map(|id| model_object(id))
                .collect();
            let gemini: Vec<Value> = script
                .model_ids()
                .iter()
                .map(|id| json!({"name": format!("models/{id}"), "displayName": id}))
                .collect();
            let list = json!({"object": "list", "data": data, "has_more": false, "models": gemini});
            (axum::Json(list).into_response(), None)
        }
        Route::OneModel(id) if script.model_ids().contains(&id) => {
            (axum::Json(model_object(&id)).into_response(), None)
        }
        Route::OneModel(id) => (
            error(
                StatusCode::NOT_FOUND,
                "not_found",
                &format!("the script lists no model {id:?}"),
            ),
            None,
        ),
        Route::NotFound => (
            error(
                StatusCode::NOT_FOUND,
                "not_found",
                "the mock model server serves POST /v1/chat/completions, /v1/responses, /v1/messages, /v1beta/models/{model}:streamGenerateContent and GET /v1/models",
            ),
            None,
        ),
    }
}

/// A model entry readable as both an OpenAI and an Anthropic model object.
fn model_object(id: &str) -> Value {
    json!({"id": id, "object": "model", "type": "model", "display_name": id, "created": 0,
           "created_at": "1970-01-01T00:00:00Z", "owned_by": "wujie-mockllm"})
}

fn model_response(
    script: &Script,
    api: Api,
    path: &str,
    body: &Value,
) -> (Response, Option<usize>) {
    if !body.is_object() {
        return (
            error(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "the request body is not a JSON object",
            ),
            None,
        );
    }
    let mut seen = inspect(api, body);
    if let Some((model, stream)) = wire::gemini::target(path) {
        seen.model = Some(model);
        seen.stream = stream;
    }
    let (turn, answer) = match script.answer(&seen.latest, seen.model.as_deref(), &seen.offered) {
        Ok(found) => found,
        Err(why) => {
            let kind = match why {
                NoAnswer::NoTurnMatches { .. } => "no_matching_turn",
                NoAnswer::ToolNotOffered { .. } => "tool_not_offered",
            };
            return (error(StatusCode::BAD_REQUEST, kind, &why.to_string()), None);
        }
    };
    let model = seen
        .model
        .clone()
        .unwrap_or_else(|| crate::script::DEFAULT_MODEL.to_string());
    let response = if seen.stream {
        let events = match api {
            Api::OpenaiChat => {
                wire::openai_chat::render_stream(&answer, &model, seen.include_usage)
            }
            Api::OpenaiResponses => wire::openai_responses::render_stream(&answer, &model),
            Api::AnthropicMessages => wire::anthropic::render_stream(&answer, &model),
            Api::GeminiGenerateContent => wire::gemini::render_stream(&answer, &model),
        };
        sse(events)
    } else {
        let json = match api {
            Api::OpenaiChat => wire::openai_chat::render_json(&answer, &model),
            Api::OpenaiResponses => wire::openai_responses::render_json(&answer, &model),
            Api::AnthropicMessages => wire::anthropic::render_json(&answer, &model),
            Api::GeminiGenerateContent => wire::gemini::render_json(&answer, &model),
        };
        axum::Json(json).into_response()
    };
    (response, turn)
}

fn inspect(api: Api, body: &Value) -> Inspected {
    match api {
        Api::OpenaiChat => wire::openai_chat::inspect(body),
        Api::OpenaiResponses => wire::openai_responses::inspect(body),
        Api::AnthropicMessages => wire::anthropic::inspect(body),
        Api::GeminiGenerateContent => wire::gemini::inspect(body),
    }
}

/// Sends each event as its own body chunk, as a real server does.
fn sse(events: Vec<SseEvent>) -> Response {
    let chunks = events
        .into_iter()
        .map(|e| Ok::<_, std::convert::Infallible>(e.encode()));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(futures::stream::iter(chunks)))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// An error body both OpenAI and Anthropic clients can read: `{type, error: {type, message}}`.
fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"type": "error", "error": {"type": kind, "code": kind, "message": message}});
    (status, axum::Json(body)).into_response()
}
