//! Properties: the incremental parsers give the same results for any chunking of the same bytes,
//! agree with a line-by-line reference, and encoders round-trip through the parsers.

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value};
use wujie_protocol::control::{
    CONTROL_FRAME_PREFIX, ControlFrameSplitter, HandoffDecision, StdinChunk,
};
use wujie_protocol::event::{
    DecodedLine, Event, EventError, EventErrorKind, HandoffMode, LineDecoder, Message, MessageKind,
    Usage, parse_line,
};

/// Splits `bytes` at the given cut points (any positions, duplicates allowed).
pub(super) fn chunks<'a>(bytes: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
    at.push(0);
    at.push(bytes.len());
    at.sort_unstable();
    at.windows(2).map(|w| &bytes[w[0]..w[1]]).collect()
}

// ---------- events ----------

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9 :_-]{0,12}",
        any::<String>(),
        Just("多行\n内容 \"quoted\" \\ \u{1e}\r".to_owned()),
    ]
}

fn nonblank() -> impl Strategy<Value = String> {
    (text(), "[a-zA-Z0-9]{1,6}").prop_map(|(t, tail)| t + &tail)
}

fn json_map() -> impl Strategy<Value = Map<String, Value>> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    let value = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,5}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop::collection::btree_map("[a-z_]{1,8}", value, 0..4).prop_map(|m| m.into_iter().collect())
}

fn event() -> impl Strategy<Value = Event> {
    let kind = prop::sample::select(MessageKind::ALL.to_vec());
    let message = (kind, text(), nonblank(), json_map(), nonblank(), nonblank()).prop_map(
        |(kind, body, tool, input, source, source_key)| {
            let mut m = Message {
                kind,
                content: None,
                tool: None,
                input: None,
                output: None,
                source,
                source_key,
            };
            match kind {
                MessageKind::ToolUse => {
                    m.tool = Some(tool);
                    m.input = Some(input);
                }
                MessageKind::ToolResult => {
                    m.tool = Some(tool);
                    m.output = Some(body);
                }
                _ => m.content = Some(body),
            }
            Event::Message(m)
        },
    );
    let usage = (
        text(),
        text(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(provider, model, i, o, r, w)| {
            Event::Usage(Usage {
                provider,
                model,
                input_tokens: i,
                output_tokens: o,
                cache_read_tokens: r,
                cache_write_tokens: w,
            })
        });
    let session = nonblank().prop_map(|session_id| Event::Session { session_id });
    let handoff = (nonblank(), any::<bool>()).prop_map(|(request_id, clear)| Event::HandoffReady {
        request_id,
        mode: if clear {
            HandoffMode::NativeClear
        } else {
            HandoffMode::CurrentContext
        },
    });
    prop_oneof![4 => message, 1 => usage, 1 => session, 1 => handoff]
}

/// One line of an adapter's stdout, without its terminator: valid events and everything else.
fn stdout_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => event().prop_map(|e| {
            let mut line = e.encode_line();
            line.pop();
            line
        }),
        1 => prop_oneof![Just(""), Just("   "), Just("\t"), Just("\r")].prop_map(|s| s.as_bytes().to_vec()),
        1 => "[ -~]{0,30}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..30),
        1 => Just(br#"{"type":"text","content":"x","source":"s","source_key":"k","usage":{"provider":"p","model":"m","input_tokens":1,"output_tokens":2}}"#.to_vec()),
        1 => Just(br#"{"type":"tool_use","tool":"t","input":[1],"source":"s","source_key":"k"}"#.to_vec()),
    ]
}

fn stdout_stream() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((stdout_line(), any::<bool>()), 0..12),
        any::<bool>(),
    )
        .prop_map(|(lines, last_terminated)| {
            let mut out = Vec::new();
            let count = lines.len();
            for (i, (line, crlf)) in lines.into_iter().enumerate() {
                out.extend(line);
                if i + 1 < count || last_terminated {
                    out.extend(if crlf { &b"\r\n"[..] } else { b"\n" });
                }
            }
            out
        })
}

type Decoded = Vec<Result<DecodedLine, EventError>>;

fn decode_chunked(limit: usize, pieces: &[&[u8]]) -> Decoded {
    let mut decoder = LineDecoder::new(limit);
    let mut out = Vec::new();
    for piece in pieces {
        out.extend(decoder.feed(piece));
    }
    out.extend(decoder.finish());
    out
}

