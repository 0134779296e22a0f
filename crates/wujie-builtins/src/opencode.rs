//! The built-in `opencode` provider: opencode in its own terminal UI (`opencode [project]`),
//! observed through the local HTTP server that the terminal UI runs itself (`--port N`): its
//! `/event` stream (server-sent events) carries every session and message change of that one
//! opencode process as it happens.
//!
//! The stream is our child's own, so the session reported is one that process works on, never
//! another terminal's: the session it creates (`session.created` of a session without a parent;
//! subagents' sessions have one and are skipped), the one given with `-s <id>` (reported at
//! once, so `wujie discuss -- opencode -s <id>` finds its discussion), or, with `-c`, the
//! session the first message belongs to; then each root session the process creates later
//! (`/new`), where the user goes on. Messages opencode created before the provider started
//! it (what a resumed or forked session already held, by opencode's own creation times) are the
//! baseline: they build no events and count no usage again. Bound to an issue, the issue goes in
//! as read-only context the way opencode takes rules: a file listed in its `instructions`, given
//! through `OPENCODE_CONFIG_CONTENT` (merged with the user's own config), never as a user
//! message.
//!
//! The server prints a dump of each request it aborts as opencode quits (about forty lines
//! each, on the user's terminal, which plain opencode never shows): opencode's stderr passes
//! through the provider without them ([`crate::abort_dump`]).
//!
//! What is read from the stream (anything else, and any other session, is skipped):
//!
//! | event | events |
//! |---|---|
//! | `session.created` (no `parentID`): the first, and each one after it (`/new`), which the run follows | `session` |
//! | `message.part.updated` `text` of a user message (not `synthetic`/`ignored`) | `user_input` |
//! | `message.part.updated` `text` of an assistant message, once ended | `final` when its message completes with `finish` other than `tool-calls`, else `text` |
//! | `message.part.updated` `reasoning`, once ended | `thinking` |
//! | `message.part.updated` `tool`, once `completed` or `error` | `tool_use` and `tool_result` |
//! | `message.part.updated` `step-finish` (one per model request) | `usage` |
//! | `message.updated` with an `error` | `error` |
//!
//! Text arrives as deltas (`message.part.delta`); a part is reported once whole. A tool is
//! reported when it has finished, with its use first: opencode ends the text before a call
//! only after the call started. Usage is the step's `tokens` as opencode records them: input
//! (without cache), output plus reasoning, cache read and cache write. Keys are opencode's own
//! ids: `session:<sid>:part:<part id>`, `session:<sid>:tool:<part id>:use` and `…:result`,
//! `session:<sid>:message:<message id>:error`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use wujie_protocol::event::{Event, MessageKind, Usage};
use wujie_protocol::sse::{SseDecoder, SseItem};

use crate::tui::{
    AgentStderr, LogMapper, LogReader, MAX_LOG_LINE_BYTES, Observer, issue_context, run_hosted,
};
use crate::{
    AgentProgram, BuiltinError, bare_message, content_message, count_field, flag_value, str_field,
};

/// The `source` of every message the opencode provider reports.
pub const SOURCE: &str = "opencode";

/// Where the opencode executable comes from.
pub const OPENCODE: AgentProgram = AgentProgram {
    name: "opencode",
    env_var: "WUJIE_OPENCODE_BIN",
    install: "npm install -g opencode-ai",
};

/// opencode's commands other than its terminal UI: a first argument naming one is not a
/// project directory.
const COMMANDS: &[&str] = &[
    "completion",
    "acp",
    "mcp",
    "attach",
    "run",
    "debug",
    "providers",
    "auth",
    "agent",
    "upgrade",
    "uninstall",
    "serve",
    "web",
    "models",
    "stats",
    "export",
    "import",
    "github",
    "pr",
    "session",
    "plugin",
    "plug",
    "db",
];

/// opencode's options that take a value (so the value is not a positional argument).
const VALUED: &[&str] = &[
    "--port",
    "--hostname",
    "--mdns-domain",
    "--cors",
    "-m",
    "--model",
    "-s",
    "--session",
    "--prompt",
    "--agent",
    "--log-level",
    "--replay-limit",
];

/// opencode's arguments as the provider runs them, and where its server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub args: Vec<String>,
    /// The terminal UI's server, `http://host:port`.
    pub server: String,
    /// The session given with `-s` (not forked): it is this run's from the start.
    pub resumed: Option<String>,
}

