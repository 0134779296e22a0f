//! Where a sidecar runs: on this machine, or on another host over ssh. Both use the same driver
//! data and the same sidecar contract; only how the command line is built differs.
//!
//! Every sidecar gets, besides its driver's `env`, these generic variables:
//! `WUJIE_SESSION_LABEL` (the branch label), `WUJIE_RESUME_SESSION_ID` (the backend's real session
//! id, only once it is known), `WUJIE_BRANCH_DIR`, `WUJIE_SESSION_DIR` (the branch's session
//! directory, `session<sessionDirSuffix>`), `WUJIE_LLM_DIR` (only when `llmConfig` is not
//! `none`), `WUJIE_CLI_PATH` (the expanded `cliPath`, when declared) and `WUJIE_DRIVER_FILE`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use wujie_protocol::driver::{NodeChoice, PlaceholderValues};

use crate::error::{CommondevError, Looked, Result};
use crate::registry::ResolvedDriver;
use crate::sidecar::SidecarCommand;
use crate::tree::RemoteGroup;

/// How a branch selects where its sidecar runs: `"local"` (default) or
/// `"ssh://[user@]host[:port]"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runtime {
    Local,
    Ssh(SshTarget),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    /// `user@host` or `host`.
    pub destination: String,
    pub port: Option<u16>,
}

impl Runtime {
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.is_empty() || text == "local" {
            return Ok(Self::Local);
        }
        let bad = || CommondevError::BadRuntime(text.to_owned());
        let rest = text.strip_prefix("ssh://").ok_or_else(bad)?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (destination, port) = match rest.rsplit_once(':') {
            Some((dest, port)) => (dest, Some(port.parse::<u16>().map_err(|_| bad())?)),
            None => (rest, None),
        };
        let host = destination.rsplit('@').next().unwrap_or_default();
        let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@');
        if host.is_empty() || destination.starts_with('-') || !destination.chars().all(ok_char) {
            return Err(bad());
        }
        Ok(Self::Ssh(SshTarget {
            destination: destination.to_owned(),
            port,
        }))
    }

    pub fn to_spec(&self) -> String {
        match self {
            Self::Local => "local".to_owned(),
            Self::Ssh(t) => match t.port {
                Some(port) => format!("ssh://{}:{port}", t.destination),
                None => format!("ssh://{}", t.destination),
            },
        }
    }
}

/// What the branch contributes to the sidecar's command line.
#[derive(Debug, Clone)]
pub struct BranchLaunch<'a> {
    pub label: &'a str,
    /// `<project>/<branch>`, the `{sessionName}` placeholder.
    pub session_name: &'a str,
    pub workdir: &'a Path,
    pub resume_session_id: Option<&'a str>,
    /// Local branch directory (record, logs, llm files).
    pub branch_dir: &'a Path,
    /// Directory written by the model-source writer, if the driver asked for one.
    pub llm_dir: Option<&'a Path>,
    /// `{dataDir}` for local sidecars.
    pub data_dir: &'a Path,
}

/// Settings that come from the environment of the product and are explicit in tests.
#[derive(Debug, Clone, Default)]
pub struct RuntimeSettings {
    /// A node executable to prefer for `"node": "auto"` (`WUJIE_NODE`).
    pub node_override: Option<PathBuf>,
    /// Extra ssh options, e.g. `-i key -o UserKnownHostsFile=…` (`WUJIE_SSH_OPTIONS`).
    pub ssh_options: Vec<String>,
    /// Remote directory for pushed sidecars and branch dirs, relative to the remote home unless
    /// absolute (`WUJIE_SSH_REMOTE_ROOT`, default `.wujie/commondev`).
    pub ssh_remote_root: Option<String>,
}

impl RuntimeSettings {
    pub fn from_env() -> Self {
        Self {
            node_override: std::env::var_os("WUJIE_NODE").map(PathBuf::from),
            ssh_options: std::env::var("WUJIE_SSH_OPTIONS")
                .map(|s| s.split_whitespace().map(str::to_owned).collect())
                .unwrap_or_default(),
            ssh_remote_root: std::env::var("WUJIE_SSH_REMOTE_ROOT")
                .ok()
                .filter(|s| !s.is_empty()),
        }
    }

