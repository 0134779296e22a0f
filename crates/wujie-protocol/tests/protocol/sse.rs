//! Properties of the server-sent events reader: any chunking of the same bytes gives the same
//! events, and events written as the standard says read back as they were written.

use proptest::prelude::*;
use proptest::sample::Index;
use wujie_protocol::sse::{SseDecoder, SseEvent, SseItem};

use super::chunking::chunks;

fn decode(pieces: &[&[u8]], max_event_bytes: usize) -> Vec<SseItem> {
    let mut decoder = SseDecoder::new(max_event_bytes);
    pieces
        .iter()
        .flat_map(|piece| decoder.feed(piece))
        .collect()
}

fn terminator() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["\n", "\r", "\r\n"])
}

/// Text a field may hold: no line ends, anything else (NUL and non-ASCII included).
fn field_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9 :.{}\"-]{0,12}",
        any::<String>().prop_map(|s| s.replace(['\r', '\n'], "")),
    ]
}

/// A line of a stream, terminator included: fields, comments, blank lines, and bytes that
/// are none of them.
fn stream_line() -> impl Strategy<Value = Vec<u8>> {
    let field = prop::sample::select(vec!["data", "event", "id", "retry", "other", ""]);
    let content = prop_oneof![
        6 => (field, prop::sample::select(vec![":", ": ", ":  ", ""]), field_text())
            .prop_map(|(f, colon, v)| format!("{f}{colon}{v}").into_bytes()),
        1 => field_text().prop_map(|c| format!(":{c}").into_bytes()),
        2 => Just(Vec::new()),
        1 => prop::collection::vec(any::<u8>(), 0..12)
            .prop_map(|b| b.into_iter().filter(|b| !matches!(b, b'\r' | b'\n')).collect()),
    ];
    (content, terminator()).prop_map(|(mut line, end)| {
        line.extend_from_slice(end.as_bytes());
        line
    })
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        prop::collection::vec(stream_line(), 0..24),
        prop::collection::vec(any::<u8>(), 0..6),
    )
        .prop_map(|(bom, lines, tail)| {
            let mut bytes = if bom {
                "\u{feff}".as_bytes().to_vec()
            } else {
                Vec::new()
            };
            bytes.extend(lines.concat());
            bytes.extend(tail);
            bytes
        })
}

/// An event as a server writes it, and what reading it must give (its id: only when it gave
/// one; see [`read_back`]).
fn written_event() -> impl Strategy<Value = (Vec<u8>, SseEvent)> {
    let name = prop_oneof![Just(String::new()), "[a-z_.]{1,10}"];
    let data_lines = prop::collection::vec(field_text(), 1..4);
    let id = prop::option::of("[0-9.]{1,8}");
    let comment = prop::option::of(field_text());
    (name, data_lines, id, comment, terminator()).prop_map(|(name, lines, id, comment, end)| {
        let mut text = String::new();
        if let Some(comment) = comment {
            text += &format!(":{comment}{end}");
        }
        if !name.is_empty() {
            text += &format!("event: {name}{end}");
        }
        if let Some(id) = &id {
            text += &format!("id: {id}{end}");
        }
        for line in &lines {
            text += &format!("data: {line}{end}");
        }
        text += end;
        let event = SseEvent {
            name: if name.is_empty() {
                "message".to_owned()
            } else {
                name
            },
            data: lines.join("\n"),
            id: id.unwrap_or_default(),
        };
        (text.into_bytes(), event)
    })
}

/// What reading `written` in order gives: an event without an id of its own carries the last
/// one before it.
fn read_back(written: &[(Vec<u8>, SseEvent)]) -> Vec<SseItem> {
    let mut last_id = String::new();
    written
        .iter()
        .map(|(_, event)| {
            let mut event = event.clone();
            if event.id.is_empty() {
                event.id = last_id.clone();
            } else {
                last_id = event.id.clone();
            }
            SseItem::Event(event)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_chunking_gives_the_same_events(
        bytes in stream(),
        cuts in prop::collection::vec(any::<Index>(), 0..12),
        limit in prop_oneof![Just(1usize << 20), 0usize..64],
    ) {
        let whole = decode(&[&bytes], limit);
        prop_assert_eq!(decode(&chunks(&bytes, &cuts), limit), whole.clone());
        let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(decode(&bytewise, limit), whole);
    }

    #[test]
    fn written_events_read_back_as_written(
        written in prop::collection::vec(written_event(), 0..8),
        cuts in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        let bytes = written.iter().flat_map(|(b, _)| b.clone()).collect::<Vec<u8>>();
        prop_assert_eq!(decode(&chunks(&bytes, &cuts), 1 << 20), read_back(&written));
    }

    #[test]
    fn an_event_over_the_limit_is_refused_in_its_place_and_the_others_read(
        written in prop::collection::vec(written_event(), 0..6),
        at in any::<Index>(),
        over in 1usize..200,
        cuts in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        // Every written event fits (an event holds at most its own bytes); the long one not.
        let limit = written.iter().map(|(b, _)| b.len()).max().unwrap_or(0);
        let long = format!("data: {}\n\n", "x".repeat(limit + over));
        let at = at.index(written.len() + 1);
        let mut bytes = Vec::new();
        for (b, _) in &written[..at] {
            bytes.extend(b);
        }
        bytes.extend(long.as_bytes());
        for (b, _) in &written[at..] {
            bytes.extend(b);
        }
        let mut expected = read_back(&written);
        expected.insert(at, SseItem::TooLong);
        prop_assert_eq!(decode(&chunks(&bytes, &cuts), limit), expected);
    }
}
