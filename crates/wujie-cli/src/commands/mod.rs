//! One module per command group; each parses nothing, calls the libraries, prints.

mod adapter;
pub(crate) mod auth;
pub mod branch;
mod branch_issue;
mod cost;
mod demo;
mod discuss;
mod issue;
mod issue_cancel;
mod jobs;
mod mcp;
mod missing_issue;
mod notify;
mod outbox;
mod profile;
mod provider;
mod run;
mod server;
mod stop_signals;
mod transcript;
mod ui;
mod worker;
mod worktree;

use anyhow::Result;

use branch_issue::IssueTurns;

use crate::cli::{Cli, Command, LocalRunCommand};
use crate::context::Context;

/// Run a command; the result is the process exit code.
pub async fn dispatch(cli: Cli) -> Result<i32> {
    // What needs no profile is answered without one (nothing is created for it).
    match &cli.command {
        Command::Completions { shell } => {
            crate::output::write_stdout(format_args!(
                "{}",
                crate::cli_docs::completion_script(*shell)
            ))?;
            return Ok(0);
        }
        Command::Man { dir: None } => {
            crate::output::write_stdout(format_args!("{}", crate::cli_docs::man_page()?))?;
            return Ok(0);
        }
        Command::Man { dir: Some(dir) } => {
            let pages = crate::cli_docs::write_man_pages(dir)?;
            if cli.global.output == crate::cli::Output::Json {
                crate::output::print_json(&pages)?;
            } else {
                for page in pages {
                    crate::output::outln!("{}", page.display());
                }
            }
            return Ok(0);
        }
        Command::ProcessGuard { prefix } => {
            wujie_process::marks::guard(prefix).await;
            return Ok(0);
        }
        // What starts agents or sidecars has them ended with it, even when it is SIGKILLed.
        Command::Run(_)
        | Command::Discuss(_)
        | Command::Demo
        | Command::Branch(_)
        | Command::Mcp => {
            start_process_guard();
        }
        _ => {}
    }
    // `profile` is the one command for which `--profile` (WUJIE_PROFILE) may name a profile
    // that does not exist yet: it is how one is made.
    let ctx = Context::new(&cli.global, !matches!(cli.command, Command::Profile(_)))?;
    match cli.command {
        Command::Issue(cmd) => issue::run(&ctx, cmd).await.map(|()| 0),
        Command::Run(args) => run::run(&ctx, args).await,
        Command::Jobs(args) => jobs::list(&ctx, args).await,
        Command::Rerun { key, job } => jobs::rerun(&ctx, &key, job.as_deref()).await,
        Command::Worker(args) => worker::run(&ctx, args).await,
        Command::LocalRun(LocalRunCommand::Provider(cmd)) => provider::run(&ctx, cmd).await,
        Command::LocalRun(LocalRunCommand::Sync {
            retry_failed,
            idle_timeout,
        }) => outbox::sync(&ctx, retry_failed, idle_timeout).await,
        Command::LocalRun(LocalRunCommand::Status) => outbox::status(&ctx).await.map(|()| 0),
        Command::Server(args) => server::run(&ctx, args).await.map(|()| 0),
        Command::Token(cmd) => auth::token(&ctx, cmd).await.map(|()| 0),
        Command::Login(args) => auth::login(&ctx, args).await.map(|()| 0),
        Command::Demo => demo::run(&ctx).await,
        Command::Cost => cost::workspace(&ctx).await.map(|()| 0),
        Command::Branch(cmd) => {
            let (observer, delivery) = IssueTurns::start(&ctx);
            let result = branch::run_branch(cmd, &ctx, observer.clone()).await;
            observer.close();
            delivery.finish().await;
            result
        }
        Command::Mcp => {
            let (observer, delivery) = IssueTurns::start(&ctx);
            let result = mcp::run_mcp(&ctx, observer.clone()).await;
            observer.close();
            delivery.finish().await;
            result
        }
        Command::Discuss(args) => discuss::discuss(&ctx, args).await,
        Command::Discussion(cmd) => discuss::discussion(&ctx, cmd).await.map(|()| 0),
        Command::Adapter(args) => adapter::run(args).await,
        Command::Ui(args) => ui::run(&ctx, args).await.map(|()| 0),
        Command::Notify(args) => notify::run(&ctx, args).await.map(|()| 0),
        Command::Worktree(cmd) => worktree::run(&ctx, cmd).await.map(|()| 0),
        Command::Profile(cmd) => profile::run(&ctx, cmd).map(|()| 0),
        Command::Completions { .. } | Command::Man { .. } | Command::ProcessGuard { .. } => {
            unreachable!("answered before the profile is loaded")
        }
    }
}

/// Starts this process's guard (`wujie process-guard`), or says what is at stake without it.
fn start_process_guard() {
    let started = std::env::current_exe()
        .and_then(|program| wujie_process::marks::start_guard(&program, &["process-guard"]));
    if let Err(e) = started {
        wujie_process::stderr_line!(
            "wujie: cannot start the process guard ({e}): should wujie be killed, what its agent started may run on."
        );
    }
}
