//! The database files themselves: private to their owner, never silently replaced when
//! truncated, and never holding a number other than the one given.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::common::{issue_with_run, outbox_with_run_1, with_suffix};
use wujie_protocol::api::{CreateIssue, IngestItem, IngestOutcome};
use wujie_protocol::event::{Event, Usage};
use wujie_store::outbox::{Outbox, OutboxError};
use wujie_store::{Store, StoreError};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn issue() -> CreateIssue {
    CreateIssue {
        title: "kept".into(),
        description: String::new(),
        discussion_id: None,
    }
}

#[tokio::test]
async fn database_files_are_readable_by_their_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wujie.db");
    let store = Store::open(&db).await.unwrap();
    store.create_issue(&issue()).await.unwrap();
    let outbox_db = dir.path().join("outbox.db");
    let outbox = Outbox::open(&outbox_db).await.unwrap();
    for path in [&db, &outbox_db] {
        for file in [
            path.clone(),
            with_suffix(path, "-wal"),
            with_suffix(path, "-shm"),
        ] {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
    }
    store.close().await;
    drop(outbox);

    // A database an older build created readable by others is made private when opened.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = Store::open(&db).await.unwrap();
    assert_eq!(mode(&db), 0o600);
    assert_eq!(
        store.list_issues(&Default::default()).await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_database_truncated_to_nothing_is_refused_not_started_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wujie.db");
    let store = Store::open(&db).await.unwrap();
    store.create_issue(&issue()).await.unwrap();
    store.close().await;
    std::fs::File::create(&db).unwrap();

    let err = Store::open(&db).await.unwrap_err();
    assert!(matches!(err, StoreError::Empty(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&db.display().to_string()) && text.contains("0 bytes"),
        "{text}"
    );
    assert_eq!(std::fs::metadata(&db).unwrap().len(), 0, "left as it was");

    let outbox_db = dir.path().join("outbox.db");
    let (outbox, _owner) = outbox_with_run_1(&outbox_db).await;
    // Closed, not dropped: a dropped pool closes its connections in the background, and the
    // checkpoint of a late close would write the file again after it was truncated.
    outbox.close().await;
    std::fs::File::create(&outbox_db).unwrap();
    let err = Outbox::open(&outbox_db).await.unwrap_err();
    assert!(matches!(err, OutboxError::Empty(_)), "{err}");
    assert!(err.to_string().contains("outbox.db"), "{err}");
}

#[tokio::test]
async fn usage_beyond_what_the_store_can_hold_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("wujie.db")).await.unwrap();
    let (_, run) = issue_with_run(&store, "kept").await;
    let usage = |key: &str, input_tokens: u64| IngestItem {
        source: "t".into(),
        source_key: key.into(),
        event: Event::Usage(Usage {
            provider: "p".into(),
            model: "m".into(),
            input_tokens,
            output_tokens: 1,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }),
    };
    // Up to `i64::MAX` fitted a column, but two of them made every sum of usage fail for good.
    let items = [
        usage("too-big", u64::MAX),
        usage("largest", wujie_protocol::limits::MAX_USAGE_TOKENS),
        usage("would-overflow-sums", i64::MAX as u64),
        usage("small", 5),
    ];
    let result = store
        .ingest_run_events(&run.id, &items, 1 << 20)
        .await
        .unwrap();
    assert_eq!(result.results[0].outcome, IngestOutcome::Rejected);
    let reason = result.results[0].reason.as_deref().unwrap();
    assert!(
        reason.contains("input_tokens") && reason.contains(&u64::MAX.to_string()),
        "{reason}"
    );
    let outcomes: Vec<_> = result.results.iter().map(|r| r.outcome).collect();
    use IngestOutcome::{Rejected, Stored};
    assert_eq!(outcomes, [Rejected, Stored, Rejected, Stored], "{result:?}");
    let reason = result.results[2].reason.as_deref().unwrap();
    assert!(
        reason.contains(&wujie_protocol::limits::MAX_USAGE_TOKENS.to_string()),
        "{reason}"
    );
    let stored = &store.run(&run.id).await.unwrap().usage;
    assert_eq!(stored.len(), 2, "only the counts within the limit are kept");
    let totals = store.workspace_usage().await.expect("sums still work");
    assert_eq!(
        totals[0].input_tokens,
        wujie_protocol::limits::MAX_USAGE_TOKENS + 5
    );
}

/// Opening the databases leaves nothing but the databases: the lock that makes processes set
/// them up one after the other is a file only while it is held, also when many open at once.
#[tokio::test]
async fn opening_leaves_no_lock_file_behind_even_when_many_open_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wujie.db");
    let outbox_db = dir.path().join("outbox.db");
    let opens = (0..8).map(|_| {
        let (db, outbox_db) = (db.clone(), outbox_db.clone());
        tokio::spawn(async move {
            let store = Store::open(&db).await.expect("store");
            let outbox = Outbox::open(&outbox_db).await.expect("outbox");
            store.close().await;
            outbox.close().await;
        })
    });
    for open in opens.collect::<Vec<_>>() {
        open.await.unwrap();
    }
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("lock"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
