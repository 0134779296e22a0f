//! The stdout NDJSON event protocol spoken by local-run provider adapters (seed: "stdout NDJSON
//! 协议"): message events, usage, native `session` ids and `handoff_ready` requests.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::limits;
use crate::lines::{LinePiece, LineSplitter};

/// The nine message types an adapter may report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    Text,
    Thinking,
    ToolUse,
    ToolResult,
    UserInput,
    Question,
    Plan,
    Final,
    Error,
}

impl MessageKind {
    pub const ALL: [MessageKind; 9] = [
        MessageKind::Text,
        MessageKind::Thinking,
        MessageKind::ToolUse,
        MessageKind::ToolResult,
        MessageKind::UserInput,
        MessageKind::Question,
        MessageKind::Plan,
        MessageKind::Final,
        MessageKind::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Text => "text",
            MessageKind::Thinking => "thinking",
            MessageKind::ToolUse => "tool_use",
            MessageKind::ToolResult => "tool_result",
            MessageKind::UserInput => "user_input",
            MessageKind::Question => "question",
            MessageKind::Plan => "plan",
            MessageKind::Final => "final",
            MessageKind::Error => "error",
        }
    }

    pub fn from_name(name: &str) -> Option<MessageKind> {
        MessageKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Whether a pre-issue discussion keeps this message as an entry (seed: "v2 讨论只持久化
    /// user_input、question、plan 和完整 final").
    pub fn is_discussion_entry(self) -> bool {
        matches!(
            self,
            MessageKind::UserInput | MessageKind::Question | MessageKind::Plan | MessageKind::Final
        )
    }
}

/// A validated message event. `content` is set for every kind but `tool_use`/`tool_result`;
/// `tool` + `input` for `tool_use`; `tool` + `output` for `tool_result`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    #[serde(rename = "type")]
    pub kind: MessageKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    pub source: String,
    pub source_key: String,
}

/// Token usage; only the six fields of the seed are kept, anything else on the line is dropped.
/// A server refuses a count over 2^40 tokens (`limits::MAX_USAGE_TOKENS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub provider: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
}

/// How a provider wants to execute a plan it hands off (seed: "v2 原生 handoff").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoffMode {
    CurrentContext,
    NativeClear,
}

impl HandoffMode {
    pub fn as_str(self) -> &'static str {
        match self {
            HandoffMode::CurrentContext => "current_context",
            HandoffMode::NativeClear => "native_clear",
        }
    }

    pub fn from_name(name: &str) -> Option<HandoffMode> {
        [HandoffMode::CurrentContext, HandoffMode::NativeClear]
            .into_iter()
            .find(|m| m.as_str() == name)
    }
}

/// One event of a run: read from an adapter's stdout (a line that carries both a message
/// `type` and a `usage` object yields a `Message` followed by a `Usage`), or, for
/// `GitChanges`, made by `wujie run` itself from a working-tree snapshot (no adapter line
/// parses as one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Message(Message),
    Usage(Usage),
    Session {
        session_id: String,
    },
    HandoffReady {
        request_id: String,
        mode: HandoffMode,
    },
    GitChanges(crate::git::GitChanges),
}

impl Event {
    /// The event as one stdout line, as an adapter writes it (ends in `'\n'`). Any event that
    /// [`parse_line`] produced is read back by it as the same event. Messages carry
    /// `"event":"message"`; a usage is written as a `usage` object, its only wire form.
    pub fn encode_line(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct UsageLine<'a> {
            usage: &'a Usage,
        }
        let mut line = match self {
            Event::Usage(usage) => serde_json::to_vec(&UsageLine { usage }),
            other => serde_json::to_vec(other),
        }
        .expect("events hold only strings, integers and JSON values, which always serialise");
        line.push(b'\n');
        line
    }
}

/// Longest stdout line accepted from an adapter ([`crate::limits::MAX_LINE_BYTES`]).
pub const DEFAULT_MAX_LINE_BYTES: usize = limits::MAX_LINE_BYTES;

/// How the `source_key` of an `error` message begins when a built-in adapter reports a fault
/// of the run itself (a session log it cannot find) rather than something the agent said;
/// `wujie run` repeats those above its summary.
pub const RUN_WARNING_KEY_PREFIX: &str = "wujie:";

/// How many characters of an offending value an error message quotes: enough to recognise it,
/// never the whole (possibly huge) input.
const QUOTE_CHARS: usize = 60;

/// A problem with one field of a JSON object, shared by the event, control-frame and manifest
/// parsers so that every one of them names fields and expectations the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FieldError {
    Missing {
        field: &'static str,
    },
    WrongType {
        field: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    Empty {
        field: &'static str,
    },
}