/// Plans the launch of `opencode ARGS…`: its server on the user's `--port`, else on
/// `free_port`.
pub fn plan_launch(args: &[String], free_port: u16) -> Result<Launch, BuiltinError> {
    if let Some(command) = first_positional(args).filter(|a| COMMANDS.contains(a)) {
        return Err(refuse(
            command,
            "the provider hosts opencode's terminal UI (`opencode [project]`); run other opencode commands by themselves (for `opencode acp` there is the `acp` provider)",
        ));
    }
    if let Some(arg) = args.iter().find(|a| *a == "--mini") {
        return Err(refuse(
            arg,
            "the minimal interface runs no local server, and the provider reads the session from that server; use the full terminal UI",
        ));
    }
    let session = flag_value(args, &["-s", "--session"]);
    if let Some((_, None)) = session {
        return Err(refuse(
            "--session",
            "it needs a session id (ses_…) after it",
        ));
    }
    let fork = args.iter().any(|a| a == "--fork");
    let mut launch = Launch {
        args: args.to_vec(),
        server: String::new(),
        resumed: session
            .and_then(|(_, id)| id)
            .filter(|_| !fork)
            .map(str::to_owned),
    };
    launch.server = server_address(&mut launch.args, free_port)?;
    Ok(launch)
}

/// Where the server of `opencode ARGS…` listens (its terminal UI's, or `opencode acp`'s):
/// `http://host:port` from the user's `--port` and `--hostname`; without `--port`, `--port
/// free_port` is added to `args`.
pub fn server_address(args: &mut Vec<String>, free_port: u16) -> Result<String, BuiltinError> {
    let port = match flag_value(args, &["--port"]) {
        None => {
            args.extend(["--port".to_owned(), free_port.to_string()]);
            free_port
        }
        Some((_, value)) => match value.and_then(|v| v.parse::<u16>().ok()) {
            Some(port) if port != 0 => port,
            _ => {
                return Err(refuse(
                    "--port",
                    "the provider must know the port of opencode's server; give a port number other than 0, or drop --port to let the provider choose one",
                ));
            }
        },
    };
    let host = match flag_value(args, &["--hostname"]) {
        Some((_, Some(host))) if !matches!(host, "0.0.0.0" | "::" | "") => host,
        _ => "127.0.0.1",
    };
    Ok(if host.contains(':') {
        format!("http://[{host}]:{port}")
    } else {
        format!("http://{host}:{port}")
    })
}

/// opencode's `arg` refused by the provider, and why.
fn refuse(arg: &str, why: &'static str) -> BuiltinError {
    BuiltinError::Unsupported {
        program: OPENCODE.name,
        arg: arg.to_owned(),
        why,
    }
}

/// The first argument that is neither an option nor an option's value.
pub(crate) fn first_positional(args: &[String]) -> Option<&str> {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--" {
            return rest.next().map(String::as_str);
        }
        if VALUED.contains(&arg.as_str()) {
            rest.next();
        } else if !arg.starts_with('-') {
            return Some(arg);
        }
    }
    None
}

/// `OPENCODE_CONFIG_CONTENT` with `instructions` listing `context_file`: the user's own value
/// (a JSON object) with the file added, else a config of just that.
pub fn context_config(
    user_config: Option<&str>,
    context_file: &Path,
) -> Result<String, BuiltinError> {
    let mut config = match user_config.filter(|c| !c.trim().is_empty()) {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(config)) => config,
            _ => {
                return Err(BuiltinError::Unsupported {
                    program: OPENCODE.name,
                    arg: "OPENCODE_CONFIG_CONTENT".to_owned(),
                    why: "it is not a JSON object, and bound to an issue the provider adds the issue to its `instructions`; make it plain JSON or move it to an opencode.json",
                });
            }
        },
    };
    let file = Value::String(context_file.to_string_lossy().into_owned());
    match config.get_mut("instructions") {
        Some(Value::Array(list)) => list.push(file),
        _ => {
            config.insert("instructions".to_owned(), Value::Array(vec![file]));
        }
    }
    Ok(Value::Object(config).to_string())
}

/// What the provider knows of one of the session's messages.
#[derive(Debug, Clone)]
struct MessageInfo {
    user: bool,
    provider: Option<String>,
    model: Option<String>,
    /// Created before opencode was started by the provider: the baseline.
    earlier: bool,
}

