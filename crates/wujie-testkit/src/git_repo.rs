//! Real git repositories for tests, driven with the `git` on PATH as users' are.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Env;

/// Runs `git args` in `dir`; its output, trimmed. Panics (the test fails) when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// A repository `project` in the test's work dir with one commit, or a skip without git.
pub fn require_repository(env: &Env) -> Option<PathBuf> {
    require_repository_of(
        env,
        &[
            ("edit.txt", "one\ntwo\n"),
            ("gone.txt", "bye\n"),
            ("user.txt", "mine\n"),
        ],
    )
}

/// [`require_repository`] whose commit holds `files` (path, text).
pub fn require_repository_of(env: &Env, files: &[(&str, &str)]) -> Option<PathBuf> {
    wujie_require::require("git")?;
    let repo = env.work.path().join("project");
    std::fs::create_dir(&repo).expect("create repo dir");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Ada Tester"]);
    git(&repo, &["config", "user.email", "ada@example.test"]);
    git(&repo, &["config", "commit.gpgsign", "false"]);
    for (file, text) in files {
        std::fs::write(repo.join(file), text).expect("write");
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    Some(repo)
}

/// `patch` applied with `git apply` on `rev` of `repo`, checked out in a new detached worktree
/// of it in `env`'s work directory; that worktree's path.
pub fn applied_on(env: &Env, repo: &Path, rev: &str, patch: &str) -> PathBuf {
    let applied = env.work.path().join("applied");
    git(
        repo,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            applied.to_str().expect("a UTF-8 path"),
            rev,
        ],
    );
    let patch_file = env.work.path().join("run.patch");
    std::fs::write(&patch_file, patch).expect("write the patch");
    git(
        &applied,
        &["apply", patch_file.to_str().expect("a UTF-8 path")],
    );
    applied
}
