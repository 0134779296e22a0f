//! The reporter's durable outbox (its own SQLite file in the profile's state dir).
//!
//! Rows are committed before delivery and deleted after the server acknowledged them, so a
//! crash of `wujie` (even SIGKILL) loses nothing it had committed: WAL with
//! `synchronous=NORMAL` makes each commit survive the process, and delivery is idempotent
//! server-side, so sending a row again after a lost acknowledgement is harmless. What it had read
//! but not committed yet is in its spool file, from the mark each commit records ([`spools`]).
//!
//! Who delivers a target is decided by the kernel, not by a clock: the process reporting a
//! target holds an exclusive `flock` on the target's lock file (`<outbox>.owners/<hex id>`) for
//! as long as it may write or deliver it, and the kernel drops that lock the moment the process
//! dies, however it dies. A process that is merely stopped (Ctrl+Z, SIGSTOP, a sleeping laptop)
//! keeps its lock, so nobody takes its target over; one that crashed or was SIGKILLed has none,
//! so its target can be taken over at once. `flock` locks belong to an open file description:
//! a second open of the same file conflicts even inside the owning process, so a background
//! sync in the reporter's own process leaves the reporter's target alone too.
//!
//! Every write goes through one connection. The reader's appends and the deliverer's deletes
//! then queue for it without blocking, instead of colliding on SQLite's write lock, whose busy
//! handler sleeps for milliseconds at a time. Reads use their own connections (WAL readers never
//! wait for the writer).

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{QueryBuilder, Row, Sqlite, SqlitePool};

mod place;
mod spools;

pub use place::OutboxPlace;

pub use spools::{SpoolMark, SpoolState};

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("cannot open the outbox {path}")]
    Open {
        path: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("the outbox could not be read or written")]
    Sql(#[from] sqlx::Error),
    #[error("outbox: {0}")]
    Setup(String),
    #[error("the outbox's schema could not be migrated")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error(transparent)]
    Empty(#[from] crate::db_file::EmptyDatabase),
    #[error("cannot use the lock file {path} of the outbox target {id}")]
    Lock {
        id: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{id} is being reported by another running wujie (pid {pid}); wait for it to end or stop it"
    )]
    Owned { id: String, pid: String },
}

impl OutboxError {
    /// Whether SQLite could not write for lack of space (`SQLITE_FULL`: the disk, or the file
    /// size limit).
    pub fn is_disk_full(&self) -> bool {
        const SQLITE_FULL: i64 = 13;
        self.sqlite_code() == Some(SQLITE_FULL)
    }

    /// Whether another connection held the write lock for longer than the busy timeout
    /// (`SQLITE_BUSY`), e.g. a process stopped in the middle of a write.
    pub fn is_busy(&self) -> bool {
        const SQLITE_BUSY: i64 = 5;
        self.sqlite_code() == Some(SQLITE_BUSY)
    }

    /// Whether this process's one connection for writing the outbox did not come free in time:
    /// another of its tasks held it, waiting for SQLite's write lock, and the wait counted the
    /// time this process was stopped (Ctrl+Z, SIGSTOP) as waiting. Nothing failed; try again.
    pub fn is_pool_timeout(&self) -> bool {
        matches!(self, OutboxError::Sql(sqlx::Error::PoolTimedOut))
    }

    /// SQLite's primary result code, for errors that come from SQLite.
    fn sqlite_code(&self) -> Option<i64> {
        let sql = match self {
            OutboxError::Sql(e) | OutboxError::Open { source: e, .. } => e,
            _ => return None,
        };
        sql.as_database_error()
            .and_then(|db| db.code())
            .and_then(|code| code.parse::<i64>().ok())
            .map(|code| code & 0xff)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    Run,
    Discussion,
}

impl TargetKind {
    fn as_str(self) -> &'static str {
        match self {
            TargetKind::Run => "run",
            TargetKind::Discussion => "discussion",
        }
    }
}

