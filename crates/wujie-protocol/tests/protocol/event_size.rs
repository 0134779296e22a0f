//! An event's size is the length of its JSON encoding, however the text it was decoded from
//! spelled it: `check_encoded_len` settles the limit from that text's length only when the
//! answer is the same as encoding the event again, and a server reading a request keeps each
//! event's text length exactly.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use wujie_protocol::api::{IngestBatch, IngestInput, IngestItem, ReceivedBatch};
use wujie_protocol::event::{Event, HandoffMode, Message, MessageKind, Usage};
use wujie_protocol::limits::{ENCODING_GROWTH_BOUND, check_encoded_len, encoded_len};

/// What encoding the event again says about `limit`.
fn measured(event: &Event, limit: usize) -> Result<(), usize> {
    let size = encoded_len(event);
    if size <= limit { Ok(()) } else { Err(size) }
}

/// `text` with every letter and every character outside ASCII in its strings written as a
/// `\uXXXX` escape (escapes already there are kept as they are).
fn escape_all(text: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_string = !in_string;
                out.push(c);
            }
            '\\' if in_string => {
                out.push(c);
                let escaped = chars.next();
                out.extend(escaped);
                if escaped == Some('u') {
                    out.extend(chars.by_ref().take(4));
                }
            }
            c if in_string && (!c.is_ascii() || c.is_ascii_alphabetic()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// JSON texts that decode to `event`, spelled in ways its encoding is not: the encoding
/// itself, pretty-printed, with every letter escaped, with nulls and fields serde drops, and
/// for a usage without the token counts that default to 0.
fn texts_of(event: &Event) -> Vec<String> {
    let encoded = serde_json::to_string(event).expect("encode");
    let mut object: Map<String, Value> = serde_json::from_str(&encoded).expect("object");
    let mut texts = vec![
        encoded.clone(),
        serde_json::to_string_pretty(event).expect("pretty"),
        escape_all(&encoded),
    ];
    object.insert("unknown".into(), json!({"dropped": [1, 2, 3]}));
    if matches!(event, Event::Message(_)) {
        object.entry("output").or_insert(Value::Null);
    }
    texts.push(Value::Object(object.clone()).to_string());
    if matches!(event, Event::Usage(_)) {
        object.remove("cache_read_tokens");
        object.remove("cache_write_tokens");
        texts.push(Value::Object(object).to_string());
    }
    texts
}

/// The limits on either side of every length the decision could turn on.
fn limits_around(event: &Event, text_len: usize) -> Vec<usize> {
    let size = encoded_len(event);
    let mut limits = Vec::new();
    for pivot in [
        size,
        text_len,
        text_len + ENCODING_GROWTH_BOUND,
        text_len.saturating_sub(ENCODING_GROWTH_BOUND),
    ] {
        limits.extend([pivot.saturating_sub(1), pivot, pivot + 1]);
    }
    limits
}

fn assert_agrees(event: &Event) {
    for text in texts_of(event) {
        // What the server holds is the decoded event (a float may decode a last digit off).
        let decoded: Event = serde_json::from_str(&text).expect("the text decodes");
        for limit in limits_around(&decoded, text.len()) {
            assert_eq!(
                check_encoded_len(&decoded, text.len(), limit),
                measured(&decoded, limit),
                "limit {limit}, text {text}"
            );
        }
    }
}

fn input_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Finite floats only: JSON has no other.
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        Just(json!(-0.0)),
        Just(json!(1e15)),
        ".{0,12}".prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn event() -> impl Strategy<Value = Event> {
    let text = "(?s).{0,40}";
    let message = (
        prop::sample::select(MessageKind::ALL.to_vec()),
        text,
        prop::collection::btree_map("[a-z]{1,6}", input_value(), 0..4),
    )
        .prop_map(|(kind, content, input)| {
            let mut message = Message {
                kind,
                content: None,
                tool: None,
                input: None,
                output: None,
                source: "s".into(),
                source_key: "k".into(),
            };
            match kind {
                MessageKind::ToolUse => {
                    message.tool = Some("t".into());
                    message.input = Some(input.into_iter().collect());
                }
                MessageKind::ToolResult => {
                    message.tool = Some("t".into());
                    message.output = Some(content);
                }
                _ => message.content = Some(content),
            }
            Event::Message(message)
        });
    let usage = (text, any::<u64>(), any::<u64>()).prop_map(|(model, input, output)| {
        Event::Usage(Usage {
            provider: "p".into(),
            model,
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        })
    });
    let session = text.prop_map(|session_id| Event::Session { session_id });
    let handoff = text.prop_map(|request_id| Event::HandoffReady {
        request_id,
        mode: HandoffMode::NativeClear,
    });
    prop_oneof![4 => message, 1 => usage, 1 => session, 1 => handoff]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_text_length_decides_as_encoding_again_would(event in event()) {
        assert_agrees(&event);
    }
}

#[test]
fn floats_that_grow_past_the_bound_when_encoded_are_measured() {
    // `1e15` is 4 bytes in the text and 18 in the encoding (`1000000000000000.0`).
    let floats = vec!["1e15"; 20].join(",");
    let text = format!(
        r#"{{"event":"message","type":"tool_use","tool":"t","input":{{"n":[{floats}]}},"source":"s","source_key":"k"}}"#
    );
    let event: Event = serde_json::from_str(&text).expect("decodes");
    let size = encoded_len(&event);
    let limit = text.len() + ENCODING_GROWTH_BOUND;
    assert!(size > limit, "{size}");
    assert_eq!(check_encoded_len(&event, text.len(), limit), Err(size));
    assert_agrees(&event);
}

#[test]
fn a_received_batch_keeps_each_event_text_length_and_decodes_the_same() {
    let events = [
        r#"{"event":"message","type":"text","content":"h\u00e9llo","source":"s","source_key":"a"}"#,
        r#"{ "event" : "usage", "provider":"p","model":"m","input_tokens":1,"output_tokens":2 }"#,
    ];
    let body = format!(
        r#"{{"items":[{{"source":"s","source_key":"a","event":{}}}, {{"event":  {}  ,"source":"u","source_key":"b"}}]}}"#,
        events[0], events[1]
    );
    let received: ReceivedBatch = serde_json::from_str(&body).expect("received");
    let plain: IngestBatch = serde_json::from_str(&body).expect("plain");
    let items: Vec<&IngestItem> = received.items.iter().map(|r| r.item()).collect();
    assert_eq!(items, plain.items.iter().collect::<Vec<_>>());
    let lens: Vec<Option<usize>> = received.items.iter().map(|r| r.event_text_len()).collect();
    assert_eq!(lens, events.map(|e| Some(e.len())));
    assert_eq!(plain.items[0].event_text_len(), None);
}

#[test]
fn an_event_that_does_not_decode_is_an_error_of_the_body_named_once() {
    let body = r#"{"items":[{"source":"s","source_key":"a","event":{"event":"nonsense"}}]}"#;
    let e = serde_json::from_str::<ReceivedBatch>(body).expect_err("not an event");
    let plain = serde_json::from_str::<IngestBatch>(body).expect_err("not an event");
    let message = e.to_string();
    assert!(message.contains("unknown variant `nonsense`"), "{message}");
    assert_eq!(message.matches(" at line ").count(), 1, "{message}");
    assert_eq!(e.classify(), plain.classify());
}

#[test]
fn a_body_nested_past_the_parser_fails_where_the_plain_batch_does() {
    for depth in [60, 64, 65, 100, 123, 124, 125, 126, 127, 128, 200, 5000] {
        let inner = depth - 2;
        let event = format!(
            r#"{{"event":"message","type":"tool_use","tool":"t","input":{{"x":{}1{}}},"source":"s","source_key":"k"}}"#,
            "[".repeat(inner),
            "]".repeat(inner)
        );
        // The same depth in a field the event drops.
        let dropped = format!(
            r#"{{"event":"session","session_id":"x","unknown":{{"x":{}1{}}}}}"#,
            "[".repeat(inner),
            "]".repeat(inner)
        );
        for event in [event, dropped] {
            let body =
                format!(r#"{{"items":[{{"source":"s","source_key":"k","event":{event}}}]}}"#);
            let received = serde_json::from_str::<ReceivedBatch>(&body);
            let plain = serde_json::from_str::<IngestBatch>(&body);
            assert_eq!(
                received.is_ok(),
                plain.is_ok(),
                "depth {depth}: {:?} / {:?}",
                received.err(),
                plain.err()
            );
        }
    }
}
