//! One reader of the store per followed issue, shared by every feed that follows it live.
//!
//! A feed replays from the store until it has caught up, then takes what it sends from its
//! issue's relay: one task that reads each new item from the store once and hands it (shared,
//! not copied) to every caught-up feed of that issue, API and web alike. An item keeps each
//! format's encoding of it once made (`Item::event`), so a hundred viewers of an issue cost
//! one read and one encoding per event, and then writing its bytes to each. The relay keeps an
//! item until every feed took it, up to `relay_bytes` of items (`ring`); a feed left further
//! behind goes back to reading the store, from its own cursor, and joins again once caught
//! up: a slow viewer never holds the relay, the others, or more than that of the server's
//! memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::response::sse::Event;
use tokio::sync::OnceCell;
use wujie_protocol::api::{IssueEvent, RunMessageEvent};
use wujie_store::{MAX_FEED_PAGE, Store, StoreError};

use crate::ring::{self, Follower};
use crate::sse::{Cursor, FeedFormat};

/// One entry of an issue's feed, in the store's order.
pub(crate) enum Entry {
    Message(RunMessageEvent),
    Activity(IssueEvent),
}

impl Entry {
    /// Whether a feed at `cursor` has sent this entry already.
    pub(crate) fn sent_by(&self, cursor: Cursor) -> bool {
        match self {
            Entry::Message(m) => m.seq <= cursor.message,
            Entry::Activity(a) => a.seq <= cursor.activity,
        }
    }

    /// `cursor` once this entry is sent.
    pub(crate) fn advance(&self, cursor: &mut Cursor) {
        match self {
            Entry::Message(m) => cursor.message = cursor.message.max(m.seq),
            Entry::Activity(a) => cursor.activity = cursor.activity.max(a.seq),
        }
    }

    /// The length of this entry's JSON: its size in the relay's budget and in a feed's queue.
    pub(crate) fn json_len(&self) -> usize {
        match self {
            Entry::Message(m) => wujie_protocol::limits::json_len(m),
            Entry::Activity(a) => wujie_protocol::limits::json_len(a),
        }
    }

    /// This entry as `format` sends it, with event id `id`.
    pub(crate) async fn event(&self, format: &impl FeedFormat, id: String) -> Event {
        match self {
            Entry::Message(m) => format.message(m, id).await,
            Entry::Activity(a) => format.issue(a, id).await,
        }
    }
}

/// Reads the entries of the feed of `issue_id` (or of the workspace, without messages) after
/// `cursor`, one page of each log, interleaved by time (messages first on a tie); each with
/// the cursor after it, and whether more are stored.
pub(crate) async fn read_after(
    store: &Store,
    issue_id: Option<&str>,
    mut cursor: Cursor,
) -> Result<(Vec<(Entry, Cursor)>, bool), StoreError> {
    let (messages, more_messages) = match issue_id {
        Some(id) => {
            store
                .issue_messages_after(id, cursor.message, MAX_FEED_PAGE)
                .await?
        }
        None => (Vec::new(), false),
    };
    let activity = store
        .issue_activity_after(issue_id, cursor.activity, MAX_FEED_PAGE)
        .await?;
    let more = more_messages || activity.len() == MAX_FEED_PAGE as usize;
    let mut entries = Vec::with_capacity(messages.len() + activity.len());
    let mut messages = messages.into_iter().peekable();
    let mut activity = activity.into_iter().peekable();
    loop {
        let take_message = match (messages.peek(), activity.peek()) {
            (Some(m), Some(a)) => m.message.created_at <= a.created_at,
            (m, _) => m.is_some(),
        };
        let entry = if take_message {
            messages.next().map(Entry::Message)
        } else {
            activity.next().map(Entry::Activity)
        };
        let Some(entry) = entry else { break };
        entry.advance(&mut cursor);
        entries.push((entry, cursor));
    }
    Ok((entries, more))
}

/// An entry the relay read, with the relay's cursor after it and each format's encoding.
pub(crate) struct Item {
    pub(crate) entry: Entry,
    pub(crate) after: Cursor,
    /// The entry's JSON length ([`Entry::json_len`]), measured once for every feed.
    pub(crate) bytes: usize,
    encoded: Mutex<HashMap<String, Arc<OnceCell<Event>>>>,
}

