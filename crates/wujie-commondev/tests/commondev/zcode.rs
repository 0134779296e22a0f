//! The ZCode example (examples/custom-cli/zcode) against a fake ZCode CLI that records its real
//! argv: judged by what the CLI actually received, not by matching the sidecar's source text.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::common::{TestEnv, fixtures, gone_soon, repo_root, wait_for_file};
use wujie_commondev::{CommondevError, Lifetime, OpenRequest};

/// Installs the example as the local override, with `cliPath` pointed at `cli` and the fake's
/// argv log declared in the driver's env.
fn install_zcode(env: &TestEnv, cli: &Path) -> PathBuf {
    let example = repo_root().join("examples/custom-cli/zcode");
    let dir = env.override_dir("zcode");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(example.join("sidecar.mjs"), dir.join("sidecar.mjs")).unwrap();
    let mut driver: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example.join("driver.json")).unwrap())
            .unwrap();
    driver["cliPath"] = cli.display().to_string().into();
    driver["env"]["FAKE_ZCODE_ARGV_LOG"] = "{workdir}/argv.jsonl".into();
    std::fs::write(dir.join("driver.json"), driver.to_string()).unwrap();
    dir
}

fn open(env: &TestEnv) -> OpenRequest {
    OpenRequest {
        project: "X".into(),
        branch: "feat/a".into(),
        agent_cli: "zcode".into(),
        workdir: env.workdir.clone(),
        issue: Some("WUJ-7".into()),
        runtime: None,
        no_worktree: false,
    }
}

fn argv_log(env: &TestEnv) -> Vec<Vec<String>> {
    std::fs::read_to_string(env.workdir.join("argv.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn flag<'a>(argv: &'a [String], name: &str) -> Option<&'a str> {
    argv.iter()
        .position(|a| a == name)
        .and_then(|i| argv.get(i + 1))
        .map(String::as_str)
}

#[tokio::test]
async fn first_turn_never_resumes_and_later_turns_resume_only_the_real_id() {
    let env = TestEnv::new();
    install_zcode(&env, &fixtures().join("fake-zcode/zcode.cjs"));
    // One-shot, like the CLI: every call is a fresh sidecar process.
    let sessions = env.sessions(Lifetime::OneShot);
    let opened = sessions.open(open(&env)).await.unwrap();
    assert_eq!(opened.branch.label, "br-X-feat-a");
    assert_eq!(opened.branch.session_id, "br-X-feat-a");
    assert_eq!(opened.branch.issue.as_deref(), Some("WUJ-7"));

    let first = sessions.prompt("X", "feat/a", "one").await.unwrap();
    assert_eq!(first.reply, "zcode says: one");
    assert!(first.session_id.starts_with("sess_"), "{first:?}");
    let second = sessions.prompt("X", "feat/a", "two").await.unwrap();
    assert_eq!(second.session_id, first.session_id);

    // A restart: a new service over the same data dir resumes the persisted real id.
    let restarted = env.sessions(Lifetime::KeepAlive);
    restarted.open(open(&env)).await.unwrap();
    let third = restarted.prompt("X", "feat/a", "three").await.unwrap();
    assert_eq!(third.session_id, first.session_id);
    let state = restarted.state("X", "feat/a").await.unwrap();
    assert_eq!(state.messages.len(), 6);
    restarted.close("X", "feat/a").await.unwrap();

    let runs = argv_log(&env);
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(
        flag(&runs[0], "--resume"),
        None,
        "first turn must not resume: {:?}",
        runs[0]
    );
    for run in &runs[1..] {
        assert_eq!(
            flag(run, "--resume"),
            Some(first.session_id.as_str()),
            "{run:?}"
        );
    }
    for run in &runs {
        assert!(
            !run.iter().any(|a| a.contains("br-X")),
            "the label reached the CLI: {run:?}"
        );
        assert!(!run.iter().any(|a| a == "--session-name"), "{run:?}");
        assert_eq!(flag(run, "--mode"), Some("guarded"));
        assert_eq!(flag(run, "--output-format"), Some("stream-json"));
        assert_eq!(flag(run, "--cwd"), Some(env.workdir.to_str().unwrap()));
    }
}

#[tokio::test]
async fn missing_cli_path_lists_the_places_looked_at() {
    let env = TestEnv::new();
    let missing = env.home.path().join("nowhere/zcode.cjs");
    let dir = install_zcode(&env, &missing);
    // A declared cliPath is checked by the core, before any sidecar starts.
    let err = env
        .sessions(Lifetime::OneShot)
        .open(open(&env))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::CliNotFound { .. }), "{text}");
    assert!(text.contains(&missing.display().to_string()), "{text}");
    assert!(
        text.contains(&format!(
            "`cliPath` in {}",
            dir.join("driver.json").display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "local override {}",
            dir.join("driver.json").display()
        )),
        "{text}"
    );
    assert!(!env.workdir.join("argv.jsonl").exists(), "nothing ran");

    // Without a declared cliPath the sidecar looks for the CLI itself and lists its places.
    let mut driver: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("driver.json")).unwrap()).unwrap();
    driver.as_object_mut().unwrap().remove("cliPath");
    std::fs::write(dir.join("driver.json"), driver.to_string()).unwrap();
    let err = env
        .sessions(Lifetime::OneShot)
        .open(open(&env))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::Rpc { .. }), "{text}");
    assert!(
        text.contains("ZCODE_CLI") && text.contains("PATH"),
        "{text}"
    );
    assert!(!text.contains("MODULE_NOT_FOUND"), "{text}");
}

#[tokio::test]
async fn timeout_kills_the_cli_and_its_tool_subprocess() {
    let mut env = TestEnv::new();
    env.timeouts.prompt = Duration::from_secs(3);
    install_zcode(&env, &fixtures().join("fake-zcode/zcode.cjs"));
    let sessions = env.sessions(Lifetime::KeepAlive);
    sessions.open(open(&env)).await.unwrap();
    let pid_file = env.workdir.join("tool.pid");
    let err = sessions
        .prompt(
            "X",
            "feat/a",
            &format!("spawn-sleep:{}", pid_file.display()),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, CommondevError::CallTimeout { .. }), "{err}");
    let grandchild: i32 = wait_for_file(&pid_file).await.trim().parse().unwrap();
    assert!(
        gone_soon(grandchild),
        "the CLI's `sleep` {grandchild} was orphaned"
    );
}
