//! The server measures an event as its JSON encoding, whatever text the request spelled it in:
//! it reads the size from the request where that settles the limit, and encodes the event
//! only where it does not.

use serde_json::Value;
use wujie_protocol::api::{IngestOutcome, IngestResult};
use wujie_protocol::event::Event;
use wujie_protocol::limits::encoded_len;
use wujie_server::ServerConfig;

use super::harness::Harness;

const LIMIT: usize = 1024;

async fn small_limit() -> Harness {
    Harness::with_config(ServerConfig {
        max_event_bytes: LIMIT,
        ..ServerConfig::default()
    })
    .await
}

/// Posts `items` (each `source_key` and event text) as one batch, as written.
async fn post(h: &Harness, run_id: &str, items: &[(&str, &str)]) -> reqwest::Response {
    let items: Vec<String> = items
        .iter()
        .map(|(key, event)| format!(r#"{{"source":"s","source_key":"{key}","event":{event}}}"#))
        .collect();
    reqwest::Client::new()
        .post(format!("{}/api/v1/runs/{run_id}/events", h.url()))
        .bearer_auth(&h.admin_token)
        .header("content-type", "application/json")
        .body(format!(r#"{{"items":[{}]}}"#, items.join(",")))
        .send()
        .await
        .expect("post")
}

fn text_event(key: &str, content: &str, padding: usize) -> String {
    let pad = " ".repeat(padding);
    format!(
        r#"{{"event":"message",{pad}"type":"text","content":"{content}","source":"s","source_key":"{key}"}}"#
    )
}

fn encoded_size(text: &str) -> usize {
    encoded_len(&serde_json::from_str::<Event>(text).expect("an event"))
}

#[tokio::test]
async fn an_event_is_held_to_the_limit_by_its_encoding_not_by_its_text() {
    let h = small_limit().await;
    let issue = h.issue("spelled long").await;
    let run = h.run_on(&issue.key).await.run;
    let content = "a".repeat(LIMIT - 200);
    // Whitespace and escapes make this text longer than the limit; its encoding is not.
    let spelled_long = text_event("padded", &content, 300);
    let escaped = text_event("escaped", &"\\u0061".repeat(LIMIT / 6), 0);
    let over = text_event("over", &"a".repeat(LIMIT), 0);
    for (text, fits) in [(&spelled_long, true), (&escaped, true), (&over, false)] {
        assert_eq!(encoded_size(text) <= LIMIT, fits, "{text}");
    }
    assert!(spelled_long.len() > LIMIT && escaped.len() > LIMIT);
    let resp = post(
        &h,
        &run.id,
        &[
            ("padded", &spelled_long),
            ("escaped", &escaped),
            ("over", &over),
        ],
    )
    .await;
    assert_eq!(resp.status().as_u16(), 200);
    let r: IngestResult = resp.json().await.expect("result");
    let outcomes: Vec<IngestOutcome> = r.results.iter().map(|i| i.outcome).collect();
    use IngestOutcome::*;
    assert_eq!(outcomes, [Stored, Stored, Rejected]);
    let reason = r.results[2].reason.as_deref().expect("reason");
    let size = encoded_size(&over);
    assert!(
        reason.contains(&format!("event is {size} bytes")),
        "{reason}"
    );
    h.stop().await;
}

#[tokio::test]
async fn floats_that_grow_when_encoded_are_refused_at_their_encoded_size() {
    let h = small_limit().await;
    let issue = h.issue("floats").await;
    let run = h.run_on(&issue.key).await.run;
    // 4 bytes each in the text, 18 as encoded (`1000000000000000.0`).
    let floats = vec!["1e15"; 60].join(",");
    let text = format!(
        r#"{{"event":"message","type":"tool_use","tool":"t","input":{{"n":[{floats}]}},"source":"s","source_key":"f"}}"#
    );
    let size = encoded_size(&text);
    assert!(text.len() < LIMIT && size > LIMIT, "{} {size}", text.len());
    let r: IngestResult = post(&h, &run.id, &[("f", &text)])
        .await
        .json()
        .await
        .expect("result");
    assert_eq!(r.results[0].outcome, IngestOutcome::Rejected);
    let reason = r.results[0].reason.as_deref().expect("reason");
    assert!(
        reason.contains(&format!("event is {size} bytes")),
        "{reason}"
    );
    h.stop().await;
}

#[tokio::test]
async fn an_item_whose_event_does_not_decode_fails_the_request_naming_it() {
    let h = small_limit().await;
    let issue = h.issue("not an event").await;
    let run = h.run_on(&issue.key).await.run;
    let good = text_event("good", "fine", 0);
    let resp = post(
        &h,
        &run.id,
        &[("good", &good), ("bad", r#"{"event":"nonsense"}"#)],
    )
    .await;
    assert_eq!(resp.status().as_u16(), 422);
    let body: Value = resp.json().await.expect("error body");
    let error = body["error"].as_str().expect("error");
    assert!(error.contains("items[1].event"), "{error}");
    assert!(error.contains("unknown variant `nonsense`"), "{error}");
    let stored = h.admin.get_run(&run.id).await.expect("run");
    assert!(stored.messages.is_empty(), "nothing of the request is kept");
    h.stop().await;
}

#[tokio::test]
async fn a_body_nested_past_the_json_parser_is_refused_whole_as_before() {
    let h = small_limit().await;
    let issue = h.issue("too deep").await;
    let run = h.run_on(&issue.key).await.run;
    // 126 levels in the event and 3 around it pass serde_json's limit of 127.
    let inner = 124;
    let deep = format!(
        r#"{{"event":"message","type":"tool_use","tool":"t","input":{{"x":{}1{}}},"source":"s","source_key":"deep"}}"#,
        "[".repeat(inner),
        "]".repeat(inner)
    );
    let resp = post(&h, &run.id, &[("deep", &deep)]).await;
    assert_eq!(resp.status().as_u16(), 400);
    let body: Value = resp.json().await.expect("error body");
    let error = body["error"].as_str().expect("error");
    assert!(error.contains("recursion limit exceeded"), "{error}");
    h.stop().await;
}