/// Why one stdout line is not a valid event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventErrorKind {
    #[error(
        "not JSON ({0}); stdout must carry only protocol events, one JSON object per line: write logs and debug output to stderr"
    )]
    NotJson(String),
    #[error("expected a JSON object, found {found}")]
    NotObject { found: &'static str },
    #[error("invalid UTF-8 at byte offset {valid_up_to}; events must be UTF-8 JSON")]
    InvalidUtf8 { valid_up_to: usize },
    #[error("unknown event {0:?}: expected \"message\", \"session\" or \"handoff_ready\"")]
    UnknownEvent(String),
    #[error(
        "unknown message type {0:?}: expected one of text, thinking, tool_use, tool_result, user_input, question, plan, final, error"
    )]
    UnknownMessageType(String),
    #[error("missing field `{field}`")]
    MissingField { field: &'static str },
    #[error("field `{field}` must be {expected}, found {found}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    #[error("field `{field}` must not be empty")]
    EmptyField { field: &'static str },
    #[error("line longer than the limit of {limit} bytes; each event must be one line within it")]
    LineTooLong { limit: usize },
    #[error(
        "nested deeper than the limit of {limit} levels of objects and arrays; flatten the event's input"
    )]
    TooDeep { limit: usize },
    #[error(
        "event is {size} bytes as JSON, over the limit of {limit} bytes per event; split or shorten it"
    )]
    EventTooLarge { size: usize, limit: usize },
    /// Kept apart from other errors: the parent answers the request (`accepted:false`) instead
    /// of failing the session, so it carries the request id.
    #[error(
        "unknown handoff mode {mode:?} in request {request_id:?}: expected \"current_context\" or \"native_clear\""
    )]
    UnknownHandoffMode { request_id: String, mode: String },
    #[error("nothing recognisable: a line needs a message `type`, a `usage` object or an `event`")]
    NothingRecognisable,
}

impl From<FieldError> for EventErrorKind {
    fn from(e: FieldError) -> Self {
        match e {
            FieldError::Missing { field } => EventErrorKind::MissingField { field },
            FieldError::WrongType {
                field,
                expected,
                found,
            } => EventErrorKind::WrongType {
                field,
                expected,
                found,
            },
            FieldError::Empty { field } => EventErrorKind::EmptyField { field },
        }
    }
}

/// A stdout line that could not be turned into events, with its 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parse localrun plugin event: line {line_no}: {kind}")]
pub struct EventError {
    pub line_no: u64,
    pub kind: EventErrorKind,
}

/// The events of one non-blank line.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedLine {
    pub line_no: u64,
    pub events: Vec<Event>,
}

/// Parses one stdout line (without its `'\n'`; a trailing `'\r'` is tolerated).
///
/// A blank or whitespace-only line yields no events. A line with both a message `type` and a
/// `usage` object yields the message followed by the usage.
pub fn parse_line(line: &[u8], line_no: u64) -> Result<Vec<Event>, EventError> {
    parse_line_events(line).map_err(|kind| EventError { line_no, kind })
}

fn parse_line_events(line: &[u8]) -> Result<Vec<Event>, EventErrorKind> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let mut object = parse_json_object(line)?;

    let has_usage = !matches!(object.get("usage"), None | Some(Value::Null));
    let primary = match take_opt_str(&mut object, "event")?.as_deref() {
        None if object.contains_key("type") => Some(Event::Message(parse_message(&mut object)?)),
        None if has_usage => None,
        None => return Err(EventErrorKind::NothingRecognisable),
        Some("message") => Some(Event::Message(parse_message(&mut object)?)),
        Some("session") => Some(Event::Session {
            session_id: take_nonempty_str(&mut object, "session_id")?,
        }),
        Some("handoff_ready") => {
            let request_id = take_nonempty_str(&mut object, "request_id")?;
            let mode = take_str(&mut object, "mode")?;
            let mode = HandoffMode::from_name(&mode).ok_or_else(|| {
                EventErrorKind::UnknownHandoffMode {
                    request_id: quote(&request_id),
                    mode: quote(&mode),
                }
            })?;
            Some(Event::HandoffReady { request_id, mode })
        }
        Some(other) => return Err(EventErrorKind::UnknownEvent(quote(other))),
    };
    let usage = match object.remove("usage") {
        None | Some(Value::Null) => None,
        Some(value) => Some(Event::Usage(parse_usage(value)?)),
    };
    let events: Vec<Event> = primary.into_iter().chain(usage).collect();
    for event in &events {
        within_limits(event, line.len())?;
    }
    Ok(events)
}

