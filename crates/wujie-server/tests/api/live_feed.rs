//! The live feeds over real HTTP on 127.0.0.1: replay in stored order, live events as they are
//! stored, resuming with Last-Event-ID without gaps or repeats, and a client that stops reading
//! being dropped.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wujie_client::{FeedEvent, IssueFeed};
use wujie_protocol::api::{
    CreateComment, FinishRun, IngestBatch, IssueChange, IssueStatus, RunStatus,
};
use wujie_protocol::event::MessageKind;
use wujie_server::{OpenFeeds, ServerConfig};

use super::harness::{Harness, eventually, message, status_of, usage};

/// The next event, failing the test if none comes within a generous bound.
async fn next(feed: &mut IssueFeed) -> FeedEvent {
    tokio::time::timeout(Duration::from_secs(30), feed.next())
        .await
        .expect("an event within 30 s")
        .expect("the feed is open")
        .expect("a readable event")
}

fn describe(event: &FeedEvent) -> String {
    match event {
        FeedEvent::Message { event, .. } => {
            format!("message {}", event.message.content.as_deref().unwrap_or(""))
        }
        FeedEvent::Issue { event, .. } => match &event.change {
            IssueChange::Created { title } => format!("created {title}"),
            IssueChange::Comment { comment } => format!("comment {}", comment.body),
            IssueChange::Status { status } => format!("status {}", status.as_str()),
            IssueChange::RunStarted { .. } => "run_started".into(),
            IssueChange::RunFinished { status, .. } => format!("run_finished {}", status.as_str()),
            IssueChange::Usage { usage, .. } => format!("usage {}", usage.input_tokens),
            IssueChange::Edited { .. } => "edited".into(),
            IssueChange::CancelRequested { .. } => "cancel_requested".into(),
            IssueChange::CodeChanged { snapshot, .. } => format!("code_changed {snapshot}"),
        },
        FeedEvent::Live => "live".into(),
    }
}

fn id_of(event: &FeedEvent) -> Option<&str> {
    match event {
        FeedEvent::Message { id, .. } | FeedEvent::Issue { id, .. } => Some(id),
        FeedEvent::Live => None,
    }
}

#[tokio::test]
async fn issue_feed_replays_then_streams_live_and_resumes_after_last_event_id() {
    let h = Harness::start().await;
    let issue = h.issue("watched").await;
    let run = h.run_on(&issue.key).await;
    // The reporter delivers with the user's credential, never the adapter's run token.
    let reporter = &h.admin;
    reporter
        .ingest_run_events(
            &run.run.id,
            &IngestBatch {
                items: vec![
                    message(MessageKind::UserInput, "1", "hello"),
                    message(MessageKind::Text, "2", "thinking aloud"),
                ],
            },
        )
        .await
        .expect("ingest");

    let mut feed = h
        .admin
        .follow_issue(&issue.key.to_lowercase(), None)
        .await
        .expect("feed");
    let mut seen = Vec::new();
    loop {
        let e = next(&mut feed).await;
        let done = e == FeedEvent::Live;
        seen.push(e);
        if done {
            break;
        }
    }
    let names: Vec<_> = seen.iter().map(describe).collect();
    assert_eq!(
        names,
        [
            "created watched",
            "run_started",
            "status in_progress",
            "message hello",
            "message thinking aloud",
            "comment hello",
            "live"
        ]
    );

    // Live: what is stored now arrives on the open feed.
    reporter
        .ingest_run_events(
            &run.run.id,
            &IngestBatch {
                items: vec![message(MessageKind::Final, "3", "done it"), usage("u1", 42)],
            },
        )
        .await
        .expect("ingest live");
    let mut live: Vec<_> = [
        next(&mut feed).await,
        next(&mut feed).await,
        next(&mut feed).await,
    ]
    .iter()
    .map(describe)
    .collect();
    // The run's messages and the issue's activity are two logs, each followed by its own relay:
    // each keeps its order, but one batch's entries of the two may arrive interleaved.
    live.sort();
    assert_eq!(live, ["comment done it", "message done it", "usage 42"]);
    let resume_from = seen[3].clone();
    drop(feed);

    // Meanwhile, more happens.
    h.admin
        .add_comment(
            &issue.key,
            &CreateComment {
                body: "while away".into(),
            },
        )
        .await
        .expect("comment");
    reporter
        .finish_run(
            &run.run.id,
            &FinishRun {
                status: RunStatus::Succeeded,
                exit_code: Some(0),
                error: None,
            },
        )
        .await
        .expect("finish");
    h.admin
        .set_issue_status(&issue.key, IssueStatus::Done)
        .await
        .expect("close");

    // Resuming after "message hello" replays exactly what came after it.
    let mut resumed = h
        .admin
        .follow_issue(&issue.key, id_of(&resume_from))
        .await
        .expect("resume");
    let mut after = Vec::new();
    loop {
        let e = next(&mut resumed).await;
        if e == FeedEvent::Live {
            break;
        }
        after.push(describe(&e));
    }
    assert_eq!(
        after,
        [
            "message thinking aloud",
            "comment hello",
            "message done it",
            "comment done it",
            "usage 42",
            "comment while away",
            "run_finished succeeded",
            "status done"
        ]
    );

    let bad = h
        .admin
        .follow_issue(&issue.key, Some("not-an-id"))
        .await
        .expect_err("bad id");
    assert_eq!(status_of(&bad), 400);
    let other = h.issue("other").await;
    let running = h.run_on(&issue.key).await;
    let refused = h
        .client(&running.token)
        .follow_issue(&other.key, None)
        .await
        .expect_err("other issue");
    assert_eq!(status_of(&refused), 403);
    h.stop().await;
}