/// What the decoder must produce, computed line by line with `parse_line`.
fn reference(limit: usize, stream: &[u8]) -> Decoded {
    let mut lines: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut out = Vec::new();
    for (line_no, line) in (1..).zip(lines) {
        let content = line.strip_suffix(b"\r").unwrap_or(line);
        if content.len() > limit {
            out.push(Err(EventError {
                line_no,
                kind: EventErrorKind::LineTooLong { limit },
            }));
            continue;
        }
        match parse_line(content, line_no) {
            Ok(events) if events.is_empty() => {}
            Ok(events) => out.push(Ok(DecodedLine { line_no, events })),
            Err(e) => out.push(Err(e)),
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_chunking_decodes_like_the_line_by_line_reference(
        stream in stdout_stream(),
        cuts in prop::collection::vec(any::<Index>(), 0..24),
        limit in prop_oneof![Just(16usize), Just(80), Just(1 << 20)],
    ) {
        let expected = reference(limit, &stream);
        prop_assert_eq!(&decode_chunked(limit, &[&stream]), &expected);
        prop_assert_eq!(&decode_chunked(limit, &chunks(&stream, &cuts)), &expected);
    }

    #[test]
    fn byte_by_byte_decoding_matches(stream in stdout_stream(), limit in prop_oneof![Just(16usize), Just(1 << 20)]) {
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        prop_assert_eq!(decode_chunked(limit, &bytes), reference(limit, &stream));
    }

    #[test]
    fn encoded_events_parse_back_to_themselves(event in event(), line_no in 1u64..) {
        let line = event.encode_line();
        prop_assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        prop_assert_eq!(line.last(), Some(&b'\n'));
        prop_assert_eq!(parse_line(&line[..line.len() - 1], line_no), Ok(vec![event]));
    }

    #[test]
    fn parse_line_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_line(&bytes, 1);
    }
}

// ---------- control frames ----------

fn decision() -> impl Strategy<Value = HandoffDecision> {
    let opt = || prop::option::of(text());
    (
        nonblank(),
        any::<bool>(),
        prop::option::of(any::<bool>()),
        opt(),
        opt(),
        opt(),
        opt(),
    )
        .prop_map(
            |(request_id, accepted, mode, issue_id, issue_key, run_id, error)| HandoffDecision {
                request_id,
                accepted,
                mode: mode.map(|clear| {
                    if clear {
                        HandoffMode::NativeClear
                    } else {
                        HandoffMode::CurrentContext
                    }
                }),
                issue_id,
                issue_key,
                run_id,
                error,
            },
        )
}

#[derive(Debug, Clone)]
enum Piece {
    /// Ordinary terminal input, rich in Record Separators and prefix fragments.
    Input(Vec<u8>),
    /// A well-formed frame of this decision.
    Frame(HandoffDecision),
    /// A frame whose payload is not a decision.
    BadFrame(Vec<u8>),
}

fn piece() -> impl Strategy<Value = Piece> {
    let input_byte = prop_oneof![
        3 => any::<u8>(),
        1 => Just(0x1e_u8),
        1 => prop::sample::select(b"WUJIE \r\n".to_vec()),
    ];
    let prefix_part =
        (1..CONTROL_FRAME_PREFIX.len()).prop_map(|n| CONTROL_FRAME_PREFIX[..n].to_vec());
    prop_oneof![
        3 => prop::collection::vec(input_byte, 0..20).prop_map(Piece::Input),
        1 => prefix_part.prop_map(Piece::Input),
        2 => decision().prop_map(Piece::Frame),
        1 => "[ -~]{0,20}".prop_map(|s| Piece::BadFrame(s.into_bytes())),
    ]
}

/// Merges adjacent inputs, which different chunkings may deliver in different pieces.
fn normalise(chunks: Vec<StdinChunk>) -> Vec<StdinChunk> {
    let mut out: Vec<StdinChunk> = Vec::new();
    for chunk in chunks {
        match (out.last_mut(), chunk) {
            (_, StdinChunk::Input(b)) if b.is_empty() => {}
            (Some(StdinChunk::Input(prev)), StdinChunk::Input(b)) => prev.extend(b),
            (_, chunk) => out.push(chunk),
        }
    }
    out
}

fn split_chunked(pieces: &[&[u8]]) -> Vec<StdinChunk> {
    let mut splitter = ControlFrameSplitter::new();
    let mut out = Vec::new();
    for piece in pieces {
        out.extend(splitter.feed(piece));
    }
    out.extend(splitter.finish());
    normalise(out)
}

fn occurrences(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_chunking_splits_stdin_the_same_and_keeps_input_intact(
        pieces in prop::collection::vec(piece(), 0..10),
        cuts in prop::collection::vec(any::<Index>(), 0..24),
    ) {
        let mut stream = Vec::new();
        let mut expected_input: Vec<u8> = Vec::new();
        let mut frames = 0;
        for piece in &pieces {
            match piece {
                Piece::Input(bytes) => {
                    stream.extend(bytes);
                    expected_input.extend(bytes);
                }
                Piece::Frame(d) => {
                    stream.extend(d.encode_frame());
                    frames += 1;
                }
                Piece::BadFrame(payload) => {
                    stream.extend(CONTROL_FRAME_PREFIX);
                    stream.extend(payload);
                    stream.push(b'\n');
                    frames += 1;
                }
            }
        }
        // Ordinary input that happens to spell a whole prefix (or cuts a frame short) is a
        // frame of its own; such streams do not test what this property is about.
        prop_assume!(occurrences(&stream, CONTROL_FRAME_PREFIX) == frames);

        let whole = split_chunked(&[&stream]);
        prop_assert_eq!(&split_chunked(&chunks(&stream, &cuts)), &whole);
        let byte_by_byte: Vec<&[u8]> = stream.chunks(1).collect();
        prop_assert_eq!(&split_chunked(&byte_by_byte), &whole);

        let input: Vec<u8> = whole
            .iter()
            .flat_map(|c| match c {
                StdinChunk::Input(b) => b.clone(),
                StdinChunk::Frame(_) => Vec::new(),
            })
            .collect();
        prop_assert_eq!(input, expected_input);

        let got_frames: Vec<_> = whole
            .into_iter()
            .filter_map(|c| match c {
                StdinChunk::Frame(f) => Some(f),
                StdinChunk::Input(_) => None,
            })
            .collect();
        let expected_frames: Vec<_> = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Frame(d) => Some(Some(d.clone())),
                Piece::BadFrame(_) => Some(None),
                Piece::Input(_) => None,
            })
            .collect();
        prop_assert_eq!(got_frames.len(), expected_frames.len());
        for (got, want) in got_frames.into_iter().zip(expected_frames) {
            match want {
                Some(d) => prop_assert_eq!(got, Ok(d)),
                None => prop_assert!(got.is_err()),
            }
        }
    }
}
