//! `BranchSessions`: one backend session per project branch, used by both the long-lived MCP
//! server (sidecars stay alive between calls) and the one-shot CLI commands (each call starts the
//! sidecar, pings, resumes the persisted real session id, does its call and closes).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wujie_protocol::sidecar_tools::{ToolCall, last_turn_tool_calls};

use crate::error::{CommondevError, Result};
use crate::llm::{self, LlmOverrides, LlmSettings};
use crate::paths::CommondevDirs;
use crate::registry::{DriverLocations, ResolvedDriver};
use crate::runtime::{self, BranchLaunch, Runtime, RuntimeSettings};
use crate::sidecar::{Sidecar, Timeouts};
use crate::store::{BranchRecord, BranchStatus, BranchStore, branch_label};
use crate::worktree::{self, BranchWorktree, Placement};

/// Whether sidecars outlive a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Keep each branch's sidecar running between calls (the MCP server).
    KeepAlive,
    /// Start, call and close for every call (the CLI).
    OneShot,
}

/// What `BranchObserver::check_issue` answers: `Err` says why the issue cannot take turns.
pub type IssueCheck<'a> =
    Pin<Box<dyn Future<Output = std::result::Result<(), String>> + Send + 'a>>;

/// Hook for reporting a branch's conversation elsewhere (e.g. as a local run on its issue).
/// For each prompt: `on_prompt`, then either `on_tool_calls` (branches with an issue only) and
/// `on_reply`, or `on_failure`.
pub trait BranchObserver: Send + Sync {
    fn on_prompt(&self, _branch: &BranchRecord, _text: &str) {}
    /// The tool calls the backend's `state` shows for the turn that just answered.
    fn on_tool_calls(&self, _branch: &BranchRecord, _calls: &[ToolCall]) {}
    fn on_reply(&self, _branch: &BranchRecord, _reply: &str) {}
    /// The prompt failed (timeout, drift, broken contract, …); `error` is what the caller sees.
    fn on_failure(&self, _branch: &BranchRecord, _error: &str) {}
    /// Whether turns can be reported on `issue`; `open` refuses a branch whose issue cannot.
    fn check_issue<'a>(&'a self, _issue: &'a str) -> IssueCheck<'a> {
        Box::pin(async { Ok(()) })
    }
}

struct NoObserver;
impl BranchObserver for NoObserver {}

/// Everything configurable about the service; `standard` reads the product's environment.
#[derive(Clone)]
pub struct SessionConfig {
    pub locations: DriverLocations,
    pub timeouts: Timeouts,
    pub runtime: RuntimeSettings,
    pub llm_overrides: LlmOverrides,
    /// Where branches' worktrees go (under `branches/`); `None`: `<checkout>.wujie` beside the
    /// repository.
    pub worktrees_dir: Option<PathBuf>,
}

impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConfig")
            .field("locations", &self.locations)
            .finish_non_exhaustive()
    }
}

impl SessionConfig {
    /// The product's configuration: standard lookup chain, `WUJIE_NODE`, `WUJIE_SSH_OPTIONS`,
    /// `WUJIE_LLM_*`, and `WUJIE_COMMONDEV_PROMPT_TIMEOUT_SECS` for the per-prompt timeout.
    pub fn standard(data_dir: &Path) -> Self {
        let mut timeouts = Timeouts::default();
        if let Some(secs) = std::env::var("WUJIE_COMMONDEV_PROMPT_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        {
            timeouts.prompt = std::time::Duration::from_secs(secs);
        }
        Self {
            locations: DriverLocations::standard(&CommondevDirs::new(data_dir)),
            timeouts,
            runtime: RuntimeSettings::from_env(),
            llm_overrides: LlmOverrides::from_env(),
            worktrees_dir: None,
        }
    }
}

/// `open` arguments.
#[derive(Debug, Clone, Default)]
pub struct OpenRequest {
    pub project: String,
    pub branch: String,
    pub agent_cli: String,
    pub workdir: PathBuf,
    pub issue: Option<String>,
    /// `local` (default) or `ssh://[user@]host[:port]`.
    pub runtime: Option<String>,
    /// Work in `workdir` itself even when it is in a git repository, rather than in the
    /// branch's own worktree.
    pub no_worktree: bool,
}