/// The limits every stored event is held to (the server applies the same ones).
fn within_limits(event: &Event, line_len: usize) -> Result<(), EventErrorKind> {
    if limits::event_depth(event) > limits::MAX_EVENT_DEPTH {
        return Err(EventErrorKind::TooDeep {
            limit: limits::MAX_EVENT_DEPTH,
        });
    }
    limits::check_encoded_len(event, line_len, limits::MAX_EVENT_BYTES).map_err(|size| {
        EventErrorKind::EventTooLarge {
            size,
            limit: limits::MAX_EVENT_BYTES,
        }
    })
}

/// Why a line is not a JSON object at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ObjectError {
    InvalidUtf8 {
        valid_up_to: usize,
    },
    NotJson(String),
    NotObject {
        found: &'static str,
    },
    /// Deeper than the JSON parser goes.
    TooDeep,
}

impl From<ObjectError> for EventErrorKind {
    fn from(e: ObjectError) -> Self {
        match e {
            ObjectError::InvalidUtf8 { valid_up_to } => EventErrorKind::InvalidUtf8 { valid_up_to },
            ObjectError::NotJson(message) => EventErrorKind::NotJson(message),
            ObjectError::NotObject { found } => EventErrorKind::NotObject { found },
            ObjectError::TooDeep => EventErrorKind::TooDeep {
                limit: limits::MAX_EVENT_DEPTH,
            },
        }
    }
}

/// Parses bytes that must hold one UTF-8 JSON object.
pub(crate) fn parse_json_object(bytes: &[u8]) -> Result<Map<String, Value>, ObjectError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ObjectError::InvalidUtf8 {
        valid_up_to: e.valid_up_to(),
    })?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => Err(ObjectError::NotObject {
            found: json_type_name(&other),
        }),
        // serde_json names no category for it; its message is stable ("recursion limit
        // exceeded").
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
            Err(ObjectError::TooDeep)
        }
        Err(e) => Err(ObjectError::NotJson(describe_json_error(&e))),
    }
}

/// serde_json's message for an error inside one line. Its messages give a position, never the
/// input, so they are safe to show; "line 1" is dropped because the caller names the real line.
fn describe_json_error(e: &serde_json::Error) -> String {
    let message = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    match message.strip_suffix(&position) {
        Some(what) if e.line() == 1 => format!("{what} at column {}", e.column()),
        _ => message,
    }
}

fn parse_message(object: &mut Map<String, Value>) -> Result<Message, EventErrorKind> {
    let type_name = take_str(object, "type")?;
    let kind = MessageKind::from_name(&type_name)
        .ok_or_else(|| EventErrorKind::UnknownMessageType(quote(&type_name)))?;
    let mut message = Message {
        kind,
        content: None,
        tool: None,
        input: None,
        output: None,
        source: take_nonempty_str(object, "source")?,
        source_key: take_nonempty_str(object, "source_key")?,
    };
    match kind {
        MessageKind::ToolUse => {
            message.tool = Some(take_str(object, "tool")?);
            message.input = Some(take_object(object, "input")?);
        }
        MessageKind::ToolResult => {
            message.tool = Some(take_str(object, "tool")?);
            message.output = Some(take_str(object, "output")?);
        }
        _ => message.content = Some(take_str(object, "content")?),
    }
    Ok(message)
}

fn parse_usage(value: Value) -> Result<Usage, EventErrorKind> {
    let Value::Object(mut object) = value else {
        return Err(FieldError::WrongType {
            field: "usage",
            expected: "an object",
            found: json_type_name(&value),
        }
        .into());
    };
    Ok(Usage {
        provider: take_str(&mut object, "usage.provider")?,
        model: take_str(&mut object, "usage.model")?,
        input_tokens: take_token_count(&mut object, "usage.input_tokens")?.ok_or(
            FieldError::Missing {
                field: "usage.input_tokens",
            },
        )?,
        output_tokens: take_token_count(&mut object, "usage.output_tokens")?.ok_or(
            FieldError::Missing {
                field: "usage.output_tokens",
            },
        )?,
        cache_read_tokens: take_token_count(&mut object, "usage.cache_read_tokens")?.unwrap_or(0),
        cache_write_tokens: take_token_count(&mut object, "usage.cache_write_tokens")?.unwrap_or(0),
    })
}

