//! The outbox gives the space of delivered rows back: it does not stay as large as the
//! largest backlog it ever held.

use super::common::{outbox_with_run_1, with_suffix};
use wujie_store::outbox::Outbox;

fn size_on_disk(db: &std::path::Path) -> u64 {
    ["", "-wal"]
        .iter()
        .map(|suffix| std::fs::metadata(with_suffix(db, suffix)).map_or(0, |m| m.len()))
        .sum()
}

#[tokio::test]
async fn delivered_rows_give_their_space_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("outbox.db");
    let (outbox, _owner) = outbox_with_run_1(&db).await;
    // A backlog of 20,000 rows of 1 KiB (20 MiB), then all of it delivered.
    let filler = "x".repeat(1024);
    for chunk in 0..20 {
        let rows: Vec<(String, i64)> = (0..1_000)
            .map(|i| {
                (
                    format!("{{\"n\":{},\"f\":\"{filler}\"}}", chunk * 1_000 + i),
                    0,
                )
            })
            .collect();
        outbox.append("run-1", &rows).await.unwrap();
    }
    let held = size_on_disk(&db);
    assert!(held > 20 << 20, "the backlog is on disk: {held} bytes");
    loop {
        let batch = outbox.pending("run-1", 1_000).await.unwrap();
        if batch.is_empty() {
            break;
        }
        let seqs: Vec<i64> = batch.iter().map(|r| r.seq).collect();
        outbox.settle(&seqs, &[]).await.unwrap();
    }
    outbox.close().await;
    let left = size_on_disk(&db);
    assert!(
        left < 1 << 20,
        "{left} bytes left after delivering a {held}-byte backlog"
    );
    // And the outbox still works.
    let outbox = Outbox::open(&db).await.unwrap();
    assert_eq!(outbox.targets().await.unwrap()[0].pending, 0);
}

async fn auto_vacuum_mode(conn: &mut sqlx::SqliteConnection) -> i64 {
    sqlx::query_scalar("PRAGMA auto_vacuum")
        .fetch_one(conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_outbox_made_without_auto_vacuum_gets_it_when_opened() {
    use sqlx::ConnectOptions;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("outbox.db");
    drop(Outbox::open(&db).await.unwrap());
    // What an outbox made before auto-vacuum was set looks like.
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&db)
        .connect()
        .await
        .unwrap();
    sqlx::query("PRAGMA auto_vacuum = NONE")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("VACUUM").execute(&mut conn).await.unwrap();
    assert_eq!(auto_vacuum_mode(&mut conn).await, 0);
    sqlx::Connection::close(conn).await.unwrap();

    let outbox = Outbox::open(&db).await.unwrap();
    outbox.close().await;
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&db)
        .connect()
        .await
        .unwrap();
    assert_eq!(auto_vacuum_mode(&mut conn).await, 2, "incremental");
}
