//! The conversation line editor: editing, history, paste, Ctrl+C/Ctrl+D, and what its output
//! shows on a terminal (vt100 as the oracle), for any chunking of the input and any size.

use proptest::prelude::*;
use wujie_term::{EditorAction, InputScanner, LineEditor, TermSize};

const SIZE: TermSize = TermSize { cols: 20, rows: 6 };

/// Feeds `input` through a scanner into `editor`; returns the actions and the bytes drawn.
fn feed(editor: &mut LineEditor, size: TermSize, input: &[u8]) -> (Vec<EditorAction>, Vec<u8>) {
    let mut scanner = InputScanner::new();
    let mut out = Vec::new();
    let mut actions = Vec::new();
    let mut events = scanner.feed(input);
    events.extend(scanner.flush_idle());
    for event in &events {
        match editor.handle(event, size, &mut out) {
            EditorAction::None => {}
            action => actions.push(action),
        }
    }
    (actions, out)
}

fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).expect("a size above zero")
}

/// A terminal of `size` after `bytes`.
fn screen(size: TermSize, bytes: &[u8]) -> vt100::Parser {
    let mut parser = vt100::Parser::new(nz(size.rows), nz(size.cols), 0);
    parser.process(bytes);
    parser
}

fn rows(parser: &vt100::Parser) -> Vec<String> {
    parser
        .screen()
        .rows(0, parser.screen().size().1.get())
        .map(|r| r.trim_end().to_owned())
        .collect()
}

#[test]
fn typing_and_editing_keys_change_the_line_at_the_cursor() {
    let mut editor = LineEditor::new("> ");
    // "hello", Left ×2, "XY", Home, Delete, End, Backspace.
    let (actions, _) = feed(&mut editor, SIZE, b"hello\x1b[D\x1b[DXY\x01\x1b[3~\x05\x7f");
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(editor.text(), "elXYl");
    feed(&mut editor, SIZE, b" two words\x17");
    assert_eq!(editor.text(), "elXYl two ");
    feed(&mut editor, SIZE, b"\x1b[D\x1b[D\x0b");
    assert_eq!(editor.text(), "elXYl tw");
    feed(&mut editor, SIZE, b"\x15");
    assert_eq!((editor.text().as_str(), editor.cursor()), ("", 0));
}

#[test]
fn enter_submits_and_up_down_walk_the_history_keeping_the_draft() {
    let mut editor = LineEditor::new("> ");
    let (actions, _) = feed(&mut editor, SIZE, b"first\rsecond\r   \r");
    assert_eq!(
        actions,
        [
            EditorAction::Submit("first".into()),
            EditorAction::Submit("second".into())
        ],
        "a blank line is not a prompt"
    );
    assert_eq!(editor.history(), ["first", "second"]);
    feed(&mut editor, SIZE, b"dra");
    feed(&mut editor, SIZE, b"\x1b[A");
    assert_eq!(editor.text(), "second");
    feed(&mut editor, SIZE, b"\x1b[A\x1b[A");
    assert_eq!(editor.text(), "first", "the oldest entry stays");
    feed(&mut editor, SIZE, b"\x1bOB");
    assert_eq!(editor.text(), "second");
    feed(&mut editor, SIZE, b"\x1b[B");
    assert_eq!(editor.text(), "dra", "below the newest entry is the draft");
    let (actions, _) = feed(&mut editor, SIZE, b"\x1b[A\r");
    assert_eq!(actions, [EditorAction::Submit("second".into())]);
    assert_eq!(editor.history(), ["first", "second"], "no repeated entry");
}

#[test]
fn a_multi_line_paste_is_one_prompt() {
    let mut editor = LineEditor::new("> ");
    let (actions, _) = feed(
        &mut editor,
        SIZE,
        b"fix \x1b[200~line one\r\nline two\rline \x1b[31mthree\x1b[201~\r",
    );
    assert_eq!(
        actions,
        [EditorAction::Submit(
            "fix line one\nline two\nline [31mthree".into()
        )],
        "line breaks are kept, escape bytes are dropped"
    );
}

