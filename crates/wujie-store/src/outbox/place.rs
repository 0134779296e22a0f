//! The outbox's file at its path. Deleted or replaced under a running `wujie`, the file lives on
//! for that process (SQLite goes on through its open handles), but no later `wujie local-run
//! sync` would find what waits in it: so a process that still holds the deleted file writes it
//! back, and one whose file was replaced by another says what it could not keep.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::{Outbox, OutboxError};

/// What became of the outbox's file since this process opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxPlace {
    /// The file at the path is the one this process uses.
    InPlace,
    /// The file had been deleted; what this process held was written back to the path.
    Restored,
    /// Another file is at the path now: what this process holds is not in it.
    Replaced,
}

/// The device and inode of `path`, or `None` when there is no file there.
pub(super) fn file_id(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Outbox {
    /// Whether the outbox's file is still at its path; a deleted one is written back there
    /// from this process's handle (with every row, of every target, that it still holds).
    pub async fn keep_at_its_path(&self) -> Result<OutboxPlace, OutboxError> {
        match file_id(&self.path) {
            Some(id) if Some(id) == self.file_id => return Ok(OutboxPlace::InPlace),
            Some(_) => return Ok(OutboxPlace::Replaced),
            None => {}
        }
        let Some(path) = self.path.to_str() else {
            return Ok(OutboxPlace::Replaced);
        };
        // VACUUM INTO refuses to write over a file: one created at the path meanwhile (another
        // run opened the outbox afresh) makes this a replaced outbox, not an overwritten one.
        let copied = sqlx::query("VACUUM INTO $1")
            .bind(path)
            .execute(&self.writer)
            .await;
        if copied.is_err() && file_id(&self.path).is_some() {
            return Ok(OutboxPlace::Replaced);
        }
        copied?;
        crate::db_file::restrict_to_owner(&self.path).map_err(|e| {
            OutboxError::Setup(format!(
                "cannot make {} readable by its owner only: {e}",
                self.path.display()
            ))
        })?;
        Ok(OutboxPlace::Restored)
    }
}
