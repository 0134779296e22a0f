//! What only PostgreSQL has to get right: several server processes (here: several store
//! handles, each with its own connection pool, as each replica has) writing to one database at
//! once. Skipped with a message when PostgreSQL is not installed, failed when
//! WUJIE_REQUIRE_ALL is set.

use std::collections::HashSet;
use std::time::Duration;

use futures::future::join_all;
use wujie_protocol::api::{CreateIssue, CreateRun, IngestItem, IngestOutcome, RunStatus};
use wujie_protocol::event::{Event, Message, MessageKind, Usage};
use wujie_store::{Database, Store, StoreOptions};

/// `n` handles on one fresh database, or None when PostgreSQL is not there (and not required).
async fn require_replicas(n: usize) -> Option<(Vec<Store>, String)> {
    let url = wujie_pgtest::require_cluster()?.create_database();
    let mut stores = Vec::new();
    for _ in 0..n {
        let store = Store::open_database(&Database::Postgres(url.clone()), StoreOptions::SERVER)
            .await
            .expect("connect");
        stores.push(store);
    }
    Some((stores, url))
}

fn issue(title: &str) -> CreateIssue {
    CreateIssue {
        title: title.into(),
        description: String::new(),
        discussion_id: None,
    }
}

fn run_req() -> CreateRun {
    CreateRun {
        provider: "fake".into(),
        cwd: "/tmp".into(),
        job: None,
    }
}

fn message(key: &str, kind: MessageKind) -> IngestItem {
    IngestItem {
        source: "fake".into(),
        source_key: key.into(),
        event: Event::Message(Message {
            kind,
            content: Some(format!("text of {key}")),
            tool: None,
            input: None,
            output: None,
            source: "fake".into(),
            source_key: key.into(),
        }),
    }
}

#[tokio::test]
async fn issue_numbers_from_concurrent_replicas_are_unique_and_gap_free() {
    let Some((stores, _)) = require_replicas(3).await else {
        return;
    };
    let creations = (0..60).map(|i| {
        let store = stores[i % stores.len()].clone();
        async move { store.create_issue(&issue(&format!("issue {i}"))).await }
    });
    let keys: HashSet<String> = join_all(creations)
        .await
        .into_iter()
        .map(|r| r.expect("create issue").key)
        .collect();
    let expected: HashSet<String> = (1..=60).map(|n| format!("WUJ-{n}")).collect();
    assert_eq!(keys, expected);
}

#[tokio::test]
async fn the_same_batch_delivered_to_two_replicas_at_once_is_stored_once() {
    let Some((stores, _)) = require_replicas(2).await else {
        return;
    };
    let i = stores[0].create_issue(&issue("x")).await.expect("issue");
    let run = stores[0]
        .create_run(&i.key, &run_req())
        .await
        .expect("run")
        .run;
    // Finals become comments and take the activity lock; the rest only the issue's lock.
    let mut batch: Vec<IngestItem> = (0..200)
        .map(|n| {
            let kind = if n % 50 == 0 {
                MessageKind::Final
            } else {
                MessageKind::Text
            };
            message(&format!("k{n}"), kind)
        })
        .collect();
    batch.push(IngestItem {
        source: "fake".into(),
        source_key: "u1".into(),
        event: Event::Usage(Usage {
            provider: "fake".into(),
            model: "m".into(),
            input_tokens: 5,
            output_tokens: 6,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }),
    });
    for round in 0..5 {
        let deliveries = (0..4).map(|n| {
            let store = stores[n % 2].clone();
            let (batch, run_id) = (batch.clone(), run.id.clone());
            async move { store.ingest_run_events(&run_id, &batch, 1 << 20).await }
        });
        let results: Vec<_> = join_all(deliveries)
            .await
            .into_iter()
            .map(|r| r.expect("ingest"))
            .collect();
        for index in 0..batch.len() {
            let stored = results
                .iter()
                .filter(|r| r.results[index].outcome == IngestOutcome::Stored)
                .count();
            let duplicates = results
                .iter()
                .filter(|r| r.results[index].outcome == IngestOutcome::Duplicate)
                .count();
            let expected_stored = usize::from(round == 0);
            assert_eq!(
                (stored, duplicates),
                (expected_stored, 4 - expected_stored),
                "item {index} in round {round}"
            );
        }
    }
    let detail = stores[1].issue(&i.key).await.expect("issue");
    assert_eq!(detail.runs[0].messages.len(), 200);
    assert_eq!(detail.runs[0].usage.len(), 1);
    assert_eq!(detail.comments.len(), 4);
}