#[tokio::test]
async fn workspace_feed_streams_every_issues_changes_and_resumes() {
    let h = Harness::start().await;
    let a = h.issue("first").await;
    let url = format!("{}/api/v1/events", h.url());
    let http = reqwest::Client::new();
    let mut resp = http
        .get(&url)
        .bearer_auth(&h.admin_token)
        .send()
        .await
        .expect("feed");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-type"].to_str().expect("type"),
        "text/event-stream"
    );
    let b = h.issue("second").await;
    h.admin
        .set_issue_status(&a.key, IssueStatus::Closed)
        .await
        .expect("close");
    let mut text = String::new();
    while !text.contains("\"type\":\"status\"") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), resp.chunk())
            .await
            .expect("data within 30 s")
            .expect("read")
            .expect("open");
        text.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
    }
    let ids: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    assert_eq!(ids, ["1", "2", "3"], "{text}");
    for key in [&a.key, &b.key] {
        assert!(text.contains(&format!("\"issue_key\":\"{key}\"")), "{text}");
    }
    drop(resp);

    let resumed = http
        .get(&url)
        .bearer_auth(&h.admin_token)
        .header("last-event-id", "2")
        .send()
        .await
        .expect("resume");
    let mut resumed = resumed;
    let mut text = String::new();
    while !text.contains("event: live") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), resumed.chunk())
            .await
            .expect("data within 30 s")
            .expect("read")
            .expect("open");
        text.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
    }
    let ids: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    assert_eq!(ids, ["3"], "{text}");

    let run = h.run_on(&a.key).await;
    let refused = http
        .get(&url)
        .bearer_auth(&run.token)
        .send()
        .await
        .expect("run token");
    assert_eq!(refused.status().as_u16(), 403);
    h.stop().await;
}

/// Removes HTTP/1.1 chunked framing from a complete response body.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&body[..eol]).expect("chunk size");
        let size = usize::from_str_radix(size.trim(), 16).expect("hex chunk size");
        body = &body[eol + 2..];
        if size == 0 || body.len() < size {
            out.extend_from_slice(&body[..size.min(body.len())]);
            break;
        }
        out.extend_from_slice(&body[..size]);
        body = body.get(size + 2..).unwrap_or_default();
    }
    out
}

