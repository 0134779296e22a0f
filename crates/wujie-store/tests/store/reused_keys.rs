//! A key is one event: the same event under it again is a duplicate, a different one is refused
//! with the key named (never answered `duplicate`, which would drop it silently), for messages
//! and usage, on a running and on an ended run, within a batch and across batches.

use super::common::{TestStore, finish_succeeded, issue_with_run};

use wujie_protocol::api::{IngestItem, IngestOutcome};
use wujie_protocol::event::{Event, Message, MessageKind, Usage};

fn text(key: &str, content: &str) -> IngestItem {
    IngestItem {
        source: "s".into(),
        source_key: key.into(),
        event: Event::Message(Message {
            kind: MessageKind::Text,
            content: Some(content.into()),
            tool: None,
            input: None,
            output: None,
            source: "s".into(),
            source_key: key.into(),
        }),
    }
}

fn usage(key: &str, input_tokens: u64) -> IngestItem {
    IngestItem {
        source: "s".into(),
        source_key: key.into(),
        event: Event::Usage(Usage {
            provider: "p".into(),
            model: "m".into(),
            input_tokens,
            output_tokens: 2,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }),
    }
}

/// Outcomes of a batch, with the reason of each refusal.
async fn ingest(
    store: &wujie_store::Store,
    run_id: &str,
    items: &[IngestItem],
) -> Vec<(IngestOutcome, String)> {
    store
        .ingest_run_events(run_id, items, 1 << 20)
        .await
        .expect("ingest")
        .results
        .into_iter()
        .map(|r| (r.outcome, r.reason.unwrap_or_default()))
        .collect()
}

fn outcomes(results: &[(IngestOutcome, String)]) -> Vec<IngestOutcome> {
    results.iter().map(|(o, _)| *o).collect()
}

fn refused_for_reuse(result: &(IngestOutcome, String), key: &str) {
    assert_eq!(result.0, IngestOutcome::Rejected, "{result:?}");
    assert!(
        result.1.contains(&format!("{key:?}")) && result.1.contains("already used"),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_different_event_under_a_used_key_is_refused_and_the_same_one_is_a_duplicate() {
    let t = TestStore::open().await;
    let store = &t.store;
    let (issue, run) = issue_with_run(store, "reused keys").await;

    let first = ingest(store, &run.id, &[text("k1", "one"), usage("u1", 1)]).await;
    assert_eq!(
        outcomes(&first),
        [IngestOutcome::Stored, IngestOutcome::Stored]
    );

    // Within one batch: the first event of a key is stored, the same one again is a
    // duplicate, a different one is refused.
    let batch = ingest(
        store,
        &run.id,
        &[text("k2", "two"), text("k2", "two"), text("k2", "not two")],
    )
    .await;
    assert_eq!(
        outcomes(&batch[..2]),
        [IngestOutcome::Stored, IngestOutcome::Duplicate]
    );
    refused_for_reuse(&batch[2], "k2");

    // Across batches, against what is stored.
    let again = ingest(
        store,
        &run.id,
        &[
            text("k1", "one"),
            text("k1", "changed"),
            usage("u1", 1),
            usage("u1", 100),
        ],
    )
    .await;
    assert_eq!(again[0].0, IngestOutcome::Duplicate);
    refused_for_reuse(&again[1], "k1");
    assert_eq!(again[2].0, IngestOutcome::Duplicate);
    refused_for_reuse(&again[3], "u1");

    // An ended run answers the same.
    finish_succeeded(store, &run.id).await;
    let late = ingest(
        store,
        &run.id,
        &[
            text("k1", "one"),
            text("k1", "late"),
            usage("u1", 1),
            usage("u1", 7),
        ],
    )
    .await;
    assert_eq!(late[0].0, IngestOutcome::Duplicate);
    refused_for_reuse(&late[1], "k1");
    assert_eq!(late[2].0, IngestOutcome::Duplicate);
    refused_for_reuse(&late[3], "u1");

    // What was stored is the first event of each key, once.
    let read = store.issue(&issue.key).await.expect("issue");
    let texts: Vec<&str> = read.runs[0]
        .messages
        .iter()
        .filter_map(|m| m.content.as_deref())
        .collect();
    assert_eq!(texts, ["one", "two"]);
    assert_eq!(read.runs[0].usage.len(), 1);
    assert_eq!(read.runs[0].usage[0].input_tokens, 1);
}