/// What keeps a stale run from being failed twice when replicas sweep at the same moment is
/// the sweep's conditional update (a second sweep waits for the row and finds it no longer
/// running), not a lock of the sweeper's own: this holds with none.
#[tokio::test]
async fn concurrent_sweeps_on_several_replicas_fail_each_stale_run_once() {
    let Some((stores, url)) = require_replicas(3).await else {
        return;
    };
    let i = stores[0].create_issue(&issue("x")).await.expect("issue");
    for _ in 0..30 {
        stores[0].create_run(&i.key, &run_req()).await.expect("run");
    }
    // Every replica sweeps four times, all at once.
    let sweeps = (0..12).map(|n| {
        let store = stores[n % stores.len()].clone();
        async move { store.mark_stale_runs(Duration::ZERO).await }
    });
    let failed: u64 = join_all(sweeps)
        .await
        .into_iter()
        .map(|r| r.expect("sweep"))
        .sum();
    assert_eq!(failed, 30);
    let runs = stores[2].issue_runs(&i.key).await.expect("runs");
    assert!(runs.iter().all(|r| r.status == RunStatus::Failed));
    let cluster = wujie_pgtest::require_cluster().expect("cluster");
    let database = wujie_pgtest::database_name(&url);
    let finished = cluster.psql(
        database,
        "SELECT COUNT(*), COUNT(DISTINCT author_run_id) FROM issue_activity \
         WHERE change LIKE '%run_finished%'",
    );
    assert_eq!(finished, "30|30");
}

#[tokio::test]
async fn a_write_on_one_replica_wakes_the_followers_of_another() {
    let Some((stores, _)) = require_replicas(2).await else {
        return;
    };
    let mut changes = stores[1].changes();
    changes.borrow_and_update();
    stores[0]
        .create_issue(&issue("seen elsewhere"))
        .await
        .expect("issue");
    tokio::time::timeout(Duration::from_secs(30), changes.changed())
        .await
        .expect("the other replica was told within 30 s")
        .expect("store alive");
    let activity = stores[1]
        .issue_activity_after(None, 0, 10)
        .await
        .expect("activity");
    assert_eq!(activity.len(), 1);
}

