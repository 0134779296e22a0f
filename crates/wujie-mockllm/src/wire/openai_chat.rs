//! OpenAI Chat Completions: `POST /v1/chat/completions`.

use super::{
    Inspected, SseEvent, arguments_string, content_text, functions, items, next_id, now_secs,
    pieces, trailing_results_or_user,
};
use crate::script::Answer;
use serde_json::{Value, json};

pub fn inspect(body: &Value) -> Inspected {
    // Trailing `tool` messages are the results of the previous turn's calls.
    let latest = trailing_results_or_user(
        items(&body["messages"]),
        |m| m["role"] == "tool",
        |m| content_text(&m["content"]),
    );
    let offered = functions(items(&body["tools"]), |t| {
        t["function"]["name"]
            .as_str()
            .or_else(|| t["name"].as_str())
    });
    Inspected {
        latest,
        model: body["model"].as_str().map(str::to_string),
        offered,
        stream: body["stream"].as_bool().unwrap_or(false),
        include_usage: body["stream_options"]["include_usage"]
            .as_bool()
            .unwrap_or(false),
    }
}

fn usage(answer: &Answer) -> Value {
    let u = answer.usage;
    json!({
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
    })
}

fn finish_reason(answer: &Answer) -> &'static str {
    if answer.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

pub fn render_json(answer: &Answer, model: &str) -> Value {
    let tool_calls: Vec<Value> = answer
        .tool_calls
        .iter()
        .map(|c| {
            json!({"id": next_id("call_"), "type": "function",
                   "function": {"name": c.tool.name, "arguments": arguments_string(&c.arguments)}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": answer.text});
    if let Some(thinking) = &answer.thinking {
        message["reasoning_content"] = json!(thinking);
    }
    if !tool_calls.is_empty() {
        message["tool_calls"] = json!(tool_calls);
    }
    json!({
        "id": next_id("chatcmpl-"),
        "object": "chat.completion",
        "created": now_secs(),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(answer)}],
        "usage": usage(answer),
    })
}

/// The chunk stream, ending with `[DONE]`. Usage goes in a final choice-less chunk when the
/// client asked for it (`stream_options.include_usage`), else on the chunk with the finish reason.
pub fn render_stream(answer: &Answer, model: &str, include_usage: bool) -> Vec<SseEvent> {
    let id = next_id("chatcmpl-");
    let created = now_secs();
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![SseEvent::data(&chunk(
        json!({"role": "assistant", "content": ""}),
        None,
    ))];
    if let Some(thinking) = &answer.thinking {
        for piece in pieces(thinking) {
            events.push(SseEvent::data(&chunk(
                json!({"reasoning_content": piece}),
                None,
            )));
        }
    }
    if let Some(text) = &answer.text {
        for piece in pieces(text) {
            events.push(SseEvent::data(&chunk(json!({"content": piece}), None)));
        }
    }
    for (index, call) in answer.tool_calls.iter().enumerate() {
        let head = json!({"tool_calls": [{"index": index, "id": next_id("call_"), "type": "function",
                                          "function": {"name": call.tool.name, "arguments": ""}}]});
        events.push(SseEvent::data(&chunk(head, None)));
        let arguments = arguments_string(&call.arguments);
        for piece in pieces(&arguments) {
            let delta = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
            events.push(SseEvent::data(&chunk(delta, None)));
        }
    }
    let mut last = chunk(json!({}), Some(finish_reason(answer)));
    if include_usage {
        events.push(SseEvent::data(&last));
        let usage_chunk = json!({"id": id, "object": "chat.completion.chunk", "created": created,
                                 "model": model, "choices": [], "usage": usage(answer)});
        events.push(SseEvent::data(&usage_chunk));
    } else {
        last["usage"] = usage(answer);
        events.push(SseEvent::data(&last));
    }
    events.push(SseEvent {
        event: None,
        data: "[DONE]".to_string(),
    });
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::LatestInput;

    #[test]
    fn trailing_tool_messages_are_the_latest_input() {
        let body = json!({"model":"m","stream":true,"stream_options":{"include_usage":true},
            "messages":[{"role":"user","content":"run it"},
                        {"role":"assistant","tool_calls":[{"id":"c1"}]},
                        {"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"hello"}]}],
            "tools":[{"type":"function","function":{"name":"bash"}}]});
        let seen = inspect(&body);
        assert_eq!(seen.latest, LatestInput::ToolResult("hello".into()));
        assert_eq!(seen.offered[0].name, "bash");
        assert!(seen.stream && seen.include_usage);
    }
}
