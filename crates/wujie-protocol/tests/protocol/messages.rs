//! The exact wording users see for each kind of protocol error, reviewed as one snapshot: each
//! says what happened, what was looked at (line, field, value) and what to do.

use serde_json::json;
use wujie_protocol::control::{ControlFrameSplitter, StdinChunk};
use wujie_protocol::event::{LineDecoder, parse_line};
use wujie_protocol::manifest::Manifest;

#[test]
fn user_facing_error_messages() {
    let mut out = String::new();

    out.push_str("# stdout lines\n");
    let lines: &[&[u8]] = &[
        b"Starting fake provider...",
        b"{\"type\":\"text\",",
        b"[1]",
        b"{\"type\":\"text\",\"content\":\"\xff\"}",
        br#"{"event":"progress"}"#,
        br#"{"type":"delta","source":"s","source_key":"k"}"#,
        br#"{"type":"text","content":"x","source":"s"}"#,
        br#"{"type":"text","content":"x","source":"","source_key":"k"}"#,
        br#"{"type":"tool_use","tool":"t","input":"echo","source":"s","source_key":"k"}"#,
        br#"{"type":"tool_result","tool":"t","output":{"a":1},"source":"s","source_key":"k"}"#,
        br#"{"usage":{"provider":"p","model":"m","input_tokens":-1,"output_tokens":1}}"#,
        br#"{"event":"handoff_ready","request_id":"h","mode":"clear_context"}"#,
        br#"{"source":"s"}"#,
    ];
    for (line_no, line) in (1..).zip(lines) {
        out.push_str(&parse_line(line, line_no).unwrap_err().to_string());
        out.push('\n');
    }
    let mut decoder = LineDecoder::new(32);
    for result in decoder.feed(&[b'x'; 40]) {
        out.push_str(&result.unwrap_err().to_string());
        out.push('\n');
    }

    out.push_str("\n# provider.json\n");
    let base = json!({"schema_version":1,"name":"fake","command":"./a","protocol":"wujie-localrun-provider.v1"});
    let variants = [
        ("schema_version", json!(2)),
        ("protocol", json!("wujie-localrun-provider.v3")),
        ("name", json!("../etc")),
        ("name", json!("my provider")),
        ("command", json!("")),
        ("capabilities", json!({"usage":"yes"})),
        ("capabilities", json!({"native_plan_handoff":true})),
    ];
    for (field, value) in variants {
        let mut manifest = base.clone();
        manifest[field] = value;
        out.push_str(
            &Manifest::parse(manifest.to_string().as_bytes())
                .unwrap_err()
                .to_string(),
        );
        out.push('\n');
    }
    out.push_str(&Manifest::parse(b"{}").unwrap_err().to_string());
    out.push('\n');
    out.push_str(
        &Manifest::parse(b"schema_version = 1")
            .unwrap_err()
            .to_string(),
    );
    out.push('\n');

    out.push_str("\n# control frames\n");
    let mut splitter = ControlFrameSplitter::new();
    let mut chunks = splitter.feed(
        b"\x1eWUJIE {\"event\":\"handoff_decision\",\"request_id\":\"r\"}\n\x1eWUJIE nope\n\x1eWUJIE {",
    );
    chunks.extend(splitter.finish());
    for chunk in chunks {
        if let StdinChunk::Frame(Err(e)) = chunk {
            out.push_str(&e.to_string());
            out.push('\n');
        }
    }

    insta::assert_snapshot!(out);
}
