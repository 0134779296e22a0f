//! Backends are chosen by data: driver lookup, swapping drivers, session-id discipline,
//! timeouts and process-tree kills, with real node sidecars and fake CLIs.

use std::path::Path;
use std::time::Duration;

use super::common::{TestEnv, copy_dir, fixtures, gone_soon, repo_root, wait_for_file};
use wujie_commondev::registry::{BundledDriver, shipped_drivers};
use wujie_commondev::{CommondevError, Lifetime, OpenRequest};
use wujie_protocol::error_text::with_causes;

fn open(project: &str, branch: &str, cli: &str, workdir: &Path) -> OpenRequest {
    OpenRequest {
        project: project.into(),
        branch: branch.into(),
        agent_cli: cli.into(),
        workdir: workdir.to_path_buf(),
        ..Default::default()
    }
}

/// Every `.rs` file under `dir`, recursively.
fn rust_sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Occurrences of CLI-specific launch details in `text`. `PI_` only counts at the start of an
/// identifier (so `WUJIE_LLM_API_KEY` is not a hit); `rpc` only in lowercase (pi's mode name).
fn launch_details(text: &str) -> Vec<String> {
    let mut hits = Vec::new();
    for needle in [
        "--mode",
        "\"rpc\"",
        "pi-coding-agent",
        "PI_OFFLINE",
        "PI_CODING_AGENT_DIR",
        "\"pi\"",
        ".pi/",
        "zcode",
        "--resume",
    ] {
        if text.contains(needle) {
            hits.push(needle.to_owned());
        }
    }
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices("PI_") {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        if !before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            hits.push(format!("PI_ at byte {at}"));
        }
    }
    hits
}

#[test]
fn core_does_not_hardcode_cli_launch_details() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_sources(&crate_dir.join("src"), &mut files);
    files.push(crate_dir.join("build.rs"));
    // The only exemption: the writer that `llmConfig: "pi"` selects must know pi's config format
    // (models.json); it contains nothing about launching pi.
    let writer = crate_dir.join("src/llm/pi.rs");
    assert!(writer.is_file());
    assert!(files.len() >= 10, "scan found too few sources: {files:?}");
    for file in files.iter().filter(|f| **f != writer) {
        let hits = launch_details(&std::fs::read_to_string(file).unwrap());
        assert!(
            hits.is_empty(),
            "{} contains CLI launch details: {hits:?}",
            file.display()
        );
    }
    let writer_hits = launch_details(&std::fs::read_to_string(&writer).unwrap());
    assert!(
        !writer_hits
            .iter()
            .any(|h| h == "--mode" || h.starts_with("PI_")),
        "the pi config writer must not launch pi: {writer_hits:?}"
    );
    // The scan is not vacuous: the same detector finds pi's launch details in the driver data.
    let pi_sidecar = std::fs::read_to_string(repo_root().join("runtime/pi/sidecar.mjs")).unwrap();
    let found = launch_details(&pi_sidecar);
    for expected in ["--mode", "\"rpc\"", "PI_CODING_AGENT_DIR"] {
        assert!(
            found.iter().any(|h| h == expected),
            "detector missed {expected} in runtime/pi"
        );
    }
    let pi_driver = std::fs::read_to_string(repo_root().join("runtime/pi/driver.json")).unwrap();
    assert!(launch_details(&pi_driver).iter().any(|h| h == "PI_OFFLINE"));
}

