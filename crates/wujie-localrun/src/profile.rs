//! Where a profile keeps its files, and its JSON config.
//!
//! With `WUJIE_HOME` set everything lives below it (`config/`, `state/`, `data/`), so tests and
//! users can isolate a profile completely. Otherwise the XDG base directories are used.
//! The default profile uses the roots directly; a named profile gets `profiles/<name>/` below each.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wujie_process::atomic_file::write_atomic;

use crate::error::LocalRunError;
use crate::small_file::read_small_file;

pub const DEFAULT_PROFILE: &str = "default";

/// Largest config or credentials file read; both are a few hundred bytes.
const MAX_PROFILE_FILE_BYTES: u64 = 4 << 20;

#[derive(Debug, Clone)]
pub struct Profile {
    pub name: String,
    pub config_dir: PathBuf,
    pub state_dir: PathBuf,
    pub data_dir: PathBuf,
}

/// Whether another process has the SQLite database at `path` open. A connection holds a read
/// lock on SQLite's lock bytes of the file (512 bytes from 1 GiB) while it reads, and in WAL
/// mode for as long as it is open: the kernel says whether a write lock there would conflict
/// with another process's, without taking one.
fn open_elsewhere(path: &Path) -> std::io::Result<bool> {
    use nix::fcntl::{FcntlArg, fcntl};
    use nix::libc;

    let file = std::fs::File::open(path)?;
    let mut probe = libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0x4000_0000,
        l_len: 512,
        l_pid: 0,
    };
    fcntl(&file, FcntlArg::F_GETLK(&mut probe)).map_err(std::io::Error::from)?;
    Ok(probe.l_type != libc::F_UNLCK as libc::c_short)
}

/// Where a profile's database is opened, and whether it moved there now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabasePlace {
    Here(PathBuf),
    /// Moved from the state directory, where an earlier version kept it.
    Moved {
        from: PathBuf,
        to: PathBuf,
    },
    /// Still in the state directory: it is open (or was left mid-write), so it moves later.
    InUse(PathBuf),
}

impl DatabasePlace {
    pub fn path(&self) -> &Path {
        match self {
            DatabasePlace::Here(path) | DatabasePlace::InUse(path) => path,
            DatabasePlace::Moved { to, .. } => to,
        }
    }
}

/// The three roots everything hangs off, before a profile is chosen.
#[derive(Debug, Clone)]
pub struct Roots {
    pub config: PathBuf,
    pub state: PathBuf,
    pub data: PathBuf,
}

