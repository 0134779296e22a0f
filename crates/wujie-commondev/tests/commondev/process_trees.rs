//! A sidecar's process tree never outlives its owner: children that moved into a group of their
//! own behind a sidecar that ignores TERM, a call dropped by its owner (a cancelled MCP request,
//! a signal to `wujie`), an owner that panics, and `shutdown` while a call is in flight.

use std::path::Path;
use std::time::Duration;

use super::common::{TestEnv, gone_soon, wait_for_file};
use wujie_commondev::{CommondevError, Lifetime, OpenRequest};

fn open(cli: &str, workdir: &Path) -> OpenRequest {
    OpenRequest {
        project: "p".into(),
        branch: "b".into(),
        agent_cli: cli.into(),
        workdir: workdir.to_path_buf(),
        ..Default::default()
    }
}

async fn pid_in(path: &Path) -> i32 {
    wait_for_file(path).await.trim().parse().unwrap()
}

/// A branch on the misbehaving fixture, opened (its sidecar answers `ping`).
async fn opened(
    env: &TestEnv,
    behaviour: &str,
    lifetime: Lifetime,
) -> wujie_commondev::BranchSessions {
    env.install("misbehaving", "bad");
    std::fs::write(env.workdir.join("behaviour"), behaviour).unwrap();
    let sessions = env.sessions(lifetime);
    sessions.open(open("bad", &env.workdir)).await.unwrap();
    sessions
}

#[tokio::test]
async fn timeout_kills_detached_children_of_a_sidecar_that_ignores_term() {
    let mut env = TestEnv::new();
    env.timeouts.prompt = Duration::from_secs(3);
    let sessions = opened(&env, "detach", Lifetime::KeepAlive).await;
    let err = sessions.prompt("p", "b", "work").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::CallTimeout { .. }), "{text}");
    let grandchild = pid_in(&env.workdir.join("grandchild.pid")).await;
    let sidecar = pid_in(&env.workdir.join("sidecar.pid")).await;
    assert!(gone_soon(sidecar), "sidecar {sidecar} survived");
    assert!(
        gone_soon(grandchild),
        "the detached grandchild {grandchild} (a group of its own) was orphaned"
    );
    assert!(text.contains("process tree was killed"), "{text}");
}

#[tokio::test]
async fn a_dropped_call_stops_the_tree() {
    let env = TestEnv::new();
    let sessions = opened(&env, "detach", Lifetime::KeepAlive).await;
    let grandchild_file = env.workdir.join("grandchild.pid");
    // The owner gives up on the call (what a cancelled MCP request or a signal does).
    tokio::select! {
        _ = sessions.prompt("p", "b", "work") => panic!("the prompt never answers"),
        _ = wait_for_file(&grandchild_file) => {}
    }
    sessions.shutdown().await;
    let grandchild = pid_in(&grandchild_file).await;
    let sidecar = pid_in(&env.workdir.join("sidecar.pid")).await;
    assert!(gone_soon(grandchild), "grandchild {grandchild} orphaned");
    assert!(gone_soon(sidecar), "sidecar {sidecar} survived");
}

#[tokio::test]
async fn shutdown_ends_a_call_in_flight_and_its_tree() {
    let env = TestEnv::new();
    let sessions = std::sync::Arc::new(opened(&env, "hang", Lifetime::KeepAlive).await);
    let call = tokio::spawn({
        let sessions = sessions.clone();
        async move { sessions.prompt("p", "b", "work").await }
    });
    let grandchild = pid_in(&env.workdir.join("grandchild.pid")).await;
    // Before: `shutdown` waited for the branch's lock, held by the call (up to 600 s).
    tokio::time::timeout(Duration::from_secs(60), sessions.shutdown())
        .await
        .expect("shutdown waited for the call instead of ending it");
    let err = call.await.unwrap().unwrap_err();
    assert!(err.to_string().contains("shutting down"), "{err}");
    assert!(gone_soon(grandchild), "grandchild {grandchild} orphaned");
}

#[test]
fn an_owner_that_panics_stops_the_tree() {
    let env = TestEnv::new();
    let grandchild_file = env.workdir.join("grandchild.pid");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let panicked = runtime.block_on(async {
        let sessions = opened(&env, "detach", Lifetime::KeepAlive).await;
        let owner = tokio::spawn(async move {
            tokio::select! {
                _ = sessions.prompt("p", "b", "work") => {}
                _ = wait_for_file(&grandchild_file) => panic!("the owner panics mid-call"),
            }
        });
        owner.await.unwrap_err().is_panic()
    });
    assert!(panicked);
    drop(runtime);
    let grandchild: i32 = std::fs::read_to_string(env.workdir.join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let sidecar: i32 = std::fs::read_to_string(env.workdir.join("sidecar.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(gone_soon(grandchild), "grandchild {grandchild} orphaned");
    assert!(gone_soon(sidecar), "sidecar {sidecar} survived");
}
