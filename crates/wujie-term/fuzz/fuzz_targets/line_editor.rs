//! The conversation line editor with arbitrary input at arbitrary sizes never panics, and its
//! cursor stays within the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wujie_term::{EditorAction, InputScanner, LineEditor, TermSize};

fuzz_target!(|data: &[u8]| {
    let (Some(&cols), Some(&rows)) = (data.first(), data.get(1)) else {
        return;
    };
    let size = TermSize { cols: u16::from(cols), rows: u16::from(rows) };
    let mut scanner = InputScanner::new();
    let mut editor = LineEditor::new("> ");
    let mut out = Vec::new();
    // Cut the input where it has a zero byte, with an idle flush there, as a slow terminal would.
    for piece in data[2..].split(|&b| b == 0) {
        let mut events = scanner.feed(piece);
        events.extend(scanner.flush_idle());
        for event in &events {
            if let EditorAction::Eof = editor.handle(event, size, &mut out) {
                editor.redraw(size, &mut out);
            }
            assert!(editor.cursor() <= editor.text().chars().count());
        }
        editor.erase(&mut out);
        editor.redraw(size, &mut out);
        out.clear();
    }
});
