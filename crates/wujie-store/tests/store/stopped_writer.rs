//! A `wujie` stopped (Ctrl+Z, a laptop asleep) in the middle of a write holds the database's
//! write lock until it continues. Other processes on the profile open the databases and read
//! meanwhile: opening a database that is already set up writes nothing.

use std::path::Path;
use std::str::FromStr;

use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use wujie_protocol::api::{CreateIssue, IssueQuery};
use wujie_store::Store;
use wujie_store::outbox::Outbox;

/// A connection holding `path`'s write lock, as a process stopped inside a write does.
async fn hold_write_lock(path: &Path) -> SqliteConnection {
    let options = SqliteConnectOptions::from_str("sqlite:")
        .unwrap()
        .filename(path);
    let mut conn = SqliteConnection::connect_with(&options).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

#[tokio::test]
async fn the_database_opens_and_reads_while_another_process_holds_its_write_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wujie.db");
    let store = Store::open(&db).await.unwrap();
    let issue = store
        .create_issue(&CreateIssue {
            title: "written before".into(),
            description: String::new(),
            discussion_id: None,
        })
        .await
        .unwrap();
    store.close().await;

    let _stopped = hold_write_lock(&db).await;
    let store = Store::open(&db)
        .await
        .expect("opening needs no write once the database is set up");
    let listed = store.list_issues(&IssueQuery::default()).await.unwrap();
    assert_eq!(listed[0].key, issue.key);
    assert_eq!(
        store.issue(&issue.key).await.unwrap().title,
        "written before"
    );
}

#[tokio::test]
async fn the_outbox_opens_while_another_process_holds_its_write_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    Outbox::open(&path).await.unwrap().close().await;

    let _stopped = hold_write_lock(&path).await;
    let outbox = Outbox::open(&path)
        .await
        .expect("opening needs no write once the outbox is set up");
    assert!(outbox.targets().await.unwrap().is_empty());
}
