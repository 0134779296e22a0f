//! Ingest throughput through the whole HTTP path: typed client → JSON → axum → store → SQLite,
//! one reporter sending batches of 500 message events with 200-byte contents. Prints events/s.
//!
//! `cargo bench -p wujie-server --bench http_ingest` (optional args: batches, batch size,
//! concurrent reporters).

use std::time::Instant;

use wujie_client::{Client, Token};
use wujie_protocol::api::{CreateIssue, CreateRun, IngestBatch, IngestItem, IngestOutcome};
use wujie_protocol::event::{Event, Message, MessageKind};
use wujie_server::{EmbeddedServer, ServerConfig};
use wujie_store::Store;

fn batch(reporter: usize, batch_no: usize, size: usize) -> IngestBatch {
    let content = "x".repeat(200);
    let items = (0..size)
        .map(|i| {
            let key = format!("r{reporter}-b{batch_no}-e{i}");
            IngestItem {
                source: "bench".into(),
                source_key: key.clone(),
                event: Event::Message(Message {
                    kind: if i % 2 == 0 {
                        MessageKind::Text
                    } else {
                        MessageKind::ToolResult
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
        .collect();
    IngestBatch { items }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let batches = args.first().copied().unwrap_or(200);
    let size = args.get(1).copied().unwrap_or(500);
    let reporters = args.get(2).copied().unwrap_or(1).max(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("bench.db")).await.expect("open");
        let admin = store.create_user_token("bench").await.expect("token").token;
        let server = EmbeddedServer::start(store, ServerConfig::default())
            .await
            .expect("server");
        let client = Client::new(&server.url(), Token::new(admin.clone())).expect("client");
        let mut work = Vec::new();
        for r in 0..reporters {
            let issue = client
                .create_issue(&CreateIssue {
                    title: format!("bench {r}"),
                    description: String::new(),
                    discussion_id: None,
                })
                .await
                .expect("issue");
            let created = client
                .create_run(
                    &issue.key,
                    &CreateRun {
                        provider: "bench".into(),
                        cwd: "/".into(),
                        job: None,
                    },
                )
                .await
                .expect("run");
            // Events are reported with a user token (a run's own token may not report them),
            // each reporter over a client of its own.
            let reporter =
                Client::new(&server.url(), Token::new(admin.clone())).expect("client");
            let prepared: Vec<IngestBatch> = (0..batches).map(|b| batch(r, b, size)).collect();
            work.push((reporter, created.run.id, prepared));
        }
        let started = Instant::now();
        let tasks: Vec<_> = work
            .into_iter()
            .map(|(reporter, run_id, prepared)| {
                tokio::spawn(async move {
                    for b in &prepared {
                        let r = reporter.ingest_run_events(&run_id, b).await.expect("ingest");
                        assert!(r.results.iter().all(|i| i.outcome == IngestOutcome::Stored));
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("reporter");
        }
        let elapsed = started.elapsed();
        let events = (reporters * batches * size) as f64;
        println!(
            "http ingest: {reporters} reporter(s) x {batches} batches x {size} events (200-byte text): {:.0} events/s",
            events / elapsed.as_secs_f64()
        );
        server.shutdown().await;
    });
}
