//! A run's code changes on the issue page: where it ran (branch, base), the commits it made,
//! and each changed file with its unified diff, folded in a `<details>` so the page reads
//! without JavaScript; below them, folded too, what each turn changed (turns counted by the
//! run's final replies, as `wujie issue diff --turn N` counts them). Every line of a patch is
//! text to maud, so agent-written code never becomes markup.

use maud::{Markup, html};
use wujie_protocol::git::{Commit, FileChange, GitChanges, Patch};
use wujie_store::{Store, StoreError};

/// Lines of a file's patch past which it starts folded (its summary says how long it is).
const FOLD_LINES: usize = 400;

/// Characters of a commit id shown, as `git log --oneline` does.
const SHORT_SHA: usize = 7;

fn short_sha(sha: &str) -> &str {
    sha.get(..SHORT_SHA).unwrap_or(sha)
}

/// What the page shows of a run's code.
pub(crate) struct RunCode {
    /// The run's latest snapshot: its whole changes.
    latest: GitChanges,
    /// Each turn's changes, from its first turn to its last.
    turns: Vec<TurnCode>,
}

impl RunCode {
    /// The place in the run of the snapshot it shows.
    pub(crate) fn snapshot(&self) -> u32 {
        self.latest.snapshot
    }
}

/// What one turn changed, or the turns whose changes were recorded together.
enum TurnCode {
    Changed {
        first: u32,
        last: u32,
        changes: GitChanges,
    },
    Unchanged(u32),
}

impl TurnCode {
    /// The last turn it tells of.
    fn last(&self) -> u32 {
        match self {
            TurnCode::Changed { last, .. } => *last,
            TurnCode::Unchanged(n) => *n,
        }
    }
}

/// Run `run_id`'s code as the store has it; `None` when it recorded none.
pub(crate) async fn load(store: &Store, run_id: &str) -> Result<Option<RunCode>, StoreError> {
    let Some(latest) = store.run_git_changes(run_id).await? else {
        return Ok(None);
    };
    let snapshots = store.run_git_turn_snapshots(run_id).await?;
    let count = store.run_git_known_turns(run_id).await?;
    Ok(Some(RunCode {
        latest,
        turns: turns(snapshots, count),
    }))
}

/// Turns 1 to `count` (those whose changes are known) from the snapshots that hold turns (in
/// order): each snapshot's turn changes under its first turn, and the turns none holds as
/// unchanged.
fn turns(snapshots: Vec<GitChanges>, count: u32) -> Vec<TurnCode> {
    let mut commits_before: Vec<Commit> = Vec::new();
    let mut held = Vec::new();
    for snapshot in snapshots {
        let Some(span) = snapshot.turns else { continue };
        let commits = snapshot.commits.clone();
        if let Some(changes) = snapshot.turn(&commits_before) {
            held.push((span, changes));
        }
        commits_before = commits;
    }
    let mut turns = Vec::new();
    let mut next = 1;
    for (span, changes) in held {
        if span.first < next {
            continue;
        }
        turns.extend((next..span.first).map(TurnCode::Unchanged));
        next = span.last + 1;
        turns.push(TurnCode::Changed {
            first: span.first,
            last: span.last,
            changes,
        });
    }
    turns.extend((next..=count).map(TurnCode::Unchanged));
    turns
}

/// The section's element id: the live feed replaces it when a new snapshot is stored.
pub(crate) fn section_id(run_id: &str) -> String {
    format!("run-code-{run_id}")
}

/// The code section of run `run_id`; empty (but there, for the live feed to fill) while the
/// run has recorded no snapshot.
pub(crate) fn run_code(run_id: &str, code: Option<&RunCode>) -> Markup {
    html! {
        div.run-code id=(section_id(run_id)) data-snapshot=[code.map(RunCode::snapshot)] {
            @if let Some(code) = code {
                (changes_view(&code.latest))
                @if !code.turns.is_empty() { (turns_view(&code.turns)) }
            }
        }
    }
}

