//! Standalone commondev MCP server over stdio (the same server as `wujie mcp`):
//! `wujie-commondev-mcp <data_dir>`. Used by tests that need a real child process.

use std::path::PathBuf;
use std::sync::Arc;

use wujie_commondev::{BranchSessions, Lifetime, SessionConfig};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let Some(data_dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: wujie-commondev-mcp <data_dir>");
        return std::process::ExitCode::from(2);
    };
    let config = SessionConfig::standard(&data_dir);
    let sessions = Arc::new(BranchSessions::new(&data_dir, config, Lifetime::KeepAlive));
    match wujie_commondev::mcp::serve_stdio(sessions).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}
