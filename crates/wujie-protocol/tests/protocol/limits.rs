//! The reader holds every line to the one set of limits in `wujie_protocol::limits`, with an
//! error that names the line.

use wujie_protocol::event::{EventErrorKind, LineDecoder, parse_line};
use wujie_protocol::limits::{
    BATCH_WRAPPER_DEPTH, JSON_PARSER_MAX_DEPTH, MAX_EVENT_BYTES, MAX_EVENT_DEPTH, MAX_LINE_BYTES,
    encoded_len, event_depth,
};

/// A `tool_use` line whose event is nested exactly `depth` levels deep.
fn nested_line(depth: usize) -> String {
    assert!(depth >= 2, "the input object is level 2");
    let inner = depth - 2;
    format!(
        r#"{{"type":"tool_use","tool":"t","input":{{"x":{}1{}}},"source":"s","source_key":"deep-{depth}"}}"#,
        "[".repeat(inner),
        "]".repeat(inner)
    )
}

/// A text line whose event encodes to exactly `size` bytes.
fn sized_line(size: usize) -> String {
    let probe = |content: &str| {
        format!(r#"{{"type":"text","content":"{content}","source":"s","source_key":"big"}}"#)
    };
    let events = parse_line(probe("").as_bytes(), 1).expect("probe");
    let overhead = encoded_len(&events[0]);
    probe(&"a".repeat(size - overhead))
}

#[test]
fn the_deepest_event_the_reader_takes_is_the_limit_and_fits_in_a_batch() {
    let events = parse_line(nested_line(MAX_EVENT_DEPTH).as_bytes(), 1).expect("at the limit");
    assert_eq!(event_depth(&events[0]), MAX_EVENT_DEPTH);
    for depth in [MAX_EVENT_DEPTH + 1, 126, 127, 128, 500] {
        let e = parse_line(nested_line(depth).as_bytes(), 7).expect_err("too deep");
        assert_eq!(
            e.kind,
            EventErrorKind::TooDeep {
                limit: MAX_EVENT_DEPTH
            },
            "depth {depth}"
        );
        assert!(e.to_string().contains("line 7"), "{e}");
    }
}

#[test]
fn the_json_parser_goes_as_deep_as_the_limits_say() {
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let parse = |text: String| serde_json::from_str::<serde_json::Value>(&text);
    assert!(parse(nested(JSON_PARSER_MAX_DEPTH)).is_ok());
    assert!(parse(nested(JSON_PARSER_MAX_DEPTH + 1)).is_err());
    // An event at the limit inside a batch, as the server parses it.
    let line = nested_line(MAX_EVENT_DEPTH);
    let mut body = line.clone();
    for _ in 0..BATCH_WRAPPER_DEPTH {
        body = format!("[{body}]");
    }
    assert!(parse(body).is_ok());
}

#[test]
fn the_largest_event_the_reader_takes_is_the_limit() {
    let at = sized_line(MAX_EVENT_BYTES);
    let events = parse_line(at.as_bytes(), 1).expect("at the limit");
    assert_eq!(encoded_len(&events[0]), MAX_EVENT_BYTES);
    assert!(at.len() <= MAX_LINE_BYTES);
    // A line within the line limit whose event encodes larger: numbers are written out again.
    let numbers = format!(
        r#"{{"type":"tool_use","tool":"t","input":{{"n":[{}1]}},"source":"s","source_key":"n"}}"#,
        "9e15,".repeat(MAX_LINE_BYTES / 6)
    );
    assert!(numbers.len() <= MAX_LINE_BYTES);
    let e = parse_line(numbers.as_bytes(), 3).expect_err("encodes too large");
    assert!(
        matches!(e.kind, EventErrorKind::EventTooLarge { size, limit }
            if size > MAX_EVENT_BYTES && limit == MAX_EVENT_BYTES),
        "{e}"
    );
    assert!(e.to_string().contains("line 3"), "{e}");
}

#[test]
fn a_line_over_the_line_limit_is_refused_by_the_decoder_with_its_number() {
    let mut decoder = LineDecoder::default();
    let ok = format!("{}\n", nested_line(3));
    let long = format!("{}\n", sized_line(MAX_EVENT_BYTES + 64));
    assert!(long.len() > MAX_LINE_BYTES);
    let mut results = decoder.feed(ok.as_bytes());
    results.extend(decoder.feed(long.as_bytes()));
    assert!(results[0].is_ok());
    let e = results[1].as_ref().expect_err("too long");
    assert_eq!(e.line_no, 2);
    assert_eq!(
        e.kind,
        EventErrorKind::LineTooLong {
            limit: MAX_LINE_BYTES
        }
    );
}

/// JSON string bodies made of what a line may write: escapes of every kind, raw Unicode.
fn json_string_body() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let piece = prop_oneof![
        Just(r"\n".to_owned()),
        Just(r"\b".to_owned()),
        Just(r"\u0001".to_owned()),
        Just(r"\u00e9".to_owned()),
        Just(r#"\""#.to_owned()),
        Just(r"\\".to_owned()),
        Just(r"\/".to_owned()),
        Just("\u{7f}".to_owned()),
        Just("é€😀".to_owned()),
        "[a-z ]{0,4}",
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest::proptest! {
    /// The reader skips measuring events without an `input` far from the limit: their encoding
    /// is never much longer than their line.
    #[test]
    fn an_event_without_input_encodes_hardly_longer_than_its_line(
        content in json_string_body(),
        kind in proptest::sample::select(vec!["text", "final", "user_input", "plan", "error"]),
        with_usage in proptest::bool::ANY,
    ) {
        let usage = if with_usage {
            r#","usage":{"provider":"p","model":"m","input_tokens":1,"output_tokens":2}"#
        } else {
            ""
        };
        let line = format!(
            r#"{{"type":"{kind}","content":"{content}","source":"s{content}","source_key":"k{content}"{usage}}}"#
        );
        let events = parse_line(line.as_bytes(), 1).expect("valid line");
        for event in &events {
            proptest::prop_assert!(encoded_len(event) <= line.len() + 128);
        }
    }
}
