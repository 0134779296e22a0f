//! The working tree as it is, as a tree object, without touching the user's index.
//!
//! `git add -A` into a temporary index (`GIT_INDEX_FILE`) takes tracked and untracked files
//! and honours `.gitignore`; `git write-tree` then names the result. Seeding that index with a
//! copy of the real one makes it fast: git trusts the cached stat data and re-reads only the
//! files that changed since, instead of hashing the whole tree. The copy keeps the real
//! index's modification time, because git judges "racily clean" entries (a file changed in the
//! same second the index was written) by it: a newer copy would trust entries it must re-read.

use crate::Repository;
use crate::command::{GitError, one_line, unexpected};
use std::fs;
use std::path::Path;

/// A tree object's id: a snapshot's name, the same for the same files.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TreeId(String);

impl TreeId {
    /// A tree id as git printed it (one a [`GitChanges`](wujie_protocol::git::GitChanges)
    /// carries).
    pub fn new(id: String) -> Self {
        Self(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TreeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Repository {
    /// Writes the working tree as it is now (tracked and untracked files, ignored ones left
    /// out) into the object store and returns its tree id. The user's index, HEAD and files
    /// are left as they were.
    pub fn snapshot(&self) -> Result<TreeId, GitError> {
        let scratch = tempfile::Builder::new()
            .prefix("wujie-snapshot-")
            .tempdir()
            .map_err(|source| GitError::TemporaryIndex {
                dir: std::env::temp_dir(),
                source,
            })?;
        let index = scratch.path().join("index");
        let real = self.real_index()?;
        seed_index(&real, &index).map_err(|source| GitError::TemporaryIndex {
            dir: scratch.path().to_path_buf(),
            source,
        })?;
        let env = [("GIT_INDEX_FILE", index.as_os_str())];
        self.git.run(&["add", "--all"], &env)?;
        let args = ["write-tree"];
        let tree = one_line(&self.git.run(&args, &env)?);
        if tree.is_empty() {
            return Err(unexpected(&args, "no tree id"));
        }
        Ok(TreeId(tree))
    }

    /// Where the real index is (`.git/index`, or a worktree's own, or `GIT_INDEX_FILE`).
    fn real_index(&self) -> Result<std::path::PathBuf, GitError> {
        let out = self.git.run(&["rev-parse", "--git-path", "index"], &[])?;
        Ok(self.top_level().join(one_line(&out)))
    }
}

/// Copies the real index to `to`, when there is one (a new repository has none, and an empty
/// temporary index is then right).
fn seed_index(real: &Path, to: &Path) -> std::io::Result<()> {
    let modified = match fs::metadata(real) {
        Ok(meta) => meta.modified()?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    fs::copy(real, to)?;
    fs::File::options()
        .write(true)
        .open(to)?
        .set_modified(modified)
}
