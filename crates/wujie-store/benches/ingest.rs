//! Ingest throughput of the store: batches of 500 message events with 200-byte contents into
//! one run, on a real SQLite file. Prints events per second.
//!
//! `cargo bench -p wujie-store --bench ingest` (optional args: batches, batch size).

use std::time::Instant;

use wujie_protocol::api::{CreateIssue, CreateRun, IngestItem, IngestOutcome};
use wujie_protocol::event::{Event, Message, MessageKind};
use wujie_store::Store;

fn batch(run: usize, batch_no: usize, size: usize) -> Vec<IngestItem> {
    let content = "x".repeat(200);
    (0..size)
        .map(|i| {
            let key = format!("r{run}-b{batch_no}-e{i}");
            IngestItem {
                source: "bench".into(),
                source_key: key.clone(),
                event: Event::Message(Message {
                    kind: if i % 2 == 0 {
                        MessageKind::Text
                    } else {
                        MessageKind::Thinking
                    },
                    content: Some(content.clone()),
                    tool: None,
                    input: None,
                    output: None,
                    source: "bench".into(),
                    source_key: key,
                }),
            }
        })
        .collect()
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let batches = args.first().copied().unwrap_or(200);
    let size = args.get(1).copied().unwrap_or(500);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("bench.db")).await.expect("open");
        let issue = store
            .create_issue(&CreateIssue {
                title: "bench".into(),
                description: String::new(),
                discussion_id: None,
            })
            .await
            .expect("issue");
        let run = store
            .create_run(&issue.key, &CreateRun { provider: "bench".into(), cwd: "/".into(), job: None })
            .await
            .expect("run")
            .run;
        let prepared: Vec<Vec<IngestItem>> = (0..batches).map(|b| batch(0, b, size)).collect();
        let started = Instant::now();
        for items in &prepared {
            let result = store
                .ingest_run_events(&run.id, items, 8 << 20)
                .await
                .expect("ingest");
            assert!(result.results.iter().all(|r| r.outcome == IngestOutcome::Stored));
        }
        let fresh = started.elapsed();
        let started = Instant::now();
        for items in &prepared {
            store.ingest_run_events(&run.id, items, 8 << 20).await.expect("ingest");
        }
        let replay = started.elapsed();
        let events = (batches * size) as f64;
        println!(
            "ingest: {batches} batches x {size} events (200-byte text): {:.0} events/s new, {:.0} events/s duplicates ({:.1} ms per batch new)",
            events / fresh.as_secs_f64(),
            events / replay.as_secs_f64(),
            fresh.as_secs_f64() * 1000.0 / batches as f64,
        );
    });
}