/// What open/list report about a branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BranchInfo {
    pub project: String,
    pub branch: String,
    pub label: String,
    /// The real backend id when known, else the label.
    pub session_id: String,
    pub real_session_id: Option<String>,
    pub agent_cli: String,
    pub workdir: PathBuf,
    pub runtime: String,
    pub issue: Option<String>,
    pub status: BranchStatus,
    pub cli_version: Option<String>,
    /// Whether a sidecar is running for it in this process.
    pub live: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenOutcome {
    #[serde(flatten)]
    pub branch: BranchInfo,
    /// True when an earlier backend session was resumed.
    pub resumed: bool,
    pub driver_file: PathBuf,
    pub driver_source: String,
    /// The sidecar script that was started.
    pub sidecar_script: PathBuf,
    /// What the user should know about the driver chosen (see `ResolvedDriver::notes`) and
    /// where the agent works.
    pub notes: Vec<String>,
    /// The branch's own git worktree, when the agent works in one.
    pub worktree: Option<BranchWorktree>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptOutcome {
    pub label: String,
    pub session_id: String,
    pub reply: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateOutcome {
    pub label: String,
    pub session_id: String,
    pub messages: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CloseOutcome {
    pub label: String,
    pub session_id: String,
    /// Whether a running sidecar was closed (false for one-shot use: nothing was running).
    pub sidecar_closed: bool,
}

type Slot = Arc<tokio::sync::Mutex<Option<Sidecar>>>;

pub struct BranchSessions {
    dirs: CommondevDirs,
    store: BranchStore,
    config: SessionConfig,
    lifetime: Lifetime,
    observer: Arc<dyn BranchObserver>,
    live: std::sync::Mutex<HashMap<String, Slot>>,
    /// Cancelled by `shutdown`: calls in flight end at once (their trees are stopped).
    closing: CancellationToken,
}

impl std::fmt::Debug for BranchSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BranchSessions")
            .field("root", &self.dirs.root())
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

/// A prompt whose future is dropped before it ended — its caller went away: a signal, a
/// cancelled MCP call — still ends for the observer, as a failure.
struct UnfinishedTurn<'a> {
    observer: &'a dyn BranchObserver,
    /// `None` once the turn ended normally.
    record: Option<BranchRecord>,
}

impl Drop for UnfinishedTurn<'_> {
    fn drop(&mut self) {
        if let Some(record) = &self.record {
            self.observer.on_failure(
                record,
                "stopped before the agent answered: the caller went away (a signal, a cancelled \
                 call or shutdown), and the branch's sidecar was stopped with it",
            );
        }
    }
}

/// How a reported session id compares with what the branch knows.
fn check_drift(record: &mut BranchRecord, method: &str, reported: Option<&str>) -> Result<bool> {
    let Some(reported) = reported.filter(|r| !r.is_empty()) else {
        return Ok(false);
    };
    match &record.real_session_id {
        Some(real) if real == reported => Ok(false),
        // Until the backend exposes its id, the sidecar reports the label back.
        None if reported == record.label => Ok(false),
        None => {
            record.real_session_id = Some(reported.to_owned());
            Ok(true)
        }
        Some(real) => Err(CommondevError::Drift {
            label: record.label.clone(),
            method: method.to_owned(),
            expected: real.clone(),
            reported: reported.to_owned(),
        }),
    }
}

impl BranchSessions {
    pub fn new(data_dir: &Path, config: SessionConfig, lifetime: Lifetime) -> Self {
        let dirs = CommondevDirs::new(data_dir);
        Self {
            store: BranchStore::new(dirs.clone()),
            dirs,
            config,
            lifetime,
            observer: Arc::new(NoObserver),
            live: std::sync::Mutex::new(HashMap::new()),
            closing: CancellationToken::new(),
        }
    }

    /// Reports every prompt and reply to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn BranchObserver>) -> Self {
        self.observer = observer;
        self
    }

    fn slot(&self, label: &str) -> Slot {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.entry(label.to_owned()).or_default().clone()
    }

    fn is_live(&self, label: &str) -> bool {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.get(label)
            .is_some_and(|slot| slot.try_lock().map(|s| s.is_some()).unwrap_or(true))
    }

    fn info(&self, record: &BranchRecord) -> BranchInfo {
        BranchInfo {
            project: record.project.clone(),
            branch: record.branch.clone(),
            label: record.label.clone(),
            session_id: record.session_id().to_owned(),
            real_session_id: record.real_session_id.clone(),
            agent_cli: record.agent_cli.clone(),
            workdir: record.workdir.clone(),
            runtime: record.runtime.clone(),
            issue: record.issue.clone(),
            status: record.status,
            cli_version: record.cli_version.clone(),
            live: self.is_live(&record.label),
        }
    }

    fn existing(&self, project: &str, branch: &str) -> Result<BranchRecord> {
        let label = branch_label(project, branch);
        let record = self
            .store
            .load(&label)?
            .ok_or_else(|| CommondevError::BranchNotFound {
                record: self.store.record_path(&label),
                label: label.clone(),
            })?;
        if record.project != project || record.branch != branch {
            return Err(CommondevError::LabelCollision {
                label,
                existing_project: record.project,
                existing_branch: record.branch,
            });
        }
        Ok(record)
    }

    /// Starts the branch's sidecar (resuming its real session id, if any) and pings it.
    async fn start(&self, record: &mut BranchRecord) -> Result<(Sidecar, ResolvedDriver)> {
        let resolved = self.config.locations.resolve(&record.agent_cli)?;
        let branch_dir = self.store.dir(&record.label);
        let settings_file = self.dirs.llm_settings();
        let llm_dir = match resolved.driver.llm_config {
            wujie_protocol::driver::LlmConfig::None => None,
            config => {
                let settings = LlmSettings::load(&settings_file, &self.config.llm_overrides)?;
                llm::prepare(
                    config,
                    &settings,
                    &settings_file,
                    &branch_dir,
                    &resolved.driver.env,
                )?
            }
        };
        let session_name = format!("{}/{}", record.project, record.branch);
        let launch = BranchLaunch {
            label: &record.label,
            session_name: &session_name,
            workdir: &record.workdir,
            resume_session_id: record.real_session_id.as_deref(),
            branch_dir: &branch_dir,
            llm_dir: llm_dir.as_deref(),
            data_dir: self.dirs.root(),
        };
        let command = match Runtime::parse(&record.runtime)? {
            Runtime::Local => runtime::local_command(&resolved, &launch, &self.config.runtime)?,
            Runtime::Ssh(target) => {
                runtime::ssh_command(&resolved, &launch, &target, &self.config.runtime).await?
            }
        };
        let (sidecar, ping) = Sidecar::start(
            &command,
            self.config.timeouts,
            resolved.driver_file.display().to_string(),
        )
        .await?;
        check_drift(record, "ping", ping.session_id.as_deref())?;
        if ping.cli_version.is_some() {
            record.cli_version = ping.cli_version;
        }
        Ok((sidecar, resolved))
    }

    /// Runs `work` unless the service is shutting down. Dropping `work` early drops any sidecar
    /// it holds, which stops that sidecar's tree in the background (`tree::stops_finished`).
    async fn until_closing<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        tokio::select! {
            result = work => result,
            () = self.closing.cancelled() => Err(CommondevError::ShuttingDown),
        }
    }

    /// Opens (or re-opens, resuming its backend session) a branch.
    pub async fn open(&self, request: OpenRequest) -> Result<OpenOutcome> {
        self.until_closing(self.open_now(request)).await
    }

    async fn open_now(&self, request: OpenRequest) -> Result<OpenOutcome> {
        let label = branch_label(&request.project, &request.branch);
        if let Some(issue) = &request.issue {
            self.observer.check_issue(issue).await.map_err(|detail| {
                CommondevError::IssueUnusable {
                    issue: issue.clone(),
                    detail,
                }
            })?;
        }
        let runtime = Runtime::parse(request.runtime.as_deref().unwrap_or("local"))?;
        let existing = self.store.load(&label)?;
        let mut notes = Vec::new();
        let (workdir, worktree) = match runtime {
            Runtime::Local => {
                let asked =
                    std::path::absolute(&request.workdir).unwrap_or(request.workdir.clone());
                self.local_workdir(asked, &request, existing.as_ref(), &mut notes)
                    .await?
            }
            Runtime::Ssh(_) => {
                if !request.no_worktree {
                    notes.push(format!(
                        "the agent works in {} on the remote host as given: worktrees of their own \
                         are made for local branches only",
                        request.workdir.display()
                    ));
                }
                (request.workdir.clone(), None)
            }
        };
        let mut record = match existing {
            Some(existing) => {
                if existing.project != request.project || existing.branch != request.branch {
                    return Err(CommondevError::LabelCollision {
                        label,
                        existing_project: existing.project,
                        existing_branch: existing.branch,
                    });
                }
                if existing.agent_cli != request.agent_cli {
                    return Err(CommondevError::AgentMismatch {
                        label,
                        existing: existing.agent_cli,
                        requested: request.agent_cli,
                    });
                }
                existing
            }
            None => BranchRecord {
                project: request.project.clone(),
                branch: request.branch.clone(),
                label: label.clone(),
                agent_cli: request.agent_cli.clone(),
                workdir: workdir.clone(),
                runtime: runtime.to_spec(),
                issue: None,
                real_session_id: None,
                status: BranchStatus::Open,
                cli_version: None,
                worktree: None,
            },
        };
        let resumed = record.real_session_id.is_some();
        record.workdir = workdir;
        record.worktree = worktree.as_ref().map(|w| w.path.clone());
        record.runtime = runtime.to_spec();
        if request.issue.is_some() {
            record.issue = request.issue;
        }
        record.status = BranchStatus::Open;

        let slot = self.slot(&label);
        let mut guard = slot.lock().await;
        if let Some(old) = guard.take() {
            // Re-opening a live branch restarts its sidecar on the same backend session.
            let _ = old.close().await;
        }
        let (sidecar, resolved) = self.start(&mut record).await?;
        self.store.save(&record)?;
        notes.splice(0..0, resolved.notes);
        match self.lifetime {
            Lifetime::KeepAlive => *guard = Some(sidecar),
            Lifetime::OneShot => {
                sidecar.close().await?;
            }
        }
        drop(guard);
        Ok(OpenOutcome {
            branch: self.info(&record),
            resumed,
            driver_file: resolved.driver_file,
            driver_source: resolved.source.to_owned(),
            sidecar_script: resolved.script,
            notes,
            worktree,
        })
    }

    /// Where a local branch's agent works: in the branch's own worktree when `asked` is in a
    /// git repository (made or reused), else in `asked`. A branch whose backend session began
    /// in the directory itself, before it had a worktree, stays there: the agent's session may
    /// be tied to its directory.
    async fn local_workdir(
        &self,
        asked: PathBuf,
        request: &OpenRequest,
        existing: Option<&BranchRecord>,
        notes: &mut Vec<String>,
    ) -> Result<(PathBuf, Option<BranchWorktree>)> {
        if request.no_worktree {
            return Ok((asked, None));
        }
        if let Some(existing) = existing
            && existing.worktree.is_none()
            && existing.real_session_id.is_some()
            && existing.workdir == asked
        {
            notes.push(format!(
                "this branch's session began in {} without a worktree of its own, and goes on \
                 there; open a new branch to work in a worktree",
                asked.display()
            ));
            return Ok((asked, None));
        }
        let label = branch_label(&request.project, &request.branch);
        let branch = request.branch.clone();
        let dir = self.config.worktrees_dir.clone();
        let placed = tokio::task::spawn_blocking(move || {
            worktree::place(&asked, &label, &branch, dir.as_deref()).map(|p| (asked, p))
        })
        .await;
        let placed = match placed {
            Ok(placed) => placed,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return Err(CommondevError::ShuttingDown),
        };
        let (asked, placement) = placed.map_err(|source| CommondevError::Worktree {
            branch: request.branch.clone(),
            source,
        })?;
        Ok(match placement {
            Placement::Worktree {
                workdir,
                worktree,
                note,
            } => {
                notes.extend(note);
                (workdir, Some(worktree))
            }
            Placement::AsGiven(note) => {
                notes.extend(note);
                (asked, None)
            }
        })
    }

    /// Runs `f` with the branch's sidecar: the live one, or a fresh one for this call only.
    async fn with_sidecar<T>(
        &self,
        record: &mut BranchRecord,
        f: impl AsyncFnOnce(&mut Sidecar, &mut BranchRecord) -> Result<T>,
    ) -> Result<T> {
        self.until_closing(self.with_sidecar_now(record, f)).await
    }

    async fn with_sidecar_now<T>(
        &self,
        record: &mut BranchRecord,
        f: impl AsyncFnOnce(&mut Sidecar, &mut BranchRecord) -> Result<T>,
    ) -> Result<T> {
        if record.status == BranchStatus::Closed {
            return Err(CommondevError::BranchClosed {
                label: record.label.clone(),
            });
        }
        let slot = self.slot(&record.label);
        let mut guard = slot.lock().await;
        let mut sidecar = match guard.take() {
            Some(sidecar) => sidecar,
            None => self.start(record).await?.0,
        };
        let result = f(&mut sidecar, record).await;
        // Persist what was learnt (a newly known real id) even if the call failed afterwards.
        self.store.save(record)?;
        match (self.lifetime, &result) {
            // A drifted or broken sidecar is not kept: its whole tree is stopped.
            (Lifetime::KeepAlive, Ok(_)) => *guard = Some(sidecar),
            (Lifetime::KeepAlive, Err(_)) => {
                sidecar.kill_tree().await;
            }
            (Lifetime::OneShot, Ok(_)) => {
                sidecar.close().await?;
            }
            (Lifetime::OneShot, Err(_)) => {
                sidecar.kill_tree().await;
            }
        }
        result
    }

    pub async fn prompt(&self, project: &str, branch: &str, text: &str) -> Result<PromptOutcome> {
        let mut record = self.existing(project, branch)?;
        self.observer.on_prompt(&record, text);
        let mut unfinished = UnfinishedTurn {
            observer: &*self.observer,
            record: Some(record.clone()),
        };
        let observer = self.observer.clone();
        let outcome = self
            .with_sidecar(&mut record, async |sidecar, record| {
                let result = sidecar.prompt(text, &record.label).await?;
                check_drift(record, "prompt", Some(&result.session_id))?;
                if record.issue.is_some() {
                    // The turn is reported with its tool calls; only `state` has them. A broken
                    // `state` must not cost the caller the reply: the turn goes without them.
                    match sidecar.state().await {
                        Ok(state) => {
                            check_drift(record, "state", state.session_id.as_deref())?;
                            observer.on_tool_calls(record, &last_turn_tool_calls(&state.messages));
                        }
                        Err(error) => tracing::warn!(%error, "no tool calls for the turn's report"),
                    }
                }
                observer.on_reply(record, &result.reply);
                Ok(result.reply)
            })
            .await;
        // The observer has heard how the turn ended (`on_reply` ran inside, `on_failure` next).
        unfinished.record = None;
        let reply =
            outcome.inspect_err(|error| self.observer.on_failure(&record, &error.to_string()))?;
        Ok(PromptOutcome {
            label: record.label.clone(),
            session_id: record.session_id().to_owned(),
            reply,
        })
    }

    pub async fn state(&self, project: &str, branch: &str) -> Result<StateOutcome> {
        let mut record = self.existing(project, branch)?;
        let messages = self
            .with_sidecar(&mut record, async |sidecar, record| {
                let result = sidecar.state().await?;
                check_drift(record, "state", result.session_id.as_deref())?;
                Ok(result.messages)
            })
            .await?;
        Ok(StateOutcome {
            label: record.label.clone(),
            session_id: record.session_id().to_owned(),
            messages,
        })
    }

    /// Closes the branch: its sidecar (if running) is closed and its tree killed; the record is
    /// kept, so opening it again resumes the same backend session.
    pub async fn close(&self, project: &str, branch: &str) -> Result<CloseOutcome> {
        let mut record = self.existing(project, branch)?;
        let slot = self.slot(&record.label);
        let running = slot.lock().await.take();
        let sidecar_closed = running.is_some();
        record.status = BranchStatus::Closed;
        self.store.save(&record)?;
        if let Some(sidecar) = running {
            sidecar.close().await?;
        }
        Ok(CloseOutcome {
            label: record.label.clone(),
            session_id: record.session_id().to_owned(),
            sidecar_closed,
        })
    }

    pub fn list(&self) -> Result<Vec<BranchInfo>> {
        Ok(self.store.list()?.iter().map(|r| self.info(r)).collect())
    }

    /// Ends calls in flight, closes every running sidecar and waits until every sidecar tree
    /// this process dropped is stopped. Every owner calls it before exiting (the MCP server
    /// when its client goes away, the CLI after its command or on a signal).
    pub async fn shutdown(&self) {
        self.closing.cancel();
        let slots: Vec<Slot> = {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            live.drain().map(|(_, slot)| slot).collect()
        };
        for slot in slots {
            if let Some(sidecar) = slot.lock().await.take() {
                let _ = sidecar.close().await;
            }
        }
        crate::tree::stops_finished().await;
    }
}
