//! Maps ACP `session/update` notifications and prompt-turn ends to our events.
//!
//! Updates are read as plain JSON, not through the schema's typed enum: an update kind this
//! version does not know (a newer protocol, an agent's extension) is skipped, never fatal.
//!
//! | `sessionUpdate` | our events |
//! |---|---|
//! | (the prompt sent) | `user_input` |
//! | `user_message_chunk` | `user_input` (chunks joined per message), unless it echoes the prompt or the issue's context sent with it |
//! | `agent_thought_chunk` | `thinking` (joined per message) |
//! | `agent_message_chunk` | `text` (joined per message); the last message of a turn is `final`, unless the turn was cancelled |
//! | `tool_call`, `tool_call_update` | `tool_use` once the call runs (with its latest `rawInput`), `tool_result` when completed or failed |
//! | `plan` | `plan` (the latest plan of a turn, once, when the turn ends) |
//! | anything else | nothing |
//!
//! A message ends when an update of another kind or another `messageId` arrives, or the turn
//! ends. Keys: `session:<sid>:turn:<n>:<kind>:<message id>` (the message's `messageId`, else
//! its order in the turn), `…:tool:<toolCallId>:use|result`, `…:plan`, `…:final`, `…:error`,
//! where `<n>` counts the prompts sent in this session by this process.

use std::collections::HashMap;

use serde_json::{Map, Value};
use wujie_protocol::event::{Event, Message, MessageKind, Usage};

use crate::{session_key, str_field};

/// The `source` of every message the acp provider reports.
pub const SOURCE: &str = "acp";

/// Turns one session's updates into events. Never fails; what it does not understand it skips.
#[derive(Debug)]
pub struct AcpMapper {
    session_id: String,
    /// Who reports usage: the agent's name from `initialize`.
    agent_name: String,
    turn: u64,
    /// Messages started in this turn, for keys of messages without a `messageId`.
    messages_in_turn: u64,
    open: Option<OpenMessage>,
    tools: HashMap<String, ToolState>,
    plan: Option<String>,
    /// The prompt of the current turn, already reported: an agent's echo of it is skipped.
    prompt: String,
    /// The issue's context, when it went with the current turn's prompt: an agent's echo of
    /// it is not the user speaking either.
    context: Option<String>,
    /// While `session/load` replays the history: its turns are counted, nothing is reported.
    replay: Option<Replay>,
    /// The model the session said it uses, for usage that names none.
    session_model: Option<String>,
}

/// The history `session/load` replays was reported when it happened: it is only counted, so
/// that the turns after it get keys of their own. A turn starts at a user message (a new
/// `messageId`, or after the agent spoke); agent output before any user message counts as one.
/// Counting too many turns only leaves a gap in the numbers; too few would reuse a key.
#[derive(Debug, Default)]
struct Replay {
    in_user: bool,
    user_message_id: Option<String>,
}

#[derive(Debug)]
struct OpenMessage {
    kind: MessageKind,
    /// The agent's `messageId`, when it sends one.
    message_id: Option<String>,
    key_id: String,
    text: String,
}

#[derive(Debug, Default)]
struct ToolState {
    turn: u64,
    name: Option<String>,
    input: Option<Value>,
    use_sent: bool,
    result_sent: bool,
}

/// How a prompt turn ended, as read from the `session/prompt` response.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    /// The response: its `stopReason`, `usage` and `_meta` as sent.
    Stopped {
        stop_reason: String,
        usage: Option<Value>,
        meta: Option<Value>,
    },
    /// The request failed (an error response, or the agent went away): what happened.
    Failed(String),
}

impl AcpMapper {
    pub fn new(session_id: &str, agent_name: &str) -> AcpMapper {
        AcpMapper {
            session_id: session_id.to_owned(),
            agent_name: agent_name.to_owned(),
            turn: 0,
            messages_in_turn: 0,
            open: None,
            tools: HashMap::new(),
            plan: None,
            prompt: String::new(),
            context: None,
            replay: None,
            session_model: None,
        }
    }

    /// A mapper for a session being loaded: what it replays until [`AcpMapper::end_replay`] is
    /// counted, not reported.
    pub fn resuming(session_id: &str, agent_name: &str) -> AcpMapper {
        AcpMapper {
            replay: Some(Replay::default()),
            ..AcpMapper::new(session_id, agent_name)
        }
    }

    pub fn is_replaying(&self) -> bool {
        self.replay.is_some()
    }

