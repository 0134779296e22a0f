//! `wujie discuss` and `wujie discussion list | show | promote`.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;
use wujie_localrun::discuss::{ConfirmMode, DiscussRequest, discuss as run_discussion};
use wujie_protocol::api::{Discussion, DiscussionStatus};
use wujie_protocol::promotion::IssueDraft;

use super::run::StderrNotice;
use crate::cli::{Confirm, DiscussArgs, DiscussionCommand};
use crate::context::Context;
use crate::output::{inline, one_line, outln, print_json};

#[derive(Serialize)]
struct DiscussReport<'a> {
    discussion_id: &'a str,
    resumed: bool,
    cancelled: bool,
    did_not_start: bool,
    issue_key: Option<&'a str>,
    run_id: Option<&'a str>,
    /// The new issue's worktree, made on promotion with `--worktree`.
    worktree: Option<&'a Path>,
    exit_code: i32,
    delivered: u64,
    pending: i64,
}

pub async fn discuss(ctx: &Context, args: DiscussArgs) -> Result<i32> {
    let (provider_arg, adapter_args) = args
        .provider_and_args
        .split_first()
        .context("name a provider after `--`, e.g. `wujie discuss -- grok`")?;
    let provider = ctx.registry()?.resolve(provider_arg)?;
    wujie_localrun::discuss::require_v2(&provider)?;
    let exe = std::env::current_exe().context("locating the wujie executable")?;
    let command = provider.adapter_command(&exe, crate::context::env_var("PATH").as_deref())?;
    wujie_localrun::agent_versions::say_if_untested(&ctx.profile, &provider, adapter_args);
    super::worktree::check_promotion(&args.worktree)?;
    let conn = ctx.connect().await?;
    let outbox = ctx.outbox().await?;
    let outcome = run_discussion(
        &conn,
        outbox,
        &provider,
        command,
        DiscussRequest {
            provider_arg: provider_arg.clone(),
            args: adapter_args.to_vec(),
            cwd: std::env::current_dir()?,
            resume: args.resume,
            confirm: match args.confirm {
                Confirm::Ask => ConfirmMode::Ask,
                Confirm::Accept => ConfirmMode::Accept,
                Confirm::Reject => ConfirmMode::Reject,
            },
            stdin_is_terminal: std::io::stdin().is_terminal(),
            drain_timeout: Duration::from_secs(args.drain_timeout),
        },
        StderrNotice::new(),
    )
    .await;
    conn.close().await;
    let o = outcome?;
    let worktree = o
        .promoted
        .as_ref()
        .and_then(|p| super::worktree::for_promoted(ctx, &args.worktree, &p.issue_key));
    if ctx.json() {
        print_json(&DiscussReport {
            discussion_id: &o.discussion_id,
            resumed: o.resumed,
            cancelled: o.cancelled,
            did_not_start: o.did_not_start,
            issue_key: o.promoted.as_ref().map(|p| p.issue_key.as_str()),
            run_id: o.promoted.as_ref().map(|p| p.run_id.as_str()),
            worktree: worktree.as_deref(),
            exit_code: o.exit_code,
            delivered: o.summary.stats.delivered,
            pending: o.summary.pending,
        })?;
    } else {
        match &o.promoted {
            None if o.did_not_start => wujie_process::stderr_line!(
                "wujie: {} did not start (exit {}; its message is above), so no discussion was kept.",
                inline(&o.provider),
                o.exit_code
            ),
            Some(p) => wujie_process::stderr_line!(
                "wujie: discussion {} became {}; its run {} {}. See `wujie issue show {}`{}.",
                o.discussion_id,
                p.issue_key,
                p.run_id,
                p.status.as_str(),
                p.issue_key,
                go_on_hint(
                    &p.issue_key,
                    &o.provider,
                    p.resume_args.as_deref(),
                    args.worktree.worktree
                )
            ),
            None => {
                // The worktree asked for is still wanted when the discussion goes on later.
                let worktree = args.worktree.flags();
                wujie_process::stderr_line!(
                    "wujie: discussion {} is still open. Resume it with `wujie discuss --resume {}{worktree} -- {}`, or turn it into an issue with `wujie discussion promote {}{worktree}`.",
                    o.discussion_id,
                    o.discussion_id,
                    inline(&o.provider),
                    o.discussion_id
                )
            }
        }
    }
    if o.summary.pending > 0 {
        wujie_process::stderr_line!(
            "wujie: {} not delivered yet; deliver them with `wujie local-run sync`.",
            crate::output::events(o.summary.pending)
        );
    }
    Ok(o.exit_code)
}

