//! ssh failures say what happened and what to do, told apart by ssh's exit status and stderr:
//! an unknown host key, nothing listening on the port, a host without scp/sftp.

use std::time::Duration;

use super::common::TestEnv;
use super::common::sshd::{TapMkdir, request, require_sshd, require_sshd_with, ssh_settings};
use wujie_commondev::{CommondevError, Lifetime, OpenRequest};

async fn open_error(env: &TestEnv, request: OpenRequest) -> String {
    let sessions = env.sessions(Lifetime::OneShot);
    // The deadline only guards against hanging forever.
    let err = tokio::time::timeout(Duration::from_secs(120), sessions.open(request))
        .await
        .expect("ssh hung instead of failing")
        .unwrap_err();
    assert!(matches!(err, CommondevError::Ssh { .. }), "{err}");
    err.to_string()
}

#[tokio::test]
async fn an_unknown_host_key_is_named_with_its_fix() {
    let mut env = TestEnv::new();
    let Some(sshd) = require_sshd(&env.home.path().join("sshd").tap_mkdir()) else {
        return;
    };
    env.runtime = ssh_settings(&sshd, "id_good", &env.home.path().join("remote"));
    for option in &mut env.runtime.ssh_options {
        if option == "StrictHostKeyChecking=accept-new" {
            *option = "StrictHostKeyChecking=yes".into();
        }
    }
    env.install("alpha", "agent");
    let text = open_error(&env, request(&env, &sshd, "h")).await;
    assert!(
        text.contains("known_hosts") && text.contains("ssh-keyscan"),
        "{text}"
    );
    assert!(!text.contains("ssh-copy-id"), "{text}");
}

#[tokio::test]
async fn a_closed_port_says_sshd_is_not_listening() {
    let mut env = TestEnv::new();
    let Some(sshd) = require_sshd(&env.home.path().join("sshd").tap_mkdir()) else {
        return;
    };
    env.runtime = ssh_settings(&sshd, "id_good", &env.home.path().join("remote"));
    env.install("alpha", "agent");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut req = request(&env, &sshd, "c");
    req.runtime = Some(
        req.runtime
            .unwrap()
            .replace(&sshd.port.to_string(), &closed.to_string()),
    );
    let text = open_error(&env, req).await;
    assert!(
        text.contains("sshd is running") && text.contains(&format!("port {closed}")),
        "{text}"
    );
    assert!(!text.contains("ssh-copy-id"), "{text}");
}

#[tokio::test]
async fn a_host_without_scp_or_sftp_is_named() {
    let mut env = TestEnv::new();
    let Some(sshd) = require_sshd_with(&env.home.path().join("sshd").tap_mkdir(), false) else {
        return;
    };
    env.runtime = ssh_settings(&sshd, "id_good", &env.home.path().join("remote"));
    env.install("alpha", "agent");
    let text = open_error(&env, request(&env, &sshd, "s")).await;
    assert!(text.contains("sftp") && text.contains("scp"), "{text}");
    assert!(!text.contains("ssh-copy-id"), "{text}");
}

#[tokio::test]
async fn a_declared_cli_path_missing_on_the_host_is_named() {
    let mut env = TestEnv::new();
    let Some(sshd) = require_sshd(&env.home.path().join("sshd").tap_mkdir()) else {
        return;
    };
    env.runtime = ssh_settings(&sshd, "id_good", &env.home.path().join("remote"));
    let dir = env.install("alpha", "agent");
    let missing = env.home.path().join("not/on/the/host/cli.mjs");
    let mut driver: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("driver.json")).unwrap()).unwrap();
    driver["cliPath"] = missing.display().to_string().into();
    std::fs::write(dir.join("driver.json"), driver.to_string()).unwrap();
    let sessions = env.sessions(Lifetime::OneShot);
    let err = sessions.open(request(&env, &sshd, "p")).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::CliNotFound { .. }), "{text}");
    let host = format!("on {}@127.0.0.1", super::common::sshd::user());
    assert!(
        text.contains(&missing.display().to_string()) && text.contains(&host),
        "{text}"
    );
}
