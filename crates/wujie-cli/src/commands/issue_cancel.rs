//! `wujie issue cancel KEY [--run ID]`: asks the issue's running runs (or the one named) to
//! stop, wherever they run; each run's reporter stops its agent and records the end. Without
//! `--run`, the issue's jobs that wait for a worker are cancelled too.

use anyhow::{Result, bail};
use serde::Serialize;
use wujie_client::{Client, JobQuery};
use wujie_protocol::api::{RunCancel, RunStatus};
use wujie_protocol::jobs::{Job, JobStatus};

use crate::context::Context;
use crate::output::{inline, outln, print_json};

pub async fn cancel(ctx: &Context, client: &Client, key: &str, run: Option<&str>) -> Result<()> {
    let shown = inline(&key.to_ascii_uppercase()).to_string();
    let runs = client.issue_runs(key).await?;
    let chosen: Vec<String> = match run {
        Some(id) => {
            if !runs.iter().any(|r| r.id == id) {
                bail!(
                    "{shown} has no run {}; `wujie issue runs {shown}` lists its runs",
                    inline(id)
                );
            }
            vec![id.to_owned()]
        }
        None => runs
            .iter()
            .filter(|r| r.status == RunStatus::Running)
            .map(|r| r.id.clone())
            .collect(),
    };
    let queued = match run {
        Some(_) => Vec::new(),
        None => {
            let query = JobQuery {
                issue: Some(key.to_owned()),
                statuses: vec![JobStatus::Queued],
                limit: Some(wujie_store::MAX_JOB_PAGE),
            };
            client.list_jobs(&query).await?
        }
    };
    if chosen.is_empty() && queued.is_empty() {
        bail!(
            "no run of {shown} is running and no job of it waits for a worker, so there is \
             nothing to cancel; `wujie issue runs {shown}` lists its runs"
        );
    }
    let mut cancelled = Cancelled {
        runs: Vec::with_capacity(chosen.len()),
        jobs: Vec::with_capacity(queued.len()),
    };
    for id in &chosen {
        cancelled.runs.push(client.cancel_run(id).await?);
    }
    for job in &queued {
        cancelled.jobs.push(client.cancel_job(&job.id).await?);
    }
    if ctx.json() {
        print_json(&cancelled)?;
    } else {
        for c in &cancelled.runs {
            outln!("{}", describe(c));
        }
        for job in &cancelled.jobs {
            outln!(
                "Cancelled job {} on {} ({}), which no worker had taken yet.",
                job.id,
                job.issue_key,
                inline(&job.provider)
            );
        }
    }
    Ok(())
}

/// `--output json`: what was cancelled.
#[derive(Serialize)]
struct Cancelled {
    runs: Vec<RunCancel>,
    jobs: Vec<Job>,
}

fn describe(c: &RunCancel) -> String {
    let who = inline(c.cancel.who());
    if c.already_requested {
        format!(
            "Run {} on {} was already asked to stop (by {who} at {}); its agent stops within \
             seconds of its reporter hearing of it.",
            c.run_id, c.issue_key, c.cancel.at
        )
    } else {
        format!(
            "Cancelled run {} on {}: its agent stops within seconds, wherever it runs.",
            c.run_id, c.issue_key
        )
    }
}
