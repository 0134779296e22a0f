//! The mock server over real HTTP: every API streaming and not, tool calls, script matching,
//! errors, request recording, and the binary.

use crate::{MockLlm, Script};
use serde_json::{Value, json};

fn tool_script() -> Script {
    Script::from_json(
        r#"{"models": ["m1", "m2"], "turns": [
          {"when": {"user_contains": "list files"},
           "reply": {"thinking": "I should look", "text": "Let me look.",
                     "tool_calls": [{"tool": ["bash", "shell"], "arguments": {"command": "ls -la"}}],
                     "usage": {"input_tokens": 30, "output_tokens": 7}}},
          {"when": {"tool_result_contains": "total 0"}, "reply": {"text": "empty dir"}},
          {"when": {"user_equals": "custom"},
           "reply": {"tool_calls": [{"tool": "apply_patch", "arguments": "*** Begin Patch"}]}}
        ]}"#,
    )
    .expect("valid script")
}

async fn post(mock: &MockLlm, path: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}{path}", mock.url()))
        .header("authorization", "Bearer secret-token")
        .header("x-api-key", "secret-key")
        .json(&body)
        .send()
        .await
        .expect("request")
}

async fn post_json(mock: &MockLlm, path: &str, body: Value) -> (u16, Value) {
    let response = post(mock, path, body).await;
    let status = response.status().as_u16();
    (status, response.json().await.expect("json body"))
}

/// Parses a server-sent-event body into (event name, JSON data or the raw string).
async fn post_sse(mock: &MockLlm, path: &str, body: Value) -> Vec<(Option<String>, Value)> {
    let response = post(mock, path, body).await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(content_type, "text/event-stream");
    let text = response.text().await.expect("body");
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            let data = serde_json::from_str(&data).unwrap_or(Value::String(data));
            (event, data)
        })
        .collect()
}

fn chat_body(stream: bool, messages: Value) -> Value {
    json!({"model": "m1", "stream": stream, "messages": messages,
           "tools": [{"type": "function", "function": {"name": "read"}},
                     {"type": "function", "function": {"name": "shell"}}]})
}

