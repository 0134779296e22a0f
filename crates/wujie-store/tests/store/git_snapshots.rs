//! A run's snapshots of its code: stored once per key (each told once in the issue's
//! activity), the latest read back, none after the run's end.

use super::common::{TestStore, finish_succeeded, issue_with_run};

use wujie_protocol::api::{IngestItem, IngestOutcome, IssueChange};
use wujie_protocol::event::Event;
use wujie_protocol::git::{Commit, FileChange, FileStatus, GitChanges, Patch, TurnSpan};
use wujie_store::GitTurn;

fn snapshot_item(snapshot: u32, tree: &str, files: Vec<FileChange>) -> IngestItem {
    IngestItem {
        source: "wujie-reporter".into(),
        source_key: format!("git:{snapshot}:{tree}"),
        event: Event::GitChanges(GitChanges {
            snapshot,
            tree: tree.into(),
            repo: "project".into(),
            remotes: Vec::new(),
            branch: Some("main".into()),
            base_commit: Some("b".repeat(40)),
            head_commit: Some("c".repeat(40)),
            commits: vec![Commit {
                sha: "c".repeat(40),
                subject: "Add a".into(),
                author: "Ada <ada@example.test>".into(),
            }],
            turn_files: (snapshot > 0).then(|| files.clone()),
            files,
            worktree: None,
            turns: (snapshot > 0).then_some(TurnSpan {
                first: snapshot,
                last: snapshot,
            }),
        }),
    }
}

fn added(path: &str) -> FileChange {
    FileChange {
        path: path.into(),
        old_path: None,
        status: FileStatus::Added,
        additions: 1,
        deletions: 0,
        binary: false,
        patch: Patch::Kept(format!("diff --git a/{path} b/{path}\n")),
    }
}

#[tokio::test]
async fn each_snapshot_is_stored_once_and_the_latest_is_the_runs_changes() {
    let t = TestStore::open().await;
    let store = &t.store;
    let (issue, run) = issue_with_run(store, "code").await;
    assert_eq!(store.run_git_changes(&run.id).await.expect("read"), None);

    let start = snapshot_item(0, "t0", Vec::new());
    let turn = snapshot_item(1, "t1", vec![added("a.txt")]);
    let outcomes = |r: wujie_protocol::api::IngestResult| {
        r.results.into_iter().map(|i| i.outcome).collect::<Vec<_>>()
    };
    let first = store
        .ingest_run_events(&run.id, &[start, turn.clone()], 1 << 20)
        .await
        .expect("ingest");
    assert_eq!(
        outcomes(first),
        [IngestOutcome::Stored, IngestOutcome::Stored]
    );
    // Delivered again (a retry, or `local-run sync` after a crash): stored already.
    let again = store
        .ingest_run_events(&run.id, std::slice::from_ref(&turn), 1 << 20)
        .await
        .expect("ingest");
    assert_eq!(outcomes(again), [IngestOutcome::Duplicate]);

    // Each stored snapshot is in the issue's activity once, for pages and watchers.
    let told: Vec<(u32, u32)> = store
        .issue_activity_after(Some(&issue.id), 0, 100)
        .await
        .expect("activity")
        .into_iter()
        .filter_map(|e| match e.change {
            IssueChange::CodeChanged {
                run_id,
                snapshot,
                files,
            } if run_id == run.id => Some((snapshot, files)),
            _ => None,
        })
        .collect();
    assert_eq!(told, [(0, 0), (1, 1)]);

    // A turn is read with the snapshot before it.
    let GitTurn::Changed { before, after } = store.run_git_turn(&run.id, 1).await.expect("read")
    else {
        panic!("turn 1 holds changes");
    };
    assert_eq!(before.map(|b| b.snapshot), Some(0));
    assert_eq!(after.snapshot, 1);
    // The run has no turn 2.
    assert_eq!(
        store.run_git_turn(&run.id, 2).await.expect("read"),
        GitTurn::Beyond { turns: 1 }
    );

    let latest = store
        .run_git_changes(&run.id)
        .await
        .expect("read")
        .expect("a snapshot");
    let Event::GitChanges(expected) = &turn.event else {
        unreachable!("built as one")
    };
    assert_eq!(&latest, expected);

    finish_succeeded(store, &run.id).await;
    let late = snapshot_item(2, "t2", vec![added("b.txt")]);
    let after = store
        .ingest_run_events(&run.id, &[turn, late], 1 << 20)
        .await
        .expect("ingest");
    assert_eq!(
        outcomes(after),
        [IngestOutcome::Duplicate, IngestOutcome::Rejected]
    );
}

/// A snapshot stored before spans were recorded has its span only in the columns the
/// migration filled (`first_turn = last_turn = snapshot`), not in its JSON: the turn snapshots
/// carry the columns' span, so the page shows that turn's changes as `issue diff --turn` does.
#[tokio::test]
async fn a_snapshot_stored_before_turn_spans_gets_its_span_from_the_migration() {
    use sqlx::Connection;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("wujie.db");
    let store = wujie_store::Store::open(&path).await.expect("open");
    let (_, run) = issue_with_run(&store, "code").await;
    // As stored before: no span in the snapshot's JSON.
    let mut old = snapshot_item(1, "t1", vec![added("a.txt")]);
    if let Event::GitChanges(changes) = &mut old.event {
        changes.turns = None;
    }
    store
        .ingest_run_events(&run.id, &[old], 1 << 20)
        .await
        .expect("ingest");
    // What the migration did to such rows.
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .expect("connect");
    sqlx::query(
        "UPDATE run_git_snapshots SET first_turn = snapshot, last_turn = snapshot \
         WHERE snapshot > 0",
    )
    .execute(&mut conn)
    .await
    .expect("migrated");
    conn.close().await.expect("close");

    let spans: Vec<Option<TurnSpan>> = store
        .run_git_turn_snapshots(&run.id)
        .await
        .expect("read")
        .into_iter()
        .map(|s| s.turns)
        .collect();
    assert_eq!(spans, [Some(TurnSpan { first: 1, last: 1 })]);
}