fn changes_view(c: &GitChanges) -> Markup {
    html! {
        p.code-where {
            "Code: " strong { (c.repo) } " on "
            @match &c.branch {
                Some(branch) => { code { (branch) } }
                None => { "a detached HEAD" }
            }
            @match &c.base_commit {
                Some(base) => { " · base " code title=(base) { (short_sha(base)) } }
                None => { " · no commit before the run" }
            }
            @if let Some(worktree) = &c.worktree { " · in worktree " code { (worktree) } }
        }
        (commits_view(&c.commits))
        @if c.files.is_empty() {
            p.muted { "No files changed yet." }
        } @else {
            p.muted.code-total { (total(&c.files)) }
            div.files {
                @for file in &c.files { (file_view(file, "")) }
            }
        }
    }
}

fn commits_view(commits: &[Commit]) -> Markup {
    html! {
        @if !commits.is_empty() {
            ul.commits {
                @for commit in commits {
                    li {
                        code title=(commit.sha) { (short_sha(&commit.sha)) } " " (commit.subject)
                        span.muted { " — " (commit.author) }
                    }
                }
            }
        }
    }
}

/// "2 files changed, +3 −1".
fn total(files: &[FileChange]) -> Markup {
    let additions: u64 = files.iter().map(|f| f.additions).sum();
    let deletions: u64 = files.iter().map(|f| f.deletions).sum();
    html! {
        (files.len()) @if files.len() == 1 { " file" } @else { " files" } " changed, "
        span.adds { "+" (additions) } " " span.dels { "−" (deletions) }
    }
}