    /// The replay is over; returns how many earlier turns it held. The next prompt's turn
    /// follows them.
    pub fn end_replay(&mut self) -> u64 {
        self.replay = None;
        self.turn
    }

    fn count_replayed(&mut self, kind: Option<&str>, update: &Map<String, Value>) {
        let Some(replay) = self.replay.as_mut() else {
            return;
        };
        if kind == Some("user_message_chunk") {
            let id = str_field(update, "messageId").map(str::to_owned);
            let another_message = id.is_some() && id != replay.user_message_id;
            if !replay.in_user || another_message {
                self.turn += 1;
            }
            replay.in_user = true;
            if id.is_some() {
                replay.user_message_id = id;
            }
        } else if matches!(
            kind,
            Some(
                "agent_message_chunk"
                    | "agent_thought_chunk"
                    | "tool_call"
                    | "tool_call_update"
                    | "plan"
            )
        ) {
            if self.turn == 0 {
                self.turn = 1;
            }
            replay.in_user = false;
        }
    }

    /// The `session` event that opens the run.
    pub fn session_event(&self) -> Event {
        Event::Session {
            session_id: self.session_id.clone(),
        }
    }

    /// A prompt is about to be sent: a new turn starts, and the prompt is its `user_input`
    /// (most agents do not echo it back as `user_message_chunk`).
    pub fn start_turn(&mut self, prompt: &str) -> Vec<Event> {
        self.turn += 1;
        self.messages_in_turn = 0;
        self.plan = None;
        self.prompt = prompt.trim().to_owned();
        self.context = None;
        if self.prompt.is_empty() {
            return Vec::new();
        }
        let key = format!("{}:user:prompt", self.turn_key());
        vec![content(MessageKind::UserInput, self.prompt.clone(), key)]
    }

    /// The model the agent said the session uses ([`session_model`]): usage that names no
    /// model is that model's.
    pub fn set_session_model(&mut self, model: Option<String>) {
        self.session_model = model;
    }

    /// The issue's context went with this turn's prompt (see [`AcpMapper::context`]).
    pub fn sent_context(&mut self, context: &str) {
        self.context = Some(context.trim().to_owned());
    }

    /// Whether a user message only repeats what was sent: the prompt, the issue's context, or
    /// both (an agent that echoes the whole prompt joins its blocks).
    fn echoes_what_was_sent(&self, text: &str) -> bool {
        let rest = match &self.context {
            Some(context) if !context.is_empty() => text.replacen(context.as_str(), "", 1),
            _ => text.to_owned(),
        };
        let rest = rest.trim();
        rest.is_empty() || rest == self.prompt
    }

    /// The events of one `session/update` notification's params (`{sessionId, update}`).
    pub fn update(&mut self, params: &Value) -> Vec<Event> {
        let mut out = Vec::new();
        let Some(update) = params.get("update").and_then(Value::as_object) else {
            return out;
        };
        if params.get("sessionId").and_then(Value::as_str) != Some(self.session_id.as_str()) {
            return out;
        }
        let kind = str_field(update, "sessionUpdate");
        if self.replay.is_some() {
            self.count_replayed(kind, update);
            return out;
        }
        match kind {
            Some("user_message_chunk") => self.chunk(MessageKind::UserInput, update, &mut out),
            Some("agent_thought_chunk") => self.chunk(MessageKind::Thinking, update, &mut out),
            Some("agent_message_chunk") => self.chunk(MessageKind::Text, update, &mut out),
            Some("tool_call" | "tool_call_update") => self.tool(update, &mut out),
            Some("plan") => {
                self.close_open(&mut out);
                self.plan = plan_text(update);
            }
            _ => {}
        }
        out
    }

