//! What `open` tells the user about the driver it took: the sidecar script (and a note when it
//! came from a later link of the lookup chain), a `name` that differs from the directory, and
//! an error's stderr tail holding only the current sidecar run's lines.

use std::time::Duration;

use super::common::{TestEnv, copy_dir, fixtures};
use wujie_commondev::{Lifetime, OpenRequest};

fn open(env: &TestEnv, cli: &str) -> OpenRequest {
    OpenRequest {
        project: "p".into(),
        branch: "b".into(),
        agent_cli: cli.into(),
        workdir: env.workdir.clone(),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_script_from_a_later_link_is_named() {
    let mut env = TestEnv::new();
    let installed = env.home.path().join("install/runtime");
    env.locations.installed_root = Some(installed.clone());
    copy_dir(&fixtures().join("drivers/alpha"), &installed.join("alpha"));
    // The local override holds only a driver.json (and the CLI its {pluginDir} names).
    let local = env.override_dir("alpha");
    std::fs::create_dir_all(&local).unwrap();
    for file in ["driver.json", "alpha-cli.mjs"] {
        std::fs::copy(
            fixtures().join("drivers/alpha").join(file),
            local.join(file),
        )
        .unwrap();
    }
    let opened = env
        .sessions(Lifetime::OneShot)
        .open(open(&env, "alpha"))
        .await
        .unwrap();
    assert_eq!(opened.sidecar_script, installed.join("alpha/sidecar.mjs"));
    assert_eq!(opened.notes.len(), 1, "{:?}", opened.notes);
    let note = &opened.notes[0];
    assert!(
        note.contains("has no sidecar.mjs beside it")
            && note.contains(&installed.join("alpha/sidecar.mjs").display().to_string())
            && note.contains("installed beside the executable"),
        "{note}"
    );
}

#[tokio::test]
async fn a_name_that_differs_from_the_directory_is_noted() {
    let env = TestEnv::new();
    env.install("alpha", "other");
    let opened = env
        .sessions(Lifetime::OneShot)
        .open(open(&env, "other"))
        .await
        .unwrap();
    assert_eq!(opened.notes.len(), 1, "{:?}", opened.notes);
    assert!(
        opened.notes[0].contains("\"name\": \"alpha\"") && opened.notes[0].contains("\"other\""),
        "{:?}",
        opened.notes
    );
}

#[tokio::test]
async fn an_errors_stderr_tail_holds_only_this_run() {
    let mut env = TestEnv::new();
    env.timeouts.ping = Duration::from_secs(2);
    env.install("misbehaving", "mute");
    std::fs::write(env.workdir.join("behaviour"), "silent").unwrap();
    let log = env.data_dir.join("commondev/branches/br-p-b/sidecar.log");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    std::fs::write(&log, "a line from an earlier sidecar run\n").unwrap();
    let err = env
        .sessions(Lifetime::OneShot)
        .open(open(&env, "mute"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("started as silent"), "{err}");
    assert!(!err.contains("earlier sidecar run"), "{err}");
}
