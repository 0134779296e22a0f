//! The modes an adapter set, followed through its output: what leaving them and setting them
//! again writes, for each kind of mode; vt100 as the oracle for the modes it knows; any
//! chunking of the same output gives the same modes; leaving returns a terminal to its
//! defaults, and restoring on a terminal in its defaults gives back the same modes.

use proptest::prelude::*;
use wujie_term::{KITTY_STACK_CAP, TerminalModes};

fn modes_after(output: &[u8]) -> TerminalModes {
    let mut modes = TerminalModes::new();
    modes.feed(output);
    modes
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace('\x1b', "ESC")
}

#[test]
fn a_full_screen_agent_is_left_to_the_main_screen_with_the_cursor_shown_and_mouse_off() {
    let modes = modes_after(
        b"\x1b[?1049h\x1b[?25l\x1b[?1000;1006h\x1b[?2004h\x1b[?1004hhello\x1b[2J\x1b[?1002h",
    );
    assert!(modes.alternate_screen() && modes.cursor_hidden() && modes.mouse());
    assert_eq!(
        text(&modes.leave()),
        "ESC[?1049lESC[?1002lESC[?1006lESC[?1004lESC[?2004lESC[?25h"
    );
    assert_eq!(
        text(&modes.restore()),
        "ESC[?25lESC[?2004hESC[?1004hESC[?1006hESC[?1002hESC[?1049h"
    );
}

#[test]
fn a_terminal_in_its_defaults_needs_nothing() {
    let modes = modes_after(b"plain text\r\n\x1b[1;31mred\x1b[0m\x1b[?25l\x1b[?25h");
    assert!(modes.is_default());
    assert!(modes.leave().is_empty() && modes.restore().is_empty());
    assert!(TerminalModes::new().is_default());
}

#[test]
fn modes_turned_off_again_are_not_left_or_restored() {
    let modes = modes_after(b"\x1b[?1049h\x1b[?1003h\x1b[?2004h\x1b[?1003l\x1b[?2004l\x1b[?1049l");
    assert!(modes.is_default(), "{:?}", text(&modes.leave()));
}

#[test]
fn resetting_any_mouse_tracking_mode_turns_tracking_off() {
    assert!(!modes_after(b"\x1b[?1003h\x1b[?1000l").mouse());
    assert_eq!(
        text(&modes_after(b"\x1b[?1000h\x1b[?1002h").leave()),
        "ESC[?1002l"
    );
}

#[test]
fn the_alternate_screen_comes_back_the_way_it_was_entered() {
    assert_eq!(text(&modes_after(b"\x1b[?47h").leave()), "ESC[?47l");
    assert_eq!(text(&modes_after(b"\x1b[?1047h").restore()), "ESC[?1047h");
}

#[test]
fn keypad_cursor_keys_and_soft_reset() {
    let modes = modes_after(b"\x1b=\x1b[?1h");
    assert_eq!(text(&modes.leave()), "ESC[?1lESC>");
    assert_eq!(text(&modes.restore()), "ESC=ESC[?1h");
    assert!(modes_after(b"\x1b=\x1b[?1h\x1b[?25l\x1b[!p").is_default());
    assert!(modes_after(b"\x1b[?1049h\x1b[?2004h\x1b=\x1bc").is_default());
}

#[test]
fn kitty_keyboard_flags_are_popped_per_screen_and_pushed_again() {
    // Pushed on the main screen, then on the alternate one.
    let modes = modes_after(b"\x1b[>1u\x1b[?1049h\x1b[>3u\x1b[>11u\x1b[<u\x1b[=5;2u");
    assert_eq!(
        text(&modes.leave()),
        "ESC[<1uESC[?1049lESC[<1u",
        "the alternate screen's flags before it is left, then the main screen's"
    );
    assert_eq!(
        text(&modes.restore()),
        "ESC[>1uESC[?1049hESC[>7u",
        "3 with 5 added"
    );
    assert!(modes_after(b"\x1b[>1u\x1b[>2u\x1b[<2u").is_default());
    // Set with nothing pushed.
    let set = modes_after(b"\x1b[=9u\x1b[=1;3u");
    assert_eq!(text(&set.restore()), "ESC[=8;1u");
    assert_eq!(text(&set.leave()), "ESC[=0;1u");
}

#[test]
fn the_kitty_stack_keeps_the_newest_entries() {
    let mut modes = TerminalModes::new();
    for flags in 0..40 {
        modes.feed(format!("\x1b[>{flags}u").as_bytes());
    }
    assert_eq!(text(&modes.leave()), format!("ESC[<{KITTY_STACK_CAP}u"));
    let restore = text(&modes.restore());
    assert!(
        restore.starts_with("ESC[>24u") && restore.ends_with("ESC[>39u"),
        "{restore}"
    );
}

#[test]
fn modify_other_keys_is_turned_off_and_on_again() {
    let modes = modes_after(b"\x1b[>4;2m");
    assert_eq!(text(&modes.leave()), "ESC[>4;0m");
    assert_eq!(text(&modes.restore()), "ESC[>4;2m");
    assert!(modes_after(b"\x1b[>4;2m\x1b[>4n").is_default());
    assert!(modes_after(b"\x1b[>4;1m\x1b[>4m").is_default());
    // Other resources are not modifyOtherKeys.
    assert!(modes_after(b"\x1b[>1;2m").is_default());
}

#[test]
fn synchronized_output_left_on_is_ended() {
    let modes = modes_after(b"\x1b[?2026h frame");
    assert_eq!(text(&modes.leave()), "ESC[?2026l");
}