    /// The events that end a turn: the held reply as `final` (as `text` when the user
    /// cancelled the turn: it never got to its answer), the plan, an error, usage.
    ///
    /// `recorded`: the usage of each of the turn's model requests from the agent's own record
    /// of them, where it keeps one the provider reads ([`super::opencode_record`]); when
    /// there is any, it stands in for the usage the response reports, reported by this agent.
    pub fn end_turn(&mut self, end: &TurnEnd, recorded: &[Usage]) -> Vec<Event> {
        let mut out = Vec::new();
        let cancelled =
            matches!(end, TurnEnd::Stopped { stop_reason, .. } if stop_reason == "cancelled");
        match self.open.take() {
            Some(open)
                if open.kind == MessageKind::Text && !open.text.trim().is_empty() && !cancelled =>
            {
                let key = format!("{}:final", self.turn_key());
                out.push(content(
                    MessageKind::Final,
                    open.text.trim().to_owned(),
                    key,
                ));
            }
            Some(open) => self.push_open(open, &mut out),
            None => {}
        }
        if let Some(plan) = self.plan.take() {
            let key = format!("{}:plan", self.turn_key());
            out.push(content(MessageKind::Plan, plan, key));
        }
        match end {
            TurnEnd::Stopped {
                stop_reason,
                usage,
                meta,
            } => {
                if !matches!(stop_reason.as_str(), "end_turn" | "cancelled") {
                    let key = format!("{}:error", self.turn_key());
                    let note = format!("the agent stopped the turn: {stop_reason}");
                    out.push(content(MessageKind::Error, note, key));
                }
                if recorded.is_empty() {
                    let found = usage
                        .as_ref()
                        .and_then(|u| self.usage_of(u, None))
                        .or_else(|| meta.as_ref().and_then(|m| self.usage_in_meta(m)));
                    out.extend(found.map(Event::Usage));
                } else {
                    out.extend(recorded.iter().map(|usage| {
                        Event::Usage(Usage {
                            provider: self.agent_name.clone(),
                            ..usage.clone()
                        })
                    }));
                }
            }
            TurnEnd::Failed(what) => {
                let key = format!("{}:error", self.turn_key());
                out.push(content(MessageKind::Error, what.clone(), key));
            }
        }
        out
    }

    fn chunk(&mut self, kind: MessageKind, update: &Map<String, Value>, out: &mut Vec<Event>) {
        let text = update
            .get("content")
            .and_then(Value::as_object)
            .map(block_text)
            .unwrap_or_default();
        let message_id = str_field(update, "messageId").map(str::to_owned);
        let continues = self.open.as_ref().is_some_and(|open| {
            open.kind == kind && (message_id.is_none() || open.message_id == message_id)
        });
        if !continues {
            self.close_open(out);
            self.messages_in_turn += 1;
            let key_id = message_id
                .clone()
                .unwrap_or_else(|| format!("m{}", self.messages_in_turn));
            self.open = Some(OpenMessage {
                kind,
                message_id,
                key_id,
                text: String::new(),
            });
        }
        if let Some(open) = self.open.as_mut() {
            open.text.push_str(&text);
        }
    }

    fn tool(&mut self, update: &Map<String, Value>, out: &mut Vec<Event>) {
        let Some(id) = str_field(update, "toolCallId").filter(|id| !id.is_empty()) else {
            return;
        };
        self.close_open(out);
        let turn = self.turn;
        let state = self
            .tools
            .entry(id.to_owned())
            .or_insert_with(|| ToolState {
                turn,
                ..ToolState::default()
            });
        let name = str_field(update, "name")
            .or_else(|| str_field(update, "title"))
            .or_else(|| str_field(update, "kind"))
            .filter(|n| !n.is_empty());
        if let Some(name) = name
            && (state.name.is_none() || update.contains_key("name"))
        {
            state.name = Some(name.to_owned());
        }
        if let Some(input) = update.get("rawInput").filter(|v| !v.is_null()) {
            state.input = Some(input.clone());
        }
        let status = str_field(update, "status");
        let done = matches!(status, Some("completed" | "failed"));
        // Input arrives in pieces (opencode first sends only the cwd): the use is reported
        // once the call runs, with the latest input.
        let started = matches!(status, Some("in_progress")) || done;
        let session = session_key(Some(&self.session_id));
        let prefix = format!("{session}:turn:{}:tool:{id}", state.turn);
        let tool_name = state.name.clone().unwrap_or_else(|| "unknown".to_owned());
        if started && !state.use_sent {
            state.use_sent = true;
            let input = match state.input.clone() {
                Some(Value::Object(input)) => input,
                None => Map::new(),
                Some(other) => Map::from_iter([("input".to_owned(), other)]),
            };
            let mut message = bare(MessageKind::ToolUse, format!("{prefix}:use"));
            message.tool = Some(tool_name.clone());
            message.input = Some(input);
            out.push(Event::Message(message));
        }
        if done && !state.result_sent {
            state.result_sent = true;
            let mut output = tool_output(update);
            if status == Some("failed") {
                output = if output.is_empty() {
                    "failed".to_owned()
                } else {
                    format!("failed: {output}")
                };
            }
            let mut message = bare(MessageKind::ToolResult, format!("{prefix}:result"));
            message.tool = Some(tool_name);
            message.output = Some(output);
            out.push(Event::Message(message));
        }
    }

