//! Installing, enabling, disabling and removing plugins.
//!
//! Installation copies the plugin directory into the profile's state dir, so later edits of the
//! source do not change what runs. The copy refuses anything that could write or read outside
//! the plugin: symlinks whose target leaves the plugin directory, special files, and names that
//! could traverse (the manifest name becomes a directory name, and is validated by the protocol).

use std::path::{Path, PathBuf};

use wujie_builtins::Builtin;

use crate::error::LocalRunError;
use crate::profile::{Config, Profile, ProviderEntry};
use crate::registry::{Origin, Provider, ProviderRegistry, load_manifest, provider_name};

/// Largest plugin we copy; a provider is an adapter and a manifest, not a data set.
const MAX_PLUGIN_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug)]
pub struct Installed {
    pub name: String,
    pub manifest_path: PathBuf,
}

pub fn install(
    profile: &Profile,
    builtins: &[Builtin],
    source_dir: &Path,
) -> Result<Installed, LocalRunError> {
    let source = source_dir
        .canonicalize()
        .map_err(|e| LocalRunError::io(source_dir, e))?;
    let source_manifest = source.join("provider.json");
    let manifest = load_manifest(&source_manifest)?;
    let name = manifest.name.clone();
    if builtins.iter().any(|b| b.name == name) {
        return Err(LocalRunError::BuiltinConflict {
            name,
            path: source_manifest,
        });
    }
    // The command must run from the source as it is, so the error names the user's files.
    Provider {
        name: name.clone(),
        origin: Origin::Config,
        manifest: manifest.clone(),
        manifest_path: Some(source_manifest.clone()),
        enabled: true,
    }
    .adapter_command(Path::new("wujie"), std::env::var("PATH").ok().as_deref())?;
    let mut config = profile.load_config()?;
    let dest_root = profile.installed_providers_dir();
    let dest = dest_root.join(&name);
    if dest.exists() || config.localrun_providers.contains_key(&name) {
        let path = match config.localrun_providers.get(&name) {
            Some(e) => PathBuf::from(&e.manifest_path),
            None => dest.clone(),
        };
        return Err(LocalRunError::AlreadyInstalled { name, path });
    }
    std::fs::create_dir_all(&dest_root).map_err(|e| LocalRunError::io(&dest_root, e))?;
    let staging = dest_root.join(format!(".{name}.installing.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let mut budget = MAX_PLUGIN_BYTES;
    let copied = copy_tree(&source, &source, &staging, &mut budget);
    if let Err(e) = copied {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    std::fs::rename(&staging, &dest).map_err(|e| LocalRunError::io(&dest, e))?;

    let manifest_path = dest.join("provider.json");
    config.localrun_providers.insert(
        name.clone(),
        ProviderEntry {
            manifest_path: manifest_path.to_string_lossy().into_owned(),
            enabled: true,
        },
    );
    profile.save_config(&config)?;
    Ok(Installed {
        name,
        manifest_path,
    })
}

fn copy_tree(root: &Path, from: &Path, to: &Path, budget: &mut u64) -> Result<(), LocalRunError> {
    std::fs::create_dir(to).map_err(|e| LocalRunError::io(to, e))?;
    let entries = std::fs::read_dir(from).map_err(|e| LocalRunError::io(from, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| LocalRunError::io(from, e))?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let meta = std::fs::symlink_metadata(&src).map_err(|e| LocalRunError::io(&src, e))?;
        let (real, meta) = if meta.file_type().is_symlink() {
            // A link is copied as what it points to, and only if that stays inside the plugin.
            let target = src
                .canonicalize()
                .map_err(|_| LocalRunError::UnsafePlugin {
                    path: src.clone(),
                    reason: "it is a dangling symlink".to_owned(),
                })?;
            if !target.starts_with(root) {
                return Err(LocalRunError::UnsafePlugin {
                    path: src.clone(),
                    reason: format!(
                        "it is a symlink to {} which is outside the plugin directory {}",
                        target.display(),
                        root.display()
                    ),
                });
            }
            let meta = std::fs::metadata(&target).map_err(|e| LocalRunError::io(&target, e))?;
            (target, meta)
        } else {
            (src.clone(), meta)
        };
        if meta.is_dir() {
            if real != src && (root.starts_with(&real) || src.starts_with(&real)) {
                return Err(LocalRunError::UnsafePlugin {
                    path: src,
                    reason: "it is a symlink to one of its own parent directories (a loop)".into(),
                });
            }
            copy_tree(root, &real, &dst, budget)?;
        } else if meta.is_file() {
            *budget =
                budget
                    .checked_sub(meta.len())
                    .ok_or_else(|| LocalRunError::UnsafePlugin {
                        path: root.to_path_buf(),
                        reason: format!("it is larger than {} MiB", MAX_PLUGIN_BYTES >> 20),
                    })?;
            std::fs::copy(&real, &dst).map_err(|e| LocalRunError::io(&real, e))?;
        } else {
            return Err(LocalRunError::UnsafePlugin {
                path: src,
                reason: "it is not a regular file or directory".to_owned(),
            });
        }
    }
    Ok(())
}

/// Flip `enabled` on a configured plugin. Plugins found only in the installed dir get a
/// config entry so the choice is recorded. Returns the provider's (normalised) name.
pub fn set_enabled(
    profile: &Profile,
    builtins: &[Builtin],
    name: &str,
    enabled: bool,
) -> Result<String, LocalRunError> {
    let name = provider_name(name)?;
    let mut config = profile.load_config()?;
    let entry = entry_for(profile, builtins, &config, &name)?;
    config
        .localrun_providers
        .insert(name.clone(), ProviderEntry { enabled, ..entry });
    profile.save_config(&config)?;
    Ok(name)
}

/// What [`remove`] took away.
#[derive(Debug)]
pub struct Removed {
    pub name: String,
    /// The manifest path of the `localrun_providers` entry that was removed, if there was one.
    /// Files there are the user's unless they are the installed copy.
    pub config_entry: Option<PathBuf>,
    /// The installed copy that was deleted, if there was one.
    pub deleted_copy: Option<PathBuf>,
}

/// Remove a plugin: its config entry and its installed copy, so that no other copy of the same
/// name takes over. The only thing ever deleted is `<installed dir>/<name>`, the directory
/// `install` creates (a symlink there is unlinked, never followed); a directory the user
/// configured by hand is kept.
pub fn remove(
    profile: &Profile,
    builtins: &[Builtin],
    name: &str,
) -> Result<Removed, LocalRunError> {
    let name = provider_name(name)?;
    if builtins.iter().any(|b| b.name == name) {
        return Err(LocalRunError::BuiltinImmutable(name));
    }
    let mut config = profile.load_config()?;
    let entry = config.localrun_providers.remove(&name);
    let copy = profile.installed_providers_dir().join(&name);
    let copy_type = std::fs::symlink_metadata(&copy)
        .ok()
        .map(|m| m.file_type())
        .filter(|t| t.is_dir() || t.is_symlink());
    if entry.is_none() && copy_type.is_none() {
        return Err(unknown(profile, &name));
    }
    // The copy goes first: should saving the config fail, the entry left behind points at
    // nothing and a second `remove` finishes the job.
    let deleted_copy = match copy_type {
        Some(t) if t.is_dir() => {
            std::fs::remove_dir_all(&copy).map_err(|e| LocalRunError::io(&copy, e))?;
            Some(copy)
        }
        Some(_) => {
            std::fs::remove_file(&copy).map_err(|e| LocalRunError::io(&copy, e))?;
            Some(copy)
        }
        None => None,
    };
    if entry.is_some() {
        profile.save_config(&config)?;
    }
    Ok(Removed {
        name,
        config_entry: entry.map(|e| PathBuf::from(e.manifest_path)),
        deleted_copy,
    })
}

fn entry_for(
    profile: &Profile,
    builtins: &[Builtin],
    config: &Config,
    name: &str,
) -> Result<ProviderEntry, LocalRunError> {
    if builtins.iter().any(|b| b.name == name) {
        return Err(LocalRunError::BuiltinImmutable(name.to_owned()));
    }
    if let Some(e) = config.localrun_providers.get(name) {
        return Ok(e.clone());
    }
    let env = |_: &str| None;
    let registry = ProviderRegistry::new(profile, Config::default(), builtins, &env);
    let path = registry.installed_manifest_path(name);
    if path.is_file() {
        return Ok(ProviderEntry {
            manifest_path: path.to_string_lossy().into_owned(),
            enabled: true,
        });
    }
    Err(unknown(profile, name))
}

fn unknown(profile: &Profile, name: &str) -> LocalRunError {
    LocalRunError::UnknownProvider {
        name: name.to_owned(),
        config: profile.config_path(),
        installed: profile.installed_providers_dir(),
    }
}
