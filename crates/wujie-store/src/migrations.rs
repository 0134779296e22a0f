//! Whether a SQLite database's schema is up to date, found by reading only.
//!
//! `Migrator::run` writes even when it has nothing to apply, so it waits for the write lock:
//! with a `wujie` stopped (Ctrl+Z, a laptop asleep) in the middle of a write, every other
//! process on the profile then failed to open the database. Reading `_sqlx_migrations` takes no
//! lock in WAL mode, so a database already set up opens beside a stopped writer, and only one
//! with something to apply waits for it (as it must).

use sqlx::SqlitePool;
use sqlx::migrate::Migrator;

/// True when every migration of `migrator` is applied, successfully and with the contents it
/// has now. False otherwise, and when the database has no migrations table yet: then `run`
/// applies what is missing or reports what differs.
pub(crate) async fn up_to_date(pool: &SqlitePool, migrator: &Migrator) -> bool {
    let applied: Result<Vec<(i64, Vec<u8>, bool)>, sqlx::Error> =
        sqlx::query_as("SELECT version, checksum, success FROM _sqlx_migrations")
            .fetch_all(pool)
            .await;
    let Ok(applied) = applied else {
        return false;
    };
    if applied.iter().any(|(_, _, success)| !success) {
        return false;
    }
    migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .all(|m| {
            applied
                .iter()
                .any(|(version, checksum, _)| *version == m.version && *checksum == *m.checksum)
        })
}
