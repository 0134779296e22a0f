//! Reading a live feed (server-sent events) as typed events.

use std::time::Duration;

use reqwest::Method;
use wujie_protocol::api::{IssueEvent, RunMessageEvent};

use crate::{ClientError, network_error};

/// A feed silent for this long (no event, no keep-alive) is taken as lost.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest event a feed accepts; a longer one means the stream is not a Wujie feed.
const MAX_EVENT_BYTES: usize = 64 * 1024 * 1024;

/// One event of an issue's feed.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedEvent {
    /// A message stored on one of the issue's runs; `id` resumes after it.
    Message { id: String, event: RunMessageEvent },
    /// A change to the issue; `id` resumes after it.
    Issue { id: String, event: IssueEvent },
    /// The replay of what was stored before has caught up; what follows is live.
    Live,
}

/// An open feed. Dropping it closes the connection.
pub struct IssueFeed {
    response: reqwest::Response,
    buffer: Vec<u8>,
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
            buffer: Vec::new(),
            path,
        }
    }

    /// The next event; `None` when the server ended the feed. A network error means the
    /// connection was lost: reconnect with the last id seen to miss nothing.
    pub async fn next(&mut self) -> Option<Result<FeedEvent, ClientError>> {
        loop {
            if let Some(end) = find_event_end(&self.buffer) {
                let block: Vec<u8> = self.buffer.drain(..end).collect();
                match self.parse(&block) {
                    Ok(Some(event)) => return Some(Ok(event)),
                    Ok(None) => continue,
                    Err(e) => return Some(Err(e)),
                }
            }
            if self.buffer.len() > MAX_EVENT_BYTES {
                return Some(Err(self.decode_error(format!(
                    "an event is longer than {MAX_EVENT_BYTES} bytes"
                ))));
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.buffer.extend_from_slice(&chunk),
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

    /// One event block (its lines, the blank line included); `None` for comments and events
    /// of kinds this client does not know.
    fn parse(&self, block: &[u8]) -> Result<Option<FeedEvent>, ClientError> {
        let text = std::str::from_utf8(block)
            .map_err(|e| self.decode_error(format!("an event is not UTF-8: {e}")))?;
        let (mut name, mut id, mut data) = ("", String::new(), String::new());
        for line in text.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => name = value,
                "id" => id = value.to_owned(),
                "data" => {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(value);
                }
                _ => {}
            }
        }
        let bad = |e: serde_json::Error| self.decode_error(format!("a {name} event: {e}"));
        Ok(match name {
            "message" => Some(FeedEvent::Message {
                id,
                event: serde_json::from_str(&data).map_err(bad)?,
            }),
            "issue" => Some(FeedEvent::Issue {
                id,
                event: serde_json::from_str(&data).map_err(bad)?,
            }),
            "live" => Some(FeedEvent::Live),
            _ => None,
        })
    }
}

/// End (exclusive) of the first complete event in `buffer`: after its blank line.
fn find_event_end(buffer: &[u8]) -> Option<usize> {
    buffer
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|at| at + 2)
}

#[cfg(test)]
mod tests {
    use super::find_event_end;

    #[test]
    fn events_end_at_a_blank_line() {
        assert_eq!(find_event_end(b"event: live\ndata: {}\n\nmore"), Some(22));
        assert_eq!(find_event_end(b"event: live\ndata: {}\n"), None);
    }
}
