//! The library driven directly, as `wujie` drives it: provider resolution, installing and
//! removing plugins, the supervisor with real adapters (`sh` scripts), and whole discussions
//! against the embedded server, each in a `WUJIE_HOME` of its own.

mod discussion;
mod install;
mod registry;
mod supervisor;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use wujie_builtins::BUILTINS;
use wujie_localrun::profile::{Profile, ProviderEntry, Roots};
use wujie_localrun::registry::ProviderRegistry;

pub const V1: &str = "wujie-localrun-provider.v1";
pub const V2: &str = "wujie-localrun-provider.v2";

/// A profile under a `WUJIE_HOME` of its own, with room beside it for plugin sources and a
/// working directory.
pub struct Home {
    dir: TempDir,
    pub profile: Profile,
}

/// What the registry reads from the environment: nothing, unless a test says otherwise.
pub fn no_env(_: &str) -> Option<String> {
    None
}

impl Home {
    pub fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("wujie-home");
        let profile = Roots::from_vars(|k| (k == "WUJIE_HOME").then(|| home.clone()))
            .and_then(|roots| roots.profile("default"))
            .unwrap();
        Home { dir, profile }
    }

    /// A directory outside the profile (plugin sources, an adapter's working directory).
    pub fn path(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// A plugin in `dir`: a manifest naming `name` with `protocol` and `capabilities`, and
    /// its adapter `./adapter`, the `sh` script `script`. Returns `dir`.
    pub fn plugin_at(
        &self,
        dir: &Path,
        name: &str,
        protocol: &str,
        capabilities: serde_json::Value,
        script: &str,
    ) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let manifest = serde_json::json!({
            "schema_version": 1,
            "name": name,
            "command": "./adapter",
            "protocol": protocol,
            "capabilities": capabilities,
        });
        std::fs::write(dir.join("provider.json"), manifest.to_string()).unwrap();
        executable(&dir.join("adapter"), script);
        dir.to_path_buf()
    }

    /// A v1 plugin named `name` in a source directory of its own, whose adapter only exits.
    pub fn plugin(&self, name: &str) -> PathBuf {
        let dir = self.path(&format!("src-{name}"));
        let capabilities = serde_json::json!({});
        self.plugin_at(&dir, name, V1, capabilities, "#!/bin/sh\nexit 0\n")
    }

    /// Adds `localrun_providers.<key>` to the profile's config, as a user would by hand.
    pub fn configure(&self, key: &str, manifest_path: &str, enabled: bool) {
        let mut config = self.profile.load_config().unwrap();
        let entry = ProviderEntry {
            manifest_path: manifest_path.to_owned(),
            enabled,
        };
        config.localrun_providers.insert(key.to_owned(), entry);
        self.profile.save_config(&config).unwrap();
    }

    /// The registry as `wujie` builds it: the profile's config now, the built-in table.
    pub fn registry(&self) -> ProviderRegistry<'_> {
        self.registry_with(&no_env)
    }

    pub fn registry_with<'a>(
        &'a self,
        env: &'a dyn Fn(&str) -> Option<String>,
    ) -> ProviderRegistry<'a> {
        let config = self.profile.load_config().unwrap();
        ProviderRegistry::new(&self.profile, config, BUILTINS, env)
    }

    /// What the installed-plugins directory holds, without the hidden files `install` keeps.
    pub fn installed(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.profile.installed_providers_dir())
            .map(|dir| {
                dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.'))
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// Writes `script` to `path`, executable.
pub fn executable(path: &Path, script: &str) {
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether process `pid` is gone: no such process, or a zombie nobody reaped yet (whoever
/// reaps orphans here may be slow, or not do it at all).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                == Some("Z")
        }
    }
}

/// Waits up to 10 s for `cond`.
pub fn eventually(what: &str, cond: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
