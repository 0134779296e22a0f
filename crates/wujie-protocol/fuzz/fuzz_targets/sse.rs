//! Any bytes as a server-sent event stream: the decoder never panics, and gives the same events
//! (and refusals of events over its limit) fed whole or in chunks chosen by the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wujie_protocol::sse::{SseDecoder, SseItem};

const LIMIT: usize = 1024;

fn decode(stream: &[u8], step: usize) -> Vec<SseItem> {
    let mut decoder = SseDecoder::new(LIMIT);
    let mut items = Vec::new();
    for chunk in stream.chunks(step) {
        items.extend(decoder.feed(chunk));
    }
    items
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let whole = decode(stream, stream.len().max(1));
    assert_eq!(decode(stream, usize::from(step % 16) + 1), whole);
});
