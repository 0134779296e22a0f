//! What a run changes in the code, when it runs in a git work tree: a snapshot of the working
//! tree at the start, after every turn (`final`) and at the end, each delivered as a
//! `GitChanges` event through the outbox like every other event.
//!
//! Snapshots are taken on a task of their own, and git itself runs on the blocking pool: the
//! path that reads the adapter's output only signals "a turn ended" and never waits for git.
//! Turns that end while a snapshot is under way are served by one more snapshot after it, which
//! says so: each snapshot names the turns (counted by `final`) whose changes it holds.
//! Each snapshot after the start carries the run's changes since its start and, apart, its
//! turn's: the changes since the snapshot recorded before it (so a turn reads on any machine).
//! Each result is keyed by its place in the run and its tree id (`git:<n>:<tree>`), so a
//! delivery retried or finished by `wujie local-run sync` after a crash stores it once, and a
//! tree the agent comes back to later is still recorded as the latest.
//!
//! A run in an issue's worktree is measured against its base branch too: when the branch
//! merges the base during the run, each snapshot is compared with the earlier one caught up
//! with what the base gained (see [`Point::caught_up`]), so the base's work never shows up as
//! the agent's.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use wujie_delivery::reporter::Recorder;
use wujie_git::{Discovered, GitError, PatchLimits, RepoInfo, Repository, TreeId};
use wujie_protocol::api::IngestItem;
use wujie_protocol::error_text::with_causes;
use wujie_protocol::event::Event;
use wujie_protocol::git::{GitChanges, TurnSpan};
use wujie_store::outbox::now_ms;

use crate::events::REPORTER_SOURCE;

/// The snapshots of one run.
pub(crate) struct CodeWatch {
    turns: mpsc::Sender<()>,
    /// Turns ended so far.
    ended: Arc<AtomicU32>,
    task: JoinHandle<()>,
}

impl CodeWatch {
    /// Takes the start snapshot of the work tree `cwd` is in and records it for `target_id`.
    /// `None` outside a work tree (the run goes on as any other), and when git is missing or
    /// fails (said on stderr in one line).
    /// `worktree`: the issue worktree the run has to itself, when it has one.
    pub(crate) async fn start(
        cwd: &Path,
        worktree: Option<&Path>,
        target_id: &str,
        recorder: Recorder,
    ) -> Option<Self> {
        let cwd = cwd.to_path_buf();
        let in_worktree = worktree.is_some();
        let started = tokio::task::spawn_blocking(move || {
            let mut start = start_snapshot(&cwd)?;
            if let Some(start) = start.as_mut().filter(|_| in_worktree)
                && let Some((branch, merge_base)) = worktree_base(&start.repository, &start.info)?
            {
                start.base_branch = Some(branch);
                start.point.merge_base = merge_base;
            }
            Ok(start)
        })
        .await;
        let start = match started {
            Ok(Ok(Some(start))) => start,
            Ok(Ok(None)) => return None,
            Ok(Err(GitError::NotInstalled { .. })) => {
                wujie_process::stderr_line!(
                    "wujie: git is not on PATH; this run records no code changes"
                );
                return None;
            }
            Ok(Err(e)) => {
                wujie_process::stderr_line!(
                    "wujie: cannot read the code at the start of the run; this run records no \
                     code changes: {}",
                    with_causes(&e)
                );
                return None;
            }
            Err(_) => return None,
        };
        let mut snapshots = Snapshots {
            start,
            target_id: target_id.to_owned(),
            worktree: worktree.map(|w| w.display().to_string()),
            recorder,
            taken: 0,
            last: None,
            ended: Arc::new(AtomicU32::new(0)),
            turns_taken: 0,
            conflict_said: false,
        };
        let ended = snapshots.ended.clone();
        let first = snapshots.start_changes();
        let point = snapshots.start.point.clone();
        snapshots.record(first, point).await;
        // One pending turn is enough: a snapshot taken after it sees every turn before.
        let (turns, mut pending) = mpsc::channel(1);
        let task = tokio::spawn(async move {
            while pending.recv().await.is_some() {
                snapshots.take().await;
            }
            // The run ended (the sender was dropped): the last snapshot.
            snapshots.take().await;
        });
        Some(Self { turns, ended, task })
    }

    /// A turn ended: a snapshot is due. Never waits.
    pub(crate) fn turn_ended(&self) {
        // Counted before the signal, so that the snapshot it wakes counts it.
        self.ended.fetch_add(1, Ordering::SeqCst);
        let _ = self.turns.try_send(());
    }

    /// Takes the end snapshot and waits until it is recorded.
    pub(crate) async fn finish(self) {
        drop(self.turns);
        let _ = self.task.await;
    }
}

