//! A branch's own git worktree. A branch opened on a directory of a local git repository gets
//! the git branch of its name (`feat/a`, made from the current branch when new) checked out in
//! a directory of its own, so that two branches' agents never write into each other's files,
//! nor into the user's checkout. Outside a repository, without git, or when asked not to, the
//! agent works in the directory as given.

use std::path::{Path, PathBuf};

use serde::Serialize;
use wujie_git::{Discovered, GitError, Repository, WorktreeError};

/// The worktree a branch's agent works in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BranchWorktree {
    pub path: PathBuf,
    /// The git branch checked out there (the branch's name).
    pub branch: String,
    /// Made now, rather than found from an earlier open.
    pub created: bool,
    /// What the git branch was made from, when known.
    pub base: Option<String>,
}

/// Where a branch's agent works.
#[derive(Debug)]
pub(crate) enum Placement {
    /// In `workdir`, inside the branch's worktree.
    Worktree {
        workdir: PathBuf,
        worktree: BranchWorktree,
        note: Option<String>,
    },
    /// In the directory as given, and why (`None`: not a git repository, nothing to say).
    AsGiven(Option<String>),
}

/// Places the agent of branch `branch` (label `label`) asked to work in `workdir`: in the
/// branch's worktree under `dir` (default: `<checkout>.wujie` beside the repository), at the
/// same place inside it that `workdir` is inside the repository. Blocks on git.
pub(crate) fn place(
    workdir: &Path,
    label: &str,
    branch: &str,
    dir: Option<&Path>,
) -> Result<Placement, WorktreeError> {
    let repo = match Repository::discover(workdir) {
        Ok(Discovered::Repository(repo)) => repo,
        Ok(Discovered::NotARepository) => return Ok(Placement::AsGiven(None)),
        Err(GitError::NotInstalled { .. }) => {
            return Ok(Placement::AsGiven(Some(format!(
                "git is not on PATH: the agent works in {} itself, not in a worktree of its own",
                workdir.display()
            ))));
        }
        Err(e) => return Err(e.into()),
    };
    if repo.head_commit()?.is_none() {
        return Ok(Placement::AsGiven(Some(format!(
            "the repository at {} has no commit yet, so branch {branch} cannot have a worktree: \
             the agent works in {} itself",
            repo.top_level().display(),
            workdir.display()
        ))));
    }
    let dir = match dir {
        Some(dir) => dir.to_path_buf(),
        None => repo.default_worktrees_dir()?,
    };
    let path = dir.join("branches").join(label);
    let inside = inside_repository(&repo, workdir);
    let made = repo.issue_worktree(branch, &path, None)?;
    let mut workdir = if inside.as_os_str().is_empty() {
        made.path.clone()
    } else {
        made.path.join(&inside)
    };
    let mut note = None;
    if !workdir.is_dir() {
        note = Some(format!(
            "{} is not in branch {branch}'s worktree (untracked, or not on that branch): the agent \
             works at the top of the worktree",
            inside.display()
        ));
        workdir = made.path.clone();
    }
    Ok(Placement::Worktree {
        workdir,
        worktree: BranchWorktree {
            path: made.path,
            branch: made.branch,
            created: made.created,
            base: made.base,
        },
        note,
    })
}

/// Where `workdir` is inside the repository's work tree (empty at its top, and when it cannot
/// be told).
fn inside_repository(repo: &Repository, workdir: &Path) -> PathBuf {
    let Ok(real) = workdir.canonicalize() else {
        return PathBuf::new();
    };
    let top = repo
        .top_level()
        .canonicalize()
        .unwrap_or_else(|_| repo.top_level().to_path_buf());
    real.strip_prefix(&top)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}
