//! Whatever the reader accepts from an adapter, a server with the default limits stores: the
//! limits are one set, and the batch wrapper's levels are accounted for.

use wujie_protocol::api::{IngestBatch, IngestItem, IngestOutcome};
use wujie_protocol::event::{Event, parse_line};

use super::harness::Harness;

/// A `tool_use` line whose input is nested so that the event is `depth` levels deep.
fn nested_line(depth: usize) -> String {
    let inner = depth - 2;
    format!(
        r#"{{"type":"tool_use","tool":"t","input":{{"x":{}1{}}},"source":"s","source_key":"deep-{depth}"}}"#,
        "[".repeat(inner),
        "]".repeat(inner)
    )
}

fn text_line(content_bytes: usize) -> String {
    format!(
        r#"{{"type":"text","content":"{}","source":"s","source_key":"big-{content_bytes}"}}"#,
        "a".repeat(content_bytes)
    )
}

fn item(event: Event) -> IngestItem {
    let (source, source_key) = match &event {
        Event::Message(m) => (m.source.clone(), m.source_key.clone()),
        _ => unreachable!("the lines here are messages"),
    };
    IngestItem {
        source,
        source_key,
        event,
    }
}

/// Sends every event the reader makes of `lines` to a run; returns how many there were.
async fn every_accepted_line_is_stored(h: &Harness, run_id: &str, lines: &[String]) -> usize {
    let mut accepted = 0;
    for line in lines {
        let Ok(events) = parse_line(line.as_bytes(), 1) else {
            continue;
        };
        accepted += 1;
        let batch = IngestBatch {
            items: events.into_iter().map(item).collect(),
        };
        let r = h
            .admin
            .ingest_run_events(run_id, &batch)
            .await
            .unwrap_or_else(|e| panic!("a line of {} bytes the reader took: {e}", line.len()));
        for result in &r.results {
            assert_eq!(
                result.outcome,
                IngestOutcome::Stored,
                "a line of {} bytes the reader took: {:?}",
                line.len(),
                result.reason
            );
        }
    }
    accepted
}

#[tokio::test]
async fn every_depth_the_reader_accepts_is_stored() {
    let h = Harness::start().await;
    let issue = h.issue("deep").await;
    let run = h.run_on(&issue.key).await;
    let lines: Vec<String> = (2..=200).map(nested_line).collect();
    let accepted = every_accepted_line_is_stored(&h, &run.run.id, &lines).await;
    assert!(accepted >= 60, "only {accepted} depths read");
    h.stop().await;
}

#[tokio::test]
async fn every_size_the_reader_accepts_is_stored() {
    let h = Harness::start().await;
    let issue = h.issue("big").await;
    let run = h.run_on(&issue.key).await;
    const MIB: usize = 1024 * 1024;
    let lines: Vec<String> = [
        MIB,
        8 * MIB - 200,
        8 * MIB - 50,
        8 * MIB,
        12 * MIB,
        16 * MIB - 200,
    ]
    .into_iter()
    .map(text_line)
    .collect();
    let accepted = every_accepted_line_is_stored(&h, &run.run.id, &lines).await;
    assert!(accepted >= 2, "only {accepted} sizes read");
    h.stop().await;
}