/// Each turn's changes, folded as a whole (the run's are above); each turn's files are keyed
/// apart from the run's, so that the page keeps which the reader opened.
fn turns_view(turns: &[TurnCode]) -> Markup {
    html! {
        details.turns data-path="turns" {
            @let count = turns.last().map_or(0, TurnCode::last);
            summary {
                "Per turn " span.muted { "(" (count) @if count == 1 { " turn" } @else { " turns" } ")" }
            }
            @for turn in turns {
                @match turn {
                    TurnCode::Unchanged(n) => {
                        div.turn data-turn=(n) { p.turn-head { "Turn " (n) " changed no files." } }
                    }
                    TurnCode::Changed { first, last, changes } => {
                        div.turn data-turn=(first) {
                            p.turn-head {
                                @if first == last { "Turn " (first) } @else {
                                    "Turns " (first) "–" (last)
                                    span.muted { " (ended while the code was being read: recorded together)" }
                                }
                                " · " span.muted { (total(&changes.files)) }
                            }
                            (commits_view(&changes.commits))
                            div.files {
                                @for file in &changes.files {
                                    (file_view(file, &format!("turn {first}: ")))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A file's diff; `key` tells its `data-path` apart from the same file's elsewhere.
fn file_view(f: &FileChange, key: &str) -> Markup {
    let lines: Vec<&str> = match &f.patch {
        Patch::Kept(text) if !f.binary => text.lines().collect(),
        _ => Vec::new(),
    };
    let folded = lines.len() > FOLD_LINES;
    html! {
        details.file data-path={(key) (f.path)} open[!folded && !lines.is_empty()] {
            summary {
                code.path {
                    @if let Some(old) = &f.old_path { (old) " → " }
                    (f.path)
                }
                " " span class={"file-status " (f.status.as_str())} { (f.status.as_str()) }
                @if f.binary {
                    " " span.muted { "binary file" }
                } @else {
                    " " span.adds { "+" (f.additions) } " " span.dels { "−" (f.deletions) }
                }
                @if let Some(reason) = f.patch.omitted_reason() { " " span.muted { "(" (reason) ")" } }
                @if folded { " " span.muted { "(" (lines.len()) " diff lines, folded: open to read)" } }
            }
            @if f.binary {
                p.muted { "A binary file: its changes are not shown as text." }
            } @else if let Some(reason) = f.patch.omitted_reason() {
                p.muted { "The " (reason) "." }
            } @else if lines.is_empty() {
                p.muted { "Only the file's mode changed." }
            } @else {
                (diff_lines(&lines))
            }
        }
    }
}

/// What a patch line is, for its colour.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LineKind {
    /// `diff --git`, `index`, `---`/`+++` and mode lines before the first hunk.
    Header,
    Hunk,
    Added,
    Deleted,
    Context,
    /// `\ No newline at end of file`.
    Note,
}

impl LineKind {
    fn class(self) -> &'static str {
        match self {
            LineKind::Header => "l meta",
            LineKind::Hunk => "l hunk",
            LineKind::Added => "l add",
            LineKind::Deleted => "l del",
            LineKind::Context => "l ctx",
            LineKind::Note => "l meta",
        }
    }
}

/// Each line's kind. Before the first hunk every line is the file's header; inside hunks the
/// first character decides (so a deleted line reading `-- x` is a deletion, not a header).
fn classify<'a>(lines: &[&'a str]) -> Vec<(LineKind, &'a str)> {
    let mut in_hunks = false;
    lines
        .iter()
        .map(|&line| {
            let kind = if line.starts_with("@@") {
                in_hunks = true;
                LineKind::Hunk
            } else if !in_hunks {
                LineKind::Header
            } else if line.starts_with("diff --git ") {
                // A patch holds one file, but a following section starts a header again.
                in_hunks = false;
                LineKind::Header
            } else {
                match line.as_bytes().first() {
                    Some(b'+') => LineKind::Added,
                    Some(b'-') => LineKind::Deleted,
                    Some(b'\\') => LineKind::Note,
                    _ => LineKind::Context,
                }
            };
            (kind, line)
        })
        .collect()
}

/// One block per line (so a line's colour spans the width, and a copy keeps the breaks).
fn diff_lines(lines: &[&str]) -> Markup {
    html! {
        pre.diff {
            @for (kind, line) in classify(lines) {
                span class=(kind.class()) { (line) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_inside_hunks_are_read_by_their_first_character() {
        let patch = [
            "diff --git a/x b/x",
            "index 1..2 100644",
            "--- a/x",
            "+++ b/x",
            "@@ -1,2 +1,2 @@",
            " same",
            "--- was a rule",
            "+++ is a rule",
            "\\ No newline at end of file",
        ];
        let kinds: Vec<LineKind> = classify(&patch).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [
                LineKind::Header,
                LineKind::Header,
                LineKind::Header,
                LineKind::Header,
                LineKind::Hunk,
                LineKind::Context,
                LineKind::Deleted,
                LineKind::Added,
                LineKind::Note,
            ]
        );
    }

    fn holding(snapshot: u32, first: u32, last: u32) -> GitChanges {
        GitChanges {
            snapshot,
            tree: format!("t{snapshot}"),
            repo: "project".into(),
            remotes: Vec::new(),
            branch: Some("main".into()),
            base_commit: None,
            head_commit: None,
            commits: Vec::new(),
            files: Vec::new(),
            turn_files: Some(Vec::new()),
            worktree: None,
            turns: Some(wujie_protocol::git::TurnSpan { first, last }),
        }
    }

    #[test]
    fn turns_no_snapshot_holds_changed_nothing_and_turns_recorded_together_show_once() {
        let told: Vec<String> = turns(vec![holding(1, 2, 3), holding(2, 5, 5)], 6)
            .iter()
            .map(|t| match t {
                TurnCode::Changed { first, last, .. } => format!("{first}-{last}"),
                TurnCode::Unchanged(n) => format!("{n}: none"),
            })
            .collect();
        assert_eq!(told, ["1: none", "2-3", "4: none", "5-5", "6: none"]);
    }

    #[test]
    fn patch_text_is_escaped() {
        let html = diff_lines(&["@@ -0,0 +1 @@", "+<script>alert(1)</script>"]).into_string();
        assert!(
            html.contains("+&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script>"), "{html}");
    }
}
