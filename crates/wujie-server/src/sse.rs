//! Live feeds over server-sent events: one issue's changes and its runs' messages, and every
//! issue's changes across the workspace.
//!
//! A feed follows the stored order: each client has a cursor into it (message `seq`, activity
//! `seq`), replays pages from the store after it, and, once caught up, takes an issue's new
//! entries from that issue's relay (`fanout`: read and encoded once for every feed), or waits
//! for the store's change signal (the workspace feed). Event ids are that cursor, so a client
//! that reconnects with `Last-Event-ID` replays exactly what it missed. What a client holds in
//! the server is one queue bounded in bytes (`feed_queue`); a client that leaves it full for
//! `slow_client_after` is dropped (it can reconnect and resume), so a slow reader never grows the server's memory. A
//! feed lasts only while whoever opened it may read it: it ends once their token is revoked or
//! expires, or their browser session ends.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Serialize;
use wujie_protocol::api::{ApiError, IssueEvent, RunMessageEvent};
use wujie_store::{Store, StoreError};

use crate::auth::Caller;
use crate::error::{ApiResult, Failure};
use crate::fanout::{Entry, Fanout, Item, read_after};
use crate::feed_queue::{self, NotQueued};
use crate::ring::{Follower, Received};
use crate::{AppState, OpenFeed, OpenFeeds};

/// How often an open feed checks that whoever opened it may still read it: a token revoked
/// through another process, or one that expired, ends its feeds within this. (Revoking through
/// this server ends them at once, see `OpenFeeds::access_changed`.)
const ACCESS_RECHECK: Duration = Duration::from_secs(2);

/// Where a feed is in the stored order: the last message and activity `seq` it sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) message: i64,
    pub(crate) activity: i64,
}

impl Cursor {
    /// `Last-Event-ID` of the issue feed is `<message seq>.<activity seq>`, of the workspace
    /// feed `<activity seq>`.
    pub(crate) fn parse(value: &str, with_messages: bool) -> Option<Cursor> {
        let number = |s: &str| s.parse::<i64>().ok().filter(|n| *n >= 0);
        if with_messages {
            let (m, a) = value.trim().split_once('.')?;
            Some(Cursor {
                message: number(m)?,
                activity: number(a)?,
            })
        } else {
            Some(Cursor {
                message: 0,
                activity: number(value.trim())?,
            })
        }
    }

    pub(crate) fn id(&self, with_messages: bool) -> String {
        if with_messages {
            format!("{}.{}", self.message, self.activity)
        } else {
            self.activity.to_string()
        }
    }
}

pub(crate) fn start_cursor(headers: &HeaderMap, with_messages: bool) -> Result<Cursor, Failure> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(Cursor::default());
    };
    value
        .to_str()
        .ok()
        .and_then(|v| Cursor::parse(v, with_messages))
        .ok_or_else(|| {
            let shape = if with_messages {
                "<message seq>.<activity seq>, e.g. 12.3"
            } else {
                "an activity seq, e.g. 3"
            };
            Failure::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "Last-Event-ID is not an id this feed sent (expected {shape}); reconnect \
                     with the id of the last event received, or without the header to start over"
                ),
            )
        })
}

#[utoipa::path(get, path = "/api/v1/issues/{key_or_id}/events", tag = "live",
    security(("bearer" = [])),
    params(("key_or_id" = String, Path, description = "Issue key (any case) or id"),
        ("Last-Event-ID" = Option<String>, Header,
            description = "Resume after this event id (`<message seq>.<activity seq>`)")),
    responses((status = 200, content_type = "text/event-stream",
        description = "Server-sent events, oldest first. `message` (data: RunMessageEvent): a \
            message stored on one of the issue's runs, in arrival order. `issue` (data: \
            IssueEvent): a comment, edit, status change, run start or end, or usage. `live` \
            (data: {}): sent once, when the replay has caught up with the store. Every `message` \
            and `issue` event has an id to resume from. A client that does not read for a while \
            is disconnected; reconnecting with Last-Event-ID misses nothing."),
        (status = 400, body = ApiError), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError),
        (status = 429, body = ApiError,
            description = "The token has `max_feeds_per_token` (64) live feeds open already")))]
