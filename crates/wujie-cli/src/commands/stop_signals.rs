//! The signals that end a `wujie` command which owns sidecars (`wujie branch`, `wujie mcp`): the
//! command stops its sidecars' process trees before exiting instead of dying and leaving them
//! orphaned under PID 1. And the two that end a command that serves or follows until stopped
//! (`wujie ui`, `wujie notify`) cleanly.

use tokio::signal::unix::{SignalKind, signal};

/// Resolves with the exit code for the first SIGINT, SIGTERM or SIGHUP (128 + its number).
/// If the handlers cannot be installed it says so and never resolves.
pub async fn first_stop_signal() -> i32 {
    let kinds = (
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    );
    let streams = (signal(kinds.0), signal(kinds.1), signal(kinds.2));
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = streams else {
        wujie_process::stderr_line!(
            "wujie: cannot watch SIGINT/SIGTERM/SIGHUP; a signal will not stop the sidecars"
        );
        return std::future::pending().await;
    };
    let kind = tokio::select! {
        _ = int.recv() => kinds.0,
        _ = term.recv() => kinds.1,
        _ = hup.recv() => kinds.2,
    };
    128 + kind.as_raw_value()
}

/// Ctrl+C and SIGTERM, each ending a command that runs until stopped cleanly.
pub struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub fn listen() -> anyhow::Result<StopSignals> {
        use anyhow::Context as _;
        let listen = |kind| signal(kind).context("listening for Ctrl+C and SIGTERM");
        Ok(StopSignals {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    pub async fn wait(mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
    }
}
