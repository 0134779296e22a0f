//! Scanner behaviour tables (named after zellij's stdin parser checklist) and a chunking
//! property.

use proptest::prelude::*;
use wujie_term::{
    CSI_CAP, InputEvent, InputKind, InputScanner, MouseEncoding, PASTE_CAP, Pending, ReplyKind,
    STRING_CAP, StringKind, Terminator,
};

/// Feeds `chunks` in order, then flushes, and checks the output is lossless.
fn scan_chunks(chunks: &[&[u8]]) -> Vec<InputEvent> {
    let mut scanner = InputScanner::new();
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(scanner.feed(chunk));
    }
    events.extend(scanner.flush_idle());
    assert_eq!(scanner.pending(), Pending::Nothing);
    let forwarded: Vec<u8> = events.iter().flat_map(|e| e.bytes.clone()).collect();
    assert_eq!(
        forwarded,
        chunks.concat(),
        "forwarded bytes differ from input"
    );
    events
}

fn scan(input: &[u8]) -> Vec<InputEvent> {
    scan_chunks(&[input])
}

fn byte_by_byte(input: &[u8]) -> Vec<InputEvent> {
    let chunks: Vec<&[u8]> = input.chunks(1).collect();
    scan_chunks(&chunks)
}

fn kinds(events: &[InputEvent]) -> Vec<(InputKind, String)> {
    events
        .iter()
        .map(|e| (e.kind, String::from_utf8_lossy(&e.bytes).into_owned()))
        .collect()
}

fn typing(s: &str) -> (InputKind, String) {
    (InputKind::Typing, s.to_owned())
}

fn one(input: &[u8]) -> InputKind {
    let events = scan(input);
    assert_eq!(
        events.len(),
        1,
        "{:?} gave {:?}",
        String::from_utf8_lossy(input),
        kinds(&events)
    );
    assert_eq!(byte_by_byte(input), events, "byte-by-byte differs");
    events[0].kind
}

#[test]
fn fragmented_osc_byte_by_byte() {
    let st = b"\x1b]11;rgb:0000/1111/2222\x1b\\";
    let events = byte_by_byte(st);
    assert_eq!(
        kinds(&events),
        vec![(
            InputKind::String {
                kind: StringKind::Osc,
                terminator: Terminator::St
            },
            String::from_utf8_lossy(st).into_owned()
        )]
    );
    let bel = b"\x1b]10;rgb:ffff/ffff/ffff\x07";
    assert_eq!(
        byte_by_byte(bel)[0].kind,
        InputKind::String {
            kind: StringKind::Osc,
            terminator: Terminator::Bel
        }
    );
}

#[test]
fn every_string_kind_ends_on_bel_or_st() {
    let table: &[(&[u8], StringKind)] = &[
        (b"\x1b]", StringKind::Osc),
        (b"\x1bP", StringKind::Dcs),
        (b"\x1b_", StringKind::Apc),
        (b"\x1b^", StringKind::Pm),
        (b"\x1bX", StringKind::Sos),
    ];
    for (intro, kind) in table {
        for (end, terminator) in [
            (&b"\x07"[..], Terminator::Bel),
            (&b"\x1b\\"[..], Terminator::St),
        ] {
            let input = [*intro, b"1+r636f6c73=3830", end].concat();
            assert_eq!(
                one(&input),
                InputKind::String {
                    kind: *kind,
                    terminator
                }
            );
        }
    }
}

#[test]
fn byte_0x9c_inside_a_string_is_utf8_content_not_st() {
    // "✜" is E2 9C 9C in UTF-8.
    let input = "\x1b]2;title ✜ here\x07x".as_bytes();
    let events = byte_by_byte(input);
    assert_eq!(
        kinds(&events),
        vec![
            (
                InputKind::String {
                    kind: StringKind::Osc,
                    terminator: Terminator::Bel
                },
                "\x1b]2;title ✜ here\x07".to_owned()
            ),
            typing("x"),
        ]
    );
}

#[test]
fn lone_trailing_esc_is_buffered_then_finalized_as_typing() {
    let mut scanner = InputScanner::new();
    assert_eq!(kinds(&scanner.feed(b"a\x1b")), vec![typing("a")]);
    assert_eq!(scanner.pending(), Pending::Escape);
    assert_eq!(kinds(&scanner.flush_idle()), vec![typing("\x1b")]);
    assert_eq!(scanner.pending(), Pending::Nothing);
    assert!(scanner.flush_idle().is_empty());
    // The same ESC followed by more bytes before the timeout is a sequence.
    let mut scanner = InputScanner::new();
    assert!(scanner.feed(b"\x1b").is_empty());
    assert_eq!(kinds(&scanner.feed(b"[A")), vec![typing("\x1b[A")]);
}