#[test]
fn a_paste_split_inside_a_character_keeps_it() {
    let mut editor = LineEditor::new("> ");
    let mut scanner = InputScanner::new();
    let mut out = Vec::new();
    let bytes = "é".as_bytes();
    // The scanner hands over an unfinished paste at idle time, which can split a character.
    let mut events = scanner.feed(&[b"\x1b[200~".as_slice(), &bytes[..1]].concat());
    events.extend(scanner.flush_idle());
    events.extend(scanner.feed(&[b"\x1b[200~".as_slice(), &bytes[1..], b"\x1b[201~"].concat()));
    for event in &events {
        editor.handle(event, SIZE, &mut out);
    }
    assert_eq!(editor.text(), "é");
}

#[test]
fn ctrl_c_clears_the_line_and_ctrl_d_ends_only_an_empty_one() {
    let mut editor = LineEditor::new("> ");
    let (actions, out) = feed(&mut editor, SIZE, b"half a thought\x03");
    assert_eq!(actions, [EditorAction::Interrupt { was_empty: false }]);
    assert_eq!(editor.text(), "");
    let shown = screen(SIZE, &out);
    assert_eq!(rows(&shown)[0], "> half a thought", "{:?}", rows(&shown));
    assert_eq!(
        shown.screen().cursor_position(),
        (1, 0),
        "below the line it left"
    );

    let (actions, _) = feed(&mut editor, SIZE, b"\x03");
    assert_eq!(actions, [EditorAction::Interrupt { was_empty: true }]);
    let (actions, _) = feed(&mut editor, SIZE, b"ab\x01\x04");
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(
        editor.text(),
        "b",
        "Ctrl+D deleted the character under the cursor"
    );
    let (actions, _) = feed(&mut editor, SIZE, b"\x05\x15\x04");
    assert_eq!(actions, [EditorAction::Eof]);
}

#[test]
fn long_and_wide_text_wraps_under_the_prompt_with_the_cursor_where_it_is() {
    let size = TermSize { cols: 10, rows: 6 };
    let mut editor = LineEditor::new("> ");
    // 8 columns per row beside the prompt: "abcdefgh" fills row 0 exactly, "漢字漢字" (2 wide
    // each) fills row 1, then "x".
    let (_, out) = feed(&mut editor, size, "abcdefgh漢字漢字x".as_bytes());
    let shown = screen(size, &out);
    assert_eq!(
        rows(&shown)[..3],
        ["> abcdefgh", "  漢字漢字", "  x"],
        "{:?}",
        rows(&shown)
    );
    assert_eq!(shown.screen().cursor_position(), (2, 3));

    // Home: the cursor goes to the first character; a second line of input below too.
    let (_, more) = feed(&mut editor, size, b"\x01");
    let shown = screen(size, &[out.as_slice(), &more].concat());
    assert_eq!(shown.screen().cursor_position(), (0, 2));

    // A wide character that does not fit the row's last column goes to the next row.
    let mut editor = LineEditor::new("> ");
    let (_, out) = feed(&mut editor, size, "abcdefg漢".as_bytes());
    let shown = screen(size, &out);
    assert_eq!(
        rows(&shown)[..2],
        ["> abcdefg", "  漢"],
        "{:?}",
        rows(&shown)
    );
    assert_eq!(shown.screen().cursor_position(), (1, 4));
}

#[test]
fn redraws_replace_the_area_wherever_it_started_and_erase_takes_it_away() {
    let size = TermSize { cols: 10, rows: 6 };
    let mut editor = LineEditor::new("> ");
    let mut out = b"earlier\r\n".to_vec();
    let (_, typed) = feed(&mut editor, size, b"abcdefghijklmnop");
    out.extend(typed);
    let (_, shorter) = feed(&mut editor, size, b"\x15short");
    out.extend(shorter);
    let shown = screen(size, &out);
    assert_eq!(
        rows(&shown)[..3],
        ["earlier", "> short", ""],
        "{:?}",
        rows(&shown)
    );
    let mut erase = Vec::new();
    editor.erase(&mut erase);
    out.extend(erase);
    out.extend(b"a note\r\n");
    editor.redraw(size, &mut out);
    let shown = screen(size, &out);
    assert_eq!(
        rows(&shown)[..3],
        ["earlier", "a note", "> short"],
        "{:?}",
        rows(&shown)
    );
}

