//! `wujie branch …`: the CLI twins of the commondev MCP tools. One-shot: each command starts the
//! branch's sidecar, resumes the persisted backend session, does its call and closes it.

use std::path::PathBuf;
use std::sync::Arc;

use wujie_commondev::{
    BranchInfo, BranchObserver, BranchSessions, Lifetime, OpenRequest, SessionConfig,
};

use crate::context::Context;
use crate::output::{block, inline, outln, print_json};

#[derive(Debug, clap::Subcommand)]
pub enum BranchCommand {
    /// Open a branch driven by an agent CLI (re-opening resumes its backend session).
    Open {
        /// Project the branch belongs to (with --branch it names the branch's session,
        /// labelled br-<project>-<branch>).
        #[arg(long)]
        project: String,
        /// Branch name within the project, e.g. feat/a.
        #[arg(long)]
        branch: String,
        /// Driver name: `runtime/<agent-cli>/driver.json` (e.g. `pi`).
        #[arg(long)]
        agent_cli: String,
        /// The agent's working directory (a remote path with --runtime ssh://…).
        #[arg(long)]
        workdir: PathBuf,
        /// Issue the branch works on.
        #[arg(long)]
        issue: Option<String>,
        /// `local` (default) or `ssh://[user@]host[:port]`.
        #[arg(long)]
        runtime: Option<String>,
        /// Work in --workdir itself even in a git repository (by default the agent works in
        /// the branch's own worktree, on the git branch of the branch's name).
        #[arg(long)]
        no_worktree: bool,
    },
    /// Send a prompt to the branch's agent and print its reply.
    Prompt {
        /// Project the branch belongs to (with --branch it names the branch's session,
        /// labelled br-<project>-<branch>).
        #[arg(long)]
        project: String,
        /// Branch name within the project, e.g. feat/a.
        #[arg(long)]
        branch: String,
        text: String,
    },
    /// Print the branch's session id and messages.
    State {
        /// Project the branch belongs to (with --branch it names the branch's session,
        /// labelled br-<project>-<branch>).
        #[arg(long)]
        project: String,
        /// Branch name within the project, e.g. feat/a.
        #[arg(long)]
        branch: String,
    },
    /// Close the branch (it can be opened again to resume).
    Close {
        /// Project the branch belongs to (with --branch it names the branch's session,
        /// labelled br-<project>-<branch>).
        #[arg(long)]
        project: String,
        /// Branch name within the project, e.g. feat/a.
        #[arg(long)]
        branch: String,
    },
    /// List known branches.
    List,
}

/// The branches' settings: the product's environment, and where worktrees go as the user chose.
pub fn session_config(ctx: &Context) -> anyhow::Result<SessionConfig> {
    let mut config = SessionConfig::standard(&ctx.profile.data_dir);
    config.worktrees_dir = super::worktree::configured_worktrees_dir(ctx)?;
    Ok(config)
}

fn branch_line(b: &BranchInfo) -> String {
    let status = serde_json::to_value(b.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!(
        "{}\t{}/{}\t{}\t{}\tsession {}\t{}",
        inline(&b.label),
        inline(&b.project),
        inline(&b.branch),
        inline(&b.agent_cli),
        status,
        inline(&b.session_id),
        inline(&b.runtime)
    )
}

/// Runs one branch command; returns the exit code. On SIGINT/SIGTERM/SIGHUP the call is
/// dropped and the sidecar's process tree stopped before `wujie` exits (128 + the signal).
pub async fn run_branch(
    cmd: BranchCommand,
    ctx: &Context,
    observer: Arc<dyn BranchObserver>,
) -> anyhow::Result<i32> {
    let json = ctx.json();
    let sessions = BranchSessions::new(
        &ctx.profile.data_dir,
        session_config(ctx)?,
        Lifetime::OneShot,
    )
    .with_observer(observer);
    let outcome = tokio::select! {
        done = run_command(cmd, json, &sessions) => done.map(|()| 0),
        code = super::stop_signals::first_stop_signal() => {
            wujie_process::stderr_line!("wujie: stopping the branch's sidecar (signal {})", code - 128);
            Ok(code)
        }
    };
    sessions.shutdown().await;
    outcome
}

async fn run_command(
    cmd: BranchCommand,
    json: bool,
    sessions: &BranchSessions,
) -> anyhow::Result<()> {
    match cmd {
        BranchCommand::Open {
            project,
            branch,
            agent_cli,
            workdir,
            issue,
            runtime,
            no_worktree,
        } => {
            let opened = sessions
                .open(OpenRequest {
                    project,
                    branch,
                    agent_cli,
                    workdir,
                    issue,
                    runtime,
                    no_worktree,
                })
                .await?;
            for note in &opened.notes {
                wujie_process::stderr_line!("wujie: note: {}", inline(note));
            }
            if json {
                return print_json(&opened);
            }
            let verb = if opened.resumed { "resumed" } else { "opened" };
            outln!("{verb} {}", branch_line(&opened.branch));
            if let Some(worktree) = &opened.worktree {
                let how = match (worktree.created, &worktree.base) {
                    (true, Some(base)) => format!("new, from {}", inline(base)),
                    (true, None) => "new".to_owned(),
                    (false, _) => "reused".to_owned(),
                };
                outln!(
                    "worktree {} (git branch {}, {how}); the agent works in {}",
                    inline(&worktree.path.display().to_string()),
                    inline(&worktree.branch),
                    inline(&opened.branch.workdir.display().to_string())
                );
            }
            outln!(
                "driver {} ({})",
                inline(&opened.driver_file.display().to_string()),
                opened.driver_source
            );
            outln!(
                "sidecar {}",
                inline(&opened.sidecar_script.display().to_string())
            );
        }
        BranchCommand::Prompt {
            project,
            branch,
            text,
        } => {
            let reply = sessions.prompt(&project, &branch, &text).await?;
            if json {
                return print_json(&reply);
            }
            outln!("{}", block(&reply.reply));
        }
        BranchCommand::State { project, branch } => {
            let state = sessions.state(&project, &branch).await?;
            if json {
                return print_json(&state);
            }
            outln!(
                "{} session {} ({} messages)",
                inline(&state.label),
                inline(&state.session_id),
                state.messages.len()
            );
            for message in &state.messages {
                outln!("{}", block(&message.to_string()));
            }
        }
        BranchCommand::Close { project, branch } => {
            let closed = sessions.close(&project, &branch).await?;
            if json {
                return print_json(&closed);
            }
            outln!(
                "closed {} (session {})",
                inline(&closed.label),
                inline(&closed.session_id)
            );
        }
        BranchCommand::List => {
            let branches = sessions.list()?;
            if json {
                return print_json(&serde_json::json!({ "branches": branches }));
            }
            for b in &branches {
                outln!("{}", branch_line(b));
            }
        }
    }
    Ok(())
}
