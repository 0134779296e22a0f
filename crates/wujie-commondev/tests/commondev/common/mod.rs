//! Shared test scaffolding: a temp data dir (as `$WUJIE_HOME/data`), a workdir, fixture drivers.
pub mod sshd;

use std::path::{Path, PathBuf};
use std::time::Duration;

use wujie_commondev::registry::DriverLocations;
use wujie_commondev::runtime::RuntimeSettings;
use wujie_commondev::sidecar::Timeouts;
use wujie_commondev::{BranchSessions, Lifetime, SessionConfig};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub struct TestEnv {
    pub home: tempfile::TempDir,
    pub data_dir: PathBuf,
    pub workdir: PathBuf,
    pub timeouts: Timeouts,
    pub locations: DriverLocations,
    pub runtime: RuntimeSettings,
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

impl TestEnv {
    pub fn new() -> Self {
        let home = tempfile::tempdir().unwrap();
        let data_dir = home.path().join("data");
        let workdir = home.path().join("work");
        std::fs::create_dir_all(&workdir).unwrap();
        let root = data_dir.join("commondev");
        let locations = DriverLocations {
            override_root: root.join("runtime"),
            installed_root: None,
            bundled: Vec::new(),
            bundled_cache: root.join("bundled"),
            exe_dir: None,
        };
        let timeouts = Timeouts {
            ping: Duration::from_secs(10),
            prompt: Duration::from_secs(60),
            quick: Duration::from_secs(30),
            kill_grace: Duration::from_secs(2),
        };
        Self {
            home,
            data_dir,
            workdir,
            timeouts,
            locations,
            runtime: RuntimeSettings::default(),
        }
    }

    /// The local override directory for `cli`: `<data>/commondev/runtime/<cli>`.
    pub fn override_dir(&self, cli: &str) -> PathBuf {
        self.locations.override_root.join(cli)
    }

    /// Installs a fixture driver directory as the local override for `cli`.
    pub fn install(&self, fixture: &str, cli: &str) -> PathBuf {
        let dir = self.override_dir(cli);
        copy_dir(&fixtures().join("drivers").join(fixture), &dir);
        dir
    }

    pub fn config(&self) -> SessionConfig {
        SessionConfig {
            locations: self.locations.clone(),
            timeouts: self.timeouts,
            runtime: self.runtime.clone(),
            llm_overrides: Default::default(),
            worktrees_dir: None,
        }
    }

    pub fn sessions(&self, lifetime: Lifetime) -> BranchSessions {
        BranchSessions::new(&self.data_dir, self.config(), lifetime)
    }
}

/// Whether a process exists (a zombie counts as gone: it runs nothing).
fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Whether the process is gone within a few seconds: SIGKILL is delivered asynchronously, so a
/// process killed a moment ago may still be scheduled once more.
pub fn gone_soon(pid: i32) -> bool {
    (0..250).any(|_| {
        if !process_alive(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        false
    })
}

/// Waits (bounded, only to avoid hanging forever) for `path` to appear and returns its text.
pub async fn wait_for_file(path: &Path) -> String {
    for _ in 0..600 {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.trim().is_empty()
        {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{} never appeared", path.display());
}
