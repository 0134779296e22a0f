//! `wujie mcp`: the commondev MCP server on stdin/stdout (long-lived: sidecars stay up).

use std::path::Path;
use std::sync::Arc;

use wujie_commondev::{BranchObserver, BranchSessions, Lifetime, SessionConfig};

pub async fn run_mcp(data_dir: &Path, observer: Arc<dyn BranchObserver>) -> anyhow::Result<()> {
    let sessions = Arc::new(
        BranchSessions::new(
            data_dir,
            SessionConfig::standard(data_dir),
            Lifetime::KeepAlive,
        )
        .with_observer(observer),
    );
    wujie_commondev::mcp::serve_stdio(sessions).await?;
    Ok(())
}
