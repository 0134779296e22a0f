//! A run's code changes: one row per working-tree snapshot, stored once per key like every
//! event, each new one told in the issue's activity; the latest snapshot is the run's changes.

use sqlx::AnyConnection;
use wujie_protocol::api::{
    Author, AuthorKind, IngestItem, IngestItemResult, IngestOutcome, IssueChange,
};
use wujie_protocol::git::{GitChanges, TurnSpan};

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
        let turns = pending.changes.turns;
        let stored = sqlx::query(
            "INSERT INTO run_git_snapshots (run_id, source, source_key, snapshot, tree, changes, \
             created_at, first_turn, last_turn) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT (run_id, source, source_key) DO NOTHING",
        )
        .bind(run.run_id)
        .bind(&item.source)
        .bind(&item.source_key)
        .bind(i64::from(pending.changes.snapshot))
        .bind(&pending.changes.tree)
        .bind(changes)
        .bind(&run.now)
        .bind(turns.map(|t| i64::from(t.first)))
        .bind(turns.map(|t| i64::from(t.last)))
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

/// The one row a query selects, read back.
async fn one(
    conn: &mut AnyConnection,
    sql: &str,
    run_id: &str,
    number: u32,
) -> Result<Option<GitChanges>, StoreError> {
    let row: Option<(String,)> = sqlx::query_as(sql)
        .bind(run_id)
        .bind(i64::from(number))
        .fetch_optional(conn)
        .await?;
    row.map(|(json,)| serde_json::from_str(&json).map_err(StoreError::from))
        .transpose()
}

/// Run `run_id`'s turns as far as the store knows them.
struct TurnsKnown {
    /// How many turns it has had: its final replies, or more when a snapshot holding a later
    /// turn arrived before that turn's reply.
    count: u32,
    /// The turns whose changes are known: all of them once the run ended (its end snapshot is
    /// stored before its end); before that, up to the last a stored snapshot holds, as the
    /// turns that changed nothing are recorded by the next snapshot's span beginning after them.
    known: u32,
}

async fn turns_known(conn: &mut AnyConnection, run_id: &str) -> Result<TurnsKnown, StoreError> {
    let (finals,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM run_messages WHERE run_id = $1 AND kind = 'final'")
            .bind(run_id)
            .fetch_one(&mut *conn)
            .await?;
    let (held,): (Option<i64>,) =
        sqlx::query_as("SELECT MAX(last_turn) FROM run_git_snapshots WHERE run_id = $1")
            .bind(run_id)
            .fetch_one(&mut *conn)
            .await?;
    let ended: Option<(Option<String>,)> =
        sqlx::query_as("SELECT ended_at FROM runs WHERE id = $1")
            .bind(run_id)
            .fetch_optional(&mut *conn)
            .await?;
    let turns = |n: i64| u32::try_from(n).unwrap_or(u32::MAX);
    let held = held.unwrap_or(0);
    let count = turns(finals.max(held));
    Ok(TurnsKnown {
        count,
        known: match ended {
            Some((Some(_),)) => count,
            _ => turns(held),
        },
    })
}

/// What a run's turn changed, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitTurn {
    /// Snapshot `after` holds the turn's changes (perhaps with others': see its `turns`);
    /// `before` is the snapshot recorded before it.
    Changed {
        before: Option<GitChanges>,
        after: GitChanges,
    },
    /// The turn ended and changed no file: the code as of the snapshot before it.
    Unchanged(GitChanges),
    /// The turn ended, and what it changed is not known yet: its snapshot is still to come, or
    /// (the tree being unchanged) will be known from a later turn's or the run's end.
    NotYet,
    /// The run has only `turns` turns (so far).
    Beyond { turns: u32 },
    /// The run recorded no code at all (or there is no such run).
    NoneRecorded,
}

impl Store {
    /// What turn `turn` (from 1, counted by `final`) of run `run_id` changed in the code.
    pub async fn run_git_turn(&self, run_id: &str, turn: u32) -> Result<GitTurn, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let holding = one(
            &mut conn,
            "SELECT changes FROM run_git_snapshots WHERE run_id = $1 AND first_turn <= $2 \
             AND last_turn >= $2 ORDER BY snapshot DESC, seq DESC LIMIT 1",
            run_id,
            turn,
        )
        .await?;
        if let Some(after) = holding {
            let before = one(
                &mut conn,
                "SELECT changes FROM run_git_snapshots WHERE run_id = $1 AND snapshot < $2 \
                 ORDER BY snapshot DESC, seq DESC LIMIT 1",
                run_id,
                after.snapshot,
            )
            .await?;
            return Ok(GitTurn::Changed { before, after });
        }
        let turns = turns_known(&mut conn, run_id).await?;
        if turn > turns.count {
            return Ok(GitTurn::Beyond { turns: turns.count });
        }
        if turn > turns.known {
            return Ok(GitTurn::NotYet);
        }
        // The code as it was when the turn ended: the latest snapshot recorded before it.
        let as_of = one(
            &mut conn,
            "SELECT changes FROM run_git_snapshots WHERE run_id = $1 \
             AND (snapshot = 0 OR last_turn < $2) ORDER BY snapshot DESC, seq DESC LIMIT 1",
            run_id,
            turn,
        )
        .await?;
        Ok(as_of.map_or(GitTurn::NoneRecorded, GitTurn::Unchanged))
    }

    /// The turns of run `run_id` whose changes are known (from 1): all of them once it ended,
    /// before that up to the last turn a stored snapshot holds.
    pub async fn run_git_known_turns(&self, run_id: &str) -> Result<u32, StoreError> {
        let mut conn = self.pool().acquire().await?;
        Ok(turns_known(&mut conn, run_id).await?.known)
    }

    /// The code changes of run `run_id` as of its latest snapshot.
    pub async fn run_git_changes(&self, run_id: &str) -> Result<Option<GitChanges>, StoreError> {
        let mut conn = self.pool().acquire().await?;
        latest(&mut conn, run_id).await
    }

    /// The snapshots of run `run_id` that hold turns, in order: each turn's changes (its
    /// `turn_files`) are in the one whose `turns` hold it. The span is the stored columns', as
    /// `run_git_turn` reads it: a snapshot stored before spans were recorded has it only there.
    pub async fn run_git_turn_snapshots(
        &self,
        run_id: &str,
    ) -> Result<Vec<GitChanges>, StoreError> {
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(
            "SELECT changes, first_turn, last_turn FROM run_git_snapshots WHERE run_id = $1 \
             AND first_turn IS NOT NULL AND last_turn IS NOT NULL ORDER BY snapshot, seq",
        )
        .bind(run_id)
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|(json, first, last)| {
                let mut changes: GitChanges = serde_json::from_str(&json)?;
                changes.turns = Some(TurnSpan {
                    first: u32::try_from(first).unwrap_or(u32::MAX),
                    last: u32::try_from(last).unwrap_or(u32::MAX),
                });
                Ok(changes)
            })
            .collect()
    }
}
