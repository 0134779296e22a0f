//! Installing, enabling, disabling and removing plugins, and what each refuses.

use std::path::Path;

use wujie_builtins::BUILTINS;
use wujie_localrun::LocalRunError;
use wujie_localrun::install::{install, remove, set_enabled};
use wujie_localrun::registry::Origin;

use super::Home;

#[test]
fn install_then_remove_leaves_the_profile_as_it_was() {
    let home = Home::new();
    let source = home.plugin("roundtrip");
    std::fs::create_dir(source.join("lib")).unwrap();
    std::fs::write(source.join("lib/helper.sh"), "echo helper\n").unwrap();

    let installed = install(&home.profile, BUILTINS, &source).unwrap();
    assert_eq!(installed.name, "roundtrip");
    let copy = home.profile.installed_providers_dir().join("roundtrip");
    assert_eq!(installed.manifest_path, copy.join("provider.json"));
    assert_eq!(home.installed(), ["roundtrip"]);
    let entry = &home.profile.load_config().unwrap().localrun_providers["roundtrip"];
    assert_eq!(Path::new(&entry.manifest_path), installed.manifest_path);
    assert!(entry.enabled);

    // It runs from the copy, which later edits of the source do not change.
    let provider = home.registry().resolve("roundtrip").unwrap();
    assert_eq!(provider.origin, Origin::Config);
    let command = provider.adapter_command(Path::new("wujie"), None).unwrap();
    assert_eq!(command.program, copy.join("adapter"));
    std::fs::write(source.join("lib/helper.sh"), "echo changed\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(copy.join("lib/helper.sh")).unwrap(),
        "echo helper\n"
    );

    let removed = remove(&home.profile, BUILTINS, "roundtrip").unwrap();
    assert_eq!(removed.name, "roundtrip");
    assert_eq!(removed.config_entry, Some(installed.manifest_path));
    assert_eq!(removed.deleted_copy, Some(copy));
    assert_eq!(home.installed(), Vec::<String>::new());
    assert!(
        home.profile
            .load_config()
            .unwrap()
            .localrun_providers
            .is_empty()
    );
    let err = home.registry().resolve("roundtrip").unwrap_err();
    assert!(
        matches!(err, LocalRunError::UnknownProvider { .. }),
        "{err:?}"
    );
    // The source is the user's: untouched, and it installs again.
    assert!(source.join("provider.json").is_file());
    install(&home.profile, BUILTINS, &source).unwrap();
}