impl Item {
    /// The entry as `format` sends it, with the relay's cursor as its id: encoded by the first
    /// feed of that format that sends it, cloned (its bytes) for the others.
    pub(crate) async fn event(&self, format: &impl FeedFormat) -> Event {
        let id = self.after.id(true);
        let Some(key) = format.shared_encoding(&self.entry) else {
            return self.entry.event(format, id).await;
        };
        let cell = self
            .encoded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_init(|| self.entry.event(format, id))
            .await
            .clone()
    }
}

type Relay = ring::Sender<Item>;

/// The relays of the issues being followed live, by issue id.
#[derive(Clone)]
pub(crate) struct Fanout {
    relays: Arc<Mutex<HashMap<String, Relay>>>,
    /// [`crate::ServerConfig::reread_interval`].
    reread: Duration,
    /// [`crate::ServerConfig::relay_bytes`].
    relay_bytes: usize,
}

impl Fanout {
    pub(crate) fn new(reread: Duration, relay_bytes: usize) -> Fanout {
        Fanout {
            relays: Arc::default(),
            reread,
            relay_bytes,
        }
    }

    /// How long a caught-up feed waits for a change signal before it reads the store anyway.
    pub(crate) fn reread_interval(&self) -> Duration {
        self.reread
    }

    fn relays(&self) -> std::sync::MutexGuard<'_, HashMap<String, Relay>> {
        self.relays.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every entry of the issue stored from now on (at least), starting its relay if it has
    /// none: the store's head is read before this returns, so a feed that subscribes and then
    /// reads the store misses nothing in between.
    pub(crate) async fn subscribe(
        &self,
        store: &Store,
        issue_id: &str,
    ) -> Result<Follower<Item>, StoreError> {
        if let Some(relay) = self.relays().get(issue_id) {
            return Ok(relay.subscribe());
        }
        let (message, activity) = store.issue_feed_head(issue_id).await?;
        let mut relays = self.relays();
        // Another feed may have started one meanwhile, from a head no later than ours.
        if let Some(relay) = relays.get(issue_id) {
            return Ok(relay.subscribe());
        }
        let relay = ring::ring(self.relay_bytes);
        let followed = relay.subscribe();
        relays.insert(issue_id.to_owned(), relay.clone());
        tokio::spawn(self.clone().relay(
            store.clone(),
            issue_id.to_owned(),
            Cursor { message, activity },
            relay,
        ));
        Ok(followed)
    }

    /// Reads the issue's new entries and hands them out, until no feed follows it.
    async fn relay(self, store: Store, issue_id: String, mut cursor: Cursor, relay: Relay) {
        let mut changes = store.changes();
        loop {
            // Marked seen before reading, so a write committed during the read wakes the wait.
            changes.borrow_and_update();
            let (entries, more) = match read_after(&store, Some(&issue_id), cursor).await {
                Ok(read) => read,
                Err(e) => {
                    // Its feeds (their receivers closed) go back to the store, which says more.
                    tracing::warn!(error = %wujie_protocol::error_text::with_causes(&e), "a live feed's relay stopped on a store error");
                    self.end(&issue_id, &relay, true);
                    return;
                }
            };
            for (entry, after) in entries {
                cursor = after;
                // Measured as the API sends it: what the item holds, give or take its keys.
                let bytes = entry.json_len();
                // No follower: the check below ends the relay.
                relay.send(
                    Item {
                        entry,
                        after,
                        bytes,
                        encoded: Mutex::default(),
                    },
                    bytes,
                );
            }
            if more {
                continue;
            }
            if self.end(&issue_id, &relay, false) {
                return;
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        self.end(&issue_id, &relay, true);
                        return;
                    }
                }
                () = tokio::time::sleep(self.reread) => {}
            }
        }
    }

    /// The bytes of entries the issue's relay keeps now (0 without one).
    #[cfg(test)]
    pub(crate) fn kept_bytes(&self, issue_id: &str) -> usize {
        self.relays().get(issue_id).map_or(0, Relay::kept_bytes)
    }

    /// Removes the relay when no feed follows it any more (or always, when it `must`); says
    /// whether it did. Under the lock `subscribe` takes, so no feed joins a relay that ends.
    fn end(&self, issue_id: &str, relay: &Relay, must: bool) -> bool {
        let mut relays = self.relays();
        if !must && relay.follower_count() > 0 {
            return false;
        }
        if relays.get(issue_id).is_some_and(|r| r.same_ring(relay)) {
            relays.remove(issue_id);
        }
        // Its followers (when it `must`) go back to the store.
        relay.close();
        true
    }
}