/// How to go on with the issue: in its worktree when one was asked for (with a new agent
/// session: an agent's session belongs to the directory it began in), else in the agent's own
/// session when the provider can resume it.
fn go_on_hint(
    issue_key: &str,
    provider: &str,
    resume_args: Option<&[String]>,
    in_worktree: bool,
) -> String {
    if in_worktree {
        return format!(
            "; go on in its worktree with `wujie run {issue_key} --worktree -- {}`",
            inline(provider)
        );
    }
    let Some(args) = resume_args else {
        return String::new();
    };
    let command: Vec<&str> = std::iter::once(provider)
        .chain(args.iter().map(String::as_str))
        .collect();
    format!(
        "; go on in the same agent session with `wujie run {issue_key} -- {}`",
        inline(&command.join(" "))
    )
}

pub async fn discussion(ctx: &Context, cmd: DiscussionCommand) -> Result<()> {
    let conn = ctx.connect().await?;
    let result = async {
        match cmd {
            DiscussionCommand::List => {
                let list = conn.client.list_discussions().await?;
                if ctx.json() {
                    print_json(&list)?;
                } else if list.is_empty() {
                    outln!("No discussions yet. Start one with `wujie discuss -- PROVIDER`.");
                } else {
                    outln!(
                        "{:<36}  {:<9} {:<16} {:<8} first entry",
                        "id", "status", "provider", "issue"
                    );
                    for d in &list {
                        outln!(
                            "{}  {:<9} {:<16} {:<8} {}",
                            d.id,
                            status_str(d),
                            inline(&d.provider),
                            d.issue_key.as_deref().unwrap_or("-"),
                            one_line(&first_words(d), 60)
                        );
                    }
                }
            }
            DiscussionCommand::Show { id } => {
                let d = conn.client.get_discussion(&id).await?;
                if ctx.json() {
                    print_json(&d)?;
                } else {
                    print_discussion(&d)?;
                }
            }
            DiscussionCommand::Promote {
                id,
                title,
                worktree,
            } => {
                super::worktree::check_promotion(&worktree)?;
                let outbox = ctx.outbox().await?;
                let targets = outbox.targets().await?;
                if let Some(t) = targets.iter().find(|t| t.id == id && outbox.is_owned(&t.id)) {
                    bail!(
                        "discussion {id} is still running in wujie (pid {}); promote it there, or stop it first",
                        t.reporter_pid.unwrap_or(0)
                    );
                }
                let d = conn.client.get_discussion(&id).await?;
                if d.status == DiscussionStatus::Promoted {
                    let key = d.issue_key.unwrap_or_default();
                    bail!("discussion {id} is already issue {key}; continue with `wujie run {key} -- {}`", inline(&d.provider));
                }
                let request = IssueDraft::from_discussion(&d)
                    .titled(title.as_deref())
                    .request(&d, &d.cwd, false);
                let issue = conn.client.promote_discussion(&id, &request).await?.issue;
                // It says where it is (or why it could not be made) on stderr.
                super::worktree::for_promoted(ctx, &worktree, &issue.key);
                if ctx.json() {
                    print_json(&issue)?;
                } else {
                    outln!(
                        "Created {} “{}” from discussion {id}. Continue the work with `wujie run {}{} -- {}`.",
                        issue.key,
                        inline(&issue.title),
                        issue.key,
                        if worktree.worktree { " --worktree" } else { "" },
                        inline(&d.provider)
                    );
                }
            }
        }
        anyhow::Ok(())
    }
    .await;
    conn.close().await;
    result
}

fn status_str(d: &Discussion) -> &'static str {
    match d.status {
        DiscussionStatus::Open => "open",
        DiscussionStatus::Promoted => "promoted",
    }
}

fn first_words(d: &Discussion) -> String {
    d.entries
        .first()
        .map(|e| e.content.clone())
        .unwrap_or_default()
}

fn print_discussion(d: &Discussion) -> Result<()> {
    outln!(
        "Discussion {} — {} — {}",
        d.id,
        inline(&d.provider),
        status_str(d)
    );
    if let Some(key) = &d.issue_key {
        outln!("Issue: {key}");
    }
    if !d.native_session_ids.is_empty() {
        outln!(
            "Native sessions: {}",
            inline(&d.native_session_ids.join(", "))
        );
    }
    for e in &d.entries {
        outln!("  {:>10}: {}", e.kind.as_str(), one_line(&e.content, 100));
    }
    Ok(())
}
