//! `wujie local-run sync | status`.

use std::time::Duration;

use anyhow::Result;
use serde::Serialize;
use wujie_localrun::sync;

use super::run::StderrNotice;
use crate::context::Context;
use crate::output::{inline, one_line, outln, print_json};

pub async fn status(ctx: &Context) -> Result<()> {
    let outbox = ctx.outbox().await?;
    let targets = sync::status(&outbox).await?;
    if ctx.json() {
        return print_json(&targets);
    }
    if targets.is_empty() {
        outln!("Nothing pending: every event was delivered.");
        return Ok(());
    }
    outln!(
        "{:<38} {:<10} {:<10} {:>8} {:>7}  {:<8} server",
        "id",
        "kind",
        "label",
        "pending",
        "failed",
        "state"
    );
    for t in &targets {
        outln!(
            "{:<38} {:<10} {:<10} {:>8} {:>7}  {:<8} {}",
            t.id,
            t.kind,
            inline(&t.label),
            t.pending,
            t.failed,
            t.state,
            inline(&t.server)
        );
    }
    let failed: i64 = targets.iter().map(|t| t.failed).sum();
    if failed > 0 {
        for t in targets.iter().filter(|t| t.failed > 0) {
            for row in outbox.failed(&t.id).await? {
                outln!(
                    "refused in {}: {} — {}",
                    inline(&t.label),
                    inline(&row.reason),
                    one_line(&row.item_json, 120)
                );
            }
        }
        outln!("Refused events are kept; retry them with `wujie local-run sync --retry-failed`.");
    }
    Ok(())
}

#[derive(Serialize)]
struct SyncReport {
    targets: Vec<sync::SyncedTarget>,
    delivered: u64,
    pending: i64,
    failed: i64,
}

pub async fn sync(ctx: &Context, retry_failed: bool, idle_timeout: u64) -> Result<i32> {
    let outbox = ctx.outbox().await?;
    if retry_failed {
        for t in outbox.targets().await? {
            outbox.retry_failed(&t.id).await?;
        }
    }
    let json = ctx.json();
    let mut shown = wujie_process::stderr::Progress::new();
    let mut progress = |label: &str, left: i64| {
        if !json {
            shown.show(format_args!("wujie: {label}: {left} events left"));
        }
    };
    let targets = sync::sync(
        &ctx.profile,
        &outbox,
        StderrNotice::new(),
        Duration::from_secs(idle_timeout),
        &mut progress,
    )
    .await;
    shown.done();
    let targets = targets?;
    let report = SyncReport {
        delivered: targets.iter().map(|t| t.delivered).sum(),
        pending: targets.iter().map(|t| t.pending).sum(),
        failed: targets.iter().map(|t| t.failed).sum(),
        targets,
    };
    if json {
        print_json(&report)?;
    } else if report.targets.is_empty() {
        outln!("Nothing to deliver.");
    } else {
        for t in &report.targets {
            let end = if t.finished { ", run end recorded" } else { "" };
            let err = t
                .error
                .as_deref()
                .map(|e| format!(" — {}", inline(e)))
                .unwrap_or_default();
            outln!(
                "{}: {} delivered, {} pending, {} refused{end}{err}",
                inline(&t.label),
                t.delivered,
                t.pending,
                t.failed
            );
        }
        outln!(
            "Delivered {} events; {} still pending, {} refused.",
            report.delivered,
            report.pending,
            report.failed
        );
    }
    Ok(
        if report.pending > 0 || report.targets.iter().any(|t| t.error.is_some()) {
            1
        } else {
            0
        },
    )
}
