use wujie_protocol::api::{IngestBatch, IngestOutcome, IngestResult};
use wujie_protocol::event::MessageKind;
use wujie_server::ServerConfig;

use super::harness::{Harness, message, usage};

fn outcomes(r: &IngestResult) -> Vec<IngestOutcome> {
    r.results.iter().map(|i| i.outcome).collect()
}

fn batch(n: usize) -> IngestBatch {
    let mut items: Vec<_> = (0..n)
        .map(|i| {
            let kind = match i % 4 {
                0 => MessageKind::UserInput,
                1 => MessageKind::Text,
                2 => MessageKind::Thinking,
                _ => MessageKind::Final,
            };
            message(kind, &format!("m{i}"), &format!("message number {i}"))
        })
        .collect();
    items.push(usage("usage-1", 42));
    IngestBatch { items }
}

#[tokio::test]
async fn the_same_batch_twice_is_stored_once() {
    let h = Harness::start().await;
    let issue = h.issue("idempotent").await;
    let run = h.run_on(&issue.key).await.run;
    let b = batch(40);

    let first = h.admin.ingest_run_events(&run.id, &b).await.expect("first");
    assert!(
        outcomes(&first).iter().all(|o| *o == IngestOutcome::Stored),
        "{first:?}"
    );
    let counts = (
        h.count("SELECT COUNT(*) FROM run_messages").await,
        h.count("SELECT COUNT(*) FROM run_usage").await,
        h.count("SELECT COUNT(*) FROM comments").await,
    );
    assert_eq!(counts, (40, 1, 20));

    let second = h
        .admin
        .ingest_run_events(&run.id, &b)
        .await
        .expect("second");
    assert!(
        outcomes(&second)
            .iter()
            .all(|o| *o == IngestOutcome::Duplicate),
        "{second:?}"
    );
    let again = (
        h.count("SELECT COUNT(*) FROM run_messages").await,
        h.count("SELECT COUNT(*) FROM run_usage").await,
        h.count("SELECT COUNT(*) FROM comments").await,
    );
    assert_eq!(again, counts);

    let stored = h.admin.get_run(&run.id).await.expect("run");
    let keys: Vec<&str> = stored
        .messages
        .iter()
        .map(|m| m.source_key.as_str())
        .collect();
    let expected: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
    assert_eq!(keys, expected, "arrival order");
    assert_eq!(stored.usage.len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn concurrent_duplicate_batches_store_each_item_once() {
    let h = Harness::start().await;
    let issue = h.issue("concurrent").await;
    let run = h.run_on(&issue.key).await.run;
    let b = batch(300);
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let client = h.admin.clone();
        let (id, b) = (run.id.clone(), b.clone());
        tasks.push(tokio::spawn(async move {
            client.ingest_run_events(&id, &b).await
        }));
    }
    let mut stored_per_item = vec![0usize; b.items.len()];
    for t in tasks {
        let result = t.await.expect("join").expect("ingest");
        for (i, r) in result.results.iter().enumerate() {
            match r.outcome {
                IngestOutcome::Stored => stored_per_item[i] += 1,
                IngestOutcome::Duplicate => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    assert!(
        stored_per_item.iter().all(|n| *n == 1),
        "{stored_per_item:?}"
    );
    assert_eq!(h.count("SELECT COUNT(*) FROM run_messages").await, 300);
    assert_eq!(h.count("SELECT COUNT(*) FROM comments").await, 150);
    h.stop().await;
}

#[tokio::test]
async fn a_key_reused_inside_one_batch_keeps_the_first_event_and_refuses_the_other() {
    let h = Harness::start().await;
    let issue = h.issue("dup in batch").await;
    let run = h.run_on(&issue.key).await.run;
    let b = IngestBatch {
        items: vec![
            message(MessageKind::Text, "same", "first"),
            message(MessageKind::Text, "same", "second"),
            usage("u", 1),
            usage("u", 2),
        ],
    };
    let r = h
        .admin
        .ingest_run_events(&run.id, &b)
        .await
        .expect("ingest");
    use IngestOutcome::*;
    // Other content under a used key is another event: refused, never dropped as a duplicate.
    assert_eq!(outcomes(&r), [Stored, Rejected, Stored, Rejected]);
    let stored = h.admin.get_run(&run.id).await.expect("run");
    assert_eq!(stored.messages.len(), 1);
    assert_eq!(stored.messages[0].content.as_deref(), Some("first"));
    assert_eq!(stored.usage.len(), 1);
    assert_eq!(stored.usage[0].input_tokens, 1);
    h.stop().await;
}

#[tokio::test]
async fn an_oversized_event_is_rejected_alone() {
    let h = Harness::with_config(ServerConfig {
        max_event_bytes: 1024,
        ..ServerConfig::default()
    })
    .await;
    let issue = h.issue("oversized").await;
    let run = h.run_on(&issue.key).await.run;
    let b = IngestBatch {
        items: vec![
            message(MessageKind::Text, "a", "small"),
            message(MessageKind::Text, "b", &"x".repeat(2000)),
            message(MessageKind::Final, "c", "done"),
        ],
    };
    let r = h
        .admin
        .ingest_run_events(&run.id, &b)
        .await
        .expect("ingest");
    use IngestOutcome::*;
    assert_eq!(outcomes(&r), [Stored, Rejected, Stored]);
    let reason = r.results[1].reason.as_deref().expect("reason");
    assert!(reason.contains("1024"), "{reason}");
    let stored = h.admin.get_run(&run.id).await.expect("run");
    let keys: Vec<&str> = stored
        .messages
        .iter()
        .map(|m| m.source_key.as_str())
        .collect();
    assert_eq!(keys, ["a", "c"]);
    h.stop().await;
}

#[tokio::test]
async fn usage_is_idempotent_per_key() {
    let h = Harness::start().await;
    let issue = h.issue("usage").await;
    let run = h.run_on(&issue.key).await.run;
    for _ in 0..3 {
        let b = IngestBatch {
            items: vec![usage("turn-1", 10), usage("turn-2", 20)],
        };
        h.admin
            .ingest_run_events(&run.id, &b)
            .await
            .expect("ingest");
    }
    let stored = h.admin.get_run(&run.id).await.expect("run");
    let tokens: Vec<u64> = stored.usage.iter().map(|u| u.input_tokens).collect();
    assert_eq!(tokens, [10, 20]);
    h.stop().await;
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413() {
    let h = Harness::start().await;
    let issue = h.issue("huge").await;
    let run = h.run_on(&issue.key).await.run;
    let body = vec![b' '; wujie_server::MAX_BODY_BYTES + 1];
    let resp = reqwest::Client::new()
        .post(format!("{}/api/v1/runs/{}/events", h.url(), run.id))
        .bearer_auth(&h.admin_token)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 413);
    h.stop().await;
}

/// PostgreSQL's text holds no NUL: an event with one was answered 500 on every retry, and
/// every event after it waited behind it for ever. Both backends store it as written.
#[tokio::test]
async fn an_event_with_a_nul_character_is_stored_as_written() {
    let h = Harness::start().await;
    let issue = h.issue("nul").await;
    let run = h.run_on(&issue.key).await.run;
    let with_nul = "before\0after";
    let b = IngestBatch {
        items: vec![
            message(MessageKind::Text, "m0", "plain"),
            message(MessageKind::Final, "m1", with_nul),
            message(MessageKind::Text, "m2", "after it"),
        ],
    };
    let result = h
        .admin
        .ingest_run_events(&run.id, &b)
        .await
        .expect("ingest");
    assert_eq!(outcomes(&result), [IngestOutcome::Stored; 3], "{result:?}");

    let stored = h.admin.get_run(&run.id).await.expect("run");
    let contents: Vec<Option<&str>> = stored
        .messages
        .iter()
        .map(|m| m.content.as_deref())
        .collect();
    assert_eq!(contents, [Some("plain"), Some(with_nul), Some("after it")]);
    // The final answer became the agent's comment, NUL and all.
    let detail = h.admin.get_issue(&issue.key).await.expect("issue");
    assert_eq!(detail.comments[0].body, with_nul);
    h.stop().await;
}
