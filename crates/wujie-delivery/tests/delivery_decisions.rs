//! The deliverer's decisions (retry, shrink the batch, refuse rows, prefetch the next batch,
//! give up on a run's end) against a server that answers as each test scripts it, over a real
//! outbox. The same paths through the real server are covered end to end by
//! `crates/wujie-cli/tests/delivery.rs`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tempfile::TempDir;
use wujie_client::{ClientError, Method, StatusCode};
use wujie_delivery::reporter::{CloseSummary, Reporter, ReporterNotice, TargetRef};
use wujie_delivery::server::DeliveryServer;
use wujie_protocol::api::{
    FinishRun, IngestItem, IngestItemResult, IngestOutcome, IngestResult, RunStatus,
};
use wujie_protocol::event::{Event, Message, MessageKind};
use wujie_store::outbox::{NewTarget, Outbox, SpoolMark, TargetKind, TargetLock};

const RUN: &str = "run-1";

type IngestScript = dyn Fn(usize, &[String]) -> Result<IngestResult, ClientError> + Send + Sync;
type FinishScript = dyn Fn(usize) -> Result<(), ClientError> + Send + Sync;

/// A server that answers the `n`th request (from 0) as its script says, and records the
/// `source_key`s of every batch it was sent and every run end.
#[derive(Clone)]
struct ScriptedServer(Arc<Script>);

struct Script {
    ingest: Box<IngestScript>,
    finish: Box<FinishScript>,
    batches: Mutex<Vec<Vec<String>>>,
    finishes: Mutex<Vec<FinishRun>>,
}

impl ScriptedServer {
    fn new(
        ingest: impl Fn(usize, &[String]) -> Result<IngestResult, ClientError> + Send + Sync + 'static,
    ) -> ScriptedServer {
        ScriptedServer::with_finish(ingest, |_| Ok(()))
    }

    fn with_finish(
        ingest: impl Fn(usize, &[String]) -> Result<IngestResult, ClientError> + Send + Sync + 'static,
        finish: impl Fn(usize) -> Result<(), ClientError> + Send + Sync + 'static,
    ) -> ScriptedServer {
        ScriptedServer(Arc::new(Script {
            ingest: Box::new(ingest),
            finish: Box::new(finish),
            batches: Mutex::new(Vec::new()),
            finishes: Mutex::new(Vec::new()),
        }))
    }

    fn batches(&self) -> Vec<Vec<String>> {
        self.0.batches.lock().unwrap().clone()
    }

    fn finishes(&self) -> usize {
        self.0.finishes.lock().unwrap().len()
    }
}

impl DeliveryServer for ScriptedServer {
    async fn ingest(
        &self,
        target: &TargetRef,
        items: &[&str],
    ) -> Result<IngestResult, ClientError> {
        assert_eq!(target.id, RUN);
        let keys: Vec<String> = items
            .iter()
            .map(|json| {
                let item: IngestItem = serde_json::from_str(json).expect("an encoded item");
                item.source_key
            })
            .collect();
        let n = {
            let mut batches = self.0.batches.lock().unwrap();
            batches.push(keys.clone());
            batches.len() - 1
        };
        (self.0.ingest)(n, &keys)
    }

    async fn finish_run(&self, run_id: &str, finish: &FinishRun) -> Result<(), ClientError> {
        assert_eq!(run_id, RUN);
        let n = {
            let mut finishes = self.0.finishes.lock().unwrap();
            finishes.push(finish.clone());
            finishes.len() - 1
        };
        (self.0.finish)(n)
    }
}

fn stored(keys: &[String]) -> Result<IngestResult, ClientError> {
    Ok(IngestResult {
        results: keys
            .iter()
            .map(|_| IngestItemResult {
                outcome: IngestOutcome::Stored,
                reason: None,
            })
            .collect(),
    })
}

fn status(status: StatusCode, message: &str) -> ClientError {
    ClientError::Status {
        method: Method::POST,
        path: format!("/runs/{RUN}/events"),
        status,
        message: message.to_owned(),
        retry_after: None,
    }
}

fn unreachable() -> ClientError {
    ClientError::Network {
        method: Method::POST,
        path: format!("/runs/{RUN}/events"),
        message: "connection refused".to_owned(),
        timeout: false,
    }
}

