//! Which database a store lives in, as named on a command line or in a profile.

use std::path::PathBuf;
use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;

use crate::StoreError;

/// Where the store keeps its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file, created if missing: one person's embedded default.
    Sqlite(PathBuf),
    /// A PostgreSQL database by its URL (`postgres://user:password@host:port/db`), which
    /// several server processes may share.
    Postgres(String),
}

impl Database {
    /// `postgres://…` or `postgresql://…` names a PostgreSQL database; `sqlite:PATH` or a plain
    /// path a SQLite file. Any other URL scheme is refused rather than taken for a file name.
    pub fn parse(text: &str) -> Result<Database, StoreError> {
        let text = text.trim();
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            PgConnectOptions::from_str(text).map_err(|e| {
                StoreError::Invalid(format!(
                    "{} is not a PostgreSQL URL sqlx can use ({e}); write it as \
                     postgres://USER:PASSWORD@HOST:PORT/DATABASE",
                    redacted(text)
                ))
            })?;
            return Ok(Database::Postgres(text.to_owned()));
        }
        if let Some(path) = text.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            return Ok(Database::Sqlite(PathBuf::from(path)));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(StoreError::Invalid(format!(
                "unsupported database URL scheme {scheme}://; use postgres://… for PostgreSQL \
                 or a file path for SQLite"
            )));
        }
        if text.is_empty() {
            return Err(StoreError::Invalid(
                "the database is empty; give a file path or a postgres:// URL".into(),
            ));
        }
        Ok(Database::Sqlite(PathBuf::from(text)))
    }

    /// What to print: the file's path, or the URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Database::Sqlite(path) => path.display().to_string(),
            Database::Postgres(url) => redacted(url),
        }
    }
}

/// `url` with the password (between `user:` and `@` in the authority) replaced by `***`, so
/// that logs and error messages never show it.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            let hidden = if userinfo.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{hidden}@{host}{tail}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths_name_their_backend() {
        assert_eq!(
            Database::parse("postgres://u@localhost/w").unwrap(),
            Database::Postgres("postgres://u@localhost/w".into())
        );
        assert!(matches!(
            Database::parse("postgresql://u@localhost:5433/w").unwrap(),
            Database::Postgres(_)
        ));
        assert_eq!(
            Database::parse("sqlite:/var/w.db").unwrap(),
            Database::Sqlite("/var/w.db".into())
        );
        assert_eq!(
            Database::parse("/var/w.db").unwrap(),
            Database::Sqlite("/var/w.db".into())
        );
        let refused = Database::parse("mysql://h/w").unwrap_err().to_string();
        assert!(refused.contains("mysql://"), "{refused}");
        assert!(Database::parse("  ").is_err());
    }

    #[test]
    fn descriptions_never_show_the_password() {
        let db =
            Database::parse("postgres://wujie:s3cret@db.example:5432/w?sslmode=require").unwrap();
        let shown = db.describe();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(
            shown,
            "postgres://wujie:***@db.example:5432/w?sslmode=require"
        );
        assert_eq!(redacted("postgres://wujie@h/w"), "postgres://wujie@h/w");
        let bad = Database::parse("postgres://u:pw@h:notaport/w")
            .unwrap_err()
            .to_string();
        assert!(!bad.contains(":pw@"), "{bad}");
    }
}
