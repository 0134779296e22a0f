//! Worktrees of their own for issues: branch `wujie/<key>` checked out in a directory beside the
//! user's checkout, so that agents on two issues never write into each other's files (nor into
//! the user's). Only these worktrees are ever created or removed here; the user's checkout,
//! index and HEAD are left as they are.

use std::path::{Path, PathBuf};

use crate::Repository;
use crate::command::{GitError, nul_fields, one_line};

/// The branch of an issue's worktree: `wujie/` and the key in lower case (`wujie/wuj-12`).
pub fn issue_branch(key: &str) -> String {
    format!("wujie/{}", key.to_lowercase())
}

/// An issue's worktree, ready for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueWorktree {
    pub path: PathBuf,
    pub branch: String,
    /// Made now (from [`IssueWorktree::base`]), rather than found from an earlier run.
    pub created: bool,
    /// What the branch was made from, as it was named (`main`, a commit), when known.
    pub base: Option<String>,
}

/// One worktree of the repository, as `git worktree list` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeEntry {
    pub path: PathBuf,
    /// The checked-out branch (`wujie/wuj-12`), `None` when HEAD is detached.
    pub branch: Option<String>,
    pub head: Option<String>,
}

/// Why an issue's worktree cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(
        "{path} is the worktree for {branch}, but branch {found} is checked out there now \
         (switched by hand?): switch it back with `git -C {path} switch {branch}`, or remove the \
         worktree with `wujie worktree remove`"
    )]
    SwitchedBranch {
        path: String,
        branch: String,
        found: String,
    },
    #[error(
        "{path} exists and is not a worktree of this repository: move it away, or choose \
         another place for worktrees (`worktrees_dir` in the config, or WUJIE_WORKTREES_DIR)"
    )]
    PathTaken { path: String },
    #[error("could not create {dir}")]
    CreateDir {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error("could not lock {path} to make a worktree")]
    Lock {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The git config key that remembers what an issue branch was made from.
fn base_key(branch: &str) -> String {
    format!("branch.{branch}.wujiebase")
}

impl Repository {
    /// The directory of the repository's main checkout (a linked worktree's too), whose parent
    /// holds issue worktrees by default.
    pub fn main_checkout(&self) -> Result<PathBuf, GitError> {
        let common = self.common_dir()?;
        // `<checkout>/.git`; a bare repository's common directory is the repository itself.
        Ok(match common.file_name() {
            Some(name) if name == ".git" => {
                common.parent().map(Path::to_path_buf).unwrap_or(common)
            }
            _ => common,
        })
    }

    /// The repository's own directory, shared by all its worktrees (`<checkout>/.git`).
    fn common_dir(&self) -> Result<PathBuf, GitError> {
        let out = self.git.run(
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
            &[],
        )?;
        Ok(PathBuf::from(one_line(&out)))
    }

    /// Holds the repository's worktree lock until dropped. git itself does not serialise
    /// `git worktree add` and `git config` between processes: two at once fail on
    /// `.git/config`'s lock or on a half-written `.git/worktrees/<name>`.
    fn lock_worktrees(&self) -> Result<std::fs::File, WorktreeError> {
        let path = self.common_dir()?.join("wujie-worktrees.lock");
        let lock = || {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)?;
            file.lock()?;
            Ok(file)
        };
        lock().map_err(|source| WorktreeError::Lock {
            path: path.display().to_string(),
            source,
        })
    }

    /// Where this repository's worktrees go unless configured otherwise: `<checkout>.wujie`
    /// beside its main checkout.
    pub fn default_worktrees_dir(&self) -> Result<PathBuf, GitError> {
        let checkout = self.main_checkout()?;
        let name = checkout
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repository".to_owned());
        let parent = checkout.parent().unwrap_or(Path::new("/"));
        Ok(parent.join(format!("{name}.wujie")))
    }

    /// Every worktree of the repository, the main checkout first.
    pub fn worktrees(&self) -> Result<Vec<WorktreeEntry>, GitError> {
        let out = self
            .git
            .run(&["worktree", "list", "--porcelain", "-z"], &[])?;
        let mut entries = Vec::new();
        let mut current: Option<WorktreeEntry> = None;
        // Records of `key value` fields, each ended by a NUL; an empty field ends a record.
        for field in nul_fields(&out) {
            if field.is_empty() {
                entries.extend(current.take());
                continue;
            }
            let (key, value) = field.split_once(' ').unwrap_or((field.as_str(), ""));
            match key {
                "worktree" => {
                    entries.extend(current.take());
                    current = Some(WorktreeEntry {
                        path: PathBuf::from(value),
                        branch: None,
                        head: None,
                    });
                }
                "HEAD" => {
                    if let Some(entry) = current.as_mut() {
                        entry.head = Some(value.to_owned());
                    }
                }
                "branch" => {
                    if let Some(entry) = current.as_mut() {
                        entry.branch = Some(value.trim_start_matches("refs/heads/").to_owned());
                    }
                }
                _ => {}
            }
        }
        entries.extend(current);
        Ok(entries)
    }

    /// The worktree of the repository at `path` (the same directory, however it is spelled).
    pub fn worktree_at(&self, path: &Path) -> Result<Option<WorktreeEntry>, GitError> {
        Ok(self
            .worktrees()?
            .into_iter()
            .find(|w| same_dir(&w.path, path)))
    }

    /// The worktree of `branch` at `path`: the one an earlier run left there, or a new one,
    /// on the branch if it exists, else on a new branch made from `base` (default: HEAD).
    pub fn issue_worktree(
        &self,
        branch: &str,
        path: &Path,
        base: Option<&str>,
    ) -> Result<IssueWorktree, WorktreeError> {
        // Another process may be making a worktree of this repository (this one, even).
        let _lock = self.lock_worktrees()?;
        if let Some(found) = self.worktree_at(path)? {
            return match found.branch.as_deref() {
                Some(b) if b == branch => Ok(IssueWorktree {
                    path: found.path,
                    branch: branch.to_owned(),
                    created: false,
                    base: self.recorded_base(branch)?,
                }),
                other => Err(WorktreeError::SwitchedBranch {
                    path: path.display().to_string(),
                    branch: branch.to_owned(),
                    found: other.unwrap_or("(detached HEAD)").to_owned(),
                }),
            };
        }
        if path.exists() {
            return Err(WorktreeError::PathTaken {
                path: path.display().to_string(),
            });
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| WorktreeError::CreateDir {
                dir: dir.display().to_string(),
                source,
            })?;
        }
        let path_arg = path.to_string_lossy();
        let branch_ref = format!("refs/heads/{branch}");
        let exists = self
            .git
            .run_optional(&["show-ref", "--verify", "--quiet", &branch_ref])?
            .is_some();
        if exists {
            self.git
                .run(&["worktree", "add", "--quiet", &path_arg, branch], &[])?;
            return Ok(IssueWorktree {
                path: path.to_path_buf(),
                branch: branch.to_owned(),
                created: true,
                base: self.recorded_base(branch)?,
            });
        }
        let from = base.unwrap_or("HEAD");
        self.git.run(
            &["worktree", "add", "--quiet", "-b", branch, &path_arg, from],
            &[],
        )?;
        // What `HEAD` was is named by its branch, so that `worktree list` can say how far the
        // issue's branch is ahead of it.
        let named = match base {
            Some(base) => Some(base.to_owned()),
            None => self
                .git
                .run_optional(&["symbolic-ref", "--quiet", "--short", "HEAD"])?
                .map(|out| one_line(&out)),
        };
        if let Some(named) = &named {
            self.git.run(&["config", &base_key(branch), named], &[])?;
        }
        Ok(IssueWorktree {
            path: path.to_path_buf(),
            branch: branch.to_owned(),
            created: true,
            base: named,
        })
    }

    /// What `branch` was made from, as recorded when its worktree was made.
    pub fn recorded_base(&self, branch: &str) -> Result<Option<String>, GitError> {
        Ok(self
            .git
            .run_optional(&["config", "--get", &base_key(branch)])?
            .map(|out| one_line(&out)))
    }

    /// Commits of `branch` not on `base`, and of `base` not on `branch`.
    pub fn ahead_behind(&self, branch: &str, base: &str) -> Result<(u64, u64), GitError> {
        let range = format!("{base}...{branch}");
        let out = self
            .git
            .run(&["rev-list", "--left-right", "--count", &range], &[])?;
        let text = one_line(&out);
        let mut counts = text
            .split_whitespace()
            .map(|n| n.parse::<u64>().unwrap_or(0));
        let behind = counts.next().unwrap_or(0);
        let ahead = counts.next().unwrap_or(0);
        Ok((ahead, behind))
    }

    /// How many files of the worktree at `path` differ from its HEAD (untracked ones included).
    pub fn uncommitted_files(&self, path: &Path) -> Result<usize, GitError> {
        let out = self.git.at(path.to_path_buf()).run(
            &["status", "--porcelain", "-z", "--untracked-files=all"],
            &[],
        )?;
        // `XY path` per file; a rename or copy (R or C in X or Y) is followed by a field that
        // holds its old name.
        let fields = nul_fields(&out);
        let mut files = 0;
        let mut fields = fields.iter().filter(|f| !f.is_empty());
        while let Some(field) = fields.next() {
            files += 1;
            if field.get(..2).is_some_and(|xy| xy.contains(['R', 'C'])) {
                fields.next();
            }
        }
        Ok(files)
    }

    /// Removes the worktree at `path` (git refuses one with changes unless `force`).
    pub fn remove_worktree(&self, path: &Path, force: bool) -> Result<(), GitError> {
        let path_arg = path.to_string_lossy();
        let mut args = vec!["worktree", "remove"];
        if force {
            args.push("--force");
        }
        args.push(&path_arg);
        self.git.run(&args, &[])?;
        Ok(())
    }

    /// Deletes `branch` and what was recorded of it (`git branch -D`: its commits may be on no
    /// other branch, which is what the user asked for).
    pub fn delete_branch(&self, branch: &str) -> Result<(), GitError> {
        self.git.run(&["branch", "-D", "--quiet", branch], &[])?;
        let section = format!("branch.{branch}");
        // Nothing recorded is no error: git answers that with a code of its own.
        let _ = self
            .git
            .run_optional(&["config", "--remove-section", &section]);
        Ok(())
    }
}

/// Whether two paths name one directory (the same path, or the same file once resolved).
fn same_dir(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(a), Ok(b)) if a == b
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_branches_are_lower_case_under_wujie() {
        assert_eq!(issue_branch("WUJ-12"), "wujie/wuj-12");
    }
}
