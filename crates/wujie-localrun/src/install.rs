//! Installing, enabling, disabling and removing plugins.
//!
//! Installation copies the plugin directory into the profile's state dir, so later edits of the
//! source do not change what runs. The copy refuses anything that could write or read outside
//! the plugin: symlinks whose target leaves the plugin directory, special files, and names that
//! could traverse (the manifest name becomes a directory name, and is validated by the protocol).
//!
//! A symlink to a file is copied as the file. A symlink to a directory is never followed: the
//! directory is copied where it is, and the link becomes a relative link to that copy. Following
//! it would copy the directory again for every link to it, and links to links multiply: a plugin
//! of nested linked directories made hundreds of thousands of directories. A link to a directory
//! that holds the link itself is refused, since the copy would then contain a loop. The copy is
//! also bounded by bytes, entries and depth, and the copied files keep their permission bits but
//! not set-uid, set-gid or sticky.
//!
//! The copy is made under a hidden staging name beside the destination and renamed into place
//! only when complete, so no failure and no kill leaves half a plugin under the installed name.
//! Installs on a profile take turns (a lock file in the installed dir), so a staging directory
//! found by the next install was left by one that died, and is removed.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use nix::fcntl::{Flock, FlockArg, OFlag};
use wujie_builtins::Builtin;

use crate::error::LocalRunError;
use crate::profile::{Config, Profile, ProviderEntry};
use crate::registry::{Origin, Provider, ProviderRegistry, load_manifest, provider_name};

/// Bounds of a plugin's copy. A provider plugin is a manifest and an adapter, perhaps with a
/// few scripts; these are far above any such plugin, and a directory of data, or links that
/// fan out, reaches them within moments.
const MAX_PLUGIN_BYTES: u64 = 256 * 1024 * 1024;
const MAX_PLUGIN_ENTRIES: u64 = 10_000;
const MAX_PLUGIN_DEPTH: usize = 32;

/// The lock file earlier versions held in the installed dir; the dir itself is locked now.
const OLD_INSTALL_LOCK: &str = ".install-lock";
/// Ends the name of the hidden directory a plugin is copied into (`.<name>.installing`).
const STAGING_SUFFIX: &str = ".installing";

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
    let dest_root = profile.installed_providers_dir();
    std::fs::create_dir_all(&dest_root).map_err(|e| LocalRunError::io(&dest_root, e))?;
    // Held until the config is saved: another install's entry cannot be lost either.
    let _turn = install_lock(&dest_root)?;
    let mut config = profile.load_config()?;
    let dest = dest_root.join(&name);
    if dest.exists() || config.localrun_providers.contains_key(&name) {
        let path = match config.localrun_providers.get(&name) {
            Some(e) => PathBuf::from(&e.manifest_path),
            None => dest.clone(),
        };
        return Err(LocalRunError::AlreadyInstalled { name, path });
    }
    remove_stale_copies(&dest_root);
    let staging = dest_root.join(format!(".{name}{STAGING_SUFFIX}"));
    let mut copy = PluginCopy {
        root: &source,
        config: profile.config_path(),
        bytes_left: MAX_PLUGIN_BYTES,
        entries_left: MAX_PLUGIN_ENTRIES,
    };
    let copied = copy
        .dir(&source, &staging, 0)
        .and_then(|()| std::fs::rename(&staging, &dest).map_err(|e| LocalRunError::io(&dest, e)));
    if let Err(e) = copied {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }

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

/// Waits for any other install on the profile to finish. The lock is on the installed dir
/// itself, so that no lock file is left in it; an earlier version's lock file goes.
fn install_lock(dest_root: &Path) -> Result<Flock<File>, LocalRunError> {
    let io = |e| LocalRunError::io(dest_root, e);
    let dir = File::open(dest_root).map_err(io)?;
    let lock = Flock::lock(dir, FlockArg::LockExclusive).map_err(|(_, errno)| io(errno.into()))?;
    let _ = std::fs::remove_file(dest_root.join(OLD_INSTALL_LOCK));
    Ok(lock)
}

