//! The stdout NDJSON event protocol spoken by local-run provider adapters (seed: "stdout NDJSON
//! 协议"): message events, usage, native `session` ids and `handoff_ready` requests.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
}

/// One event read from an adapter's stdout. A line that carries both a message `type` and a
/// `usage` object yields a `Message` followed by a `Usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Message(Message),
    Usage(Usage),
    Session { session_id: String },
    HandoffReady { request_id: String, mode: HandoffMode },
}