/// Reporters streaming into runs must not take every connection of a replica's pool: a run
/// that someone starts meanwhile still gets one. Here every ingest waits behind a table lock
/// (as it would behind a slow disk or a long vacuum), more of them than the pool has
/// connections, and a run is started while they wait. (SHARE keeps rows from being added and
/// lets them be read: starting a run reads its empty list of messages.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingest_waiting_on_the_database_leaves_connections_for_starting_a_run() {
    const CONNECTIONS: u32 = 4;
    let Some(cluster) = wujie_pgtest::require_cluster() else {
        return;
    };
    let url = cluster.create_database();
    let database = wujie_pgtest::database_name(&url).to_owned();
    let options = StoreOptions {
        pg_connections: CONNECTIONS,
        ..StoreOptions::SERVER
    };
    let store = Store::open_database(&Database::Postgres(url), options)
        .await
        .expect("connect");
    // One issue per run: ingest into runs of one issue waits for that issue's lock, and so
    // would a run started on it.
    let mut runs = Vec::new();
    for n in 0..2 * CONNECTIONS {
        let i = store
            .create_issue(&issue(&format!("busy {n}")))
            .await
            .expect("issue");
        runs.push(store.create_run(&i.key, &run_req()).await.expect("run").run);
    }
    let quiet = store.create_issue(&issue("quiet")).await.expect("issue");
    let lock = cluster.hold_transaction(&database, "LOCK TABLE run_messages IN SHARE MODE");
    let deliveries: Vec<_> = runs
        .iter()
        .map(|run| {
            let (store, run_id) = (store.clone(), run.id.clone());
            tokio::spawn(async move {
                let batch = [message(&format!("m-{run_id}"), MessageKind::Text)];
                store.ingest_run_events(&run_id, &batch, 1 << 20).await
            })
        })
        .collect();
    // Until at least one delivery waits for the lock while holding its connection (on this
    // runtime's other thread, so the run below is started while they all compete).
    let held = database.clone();
    tokio::task::spawn_blocking(move || cluster.wait_for_lock_waiters(&held, 1))
        .await
        .expect("a delivery waiting for the lock");

    // Bounded only so that a regression fails instead of hanging the suite.
    let started = tokio::time::timeout(
        Duration::from_secs(60),
        store.create_run(&quiet.key, &run_req()),
    )
    .await;
    drop(lock);
    started
        .expect("the run was started within 60 s")
        .expect("a run starts while ingest waits");
    for delivery in deliveries {
        let result = delivery.await.expect("delivery task").expect("ingest");
        assert_eq!(result.results.len(), 1);
    }
}

/// A heartbeat records no activity, so it does not queue for the activity lock behind the
/// writes that do (starting runs, comments, sweeps): every running reporter sends one, and
/// together they would lengthen that queue for everyone. Here another session holds the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_does_not_wait_for_the_activity_lock() {
    let Some((stores, url)) = require_replicas(1).await else {
        return;
    };
    let store = &stores[0];
    let i = store.create_issue(&issue("alive")).await.expect("issue");
    let run = store.create_run(&i.key, &run_req()).await.expect("run").run;
    let cluster = wujie_pgtest::require_cluster().expect("cluster");
    let database = wujie_pgtest::database_name(&url);
    // The store's activity lock (`dialect::ACTIVITY_LOCK`).
    let lock = cluster.hold_transaction(database, "SELECT pg_advisory_xact_lock(96161808082177)");
    // Bounded only so that a regression fails instead of hanging the suite.
    let beat = tokio::time::timeout(Duration::from_secs(60), store.heartbeat(&run.id)).await;
    drop(lock);
    beat.expect("the heartbeat was recorded within 60 s")
        .expect("heartbeat");
}

#[tokio::test]
async fn replicas_asked_to_cancel_one_run_at_once_record_the_first_request_once() {
    let Some((stores, _)) = require_replicas(4).await else {
        return;
    };
    let created = stores[0].create_issue(&issue("cancel")).await.unwrap();
    let run = stores[0]
        .create_run(&created.key, &run_req())
        .await
        .unwrap();
    let mut askers = Vec::new();
    for (n, store) in stores.iter().enumerate() {
        let token = store
            .create_user_token(&format!("asker {n}"))
            .await
            .unwrap();
        askers.push(store.written_by(&token.id));
    }
    let answers = join_all(askers.iter().map(|s| s.cancel_run(&run.run.id))).await;
    let answers: Vec<_> = answers.into_iter().map(Result::unwrap).collect();
    // One request is recorded; every answer names it, and only its asker's says it was new.
    let first: Vec<_> = answers.iter().filter(|a| !a.already_requested).collect();
    assert_eq!(first.len(), 1, "{answers:?}");
    for answer in &answers {
        assert_eq!(answer.cancel, first[0].cancel, "{answers:?}");
    }
    let logged = stores[0]
        .issue_activity_after(Some(&created.id), 0, 500)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| {
            matches!(
                e.change,
                wujie_protocol::api::IssueChange::CancelRequested { .. }
            )
        })
        .count();
    assert_eq!(logged, 1);
    let control = stores[1].run_control(&run.run.id).await.unwrap();
    assert_eq!(control.cancel.as_ref(), Some(&first[0].cancel));
}