impl Roots {
    /// Roots from the process environment (`WUJIE_HOME`, else XDG variables, else `$HOME`).
    pub fn from_env() -> Result<Roots, LocalRunError> {
        Roots::from_vars(|k| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    pub fn from_vars(var: impl Fn(&str) -> Option<PathBuf>) -> Result<Roots, LocalRunError> {
        if let Some(home) = var("WUJIE_HOME") {
            return Ok(Roots {
                config: home.join("config"),
                state: home.join("state"),
                data: home.join("data"),
            });
        }
        let home = var("HOME").ok_or(LocalRunError::NoHome)?;
        let xdg = |name: &str, fallback: &str| {
            var(name)
                .filter(|p| p.is_absolute())
                .unwrap_or_else(|| home.join(fallback))
                .join("wujie")
        };
        Ok(Roots {
            config: xdg("XDG_CONFIG_HOME", ".config"),
            state: xdg("XDG_STATE_HOME", ".local/state"),
            data: xdg("XDG_DATA_HOME", ".local/share"),
        })
    }

    pub fn profile(&self, name: &str) -> Result<Profile, LocalRunError> {
        let name = name.trim();
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !name.starts_with('-');
        if !valid {
            return Err(LocalRunError::InvalidProfileName(name.to_owned()));
        }
        let pick = |root: &Path| {
            if name == DEFAULT_PROFILE {
                root.to_path_buf()
            } else {
                root.join("profiles").join(name)
            }
        };
        Ok(Profile {
            name: name.to_owned(),
            config_dir: pick(&self.config),
            state_dir: pick(&self.state),
            data_dir: pick(&self.data),
        })
    }
}

impl Roots {
    /// The profiles there are: `default`, and every named one that has a directory.
    pub fn profile_names(&self) -> Vec<String> {
        let mut names = std::collections::BTreeSet::new();
        for root in [&self.config, &self.state, &self.data] {
            let Ok(dir) = std::fs::read_dir(root.join("profiles")) else {
                continue;
            };
            names.extend(
                dir.filter_map(|entry| entry.ok())
                    .filter(|entry| entry.path().is_dir())
                    .filter_map(|entry| entry.file_name().into_string().ok()),
            );
        }
        names.remove(DEFAULT_PROFILE);
        std::iter::once(DEFAULT_PROFILE.to_owned())
            .chain(names)
            .collect()
    }

    /// The profile `name` if it is the default one or was created; a name typed wrong must
    /// not quietly start an empty profile of its own.
    pub fn existing_profile(&self, name: &str) -> Result<Profile, LocalRunError> {
        let profile = self.profile(name)?;
        if profile.exists() {
            return Ok(profile);
        }
        Err(LocalRunError::NoSuchProfile {
            name: profile.name,
            known: self.profile_names(),
        })
    }

    /// Creates the profile `name` (its directories); creating one that exists changes nothing.
    pub fn create_profile(&self, name: &str) -> Result<Profile, LocalRunError> {
        let profile = self.profile(name)?;
        for dir in [&profile.config_dir, &profile.state_dir, &profile.data_dir] {
            std::fs::create_dir_all(dir).map_err(|e| LocalRunError::io(dir, e))?;
        }
        Ok(profile)
    }
}

impl Profile {
    /// The default profile always exists; a named one once it has a directory.
    pub fn exists(&self) -> bool {
        self.name == DEFAULT_PROFILE
            || [&self.config_dir, &self.state_dir, &self.data_dir]
                .iter()
                .any(|dir| dir.is_dir())
    }

    pub fn config_path(&self) -> PathBuf {
        self.config_dir.join("config.json")
    }
    pub fn credentials_path(&self) -> PathBuf {
        self.config_dir.join("credentials.json")
    }
    /// The embedded server's database (also served by `wujie server` on this profile). It is
    /// data, which people back up, so it lives in the data directory.
    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("wujie.db")
    }

    /// Where the database is to be opened: [`Profile::database_path`], after moving there one
    /// that an earlier version kept in the state directory. A database another process has
    /// open is not moved: it is used where it is, and moved by a later start.
    pub fn database_to_open(&self) -> Result<DatabasePlace, LocalRunError> {
        let new = self.database_path();
        let old = self.state_dir.join("wujie.db");
        if new.exists() || !old.exists() {
            return Ok(DatabasePlace::Here(new));
        }
        if open_elsewhere(&old).map_err(|e| LocalRunError::io(&old, e))? {
            return Ok(DatabasePlace::InUse(old));
        }
        std::fs::create_dir_all(&self.data_dir)
            .map_err(|e| LocalRunError::io(&self.data_dir, e))?;
        let beside =
            |path: &Path, suffix: &str| PathBuf::from(format!("{}{suffix}", path.display()));
        // The write-ahead log may hold the last transactions: it goes first, so that the
        // database never sits anywhere without it (a move cut short is finished by the next
        // start, which finds the database still in the state directory). The shared-memory
        // index is rebuilt from them and is left out.
        for suffix in ["-wal", "-journal"] {
            match std::fs::rename(beside(&old, suffix), beside(&new, suffix)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LocalRunError::io(&beside(&old, suffix), e)),
            }
        }
        let _ = std::fs::remove_file(beside(&old, "-shm"));
        std::fs::rename(&old, &new).map_err(|e| LocalRunError::io(&old, e))?;
        Ok(DatabasePlace::Moved { from: old, to: new })
    }
    /// The reporter's durable outbox.
    pub fn outbox_path(&self) -> PathBuf {
        self.state_dir.join("outbox.db")
    }
    /// Where `local-run provider install` copies plugins.
    pub fn installed_providers_dir(&self) -> PathBuf {
        self.state_dir.join("localrun-providers")
    }
    /// Where this profile's `wujie server`s record their addresses while they serve.
    pub fn own_servers_dir(&self) -> PathBuf {
        self.state_dir.join("servers")
    }

