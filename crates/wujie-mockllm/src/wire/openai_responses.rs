//! OpenAI Responses: `POST /v1/responses`, the API Codex speaks.

use super::{
    Inspected, SseEvent, arguments_string, content_text, items, next_id, now_secs, pieces,
    trailing_results_or_user,
};
use crate::script::{Answer, LatestInput, OfferedTool, ResolvedToolCall};
use serde_json::{Value, json};

fn is_tool_output(item: &Value) -> bool {
    matches!(
        item["type"].as_str(),
        Some("function_call_output" | "custom_tool_call_output")
    )
}

pub fn inspect(body: &Value) -> Inspected {
    let latest = match &body["input"] {
        Value::String(s) => LatestInput::UserText(s.clone()),
        Value::Array(input) => {
            trailing_results_or_user(input, is_tool_output, |i| content_text(&i["output"]))
        }
        _ => LatestInput::Nothing,
    };
    let offered = items(&body["tools"])
        .iter()
        .map(|t| {
            let kind = t["type"].as_str().unwrap_or("function");
            let name = t["name"].as_str().unwrap_or(kind);
            OfferedTool {
                name: name.to_string(),
                kind: kind.to_string(),
            }
        })
        .collect();
    Inspected {
        latest,
        model: body["model"].as_str().map(str::to_string),
        offered,
        stream: body["stream"].as_bool().unwrap_or(false),
        include_usage: false,
    }
}