/// The code as a turn of a commondev branch began. Each turn a branch reports is a run of its
/// own, whose changes are what the work tree became between the prompt and the reply.
pub struct TurnStart(Start);

impl TurnStart {
    /// Reads the work tree `cwd` is in; `Ok(None)` outside one. Blocks on git.
    pub fn take(cwd: &Path) -> Result<Option<Self>, GitError> {
        Ok(start_snapshot(cwd)?.map(Self))
    }

    /// What the turn changed, as the work tree is now (`worktree`: the branch's own worktree,
    /// when it works in one). Blocks on git.
    pub fn changes_now(&self, worktree: Option<String>) -> Result<GitChanges, GitError> {
        let start = &self.0;
        let taken = changes_since(
            &start.repository,
            start.base_branch.as_deref(),
            &start.point,
            &start.point,
            start.info.head_commit.clone(),
            1,
        )?;
        Ok(GitChanges {
            worktree,
            turns: Some(TurnSpan { first: 1, last: 1 }),
            ..taken.changes
        })
    }
}

/// The repository and what it was at the start of the run.
struct Start {
    repository: Repository,
    info: RepoInfo,
    /// The base branch of the worktree (what `wujie run --worktree` made it from);
    /// `None` outside an issue's worktree.
    base_branch: Option<String>,
    point: Point,
}

/// A snapshot recorded, as the next one is compared with it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Point {
    tree: TreeId,
    /// HEAD's merge-base with the base branch of the worktree at this snapshot; `None`
    /// outside an issue's worktree.
    merge_base: Option<String>,
}

impl Point {
    /// This snapshot's tree with what the base gained since merged in, once HEAD has merged
    /// more of it (its merge-base with the base moved to `merge_base`). The tree as it was when
    /// the base did not move, or when the merge conflicts (then `true`: the base's changes to
    /// those files count as the run's).
    fn caught_up(
        &self,
        repository: &Repository,
        merge_base: Option<&str>,
    ) -> Result<(TreeId, bool), GitError> {
        let (Some(then), Some(now)) = (&self.merge_base, merge_base) else {
            return Ok((self.tree.clone(), false));
        };
        if then == now {
            return Ok((self.tree.clone(), false));
        }
        Ok(match repository.caught_up(&self.tree, then, now)? {
            Some(tree) => (tree, false),
            None => (self.tree.clone(), true),
        })
    }
}

fn start_snapshot(cwd: &Path) -> Result<Option<Start>, GitError> {
    let repository = match Repository::discover(cwd)? {
        Discovered::Repository(repository) => repository,
        Discovered::NotARepository => return Ok(None),
    };
    let info = repository.info()?;
    let tree = repository.snapshot()?;
    Ok(Some(Start {
        repository,
        info,
        base_branch: None,
        point: Point {
            tree,
            merge_base: None,
        },
    }))
}

/// The base branch of the issue worktree the run works in, and HEAD's merge-base with it now;
/// `None` when the branch records no base.
fn worktree_base(
    repository: &Repository,
    info: &RepoInfo,
) -> Result<Option<(String, Option<String>)>, GitError> {
    let Some(branch) = &info.branch else {
        return Ok(None);
    };
    let Some(base) = repository.recorded_base(branch)? else {
        return Ok(None);
    };
    let merge_base = merge_base(repository, info, &base)?;
    Ok(Some((base, merge_base)))
}

/// HEAD's merge-base with `base` as of `info` (none while HEAD has no commit).
fn merge_base(
    repository: &Repository,
    info: &RepoInfo,
    base: &str,
) -> Result<Option<String>, GitError> {
    match &info.head_commit {
        Some(head) => repository.merge_base_with(head, base),
        None => Ok(None),
    }
}

struct Snapshots {
    start: Start,
    target_id: String,
    /// The issue worktree the run works in, for every snapshot it records.
    worktree: Option<String>,
    recorder: Recorder,
    /// Snapshots recorded so far (the next one's place in the run).
    taken: u32,
    /// The last one recorded and its HEAD: an unchanged work tree is not sent again, and the
    /// next one's turn is diffed from it.
    last: Option<(Point, Option<String>)>,
    /// Turns ended so far, counted by [`CodeWatch::turn_ended`].
    ended: Arc<AtomicU32>,
    /// Turns ended before the last snapshot taken (recorded or not: one that found the tree
    /// unchanged tells that its turns changed nothing).
    turns_taken: u32,
    /// Whether stderr said that the base's changes conflict with the run's (once is enough).
    conflict_said: bool,
}

