//! `wujie branch` messages: an error is printed once, and every flag has help text.

use wujie_testkit::*;

#[test]
fn an_invalid_driver_is_reported_once() {
    let env = Env::new();
    let dir = env.home.path().join("data/commondev/runtime/broken");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("driver.json"), r#"{"name": "broken"}"#).unwrap();
    let err = env.fails(&[
        "branch",
        "open",
        "--project",
        "p",
        "--branch",
        "b",
        "--agent-cli",
        "broken",
        "--workdir",
        env.work.path().to_str().unwrap(),
    ]);
    // `invalid driver <dir>/driver.json (edit that file): <reason>`
    let reason = err
        .split_once("driver.json (edit that file): ")
        .map(|(_, reason)| reason.trim().to_owned())
        .filter(|reason| !reason.is_empty())
        .unwrap_or_else(|| panic!("unexpected message: {err}"));
    assert_eq!(err.matches(reason.as_str()).count(), 1, "{err}");
}

#[test]
fn project_and_branch_have_help_text() {
    let env = Env::new();
    for command in ["open", "prompt", "state", "close"] {
        let help = env.ok(&["branch", command, "--help"]);
        assert!(
            help.contains("Project the branch belongs to"),
            "{command}: {help}"
        );
        assert!(
            help.contains("Branch name within the project"),
            "{command}: {help}"
        );
    }
}
