//! The ssh runtime against a real sshd on 127.0.0.1 (`super::common::sshd`).

use std::time::Duration;

use super::common::TestEnv;
use super::common::sshd::{TapMkdir, request, require_sshd, ssh_settings, user};
use wujie_commondev::{CommondevError, Lifetime};

#[tokio::test]
async fn sidecar_over_ssh_uses_the_same_driver_and_contract() {
    let mut env = TestEnv::new();
    let Some(sshd) = require_sshd(&env.home.path().join("sshd").tap_mkdir()) else {
        return;
    };
    let remote_root = env.home.path().join("remote");
    env.runtime = ssh_settings(&sshd, "id_good", &remote_root);
    env.install("alpha", "agent");
    let sessions = env.sessions(Lifetime::OneShot);
    let opened = sessions.open(request(&env, &sshd, "r")).await.unwrap();
    assert_eq!(
        opened.branch.runtime,
        format!("ssh://{}@127.0.0.1:{}", user(), sshd.port)
    );
    let real = opened.branch.session_id.clone();
    assert!(real.starts_with("alpha_"), "{opened:?}");
    // --session-name crossed ssh intact (it contains a `/`).
    assert!(
        opened
            .branch
            .cli_version
            .as_deref()
            .unwrap()
            .ends_with("name=X/r")
    );
    let pushed: Vec<_> = std::fs::read_dir(remote_root.join("sidecars"))
        .unwrap()
        .collect();
    assert_eq!(pushed.len(), 1);
    let script = pushed[0].as_ref().unwrap().path().join("sidecar.mjs");
    let first_copy = std::fs::metadata(&script).unwrap().modified().unwrap();

    // A fresh one-shot sidecar resumes the real id: WUJIE_RESUME_SESSION_ID was passed through
    // `env K=V` on the remote command line (ssh forwards no local environment).
    let reply = sessions
        .prompt("X", "r", "over ssh 'quoted' $HOME")
        .await
        .unwrap();
    assert_eq!(
        reply.reply,
        format!("alpha({real}) heard: over ssh 'quoted' $HOME")
    );
    assert_eq!(reply.session_id, real);
    assert_eq!(
        std::fs::metadata(&script).unwrap().modified().unwrap(),
        first_copy,
        "copied once, reused"
    );
    assert!(remote_root.join("branches/br-X-r").is_dir());

    // Long-lived use over ssh, closed cleanly.
    let live = env.sessions(Lifetime::KeepAlive);
    live.open(request(&env, &sshd, "r")).await.unwrap();
    assert_eq!(
        live.prompt("X", "r", "again").await.unwrap().session_id,
        real
    );
    assert!(live.close("X", "r").await.unwrap().sidecar_closed);
}

#[tokio::test]
async fn ssh_without_key_login_fails_fast_and_says_so() {
    let mut env = TestEnv::new();
    let Some(sshd) = require_sshd(&env.home.path().join("sshd").tap_mkdir()) else {
        return;
    };
    env.runtime = ssh_settings(&sshd, "id_other", &env.home.path().join("remote"));
    env.install("alpha", "agent");
    let sessions = env.sessions(Lifetime::OneShot);
    // The deadline only guards against hanging forever on a password prompt.
    let err = tokio::time::timeout(
        Duration::from_secs(120),
        sessions.open(request(&env, &sshd, "k")),
    )
    .await
    .expect("ssh hung instead of failing")
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::Ssh { .. }), "{text}");
    assert!(
        text.contains("key")
            && text.contains("BatchMode=yes")
            && text.contains("Permission denied"),
        "{text}"
    );
}
