//! `wujie local-run provider remove | enable | disable` take only provider names and delete
//! only what the profile installed; `install` looks at `provider.json` before reading it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use wujie_testkit::*;

/// `path` spelled relative to `base` with `..` steps (both absolute, no symlinks between).
fn relative_to(path: &Path, base: &Path) -> String {
    let path: Vec<_> = path.components().collect();
    let base: Vec<_> = base.components().collect();
    let shared = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in shared..base.len() {
        out.push("..");
    }
    for c in &path[shared..] {
        out.push(c);
    }
    out.to_string_lossy().into_owned()
}

/// A directory outside the state dir that looks like a plugin: the target of a traversing
/// name. Its path is lower case, as names are lower-cased before use.
fn victim(env: &Env) -> PathBuf {
    let dir = env.home.path().join("victim").join("precious");
    write_plugin(&dir, "precious", V1, "touch \"$0.ran\"");
    std::fs::write(dir.join("data.txt"), "keep me").unwrap();
    dir
}

fn installed_dir(env: &Env) -> PathBuf {
    env.home.path().join("state").join("localrun-providers")
}

#[test]
fn commands_refuse_names_that_leave_the_installed_dir() {
    let env = Env::new();
    // With one plugin installed the installed-plugins dir exists, so `..` from it resolves.
    env.install_example("fake-provider");
    let victim = victim(&env);
    let traversing = relative_to(&victim, &installed_dir(&env));
    assert!(
        installed_dir(&env)
            .join(&traversing)
            .join("provider.json")
            .is_file(),
        "the name {traversing} reaches the victim from the installed dir"
    );
    let config_before = std::fs::read_to_string(env.config_path()).unwrap();

    for verb in ["remove", "disable", "enable"] {
        let err = env.fails(&["local-run", "provider", verb, &traversing]);
        assert!(
            err.contains("invalid provider name") && err.contains("path separator"),
            "{verb}: {err}"
        );
    }
    let key = env.create_issue("traversal");
    let err = env.fails(&["run", &key, "--", &traversing]);
    assert!(err.contains("invalid provider name"), "{err}");

    assert!(
        victim.join("data.txt").is_file(),
        "remove deleted a directory outside the profile"
    );
    assert!(
        !victim.join("adapter.ran").exists(),
        "run started an adapter outside the profile"
    );
    assert_eq!(
        std::fs::read_to_string(env.config_path()).unwrap(),
        config_before,
        "a refused name must not be recorded in the config"
    );
}

#[test]
fn remove_deletes_only_the_installed_copy_and_says_what_it_removed() {
    let env = Env::new();
    env.install_example("fake-provider");
    let copy = installed_dir(&env).join("fake-provider");
    assert!(copy.join("provider.json").is_file());

    // The user points the config at a development checkout of the same plugin.
    let dev = env.work.path().join("dev").join("fake-provider");
    std::fs::create_dir_all(dev.parent().unwrap()).unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(examples().join("fake-provider"))
        .arg(&dev)
        .status()
        .unwrap();
    assert!(status.success());
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.config_path()).unwrap()).unwrap();
    config["localrun_providers"]["fake-provider"]["manifest_path"] = dev
        .join("provider.json")
        .to_string_lossy()
        .into_owned()
        .into();
    std::fs::write(env.config_path(), config.to_string()).unwrap();

    let out = env.ok(&["local-run", "provider", "remove", "fake-provider"]);
    assert!(
        out.contains(&dev.join("provider.json").display().to_string())
            && out.contains(&copy.display().to_string()),
        "remove names both the config entry and the installed copy: {out}"
    );
    assert!(
        dev.join("provider.json").is_file(),
        "the user's checkout is kept"
    );
    assert!(!copy.exists(), "the installed copy is deleted");

    // Nothing of that name is left to take over silently.
    let list = env.json(&["local-run", "provider", "list"]);
    assert!(
        !list
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fake-provider"),
        "{list}"
    );
    let key = env.create_issue("removed");
    let err = env.fails(&["run", &key, "--", "fake-provider"]);
    assert!(err.contains("unknown provider"), "{err}");
}

#[test]
fn remove_never_follows_a_symlinked_copy() {
    let env = Env::new();
    env.install_example("fake-provider");
    let victim = victim(&env);
    // Something replaced the installed copy by a link to a directory outside the profile.
    let copy = installed_dir(&env).join("precious");
    std::os::unix::fs::symlink(&victim, &copy).unwrap();

    let out = env.ok(&["local-run", "provider", "remove", "precious"]);
    assert!(out.contains("Removed precious"), "{out}");
    assert!(
        victim.join("data.txt").is_file(),
        "the link's target is kept"
    );
    assert!(
        std::fs::symlink_metadata(&copy).is_err(),
        "the link is gone"
    );
}

/// `wujie local-run provider install DIR`, bounded as [`bounded`] is.
fn install_bounded(env: &Env, dir: &Path) -> Output {
    bounded(
        env,
        &["local-run", "provider", "install", dir.to_str().unwrap()],
    )
}

/// `wujie ARGS` under an address-space limit, so that a regression that reads an endless file
/// fails instead of taking the machine's memory; gives up (and fails) after 60 s so a read that
/// blocks for ever is a failure rather than a hang.
fn bounded(env: &Env, args: &[&str]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.env("WUJIE_HOME", env.home.path())
        .current_dir(env.work.path())
        .stdin(Stdio::null());
    for (k, _) in std::env::vars() {
        if k.starts_with("WUJIE_") && k != "WUJIE_HOME" {
            cmd.env_remove(k);
        }
    }
    // 4 GiB of address space: far more than `wujie` needs, far less than the machine has.
    let mut child = cmd
        .args(["-c", "ulimit -v 4194304 && exec \"$0\" \"$@\""])
        .arg(WUJIE)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("wujie starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("wujie {args:?} did not finish within 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn install_refuses_a_fifo_manifest_without_waiting_for_a_writer() {
    let env = Env::new();
    let dir = env.work.path().join("fifo-plugin");
    std::fs::create_dir_all(&dir).unwrap();
    nix::unistd::mkfifo(
        &dir.join("provider.json"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let out = install_bounded(&env, &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("provider.json") && err.contains("FIFO") && err.contains("regular file"),
        "{err}"
    );
}

#[test]
fn install_refuses_a_manifest_linked_to_a_device() {
    let env = Env::new();
    let dir = env.work.path().join("zero-plugin");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("provider.json")).unwrap();
    let out = install_bounded(&env, &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("character device") && err.contains("regular file"),
        "{err}"
    );
}

#[test]
fn install_refuses_an_oversized_manifest_before_reading_it() {
    let env = Env::new();
    let dir = env.work.path().join("huge-plugin");
    std::fs::create_dir_all(&dir).unwrap();
    // A sparse file: large to `stat`, cheap on disk.
    let file = std::fs::File::create(dir.join("provider.json")).unwrap();
    file.set_len(8 << 30).unwrap();
    let out = install_bounded(&env, &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("provider.json") && err.contains("larger than 1 MiB"),
        "{err}"
    );
}

#[test]
fn a_config_file_that_is_a_fifo_is_refused_not_waited_on() {
    let env = Env::new();
    std::fs::create_dir_all(env.config_path().parent().unwrap()).unwrap();
    nix::unistd::mkfifo(
        &env.config_path(),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let out = bounded(&env, &["local-run", "provider", "list"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("config.json") && err.contains("FIFO") && err.contains("regular file"),
        "{err}"
    );
}