/// The output items of an answer, complete (as in `output_item.done` and the final response).
fn output_items(answer: &Answer) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(thinking) = &answer.thinking {
        items.push(json!({"type": "reasoning", "id": next_id("rs_"),
                          "summary": [{"type": "summary_text", "text": thinking}]}));
    }
    if let Some(text) = &answer.text {
        items.push(
            json!({"type": "message", "id": next_id("msg_"), "status": "completed",
                          "role": "assistant",
                          "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        );
    }
    for call in &answer.tool_calls {
        items.push(call_item(call));
    }
    items
}

fn call_item(call: &ResolvedToolCall) -> Value {
    let arguments = arguments_string(&call.arguments);
    if call.tool.kind == "custom" {
        // Freeform tools (e.g. Codex's apply_patch) take raw text input, not JSON arguments.
        json!({"type": "custom_tool_call", "id": next_id("ctc_"), "call_id": next_id("call_"),
               "name": call.tool.name, "input": arguments, "status": "completed"})
    } else {
        json!({"type": "function_call", "id": next_id("fc_"), "call_id": next_id("call_"),
               "name": call.tool.name, "arguments": arguments, "status": "completed"})
    }
}

fn response(
    id: &str,
    model: &str,
    status: &str,
    output: Vec<Value>,
    answer: Option<&Answer>,
) -> Value {
    let mut r = json!({"id": id, "object": "response", "created_at": now_secs(), "status": status,
                       "model": model, "output": output, "usage": null});
    if let Some(answer) = answer {
        let u = answer.usage;
        r["usage"] = json!({
            "input_tokens": u.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": u.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.input_tokens + u.output_tokens,
        });
    }
    r
}

pub fn render_json(answer: &Answer, model: &str) -> Value {
    response(
        &next_id("resp_"),
        model,
        "completed",
        output_items(answer),
        Some(answer),
    )
}

/// The event stream: created, in_progress, per item added/deltas/done, completed.
pub fn render_stream(answer: &Answer, model: &str) -> Vec<SseEvent> {
    let id = next_id("resp_");
    let mut seq = 0u64;
    let mut events = Vec::new();
    let mut push = |name: &'static str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(seq);
        seq += 1;
        events.push(SseEvent::named(name, &data));
    };
    push(
        "response.created",
        json!({"response": response(&id, model, "in_progress", vec![], None)}),
    );
    push(
        "response.in_progress",
        json!({"response": response(&id, model, "in_progress", vec![], None)}),
    );
    let items = output_items(answer);
    for (output_index, item) in items.iter().enumerate() {
        let item_id = item["id"].clone();
        match item["type"].as_str() {
            Some("reasoning") => {
                let text = item["summary"][0]["text"].as_str().unwrap_or_default();
                push(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": {"type": "reasoning", "id": item_id, "summary": []}}),
                );
                let at =
                    json!({"item_id": item_id, "output_index": output_index, "summary_index": 0});
                push(
                    "response.reasoning_summary_part.added",
                    merge(&at, json!({"part": {"type": "summary_text", "text": ""}})),
                );
                for piece in pieces(text) {
                    push(
                        "response.reasoning_summary_text.delta",
                        merge(&at, json!({"delta": piece})),
                    );
                }
                push(
                    "response.reasoning_summary_text.done",
                    merge(&at, json!({"text": text})),
                );
                push(
                    "response.reasoning_summary_part.done",
                    merge(&at, json!({"part": {"type": "summary_text", "text": text}})),
                );
            }
            Some("message") => {
                let text = item["content"][0]["text"].as_str().unwrap_or_default();
                push(
                    "response.output_item.added",
                    json!({"output_index": output_index,
                            "item": {"type": "message", "id": item_id, "status": "in_progress",
                                     "role": "assistant", "content": []}}),
                );
                let at =
                    json!({"item_id": item_id, "output_index": output_index, "content_index": 0});
                push(
                    "response.content_part.added",
                    merge(
                        &at,
                        json!({"part": {"type": "output_text", "text": "", "annotations": []}}),
                    ),
                );
                for piece in pieces(text) {
                    push(
                        "response.output_text.delta",
                        merge(&at, json!({"delta": piece})),
                    );
                }
                push(
                    "response.output_text.done",
                    merge(&at, json!({"text": text})),
                );
                push(
                    "response.content_part.done",
                    merge(
                        &at,
                        json!({"part": {"type": "output_text", "text": text, "annotations": []}}),
                    ),
                );
            }
            Some("function_call") => {
                let arguments = item["arguments"].as_str().unwrap_or_default();
                let mut started = item.clone();
                started["arguments"] = json!("");
                started["status"] = json!("in_progress");
                push(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": started}),
                );
                let at = json!({"item_id": item_id, "output_index": output_index});
                for piece in pieces(arguments) {
                    push(
                        "response.function_call_arguments.delta",
                        merge(&at, json!({"delta": piece})),
                    );
                }
                push(
                    "response.function_call_arguments.done",
                    merge(&at, json!({"arguments": arguments})),
                );
            }
            _ => {
                push(
                    "response.output_item.added",
                    json!({"output_index": output_index, "item": item}),
                );
            }
        }
        push(
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
    }
    push(
        "response.completed",
        json!({"response": response(&id, model, "completed", items, Some(answer))}),
    );
    events
}

fn merge(base: &Value, extra: Value) -> Value {
    let mut out = base.clone();
    if let (Some(o), Value::Object(e)) = (out.as_object_mut(), extra) {
        o.extend(e);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_call_output_is_the_latest_input() {
        let body = json!({"model":"m","stream":true,"input":[
            {"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},
            {"type":"function_call","call_id":"c","name":"shell","arguments":"{}"},
            {"type":"function_call_output","call_id":"c","output":"hello\n"}],
            "tools":[{"type":"function","name":"shell"},{"type":"custom","name":"apply_patch"},{"type":"web_search"}]});
        let seen = inspect(&body);
        assert_eq!(seen.latest, LatestInput::ToolResult("hello\n".into()));
        let names: Vec<&str> = seen.offered.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["shell", "apply_patch", "web_search"]);
    }

    #[test]
    fn string_input_is_user_text() {
        assert_eq!(
            inspect(&json!({"input":"hi"})).latest,
            LatestInput::UserText("hi".into())
        );
    }
}
