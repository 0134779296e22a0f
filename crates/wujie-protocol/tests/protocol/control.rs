//! Control frames on an adapter's stdin: encoding, payload validation and splitting them out of
//! ordinary input.

use wujie_protocol::control::{
    CONTROL_FRAME_PREFIX, ControlFrameError, ControlFrameSplitter, HandoffDecision,
    MAX_CONTROL_FRAME_BYTES, StdinChunk,
};
use wujie_protocol::event::HandoffMode;

fn accepted() -> HandoffDecision {
    HandoffDecision {
        request_id: "handoff-1".into(),
        accepted: true,
        mode: Some(HandoffMode::NativeClear),
        issue_id: Some("...".into()),
        issue_key: Some("OPE-123".into()),
        run_id: Some("...".into()),
        error: None,
    }
}

fn rejected() -> HandoffDecision {
    HandoffDecision {
        request_id: "handoff-2".into(),
        accepted: false,
        mode: None,
        issue_id: None,
        issue_key: None,
        run_id: None,
        error: Some("cancelled\nby user \u{1e}WUJIE ".into()),
    }
}

#[test]
fn encodes_the_seed_frame_byte_for_byte() {
    let seed = "\x1eWUJIE {\"event\":\"handoff_decision\",\"request_id\":\"handoff-1\",\"accepted\":true,\"mode\":\"native_clear\",\"issue_id\":\"...\",\"issue_key\":\"OPE-123\",\"run_id\":\"...\"}\n";
    assert_eq!(String::from_utf8(accepted().encode_frame()).unwrap(), seed);
}

#[test]
fn encoded_frames_are_one_line_and_omit_absent_fields() {
    let frame = rejected().encode_frame();
    assert!(frame.starts_with(CONTROL_FRAME_PREFIX));
    assert_eq!(frame.iter().filter(|&&b| b == b'\n').count(), 1);
    assert_eq!(frame.last(), Some(&b'\n'));
    assert_eq!(frame.iter().filter(|&&b| b == 0x1e).count(), 1);
    let text = String::from_utf8(frame).unwrap();
    assert_eq!(
        text,
        "\x1eWUJIE {\"event\":\"handoff_decision\",\"request_id\":\"handoff-2\",\"accepted\":false,\"error\":\"cancelled\\nby user \\u001eWUJIE \"}\n"
    );
}

fn split_all(bytes: &[u8]) -> Vec<StdinChunk> {
    let mut splitter = ControlFrameSplitter::new();
    let mut out = splitter.feed(bytes);
    out.extend(splitter.finish());
    out
}

#[test]
fn frames_round_trip_through_the_splitter() {
    for decision in [accepted(), rejected()] {
        let mut stream = b"typed text".to_vec();
        stream.extend(decision.encode_frame());
        stream.extend(b"more\r");
        assert_eq!(
            split_all(&stream),
            vec![
                StdinChunk::Input(b"typed text".to_vec()),
                StdinChunk::Frame(Ok(decision)),
                StdinChunk::Input(b"more\r".to_vec()),
            ]
        );
    }
}

#[test]
fn payload_rules_table() {
    use ControlFrameError as E;
    let ok_cases: Vec<(&str, HandoffDecision)> = vec![
        (
            r#"{"event":"handoff_decision","request_id":"r","accepted":false}"#,
            HandoffDecision {
                request_id: "r".into(),
                accepted: false,
                mode: None,
                issue_id: None,
                issue_key: None,
                run_id: None,
                error: None,
            },
        ),
        (
            r#"{"accepted":true,"mode":"current_context","request_id":"r","issue_id":null,"x":1,"event":"handoff_decision"}"#,
            HandoffDecision {
                request_id: "r".into(),
                accepted: true,
                mode: Some(HandoffMode::CurrentContext),
                issue_id: None,
                issue_key: None,
                run_id: None,
                error: None,
            },
        ),
    ];
    for (payload, expected) in ok_cases {
        assert_eq!(
            HandoffDecision::parse_payload(payload.as_bytes()),
            Ok(expected)
        );
    }
    let err_cases: Vec<(&[u8], ControlFrameError)> = vec![
        (b"not json", E::NotJson("expected ident at column 2".into())),
        (b"[]", E::NotObject { found: "an array" }),
        (b"\xff", E::InvalidUtf8 { valid_up_to: 0 }),
        (
            br#"{"request_id":"r","accepted":true}"#,
            E::MissingField { field: "event" },
        ),
        (
            br#"{"event":"handoff_ready","request_id":"r","accepted":true}"#,
            E::UnknownEvent("handoff_ready".into()),
        ),
        (
            br#"{"event":"handoff_decision","accepted":true}"#,
            E::MissingField {
                field: "request_id",
            },
        ),
        (
            br#"{"event":"handoff_decision","request_id":"","accepted":true}"#,
            E::EmptyField {
                field: "request_id",
            },
        ),
        (
            br#"{"event":"handoff_decision","request_id":"r"}"#,
            E::MissingField { field: "accepted" },
        ),
        (
            br#"{"event":"handoff_decision","request_id":"r","accepted":"true"}"#,
            E::WrongType {
                field: "accepted",
                expected: "a boolean",
                found: "a string",
            },
        ),
        (
            br#"{"event":"handoff_decision","request_id":"r","accepted":true,"mode":"clear"}"#,
            E::UnknownHandoffMode("clear".into()),
        ),
        (
            br#"{"event":"handoff_decision","request_id":"r","accepted":true,"issue_key":7}"#,
            E::WrongType {
                field: "issue_key",
                expected: "a string",
                found: "a number",
            },
        ),
    ];
    for (payload, expected) in err_cases {
        assert_eq!(
            HandoffDecision::parse_payload(payload),
            Err(expected),
            "{}",
            String::from_utf8_lossy(payload)
        );
    }
}