    fn remote_root(&self) -> &str {
        self.ssh_remote_root
            .as_deref()
            .unwrap_or(DEFAULT_REMOTE_ROOT)
    }
}

fn generic_env(
    resolved: &ResolvedDriver,
    launch: &BranchLaunch<'_>,
    branch_dir: &str,
    session_dir: &str,
    llm_dir: Option<&str>,
    cli_path: Option<&str>,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("WUJIE_SESSION_LABEL".into(), launch.label.to_owned());
    if let Some(real) = launch.resume_session_id {
        env.insert("WUJIE_RESUME_SESSION_ID".into(), real.to_owned());
    }
    env.insert("WUJIE_BRANCH_DIR".into(), branch_dir.to_owned());
    env.insert("WUJIE_SESSION_DIR".into(), session_dir.to_owned());
    if let Some(dir) = llm_dir {
        env.insert("WUJIE_LLM_DIR".into(), dir.to_owned());
    }
    if let Some(path) = cli_path {
        env.insert("WUJIE_CLI_PATH".into(), path.to_owned());
    }
    env.insert(
        "WUJIE_DRIVER_FILE".into(),
        resolved.driver_file.display().to_string(),
    );
    env
}

fn session_dir_name(resolved: &ResolvedDriver) -> String {
    format!("session{}", resolved.driver.session_dir_suffix)
}

fn driver_error(
    resolved: &ResolvedDriver,
) -> impl Fn(wujie_protocol::driver::DriverError) -> CommondevError + '_ {
    |source| CommondevError::Driver {
        file: resolved.driver_file.clone(),
        source,
    }
}

/// Builds the command that runs a sidecar on this machine.
pub fn local_command(
    resolved: &ResolvedDriver,
    launch: &BranchLaunch<'_>,
    settings: &RuntimeSettings,
) -> Result<SidecarCommand> {
    if !launch.workdir.is_dir() {
        return Err(CommondevError::NoWorkdir(launch.workdir.to_path_buf()));
    }
    let node = find_local_node(&resolved.driver.node, settings, &resolved.driver_file)?;
    let values = PlaceholderValues {
        workdir: launch.workdir.display().to_string(),
        session_id: launch.label.to_owned(),
        session_name: launch.session_name.to_owned(),
        data_dir: launch.data_dir.display().to_string(),
        plugin_dir: resolved.plugin_dir.display().to_string(),
    };
    let expanded = resolved
        .driver
        .expand(&values)
        .map_err(driver_error(resolved))?;
    if let Some(cli) = &expanded.cli_path
        && !Path::new(cli).is_file()
    {
        return Err(cli_missing(resolved, launch, cli, "this machine"));
    }
    let session_dir = launch.branch_dir.join(session_dir_name(resolved));
    std::fs::create_dir_all(&session_dir).map_err(|source| CommondevError::Io {
        what: "could not create the session directory",
        path: session_dir.clone(),
        source,
    })?;
    let mut env = generic_env(
        resolved,
        launch,
        &launch.branch_dir.display().to_string(),
        &session_dir.display().to_string(),
        launch.llm_dir.map(|d| d.display().to_string()).as_deref(),
        expanded.cli_path.as_deref(),
    );
    env.extend(expanded.env);
    let mut args = vec![resolved.script.display().to_string()];
    args.extend(expanded.args);
    Ok(SidecarCommand {
        program: node,
        args,
        env,
        cwd: Some(launch.workdir.to_path_buf()),
        stderr_log: launch.branch_dir.join("sidecar.log"),
        remote_group: None,
    })
}

/// The declared CLI is not where `cliPath` says: name the place, where it was declared, and
/// the file to edit (the local override, first in the lookup chain).
fn cli_missing(
    resolved: &ResolvedDriver,
    launch: &BranchLaunch<'_>,
    cli: &str,
    host: &str,
) -> CommondevError {
    CommondevError::CliNotFound {
        looked: vec![Looked {
            place: format!(
                "{cli} (`cliPath` in {}, on {host})",
                resolved.driver_file.display()
            ),
            found: "missing".into(),
        }],
        override_file: launch
            .data_dir
            .join("runtime")
            .join(&resolved.cli)
            .join("driver.json"),
        driver_file: resolved.driver_file.clone(),
    }
}