#[derive(Default)]
struct Notices {
    refused: Mutex<Vec<(String, String)>>,
    retrying: Mutex<usize>,
}

impl ReporterNotice for Notices {
    fn refused(&self, item: &str, reason: &str) {
        let key = serde_json::from_str::<IngestItem>(item)
            .map(|i| i.source_key)
            .unwrap_or_else(|_| item.to_owned());
        self.refused.lock().unwrap().push((key, reason.to_owned()));
    }

    fn retrying(&self, _error: &ClientError, _pending: i64) {
        *self.retrying.lock().unwrap() += 1;
    }
}

fn key(i: usize) -> String {
    format!("k{i:04}")
}

fn keys(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(key).collect()
}

/// A real outbox in a temp dir holding `rows` committed rows for the run, as a reporter that
/// stopped before delivering them leaves it (so every test starts from the same batches).
struct Fixture {
    _dir: TempDir,
    outbox: Outbox,
    _owner: TargetLock,
}

async fn outbox_with(rows: usize) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let outbox = Outbox::open(&dir.path().join("outbox.db"))
        .await
        .expect("outbox");
    let owner = outbox
        .add_target(&NewTarget {
            id: RUN,
            kind: TargetKind::Run,
            server_url: "http://127.0.0.1:9",
            label: "WUJ-1",
            reporter_pid: std::process::id(),
        })
        .await
        .expect("target");
    let encoded: Vec<(String, i64)> = (0..rows)
        .map(|i| (serde_json::to_string(&item(i)).expect("encode"), 0))
        .collect();
    outbox.append(RUN, &encoded).await.expect("append");
    Fixture {
        _dir: dir,
        outbox,
        _owner: owner,
    }
}

/// The text event `row {i}`, keyed `key(i)`.
fn item(i: usize) -> IngestItem {
    IngestItem {
        source: "s".into(),
        source_key: key(i),
        event: Event::Message(Message {
            kind: MessageKind::Text,
            content: Some(format!("row {i}")),
            tool: None,
            input: None,
            output: None,
            source: "s".into(),
            source_key: key(i),
        }),
    }
}

/// Delivers what the outbox holds (and `finish`, if any) and closes the reporter.
async fn deliver(
    fixture: &Fixture,
    server: &ScriptedServer,
    finish: Option<FinishRun>,
) -> (CloseSummary, Arc<Notices>) {
    let notices = Arc::new(Notices::default());
    let reporter = Reporter::start(
        fixture.outbox.clone(),
        server.clone(),
        TargetRef {
            id: RUN.to_owned(),
            kind: TargetKind::Run,
        },
        notices.clone(),
    );
    if let Some(finish) = finish {
        reporter.finish(RUN, finish).await.expect("finish");
    }
    let summary = reporter
        .close(Duration::from_secs(10), |_| {})
        .await
        .expect("close");
    (summary, notices)
}

fn succeeded() -> FinishRun {
    FinishRun {
        status: RunStatus::Succeeded,
        exit_code: Some(0),
        error: None,
    }
}

#[tokio::test]
async fn a_batch_the_server_could_not_take_is_sent_again_whole_until_it_is() {
    let fixture = outbox_with(5).await;
    let server = ScriptedServer::new(|n, keys| match n {
        0 => Err(status(StatusCode::SERVICE_UNAVAILABLE, "busy")),
        1 => Err(unreachable()),
        2 => Err(status(StatusCode::TOO_MANY_REQUESTS, "slow down")),
        _ => stored(keys),
    });
    let (summary, notices) = deliver(&fixture, &server, None).await;
    assert_eq!(server.batches(), vec![keys(0..5); 4]);
    assert_eq!(*notices.retrying.lock().unwrap(), 3);
    assert_eq!(summary.stats.delivered, 5);
    assert_eq!((summary.pending, summary.failed), (0, 0));
}