/// Removes what installs that died left under a staging name (also the
/// `.<name>.installing.<pid>` of earlier versions). Called with the install lock held, so no
/// install is writing one. A copy that cannot be removed only takes room: plugin names never
/// start with a dot, so nothing takes it for a plugin.
fn remove_stale_copies(dest_root: &Path) {
    let Ok(entries) = std::fs::read_dir(dest_root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let stale = name
            .to_str()
            .is_some_and(|n| n.starts_with('.') && n.contains(STAGING_SUFFIX));
        if stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// One plugin's copy: the plugin directory (canonical) and what the copy may still take.
struct PluginCopy<'a> {
    root: &'a Path,
    /// Named in the error of a plugin too large to copy, as the way to use it in place.
    config: PathBuf,
    bytes_left: u64,
    entries_left: u64,
}

impl PluginCopy<'_> {
    /// Copies the directory `from`, `depth` levels below the plugin directory, to `to`. `from`
    /// is reached through real directories only, so it is a canonical path too.
    fn dir(&mut self, from: &Path, to: &Path, depth: usize) -> Result<(), LocalRunError> {
        if depth > MAX_PLUGIN_DEPTH {
            return Err(self.too_large(format!(
                "directories nested more than {MAX_PLUGIN_DEPTH} deep"
            )));
        }
        std::fs::create_dir(to).map_err(|e| LocalRunError::io(to, e))?;
        let entries = std::fs::read_dir(from).map_err(|e| LocalRunError::io(from, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| LocalRunError::io(from, e))?;
            self.entries_left = self.entries_left.checked_sub(1).ok_or_else(|| {
                self.too_large(format!(
                    "more than {MAX_PLUGIN_ENTRIES} files and directories"
                ))
            })?;
            let src = entry.path();
            let dst = to.join(entry.file_name());
            let meta = std::fs::symlink_metadata(&src).map_err(|e| LocalRunError::io(&src, e))?;
            if meta.file_type().is_symlink() {
                self.link(from, &src, &dst)?;
            } else if meta.is_dir() {
                self.dir(&src, &dst, depth + 1)?;
            } else {
                self.file(&src, &src, &meta, &dst)?;
            }
        }
        Ok(())
    }

    /// The symlink `src` in the directory `from`: a file it points to is copied, a directory
    /// linked (see the module's documentation), and only inside the plugin.
    fn link(&mut self, from: &Path, src: &Path, dst: &Path) -> Result<(), LocalRunError> {
        let unsafe_link = |reason: String| LocalRunError::UnsafePlugin {
            path: src.to_path_buf(),
            reason,
        };
        let target = src
            .canonicalize()
            .map_err(|_| unsafe_link("it is a dangling symlink".to_owned()))?;
        if !target.starts_with(self.root) {
            return Err(unsafe_link(format!(
                "it is a symlink to {} which is outside the plugin directory {}",
                target.display(),
                self.root.display()
            )));
        }
        let meta = std::fs::metadata(&target).map_err(|e| LocalRunError::io(&target, e))?;
        if !meta.is_dir() {
            return self.file(src, &target, &meta, dst);
        }
        if src.starts_with(&target) {
            return Err(unsafe_link(
                "it is a symlink to one of its own parent directories (a loop)".to_owned(),
            ));
        }
        std::os::unix::fs::symlink(relative_path(from, &target), dst)
            .map_err(|e| LocalRunError::io(dst, e))
    }

    /// Copies the regular file `real` (`src`, or what the link `src` points to) to `dst`, with
    /// its permission bits but no set-uid, set-gid or sticky bit: the copy belongs to whoever
    /// installed it, and a set-uid copy would run as them for anyone who runs it.
    fn file(
        &mut self,
        src: &Path,
        real: &Path,
        meta: &std::fs::Metadata,
        dst: &Path,
    ) -> Result<(), LocalRunError> {
        let not_regular = || LocalRunError::UnsafePlugin {
            path: src.to_path_buf(),
            reason: "it is not a regular file or directory".to_owned(),
        };
        // Looked at before opening, since opening a device may already do something; and
        // opened non-blocking, so a FIFO put in its place meanwhile cannot make us wait.
        if !meta.is_file() {
            return Err(not_regular());
        }
        let input = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
            .open(real)
            .map_err(|e| LocalRunError::io(real, e))?;
        let opened = input.metadata().map_err(|e| LocalRunError::io(real, e))?;
        if !opened.is_file() {
            return Err(not_regular());
        }
        let mut output = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(opened.permissions().mode() & 0o777)
            .open(dst)
            .map_err(|e| LocalRunError::io(dst, e))?;
        // Taken up to one byte past the budget: the file may have grown since it was listed.
        let copied = std::io::copy(&mut input.take(self.bytes_left + 1), &mut output)
            .map_err(|e| LocalRunError::io(real, e))?;
        self.bytes_left = self.bytes_left.checked_sub(copied).ok_or_else(|| {
            self.too_large(format!("more than {} MiB of files", MAX_PLUGIN_BYTES >> 20))
        })?;
        Ok(())
    }

    fn too_large(&self, what: String) -> LocalRunError {
        LocalRunError::PluginTooLarge {
            path: self.root.to_path_buf(),
            what,
            config: self.config.clone(),
        }
    }
}