fn find_local_node(
    choice: &NodeChoice,
    settings: &RuntimeSettings,
    driver_file: &Path,
) -> Result<PathBuf> {
    let mut looked = Vec::new();
    let mut check = |path: PathBuf, source: &str| {
        if path.is_file() {
            return Some(path);
        }
        looked.push(Looked {
            place: format!("{} ({source})", path.display()),
            found: "missing".into(),
        });
        None
    };
    match choice {
        NodeChoice::Path(path) => {
            let source = format!("`node` in {}", driver_file.display());
            if let Some(found) = check(PathBuf::from(path), &source) {
                return Ok(found);
            }
        }
        NodeChoice::Auto => {
            if let Some(path) = &settings.node_override
                && let Some(found) = check(path.clone(), "WUJIE_NODE")
            {
                return Ok(found);
            }
            let path_var = std::env::var_os("PATH").unwrap_or_default();
            for dir in std::env::split_paths(&path_var) {
                if let Some(found) = check(dir.join("node"), "PATH") {
                    return Ok(found);
                }
            }
        }
    }
    Err(CommondevError::NodeNotFound { looked })
}

/// Quotes one word for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+%".contains(c))
    {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// FNV-1a: a stable content hash for naming the pushed sidecar (not for security).
fn content_hash(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Remote directory (relative to the remote home) holding Wujie's commondev files.
const DEFAULT_REMOTE_ROOT: &str = ".wujie/commondev";

fn ssh_base(target: &SshTarget, settings: &RuntimeSettings) -> Vec<String> {
    let mut args = vec![
        "-o".into(),
        "BatchMode=yes".into(),
        "-o".into(),
        "ConnectTimeout=15".into(),
    ];
    if let Some(port) = target.port {
        args.push("-p".into());
        args.push(port.to_string());
    }
    args.extend(settings.ssh_options.iter().cloned());
    args
}

async fn run_quick(program: &str, args: &[String]) -> Result<std::process::Output> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    match tokio::time::timeout(Duration::from_secs(60), cmd.output()).await {
        Ok(output) => output.map_err(|source| CommondevError::Spawn {
            program: program.into(),
            source,
        }),
        Err(_) => Err(CommondevError::Ssh {
            target: args.last().cloned().unwrap_or_default(),
            what: format!("{program} got no answer within 60 s"),
            fix: "Check that the host is reachable and its sshd responds.".into(),
            said: String::new(),
        }),
    }
}

/// Which step failed, for telling a missing scp apart from a refused login.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SshStep {
    Command,
    Copy,
}

/// Reads what went wrong from ssh's (or scp's) stderr and gives the fix for it.
fn ssh_failure(target: &SshTarget, step: SshStep, output: &std::process::Output) -> CommondevError {
    let said = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    let port = target.port.unwrap_or(22);
    let host = target.destination.rsplit('@').next().unwrap_or_default();
    let has = |needle: &str| said.contains(needle);
    let (what, fix) = if has("Host key verification failed")
        || has("No ED25519 host key")
        || has("No RSA host key")
        || has("No ECDSA host key")
        || has("REMOTE HOST IDENTIFICATION HAS CHANGED")
    {
        (
            "the host's key is not in known_hosts (or does not match it)".to_owned(),
            format!(
                "Wujie runs ssh with BatchMode=yes, so it cannot ask to trust a new host key: add \
                 it to known_hosts first (connect once by hand with `ssh -p {port} {}`, or \
                 `ssh-keyscan -p {port} {host} >> ~/.ssh/known_hosts` after checking the \
                 fingerprint), then retry.",
                target.destination
            ),
        )
    } else if has("Connection refused") {
        (
            format!("nothing accepted the connection on port {port}"),
            format!(
                "Check that sshd is running on {host} and listening on port {port} (give the \
                 port as ssh://{}:PORT).",
                target.destination
            ),
        )
    } else if has("Could not resolve hostname") || has("Name or service not known") {
        (
            format!("the host name {host:?} does not resolve"),
            "Check the host name in the runtime (ssh://[user@]host[:port]).".to_owned(),
        )
    } else if has("Connection timed out") || has("No route to host") {
        (
            format!("{host} port {port} could not be reached"),
            "Check the network path and any firewall between here and the host.".to_owned(),
        )
    } else if has("Permission denied") {
        (
            "the host refused key authentication".to_owned(),
            "Wujie runs ssh with BatchMode=yes, so it never waits for a password: set up \
             key-based login for this host (ssh-copy-id), then retry."
                .to_owned(),
        )
    } else if step == SshStep::Copy
        && (has("subsystem request failed")
            || has("scp: command not found")
            || has("scp: not found")
            || has("Connection closed"))
    {
        (
            "the sidecar could not be copied: the host offers neither an sftp subsystem nor an \
             scp program"
                .to_owned(),
            "Install scp / the sftp server on the host (e.g. the openssh-sftp-server package) or \
             enable `Subsystem sftp` in its sshd_config, then retry."
                .to_owned(),
        )
    } else {
        let program = if step == SshStep::Copy { "scp" } else { "ssh" };
        (
            format!("{program} exited with {}", output.status),
            "See what ssh said below.".to_owned(),
        )
    };
    CommondevError::Ssh {
        target: target.destination.clone(),
        what,
        fix,
        said,
    }
}

