//! `wujie demo`: the main job end to end on the embedded default, from a fresh profile.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use anyhow::{Context as _, Result};
use wujie_builtins::BUILTINS;
use wujie_localrun::install;
use wujie_localrun::run::{RunRequest, run as run_provider};
use wujie_protocol::api::CreateIssue;

use super::issue::print_issue;
use super::run::StderrNotice;
use crate::context::Context;
use crate::output::outln;

const FAKE_MANIFEST: &str = include_str!("../../../../examples/fake-provider/provider.json");
const FAKE_ADAPTER: &str = include_str!("../../../../examples/fake-provider/wujie-localrun-fake");

pub async fn run(ctx: &Context) -> Result<i32> {
    let say = |line: &str| -> Result<()> {
        if !ctx.json() {
            outln!("{line}");
        }
        Ok(())
    };
    let registry = ctx.registry()?;
    if registry.resolve("fake-provider").is_err() {
        // Install from a copy of the bundled example, through the same path a user takes.
        let dir = ctx.profile.state_dir.join("demo").join("fake-provider");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("provider.json"), FAKE_MANIFEST)?;
        let adapter = dir.join("wujie-localrun-fake");
        std::fs::write(&adapter, FAKE_ADAPTER)?;
        std::fs::set_permissions(&adapter, std::fs::Permissions::from_mode(0o755))?;
        let installed = install::install(&ctx.profile, BUILTINS, &dir)?;
        say(&format!(
            "1. Installed the bundled provider `{}` into {}",
            installed.name,
            installed.manifest_path.display()
        ))?;
    } else {
        say("1. The provider `fake-provider` is already installed.")?;
    }
    let provider = ctx.registry()?.resolve("fake-provider")?;
    let exe = std::env::current_exe()?;
    let command = provider.adapter_command(&exe, crate::context::env_var("PATH").as_deref())?;

    let conn = ctx.connect().await?;
    let result = async {
        let issue = conn
            .client
            .create_issue(&CreateIssue {
                title: "Try Wujie: run the fake provider".to_owned(),
                description: "Created by `wujie demo`.".to_owned(),
                discussion_id: None,
            })
            .await?;
        say(&format!("2. Created issue {}: {}", issue.key, issue.title))?;
        say(&format!(
            "3. Running `wujie run {} -- fake-provider` …",
            issue.key
        ))?;
        let outcome = run_provider(
            &conn,
            ctx.outbox().await?,
            &provider,
            command,
            RunRequest {
                issue: issue.key.clone(),
                provider_arg: "fake-provider".to_owned(),
                args: Vec::new(),
                cwd: std::env::current_dir()?,
                worktree: None,
                job: None,
                drain_timeout: Duration::from_secs(15),
                state_dir: ctx.profile.state_dir.clone(),
            },
            StderrNotice::new(),
        )
        .await?;
        let issue = conn.client.get_issue(&issue.key).await?;
        let prices = ctx.prices()?;
        if ctx.json() {
            let doc = super::cost::priced_issue(&issue, &prices)?;
            super::transcript::print_issue_json(&conn.client, doc, &issue.runs).await?;
        } else {
            outln!(
                "4. The run {} and {} synced into {}:\n",
                outcome.status.as_str(),
                crate::output::events(outcome.summary.stats.delivered),
                issue.key
            );
            print_issue(&conn.client, &issue, &prices, None).await?;
            outln!(
                "\nSee it again with `wujie issue show {}` (add `--output json` for JSON).",
                issue.key
            );
        }
        anyhow::Ok(outcome.exit_code)
    }
    .await;
    conn.close().await;
    result
}