/// Maps opencode's server events to ours (see the module comment).
#[derive(Debug, Default)]
pub struct OpencodeMapper {
    session: Option<String>,
    /// Sessions that are another session's children (subagents).
    children: HashSet<String>,
    /// When opencode was started, in ms since the epoch, as opencode times its messages.
    started_at_ms: u64,
    messages: HashMap<String, MessageInfo>,
    /// Parts (and messages' errors) already reported.
    reported: HashSet<String>,
    /// The latest ended assistant text (message id, key, text), held until it is known whether
    /// its message ends the turn.
    answer: Option<(String, String, String)>,
}

impl OpencodeMapper {
    /// A mapper for a run whose opencode started at `started_at_ms`, bound to `resumed` if given.
    pub fn new(resumed: Option<String>, started_at_ms: u64) -> OpencodeMapper {
        OpencodeMapper {
            session: resumed,
            started_at_ms,
            ..OpencodeMapper::default()
        }
    }

    /// Whether events of `session` are this run's; the first root session seen is bound (until
    /// another is created, see [`OpencodeMapper::switch_to`]).
    fn ours(&mut self, session: Option<&str>, out: &mut Vec<Event>) -> bool {
        let Some(session) = session.filter(|s| !s.trim().is_empty()) else {
            return false;
        };
        match &self.session {
            Some(bound) => bound == session,
            None if self.children.contains(session) => false,
            None => {
                self.session = Some(session.to_owned());
                out.push(Event::Session {
                    session_id: session.to_owned(),
                });
                true
            }
        }
    }

    /// A root session this opencode process created: the first is the run's, and one created
    /// later (`/new`) is where the user goes on, in the same run.
    fn switch_to(&mut self, session: &str, out: &mut Vec<Event>) {
        if self
            .session
            .as_deref()
            .is_some_and(|bound| bound != session)
        {
            // Not known to have ended its turn: the session it belonged to was left.
            self.release_answer(MessageKind::Text, out);
            self.session = None;
        }
        self.ours(Some(session), out);
    }

    fn key(&self, what: &str) -> String {
        format!("{}:{what}", crate::session_key(self.session.as_deref()))
    }

    fn release_answer(&mut self, kind: MessageKind, out: &mut Vec<Event>) {
        if let Some((_, key, text)) = self.answer.take() {
            out.push(content_message(SOURCE, kind, text, key));
        }
    }

    fn message(&mut self, info: &Map<String, Value>, out: &mut Vec<Event>) {
        let Some(id) = str_field(info, "id") else {
            return;
        };
        if !self.ours(str_field(info, "sessionID"), out) {
            return;
        }
        let created = info
            .get("time")
            .and_then(Value::as_object)
            .map(|time| count_field(time, "created"));
        let earlier = match self.messages.get(id) {
            Some(known) => known.earlier,
            None => created.is_some_and(|at| at < self.started_at_ms),
        };
        let known = MessageInfo {
            user: str_field(info, "role") == Some("user"),
            provider: str_field(info, "providerID").map(str::to_owned),
            model: str_field(info, "modelID").map(str::to_owned),
            earlier,
        };
        self.messages.insert(id.to_owned(), known.clone());
        if known.user || earlier {
            return;
        }
        if let Some(error) = info.get("error").and_then(Value::as_object) {
            let key = self.key(&format!("message:{id}:error"));
            if self.reported.insert(key.clone()) {
                self.release_answer(MessageKind::Text, out);
                let text = error
                    .get("data")
                    .and_then(Value::as_object)
                    .and_then(|data| str_field(data, "message"))
                    .or_else(|| str_field(error, "name"))
                    .unwrap_or("opencode reported an error");
                out.push(content_message(
                    SOURCE,
                    MessageKind::Error,
                    text.to_owned(),
                    key,
                ));
            }
        }
        let completed = info
            .get("time")
            .and_then(Value::as_object)
            .is_some_and(|time| time.contains_key("completed"));
        if completed && self.answer.as_ref().is_some_and(|(m, _, _)| m == id) {
            let kind = match str_field(info, "finish") {
                Some("tool-calls") => MessageKind::Text,
                _ => MessageKind::Final,
            };
            self.release_answer(kind, out);
        }
    }