/// Runs one command on the host; exit status 255 (ssh's own failure) becomes an error that
/// says what failed.
async fn remote(target: &SshTarget, settings: &RuntimeSettings, command: String) -> Result<bool> {
    let mut args = ssh_base(target, settings);
    args.push(target.destination.clone());
    args.push("--".into());
    args.push(command);
    let output = run_quick("ssh", &args).await?;
    match output.status.code() {
        Some(0) => Ok(true),
        Some(255) | None => Err(ssh_failure(target, SshStep::Command, &output)),
        Some(_) => Ok(false),
    }
}

/// Copies the sidecar's directory (the script and files beside it, such as a bundled CLI) to
/// the host once, under a name derived from its contents, and returns the remote directory and
/// script path. A `.complete` marker is written last, so a half-finished copy is redone.
/// Fails fast, with an explanation, when key-based login is not set up.
pub async fn push_sidecar(
    resolved: &ResolvedDriver,
    target: &SshTarget,
    settings: &RuntimeSettings,
) -> Result<(String, String)> {
    let local_dir = resolved
        .script
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let read_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CommondevError::Io {
            what: "could not read the sidecar files",
            path,
            source,
        }
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&local_dir)
        .map_err(read_err(&local_dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut fingerprint = Vec::new();
    for file in &files {
        fingerprint.extend(
            file.file_name()
                .map(|n| n.as_encoded_bytes())
                .unwrap_or_default(),
        );
        fingerprint.push(0);
        fingerprint.extend(std::fs::read(file).map_err(read_err(file))?);
    }
    let dir = format!(
        "{}/sidecars/{}-{}",
        settings.remote_root(),
        resolved.cli,
        content_hash(&fingerprint)
    );
    let script_name = resolved
        .script
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let script = format!("{dir}/{script_name}");
    let marker = shell_quote(&format!("{dir}/.complete"));
    if remote(target, settings, format!("test -f {marker}")).await? {
        return Ok((dir, script));
    }
    if !remote(target, settings, format!("mkdir -p {}", shell_quote(&dir))).await? {
        return Err(CommondevError::Ssh {
            target: target.destination.clone(),
            what: format!("could not create {dir} on the host"),
            fix: "Check that the remote root (WUJIE_SSH_REMOTE_ROOT, default \
                  .wujie/commondev in the remote home) is writable."
                .to_owned(),
            said: String::new(),
        });
    }
    // scp spells the port option `-P`.
    let mut args: Vec<String> = ssh_base(target, settings)
        .into_iter()
        .map(|a| if a == "-p" { "-P".into() } else { a })
        .collect();
    args.push("-q".into());
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.push(format!("{}:{dir}/", target.destination));
    let copied = run_quick("scp", &args).await?;
    if !copied.status.success() {
        return Err(ssh_failure(target, SshStep::Copy, &copied));
    }
    remote(target, settings, format!("touch {marker}")).await?;
    Ok((dir, script))
}

/// Unique per launch on any host: this process's id, a counter and the time.
fn launch_nonce() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{}-{n}-{nanos:x}", std::process::id())
}