#[test]
fn idle_flush_releases_every_partial_state_as_typing() {
    for partial in [
        &b"\x1b["[..],
        b"\x1b[1;5",
        b"\x1bO",
        b"\x1b]11;rgb",
        b"\x1bPabc\x1b",
        b"\xe4\xb8",
        b"\x1b[M!",
    ] {
        let mut scanner = InputScanner::new();
        assert!(
            scanner.feed(partial).is_empty(),
            "{partial:?} emitted early"
        );
        assert_ne!(scanner.pending(), Pending::Nothing);
        let flushed = scanner.flush_idle();
        assert_eq!(flushed.len(), 1);
        assert_eq!(flushed[0].kind, InputKind::Typing);
        assert_eq!(flushed[0].bytes, partial);
        assert_eq!(kinds(&scanner.feed(b"k")), vec![typing("k")]);
    }
}

#[test]
fn paste_markers_fragmented_still_toggle_paste_mode() {
    let events = scan_chunks(&[b"\x1b[20", b"0~hel", b"lo\x1b[2", b"01", b"~x"]);
    assert_eq!(
        kinds(&events),
        vec![
            (
                InputKind::Paste {
                    starts: true,
                    complete: true
                },
                "\x1b[200~hello\x1b[201~".to_owned()
            ),
            typing("x"),
        ]
    );
    assert_eq!(events[0].payload(), b"hello");
}

#[test]
fn bracketed_paste_preserves_embedded_escape_content() {
    let content: &[u8] = b"a\x1b[A\x1b]0;t\x07\x1b[20\x1b[201\x1b\x1b[200~\r\nz\x1b";
    let input = [b"\x1b[200~", content, b"\x1b[201~"].concat();
    for events in [scan(&input), byte_by_byte(&input)] {
        assert_eq!(events.len(), 1, "{:?}", kinds(&events));
        assert_eq!(
            events[0].kind,
            InputKind::Paste {
                starts: true,
                complete: true
            }
        );
        assert_eq!(events[0].payload(), content);
    }
}

#[test]
fn unfinished_paste_is_pending_and_flushes_as_incomplete_paste() {
    let mut scanner = InputScanner::new();
    assert!(scanner.feed(b"\x1b[200~abc\x1b[20").is_empty());
    assert_eq!(scanner.pending(), Pending::Paste);
    let flushed = scanner.flush_idle();
    assert_eq!(
        flushed[0].kind,
        InputKind::Paste {
            starts: true,
            complete: false
        }
    );
    assert_eq!(flushed[0].payload(), b"abc\x1b[20");
    assert_eq!(kinds(&scanner.feed(b"q")), vec![typing("q")]);
}

#[test]
fn malformed_osc_still_does_not_eat_following_keyboard_bytes() {
    // Interrupted by another escape.
    assert_eq!(
        kinds(&byte_by_byte(b"\x1b]11;rgb\x1bxab")),
        vec![
            typing("\x1b]11;rgb"),
            typing("\x1bx"),
            typing("a"),
            typing("b")
        ]
    );
    // Interrupted by a control byte (Alt-] then text then Enter).
    assert_eq!(
        kinds(&scan(b"\x1b]abc\rd")),
        vec![typing("\x1b]abc"), typing("\r"), typing("d")]
    );
    // Interrupted by the start of a real sequence: the sequence survives.
    assert_eq!(
        kinds(&scan(b"\x1bPzz\x1b[24;80R")),
        vec![
            typing("\x1bPzz"),
            (
                InputKind::Reply(ReplyKind::CursorPosition),
                "\x1b[24;80R".to_owned()
            )
        ]
    );
}

#[test]
fn malformed_csi_does_not_eat_following_keys() {
    assert_eq!(
        kinds(&scan(b"\x1b[12\rab")),
        vec![typing("\x1b[12"), typing("\r"), typing("a"), typing("b")]
    );
    assert_eq!(
        kinds(&scan(b"\x1b[\x1b[A")),
        vec![typing("\x1b["), typing("\x1b[A")]
    );
    assert_eq!(
        kinds(&scan(b"\x1bO\x7f")),
        vec![typing("\x1bO"), typing("\x7f")]
    );
}