    fn part(&mut self, part: &Map<String, Value>, out: &mut Vec<Event>) {
        let (Some(id), Some(message)) = (str_field(part, "id"), str_field(part, "messageID"))
        else {
            return;
        };
        if !self.ours(str_field(part, "sessionID"), out) {
            return;
        }
        let info = self.messages.get(message).cloned();
        if info.as_ref().is_some_and(|m| m.earlier) || self.reported.contains(id) {
            return;
        }
        let ended = || {
            part.get("time")
                .and_then(Value::as_object)
                .is_some_and(|time| time.contains_key("end"))
        };
        let text = str_field(part, "text").unwrap_or_default();
        match str_field(part, "type") {
            Some("text") if info.as_ref().is_some_and(|m| m.user) => {
                let skipped = ["synthetic", "ignored"]
                    .iter()
                    .any(|flag| part.get(*flag) == Some(&Value::Bool(true)));
                if skipped || text.trim().is_empty() {
                    return;
                }
                self.reported.insert(id.to_owned());
                self.release_answer(MessageKind::Text, out);
                let key = self.key(&format!("part:{id}"));
                out.push(content_message(
                    SOURCE,
                    MessageKind::UserInput,
                    text.to_owned(),
                    key,
                ));
            }
            Some("text") if ended() => {
                self.reported.insert(id.to_owned());
                self.release_answer(MessageKind::Text, out);
                if !text.trim().is_empty() {
                    let key = self.key(&format!("part:{id}"));
                    self.answer = Some((message.to_owned(), key, text.to_owned()));
                }
            }
            Some("reasoning") if ended() => {
                self.reported.insert(id.to_owned());
                if !text.trim().is_empty() {
                    self.release_answer(MessageKind::Text, out);
                    let key = self.key(&format!("part:{id}"));
                    out.push(content_message(
                        SOURCE,
                        MessageKind::Thinking,
                        text.to_owned(),
                        key,
                    ));
                }
            }
            Some("tool") => self.tool(id, part, out),
            Some("step-finish") => {
                self.reported.insert(id.to_owned());
                let Some(tokens) = part.get("tokens").and_then(Value::as_object) else {
                    return;
                };
                let unknown = || "unknown".to_owned();
                out.push(Event::Usage(request_usage(
                    tokens,
                    info.as_ref()
                        .and_then(|m| m.provider.clone())
                        .unwrap_or_else(unknown),
                    info.as_ref()
                        .and_then(|m| m.model.clone())
                        .unwrap_or_else(unknown),
                )));
            }
            _ => {}
        }
    }

    fn tool(&mut self, id: &str, part: &Map<String, Value>, out: &mut Vec<Event>) {
        let Some(state) = part.get("state").and_then(Value::as_object) else {
            return;
        };
        let output = match str_field(state, "status") {
            Some("completed") => str_field(state, "output").unwrap_or_default(),
            Some("error") => str_field(state, "error").unwrap_or_default(),
            _ => return,
        };
        self.reported.insert(id.to_owned());
        self.release_answer(MessageKind::Text, out);
        let name = str_field(part, "tool").unwrap_or("tool").to_owned();
        let mut using = bare_message(
            SOURCE,
            MessageKind::ToolUse,
            self.key(&format!("tool:{id}:use")),
        );
        using.tool = Some(name.clone());
        using.input = Some(match state.get("input") {
            Some(Value::Object(input)) => input.clone(),
            Some(other) => Map::from_iter([("input".to_owned(), other.clone())]),
            None => Map::new(),
        });
        let mut result = bare_message(
            SOURCE,
            MessageKind::ToolResult,
            self.key(&format!("tool:{id}:result")),
        );
        result.tool = Some(name);
        result.output = Some(output.to_owned());
        out.extend([Event::Message(using), Event::Message(result)]);
    }
}

