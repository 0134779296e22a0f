//! Persistence behind one API (sqlx, SQLite). This is the only crate that knows SQL.
//!
//! Idempotency lives in the schema as UNIQUE keys: a message or usage row is stored once per
//! (run, source, source_key), a discussion entry, usage row or session id once per
//! (discussion, source, source_key). Every write that spans several rows runs in one transaction.

mod activity;
mod db_file;
mod discussions;
mod error;
mod feed_head;
mod ingest;
mod issues;
pub mod outbox;
mod rows;
mod runs;
mod time;
mod token_state;
mod tokens;
mod usage_totals;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool, Transaction};
use tokio::sync::{Mutex, MutexGuard, watch};

pub use activity::MAX_FEED_PAGE;
pub use db_file::EmptyDatabase;
pub use error::StoreError;
pub use tokens::{Principal, mint_token_secret};

/// Name and issue-key prefix of the workspace created on first open.
pub const DEFAULT_WORKSPACE_NAME: &str = "Wujie";
pub const DEFAULT_KEY_PREFIX: &str = "WUJ";

/// Error text a run gets when the stale-run rule fails it; a late `finish` may still overwrite it.
pub const REPORTER_STOPPED: &str = "reporter stopped";

/// Handle on the database; cheap to clone, share it between tasks.
#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    /// SQLite has one writer. Serialising writers here (instead of letting deferred transactions
    /// race for the write lock) avoids SQLITE_BUSY on lock upgrades under concurrent ingest.
    writer: Arc<Mutex<()>>,
    /// Bumped after every committed write, so the live feeds wake up instead of polling.
    changes: Arc<watch::Sender<u64>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

/// A write transaction holding the writer lock for its whole life.
pub(crate) struct WriteTx<'a> {
    pub(crate) tx: Transaction<'static, Sqlite>,
    _guard: MutexGuard<'a, ()>,
    changes: &'a watch::Sender<u64>,
}

impl WriteTx<'_> {
    pub(crate) async fn commit(self) -> Result<(), StoreError> {
        self.tx.commit().await?;
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        Ok(())
    }
}

/// An exclusive lock on `<database>.setup-lock` while the database is opened and its schema
/// created or migrated, so concurrent processes on one database do both one after the other.
/// Released on drop.
pub(crate) async fn setup_lock(
    database: &Path,
) -> Result<nix::fcntl::Flock<std::fs::File>, StoreError> {
    let mut name = database.as_os_str().to_owned();
    name.push(".setup-lock");
    let path = std::path::PathBuf::from(name);
    let io = |source: std::io::Error| StoreError::Io {
        path: path.clone(),
        source,
    };
    let file = open_lock_file(&path).map_err(io)?;
    tokio::task::spawn_blocking(move || {
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| std::io::Error::from(errno))
    })
    .await
    .map_err(std::io::Error::other)
    .and_then(|r| r)
    .map_err(io)
}

/// Opens (creating it if needed) a file that is only ever locked, never read: its contents
/// are left as they are.
pub(crate) fn open_lock_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
}

/// How much memory the store may keep, by who runs it.
#[derive(Debug, Clone, Copy)]
pub struct StoreOptions {
    /// SQLite's page cache per connection, in KiB.
    pub page_cache_kib: u32,
}

impl StoreOptions {
    /// A standalone server: a larger page cache keeps the idempotency index hot during long
    /// ingests from many runs.
    pub const SERVER: StoreOptions = StoreOptions {
        page_cache_kib: 32 * 1024,
    };
    /// The server embedded in a `wujie` command: it serves one user's runs, and its memory is
    /// that command's memory.
    pub const EMBEDDED: StoreOptions = StoreOptions {
        page_cache_kib: 4 * 1024,
    };
}

impl Store {
    /// Opens (creating the file and its parent directories if needed) the SQLite database at
    /// `path`, applies the embedded migrations and creates the default workspace.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, StoreOptions::SERVER).await
    }

    /// [`Store::open`] with explicit options.
    pub async fn open_with(path: &Path, tuning: StoreOptions) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true)
            // Negative: a size in KiB rather than in pages.
            .pragma("cache_size", format!("-{}", tuning.page_cache_kib));
        // Processes open the database one after the other: two would both try to create the
        // schema, and a connection opening a WAL database while another one sets it up can get
        // SQLITE_BUSY without the busy timeout being asked.
        let setup = setup_lock(path).await?;
        db_file::refuse_empty(path)?;
        migrate(path, &options).await?;
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|source| StoreError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        db_file::restrict_to_owner(path).map_err(|source| StoreError::Protect {
            path: path.to_path_buf(),
            source,
        })?;
        let store = Store {
            pool,
            writer: Arc::new(Mutex::new(())),
            changes: Arc::new(watch::channel(0).0),
        };
        store.ensure_default_workspace().await?;
        drop(setup);
        Ok(store)
    }

    /// Closes every connection (checkpointing the WAL); further calls fail.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(crate) async fn write(&self) -> Result<WriteTx<'_>, StoreError> {
        let guard = self.writer.lock().await;
        // IMMEDIATE takes SQLite's write lock up front (waiting up to the busy timeout), so a
        // transaction never fails later on upgrading a read snapshot that another process made
        // stale.
        let tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        Ok(WriteTx {
            tx,
            _guard: guard,
            changes: &self.changes,
        })
    }

    /// Changes whenever a write of this process commits. Writes by other processes on the same
    /// database are not signalled: a follower also re-reads now and then.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn ensure_default_workspace(&self) -> Result<(), StoreError> {
        let mut w = self.write().await?;
        sqlx::query(
            "INSERT INTO workspaces (id, name, key_prefix, created_at) VALUES (?, ?, ?, ?) \
             ON CONFLICT (key_prefix) DO NOTHING",
        )
        .bind(new_id())
        .bind(DEFAULT_WORKSPACE_NAME)
        .bind(DEFAULT_KEY_PREFIX)
        .bind(time::now())
        .execute(&mut *w.tx)
        .await?;
        w.commit().await
    }

    /// The default workspace.
    pub async fn workspace(&self) -> Result<wujie_protocol::api::Workspace, StoreError> {
        let (id, name, key_prefix): (String, String, String) =
            sqlx::query_as("SELECT id, name, key_prefix FROM workspaces WHERE key_prefix = ?")
                .bind(DEFAULT_KEY_PREFIX)
                .fetch_one(&self.pool)
                .await?;
        Ok(wujie_protocol::api::Workspace {
            id,
            name,
            key_prefix,
        })
    }
}

/// Applies the embedded migrations through a one-connection pool with foreign keys off: a
/// migration that rebuilds a table others point at needs that, and SQLite cannot switch it
/// inside the migration's transaction. Every reference is checked afterwards.
async fn migrate(path: &Path, options: &SqliteConnectOptions) -> Result<(), StoreError> {
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options.clone().foreign_keys(false))
        .await
        .map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
    let migrated = sqlx::migrate!("./migrations").run(&pool).await;
    let dangling: Result<Vec<(String,)>, sqlx::Error> =
        sqlx::query_as("SELECT \"table\" FROM pragma_foreign_key_check")
            .fetch_all(&pool)
            .await;
    pool.close().await;
    migrated?;
    if let Some((table,)) = dangling?.first() {
        return Err(StoreError::Invalid(format!(
            "the database has rows in {table} that point at missing rows; it may be damaged, \
             restore it from a backup"
        )));
    }
    Ok(())
}

pub(crate) fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
