//! `wujie worker`: takes queued jobs (`wujie issue assign`) and runs each as a person's
//! `wujie run` would, headless, at most `--max-jobs` at once.
//!
//! Each job runs in a child `wujie run KEY --job ID:ATTEMPT` of its own: the same outbox, the
//! same exactly-once delivery and git snapshots, and a crash of one run is not the worker's.
//! The child is in a process group of its own, so the terminal's Ctrl+C reaches only the
//! worker, which decides: the first stops taking jobs and lets the running ones finish, the
//! second interrupts each child (which then stops its agent as a Ctrl+C does) and gives the
//! jobs back to the queue. A child dies with the worker (parent-death signal), its own guard
//! ends its agent, and the job's lease runs out, so another worker runs it again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::task::JoinSet;
use wujie_client::{Client, ClientError};
use wujie_git::{Discovered, Repository};
use wujie_localrun::registry::Provider;
use wujie_protocol::jobs::{ClaimJob, ClaimedJob, FinishJob, JobStatus, RenewLease};

use super::stop_signals::StopSignals;
use crate::cli::WorkerArgs;
use crate::context::Context;
use crate::output::{inline, one_line, print_json_line};

/// What a worker can run, in a user's words.
pub const HEADLESS_PROVIDERS: &str = "pi, acp (the ACP agent's command after `--`), or a plugin \
     whose provider.json says \"interactive_pty\": false";

/// How often an idle worker asks for a job.
const CLAIM_EVERY: Duration = Duration::from_secs(1);
/// How long the end of a job is retried while the server does not answer; after that the
/// lease runs out and the job is run again elsewhere.
const FINISH_PATIENCE: Duration = Duration::from_secs(120);

/// What a worker needs for every job it runs.
struct Worker {
    client: Client,
    name: String,
    labels: Vec<String>,
    providers: Vec<Provider>,
    lease: u32,
    /// Where the agents work: the repository's issue worktrees, or the directory itself.
    place: Place,
    /// `wujie` and the global options this one was started with, for the child runs.
    exe: PathBuf,
    global_args: Vec<String>,
    json: bool,
    /// The pid of each running job's `wujie run`, by job id.
    children: Mutex<HashMap<String, u32>>,
    /// Set by the second Ctrl+C: interrupted jobs go back to the queue.
    give_back: std::sync::atomic::AtomicBool,
}

enum Place {
    /// The issue worktrees of `repo`, made in `dir` (one at a time: wujie-git holds the
    /// repository's lock while it makes one).
    Worktrees {
        repo: Repository,
        dir: PathBuf,
    },
    Directory(PathBuf),
}

impl Place {
    /// Where the agent of issue `key` works: its worktree, made or reused, or the directory.
    fn for_issue(&self, key: &str) -> Result<PathBuf> {
        match self {
            Place::Worktrees { repo, dir } => {
                Ok(super::worktree::prepare_at(repo, dir, key, None)?.path)
            }
            Place::Directory(dir) => Ok(dir.clone()),
        }
    }
}

/// What `wujie --output json run` prints at its end (see `commands::run`).
#[derive(Debug, Deserialize)]
struct RunReport {
    run_id: String,
    status: String,
    error: Option<String>,
    delivered: u64,
    pending: i64,
    failed: i64,
}

impl RunReport {
    /// What became of the run's events, as `wujie run` says it.
    fn delivery(&self) -> String {
        let mut said = format!("{} synced", crate::output::events(self.delivered));
        if self.pending > 0 {
            said.push_str(&format!(
                ", {} wait in the outbox (`wujie local-run sync`)",
                self.pending
            ));
        }
        if self.failed > 0 {
            said.push_str(&format!(", {} refused by the server", self.failed));
        }
        said
    }
}