#[derive(Debug, Clone)]
pub struct NewTarget<'a> {
    pub id: &'a str,
    pub kind: TargetKind,
    pub server_url: &'a str,
    pub label: &'a str,
    pub reporter_pid: u32,
}

/// A target with its counts, for `local-run status` and `sync`.
#[derive(Debug, Clone)]
pub struct TargetState {
    pub id: String,
    pub kind: TargetKind,
    pub server_url: String,
    pub label: String,
    /// The process that added the target last; for messages only (pids are reused), the
    /// target's lock says whether it still reports it.
    pub reporter_pid: Option<u32>,
    pub finish_json: Option<String>,
    pub finish_sent: bool,
    pub pending: i64,
    pub failed: i64,
    /// A spool holds lines for it that may not be committed yet (see [`spools`]).
    pub spooled: bool,
}

#[derive(Debug, Clone)]
pub struct OutboxRow {
    pub seq: i64,
    pub item_json: String,
    pub read_at_ms: i64,
}

#[derive(Debug, Clone)]
pub struct FailedRow {
    pub seq: i64,
    pub item_json: String,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub struct Outbox {
    /// The one connection that writes.
    writer: SqlitePool,
    reader: SqlitePool,
    /// Where the targets' lock files live.
    owners_dir: PathBuf,
    path: PathBuf,
    /// The file at `path` when it was opened (see [`Outbox::keep_at_its_path`]).
    file_id: Option<(u64, u64)>,
}

/// Ownership of one target: while this value lives, no other process (nor another
/// [`Outbox::claim`] in this one) can take the target. Dropped, or with the process gone, the
/// kernel releases it.
#[derive(Debug)]
pub struct TargetLock {
    _lock: Flock<File>,
}

/// Most bytes of items one read of pending rows holds (past its first row), by default.
pub const READ_MAX_BYTES: usize = 8 * 1024 * 1024;

/// Rows per INSERT statement: one statement per row costs more than the row itself; three bound
/// values a row stays far below SQLite's limit of 32,766.
const INSERT_CHUNK: usize = 500;

/// Free pages are given back to the file system once there are at least this many (1 MiB of
/// 4 KiB pages) and they are at least half of the file: a backlog that was delivered, not the
/// churn of a steady run, whose freed pages are reused by the next appends at once.
const RECLAIM_MIN_FREE_PAGES: i64 = 256;
/// The WAL is cut back to this many bytes after a checkpoint.
const WAL_SIZE_LIMIT: u64 = 4 * 1024 * 1024;

/// Delivered rows are deleted, and their pages go back to the file system (see
/// `reclaim_space`) with incremental auto-vacuum. A new outbox gets it before its tables; one
/// created before auto-vacuum was set has it off, and turning it on takes one VACUUM. Best
/// effort: another process reading the file makes it fail, and the next open tries again.
async fn enable_incremental_vacuum(writer: &SqlitePool) {
    let mode: Result<i64, _> = sqlx::query_scalar("PRAGMA auto_vacuum")
        .fetch_one(writer)
        .await;
    if matches!(mode, Ok(0)) {
        let _ = sqlx::query("PRAGMA auto_vacuum = INCREMENTAL")
            .execute(writer)
            .await;
        let _ = sqlx::query("VACUUM").execute(writer).await;
    }
}

/// How often [`Outbox::claim`] looks again at a target's lock held by someone else.
const CLAIM_ATTEMPTS: u32 = 5;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// How long a write waits for the outbox's one writing connection (sqlx's default). A wait
/// that spans a stop of the process (Ctrl+Z) exceeds it at once on resuming: writers try again
/// ([`OutboxError::is_pool_timeout`]).
const WRITER_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

impl Outbox {
    pub async fn open(path: &Path) -> Result<Outbox, OutboxError> {
        Outbox::open_waiting(path, WRITER_ACQUIRE_TIMEOUT).await
    }

    /// [`Outbox::open`] with another wait for the writing connection: a wait that times out
    /// within a test, as one spanning a long stop does.
    #[cfg(feature = "testing")]
    pub async fn open_with_writer_wait(
        path: &Path,
        writer_acquire_timeout: Duration,
    ) -> Result<Outbox, OutboxError> {
        Outbox::open_waiting(path, writer_acquire_timeout).await
    }