    fn close_open(&mut self, out: &mut Vec<Event>) {
        if let Some(open) = self.open.take() {
            self.push_open(open, out);
        }
    }

    fn push_open(&self, open: OpenMessage, out: &mut Vec<Event>) {
        let text = open.text.trim();
        if text.is_empty()
            || (open.kind == MessageKind::UserInput && self.echoes_what_was_sent(text))
        {
            return;
        }
        let what = match open.kind {
            MessageKind::UserInput => "user",
            MessageKind::Thinking => "thinking",
            _ => "text",
        };
        let key = format!("{}:{what}:{}", self.turn_key(), open.key_id);
        out.push(content(open.kind, text.to_owned(), key));
    }

    fn turn_key(&self) -> String {
        format!("{}:turn:{}", session_key(Some(&self.session_id)), self.turn)
    }

    /// A usage object in any of the shapes agents send: ACP's draft `PromptResponse.usage`
    /// (`inputTokens`, `outputTokens`, `cachedReadTokens`, `cachedWriteTokens`) or the
    /// snake-case one of model APIs (`input_tokens`, `output_tokens`, `cache_read_input_tokens`…).
    fn usage_of(&self, usage: &Value, model: Option<&str>) -> Option<Usage> {
        let usage = usage.as_object()?;
        let count = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| usage.get(*n).and_then(Value::as_u64))
                .unwrap_or(0)
        };
        let found = Usage {
            provider: self.agent_name.clone(),
            model: model
                .or_else(|| str_field(usage, "model"))
                .or(self.session_model.as_deref())
                .unwrap_or("unknown")
                .to_owned(),
            input_tokens: count(&["inputTokens", "input_tokens", "promptTokens"]),
            output_tokens: count(&["outputTokens", "output_tokens", "completionTokens"]),
            cache_read_tokens: count(&[
                "cachedReadTokens",
                "cache_read_input_tokens",
                "cache_read_tokens",
                "cachedTokens",
            ]),
            cache_write_tokens: count(&[
                "cachedWriteTokens",
                "cache_creation_input_tokens",
                "cache_write_tokens",
            ]),
        };
        (found.input_tokens + found.output_tokens > 0).then_some(found)
    }

    /// Usage the agent put in the prompt response's `_meta`, where ACP has no field for it:
    /// an object named `*usage*` or `token_count` at its top level or one level down (Grok:
    /// `_meta.usage`; Gemini CLI: `_meta.quota.token_count`), with the nearest `model` or
    /// `modelId` string as the model.
    fn usage_in_meta(&self, meta: &Value) -> Option<Usage> {
        let meta = meta.as_object()?;
        let model = nearest_model(meta);
        let candidates = std::iter::once(meta).chain(meta.values().filter_map(Value::as_object));
        for object in candidates {
            for (name, value) in object {
                let name = name.to_ascii_lowercase();
                if (name.contains("usage") || name == "token_count")
                    && let Some(usage) = self.usage_of(value, model)
                {
                    return Some(usage);
                }
            }
        }
        None
    }
}

/// The model a `session/new` or `session/load` response says the session uses: the current
/// one of `models` (an older field Hermes sends; the entry's name, its id being prefixed with
/// the provider), else the current value of the `model` config option (opencode:
/// `provider/model`, the model's part).
pub fn session_model(response: &Value) -> Option<String> {
    let models = &response["models"];
    if let Some(current) = models["currentModelId"].as_str() {
        let name = models["availableModels"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["modelId"] == current)
            .and_then(|m| m["name"].as_str());
        return Some(name.unwrap_or(current).to_owned());
    }
    response["configOptions"]
        .as_array()?
        .iter()
        .find(|o| o["category"] == "model")?["currentValue"]
        .as_str()
        .map(|value| value.rsplit('/').next().unwrap_or(value).to_owned())
}

/// The first `model` or `modelId` string found breadth-first within three levels of `object`.
fn nearest_model(object: &Map<String, Value>) -> Option<&str> {
    let mut level: Vec<&Value> = object.values().collect();
    if let Some(model) = str_field(object, "modelId").or_else(|| str_field(object, "model")) {
        return Some(model);
    }
    for _ in 0..3 {
        let mut next = Vec::new();
        for value in level {
            match value {
                Value::Object(o) => {
                    if let Some(model) = str_field(o, "modelId").or_else(|| str_field(o, "model")) {
                        return Some(model);
                    }
                    next.extend(o.values());
                }
                Value::Array(items) => next.extend(items),
                _ => {}
            }
        }
        level = next;
    }
    None
}