/// How a job's attempt ended on this worker.
struct JobDone {
    key: String,
    job_id: String,
    provider: String,
    attempt: u32,
    run_id: Option<String>,
    /// What became of the run's events.
    delivery: Option<String>,
    /// `None`: the lease was lost, the job is another worker's now.
    status: Option<JobStatus>,
    error: Option<String>,
    /// What became of the job on the server (ended, or queued again when given back), or why
    /// it was not recorded.
    recorded: Result<JobStatus, String>,
}

/// A line of `--output json`: one per job started or ended.
#[derive(Serialize)]
struct JobLine<'a> {
    event: &'a str,
    job_id: &'a str,
    issue_key: &'a str,
    provider: &'a str,
    attempt: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

pub async fn run(ctx: &Context, args: WorkerArgs) -> Result<i32> {
    let providers = worker_providers(ctx, &args.providers)?;
    let place = place(ctx, args.repo.as_deref())?;
    let conn = ctx.connect().await?;
    let name = args.name.clone().unwrap_or_else(default_name);
    let mut global_args = vec!["--profile".to_owned(), ctx.profile.name.clone()];
    if let Some(server) = &ctx.server_flag {
        global_args.extend(["--server".to_owned(), server.clone()]);
    }
    let worker = Arc::new(Worker {
        client: conn.client.clone(),
        name,
        labels: args.labels.clone(),
        providers,
        lease: args.lease,
        place,
        exe: std::env::current_exe().context("locating the wujie executable")?,
        global_args,
        json: ctx.json(),
        children: Mutex::new(HashMap::new()),
        give_back: std::sync::atomic::AtomicBool::new(false),
    });
    announce(&worker, args.max_jobs);
    let result = serve(&worker, args.max_jobs as usize, args.exit_when_idle).await;
    conn.close().await;
    result
}

fn default_name() -> String {
    // Read rather than asked of the C library: no crate feature for one line of text.
    let host = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|f| std::fs::read_to_string(f).ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".to_owned());
    format!("{host}:{}", std::process::id())
}

/// The providers this worker runs: those named, or every installed one that needs no terminal.
fn worker_providers(ctx: &Context, named: &[String]) -> Result<Vec<Provider>> {
    let registry = ctx.registry()?;
    let exe = std::env::current_exe().context("locating the wujie executable")?;
    let path = crate::context::env_var("PATH");
    let usable = |p: &Provider| {
        p.enabled && p.adapter_command(&exe, path.as_deref()).is_ok() && p.check_start(&[]).is_ok()
    };
    if !named.is_empty() {
        let mut providers = Vec::new();
        for name in named {
            let provider = registry.resolve(name)?;
            if !provider.runs_headless() {
                bail!(
                    "provider {} needs a terminal, and a worker has none; a worker runs \
                     {HEADLESS_PROVIDERS}",
                    provider.name
                );
            }
            provider.check_start(&[])?;
            provider.adapter_command(&exe, path.as_deref())?;
            providers.push(provider);
        }
        return Ok(providers);
    }
    let providers: Vec<Provider> = registry
        .list()
        .into_iter()
        .filter_map(|(_, p)| p.ok())
        .filter(|p| p.runs_headless() && usable(p))
        .collect();
    if providers.is_empty() {
        bail!(
            "this machine has no provider a worker can run: a worker runs agents without a \
             terminal: {HEADLESS_PROVIDERS}; `wujie local-run provider list` shows what is \
             installed"
        );
    }
    Ok(providers)
}