#[tokio::test]
async fn without_a_script_every_api_answers_pong() {
    let mock = MockLlm::start(Script::default()).await.unwrap();
    let user = json!([{"role": "user", "content": "hi"}]);
    let (status, chat) = post_json(
        &mock,
        "/v1/chat/completions",
        json!({"model": "x", "messages": user}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(chat["choices"][0]["message"]["content"], "pong");
    assert_eq!(chat["usage"]["prompt_tokens"], 10);
    assert_eq!(chat["usage"]["completion_tokens"], 1);

    let (_, responses) =
        post_json(&mock, "/v1/responses", json!({"model": "x", "input": "hi"})).await;
    assert_eq!(responses["output"][0]["content"][0]["text"], "pong");
    assert_eq!(responses["usage"]["input_tokens"], 10);
    assert_eq!(responses["usage"]["output_tokens"], 1);

    let (_, messages) = post_json(
        &mock,
        "/v1/messages?beta=true",
        json!({"model": "x", "messages": user}),
    )
    .await;
    assert_eq!(
        messages["content"][0],
        json!({"type": "text", "text": "pong"})
    );
    assert_eq!(messages["usage"]["input_tokens"], 10);
    assert_eq!(messages["usage"]["output_tokens"], 1);
    mock.shutdown().await;
}

#[tokio::test]
async fn chat_completions_tool_call_json_and_stream() {
    let mock = MockLlm::start(tool_script()).await.unwrap();
    let ask = json!([{"role": "user", "content": [{"type": "text", "text": "please list files"}]}]);

    let (_, reply) = post_json(&mock, "/v1/chat/completions", chat_body(false, ask.clone())).await;
    let choice = &reply["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Let me look.");
    assert_eq!(choice["message"]["reasoning_content"], "I should look");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(
        call["function"]["name"], "shell",
        "the offered candidate is called"
    );
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"command": "ls -la"}));
    assert_eq!(
        reply["usage"],
        json!({"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37})
    );

    let mut body = chat_body(true, ask);
    body["stream_options"] = json!({"include_usage": true});
    let events = post_sse(&mock, "/v1/chat/completions", body).await;
    assert_eq!(events.last().unwrap().1, Value::String("[DONE]".into()));
    let chunks: Vec<&Value> = events
        .iter()
        .map(|(_, d)| d)
        .filter(|d| d.is_object())
        .collect();
    let deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"].get(0))
        .map(|c| &c["delta"])
        .collect();
    let text: String = deltas
        .iter()
        .filter_map(|d| d["content"].as_str())
        .collect();
    assert_eq!(text, "Let me look.");
    let thinking: String = deltas
        .iter()
        .filter_map(|d| d["reasoning_content"].as_str())
        .collect();
    assert_eq!(thinking, "I should look");
    let name: String = deltas
        .iter()
        .filter_map(|d| d["tool_calls"][0]["function"]["name"].as_str())
        .collect();
    assert_eq!(name, "shell");
    let arguments: String = deltas
        .iter()
        .filter_map(|d| d["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"command": "ls -la"})
    );
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&json!("tool_calls")]);
    // include_usage: a last chunk with no choices carries the usage.
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 7);

    // The tool result answers with the second turn; streamed without include_usage, the usage
    // rides on the finishing chunk.
    let result = json!([{"role": "user", "content": "please list files"},
                        {"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                         "function": {"name": "shell", "arguments": "{}"}}]},
                        {"role": "tool", "tool_call_id": "c", "content": "total 0\n"}]);
    let events = post_sse(&mock, "/v1/chat/completions", chat_body(true, result)).await;
    let finishing = events
        .iter()
        .map(|(_, d)| d)
        .find(|d| d["choices"][0]["finish_reason"] == "stop")
        .unwrap();
    assert_eq!(finishing["usage"]["prompt_tokens"], 10);
    let text: String = events
        .iter()
        .filter_map(|(_, d)| d["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "empty dir");
    mock.shutdown().await;
}

#[tokio::test]
async fn responses_stream_has_the_events_codex_reads() {
    let mock = MockLlm::start(tool_script()).await.unwrap();
    let body = json!({"model": "m2", "stream": true,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]}],
        "tools": [{"type": "function", "name": "bash"}]});
    let events = post_sse(&mock, "/v1/responses", body).await;
    for (name, data) in &events {
        assert_eq!(
            name.as_deref(),
            data["type"].as_str(),
            "event name matches its data type"
        );
    }
    let names: Vec<&str> = events.iter().filter_map(|(n, _)| n.as_deref()).collect();
    assert_eq!(names.first(), Some(&"response.created"));
    assert_eq!(names.last(), Some(&"response.completed"));
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == "response.output_item.added")
            .count(),
        3
    );
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == "response.output_item.done")
            .count(),
        3
    );
    let sequence: Vec<u64> = events
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(sequence, (0..sequence.len() as u64).collect::<Vec<_>>());
    let joined = |kind: &str| -> String {
        events
            .iter()
            .filter(|(n, _)| n.as_deref() == Some(kind))
            .filter_map(|(_, d)| d["delta"].as_str())
            .collect()
    };
    assert_eq!(joined("response.output_text.delta"), "Let me look.");
    assert_eq!(
        joined("response.reasoning_summary_text.delta"),
        "I should look"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&joined("response.function_call_arguments.delta")).unwrap(),
        json!({"command": "ls -la"})
    );
    let call = events
        .iter()
        .find(|(n, d)| {
            n.as_deref() == Some("response.output_item.done")
                && d["item"]["type"] == "function_call"
        })
        .map(|(_, d)| &d["item"])
        .unwrap();
    assert_eq!(call["name"], "bash");
    assert!(call["call_id"].as_str().unwrap().starts_with("call_"));
    let completed = &events.last().unwrap().1["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["model"], "m2");
    assert_eq!(completed["usage"]["input_tokens"], 30);
    assert_eq!(completed["usage"]["output_tokens"], 7);
    assert_eq!(completed["output"].as_array().unwrap().len(), 3);

    // A function_call_output is the latest input; a freeform (custom) tool gets a custom call.
    let result = json!({"model": "m2", "input": [
        {"role": "user", "content": "list files"},
        {"type": "function_call", "call_id": "c", "name": "bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "total 0"}]});
    let (_, reply) = post_json(&mock, "/v1/responses", result).await;
    assert_eq!(reply["output"][0]["content"][0]["text"], "empty dir");
    let custom = json!({"model": "m2", "input": "custom", "tools": [{"type": "custom", "name": "apply_patch"}]});
    let (_, reply) = post_json(&mock, "/v1/responses", custom).await;
    assert_eq!(reply["output"][0]["type"], "custom_tool_call");
    assert_eq!(reply["output"][0]["input"], "*** Begin Patch");
    mock.shutdown().await;
}

#[tokio::test]
async fn anthropic_messages_stream_with_thinking_and_tool_use() {
    let mock = MockLlm::start(tool_script()).await.unwrap();
    let body = json!({"model": "m1", "stream": true, "max_tokens": 100,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "list files"}]}],
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]});
    let events = post_sse(&mock, "/v1/messages?beta=true", body).await;
    let names: Vec<&str> = events.iter().filter_map(|(n, _)| n.as_deref()).collect();
    assert_eq!(names[0], "message_start");
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == "content_block_start")
            .count(),
        3
    );
    assert_eq!(
        names.iter().filter(|n| **n == "content_block_stop").count(),
        3
    );
    let starts: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("content_block_start"))
        .map(|(_, d)| &d["content_block"])
        .collect();
    assert_eq!(starts[0]["type"], "thinking");
    assert_eq!(starts[1]["type"], "text");
    assert_eq!(starts[2]["type"], "tool_use");
    assert_eq!(
        starts[2]["name"], "Bash",
        "matched case-insensitively, sent as offered"
    );
    let deltas = |kind: &str, field: &str| -> String {
        events
            .iter()
            .filter(|(_, d)| d["delta"]["type"] == kind)
            .filter_map(|(_, d)| d["delta"][field].as_str())
            .collect()
    };
    assert_eq!(deltas("thinking_delta", "thinking"), "I should look");
    assert!(!deltas("signature_delta", "signature").is_empty());
    assert_eq!(deltas("text_delta", "text"), "Let me look.");
    assert_eq!(
        serde_json::from_str::<Value>(&deltas("input_json_delta", "partial_json")).unwrap(),
        json!({"command": "ls -la"})
    );
    let message_delta = &events[events.len() - 2].1;
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(message_delta["usage"]["output_tokens"], 7);
    assert_eq!(events[0].1["message"]["usage"]["input_tokens"], 30);

    // Non-streaming, with the tool result in a user message beside a reminder text block.
    let result = json!({"model": "m1", "messages": [
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                       "content": [{"type": "text", "text": "total 0"}]},
                                      {"type": "text", "text": "<reminder/>"}]}]});
    let (_, reply) = post_json(&mock, "/v1/messages", result).await;
    assert_eq!(
        reply["content"],
        json!([{"type": "text", "text": "empty dir"}])
    );
    assert_eq!(reply["stop_reason"], "end_turn");
    mock.shutdown().await;
}

