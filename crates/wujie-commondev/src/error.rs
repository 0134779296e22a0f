//! Errors of commondev. Each says what happened, what was looked at, and what to do next.

use std::path::PathBuf;
use std::time::Duration;

use wujie_protocol::driver::DriverError;
use wujie_protocol::sidecar::{ResultError, RpcError};

use crate::tree::TreeStop;

/// One place a lookup looked at, and what it found there.
#[derive(Debug, Clone)]
pub struct Looked {
    pub place: String,
    pub found: String,
}

fn list(looked: &[Looked]) -> String {
    looked
        .iter()
        .enumerate()
        .map(|(i, l)| format!("\n  {}. {} — {}", i + 1, l.place, l.found))
        .collect()
}

/// The last lines the sidecar wrote to stderr, with the log they came from.
#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    pub log: PathBuf,
    pub tail: String,
}

impl std::fmt::Display for StderrTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.tail.trim().is_empty() {
            write!(
                f,
                "\n(sidecar stderr was empty; log: {})",
                self.log.display()
            )
        } else {
            write!(
                f,
                "\n--- last sidecar stderr lines ({}) ---\n{}",
                self.log.display(),
                self.tail.trim_end()
            )
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CommondevError {
    #[error(
        "no driver for agent CLI {cli:?}: looked for {cli}/driver.json in, in order:{}\n\
         To add this backend, create {}/driver.json and its sidecar script there \
         (see examples/custom-cli/README.md).",
        list(looked), override_dir.display()
    )]
    DriverNotFound {
        cli: String,
        looked: Vec<Looked>,
        override_dir: PathBuf,
    },

    #[error(
        "driver {driver_file} names the sidecar script {script:?}, which is in none of:{}\n\
         Put the script next to the driver.json or fix its `script` field.",
        list(looked)
    )]
    ScriptNotFound {
        driver_file: PathBuf,
        script: String,
        looked: Vec<Looked>,
    },

    #[error("invalid driver {} (edit that file)", file.display())]
    Driver { file: PathBuf, source: DriverError },

    #[error(
        "no node executable to run the sidecar:{}\nInstall Node.js 18+ or set WUJIE_NODE to its path.",
        list(looked)
    )]
    NodeNotFound { looked: Vec<Looked> },

    #[error(
        "the agent CLI that driver {} declares is not there:{}\nFix: point `cliPath` at the CLI on \
         that machine in the local override {} (copy the driver.json there first if it is not \
         that file; the override comes first in the lookup chain).",
        driver_file.display(), list(looked), override_file.display()
    )]
    CliNotFound {
        looked: Vec<Looked>,
        driver_file: PathBuf,
        override_file: PathBuf,
    },

    #[error("agent CLI name {0:?} is not a plain directory name (letters, digits, `-`, `_`, `.`)")]
    BadCliName(String),

    #[error("{what} {}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("could not start {program}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },

    #[error("sidecar did not answer `ping` within {after:?} (driver {driver}); {stopped}{stderr}")]
    PingTimeout {
        after: Duration,
        driver: String,
        stderr: StderrTail,
        stopped: Box<TreeStop>,
    },

    #[error("sidecar did not answer `{method}` within {after:?}; {stopped}{stderr}")]
    CallTimeout {
        method: String,
        after: Duration,
        stderr: StderrTail,
        stopped: Box<TreeStop>,
    },

    #[error("sidecar exited before answering `{method}` ({status}){stderr}")]
    SidecarExited {
        method: String,
        status: String,
        stderr: StderrTail,
    },

    #[error("sidecar broke the JSON-RPC contract while answering `{method}`: {detail}{stderr}")]
    Protocol {
        method: String,
        detail: String,
        stderr: StderrTail,
    },

    #[error("sidecar answered `{method}` with error {}: {}{stderr}", error.code, error.message)]
    Rpc {
        method: String,
        error: Box<RpcError>,
        stderr: StderrTail,
    },

    // The sidecar's stderr follows what was wrong with its result, so that is written into the
    // message here rather than returned as `source()`, where it would come after the stderr.
    #[error("{error}{stderr}")]
    BadResult {
        error: ResultError,
        stderr: StderrTail,
    },

    #[error(
        "SESSION DRIFT on branch {label}: Wujie resumes backend session {expected:?} but the sidecar \
         reported {reported:?} after `{method}`{}. The sidecar silently switched sessions; refusing to \
         continue. Fix the sidecar so that it resumes only the real session id it was given: Wujie \
         hands it over in the environment variable WUJIE_RESUME_SESSION_ID each time it starts the \
         sidecar (every one-shot `wujie branch` command starts a new one, so an id kept only in \
         the sidecar's memory is gone by the next call); resume that id and report it from `ping` \
         and `prompt` (see runtime/README.md, \"Session ids\").",
        if reported == label { " — the branch label, so it did not resume" } else { "" }
    )]
    Drift {
        label: String,
        method: String,
        expected: String,
        reported: String,
    },

    #[error("branch {label} is not open here (no {}). Open it first with commondev_branch_open / `wujie branch open`.", record.display())]
    BranchNotFound { label: String, record: PathBuf },

    #[error("branch {label} is closed. Open it again to resume its backend session.")]
    BranchClosed { label: String },

    #[error(
        "branch label {label} already belongs to project {existing_project:?} branch {existing_branch:?}; \
         choose another branch name"
    )]
    LabelCollision {
        label: String,
        existing_project: String,
        existing_branch: String,
    },

    #[error(
        "branch {label} was opened with agent CLI {existing:?}, not {requested:?}; a branch keeps one \
         backend session. Open a new branch for another backend."
    )]
    AgentMismatch {
        label: String,
        existing: String,
        requested: String,
    },

    #[error("workdir {} does not exist or is not a directory; create it or pass another --workdir", .0.display())]
    NoWorkdir(PathBuf),

    #[error("model settings for llmConfig {config:?} are incomplete: {missing}. Set them in {} or with {env}.", file.display())]
    LlmSettingsMissing {
        config: &'static str,
        missing: String,
        file: PathBuf,
        env: String,
    },

    #[error(
        "the model settings name {variable} as the variable holding the API key, but {variable} is \
         not set. Set it in the environment Wujie runs in (or in the driver's `env`), or point \
         api_key_env / WUJIE_LLM_API_KEY_ENV at the variable that holds the key."
    )]
    LlmKeyUnset { variable: String },

    #[error("invalid model settings in {}: {detail}", file.display())]
    LlmSettingsInvalid { file: PathBuf, detail: String },

    #[error("runtime {0:?} is not understood; use \"local\" or \"ssh://[user@]host[:port]\"")]
    BadRuntime(String),

    #[error("ssh to {target} failed: {what}. {fix}\nssh said: {said}")]
    Ssh {
        target: String,
        /// What went wrong, read from ssh's exit status and stderr.
        what: String,
        /// What to do about it.
        fix: String,
        said: String,
    },

    #[error(
        "llmConfig {0} needs local files and is not supported over ssh yet; use a driver with llmConfig \"none\" on the remote host"
    )]
    LlmOverSsh(String),

    #[error(
        "cannot report this branch's turns on issue {issue}: {detail}. Pass an existing issue \
             key with --issue / `issue` (see `wujie issue list`), or open the branch without one."
    )]
    IssueUnusable { issue: String, detail: String },

    #[error("cannot give branch {branch} a worktree of its own")]
    Worktree {
        branch: String,
        #[source]
        source: wujie_git::WorktreeError,
    },

    #[error("Wujie is shutting down: the call was stopped and the sidecar's process tree with it")]
    ShuttingDown,

    #[error("stored branch record {} is unreadable: {detail}", path.display())]
    BadRecord { path: PathBuf, detail: String },
}

pub type Result<T, E = CommondevError> = std::result::Result<T, E>;