#[test]
fn a_second_install_of_the_same_name_is_refused_until_the_first_is_removed() {
    let home = Home::new();
    let first = home.plugin("twice");
    install(&home.profile, BUILTINS, &first).unwrap();
    let other = home.path("other-twice");
    let capabilities = serde_json::json!({});
    home.plugin_at(&other, "twice", super::V1, capabilities, "#!/bin/sh\n");

    let err = install(&home.profile, BUILTINS, &other).unwrap_err();
    assert!(
        matches!(&err, LocalRunError::AlreadyInstalled { name, .. } if name == "twice"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("remove it first with `wujie local-run provider remove twice`"),
        "{err}"
    );

    remove(&home.profile, BUILTINS, "twice").unwrap();
    install(&home.profile, BUILTINS, &other).unwrap();
}

#[test]
fn a_plugin_named_like_a_built_in_is_not_installed() {
    let home = Home::new();
    let source = home.plugin("codex");
    let err = install(&home.profile, BUILTINS, &source).unwrap_err();
    assert!(
        matches!(&err, LocalRunError::BuiltinConflict { name, .. } if name == "codex"),
        "{err:?}"
    );
    assert_eq!(home.installed(), Vec::<String>::new());
}

#[test]
fn a_plugin_whose_adapter_cannot_run_is_not_installed() {
    let home = Home::new();
    let source = home.plugin("norun");
    std::fs::remove_file(source.join("adapter")).unwrap();
    let err = install(&home.profile, BUILTINS, &source).unwrap_err();
    assert!(
        matches!(&err, LocalRunError::Command { problem, tried, .. }
            if *problem == "does not exist" && tried == &source.canonicalize().unwrap().join("adapter")),
        "{err:?}"
    );
    assert_eq!(home.installed(), Vec::<String>::new());
    assert!(
        home.profile
            .load_config()
            .unwrap()
            .localrun_providers
            .is_empty()
    );
}

#[test]
fn a_link_out_of_the_plugin_is_refused_and_nothing_is_left() {
    let home = Home::new();
    let secret = home.path("outside").join("secret");
    std::fs::write(&secret, "not the plugin's").unwrap();
    let source = home.plugin("leaky");
    std::os::unix::fs::symlink(&secret, source.join("secret")).unwrap();

    let err = install(&home.profile, BUILTINS, &source).unwrap_err();
    assert!(
        matches!(&err, LocalRunError::UnsafePlugin { reason, .. } if reason.contains("outside the plugin directory")),
        "{err:?}"
    );
    assert_eq!(home.installed(), Vec::<String>::new());
}

#[test]
fn disabling_is_recorded_in_the_config_and_resolution_follows_it() {
    let home = Home::new();
    install(&home.profile, BUILTINS, &home.plugin("toggle")).unwrap();

    assert_eq!(
        set_enabled(&home.profile, BUILTINS, " Toggle ", false).unwrap(),
        "toggle"
    );
    assert!(!home.profile.load_config().unwrap().localrun_providers["toggle"].enabled);
    let err = home.registry().resolve("toggle").unwrap_err();
    assert!(
        matches!(&err, LocalRunError::Disabled(name) if name == "toggle"),
        "{err:?}"
    );

    set_enabled(&home.profile, BUILTINS, "toggle", true).unwrap();
    assert!(home.registry().resolve("toggle").unwrap().enabled);
}

#[test]
fn disabling_a_plugin_only_in_the_installed_directory_gives_it_a_config_entry() {
    let home = Home::new();
    let dir = home.profile.installed_providers_dir().join("copied");
    let capabilities = serde_json::json!({});
    home.plugin_at(&dir, "copied", super::V1, capabilities, "#!/bin/sh\n");

    set_enabled(&home.profile, BUILTINS, "copied", false).unwrap();
    let entry = &home.profile.load_config().unwrap().localrun_providers["copied"];
    assert_eq!(Path::new(&entry.manifest_path), dir.join("provider.json"));
    assert!(!entry.enabled);
    assert!(matches!(
        home.registry().resolve("copied"),
        Err(LocalRunError::Disabled(_))
    ));
}

#[test]
fn built_ins_and_unknown_names_are_neither_disabled_nor_removed() {
    let home = Home::new();
    for err in [
        set_enabled(&home.profile, BUILTINS, "pi", false).unwrap_err(),
        remove(&home.profile, BUILTINS, "pi").unwrap_err(),
    ] {
        assert!(
            matches!(&err, LocalRunError::BuiltinImmutable(name) if name == "pi"),
            "{err:?}"
        );
    }
    for err in [
        set_enabled(&home.profile, BUILTINS, "ghost", true).unwrap_err(),
        remove(&home.profile, BUILTINS, "ghost").unwrap_err(),
    ] {
        assert!(
            matches!(&err, LocalRunError::UnknownProvider { name, .. } if name == "ghost"),
            "{err:?}"
        );
    }
    let err = remove(&home.profile, BUILTINS, "../state").unwrap_err();
    assert!(
        matches!(err, LocalRunError::InvalidProviderName { .. }),
        "{err:?}"
    );
}

#[test]
fn removing_a_plugin_configured_by_hand_keeps_its_directory() {
    let home = Home::new();
    let mine = home.plugin("mine");
    let manifest = mine.join("provider.json");
    home.configure("mine", &manifest.to_string_lossy(), true);

    let removed = remove(&home.profile, BUILTINS, "mine").unwrap();
    assert_eq!(removed.config_entry, Some(manifest.clone()));
    assert_eq!(removed.deleted_copy, None);
    assert!(manifest.is_file(), "the user's plugin was deleted");
    assert!(matches!(
        home.registry().resolve("mine"),
        Err(LocalRunError::UnknownProvider { .. })
    ));
}

#[test]
fn removing_a_link_in_the_installed_directory_unlinks_it_without_following() {
    let home = Home::new();
    let target = home.plugin("linked");
    let installed_dir = home.profile.installed_providers_dir();
    std::fs::create_dir_all(&installed_dir).unwrap();
    std::os::unix::fs::symlink(&target, installed_dir.join("linked")).unwrap();
    assert_eq!(
        home.registry().resolve("linked").unwrap().origin,
        Origin::Installed
    );

    let removed = remove(&home.profile, BUILTINS, "linked").unwrap();
    assert_eq!(removed.deleted_copy, Some(installed_dir.join("linked")));
    assert_eq!(removed.config_entry, None);
    assert!(
        target.join("provider.json").is_file(),
        "the link was followed"
    );
    assert_eq!(home.installed(), Vec::<String>::new());
}