#[test]
fn a_text_taller_than_the_screen_shows_the_rows_around_the_cursor() {
    let size = TermSize { cols: 10, rows: 4 };
    let mut editor = LineEditor::new("> ");
    let (_, out) = feed(&mut editor, size, b"\x1b[200~1\n2\n3\n4\n5\n6\x1b[201~");
    let shown = screen(size, &out);
    // Three rows (one is kept free), the last ones, the first marked as continued.
    assert_eq!(
        rows(&shown)[..3],
        ["… 4", "  5", "  6"],
        "{:?}",
        rows(&shown)
    );
    assert_eq!(shown.screen().cursor_position(), (2, 3));
}

/// Bytes that exercise the editor: keys, sequences, pastes, text of every width.
fn input_strategy() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"\x1b[A".to_vec()),
        Just(b"\x1b[B".to_vec()),
        Just(b"\x1b[C".to_vec()),
        Just(b"\x1b[D".to_vec()),
        Just(b"\x1b[3~".to_vec()),
        Just(b"\x1b[200~".to_vec()),
        Just(b"\x1b[201~".to_vec()),
        Just(vec![0x01]),
        Just(vec![0x03]),
        Just(vec![0x04]),
        Just(vec![0x05]),
        Just(vec![0x0b]),
        Just(vec![0x15]),
        Just(vec![0x17]),
        Just(vec![0x7f]),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just("漢é\u{301}".as_bytes().to_vec()),
        "[a-z ]{1,12}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 1..6),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

proptest! {
    #[test]
    fn any_chunking_gives_the_same_prompts_and_line(
        input in input_strategy(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let mut whole = LineEditor::new("> ");
        let (expected, _) = feed(&mut whole, SIZE, &input);

        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
        points.sort_unstable();
        let mut scanner = InputScanner::new();
        let mut editor = LineEditor::new("> ");
        let mut actions = Vec::new();
        let mut out = Vec::new();
        let mut start = 0;
        for end in points.into_iter().chain([input.len()]) {
            for event in scanner.feed(&input[start..end]) {
                match editor.handle(&event, SIZE, &mut out) {
                    EditorAction::None => {}
                    action => actions.push(action),
                }
            }
            start = end;
        }
        for event in scanner.flush_idle() {
            match editor.handle(&event, SIZE, &mut out) {
                EditorAction::None => {}
                action => actions.push(action),
            }
        }
        prop_assert_eq!(actions, expected);
        prop_assert_eq!(editor.text(), whole.text());
    }

    #[test]
    fn any_input_at_any_size_draws_the_line_and_its_cursor_inside_the_screen(
        input in input_strategy(),
        cols in 1u16..40,
        rows in 1u16..10,
    ) {
        let size = TermSize { cols, rows };
        let mut editor = LineEditor::new("> ");
        let (_, out) = feed(&mut editor, size, &input);
        let mut parser = vt100::Parser::new(nz(rows), nz(cols), 0);
        parser.process(&out);
        let (row, col) = parser.screen().cursor_position();
        prop_assert!(row < rows && col < cols, "cursor {row},{col} in {cols}x{rows}");
        // The line's printable ASCII all shows when it fits the screen.
        let text = editor.text();
        let simple = text.chars().all(|c| c.is_ascii_graphic());
        if simple && cols >= 4 && rows >= 2 && text.len() + 2 < usize::from(cols) {
            let shown = parser.screen().contents();
            prop_assert!(shown.contains(&text), "{text:?} not in {shown:?}");
        }
    }
}
