//! `wujie run ISSUE -- PROVIDER [ARGS...]`.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde::Serialize;
use wujie_client::ClientError;
use wujie_delivery::reporter::{DeliveryStats, ReporterNotice};
use wujie_localrun::run::{RunOutcome, RunRequest, run as run_provider};
use wujie_localrun::sync;
use wujie_store::outbox::{Outbox, OutboxPlace};

use crate::cli::RunArgs;
use crate::context::Context;
use crate::output::{events, inline, one_line, print_json};

/// Tells the user about delivery trouble on stderr, without flooding it during long outages.
pub struct StderrNotice {
    last_retry_note: Mutex<Option<Instant>>,
}

impl StderrNotice {
    pub fn new() -> Arc<StderrNotice> {
        Arc::new(StderrNotice {
            last_retry_note: Mutex::new(None),
        })
    }
}

impl ReporterNotice for StderrNotice {
    fn refused(&self, item: &str, reason: &str) {
        let key = serde_json::from_str::<serde_json::Value>(item)
            .ok()
            .and_then(|v| {
                v.get("source_key")
                    .and_then(|k| k.as_str())
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| one_line(item, 60));
        wujie_process::stderr_line!(
            "wujie: the server refused event {key:?}: {}. It is kept in the outbox; see `wujie local-run status`.",
            inline(reason)
        );
    }

    fn retrying(&self, error: &ClientError, pending: i64) {
        let mut last = self.last_retry_note.lock().expect("notice lock");
        if last.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
            *last = Some(Instant::now());
            wujie_process::stderr_line!(
                "wujie: cannot deliver events ({}); retrying, {pending} waiting",
                inline(&crate::user_error::client_error(error))
            );
        }
    }
}

#[derive(Serialize)]
struct RunReport<'a> {
    run_id: &'a str,
    issue_key: &'a str,
    status: &'a str,
    exit_code: i32,
    error: Option<&'a str>,
    delivered: u64,
    pending: i64,
    failed: i64,
    /// What went wrong with the run itself (a session log not found), in words.
    warnings: &'a [String],
}

#[derive(Serialize)]
struct Stats {
    delivered: u64,
    first_read_ms: Option<i64>,
    last_ack_ms: Option<i64>,
    p50_ms: Option<u64>,
    p99_ms: Option<u64>,
    max_ms: Option<u64>,
}