#[tokio::test]
async fn swapping_the_driver_swaps_the_backend() {
    let env = TestEnv::new();
    // The same agent name, first backed by alpha's driver + sidecar...
    env.install("alpha", "agent");
    let sessions = env.sessions(Lifetime::KeepAlive);
    let opened = sessions
        .open(open("proj", "one", "agent", &env.workdir))
        .await
        .unwrap();
    assert!(
        opened
            .branch
            .cli_version
            .as_deref()
            .unwrap()
            .contains("name=proj/one"),
        "sessionNameFlag true passes --session-name"
    );
    let reply = sessions.prompt("proj", "one", "hello").await.unwrap();
    assert!(reply.reply.starts_with("alpha(alpha_"), "{reply:?}");
    assert!(reply.reply.ends_with("heard: hello"));
    sessions.close("proj", "one").await.unwrap();

    // ...then the directory is replaced by beta's files: same core, different backend.
    std::fs::remove_dir_all(env.override_dir("agent")).unwrap();
    env.install("beta", "agent");
    let opened = sessions
        .open(open("proj", "two", "agent", &env.workdir))
        .await
        .unwrap();
    assert_eq!(
        opened.branch.session_id, "br-proj-two",
        "label until the real id is known"
    );
    let reply = sessions.prompt("proj", "two", "hello").await.unwrap();
    assert_eq!(reply.reply, "BETA<HELLO>");
    assert_eq!(reply.session_id, "conv-beta-1");
    let state = sessions.state("proj", "two").await.unwrap();
    assert_eq!(state.session_id, "conv-beta-1");
    sessions.shutdown().await;
}

#[tokio::test]
async fn lookup_chain_precedence_and_not_found_error() {
    let mut env = TestEnv::new();
    let installed = env.home.path().join("install/runtime");
    let exe_dir = env.home.path().join("exe");
    env.locations.installed_root = Some(installed.clone());
    env.locations.exe_dir = Some(exe_dir.clone());
    let files = |fixture: &str| -> Vec<(String, String)> {
        std::fs::read_dir(fixtures().join("drivers").join(fixture))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read_to_string(e.path()).unwrap(),
                )
            })
            .collect()
    };
    env.locations.bundled = vec![BundledDriver {
        cli: "agent".into(),
        files: files("beta"),
    }];

    // Only ③ (executable's dir) and the compiled-in copy: compiled-in (②) wins over ③.
    copy_dir(&fixtures().join("drivers/alpha"), &exe_dir.join("agent"));
    let found = env.locations.resolve("agent").unwrap();
    assert_eq!(found.source, "bundled with Wujie");
    assert_eq!(found.driver.name, "beta");
    assert!(
        found
            .script
            .starts_with(env.data_dir.join("commondev/bundled/agent")),
        "materialised"
    );
    assert!(found.script.is_file());

    // A runtime/ installed beside the executable comes before the compiled-in copy.
    copy_dir(&fixtures().join("drivers/alpha"), &installed.join("agent"));
    assert_eq!(
        env.locations.resolve("agent").unwrap().source,
        "installed beside the executable"
    );

    // The local override beats everything; with only a driver.json, its script comes from the
    // next link of the chain.
    let local = env.override_dir("agent");
    std::fs::create_dir_all(&local).unwrap();
    let driver = std::fs::read_to_string(fixtures().join("drivers/alpha/driver.json"))
        .unwrap()
        .replace("\"alpha\"", "\"alpha-local\"");
    std::fs::write(local.join("driver.json"), driver).unwrap();
    // `{pluginDir}` is the driver.json's directory, so the CLI it names sits there.
    std::fs::copy(
        fixtures().join("drivers/alpha/alpha-cli.mjs"),
        local.join("alpha-cli.mjs"),
    )
    .unwrap();
    let found = env.locations.resolve("agent").unwrap();
    assert_eq!(
        (found.source, found.driver.name.as_str()),
        ("local override", "alpha-local")
    );
    assert_eq!(found.script, installed.join("agent/sidecar.mjs"));

    // And it really runs through the service.
    let sessions = env.sessions(Lifetime::OneShot);
    sessions
        .open(open("p", "b", "agent", &env.workdir))
        .await
        .unwrap();
    assert!(
        sessions
            .prompt("p", "b", "x")
            .await
            .unwrap()
            .reply
            .contains("heard: x")
    );

    // Nothing anywhere: every place is listed, in order, with what to create.
    let err = env.locations.resolve("nothing").unwrap_err();
    let text = err.to_string();
    let places = [
        env.override_dir("nothing").display().to_string(),
        installed.join("nothing").display().to_string(),
        "drivers compiled into this binary — none named \"nothing\" (bundled: agent)".to_owned(),
        exe_dir.join("nothing").display().to_string(),
    ];
    let positions: Vec<usize> = places
        .iter()
        .map(|p| text.find(p.as_str()).expect(p))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "order: {text}");
    assert!(
        text.contains(&format!("create {}/driver.json", places[0])),
        "{text}"
    );
    assert!(matches!(err, CommondevError::DriverNotFound { .. }));

    // A driver whose script is nowhere names every place it looked.
    let lonely = env.override_dir("lonely");
    std::fs::create_dir_all(&lonely).unwrap();
    std::fs::write(
        lonely.join("driver.json"),
        r#"{"name":"lonely","script":"gone.mjs"}"#,
    )
    .unwrap();
    let text = env.locations.resolve("lonely").unwrap_err().to_string();
    assert!(
        text.contains(&lonely.join("gone.mjs").display().to_string()),
        "{text}"
    );
    assert!(
        text.contains(&exe_dir.join("lonely/gone.mjs").display().to_string()),
        "{text}"
    );
}

