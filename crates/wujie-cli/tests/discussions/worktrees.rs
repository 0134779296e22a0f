//! Git and discussions: the run a promotion makes records what the agent changes from the
//! promotion on, and `--worktree` of `wujie discuss` and `wujie discussion promote` gives the
//! issue a discussion becomes its own git worktree on `wujie/<key>`, says where it is, and the
//! way to go on runs there.

use std::path::Path;
use std::process::Output;

use wujie_testkit::git_repo::{git, require_repository};
use wujie_testkit::run_output::describe;
use wujie_testkit::*;

fn wujie_in(env: &Env, dir: &Path, args: &[&str]) -> Output {
    let out = env.cmd_in(dir, args).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    out
}

/// `wujie --output json ARGS…` in `dir`: its report, and what it said on stderr.
fn json_in(env: &Env, dir: &Path, args: &[&str]) -> (serde_json::Value, String) {
    let mut json = vec!["--output", "json"];
    json.extend(args);
    let out = wujie_in(env, dir, &json);
    let report = serde_json::from_slice(&out.stdout).unwrap();
    (report, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The key of the issue made last.
fn newest_issue_key(env: &Env) -> String {
    env.json(&["issue", "list"])[0]["key"]
        .as_str()
        .expect("an issue")
        .to_owned()
}

/// The issue's worktree is there, on its branch, and stderr said where.
fn assert_worktree_made(env: &Env, key: &str, stderr: &str) -> std::path::PathBuf {
    let lower = key.to_lowercase();
    let place = env.work.path().join("project.wujie").join(&lower);
    assert_eq!(
        git(&place, &["branch", "--show-current"]),
        format!("wujie/{lower}")
    );
    assert!(
        stderr.contains(&format!(
            "{key} works in {} (branch wujie/{lower}, new, from main)",
            place.display()
        )),
        "{stderr}"
    );
    place
}

#[test]
fn a_discussion_promoted_with_worktree_makes_the_issues_worktree_and_says_to_run_there() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    env.install_example("fake-provider-v2");
    let discuss = [
        "discuss",
        "--worktree",
        "--confirm",
        "accept",
        "--",
        "fake-provider-v2",
        "--script",
    ];

    // As JSON: the report names the worktree.
    let (report, stderr) = json_in(&env, &repo, &discuss);
    let key = report["issue_key"].as_str().expect("promoted").to_owned();
    let place = assert_worktree_made(&env, &key, &stderr);
    assert_eq!(report["worktree"], place.display().to_string());

    // As text: the way to go on is a run in that worktree.
    let out = wujie_in(&env, &repo, &discuss);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let key = newest_issue_key(&env);
    assert_worktree_made(&env, &key, &stderr);
    assert!(
        stderr.contains(&format!(
            "go on in its worktree with `wujie run {key} --worktree -- fake-provider-v2`"
        )),
        "{stderr}"
    );
    // The user's checkout is as it was.
    assert_eq!(git(&repo, &["branch", "--show-current"]), "main");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
}

#[test]
fn discussion_promote_with_worktree_makes_it_too_and_outside_a_repository_is_refused_first() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    env.install_example("fake-provider-v2");
    // Outside a repository, --worktree is refused before any discussion starts.
    let outside = env.work.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    let refused = env
        .cmd()
        .current_dir(&outside)
        .args([
            "discuss",
            "--worktree",
            "--",
            "fake-provider-v2",
            "--script",
        ])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("is not in a git repository"), "{said}");
    assert!(
        env.json(&["discussion", "list"])
            .as_array()
            .unwrap()
            .is_empty()
    );

    // A discussion left open, promoted afterwards with --worktree.
    let (report, _) = json_in(
        &env,
        &repo,
        &[
            "discuss",
            "--confirm",
            "reject",
            "--",
            "fake-provider-v2",
            "--script",
        ],
    );
    let id = report["discussion_id"].as_str().unwrap();
    let out = wujie_in(&env, &repo, &["discussion", "promote", id, "--worktree"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let key = newest_issue_key(&env);
    assert_worktree_made(&env, &key, &String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains(&format!(
            "Continue the work with `wujie run {key} --worktree -- fake-provider-v2`"
        )),
        "{stdout}"
    );
}

#[test]
fn a_discussion_with_worktree_left_open_is_to_be_resumed_or_promoted_with_its_worktree() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    env.install_example("fake-provider-v2");
    let out = wujie_in(
        &env,
        &repo,
        &[
            "discuss",
            "--worktree",
            "--base",
            "main",
            "--confirm",
            "reject",
            "--",
            "fake-provider-v2",
            "--script",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let id = env.json(&["discussion", "list"]).as_array().unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        stderr.contains(&format!(
            "Resume it with `wujie discuss --resume {id} --worktree --base main -- \
             fake-provider-v2`, or turn it into an issue with `wujie discussion promote {id} \
             --worktree --base main`."
        )),
        "{stderr}"
    );
}

#[test]
fn the_run_a_promotion_makes_records_what_the_agent_changes_after_it() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    // Plans while editing one file, hands the plan off, and once accepted writes another.
    let dir = env.plugin(
        "planner",
        V2,
        r##"echo '{"event":"session","session_id":"s1"}'
echo '{"type":"user_input","content":"add notes","source":"t","source_key":"u1"}'
echo drafted > draft.txt
printf '%s\n' '{"type":"plan","content":"# Add notes\n\n- write notes.txt","source":"t","source_key":"p1"}'
echo '{"event":"handoff_ready","request_id":"h1","mode":"current_context"}'
while IFS= read -r line; do case "$line" in *handoff_decision*) break;; esac; done
echo notes > notes.txt
echo '{"type":"final","content":"added notes.txt","source":"t","source_key":"f1"}'"##,
    );
    let manifest = dir.join("provider.json");
    let mut declared: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    declared["capabilities"]["native_plan_handoff"] = true.into();
    std::fs::write(&manifest, declared.to_string()).unwrap();
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    let (report, _) = json_in(
        &env,
        &repo,
        &["discuss", "--confirm", "accept", "--", "planner"],
    );
    let key = report["issue_key"].as_str().expect("promoted");
    let stat = env.ok(&["issue", "diff", key, "--stat"]);
    // What the agent wrote while it planned was before the run: not the run's.
    assert!(
        stat.contains("notes.txt") && !stat.contains("draft.txt"),
        "{stat}"
    );
    let turn = env.ok(&["issue", "diff", key, "--turn", "1"]);
    assert!(turn.contains("+notes"), "{turn}");
}
