//! `wujie local-run provider …`: install, list, enable, disable, remove, manual config, and the
//! seed's common errors.

use std::os::unix::fs::PermissionsExt;

use wujie_testkit::*;

#[test]
fn install_list_disable_enable_remove() {
    let env = Env::new();
    let out = env.install_example("fake-provider");
    assert!(out.contains("Installed fake-provider"), "{out}");

    let text = env.ok(&["local-run", "provider", "list"]);
    let line = text
        .lines()
        .find(|l| l.starts_with("fake-provider"))
        .expect(&text);
    assert!(
        line.contains("plugin") && line.contains("yes") && line.contains(".v1"),
        "{line}"
    );

    let list = env.json(&["local-run", "provider", "list"]);
    let fake = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "fake-provider")
        .expect("listed");
    assert_eq!(fake["display_name"], "Fake Provider");
    assert_eq!(fake["kind"], "plugin");
    assert_eq!(fake["protocol"], "wujie-localrun-provider.v1");
    assert_eq!(fake["enabled"], true);
    let manifest = fake["manifest_path"].as_str().unwrap();
    assert!(
        manifest.starts_with(env.home.path().join("state").to_str().unwrap()),
        "installed copy lives in the profile's state dir: {manifest}"
    );
    let installed_dir = std::path::Path::new(manifest)
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(installed_dir.join("wujie-localrun-fake").is_file());

    env.ok(&["local-run", "provider", "disable", "fake-provider"]);
    let list = env.json(&["local-run", "provider", "list"]);
    let fake = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "fake-provider")
        .expect("listed");
    assert_eq!(fake["enabled"], false, "{list}");
    let key = env.create_issue("disabled");
    let err = env.fails(&["run", &key, "--", "fake-provider"]);
    assert!(err.contains("disabled") && err.contains("enable"), "{err}");

    env.ok(&["local-run", "provider", "enable", "fake-provider"]);
    env.ok(&["run", &key, "--", "fake-provider"]);

    env.ok(&["local-run", "provider", "remove", "fake-provider"]);
    let list = env.json(&["local-run", "provider", "list"]);
    assert!(
        !list
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fake-provider"),
        "{list}"
    );
    assert!(!installed_dir.exists(), "remove deletes the installed copy");
    let err = env.fails(&["run", &key, "--", "fake-provider"]);
    assert!(err.contains("unknown provider"), "{err}");
}