#[tokio::test]
async fn unmatched_requests_get_a_400_that_says_why() {
    let mock = MockLlm::start(tool_script()).await.unwrap();
    let (status, error) = post_json(
        &mock,
        "/v1/chat/completions",
        chat_body(true, json!([{"role": "user", "content": "write a poem"}])),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["type"], "no_matching_turn");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("write a poem"), "{message}");
    assert!(
        message.contains("list files") && message.contains("total 0"),
        "names the turns: {message}"
    );

    let no_shell = json!({"model": "m1", "messages": [{"role": "user", "content": "list files"}],
                          "tools": [{"name": "Read", "input_schema": {}}]});
    let (status, error) = post_json(&mock, "/v1/messages", no_shell).await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["type"], "tool_not_offered");
    assert!(error["error"]["message"].as_str().unwrap().contains("Read"));

    let (status, _) = post_json(&mock, "/v1/embeddings", json!({})).await;
    assert_eq!(status, 404);
    mock.shutdown().await;
}

#[tokio::test]
async fn requests_are_recorded_without_credentials() {
    let mock = MockLlm::start(tool_script()).await.unwrap();
    let client = reqwest::Client::new();
    for path in ["/v1/models", "/models"] {
        let list: Value = client
            .get(format!("{}{path}", mock.url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let ids: Vec<&str> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["m1", "m2"]);
    }
    let one = client
        .get(format!("{}/v1/models/m2", mock.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(one.json::<Value>().await.unwrap()["id"], "m2");
    let missing = client
        .get(format!("{}/v1/models/m3", mock.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    post_json(
        &mock,
        "/v1/chat/completions",
        chat_body(false, json!([{"role": "user", "content": "list files"}])),
    )
    .await;
    post_json(
        &mock,
        "/v1/chat/completions",
        chat_body(false, json!([{"role": "user", "content": "nothing"}])),
    )
    .await;

    let over_http: Value = client
        .get(format!("{}/_mock/requests", mock.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let recorded = mock.requests();
    assert_eq!(
        serde_json::to_value(&recorded).unwrap(),
        over_http,
        "HTTP and library views agree"
    );
    let paths: Vec<&str> = recorded.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/models",
            "/models",
            "/v1/models/m2",
            "/v1/models/m3",
            "/v1/chat/completions",
            "/v1/chat/completions"
        ]
    );
    let models = mock.model_requests();
    assert_eq!(models.len(), 2);
    assert_eq!((models[0].turn, models[0].status), (Some(0), 200));
    assert_eq!((models[1].turn, models[1].status), (None, 400));
    assert_eq!(models[0].body["messages"][0]["content"], "list files");
    assert_eq!(models[0].headers["content-type"], "application/json");
    let all = over_http.to_string();
    assert!(
        !all.contains("secret-token") && !all.contains("secret-key"),
        "credentials leaked: {all}"
    );
    mock.shutdown().await;
}

fn program_args(args: &[&str]) -> crate::program::Args {
    use clap::Parser;
    crate::program::Args::try_parse_from(
        std::iter::once("wujie-mockllm").chain(args.iter().copied()),
    )
    .unwrap()
}

#[tokio::test]
async fn the_program_prints_its_url_first_and_serves_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns":[{"when":{"user_equals":"ping"},"reply":{"text":"scripted"}}]}"#,
    )
    .unwrap();
    let args = program_args(&[
        "--listen",
        "127.0.0.1:0",
        "--script",
        script.to_str().unwrap(),
    ]);
    let (printed_tx, printed_rx) = tokio::sync::oneshot::channel::<Vec<u8>>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    // What the program prints goes through a pipe-like writer that hands its bytes over once the
    // program has flushed and dropped it, which it does before serving.
    struct Printed(Vec<u8>, Option<tokio::sync::oneshot::Sender<Vec<u8>>>);
    impl std::io::Write for Printed {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Drop for Printed {
        fn drop(&mut self) {
            if let Some(tx) = self.1.take() {
                let _ = tx.send(std::mem::take(&mut self.0));
            }
        }
    }
    let serving = tokio::spawn(async move {
        crate::program::serve(&args, Printed(Vec::new(), Some(printed_tx)), async {
            stop_rx.await.map_err(anyhow::Error::from)
        })
        .await
    });
    let printed = String::from_utf8(printed_rx.await.unwrap()).unwrap();
    let url = printed.lines().next().unwrap_or_default().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{printed:?}");
    let reply: Value = reqwest::Client::new()
        .post(format!("{url}/v1/chat/completions"))
        .json(&json!({"model": "x", "messages": [{"role": "user", "content": "ping"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply["choices"][0]["message"]["content"], "scripted");
    stop_tx.send(()).unwrap();
    serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_program_rejects_a_bad_script_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bad.json");
    std::fs::write(&script, r#"{"turns":[{"reply":{"txt":"typo"}}]}"#).unwrap();
    let args = program_args(&["--script", script.to_str().unwrap()]);
    let mut printed = Vec::new();
    let error = crate::program::serve(&args, &mut printed, std::future::ready(Ok(())))
        .await
        .unwrap_err();
    let text = format!("{error:#}");
    assert!(text.contains("bad.json") && text.contains("txt"), "{text}");
    assert!(
        printed.is_empty(),
        "nothing is printed before the script is read"
    );
}

#[tokio::test]
async fn gemini_generate_content_json_and_stream() {
    let mock = MockLlm::start(tool_script()).await.unwrap();
    let ask = json!({"contents": [{"role": "user", "parts": [{"text": "list files"}]}],
                     "tools": [{"functionDeclarations": [{"name": "shell"}]}]});
    let events = post_sse(
        &mock,
        "/v1beta/models/m1:streamGenerateContent?alt=sse",
        ask.clone(),
    )
    .await;
    let parts: Vec<&Value> = events
        .iter()
        .flat_map(|(_, d)| {
            d["candidates"][0]["content"]["parts"]
                .as_array()
                .unwrap()
                .iter()
        })
        .collect();
    let text = |thought: bool| -> String {
        parts
            .iter()
            .filter(|p| p["thought"].as_bool().unwrap_or(false) == thought)
            .filter_map(|p| p["text"].as_str())
            .collect()
    };
    assert_eq!(text(true), "I should look");
    assert_eq!(text(false), "Let me look.");
    let call = parts.iter().find_map(|p| p.get("functionCall")).unwrap();
    assert_eq!(
        call,
        &json!({"name": "shell", "args": {"command": "ls -la"}})
    );
    let last = &events.last().unwrap().1;
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(last["usageMetadata"]["promptTokenCount"], 30);
    assert_eq!(last["usageMetadata"]["candidatesTokenCount"], 7);

    let result = json!({"contents": [
        {"role": "user", "parts": [{"text": "list files"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "shell", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "shell", "response": {"output": "total 0"}}}]}]});
    let (status, reply) = post_json(&mock, "/v1beta/models/m1:generateContent", result).await;
    assert_eq!(status, 200);
    assert_eq!(
        reply["candidates"][0]["content"]["parts"],
        json!([{"text": "empty dir"}])
    );
    let recorded = mock.model_requests();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0].api, Some(crate::Api::GeminiGenerateContent));
    let models: Value = reqwest::get(format!("{}/v1beta/models", mock.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["models"][0]["name"], "models/m1");
    mock.shutdown().await;
}

#[tokio::test]
async fn large_conversations_are_accepted() {
    let mock = MockLlm::start(Script::default()).await.unwrap();
    let big = "x".repeat(5 * 1024 * 1024);
    let body = json!({"model": "m", "messages": [{"role": "system", "content": big},
                                                 {"role": "user", "content": "hi"}]});
    let (status, reply) = post_json(&mock, "/v1/chat/completions", body).await;
    assert_eq!(status, 200);
    assert_eq!(reply["choices"][0]["message"]["content"], "pong");
    mock.shutdown().await;
}
