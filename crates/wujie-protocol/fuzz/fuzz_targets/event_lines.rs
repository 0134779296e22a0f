//! Any bytes as adapter stdout: the decoder never panics, gives the same results fed whole or in
//! chunks chosen by the input, and every event it yields re-encodes to a line parsing back to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wujie_protocol::event::{LineDecoder, parse_line};

/// Small, so that too-long lines and the skipping after them are exercised too.
const LIMIT: usize = 256;

fuzz_target!(|data: &[u8]| {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let step = usize::from(step % 32) + 1;

    let mut whole = LineDecoder::new(LIMIT);
    let mut expected = whole.feed(stream);
    expected.extend(whole.finish());

    let mut chunked = LineDecoder::new(LIMIT);
    let mut got = Vec::new();
    for chunk in stream.chunks(step) {
        got.extend(chunked.feed(chunk));
    }
    got.extend(chunked.finish());
    assert_eq!(got, expected);

    for line in expected.into_iter().flatten() {
        for event in line.events {
            let encoded = event.encode_line();
            assert_eq!(
                parse_line(&encoded[..encoded.len() - 1], 1),
                Ok(vec![event])
            );
        }
    }
});