#[tokio::test]
async fn bundled_pi_driver_works_without_any_driver_installed() {
    let mut env = TestEnv::new();
    env.locations.bundled = shipped_drivers();
    let found = env.locations.resolve("pi").unwrap();
    assert_eq!(found.source, "bundled with Wujie");
    assert_eq!(
        found.driver.llm_config,
        wujie_protocol::driver::LlmConfig::Pi
    );
    let shipped = std::fs::read_to_string(repo_root().join("runtime/pi/sidecar.mjs")).unwrap();
    assert_eq!(std::fs::read_to_string(&found.script).unwrap(), shipped);
}

#[tokio::test]
async fn invalid_driver_data_is_reported_with_its_file() {
    let env = TestEnv::new();
    let dir = env.install("alpha", "agent");
    let driver = std::fs::read_to_string(dir.join("driver.json")).unwrap();
    std::fs::write(
        dir.join("driver.json"),
        driver.replace("{dataDir}", "{home}"),
    )
    .unwrap();
    let text = with_causes(&env.locations.resolve("agent").unwrap_err());
    assert!(
        text.contains("{home}") && text.contains(&dir.join("driver.json").display().to_string()),
        "{text}"
    );
    std::fs::write(
        dir.join("driver.json"),
        driver.replace("\"none\"", "\"zcode\""),
    )
    .unwrap();
    let text = with_causes(&env.locations.resolve("agent").unwrap_err());
    assert!(
        text.contains("ZCODE_BUILTIN_PROVIDER_CONFIG_FILE"),
        "{text}"
    );
}