/// The text of one content block; other blocks become a placeholder naming what was there.
fn block_text(block: &Map<String, Value>) -> String {
    match str_field(block, "type") {
        Some("text") => str_field(block, "text").unwrap_or_default().to_owned(),
        Some("resource_link") => format!("[{}]", str_field(block, "uri").unwrap_or("link")),
        Some("resource") => block
            .get("resource")
            .and_then(Value::as_object)
            .and_then(|r| str_field(r, "text").or_else(|| str_field(r, "uri")))
            .unwrap_or_default()
            .to_owned(),
        Some(other) => format!("[{other}]"),
        None => String::new(),
    }
}

/// A tool result's text: its `content[]` (text blocks, diffs, terminals), else `rawOutput`.
fn tool_output(update: &Map<String, Value>) -> String {
    let parts: Vec<String> = update
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .filter_map(|item| match str_field(item, "type") {
            Some("content") => item
                .get("content")
                .and_then(Value::as_object)
                .map(block_text),
            Some("diff") => Some(format!(
                "[diff {}]",
                str_field(item, "path").unwrap_or_default()
            )),
            Some("terminal") => Some(format!(
                "[terminal {}]",
                str_field(item, "terminalId").unwrap_or_default()
            )),
            _ => None,
        })
        .filter(|s| !s.is_empty())
        .collect();
    if !parts.is_empty() {
        return parts.join("\n");
    }
    match update.get("rawOutput") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A plan's entries, one per line: `[status] content`.
fn plan_text(update: &Map<String, Value>) -> Option<String> {
    let lines: Vec<String> = update
        .get("entries")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|e| {
            let text = str_field(e, "content")?;
            Some(format!(
                "[{}] {text}",
                str_field(e, "status").unwrap_or("pending")
            ))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

fn bare(kind: MessageKind, source_key: String) -> Message {
    crate::bare_message(SOURCE, kind, source_key)
}

fn content(kind: MessageKind, text: String, source_key: String) -> Event {
    crate::content_message(SOURCE, kind, text, source_key)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn mapper() -> AcpMapper {
        let mut m = AcpMapper::new("s1", "fake-agent");
        assert!(m.start_turn("  ").is_empty());
        m
    }

    fn feed(m: &mut AcpMapper, updates: &[Value]) -> Vec<Event> {
        updates
            .iter()
            .flat_map(|u| m.update(&json!({"sessionId": "s1", "update": u})))
            .collect()
    }

    fn end_turn() -> TurnEnd {
        TurnEnd::Stopped {
            stop_reason: "end_turn".to_owned(),
            usage: None,
            meta: None,
        }
    }

    /// (type, key, content or tool + input/output) per message.
    fn summary(events: &[Event]) -> Vec<(MessageKind, String, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Message(m) => Some(m),
                _ => None,
            })
            .map(|m| {
                let what = match m.kind {
                    MessageKind::ToolUse => format!(
                        "{} {}",
                        m.tool.clone().unwrap_or_default(),
                        Value::Object(m.input.clone().unwrap_or_default())
                    ),
                    MessageKind::ToolResult => format!(
                        "{} {}",
                        m.tool.clone().unwrap_or_default(),
                        m.output.clone().unwrap_or_default()
                    ),
                    _ => m.content.clone().unwrap_or_default(),
                };
                (m.kind, m.source_key.clone(), what)
            })
            .collect()
    }

    fn text(kind: &str, text: &str, id: Option<&str>) -> Value {
        let mut u = json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}});
        if let Some(id) = id {
            u["messageId"] = json!(id);
        }
        u
    }

    #[test]
    fn a_turn_maps_chunks_tools_plan_and_the_last_reply_as_final() {
        let mut m = AcpMapper::new("s1", "fake-agent");
        let mut out = m.start_turn("say hi");
        out.extend(feed(
            &mut m,
            &[
                // The agent's echo of the prompt is not reported twice.
                text("user_message_chunk", "say ", Some("u0")),
                text("user_message_chunk", "hi", Some("u0")),
                text("user_message_chunk", "and more", Some("u1")),
                text("agent_thought_chunk", "Let me ", None),
                text("agent_thought_chunk", "think.", None),
                text("agent_message_chunk", "Running ", Some("a1")),
                text("agent_message_chunk", "it.", Some("a1")),
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "echo hi",
                       "kind": "execute", "status": "pending"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                       "rawInput": {"command": "echo hi"}, "status": "in_progress"}),
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                       "content": [{"type": "content", "content": {"type": "text", "text": "hi"}}]}),
                json!({"sessionUpdate": "plan", "entries": [{"content": "say hi", "status": "completed", "priority": "low"}]}),
                text("agent_message_chunk", "hi", Some("a2")),
                text("agent_message_chunk", "!", Some("a2")),
            ],
        ));
        out.extend(m.end_turn(&end_turn(), &[]));
        let t = "session:s1:turn:1";
        let want = [
            (MessageKind::UserInput, format!("{t}:user:prompt"), "say hi"),
            (MessageKind::UserInput, format!("{t}:user:u1"), "and more"),
            (
                MessageKind::Thinking,
                format!("{t}:thinking:m3"),
                "Let me think.",
            ),
            (MessageKind::Text, format!("{t}:text:a1"), "Running it."),
            (
                MessageKind::ToolUse,
                format!("{t}:tool:c1:use"),
                r#"echo hi {"command":"echo hi"}"#,
            ),
            (
                MessageKind::ToolResult,
                format!("{t}:tool:c1:result"),
                "echo hi hi",
            ),
            (MessageKind::Final, format!("{t}:final"), "hi!"),
            (MessageKind::Plan, format!("{t}:plan"), "[completed] say hi"),
        ]
        .map(|(k, key, c)| (k, key, c.to_owned()))
        .to_vec();
        assert_eq!(summary(&out), want);
    }

    #[test]
    fn unknown_kinds_other_sessions_and_odd_shapes_are_skipped() {
        let mut m = mapper();
        let odd = [
            json!({"sessionUpdate": "some_future_kind", "x": 1}),
            json!({"sessionUpdate": 7}),
            json!({"noKind": true}),
            json!("a string"),
            json!({"sessionUpdate": "agent_message_chunk"}),
            json!({"sessionUpdate": "agent_message_chunk", "content": 5}),
            json!({"sessionUpdate": "tool_call"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": ""}),
            json!({"sessionUpdate": "plan", "entries": "no"}),
            json!({"sessionUpdate": "usage_update", "used": 5, "size": 10}),
        ];
        assert!(feed(&mut m, &odd).is_empty());
        assert!(
            m.update(&json!({"update": text("agent_message_chunk", "x", None)}))
                .is_empty()
        );
        assert!(
            m.update(
                &json!({"sessionId": "other", "update": text("agent_message_chunk", "x", None)})
            )
            .is_empty()
        );
        assert!(m.update(&json!(null)).is_empty());
        assert!(summary(&m.end_turn(&end_turn(), &[])).is_empty());
    }

    #[test]
    fn a_failed_tool_a_bad_stop_and_a_broken_turn_are_reported() {
        let mut m = mapper();
        let mut out = feed(
            &mut m,
            &[
                json!({"sessionUpdate": "tool_call", "toolCallId": "c9", "name": "bash",
                     "title": "Shell", "status": "failed", "rawOutput": {"code": 1}}),
            ],
        );
        out.extend(m.end_turn(
            &TurnEnd::Stopped {
                stop_reason: "max_tokens".to_owned(),
                usage: None,
                meta: None,
            },
            &[],
        ));
        out.extend(m.start_turn("go on"));
        out.extend(feed(&mut m, &[text("agent_message_chunk", "half", None)]));
        out.extend(m.end_turn(&TurnEnd::Failed("the agent exited".to_owned()), &[]));
        let want = [
            (
                MessageKind::ToolUse,
                "session:s1:turn:1:tool:c9:use",
                "bash {}",
            ),
            (
                MessageKind::ToolResult,
                "session:s1:turn:1:tool:c9:result",
                r#"bash failed: {"code":1}"#,
            ),
            (
                MessageKind::Error,
                "session:s1:turn:1:error",
                "the agent stopped the turn: max_tokens",
            ),
            // The reply never finished, but its text is kept.
            (
                MessageKind::UserInput,
                "session:s1:turn:2:user:prompt",
                "go on",
            ),
            (MessageKind::Final, "session:s1:turn:2:final", "half"),
            (
                MessageKind::Error,
                "session:s1:turn:2:error",
                "the agent exited",
            ),
        ]
        .map(|(k, key, c)| (k, key.to_owned(), c.to_owned()))
        .to_vec();
        assert_eq!(summary(&out), want);
    }

    #[test]
    fn an_echo_of_the_issues_context_is_not_the_user_speaking() {
        let mut m = AcpMapper::new("s1", "fake-agent");
        let mut out = m.start_turn("go");
        m.sent_context("You are working on issue WUJ-1.");
        out.extend(feed(
            &mut m,
            &[
                text(
                    "user_message_chunk",
                    "You are working on issue WUJ-1.",
                    Some("u1"),
                ),
                text("user_message_chunk", "go", Some("u1")),
                text("user_message_chunk", "and more", Some("u2")),
            ],
        ));
        out.extend(m.end_turn(&end_turn(), &[]));
        let said: Vec<(MessageKind, String)> =
            summary(&out).into_iter().map(|(k, _, c)| (k, c)).collect();
        assert_eq!(
            said,
            [
                (MessageKind::UserInput, "go".to_owned()),
                (MessageKind::UserInput, "and more".to_owned())
            ]
        );
        // The next turn's prompt goes alone.
        let next = m.start_turn("again");
        assert_eq!(summary(&next).len(), 1);
        let echo = feed(
            &mut m,
            &[text(
                "user_message_chunk",
                "You are working on issue WUJ-1.",
                Some("u3"),
            )],
        );
        assert_eq!(summary(&m.end_turn(&end_turn(), &[])).len(), 1, "{echo:?}");
    }

    #[test]
    fn the_sessions_model_names_usage_that_names_none() {
        let hermes = json!({"sessionId": "s", "models": {"currentModelId": "custom:m1",
            "availableModels": [{"modelId": "custom:m0", "name": "m0"}, {"modelId": "custom:m1", "name": "m1"}]}});
        assert_eq!(session_model(&hermes).as_deref(), Some("m1"));
        let opencode = json!({"sessionId": "s", "configOptions": [
            {"id": "mode", "category": "mode", "currentValue": "build"},
            {"id": "model", "category": "model", "currentValue": "mock/m2"}]});
        assert_eq!(session_model(&opencode).as_deref(), Some("m2"));
        assert_eq!(session_model(&json!({"sessionId": "s"})), None);

        let mut m = mapper();
        m.set_session_model(session_model(&opencode));
        let usage = m.end_turn(
            &TurnEnd::Stopped {
                stop_reason: "end_turn".to_owned(),
                usage: Some(json!({"inputTokens": 10, "outputTokens": 1})),
                meta: None,
            },
            &[],
        );
        assert!(
            matches!(&usage[..], [Event::Usage(u)] if u.model == "m2"),
            "{usage:?}"
        );
    }

    #[test]
    fn a_cancelled_turns_reply_is_text_not_final() {
        let mut m = mapper();
        let mut out = feed(&mut m, &[text("agent_message_chunk", "waiting", None)]);
        out.extend(m.end_turn(
            &TurnEnd::Stopped {
                stop_reason: "cancelled".to_owned(),
                usage: None,
                meta: None,
            },
            &[],
        ));
        let kinds: Vec<MessageKind> = summary(&out).into_iter().map(|(k, _, _)| k).collect();
        assert_eq!(kinds, [MessageKind::Text], "{out:?}");
    }

    #[test]
    fn usage_comes_from_the_response_or_its_meta() {
        let usage = |events: Vec<Event>| -> Vec<Usage> {
            events
                .into_iter()
                .filter_map(|e| match e {
                    Event::Usage(u) => Some(u),
                    _ => None,
                })
                .collect()
        };
        let mut m = mapper();
        let from_response = m.end_turn(
            &TurnEnd::Stopped {
                stop_reason: "end_turn".to_owned(),
                usage: Some(
                    json!({"totalTokens": 33, "inputTokens": 30, "outputTokens": 3,
                               "cachedReadTokens": 4}),
                ),
                meta: Some(json!({"usage": {"inputTokens": 999, "outputTokens": 1}})),
            },
            &[],
        );
        let expect = |model: &str, input, output, cache_read| Usage {
            provider: "fake-agent".to_owned(),
            model: model.to_owned(),
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: cache_read,
            cache_write_tokens: 0,
        };
        assert_eq!(usage(from_response), vec![expect("unknown", 30, 3, 4)]);
        let from_meta = m.end_turn(&TurnEnd::Stopped {
            stop_reason: "end_turn".to_owned(),
            usage: None,
            // Gemini CLI 0.61's shape.
            meta: Some(json!({"quota": {"token_count": {"input_tokens": 10, "output_tokens": 1},
                                        "model_usage": [{"model": "m1", "token_count": {"input_tokens": 10, "output_tokens": 1}}]}})),
        }, &[]);
        assert_eq!(usage(from_meta), vec![expect("m1", 10, 1, 0)]);
        // Grok's: the last request's counts at the top, the turn's under `usage`.
        let grok = m.end_turn(&TurnEnd::Stopped {
            stop_reason: "end_turn".to_owned(),
            usage: None,
            meta: Some(json!({"modelId": "m2", "inputTokens": 10, "outputTokens": 1,
                              "usage": {"inputTokens": 20, "outputTokens": 2, "cachedReadTokens": 5}})),
        }, &[]);
        assert_eq!(usage(grok), vec![expect("m2", 20, 2, 5)]);
        let none = m.end_turn(
            &TurnEnd::Stopped {
                stop_reason: "end_turn".to_owned(),
                usage: Some(json!({"inputTokens": 0, "outputTokens": 0})),
                meta: Some(json!({"other": "x"})),
            },
            &[],
        );
        assert!(usage(none).is_empty());
        // Usage from the agent's own record of each request stands in for the response's.
        let recorded = [expect("m3", 10, 1, 0), expect("m3", 10, 1, 0)];
        let from_record = m.end_turn(
            &TurnEnd::Stopped {
                stop_reason: "end_turn".to_owned(),
                usage: Some(json!({"inputTokens": 10, "outputTokens": 1})),
                meta: None,
            },
            &recorded,
        );
        assert_eq!(usage(from_record), recorded);
    }

    /// The turns of a replayed history, each as the `sessionUpdate` kinds (and message ids) it
    /// sends; how many turns the mapper counts.
    fn replayed_turns(updates: &[(&str, Option<&str>)]) -> (u64, Vec<Event>) {
        let mut m = AcpMapper::resuming("s1", "fake-agent");
        let updates: Vec<Value> = updates
            .iter()
            .map(|(kind, id)| {
                let mut u =
                    json!({"sessionUpdate": kind, "content": {"type": "text", "text": "x"}});
                if let Some(id) = id {
                    u["messageId"] = json!(id);
                }
                u
            })
            .collect();
        let events = feed(&mut m, &updates);
        (m.end_replay(), events)
    }

    #[test]
    fn a_replayed_history_is_counted_in_turns_and_reported_not_at_all() {
        let user = ("user_message_chunk", None);
        let agent = ("agent_message_chunk", None);
        let thought = ("agent_thought_chunk", None);
        // Two turns; chunks of one user message are one turn.
        assert_eq!(
            replayed_turns(&[user, user, thought, agent, user, agent]),
            (2, vec![])
        );
        // Two user messages in a row, told apart by their ids: two turns (the first one got
        // no reply, as when it was cancelled at once).
        let u1 = ("user_message_chunk", Some("u1"));
        let u2 = ("user_message_chunk", Some("u2"));
        assert_eq!(replayed_turns(&[u1, u1, u2, agent]).0, 2);
        // The agent spoke before any user message: that counts as a turn of its own.
        assert_eq!(replayed_turns(&[agent, user, agent]).0, 2);
        // Updates that are no conversation do not start turns.
        let commands = ("available_commands_update", None);
        assert_eq!(replayed_turns(&[commands, user, agent, commands]).0, 1);
        assert_eq!(replayed_turns(&[]).0, 0);
    }

    #[test]
    fn after_a_replay_turns_go_on_from_the_replayed_ones() {
        let mut m = AcpMapper::resuming("s1", "fake-agent");
        assert_eq!(
            m.session_event(),
            Event::Session {
                session_id: "s1".to_owned()
            }
        );
        feed(
            &mut m,
            &[
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "first"}}),
            ],
        );
        assert!(m.is_replaying());
        assert_eq!(m.end_replay(), 1);
        assert!(!m.is_replaying());
        let mut events = m.start_turn("second");
        events.extend(feed(
            &mut m,
            &[json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}})],
        ));
        events.extend(m.end_turn(&end_turn(), &[]));
        let keys: Vec<String> = summary(&events)
            .into_iter()
            .map(|(_, key, _)| key)
            .collect();
        assert_eq!(
            keys,
            ["session:s1:turn:2:user:prompt", "session:s1:turn:2:final"]
        );
    }
}
