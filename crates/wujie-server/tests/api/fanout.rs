//! Fan-out: however many feeds follow an issue live, each event is read from the store and
//! encoded once for all of them; a feed left far behind by its issue's relay misses nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::response::IntoResponse;
use axum::response::sse::Event;
use futures::StreamExt;
use wujie_client::FeedEvent;
use wujie_protocol::api::{CreateComment, IngestBatch, IssueEvent, RunMessageEvent};
use wujie_protocol::event::MessageKind;
use wujie_store::{Store, StoreError};

use super::harness::{Harness, message};
use crate::ServerConfig;
use crate::fanout::Entry;
use crate::sse::{Cursor, FeedFormat, Follow, event, feed};

const FEEDS: usize = 20;
const COMMENTS: usize = 5;

/// The API's events, counting how many times one is encoded.
struct Counting(Arc<AtomicUsize>);

impl FeedFormat for Counting {
    async fn message(&self, m: &RunMessageEvent, id: String) -> Event {
        self.0.fetch_add(1, Ordering::Relaxed);
        event("message", m, Some(id))
    }

    async fn issue(&self, change: &IssueEvent, id: String) -> Event {
        self.0.fetch_add(1, Ordering::Relaxed);
        event("issue", change, Some(id))
    }

    async fn still_allowed(&self, _: &Store) -> Result<bool, StoreError> {
        Ok(true)
    }

    fn access_ended(&self) -> Option<Event> {
        None
    }

    fn shared_encoding(&self, _: &Entry) -> Option<String> {
        Some("counting".to_owned())
    }

    fn live(&self) -> Event {
        event("live", &serde_json::json!({}), None)
    }
}

#[tokio::test]
async fn each_event_is_encoded_once_for_every_feed_following_its_issue() {
    let h = Harness::start().await;
    let issue = h.issue("Watched by many").await;
    let (message, activity) = h.store.issue_feed_head(&issue.id).await.unwrap();
    let state = in_process(&h, ServerConfig::default());
    let encoded = Arc::new(AtomicUsize::new(0));
    let mut bodies: Vec<_> = (0..FEEDS)
        .map(|_| {
            let at = Cursor { message, activity };
            feed_body(&state, &issue.id, at, "counting", Counting(encoded.clone()))
        })
        .collect();
    for body in &mut bodies {
        read_until(body, "event: live", 1).await;
    }
    for n in 0..COMMENTS {
        h.admin
            .add_comment(
                &issue.key,
                &CreateComment {
                    body: format!("comment {n}"),
                },
            )
            .await
            .expect("comment");
    }
    for body in &mut bodies {
        read_until(body, "event: issue", COMMENTS).await;
    }
    assert_eq!(encoded.load(Ordering::Relaxed), COMMENTS);
    h.stop().await;
}