fn take_token_count(
    object: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Option<u64>, FieldError> {
    match object.remove(key_of(field)) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or(FieldError::WrongType {
            field,
            expected: "a non-negative integer",
            found: json_type_name(&value),
        }),
    }
}

/// The key inside its object of a field named with a dotted path such as `usage.model`.
fn key_of(field: &'static str) -> &'static str {
    field.rsplit('.').next().unwrap_or(field)
}

/// Removes a required string field.
pub(crate) fn take_str(
    object: &mut Map<String, Value>,
    field: &'static str,
) -> Result<String, FieldError> {
    take_opt_str(object, field)?.ok_or(FieldError::Missing { field })
}

/// Removes a required string field that must not be empty or whitespace only.
pub(crate) fn take_nonempty_str(
    object: &mut Map<String, Value>,
    field: &'static str,
) -> Result<String, FieldError> {
    let value = take_str(object, field)?;
    if value.trim().is_empty() {
        return Err(FieldError::Empty { field });
    }
    Ok(value)
}

/// Removes an optional string field; `null` counts as absent.
pub(crate) fn take_opt_str(
    object: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, FieldError> {
    match object.remove(key_of(field)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(FieldError::WrongType {
            field,
            expected: "a string",
            found: json_type_name(&other),
        }),
    }
}

/// Removes an optional boolean field; `null` counts as absent.
pub(crate) fn take_opt_bool(
    object: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Option<bool>, FieldError> {
    match object.remove(key_of(field)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(other) => Err(FieldError::WrongType {
            field,
            expected: "a boolean",
            found: json_type_name(&other),
        }),
    }
}

/// Removes a required field that must be a JSON object.
fn take_object(
    object: &mut Map<String, Value>,
    field: &'static str,
) -> Result<Map<String, Value>, FieldError> {
    match object.remove(key_of(field)) {
        None => Err(FieldError::Missing { field }),
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(FieldError::WrongType {
            field,
            expected: "a JSON object",
            found: json_type_name(&other),
        }),
    }
}

pub(crate) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The start of `text`, cut on a character boundary, for quoting in an error message.
pub(crate) fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Splits an adapter's stdout into lines and parses each one, for any chunking of the bytes.
///
/// Memory stays bounded: a line is buffered only up to `max_line_bytes`; past that the line is
/// reported as too long at once and the rest of it is skipped up to its `'\n'`.
#[derive(Debug)]
pub struct LineDecoder {
    lines: LineSplitter,
    /// Lines handed over so far, blank and too-long ones included.
    lines_done: u64,
}

impl Default for LineDecoder {
    fn default() -> Self {
        LineDecoder::new(DEFAULT_MAX_LINE_BYTES)
    }
}

impl LineDecoder {
    pub fn new(max_line_bytes: usize) -> Self {
        LineDecoder::resuming(max_line_bytes, 0)
    }

    /// A decoder for the rest of a stream whose first `lines_done` lines were handled before
    /// (fed to another decoder): line numbers go on from there.
    pub fn resuming(max_line_bytes: usize, lines_done: u64) -> Self {
        LineDecoder {
            lines: LineSplitter::new(max_line_bytes),
            lines_done,
        }
    }

    /// Feeds the next bytes and returns the results of every line they complete. Blank lines
    /// count for line numbers but produce no entry.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Result<DecodedLine, EventError>> {
        let mut out = Vec::new();
        let LineDecoder { lines, lines_done } = self;
        let limit = lines.max_line_bytes();
        lines.feed(chunk, |piece| out.extend(decode(piece, lines_done, limit)));
        out
    }

    /// Ends the stream: parses a last line that had no `'\n'`.
    pub fn finish(&mut self) -> Option<Result<DecodedLine, EventError>> {
        let mut out = None;
        let LineDecoder { lines, lines_done } = self;
        let limit = lines.max_line_bytes();
        lines.finish(|piece| out = decode(piece, lines_done, limit));
        out
    }
}

/// Numbers a line handed over by the splitter and parses it.
fn decode(
    piece: LinePiece<'_>,
    lines_done: &mut u64,
    limit: usize,
) -> Option<Result<DecodedLine, EventError>> {
    *lines_done += 1;
    let line_no = *lines_done;
    let content = match piece {
        LinePiece::Line(content) => content,
        LinePiece::TooLong => {
            return Some(Err(EventError {
                line_no,
                kind: EventErrorKind::LineTooLong { limit },
            }));
        }
    };
    match parse_line(content, line_no) {
        Ok(events) if events.is_empty() => None,
        Ok(events) => Some(Ok(DecodedLine { line_no, events })),
        Err(e) => Some(Err(e)),
    }
}