#[tokio::test]
async fn a_batch_refused_whole_is_halved_until_the_row_at_fault_stands_alone() {
    let fixture = outbox_with(8).await;
    let bad = key(5);
    let server = ScriptedServer::new(move |_, keys| {
        if keys.contains(&bad) {
            Err(status(StatusCode::UNPROCESSABLE_ENTITY, "not an event"))
        } else {
            stored(keys)
        }
    });
    let (summary, notices) = deliver(&fixture, &server, None).await;
    let batches = server.batches();
    // Each batch sent after a refusal is at most half the refused one.
    for pair in batches.windows(2) {
        if pair[0].contains(&key(5)) && pair[0].len() > 1 {
            assert!(
                pair[1].len() <= pair[0].len() / 2,
                "{} rows sent after {} were refused: {batches:?}",
                pair[1].len(),
                pair[0].len()
            );
        }
    }
    assert_eq!(batches.last().unwrap(), &keys(6..8));
    let refused = notices.refused.lock().unwrap().clone();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].0, key(5));
    assert!(refused[0].1.contains("not an event"), "{refused:?}");
    let failed = fixture.outbox.failed(RUN).await.expect("failed rows");
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0].reason.contains("not an event"),
        "{}",
        failed[0].reason
    );
    assert_eq!(summary.stats.delivered, 7);
    assert_eq!((summary.pending, summary.failed), (0, 1));
}

#[tokio::test]
async fn a_lone_row_refused_for_good_is_kept_with_the_servers_reason() {
    let fixture = outbox_with(1).await;
    let server =
        ScriptedServer::new(|_, _| Err(status(StatusCode::NOT_FOUND, "run run-1 not found")));
    let (summary, notices) = deliver(&fixture, &server, None).await;
    assert_eq!(server.batches(), vec![keys(0..1)]);
    assert_eq!(*notices.retrying.lock().unwrap(), 0);
    let failed = fixture.outbox.failed(RUN).await.expect("failed rows");
    assert_eq!(failed.len(), 1);
    assert!(
        failed[0].reason.contains("run run-1 not found"),
        "{}",
        failed[0].reason
    );
    assert_eq!((summary.stats.delivered, summary.failed), (0, 1));
}

#[tokio::test]
async fn rows_refused_one_by_one_are_kept_and_the_rest_delivered() {
    let fixture = outbox_with(4).await;
    let server = ScriptedServer::new(|_, keys| {
        Ok(IngestResult {
            results: keys
                .iter()
                .map(|k| IngestItemResult {
                    outcome: if k == &key(2) {
                        IngestOutcome::Rejected
                    } else {
                        IngestOutcome::Duplicate
                    },
                    reason: (k == &key(2)).then(|| "too large".to_owned()),
                })
                .collect(),
        })
    });
    let (summary, notices) = deliver(&fixture, &server, None).await;
    assert_eq!(server.batches(), vec![keys(0..4)]);
    assert_eq!(
        *notices.refused.lock().unwrap(),
        vec![(key(2), "too large".to_owned())]
    );
    assert_eq!((summary.stats.delivered, summary.failed), (3, 1));
}

#[tokio::test]
async fn the_batch_read_during_a_request_follows_it_when_every_row_was_answered() {
    let fixture = outbox_with(1500).await;
    let server = ScriptedServer::new(|_, keys| stored(keys));
    let (summary, _) = deliver(&fixture, &server, None).await;
    assert_eq!(server.batches(), vec![keys(0..1000), keys(1000..1500)]);
    assert_eq!(summary.stats.delivered, 1500);
}

#[tokio::test]
async fn rows_left_unanswered_are_sent_again_before_the_batch_read_during_the_request() {
    let fixture = outbox_with(1500).await;
    // The first answer covers only 600 of the 1000 rows sent.
    let server = ScriptedServer::new(|n, keys| {
        let answered = if n == 0 { 600 } else { keys.len() };
        stored(&keys[..answered])
    });
    let (summary, _) = deliver(&fixture, &server, None).await;
    assert_eq!(
        server.batches(),
        vec![keys(0..1000), keys(600..1500)],
        "the prefetched rows from 1000 on must not jump the unanswered ones"
    );
    assert_eq!(summary.stats.delivered, 1500);
    assert_eq!(summary.pending, 0);
}

#[tokio::test]
async fn a_runs_end_is_sent_after_its_rows_and_retried_while_the_server_is_unavailable() {
    let fixture = outbox_with(2).await;
    let server = ScriptedServer::with_finish(
        |_, keys| stored(keys),
        |n| match n {
            0 => Err(status(StatusCode::BAD_GATEWAY, "proxy")),
            _ => Ok(()),
        },
    );
    let (summary, notices) = deliver(&fixture, &server, Some(succeeded())).await;
    assert_eq!(server.batches(), vec![keys(0..2)]);
    assert_eq!(server.finishes(), 2);
    assert_eq!(*notices.retrying.lock().unwrap(), 1);
    assert!(summary.finish_delivered);
}

