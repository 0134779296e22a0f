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
    let config = crate::ServerConfig::default();
    let state = crate::AppState {
        store: h.store.clone(),
        fanout: crate::fanout::Fanout::new(config.reread_interval, config.relay_bytes),
        config,
        login_codes: Default::default(),
    };
    let encoded = Arc::new(AtomicUsize::new(0));
    let mut bodies: Vec<_> = (0..FEEDS)
        .map(|_| {
            let sse = feed(
                state.clone(),
                "counting".to_owned(),
                vec![Follow {
                    issue_id: Some(issue.id.clone()),
                    cursor: Cursor { message, activity },
                    format: Counting(encoded.clone()),
                }],
            )
            .expect("a feed");
            sse.into_response().into_body().into_data_stream()
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
    let pad = "x".repeat(20_000);
    for batch in (0..MESSAGES).collect::<Vec<_>>().chunks(50) {
        let items = batch
            .iter()
            .map(|n| message(MessageKind::Text, &n.to_string(), &format!("{n} {pad}")))
            .collect();
        h.admin
            .ingest_run_events(&run.run.id, &IngestBatch { items })
            .await
            .expect("ingest");
    }
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
    let config = ServerConfig {
        relay_bytes: BUDGET,
        // The slow feed holds four events besides the relay's; none is dropped for not reading.
        feed_queue: 4,
        slow_client_after: Duration::from_secs(600),
        ..ServerConfig::default()
    };
    let state = crate::AppState {
        store: h.store.clone(),
        fanout: crate::fanout::Fanout::new(config.reread_interval, config.relay_bytes),
        config,
        login_codes: Default::default(),
    };
    let open = |token: &str| {
        feed(
            state.clone(),
            token.to_owned(),
            vec![Follow {
                issue_id: Some(issue.id.clone()),
                cursor: Cursor {
                    message: head_message,
                    activity: head_activity,
                },
                format: Counting(Arc::default()),
            }],
        )
        .expect("a feed")
        .into_response()
        .into_body()
        .into_data_stream()
    };
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
