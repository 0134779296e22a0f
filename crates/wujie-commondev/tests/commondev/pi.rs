//! Real pi, end to end, through the bundled driver and sidecar, against the mock model server:
//! open, prompt, state, close, re-open resumes the same pi session with its history.
//! Needs pi installed (`scripts/agents/install pi`); skipped only when WUJIE_SKIP_AGENTS lists pi.

use super::common::TestEnv;
use wujie_commondev::registry::shipped_drivers;
use wujie_commondev::{Lifetime, OpenRequest};
use wujie_mockllm::agents::Agent;
use wujie_mockllm::{MockLlm, Reply, Script, Turn, When};

fn turn(user_contains: &str, text: &str) -> Turn {
    Turn {
        when: When {
            user_contains: Some(user_contains.into()),
            ..Default::default()
        },
        reply: Reply {
            text: Some(text.into()),
            ..Default::default()
        },
    }
}

#[tokio::test]
async fn pi_branch_open_prompt_state_close_and_resume() {
    let Some(pi) = Agent::Pi.require() else {
        return;
    };
    let mock = MockLlm::start(Script {
        models: vec![],
        turns: vec![
            turn("first question", "first answer"),
            turn("second question", "second answer"),
        ],
    })
    .await
    .unwrap();

    let mut env = TestEnv::new();
    env.locations.bundled = shipped_drivers();
    // Wujie's own model settings; pi's files are generated from them per branch.
    std::fs::create_dir_all(env.data_dir.join("commondev")).unwrap();
    std::fs::write(
        env.data_dir.join("commondev/llm.json"),
        serde_json::json!({
            "base_url": mock.v1_url(),
            "api": "openai-completions",
            "api_key_env": "WUJIE_TEST_MOCK_KEY",
            "model": "mock-model",
        })
        .to_string(),
    )
    .unwrap();
    // The documented local override: only a driver.json pointing cliPath at this machine's pi;
    // the sidecar still comes from the bundled copy further down the chain.
    let bundled: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(super::common::repo_root().join("runtime/pi/driver.json"))
            .unwrap(),
    )
    .unwrap();
    let mut driver = bundled.clone();
    driver["cliPath"] = pi.display().to_string().into();
    // The key's variable must be set for the sidecar (the mock accepts any key).
    driver["env"]["WUJIE_TEST_MOCK_KEY"] = "mock-key".into();
    std::fs::create_dir_all(env.override_dir("pi")).unwrap();
    std::fs::write(
        env.override_dir("pi").join("driver.json"),
        driver.to_string(),
    )
    .unwrap();

    let request = OpenRequest {
        project: "demo".into(),
        branch: "feat/pi".into(),
        agent_cli: "pi".into(),
        workdir: env.workdir.clone(),
        issue: Some("WUJ-9".into()),
        runtime: None,
        no_worktree: false,
    };
    // One-shot, as the CLI uses it: every call is a fresh sidecar and a fresh pi process.
    let cli = env.sessions(Lifetime::OneShot);
    let opened = cli.open(request.clone()).await.unwrap();
    assert_eq!(
        opened.branch.session_id, "br-demo-feat-pi",
        "label until pi has a session"
    );
    assert_eq!(opened.branch.cli_version.as_deref(), Some("0.73.1"));
    let first = cli
        .prompt("demo", "feat/pi", "first question")
        .await
        .unwrap();
    assert_eq!(first.reply, "first answer");
    let real = first.session_id.clone();
    assert_ne!(real, "br-demo-feat-pi");
    let state = cli.state("demo", "feat/pi").await.unwrap();
    assert_eq!(state.session_id, real);
    assert_eq!(state.messages.len(), 2, "{:?}", state.messages);
    cli.close("demo", "feat/pi").await.unwrap();

    // pi's configuration went to the branch's own directory, never to ~/.pi.
    let branch_dir = env.data_dir.join("commondev/branches/br-demo-feat-pi");
    assert!(branch_dir.join("llm/models.json").is_file());
    assert!(
        branch_dir
            .join("session.pi-sessions")
            .read_dir()
            .unwrap()
            .next()
            .is_some()
    );

    // A long-lived service (the MCP server's mode) re-opens and resumes the same session.
    let server = env.sessions(Lifetime::KeepAlive);
    let reopened = server.open(request).await.unwrap();
    assert!(reopened.resumed);
    assert_eq!(reopened.branch.session_id, real);
    let second = server
        .prompt("demo", "feat/pi", "second question")
        .await
        .unwrap();
    assert_eq!(
        (second.reply.as_str(), second.session_id.as_str()),
        ("second answer", real.as_str())
    );
    let state = server.state("demo", "feat/pi").await.unwrap();
    assert_eq!(
        state.messages.len(),
        4,
        "history of the resumed session: {:?}",
        state.messages
    );
    // A model failure surfaces as an error naming it, not as an empty reply.
    let err = server
        .prompt("demo", "feat/pi", "unscripted")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("pi turn ended with error"), "{err}");
    server.close("demo", "feat/pi").await.unwrap();

    // The model saw the first exchange when answering the second: the context was resumed.
    let last = mock
        .model_requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("second question"))
        .unwrap();
    let body = last.body.to_string();
    assert!(
        body.contains("first question") && body.contains("first answer"),
        "{body}"
    );
    mock.shutdown().await;
}
