//! Where an issue's live feed stands: a page rendered from the store follows the feed from
//! here, so it is sent only what was stored after it was read.

use crate::{Store, StoreError};

impl Store {
    /// The newest message `seq` of the issue's runs and the newest activity `seq` of the
    /// issue, 0 for none. Read before the issue itself: whatever is stored in between reaches
    /// the page twice, never not at all.
    pub async fn issue_feed_head(&self, issue_id: &str) -> Result<(i64, i64), StoreError> {
        let head: (i64, i64) = sqlx::query_as(
            "SELECT \
               (SELECT COALESCE(MAX(m.seq), 0) FROM run_messages m \
                 WHERE m.run_id IN (SELECT id FROM runs WHERE issue_id = $1)), \
               (SELECT COALESCE(MAX(a.seq), 0) FROM issue_activity a WHERE a.issue_id = $2)",
        )
        .bind(issue_id)
        .bind(issue_id)
        .fetch_one(self.pool())
        .await?;
        Ok(head)
    }

    /// The newest activity `seq` of the workspace, 0 for none: where the issue list's live
    /// updates start (read before the list, like [`Store::issue_feed_head`]).
    pub async fn workspace_feed_head(&self) -> Result<i64, StoreError> {
        let (head,): (i64,) = sqlx::query_as("SELECT COALESCE(MAX(seq), 0) FROM issue_activity")
            .fetch_one(self.pool())
            .await?;
        Ok(head)
    }
}