/// Reads `body` until `what` has come `times` times.
async fn read_until(body: &mut axum::body::BodyDataStream, what: &str, times: usize) {
    let mut read = String::new();
    while read.matches(what).count() < times {
        let chunk = tokio::time::timeout(Duration::from_secs(30), body.next())
            .await
            .expect("an event within 30 s")
            .expect("the feed is open")
            .expect("readable");
        read.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn a_feed_left_far_behind_by_the_relay_reads_the_store_and_misses_nothing() {
    const MESSAGES: usize = 3000;
    // Neither feed reads while the messages go in, which takes longer than a server drops a
    // client that stopped reading after (10 s) on a loaded machine: that drop is another
    // path (the client resumes with Last-Event-ID), not the one under test.
    let h = Harness::with_config(ServerConfig {
        slow_client_after: Duration::from_secs(600),
        // Far less than the messages: the slow feed is left behind by the relay.
        relay_bytes: 1024 * 1024,
        ..ServerConfig::default()
    })
    .await;
    let issue = h.issue("Read slowly").await;
    let run = h.run_on(&issue.key).await;
    let mut eager = h.admin.follow_issue(&issue.key, None).await.expect("feed");
    let mut slow = h.admin.follow_issue(&issue.key, None).await.expect("feed");
    for feed in [&mut eager, &mut slow] {
        while next(feed).await != FeedEvent::Live {}
    }
    // 20 KB each: more than the relay keeps (1 MiB), and than the sockets and the slow feed's
    // queue hold, so the slow feed is left behind while it does not read.
    ingest_numbered(&h, &run.run.id, MESSAGES, 20_000, 50).await;
    for feed in [&mut eager, &mut slow] {
        let mut got = Vec::with_capacity(MESSAGES);
        while got.len() < MESSAGES {
            if let FeedEvent::Message { event, .. } = next(feed).await {
                let content = event.message.content.unwrap_or_default();
                let n: usize = content.split(' ').next().unwrap().parse().unwrap();
                got.push(n);
            }
        }
        assert_eq!(got, (0..MESSAGES).collect::<Vec<_>>());
    }
    h.stop().await;
}

async fn next(feed: &mut wujie_client::IssueFeed) -> FeedEvent {
    tokio::time::timeout(Duration::from_secs(30), feed.next())
        .await
        .expect("an event within 30 s")
        .expect("the feed is open")
        .expect("a readable event")
}

#[tokio::test]
async fn a_feed_behind_by_more_than_the_relays_bytes_gets_every_entry_once_in_order() {
    const MESSAGES: usize = 200;
    const BUDGET: usize = 256 * 1024;
    let h = Harness::start().await;
    let issue = h.issue("Followed by a slow reader").await;
    let run = h.run_on(&issue.key).await;
    let (head_message, head_activity) = h.store.issue_feed_head(&issue.id).await.unwrap();
    let state = in_process(
        &h,
        ServerConfig {
            relay_bytes: BUDGET,
            // The slow feed holds a few events besides the relay's; none is dropped for not
            // reading.
            feed_queue_bytes: 100 * 1024,
            slow_client_after: Duration::from_secs(600),
            ..ServerConfig::default()
        },
    );
    let at = Cursor {
        message: head_message,
        activity: head_activity,
    };
    let open = |token: &str| feed_body(&state, &issue.id, at, token, Counting(Arc::default()));
    let mut eager = open("eager");
    let mut slow = open("slow");
    read_until(&mut eager, "event: live", 1).await;
    read_until(&mut slow, "event: live", 1).await;
    let eager = tokio::spawn(async move { message_numbers(&mut eager, MESSAGES).await });
    // 20 KB each: 4 MB in all, sixteen times the relay's budget.
    let pad = "x".repeat(20_000);
    for batch in (0..MESSAGES).collect::<Vec<_>>().chunks(20) {
        let items = batch
            .iter()
            .map(|n| message(MessageKind::Text, &n.to_string(), &format!("{n} {pad}")))
            .collect();
        h.admin
            .ingest_run_events(&run.run.id, &IngestBatch { items })
            .await
            .expect("ingest");
        let kept = state.fanout.kept_bytes(&issue.id);
        assert!(kept <= BUDGET, "the relay keeps {kept} bytes");
    }
    assert_eq!(eager.await.unwrap(), (0..MESSAGES).collect::<Vec<_>>());
    assert_eq!(
        message_numbers(&mut slow, MESSAGES).await,
        (0..MESSAGES).collect::<Vec<_>>()
    );
    h.stop().await;
}

/// Messages `0..count` on run `run_id`, each its number and `pad` bytes of padding, ingested
/// `per_batch` at a time.
async fn ingest_numbered(h: &Harness, run_id: &str, count: usize, pad: usize, per_batch: usize) {
    let pad = "x".repeat(pad);
    for batch in (0..count).collect::<Vec<_>>().chunks(per_batch) {
        let items = batch
            .iter()
            .map(|n| message(MessageKind::Text, &n.to_string(), &format!("{n} {pad}")))
            .collect();
        h.admin
            .ingest_run_events(run_id, &IngestBatch { items })
            .await
            .expect("ingest");
    }
}

/// The server's state for feeds served in this process, on the harness's store.
fn in_process(h: &Harness, config: ServerConfig) -> crate::AppState {
    crate::AppState {
        store: h.store.clone(),
        fanout: crate::fanout::Fanout::new(config.reread_interval, config.relay_bytes),
        config,
        login_codes: Default::default(),
    }
}

/// The body of a feed of `issue_id` after `at`, opened with `token`, as the connection reads it.
fn feed_body(
    state: &crate::AppState,
    issue_id: &str,
    at: Cursor,
    token: &str,
    format: Counting,
) -> axum::body::BodyDataStream {
    feed(
        state.clone(),
        token.to_owned(),
        vec![Follow {
            issue_id: Some(issue_id.to_owned()),
            cursor: at,
            format,
        }],
    )
    .expect("a feed")
    .into_response()
    .into_body()
    .into_data_stream()
}

#[tokio::test]
async fn a_feed_that_is_not_read_holds_its_queues_bytes_and_is_then_dropped() {
    // 1 MiB each: 48 MiB in all, three times what one feed may hold (16 MiB), and far fewer
    // entries than a queue bounded by a count would hold.
    const MESSAGES: usize = 48;
    const ENTRY: usize = 1 << 20;
    let h = Harness::start().await;
    let issue = h.issue("Followed by a reader that stops").await;
    let run = h.run_on(&issue.key).await;
    let (message_head, activity_head) = h.store.issue_feed_head(&issue.id).await.unwrap();
    let config = ServerConfig {
        slow_client_after: Duration::from_millis(500),
        ..ServerConfig::default()
    };
    let budget = config.feed_queue_bytes;
    let state = in_process(&h, config);
    let at = Cursor {
        message: message_head,
        activity: activity_head,
    };
    let mut body = feed_body(&state, &issue.id, at, "reader", Counting(Arc::default()));
    read_until(&mut body, "event: live", 1).await;
    ingest_numbered(&h, &run.run.id, MESSAGES, ENTRY, 8).await;
    // Nothing was read since `live`: what the body gives now is what the queue held when the
    // feed gave up on its reader, and then the body ends.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut held = 0;
    let mut messages = 0;
    // Read until the body ends, or (a reader that was never given up on) every message came.
    while messages < MESSAGES {
        let next = tokio::time::timeout(Duration::from_secs(30), body.next())
            .await
            .expect("the feed sends or ends");
        let Some(chunk) = next else { break };
        let chunk = chunk.expect("readable");
        held += chunk.len();
        messages += String::from_utf8_lossy(&chunk)
            .matches("event: message")
            .count();
    }
    assert!(
        messages < MESSAGES,
        "a reader that stopped was sent all {messages} messages"
    );
    assert!(
        messages > 0 && held <= budget + 64 * 1024,
        "the queue held {messages} messages, {held} bytes (budget {budget})"
    );
    h.stop().await;
}

/// The numbers the first `count` `message` events of `body` begin with, in the order sent.
async fn message_numbers(body: &mut axum::body::BodyDataStream, count: usize) -> Vec<usize> {
    let mut read = String::new();
    let mut numbers = Vec::new();
    while numbers.len() < count {
        let chunk = tokio::time::timeout(Duration::from_secs(30), body.next())
            .await
            .expect("an event within 30 s")
            .expect("the feed is open")
            .expect("readable");
        read.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = read.find("\n\n") {
            let event: String = read.drain(..end + 2).collect();
            if !event.contains("event: message") {
                continue;
            }
            let data = event
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .expect("a message event's data");
            let m: RunMessageEvent = serde_json::from_str(data).expect("a message");
            let content = m.message.content.unwrap_or_default();
            numbers.push(content.split(' ').next().unwrap().parse().unwrap());
        }
    }
    numbers
}
