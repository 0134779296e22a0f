//! `wujie run` in a git work tree records what the agent changed in the code: the run's `git`
//! object, exactly the agent's changes and commits, not the user's earlier work.

use std::path::PathBuf;

use wujie_testkit::*;

/// A repository `project` in the test's work dir with one commit, or a skip without git.
pub(super) fn require_repository(env: &Env) -> Option<PathBuf> {
    wujie_require::require("git")?;
    let repo = env.work.path().join("project");
    std::fs::create_dir(&repo).expect("create repo dir");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Ada Tester"]);
    git(&repo, &["config", "user.email", "ada@example.test"]);
    git(&repo, &["config", "commit.gpgsign", "false"]);
    for (file, text) in [
        ("edit.txt", "one\ntwo\n"),
        ("gone.txt", "bye\n"),
        ("user.txt", "mine\n"),
    ] {
        std::fs::write(repo.join(file), text).expect("write");
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    Some(repo)
}

/// An adapter that works like an agent: two turns that edit, add, delete and commit files.
const AGENT: &str = r#"
echo '{"type":"user_input","content":"change the code","source":"t","source_key":"u1"}'
printf 'one\n2\n' > edit.txt
echo fresh > added.txt
rm gone.txt
git add added.txt && git commit -q -m "Add added.txt"
echo '{"type":"final","content":"first turn done","source":"t","source_key":"f1"}'
echo again >> added.txt
echo '{"type":"final","content":"second turn done","source":"t","source_key":"f2"}'
"#;

fn summary(files: &serde_json::Value) -> Vec<(String, String, u64, u64)> {
    let mut files: Vec<_> = files
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["status"].as_str().unwrap().to_owned(),
                f["additions"].as_u64().unwrap(),
                f["deletions"].as_u64().unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_run_records_exactly_its_edits_and_commits_and_not_the_users_earlier_work() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    // The user's own unfinished work, there before the run.
    std::fs::write(repo.join("user.txt"), "mine, changed before\n").expect("write");
    std::fs::write(repo.join("notes.txt"), "untracked before\n").expect("write");
    let base = git(&repo, &["rev-parse", "HEAD"]);
    let plugin = env.plugin("coder", V1, AGENT);
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("change the code");

    let out = env
        .cmd()
        .current_dir(&repo)
        .args(["run", &key, "--", "coder"])
        .output()
        .expect("wujie runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let issue = env.issue(&key);
    let run_git = &issue["runs"][0]["git"];
    assert_eq!(run_git["repo"], "project");
    assert_eq!(run_git["branch"], "main");
    assert_eq!(run_git["base_commit"], base.as_str());
    assert_eq!(
        run_git["head_commit"],
        git(&repo, &["rev-parse", "HEAD"]).as_str()
    );
    assert_eq!(run_git["worktree"], serde_json::Value::Null);
    let commits = run_git["commits"].as_array().expect("commits");
    assert_eq!(commits.len(), 1, "{commits:?}");
    assert_eq!(commits[0]["subject"], "Add added.txt");
    assert_eq!(
        summary(&run_git["files"]),
        [
            ("added.txt".to_owned(), "added".to_owned(), 2, 0),
            ("edit.txt".to_owned(), "modified".to_owned(), 1, 1),
            ("gone.txt".to_owned(), "deleted".to_owned(), 0, 1),
        ]
    );

    // `wujie issue show` prints the branch, the commits and a --stat-like list.
    let text = env.ok(&["issue", "show", &key]);
    let head = git(&repo, &["rev-parse", "--short=7", "HEAD"]);
    let expected = [
        format!("  code: project on main (base {}, head {head})", &base[..7]),
        format!("  commit {head} Add added.txt"),
        "  3 files changed, 3 insertions(+), 2 deletions(-)".to_owned(),
        "    added.txt |     2 ++  (added)".to_owned(),
        "    edit.txt  |     2 +-".to_owned(),
        "    gone.txt  |     1 -  (deleted)".to_owned(),
    ];
    for line in expected {
        assert!(text.lines().any(|l| l == line), "no {line:?} in:\n{text}");
    }

    // `wujie issue diff` is a patch that `git apply` takes on the run's base and that gives
    // the files the run left.
    let patch = env.ok(&["issue", "diff", &key]);
    let applied = env.work.path().join("applied");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            applied.to_str().unwrap(),
            &base,
        ],
    );
    let patch_file = env.work.path().join("run.patch");
    std::fs::write(&patch_file, &patch).expect("write patch");
    git(&applied, &["apply", patch_file.to_str().unwrap()]);
    for file in ["added.txt", "edit.txt"] {
        assert_eq!(
            std::fs::read_to_string(applied.join(file)).expect("applied file"),
            std::fs::read_to_string(repo.join(file)).expect("run's file"),
            "{file}"
        );
    }
    assert!(!applied.join("gone.txt").exists());

    let stat = env.ok(&["issue", "diff", &key, "--stat"]);
    assert!(stat.contains("    edit.txt  |     2 +-\n"), "{stat}");
    let json = env.json(&["issue", "diff", &key]);
    let files = json["files"].as_array().expect("files");
    assert_eq!(files.len(), 3);
    assert!(
        files.iter().all(|f| f["patch"]["state"] == "kept"),
        "{json}"
    );
}

#[test]
fn outside_a_repository_a_run_records_no_code_and_says_nothing_of_it() {
    let env = Env::new();
    let plugin = env.plugin(
        "talker",
        V1,
        &format!("echo '{}'", msg("final", "done", "f1")),
    );
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("no repository");
    let outside = tempfile::tempdir().expect("temp dir");
    let out = env
        .cmd()
        .current_dir(outside.path())
        .args(["run", &key, "--", "talker"])
        .output()
        .expect("wujie runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("git"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let issue = env.issue(&key);
    assert_eq!(issue["runs"][0]["git"], serde_json::Value::Null);
    assert_eq!(issue["runs"][0]["status"], "succeeded");
    let error = env.fails(&["issue", "diff", &key]);
    assert_eq!(
        error.trim(),
        format!(
            "wujie: error: no run of issue {key} recorded code changes (runs record them when started \
             in a git work tree)"
        )
    );
}

#[test]
fn without_git_on_path_a_run_works_and_says_so_in_one_line() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    let plugin = env.plugin(
        "talker",
        V1,
        &format!("echo '{}'", msg("final", "done", "f1")),
    );
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("no git");
    let empty_path = tempfile::tempdir().expect("temp dir");
    let out = env
        .cmd()
        .current_dir(&repo)
        .env("PATH", empty_path.path())
        .args(["run", &key, "--", "talker"])
        .output()
        .expect("wujie runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let notices: Vec<&str> = stderr.lines().filter(|l| l.contains("git")).collect();
    assert_eq!(
        notices,
        ["wujie: git is not on PATH; this run records no code changes"],
        "{stderr}"
    );
    let issue = env.issue(&key);
    assert_eq!(issue["runs"][0]["git"], serde_json::Value::Null);
    assert_eq!(issue["runs"][0]["messages"][0]["content"], "done");
}