/// Builds the command that runs a sidecar on `target` through ssh: the environment is passed
/// explicitly (`env K=V … node …`, ssh does not forward the local one) and node comes from the
/// remote PATH unless the driver names one.
pub async fn ssh_command(
    resolved: &ResolvedDriver,
    launch: &BranchLaunch<'_>,
    target: &SshTarget,
    settings: &RuntimeSettings,
) -> Result<SidecarCommand> {
    if launch.llm_dir.is_some() {
        let config = serde_json::to_string(&resolved.driver.llm_config).unwrap_or_default();
        return Err(CommondevError::LlmOverSsh(config));
    }
    let (plugin_dir, script) = push_sidecar(resolved, target, settings).await?;
    let values = PlaceholderValues {
        workdir: launch.workdir.display().to_string(),
        session_id: launch.label.to_owned(),
        session_name: launch.session_name.to_owned(),
        data_dir: settings.remote_root().to_owned(),
        plugin_dir,
    };
    let expanded = resolved
        .driver
        .expand(&values)
        .map_err(driver_error(resolved))?;
    if let Some(cli) = &expanded.cli_path
        && !remote(target, settings, format!("test -f {}", shell_quote(cli))).await?
    {
        return Err(cli_missing(resolved, launch, cli, &target.destination));
    }
    let branch_dir = format!("{}/branches/{}", settings.remote_root(), launch.label);
    let session_dir = format!("{branch_dir}/{}", session_dir_name(resolved));
    let mut env = generic_env(
        resolved,
        launch,
        &branch_dir,
        &session_dir,
        None,
        expanded.cli_path.as_deref(),
    );
    env.extend(expanded.env);
    let node = match &resolved.driver.node {
        NodeChoice::Auto => "node".to_owned(),
        NodeChoice::Path(path) => path.clone(),
    };
    // sshd starts the command in a session of its own, so the shell's pid — kept by `exec` for
    // the sidecar — is the group id of everything the sidecar starts there. It is written to a
    // file of this launch, so that a second ssh command can stop that group: killing the local
    // ssh client only closes the channel, and the remote processes would run on.
    let pid_file = format!("{branch_dir}/sidecar-{}.pgid", launch_nonce());
    let mut remote = format!(
        "mkdir -p {} && echo $$ > {} && cd {} && exec env",
        shell_quote(&session_dir),
        shell_quote(&pid_file),
        shell_quote(&launch.workdir.display().to_string())
    );
    for (key, value) in &env {
        remote.push(' ');
        remote.push_str(&shell_quote(&format!("{key}={value}")));
    }
    for word in [node, script].iter().chain(expanded.args.iter()) {
        remote.push(' ');
        remote.push_str(&shell_quote(word));
    }
    let mut ssh_args = ssh_base(target, settings);
    ssh_args.push(target.destination.clone());
    let mut args = ssh_args.clone();
    args.push("--".into());
    // Run by sh (whatever the remote login shell is), which `exec` turns into the sidecar.
    args.push(format!("exec sh -c {}", shell_quote(&remote)));
    Ok(SidecarCommand {
        program: PathBuf::from("ssh"),
        args,
        env: BTreeMap::new(),
        cwd: None,
        stderr_log: launch.branch_dir.join("sidecar.log"),
        remote_group: Some(RemoteGroup {
            ssh_args,
            host: target.destination.clone(),
            pid_file,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_runtime_specs() {
        assert_eq!(Runtime::parse("").unwrap(), Runtime::Local);
        assert_eq!(Runtime::parse("local").unwrap(), Runtime::Local);
        assert_eq!(
            Runtime::parse("ssh://me@127.0.0.1:2222").unwrap(),
            Runtime::Ssh(SshTarget {
                destination: "me@127.0.0.1".into(),
                port: Some(2222)
            })
        );
        assert_eq!(Runtime::parse("ssh://box").unwrap().to_spec(), "ssh://box");
        for bad in [
            "ssh://",
            "ssh://-oProxyCommand=x",
            "ssh://a b",
            "ftp://x",
            "ssh://h:port",
        ] {
            assert!(Runtime::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn shell_quoting_round_trips_through_sh() {
        for word in [
            "plain",
            "two words",
            "it's",
            "$HOME",
            "a\"b",
            "",
            "x;rm -rf /",
        ] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_quote(word)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), word);
        }
    }
}
