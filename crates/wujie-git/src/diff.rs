//! What changed between two snapshots: per file its status, line counts and patch.
//!
//! Two passes of `git diff-tree` over the same trees with the same options: the first lists
//! the files (`--raw --numstat`, NUL-separated), the second prints the patch, one
//! `diff --git` section per listed file in the same order. The patch is read as a stream and
//! kept only within [`PatchLimits`], so a huge change costs bounded memory and a file past the
//! limits is still listed with its counts.

use crate::Repository;
use crate::command::{GitError, unexpected};
use crate::snapshot::TreeId;
use wujie_protocol::git::{FileChange, FileStatus, Patch};

/// How much patch text a diff keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchLimits {
    /// Bytes of patch one file may have and still be kept.
    pub per_file: usize,
    /// Bytes of patch kept over all the files of one diff; files after that are listed
    /// without theirs.
    pub per_diff: usize,
}

impl Default for PatchLimits {
    fn default() -> Self {
        Self {
            per_file: 256 * 1024,
            per_diff: 2 * 1024 * 1024,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    pub files: Vec<FileChange>,
}

impl Repository {
    /// The changes that turn snapshot `from` into snapshot `to`, renames detected.
    pub fn diff(&self, from: &TreeId, to: &TreeId, limits: PatchLimits) -> Result<Diff, GitError> {
        let (from, to) = (from.as_str(), to.as_str());
        let list_args = [
            "diff-tree",
            "-r",
            "-z",
            "-M",
            "--no-ext-diff",
            "--no-textconv",
            "--raw",
            "--numstat",
            from,
            to,
        ];
        let listing = self.git.run(&list_args, &[])?;
        let mut files = parse_listing(&listing).map_err(|what| unexpected(&list_args, what))?;

        let patch_args = [
            "diff-tree",
            "-r",
            "-p",
            "-M",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            from,
            to,
        ];
        let mut sections = Sections::new(limits);
        self.git.stream(&patch_args, |line| sections.line(line))?;
        let patches = sections.finish();
        if patches.len() != files.len() {
            return Err(unexpected(
                &patch_args,
                &format!(
                    "{} file sections for {} changed files",
                    patches.len(),
                    files.len()
                ),
            ));
        }
        for (file, patch) in files.iter_mut().zip(patches) {
            file.patch = patch;
        }
        Ok(Diff { files })
    }
}

/// The files of `diff-tree -z --raw --numstat` output: the raw entries (status and names)
/// first, then one numstat entry per file in the same order.
fn parse_listing(output: &[u8]) -> Result<Vec<FileChange>, &'static str> {
    let mut fields = output
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .peekable();
    let mut files = Vec::new();
    while let Some(raw) = fields.next_if(|f| f.starts_with(':')) {
        let letter = raw.rsplit(' ').next().and_then(|s| s.chars().next());
        let (status, names) = match letter {
            Some('A') => (FileStatus::Added, 1),
            Some('D') => (FileStatus::Deleted, 1),
            Some('M' | 'T') => (FileStatus::Modified, 1),
            Some('R') => (FileStatus::Renamed, 2),
            _ => return Err("a change status other than added, modified, deleted or renamed"),
        };
        let first = fields.next().ok_or("a change without its path")?;
        let (path, old_path) = if names == 2 {
            (
                fields.next().ok_or("a rename without its new path")?,
                Some(first),
            )
        } else {
            (first, None)
        };
        files.push(FileChange {
            path,
            old_path,
            status,
            additions: 0,
            deletions: 0,
            binary: false,
            patch: Patch::TooLarge,
        });
    }
    for file in &mut files {
        let numstat = fields
            .next()
            .ok_or("fewer line counts than changed files")?;
        let mut parts = numstat.splitn(3, '\t');
        let (added, deleted) = (parts.next(), parts.next());
        if file.old_path.is_some() {
            // A rename's numstat has an empty name followed by the old and new names.
            fields.next();
            fields.next();
        }
        match (added, deleted) {
            (Some("-"), Some("-")) => file.binary = true,
            (Some(added), Some(deleted)) => {
                file.additions = added
                    .parse()
                    .map_err(|_| "a line count that is no number")?;
                file.deletions = deleted
                    .parse()
                    .map_err(|_| "a line count that is no number")?;
            }
            _ => return Err("a line count entry without its counts"),
        }
    }
    Ok(files)
}

/// Splits a patch stream into its per-file sections, keeping each within the limits.
struct Sections {
    limits: PatchLimits,
    kept_total: usize,
    current: Option<Section>,
    done: Vec<Patch>,
}

struct Section {
    text: Vec<u8>,
    too_large: bool,
}

impl Sections {
    fn new(limits: PatchLimits) -> Self {
        Self {
            limits,
            kept_total: 0,
            current: None,
            done: Vec::new(),
        }
    }

    /// One line of the patch. A file's section starts with `diff --git `; no line inside a
    /// section can (content lines start with ` `, `+`, `-` or `\`, and the base85 lines of a
    /// binary patch have no space).
    fn line(&mut self, line: &[u8]) {
        if line.starts_with(b"diff --git ") {
            self.close();
            self.current = Some(Section {
                text: Vec::new(),
                too_large: false,
            });
        }
        let Some(section) = self.current.as_mut() else {
            return;
        };
        if section.too_large {
            return;
        }
        if section.text.len() + line.len() > self.limits.per_file {
            section.too_large = true;
            section.text = Vec::new();
        } else {
            section.text.extend_from_slice(line);
        }
    }

    fn close(&mut self) {
        let Some(section) = self.current.take() else {
            return;
        };
        let fits =
            !section.too_large && self.kept_total + section.text.len() <= self.limits.per_diff;
        let patch = if !fits {
            Patch::TooLarge
        } else {
            match String::from_utf8(section.text) {
                Ok(text) => {
                    self.kept_total += text.len();
                    Patch::Kept(text)
                }
                Err(_) => Patch::NotText,
            }
        };
        self.done.push(patch);
    }

    fn finish(mut self) -> Vec<Patch> {
        self.close();
        self.done
    }
}
