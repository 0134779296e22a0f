//! A long transcript is read in pages bounded in bytes (`GET /runs/{id}/messages`), and the
//! answers that hold whole runs (`GET /issues/{key}`, `GET /runs/{id}`) carry only each run's
//! latest messages, saying so, so no answer grows with the transcript.

use reqwest::StatusCode;
use serde_json::Value;
use wujie_client::FeedEvent;
use wujie_protocol::api::{IngestBatch, RunMessage};
use wujie_protocol::event::MessageKind;
use wujie_store::{ANSWER_MESSAGE_BYTES, DEFAULT_MESSAGE_PAGE_BYTES};

use super::harness::{Harness, message};

const MIB: usize = 1 << 20;

/// Messages `m0`… of 1 MiB each, their content a letter of their own, stored on `run_id`
/// two per request.
async fn store_messages(h: &Harness, run_id: &str, count: usize) {
    let items: Vec<_> = (0..count)
        .map(|i| {
            let letter = char::from(b'a' + u8::try_from(i % 26).unwrap());
            message(
                MessageKind::Text,
                &format!("m{i}"),
                &letter.to_string().repeat(MIB),
            )
        })
        .collect();
    for pair in items.chunks(2) {
        h.admin
            .ingest_run_events(
                run_id,
                &IngestBatch {
                    items: pair.to_vec(),
                },
            )
            .await
            .expect("ingest");
    }
}

/// What the budgets count of a message: the bytes of its texts.
fn bytes_of(m: &RunMessage) -> u64 {
    let input = m
        .input
        .as_ref()
        .map_or(0, |input| serde_json::to_string(input).unwrap().len());
    let texts = [&m.content, &m.tool, &m.output];
    (texts
        .iter()
        .map(|t| t.as_ref().map_or(0, String::len))
        .sum::<usize>()
        + input
        + m.source.len()
        + m.source_key.len()) as u64
}

#[tokio::test]
async fn a_long_transcript_comes_in_order_once_in_pages_within_their_budget() {
    let h = Harness::start().await;
    let issue = h.issue("long transcript").await;
    let run = h.run_on(&issue.key).await;
    store_messages(&h, &run.run.id, 12).await;

    // Pages of 2.5 MiB hold two messages of 1 MiB each; the run's own token reads them too.
    let agent = h.client(&run.token);
    let budget = (5 * MIB / 2) as u64;
    let mut keys = Vec::new();
    let mut after = 0;
    let mut pages = 0;
    loop {
        let page = agent
            .run_messages(&run.run.id, after, Some(budget))
            .await
            .expect("page");
        pages += 1;
        let bytes: u64 = page.messages.iter().map(bytes_of).sum();
        assert!(bytes <= budget, "page {pages} holds {bytes} bytes");
        assert!(!page.messages.is_empty(), "page {pages} is empty");
        keys.extend(page.messages.iter().map(|m| m.source_key.clone()));
        assert!(page.next_after > after, "the cursor moves on");
        after = page.next_after;
        if !page.more {
            break;
        }
    }
    let expected: Vec<String> = (0..12).map(|i| format!("m{i}")).collect();
    assert_eq!(keys, expected, "every message, in order, once");
    assert_eq!(pages, 6);

    // The default page (1 MiB) holds one such message: a message bigger than the page
    // comes alone, so reading always moves on.
    let first = h
        .admin
        .run_messages(&run.run.id, 0, None)
        .await
        .expect("default page");
    assert_eq!(first.messages.len(), 1);
    assert!(bytes_of(&first.messages[0]) > DEFAULT_MESSAGE_PAGE_BYTES);
    assert!(first.more);
    let tiny = h
        .admin
        .run_messages(&run.run.id, first.next_after, Some(1))
        .await
        .expect("a page of one byte");
    assert_eq!(tiny.messages.len(), 1);
    assert_eq!(tiny.messages[0].source_key, "m1");

    // After the last message: an empty page, nothing more, the cursor where it was.
    let end = h
        .admin
        .run_messages(&run.run.id, after, None)
        .await
        .expect("past the end");
    assert!(end.messages.is_empty() && !end.more);
    assert_eq!(end.next_after, after);
}