pub(crate) async fn issue_feed(
    State(state): State<AppState>,
    caller: Caller,
    Path(key_or_id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let issue_id = state.store.resolve_issue(&key_or_id).await?;
    caller.require_issue_read(&issue_id, &key_or_id)?;
    let cursor = start_cursor(&headers, true)?;
    let format = Json {
        token_id: caller.token_id().to_owned(),
    };
    feed(
        state,
        caller.token_id().to_owned(),
        vec![Follow {
            issue_id: Some(issue_id),
            cursor,
            format,
        }],
    )
}

#[utoipa::path(get, path = "/api/v1/events", tag = "live", security(("bearer" = [])),
    params(("Last-Event-ID" = Option<String>, Header,
        description = "Resume after this event id (an activity seq)")),
    responses((status = 200, content_type = "text/event-stream",
        description = "Server-sent events of every issue of the workspace, oldest first: `issue` \
            (data: IssueEvent) for each comment, edit, status change, run start or end, and \
            usage; `live` (data: {}) once the replay has caught up. Run messages are on each \
            issue's own feed. Resumable with Last-Event-ID; a client that does not read for a \
            while is disconnected."),
        (status = 400, body = ApiError), (status = 401, body = ApiError),
        (status = 403, body = ApiError),
        (status = 429, body = ApiError,
            description = "The token has `max_feeds_per_token` (64) live feeds open already")))]
pub(crate) async fn workspace_feed(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    caller.require_user("follow the workspace's changes")?;
    let cursor = start_cursor(&headers, false)?;
    let format = Json {
        token_id: caller.token_id().to_owned(),
    };
    feed(
        state,
        caller.token_id().to_owned(),
        vec![Follow {
            issue_id: None,
            cursor,
            format,
        }],
    )
}

/// How a feed's items become events: the API sends them as JSON, the web page as HTML it can
/// insert (`web::live`). `id` is the cursor to resume after the item.
pub(crate) trait FeedFormat: Send + Sync + 'static {
    fn message(&self, message: &RunMessageEvent, id: String) -> impl Future<Output = Event> + Send;
    fn issue(&self, change: &IssueEvent, id: String) -> impl Future<Output = Event> + Send;
    /// For an entry whose event depends only on the entry, its id and this key: the key, so
    /// that every feed with the same key sends one encoding of it (`fanout::Item::event`).
    fn shared_encoding(&self, entry: &Entry) -> Option<String>;
    /// Sent once, when the replay has caught up with the store.
    fn live(&self) -> Event;
    /// Whether whoever opened the feed may still read it.
    fn still_allowed(&self, store: &Store)
    -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// The last event of a feed whose reader may no longer read it, if the format says so.
    fn access_ended(&self) -> Option<Event>;
}

/// The API's format: `message` and `issue` events whose data is the JSON of the item. The feed
/// lasts while the token that opened it is neither revoked nor expired; then it just ends (a
/// client that reconnects is told why).
struct Json {
    token_id: String,
}

impl FeedFormat for Json {
    async fn still_allowed(&self, store: &Store) -> Result<bool, StoreError> {
        store.token_active(&self.token_id).await
    }

    fn access_ended(&self) -> Option<Event> {
        None
    }

    async fn message(&self, message: &RunMessageEvent, id: String) -> Event {
        event("message", message, Some(id))
    }

    async fn issue(&self, change: &IssueEvent, id: String) -> Event {
        event("issue", change, Some(id))
    }

    fn shared_encoding(&self, _: &Entry) -> Option<String> {
        Some("json".to_owned())
    }

    fn live(&self) -> Event {
        event("live", &serde_json::json!({}), None)
    }
}

/// One feed within a connection: an issue's (or, without `issue_id`, the workspace's) items
/// after `cursor`, as `format` renders them.
pub(crate) struct Follow<F> {
    pub(crate) issue_id: Option<String>,
    pub(crate) cursor: Cursor,
    pub(crate) format: F,
}

