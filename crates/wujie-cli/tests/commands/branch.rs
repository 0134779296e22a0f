//! `wujie branch …` with an issue: each prompt and its reply land on the issue as a local run.

use wujie_testkit::git_repo::{git, require_repository};
use wujie_testkit::*;

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn branch_turns_are_reported_on_the_issue() {
    let env = Env::new();
    // A fake backend from commondev's fixtures, installed as a local driver override.
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../wujie-commondev/tests/fixtures/drivers/alpha");
    copy_dir(
        &fixture,
        &env.home.path().join("data/commondev/runtime/alpha"),
    );
    let key = env.create_issue("delegate to a branch");
    let workdir = env.work.path().to_str().unwrap();

    let opened = env.json(&[
        "branch",
        "open",
        "--project",
        "shop",
        "--branch",
        "feat/a",
        "--agent-cli",
        "alpha",
        "--workdir",
        workdir,
        "--issue",
        &key,
    ]);
    assert_eq!(opened["issue"], key.as_str(), "{opened}");
    let reply = env.json(&[
        "branch",
        "prompt",
        "--project",
        "shop",
        "--branch",
        "feat/a",
        "add a cart",
    ]);
    let reply_text = reply["reply"].as_str().unwrap().to_owned();
    assert!(reply_text.contains("heard: add a cart"), "{reply}");

    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "alpha");
    assert_eq!(run["status"], "succeeded");
    let messages = run["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{run}");
    assert_eq!(messages[0]["type"], "user_input");
    assert_eq!(messages[0]["content"], "add a cart");
    assert_eq!(messages[1]["type"], "final");
    assert_eq!(messages[1]["content"], reply_text.as_str());
    assert!(
        messages[0]["source"]
            .as_str()
            .unwrap()
            .starts_with("br-shop-feat"),
        "{run}"
    );

    // A branch without an issue reports nothing.
    env.ok(&[
        "branch",
        "open",
        "--project",
        "shop",
        "--branch",
        "feat/b",
        "--agent-cli",
        "alpha",
        "--workdir",
        workdir,
    ]);
    env.ok(&[
        "branch",
        "prompt",
        "--project",
        "shop",
        "--branch",
        "feat/b",
        "quiet",
    ]);
    assert_eq!(env.issue(&key)["runs"].as_array().unwrap().len(), 1);
}

/// A driver "writer" whose CLI does what it is told in its working directory: `write NAME
/// TEXT` writes a file there. Its sidecar is the alpha fixture's.
fn install_writer(env: &Env) {
    let dir = env.home.path().join("data/commondev/runtime/writer");
    std::fs::create_dir_all(&dir).unwrap();
    let alpha = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../wujie-commondev/tests/fixtures/drivers/alpha/sidecar.mjs");
    std::fs::copy(alpha, dir.join("sidecar.mjs")).unwrap();
    std::fs::write(
        dir.join("driver.json"),
        r#"{"name": "writer", "script": "sidecar.mjs", "node": "auto", "llmConfig": "none",
            "args": ["--cli", "{pluginDir}/writer-cli.mjs"]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("writer-cli.mjs"),
        r#"import { writeFileSync } from "node:fs";
const [, text] = process.argv.slice(2);
const [verb, name, ...rest] = text.split(" ");
if (verb === "write") writeFileSync(name, rest.join(" ") + "\n");
process.stdout.write(`did ${text} in ${process.cwd()}\n`);
"#,
    )
    .unwrap();
}

/// `wujie branch open` of branch `branch` of project shop, driven by writer, on `repo`.
fn open_args<'a>(repo: &'a std::path::Path, branch: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "branch",
        "open",
        "--project",
        "shop",
        "--branch",
        branch,
        "--agent-cli",
        "writer",
        "--workdir",
        repo.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args
}

fn open_branch(
    env: &Env,
    repo: &std::path::Path,
    branch: &str,
    extra: &[&str],
) -> serde_json::Value {
    env.json(&open_args(repo, branch, extra))
}

