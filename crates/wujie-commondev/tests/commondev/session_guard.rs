//! The session guard: a sidecar that reports no usable session id, or answers a request that is
//! not pending, is stopped at once with an error that says so.

use std::time::Duration;

use super::common::{TestEnv, gone_soon, wait_for_file};
use wujie_commondev::{CommondevError, Lifetime, OpenRequest};

fn open(env: &TestEnv) -> OpenRequest {
    OpenRequest {
        project: "p".into(),
        branch: "b".into(),
        agent_cli: "bad".into(),
        workdir: env.workdir.clone(),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_blank_session_id_on_the_first_turn_is_refused() {
    let env = TestEnv::new();
    env.install("misbehaving", "bad");
    std::fs::write(env.workdir.join("behaviour"), "blank").unwrap();
    let sessions = env.sessions(Lifetime::KeepAlive);
    sessions.open(open(&env)).await.unwrap();
    let err = sessions.prompt("p", "b", "one").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::BadResult { .. }), "{text}");
    assert!(text.contains("session_id is \"\""), "{text}");
    // Nothing was adopted: a later turn's session cannot pass for the first one's.
    assert_eq!(sessions.list().unwrap()[0].real_session_id, None);
    sessions.shutdown().await;
}

#[tokio::test]
async fn an_answer_to_another_request_is_a_protocol_error_at_once() {
    let mut env = TestEnv::new();
    // Longer than the test may take: before, the stray answer was dropped and the call waited
    // for this timeout.
    env.timeouts.prompt = Duration::from_secs(120);
    env.install("misbehaving", "bad");
    std::fs::write(env.workdir.join("behaviour"), "wrongid").unwrap();
    let sessions = env.sessions(Lifetime::KeepAlive);
    sessions.open(open(&env)).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(60), sessions.prompt("p", "b", "one"))
        .await
        .expect("the stray answer was ignored")
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::Protocol { .. }), "{text}");
    assert!(
        text.contains("request id 102") && text.contains("id 2"),
        "{text}"
    );
    let sidecar: i32 = wait_for_file(&env.workdir.join("sidecar.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(gone_soon(sidecar), "the broken sidecar {sidecar} was kept");
}

#[tokio::test]
async fn a_sidecar_that_forgets_the_real_id_is_told_where_to_find_it() {
    let env = TestEnv::new();
    env.install("forgetful", "bad");
    let sessions = env.sessions(Lifetime::OneShot);
    sessions.open(open(&env)).await.unwrap();
    let first = sessions.prompt("p", "b", "one").await.unwrap();
    assert!(first.session_id.starts_with("sess_"), "{first:?}");
    // A new one-shot sidecar: its memory is empty, so its `ping` reports the label.
    let err = sessions.prompt("p", "b", "two").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::Drift { .. }), "{text}");
    assert!(
        text.contains("WUJIE_RESUME_SESSION_ID") && text.contains("did not resume"),
        "{text}"
    );
}
