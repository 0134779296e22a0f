//! Branch records: one JSON file per branch under `<data_dir>/commondev/branches/<label>/`,
//! written atomically, so that a branch (and its backend's real session id) survives restarts.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wujie_process::atomic_file::write_atomic;

use crate::error::{CommondevError, Result};
use crate::paths::CommondevDirs;

/// `br-<project>-<branch>`, with anything but ASCII letters, digits, `.`, `_` and `-` replaced
/// by `-` (so `feat/a` becomes `feat-a`). Collisions are detected against the stored record.
pub fn branch_label(project: &str, branch: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    format!("br-{}-{}", clean(project), clean(branch))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BranchStatus {
    Open,
    Closed,
}

/// What is stored about a branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchRecord {
    pub project: String,
    pub branch: String,
    pub label: String,
    pub agent_cli: String,
    pub workdir: PathBuf,
    /// `local` or `ssh://[user@]host[:port]`.
    pub runtime: String,
    #[serde(default)]
    pub issue: Option<String>,
    /// The backend's own session id, once known. Only this is ever used to resume.
    #[serde(default)]
    pub real_session_id: Option<String>,
    pub status: BranchStatus,
    #[serde(default)]
    pub cli_version: Option<String>,
    /// The branch's own git worktree, when its agent works in one (`workdir` is inside it).
    #[serde(default)]
    pub worktree: Option<PathBuf>,
}

impl BranchRecord {
    /// The id Wujie reports: the real one when known, else the label.
    pub fn session_id(&self) -> &str {
        self.real_session_id.as_deref().unwrap_or(&self.label)
    }
}

#[derive(Debug, Clone)]
pub struct BranchStore {
    dirs: CommondevDirs,
}

impl BranchStore {
    pub fn new(dirs: CommondevDirs) -> Self {
        Self { dirs }
    }

    pub fn dir(&self, label: &str) -> PathBuf {
        self.dirs.branch(label)
    }

    pub fn record_path(&self, label: &str) -> PathBuf {
        self.dir(label).join("branch.json")
    }

    pub fn load(&self, label: &str) -> Result<Option<BranchRecord>> {
        let path = self.record_path(label);
        read_record(&path)
    }

    pub fn save(&self, record: &BranchRecord) -> Result<()> {
        let path = self.record_path(&record.label);
        let text = serde_json::to_vec_pretty(record).unwrap_or_default();
        write_atomic(&path, &text, 0o644).map_err(|source| CommondevError::Io {
            what: "could not write the branch record",
            path,
            source,
        })
    }

    /// All records, sorted by label.
    pub fn list(&self) -> Result<Vec<BranchRecord>> {
        let root = self.dirs.branches();
        let entries = match std::fs::read_dir(&root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(CommondevError::Io {
                    what: "could not list",
                    path: root,
                    source,
                });
            }
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            if let Some(record) = read_record(&entry.path().join("branch.json"))? {
                records.push(record);
            }
        }
        records.sort_by(|a, b| a.label.cmp(&b.label));
        Ok(records)
    }
}

fn read_record(path: &Path) -> Result<Option<BranchRecord>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| CommondevError::BadRecord {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CommondevError::Io {
            what: "could not read",
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_sanitised() {
        assert_eq!(branch_label("X", "feat/a"), "br-X-feat-a");
        assert_eq!(branch_label("my proj", "../../etc"), "br-my-proj-..-..-etc");
        assert!(!branch_label("a", "b/c\\d e").contains(['/', '\\', ' ']));
    }

    #[test]
    fn records_round_trip_and_list() {
        let tmp = tempfile::tempdir().unwrap();
        let store = BranchStore::new(CommondevDirs::new(tmp.path()));
        assert!(store.list().unwrap().is_empty());
        let record = BranchRecord {
            project: "p".into(),
            branch: "b".into(),
            label: branch_label("p", "b"),
            agent_cli: "fake".into(),
            workdir: tmp.path().into(),
            runtime: "local".into(),
            issue: Some("WUJ-1".into()),
            real_session_id: None,
            status: BranchStatus::Open,
            cli_version: None,
            worktree: Some(tmp.path().join("wt")),
        };
        store.save(&record).unwrap();
        assert_eq!(store.load(&record.label).unwrap().as_ref(), Some(&record));
        assert_eq!(store.list().unwrap(), vec![record.clone()]);
        assert_eq!(record.session_id(), "br-p-b");
    }
}
