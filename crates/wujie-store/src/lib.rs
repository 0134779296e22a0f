//! Persistence behind one API (sqlx; SQLite, or PostgreSQL for a team server with replicas).
//! This is the only crate that knows SQL. Both backends run the same statements through sqlx's
//! Any driver (numbered `$n` placeholders read by both); what differs between the dialects is
//! in `dialect`, and each backend has its own migrations.
//!
//! Idempotency lives in the schema as UNIQUE keys: a message or usage row is stored once per
//! (run, source, source_key), a discussion entry, usage row or session id once per
//! (discussion, source, source_key). Every write that spans several rows runs in one transaction.

mod activity;
mod browser_sessions;
mod cancel;
mod database;
mod db_file;
mod dialect;
mod discussions;
mod error;
mod feed_head;
mod git_snapshots;
mod ingest;
mod ingest_slots;
mod issues;
mod jobs;
mod migrations;
mod notify;
mod other_writers;
pub mod outbox;
mod rows;
mod runs;
mod sql;
mod text;
mod time;
mod token_state;
mod tokens;
mod transcript;
mod usage_totals;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{Any, AnyPool, ConnectOptions, Executor, Transaction};
use tokio::sync::{Mutex, MutexGuard, watch};

pub use activity::MAX_FEED_PAGE;
pub use browser_sessions::MAX_BROWSER_SESSIONS;
pub use database::Database;
pub use db_file::EmptyDatabase;
pub use error::StoreError;
pub use git_snapshots::GitTurn;
pub use jobs::{JobFilter, MAX_JOB_PAGE};
pub use tokens::{Principal, mint_token_secret};
pub use transcript::{
    ANSWER_MESSAGE_BYTES, DEFAULT_MESSAGE_PAGE_BYTES, LatestMessages, MAX_MESSAGE_PAGE_BYTES,
};

use dialect::{Backend, SerialLock};

/// Name and issue-key prefix of the workspace created on first open.
pub const DEFAULT_WORKSPACE_NAME: &str = "Wujie";
pub const DEFAULT_KEY_PREFIX: &str = "WUJ";

/// Error text of a run whose reporter stopped: the stale-run rule's failure, and the end
/// `local-run sync` records for a run whose reporter died. Words for users only: whether a
/// failure is the run's end is its failure kind (`FailureKind::Stale` is not).
pub const REPORTER_STOPPED: &str = "reporter stopped";

/// Handle on the database; cheap to clone, share it between tasks.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// SQLite has one writer. Serialising writers here (instead of letting deferred transactions
    /// race for the write lock) avoids SQLITE_BUSY on lock upgrades under concurrent ingest.
    /// PostgreSQL serialises what needs it with advisory locks instead (see `dialect`).
    writer: Arc<Mutex<()>>,
    /// Bumped after every committed write, so the live feeds wake up instead of polling; on
    /// PostgreSQL also on every write another server process commits (LISTEN/NOTIFY).
    changes: Arc<watch::Sender<u64>>,
    /// The PostgreSQL listener task; it ends when the last handle is dropped.
    _listener: Option<Arc<notify::Listener>>,
    /// On SQLite, what tells `changes` of other processes' writes; it stops when the last
    /// handle is dropped.
    other_writers: Option<Arc<other_writers::OtherWriters>>,
    /// The user token this handle writes for ([`Store::written_by`]), recorded with every
    /// change in the activity log.
    author_token: Option<Arc<str>>,
    /// What ingest may take of the pool (see `ingest_slots`).
    ingest_slots: Arc<ingest_slots::IngestSlots>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

/// A write transaction: on SQLite it holds the writer lock for its whole life.
pub(crate) struct WriteTx<'a> {
    pub(crate) tx: Transaction<'static, Any>,
    pub(crate) backend: Backend,
    _guard: Option<MutexGuard<'a, ()>>,
    changes: &'a watch::Sender<u64>,
    /// Whose request this is (a user token's id), for the activity log.
    pub(crate) author_token: Option<&'a str>,
}

impl WriteTx<'_> {
    /// Takes one of the transaction-scoped serialisation locks (a no-op on SQLite, whose
    /// writes are serialised already).
    pub(crate) async fn serialize(&mut self, lock: SerialLock<'_>) -> Result<(), StoreError> {
        self.backend.serialize(&mut self.tx, lock).await
    }

    pub(crate) async fn commit(mut self) -> Result<(), StoreError> {
        if self.backend == Backend::Postgres {
            // Delivered to every listening server process when (and only if) this commits.
            self.tx.execute(notify::NOTIFY).await?;
        }
        self.tx.commit().await?;
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
        Ok(())
    }
}

