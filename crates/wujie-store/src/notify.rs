//! PostgreSQL's LISTEN/NOTIFY carries "something changed" between the server processes on one
//! database, so a live feed on one replica wakes up for a write committed by another.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::watch;

/// The channel every committed write notifies (inside its transaction, so only on commit).
pub(crate) const NOTIFY: &str = "NOTIFY wujie_changes";
const CHANNEL: &str = "wujie_changes";

/// The task that listens; aborted when dropped.
pub(crate) struct Listener {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Listener {
    /// Connects and starts listening before returning, so no write committed after the store
    /// is open goes unseen.
    pub(crate) async fn start(
        url: &str,
        changes: Arc<watch::Sender<u64>>,
    ) -> Result<Listener, sqlx::Error> {
        let mut listener = PgListener::connect(url).await?;
        listener.listen(CHANNEL).await?;
        let task = tokio::spawn(async move {
            loop {
                // `try_recv` reconnects by itself after a lost connection (returning None
                // then: notifications may have been missed), so wake the feeds either way. After
                // an error (the database is down or restarting) wait a little rather than spin;
                // the feeds keep their own periodic re-read meanwhile.
                if listener.try_recv().await.is_err() {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                changes.send_modify(|n| *n = n.wrapping_add(1));
            }
        });
        Ok(Listener { task })
    }
}
