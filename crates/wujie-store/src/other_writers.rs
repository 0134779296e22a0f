//! On SQLite, writes that another process (or another `Store` on the same file) commits do not
//! pass through this store's `WriteTx::commit`, so they would not wake its live feeds. While
//! anyone follows `Store::changes`, one task per store asks SQLite on a connection of its own
//! whether the file changed: `PRAGMA data_version` moves when any other connection commits, and
//! while nothing changed asking is a check of the WAL index in shared memory (no file I/O). When nobody follows, no task runs,
//! so an idle store costs nothing; the task also ends once the store's last handle is dropped
//! or the store is closed, closing its connection.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};
use tokio::sync::watch;

/// How often the task asks. A commit by another process reaches the feeds within this (plus
/// their read): well under the 100 ms a viewer notices, at a few dozen in-memory checks a second
/// while a feed is open.
const CHECK_EVERY: Duration = Duration::from_millis(40);

/// After a failed check (the file is busy being checkpointed, or gone), how long to wait before
/// opening the connection again.
const RETRY_AFTER: Duration = Duration::from_millis(500);

/// The state of one store's task, shared with it.
#[derive(Default)]
struct Task {
    running: bool,
    /// The store was closed: no task starts again.
    closed: bool,
    abort: Option<tokio::task::AbortHandle>,
}

/// Starts and stops the task; dropped with the store's last handle, which ends the task.
pub(crate) struct OtherWriters {
    options: SqliteConnectOptions,
    task: Arc<Mutex<Task>>,
}

impl Drop for OtherWriters {
    fn drop(&mut self) {
        self.stop();
    }
}

impl OtherWriters {
    pub(crate) fn new(options: SqliteConnectOptions) -> OtherWriters {
        OtherWriters {
            options: options.create_if_missing(false),
            task: Arc::default(),
        }
    }

    /// Makes sure the task runs, for a follower of `changes` that has subscribed already (so
    /// the task, which ends when nobody follows, cannot end before seeing it).
    pub(crate) fn follow(&self, changes: &Arc<watch::Sender<u64>>) {
        let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if task.running || task.closed {
            return;
        }
        // Only ever outside a runtime in a program that has no feed to wake.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        task.running = true;
        let spawned = runtime.spawn(watch_file(
            self.options.clone(),
            Arc::downgrade(changes),
            self.task.clone(),
        ));
        task.abort = Some(spawned.abort_handle());
    }

    /// Ends the task for good (it closes its connection as it is dropped).
    pub(crate) fn stop(&self) {
        let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(abort) = task.abort.take() {
            abort.abort();
        }
        task.running = false;
        task.closed = true;
    }
}

/// Bumps `changes` whenever another connection committed, until nobody follows it or the store
/// is gone. The first check is at once, so that few commits fall before its connection opens.
async fn watch_file(
    options: SqliteConnectOptions,
    changes: Weak<watch::Sender<u64>>,
    task: Arc<Mutex<Task>>,
) {
    let mut conn: Option<(SqliteConnection, i64)> = None;
    loop {
        {
            // Decided under the lock `follow` takes: a follower that subscribes after this
            // finds the task not running and starts another.
            let mut task = task.lock().unwrap_or_else(PoisonError::into_inner);
            let followed = changes.upgrade().is_some_and(|c| c.receiver_count() > 0);
            if !followed {
                task.running = false;
                task.abort = None;
                break;
            }
        }
        let moved = match conn.as_mut() {
            Some((c, seen)) => data_version(c).await.map(|now| {
                let moved = now != *seen;
                *seen = now;
                moved
            }),
            None => open(&options).await.map(|opened| {
                conn = Some(opened);
                // What was committed before the connection opened is unseen: wake the feeds.
                true
            }),
        };
        let moved = moved.unwrap_or_else(|_| {
            conn = None;
            // The feeds read the store and meet (and report) the error themselves, if it lasts.
            true
        });
        if moved && let Some(changes) = changes.upgrade() {
            changes.send_modify(|n| *n = n.wrapping_add(1));
        }
        let pause = if conn.is_some() {
            CHECK_EVERY
        } else {
            RETRY_AFTER
        };
        tokio::time::sleep(pause).await;
    }
    if let Some((c, _)) = conn {
        let _ = c.close().await;
    }
}

async fn open(options: &SqliteConnectOptions) -> Result<(SqliteConnection, i64), sqlx::Error> {
    let mut conn = options.connect().await?;
    let seen = data_version(&mut conn).await?;
    Ok((conn, seen))
}

async fn data_version(conn: &mut SqliteConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("PRAGMA data_version")
        .fetch_one(conn)
        .await
}
