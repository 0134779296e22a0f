//! `text::terminal_safe` against a terminal's parser (vte): whatever the stored text, the
//! terminal only prints characters and, in a block, breaks lines and tabs.

use proptest::prelude::*;
use wujie_term::text::{Layout, terminal_safe};

/// What a terminal does with the bytes: characters it prints, controls it executes, and
/// sequences it dispatches (which must never happen).
#[derive(Default)]
struct Effects {
    printed: String,
    executed: Vec<u8>,
    sequences: usize,
}

impl vte::Perform for Effects {
    fn print(&mut self, c: char) {
        self.printed.push(c);
    }
    fn execute(&mut self, byte: u8) {
        self.executed.push(byte);
        self.printed.push(char::from(byte));
    }
    fn hook(&mut self, _: &vte::Params, _: &[u8], _: bool, _: char) {
        self.sequences += 1;
    }
    fn osc_dispatch(&mut self, _: &[&[u8]], _: bool) {
        self.sequences += 1;
    }
    fn csi_dispatch(&mut self, _: &vte::Params, _: &[u8], _: bool, _: char) {
        self.sequences += 1;
    }
    fn esc_dispatch(&mut self, _: &[u8], _: bool, _: u8) {
        self.sequences += 1;
    }
}

fn effects(text: &str) -> Effects {
    let mut parser = vte::Parser::new();
    let mut effects = Effects::default();
    parser.advance(&mut effects, text.as_bytes());
    effects
}

/// Text with many controls, escape sequences, C1 and bidi characters among ordinary ones.
fn hostile_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<char>().prop_map(String::from),
        (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap().to_string()),
        (0x7fu32..0xa0).prop_map(|c| char::from_u32(c).unwrap().to_string()),
        Just("\x1b]0;pwned\x07".to_owned()),
        Just("\x1b[2J\x1b[H".to_owned()),
        Just("\x1bP1;2q\x1b\\".to_owned()),
        Just("\r\n".to_owned()),
        Just("\u{202e}".to_owned()),
        "[a-z ]{0,8}",
    ];
    prop::collection::vec(piece, 0..24).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn a_block_only_prints_and_breaks_lines(text in hostile_text()) {
        let safe = terminal_safe(&text, Layout::Block);
        let seen = effects(&safe);
        prop_assert_eq!(seen.sequences, 0, "{:?}", safe);
        prop_assert!(seen.executed.iter().all(|b| *b == b'\n' || *b == b'\t'), "{:?}", safe);
        prop_assert_eq!(&seen.printed, safe.as_ref());
    }

    #[test]
    fn inline_text_only_prints(text in hostile_text()) {
        let safe = terminal_safe(&text, Layout::Inline);
        let seen = effects(&safe);
        prop_assert_eq!(seen.sequences, 0, "{:?}", safe);
        prop_assert!(seen.executed.is_empty(), "{:?}", safe);
        prop_assert!(!safe.chars().any(|c| c.is_control()), "{:?}", safe);
    }

    #[test]
    fn every_safe_character_is_kept_in_order(text in hostile_text()) {
        let safe = terminal_safe(&text, Layout::Block);
        let mut rest = safe.chars();
        for c in text.chars().filter(|c| !c.is_control() && !('\u{202a}'..='\u{2069}').contains(c)) {
            prop_assert!(rest.any(|d| d == c), "{:?} lost {:?}: {:?}", text, c, safe);
        }
    }

    #[test]
    fn text_without_controls_is_unchanged(text in "[^\\p{Cc}\u{202a}-\u{202e}\u{2066}-\u{2069}]{0,40}") {
        prop_assert_eq!(terminal_safe(&text, Layout::Inline), text.as_str());
        prop_assert_eq!(terminal_safe(&text, Layout::Block), text.as_str());
    }
}
