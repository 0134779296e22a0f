//! Checks on a database file when it is opened, shared by the store and the outbox.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Refuse a database file that exists but is empty. SQLite takes a 0-byte file for a new
/// database and would silently start over, losing whatever the file held before it was
/// truncated; a file SQLite created itself always has its header written before anyone else
/// gets to open it (creation happens under the setup lock).
pub(crate) fn refuse_empty(path: &Path) -> Result<(), EmptyDatabase> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.len() == 0 => Err(EmptyDatabase {
            path: path.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

#[derive(Debug, thiserror::Error)]
#[error(
    "{} is empty (0 bytes), so it is no longer a database; opening it would start over with \
     nothing. Restore it from a backup, or remove it to start afresh",
    path.display()
)]
pub struct EmptyDatabase {
    pub path: PathBuf,
}

/// Make the database and its WAL and shared-memory files readable by their owner only, like
/// the credentials file (they hold tokens' hashes, issues and everything agents printed).
/// SQLite creates later WAL and shared-memory files with the database file's mode.
pub(crate) fn restrict_to_owner(path: &Path) -> std::io::Result<()> {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        match std::fs::metadata(&file) {
            Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))?;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
