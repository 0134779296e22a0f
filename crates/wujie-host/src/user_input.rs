//! The user's stdin, read on a thread of its own.
//!
//! A thread does blocking reads so that a keystroke reaches the channel as soon as the kernel
//! has it (no hop through the runtime's blocking pool), and a read that never returns cannot hold
//! up the runtime's shutdown. It waits in `poll` for stdin or for its owner to go away, and reads
//! only when stdin has something: once the owner is dropped it stops without reading again, so a
//! key typed after the session (while `wujie` syncs its last events, say) stays in the terminal
//! for whatever reads it next — the shell, or a later prompt.

use std::io::{PipeReader, PipeWriter};

use rustix::io::Errno;
use tokio::sync::mpsc;

use crate::stop_pipe::{Woken, wait_readable};

/// Chunks of the user's stdin as they arrive; dropping this ends the reader thread.
pub struct UserInput {
    /// `None` from the thread means end of input (or a read error).
    chunks: mpsc::Receiver<Option<Vec<u8>>>,
    /// Closed (dropped with this) to wake the thread from its `poll` and end it.
    _stop: Option<PipeWriter>,
}

impl UserInput {
    /// Starts the reader thread. If the thread cannot start, the input reads as ended at once.
    pub fn spawn() -> UserInput {
        let (tx, chunks) = mpsc::channel(16);
        let stop = match std::io::pipe() {
            Ok((stop_rx, stop)) => std::thread::Builder::new()
                .name("wujie-stdin".into())
                .spawn(move || read_until_stopped(&stop_rx, &tx))
                .map(|_| stop)
                .map_err(|e| tracing::warn!("could not start the stdin reader: {e}"))
                .ok(),
            Err(e) => {
                tracing::warn!("could not start the stdin reader: {e}");
                None
            }
        };
        UserInput {
            chunks,
            _stop: stop,
        }
    }

    /// The next chunk the user typed or piped; `None` once the input ended.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        self.chunks.recv().await.flatten()
    }
}

fn read_until_stopped(stop: &PipeReader, tx: &mpsc::Sender<Option<Vec<u8>>>) {
    let stdin = std::io::stdin();
    let mut buf = vec![0u8; 8192];
    loop {
        match wait_readable(&stdin, stop) {
            // The owner is gone: leave whatever is typed now to the next reader.
            Ok(Woken::Stopped) => return,
            // When poll itself fails, the read reports what is wrong with stdin.
            Ok(Woken::Readable) | Err(_) => {}
        }
        match rustix::io::read(&stdin, &mut buf) {
            Err(Errno::INTR | Errno::AGAIN) => {}
            // End of input, or stdin is closed or unusable (POLLNVAL/POLLERR land here too).
            Ok(0) | Err(_) => {
                let _ = tx.blocking_send(None);
                return;
            }
            Ok(n) => {
                if tx.blocking_send(Some(buf[..n].to_vec())).is_err() {
                    return;
                }
            }
        }
    }
}
