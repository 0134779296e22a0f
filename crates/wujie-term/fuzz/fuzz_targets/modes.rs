//! The mode tracker never panics on any output; chunking does not matter; leaving its modes
//! returns a terminal to its defaults, and restoring them on one gives the same modes back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wujie_term::TerminalModes;

fuzz_target!(|data: &[u8]| {
    let [step, output @ ..] = data else {
        return;
    };
    let mut whole = TerminalModes::new();
    let mut chunked = TerminalModes::new();
    whole.feed(output);
    for chunk in output.chunks(usize::from(*step).max(1)) {
        chunked.feed(chunk);
    }
    assert_eq!(whole, chunked);

    chunked.feed(b"\x18");
    chunked.feed(&whole.leave());
    assert!(chunked.is_default());
    let mut again = TerminalModes::new();
    again.feed(&whole.restore());
    assert_eq!(again.restore(), whole.restore());
});