#[tokio::test]
async fn issue_and_run_answers_hold_the_latest_messages_and_say_what_they_left_out() {
    let h = Harness::start().await;
    let issue = h.issue("answers").await;
    let older = h.run_on(&issue.key).await;
    store_messages(&h, &older.run.id, 3).await;
    let newer = h.run_on(&issue.key).await;
    store_messages(&h, &newer.run.id, 4).await;

    let detail = h.admin.get_issue(&issue.key).await.expect("issue");
    let held: u64 = detail
        .runs
        .iter()
        .flat_map(|r| &r.messages)
        .map(bytes_of)
        .sum();
    // The budget, plus at most the one message that comes alone when it is bigger.
    assert!(
        held <= ANSWER_MESSAGE_BYTES + MIB as u64 + 64,
        "{held} bytes"
    );
    let [first, second] = &detail.runs[..] else {
        panic!("two runs: {:?}", detail.runs.len())
    };
    assert_eq!(second.id, newer.run.id);
    assert_eq!(
        second
            .messages
            .iter()
            .map(|m| m.source_key.as_str())
            .collect::<Vec<_>>(),
        ["m3"],
        "the newest run's latest message"
    );
    assert!(!second.messages_complete);
    let before = second.messages_before.expect("where the left-out ones end");
    // The newest run took the budget: the older run holds nothing, and says so.
    assert!(first.messages.is_empty() && !first.messages_complete);

    // Paging from the start up to `messages_before` gives exactly the ones left out.
    let mut left_out = Vec::new();
    let mut after = 0;
    loop {
        let page = h
            .admin
            .run_messages(&newer.run.id, after, None)
            .await
            .expect("page");
        let Some(last) = page.messages.last() else {
            break;
        };
        if page.next_after >= before {
            break;
        }
        left_out.push(last.source_key.clone());
        after = page.next_after;
    }
    assert_eq!(left_out, ["m0", "m1", "m2"]);

    let run = h.admin.get_run(&newer.run.id).await.expect("run");
    assert_eq!(run.messages.len(), 1);
    assert!(!run.messages_complete);
    assert_eq!(run.messages_before, Some(before));

    // A short transcript is whole, and says so without a position.
    let small = h.issue("short").await;
    let short = h.run_on(&small.key).await;
    h.admin
        .ingest_run_events(
            &short.run.id,
            &IngestBatch {
                items: vec![message(MessageKind::Text, "only", "hello")],
            },
        )
        .await
        .expect("ingest");
    let raw: Value = reqwest::Client::new()
        .get(format!("{}/api/v1/runs/{}", h.url(), short.run.id))
        .bearer_auth(&h.admin_token)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(raw["messages_complete"], true);
    assert!(raw.get("messages_before").is_none(), "{raw}");
    assert_eq!(raw["messages"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn bad_page_requests_are_refused_in_words() {
    let h = Harness::start().await;
    let issue = h.issue("bad pages").await;
    let run = h.run_on(&issue.key).await;
    let get = |query: &str| {
        reqwest::Client::new()
            .get(format!(
                "{}/api/v1/runs/{}/messages?{query}",
                h.url(),
                run.run.id
            ))
            .bearer_auth(&h.admin_token)
            .send()
    };
    for (query, words) in [
        ("max_bytes=0", "max_bytes must be 1 to 16777216"),
        ("max_bytes=17000000", "max_bytes must be 1 to 16777216"),
        ("max_bytes=99999999999999999999999", "max_bytes"),
        ("after=abc", "after is the position of a message"),
        ("after=-1", "after must be a message position"),
    ] {
        let answer = get(query).await.expect("get");
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{query}");
        let body: Value = answer.json().await.expect("an ApiError");
        let error = body["error"].as_str().expect("error text");
        assert!(error.contains(words), "{query}: {error}");
    }
    // Another issue's run token may not read the transcript; a missing run is not found.
    let other = h.issue("other").await;
    let stranger = h.run_on(&other.key).await;
    let refused = h
        .client(&stranger.token)
        .run_messages(&run.run.id, 0, None)
        .await
        .expect_err("another issue's run");
    assert_eq!(refused.status(), Some(StatusCode::FORBIDDEN));
    let missing = h
        .admin
        .run_messages("no-such-run", 0, None)
        .await
        .expect_err("missing run");
    assert_eq!(missing.status(), Some(StatusCode::NOT_FOUND));
}

#[tokio::test]
async fn the_issue_feed_replays_a_long_transcript_in_order_once() {
    let h = Harness::start().await;
    let issue = h.issue("replayed").await;
    let run = h.run_on(&issue.key).await;
    // More than one read of the replay holds (4 MiB).
    store_messages(&h, &run.run.id, 12).await;
    let mut feed = h.admin.follow_issue(&issue.key, None).await.expect("feed");
    let mut keys = Vec::new();
    loop {
        match feed.next().await.expect("open").expect("event") {
            FeedEvent::Message { event, .. } => keys.push(event.message.source_key),
            FeedEvent::Issue { .. } => {}
            FeedEvent::Live => break,
        }
    }
    let expected: Vec<String> = (0..12).map(|i| format!("m{i}")).collect();
    assert_eq!(keys, expected);
}
