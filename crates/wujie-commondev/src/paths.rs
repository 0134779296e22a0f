//! Where commondev keeps its files under the caller's data dir.

use std::path::{Path, PathBuf};

/// `<data_dir>/commondev/` and its parts.
#[derive(Debug, Clone)]
pub struct CommondevDirs {
    root: PathBuf,
}

impl CommondevDirs {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            root: data_dir.join("commondev"),
        }
    }

    /// The `{dataDir}` placeholder: commondev's own data directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Local driver overrides: `runtime/<cli>/driver.json` (highest priority).
    pub fn runtime_override(&self) -> PathBuf {
        self.root.join("runtime")
    }

    /// Where compiled-in drivers are written out so that node can run them.
    pub fn bundled_cache(&self) -> PathBuf {
        self.root.join("bundled")
    }

    pub fn branches(&self) -> PathBuf {
        self.root.join("branches")
    }

    pub fn branch(&self, label: &str) -> PathBuf {
        self.branches().join(label)
    }

    /// Wujie's own model settings (see `llm` module).
    pub fn llm_settings(&self) -> PathBuf {
        self.root.join("llm.json")
    }
}