/// Starts the task that reads the feeds from the store into the client's one bounded queue.
/// A connection may carry several feeds (a browser's issue pages share one, see `web::live`);
/// they all share that queue, whoever opened them, and end together.
/// `token_id` is the token the feeds were opened with: it may hold at most
/// `max_feeds_per_token` connections' feeds at once (429 past that).
pub(crate) fn feed(
    state: AppState,
    token_id: String,
    follows: Vec<Follow<impl FeedFormat>>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Failure> {
    let max = state.config.max_feeds_per_token;
    let counted = state.config.open_feeds.open(token_id, max).ok_or_else(|| {
        Failure::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "{max} live feeds are open with this token already, the most one token may \
                 have at once; close one (a page, a watch, a feed no longer read) and try again"
            ),
        )
    })?;
    let (tx, rx) = feed_queue::queue(state.config.feed_queue_bytes);
    tokio::spawn(pump(
        counted,
        state.store,
        state.fanout,
        follows,
        tx,
        state.config.slow_client_after,
    ));
    let events = futures::stream::unfold(rx, |mut rx| async move {
        // The event leaves the queue's budget here, for the connection's own buffers.
        rx.recv().await.map(|queued| (Ok(queued.event), rx))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// Why a feed stopped.
enum Stop {
    /// The client went away, or was too slow and is dropped.
    Client,
    Store(StoreError),
}

/// Queues `event`, of an entry whose JSON is `entry_bytes` long (0: an event of its own).
async fn send(
    tx: &feed_queue::Sender,
    event: Event,
    entry_bytes: usize,
    slow_client_after: Duration,
) -> Result<(), Stop> {
    match tx.send(event, entry_bytes, slow_client_after).await {
        Ok(()) => Ok(()),
        Err(NotQueued::Full) => {
            tracing::info!(
                after = ?slow_client_after,
                "dropped a live-feed client that stopped reading; it can resume with Last-Event-ID"
            );
            Err(Stop::Client)
        }
        Err(NotQueued::Closed) => Err(Stop::Client),
    }
}

pub(crate) fn event(name: &str, data: &impl Serialize, id: Option<String>) -> Event {
    let event = Event::default().event(name);
    let event = match id {
        Some(id) => event.id(id),
        None => event,
    };
    // Serializing the API's own types cannot fail; an empty object keeps the stream valid.
    event
        .json_data(data)
        .unwrap_or_else(|_| Event::default().event(name).data("{}"))
}

/// Runs a connection's feeds until one stops (the client then reconnects to all of them) or
/// the server shuts down; `counted` counts the connection meanwhile.
async fn pump<F: FeedFormat>(
    counted: OpenFeed,
    store: Store,
    fanout: Fanout,
    follows: Vec<Follow<F>>,
    tx: feed_queue::Sender,
    slow_client_after: Duration,
) {
    let all = futures::future::try_join_all(follows.iter().map(|f| {
        follow(
            &store,
            &fanout,
            f.issue_id.clone(),
            f.cursor,
            &f.format,
            &tx,
            slow_client_after,
        )
    }));
    // Every feed of a connection was opened by the same caller: the first speaks for all.
    let access = async {
        match follows.first() {
            Some(first) => access_ends(&store, &first.format, counted.feeds()).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        stopped = all => {
            if let Err(Stop::Store(e)) = stopped {
                tracing::warn!(error = %wujie_protocol::error_text::with_causes(&e), "a live feed stopped on a store error");
            }
        }
        // The client reconnects (to this server once it is back) with its Last-Event-ID.
        () = counted.feeds().closing() => {}
        () = access => {
            for last in follows.iter().filter_map(|f| f.format.access_ended()) {
                // Best effort: a client that does not read it is gone anyway.
                if send(&tx, last, 0, slow_client_after).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// Resolves once whoever opened the feed may no longer read it: checked every
/// `ACCESS_RECHECK`, and at once when this server revoked a token or closed a session.
async fn access_ends(store: &Store, format: &impl FeedFormat, feeds: &OpenFeeds) {
    let mut changes = feeds.access_changes();
    loop {
        tokio::select! {
            Ok(()) = changes.changed() => {}
            () = tokio::time::sleep(ACCESS_RECHECK) => {}
        }
        match format.still_allowed(store).await {
            Ok(true) => {}
            Ok(false) => return,
            // A busy database does not end a feed; the next check decides.
            Err(e) => {
                tracing::debug!(error = %wujie_protocol::error_text::with_causes(&e), "could not check a live feed's access")
            }
        }
    }
}

/// Sends a feed: replayed from the store until caught up, then (an issue's) from its relay,
/// back to the store whenever the relay left it behind.
async fn follow(
    store: &Store,
    fanout: &Fanout,
    issue_id: Option<String>,
    mut cursor: Cursor,
    format: &impl FeedFormat,
    tx: &feed_queue::Sender,
    slow_client_after: Duration,
) -> Result<(), Stop> {
    let with_messages = issue_id.is_some();
    let mut changes = store.changes();
    let mut live = false;
    let mut relay = None;
    loop {
        // Subscribed before reading, so what the relay hands out after the read is not missed.
        if let (None, Some(id)) = (&relay, &issue_id) {
            relay = Some(fanout.subscribe(store, id).await.map_err(Stop::Store)?);
        }
        // Marked seen before reading, so a write committed during the read wakes the next wait.
        changes.borrow_and_update();
        let (entries, more) = read_after(store, issue_id.as_deref(), cursor)
            .await
            .map_err(Stop::Store)?;
        for (entry, after) in entries {
            cursor = after;
            let next = entry.event(format, cursor.id(with_messages)).await;
            send(tx, next, entry.json_len(), slow_client_after).await?;
        }
        if more {
            continue;
        }
        if !live {
            live = true;
            send(tx, format.live(), 0, slow_client_after).await?;
        }
        if let Some(followed) = relay.as_mut() {
            from_relay(followed, &mut cursor, format, tx, slow_client_after).await?;
            relay = None;
            continue;
        }
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
            () = tokio::time::sleep(fanout.reread_interval()) => {}
            () = tx.closed() => return Err(Stop::Client),
        }
    }
}

/// Sends what the issue's relay hands out after `cursor`, until the relay leaves this feed
/// behind or ends (then the feed reads the store again from `cursor`).
async fn from_relay(
    followed: &mut Follower<Item>,
    cursor: &mut Cursor,
    format: &impl FeedFormat,
    tx: &feed_queue::Sender,
    slow_client_after: Duration,
) -> Result<(), Stop> {
    loop {
        let item = tokio::select! {
            item = followed.recv() => item,
            () = tx.closed() => return Err(Stop::Client),
        };
        let Received::Value(item) = item else {
            return Ok(());
        };
        if item.entry.sent_by(*cursor) {
            continue;
        }
        // Everything up to the relay's cursor after this item has reached this feed: what the
        // relay handed out before the feed subscribed was in the store the feed read since.
        let next = Cursor {
            message: cursor.message.max(item.after.message),
            activity: cursor.activity.max(item.after.activity),
        };
        let event = if next == item.after {
            item.event(format).await
        } else {
            item.entry.event(format, next.id(true)).await
        };
        *cursor = next;
        send(tx, event, item.bytes, slow_client_after).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::Cursor;

    #[test]
    fn event_ids_round_trip_and_bad_ones_are_refused() {
        let c = Cursor {
            message: 12,
            activity: 3,
        };
        assert_eq!(Cursor::parse(&c.id(true), true), Some(c));
        let a = Cursor {
            message: 0,
            activity: 7,
        };
        assert_eq!(Cursor::parse(&a.id(false), false), Some(a));
        for bad in ["", "x", "1", "1.", ".2", "-1.2", "1.2.3"] {
            assert_eq!(Cursor::parse(bad, true), None, "{bad:?}");
        }
        assert_eq!(Cursor::parse("1.2", false), None);
    }
}
