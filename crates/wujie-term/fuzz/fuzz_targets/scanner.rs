//! The scanner never panics, forwards every byte unchanged, and gives the same events whether
//! the input comes whole or in the chunks the first bytes choose; the line tracker and trigger
//! detector accept whatever it emits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::time::Duration;
use wujie_term::{
    InputEvent, InputKind, InputLine, InputScanner, Key, ReplyKind, TermSize, TriggerDetector,
    cursor_report,
};

fn run(chunks: &[&[u8]]) -> Vec<InputEvent> {
    let mut scanner = InputScanner::new();
    let mut events = Vec::new();
    for chunk in chunks {
        scanner.feed_into(chunk, &mut events);
    }
    events.extend(scanner.flush_idle());
    events
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let whole = run(&[input]);
    let forwarded: Vec<u8> = whole.iter().flat_map(|e| e.bytes.iter().copied()).collect();
    assert_eq!(forwarded, input);
    let chunks: Vec<&[u8]> = input.chunks(usize::from(step).max(1)).collect();
    assert_eq!(run(&chunks), whole);

    let mut line = InputLine::new();
    let mut detector = TriggerDetector::new();
    for (i, event) in whole.iter().enumerate() {
        let now = Duration::from_millis(u64::try_from(i).unwrap_or(u64::MAX));
        line.apply(event);
        if event.bytes.len() % 5 == 0 {
            detector.on_repaint_due(line.trigger_query(), now);
        } else {
            detector.on_input(line.trigger_query(), now);
        }
        if event.bytes.len() % 3 == 0 {
            detector.on_adapter_output(now);
        }
        let _ = detector.poll(now);
        let _ = Key::decode(&event.bytes);
        if event.kind == InputKind::Reply(ReplyKind::CursorPosition) {
            let size = TermSize { cols: u16::from(step), rows: u16::from(step / 2) };
            if let Some(pos) = cursor_report(&event.bytes, size) {
                assert!(pos.row < size.rows.max(1) && pos.col < size.cols.max(1));
            }
        }
    }
});