#[tokio::test]
async fn a_runs_end_refused_for_good_is_sent_once_and_settled() {
    let fixture = outbox_with(1).await;
    let server = ScriptedServer::with_finish(
        |_, keys| stored(keys),
        |_| Err(status(StatusCode::CONFLICT, "run run-1 already ended")),
    );
    let (summary, _) = deliver(&fixture, &server, Some(succeeded())).await;
    assert_eq!(server.finishes(), 1, "a refusal for good is not sent again");
    assert!(summary.finish_delivered, "nothing is left to deliver");
    // The outbox forgets a target whose end was settled and whose rows were all delivered.
    let targets = fixture.outbox.targets().await.expect("targets");
    assert!(targets.iter().all(|t| t.id != RUN), "{targets:?}");
}

#[tokio::test]
async fn items_read_from_a_spool_are_committed_with_its_mark() {
    let fixture = outbox_with(0).await;
    fixture
        .outbox
        .add_spool("spool-1", RUN)
        .await
        .expect("spool");
    let server = ScriptedServer::new(|_, keys| stored(keys));
    let reporter = Reporter::start(
        fixture.outbox.clone(),
        server.clone(),
        TargetRef {
            id: RUN.to_owned(),
            kind: TargetKind::Run,
        },
        Arc::new(Notices::default()),
    );
    let mark = |offset, lines| SpoolMark {
        spool: "spool-1".to_owned(),
        offset,
        lines,
    };
    let committed = reporter.spool_committed();
    let items = vec![(item(0), 0), (item(1), 0)];
    reporter
        .record_spooled(RUN, items, mark(200, 2))
        .await
        .expect("record");
    // Lines that became nothing (blank ones) move the mark too.
    reporter
        .record_spooled(RUN, Vec::new(), mark(230, 3))
        .await
        .expect("record");
    reporter.flush().await.expect("flush");
    let spools = fixture.outbox.spools_of(RUN).await.expect("spools");
    assert_eq!(spools[0].mark, mark(230, 3));
    assert_eq!(committed.load(std::sync::atomic::Ordering::Acquire), 230);
    let summary = reporter
        .close(Duration::from_secs(10), |_| {})
        .await
        .expect("close");
    assert_eq!(summary.stats.delivered, 2);
}

/// A process stopped (Ctrl+Z) while the outbox's connection was busy resumes with its wait for
/// the connection timed out. What it had read is appended once the connection is free.
#[tokio::test]
async fn items_whose_wait_for_the_outbox_timed_out_are_appended_once_it_is_free() {
    let dir = tempfile::tempdir().expect("temp dir");
    let wait = Duration::from_millis(20);
    let outbox = Outbox::open_with_writer_wait(&dir.path().join("outbox.db"), wait)
        .await
        .expect("outbox");
    let _owner = outbox
        .add_target(&NewTarget {
            id: RUN,
            kind: TargetKind::Run,
            server_url: "http://127.0.0.1:9",
            label: "WUJ-1",
            reporter_pid: std::process::id(),
        })
        .await
        .expect("target");
    let server = ScriptedServer::new(|_, keys| stored(keys));
    let reporter = Reporter::start(
        outbox.clone(),
        server.clone(),
        TargetRef {
            id: RUN.to_owned(),
            kind: TargetKind::Run,
        },
        Arc::new(Notices::default()),
    );
    let held = outbox.hold_writer().await.expect("hold the connection");
    let items = (0..3).map(|i| (item(i), 0)).collect();
    reporter.record(RUN, items).await.expect("record");
    // The writer waits for the connection now (this runtime runs it as soon as this task
    // sleeps), and its wait times out long before the connection is free again.
    tokio::time::sleep(wait * 25).await;
    drop(held);
    reporter
        .flush()
        .await
        .expect("the items are appended once the connection is free");
    let summary = reporter
        .close(Duration::from_secs(10), |_| {})
        .await
        .expect("close");
    assert_eq!(server.batches().concat(), keys(0..3));
    assert_eq!(summary.stats.delivered, 3);
    assert_eq!((summary.pending, summary.failed), (0, 0));
}
