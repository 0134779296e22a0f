//! Following one feed (the workspace's, or an issue's) for as long as it is wanted: each event
//! goes to the command's one loop, tagged with where it came from; a lost connection (a server
//! restart, a network outage) is opened again from the last event id, so that nothing is
//! repeated or missed.

use std::time::Duration;

use tokio::sync::mpsc;
use wujie_client::{Client, ClientError, FeedEvent};

/// Which feed: the workspace's (every issue's changes), or one issue's (changes and messages).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Feed {
    Workspace,
    Issue(String),
}

/// What a follower tells the loop: of which feed, by which follower (an issue may have had
/// several over time, and what an earlier one sent is not the current one's), what happened.
pub struct Update {
    pub feed: Feed,
    pub follower: u64,
    pub what: Happened,
}

pub enum Happened {
    Event(FeedEvent),
    /// The connection was lost (`error`, or the server ended the feed as it stopped); the
    /// follower opens it again, on and on.
    Lost(Option<ClientError>),
    /// Open again after a loss.
    Back,
    /// The server refused the feed (not a loss): the follower stopped.
    Refused(ClientError),
}

/// The longest wait between two attempts to open a lost feed again.
const MOST_BETWEEN_ATTEMPTS: Duration = Duration::from_secs(5);

/// Starts following `feed` after `last_id` (from its start without one).
pub fn start(
    client: Client,
    feed: Feed,
    follower: u64,
    last_id: Option<String>,
    to: mpsc::UnboundedSender<Update>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(follow(client, feed, follower, last_id, to))
}

async fn follow(
    client: Client,
    feed: Feed,
    follower: u64,
    mut last_id: Option<String>,
    to: mpsc::UnboundedSender<Update>,
) {
    let tell = |what| {
        to.send(Update {
            feed: feed.clone(),
            follower,
            what,
        })
        .is_ok()
    };
    let mut lost = false;
    let mut attempts: u32 = 0;
    loop {
        let opened = match &feed {
            Feed::Workspace => client.follow_workspace(last_id.as_deref()).await,
            Feed::Issue(key) => client.follow_issue(key, last_id.as_deref()).await,
        };
        let error = match opened {
            Ok(mut open) => {
                attempts = 0;
                if std::mem::take(&mut lost) && !tell(Happened::Back) {
                    return;
                }
                loop {
                    match open.next().await {
                        Some(Ok(event)) => {
                            if let FeedEvent::Message { id, .. } | FeedEvent::Issue { id, .. } =
                                &event
                            {
                                last_id = Some(id.clone());
                            }
                            if !tell(Happened::Event(event)) {
                                return;
                            }
                        }
                        Some(Err(e)) => break Some(e),
                        // The server ended the feed: it is shutting down.
                        None => break None,
                    }
                }
            }
            Err(e) => Some(e),
        };
        match error {
            Some(error) if !error.is_retryable() => {
                tell(Happened::Refused(error));
                return;
            }
            error if !lost => {
                lost = true;
                if !tell(Happened::Lost(error)) {
                    return;
                }
            }
            _ => {}
        }
        attempts = attempts.saturating_add(1);
        tokio::time::sleep(pause(attempts)).await;
    }
}

/// 0.2 s after the first failed attempt, twice as long after each next one, at most
/// `MOST_BETWEEN_ATTEMPTS`.
fn pause(attempts: u32) -> Duration {
    let doubled = Duration::from_millis(100).saturating_mul(1 << attempts.min(8));
    doubled.min(MOST_BETWEEN_ATTEMPTS)
}
