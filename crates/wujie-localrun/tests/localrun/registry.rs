//! Provider resolution: built-in first, then `localrun_providers` in the config, then the
//! installed-plugins directory; and the errors a user gets for a name that resolves to nothing
//! usable.

use std::path::Path;

use wujie_localrun::LocalRunError;
use wujie_localrun::registry::Origin;

use super::{Home, V1, executable};

fn manifest(dir: &Path) -> String {
    dir.join("provider.json").to_string_lossy().into_owned()
}

#[test]
fn a_built_in_name_is_the_built_in_whatever_the_config_says() {
    let home = Home::new();
    let impostor = home.plugin("pi");
    home.configure("pi", &manifest(&impostor), true);

    let pi = home.registry().resolve("pi").unwrap();
    assert_eq!(pi.origin, Origin::Builtin);
    assert_eq!(pi.manifest_path, None);
    let command = pi.adapter_command(Path::new("/opt/wujie"), None).unwrap();
    assert_eq!(command.program, Path::new("/opt/wujie"));
    assert_eq!(command.leading_args, ["adapter", "pi"]);

    // The listing shows the entry, refused, after the built-in.
    let listed = home.registry().list();
    let pis: Vec<_> = listed.iter().filter(|(name, _)| name == "pi").collect();
    assert_eq!(pis.len(), 2, "{listed:?}");
    assert!(matches!(pis[0].1, Ok(ref p) if p.origin == Origin::Builtin));
    assert!(
        matches!(&pis[1].1, Err(LocalRunError::BuiltinConflict { name, .. }) if name == "pi"),
        "{:?}",
        pis[1].1
    );
}

#[test]
fn a_config_entry_comes_before_an_installed_copy_of_the_same_name() {
    let home = Home::new();
    let installed_dir = home.profile.installed_providers_dir().join("echo");
    let capabilities = serde_json::json!({});
    home.plugin_at(&installed_dir, "echo", V1, capabilities, "#!/bin/sh\n");

    let found = home.registry().resolve("echo").unwrap();
    assert_eq!(found.origin, Origin::Installed);
    assert_eq!(found.kind(), "plugin");
    assert_eq!(
        found.manifest_path.as_deref(),
        Some(installed_dir.join("provider.json").as_path())
    );

    let elsewhere = home.plugin("echo");
    home.configure("echo", &manifest(&elsewhere), true);
    let found = home.registry().resolve("echo").unwrap();
    assert_eq!(found.origin, Origin::Config);
    assert_eq!(
        found.manifest_path.as_deref(),
        Some(elsewhere.join("provider.json").as_path())
    );

    // Listed once, from the config: the installed copy is not a second provider.
    let listed: Vec<_> = home
        .registry()
        .list()
        .into_iter()
        .filter(|(name, _)| name == "echo")
        .collect();
    assert_eq!(listed.len(), 1);
    assert!(matches!(listed[0].1, Ok(ref p) if p.origin == Origin::Config));
}

