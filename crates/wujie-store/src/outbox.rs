//! The reporter's durable outbox (its own SQLite file in the profile's state dir).
//!
//! Rows are committed before delivery and deleted after the server acknowledged them, so a
//! crash of `wujie` (even SIGKILL) loses nothing it had read: WAL with `synchronous=NORMAL`
//! makes each commit survive the process, and delivery is idempotent server-side, so sending a
//! row again after a lost acknowledgement is harmless.
//!
//! Every write goes through one connection. The reader's appends and the deliverer's deletes
//! then queue for it without blocking, instead of colliding on SQLite's write lock, whose busy
//! handler sleeps for milliseconds at a time. Reads use their own connections (WAL readers never
//! wait for the writer).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{QueryBuilder, Row, Sqlite, SqlitePool};

#[derive(Debug, thiserror::Error)]
pub enum OutboxError {
    #[error("outbox {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("outbox: {0}")]
    Sql(#[from] sqlx::Error),
    #[error("outbox: {0}")]
    Setup(String),
    #[error("outbox migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
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
    pub reporter_pid: Option<u32>,
    pub heartbeat_at_ms: i64,
    pub finish_json: Option<String>,
    pub finish_sent: bool,
    pub pending: i64,
    pub failed: i64,
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
}

/// Rows per INSERT statement: one statement per row costs more than the row itself; three bound
/// values a row stays far below SQLite's limit of 32,766.
const INSERT_CHUNK: usize = 500;

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Outbox {
    pub async fn open(path: &Path) -> Result<Outbox, OutboxError> {
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
            .busy_timeout(Duration::from_secs(10));
        // Opened one process after the other, as the store is (see `Store::open_with`).
        let setup = crate::setup_lock(path)
            .await
            .map_err(|e| OutboxError::Setup(e.to_string()))?;
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await
            .map_err(open_err)?;
        sqlx::migrate!("./migrations_outbox").run(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .map_err(open_err)?;
        drop(setup);
        Ok(Outbox { writer, reader })
    }

    pub async fn add_target(&self, t: &NewTarget<'_>) -> Result<(), OutboxError> {
        let now = now_ms();
        sqlx::query(
            "INSERT INTO targets (id, kind, server_url, label, reporter_pid, heartbeat_at, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(id) DO UPDATE SET reporter_pid = excluded.reporter_pid,
                                           heartbeat_at = excluded.heartbeat_at",
        )
        .bind(t.id)
        .bind(t.kind.as_str())
        .bind(t.server_url)
        .bind(t.label)
        .bind(t.reporter_pid as i64)
        .bind(now)
        .bind(now)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    /// Commit items read from an adapter, in order, in one transaction.
    pub async fn append(
        &self,
        target_id: &str,
        items: &[(String, i64)],
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
        tx.commit().await?;
        Ok(())
    }

    /// The oldest undelivered, not-failed rows of a target, in read order.
    pub async fn pending(
        &self,
        target_id: &str,
        limit: i64,
    ) -> Result<Vec<OutboxRow>, OutboxError> {
        self.pending_after(target_id, 0, limit).await
    }

    /// Like [`Outbox::pending`], but only rows after `after_seq`: the batch that follows one
    /// still in flight.
    pub async fn pending_after(
        &self,
        target_id: &str,
        after_seq: i64,
        limit: i64,
    ) -> Result<Vec<OutboxRow>, OutboxError> {
        let rows = sqlx::query(
            "SELECT seq, item_json, read_at FROM items
             WHERE target_id = ? AND failed IS NULL AND seq > ? ORDER BY seq LIMIT ?",
        )
        .bind(target_id)
        .bind(after_seq)
        .bind(limit)
        .fetch_all(&self.reader)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| OutboxRow {
                seq: r.get(0),
                item_json: r.get(1),
                read_at_ms: r.get(2),
            })
            .collect())
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
        Ok(())
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

    pub async fn heartbeat(&self, target_id: &str) -> Result<(), OutboxError> {
        sqlx::query("UPDATE targets SET heartbeat_at = ? WHERE id = ?")
            .bind(now_ms())
            .bind(target_id)
            .execute(&self.writer)
            .await?;
        Ok(())
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

    /// The finish was acknowledged: forget the target unless refused rows still need a look.
    pub async fn finish_delivered(&self, target_id: &str) -> Result<(), OutboxError> {
        let mut tx = self.writer.begin().await?;
        sqlx::query("UPDATE targets SET finish_sent = 1 WHERE id = ?")
            .bind(target_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "DELETE FROM targets WHERE id = ?
               AND NOT EXISTS (SELECT 1 FROM items WHERE target_id = targets.id)",
        )
        .bind(target_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn targets(&self) -> Result<Vec<TargetState>, OutboxError> {
        let rows = sqlx::query(
            "SELECT t.id, t.kind, t.server_url, t.label, t.reporter_pid, t.heartbeat_at,
                    t.finish_json, t.finish_sent,
                    (SELECT COUNT(*) FROM items i WHERE i.target_id = t.id AND i.failed IS NULL),
                    (SELECT COUNT(*) FROM items i WHERE i.target_id = t.id AND i.failed IS NOT NULL)
             FROM targets t ORDER BY t.created_at",
        )
        .fetch_all(&self.reader)
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| TargetState {
                id: r.get(0),
                kind: if r.get::<String, _>(1) == "run" {
                    TargetKind::Run
                } else {
                    TargetKind::Discussion
                },
                server_url: r.get(2),
                label: r.get(3),
                reporter_pid: r.get::<Option<i64>, _>(4).map(|p| p as u32),
                heartbeat_at_ms: r.get(5),
                finish_json: r.get(6),
                finish_sent: r.get::<i64, _>(7) != 0,
                pending: r.get(8),
                failed: r.get(9),
            })
            .collect())
    }
}