impl LogMapper for OpencodeMapper {
    fn record(&mut self, _line_no: u64, record: &Map<String, Value>, out: &mut Vec<Event>) {
        let Some(properties) = record.get("properties").and_then(Value::as_object) else {
            return;
        };
        let object = |field: &str| properties.get(field).and_then(Value::as_object);
        match str_field(record, "type") {
            Some("session.created") => {
                let Some(info) = object("info") else {
                    return;
                };
                let Some(id) = str_field(info, "id") else {
                    return;
                };
                if info.get("parentID").is_some_and(|p| !p.is_null()) {
                    self.children.insert(id.to_owned());
                } else {
                    self.switch_to(id, out);
                }
            }
            Some("message.updated") => {
                if let Some(info) = object("info") {
                    self.message(info, out);
                }
            }
            Some("message.part.updated") => {
                if let Some(part) = object("part") {
                    self.part(part, out);
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        // opencode exited before the message said how it ended: not known to be final.
        self.release_answer(MessageKind::Text, out);
    }
}

/// Reads a server-sent event stream: each event's data is a JSON record for `reader`.
#[derive(Debug)]
pub struct EventStream<M> {
    events: SseDecoder,
    pub reader: LogReader<M>,
}

impl<M: LogMapper> EventStream<M> {
    pub fn new(reader: LogReader<M>) -> EventStream<M> {
        EventStream {
            events: SseDecoder::new(MAX_LOG_LINE_BYTES),
            reader,
        }
    }

    /// The events of every record the chunk completes; an event too long is skipped.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        for item in self.events.feed(chunk) {
            if let SseItem::Event(event) = item {
                out.extend(self.reader.record(event.data.as_bytes()));
            }
        }
        out
    }

    /// Ends the stream: an event it ended in the middle of is not one (as the standard says),
    /// so only what the mapper still holds is left.
    pub fn finish(&mut self) -> Vec<Event> {
        self.reader.finish()
    }
}

/// How long after opencode exited its stream may still deliver what it sent.
const STREAM_DRAIN: Duration = Duration::from_secs(2);

/// Follows the `/event` stream of our opencode's server (see the module comment).
struct ServerEvents {
    server: String,
    chunks: mpsc::UnboundedReceiver<Vec<u8>>,
    follower: tokio::task::JoinHandle<bool>,
    stream: EventStream<OpencodeMapper>,
    first: Vec<Event>,
}

impl Observer for ServerEvents {
    async fn poll(&mut self, _agent_pid: Option<u32>) -> Vec<Event> {
        let mut events = std::mem::take(&mut self.first);
        while let Ok(chunk) = self.chunks.try_recv() {
            events.extend(self.stream.feed(&chunk));
        }
        events
    }

    async fn finish(&mut self) -> Vec<Event> {
        // The server went with opencode, which ends the stream; what it sent before is read.
        let connected = match tokio::time::timeout(STREAM_DRAIN, &mut self.follower).await {
            Ok(Ok(connected)) => connected,
            _ => {
                self.follower.abort();
                false
            }
        };
        if !connected {
            wujie_process::stderr_line!(
                "wujie adapter opencode: could not read the events of opencode's server at {}; its session was not reported",
                self.server
            );
        }
        let mut events = std::mem::take(&mut self.first);
        while let Ok(chunk) = self.chunks.try_recv() {
            events.extend(self.stream.feed(&chunk));
        }
        events.extend(self.stream.finish());
        events
    }
}

/// Connects to `url` (retrying while the server is not up yet) and passes on its body;
/// whether it connected.
async fn follow(url: String, tx: mpsc::UnboundedSender<Vec<u8>>) -> bool {
    let Ok(client) = reqwest::Client::builder().no_proxy().build() else {
        return false;
    };
    // A request that reaches the server while it is still starting may never be answered:
    // one that brings nothing (not even the `server.connected` event opencode sends first)
    // within `wait` is dropped and made again, waiting longer each time.
    let mut wait = Duration::from_secs(1);
    loop {
        let request = with_server_auth(client.get(&url));
        let opened = tokio::time::timeout(wait, async {
            let mut response = request.send().await?;
            let first = if response.status().is_success() {
                response.chunk().await?
            } else {
                None
            };
            Ok::<_, reqwest::Error>((response, first))
        })
        .await;
        match opened {
            Ok(Ok((response, _))) if !response.status().is_success() => {
                wujie_process::stderr_line!(
                    "wujie adapter opencode: opencode's server answered {} for {url}",
                    response.status()
                );
                return false;
            }
            Ok(Ok((mut response, first))) => {
                let mut chunk = first;
                while let Some(bytes) = chunk {
                    if tx.send(bytes.to_vec()).is_err() {
                        break;
                    }
                    chunk = response.chunk().await.ok().flatten();
                }
                return true;
            }
            Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(_) => wait = (wait * 2).min(Duration::from_secs(8)),
        }
    }
}

/// `request` to opencode's server with opencode's own protection of it: basic auth when
/// `OPENCODE_SERVER_PASSWORD` is set.
pub(crate) fn with_server_auth(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    let env = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
    match env("OPENCODE_SERVER_PASSWORD") {
        Some(password) => {
            let user = env("OPENCODE_SERVER_USERNAME").unwrap_or_else(|| "opencode".to_owned());
            request.basic_auth(user, Some(password))
        }
        None => request,
    }
}

/// The usage of one model request from the `tokens` opencode records for it (on its
/// `step-finish` part and its assistant message): input without cache, output with
/// reasoning, cache read and cache write.
pub(crate) fn request_usage(tokens: &Map<String, Value>, provider: String, model: String) -> Usage {
    let cache = tokens
        .get("cache")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    Usage {
        provider,
        model,
        input_tokens: count_field(tokens, "input"),
        output_tokens: count_field(tokens, "output")
            .saturating_add(count_field(tokens, "reasoning")),
        cache_read_tokens: count_field(&cache, "read"),
        cache_write_tokens: count_field(&cache, "write"),
    }
}

/// A port on 127.0.0.1 free right now, for opencode's server.
pub(crate) fn free_port() -> Result<u16, BuiltinError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|source| BuiltinError::Spawn {
            program: OPENCODE.name,
            path: PathBuf::from("127.0.0.1:0"),
            source,
        })
}