/// An exclusive lock on `<database>.setup-lock` while the database is opened and its schema
/// created or migrated, so concurrent processes on one database do both one after the other.
/// Released on drop, which removes the file first, so that commands leave no empty file behind.
pub(crate) struct SetupLock {
    path: std::path::PathBuf,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl Drop for SetupLock {
    fn drop(&mut self) {
        // Removed while the lock is still held (fields drop after this): a process waiting
        // for the lock on this file then finds that the path no longer names it, and locks
        // the path anew (see `setup_lock`).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Takes the [`SetupLock`] of `database`, waiting for another process that holds it.
pub(crate) async fn setup_lock(database: &Path) -> Result<SetupLock, StoreError> {
    use std::os::unix::fs::MetadataExt;

    let mut name = database.as_os_str().to_owned();
    name.push(".setup-lock");
    let path = std::path::PathBuf::from(name);
    let io = |source: std::io::Error| StoreError::Io {
        path: path.clone(),
        source,
    };
    loop {
        let file = open_lock_file(&path).map_err(io)?;
        let lock = tokio::task::spawn_blocking(move || {
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, errno)| std::io::Error::from(errno))
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|r| r)
        .map_err(io)?;
        let held = lock.metadata().map_err(io)?;
        // The holder before us removed the file (or it was replaced): this lock is on a file
        // nobody else will lock; take the one the path names now.
        let same = std::fs::metadata(&path)
            .is_ok_and(|now| now.ino() == held.ino() && now.dev() == held.dev());
        if same {
            return Ok(SetupLock { path, _lock: lock });
        }
    }
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
    /// Connections to a PostgreSQL server (each is a server process there).
    pub pg_connections: u32,
}

impl StoreOptions {
    /// A standalone server: a larger page cache keeps the idempotency index hot during long
    /// ingests from many runs.
    pub const SERVER: StoreOptions = StoreOptions {
        page_cache_kib: 32 * 1024,
        pg_connections: 16,
    };
    /// The server embedded in a `wujie` command: it serves one user's runs, and its memory is
    /// that command's memory.
    pub const EMBEDDED: StoreOptions = StoreOptions {
        page_cache_kib: 4 * 1024,
        pg_connections: 4,
    };
}

/// How long connecting to a PostgreSQL server may take before it counts as unreachable, how
/// long a request waits for one of its connections, and how long ingest waits for its slot,
/// before it is answered busy.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections to a SQLite file: readers beside the one writer.
const SQLITE_CONNECTIONS: u32 = 4;

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
            .create_if_missing(true);
        // Processes open the database one after the other: two would both try to create the
        // schema, and a connection opening a WAL database while another one sets it up can get
        // SQLITE_BUSY without the busy timeout being asked.
        let setup = setup_lock(path).await?;
        db_file::refuse_empty(path)?;
        migrate_sqlite(path, &options).await?;
        sqlx::any::install_default_drivers();
        let open_error = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let any = AnyConnectOptions::from_url(&options.to_url_lossy()).map_err(open_error)?;
        // The Any driver connects by URL, which carries no pragmas: every connection sets them
        // itself before it is used. Negative cache size: KiB rather than pages.
        let pragmas = format!(
            "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             PRAGMA foreign_keys = ON; PRAGMA cache_size = -{}",
            tuning.page_cache_kib
        );
        let pool = AnyPoolOptions::new()
            .max_connections(SQLITE_CONNECTIONS)
            .after_connect(move |conn, _| {
                let pragmas = pragmas.clone();
                Box::pin(async move { conn.execute(pragmas.as_str()).await.map(drop) })
            })
            .connect_with(any)
            .await
            .map_err(open_error)?;
        db_file::restrict_to_owner(path).map_err(|source| StoreError::Protect {
            path: path.to_path_buf(),
            source,
        })?;
        let changes = Arc::new(watch::channel(0).0);
        let mut store = Store::new(pool, Backend::Sqlite, changes, None);
        store.other_writers = Some(Arc::new(other_writers::OtherWriters::new(options)));
        store.ensure_default_workspace().await?;
        drop(setup);
        Ok(store)
    }