#[test]
fn strings_are_skipped_to_their_end() {
    // A title, a DCS query and an APC whose bodies would read as the keypad's ESC = / ESC >,
    // or a CSI sequence's final byte, if they were not skipped.
    let modes = modes_after(
        b"\x1b]0;=[?1049h\x07\x1bP=1s[?25l\x1b\\\x1b_G>a=T\x1b\\\x1b]2;x\x1b\\\x1b[?2004h",
    );
    assert!(!modes.alternate_screen() && !modes.cursor_hidden());
    assert_eq!(text(&modes.leave()), "ESC[?2004l");
    // ESC ends a string, as terminals have it: what tmux's passthrough wraps (doubling its
    // ESC) reaches the terminal outside.
    let wrapped = modes_after(b"\x1bPtmux;\x1b\x1b[?1049h\x1b\\");
    assert!(wrapped.alternate_screen());
}

#[test]
fn cancelled_and_overlong_sequences_set_nothing() {
    assert!(modes_after(b"\x1b[?1049\x18h\x1b[?25\x1al").is_default());
    let long = format!("\x1b[?{}1049h", "0".repeat(100));
    assert!(modes_after(long.as_bytes()).is_default());
    // A sequence cut by an escape starts over.
    assert!(modes_after(b"\x1b[?10\x1b[?2004h").leave() == b"\x1b[?2004l");
}

fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => "[a-z \r\n]{1,10}".prop_map(String::into_bytes),
        1 => Just("中文".as_bytes().to_vec()),
        6 => (
            prop::sample::select(vec![1u16, 25, 47, 1049, 9, 1000, 1002, 1003, 1005, 1006, 1015,
                1016, 1004, 2004, 2026, 6, 7]),
            any::<bool>(),
        )
            .prop_map(|(mode, on)| format!("\x1b[?{mode}{}", if on { 'h' } else { 'l' }).into_bytes()),
        2 => prop::sample::select(vec![
            &b"\x1b="[..], b"\x1b>", b"\x1bc", b"\x1b[0m", b"\x1b[?1;25;1049h", b"\x1b[?2004;1l",
            b"\x1b]0;t\x1b[?25l\x07", b"\x1bP+q\x1b\\", b"\x1b7", b"\x1b(0", b"\x1b[2J",
            b"\x1b[?6n", b"\x1b[!p", b"\x1b[>4;2m", b"\x1b[>4n", b"\x1b[>1u", b"\x1b[<u",
            b"\x1b[=3;2u", b"\x1b[<5u", b"\x18", b"\x1b",
        ])
        .prop_map(<[u8]>::to_vec),
        1 => (1u16..40).prop_map(|f| format!("\x1b[>{f}u").into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 1..8),
    ]
}

fn output() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(piece(), 0..40).prop_map(|pieces| pieces.concat())
}

/// The modes vt100 knows, as it sees them after `output`.
fn vt100_view(output: &[u8]) -> (bool, bool, bool, bool, bool) {
    let size = |n| std::num::NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new(size(24), size(80), 0);
    parser.process(output);
    let s = parser.screen();
    (
        s.alternate_screen(),
        s.hide_cursor(),
        s.application_keypad(),
        s.application_cursor(),
        s.bracketed_paste(),
    )
}

proptest! {
    #[test]
    fn any_chunking_gives_the_same_modes(output in output(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8)) {
        let whole = modes_after(&output);
        let mut at: Vec<usize> = cuts.iter().map(|c| c.index(output.len() + 1)).collect();
        at.sort_unstable();
        let mut chunked = TerminalModes::new();
        let mut from = 0;
        for cut in at.into_iter().chain([output.len()]) {
            chunked.feed(&output[from..cut]);
            from = cut;
        }
        prop_assert_eq!(&chunked, &whole);
        let mut bytewise = TerminalModes::new();
        for byte in &output {
            bytewise.feed(std::slice::from_ref(byte));
        }
        prop_assert_eq!(&bytewise, &whole);
    }

    #[test]
    fn leaving_returns_to_the_defaults_and_restoring_gives_the_same_modes(output in output()) {
        let modes = modes_after(&output);
        // What the terminal sees: the output, then the way out of its modes.
        let mut left = modes_after(&output);
        left.feed(b"\x18"); // ends whatever the output left unfinished
        left.feed(&modes.leave());
        prop_assert!(left.is_default(), "{:?}", text(&left.leave()));
        let again = modes_after(&modes.restore());
        prop_assert_eq!(text(&again.leave()), text(&modes.leave()));
        prop_assert_eq!(text(&again.restore()), text(&modes.restore()));
    }

    #[test]
    fn the_modes_vt100_knows_agree_with_it(output in output()) {
        // vt100 neither knows ?1047 nor a soft reset; mouse modes it resets only when the
        // same one is reset.
        let modes = modes_after(&output);
        let (alt, hidden, keypad, cursor_keys, paste) = vt100_view(&output);
        let unknown = output.windows(3).any(|w| w == b"!p" as &[u8] || w == b"\x1b[!")
            || output.windows(4).any(|w| w == b"1047");
        prop_assume!(!unknown);
        prop_assert_eq!(modes.alternate_screen(), alt);
        prop_assert_eq!(modes.cursor_hidden(), hidden);
        let leave = text(&modes.leave());
        prop_assert_eq!(leave.contains("ESC>"), keypad);
        prop_assert_eq!(leave.contains("ESC[?1l"), cursor_keys);
        prop_assert_eq!(leave.contains("ESC[?2004l"), paste);
    }
}