/// Where the agents work: the issue worktrees of the repository `repo` (default: the current
/// directory) is in, or that directory itself when it is not in a repository with a commit.
fn place(ctx: &Context, repo: Option<&Path>) -> Result<Place> {
    let dir = match repo {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let dir = dir.canonicalize().with_context(|| {
        format!(
            "{} cannot be used as the worker's repository",
            dir.display()
        )
    })?;
    let why_not = match Repository::discover(&dir) {
        Ok(Discovered::Repository(repo)) => match repo.head_commit() {
            Ok(Some(_)) => {
                let dir = super::worktree::worktrees_dir(ctx, &repo)?;
                return Ok(Place::Worktrees { repo, dir });
            }
            Ok(None) => "its repository has no commit yet".to_owned(),
            Err(e) => format!("git failed: {e}"),
        },
        Ok(Discovered::NotARepository) => "it is not in a git repository".to_owned(),
        Err(e) => format!("git cannot be run: {e}"),
    };
    wujie_process::stderr_line!(
        "wujie: the agents will work in {} itself, not in issue worktrees: {why_not}.",
        dir.display()
    );
    Ok(Place::Directory(dir))
}

fn announce(worker: &Worker, max_jobs: u32) {
    let names: Vec<&str> = worker.providers.iter().map(|p| p.name.as_str()).collect();
    let labels = if worker.labels.is_empty() {
        String::new()
    } else {
        format!(" and those labelled {}", worker.labels.join(", "))
    };
    let place = match &worker.place {
        Place::Worktrees { repo, .. } => {
            format!("in issue worktrees of {}", repo.top_level().display())
        }
        Place::Directory(dir) => format!("in {}", dir.display()),
    };
    wujie_process::stderr_line!(
        "wujie: worker {} takes jobs without a label{labels} for {}, at most {max_jobs} at once, \
         {place}. Ctrl+C stops it.",
        inline(&worker.name),
        names.join(", ")
    );
}

/// Claims and runs jobs until stopped (or idle, with `exit_when_idle`).
async fn serve(worker: &Arc<Worker>, max_jobs: usize, exit_when_idle: bool) -> Result<i32> {
    let mut jobs: JoinSet<JobDone> = JoinSet::new();
    let mut stops = StopSignals::install().context("watching for Ctrl+C")?;
    let mut tick = tokio::time::interval(CLAIM_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut stopping = 0;
    let mut unreachable_said: Option<Instant> = None;
    let mut failed_jobs = 0;
    let mut fatal = None;
    loop {
        tokio::select! {
            _ = tick.tick(), if stopping == 0 && jobs.len() < max_jobs => {
                match claim_until_full(worker, &mut jobs, max_jobs).await {
                    Ok(0) if exit_when_idle && jobs.is_empty() => break,
                    Ok(_) => unreachable_said = None,
                    // Refused (a revoked token, a server without jobs): asking again would not help.
                    Err(e) if !e.is_retryable() => {
                        let e = anyhow::Error::from(e).context("cannot take jobs");
                        if jobs.is_empty() {
                            return Err(e);
                        }
                        wujie_process::stderr_line!(
                            "wujie: {}; taking no more, waiting for the {} running to finish.",
                            inline(&format!("{e:#}")),
                            jobs.len()
                        );
                        stopping = 1;
                        fatal = Some(e);
                    }
                    Err(e) => {
                        if unreachable_said.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                            unreachable_said = Some(Instant::now());
                            wujie_process::stderr_line!(
                                "wujie: cannot ask for jobs ({}); retrying every second",
                                inline(&crate::user_error::client_error(&e))
                            );
                        }
                    }
                }
            }
            Some(done) = jobs.join_next() => {
                let done = done.context("a job's task stopped unexpectedly")?;
                // A job given back or cancelled is no failure of this worker's.
                if matches!(done.status, Some(JobStatus::Failed)) || done.recorded.is_err() {
                    failed_jobs += 1;
                }
                report(worker, &done);
                if stopping > 0 && jobs.is_empty() {
                    break;
                }
                // A free slot is filled at once rather than at the next tick.
                tick.reset_immediately();
            }
            _ = stops.recv() => {
                stopping += 1;
                if jobs.is_empty() {
                    break;
                }
                if stopping == 1 {
                    wujie_process::stderr_line!(
                        "wujie: taking no more jobs; waiting for the {} running to finish. \
                         Ctrl+C again cancels them and gives them back to the queue.",
                        jobs.len()
                    );
                } else {
                    interrupt_all(worker);
                }
            }
        }
    }
    match fatal {
        Some(e) => Err(e),
        None => Ok(if failed_jobs > 0 { 1 } else { 0 }),
    }
}

/// Claims jobs while there is room and one waits; how many it started.
async fn claim_until_full(
    worker: &Arc<Worker>,
    jobs: &mut JoinSet<JobDone>,
    max_jobs: usize,
) -> Result<usize, ClientError> {
    let mut started = 0;
    while jobs.len() < max_jobs {
        let claim = ClaimJob {
            worker: worker.name.clone(),
            labels: worker.labels.clone(),
            providers: worker.providers.iter().map(|p| p.name.clone()).collect(),
            lease_secs: worker.lease,
        };
        let Some(claimed) = worker.client.claim_job(&claim).await? else {
            tracing::debug!(
                running = jobs.len(),
                "no job waits that this worker can run"
            );
            break;
        };
        tracing::info!(
            job = %claimed.job.id,
            issue = %claimed.job.issue_key,
            attempt = claimed.attempt,
            lease_until = ?claimed.job.lease_expires_at,
            "claimed a job"
        );
        started += 1;
        let worker = worker.clone();
        jobs.spawn(async move { run_job(&worker, claimed).await });
    }
    Ok(started)
}

fn interrupt_all(worker: &Worker) {
    worker
        .give_back
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let children = worker.children.lock().expect("children lock");
    wujie_process::stderr_line!(
        "wujie: cancelling {} running jobs; they go back to the queue.",
        children.len()
    );
    for pid in children.values() {
        let _ = kill(Pid::from_raw(*pid as i32), Signal::SIGINT);
    }
}

impl<'a> JobLine<'a> {
    fn of(event: &'a str, done: &'a JobDone, status: Option<&'a str>) -> JobLine<'a> {
        JobLine {
            event,
            job_id: &done.job_id,
            issue_key: &done.key,
            provider: &done.provider,
            attempt: done.attempt,
            run_id: done.run_id.as_deref(),
            status,
            error: done.error.as_deref(),
        }
    }
}

fn report(worker: &Worker, done: &JobDone) {
    let status = done.status.map(JobStatus::as_str);
    if worker.json {
        // The job's status as recorded (`queued` when given back), or `lost` with the lease.
        let recorded = match &done.recorded {
            Ok(job) => job.as_str(),
            Err(_) => "lost",
        };
        let _ = print_json_line(&JobLine::of("ended", done, Some(recorded)));
    }
    let run = match (&done.run_id, &done.delivery) {
        (Some(run), Some(delivery)) => format!(" (run {run}, {delivery})"),
        (Some(run), None) => format!(" (run {run})"),
        _ => String::new(),
    };
    let error = done
        .error
        .as_deref()
        .map(|e| format!(": {}", one_line(e, 200)))
        .unwrap_or_default();
    match (&done.recorded, status) {
        (Ok(job), _) => wujie_process::stderr_line!(
            "wujie: {}: job {} {}{run}{error}.",
            done.key,
            done.job_id,
            match job {
                JobStatus::Succeeded => "succeeded",
                JobStatus::Cancelled => "was cancelled",
                JobStatus::Queued | JobStatus::Running => "was given back to the queue",
                JobStatus::Failed => "failed",
            }
        ),
        (Err(why), _) => wujie_process::stderr_line!(
            "wujie: {}: job {} ended here as {}{run}{error}, but {why}.",
            done.key,
            done.job_id,
            status.unwrap_or("interrupted")
        ),
    }
}

/// Runs one claimed job in a child `wujie run` and records how it ended.
async fn run_job(worker: &Worker, claimed: ClaimedJob) -> JobDone {
    let ClaimedJob {
        job,
        attempt,
        prompt,
    } = claimed;
    let mut done = JobDone {
        key: job.issue_key.clone(),
        job_id: job.id.clone(),
        provider: job.provider.clone(),
        attempt,
        run_id: None,
        delivery: None,
        status: None,
        error: None,
        recorded: Err(String::new()),
    };
    if worker.json {
        let _ = print_json_line(&JobLine::of("started", &done, None));
    }
    let again = if attempt > 1 {
        format!(", attempt {attempt}")
    } else {
        String::new()
    };
    wujie_process::stderr_line!(
        "wujie: {}: started job {} ({}{again})",
        job.issue_key,
        job.id,
        inline(&job.provider)
    );
    let provider = worker.providers.iter().find(|p| p.name == job.provider);
    let args = match provider {
        Some(p) => agent_args(p, &job.args, &prompt),
        None => job.args.clone(),
    };
    let outcome = run_child(
        worker,
        &job.id,
        &job.issue_key,
        attempt,
        &job.provider,
        &args,
        &prompt,
    )
    .await;
    let (status, error) = match outcome {
        Ok(ChildEnd::Reported(report)) => {
            done.delivery = Some(report.delivery());
            done.run_id = Some(report.run_id);
            let status = JobStatus::from_name(&report.status).unwrap_or(JobStatus::Failed);
            (Some(status), report.error)
        }
        Ok(ChildEnd::Failed(why)) => (Some(JobStatus::Failed), Some(why)),
        Ok(ChildEnd::LeaseLost(why)) => {
            done.recorded = Err(why);
            return done;
        }
        Err(e) => (Some(JobStatus::Failed), Some(format!("{e:#}"))),
    };
    done.status = status;
    done.error = error;
    let give_back = worker.give_back.load(std::sync::atomic::Ordering::SeqCst)
        && status == Some(JobStatus::Cancelled);
    done.recorded = record_end(worker, &job.id, attempt, &done, give_back).await;
    done
}

/// The arguments the provider's adapter gets: the job's, with the task given by the flag of
/// the built-in providers that take one (`-p TASK`, before the agent's own command), unless the
/// job's arguments give a prompt already. Plugins read the task from `WUJIE_TASK_PROMPT`.
fn agent_args(provider: &Provider, args: &[String], prompt: &str) -> Vec<String> {
    let Some(flag) = provider.task_flag() else {
        return args.to_vec();
    };
    let has_prompt = args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == flag || a == "--prompt" || a.starts_with("--prompt="));
    if has_prompt {
        return args.to_vec();
    }
    let mut with = vec![flag.to_owned(), prompt.to_owned()];
    with.extend(args.iter().cloned());
    with
}

enum ChildEnd {
    /// The child reported its run's end.
    Reported(RunReport),
    /// It ended without reporting a run: why (its last words on stderr).
    Failed(String),
    /// The server gave the job to another worker; the child was stopped.
    LeaseLost(String),
}

async fn run_child(
    worker: &Worker,
    job_id: &str,
    key: &str,
    attempt: u32,
    provider: &str,
    args: &[String],
    prompt: &str,
) -> Result<ChildEnd> {
    let cwd = worker.place.for_issue(key)?;
    let mut cmd = tokio::process::Command::new(&worker.exe);
    cmd.args(&worker.global_args)
        .args(["--output", "json", "run", key, "--job"])
        .arg(format!("{job_id}:{attempt}"));
    if matches!(worker.place, Place::Worktrees { .. }) {
        // In the worktree just made: the run reuses it and records it as the run's.
        cmd.arg("--worktree");
    }
    cmd.arg("--")
        .arg(provider)
        .args(args)
        .current_dir(&cwd)
        .env("WUJIE_TASK_PROMPT", prompt)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(false);
    wujie_process::die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {} for the job", worker.exe.display()))?;
    let pid = child.id().unwrap_or(0);
    worker
        .children
        .lock()
        .expect("children lock")
        .insert(job_id.to_owned(), pid);
    let lease = tokio::spawn(keep_lease(
        worker.client.clone(),
        job_id.to_owned(),
        attempt,
        worker.lease,
        pid,
    ));
    let stderr = child.stderr.take();
    let key_owned = key.to_owned();
    let relay = tokio::spawn(async move { relay_stderr(stderr, &key_owned).await });
    let mut stdout = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_end(&mut stdout).await;
    }
    let status = child.wait().await.context("waiting for the job's run")?;
    worker
        .children
        .lock()
        .expect("children lock")
        .remove(job_id);
    lease.abort();
    let lost = lease.await.ok().flatten();
    let last_words = relay.await.unwrap_or_default();
    if let Some(why) = lost {
        return Ok(ChildEnd::LeaseLost(why));
    }
    let report = serde_json::from_slice::<RunReport>(&stdout).ok();
    Ok(match report {
        Some(report) => ChildEnd::Reported(report),
        None => ChildEnd::Failed(if last_words.is_empty() {
            format!(
                "the run ended with exit code {} before it started",
                wujie_process::exit_code_of(status)
            )
        } else {
            last_words
        }),
    })
}

