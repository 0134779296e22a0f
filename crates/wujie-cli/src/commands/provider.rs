//! `wujie local-run provider install | list | enable | disable | remove | check`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;
use wujie_builtins::BUILTINS;
use wujie_localrun::check::{CheckOptions, CheckReport, Verdict};
use wujie_localrun::install;

use crate::cli::ProviderCommand;
use crate::context::Context;
use crate::output::{inline, outln, print_json};

#[derive(Serialize)]
struct ProviderRow {
    name: String,
    display_name: String,
    kind: &'static str,
    protocol: Option<String>,
    enabled: bool,
    manifest_path: Option<String>,
    /// Why a configured provider cannot be used, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub async fn run(ctx: &Context, cmd: ProviderCommand) -> Result<i32> {
    let profile = &ctx.profile;
    match cmd {
        ProviderCommand::Check {
            dir,
            timeout,
            input,
            args,
        } => return check(ctx, dir, timeout, input, args).await,
        ProviderCommand::Install { dir } => {
            let installed = install::install(profile, BUILTINS, &dir)?;
            if ctx.json() {
                print_json(&serde_json::json!({
                    "name": installed.name,
                    "manifest_path": installed.manifest_path,
                }))?;
            } else {
                outln!(
                    "Installed {} ({}). Run it with `wujie run ISSUE -- {}`.",
                    installed.name,
                    installed.manifest_path.display(),
                    installed.name
                );
            }
        }
        ProviderCommand::List => list(ctx)?,
        ProviderCommand::Enable { name } => {
            let name = install::set_enabled(profile, BUILTINS, &name, true)?;
            if ctx.json() {
                print_json(&serde_json::json!({"name": name, "enabled": true}))?;
            } else {
                outln!("Enabled {name}.");
            }
        }
        ProviderCommand::Disable { name } => {
            let name = install::set_enabled(profile, BUILTINS, &name, false)?;
            if ctx.json() {
                print_json(&serde_json::json!({"name": name, "enabled": false}))?;
            } else {
                outln!("Disabled {name}.");
            }
        }
        ProviderCommand::Remove { name } => {
            let removed = install::remove(profile, BUILTINS, &name)?;
            if ctx.json() {
                print_json(&serde_json::json!({
                    "name": removed.name,
                    "config_entry": removed.config_entry,
                    "deleted_copy": removed.deleted_copy,
                }))?;
            } else {
                outln!("{}", describe_removal(&removed));
            }
        }
    }
    Ok(0)
}

/// The plugin checklist; exit 1 when a rule fails.
async fn check(
    ctx: &Context,
    dir: PathBuf,
    timeout: u64,
    input: Vec<String>,
    args: Vec<String>,
) -> Result<i32> {
    let options = CheckOptions {
        dir,
        args,
        input,
        builtins: BUILTINS,
        timeout: Duration::from_secs(timeout.max(1)),
        current_exe: std::env::current_exe()?,
        path_var: std::env::var("PATH").ok(),
    };
    let report = wujie_localrun::check::check(&options).await?;
    if ctx.json() {
        print_json(&report)?;
    } else {
        print_check(&report)?;
    }
    Ok(if report.passed { 0 } else { 1 })
}

fn print_check(report: &CheckReport) -> Result<()> {
    let what = match (&report.provider, &report.protocol) {
        (Some(name), Some(protocol)) => format!(" ({name}, {protocol})"),
        _ => String::new(),
    };
    outln!("Checking {}{what}", inline(&report.dir));
    let width = report.rules.iter().map(|r| r.rule.len()).max().unwrap_or(0);
    for rule in &report.rules {
        let verdict = match rule.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Skipped => "skip",
        };
        outln!("  {verdict}  {:width$}  {}", rule.rule, rule.title);
        // The detail quotes what the adapter printed.
        outln!("        {:width$}  {}", "", inline(&rule.detail));
        if let Some(fix) = rule.fix {
            outln!("        {:width$}  fix: {fix}", "");
        }
    }
    let count = |v: Verdict| report.rules.iter().filter(|r| r.verdict == v).count();
    outln!(
        "{} rules: {} passed, {} failed, {} skipped",
        report.rules.len(),
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Skipped)
    );
    Ok(())
}

fn describe_removal(removed: &install::Removed) -> String {
    let name = &removed.name;
    match (&removed.config_entry, &removed.deleted_copy) {
        (Some(entry), Some(copy)) if !entry.starts_with(copy) => format!(
            "Removed {name}: its config entry for {} (those files are kept) and its installed copy {} (deleted).",
            entry.display(),
            copy.display()
        ),
        (Some(entry), None) => format!(
            "Removed {name} from the config; its files at {} are kept.",
            entry.display()
        ),
        (_, copy) => format!(
            "Removed {name}{}.",
            copy.iter()
                .map(|c| format!(" (deleted its installed copy {})", c.display()))
                .collect::<String>()
        ),
    }
}

fn list(ctx: &Context) -> Result<()> {
    let config = ctx.profile.load_config()?;
    let registry = ctx.registry()?;
    let rows: Vec<ProviderRow> = registry
        .list()
        .into_iter()
        .map(|(name, found)| match found {
            Ok(p) => ProviderRow {
                display_name: p.manifest.display_name().to_owned(),
                kind: p.kind(),
                protocol: Some(p.manifest.protocol.as_str().to_owned()),
                enabled: p.enabled,
                manifest_path: p.manifest_path.map(|m| m.to_string_lossy().into_owned()),
                error: None,
                name,
            },
            Err(e) => ProviderRow {
                display_name: name.clone(),
                kind: "plugin",
                protocol: None,
                enabled: config
                    .localrun_providers
                    .get(&name)
                    .is_none_or(|entry| entry.enabled),
                manifest_path: config
                    .localrun_providers
                    .get(&name)
                    .map(|entry| entry.manifest_path.clone()),
                error: Some(e.to_string()),
                name,
            },
        })
        .collect();
    if ctx.json() {
        return print_json(&rows);
    }
    if rows.is_empty() {
        outln!("No providers. Install one with `wujie local-run provider install DIR`.");
        return Ok(());
    }
    outln!(
        "{:<20} {:<8} {:<8} {:<28} display name",
        "name",
        "kind",
        "enabled",
        "protocol"
    );
    for r in &rows {
        outln!(
            "{:<20} {:<8} {:<8} {:<28} {}",
            inline(&r.name),
            r.kind,
            if r.enabled { "yes" } else { "no" },
            r.protocol.as_deref().unwrap_or("-"),
            inline(&r.display_name)
        );
        if let Some(e) = &r.error {
            outln!("  ! {}", inline(e));
        }
    }
    Ok(())
}
