//! Helpers shared by the store's integration tests.

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

/// A store on the backend the suite runs on (see `wujie_pgtest::postgres_requested`): a SQLite
/// file in a temp dir, or a fresh database on the test process's PostgreSQL cluster.
pub struct TestStore {
    pub store: wujie_store::Store,
    pub database: wujie_store::Database,
    _dir: tempfile::TempDir,
}

impl TestStore {
    pub async fn open() -> TestStore {
        let dir = tempfile::tempdir().expect("temp dir");
        let database = if wujie_pgtest::postgres_requested() {
            let cluster = wujie_pgtest::require_cluster()
                .expect("WUJIE_TEST_DATABASE=postgres asks for PostgreSQL, which is not installed");
            wujie_store::Database::Postgres(cluster.create_database())
        } else {
            wujie_store::Database::Sqlite(dir.path().join("w.db"))
        };
        let store = TestStore::connect(&database).await;
        TestStore {
            store,
            database,
            _dir: dir,
        }
    }

    /// Another handle on the same database, as a second server process would open it.
    pub async fn connect(database: &wujie_store::Database) -> wujie_store::Store {
        wujie_store::Store::open_database(database, wujie_store::StoreOptions::SERVER)
            .await
            .expect("open store")
    }
}

/// A new issue titled `title` on `store` and a running run on it (provider `fake`, cwd `/tmp`).
pub async fn issue_with_run(
    store: &wujie_store::Store,
    title: &str,
) -> (wujie_protocol::api::IssueDetail, wujie_protocol::api::Run) {
    let issue = store
        .create_issue(&wujie_protocol::api::CreateIssue {
            title: title.into(),
            description: String::new(),
            discussion_id: None,
        })
        .await
        .expect("issue");
    let run = store
        .create_run(
            &issue.key,
            &wujie_protocol::api::CreateRun {
                provider: "fake".into(),
                cwd: "/tmp".into(),
                job: None,
            },
        )
        .await
        .expect("run")
        .run;
    (issue, run)
}

/// Records that the run `run_id` succeeded (exit code 0).
pub async fn finish_succeeded(store: &wujie_store::Store, run_id: &str) {
    store
        .finish_run(
            run_id,
            &wujie_protocol::api::FinishRun {
                status: wujie_protocol::api::RunStatus::Succeeded,
                exit_code: Some(0),
                error: None,
            },
        )
        .await
        .expect("finish");
}
