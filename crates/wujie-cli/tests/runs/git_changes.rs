//! `wujie run` in a git work tree records what the agent changed in the code: the run's `git`
//! object, exactly the agent's changes and commits, not the user's earlier work.

use wujie_testkit::git_repo::{applied_on, git, require_repository};
use wujie_testkit::run_output::describe;
use wujie_testkit::*;

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
    let applied = applied_on(&env, &repo, &base, &patch);
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

/// The one target of `env`'s outbox: its events not delivered yet.
fn pending(env: &Env) -> i64 {
    let status = env.json(&["local-run", "status"]);
    status[0]["pending"].as_i64().unwrap_or(-1)
}

/// `wujie run` SIGKILLed after a turn while the server is down: the turn's snapshot waits in
/// the outbox with its messages, and `local-run sync` delivers it.
#[test]
fn the_code_changes_of_a_sigkilled_run_arrive_with_local_run_sync() {
    let (team, mut server, laptop) = super::delivery::team_and_laptop(&[]);
    let Some(repo) = require_repository(&laptop) else {
        return;
    };
    let dir = laptop.work.path();
    let (ready, go) = (dir.join("ready"), dir.join("go"));
    let body = format!(
        r#"echo $$ > "{pid}"
touch "{ready}"
while [ ! -e "{go}" ]; do sleep 0.05; done
echo '{prompt}'
printf 'one\nTWO\n' > edit.txt
echo '{reply}'
while :; do sleep 1; done"#,
        pid = dir.join("adapter.pid").display(),
        ready = ready.display(),
        go = go.display(),
        prompt = msg("user_input", "change it", "u1"),
        reply = msg("final", "changed", "f1"),
    );
    let plugin = laptop.plugin("editor", V1, &body);
    laptop.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = laptop.create_issue("killed after a turn");
    let mut run = laptop
        .cmd()
        .current_dir(&repo)
        .args(["run", &key, "--", "editor"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("wujie runs");
    // The start snapshot is recorded before the adapter starts; once it is delivered, the
    // server goes away and the turn happens.
    wait_until(60, "the adapter to start", || ready.exists());
    wait_until(60, "the start snapshot to be delivered", || {
        pending(&laptop) == 0
    });
    server.kill();
    std::fs::write(&go, "").expect("go");
    wait_until(
        60,
        "the prompt, the reply and the turn's snapshot in the outbox",
        || pending(&laptop) == 3,
    );
    run.kill().expect("SIGKILL wujie");
    run.wait().expect("reaped");
    let adapter: i32 = std::fs::read_to_string(dir.join("adapter.pid"))
        .expect("adapter pid")
        .trim()
        .parse()
        .expect("a pid");
    signal_group(adapter, nix::sys::signal::Signal::SIGKILL);

    let _server = super::delivery::restart(&team, &mut server, &[]);
    laptop.ok(&["local-run", "sync"]);
    let issue = laptop.issue(&key);
    assert_eq!(
        summary(&issue["runs"][0]["git"]["files"]),
        [("edit.txt".to_owned(), "modified".to_owned(), 1, 1)],
        "{issue}"
    );
    let patch = laptop.ok(&["issue", "diff", &key]);
    assert!(patch.contains("+TWO"), "{patch}");
}

/// An agent in two turns that change different files: the first edits `edit.txt`, then (once
/// the file `go` exists) the second adds `second.txt` in a commit.
fn two_turns(go: &std::path::Path) -> String {
    format!(
        "printf 'one\\nTWO\\n' > edit.txt\n\
         echo '{}'\n\
         while [ ! -e '{go}' ]; do sleep 0.05; done\n\
         echo second > second.txt\n\
         git add second.txt && git commit -q -m 'Add second.txt'\n\
         echo '{}'",
        msg("final", "first turn done", "f1"),
        msg("final", "second turn done", "f2"),
        go = go.display(),
    )
}

/// The paths of the files in `changes` (a run's or a turn's), sorted.
pub(super) fn paths(changes: &serde_json::Value) -> Vec<&str> {
    let mut paths: Vec<&str> = changes["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    paths.sort();
    paths
}

/// Waits until the snapshot of the first turn of issue `key`'s run is stored.
pub(super) fn wait_first_turn_stored(env: &Env, key: &str) {
    wait_until(30, "the first turn's snapshot", || {
        env.run(&["issue", "diff", key, "--turn", "1"])
            .status
            .success()
    });
}

#[test]
fn issue_diff_turn_shows_only_what_that_turn_changed_and_applies_on_the_turn_before() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    let base = git(&repo, &["rev-parse", "HEAD"]);
    let go = env.work.path().join("go");
    let plugin = env.plugin("turns", V1, &two_turns(&go));
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("two turns");
    // The second turn starts once the first one's snapshot is stored.
    let mut run = past_the_first_turn(&env, &repo, &key, "turns");
    std::fs::write(&go, "").expect("go");
    assert!(run.wait().expect("run ends").success());

    let first = env.json(&["issue", "diff", &key, "--turn", "1"]);
    assert_eq!(paths(&first), ["edit.txt"], "{first:#}");
    assert_eq!(first["commits"], serde_json::json!([]));
    let second = env.json(&["issue", "diff", &key, "--turn", "2"]);
    assert_eq!(paths(&second), ["second.txt"], "{second:#}");
    let commits = second["commits"].as_array().expect("commits");
    assert_eq!(commits.len(), 1, "{second:#}");
    assert_eq!(commits[0]["subject"], "Add second.txt");
    let stat = env.ok(&["issue", "diff", &key, "--turn", "2", "--stat"]);
    assert!(
        stat.contains("    second.txt |     1 +  (added)\n"),
        "{stat}"
    );
    assert!(!stat.contains("edit.txt"), "{stat}");
    // The whole run still has both.
    let whole = env.json(&["issue", "diff", &key]);
    assert_eq!(paths(&whole), ["edit.txt", "second.txt"], "{whole:#}");

    // Turn 1's patch applies on the base, and turn 2's on the result: the run's files.
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
    for turn in ["1", "2"] {
        let patch = env.ok(&["issue", "diff", &key, "--turn", turn]);
        let file = env.work.path().join(format!("turn-{turn}.patch"));
        std::fs::write(&file, &patch).expect("write patch");
        git(&applied, &["apply", file.to_str().unwrap()]);
    }
    for file in ["edit.txt", "second.txt"] {
        assert_eq!(
            std::fs::read_to_string(applied.join(file)).expect("applied file"),
            std::fs::read_to_string(repo.join(file)).expect("run's file"),
            "{file}"
        );
    }

    // Turns that are not there are said plainly.
    let run_id = only_run_id(&env, &key);
    let error = env.fails(&["issue", "diff", &key, "--turn", "3"]);
    assert_eq!(
        error.trim(),
        format!("wujie: error: run {run_id} has 2 turns")
    );
    let error = env.fails(&["issue", "diff", &key, "--turn", "0"]);
    assert_eq!(
        error.trim(),
        "wujie: error: --turn counts from 1: turn 1 is what the run changed up to its first \
         final reply"
    );
}

/// An agent whose first turn edits `edit.txt` and whose second (once the file `go` exists)
/// only replies.
fn idle_second_turn(go: &std::path::Path, end: &std::path::Path) -> String {
    format!(
        "printf 'one\\nTWO\\n' > edit.txt\n\
         echo '{}'\n\
         while [ ! -e '{go}' ]; do sleep 0.05; done\n\
         echo '{}'\n\
         while [ ! -e '{end}' ]; do sleep 0.05; done",
        msg("final", "first turn done", "f1"),
        msg("final", "nothing to change", "f2"),
        go = go.display(),
        end = end.display(),
    )
}

#[test]
fn turn_numbers_count_the_runs_replies_and_a_turn_that_changed_nothing_says_so() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    let (go, end) = (env.work.path().join("go"), env.work.path().join("end"));
    let plugin = env.plugin("idle", V1, &idle_second_turn(&go, &end));
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("an idle turn");
    // The second turn starts once the first one's snapshot is stored.
    let mut run = past_the_first_turn(&env, &repo, &key, "idle");
    std::fs::write(&go, "").expect("go");
    // While the run goes on, a turn that changed nothing cannot be told from one whose
    // snapshot is still to come: said so, not guessed.
    wait_until(30, "the second reply", || {
        env.issue(&key)["runs"][0]["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter(|m| m["type"] == "final")
            .count()
            == 2
    });
    let not_yet = env.fails(&["issue", "diff", &key, "--turn", "2"]);
    assert!(
        not_yet.contains("what turn 2 of run") && not_yet.contains("is not recorded yet"),
        "{not_yet}"
    );
    std::fs::write(&end, "").expect("end");
    assert!(run.wait().expect("run ends").success());

    let first = env.json(&["issue", "diff", &key, "--turn", "1"]);
    assert_eq!(paths(&first), ["edit.txt"], "{first:#}");
    assert_eq!(first["turns"], serde_json::json!({"first": 1, "last": 1}));
    // Turn 2 is the run's second reply, which changed nothing: said, and an empty patch.
    let out = env.run(&["issue", "diff", &key, "--turn", "2"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "wujie: turn 2 changed no files"
    );
    let second = env.json(&["issue", "diff", &key, "--turn", "2"]);
    assert_eq!(second["files"], serde_json::json!([]), "{second:#}");
    let run_id = only_run_id(&env, &key);
    let error = env.fails(&["issue", "diff", &key, "--turn", "3"]);
    assert_eq!(
        error.trim(),
        format!("wujie: error: run {run_id} has 2 turns")
    );
}

/// The id of the issue's one run.
fn only_run_id(env: &Env, key: &str) -> String {
    env.issue(key)["runs"][0]["id"]
        .as_str()
        .expect("run id")
        .to_owned()
}

/// `wujie run KEY -- PROVIDER` started in `repo` in the background, once its first turn's
/// snapshot is stored.
fn past_the_first_turn(
    env: &Env,
    repo: &std::path::Path,
    key: &str,
    provider: &str,
) -> std::process::Child {
    let run = env
        .cmd()
        .current_dir(repo)
        .args(["run", key, "--", provider])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("wujie runs");
    wait_first_turn_stored(env, key);
    run
}
