//! What a run changed in the code, as it travels from `wujie run` to the server: one
//! [`GitChanges`] per working-tree snapshot (at the start, after every turn, at the end), each
//! the whole picture as of that snapshot, so the latest one stored is the run's changes.
//! `wujie-git` produces the parts; this crate only names their shape.

use serde::{Deserialize, Serialize};

/// The run's code as of one snapshot: where it runs, and what changed from the snapshot taken
/// at its start to this one.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitChanges {
    /// The snapshot's place in the run: 0 at the start, then one more per snapshot.
    pub snapshot: u32,
    /// The snapshot's tree id (the working tree's files as git names them).
    pub tree: String,
    /// The name of the work tree's top-level directory.
    pub repo: String,
    pub remotes: Vec<Remote>,
    /// The branch checked out at this snapshot, null when HEAD is detached.
    pub branch: Option<String>,
    /// HEAD when the run began, null before the repository's first commit.
    pub base_commit: Option<String>,
    /// HEAD at this snapshot.
    pub head_commit: Option<String>,
    /// Commits made since the base, newest first.
    pub commits: Vec<Commit>,
    /// Files changed from the start snapshot to this one.
    pub files: Vec<FileChange>,
    /// Files changed from the run's previous snapshot to this one: what the turn before it
    /// changed. Absent at the start, and in snapshots sent by an older `wujie`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_files: Option<Vec<FileChange>>,
    /// The issue worktree the run works in (`wujie run --worktree`); absent in the user's own
    /// checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    /// The run's turns (counted by `final`, from 1) whose changes this snapshot holds: those
    /// that ended since the snapshot taken before it. Absent at the start, at an end with no
    /// turn since, and in snapshots sent by an older `wujie`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<TurnSpan>,
}

/// Turns `first` to `last` of a run, both counted. More than one when turns ended while the
/// code was being read after the first of them: their changes are recorded together.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnSpan {
    pub first: u32,
    pub last: u32,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remote {
    pub name: String,
    /// The URL without any user name and password it was configured with.
    pub url: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    pub sha: String,
    pub subject: String,
    /// `Name <email>`.
    pub author: String,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The path after the change (the new name of a renamed file).
    pub path: String,
    /// The name before, for a renamed file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: FileStatus,
    /// Lines added and deleted (both 0 for a binary file).
    pub additions: u64,
    pub deletions: u64,
    pub binary: bool,
    pub patch: Patch,
}

#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Added,
    /// Content, mode or type changed.
    Modified,
    Deleted,
    Renamed,
}

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Added => "added",
            FileStatus::Modified => "modified",
            FileStatus::Deleted => "deleted",
            FileStatus::Renamed => "renamed",
        }
    }
}

/// A file's section of the patch (`diff --git …` up to the next file), or why it was not kept.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "text")]
pub enum Patch {
    /// The section, which `git apply` accepts (a binary file as git's binary patch).
    Kept(String),
    /// Past the limits (256 KiB a file, 2 MiB a snapshot): the file is listed with its counts.
    TooLarge,
    /// The text is not UTF-8, so it cannot travel as text unchanged.
    NotText,
}

impl Patch {
    /// Why there is no patch, in the words the CLI prints; `None` when it was kept.
    pub fn omitted_reason(&self) -> Option<&'static str> {
        match self {
            Patch::Kept(_) => None,
            Patch::TooLarge => Some("patch not kept: too large"),
            Patch::NotText => Some("patch not kept: not UTF-8 text"),
        }
    }
}

/// The `git` object of a run (in the runs, and `--output json`): its latest snapshot,
/// without the patches, which `GET /runs/{id}/git` serves.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunGit {
    pub repo: String,
    pub remotes: Vec<Remote>,
    pub branch: Option<String>,
    pub base_commit: Option<String>,
    pub head_commit: Option<String>,
    pub commits: Vec<Commit>,
    pub files: Vec<FileSummary>,
    /// The worktree the run had to itself; null when it ran in the user's own checkout.
    pub worktree: Option<String>,
}

/// A changed file without its patch.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSummary {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: FileStatus,
    pub additions: u64,
    pub deletions: u64,
    pub binary: bool,
    /// Why the patch was not kept (past the limits, or not UTF-8); absent when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_omitted: Option<String>,
}

impl GitChanges {
    /// What this snapshot's turn changed, given the commits of the snapshot before it: its
    /// `turn_files` as the files, and the commits made since. `None` when it was recorded
    /// without its turn's files.
    pub fn turn(self, commits_before: &[Commit]) -> Option<GitChanges> {
        let files = self.turn_files?;
        let commits = self
            .commits
            .into_iter()
            .filter(|c| !commits_before.iter().any(|b| b.sha == c.sha))
            .collect();
        Some(GitChanges {
            files,
            commits,
            turn_files: None,
            ..self
        })
    }

    /// What a run shows of this snapshot.
    pub fn summary(&self) -> RunGit {
        RunGit {
            repo: self.repo.clone(),
            remotes: self.remotes.clone(),
            branch: self.branch.clone(),
            base_commit: self.base_commit.clone(),
            head_commit: self.head_commit.clone(),
            commits: self.commits.clone(),
            files: self
                .files
                .iter()
                .map(|f| FileSummary {
                    path: f.path.clone(),
                    old_path: f.old_path.clone(),
                    status: f.status,
                    additions: f.additions,
                    deletions: f.deletions,
                    binary: f.binary,
                    patch_omitted: f.patch.omitted_reason().map(str::to_owned),
                })
                .collect(),
            worktree: self.worktree.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(sha: &str) -> Commit {
        Commit {
            sha: sha.into(),
            subject: format!("commit {sha}"),
            author: "Ada <ada@example.test>".into(),
        }
    }

    fn file(path: &str) -> FileChange {
        FileChange {
            path: path.into(),
            old_path: None,
            status: FileStatus::Added,
            additions: 1,
            deletions: 0,
            binary: false,
            patch: Patch::Kept(format!("diff --git a/{path} b/{path}\n")),
        }
    }

    fn snapshot(turn_files: Option<Vec<FileChange>>) -> GitChanges {
        GitChanges {
            snapshot: 2,
            tree: "t2".into(),
            repo: "project".into(),
            remotes: Vec::new(),
            branch: Some("main".into()),
            base_commit: None,
            head_commit: Some("b".into()),
            commits: vec![commit("b"), commit("a")],
            files: vec![file("first.txt"), file("second.txt")],
            turn_files,
            worktree: None,
            turns: Some(TurnSpan { first: 2, last: 2 }),
        }
    }

    #[test]
    fn a_turn_is_its_own_files_and_the_commits_made_since_the_snapshot_before() {
        let turn = snapshot(Some(vec![file("second.txt")]))
            .turn(&[commit("a")])
            .expect("recorded with its turn");
        assert_eq!(turn.files, [file("second.txt")]);
        assert_eq!(turn.commits, [commit("b")]);
        assert_eq!(turn.turn_files, None);
        assert_eq!(turn.snapshot, 2);
    }

    #[test]
    fn a_snapshot_recorded_without_its_turn_has_none() {
        assert_eq!(snapshot(None).turn(&[]), None);
    }
}