    /// Take the writing connection and keep it until the guard is dropped, as another task of
    /// this process does while its write waits for SQLite's write lock: every write of this
    /// outbox waits meanwhile.
    #[cfg(feature = "testing")]
    pub async fn hold_writer(&self) -> Result<sqlx::pool::PoolConnection<Sqlite>, OutboxError> {
        Ok(self.writer.acquire().await?)
    }

    async fn open_waiting(
        path: &Path,
        writer_acquire_timeout: Duration,
    ) -> Result<Outbox, OutboxError> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let open_err = |source| OutboxError::Open {
            path: path.display().to_string(),
            source,
        };
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .map_err(open_err)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            // The WAL shrinks back after a burst. (Incremental auto-vacuum is set by
            // `enable_incremental_vacuum`, once: setting it on every connection takes the
            // write lock, which a process stopped in the middle of a write holds.)
            .pragma("journal_size_limit", WAL_SIZE_LIMIT.to_string());
        // Opened one process after the other, as the store is (see `Store::open_with`).
        let setup = crate::setup_lock(path)
            .await
            .map_err(|e| OutboxError::Setup(e.to_string()))?;
        crate::db_file::refuse_empty(path)?;
        // Every connection is opened now and kept for the process's life: one opened later
        // would open whatever is at the path then, e.g. an empty outbox created in place of a
        // deleted one (see `Outbox::keep_at_its_path`).
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(writer_acquire_timeout)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options.clone())
            .await
            .map_err(open_err)?;
        crate::db_file::restrict_to_owner(path).map_err(|e| {
            OutboxError::Setup(format!(
                "cannot make {} readable by its owner only: {e}",
                path.display()
            ))
        })?;
        // Before the schema, so that a new outbox has it without a VACUUM of its tables.
        enable_incremental_vacuum(&writer).await;
        let migrator = sqlx::migrate!("./migrations_outbox");
        if !crate::migrations::up_to_date(&writer, &migrator).await {
            migrator.run(&writer).await?;
        }
        let reader = SqlitePoolOptions::new()
            .max_connections(2)
            .min_connections(2)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options.create_if_missing(false))
            .await
            .map_err(open_err)?;
        let opened = [reader.acquire().await, reader.acquire().await];
        for connection in opened {
            connection.map_err(open_err)?;
        }
        drop(setup);
        let mut owners = path.as_os_str().to_owned();
        owners.push(".owners");
        Ok(Outbox {
            writer,
            reader,
            owners_dir: PathBuf::from(owners),
            path: path.to_path_buf(),
            file_id: place::file_id(path),
        })
    }

    /// The outbox's database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock file of a target. Ids come from a server: hex keeps any id a plain file name.
    fn lock_path(&self, target_id: &str) -> PathBuf {
        self.owners_dir.join(hex::encode(target_id))
    }

    /// Take ownership of a target, unless a live process (this one included) holds it.
    pub fn claim(&self, target_id: &str) -> Result<Option<TargetLock>, OutboxError> {
        let path = self.lock_path(target_id);
        let io = |source: std::io::Error| OutboxError::Lock {
            id: target_id.to_owned(),
            path: path.display().to_string(),
            source,
        };
        let mut busy = 0;
        loop {
            std::fs::create_dir_all(&self.owners_dir).map_err(io)?;
            let file = match crate::open_lock_file(&path) {
                Ok(file) => file,
                // The last owner removed the directory, empty, between the two: make it again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(e)),
            };
            let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => lock,
                // An owner holds the lock for its whole life, an `is_owned` probe for a few
                // microseconds: look again a few times before taking the target as owned.
                Err((_, Errno::EWOULDBLOCK)) if busy < CLAIM_ATTEMPTS => {
                    busy += 1;
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
                Err((_, Errno::EWOULDBLOCK)) => return Ok(None),
                Err((_, errno)) => return Err(io(errno.into())),
            };
            // The previous owner removes the file when it is done with the target, possibly
            // between our open and our lock: a lock on a removed file guards nothing, so
            // start over on the file now at that path.
            let locked = lock.metadata().map_err(io)?;
            match std::fs::metadata(&path) {
                Ok(current) if current.ino() == locked.ino() && current.dev() == locked.dev() => {
                    return Ok(Some(TargetLock { _lock: lock }));
                }
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io(e)),
            }
        }
    }

    /// Whether a live process holds the target (see the module docs).
    pub fn is_owned(&self, target_id: &str) -> bool {
        // Opened without creating: an owner always has the file, and a probe must not leave
        // files behind for targets that are gone.
        let Ok(file) = File::open(self.lock_path(target_id)) else {
            return false;
        };
        matches!(
            Flock::lock(file, FlockArg::LockSharedNonblock),
            Err((_, Errno::EWOULDBLOCK))
        )
    }

    /// Add a target owned by this process (or take over one left by a dead process: a resumed
    /// discussion). Fails when another live process reports it.
    pub async fn add_target(&self, t: &NewTarget<'_>) -> Result<TargetLock, OutboxError> {
        let Some(lock) = self.claim(t.id)? else {
            let pid = self
                .targets()
                .await?
                .into_iter()
                .find(|s| s.id == t.id)
                .and_then(|s| s.reporter_pid)
                .map_or_else(|| "unknown".to_owned(), |p| p.to_string());
            return Err(OutboxError::Owned {
                id: t.id.to_owned(),
                pid,
            });
        };
        sqlx::query(
            "INSERT INTO targets (id, kind, server_url, label, reporter_pid, created_at)
             VALUES (?, ?, ?, ?, ?, ?)
             ON CONFLICT(id) DO UPDATE SET reporter_pid = excluded.reporter_pid",
        )
        .bind(t.id)
        .bind(t.kind.as_str())
        .bind(t.server_url)
        .bind(t.label)
        .bind(t.reporter_pid as i64)
        .bind(now_ms())
        .execute(&self.writer)
        .await?;
        Ok(lock)
    }

    /// Commit items read from an adapter, in order, in one transaction.
    pub async fn append(
        &self,
        target_id: &str,
        items: &[(String, i64)],
    ) -> Result<(), OutboxError> {
        self.append_spooled(target_id, items, None).await
    }

    /// [`Outbox::append`], and with `mark` the transaction also records how far into its spool
    /// every line is committed now, and that the spool's lines go to `target_id` (see
    /// [`spools`]). The mark is recorded with no items too: lines that went nowhere (blank, or
    /// requests), or the lines that follow going to another target.
    pub async fn append_spooled(
        &self,
        target_id: &str,
        items: &[(String, i64)],
        mark: Option<&SpoolMark>,
    ) -> Result<(), OutboxError> {
        let mut tx = self.writer.begin().await?;
        for chunk in items.chunks(INSERT_CHUNK) {
            QueryBuilder::<Sqlite>::new("INSERT INTO items (target_id, item_json, read_at) ")
                .push_values(chunk, |mut row, (json, read_at)| {
                    row.push_bind(target_id).push_bind(json).push_bind(read_at);
                })
                .build()
                .execute(&mut *tx)
                .await?;
        }
        if let Some(mark) = mark {
            spools::record_mark(&mut tx, target_id, mark).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The oldest undelivered, not-failed rows of a target, in read order: at most `limit`
    /// rows, and past the first no more than [`READ_MAX_BYTES`] of items.
    pub async fn pending(
        &self,
        target_id: &str,
        limit: i64,
    ) -> Result<Vec<OutboxRow>, OutboxError> {
        self.pending_after(target_id, 0, limit, READ_MAX_BYTES)
            .await
    }

    /// Like [`Outbox::pending`], but only rows after `after_seq`: the batch that follows one
    /// still in flight.
    pub async fn pending_after(
        &self,
        target_id: &str,
        after_seq: i64,
        limit: i64,
        max_bytes: usize,
    ) -> Result<Vec<OutboxRow>, OutboxError> {
        use futures::TryStreamExt;
        // Read row by row, so that no more than `max_bytes` of items (and at least one row)
        // are ever held: events may be megabytes each.
        let mut rows = sqlx::query(
            "SELECT seq, item_json, read_at FROM items
             WHERE target_id = ? AND failed IS NULL AND seq > ? ORDER BY seq LIMIT ?",
        )
        .bind(target_id)
        .bind(after_seq)
        .bind(limit)
        .fetch(&self.reader);
        let mut out = Vec::new();
        let mut bytes = 0;
        while let Some(r) = rows.try_next().await? {
            let row = OutboxRow {
                seq: r.get(0),
                item_json: r.get(1),
                read_at_ms: r.get(2),
            };
            bytes += row.item_json.len();
            if !out.is_empty() && bytes > max_bytes {
                break;
            }
            out.push(row);
        }
        Ok(out)
    }

    /// Settle a delivered batch: acknowledged rows go, refused rows stay with the reason.
    pub async fn settle(
        &self,
        delivered: &[i64],
        refused: &[(i64, String)],
    ) -> Result<(), OutboxError> {
        let mut tx = self.writer.begin().await?;
        // Delivered rows are mostly one run of consecutive sequence numbers: delete them as
        // ranges rather than one statement per row.
        let mut sorted = delivered.to_vec();
        sorted.sort_unstable();
        let mut i = 0;
        while i < sorted.len() {
            let mut j = i;
            while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
                j += 1;
            }
            sqlx::query("DELETE FROM items WHERE seq BETWEEN ? AND ?")
                .bind(sorted[i])
                .bind(sorted[j])
                .execute(&mut *tx)
                .await?;
            i = j + 1;
        }
        for (seq, reason) in refused {
            sqlx::query("UPDATE items SET failed = ? WHERE seq = ?")
                .bind(reason)
                .bind(seq)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        if !delivered.is_empty() {
            self.reclaim_space().await?;
        }
        Ok(())
    }

    /// Give the pages of delivered rows back to the file system once they are most of the
    /// file (see [`RECLAIM_MIN_FREE_PAGES`]).
    async fn reclaim_space(&self) -> Result<(), OutboxError> {
        let mut conn = self.writer.acquire().await?;
        let free: i64 = sqlx::query_scalar("PRAGMA freelist_count")
            .fetch_one(&mut *conn)
            .await?;
        if free < RECLAIM_MIN_FREE_PAGES {
            return Ok(());
        }
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
            .fetch_one(&mut *conn)
            .await?;
        if free * 2 >= pages {
            sqlx::query("PRAGMA incremental_vacuum")
                .execute(&mut *conn)
                .await?;
            // The file shrinks only when the WAL is written back into it. A reader in the
            // middle of a read makes this partial; the next reclaim finishes it.
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    /// Close every connection; the last one checkpoints the WAL into the file and removes it.
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }

    pub async fn failed(&self, target_id: &str) -> Result<Vec<FailedRow>, OutboxError> {
        let rows = sqlx::query(
            "SELECT seq, item_json, failed FROM items
             WHERE target_id = ? AND failed IS NOT NULL ORDER BY seq",
        )
        .bind(target_id)
        .fetch_all(&self.reader)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| FailedRow {
                seq: r.get(0),
                item_json: r.get(1),
                reason: r.get(2),
            })
            .collect())
    }

    /// Give refused rows another chance (e.g. after the server's limit was raised).
    pub async fn retry_failed(&self, target_id: &str) -> Result<u64, OutboxError> {
        let done = sqlx::query(
            "UPDATE items SET failed = NULL WHERE target_id = ? AND failed IS NOT NULL",
        )
        .bind(target_id)
        .execute(&self.writer)
        .await?;
        Ok(done.rows_affected())
    }

    /// Record how the run ended; it is sent once every event before it was delivered. The
    /// reporter stays the target's owner until its process exits, so a concurrent sync in
    /// another task or process leaves the target alone.
    pub async fn set_finish(&self, target_id: &str, finish_json: &str) -> Result<(), OutboxError> {
        sqlx::query("UPDATE targets SET finish_json = ? WHERE id = ?")
            .bind(finish_json)
            .bind(target_id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// The finish was acknowledged: forget the target unless refused rows still need a look,
    /// or a spool of a process that died still holds lines for it. Only the target's owner (the
    /// holder of its [`TargetLock`]) calls this.
    pub async fn finish_delivered(&self, target_id: &str) -> Result<(), OutboxError> {
        let mut tx = self.writer.begin().await?;
        sqlx::query("UPDATE targets SET finish_sent = 1 WHERE id = ?")
            .bind(target_id)
            .execute(&mut *tx)
            .await?;
        let forgotten = sqlx::query(
            "DELETE FROM targets WHERE id = ?
               AND NOT EXISTS (SELECT 1 FROM items WHERE target_id = targets.id)
               AND NOT EXISTS (SELECT 1 FROM spools WHERE target_id = targets.id)",
        )
        .bind(target_id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            > 0;
        tx.commit().await?;
        if forgotten {
            self.forget_lock_file(target_id);
        }
        Ok(())
    }

    /// Remove the lock file of a target that is gone, while still holding its lock (see
    /// [`Outbox::claim`] for why a late claimant then starts over). A file left behind by a crash
    /// right here costs only its name.
    pub fn forget_lock_file(&self, target_id: &str) {
        let _ = std::fs::remove_file(self.lock_path(target_id));
        // The last one takes the directory with it (it fails while another holds a file).
        let _ = std::fs::remove_dir(&self.owners_dir);
    }

    pub async fn targets(&self) -> Result<Vec<TargetState>, OutboxError> {
        let sql = format!("{TARGET_SELECT} ORDER BY t.created_at");
        let rows: Vec<TargetRow> = sqlx::query_as(&sql).fetch_all(&self.reader).await?;
        Ok(rows.into_iter().map(TargetState::from).collect())
    }

    /// One target, as [`Outbox::targets`] lists it; `None` once it is gone.
    pub async fn target(&self, id: &str) -> Result<Option<TargetState>, OutboxError> {
        let sql = format!("{TARGET_SELECT} WHERE t.id = ?");
        let row: Option<TargetRow> = sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(&self.reader)
            .await?;
        Ok(row.map(TargetState::from))
    }
}

const TARGET_SELECT: &str = "SELECT t.id, t.kind, t.server_url, t.label, t.reporter_pid,
        t.finish_json, t.finish_sent,
        (SELECT COUNT(*) FROM items i WHERE i.target_id = t.id AND i.failed IS NULL) AS pending,
        (SELECT COUNT(*) FROM items i WHERE i.target_id = t.id AND i.failed IS NOT NULL)
            AS failed,
        EXISTS (SELECT 1 FROM spools s WHERE s.target_id = t.id) AS spooled
     FROM targets t";

/// A target as [`TARGET_SELECT`] reads it, with how many of its items are pending and failed.
#[derive(sqlx::FromRow)]
struct TargetRow {
    id: String,
    kind: String,
    server_url: String,
    label: String,
    reporter_pid: Option<i64>,
    finish_json: Option<String>,
    finish_sent: i64,
    pending: i64,
    failed: i64,
    spooled: bool,
}

impl From<TargetRow> for TargetState {
    fn from(row: TargetRow) -> TargetState {
        TargetState {
            id: row.id,
            kind: if row.kind == "run" {
                TargetKind::Run
            } else {
                TargetKind::Discussion
            },
            server_url: row.server_url,
            label: row.label,
            reporter_pid: row.reporter_pid.map(|p| p as u32),
            finish_json: row.finish_json,
            finish_sent: row.finish_sent != 0,
            pending: row.pending,
            failed: row.failed,
            spooled: row.spooled,
        }
    }
}