#[test]
fn an_unknown_name_says_where_it_was_looked_for_and_how_to_install() {
    let home = Home::new();
    let err = home.registry().resolve("nowhere").unwrap_err();
    let LocalRunError::UnknownProvider {
        name,
        config,
        installed,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(name, "nowhere");
    assert_eq!(config, &home.profile.config_path());
    assert_eq!(installed, &home.profile.installed_providers_dir());
    let message = err.to_string();
    for part in [
        "not built in",
        &home.profile.config_path().display().to_string(),
        "wujie local-run provider install DIR",
    ] {
        assert!(message.contains(part), "{message}");
    }
}

#[test]
fn a_typo_of_a_provider_is_answered_with_the_name_it_is_near_and_the_names_there_are() {
    let home = Home::new();
    let message = home.registry().resolve("claud").unwrap_err().to_string();
    assert!(message.contains("(did you mean \"claude\"?)"), "{message}");
    assert!(
        message.contains("The providers here are pi, claude, codex"),
        "{message}"
    );
    // Nothing near: no guess, still the list.
    let message = home.registry().resolve("zzzzzz").unwrap_err().to_string();
    assert!(!message.contains("did you mean"), "{message}");
    assert!(message.contains("The providers here are"), "{message}");
}

#[test]
fn a_disabled_entry_is_refused_even_with_an_installed_copy() {
    let home = Home::new();
    let installed_dir = home.profile.installed_providers_dir().join("quiet");
    let capabilities = serde_json::json!({});
    home.plugin_at(&installed_dir, "quiet", V1, capabilities, "#!/bin/sh\n");
    home.configure("quiet", &manifest(&installed_dir), false);

    let err = home.registry().resolve("quiet").unwrap_err();
    assert!(
        matches!(&err, LocalRunError::Disabled(name) if name == "quiet"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("enable it with `wujie local-run provider enable quiet`"),
        "{err}"
    );
    // Listed, with its state.
    let listed = home.registry().list();
    let quiet = listed.iter().find(|(name, _)| name == "quiet").unwrap();
    assert!(matches!(quiet.1, Ok(ref p) if !p.enabled));
}

#[test]
fn a_config_key_must_be_the_name_its_manifest_gives() {
    let home = Home::new();
    let gamma = home.plugin("gamma");
    home.configure("beta", &manifest(&gamma), true);
    let err = home.registry().resolve("beta").unwrap_err();
    assert!(
        matches!(&err, LocalRunError::NameMismatch { key, name, .. } if key == "beta" && name == "gamma"),
        "{err:?}"
    );
}

#[test]
fn a_name_that_could_leave_the_installed_directory_is_refused() {
    let home = Home::new();
    for name in ["../escape", "a/b", ".hidden", ""] {
        let err = home.registry().resolve(name).unwrap_err();
        assert!(
            matches!(err, LocalRunError::InvalidProviderName { .. }),
            "{name:?}: {err:?}"
        );
    }
}

#[test]
fn a_configured_manifest_path_expands_variables_and_names_an_unset_one() {
    let home = Home::new();
    let source = home.plugin("expanded");
    let parent = source.parent().unwrap().to_string_lossy().into_owned();
    home.configure("expanded", "$PLUGINS/src-expanded/provider.json", true);

    let env = move |name: &str| (name == "PLUGINS").then(|| parent.clone());
    let found = home.registry_with(&env).resolve("expanded").unwrap();
    assert_eq!(
        found.manifest_path,
        Some(source.join("provider.json")),
        "expanded from $PLUGINS"
    );

    let err = home.registry().resolve("expanded").unwrap_err();
    assert!(
        matches!(&err, LocalRunError::BadConfig { reason, .. }
            if reason.contains("localrun_providers.expanded.manifest_path") && reason.contains("$PLUGINS")),
        "{err:?}"
    );
}

#[test]
fn a_plugin_command_is_found_beside_its_manifest_or_on_path() {
    let home = Home::new();
    let beside = home.plugin("beside");
    home.configure("beside", &manifest(&beside), true);
    let found = home.registry().resolve("beside").unwrap();
    let command = found.adapter_command(Path::new("wujie"), None).unwrap();
    assert_eq!(command.program, beside.join("adapter"));
    assert!(command.leading_args.is_empty());

    // A bare command is looked up on PATH, in order.
    let on_path = home.path("src-onpath");
    let manifest_json = serde_json::json!({
        "schema_version": 1,
        "name": "onpath",
        "command": "onpath-adapter",
        "protocol": V1,
    });
    std::fs::write(on_path.join("provider.json"), manifest_json.to_string()).unwrap();
    home.configure("onpath", &manifest(&on_path), true);
    let found = home.registry().resolve("onpath").unwrap();
    let (bin, later_bin) = (home.path("bin"), home.path("later-bin"));
    let path_var = format!("/nonexistent:{}:{}", bin.display(), later_bin.display());
    let missing = found
        .adapter_command(Path::new("wujie"), Some(&path_var))
        .unwrap_err();
    assert!(
        missing.to_string().contains("was not found on PATH"),
        "{missing}"
    );
    executable(&later_bin.join("onpath-adapter"), "#!/bin/sh\n");
    executable(&bin.join("onpath-adapter"), "#!/bin/sh\n");
    let command = found
        .adapter_command(Path::new("wujie"), Some(&path_var))
        .unwrap();
    assert_eq!(command.program, bin.join("onpath-adapter"));
}

#[test]
fn a_plugin_command_that_cannot_run_says_what_is_wrong_with_it() {
    let home = Home::new();
    let broken = home.plugin("broken");
    home.configure("broken", &manifest(&broken), true);
    let provider = home.registry().resolve("broken").unwrap();
    let problem = |expected: &str| {
        let err = provider
            .adapter_command(Path::new("wujie"), None)
            .unwrap_err();
        let LocalRunError::Command { problem, tried, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(*problem, expected);
        assert_eq!(tried, &broken.join("adapter"));
    };

    std::fs::set_permissions(
        broken.join("adapter"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    problem("is not executable");
    std::fs::remove_file(broken.join("adapter")).unwrap();
    std::fs::create_dir(broken.join("adapter")).unwrap();
    problem("is not a file");
    std::fs::remove_dir(broken.join("adapter")).unwrap();
    problem("does not exist");
}
