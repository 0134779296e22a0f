use std::path::PathBuf;

/// What went wrong in the store. `NotFound`, `Conflict` and `Invalid` carry a message a user can
/// act on; the others are infrastructure failures.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    #[error("cannot create directory {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the database {path} (check that the path is writable)")]
    Open {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },
    #[error(
        "cannot connect to the database {database} (check the URL, that the server runs and that the user may log in)"
    )]
    Connect {
        database: String,
        #[source]
        source: sqlx::Error,
    },
    #[error(transparent)]
    Empty(#[from] crate::db_file::EmptyDatabase),
    #[error("cannot make {path} readable by its owner only")]
    Protect {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the database's schema could not be migrated")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Database(sqlx::Error),
    /// No connection to the database came free in time (every one busy, or the database
    /// restarting): nothing was done, and the same request may succeed in a moment.
    #[error("the database is busy (no connection came free in time); retry in a moment")]
    Busy,
    /// The connection to the database broke (PostgreSQL restarted or went away, the network
    /// dropped): the request may succeed on a new connection in a moment.
    #[error("the connection to the database was lost; retry in a moment")]
    Unavailable(#[source] sqlx::Error),
    #[error("stored JSON could not be read back")]
    Json(#[from] serde_json::Error),
    /// Another transaction wrote what this one was writing, at the same moment; nothing of this
    /// one was kept, and sending it again settles it.
    #[error("{0}")]
    Contended(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> StoreError {
        match e {
            sqlx::Error::PoolTimedOut => StoreError::Busy,
            e if is_sqlite_busy(&e) => StoreError::Busy,
            e if is_connection_lost(&e) => StoreError::Unavailable(e),
            e => StoreError::Database(e),
        }
    }
}

/// SQLite's "database is locked" after the busy timeout: another process held the write lock
/// all that time. Like a pool timeout, nothing was written and a retry may succeed.
fn is_sqlite_busy(e: &sqlx::Error) -> bool {
    const SQLITE_BUSY: i32 = 5;
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some()
        && db
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            // Extended codes (SQLITE_BUSY_SNAPSHOT, …) keep the primary code in the low byte.
            .is_some_and(|code| code & 0xff == SQLITE_BUSY)
}

/// The database connection itself failed, rather than a statement on it: the socket broke, or
/// PostgreSQL ended the session (SQLSTATE class 08, connection exception; 57P01–57P03, the
/// server shutting down, crashed or starting).
fn is_connection_lost(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03")
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_connection_is_unavailable_not_a_database_error() {
        let broken = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        assert!(matches!(
            StoreError::from(sqlx::Error::Io(broken)),
            StoreError::Unavailable(_)
        ));
        assert!(matches!(
            StoreError::from(sqlx::Error::PoolClosed),
            StoreError::Unavailable(_)
        ));
        assert!(matches!(
            StoreError::from(sqlx::Error::RowNotFound),
            StoreError::Database(_)
        ));
    }
}
