//! `wujie issue assign`, `wujie jobs` and `wujie rerun`: runs asked for from the tracker, for a
//! `wujie worker` to take.

use anyhow::{Result, bail};
use wujie_client::{Client, JobQuery};
use wujie_protocol::jobs::{CreateJob, Job, JobStatus};

use crate::cli::{AssignArgs, JobsArgs};
use crate::context::Context;
use crate::output::{inline, one_line, outln, print_json};

/// `wujie issue assign KEY --agent PROVIDER [-- ARGS]`.
pub async fn assign(ctx: &Context, client: &Client, args: AssignArgs) -> Result<()> {
    let agent = args.agent.trim().to_ascii_lowercase();
    if agent.is_empty() {
        bail!("name the agent's provider: --agent pi");
    }
    // The worker that takes the job may have providers this machine lacks: only a provider
    // this machine knows to need a terminal is refused here.
    if let Ok(provider) = ctx.registry()?.resolve(&agent)
        && !provider.runs_headless()
    {
        bail!(
            "provider {agent} needs a terminal, and a worker has none: assign one that works \
             without ({}), or run it yourself with `wujie run {} -- {agent}`",
            super::worker::HEADLESS_PROVIDERS,
            args.key.to_ascii_uppercase()
        );
    }
    let job = client
        .create_job(
            &args.key,
            &CreateJob {
                provider: agent,
                args: args.args,
                prompt: args.prompt,
                worker_label: args.worker,
            },
        )
        .await?;
    if ctx.json() {
        print_json(&job)?;
    } else {
        let label = job
            .worker_label
            .as_deref()
            .map(|l| format!(" with label {}", inline(l)))
            .unwrap_or_default();
        outln!(
            "Queued job {} on {}: {} will run when a worker{label} takes it (`wujie worker`). \
             See it with `wujie jobs --issue {}`.",
            job.id,
            job.issue_key,
            inline(&job.provider),
            job.issue_key
        );
    }
    Ok(())
}

/// `wujie jobs`.
pub async fn list(ctx: &Context, args: JobsArgs) -> Result<i32> {
    let conn = ctx.connect().await?;
    let statuses = args
        .status
        .iter()
        .filter_map(|s| JobStatus::from_name(s))
        .collect();
    let query = JobQuery {
        issue: args.issue.clone(),
        statuses,
        limit: Some(args.limit),
    };
    let jobs = conn.client.list_jobs(&query).await;
    let jobs = match (jobs.map_err(anyhow::Error::from), &args.issue) {
        (Err(e), Some(key)) if super::missing_issue::is_not_found(&e) => {
            Err(super::missing_issue::error(&conn.client, key).await)
        }
        (jobs, _) => jobs,
    };
    conn.close().await;
    let jobs = jobs?;
    if ctx.json() {
        print_json(&jobs)?;
    } else if jobs.is_empty() {
        if args.issue.is_none() && args.status.is_empty() {
            outln!("No jobs yet. Queue one with `wujie issue assign KEY --agent pi`.");
        } else {
            outln!("No jobs match.");
        }
    } else {
        print_jobs(&jobs)?;
    }
    Ok(0)
}

/// A table of jobs, a line each.
pub fn print_jobs(jobs: &[Job]) -> Result<()> {
    outln!(
        "{:<36} {:<9} {:<12} {:<10} {:<20} run",
        "job",
        "issue",
        "agent",
        "status",
        "worker"
    );
    for job in jobs {
        let status = if job.attempts > 1 {
            format!("{} ({} tries)", job.status.as_str(), job.attempts)
        } else {
            job.status.as_str().to_owned()
        };
        outln!(
            "{:<36} {:<9} {:<12} {:<10} {:<20} {}",
            job.id,
            job.issue_key,
            one_line(&job.provider, 12),
            status,
            one_line(job.worker.as_deref().unwrap_or("-"), 20),
            job.run_id.as_deref().unwrap_or("-")
        );
        if let Some(error) = &job.error {
            outln!("  error: {}", one_line(error, 100));
        }
    }
    Ok(())
}

/// `wujie rerun KEY [--job ID]`.
pub async fn rerun(ctx: &Context, key: &str, job: Option<&str>) -> Result<i32> {
    let conn = ctx.connect().await?;
    let result = async {
        let old = match job {
            Some(id) => {
                let old = conn.client.get_job(id).await?;
                if !old.issue_key.eq_ignore_ascii_case(key) {
                    bail!(
                        "job {id} is a job of {}, not of {}",
                        old.issue_key,
                        key.to_ascii_uppercase()
                    );
                }
                old
            }
            None => {
                let query = JobQuery {
                    issue: Some(key.to_owned()),
                    statuses: Vec::new(),
                    limit: Some(1),
                };
                match conn.client.list_jobs(&query).await?.into_iter().next() {
                    Some(job) => job,
                    None => bail!(
                        "{} has no job to run again; queue one with `wujie issue assign {} \
                         --agent pi`",
                        key.to_ascii_uppercase(),
                        key.to_ascii_uppercase()
                    ),
                }
            }
        };
        Ok(conn.client.rerun_job(&old.id).await?)
    }
    .await;
    let result = match result {
        Err(e) if super::missing_issue::is_not_found(&e) && job.is_none() => {
            Err(super::missing_issue::error(&conn.client, key).await)
        }
        result => result,
    };
    conn.close().await;
    let new = result?;
    if ctx.json() {
        print_json(&new)?;
    } else {
        outln!(
            "Queued job {} on {}: {} again, as job {} was asked for.",
            new.id,
            new.issue_key,
            inline(&new.provider),
            new.rerun_of.as_deref().unwrap_or("?")
        );
    }
    Ok(0)
}