#[test]
fn partial_osc_overflow_falls_back_to_typing() {
    let mut input = b"\x1b]52;c;".to_vec();
    input.resize(STRING_CAP, b'A');
    input.extend_from_slice(b"B\x07q");
    let events = scan(&input);
    assert_eq!(events[0].kind, InputKind::Typing);
    assert_eq!(events[0].bytes.len(), STRING_CAP);
    assert_eq!(
        kinds(&events[1..]),
        vec![typing("B"), typing("\x07"), typing("q")]
    );
    assert_eq!(scan_chunks(&input.chunks(4093).collect::<Vec<_>>()), events);
}

#[test]
fn overlong_csi_falls_back_to_typing() {
    let mut input = b"\x1b[".to_vec();
    input.resize(CSI_CAP + 10, b'1');
    input.extend_from_slice(b"Ax");
    let events = scan(&input);
    assert_eq!(events[0].kind, InputKind::Typing);
    assert_eq!(events[0].bytes.len(), CSI_CAP);
    assert!(events.iter().all(|e| e.kind == InputKind::Typing));
    assert_eq!(events.last().map(|e| e.bytes.clone()), Some(b"x".to_vec()));
}

#[test]
fn oversized_paste_is_emitted_in_capped_pieces() {
    let content = vec![b'p'; PASTE_CAP + 100];
    let input = [&b"\x1b[200~"[..], &content, b"\x1b[201~k"].concat();
    let events = scan(&input);
    assert_eq!(
        events.len(),
        3,
        "{:?}",
        events
            .iter()
            .map(|e| (e.kind, e.bytes.len()))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        events[0].kind,
        InputKind::Paste {
            starts: true,
            complete: false
        }
    );
    assert_eq!(events[0].bytes.len(), PASTE_CAP);
    assert_eq!(
        events[1].kind,
        InputKind::Paste {
            starts: false,
            complete: true
        }
    );
    assert_eq!(events[2].kind, InputKind::Typing);
    let payload: Vec<u8> = events[..2]
        .iter()
        .flat_map(|e| e.payload().to_vec())
        .collect();
    assert_eq!(payload, content);
    assert_eq!(scan_chunks(&input.chunks(7777).collect::<Vec<_>>()), events);
}

#[test]
fn cursor_position_report_vs_typing() {
    let table: &[(&[u8], InputKind)] = &[
        (b"\x1b[12;40R", InputKind::Reply(ReplyKind::CursorPosition)),
        (b"\x1b[?12;40R", InputKind::Reply(ReplyKind::CursorPosition)),
        (
            b"\x1b[?12;40;1R",
            InputKind::Reply(ReplyKind::CursorPosition),
        ),
        (b"\x1b[R", InputKind::Typing),
        (b"\x1b[5R", InputKind::Typing),
        (b"\x1b[;5R", InputKind::Typing),
        (b"\x1bOR", InputKind::Typing),
        (b"\x1b[1;5A", InputKind::Typing),
        (b"\x1b[3~", InputKind::Typing),
        (b"\x1b[97;5u", InputKind::Typing),
    ];
    for (input, kind) in table {
        assert_eq!(one(input), *kind, "{:?}", String::from_utf8_lossy(input));
    }
}

