//! Issues' own git worktrees: `wujie run KEY --worktree` makes or reuses one, `wujie worktree
//! list | remove` look after them. The worktree of an issue is `<dir>/<key>` on branch
//! `wujie/<key>`, where `<dir>` is WUJIE_WORKTREES_DIR, the config's `worktrees_dir`, or
//! `<repo>.wujie` beside the repository's main checkout.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::Serialize;
use wujie_git::{Discovered, IssueWorktree, Repository, issue_branch};

use crate::cli::{PromotionWorktree, WorktreeCommand};
use crate::context::{Context, env_var};
use crate::output::{inline, outln, print_json};

/// The repository of the current directory, or why there is none.
fn repository() -> Result<Repository> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    match Repository::discover(&cwd)? {
        Discovered::Repository(repo) => Ok(repo),
        Discovered::NotARepository => bail!(
            "{} is not in a git repository: issue worktrees are made from one; run this from \
             inside your repository",
            cwd.display()
        ),
    }
}

/// Where this repository's issue worktrees are.
pub fn worktrees_dir(ctx: &Context, repo: &Repository) -> Result<PathBuf> {
    match configured_worktrees_dir(ctx)? {
        Some(dir) => Ok(dir),
        None => Ok(repo.default_worktrees_dir()?),
    }
}

/// The worktrees' directory when the user chose one: WUJIE_WORKTREES_DIR, else the config's
/// `worktrees_dir`.
pub fn configured_worktrees_dir(ctx: &Context) -> Result<Option<PathBuf>> {
    if let Some(dir) = env_var("WUJIE_WORKTREES_DIR") {
        return Ok(Some(PathBuf::from(dir)));
    }
    Ok(ctx.profile.load_config()?.worktrees_dir)
}

fn worktree_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(key.to_lowercase())
}

/// The worktree `wujie run KEY --worktree` runs the agent in, made or reused; says which.
pub fn prepare(ctx: &Context, key: &str, base: Option<&str>) -> Result<IssueWorktree> {
    let repo = repository()?;
    prepare_at(&repo, &worktrees_dir(ctx, &repo)?, key, base)
}

/// [`prepare`] in the repository `repo`, with the worktrees in `dir` (see [`worktrees_dir`]).
pub fn prepare_at(
    repo: &Repository,
    dir: &Path,
    key: &str,
    base: Option<&str>,
) -> Result<IssueWorktree> {
    let path = worktree_path(dir, key);
    let worktree = repo.issue_worktree(&issue_branch(key), &path, base)?;
    let how = match (&worktree.created, &worktree.base) {
        (true, Some(base)) => format!("new, from {}", inline(base)),
        (true, None) => "new".to_owned(),
        (false, _) => "reused".to_owned(),
    };
    wujie_process::stderr_line!(
        "wujie: {key} works in {} (branch {}, {how}).",
        worktree.path.display(),
        worktree.branch
    );
    Ok(worktree)
}

/// What `--worktree` of a promotion asks for: the new issue's worktree, made in the repository
/// of the current directory (which [`check_promotion`] found there before the discussion).
pub fn for_promoted(ctx: &Context, asked: &PromotionWorktree, key: &str) -> Option<PathBuf> {
    if !asked.worktree {
        return None;
    }
    match prepare(ctx, key, asked.base.as_deref()) {
        Ok(worktree) => Some(worktree.path),
        // The issue is made: say why its worktree is not, and go on to the way forward.
        Err(e) => {
            wujie_process::stderr_line!("wujie: could not make {key}'s worktree: {e:#}");
            None
        }
    }
}

/// Refuses `--worktree` outside a git repository, before a discussion starts.
pub fn check_promotion(asked: &PromotionWorktree) -> Result<()> {
    if asked.worktree {
        repository()?;
    }
    Ok(())
}

/// Whether `arg` is written as an issue key (`WUJ-12`) rather than an id.
pub fn looks_like_key(arg: &str) -> bool {
    arg.split_once('-').is_some_and(|(prefix, number)| {
        !prefix.is_empty()
            && prefix.chars().all(|c| c.is_ascii_alphabetic())
            && !number.is_empty()
            && number.chars().all(|c| c.is_ascii_digit())
    })
}

#[derive(Serialize)]
struct Listed {
    issue: String,
    branch: Option<String>,
    path: PathBuf,
    uncommitted_files: usize,
    base: Option<String>,
    ahead: Option<u64>,
    behind: Option<u64>,
    /// The branch checked out there when it is not the issue's (switched by hand).
    switched_to: Option<String>,
}

