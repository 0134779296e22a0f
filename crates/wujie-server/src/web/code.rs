//! A run's code changes on the issue page: where it ran (branch, base), the commits it made,
//! and each changed file with its unified diff, folded in a `<details>` so the page reads
//! without JavaScript. Every line of a patch is text to maud, so agent-written code never
//! becomes markup.

use maud::{Markup, html};
use wujie_protocol::git::{FileChange, GitChanges, Patch};

/// Lines of a file's patch past which it starts folded (its summary says how long it is).
const FOLD_LINES: usize = 400;

/// Characters of a commit id shown, as `git log --oneline` does.
const SHORT_SHA: usize = 7;

fn short_sha(sha: &str) -> &str {
    sha.get(..SHORT_SHA).unwrap_or(sha)
}

/// The section's element id: the live feed replaces it when a new snapshot is stored.
pub(crate) fn section_id(run_id: &str) -> String {
    format!("run-code-{run_id}")
}

/// The code section of run `run_id`; empty (but there, for the live feed to fill) while the
/// run has recorded no snapshot.
pub(crate) fn run_code(run_id: &str, changes: Option<&GitChanges>) -> Markup {
    html! {
        div.run-code id=(section_id(run_id)) data-snapshot=[changes.map(|c| c.snapshot)] {
            @if let Some(changes) = changes { (changes_view(changes)) }
        }
    }
}

fn changes_view(c: &GitChanges) -> Markup {
    let additions: u64 = c.files.iter().map(|f| f.additions).sum();
    let deletions: u64 = c.files.iter().map(|f| f.deletions).sum();
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
        @if !c.commits.is_empty() {
            ul.commits {
                @for commit in &c.commits {
                    li {
                        code title=(commit.sha) { (short_sha(&commit.sha)) } " " (commit.subject)
                        span.muted { " — " (commit.author) }
                    }
                }
            }
        }
        @if c.files.is_empty() {
            p.muted { "No files changed yet." }
        } @else {
            p.muted.code-total {
                (c.files.len()) @if c.files.len() == 1 { " file" } @else { " files" } " changed, "
                span.adds { "+" (additions) } " " span.dels { "−" (deletions) }
            }
            div.files {
                @for file in &c.files { (file_view(file)) }
            }
        }
    }
}

fn file_view(f: &FileChange) -> Markup {
    let lines: Vec<&str> = match &f.patch {
        Patch::Kept(text) if !f.binary => text.lines().collect(),
        _ => Vec::new(),
    };
    let folded = lines.len() > FOLD_LINES;
    html! {
        details.file data-path=(f.path) open[!folded && !lines.is_empty()] {
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
