//! A run's whole transcript, read page by page and written as it comes: an issue's answer
//! holds only each run's latest messages when they are many (`messages_complete` false), so
//! `issue show` reads the rest from `GET /runs/{id}/messages` and never holds more than a page.

use std::io::{BufWriter, Write};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context as _, Result};
use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use tokio::runtime::Handle;
use wujie_client::Client;
use wujie_protocol::api::{Run, RunMessage};

use crate::output::StdoutClosed;

/// The pages of one run's transcript, in order: the messages the answer held when they were
/// all of them, else the server's pages from the first message.
pub struct TranscriptPages {
    client: Client,
    run_id: String,
    next: Next,
}

enum Next {
    Held(Vec<RunMessage>),
    After(i64),
    Done,
}

impl TranscriptPages {
    pub fn of(client: &Client, run: &Run) -> TranscriptPages {
        TranscriptPages {
            client: client.clone(),
            run_id: run.id.clone(),
            next: if run.messages_complete {
                Next::Held(run.messages.clone())
            } else {
                Next::After(0)
            },
        }
    }

    /// The next page, or `None` after the last.
    pub async fn next_page(&mut self) -> Result<Option<Vec<RunMessage>>> {
        match std::mem::replace(&mut self.next, Next::Done) {
            Next::Held(messages) => Ok(Some(messages)),
            Next::After(after) => {
                let page = self.client.run_messages(&self.run_id, after, None).await?;
                if page.more {
                    self.next = Next::After(page.next_after);
                }
                Ok(Some(page.messages))
            }
            Next::Done => Ok(None),
        }
    }
}

/// The last messages of a run's transcript ([`last_messages`]).
pub struct LastMessages {
    pub messages: Vec<RunMessage>,
    /// How many came before them: `None` when there were some but how many is not known
    /// without reading them all.
    pub earlier: Option<u64>,
}

/// The last `n` messages of `run`: from the latest ones its answer holds when they are
/// enough, else read page by page from the first, keeping only the last `n`.
pub async fn last_messages(client: &Client, run: &Run, n: usize) -> Result<LastMessages> {
    let held = &run.messages;
    if held.len() >= n || run.messages_complete {
        let skip = held.len().saturating_sub(n);
        return Ok(LastMessages {
            messages: held[skip..].to_vec(),
            earlier: run.messages_complete.then_some(skip as u64),
        });
    }
    let mut last = std::collections::VecDeque::new();
    let mut earlier = 0;
    let mut pages = TranscriptPages::of(client, run);
    while let Some(page) = pages.next_page().await? {
        for message in page {
            last.push_back(message);
            if last.len() > n {
                last.pop_front();
                earlier += 1;
            }
        }
    }
    Ok(LastMessages {
        messages: last.into(),
        earlier: Some(earlier),
    })
}

/// Prints `doc` (an issue's `--output json` document, its runs in the order of `runs`) as
/// `print_json` would, with every run's whole transcript in its `messages`, read page by page
/// while it is written.
pub async fn print_issue_json(client: &Client, mut doc: Value, runs: &[Run]) -> Result<()> {
    let failure = Arc::new(Mutex::new(None));
    let handle = Handle::current();
    let json_runs = match doc.get_mut("runs").map(Value::take) {
        Some(Value::Array(json_runs)) => json_runs,
        _ => Vec::new(),
    };
    let mut streamed_runs = Vec::with_capacity(json_runs.len());
    for (json_run, run) in json_runs.into_iter().zip(runs) {
        let Value::Object(mut fields) = json_run else {
            continue;
        };
        // The document holds every message: complete, nothing left out.
        fields.insert("messages_complete".into(), Value::Bool(true));
        fields.remove("messages_before");
        streamed_runs.push(WithField {
            fields,
            key: "messages",
            value: StreamedMessages {
                pages: Mutex::new(TranscriptPages::of(client, run)),
                handle: handle.clone(),
                failure: failure.clone(),
            },
        });
    }
    let Value::Object(fields) = doc else {
        anyhow::bail!("an issue's document is a JSON object");
    };
    let issue = WithField {
        fields,
        key: "runs",
        value: streamed_runs,
    };
    let written = tokio::task::spawn_blocking(move || {
        let mut out = BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, &issue)?;
        out.write_all(b"\n")?;
        out.flush()?;
        Ok::<_, std::io::Error>(())
    })
    .await
    .context("writing the issue's document stopped")?;
    if let Some(e) = failure
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    {
        return Err(e);
    }
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// An object's fields as they are, but the one named `key` (taken out, its key left in its
/// place), written as `value`: the issue with its runs, a run with its messages.
struct WithField<T> {
    fields: Map<String, Value>,
    key: &'static str,
    value: T,
}

impl<T: Serialize> Serialize for WithField<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (key, value) in &self.fields {
            if key == self.key {
                map.serialize_entry(key, &self.value)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// A run's messages, read a page at a time as they are written. Serialising runs on a
/// blocking thread, which waits for each page on the runtime.
struct StreamedMessages {
    pages: Mutex<TranscriptPages>,
    handle: Handle,
    /// Why reading a page failed, for the command's error (the serializer's says less).
    failure: Arc<Mutex<Option<anyhow::Error>>>,
}

impl Serialize for StreamedMessages {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut pages = self.pages.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seq = serializer.serialize_seq(None)?;
        loop {
            match self.handle.block_on(pages.next_page()) {
                Ok(Some(page)) => {
                    for message in &page {
                        seq.serialize_element(message)?;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let text = format!("{e:#}");
                    *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                    return Err(S::Error::custom(text));
                }
            }
        }
        seq.end()
    }
}
