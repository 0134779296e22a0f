//! Input line tracking and trigger timing.

use std::time::Duration;
use wujie_term::{
    ECHO_WAIT, InputEvent, InputKind, InputLine, InputScanner, REPAINT_SILENCE, REPAINT_WAIT,
    SETTLE_LIMIT, SILENCE, TriggerAction, TriggerDetector,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Feeds `input` through a scanner into `line` and returns the events.
fn type_into(line: &mut InputLine, input: &[u8]) -> Vec<InputEvent> {
    let events = InputScanner::new().feed(input);
    for event in &events {
        line.apply(event);
    }
    events
}

fn line_after(input: &[u8]) -> InputLine {
    let mut line = InputLine::new();
    type_into(&mut line, input);
    line
}

#[test]
fn typed_trigger_and_query() {
    assert_eq!(line_after(b"/wuji").trigger_query(), None);
    assert_eq!(line_after(b"/wujie").trigger_query(), Some(""));
    assert_eq!(line_after(b"/wujiec").trigger_query(), Some("c"));
    assert_eq!(line_after(b"/wujiex\x7f").trigger_query(), Some(""));
    assert_eq!(line_after(b"/wujie \x7f").trigger_query(), Some(""));
    assert_eq!(line_after(b"/wujie now").trigger_query(), None);
    assert_eq!(line_after(b"x/wujie").trigger_query(), None);
    assert_eq!(
        line_after("/wujie中".as_bytes()).trigger_query(),
        Some("中")
    );
}

#[test]
fn enter_ctrl_c_and_ctrl_u_start_a_fresh_line() {
    for clear in [&b"\r"[..], b"\n", b"\x03", b"\x15"] {
        let line = line_after(&[b"hello ", clear, b"/wujie"].concat());
        assert_eq!(line.text(), Some("/wujie"));
        assert_eq!(line.trigger_query(), Some(""));
    }
}

#[test]
fn editing_keys_make_the_line_unknown_until_cleared() {
    for key in [&b"\x1b[D"[..], b"\x1bOA", b"\t", b"\x1bb", b"\x17"] {
        let mut line = line_after(&[b"/wu", key, b"jie"].concat());
        assert_eq!(line.text(), None, "{key:?}");
        assert_eq!(line.trigger_query(), None);
        type_into(&mut line, b"\r/wujie");
        assert_eq!(line.trigger_query(), Some(""));
    }
}

#[test]
fn replies_strings_focus_and_mouse_never_change_the_line() {
    let line =
        line_after(b"/wu\x1b[24;80R\x1b]11;rgb:0/0/0\x07\x1b[I\x1b[<0;3;4M\x1b[?64c\x1b[M !!jie");
    assert_eq!(line.text(), Some("/wujie"));
}

#[test]
fn paste_counts_only_after_its_end_marker() {
    let mut line = InputLine::new();
    let events = type_into(&mut line, b"\x1b[200~/wujie\x1b[201~");
    assert_eq!(
        events[0].kind,
        InputKind::Paste {
            starts: true,
            complete: true
        }
    );
    assert_eq!(line.trigger_query(), Some(""));

    // A paste arriving in pieces: no trigger until the piece with the end marker.
    let mut line = InputLine::new();
    line.apply(&InputEvent {
        kind: InputKind::Paste {
            starts: true,
            complete: false,
        },
        bytes: b"\x1b[200~/wujie".to_vec(),
    });
    assert_eq!(line.text(), Some("/wujie"));
    assert_eq!(line.trigger_query(), None);
    line.apply(&InputEvent {
        kind: InputKind::Paste {
            starts: false,
            complete: true,
        },
        bytes: b"c\x1b[201~".to_vec(),
    });
    assert_eq!(line.trigger_query(), Some("c"));

    // A pasted newline is content, and the line is no longer a bare trigger.
    assert_eq!(
        line_after(b"\x1b[200~/wujie\nx\x1b[201~").trigger_query(),
        None
    );
}

#[test]
fn clear_after_the_host_erased_the_trigger() {
    let mut line = line_after(b"\x1b[A/wujie");
    assert_eq!(line.text(), None);
    line.clear();
    assert_eq!(line.text(), Some(""));
}

fn open(query: &str, echoed: bool) -> Option<TriggerAction> {
    Some(TriggerAction::OpenMenu {
        query: query.to_owned(),
        echoed,
    })
}

#[test]
fn opens_after_echo_and_ten_ms_of_silence() {
    let mut d = TriggerDetector::new();
    d.on_input(Some(""), ms(1000));
    assert_eq!(d.next_deadline(), Some(ms(1000) + ECHO_WAIT));
    assert_eq!(d.poll(ms(1010)), None);
    d.on_adapter_output(ms(1020));
    assert_eq!(d.next_deadline(), Some(ms(1020) + SILENCE));
    assert_eq!(d.poll(ms(1029)), None);
    assert_eq!(d.poll(ms(1030)), open("", true));
    assert!(d.is_open());
    assert_eq!(d.poll(ms(2000)), None);
    assert_eq!(d.next_deadline(), None);
}

#[test]
fn output_that_keeps_coming_delays_the_menu_until_silence() {
    let mut d = TriggerDetector::new();
    d.on_input(Some(""), ms(0));
    for t in (5..=200).step_by(5) {
        d.on_adapter_output(ms(t));
        assert_eq!(
            d.poll(ms(t)),
            None,
            "opened at {t} ms while output kept coming"
        );
    }
    assert_eq!(d.poll(ms(209)), None);
    assert_eq!(d.poll(ms(210)), open("", true));
}

#[test]
fn endless_output_opens_at_the_settle_limit() {
    let mut d = TriggerDetector::new();
    d.on_input(Some(""), ms(0));
    let mut t = ms(0);
    while t < SETTLE_LIMIT {
        d.on_adapter_output(t);
        assert_eq!(d.poll(t), None);
        t += ms(3);
    }
    assert_eq!(d.poll(SETTLE_LIMIT), open("", true));
}

#[test]
fn no_output_opens_at_one_hundred_ms() {
    let mut d = TriggerDetector::new();
    d.on_input(Some("c"), ms(500));
    assert_eq!(d.poll(ms(599)), None);
    assert_eq!(d.poll(ms(600)), open("c", false));
}

#[test]
fn after_a_resize_the_menu_waits_for_a_late_repaint_and_its_silence() {
    let mut d = TriggerDetector::new();
    d.on_repaint_due(Some(""), ms(0));
    assert_eq!(d.poll(ECHO_WAIT), None, "not before the repaint");
    d.on_adapter_output(ms(400));
    // A pause between the repaint's frames is not its end.
    assert_eq!(d.poll(ms(400) + SILENCE), None);
    d.on_adapter_output(ms(450));
    assert_eq!(d.poll(ms(450) + REPAINT_SILENCE - ms(1)), None);
    assert_eq!(d.poll(ms(450) + REPAINT_SILENCE), open("", true));
    // An adapter that never repaints gets the menu at the wait's end.
    let mut d = TriggerDetector::new();
    d.on_repaint_due(Some(""), ms(0));
    assert_eq!(d.poll(REPAINT_WAIT - ms(1)), None);
    assert_eq!(d.poll(REPAINT_WAIT), open("", false));
    // A repaint that starts late and keeps coming still has the settle limit after the wait.
    let mut d = TriggerDetector::new();
    d.on_repaint_due(Some(""), ms(0));
    let limit = REPAINT_WAIT + SETTLE_LIMIT;
    let mut t = ms(900);
    while t < limit {
        d.on_adapter_output(t);
        assert_eq!(d.poll(t), None);
        t += ms(3);
    }
    assert_eq!(d.poll(limit), open("", true));
    // A repaint drawn between the resize and the call counts.
    let mut d = TriggerDetector::new();
    d.on_repaint_due(Some(""), ms(0));
    d.on_adapter_output(ms(5));
    assert_eq!(d.poll(ms(5) + REPAINT_SILENCE), open("", true));
    // No trigger on the line: nothing is due.
    let mut d = TriggerDetector::new();
    d.on_repaint_due(None, ms(0));
    assert_eq!(d.next_deadline(), None);
}

#[test]
fn query_follows_the_line_and_leaving_the_trigger_cancels() {
    let mut d = TriggerDetector::new();
    d.on_input(Some(""), ms(0));
    d.on_input(Some("cr"), ms(5));
    assert_eq!(d.poll(ms(100)), open("cr", false));

    let mut d = TriggerDetector::new();
    d.on_input(Some(""), ms(0));
    d.on_input(None, ms(5));
    assert_eq!(d.next_deadline(), None);
    assert_eq!(d.poll(ms(1000)), None);
    // Output without a trigger never opens anything.
    d.on_adapter_output(ms(1001));
    assert_eq!(d.poll(ms(2000)), None);
}

#[test]
fn dismissed_menu_does_not_reopen_until_the_line_changes() {
    let mut d = TriggerDetector::new();
    d.on_input(Some(""), ms(0));
    assert!(d.poll(ms(100)).is_some());
    d.menu_closed();
    assert!(!d.is_open());
    d.on_input(Some(""), ms(200));
    d.on_input(Some("c"), ms(210));
    assert_eq!(d.next_deadline(), None);
    assert_eq!(d.poll(ms(1000)), None);
    // The line was cleared (e.g. the host erased the trigger after a choice): armed again.
    d.on_input(None, ms(1100));
    d.on_input(Some(""), ms(1200));
    assert_eq!(d.poll(ms(1300)), open("", false));
}

#[test]
fn time_near_the_end_of_duration_does_not_panic() {
    let mut d = TriggerDetector::new();
    d.on_input(Some(""), Duration::MAX);
    assert_eq!(d.next_deadline(), Some(Duration::MAX));
    d.on_adapter_output(Duration::MAX);
    assert!(d.poll(Duration::MAX).is_some());
}

#[test]
fn waiting_since_is_the_time_the_trigger_was_reached_until_a_decision() {
    let ms = Duration::from_millis;
    let mut trigger = TriggerDetector::new();
    assert_eq!(trigger.waiting_since(), None);
    trigger.on_input(Some(""), ms(5));
    assert_eq!(trigger.waiting_since(), Some(ms(5)));
    // More typing and the echo keep the first time.
    trigger.on_input(Some("c"), ms(7));
    trigger.on_adapter_output(ms(9));
    assert_eq!(trigger.waiting_since(), Some(ms(5)));
    assert!(trigger.poll(ms(30)).is_some());
    assert_eq!(trigger.waiting_since(), None, "the menu opened");
}
