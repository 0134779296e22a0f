//! The stdout NDJSON event protocol: the seed's own lines, every validation rule as a table, and
//! the line splitting of `LineDecoder`.

use serde_json::json;
use wujie_protocol::event::{
    DEFAULT_MAX_LINE_BYTES, DecodedLine, Event, EventError, EventErrorKind, HandoffMode,
    LineDecoder, Message, MessageKind, Usage, parse_line,
};

fn message(kind: MessageKind, content: &str, source: &str, source_key: &str) -> Event {
    Event::Message(Message {
        kind,
        content: Some(content.to_owned()),
        tool: None,
        input: None,
        output: None,
        source: source.to_owned(),
        source_key: source_key.to_owned(),
    })
}

fn ok(line: &str) -> Vec<Event> {
    parse_line(line.as_bytes(), 1).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn err(line: &[u8]) -> EventError {
    match parse_line(line, 7) {
        Ok(events) => panic!("{} parsed as {events:?}", String::from_utf8_lossy(line)),
        Err(e) => e,
    }
}

/// The exact lines the seed's minimal fake plugin prints.
const FAKE_PLUGIN_STDOUT: &str = r#"{"type":"user_input","content":"请验证 fake provider","source":"fake-provider","source_key":"fake:turn-1:user"}
{"type":"text","content":"fake provider 已启动","source":"fake-provider","source_key":"fake:turn-1:text-1"}
{"type":"tool_use","tool":"exec_command","input":{"command":"echo hello"},"source":"fake-provider","source_key":"fake:turn-1:tool-1:use"}
{"type":"tool_result","tool":"exec_command","output":"hello","source":"fake-provider","source_key":"fake:turn-1:tool-1:result"}
{"type":"final","content":"fake provider 验证完成。","source":"fake-provider","source_key":"fake:turn-1:final"}
{"usage":{"provider":"fake-provider","model":"fake-model","input_tokens":1,"output_tokens":1,"cache_read_tokens":0,"cache_write_tokens":0}}
"#;

#[test]
fn seed_fake_plugin_lines_decode_to_the_right_events() {
    let mut decoder = LineDecoder::new(DEFAULT_MAX_LINE_BYTES);
    let lines: Vec<DecodedLine> = decoder
        .feed(FAKE_PLUGIN_STDOUT.as_bytes())
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(decoder.finish().is_none());
    let tool_input = json!({"command": "echo hello"}).as_object().cloned();
    let expected = vec![
        vec![message(
            MessageKind::UserInput,
            "请验证 fake provider",
            "fake-provider",
            "fake:turn-1:user",
        )],
        vec![message(
            MessageKind::Text,
            "fake provider 已启动",
            "fake-provider",
            "fake:turn-1:text-1",
        )],
        vec![Event::Message(Message {
            kind: MessageKind::ToolUse,
            content: None,
            tool: Some("exec_command".into()),
            input: tool_input,
            output: None,
            source: "fake-provider".into(),
            source_key: "fake:turn-1:tool-1:use".into(),
        })],
        vec![Event::Message(Message {
            kind: MessageKind::ToolResult,
            content: None,
            tool: Some("exec_command".into()),
            input: None,
            output: Some("hello".into()),
            source: "fake-provider".into(),
            source_key: "fake:turn-1:tool-1:result".into(),
        })],
        vec![message(
            MessageKind::Final,
            "fake provider 验证完成。",
            "fake-provider",
            "fake:turn-1:final",
        )],
        vec![Event::Usage(Usage {
            provider: "fake-provider".into(),
            model: "fake-model".into(),
            input_tokens: 1,
            output_tokens: 1,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        })],
    ];
    let got: Vec<(u64, Vec<Event>)> = lines.into_iter().map(|l| (l.line_no, l.events)).collect();
    let want: Vec<(u64, Vec<Event>)> = (1..).zip(expected).collect();
    assert_eq!(got, want);
}

#[test]
fn seed_v2_examples_parse() {
    assert_eq!(
        ok(r#"{"type":"text","content":"开始处理","source":"fake","source_key":"turn-1:text-1"}"#),
        vec![message(
            MessageKind::Text,
            "开始处理",
            "fake",
            "turn-1:text-1"
        )]
    );
    assert_eq!(
        ok(
            r#"{"event":"message","type":"question","content":"数据库选 PostgreSQL 还是 SQLite？","source":"fake","source_key":"turn-1:question"}"#
        ),
        vec![message(
            MessageKind::Question,
            "数据库选 PostgreSQL 还是 SQLite？",
            "fake",
            "turn-1:question"
        )]
    );
    assert_eq!(
        ok(
            r##"{"event":"message","type":"plan","content":"# 方案\n\n- 使用 PostgreSQL","source":"fake","source_key":"turn-1:plan"}"##
        ),
        vec![message(
            MessageKind::Plan,
            "# 方案\n\n- 使用 PostgreSQL",
            "fake",
            "turn-1:plan"
        )]
    );
    assert_eq!(
        ok(r#"{"event":"session","session_id":"<provider-session-id>"}"#),
        vec![Event::Session {
            session_id: "<provider-session-id>".into()
        }]
    );
    assert_eq!(
        ok(r#"{"event":"handoff_ready","request_id":"handoff-1","mode":"native_clear"}"#),
        vec![Event::HandoffReady {
            request_id: "handoff-1".into(),
            mode: HandoffMode::NativeClear
        }]
    );
    assert_eq!(
        ok(r#"{"event":"handoff_ready","request_id":"h2","mode":"current_context"}"#),
        vec![Event::HandoffReady {
            request_id: "h2".into(),
            mode: HandoffMode::CurrentContext
        }]
    );
    // The seed's multi-line usage example, written on one line as the protocol requires.
    assert_eq!(
        ok(
            r#"{"usage":{"provider":"fake-provider","model":"demo","input_tokens":12,"output_tokens":34,"cache_read_tokens":0,"cache_write_tokens":0}}"#
        ),
        vec![Event::Usage(Usage {
            provider: "fake-provider".into(),
            model: "demo".into(),
            input_tokens: 12,
            output_tokens: 34,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        })]
    );
}

#[test]
fn every_content_kind_parses() {
    for kind in MessageKind::ALL {
        if matches!(kind, MessageKind::ToolUse | MessageKind::ToolResult) {
            continue;
        }
        let line = json!({"type": kind.as_str(), "content": "c", "source": "s", "source_key": "k"});
        assert_eq!(
            ok(&line.to_string()),
            vec![message(kind, "c", "s", "k")],
            "{kind:?}"
        );
    }
}

#[test]
fn a_line_with_a_message_and_usage_yields_both_in_order() {
    let events = ok(
        r#"{"type":"final","content":"done","source":"s","source_key":"k","usage":{"provider":"p","model":"m","input_tokens":5,"output_tokens":6,"cache_read_tokens":7,"extra":1}}"#,
    );
    assert_eq!(
        events,
        vec![
            message(MessageKind::Final, "done", "s", "k"),
            Event::Usage(Usage {
                provider: "p".into(),
                model: "m".into(),
                input_tokens: 5,
                output_tokens: 6,
                cache_read_tokens: 7,
                cache_write_tokens: 0,
            })
        ]
    );
}

#[test]
fn valid_variants_table() {
    // (line, expected events as JSON of the typed events)
    let cases: &[(&str, serde_json::Value)] = &[
        // Unknown top-level fields and extra fields of another kind are ignored.
        (
            r#"{"type":"text","content":"x","source":"s","source_key":"k","tool":"t","ts":1}"#,
            json!([{"event":"message","type":"text","content":"x","source":"s","source_key":"k"}]),
        ),
        // Empty content is content.
        (
            r#"{"type":"text","content":"","source":"s","source_key":"k"}"#,
            json!([{"event":"message","type":"text","content":"","source":"s","source_key":"k"}]),
        ),
        // Whitespace around the object.
        (
            "  \t{\"event\":\"session\",\"session_id\":\"abc\"}  ",
            json!([{"event":"session","session_id":"abc"}]),
        ),
        // Empty tool input object.
        (
            r#"{"type":"tool_use","tool":"t","input":{},"source":"s","source_key":"k"}"#,
            json!([{"event":"message","type":"tool_use","tool":"t","input":{},"source":"s","source_key":"k"}]),
        ),
        // Empty tool output.
        (
            r#"{"type":"tool_result","tool":"t","output":"","source":"s","source_key":"k"}"#,
            json!([{"event":"message","type":"tool_result","tool":"t","output":"","source":"s","source_key":"k"}]),
        ),
        // Cache token counts default to 0, null counts as absent; large counts fit.
        (
            r#"{"usage":{"provider":"p","model":"m","input_tokens":18446744073709551615,"output_tokens":0,"cache_write_tokens":null}}"#,
            json!([{"event":"usage","provider":"p","model":"m","input_tokens":18446744073709551615u64,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0}]),
        ),
        // `usage: null` is no usage.
        (
            r#"{"type":"text","content":"x","source":"s","source_key":"k","usage":null}"#,
            json!([{"event":"message","type":"text","content":"x","source":"s","source_key":"k"}]),
        ),
        // Session with usage: both.
        (
            r#"{"event":"session","session_id":"a","usage":{"provider":"p","model":"m","input_tokens":1,"output_tokens":2}}"#,
            json!([{"event":"session","session_id":"a"},{"event":"usage","provider":"p","model":"m","input_tokens":1,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":0}]),
        ),
        // Duplicate key: the last one wins (as in serde_json).
        (
            r#"{"type":"text","content":"a","content":"b","source":"s","source_key":"k"}"#,
            json!([{"event":"message","type":"text","content":"b","source":"s","source_key":"k"}]),
        ),
    ];
    for (line, expected) in cases {
        let events = ok(line);
        assert_eq!(serde_json::to_value(&events).unwrap(), *expected, "{line}");
    }
}

fn wrong_type(field: &'static str, expected: &'static str, found: &'static str) -> EventErrorKind {
    EventErrorKind::WrongType {
        field,
        expected,
        found,
    }
}

#[test]
fn invalid_lines_table() {
    use EventErrorKind as K;
    let missing = |field| K::MissingField { field };
    let empty = |field| K::EmptyField { field };
    let cases: Vec<(&[u8], EventErrorKind)> = vec![
        // Not an object.
        (b"[1,2]", K::NotObject { found: "an array" }),
        (b"\"text\"", K::NotObject { found: "a string" }),
        (b"42", K::NotObject { found: "a number" }),
        (b"null", K::NotObject { found: "null" }),
        (b"true", K::NotObject { found: "a boolean" }),
        // Nothing recognisable.
        (b"{}", K::NothingRecognisable),
        (br#"{"content":"x","source":"s","source_key":"k"}"#, K::NothingRecognisable),
        // Event names.
        (br#"{"event":"usage","usage":{}}"#, K::UnknownEvent("usage".into())),
        (br#"{"event":"Message","type":"text"}"#, K::UnknownEvent("Message".into())),
        (br#"{"event":"handoff_decision"}"#, K::UnknownEvent("handoff_decision".into())),
        (br#"{"event":1}"#, wrong_type("event", "a string", "a number")),
        // Message types.
        (br#"{"type":"delta","content":"x","source":"s","source_key":"k"}"#, K::UnknownMessageType("delta".into())),
        (br#"{"type":"TEXT","content":"x","source":"s","source_key":"k"}"#, K::UnknownMessageType("TEXT".into())),
        (br#"{"type":["text"],"content":"x"}"#, wrong_type("type", "a string", "an array")),
        (br#"{"event":"message","content":"x","source":"s","source_key":"k"}"#, missing("type")),
        (br#"{"type":null,"content":"x","source":"s","source_key":"k"}"#, missing("type")),
        // source / source_key.
        (br#"{"type":"text","content":"x","source_key":"k"}"#, missing("source")),
        (br#"{"type":"text","content":"x","source":"s"}"#, missing("source_key")),
        (br#"{"type":"text","content":"x","source":"","source_key":"k"}"#, empty("source")),
        (br#"{"type":"text","content":"x","source":"s","source_key":"  "}"#, empty("source_key")),
        (br#"{"type":"text","content":"x","source":3,"source_key":"k"}"#, wrong_type("source", "a string", "a number")),
        // content.
        (br#"{"type":"final","source":"s","source_key":"k"}"#, missing("content")),
        (br#"{"type":"final","content":{"a":1},"source":"s","source_key":"k"}"#, wrong_type("content", "a string", "an object")),
        (br#"{"type":"question","content":["a"],"source":"s","source_key":"k"}"#, wrong_type("content", "a string", "an array")),
        // tool_use.
        (br#"{"type":"tool_use","input":{},"source":"s","source_key":"k"}"#, missing("tool")),
        (br#"{"type":"tool_use","tool":"t","source":"s","source_key":"k"}"#, missing("input")),
        (br#"{"type":"tool_use","tool":"t","input":["echo"],"source":"s","source_key":"k"}"#, wrong_type("input", "a JSON object", "an array")),
        (br#"{"type":"tool_use","tool":"t","input":"echo hello","source":"s","source_key":"k"}"#, wrong_type("input", "a JSON object", "a string")),
        (br#"{"type":"tool_use","tool":"t","input":null,"source":"s","source_key":"k"}"#, wrong_type("input", "a JSON object", "null")),
        (br#"{"type":"tool_use","tool":{},"input":{},"source":"s","source_key":"k"}"#, wrong_type("tool", "a string", "an object")),
        // tool_result.
        (br#"{"type":"tool_result","tool":"t","source":"s","source_key":"k"}"#, missing("output")),
        (br#"{"type":"tool_result","tool":"t","output":{"stdout":"x"},"source":"s","source_key":"k"}"#, wrong_type("output", "a string", "an object")),
        (br#"{"type":"tool_result","output":"x","source":"s","source_key":"k"}"#, missing("tool")),
        // usage.
        (br#"{"usage":[]}"#, wrong_type("usage", "an object", "an array")),
        (br#"{"usage":{"model":"m","input_tokens":1,"output_tokens":1}}"#, missing("usage.provider")),
        (br#"{"usage":{"provider":"p","input_tokens":1,"output_tokens":1}}"#, missing("usage.model")),
        (br#"{"usage":{"provider":"p","model":"m","output_tokens":1}}"#, missing("usage.input_tokens")),
        (br#"{"usage":{"provider":"p","model":"m","input_tokens":1}}"#, missing("usage.output_tokens")),
        (br#"{"usage":{"provider":"p","model":"m","input_tokens":-1,"output_tokens":1}}"#, wrong_type("usage.input_tokens", "a non-negative integer", "a number")),
        (br#"{"usage":{"provider":"p","model":"m","input_tokens":1.5,"output_tokens":1}}"#, wrong_type("usage.input_tokens", "a non-negative integer", "a number")),
        (br#"{"usage":{"provider":"p","model":"m","input_tokens":"1","output_tokens":1}}"#, wrong_type("usage.input_tokens", "a non-negative integer", "a string")),
        (br#"{"usage":{"provider":"p","model":"m","input_tokens":1,"output_tokens":1,"cache_read_tokens":-3}}"#, wrong_type("usage.cache_read_tokens", "a non-negative integer", "a number")),
        (br#"{"usage":{"provider":"p","model":"m","input_tokens":1,"output_tokens":1,"cache_write_tokens":true}}"#, wrong_type("usage.cache_write_tokens", "a non-negative integer", "a boolean")),
        (br#"{"usage":{"provider":"p","model":"m","input_tokens":1e3,"output_tokens":1}}"#, wrong_type("usage.input_tokens", "a non-negative integer", "a number")),
        // A bad usage spoils a good message on the same line.
        (br#"{"type":"text","content":"x","source":"s","source_key":"k","usage":{"provider":"p"}}"#, missing("usage.model")),
        // session.
        (br#"{"event":"session"}"#, missing("session_id")),
        (br#"{"event":"session","session_id":""}"#, empty("session_id")),
        (br#"{"event":"session","session_id":12}"#, wrong_type("session_id", "a string", "a number")),
        // handoff_ready.
        (br#"{"event":"handoff_ready","mode":"native_clear"}"#, missing("request_id")),
        (br#"{"event":"handoff_ready","request_id":"h"}"#, missing("mode")),
        (br#"{"event":"handoff_ready","request_id":"h","mode":"clear"}"#, K::UnknownHandoffMode { request_id: "h".into(), mode: "clear".into() }),
        (br#"{"event":"handoff_ready","request_id":"h","mode":"NATIVE_CLEAR"}"#, K::UnknownHandoffMode { request_id: "h".into(), mode: "NATIVE_CLEAR".into() }),
        (br#"{"event":"handoff_ready","request_id":5,"mode":"native_clear"}"#, wrong_type("request_id", "a string", "a number")),
        // Invalid UTF-8.
        (b"{\"type\":\"text\",\"content\":\"\xff\"}", K::InvalidUtf8 { valid_up_to: 26 }),
        (b"\xc3", K::InvalidUtf8 { valid_up_to: 0 }),
    ];
    for (line, expected) in cases {
        let e = err(line);
        assert_eq!(e.line_no, 7);
        assert_eq!(e.kind, expected, "{}", String::from_utf8_lossy(line));
        assert!(
            e.to_string()
                .starts_with("parse localrun plugin event: line 7: ")
        );
    }
}

#[test]
fn ordinary_log_lines_on_stdout_fail_with_the_seed_message() {
    // The seed's first 常见错误 row: a log on stdout fails with `parse localrun plugin event`.
    for line in [
        "Starting fake provider...",
        "INFO connected to model",
        "{\"type\":\"text\",",
        "}",
        "{'type': 'text'}",
        "<html>",
    ] {
        let e = err(line.as_bytes());
        assert!(
            matches!(e.kind, EventErrorKind::NotJson(_)),
            "{line}: {e:?}"
        );
        let message = e.to_string();
        assert!(
            message.starts_with("parse localrun plugin event: line 7: not JSON"),
            "{message}"
        );
        assert!(message.contains("stderr"), "the fix is named: {message}");
    }
}

#[test]
fn error_messages_do_not_echo_huge_input() {
    let junk = "x".repeat(100_000);
    let e = err(junk.as_bytes());
    assert!(e.to_string().len() < 400, "{}", e.to_string().len());
    let unknown = format!(r#"{{"event":"{junk}"}}"#);
    let e = err(unknown.as_bytes());
    assert!(e.to_string().len() < 400, "{}", e.to_string().len());
    let unknown = format!(
        r#"{{"type":"{}","source":"s","source_key":"k"}}"#,
        "界".repeat(1000)
    );
    let e = err(unknown.as_bytes());
    assert!(e.to_string().len() < 600, "{}", e.to_string().len());
}

#[test]
fn blank_lines_and_crlf() {
    for blank in [&b""[..], b" ", b"\t \t", b"\r", b"  \r"] {
        assert_eq!(parse_line(blank, 1).unwrap(), vec![]);
    }
    let crlf = b"{\"event\":\"session\",\"session_id\":\"s1\"}\r";
    assert_eq!(
        parse_line(crlf, 1).unwrap(),
        vec![Event::Session {
            session_id: "s1".into()
        }]
    );
}

#[test]
fn one_mib_content_is_kept_whole() {
    let content = "内容".repeat(1024 * 1024 / 6) + "end";
    assert!(content.len() >= 1024 * 1024 - 6);
    let line = json!({"type":"text","content":content,"source":"s","source_key":"k"}).to_string();
    let mut decoder = LineDecoder::new(DEFAULT_MAX_LINE_BYTES);
    let mut out = Vec::new();
    for chunk in format!("{line}\n").as_bytes().chunks(4096) {
        out.extend(decoder.feed(chunk));
    }
    assert_eq!(out.len(), 1);
    let decoded = out.remove(0).unwrap();
    assert_eq!(
        decoded.events,
        vec![message(MessageKind::Text, &content, "s", "k")]
    );
}

fn decode_all(decoder: &mut LineDecoder, bytes: &[u8]) -> Vec<Result<DecodedLine, EventError>> {
    let mut out = decoder.feed(bytes);
    out.extend(decoder.finish());
    out
}

fn line_numbers(results: &[Result<DecodedLine, EventError>]) -> Vec<Result<u64, u64>> {
    results
        .iter()
        .map(|r| match r {
            Ok(l) => Ok(l.line_no),
            Err(e) => Err(e.line_no),
        })
        .collect()
}

#[test]
fn line_numbers_count_blank_lines_and_crlf() {
    let session = |id: &str| format!(r#"{{"event":"session","session_id":"{id}"}}"#);
    let stream = format!(
        "\n{}\r\n  \r\n\n{}\nnot json\r\n{}",
        session("a"),
        session("b"),
        session("c")
    );
    let out = decode_all(&mut LineDecoder::new(1024), stream.as_bytes());
    assert_eq!(line_numbers(&out), vec![Ok(2), Ok(5), Err(6), Ok(7)]);
    let e = out[2].as_ref().unwrap_err();
    assert_eq!(
        e.to_string().split(": not JSON").next(),
        Some("parse localrun plugin event: line 6")
    );
}

#[test]
fn a_resumed_stream_numbers_its_lines_as_the_whole_stream_does() {
    let session = |id: &str| format!(r#"{{"event":"session","session_id":"{id}"}}"#);
    let stream = format!(
        "{}\n\n{}\nnot json\n{}",
        session("a"),
        session("b"),
        session("c")
    );
    let whole = decode_all(&mut LineDecoder::new(1024), stream.as_bytes());
    assert_eq!(line_numbers(&whole), vec![Ok(1), Ok(3), Err(4), Ok(5)]);
    // Resumed after the first two lines (the session "a" and the blank one).
    let rest = stream.splitn(3, '\n').nth(2).unwrap();
    let resumed = decode_all(&mut LineDecoder::resuming(1024, 2), rest.as_bytes());
    assert_eq!(resumed, whole[1..]);
}

#[test]
fn json_split_over_two_lines_fails_on_the_first_line() {
    let stream = b"{\"type\":\"text\",\"content\":\"a\",\n\"source\":\"s\",\"source_key\":\"k\"}\n";
    let out = decode_all(&mut LineDecoder::new(1024), stream);
    assert_eq!(line_numbers(&out), vec![Err(1), Err(2)]);
    assert!(matches!(
        out[0].as_ref().unwrap_err().kind,
        EventErrorKind::NotJson(_)
    ));
}

#[test]
fn a_last_line_without_newline_is_parsed_at_finish() {
    let mut decoder = LineDecoder::new(1024);
    assert!(
        decoder
            .feed(br#"{"event":"session","session_id":"x"}"#)
            .is_empty()
    );
    let last = decoder.finish().unwrap().unwrap();
    assert_eq!(last.line_no, 1);
    assert!(decoder.finish().is_none());
    // A blank unterminated last line produces nothing.
    let mut decoder = LineDecoder::new(1024);
    assert!(decoder.feed(b"\n   ").is_empty());
    assert!(decoder.finish().is_none());
}

#[test]
fn too_long_lines_are_reported_once_as_soon_as_the_limit_is_passed() {
    let limit = 64;
    let mut decoder = LineDecoder::new(limit);
    // Fed byte by byte, the error comes on the byte that makes the line certainly too long
    // (limit + 2: one trailing '\r' beyond the limit could still be tolerated).
    let mut errors_at = Vec::new();
    for (i, b) in [b'x'; 1000].iter().enumerate() {
        if !decoder.feed(&[*b]).is_empty() {
            errors_at.push(i + 1);
        }
    }
    assert_eq!(errors_at, vec![limit + 2]);
    // The rest of that line is skipped; the next line is parsed with the right number.
    let out = decoder.feed(b"yyy\n{\"event\":\"session\",\"session_id\":\"x\"}\n");
    assert_eq!(line_numbers(&out), vec![Ok(2)]);

    // Exactly at the limit is fine, with or without '\r'; one byte over is not.
    let base = r#"{"event":"session","session_id":""}"#.len();
    let line = format!(
        r#"{{"event":"session","session_id":"{}"}}"#,
        "a".repeat(limit - base)
    );
    assert_eq!(line.len(), limit);
    for (stream, expected) in [
        (format!("{line}\n"), Ok(1)),
        (format!("{line}\r\n"), Ok(1)),
        (format!("{line} \n"), Err(1)),
        (format!("{line} \r\n"), Err(1)),
        (line.clone(), Ok(1)),
        (format!("{line} "), Err(1)),
    ] {
        let whole = decode_all(&mut LineDecoder::new(limit), stream.as_bytes());
        assert_eq!(line_numbers(&whole), vec![expected], "{stream:?}");
        if let Err(1) = expected {
            let kind = &whole[0].as_ref().unwrap_err().kind;
            assert_eq!(*kind, EventErrorKind::LineTooLong { limit });
            assert!(kind.to_string().contains("64 bytes"));
        }
        let mut decoder = LineDecoder::new(limit);
        let mut split = Vec::new();
        for b in stream.as_bytes() {
            split.extend(decoder.feed(&[*b]));
        }
        split.extend(decoder.finish());
        assert_eq!(split, whole, "{stream:?} byte by byte");
    }
}

#[test]
fn a_too_long_last_line_without_newline_is_reported_once() {
    let mut decoder = LineDecoder::new(8);
    let out = decoder.feed(b"0123456789abcdef");
    assert_eq!(line_numbers(&out), vec![Err(1)]);
    assert!(decoder.finish().is_none());
}
