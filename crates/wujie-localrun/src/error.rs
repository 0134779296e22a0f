//! Errors of local runs. Each says what happened, what was looked at, and what to do next.

use std::path::{Path, PathBuf};

use wujie_client::ClientError;
use wujie_delivery::reporter::ReporterError;
use wujie_protocol::manifest::ManifestError;
use wujie_store::StoreError;
use wujie_store::outbox::OutboxError;

#[derive(Debug, thiserror::Error)]
pub enum LocalRunError {
    #[error("neither WUJIE_HOME nor HOME is set; set WUJIE_HOME to a directory for Wujie's files")]
    NoHome,
    #[error("invalid profile name {0:?}: use letters, digits, '-' and '_'")]
    InvalidProfileName(String),
    #[error(
        "no profile {name:?}; the profiles here are {}. Create it with `wujie profile create {name}`",
        known.join(", ")
    )]
    NoSuchProfile { name: String, known: Vec<String> },
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
        "unknown provider {name:?}{}: not built in, not in localrun_providers of {config}, not installed in {installed}; install it with `wujie local-run provider install DIR`{}",
        crate::registry::did_you_mean(name, known),
        crate::registry::known_names(known)
    )]
    UnknownProvider {
        name: String,
        config: PathBuf,
        installed: PathBuf,
        /// The providers the profile does know (empty when they were not looked up).
        known: Vec<String>,
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
    #[error(
        "the plugin at {path} has {what}; a provider plugin is a manifest and an adapter: keep data and dependencies outside it, or use it where it is by adding it to `localrun_providers` in {config}"
    )]
    PluginTooLarge {
        path: PathBuf,
        what: String,
        config: PathBuf,
    },
    #[error(transparent)]
    Host(#[from] wujie_host::HostError),
    /// A request to the Wujie server failed; `doing` says what it was for.
    #[error("{doing}")]
    Server {
        doing: String,
        #[source]
        source: ClientError,
    },
    /// The local outbox (the events not delivered yet) could not be read or written.
    #[error("{doing}")]
    Outbox {
        doing: String,
        #[source]
        source: OutboxError,
    },
    /// The reporter could not record or deliver the events.
    #[error("{doing}")]
    Reporter {
        doing: String,
        #[source]
        source: ReporterError,
    },
    /// The profile's database could not be opened or used.
    #[error("{doing} ({database})")]
    Database {
        doing: &'static str,
        /// The SQLite file, or the PostgreSQL URL without its password.
        database: String,
        #[source]
        source: StoreError,
    },
    /// The database server could not be reached; the error names it (without its password).
    #[error(transparent)]
    DatabaseUnreachable(StoreError),
    #[error("the database named in {from} is not usable")]
    BadDatabaseUrl {
        from: String,
        #[source]
        source: StoreError,
    },
    #[error("could not start the embedded server; pass --server URL to use another one")]
    EmbeddedServer(#[source] std::io::Error),
    #[error("no token for {server}: run `wujie login --server {server} --token TOKEN`{}", if *env_hint { " or set WUJIE_TOKEN" } else { "" })]
    NoToken { server: String, env_hint: bool },
    #[error(
        "profile {profile:?} points at {url} but has no token: run `wujie login --server {url} --token TOKEN`"
    )]
    NoProfileToken { profile: String, url: String },
    /// The adapter could not be started; `message` names the program (and a missing `#!`
    /// interpreter, in which case there is no further cause).
    #[error("{message}")]
    Spawn {
        message: String,
        #[source]
        source: Option<std::io::Error>,
    },
    /// A built-in provider's check before a start failed: nothing was created on the server.
    #[error("{provider} cannot start, so nothing was created on the server")]
    CannotStart {
        provider: String,
        #[source]
        source: wujie_builtins::BuiltinError,
    },
    #[error("could not start adapter {program} on a terminal")]
    SpawnPty {
        program: PathBuf,
        #[source]
        source: pty_process::Error,
    },
    /// Reading from or waiting for the adapter failed; `doing` says which.
    #[error("{doing}")]
    Adapter {
        doing: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the adapter was started without a pipe for its stdout")]
    StdoutNotCaptured,
    /// The spool (what was taken out of the adapter's stdout, before it is committed to the
    /// outbox) could not be written for lack of space; what it holds is kept.
    #[error(
        "no space left on device: cannot write the spool {}; everything read before is kept \
         there and in the outbox. Free some space, then run `wujie local-run sync` to deliver it",
        .path.display()
    )]
    SpoolFull {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The spool file could not be created, written or read; `doing` says which.
    #[error("{doing} the spool {}", .path.display())]
    Spool {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot watch for Ctrl+C and the other stop signals")]
    Signals(#[source] std::io::Error),
    #[error(
        "discussion {id} was already turned into issue {issue_key}; continue there with `wujie run {issue_key} -- {provider}`"
    )]
    DiscussionPromoted {
        id: String,
        issue_key: String,
        provider: String,
    },
    #[error(
        "discussion {id} belongs to provider {provider:?}, not {asked:?}; resume it with `wujie discuss --resume {id} -- {provider}`"
    )]
    DiscussionProvider {
        id: String,
        provider: String,
        asked: String,
    },
    #[error(
        "provider {0:?} speaks wujie-localrun-provider.v1, which keeps the Issue-first contract: run it on an issue with `wujie run ISSUE -- {0}`, or upgrade its adapter and manifest to wujie-localrun-provider.v2 to discuss before an issue exists"
    )]
    IssueFirstProvider(String),
    /// `wujie local-run provider check` could not prepare or use its scratch server.
    #[error("provider check: {doing}")]
    CheckServer {
        doing: String,
        #[source]
        source: ClientError,
    },
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

    /// For `map_err`: a failed request to the server, made for `doing`.
    pub fn server(doing: impl Into<String>) -> impl FnOnce(ClientError) -> LocalRunError {
        let doing = doing.into();
        move |source| LocalRunError::Server { doing, source }
    }

    /// For `map_err`: the outbox failed while `doing`.
    pub fn outbox(doing: impl Into<String>) -> impl FnOnce(OutboxError) -> LocalRunError {
        let doing = doing.into();
        move |source| LocalRunError::Outbox { doing, source }
    }

    /// For `map_err`: the reporter failed while `doing`.
    pub fn reporter(doing: impl Into<String>) -> impl FnOnce(ReporterError) -> LocalRunError {
        let doing = doing.into();
        move |source| LocalRunError::Reporter { doing, source }
    }

    /// What `wujie` exits with when a command fails with this error: 2 when the command line
    /// asked for something that cannot be (as for usage errors), 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            LocalRunError::InvalidProfileName(_)
            | LocalRunError::NoSuchProfile { .. }
            | LocalRunError::InvalidProviderName { .. }
            | LocalRunError::UnknownProvider { .. }
            | LocalRunError::Disabled(_)
            | LocalRunError::BuiltinImmutable(_)
            | LocalRunError::IssueFirstProvider(_)
            | LocalRunError::DiscussionPromoted { .. }
            | LocalRunError::DiscussionProvider { .. } => EXIT_USAGE,
            // As the adapter itself would have exited: 127 for a missing agent, 2 for its
            // arguments.
            LocalRunError::CannotStart { source, .. } => source.exit_code(),
            _ => EXIT_FAILURE,
        }
    }
}

/// The exit code of a command that failed.
pub const EXIT_FAILURE: i32 = 1;
/// The exit code of a command line that asks for something that cannot be (clap's code for
/// usage errors too).
pub const EXIT_USAGE: i32 = 2;