/// `target` as seen from the directory `from` (both canonical): up to where they part, then
/// down, so that the link points to the same place in a copy of the tree.
fn relative_path(from: &Path, target: &Path) -> PathBuf {
    let shared = from
        .components()
        .zip(target.components())
        .take_while(|(a, b)| a == b)
        .count();
    let up = from.components().count() - shared;
    std::iter::repeat_n(Component::ParentDir, up)
        .chain(target.components().skip(shared))
        .collect()
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
        known: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{PermissionsExt, symlink};

    use super::*;

    /// A plugin named `name` in `dir`: a manifest and an executable adapter.
    fn plugin(dir: &Path, name: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let manifest = serde_json::json!({
            "schema_version": 1,
            "name": name,
            "command": "./adapter",
            "protocol": "wujie-localrun-provider.v1",
        });
        std::fs::write(dir.join("provider.json"), manifest.to_string()).unwrap();
        std::fs::write(dir.join("adapter"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(dir.join("adapter"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        dir.to_path_buf()
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// What is in the installed-plugins dir, but for the hidden files `install` keeps there.
    fn installed(profile: &Profile) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(profile.installed_providers_dir())
            .map(|dir| {
                dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    #[test]
    fn installed_files_lose_set_id_and_sticky_bits() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let dir = plugin(&home.path().join("src"), "setid");
        std::fs::write(dir.join("data"), "x").unwrap();
        std::fs::set_permissions(dir.join("adapter"), std::fs::Permissions::from_mode(0o6755))
            .unwrap();
        std::fs::set_permissions(dir.join("data"), std::fs::Permissions::from_mode(0o1644))
            .unwrap();

        let installed = install(&profile, &[], &dir).unwrap();
        let copy = installed.manifest_path.parent().unwrap();
        assert_eq!(mode(&copy.join("adapter")) & 0o7000, 0, "set-id bits kept");
        assert_eq!(mode(&copy.join("data")) & 0o7000, 0, "sticky bit kept");
        assert_ne!(
            mode(&copy.join("adapter")) & 0o100,
            0,
            "no longer executable"
        );
    }

    /// Each level links twice to the one below: followed, 10 levels make 2^10 copies of the
    /// bottom one; the plugin of the report had more levels and made 336,342 directories.
    #[test]
    fn symlinked_directories_are_linked_in_the_copy_not_copied_again() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let dir = plugin(&home.path().join("src"), "fan");
        std::fs::create_dir(dir.join("d0")).unwrap();
        std::fs::write(dir.join("d0/file"), "bottom").unwrap();
        for level in 1..=10 {
            let d = dir.join(format!("d{level}"));
            std::fs::create_dir(&d).unwrap();
            symlink(format!("../d{}", level - 1), d.join("a")).unwrap();
            symlink(dir.join(format!("d{}", level - 1)), d.join("b")).unwrap();
        }

        let installed = install(&profile, &[], &dir).unwrap();
        let copy = installed.manifest_path.parent().unwrap();
        for link in ["d10/a", "d10/b"] {
            let meta = std::fs::symlink_metadata(copy.join(link)).unwrap();
            assert!(
                meta.file_type().is_symlink(),
                "{link} was copied as a directory"
            );
            assert_eq!(
                std::fs::read_link(copy.join(link)).unwrap(),
                Path::new("../d9")
            );
        }
        let bottom = copy.join("d10/a/b/a/b/a/b/a/b/a/b/file");
        assert_eq!(std::fs::read_to_string(bottom).unwrap(), "bottom");
    }

    fn assert_refused_leaving_nothing(profile: &Profile, dir: &Path, says: &str) {
        let refused = install(profile, &[], dir).unwrap_err().to_string();
        assert!(refused.contains(says), "{refused}");
        assert_eq!(
            installed(profile),
            Vec::<String>::new(),
            "a partial copy is left"
        );
    }

    #[test]
    fn a_plugin_of_more_entries_than_the_limit_is_refused_and_leaves_nothing() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let dir = plugin(&home.path().join("src"), "crowd");
        std::fs::create_dir(dir.join("many")).unwrap();
        for n in 0..MAX_PLUGIN_ENTRIES {
            std::fs::write(dir.join(format!("many/{n}")), "").unwrap();
        }
        assert_refused_leaving_nothing(
            &profile,
            &dir,
            "has more than 10000 files and directories; a provider plugin is a manifest and an adapter",
        );
    }

    #[test]
    fn a_plugin_nested_deeper_than_the_limit_is_refused_and_leaves_nothing() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let dir = plugin(&home.path().join("src"), "deep");
        let mut deep = dir.clone();
        for _ in 0..=MAX_PLUGIN_DEPTH {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        assert_refused_leaving_nothing(&profile, &dir, "has directories nested more than 32 deep");
    }

    #[test]
    fn a_copy_left_by_a_killed_install_is_removed_by_the_next_one() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let left = profile
            .installed_providers_dir()
            .join(".other.installing.4242");
        std::fs::create_dir_all(left.join("half")).unwrap();
        let dir = plugin(&home.path().join("src"), "next");

        install(&profile, &[], &dir).unwrap();
        assert_eq!(installed(&profile), ["next"]);
    }
}