impl Snapshots {
    fn start_changes(&self) -> GitChanges {
        let info = &self.start.info;
        GitChanges {
            snapshot: 0,
            tree: self.start.point.tree.to_string(),
            repo: info.repo.clone(),
            remotes: info.remotes.clone(),
            branch: info.branch.clone(),
            base_commit: info.head_commit.clone(),
            head_commit: info.head_commit.clone(),
            commits: Vec::new(),
            files: Vec::new(),
            turn_files: None,
            worktree: self.worktree.clone(),
            turns: None,
        }
    }

    async fn take(&mut self) {
        let repository = self.start.repository.clone();
        // Before any was recorded, the turn began at the start.
        let previous = match &self.last {
            Some((point, _)) => point.clone(),
            None => self.start.point.clone(),
        };
        let start = self.start.point.clone();
        let base_branch = self.start.base_branch.clone();
        let base = self.start.info.head_commit.clone();
        let snapshot = self.taken;
        let ended = self.ended.load(Ordering::SeqCst);
        let turns = (ended > self.turns_taken).then_some(TurnSpan {
            first: self.turns_taken + 1,
            last: ended,
        });
        let taken = tokio::task::spawn_blocking(move || {
            changes_since(
                &repository,
                base_branch.as_deref(),
                &start,
                &previous,
                base,
                snapshot,
            )
        })
        .await;
        match taken {
            Ok(Ok(Taken {
                changes,
                point,
                conflicted,
            })) => {
                self.turns_taken = ended;
                if let Some(branch) = self.start.base_branch.as_ref().filter(|_| conflicted) {
                    if !self.conflict_said {
                        wujie_process::stderr_line!(
                            "wujie: what {branch} gained since the run began conflicts with the \
                             run's changes; the run's diff counts {branch}'s changes to those \
                             files as the run's"
                        );
                    }
                    self.conflict_said = true;
                }
                let worktree = self.worktree.clone();
                self.record(
                    GitChanges {
                        worktree,
                        turns,
                        ..changes
                    },
                    point,
                )
                .await;
            }
            Ok(Err(e)) => wujie_process::stderr_line!(
                "wujie: cannot take a snapshot of the code after a turn: {}",
                with_causes(&e)
            ),
            Err(_) => {}
        }
    }

    async fn record(&mut self, changes: GitChanges, point: Point) {
        if self
            .last
            .as_ref()
            .is_some_and(|(last, head)| last.tree == point.tree && *head == changes.head_commit)
        {
            return;
        }
        let now = (point, changes.head_commit.clone());
        let item = IngestItem {
            source: REPORTER_SOURCE.to_owned(),
            source_key: format!("git:{}:{}", changes.snapshot, changes.tree),
            event: Event::GitChanges(changes),
        };
        match self
            .recorder
            .record(&self.target_id, vec![(item, now_ms())])
            .await
        {
            Ok(()) => {
                self.last = Some(now);
                self.taken += 1;
            }
            Err(e) => wujie_process::stderr_line!(
                "wujie: cannot record the run's code changes: {}",
                with_causes(&e)
            ),
        }
    }
}

/// A snapshot taken.
struct Taken {
    changes: GitChanges,
    /// The snapshot, for the next one to be compared with.
    point: Point,
    /// What the base gained conflicts with an earlier snapshot (see [`Point::caught_up`]).
    conflicted: bool,
}

/// The run's changes as of a snapshot taken now, from the `start` snapshot and (the turn's) from
/// the `previous` one recorded, each caught up with what the base branch gained since.
fn changes_since(
    repository: &Repository,
    base_branch: Option<&str>,
    start: &Point,
    previous: &Point,
    base_commit: Option<String>,
    snapshot: u32,
) -> Result<Taken, GitError> {
    let tree = repository.snapshot()?;
    let info = repository.info()?;
    let found = match base_branch {
        Some(branch) => merge_base(repository, &info, branch)?,
        None => None,
    };
    let merge_base = found.as_deref();
    let (from, mut conflicted) = start.caught_up(repository, merge_base)?;
    let diff = repository.diff(&from, &tree, PatchLimits::default())?;
    // A run's first turn (and a branch's turn, a run of its own) began at the start.
    let turn = if previous == start {
        diff.files.clone()
    } else {
        let (from, turn_conflicted) = previous.caught_up(repository, merge_base)?;
        conflicted |= turn_conflicted;
        repository.diff(&from, &tree, PatchLimits::default())?.files
    };
    let commits = repository.commits_since(base_commit.as_deref(), merge_base)?;
    let changes = GitChanges {
        snapshot,
        tree: tree.to_string(),
        repo: info.repo,
        remotes: info.remotes,
        branch: info.branch,
        base_commit,
        head_commit: info.head_commit,
        commits,
        files: diff.files,
        turn_files: Some(turn),
        worktree: None,
        turns: None,
    };
    Ok(Taken {
        changes,
        point: Point {
            tree,
            merge_base: found.clone(),
        },
        conflicted,
    })
}
