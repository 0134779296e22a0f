//! `wujie branch …` with an issue: each prompt and its reply land on the issue as a local run.

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
