//! The single writer of the adapter's stdin, a pipe or the master side of its PTY: user input,
//! window sizes and control frames go through it in order.

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot};
use wujie_term::TermSize;

use crate::master::PtyWriter;

/// Where the adapter reads its input: a pipe, or the master side of its PTY.
pub enum StdinSink {
    Pipe(ChildStdin),
    Pty(PtyWriter),
}

/// The single writer of the adapter's stdin: user input and control frames go through it in
/// order, so a frame is never interleaved with other bytes.
#[derive(Clone)]
pub struct AdapterStdin {
    tx: mpsc::Sender<StdinWrite>,
}

enum StdinWrite {
    Bytes(Vec<u8>, Option<oneshot::Sender<()>>),
    /// New window size for the adapter's PTY (ignored for a pipe).
    Resize(TermSize),
    /// Close the pipe: the adapter sees end of input.
    Close,
}

impl AdapterStdin {
    pub fn spawn(sink: Option<StdinSink>) -> AdapterStdin {
        let (tx, mut rx) = mpsc::channel::<StdinWrite>(64);
        tokio::spawn(async move {
            let Some(mut sink) = sink else { return };
            while let Some(write) = rx.recv().await {
                let (bytes, done) = match write {
                    StdinWrite::Bytes(bytes, done) => (bytes, done),
                    StdinWrite::Resize(size) => {
                        if let StdinSink::Pty(pty) = &sink {
                            let _ = pty.resize(size);
                        }
                        continue;
                    }
                    StdinWrite::Close => break,
                };
                let ok = match &mut sink {
                    StdinSink::Pipe(pipe) => {
                        pipe.write_all(&bytes).await.is_ok() && pipe.flush().await.is_ok()
                    }
                    StdinSink::Pty(pty) => pty.write_all(&bytes).await.is_ok(),
                };
                if let Some(done) = done {
                    let _ = done.send(());
                }
                if !ok {
                    break;
                }
            }
        });
        AdapterStdin { tx }
    }

    /// Resize the adapter's PTY, in order with the bytes queued before.
    pub async fn resize(&self, size: TermSize) {
        let _ = self.tx.send(StdinWrite::Resize(size)).await;
    }

    /// Queue bytes for the adapter.
    pub async fn send(&self, bytes: Vec<u8>) {
        let _ = self.tx.send(StdinWrite::Bytes(bytes, None)).await;
    }

    /// Close the adapter's stdin after what was queued before.
    pub async fn close(&self) {
        let _ = self.tx.send(StdinWrite::Close).await;
    }

    /// Write bytes and wait until they are in the pipe (or the adapter's stdin is gone), e.g. a
    /// decision frame that must arrive before a signal.
    pub async fn send_flushed(&self, bytes: Vec<u8>) {
        let (done, written) = oneshot::channel();
        if self
            .tx
            .send(StdinWrite::Bytes(bytes, Some(done)))
            .await
            .is_ok()
        {
            let _ = written.await;
        }
    }
}
