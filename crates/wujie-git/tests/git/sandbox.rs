//! A real repository in a temporary directory, and the `git` commands tests drive it with.

use std::path::{Path, PathBuf};
use std::process::Command;
use wujie_git::{Discovered, Repository, TreeId};

pub struct Sandbox {
    // Held for its Drop: the directory goes with the sandbox.
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Sandbox {
    /// A new repository with one commit of `files`, or `None` (skipped, said why) without git.
    pub fn require_committed(files: &[(&str, &str)]) -> Option<Self> {
        Self::require_committed_bytes(
            &files
                .iter()
                .map(|(path, text)| (*path, text.as_bytes()))
                .collect::<Vec<_>>(),
        )
    }

    /// [`Sandbox::require_committed`] with contents that need not be text.
    pub fn require_committed_bytes(files: &[(&str, &[u8])]) -> Option<Self> {
        let sandbox = Self::require_empty()?;
        for &(path, content) in files {
            sandbox.write(path, content);
        }
        sandbox.git(&["add", "-A"]);
        sandbox.git(&["commit", "-q", "-m", "base"]);
        Some(sandbox)
    }

    /// A new repository with no commit.
    pub fn require_empty() -> Option<Self> {
        wujie_require::require("git")?;
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("project");
        std::fs::create_dir(&root).expect("create project dir");
        let sandbox = Self { _dir: dir, root };
        sandbox.git(&["init", "-q", "-b", "main"]);
        sandbox.git(&["config", "user.name", "Ada Tester"]);
        sandbox.git(&["config", "user.email", "ada@example.test"]);
        sandbox.git(&["config", "commit.gpgsign", "false"]);
        Some(sandbox)
    }

    pub fn repository(&self) -> Repository {
        match Repository::discover(&self.root).expect("discover") {
            Discovered::Repository(repository) => repository,
            Discovered::NotARepository => panic!("{} is a repository", self.root.display()),
        }
    }

    pub fn write(&self, path: &str, content: impl AsRef<[u8]>) {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create dirs");
        std::fs::write(path, content).expect("write file");
    }

    pub fn remove(&self, path: &str) {
        std::fs::remove_file(self.root.join(path)).expect("remove file");
    }

    /// Runs git in the repository; its stdout.
    pub fn git(&self, args: &[&str]) -> Vec<u8> {
        git_in(&self.root, args, &[])
    }

    pub fn git_text(&self, args: &[&str]) -> String {
        String::from_utf8(self.git(args))
            .expect("utf-8")
            .trim()
            .to_string()
    }

    /// The files of `tree` written out to a new directory (through a throwaway index).
    pub fn check_out_tree(&self, tree: &TreeId, into: &Path) {
        let index = into.with_extension("index");
        let env = [("GIT_INDEX_FILE", index.as_path())];
        git_in(&self.root, &["read-tree", tree.as_str()], &env);
        let prefix = format!("{}/", into.display());
        git_in(
            &self.root,
            &["checkout-index", "-a", "--prefix", &prefix],
            &env,
        );
    }
}

pub fn git_in(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Vec<u8> {
    let mut command = Command::new("git");
    command.current_dir(dir).args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().expect("run git");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}
