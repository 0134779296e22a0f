//! Ownership of outbox targets: an exclusive lock on a per-target file, held by the reporter
//! for its whole life and released by the kernel when it is dropped or its process dies.

use wujie_store::outbox::{NewTarget, Outbox, OutboxError, TargetKind};

fn target(id: &str) -> NewTarget<'_> {
    NewTarget {
        id,
        kind: TargetKind::Run,
        server_url: "local",
        label: "WUJ-1",
        reporter_pid: std::process::id(),
    }
}

#[tokio::test]
async fn a_held_target_cannot_be_claimed_until_its_lock_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let outbox = Outbox::open(&dir.path().join("outbox.db")).await.unwrap();
    let owner = outbox.add_target(&target("run/1")).await.unwrap();
    assert!(outbox.is_owned("run/1"));
    // A second claim conflicts even inside the owning process (a background sync there).
    assert!(outbox.claim("run/1").unwrap().is_none());
    let again = outbox.add_target(&target("run/1")).await.unwrap_err();
    assert!(matches!(again, OutboxError::Owned { .. }), "{again}");
    assert!(again.to_string().contains(&std::process::id().to_string()));

    drop(owner);
    assert!(!outbox.is_owned("run/1"));
    let taken = outbox.claim("run/1").unwrap();
    assert!(taken.is_some(), "a released target is taken over at once");
    // The new owner holds it now.
    assert!(outbox.is_owned("run/1"));
}

#[tokio::test]
async fn a_delivered_target_leaves_no_lock_file_nor_directory_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("outbox.db");
    let outbox = Outbox::open(&path).await.unwrap();
    let owners = dir.path().join("outbox.db.owners");
    let _owner = outbox.add_target(&target("run-1")).await.unwrap();
    assert_eq!(std::fs::read_dir(&owners).unwrap().count(), 1);
    outbox.set_finish("run-1", "{}").await.unwrap();
    outbox.finish_delivered("run-1").await.unwrap();
    assert!(outbox.targets().await.unwrap().is_empty());
    // The last lock file takes the directory with it.
    assert!(!owners.exists());
    // Asking about a target that is gone creates nothing.
    assert!(!outbox.is_owned("run-1"));
    assert!(!owners.exists());
    // The next target makes the directory again.
    let _next = outbox.add_target(&target("run-2")).await.unwrap();
    assert_eq!(std::fs::read_dir(&owners).unwrap().count(), 1);
}