pub async fn run(ctx: &Context, args: RunArgs) -> Result<i32> {
    let (provider_arg, adapter_args) = args
        .provider_and_args
        .split_first()
        .context("name a provider after `--`, e.g. `wujie run WUJ-1 -- fake-provider`")?;
    let job = match &args.job {
        Some(text) => Some(
            wujie_protocol::jobs::JobAttempt::parse(text)
                .with_context(|| format!("--job takes ID:ATTEMPT, not {text:?}"))?,
        ),
        None => None,
    };
    let provider = ctx.registry()?.resolve(provider_arg)?;
    let exe = std::env::current_exe().context("locating the wujie executable")?;
    let command = provider.adapter_command(&exe, crate::context::env_var("PATH").as_deref())?;
    wujie_localrun::agent_versions::say_if_untested(&ctx.profile, &provider, adapter_args);
    let conn = ctx.connect().await?;
    let worktree = if args.worktree {
        let key = if super::worktree::looks_like_key(&args.issue) {
            args.issue.to_uppercase()
        } else {
            conn.client.get_issue(&args.issue).await?.key
        };
        Some(super::worktree::prepare(ctx, &key, args.base.as_deref())?.path)
    } else {
        None
    };
    let cwd = match &worktree {
        Some(path) => path.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let outbox = ctx.outbox().await?;
    let notice = StderrNotice::new();

    sync_older_runs(ctx, &outbox, &notice);

    let outcome = run_provider(
        &conn,
        outbox,
        &provider,
        command,
        RunRequest {
            issue: args.issue.clone(),
            provider_arg: provider_arg.clone(),
            args: adapter_args.to_vec(),
            cwd,
            worktree,
            job,
            drain_timeout: Duration::from_secs(args.drain_timeout),
            state_dir: ctx.profile.state_dir.clone(),
        },
        notice,
    )
    .await;
    // The one thing a start asks the server for that can be missing is the issue.
    let outcome = match outcome.map_err(anyhow::Error::from) {
        Err(e) if super::missing_issue::is_not_found(&e) => {
            Err(super::missing_issue::error(&conn.client, &args.issue).await)
        }
        outcome => outcome,
    };
    conn.close().await;
    let outcome = outcome?;
    if let Some(path) = &args.stats_file {
        write_stats(path, &outcome.summary.stats)?;
    }
    report(ctx, &outcome)?;
    Ok(outcome.exit_code)
}

/// Older runs' undelivered events go out in the background while this one runs.
fn sync_older_runs(ctx: &Context, outbox: &Outbox, notice: &Arc<StderrNotice>) {
    let profile = ctx.profile.clone();
    let outbox = outbox.clone();
    let notice: Arc<dyn ReporterNotice> = notice.clone();
    tokio::spawn(async move {
        let _ = sync::sync(
            &profile,
            &outbox,
            notice,
            Duration::from_secs(30),
            &mut |_, _| {},
        )
        .await;
    });
}

/// `--stats-file`: the delivery figures of the run, as JSON.
fn write_stats(path: &Path, stats: &DeliveryStats) -> Result<()> {
    let stats = Stats {
        delivered: stats.delivered,
        first_read_ms: stats.first_read_ms,
        last_ack_ms: stats.last_ack_ms,
        p50_ms: stats.latency.quantile(0.5),
        p99_ms: stats.latency.quantile(0.99),
        max_ms: stats.latency.quantile(1.0),
    };
    std::fs::write(path, serde_json::to_vec_pretty(&stats)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// How the run ended and what became of its events: JSON on stdout, or lines on stderr.
fn report(ctx: &Context, outcome: &RunOutcome) -> Result<()> {
    let s = &outcome.summary;
    if ctx.json() {
        print_json(&RunReport {
            run_id: &outcome.run_id,
            issue_key: &outcome.issue_key,
            status: outcome.status.as_str(),
            exit_code: outcome.exit_code,
            error: outcome.error.as_deref(),
            delivered: s.stats.delivered,
            pending: s.pending,
            failed: s.failed,
            warnings: &outcome.warnings,
        })?;
    } else {
        // Said while the agent ran, where its screen may have covered it: again, above the
        // summary it explains.
        for warning in &outcome.warnings {
            wujie_process::stderr_line!("wujie: warning: {}", inline(warning));
        }
        let error = outcome
            .error
            .as_deref()
            .map(|e| format!(": {}", inline(e)))
            .unwrap_or_default();
        // The two ways an adapter says it never got going, as shells and CLIs use them; the
        // server leaves such a run that recorded nothing out of the issue's runs.
        let unlisted = if s.stats.delivered == 0 {
            "; nothing was recorded, so the issue does not list it"
        } else {
            ""
        };
        let error = match outcome.exit_code {
            127 => format!(
                "{error} (it did not start: its agent could not be run, see above{unlisted})"
            ),
            2 => format!(
                "{error} (it did not start: its arguments were refused, see above{unlisted})"
            ),
            _ => error,
        };
        // Delivery that gave up (server unreachable) counts nothing it did: what matters then
        // is what still waits.
        let delivery = if s.pending > 0 && s.outbox == OutboxPlace::Replaced {
            format!("{} not delivered", events(s.pending))
        } else if s.pending > 0 {
            format!("{} waiting in the outbox", events(s.pending))
        } else {
            format!("{} synced", events(s.stats.delivered))
        };
        wujie_process::stderr_line!(
            "wujie: run {} on {} {}{error}; {delivery}. See it with `wujie issue show {}`.",
            outcome.run_id,
            outcome.issue_key,
            outcome.status.as_str(),
            outcome.issue_key
        );
    }
    let outbox = ctx.profile.outbox_path();
    match s.outbox {
        OutboxPlace::InPlace => {}
        OutboxPlace::Restored => wujie_process::stderr_line!(
            "wujie: the outbox {} was deleted while this run used it; it was written back with what it held.",
            outbox.display()
        ),
        OutboxPlace::Replaced => {
            wujie_process::stderr_line!(
                "wujie: the outbox {} was replaced by another file while this run used it, so {} (and the run's end) that were not delivered could not be kept.",
                outbox.display(),
                events(s.pending + s.failed)
            );
            return Ok(());
        }
    }
    if s.pending > 0 || !s.finish_delivered {
        wujie_process::stderr_line!(
            "wujie: {} (and the run's end) are not delivered yet: the server is unreachable. They are kept in {}; deliver them with `wujie local-run sync`.",
            events(s.pending),
            outbox.display()
        );
    }
    if s.failed > 0 {
        wujie_process::stderr_line!(
            "wujie: {} refused by the server; see `wujie local-run status`.",
            events(s.failed)
        );
    }
    Ok(())
}
