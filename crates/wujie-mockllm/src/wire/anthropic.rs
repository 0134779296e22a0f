//! Anthropic Messages: `POST /v1/messages` (Claude Code adds `?beta=true`).

use super::{
    Inspected, SseEvent, content_text, functions, items, next_id, pieces, results_or_text,
};
use crate::script::{Answer, LatestInput};
use serde_json::{Value, json};

pub fn inspect(body: &Value) -> Inspected {
    let messages = items(&body["messages"]);
    let latest = match messages.iter().rev().find(|m| m["role"] == "user") {
        None => LatestInput::Nothing,
        Some(m) => {
            let results: Vec<String> = items(&m["content"])
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| content_text(&b["content"]))
                .collect();
            // Text blocks beside tool results are reminders the agent adds, not a new request.
            results_or_text(results, || content_text(&m["content"]))
        }
    };
    let offered = functions(items(&body["tools"]), |t| t["name"].as_str());
    Inspected {
        latest,
        model: body["model"].as_str().map(str::to_string),
        offered,
        stream: body["stream"].as_bool().unwrap_or(false),
        include_usage: false,
    }
}

/// A fixed signature: clients keep it and send it back with the thinking block.
const SIGNATURE: &str = "mock-signature";

fn blocks(answer: &Answer) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(thinking) = &answer.thinking {
        out.push(json!({"type": "thinking", "thinking": thinking, "signature": SIGNATURE}));
    }
    if let Some(text) = &answer.text {
        out.push(json!({"type": "text", "text": text}));
    }
    for call in &answer.tool_calls {
        out.push(
            json!({"type": "tool_use", "id": next_id("toolu_"), "name": call.tool.name,
                        "input": call.arguments}),
        );
    }
    out
}

fn stop_reason(answer: &Answer) -> &'static str {
    if answer.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output,
           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

pub fn render_json(answer: &Answer, model: &str) -> Value {
    json!({
        "id": next_id("msg_"), "type": "message", "role": "assistant", "model": model,
        "content": blocks(answer), "stop_reason": stop_reason(answer), "stop_sequence": null,
        "usage": usage(answer.usage.input_tokens, answer.usage.output_tokens),
    })
}

pub fn render_stream(answer: &Answer, model: &str) -> Vec<SseEvent> {
    let mut events = Vec::new();
    let mut push = |name: &'static str, mut data: Value| {
        data["type"] = json!(name);
        events.push(SseEvent::named(name, &data));
    };
    push(
        "message_start",
        json!({"message": {
        "id": next_id("msg_"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": usage(answer.usage.input_tokens, 0)}}),
    );
    for (index, block) in blocks(answer).into_iter().enumerate() {
        match block["type"].as_str() {
            Some("thinking") => {
                let text = block["thinking"].as_str().unwrap_or_default().to_string();
                push(
                    "content_block_start",
                    json!({"index": index,
                     "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                );
                for piece in pieces(&text) {
                    push(
                        "content_block_delta",
                        json!({"index": index,
                         "delta": {"type": "thinking_delta", "thinking": piece}}),
                    );
                }
                push(
                    "content_block_delta",
                    json!({"index": index,
                     "delta": {"type": "signature_delta", "signature": SIGNATURE}}),
                );
            }
            Some("text") => {
                let text = block["text"].as_str().unwrap_or_default().to_string();
                push(
                    "content_block_start",
                    json!({"index": index,
                     "content_block": {"type": "text", "text": ""}}),
                );
                for piece in pieces(&text) {
                    push(
                        "content_block_delta",
                        json!({"index": index,
                         "delta": {"type": "text_delta", "text": piece}}),
                    );
                }
            }
            _ => {
                let input = block["input"].to_string();
                let mut start = block.clone();
                start["input"] = json!({});
                push(
                    "content_block_start",
                    json!({"index": index, "content_block": start}),
                );
                for piece in pieces(&input) {
                    push(
                        "content_block_delta",
                        json!({"index": index,
                         "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    );
                }
            }
        }
        push("content_block_stop", json!({"index": index}));
    }
    push(
        "message_delta",
        json!({
        "delta": {"stop_reason": stop_reason(answer), "stop_sequence": null},
        "usage": usage(answer.usage.input_tokens, answer.usage.output_tokens)}),
    );
    push("message_stop", json!({}));
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_result_blocks_win_over_reminder_text() {
        let body = json!({"model":"m","messages":[
            {"role":"user","content":"go"},
            {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"hello"},
                                       {"type":"text","text":"<system-reminder>x</system-reminder>"}]}],
            "tools":[{"name":"Bash","input_schema":{}}]});
        let seen = inspect(&body);
        assert_eq!(seen.latest, LatestInput::ToolResult("hello".into()));
        assert_eq!(seen.offered[0].name, "Bash");
    }
}