fn prompt(env: &Env, branch: &str, text: &str) -> String {
    let reply = env.json(&[
        "branch",
        "prompt",
        "--project",
        "shop",
        "--branch",
        branch,
        text,
    ]);
    reply["reply"].as_str().unwrap().to_owned()
}

/// The paths a run's `git` object lists as changed.
fn changed_files(run: &serde_json::Value) -> Vec<String> {
    run["git"]["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files in {run}"))
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f["status"].as_str().unwrap(),
                f["path"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_branch_in_a_git_repository_works_in_its_own_worktree_and_each_turn_carries_its_diff() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    install_writer(&env);
    // The user's own uncommitted work in their checkout: never the agent's.
    std::fs::write(repo.join("user.txt"), "mine, edited\n").unwrap();
    let key = env.create_issue("a cart, on a branch");

    let opened = open_branch(&env, &repo, "feat/cart", &["--issue", &key]);
    let worktree = env
        .work
        .path()
        .join("project.wujie/branches/br-shop-feat-cart");
    assert_eq!(
        opened["worktree"]["path"],
        worktree.to_str().unwrap(),
        "{opened}"
    );
    assert_eq!(opened["worktree"]["branch"], "feat/cart");
    assert_eq!(opened["worktree"]["created"], true);
    assert_eq!(opened["workdir"], worktree.to_str().unwrap());

    let reply = prompt(&env, "feat/cart", "write cart.txt a cart");
    assert!(reply.contains(worktree.to_str().unwrap()), "{reply}");
    assert_eq!(
        std::fs::read_to_string(worktree.join("cart.txt")).unwrap(),
        "a cart\n"
    );
    prompt(&env, "feat/cart", "write shipping.txt by boat");

    let issue = env.issue(&key);
    let runs = issue["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{issue}");
    // Each turn's run holds what that turn changed, and only that.
    assert_eq!(changed_files(&runs[0]), ["added cart.txt"], "{}", runs[0]);
    assert_eq!(
        changed_files(&runs[1]),
        ["added shipping.txt"],
        "{}",
        runs[1]
    );
    assert_eq!(runs[0]["git"]["branch"], "feat/cart");
    assert_eq!(runs[0]["git"]["worktree"], worktree.to_str().unwrap());
    let diff = env.ok(&[
        "issue",
        "diff",
        &key,
        "--run",
        runs[1]["id"].as_str().unwrap(),
    ]);
    assert!(diff.contains("+by boat"), "{diff}");

    // The user's checkout, index and branch are as they were.
    assert_eq!(git(&repo, &["status", "--porcelain"]), "M user.txt");
    assert_eq!(git(&repo, &["branch", "--show-current"]), "main");
    assert!(!repo.join("cart.txt").exists());

    // Opened again: the same worktree, reused.
    let again = open_branch(&env, &repo, "feat/cart", &[]);
    assert_eq!(again["worktree"]["created"], false, "{again}");
    assert_eq!(again["workdir"], worktree.to_str().unwrap());

    // Asked not to, a branch works in the checkout itself.
    let plain = open_branch(&env, &repo, "feat/plain", &["--no-worktree"]);
    assert!(plain["worktree"].is_null(), "{plain}");
    assert_eq!(plain["workdir"], repo.to_str().unwrap());
}

#[test]
fn a_branch_whose_worktree_was_switched_by_hand_is_refused_with_the_way_back() {
    let env = Env::new();
    let Some(repo) = require_repository(&env) else {
        return;
    };
    install_writer(&env);
    let opened = open_branch(&env, &repo, "feat/cart", &[]);
    let worktree = std::path::PathBuf::from(opened["worktree"]["path"].as_str().unwrap());
    git(&worktree, &["switch", "-q", "-c", "elsewhere"]);

    let out = env.fails(&open_args(&repo, "feat/cart", &[]));
    assert!(
        out.contains("cannot give branch feat/cart a worktree of its own")
            && out.contains("elsewhere")
            && out.contains("git -C"),
        "{out}"
    );
}