#[tokio::test]
async fn ping_timeout_kills_the_sidecar() {
    let mut env = TestEnv::new();
    env.timeouts.ping = Duration::from_secs(2);
    env.install("misbehaving", "mute");
    std::fs::write(env.workdir.join("behaviour"), "silent").unwrap();
    let sessions = env.sessions(Lifetime::KeepAlive);
    let err = sessions
        .open(open("p", "b", "mute", &env.workdir))
        .await
        .unwrap_err();
    assert!(matches!(err, CommondevError::PingTimeout { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("misbehaving sidecar started as silent"),
        "stderr tail attached: {text}"
    );
    let pid: i32 = wait_for_file(&env.workdir.join("sidecar.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(gone_soon(pid), "sidecar {pid} survived the ping timeout");
}

#[tokio::test]
async fn session_drift_is_a_loud_error() {
    let env = TestEnv::new();
    env.install("misbehaving", "drifty");
    std::fs::write(env.workdir.join("behaviour"), "drift").unwrap();
    let sessions = env.sessions(Lifetime::KeepAlive);
    sessions
        .open(open("p", "b", "drifty", &env.workdir))
        .await
        .unwrap();
    let first = sessions.prompt("p", "b", "one").await.unwrap();
    assert_eq!(first.session_id, "real-1");
    let err = sessions.prompt("p", "b", "two").await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CommondevError::Drift { .. }));
    assert!(
        text.contains("real-1") && text.contains("real-2") && text.contains("br-p-b"),
        "{text}"
    );
    // The persisted real id is still the original one.
    let listed = sessions.list().unwrap();
    assert_eq!(listed[0].real_session_id.as_deref(), Some("real-1"));
    sessions.shutdown().await;
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let mut env = TestEnv::new();
    env.timeouts.prompt = Duration::from_secs(3);
    env.install("misbehaving", "hangs");
    std::fs::write(env.workdir.join("behaviour"), "hang").unwrap();
    let sessions = env.sessions(Lifetime::KeepAlive);
    sessions
        .open(open("p", "b", "hangs", &env.workdir))
        .await
        .unwrap();
    let err = sessions.prompt("p", "b", "work").await.unwrap_err();
    assert!(matches!(err, CommondevError::CallTimeout { .. }), "{err}");
    assert!(
        err.to_string().contains("will never answer"),
        "stderr tail: {err}"
    );
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
    assert!(
        gone_soon(grandchild),
        "grandchild sleep {grandchild} was orphaned"
    );
    assert!(gone_soon(sidecar), "sidecar {sidecar} survived");
}

#[tokio::test]
async fn label_collisions_and_agent_changes_are_refused() {
    let env = TestEnv::new();
    env.install("alpha", "agent");
    env.install("beta", "other");
    let sessions = env.sessions(Lifetime::OneShot);
    sessions
        .open(open("a", "b/c", "agent", &env.workdir))
        .await
        .unwrap();
    let err = sessions
        .open(open("a", "b-c", "agent", &env.workdir))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CommondevError::LabelCollision { .. }),
        "{err}"
    );
    let err = sessions
        .open(open("a", "b/c", "other", &env.workdir))
        .await
        .unwrap_err();
    assert!(matches!(err, CommondevError::AgentMismatch { .. }), "{err}");
    let err = sessions.prompt("a", "nope", "x").await.unwrap_err();
    assert!(
        matches!(err, CommondevError::BranchNotFound { .. }),
        "{err}"
    );
    sessions.close("a", "b/c").await.unwrap();
    let err = sessions.prompt("a", "b/c", "x").await.unwrap_err();
    assert!(matches!(err, CommondevError::BranchClosed { .. }), "{err}");
}

#[test]
fn shipped_and_example_drivers_are_valid() {
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(repo_root().join("runtime"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.push(repo_root().join("examples/custom-cli/zcode"));
    assert!(dirs.len() >= 2);
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("driver.json")).unwrap();
        let driver = wujie_protocol::driver::Driver::parse(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let status = std::process::Command::new("node")
            .arg("--check")
            .arg(dir.join(&driver.script))
            .status()
            .unwrap();
        assert!(
            status.success(),
            "{} does not parse",
            dir.join(&driver.script).display()
        );
    }
}

#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<String>>);

impl wujie_commondev::BranchObserver for Recorder {
    fn on_prompt(&self, branch: &wujie_commondev::store::BranchRecord, text: &str) {
        let issue = branch.issue.clone().unwrap_or_default();
        self.0
            .lock()
            .unwrap()
            .push(format!("{issue} prompt {text}"));
    }
    fn on_reply(&self, branch: &wujie_commondev::store::BranchRecord, reply: &str) {
        let issue = branch.issue.clone().unwrap_or_default();
        self.0
            .lock()
            .unwrap()
            .push(format!("{issue} reply {reply}"));
    }
}

#[tokio::test]
async fn observer_sees_prompts_and_replies_with_the_branch_issue() {
    let env = TestEnv::new();
    env.install("beta", "agent");
    let recorder = std::sync::Arc::new(Recorder::default());
    let sessions = env
        .sessions(Lifetime::OneShot)
        .with_observer(recorder.clone());
    let mut request = open("p", "b", "agent", &env.workdir);
    request.issue = Some("WUJ-5".into());
    sessions.open(request).await.unwrap();
    sessions.prompt("p", "b", "hi").await.unwrap();
    assert_eq!(
        *recorder.0.lock().unwrap(),
        ["WUJ-5 prompt hi", "WUJ-5 reply BETA<HI>"]
    );
}
