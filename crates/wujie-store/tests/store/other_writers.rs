//! A follower of `Store::changes` learns of commits made through another store on the same
//! SQLite file (another process, in practice), and the store's watch on the file ends, closing
//! its connection, when the store is closed or its last handle dropped.

use std::path::Path;
use std::time::Duration;

use tokio::sync::watch;
use wujie_protocol::api::CreateIssue;
use wujie_store::Store;

fn issue(title: &str) -> CreateIssue {
    CreateIssue {
        title: title.into(),
        description: String::new(),
        discussion_id: None,
    }
}

async fn changed(changes: &mut watch::Receiver<u64>) {
    tokio::time::timeout(Duration::from_secs(30), changes.changed())
        .await
        .expect("a change within 30 s")
        .expect("the store is open");
}

/// How many of this process's file descriptors are open on `db` or its WAL and index files.
fn open_on(db: &Path) -> usize {
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return 0;
    };
    let db = db.to_string_lossy();
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with(&*db))
        .count()
}

async fn until_closed(db: &Path, after: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while open_on(db) > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} files still open on {} after the store was {after}",
            open_on(db),
            db.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_follower_learns_of_another_stores_commits_and_the_watch_ends_with_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wujie.db");
    let followed = Store::open(&db).await.unwrap();
    let writer = Store::open(&db).await.unwrap();

    let mut changes = followed.changes();
    // The watch starts by saying that something may have changed before it looked.
    changed(&mut changes).await;
    for title in ["one", "two"] {
        writer.create_issue(&issue(title)).await.unwrap();
        changed(&mut changes).await;
        let titles: Vec<String> = followed
            .list_issues(&Default::default())
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.title)
            .collect();
        assert!(titles.iter().any(|t| t == title), "{titles:?}");
    }
    writer.close().await;

    // Closed while followed: nothing stays open on the file.
    followed.close().await;
    until_closed(&db, "closed").await;
    drop(changes);

    // Dropped while followed, without closing: the watch ends with the last handle.
    let followed = Store::open(&db).await.unwrap();
    let mut changes = followed.changes();
    changed(&mut changes).await;
    drop(followed);
    until_closed(&db, "dropped").await;
}

/// A store closed right after its last query leaves nothing open on the file: a connection
/// still on its way back to the pool is closed too (it escaped the pool's close about every
/// other time, and stayed open until the process ended).
#[tokio::test]
async fn a_store_closed_right_after_a_query_leaves_nothing_open() {
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("wujie.db");
        let reader = Store::open(&db).await.unwrap();
        let writer = Store::open(&db).await.unwrap();
        writer.create_issue(&issue("one")).await.unwrap();
        reader.list_issues(&Default::default()).await.unwrap();
        writer.close().await;
        reader.close().await;
        until_closed(&db, "closed").await;
    }
}
