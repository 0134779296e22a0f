//! A vt100 model of what the user's screen shows, parsed on a thread of its own.
//!
//! The host needs the model only now and then (to place the overlay at the adapter's cursor,
//! and while the trigger waits for an echo), but every byte the adapter prints has to go
//! through it. Parsing on the relay's path cost about a fifth of its throughput; here the relay
//! only hands the bytes over, and a question about the screen waits for the parser to catch up.
//! The queue is bounded, so an adapter that prints faster than the parser can follow is slowed
//! down (its PTY is not read) rather than buffered without limit.

use std::num::NonZeroU16;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use wujie_term::TermSize;

/// Chunks of output the parser may lag behind (each one read of the PTY, at most 64 KiB).
const QUEUE: usize = 32;

enum Op {
    Bytes(Vec<u8>),
    Resize(TermSize),
    Snapshot(SyncSender<vt100::Screen>),
}

pub struct ShadowScreen {
    ops: Option<SyncSender<Op>>,
    parser: Option<JoinHandle<()>>,
}

fn nonzero(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN)
}

impl ShadowScreen {
    pub fn new(size: TermSize) -> ShadowScreen {
        let (ops, rx) = sync_channel(QUEUE);
        let parser = std::thread::Builder::new()
            .name("wujie-shadow-screen".to_owned())
            .spawn(move || parse(rx, size))
            .ok();
        ShadowScreen {
            // Without a thread there is no model: questions about the screen get no answer and
            // the overlay is simply not offered.
            ops: parser.is_some().then_some(ops),
            parser,
        }
    }

    /// Bytes the screen was sent; waits only when the parser is `QUEUE` chunks behind.
    pub fn feed(&self, bytes: &[u8]) {
        if let Some(ops) = &self.ops {
            let _ = ops.send(Op::Bytes(bytes.to_vec()));
        }
    }

    pub fn resize(&self, size: TermSize) {
        if let Some(ops) = &self.ops {
            let _ = ops.send(Op::Resize(size));
        }
    }

    /// The screen once everything fed so far is parsed.
    pub fn screen(&self) -> Option<vt100::Screen> {
        let (reply, answer) = sync_channel(1);
        self.ops.as_ref()?.send(Op::Snapshot(reply)).ok()?;
        answer.recv().ok()
    }
}

impl Drop for ShadowScreen {
    fn drop(&mut self) {
        // Closing the queue ends the parser once it has drained it.
        self.ops.take();
        if let Some(parser) = self.parser.take() {
            let _ = parser.join();
        }
    }
}

fn parse(ops: Receiver<Op>, size: TermSize) {
    let mut parser = vt100::Parser::new(nonzero(size.rows), nonzero(size.cols), 0);
    for op in ops {
        match op {
            Op::Bytes(bytes) => parser.process(&bytes),
            Op::Resize(size) => parser
                .screen_mut()
                .set_size(nonzero(size.rows), nonzero(size.cols)),
            Op::Snapshot(reply) => {
                let _ = reply.send(parser.screen().clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_answered_after_everything_fed_before_them() {
        let shadow = ShadowScreen::new(TermSize { rows: 5, cols: 20 });
        for i in 0..200 {
            shadow.feed(format!("line {i}\r\n").as_bytes());
        }
        shadow.feed(b"last");
        let screen = shadow.screen().expect("a parser thread");
        assert_eq!(screen.cursor_position(), (4, 4));
        assert!(screen.contents().ends_with("line 199\nlast"));

        shadow.resize(TermSize { rows: 3, cols: 10 });
        let (rows, cols) = shadow.screen().unwrap().size();
        assert_eq!((rows.get(), cols.get()), (3, 10));
    }
}
