//! Spools: what `wujie` takes out of an adapter's stdout is in a spool file (written by the
//! reader in `wujie-localrun`) before its lines are decoded and committed here. A spool's row says
//! where its lines go and how far into the file every line is committed, and each commit of
//! lines moves that mark in the same transaction ([`Outbox::append_spooled`]): what a killed
//! `wujie` had taken out of the pipe but not committed is read again from the file, from the
//! mark, by whoever takes its target over.

use sqlx::{Row, Sqlite, Transaction};

use super::{Outbox, OutboxError, now_ms};

/// How far into a spool every line is committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolMark {
    /// The spool's id (its file's name).
    pub spool: String,
    /// Bytes of the spool file whose lines are all committed.
    pub offset: u64,
    /// The lines in those bytes: the next line's number is one more.
    pub lines: u64,
}

/// A spool's row: its mark, and the target its lines go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolState {
    pub mark: SpoolMark,
    pub target_id: String,
}

/// Moves a spool's mark, and its lines to `target_id`, inside the transaction that committed the
/// lines before the mark.
pub(super) async fn record_mark(
    tx: &mut Transaction<'_, Sqlite>,
    target_id: &str,
    mark: &SpoolMark,
) -> Result<(), OutboxError> {
    sqlx::query("UPDATE spools SET target_id = ?, committed = ?, lines = ? WHERE id = ?")
        .bind(target_id)
        .bind(mark.offset as i64)
        .bind(mark.lines as i64)
        .bind(&mark.spool)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Outbox {
    /// Record a new, empty spool whose lines go to `target_id` (a target of this process's).
    pub async fn add_spool(&self, id: &str, target_id: &str) -> Result<(), OutboxError> {
        sqlx::query("INSERT INTO spools (id, target_id, created_at) VALUES (?, ?, ?)")
            .bind(id)
            .bind(target_id)
            .bind(now_ms())
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// The spools whose lines go to `target_id`, oldest first.
    pub async fn spools_of(&self, target_id: &str) -> Result<Vec<SpoolState>, OutboxError> {
        let rows = sqlx::query(
            "SELECT id, committed, lines, target_id FROM spools WHERE target_id = ?
             ORDER BY created_at, rowid",
        )
        .bind(target_id)
        .fetch_all(&self.reader)
        .await?;
        Ok(rows.iter().map(spool_from_row).collect())
    }

    /// Every spool recorded, whatever its target.
    pub async fn spools(&self) -> Result<Vec<SpoolState>, OutboxError> {
        let rows = sqlx::query("SELECT id, committed, lines, target_id FROM spools")
            .fetch_all(&self.reader)
            .await?;
        Ok(rows.iter().map(spool_from_row).collect())
    }

    /// Forget a spool: every line of it is committed, or it ended (its reader stopped at an
    /// invalid line). Its file goes after this, never before.
    pub async fn end_spool(&self, id: &str) -> Result<(), OutboxError> {
        sqlx::query("DELETE FROM spools WHERE id = ?")
            .bind(id)
            .execute(&self.writer)
            .await?;
        Ok(())
    }
}

fn spool_from_row(r: &sqlx::sqlite::SqliteRow) -> SpoolState {
    SpoolState {
        mark: SpoolMark {
            spool: r.get(0),
            offset: r.get::<i64, _>(1) as u64,
            lines: r.get::<i64, _>(2) as u64,
        },
        target_id: r.get(3),
    }
}