#[test]
fn installing_twice_is_refused_and_changes_nothing() {
    let env = Env::new();
    let dir = examples().join("fake-provider");
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    let before = std::fs::read_to_string(env.config_path()).unwrap();
    let err = env.fails(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    assert!(err.contains("already installed"), "{err}");
    assert_eq!(before, std::fs::read_to_string(env.config_path()).unwrap());
}

#[test]
fn manual_manifest_path_with_tilde_and_variables() {
    let env = Env::new();
    let dir = env.plugin(
        "dev-provider",
        V1,
        &format!("echo '{}'", msg("final", "hi", "k1")),
    );
    let config = serde_json::json!({
        "localrun_providers": {
            "dev-provider": {"manifest_path": "$PLUGINS/dev-provider/provider.json", "enabled": true}
        }
    });
    std::fs::create_dir_all(env.config_path().parent().unwrap()).unwrap();
    std::fs::write(env.config_path(), config.to_string()).unwrap();
    let plugins = dir.parent().unwrap().to_str().unwrap().to_owned();

    let list = env
        .cmd()
        .env("PLUGINS", &plugins)
        .args(["--output", "json", "local-run", "provider", "list"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let p = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "dev-provider")
        .expect("listed");
    assert_eq!(p["kind"], "plugin");
    assert!(p.get("error").is_none(), "{p}");

    let key = env.create_issue("manual");
    let out = env
        .cmd()
        .env("PLUGINS", &plugins)
        .args(["run", &key, "--", "dev-provider"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let issue = env.issue(&key);
    assert_eq!(issue["runs"][0]["messages"][0]["content"], "hi");

    // `~` expands to HOME.
    let home_cfg = serde_json::json!({
        "localrun_providers": {"dev-provider": {"manifest_path": "~/dev-provider/provider.json"}}
    });
    std::fs::write(env.config_path(), home_cfg.to_string()).unwrap();
    let out = env
        .cmd()
        .env("HOME", &plugins)
        .args(["run", &key, "--", "dev-provider"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Removing a hand-configured plugin forgets it but never deletes the developer's directory.
    env.ok(&["local-run", "provider", "remove", "dev-provider"]);
    assert!(dir.join("provider.json").is_file());
}

#[test]
fn unsupported_schema_and_protocol() {
    let env = Env::new();
    let dir = env.plugin("bad", V1, "true");
    let manifest = dir.join("provider.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["schema_version"] = 2.into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    let err = env.fails(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    assert!(err.contains("unsupported schema"), "{err}");

    m["schema_version"] = 1.into();
    m["protocol"] = "wujie-localrun-provider.v3".into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    let err = env.fails(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    assert!(err.contains("unsupported protocol"), "{err}");
    assert!(
        !env.config_path().exists()
            || !std::fs::read_to_string(env.config_path())
                .unwrap()
                .contains("bad")
    );

    // The same errors when a hand-configured manifest is run.
    let config = serde_json::json!({"localrun_providers": {"bad": {"manifest_path": manifest, "enabled": true}}});
    std::fs::create_dir_all(env.config_path().parent().unwrap()).unwrap();
    std::fs::write(env.config_path(), config.to_string()).unwrap();
    let key = env.create_issue("bad protocol");
    let err = env.fails(&["run", &key, "--", "bad"]);
    assert!(err.contains("unsupported protocol"), "{err}");
}

#[test]
fn missing_or_not_executable_command_names_path_and_manifest_dir() {
    let env = Env::new();
    let dir = env.plugin("broken", V1, "true");
    std::fs::set_permissions(dir.join("adapter"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = env.fails(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    assert!(err.contains("not executable"), "{err}");
    assert!(
        err.contains("adapter") && err.contains("manifest dir"),
        "{err}"
    );

    std::fs::remove_file(dir.join("adapter")).unwrap();
    let err = env.fails(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    assert!(err.contains("does not exist"), "{err}");
    assert!(
        err.contains(dir.join("adapter").to_str().unwrap()),
        "names the path tried: {err}"
    );
}

#[test]
fn symlinks_leaving_the_plugin_are_refused() {
    let env = Env::new();
    let dir = env.plugin("sneaky", V1, "true");
    let outside = env.work.path().join("secret.txt");
    std::fs::write(&outside, "secret").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
    let err = env.fails(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    assert!(err.contains("outside the plugin directory"), "{err}");
    assert!(
        !env.home
            .path()
            .join("state/localrun-providers/sneaky")
            .exists()
    );

    // A link that stays inside is copied as what it points to.
    std::fs::remove_file(dir.join("link")).unwrap();
    std::os::unix::fs::symlink(dir.join("adapter"), dir.join("alias")).unwrap();
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    let copied = env
        .home
        .path()
        .join("state/localrun-providers/sneaky/alias");
    assert!(std::fs::symlink_metadata(&copied).unwrap().is_file());
}

#[test]
fn names_that_could_traverse_are_refused() {
    let env = Env::new();
    for name in ["../escape", "a/b", ".hidden"] {
        let dir = env.work.path().join("p");
        let _ = std::fs::remove_dir_all(&dir);
        write_plugin(&dir, name, V1, "true");
        let err = env.fails(&["local-run", "provider", "install", dir.to_str().unwrap()]);
        assert!(err.contains("name"), "{name}: {err}");
    }
    assert!(!env.home.path().join("state/escape").exists());
}

#[test]
fn config_key_must_match_manifest_name() {
    let env = Env::new();
    let dir = env.plugin("real-name", V1, "true");
    let config = serde_json::json!({"localrun_providers": {"other": {"manifest_path": dir.join("provider.json"), "enabled": true}}});
    std::fs::create_dir_all(env.config_path().parent().unwrap()).unwrap();
    std::fs::write(env.config_path(), config.to_string()).unwrap();
    let key = env.create_issue("mismatch");
    let err = env.fails(&["run", &key, "--", "other"]);
    assert!(err.contains("real-name") && err.contains("other"), "{err}");
}

#[test]
fn manifest_name_is_normalised() {
    let env = Env::new();
    let dir = env.work.path().join("Upper");
    write_plugin(
        &dir,
        "  Mixed-Case ",
        V1,
        &format!("echo '{}'", msg("text", "x", "k")),
    );
    let out = env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    assert!(out.contains("mixed-case"), "{out}");
    let key = env.create_issue("normalised");
    env.ok(&["run", &key, "--", "Mixed-Case"]);
}
