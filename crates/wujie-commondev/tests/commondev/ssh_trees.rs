//! Over ssh, a sidecar's tool processes on the host die with the branch: a second ssh command
//! stops the remote sidecar's process group, and the message says what was checked.

use std::time::Duration;

use super::common::sshd::{TapMkdir, request, require_sshd, ssh_settings};
use super::common::{TestEnv, gone_soon, wait_for_file};
use wujie_commondev::{CommondevError, Lifetime};

#[tokio::test]
async fn a_timeout_over_ssh_kills_the_remote_tree() {
    let mut env = TestEnv::new();
    let Some(sshd) = require_sshd(&env.home.path().join("sshd").tap_mkdir()) else {
        return;
    };
    env.runtime = ssh_settings(&sshd, "id_good", &env.home.path().join("remote"));
    env.timeouts.prompt = Duration::from_secs(5);
    env.install("misbehaving", "agent");
    std::fs::write(env.workdir.join("behaviour"), "hang").unwrap();
    let sessions = env.sessions(Lifetime::KeepAlive);
    sessions.open(request(&env, &sshd, "t")).await.unwrap();
    let err = sessions.prompt("X", "t", "work").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::CallTimeout { .. }), "{text}");
    // The host is this machine, so its processes can be checked from here.
    let grandchild: i32 = wait_for_file(&env.workdir.join("grandchild.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    let sidecar: i32 = wait_for_file(&env.workdir.join("sidecar.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(gone_soon(sidecar), "remote sidecar {sidecar} survived");
    assert!(
        gone_soon(grandchild),
        "remote tool process {grandchild} survived"
    );
    assert!(text.contains("process tree was killed"), "{text}");
}

#[tokio::test]
async fn a_call_dropped_over_ssh_stops_the_remote_tree() {
    let mut env = TestEnv::new();
    let Some(sshd) = require_sshd(&env.home.path().join("sshd").tap_mkdir()) else {
        return;
    };
    env.runtime = ssh_settings(&sshd, "id_good", &env.home.path().join("remote"));
    env.install("misbehaving", "agent");
    std::fs::write(env.workdir.join("behaviour"), "detach").unwrap();
    let sessions = env.sessions(Lifetime::KeepAlive);
    sessions.open(request(&env, &sshd, "d")).await.unwrap();
    let grandchild_file = env.workdir.join("grandchild.pid");
    tokio::select! {
        _ = sessions.prompt("X", "d", "work") => panic!("the prompt never answers"),
        _ = wait_for_file(&grandchild_file) => {}
    }
    sessions.shutdown().await;
    let grandchild: i32 = wait_for_file(&grandchild_file)
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(
        gone_soon(grandchild),
        "detached remote process {grandchild} survived"
    );
}
