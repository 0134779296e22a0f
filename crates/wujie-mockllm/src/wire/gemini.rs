//! Gemini `generateContent` / `streamGenerateContent` (`POST /v1beta/models/{model}:{method}`).
//! The model and whether to stream come from the path, not the body.

use super::{Inspected, SseEvent, content_text, functions, items, pieces, results_or_text};
use crate::script::{Answer, LatestInput};
use serde_json::{Value, json};

/// The model and method of a Gemini path such as `/v1beta/models/m:streamGenerateContent`.
/// `None` when the path is not a Gemini generate call.
pub fn target(path: &str) -> Option<(String, bool)> {
    let rest = path.trim_end_matches('/');
    let rest = rest
        .strip_prefix("/v1beta")
        .or_else(|| rest.strip_prefix("/v1"))
        .unwrap_or(rest);
    let (model, method) = rest.strip_prefix("/models/")?.rsplit_once(':')?;
    match method {
        "generateContent" => Some((model.to_string(), false)),
        "streamGenerateContent" => Some((model.to_string(), true)),
        _ => None,
    }
}

/// The text of a `functionResponse.response`: its `output` or `content` string, else its JSON.
fn response_text(response: &Value) -> String {
    match (&response["output"], &response["content"]) {
        (Value::String(s), _) => s.clone(),
        (_, Value::Null) => response.to_string(),
        (_, content) => content_text(content),
    }
}

/// Reads the body; `model` and `stream` are left for the caller to take from the path.
pub fn inspect(body: &Value) -> Inspected {
    let latest = match items(&body["contents"])
        .iter()
        .rev()
        .find(|c| c["role"] != "model")
    {
        None => LatestInput::Nothing,
        Some(content) => {
            let parts = items(&content["parts"]);
            let results: Vec<String> = parts
                .iter()
                .filter_map(|p| p.get("functionResponse"))
                .map(|r| response_text(&r["response"]))
                .collect();
            results_or_text(results, || {
                let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
                texts.join("\n")
            })
        }
    };
    let declarations = items(&body["tools"]).iter().flat_map(|t| {
        let list = t
            .get("functionDeclarations")
            .or_else(|| t.get("function_declarations"));
        list.map_or(&[][..], items)
    });
    let offered = functions(declarations, |d| d["name"].as_str());
    Inspected {
        latest,
        model: None,
        offered,
        stream: false,
        include_usage: false,
    }
}

fn usage(answer: &Answer) -> Value {
    let u = answer.usage;
    json!({"promptTokenCount": u.input_tokens, "candidatesTokenCount": u.output_tokens,
           "totalTokenCount": u.input_tokens + u.output_tokens})
}

fn candidate(parts: Vec<Value>, finish: bool) -> Value {
    let mut c = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if finish {
        c["finishReason"] = json!("STOP");
    }
    c
}

fn call_parts(answer: &Answer) -> Vec<Value> {
    answer
        .tool_calls
        .iter()
        .map(|c| json!({"functionCall": {"name": c.tool.name, "args": c.arguments}}))
        .collect()
}

pub fn render_json(answer: &Answer, model: &str) -> Value {
    let mut parts = Vec::new();
    if let Some(thinking) = &answer.thinking {
        parts.push(json!({"text": thinking, "thought": true}));
    }
    if let Some(text) = &answer.text {
        parts.push(json!({"text": text}));
    }
    parts.extend(call_parts(answer));
    json!({"candidates": [candidate(parts, true)], "usageMetadata": usage(answer), "modelVersion": model})
}

/// One chunk per thinking or text piece, one with the calls, the last carrying
/// `finishReason` and `usageMetadata`.
pub fn render_stream(answer: &Answer, model: &str) -> Vec<SseEvent> {
    let mut chunks: Vec<Vec<Value>> = Vec::new();
    if let Some(thinking) = &answer.thinking {
        chunks.extend(
            pieces(thinking)
                .into_iter()
                .map(|p| vec![json!({"text": p, "thought": true})]),
        );
    }
    if let Some(text) = &answer.text {
        chunks.extend(pieces(text).into_iter().map(|p| vec![json!({"text": p})]));
    }
    let calls = call_parts(answer);
    if !calls.is_empty() {
        chunks.push(calls);
    }
    if chunks.is_empty() {
        chunks.push(vec![json!({"text": ""})]);
    }
    let last = chunks.len() - 1;
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, parts)| {
            let mut chunk =
                json!({"candidates": [candidate(parts, i == last)], "modelVersion": model});
            if i == last {
                chunk["usageMetadata"] = usage(answer);
            }
            SseEvent::data(&chunk)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            target("/v1beta/models/m-1:streamGenerateContent"),
            Some(("m-1".into(), true))
        );
        assert_eq!(
            target("/v1beta/models/m:generateContent"),
            Some(("m".into(), false))
        );
        assert_eq!(target("/v1beta/models/m:countTokens"), None);
        assert_eq!(target("/v1beta/models"), None);
    }

    #[test]
    fn function_response_is_the_latest_input() {
        let body = json!({"contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command",
                                                             "response": {"output": "hello"}}}]}],
            "tools": [{"functionDeclarations": [{"name": "run_shell_command"}, {"name": "read_file"}]}]});
        let seen = inspect(&body);
        assert_eq!(seen.latest, LatestInput::ToolResult("hello".into()));
        assert_eq!(seen.offered.len(), 2);
    }
}
