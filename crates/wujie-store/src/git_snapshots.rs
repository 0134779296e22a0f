//! A run's code changes: one row per working-tree snapshot, stored once per key like every
//! event, each new one told in the issue's activity; the latest snapshot is the run's changes.

use sqlx::AnyConnection;
use wujie_protocol::api::{
    Author, AuthorKind, IngestItem, IngestItemResult, IngestOutcome, IssueChange,
};
use wujie_protocol::git::GitChanges;

use crate::ingest::{RunTarget, outcome, rejected};
use crate::{Store, StoreError, WriteTx, activity};

/// A snapshot of a batch, waiting to be stored.
pub(crate) struct PendingSnapshot<'a> {
    pub(crate) index: usize,
    pub(crate) item: &'a IngestItem,
    pub(crate) changes: &'a GitChanges,
}

/// Stores a batch's snapshots on `run`, each key once (a key delivered again is `duplicate`).
pub(crate) async fn store_run_git_snapshots(
    w: &mut WriteTx<'_>,
    run: &RunTarget<'_>,
    snapshots: &[PendingSnapshot<'_>],
    results: &mut [Option<IngestItemResult>],
) -> Result<(), StoreError> {
    for pending in snapshots {
        let item = pending.item;
        if let Some(refusal) = &run.ended {
            results[pending.index] = Some(if exists(&mut w.tx, run.run_id, item).await? {
                outcome(IngestOutcome::Duplicate)
            } else {
                rejected(refusal.clone())
            });
            continue;
        }
        let changes = serde_json::to_string(pending.changes)?;
        let stored = sqlx::query(
            "INSERT INTO run_git_snapshots (run_id, source, source_key, snapshot, tree, changes, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (run_id, source, source_key) DO NOTHING",
        )
        .bind(run.run_id)
        .bind(&item.source)
        .bind(&item.source_key)
        .bind(i64::from(pending.changes.snapshot))
        .bind(&pending.changes.tree)
        .bind(changes)
        .bind(&run.now)
        .execute(&mut *w.tx)
        .await?
        .rows_affected()
            == 1;
        if !stored {
            results[pending.index] = Some(outcome(IngestOutcome::Duplicate));
            continue;
        }
        // Open pages and watchers learn of it from the issue's feed; a key delivered again
        // records nothing more.
        let change = IssueChange::CodeChanged {
            run_id: run.run_id.to_owned(),
            snapshot: pending.changes.snapshot,
            files: u32::try_from(pending.changes.files.len()).unwrap_or(u32::MAX),
        };
        let reporter = Author {
            kind: AuthorKind::Agent,
            run_id: Some(run.run_id.to_owned()),
        };
        activity::record(&mut w.tx, &run.issue_id, &reporter, w.author_token, &change).await?;
        results[pending.index] = Some(outcome(IngestOutcome::Stored));
    }
    Ok(())
}

async fn exists(
    conn: &mut AnyConnection,
    run_id: &str,
    item: &IngestItem,
) -> Result<bool, StoreError> {
    let found: Option<(i64,)> = sqlx::query_as(
        "SELECT 1 FROM run_git_snapshots WHERE run_id = $1 AND source = $2 AND source_key = $3",
    )
    .bind(run_id)
    .bind(&item.source)
    .bind(&item.source_key)
    .fetch_optional(conn)
    .await?;
    Ok(found.is_some())
}

/// The run's latest snapshot, `None` when it recorded none (not in a git work tree, or no git).
pub(crate) async fn latest(
    conn: &mut AnyConnection,
    run_id: &str,
) -> Result<Option<GitChanges>, StoreError> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT changes FROM run_git_snapshots WHERE run_id = $1 \
         ORDER BY snapshot DESC, seq DESC LIMIT 1",
    )
    .bind(run_id)
    .fetch_optional(conn)
    .await?;
    row.map(|(json,)| serde_json::from_str(&json).map_err(StoreError::from))
        .transpose()
}

/// Snapshot `snapshot` of the run (the last stored under that number).
async fn numbered(
    conn: &mut AnyConnection,
    run_id: &str,
    snapshot: u32,
) -> Result<Option<GitChanges>, StoreError> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT changes FROM run_git_snapshots WHERE run_id = $1 AND snapshot = $2 \
         ORDER BY seq DESC LIMIT 1",
    )
    .bind(run_id)
    .bind(i64::from(snapshot))
    .fetch_optional(conn)
    .await?;
    row.map(|(json,)| serde_json::from_str(&json).map_err(StoreError::from))
        .transpose()
}

impl Store {
    /// Snapshot `turn` of run `run_id` and the one before it (the start's for turn 1), each
    /// `None` when not stored: the turn's changes are between them.
    pub async fn run_git_turn(
        &self,
        run_id: &str,
        turn: u32,
    ) -> Result<(Option<GitChanges>, Option<GitChanges>), StoreError> {
        let mut conn = self.pool().acquire().await?;
        let after = numbered(&mut conn, run_id, turn).await?;
        let before = match turn.checked_sub(1) {
            Some(previous) if after.is_some() => numbered(&mut conn, run_id, previous).await?,
            _ => None,
        };
        Ok((before, after))
    }

    /// The turns of run `run_id` with a snapshot stored after them, in order.
    pub async fn run_git_turns(&self, run_id: &str) -> Result<Vec<u32>, StoreError> {
        let rows: Vec<(i64,)> = sqlx::query_as(
            "SELECT DISTINCT snapshot FROM run_git_snapshots WHERE run_id = $1 AND snapshot > 0 \
             ORDER BY snapshot",
        )
        .bind(run_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(n,)| u32::try_from(n).ok())
            .collect())
    }

    /// The code changes of run `run_id` as of its latest snapshot.
    pub async fn run_git_changes(&self, run_id: &str) -> Result<Option<GitChanges>, StoreError> {
        let mut conn = self.pool().acquire().await?;
        latest(&mut conn, run_id).await
    }
}