/// `wujie adapter opencode [ARGS…]`: opencode in its terminal UI on our terminal, its session
/// reported as events; exits with opencode's exit code.
pub async fn run_opencode_adapter(args: Vec<String>) -> i32 {
    super::adapter_exit("opencode", run(args).await)
}

/// What `wujie run` checks before it creates a run (see [`crate::preflight`]): opencode's
/// executable, which it returns, and the arguments (planned with a port that is not used).
pub fn preflight(args: &[String]) -> Result<PathBuf, BuiltinError> {
    let program = OPENCODE.locate_from_env()?;
    plan_launch(args, 0)?;
    Ok(program)
}

async fn run(args: Vec<String>) -> Result<i32, BuiltinError> {
    let program = preflight(&args)?;
    let launch = plan_launch(&args, free_port()?)?;
    let user_config = std::env::var("OPENCODE_CONFIG_CONTENT").ok();
    let context_file = match issue_context(OPENCODE.name).await {
        Some(context) => {
            let file = std::env::temp_dir()
                .join(format!("wujie-opencode-issue-{}.md", uuid::Uuid::new_v4()));
            std::fs::write(&file, context).map_err(|source| BuiltinError::Spawn {
                program: OPENCODE.name,
                path: file.clone(),
                source,
            })?;
            Some(file)
        }
        None => None,
    };
    let envs = match &context_file {
        Some(file) => vec![(
            "OPENCODE_CONFIG_CONTENT".to_owned(),
            context_config(user_config.as_deref(), file)?,
        )],
        None => Vec::new(),
    };
    let started_at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let (tx, chunks) = mpsc::unbounded_channel();
    let observer = ServerEvents {
        follower: tokio::spawn(follow(format!("{}/event", launch.server), tx)),
        server: launch.server.clone(),
        chunks,
        stream: EventStream::new(LogReader::new(OpencodeMapper::new(
            launch.resumed.clone(),
            started_at_ms,
        ))),
        first: launch
            .resumed
            .iter()
            .map(|id| Event::Session {
                session_id: id.clone(),
            })
            .collect(),
    };
    let outcome = run_hosted(
        &OPENCODE,
        &program,
        &launch.args,
        &envs,
        AgentStderr::WithoutAbortDumps,
        observer,
    )
    .await;
    if let Some(file) = context_file {
        let _ = std::fs::remove_file(file);
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::testing::{self, messages, usages};

    /// See tests/fixtures/README.md: opencode 1.18.33's `/event` stream while it ran
    /// `echo hello` and answered `done`.
    const FIXTURE: &[u8] = include_bytes!("../tests/fixtures/opencode_echo_hello.events.jsonl");
    const SESSION: &str = "ses_dceba0570ffefFWrZTjKpsVn4K";

    fn map_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<Event> {
        testing::map_chunks(OpencodeMapper::new(None, 0), chunks)
    }

    fn summary(events: &[Event]) -> Vec<(MessageKind, String)> {
        testing::summary(events, testing::tool_and_trimmed_output)
    }

    fn expected() -> Vec<(MessageKind, String)> {
        [
            (MessageKind::UserInput, "Run the shell command echo hello"),
            (MessageKind::Text, "I will run it."),
            (
                MessageKind::ToolUse,
                r#"bash {"command":"echo hello","description":"Run the command"}"#,
            ),
            (MessageKind::ToolResult, "bash hello"),
            (MessageKind::Thinking, "It worked."),
            (MessageKind::Final, "done"),
        ]
        .into_iter()
        .map(|(kind, what)| (kind, what.to_owned()))
        .collect()
    }

    #[test]
    fn recorded_events_map_to_ours() {
        let out = map_chunks([FIXTURE]);
        assert_eq!(
            out.first(),
            Some(&Event::Session {
                session_id: SESSION.to_owned()
            })
        );
        assert_eq!(
            out.iter()
                .filter(|e| matches!(e, Event::Session { .. }))
                .count(),
            1
        );
        assert_eq!(summary(&out), expected());
        let mock = |input, output| Usage {
            provider: "mock".to_owned(),
            model: "mock-model".to_owned(),
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        };
        assert_eq!(usages(&out), [mock(11, 3), mock(20, 2)]);
        let keys: HashSet<String> = messages(&out).into_iter().map(|m| m.source_key).collect();
        assert_eq!(keys.len(), 6, "{keys:?}");
        assert!(
            keys.contains(&format!(
                "session:{SESSION}:tool:prt_231461927001onKt9vxGtRivPo:use"
            )),
            "{keys:?}"
        );
    }

    #[test]
    fn every_event_survives_our_own_protocol_parser() {
        testing::assert_events_survive_the_protocol_parser(map_chunks([FIXTURE]));
    }

    #[test]
    fn any_chunking_garbage_and_unknown_events_give_the_same_events() {
        let whole = testing::assert_chunking_changes_nothing(FIXTURE, &[1, 17, 4096], map_chunks);
        let mut noisy = b"garbage\n{\"type\":\"new.kind\",\"properties\":{}}\n{\"type\":\"message.part.updated\",\"properties\":{\"part\":3}}\n{\"type\":\"message.updated\"}\n".to_vec();
        noisy.extend_from_slice(FIXTURE);
        assert_eq!(map_chunks([&noisy[..]]), whole);
    }

    /// The fixture as opencode's server sends it: `data: ` lines with blank lines between.
    fn as_sse(records: &[u8]) -> Vec<u8> {
        let mut sse = b": a comment\r\nevent: message\r\n".to_vec();
        for line in records.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            sse.extend_from_slice(b"data: ");
            sse.extend_from_slice(line);
            sse.extend_from_slice(b"\r\n\r\n");
        }
        sse
    }

    #[test]
    fn the_server_sent_stream_gives_the_same_events_in_any_chunking() {
        let whole = map_chunks([FIXTURE]);
        let sse = as_sse(FIXTURE);
        for size in [1, 29, sse.len()] {
            let mut stream = EventStream::new(LogReader::new(OpencodeMapper::new(None, 0)));
            let mut out: Vec<Event> = sse.chunks(size).flat_map(|c| stream.feed(c)).collect();
            out.extend(stream.finish());
            assert_eq!(out, whole, "chunks of {size}");
        }
    }

    #[test]
    fn what_the_session_held_before_opencode_started_is_a_baseline() {
        // Resumed with `-s`: bound at once; opencode re-announcing earlier messages (it does
        // for the user message after each turn) reports nothing and counts no usage.
        let after_fixture = u64::MAX;
        let out = testing::map_chunks(
            OpencodeMapper::new(Some(SESSION.to_owned()), after_fixture),
            [FIXTURE],
        );
        assert_eq!(out, []);
        // Started between the first message and the rest: only the later ones are reported.
        let second_message_created = 1_796_123_001_000;
        let out = testing::map_chunks(OpencodeMapper::new(None, second_message_created), [FIXTURE]);
        assert_eq!(summary(&out), expected()[1..].to_vec());
        assert_eq!(usages(&out).len(), 2);
    }

    #[test]
    fn a_subagent_and_a_session_this_process_did_not_create_are_not_this_runs() {
        let other = |kind: &str, body: &str| {
            format!(r#"{{"type":"{kind}","properties":{body}}}"#).into_bytes()
        };
        let mut log = other(
            "session.created",
            r#"{"info":{"id":"ses_child","parentID":"ses_x"}}"#,
        );
        log.push(b'\n');
        log.extend(other(
            "message.updated",
            r#"{"info":{"id":"msg_c","sessionID":"ses_child","role":"user","time":{"created":1}}}"#,
        ));
        log.push(b'\n');
        log.extend(other(
            "message.part.updated",
            r#"{"part":{"id":"prt_c","messageID":"msg_c","sessionID":"ses_child","type":"text","text":"sub"}}"#,
        ));
        log.push(b'\n');
        log.extend_from_slice(FIXTURE);
        assert_eq!(map_chunks([&log[..]]), map_chunks([FIXTURE]));
        // Bound to another session by `-s`: none of the fixture's events is reported while
        // its session is not one this process created...
        let without_creation: Vec<u8> = FIXTURE
            .split_inclusive(|b| *b == b'\n')
            .filter(|line| !line.windows(15).any(|w| w == b"session.created"))
            .flatten()
            .copied()
            .collect();
        let out = testing::map_chunks(
            OpencodeMapper::new(Some("ses_other".to_owned()), 0),
            [&without_creation[..]],
        );
        assert_eq!(out, []);
        // ...and once the process creates it (`/new`), the run goes on in it.
        let out = testing::map_chunks(
            OpencodeMapper::new(Some("ses_other".to_owned()), 0),
            [FIXTURE],
        );
        assert_eq!(out, map_chunks([FIXTURE]));
    }

    #[test]
    fn an_answer_cut_off_by_exit_is_text_and_an_error_is_reported() {
        let cut = FIXTURE
            .windows(b"\"finish\":\"stop\"".len())
            .position(|w| w == b"\"finish\":\"stop\"")
            .unwrap();
        let line_start = FIXTURE[..cut].iter().rposition(|b| *b == b'\n').unwrap() + 1;
        let out = map_chunks([&FIXTURE[..line_start]]);
        assert_eq!(
            summary(&out).last(),
            Some(&(MessageKind::Text, "done".to_owned()))
        );
        let failed = br#"{"type":"session.created","properties":{"info":{"id":"ses_e"}}}
{"type":"message.updated","properties":{"info":{"id":"msg_e","sessionID":"ses_e","role":"assistant","time":{"created":5,"completed":6},"error":{"name":"APIError","data":{"message":"Bad Request"}}}}}
{"type":"message.updated","properties":{"info":{"id":"msg_e","sessionID":"ses_e","role":"assistant","time":{"created":5,"completed":6},"error":{"name":"APIError","data":{"message":"Bad Request"}}}}}
"#;
        let out = map_chunks([&failed[..]]);
        assert_eq!(
            summary(&out),
            [(MessageKind::Error, "Bad Request".to_owned())]
        );
        assert_eq!(
            messages(&out)[0].source_key,
            "session:ses_e:message:msg_e:error"
        );
    }

    #[test]
    fn launches_get_a_known_port_and_refuse_what_would_hide_the_session() {
        let s = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(
            plan_launch(&s(&["-m", "mock/m"]), 4100).unwrap(),
            Launch {
                args: s(&["-m", "mock/m", "--port", "4100"]),
                server: "http://127.0.0.1:4100".to_owned(),
                resumed: None,
            }
        );
        let resumed = plan_launch(&s(&["-s", "ses_1", "--port=4200"]), 4100).unwrap();
        assert_eq!(resumed.args, s(&["-s", "ses_1", "--port=4200"]));
        assert_eq!(resumed.server, "http://127.0.0.1:4200");
        assert_eq!(resumed.resumed.as_deref(), Some("ses_1"));
        let forked = plan_launch(&s(&["--session", "ses_1", "--fork"]), 4100).unwrap();
        assert_eq!(forked.resumed, None);
        assert_eq!(
            plan_launch(&s(&["--hostname", "::1", "/work"]), 4100)
                .unwrap()
                .server,
            "http://[::1]:4100"
        );
        for (args, arg) in [
            (&["run", "hi"][..], "run"),
            (&["-m", "mock/m", "serve"][..], "serve"),
            (&["--mini"][..], "--mini"),
            (&["--port", "0"][..], "--port"),
            (&["--port", "many"][..], "--port"),
            (&["-s"][..], "--session"),
        ] {
            let error = plan_launch(&s(args), 4100).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{args:?}");
            assert!(error.to_string().contains(arg), "{args:?}: {error}");
        }
        // A project directory named like an option's value is not a command.
        assert!(plan_launch(&s(&["--agent", "run", "./run"]), 4100).is_ok());
    }

    #[test]
    fn the_issue_goes_into_opencodes_instructions() {
        let file = Path::new("/tmp/issue.md");
        assert_eq!(
            context_config(None, file).unwrap(),
            r#"{"instructions":["/tmp/issue.md"]}"#
        );
        let merged: Value = serde_json::from_str(
            &context_config(Some(r#"{"instructions":["mine.md"],"model":"x/y"}"#), file).unwrap(),
        )
        .unwrap();
        assert_eq!(
            merged,
            serde_json::json!({"instructions": ["mine.md", "/tmp/issue.md"], "model": "x/y"})
        );
        let error = context_config(Some("{ // jsonc\n}"), file).unwrap_err();
        assert!(
            error.to_string().contains("OPENCODE_CONFIG_CONTENT"),
            "{error}"
        );
    }
}
