//! Any bytes as an adapter's stdin: the splitter never panics, gives the same result fed whole or
//! in chunks chosen by the input, never loses ordinary input bytes, and every decision it reads
//! re-encodes to a frame that reads back as the same decision.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wujie_protocol::control::{ControlFrameSplitter, StdinChunk};

fn split(stream: &[u8], step: usize) -> (Vec<u8>, Vec<StdinChunk>) {
    let mut splitter = ControlFrameSplitter::new();
    let mut out = Vec::new();
    for chunk in stream.chunks(step) {
        out.extend(splitter.feed(chunk));
    }
    out.extend(splitter.finish());
    let mut input = Vec::new();
    let mut frames = Vec::new();
    for chunk in out {
        match chunk {
            StdinChunk::Input(bytes) => {
                assert!(!bytes.is_empty(), "no empty input chunks");
                input.extend(bytes);
            }
            frame => frames.push(frame),
        }
    }
    (input, frames)
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let (input, frames) = split(stream, stream.len().max(1));
    assert_eq!(
        split(stream, usize::from(step % 16) + 1),
        (input.clone(), frames.clone())
    );
    assert!(input.len() <= stream.len());

    for frame in frames {
        if let StdinChunk::Frame(Ok(decision)) = frame {
            let (rest, again) = split(&decision.encode_frame(), usize::MAX);
            assert!(rest.is_empty());
            assert_eq!(again, vec![StdinChunk::Frame(Ok(decision))]);
        }
    }
});
