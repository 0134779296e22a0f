//! Helpers shared by the store's integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use wujie_store::outbox::{NewTarget, Outbox, TargetKind, TargetLock};

/// `path` with `suffix` appended to its file name (`wujie.db` → `wujie.db-wal`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// The outbox at `db` with the run target `run-1` reported by this process, and the lock
/// that keeps the target this process's while it is held.
pub async fn outbox_with_run_1(db: &Path) -> (Outbox, TargetLock) {
    let outbox = Outbox::open(db).await.unwrap();
    let owner = outbox
        .add_target(&NewTarget {
            id: "run-1",
            kind: TargetKind::Run,
            server_url: "local",
            label: "WUJ-1",
            reporter_pid: std::process::id(),
        })
        .await
        .unwrap();
    (outbox, owner)
}
