//! What differs between SQLite and PostgreSQL beyond the schema: text search, and how
//! concurrent writers are kept apart. Everything else is one statement for both.
//!
//! SQLite has one writer at a time (`BEGIN IMMEDIATE` behind the store's mutex), so ordering
//! comes for free. PostgreSQL runs writers concurrently, possibly from several server
//! processes, and one thing needs them kept apart:
//! - the live feeds page by `seq` and take "after the last seq I saw" as "everything new". A
//!   sequence number is taken at insert time but becomes visible at commit, so a transaction
//!   that took a lower number and commits later would be skipped. Writers of the activity log
//!   and of one issue's messages therefore hold a transaction-scoped advisory lock until they
//!   commit, which makes seq order commit order.
//!
//! What is stored once is decided by UNIQUE keys (`INSERT … ON CONFLICT DO NOTHING`), which
//! needs no lock on either: PostgreSQL makes an insert that conflicts with an uncommitted one
//! wait for it, then skips the row.

use sqlx::{Any, Transaction};

use crate::StoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// Advisory lock key (any 64-bit number no other application on the database uses).
const ACTIVITY_LOCK: i64 = 0x5775_6a69_6501;

/// A lock held until the transaction ends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SerialLock<'a> {
    /// Every write that records activity (all writes but ingest and heartbeats take it first,
    /// so no lock is ever taken in two orders; a heartbeat takes only its run's row).
    Activity,
    /// Writes of one issue's run messages.
    Issue(&'a str),
}

impl Backend {
    pub(crate) async fn serialize(
        self,
        tx: &mut Transaction<'static, Any>,
        lock: SerialLock<'_>,
    ) -> Result<(), StoreError> {
        if self == Backend::Sqlite {
            return Ok(());
        }
        match lock {
            SerialLock::Activity => {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(ACTIVITY_LOCK)
                    .execute(&mut **tx)
                    .await?;
            }
            SerialLock::Issue(issue_id) => {
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                    .bind(issue_id)
                    .execute(&mut **tx)
                    .await?;
            }
        }
        Ok(())
    }

    /// The function that finds a needle in a text: `f(haystack, needle) > 0` when it is there.
    pub(crate) fn position_fn(self) -> &'static str {
        match self {
            Backend::Sqlite => "instr",
            Backend::Postgres => "strpos",
        }
    }
}