#[test]
fn device_attributes_mode_status_and_window_reports() {
    let table: &[(&[u8], ReplyKind)] = &[
        (
            b"\x1b[?64;1;2;6;9;15;18;21;22c",
            ReplyKind::DeviceAttributes,
        ),
        (b"\x1b[>41;380;0c", ReplyKind::DeviceAttributes),
        (b"\x1b[0n", ReplyKind::DeviceStatus),
        (b"\x1b[?997;1n", ReplyKind::DeviceStatus),
        (b"\x1b[?2026;2$y", ReplyKind::ModeReport),
        (b"\x1b[4;0$y", ReplyKind::ModeReport),
        (b"\x1b[4;600;800t", ReplyKind::WindowReport),
        (b"\x1b[8;24;80t", ReplyKind::WindowReport),
        (b"\x1b[?1u", ReplyKind::KeyboardFlags),
    ];
    for (input, kind) in table {
        assert_eq!(
            one(input),
            InputKind::Reply(*kind),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    // Look-alikes that are keys.
    for input in [
        &b"\x1b[c"[..],
        b"\x1b[5n",
        b"\x1b[$y",
        b"\x1b[t",
        b"\x1b[?$y",
    ] {
        assert_eq!(
            one(input),
            InputKind::Typing,
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn sgr_and_x10_mouse() {
    assert_eq!(one(b"\x1b[<0;10;5M"), InputKind::Mouse(MouseEncoding::Sgr));
    assert_eq!(
        one(b"\x1b[<64;200;50m"),
        InputKind::Mouse(MouseEncoding::Sgr)
    );
    assert_eq!(one(b"\x1b[M !!"), InputKind::Mouse(MouseEncoding::X10));
    // X10 coordinates are raw bytes: ESC, high bytes and control bytes are coordinates.
    assert_eq!(
        one(b"\x1b[M\x1b\xff\x07"),
        InputKind::Mouse(MouseEncoding::X10)
    );
    assert_eq!(
        kinds(&scan(b"\x1b[M #$a")),
        vec![
            (InputKind::Mouse(MouseEncoding::X10), "\x1b[M #$".to_owned()),
            typing("a")
        ]
    );
}

#[test]
fn focus_in_and_out() {
    assert_eq!(one(b"\x1b[I"), InputKind::Focus { gained: true });
    assert_eq!(one(b"\x1b[O"), InputKind::Focus { gained: false });
    assert_eq!(one(b"\x1b[1I"), InputKind::Typing);
}

#[test]
fn typing_is_one_event_per_key() {
    assert_eq!(
        kinds(&byte_by_byte("a中\x1b\x1b[A\x1bx\x1b\x7f\r\x03".as_bytes())),
        vec![
            typing("a"),
            typing("中"),
            typing("\x1b"),
            typing("\x1b[A"),
            typing("\x1bx"),
            typing("\x1b\x7f"),
            typing("\r"),
            typing("\x03"),
        ]
    );
    // Invalid UTF-8 never waits and never merges with the next key.
    let events = scan(b"\x80\xe4\xb8a\xff");
    assert_eq!(
        events.iter().map(|e| e.bytes.clone()).collect::<Vec<_>>(),
        vec![
            b"\x80".to_vec(),
            b"\xe4\xb8".to_vec(),
            b"a".to_vec(),
            b"\xff".to_vec()
        ]
    );
    assert!(events.iter().all(|e| e.kind == InputKind::Typing));
}

/// Inputs built from pieces that exercise every state, plus arbitrary bytes.
fn input_strategy() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"\x1b".to_vec()),
        Just(b"\x1b[".to_vec()),
        Just(b"\x1b[200~".to_vec()),
        Just(b"\x1b[201~".to_vec()),
        Just(b"\x1b]11;rgb:0/0/0".to_vec()),
        Just(b"\x1bP1$r0m".to_vec()),
        Just(b"\x1b\\".to_vec()),
        Just(b"\x07".to_vec()),
        Just(b"\x1b[24;80R".to_vec()),
        Just(b"\x1b[?2026;2$y".to_vec()),
        Just(b"\x1b[<0;1;2M".to_vec()),
        Just(b"\x1b[M".to_vec()),
        Just(b"\x1bOA".to_vec()),
        Just("中文".as_bytes().to_vec()),
        Just(b"/wujie".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn any_chunking_gives_the_same_events(
        input in input_strategy(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let whole = scan(&input);
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for p in points {
            chunks.push(&input[start..p]);
            start = p;
        }
        chunks.push(&input[start..]);
        prop_assert_eq!(scan_chunks(&chunks), whole);
    }
}

#[test]
fn an_unfinished_csi_sequence_is_pending_as_one_and_a_lone_esc_is_not() {
    let mut scanner = InputScanner::new();
    assert!(scanner.feed(b"\x1b").is_empty());
    assert_eq!(scanner.pending(), Pending::Escape);
    assert!(scanner.feed(b"[12;").is_empty());
    assert_eq!(scanner.pending(), Pending::Csi);
    assert_eq!(
        kinds(&scanner.feed(b"5R")),
        vec![(
            InputKind::Reply(ReplyKind::CursorPosition),
            "\x1b[12;5R".to_owned()
        )]
    );
    assert_eq!(scanner.pending(), Pending::Nothing);
}