    /// The default profile of a `WUJIE_HOME` at `home`.
    #[cfg(test)]
    pub(crate) fn under_home(home: &Path) -> Profile {
        Roots::from_vars(|k| (k == "WUJIE_HOME").then(|| home.to_path_buf()))
            .and_then(|roots| roots.profile(DEFAULT_PROFILE))
            .expect("WUJIE_HOME is set and the default profile's name is valid")
    }

    pub fn load_config(&self) -> Result<Config, LocalRunError> {
        let path = self.config_path();
        match read_small_file(&path, MAX_PROFILE_FILE_BYTES) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| LocalRunError::BadConfig {
                path,
                reason: e.to_string(),
            }),
            Err(LocalRunError::Io { error, .. })
                if error.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(Config::default())
            }
            Err(e) => Err(e),
        }
    }

    pub fn save_config(&self, config: &Config) -> Result<(), LocalRunError> {
        let mut json = serde_json::to_vec_pretty(config).expect("config serializes");
        json.push(b'\n');
        let path = self.config_path();
        write_atomic(&path, &json, 0o644).map_err(|e| LocalRunError::io(&path, e))
    }

    pub fn load_credentials(&self) -> Result<Credentials, LocalRunError> {
        let path = self.credentials_path();
        match read_small_file(&path, MAX_PROFILE_FILE_BYTES) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| LocalRunError::BadConfig {
                path,
                reason: e.to_string(),
            }),
            Err(LocalRunError::Io { error, .. })
                if error.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(Credentials::default())
            }
            Err(e) => Err(e),
        }
    }

    /// Credentials hold plaintext tokens (the server keeps only hashes), so the file is 0600.
    pub fn save_credentials(&self, creds: &Credentials) -> Result<(), LocalRunError> {
        let json = serde_json::to_vec_pretty(creds).expect("credentials serialize");
        let path = self.credentials_path();
        write_atomic(&path, &json, 0o600).map_err(|e| LocalRunError::io(&path, e))
    }
}

/// The profile's `config.json`. Unknown keys are kept so hand edits survive a rewrite.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerSetting>,
    /// The database this profile's server (and embedded server) keeps its data in: a
    /// `postgres://` URL for a team server; the profile's SQLite file when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    #[serde(default)]
    pub localrun_providers: BTreeMap<String, ProviderEntry>,
    /// Where `wujie run --worktree` makes issue worktrees (`<dir>/<key>`); beside the
    /// repository (`<repo>.wujie/<key>`) when absent. `WUJIE_WORKTREES_DIR` comes first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktrees_dir: Option<PathBuf>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// Keys of `config.json` read through [`Config::other`] by the commands that use them: the
/// price table of `wujie cost` and the server, and the command `wujie notify` runs.
const OTHER_KNOWN_KEYS: &[&str] = &["prices", "notify_command"];

