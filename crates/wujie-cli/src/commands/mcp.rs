//! `wujie mcp`: the commondev MCP server on stdin/stdout (long-lived: sidecars stay up). It
//! ends when its client closes stdin or on SIGINT/SIGTERM/SIGHUP, in both cases only after every
//! sidecar's process tree is stopped.

use std::sync::Arc;

use wujie_commondev::{BranchObserver, BranchSessions, Lifetime};

use crate::context::Context;

/// Returns the exit code: 0 when the client went away, 128 + the signal's number otherwise.
pub async fn run_mcp(ctx: &Context, observer: Arc<dyn BranchObserver>) -> anyhow::Result<i32> {
    let sessions = Arc::new(
        BranchSessions::new(
            &ctx.profile.data_dir,
            super::branch::session_config(ctx)?,
            Lifetime::KeepAlive,
        )
        .with_observer(observer),
    );
    let served = tokio::select! {
        served = wujie_commondev::mcp::serve_stdio(sessions.clone()) => served.map(|()| 0),
        code = super::stop_signals::first_stop_signal() => Ok(code),
    };
    // Also after a signal, when the server was dropped mid-call.
    sessions.shutdown().await;
    Ok(served?)
}
