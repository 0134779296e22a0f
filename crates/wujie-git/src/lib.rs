//! What a run changed in the code, read with the user's own `git` (the one on `PATH`, so their
//! config, hooks, LFS filters and credentials apply).
//!
//! - [`Repository::discover`]: whether a directory is in a git work tree, and its
//!   [`RepoInfo`] (top-level directory name, remotes without credentials, branch, HEAD).
//! - [`Repository::snapshot`]: the working tree as it is now (tracked and untracked files,
//!   `.gitignore` respected) written as a tree object, through a temporary index seeded from
//!   the real one. The user's index, HEAD and files are never touched.
//! - [`Repository::diff`]: what changed between two snapshots, per file, with patches kept
//!   within [`PatchLimits`].
//! - [`Repository::commits_since`]: the commits made on HEAD since a base commit.
//! - [`Repository::caught_up`]: a snapshot with what a base branch gained since merged in, so
//!   that a branch that merges its base is not credited with the base's work.
//! - [`Repository::issue_worktree`]: an issue's worktree on branch `wujie/<key>`, made or
//!   reused, and what `wujie worktree list | remove` need.
//!
//! It knows nothing of runs, events or HTTP, and every call blocks on a `git` process: callers
//! that must not wait (the path that reads an adapter's output) run it on a thread of its own.
//! Reads pass `--no-optional-locks`, so a snapshot never competes with the user's own `git`
//! for `index.lock`; output is read NUL-separated (`-z`), so any file name survives.

mod base;
mod command;
mod commits;
mod diff;
mod info;
mod snapshot;
mod worktree;

pub use command::GitError;
pub use diff::{Diff, PatchLimits};
pub use info::{RepoInfo, strip_credentials};
// The shapes of what it finds are the wire's, so that they travel to the server unchanged.
pub use snapshot::TreeId;
pub use worktree::{IssueWorktree, WorktreeEntry, WorktreeError, issue_branch};
pub use wujie_protocol::git::{Commit, FileChange, FileStatus, Patch, Remote};

use command::Git;
use std::path::{Path, PathBuf};

/// A git work tree, found from a directory inside it.
#[derive(Debug, Clone)]
pub struct Repository {
    git: Git,
}

/// What [`Repository::discover`] found.
#[derive(Debug)]
pub enum Discovered {
    Repository(Repository),
    /// The directory is not inside a git work tree (or is inside a `.git` directory or a bare
    /// repository, where there are no files to snapshot).
    NotARepository,
}

impl Repository {
    /// The work tree that `dir` is in, using the `git` on `PATH`.
    pub fn discover(dir: &Path) -> Result<Discovered, GitError> {
        Self::discover_with(PathBuf::from("git"), dir)
    }

    /// [`Repository::discover`] with the `git` program named by `program` (a name looked up
    /// on `PATH`, or a path).
    pub fn discover_with(program: PathBuf, dir: &Path) -> Result<Discovered, GitError> {
        let git = Git::new(program, dir.to_path_buf());
        match git.top_level()? {
            Some(top) => Ok(Discovered::Repository(Self { git: git.at(top) })),
            None => Ok(Discovered::NotARepository),
        }
    }

    /// The work tree's top-level directory.
    pub fn top_level(&self) -> &Path {
        self.git.dir()
    }
}

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_git;
#[cfg(test)]
#[path = "../tests/git/main.rs"]
mod suite;