impl Config {
    /// The keys no part of Wujie reads (a typo, or a setting of another version): kept in the
    /// file, but worth a warning, since they change nothing.
    pub fn unknown_keys(&self) -> Vec<&str> {
        self.other
            .keys()
            .map(String::as_str)
            .filter(|key| !OTHER_KNOWN_KEYS.contains(key))
            .collect()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerSetting {
    pub url: String,
}

/// One `localrun_providers` entry, exactly as the seed shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProviderEntry {
    pub manifest_path: String,
    #[serde(default = "default_true")]
    pub enabled: bool,
}

fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Credentials {
    /// Token of this profile's own (embedded or `wujie server`) database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_token: Option<String>,
    /// Token for the remote server named in the config, stored by `wujie login`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_token: Option<String>,
}

/// Expand `~` and `$VAR` / `${VAR}` in a configured manifest path (seed: "manifest_path 支持 ~
/// 和环境变量展开"). An unset variable is an error rather than an empty string, so a typo does
/// not silently point somewhere else.
pub fn expand_path(raw: &str, var: impl Fn(&str) -> Option<String>) -> Result<PathBuf, String> {
    let mut out = String::new();
    let mut rest = raw;
    if rest == "~" || rest.starts_with("~/") {
        out.push_str(&var("HOME").ok_or("`~` used but HOME is not set")?);
        rest = &rest[1..];
    }
    let mut chars = rest.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let after = &rest[i + 1..];
        let (name, consumed) = if let Some(inner) = after.strip_prefix('{') {
            let end = inner
                .find('}')
                .ok_or_else(|| format!("unclosed `${{` in {raw:?}"))?;
            (&inner[..end], end + 2)
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            out.push('$');
            continue;
        }
        let value = var(name).ok_or_else(|| format!("environment variable ${name} is not set"))?;
        out.push_str(&value);
        for _ in 0..consumed {
            chars.next();
        }
    }
    Ok(PathBuf::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn expands_tilde_and_variables() {
        let v = vars(&[("HOME", "/home/me"), ("DEV", "/src"), ("X_1", "x")]);
        assert_eq!(
            expand_path("~/p/provider.json", &v).unwrap(),
            PathBuf::from("/home/me/p/provider.json")
        );
        assert_eq!(
            expand_path("$DEV/a/${X_1}y", &v).unwrap(),
            PathBuf::from("/src/a/xy")
        );
        assert_eq!(expand_path("/a$/b", &v).unwrap(), PathBuf::from("/a$/b"));
        assert!(expand_path("$NOPE/x", &v).unwrap_err().contains("NOPE"));
        assert!(expand_path("${DEV", &v).unwrap_err().contains("unclosed"));
    }

    #[test]
    fn a_database_an_earlier_version_kept_as_state_moves_to_data_with_its_log() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let old = profile.state_dir.join("wujie.db");
        std::fs::create_dir_all(&profile.state_dir).unwrap();
        std::fs::write(&old, "the issues").unwrap();
        std::fs::write(profile.state_dir.join("wujie.db-wal"), "the last ones").unwrap();
        std::fs::write(profile.state_dir.join("wujie.db-shm"), "").unwrap();
        let new = profile.database_path();
        assert_eq!(
            profile.database_to_open().unwrap(),
            DatabasePlace::Moved {
                from: old.clone(),
                to: new.clone()
            }
        );
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "the issues");
        assert_eq!(
            std::fs::read_to_string(profile.data_dir.join("wujie.db-wal")).unwrap(),
            "the last ones"
        );
        assert!(!old.exists() && !profile.state_dir.join("wujie.db-shm").exists());
        assert_eq!(
            profile.database_to_open().unwrap(),
            DatabasePlace::Here(new)
        );
    }

    #[test]
    fn wujie_home_holds_everything() {
        let roots = Roots::from_vars(|k| (k == "WUJIE_HOME").then(|| PathBuf::from("/w"))).unwrap();
        let p = roots.profile("default").unwrap();
        assert_eq!(p.config_path(), PathBuf::from("/w/config/config.json"));
        assert_eq!(p.database_path(), PathBuf::from("/w/data/wujie.db"));
        let q = roots.profile("team").unwrap();
        assert_eq!(q.state_dir, PathBuf::from("/w/state/profiles/team"));
        assert!(roots.profile("../x").is_err());
        assert!(roots.profile("").is_err());
    }
}
