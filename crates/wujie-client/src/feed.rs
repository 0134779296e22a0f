//! Reading a live feed (server-sent events) as typed events.

use std::collections::VecDeque;
use std::time::Duration;

use reqwest::Method;
use wujie_protocol::api::{IssueEvent, RunMessageEvent};
use wujie_protocol::sse::{SseDecoder, SseEvent, SseItem};

use crate::{ClientError, network_error};

/// A feed silent for this long (no event, no keep-alive) is taken as lost.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest event a feed accepts; a longer one means the stream is not a Wujie feed.
const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// One event of an issue's feed (or of the workspace's, which carries no messages).
#[derive(Debug, Clone, PartialEq)]
pub enum FeedEvent {
    /// A message stored on one of the issue's runs; `id` resumes after it.
    Message { id: String, event: RunMessageEvent },
    /// A change to the issue; `id` resumes after it.
    Issue { id: String, event: IssueEvent },
    /// The replay of what was stored before has caught up; what follows is live.
    Live,
}

/// An open feed, of an issue or of the workspace. Dropping it closes the connection.
pub struct IssueFeed {
    response: reqwest::Response,
    decoder: SseDecoder,
    /// Read from the connection, not handed over yet.
    ready: VecDeque<SseItem>,
    path: String,
}

impl std::fmt::Debug for IssueFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssueFeed")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl IssueFeed {
    pub(crate) fn new(resp: reqwest::Response, path: String) -> IssueFeed {
        IssueFeed {
            response: resp,
            decoder: SseDecoder::new(MAX_EVENT_BYTES),
            ready: VecDeque::new(),
            path,
        }
    }

    /// The next event; `None` when the server ended the feed. A network error means the
    /// connection was lost: reconnect with the last id seen to miss nothing.
    pub async fn next(&mut self) -> Option<Result<FeedEvent, ClientError>> {
        loop {
            while let Some(item) = self.ready.pop_front() {
                let read = match item {
                    SseItem::Event(event) => self.parse(event).transpose(),
                    SseItem::TooLong => Some(Err(self
                        .decode_error(format!("an event is longer than {MAX_EVENT_BYTES} bytes")))),
                };
                if read.is_some() {
                    return read;
                }
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.ready.extend(self.decoder.feed(&chunk)),
                Ok(None) => return None,
                Err(e) => return Some(Err(network_error(&Method::GET, &self.path, e))),
            }
        }
    }

    fn decode_error(&self, message: String) -> ClientError {
        ClientError::Decode {
            method: Method::GET,
            path: self.path.clone(),
            message,
        }
    }

    /// One event as this client knows it; `None` for kinds it does not know.
    fn parse(&self, event: SseEvent) -> Result<Option<FeedEvent>, ClientError> {
        let bad = |e: serde_json::Error| self.decode_error(format!("a {} event: {e}", event.name));
        Ok(match event.name.as_str() {
            "message" => Some(FeedEvent::Message {
                event: serde_json::from_str(&event.data).map_err(bad)?,
                id: event.id,
            }),
            "issue" => Some(FeedEvent::Issue {
                event: serde_json::from_str(&event.data).map_err(bad)?,
                id: event.id,
            }),
            "live" => Some(FeedEvent::Live),
            _ => None,
        })
    }
}
