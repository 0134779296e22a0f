//! The tool calls of a branch's last turn, read from a sidecar's `state` messages. Sidecars
//! return their backend's own message shapes; this reads the common ones without knowing any
//! backend: a turn starts at the last message with `role: "user"`; a tool call is an object
//! with `type` `tool_use` / `tool_call` / `toolCall` (top level or inside a message's `content`
//! array) naming the tool in `name` or `tool` and its input in `input` or `arguments`; its
//! result is a message with `role` `tool` / `toolResult` or `type` `tool_result` whose
//! `tool_use_id` / `toolCallId` / `tool_call_id` matches the call's `id`.

use serde_json::{Map, Value};

/// One tool call of a turn, with its result when the messages have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: Option<String>,
    pub tool: String,
    pub input: Option<Map<String, Value>>,
    pub output: Option<String>,
}

const CALL_TYPES: [&str; 3] = ["tool_use", "tool_call", "toolCall"];
const RESULT_ID_KEYS: [&str; 3] = ["tool_use_id", "toolCallId", "tool_call_id"];

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        // Content blocks: the text of each `{type: "text", text}` block.
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn as_call(item: &Value) -> Option<ToolCall> {
    let kind = item.get("type")?.as_str()?;
    if !CALL_TYPES.contains(&kind) {
        return None;
    }
    let tool = item
        .get("name")
        .or_else(|| item.get("tool"))
        .and_then(Value::as_str)?
        .to_owned();
    let input = match item.get("input").or_else(|| item.get("arguments")) {
        Some(Value::Object(map)) => Some(map.clone()),
        // Some APIs send the arguments as a JSON string.
        Some(Value::String(text)) => match serde_json::from_str(text) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        },
        _ => None,
    };
    Some(ToolCall {
        id: item.get("id").and_then(Value::as_str).map(str::to_owned),
        tool,
        input,
        output: None,
    })
}

fn result_of(message: &Value) -> Option<(String, Option<String>)> {
    let role = message.get("role").and_then(Value::as_str);
    let kind = message.get("type").and_then(Value::as_str);
    if !matches!(role, Some("tool" | "toolResult")) && kind != Some("tool_result") {
        return None;
    }
    let id = RESULT_ID_KEYS
        .iter()
        .find_map(|key| message.get(*key).and_then(Value::as_str))?;
    let output = message
        .get("content")
        .or_else(|| message.get("output"))
        .and_then(text_of);
    Some((id.to_owned(), output))
}

/// The tool calls made after the last user message, in order.
pub fn last_turn_tool_calls(messages: &[Value]) -> Vec<ToolCall> {
    let start = messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map_or(0, |i| i + 1);
    let turn = &messages[start..];
    let mut calls = Vec::new();
    for message in turn {
        if let Some(call) = as_call(message) {
            calls.push(call);
        }
        if let Some(Value::Array(items)) = message.get("content") {
            calls.extend(items.iter().filter_map(as_call));
        }
        if let Some((id, output)) = result_of(message)
            && let Some(call) = calls.iter_mut().find(|c| c.id.as_deref() == Some(&id))
        {
            call.output = output;
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_after_the_last_user_message_with_their_results() {
        let messages = [
            json!({"role": "user", "content": "earlier"}),
            json!({"type": "tool_use", "id": "old", "name": "read", "input": {}}),
            json!({"role": "user", "content": [{"type": "text", "text": "now"}]}),
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "let me look"},
                {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}
            ]}),
            json!({"role": "toolResult", "toolCallId": "c1", "content": [{"type": "text", "text": "a.txt"}]}),
            json!({"type": "tool_call", "tool": "edit", "arguments": "{\"path\": \"a.txt\"}"}),
        ];
        let calls = last_turn_tool_calls(&messages);
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[0].tool, "bash");
        assert_eq!(calls[0].input.as_ref().unwrap()["command"], "ls");
        assert_eq!(calls[0].output.as_deref(), Some("a.txt"));
        assert_eq!(calls[1].tool, "edit");
        assert_eq!(calls[1].input.as_ref().unwrap()["path"], "a.txt");
        assert_eq!(calls[1].output, None);
    }

    #[test]
    fn odd_messages_give_no_calls_and_no_panic() {
        let odd = [
            json!(null),
            json!(3),
            json!({"type": "tool_use"}),
            json!({"type": 7, "name": "x"}),
            json!({"role": "tool", "tool_use_id": 5}),
            json!({"content": [1, {"type": "toolCall", "name": 2}]}),
        ];
        assert!(last_turn_tool_calls(&odd).is_empty());
        assert!(last_turn_tool_calls(&[]).is_empty());
    }
}
