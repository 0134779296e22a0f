//! Finding providers: built-in first, then the profile's `localrun_providers` config, then the
//! installed-plugins directory (seed: "先查内置 provider，再查 localrun_providers 配置，最后查已安装
//! 目录"). The registry knows no provider by name beyond the built-in table.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use wujie_builtins::Builtin;
use wujie_protocol::manifest::{self, Manifest};

use crate::error::LocalRunError;
use crate::profile::{Config, Profile, expand_path};
use crate::small_file::read_small_file;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Builtin,
    /// An entry of `localrun_providers` (installed plugins are recorded there too).
    Config,
    /// A directory under the installed-plugins dir with no config entry.
    Installed,
}

#[derive(Debug, Clone)]
pub struct Provider {
    pub name: String,
    pub origin: Origin,
    pub manifest: Manifest,
    /// `None` for built-ins.
    pub manifest_path: Option<PathBuf>,
    pub enabled: bool,
}

/// The program and leading arguments that start an adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterCommand {
    pub program: PathBuf,
    pub leading_args: Vec<String>,
}

impl Provider {
    pub fn kind(&self) -> &'static str {
        match self.origin {
            Origin::Builtin => "builtin",
            Origin::Config | Origin::Installed => "plugin",
        }
    }

    /// Whether a start with `args` would fail at once, asked before a run or a discussion is
    /// created for it. Built-in providers know (their agent's executable, their arguments);
    /// a plugin's adapter is only known to start by starting it.
    pub fn check_start(&self, args: &[String]) -> Result<(), LocalRunError> {
        if self.origin != Origin::Builtin {
            return Ok(());
        }
        wujie_builtins::preflight(&self.name, args).map_err(|source| LocalRunError::CannotStart {
            provider: self.name.clone(),
            source,
        })
    }

    /// The flag a built-in provider takes the agent's task with when it runs without a
    /// terminal (`-p TASK`); `None` for one that needs a terminal and for plugins.
    pub fn task_flag(&self) -> Option<&'static str> {
        match self.origin {
            Origin::Builtin => wujie_builtins::BUILTINS
                .iter()
                .find(|b| b.name == self.name)
                .and_then(|b| b.task_flag),
            Origin::Config | Origin::Installed => None,
        }
    }

    /// How its agent goes along with Ctrl+Z and `fg` on a terminal, as its manifest says (a
    /// built-in provider's from the table of built-in providers).
    pub fn job_control(&self) -> wujie_host::JobControl {
        let caps = &self.manifest.capabilities;
        wujie_host::JobControl {
            agent_takes_ctrl_z: caps.takes_ctrl_z,
            resize_to_repaint: caps.resize_to_repaint,
            agent_suspends_itself: caps.suspends_itself,
        }
    }

    /// Whether it can run with no terminal, as a `wujie worker` runs it: a built-in provider
    /// that takes its task by a flag, or a plugin that does not ask for a terminal (its task
    /// is in `WUJIE_TASK_PROMPT`).
    pub fn runs_headless(&self) -> bool {
        match self.origin {
            Origin::Builtin => self.task_flag().is_some(),
            Origin::Config | Origin::Installed => !self.manifest.capabilities.interactive_pty,
        }
    }

    /// `args` resuming the agent's own session `native` when the provider is a built-in one
    /// whose agent resumes a session by id (see [`wujie_builtins::resume_args`]); `None` for
    /// any other (a plugin's arguments are its own).
    pub fn resume_args(&self, args: &[String], native: &str) -> Option<Vec<String>> {
        match self.origin {
            Origin::Builtin => wujie_builtins::resume_args(&self.name, args, native),
            Origin::Config | Origin::Installed => None,
        }
    }

    /// Resolve the manifest's `command`: with a path separator or a leading `.` it is relative
    /// to the manifest's directory; otherwise it is looked up on `PATH`.
    pub fn adapter_command(
        &self,
        current_exe: &Path,
        path_var: Option<&str>,
    ) -> Result<AdapterCommand, LocalRunError> {
        let Some(manifest_path) = &self.manifest_path else {
            return Ok(AdapterCommand {
                program: current_exe.to_path_buf(),
                leading_args: vec!["adapter".to_owned(), self.name.clone()],
            });
        };
        let manifest_dir = manifest_path
            .parent()
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let command = &self.manifest.command;
        let fail = |problem, tried: PathBuf| LocalRunError::Command {
            name: self.name.clone(),
            command: command.clone(),
            problem,
            tried,
            manifest_dir: manifest_dir.clone(),
        };
        let program = if self.manifest.command_is_relative_to_manifest() {
            // `./adapter` → `<dir>/adapter`, so errors show a clean path.
            let relative: PathBuf = Path::new(command)
                .components()
                .filter(|c| !matches!(c, std::path::Component::CurDir))
                .collect();
            manifest_dir.join(relative)
        } else {
            let found = path_var
                .unwrap_or("")
                .split(':')
                .filter(|d| !d.is_empty())
                .map(|d| Path::new(d).join(command))
                .find(|p| is_executable(p));
            match found {
                Some(p) => p,
                None => return Err(fail("was not found on PATH", PathBuf::from(command))),
            }
        };
        match std::fs::metadata(&program) {
            Err(_) => Err(fail("does not exist", program)),
            Ok(m) if !m.is_file() => Err(fail("is not a file", program)),
            Ok(_) if !is_executable(&program) => Err(fail("is not executable", program)),
            Ok(_) => Ok(AdapterCommand {
                program,
                leading_args: Vec::new(),
            }),
        }
    }
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