#[test]
fn record_separators_that_start_no_frame_are_ordinary_input() {
    for input in [
        &b"\x1e"[..],
        b"a\x1eb",
        b"\x1eWUJIE",
        b"\x1eWUJIEX",
        b"\x1eWUJ\x1e",
        b"\x1e\x1e\x1e",
        b"\x1ewujie {}\n",
    ] {
        let out = split_all(input);
        let bytes: Vec<u8> = out
            .iter()
            .flat_map(|c| match c {
                StdinChunk::Input(b) => b.clone(),
                StdinChunk::Frame(f) => panic!("{input:?} gave a frame {f:?}"),
            })
            .collect();
        assert_eq!(bytes, input);
    }
    // A Record Separator right before a real frame.
    let mut stream = b"\x1e\x1eWUJ".to_vec();
    stream.extend(accepted().encode_frame());
    assert_eq!(
        split_all(&stream),
        vec![
            StdinChunk::Input(b"\x1e\x1eWUJ".to_vec()),
            StdinChunk::Frame(Ok(accepted())),
        ]
    );
}

#[test]
fn a_held_prefix_is_released_once_it_is_clear() {
    let mut splitter = ControlFrameSplitter::new();
    assert_eq!(
        splitter.feed(b"abc\x1eWU"),
        vec![StdinChunk::Input(b"abc".to_vec())]
    );
    assert_eq!(
        splitter.feed(b"X"),
        vec![StdinChunk::Input(b"\x1eWUX".to_vec())]
    );
    assert_eq!(splitter.feed(b"\x1eWUJIE"), vec![]);
    assert_eq!(
        splitter.finish(),
        vec![StdinChunk::Input(b"\x1eWUJIE".to_vec())]
    );
}

#[test]
fn bad_frames_are_errors_and_input_goes_on() {
    let out = split_all(b"a\x1eWUJIE {oops}\r\nb\x1eWUJIE {\"event\":\"x\"}\nc");
    assert!(matches!(
        out[1],
        StdinChunk::Frame(Err(ControlFrameError::NotJson(_)))
    ));
    assert_eq!(out[0], StdinChunk::Input(b"a".to_vec()));
    assert_eq!(out[2], StdinChunk::Input(b"b".to_vec()));
    assert_eq!(
        out[3],
        StdinChunk::Frame(Err(ControlFrameError::UnknownEvent("x".into())))
    );
    assert_eq!(out[4], StdinChunk::Input(b"c".to_vec()));
    assert_eq!(out.len(), 5);

    assert_eq!(
        split_all(b"\x1eWUJIE {\"event\""),
        vec![StdinChunk::Frame(Err(ControlFrameError::Unterminated))]
    );
}

#[test]
fn an_overlong_frame_is_an_error_and_does_not_swallow_later_input() {
    let mut splitter = ControlFrameSplitter::new();
    let mut out = splitter.feed(CONTROL_FRAME_PREFIX);
    // A frame that never ends, then the user's typing (raw-mode Enter is '\r', not '\n').
    out.extend(splitter.feed(&vec![b'{'; MAX_CONTROL_FRAME_BYTES]));
    assert_eq!(out, vec![]);
    out.extend(splitter.feed(b"ls\r"));
    assert_eq!(
        out,
        vec![
            StdinChunk::Frame(Err(ControlFrameError::TooLong {
                limit: MAX_CONTROL_FRAME_BYTES
            })),
            StdinChunk::Input(b"ls\r".to_vec()),
        ]
    );
    // Exactly at the cap is still a frame (and here an invalid one).
    let mut at_cap = CONTROL_FRAME_PREFIX.to_vec();
    at_cap.extend(vec![b' '; MAX_CONTROL_FRAME_BYTES]);
    at_cap.push(b'\n');
    assert!(matches!(
        split_all(&at_cap)[..],
        [StdinChunk::Frame(Err(ControlFrameError::NotJson(_)))]
    ));
}
