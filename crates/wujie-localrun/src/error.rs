//! Errors of local runs. Each says what happened, what was looked at, and what to do next.

use std::path::{Path, PathBuf};

use wujie_protocol::manifest::ManifestError;

#[derive(Debug, thiserror::Error)]
pub enum LocalRunError {
    #[error("neither WUJIE_HOME nor HOME is set; set WUJIE_HOME to a directory for Wujie's files")]
    NoHome,
    #[error("invalid profile name {0:?}: use letters, digits, '-' and '_'")]
    InvalidProfileName(String),
    // The cause is part of the message and so not also a `source()`: a chain printer would
    // print it twice.
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path} is not valid: {reason}")]
    BadConfig { path: PathBuf, reason: String },
    #[error("{path}: {error}")]
    Manifest { path: PathBuf, error: ManifestError },
    #[error(
        "unknown provider {name:?}: not built in, not in localrun_providers of {config}, not installed in {installed}; install it with `wujie local-run provider install DIR`"
    )]
    UnknownProvider {
        name: String,
        config: PathBuf,
        installed: PathBuf,
    },
    #[error(
        "conflict: plugin {name:?} ({path}) has the name of a built-in provider; built-in providers cannot be overridden, choose another `name`"
    )]
    BuiltinConflict { name: String, path: PathBuf },
    #[error(
        "provider {name:?} is configured under the key {key:?} but its manifest {path} says name {name:?}; make the key and the manifest name the same"
    )]
    NameMismatch {
        key: String,
        name: String,
        path: PathBuf,
    },
    #[error("provider {0:?} is disabled; enable it with `wujie local-run provider enable {0}`")]
    Disabled(String),
    #[error("{0:?} is a built-in provider; built-in providers cannot be disabled or removed")]
    BuiltinImmutable(String),
    #[error(
        "provider {name:?} is already installed at {path}; remove it first with `wujie local-run provider remove {name}`"
    )]
    AlreadyInstalled { name: String, path: PathBuf },
    #[error(
        "provider {name:?}: command {command:?} {problem} (tried {tried}; manifest dir {manifest_dir}); use a path relative to the manifest directory and make it executable (chmod +x)"
    )]
    Command {
        name: String,
        command: String,
        problem: &'static str,
        tried: PathBuf,
        manifest_dir: PathBuf,
    },
    #[error("refusing to install {path}: {reason}")]
    UnsafePlugin { path: PathBuf, reason: String },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Host(#[from] wujie_host::HostError),
    #[error(
        "invalid provider name {name:?}: {reason}; a provider is named by one word such as `fake-provider` (see `wujie local-run provider list`)"
    )]
    InvalidProviderName { name: String, reason: &'static str },
    #[error("cannot read {path}: it is a {what}, not a regular file")]
    NotRegularFile { path: PathBuf, what: &'static str },
    #[error("cannot read {path}: it is larger than {}", human_size(*max_bytes))]
    FileTooLarge { path: PathBuf, max_bytes: u64 },
}

fn human_size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

impl LocalRunError {
    pub fn io(path: &Path, error: std::io::Error) -> LocalRunError {
        LocalRunError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}
