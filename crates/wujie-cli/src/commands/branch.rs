//! `wujie branch …`: the CLI twins of the commondev MCP tools. One-shot: each command starts the
//! branch's sidecar, resumes the persisted backend session, does its call and closes it.

use std::path::{Path, PathBuf};

use serde::Serialize;
use std::sync::Arc;

use wujie_commondev::{
    BranchInfo, BranchObserver, BranchSessions, CommondevError, Lifetime, OpenRequest,
    SessionConfig,
};

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

/// A commondev error as one message: its text already contains its cause, which anyhow's
/// `{:#}` would print a second time as the source.
fn whole(error: CommondevError) -> anyhow::Error {
    anyhow::Error::msg(error.to_string())
}

fn print_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn branch_line(b: &BranchInfo) -> String {
    let status = serde_json::to_value(b.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    format!(
        "{}\t{}/{}\t{}\t{}\tsession {}\t{}",
        b.label, b.project, b.branch, b.agent_cli, status, b.session_id, b.runtime
    )
}

/// Runs one branch command; returns the exit code. On SIGINT/SIGTERM/SIGHUP the call is
/// dropped and the sidecar's process tree stopped before `wujie` exits (128 + the signal).
pub async fn run_branch(
    cmd: BranchCommand,
    json: bool,
    data_dir: &Path,
    observer: Arc<dyn BranchObserver>,
) -> anyhow::Result<i32> {
    let sessions = BranchSessions::new(
        data_dir,
        SessionConfig::standard(data_dir),
        Lifetime::OneShot,
    )
    .with_observer(observer);
    let outcome = tokio::select! {
        done = run_command(cmd, json, &sessions) => done.map(|()| 0),
        code = super::stop_signals::first_stop_signal() => {
            eprintln!("wujie: stopping the branch's sidecar (signal {})", code - 128);
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
        } => {
            let opened = sessions
                .open(OpenRequest {
                    project,
                    branch,
                    agent_cli,
                    workdir,
                    issue,
                    runtime,
                })
                .await
                .map_err(whole)?;
            for note in &opened.notes {
                eprintln!("wujie: note: {note}");
            }
            if json {
                return print_json(&opened);
            }
            let verb = if opened.resumed { "resumed" } else { "opened" };
            println!("{verb} {}", branch_line(&opened.branch));
            println!(
                "driver {} ({})",
                opened.driver_file.display(),
                opened.driver_source
            );
            println!("sidecar {}", opened.sidecar_script.display());
        }
        BranchCommand::Prompt {
            project,
            branch,
            text,
        } => {
            let reply = sessions
                .prompt(&project, &branch, &text)
                .await
                .map_err(whole)?;
            if json {
                return print_json(&reply);
            }
            println!("{}", reply.reply);
        }
        BranchCommand::State { project, branch } => {
            let state = sessions.state(&project, &branch).await.map_err(whole)?;
            if json {
                return print_json(&state);
            }
            println!(
                "{} session {} ({} messages)",
                state.label,
                state.session_id,
                state.messages.len()
            );
            for message in &state.messages {
                println!("{message}");
            }
        }
        BranchCommand::Close { project, branch } => {
            let closed = sessions.close(&project, &branch).await.map_err(whole)?;
            if json {
                return print_json(&closed);
            }
            println!("closed {} (session {})", closed.label, closed.session_id);
        }
        BranchCommand::List => {
            let branches = sessions.list().map_err(whole)?;
            if json {
                return print_json(&serde_json::json!({ "branches": branches }));
            }
            for b in &branches {
                println!("{}", branch_line(b));
            }
        }
    }
    Ok(())
}