pub struct ProviderRegistry<'a> {
    profile: &'a Profile,
    config: Config,
    builtins: &'a [Builtin],
    env: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> ProviderRegistry<'a> {
    pub fn new(
        profile: &'a Profile,
        config: Config,
        builtins: &'a [Builtin],
        env: &'a dyn Fn(&str) -> Option<String>,
    ) -> Self {
        ProviderRegistry {
            profile,
            config,
            builtins,
            env,
        }
    }

    pub fn builtin(&self, name: &str) -> Option<&Builtin> {
        self.builtins.iter().find(|b| b.name == name)
    }

    /// Find a provider by the name the user typed after `--`.
    pub fn resolve(&self, name: &str) -> Result<Provider, LocalRunError> {
        let name = provider_name(name)?;
        if let Some(b) = self.builtin(&name) {
            return Ok(builtin_provider(b));
        }
        if let Some(entry) = self.config.localrun_providers.get(&name) {
            let provider = self.configured(&name, &entry.manifest_path, entry.enabled)?;
            if !provider.enabled {
                return Err(LocalRunError::Disabled(name));
            }
            return Ok(provider);
        }
        let installed = self.installed_manifest_path(&name);
        if installed.is_file() {
            return self.load_plugin(&name, installed, true, Origin::Installed);
        }
        Err(LocalRunError::UnknownProvider {
            name,
            config: self.profile.config_path(),
            installed: self.profile.installed_providers_dir(),
            known: self.list().into_iter().map(|(name, _)| name).collect(),
        })
    }

    /// Every provider the profile knows, in resolution order; broken entries come with their
    /// error so `provider list` can show them instead of failing as a whole.
    pub fn list(&self) -> Vec<(String, Result<Provider, LocalRunError>)> {
        let mut seen = BTreeMap::new();
        let mut out = Vec::new();
        for b in self.builtins {
            seen.insert(b.name.to_owned(), ());
            out.push((b.name.to_owned(), Ok(builtin_provider(b))));
        }
        for (key, entry) in &self.config.localrun_providers {
            if seen.insert(key.clone(), ()).is_some() {
                out.push((
                    key.clone(),
                    Err(LocalRunError::BuiltinConflict {
                        name: key.clone(),
                        path: PathBuf::from(&entry.manifest_path),
                    }),
                ));
                continue;
            }
            out.push((
                key.clone(),
                self.configured(key, &entry.manifest_path, entry.enabled),
            ));
        }
        if let Ok(dir) = std::fs::read_dir(self.profile.installed_providers_dir()) {
            let mut names: Vec<String> = dir
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| !n.starts_with('.'))
                .collect();
            names.sort();
            for name in names {
                if seen.insert(name.clone(), ()).is_some() {
                    continue;
                }
                let path = self.installed_manifest_path(&name);
                out.push((
                    name.clone(),
                    self.load_plugin(&name, path, true, Origin::Installed),
                ));
            }
        }
        out
    }

    pub fn installed_manifest_path(&self, name: &str) -> PathBuf {
        self.profile
            .installed_providers_dir()
            .join(name)
            .join("provider.json")
    }

    fn configured(
        &self,
        key: &str,
        raw_path: &str,
        enabled: bool,
    ) -> Result<Provider, LocalRunError> {
        let path = expand_path(raw_path, self.env).map_err(|reason| LocalRunError::BadConfig {
            path: self.profile.config_path(),
            reason: format!("localrun_providers.{key}.manifest_path: {reason}"),
        })?;
        self.load_plugin(key, path, enabled, Origin::Config)
    }

    fn load_plugin(
        &self,
        key: &str,
        path: PathBuf,
        enabled: bool,
        origin: Origin,
    ) -> Result<Provider, LocalRunError> {
        let manifest = load_manifest(&path)?;
        if self.builtin(&manifest.name).is_some() || self.builtin(key).is_some() {
            return Err(LocalRunError::BuiltinConflict {
                name: manifest.name,
                path,
            });
        }
        if manifest.name != key {
            return Err(LocalRunError::NameMismatch {
                key: key.to_owned(),
                name: manifest.name,
                path,
            });
        }
        Ok(Provider {
            name: manifest.name.clone(),
            origin,
            manifest,
            manifest_path: Some(path),
            enabled,
        })
    }
}

/// The provider name a user typed, normalised as manifests are; refused when it could name
/// anything but one directory below the installed-plugins dir.
/// For an unknown provider's error: the known name `name` is likely a typo of.
pub(crate) fn did_you_mean(name: &str, known: &[String]) -> String {
    // A typo is a few edits away; further than a third of the name is another name.
    known
        .iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(distance, _)| *distance <= (name.chars().count() / 3).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| format!(" (did you mean {k:?}?)"))
        .unwrap_or_default()
}

/// For an unknown provider's error: the names there are.
pub(crate) fn known_names(known: &[String]) -> String {
    if known.is_empty() {
        return String::new();
    }
    format!(". The providers here are {}", known.join(", "))
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

pub fn provider_name(raw: &str) -> Result<String, LocalRunError> {
    manifest::provider_name(raw).map_err(|reason| LocalRunError::InvalidProviderName {
        name: raw.to_owned(),
        reason,
    })
}

fn builtin_provider(b: &Builtin) -> Provider {
    Provider {
        name: b.name.to_owned(),
        origin: Origin::Builtin,
        manifest: b.manifest(),
        manifest_path: None,
        enabled: true,
    }
}

/// Largest `provider.json` read; a manifest is a few hundred bytes.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

pub fn load_manifest(path: &Path) -> Result<Manifest, LocalRunError> {
    let bytes = read_small_file(path, MAX_MANIFEST_BYTES)?;
    Manifest::parse(&bytes).map_err(|error| LocalRunError::Manifest {
        path: path.to_path_buf(),
        error,
    })
}