pub async fn run(ctx: &Context, cmd: WorktreeCommand) -> Result<()> {
    let repo = repository()?;
    let dir = worktrees_dir(ctx, &repo)?;
    match cmd {
        WorktreeCommand::List => list(ctx, &repo, &dir),
        WorktreeCommand::Remove {
            key,
            force,
            delete_branch,
        } => remove(&repo, &dir, &key, force, delete_branch),
    }
}

fn list(ctx: &Context, repo: &Repository, dir: &Path) -> Result<()> {
    let mut listed = Vec::new();
    for entry in repo.worktrees()? {
        let in_dir = entry.path.parent() == Some(dir);
        let issue_of_branch = entry
            .branch
            .as_deref()
            .and_then(|b| b.strip_prefix("wujie/"))
            .map(str::to_uppercase);
        let issue = match (&issue_of_branch, in_dir) {
            (Some(issue), _) => issue.clone(),
            (None, true) => entry
                .path
                .file_name()
                .map(|n| n.to_string_lossy().to_uppercase())
                .unwrap_or_default(),
            (None, false) => continue,
        };
        let expected = issue_branch(&issue);
        let switched_to = match &entry.branch {
            Some(b) if *b == expected => None,
            Some(b) => Some(b.clone()),
            None => Some("(detached HEAD)".to_owned()),
        };
        let base = repo.recorded_base(&expected)?;
        let (ahead, behind) = match &base {
            Some(base) => match repo.ahead_behind(&expected, base) {
                Ok((a, b)) => (Some(a), Some(b)),
                // The base branch may be gone since; the rest is still worth listing.
                Err(_) => (None, None),
            },
            None => (None, None),
        };
        listed.push(Listed {
            issue,
            branch: entry.branch.clone(),
            uncommitted_files: repo.uncommitted_files(&entry.path)?,
            path: entry.path,
            base,
            ahead,
            behind,
            switched_to,
        });
    }
    if ctx.json() {
        return print_json(&listed);
    }
    if listed.is_empty() {
        outln!(
            "No issue worktrees in this repository; `wujie run KEY --worktree -- AGENT` makes one (in {}).",
            dir.display()
        );
        return Ok(());
    }
    outln!(
        "{:<10} {:<18} {:>9} {:>12}  path",
        "issue",
        "branch",
        "changes",
        "ahead/behind"
    );
    for w in &listed {
        let branch = match &w.switched_to {
            Some(other) => format!("{other} (switched by hand)"),
            None => w.branch.clone().unwrap_or_default(),
        };
        let ahead_behind = match (w.ahead, w.behind, &w.base) {
            (Some(a), Some(b), Some(base)) => format!("+{a}/-{b} {}", inline(base)),
            _ => "-".to_owned(),
        };
        outln!(
            "{:<10} {:<18} {:>9} {:>12}  {}",
            inline(&w.issue),
            inline(&branch),
            w.uncommitted_files,
            ahead_behind,
            w.path.display()
        );
    }
    Ok(())
}

fn remove(
    repo: &Repository,
    dir: &Path,
    key: &str,
    force: bool,
    delete_branch: bool,
) -> Result<()> {
    let path = worktree_path(dir, key);
    let branch = issue_branch(key);
    if repo.worktree_at(&path)?.is_none() {
        bail!(
            "{key} has no worktree in this repository (looked for {}); `wujie worktree list` \
             shows those there are",
            path.display()
        );
    }
    let changed = repo.uncommitted_files(&path)?;
    if changed > 0 && !force {
        bail!(
            "{key}'s worktree at {} has {changed} uncommitted files: commit them on {branch}, \
             or pass --force to remove it with them",
            path.display()
        );
    }
    repo.remove_worktree(&path, force)?;
    if delete_branch {
        repo.delete_branch(&branch)?;
        outln!("Removed {} and deleted branch {branch}.", path.display());
    } else {
        outln!(
            "Removed {}; branch {branch} is kept (`--delete-branch` deletes it).",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_told_from_ids() {
        assert!(looks_like_key("WUJ-12"));
        assert!(looks_like_key("wuj-1"));
        assert!(!looks_like_key("01a235c1-8024-76ac-8d18-0d2901138245"));
        assert!(!looks_like_key("WUJ-"));
        assert!(!looks_like_key("-12"));
        assert!(!looks_like_key("WUJ12"));
    }
}
