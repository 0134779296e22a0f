//! The wire APIs the mock speaks. Each submodule reads a request body into a [`Inspected`] view
//! (what the script is matched against) and renders an [`Answer`] in its own format, as one JSON
//! body or as a server-sent-event stream.

pub mod anthropic;
pub mod gemini;
pub mod openai_chat;
pub mod openai_responses;

use crate::script::{LatestInput, OfferedTool};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

/// Which wire API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    OpenaiChat,
    OpenaiResponses,
    AnthropicMessages,
    GeminiGenerateContent,
}

/// What a request asks, independent of its wire format.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspected {
    pub latest: LatestInput,
    pub model: Option<String>,
    pub offered: Vec<OfferedTool>,
    pub stream: bool,
    /// OpenAI Chat only: `stream_options.include_usage`.
    pub include_usage: bool,
}

/// One server-sent event: optional `event:` name and its JSON data.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub event: Option<&'static str>,
    pub data: String,
}

impl SseEvent {
    pub fn named(event: &'static str, data: &Value) -> SseEvent {
        SseEvent {
            event: Some(event),
            data: data.to_string(),
        }
    }
    pub fn data(data: &Value) -> SseEvent {
        SseEvent {
            event: None,
            data: data.to_string(),
        }
    }
    pub fn encode(&self) -> String {
        match self.event {
            Some(name) => format!("event: {name}\ndata: {}\n\n", self.data),
            None => format!("data: {}\n\n", self.data),
        }
    }
}

/// The elements of a JSON array; none when the value is missing or not an array.
pub fn items(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// The function tools a request offers, named by `name_of`; entries without a name are skipped.
pub fn functions<'a>(
    tools: impl IntoIterator<Item = &'a Value>,
    name_of: impl Fn(&'a Value) -> Option<&'a str>,
) -> Vec<OfferedTool> {
    tools
        .into_iter()
        .filter_map(|t| {
            Some(OfferedTool {
                name: name_of(t)?.to_string(),
                kind: "function".to_string(),
            })
        })
        .collect()
}

/// The latest input when a turn's message carries tool results beside (or instead of) text:
/// the results answer the previous turn's calls, so they win over any text.
pub fn results_or_text(results: Vec<String>, text: impl FnOnce() -> String) -> LatestInput {
    if results.is_empty() {
        LatestInput::UserText(text())
    } else {
        LatestInput::ToolResult(results.join("\n"))
    }
}

/// The latest input of a conversation where tool results are items of their own: the results
/// at its end (the previous turn's calls answered), else the last user message's text.
pub fn trailing_results_or_user(
    items: &[Value],
    is_result: impl Fn(&Value) -> bool,
    result_text: impl Fn(&Value) -> String,
) -> LatestInput {
    let trailing = items.iter().rev().take_while(|i| is_result(i)).count();
    if trailing > 0 {
        let texts: Vec<String> = items[items.len() - trailing..]
            .iter()
            .map(result_text)
            .collect();
        return LatestInput::ToolResult(texts.join("\n"));
    }
    match items.iter().rev().find(|i| i["role"] == "user") {
        Some(m) => LatestInput::UserText(content_text(&m["content"])),
        None => LatestInput::Nothing,
    }
}

/// The text of a message `content` that is either a string or a list of parts with `text`
/// (or, for tool results, nested `content`). Parts without text are skipped.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => match (o.get("text"), o.get("content")) {
                    (Some(Value::String(t)), _) => Some(t.clone()),
                    (_, Some(inner)) => Some(content_text(inner)),
                    _ => None,
                },
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Splits text into a few pieces so streamed answers really arrive as several deltas.
pub fn pieces(text: &str) -> Vec<&str> {
    let parts: Vec<&str> = text.split_inclusive(' ').collect();
    if parts.len() > 1 {
        return parts;
    }
    // One word: split it at a char boundary near the middle, so even `pong` has two deltas.
    let mid = text
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| i >= text.len() / 2)
        .unwrap_or(0);
    if mid == 0 || mid >= text.len() {
        vec![text]
    } else {
        vec![&text[..mid], &text[mid..]]
    }
}

/// A process-wide counter for ids that differ between answers (`call_1`, `msg_2`, ...).
pub fn next_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{prefix}{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Seconds since the Unix epoch, for `created` fields.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Tool arguments as the JSON string the OpenAI APIs carry.
pub fn arguments_string(arguments: &Value) -> String {
    match arguments {
        // A string is passed through (e.g. freeform tool input), anything else is serialized.
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pieces_rejoin_to_the_text() {
        for text in ["pong", "done", "a", "", "hello big world", "日本語"] {
            assert_eq!(pieces(text).concat(), text);
        }
        assert_eq!(pieces("pong"), vec!["po", "ng"]);
    }

    #[test]
    fn content_text_reads_strings_and_parts() {
        assert_eq!(content_text(&json!("hi")), "hi");
        let parts = json!([{"type":"text","text":"a"},{"type":"image"},{"type":"tool_result","content":[{"type":"text","text":"b"}]}]);
        assert_eq!(content_text(&parts), "a\nb");
    }
}