/// Copies the child's stderr to ours, each line after the issue's key; the last line, which
/// says why a run that never started did not.
async fn relay_stderr(stderr: Option<tokio::process::ChildStderr>, key: &str) -> String {
    let Some(stderr) = stderr else {
        return String::new();
    };
    let mut lines = BufReader::new(stderr).lines();
    let mut last = String::new();
    while let Ok(Some(line)) = lines.next_line().await {
        wujie_process::stderr_line!("[{key}] {line}");
        if !line.trim().is_empty() {
            last = line.trim().trim_start_matches("wujie: ").to_owned();
        }
    }
    last
}

/// Renews the job's lease a third of the way through it, until aborted. Resolves with why
/// when the server gave the job to another worker, after interrupting the child.
async fn keep_lease(
    client: Client,
    job_id: String,
    attempt: u32,
    lease_secs: u32,
    pid: u32,
) -> Option<String> {
    let period = Duration::from_secs(u64::from(lease_secs)) / 3;
    let renew = RenewLease {
        attempt,
        lease_secs,
    };
    loop {
        tokio::time::sleep(period).await;
        match client.renew_job_lease(&job_id, &renew).await {
            Ok(job) => {
                tracing::debug!(job = %job_id, until = ?job.lease_expires_at, "renewed the lease")
            }
            Err(e) if e.status() == Some(wujie_client::StatusCode::CONFLICT) => {
                let why = format!(
                    "this worker lost the job's lease ({}); its run here was stopped",
                    crate::user_error::client_error(&e)
                );
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGINT);
                return Some(why);
            }
            // Unanswered: tried again at the next period, while the lease lasts.
            Err(e) => tracing::warn!(job = %job_id, "cannot renew the lease: {e}"),
        }
    }
}

/// Records the attempt's end (or gives the job back), retried while the server does not answer.
async fn record_end(
    worker: &Worker,
    job_id: &str,
    attempt: u32,
    done: &JobDone,
    give_back: bool,
) -> Result<JobStatus, String> {
    let deadline = Instant::now() + FINISH_PATIENCE;
    let mut pause = Duration::from_millis(200);
    loop {
        let answer = if give_back {
            worker.client.release_job(job_id, attempt).await
        } else {
            let status = done.status.unwrap_or(JobStatus::Failed);
            let finish = FinishJob {
                attempt,
                status,
                error: done.error.clone(),
            };
            worker.client.finish_job(job_id, &finish).await
        };
        match answer {
            Ok(job) => return Ok(job.status),
            Err(e) if e.is_retryable() && Instant::now() < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            Err(e) => {
                return Err(format!(
                    "its end could not be recorded ({}); the job will be run again when its \
                     lease runs out",
                    crate::user_error::client_error(&e)
                ));
            }
        }
    }
}