    /// Connects to the PostgreSQL database at `url` (`postgres://user@host:port/db`), applies
    /// its migrations (one server process at a time: sqlx holds an advisory lock meanwhile),
    /// creates the default workspace and starts listening for other processes' writes.
    pub async fn connect_postgres(url: &str, tuning: StoreOptions) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let where_ = Database::Postgres(url.to_owned()).describe();
        let connect_error = |source| StoreError::Connect {
            database: where_.clone(),
            source,
        };
        let options = AnyConnectOptions::from_str(url).map_err(connect_error)?;
        // A pool retries a failing connect until its acquire timeout and then only says that
        // it timed out; one plain connection first says why (refused, unknown host, password).
        let probe = tokio::time::timeout(CONNECT_TIMEOUT, options.connect())
            .await
            .unwrap_or_else(|_| {
                Err(sqlx::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
                )))
            })
            .map_err(connect_error)?;
        let _ = sqlx::Connection::close(probe).await;
        let pool = AnyPoolOptions::new()
            .max_connections(tuning.pg_connections)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(connect_error)?;
        sqlx::migrate!("./migrations_postgres").run(&pool).await?;
        let changes = Arc::new(watch::channel(0).0);
        let listener = notify::Listener::start(url, changes.clone())
            .await
            .map_err(connect_error)?;
        let store = Store::new(pool, Backend::Postgres, changes, Some(Arc::new(listener)));
        store.ensure_default_workspace().await?;
        Ok(store)
    }

    /// Opens `database`: a SQLite file or a PostgreSQL server.
    pub async fn open_database(
        database: &Database,
        tuning: StoreOptions,
    ) -> Result<Store, StoreError> {
        match database {
            Database::Sqlite(path) => Store::open_with(path, tuning).await,
            Database::Postgres(url) => Store::connect_postgres(url, tuning).await,
        }
    }

    fn new(
        pool: AnyPool,
        backend: Backend,
        changes: Arc<watch::Sender<u64>>,
        listener: Option<Arc<notify::Listener>>,
    ) -> Store {
        let connections = pool.options().get_max_connections();
        Store {
            pool,
            backend,
            writer: Arc::new(Mutex::new(())),
            changes,
            _listener: listener,
            other_writers: None,
            author_token: None,
            ingest_slots: Arc::new(ingest_slots::IngestSlots::for_pool(
                connections,
                CONNECT_TIMEOUT,
            )),
        }
    }

    /// This store, writing for the user token `token_id`: every change it records in the
    /// activity log names that token (and so its name) as who made it. Cheap: handles share
    /// their connections.
    pub fn written_by(&self, token_id: &str) -> Store {
        Store {
            author_token: Some(Arc::from(token_id)),
            ..self.clone()
        }
    }

    /// Closes every connection (checkpointing SQLite's WAL); further calls fail.
    pub async fn close(&self) {
        if let Some(other_writers) = &self.other_writers {
            other_writers.stop();
        }
        // A connection a finished query is still handing back to the pool is neither idle nor
        // checked out, and the pool's close misses it: it would stay open (and on SQLite keep
        // the file and its log open) until the process ends. Let those arrive first; a
        // connection someone really holds is not waited for long.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while self.pool.num_idle() < self.pool.size() as usize
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.pool.close().await;
    }

    /// A write transaction. On SQLite, IMMEDIATE takes the write lock up front (waiting up to
    /// the busy timeout), so a transaction never fails later on upgrading a read snapshot that
    /// another process made stale. On PostgreSQL it first takes the activity lock (see
    /// [`SerialLock::Activity`]): only ingest, the hot path, goes without it.
    pub(crate) async fn write(&self) -> Result<WriteTx<'_>, StoreError> {
        let mut w = self.write_unserialized().await?;
        w.serialize(SerialLock::Activity).await?;
        Ok(w)
    }

    /// A write transaction that takes the locks it needs itself (`WriteTx::serialize`).
    pub(crate) async fn write_unserialized(&self) -> Result<WriteTx<'_>, StoreError> {
        let (tx, guard) = match self.backend {
            Backend::Sqlite => {
                let guard = self.writer.lock().await;
                (self.pool.begin_with("BEGIN IMMEDIATE").await?, Some(guard))
            }
            Backend::Postgres => (self.pool.begin().await?, None),
        };
        Ok(WriteTx {
            tx,
            backend: self.backend,
            _guard: guard,
            changes: &self.changes,
            author_token: self.author_token.as_deref(),
        })
    }

    /// Changes whenever a write commits, this process's or another's on the same database:
    /// on SQLite another's within a few dozen milliseconds (`other_writers`), on PostgreSQL as
    /// its notification arrives. It may also change with nothing new to read.
    pub fn changes(&self) -> watch::Receiver<u64> {
        let followed = self.changes.subscribe();
        if let Some(other_writers) = &self.other_writers {
            other_writers.follow(&self.changes);
        }
        followed
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    async fn ensure_default_workspace(&self) -> Result<(), StoreError> {
        // Looked up first: a write would wait for any process holding the write lock, even
        // when there is nothing to write (see `migrations`).
        let found: Option<(i64,)> =
            sqlx::query_as("SELECT 1 FROM workspaces WHERE key_prefix = $1")
                .bind(DEFAULT_KEY_PREFIX)
                .fetch_optional(self.pool())
                .await?;
        if found.is_some() {
            return Ok(());
        }
        let mut w = self.write().await?;
        sqlx::query(
            "INSERT INTO workspaces (id, name, key_prefix, created_at) VALUES ($1, $2, $3, $4) \
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
            sqlx::query_as("SELECT id, name, key_prefix FROM workspaces WHERE key_prefix = $1")
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

/// Applies the embedded SQLite migrations through a one-connection pool with foreign keys off:
/// a migration that rebuilds a table others point at needs that, and SQLite cannot switch it
/// inside the migration's transaction. Every reference is checked afterwards.
async fn migrate_sqlite(path: &Path, options: &SqliteConnectOptions) -> Result<(), StoreError> {
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            options
                .clone()
                .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                .foreign_keys(false),
        )
        .await
        .map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
    let migrator = sqlx::migrate!("./migrations");
    let migrated = if migrations::up_to_date(&pool, &migrator).await {
        Ok(())
    } else {
        migrator.run(&pool).await
    };
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

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_store;
#[cfg(test)]
#[path = "../tests/store/main.rs"]
mod suite;
