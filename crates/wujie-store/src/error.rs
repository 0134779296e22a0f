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
    #[error("cannot create directory {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the database {path}: {source}; check that the path is writable")]
    Open {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },
    #[error(
        "cannot connect to the database {database}: {source}; check the URL, that the server runs and that the user may log in"
    )]
    Connect {
        database: String,
        #[source]
        source: sqlx::Error,
    },
    #[error(transparent)]
    Empty(#[from] crate::db_file::EmptyDatabase),
    #[error("cannot make {path} readable by its owner only: {source}")]
    Protect {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("stored JSON could not be read back: {0}")]
    Json(#[from] serde_json::Error),
    /// Another transaction wrote what this one was writing, at the same moment; nothing of this
    /// one was kept, and sending it again settles it.
    #[error("{0}")]
    Contended(String),
}
