//! `wujie run KEY --worktree`: each issue's agent works in a worktree of its own on branch
//! `wujie/<key>`, in parallel with others, without touching the user's checkout; `wujie worktree
//! list | remove` look after them.

use std::path::Path;
use std::process::{Output, Stdio};

use super::git_changes::{paths, wait_first_turn_stored};
use wujie_testkit::git_repo::{applied_on, git, require_repository};
use wujie_testkit::run_output::describe;
use wujie_testkit::*;

/// An agent that writes the issue's note in its working directory, commits it, leaves one more
/// file uncommitted, and waits until both runs have started (so that they really run at once);
/// when the other never starts, it fails after a minute saying so, rather than wait for ever.
fn agent(env: &Env) -> String {
    let gate = env.work.path().join("gate");
    format!(
        r#"touch "{gate}.$WUJIE_RUN_ID"
waited=0
while [ "$(ls "{dir}" | grep -c '^gate\.')" -lt 2 ]; do
  waited=$((waited + 1))
  if [ $waited -gt 1200 ]; then echo "the other run never started" >&2; exit 1; fi
  sleep 0.05
done
echo "worked on $WUJIE_RUN_ID" > note.txt
git add note.txt && git commit -q -m "Note"
echo draft > draft.txt
echo '{}'"#,
        msg("final", "done", "f"),
        gate = gate.display(),
        dir = env.work.path().display(),
    )
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", describe(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn two_issues_run_in_worktrees_of_their_own_at_once_and_leave_the_checkout_alone() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    let plugin = env.plugin("noter", V1, &agent(&env));
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let (a, b) = (env.create_issue("first"), env.create_issue("second"));

    let spawn = |key: &str| {
        env.cmd_in(&repo, &["run", key, "--worktree", "--", "noter"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (run_a, run_b) = (spawn(&a), spawn(&b));
    let (out_a, out_b) = (
        run_a.wait_with_output().unwrap(),
        run_b.wait_with_output().unwrap(),
    );
    for (key, out) in [(&a, &out_a), (&b, &out_b)] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let place = env
            .work
            .path()
            .join("project.wujie")
            .join(key.to_lowercase());
        assert!(
            stderr.contains(&format!(
                "{key} works in {} (branch wujie/{}, new, from main)",
                place.display(),
                key.to_lowercase()
            )),
            "{stderr}"
        );
        // Each worktree holds its own issue's commit and draft, on its own branch.
        let branch = format!("wujie/{}", key.to_lowercase());
        assert_eq!(git(&place, &["branch", "--show-current"]), branch);
        assert_eq!(git(&place, &["log", "-1", "--format=%s"]), "Note");
        assert!(place.join("draft.txt").exists());
    }
    // Each run says where it worked.
    for key in [&a, &b] {
        let place = env
            .work
            .path()
            .join("project.wujie")
            .join(key.to_lowercase());
        let run = &env.issue(key)["runs"][0];
        assert_eq!(run["git"]["worktree"], place.display().to_string(), "{run}");
        assert_eq!(
            run["git"]["branch"],
            format!("wujie/{}", key.to_lowercase())
        );
    }
    // The runs' notes differ: neither agent wrote into the other's worktree.
    let note = |key: &str| {
        std::fs::read_to_string(
            env.work
                .path()
                .join("project.wujie")
                .join(key.to_lowercase())
                .join("note.txt"),
        )
        .unwrap()
    };
    assert_ne!(note(&a), note(&b));
    // The user's checkout: still on main, at its commit, with nothing new.
    assert_eq!(git(&repo, &["branch", "--show-current"]), "main");
    assert_eq!(git(&repo, &["log", "-1", "--format=%s"]), "base");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");

    // Listed, with their uncommitted files and how far ahead of main they are.
    let listed = ok(env
        .cmd_in(&repo, &["worktree", "list", "--output", "json"])
        .output()
        .unwrap());
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    let rows: Vec<(String, u64, u64, u64)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["issue"].as_str().unwrap().to_owned(),
                w["uncommitted_files"].as_u64().unwrap(),
                w["ahead"].as_u64().unwrap(),
                w["behind"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, [(a.clone(), 1, 1, 0), (b.clone(), 1, 1, 0)]);

    // A second run on an issue reuses its worktree.
    let again = env
        .cmd_in(&repo, &["run", &a, "--worktree", "--", "noter"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{said}");
    assert!(
        said.contains(&format!("(branch wujie/{}, reused)", a.to_lowercase())),
        "{said}"
    );
    // It is measured from its own start: the first run's commit and draft are not its work.
    let runs = env.issue(&a)["runs"].as_array().unwrap().clone();
    let second = &runs.last().unwrap()["git"];
    assert_eq!(paths(second), ["note.txt"], "{second}");
    assert_eq!(second["commits"].as_array().unwrap().len(), 1, "{second}");
    assert_eq!(
        second["base_commit"], runs[0]["git"]["head_commit"],
        "its base is where the first run left the branch"
    );

    // Removing one with uncommitted work is refused, then forced; its branch is kept.
    let refused = env
        .cmd_in(&repo, &["worktree", "remove", &a])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("1 uncommitted files") && said.contains("--force"),
        "{said}"
    );
    ok(env
        .cmd_in(&repo, &["worktree", "remove", &a, "--force"])
        .output()
        .unwrap());
    let branch_a = format!("wujie/{}", a.to_lowercase());
    assert_eq!(
        git(&repo, &["branch", "--list", &branch_a]).trim_start_matches("* "),
        branch_a
    );
    // With --delete-branch the branch goes too.
    git(
        &env.work.path().join("project.wujie").join(b.to_lowercase()),
        &["stash", "-u", "-q"],
    );
    ok(env
        .cmd_in(&repo, &["worktree", "remove", &b, "--delete-branch"])
        .output()
        .unwrap());
    let branch_b = format!("wujie/{}", b.to_lowercase());
    assert_eq!(git(&repo, &["branch", "--list", &branch_b]), "");
}

#[test]
fn a_worktree_switched_to_another_branch_by_hand_is_reported_not_lost() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    let plugin = env.plugin("quiet", V1, &format!("echo '{}'", msg("final", "ok", "f")));
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("switched");
    let dirs = env.work.path().join("elsewhere");
    let mut first = env.cmd_in(&repo, &["run", &key, "--worktree", "--", "quiet"]);
    first.env("WUJIE_WORKTREES_DIR", &dirs);
    ok(first.output().unwrap());
    let place = dirs.join(key.to_lowercase());
    git(&place, &["switch", "-q", "-c", "mine"]);

    let mut again = env.cmd_in(&repo, &["run", &key, "--worktree", "--", "quiet"]);
    again.env("WUJIE_WORKTREES_DIR", &dirs);
    let out = again.output().unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("branch mine is checked out there now") && said.contains("git -C"),
        "{said}"
    );
    let mut list = env.cmd_in(&repo, &["worktree", "list"]);
    list.env("WUJIE_WORKTREES_DIR", &dirs);
    let table = ok(list.output().unwrap());
    assert!(table.contains("mine (switched by hand)"), "{table}");
}

/// An agent in an issue's worktree that commits an edit in its first turn; then (once the file
/// `go` exists) `main` gains a file in the main checkout, the agent merges `main` into its
/// branch and adds a file of its own in its second turn.
fn merging_agent(repo: &Path, go: &Path) -> String {
    format!(
        "printf 'one\\nTWO\\n' > edit.txt\n\
         git commit -q -am 'Agent edit'\n\
         echo '{}'\n\
         while [ ! -e '{go}' ]; do sleep 0.05; done\n\
         echo landed > '{repo}/main.txt'\n\
         git -C '{repo}' add main.txt && git -C '{repo}' commit -q -m 'Main work'\n\
         git merge -q --no-edit main\n\
         echo mine > agent.txt\n\
         echo '{}'",
        msg("final", "first turn done", "f1"),
        msg("final", "second turn done", "f2"),
        go = go.display(),
        repo = repo.display(),
    )
}

#[test]
fn a_worktree_run_that_merges_its_base_is_not_credited_with_the_bases_work() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    let go = env.work.path().join("go");
    let plugin = env.plugin("merger", V1, &merging_agent(&repo, &go));
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("merge the base");
    let run = env
        .cmd_in(&repo, &["run", &key, "--worktree", "--", "merger"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The base moves once the first turn's snapshot is stored.
    wait_first_turn_stored(&env, &key);
    std::fs::write(&go, "").unwrap();
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let place = env
        .work
        .path()
        .join("project.wujie")
        .join(key.to_lowercase());
    assert!(place.join("main.txt").exists(), "main was merged in");

    // The run's files and commits are the agent's alone.
    let run_git = &env.issue(&key)["runs"][0]["git"];
    assert_eq!(paths(run_git), ["agent.txt", "edit.txt"], "{run_git}");
    let subjects: Vec<&str> = run_git["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert!(subjects.contains(&"Agent edit"), "{subjects:?}");
    assert!(!subjects.contains(&"Main work"), "{subjects:?}");
    let diff = env.json(&["issue", "diff", &key]);
    assert_eq!(paths(&diff), ["agent.txt", "edit.txt"], "{diff}");
    // So is the second turn, in which the merge happened.
    let second = env.json(&["issue", "diff", &key, "--turn", "2"]);
    assert_eq!(paths(&second), ["agent.txt"], "{second}");

    // The patch applies on the base as it is now (the run's base with main's work merged in)
    // and gives the worktree's files.
    let patch = env.ok(&["issue", "diff", &key]);
    let applied = applied_on(&env, &repo, "main", &patch);
    for file in ["agent.txt", "edit.txt", "main.txt"] {
        assert_eq!(
            std::fs::read_to_string(applied.join(file)).unwrap(),
            std::fs::read_to_string(place.join(file)).unwrap(),
            "{file}"
        );
    }
}