#[tokio::test]
async fn a_client_that_stops_reading_is_dropped_and_resumes_without_gaps() {
    let open_feeds = OpenFeeds::default();
    let h = Harness::with_config(ServerConfig {
        feed_queue_bytes: 256 * 1024,
        slow_client_after: Duration::from_millis(200),
        open_feeds: open_feeds.clone(),
        ..ServerConfig::default()
    })
    .await;
    let issue = h.issue("firehose").await;
    let run = h.run_on(&issue.key).await;

    // A client with a small receive buffer that sends its request and then reads nothing.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("buffer size");
    let mut slow = socket
        .connect(h.server.as_ref().expect("server").addr())
        .await
        .expect("connect");
    let request = format!(
        "GET /api/v1/issues/{}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
         Accept: text/event-stream\r\n\r\n",
        issue.key, h.admin_token
    );
    slow.write_all(request.as_bytes()).await.expect("request");
    eventually("the feed to open", || async {
        (open_feeds.count() == 1).then_some(())
    })
    .await;

    // Far more than the socket buffers and the queue hold.
    const MESSAGES: usize = 400;
    let filler = "x".repeat(64 * 1024);
    let items: Vec<_> = (0..MESSAGES)
        .map(|i| {
            message(
                MessageKind::Text,
                &format!("{i:04}"),
                &format!("{i:04} {filler}"),
            )
        })
        .collect();
    for batch in items.chunks(100) {
        h.admin
            .ingest_run_events(
                &run.run.id,
                &IngestBatch {
                    items: batch.to_vec(),
                },
            )
            .await
            .expect("ingest");
    }
    eventually("the slow client to be dropped", || async {
        (open_feeds.count() == 0).then_some(())
    })
    .await;

    // What it did get ends before the last message: the server gave up on it.
    let mut raw = Vec::new();
    let read = async {
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = slow.read(&mut buf).await.expect("read");
            raw.extend_from_slice(&buf[..n]);
            if n == 0 || raw.ends_with(b"\r\n0\r\n\r\n") {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the dropped feed's response ends");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("headers")
        + 4;
    let body = String::from_utf8(dechunk(&raw[split..])).expect("utf-8");
    let got: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .collect();
    let messages_got = body.matches("event: message").count();
    assert!(
        messages_got < MESSAGES,
        "the slow client got all {messages_got} messages"
    );
    let last_id = got.last().expect("some events before the drop").to_string();

    // Resuming from its last id delivers the rest, each message exactly once and in order
    // (a resumed reader that falls behind on this busy machine is dropped too, and resumes).
    let mut contents: Vec<String> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .filter_map(|v| v["message"]["content"].as_str().map(|c| c[..4].to_owned()))
        .collect();
    let mut last_id = last_id;
    'resume: loop {
        let mut feed = h
            .admin
            .follow_issue(&issue.key, Some(&last_id))
            .await
            .expect("resume");
        loop {
            let event = tokio::time::timeout(Duration::from_secs(30), feed.next())
                .await
                .expect("an event within 30 s");
            match event {
                None => continue 'resume,
                Some(event) => match event.expect("a readable event") {
                    FeedEvent::Live => break 'resume,
                    FeedEvent::Message { id, event } => {
                        contents.push(event.message.content.expect("content")[..4].to_owned());
                        last_id = id;
                    }
                    FeedEvent::Issue { id, .. } => last_id = id,
                },
            }
        }
    }
    let expected: Vec<String> = (0..MESSAGES).map(|i| format!("{i:04}")).collect();
    assert_eq!(contents, expected);
    eventually("the resumed feed to close", || async {
        (open_feeds.count() == 0).then_some(())
    })
    .await;
    h.stop().await;
}

/// Reads `feed` until the server ends it; fails the test if it is still open after 30 s.
async fn until_ended(feed: &mut IssueFeed) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = feed.next().await {
            event.expect("a readable event");
        }
    })
    .await
    .expect("the feed ends within 30 s");
}

#[tokio::test]
async fn a_feed_ends_when_its_token_is_revoked_or_expires() {
    let h = Harness::start().await;
    let issue = h.issue("watched by a token that goes").await;

    let revoked = h.store.create_user_token("revoked").await.unwrap();
    let mut feed = h
        .client(&revoked.token)
        .follow_issue(&issue.key, None)
        .await
        .expect("feed");
    while next(&mut feed).await != FeedEvent::Live {}
    h.admin.revoke_token(&revoked.id).await.expect("revoke");
    until_ended(&mut feed).await;

    let brief = h
        .store
        .create_team_token("brief", Some(Duration::from_secs(2)))
        .await
        .unwrap();
    let mut feed = h
        .client(&brief.token)
        .follow_issue(&issue.key, None)
        .await
        .expect("feed");
    while next(&mut feed).await != FeedEvent::Live {}
    until_ended(&mut feed).await;
    h.stop().await;
}
