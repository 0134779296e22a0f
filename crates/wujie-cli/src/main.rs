//! The `wujie` binary: parses arguments, calls the library crates, prints results.

mod commands {
    pub mod branch;
    pub mod mcp;
}

use std::path::PathBuf;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(name = "wujie")]
struct Cli {
    /// Output format.
    #[arg(long, global = true, default_value = "text")]
    output: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// commondev branches: one agent session per project branch.
    #[command(subcommand)]
    Branch(commands::branch::BranchCommand),
    /// Serve the commondev MCP tools on stdin/stdout.
    Mcp,
}

fn data_dir() -> anyhow::Result<PathBuf> {
    if let Some(home) = std::env::var_os("WUJIE_HOME") {
        return Ok(PathBuf::from(home).join("data"));
    }
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .ok_or_else(|| anyhow::anyhow!("set WUJIE_HOME or HOME"))?;
    Ok(base.join("wujie"))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = async {
        let data_dir = data_dir()?;
        match cli.command {
            Command::Branch(cmd) => {
                commands::branch::run_branch(cmd, cli.output == "json", &data_dir).await
            }
            Command::Mcp => commands::mcp::run_mcp(&data_dir).await,
        }
    }
    .await;
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
