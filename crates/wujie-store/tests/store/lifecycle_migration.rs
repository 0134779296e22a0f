//! A database made by the first schema is migrated to the lifecycle schema without losing a row,
//! and keeps enforcing its foreign keys.

use sha2::{Digest, Sha384};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Connection, SqliteConnection};
use wujie_protocol::api::{Author, AuthorKind, FailureKind, IssueStatus};
use wujie_store::Store;

const INIT: &str = include_str!("../../migrations/20261130000001_init.sql");

#[tokio::test]
async fn an_existing_database_keeps_its_issues_runs_and_comments() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("wujie.db");
    let mut conn = SqliteConnection::connect_with(
        &SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .foreign_keys(true),
    )
    .await
    .expect("connect");
    sqlx::raw_sql(INIT)
        .execute(&mut conn)
        .await
        .expect("init schema");
    // What sqlx records for an applied migration, so only the new one runs.
    sqlx::raw_sql(
        "CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
         installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, success BOOLEAN NOT NULL, \
         checksum BLOB NOT NULL, execution_time BIGINT NOT NULL)",
    )
    .execute(&mut conn)
    .await
    .expect("migrations table");
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (20261130000001, 'init', TRUE, ?, 0)",
    )
    .bind(Sha384::digest(INIT.as_bytes()).to_vec())
    .execute(&mut conn)
    .await
    .expect("record init");
    sqlx::raw_sql(
        "INSERT INTO workspaces (id, name, key_prefix, next_issue_seq, created_at) \
             VALUES ('w', 'Wujie', 'WUJ', 2, '2026-11-30T00:00:00.000000Z'); \
         INSERT INTO issues (id, workspace_id, seq, title, description, status, created_at) \
             VALUES ('i', 'w', 1, 'old issue', 'kept', 'in_progress', '2026-11-30T00:00:00.000000Z'); \
         INSERT INTO runs (id, issue_id, provider, cwd, status, started_at) \
             VALUES ('r', 'i', 'fake', '/tmp', 'succeeded', '2026-11-30T00:00:00.000000Z'); \
         INSERT INTO runs (id, issue_id, provider, cwd, status, error, started_at) \
             VALUES ('r-stale', 'i', 'fake', '/tmp', 'failed', 'reporter stopped', \
                     '2026-11-30T00:00:01.000000Z'); \
         INSERT INTO comments (id, issue_id, author_kind, body, run_id, created_at) \
             VALUES ('c', 'i', 'agent', 'old reply', 'r', '2026-11-30T00:00:00.000000Z');",
    )
    .execute(&mut conn)
    .await
    .expect("old rows");
    conn.close().await.expect("close");

    let store = Store::open(&path).await.expect("migrate");
    let issue = store.issue("WUJ-1").await.expect("old issue");
    assert_eq!(
        (
            issue.title.as_str(),
            issue.description.as_str(),
            issue.status
        ),
        ("old issue", "kept", IssueStatus::InProgress)
    );
    // A failure recorded with the stale-run rule's words keeps its meaning: no end yet.
    let kinds: Vec<(&str, Option<FailureKind>)> = issue
        .runs
        .iter()
        .map(|r| (r.id.as_str(), r.failure_kind))
        .collect();
    assert_eq!(kinds, [("r", None), ("r-stale", Some(FailureKind::Stale))]);
    assert_eq!(issue.comments[0].body, "old reply");
    let user = Author {
        kind: AuthorKind::User,
        run_id: None,
    };
    let closed = store
        .set_issue_status("WUJ-1", IssueStatus::Closed, &user)
        .await
        .expect("the new status is allowed");
    assert_eq!(closed.status, IssueStatus::Closed);
    store.close().await;

    // References are still enforced on the rebuilt table.
    let mut conn = SqliteConnection::connect_with(
        &SqliteConnectOptions::new()
            .filename(&path)
            .foreign_keys(true),
    )
    .await
    .expect("connect");
    let dangling = sqlx::query(
        "INSERT INTO runs (id, issue_id, provider, cwd, status, started_at) \
         VALUES ('r2', 'missing', 'fake', '/tmp', 'running', '2026-11-30T00:00:00.000000Z')",
    )
    .execute(&mut conn)
    .await;
    assert!(dangling.is_err(), "a run on a missing issue was stored");
}
