//! The signals that stop a long-lived `wujie` command (SIGINT, SIGTERM, SIGHUP): a command
//! that owns sidecars (`wujie branch`, `wujie mcp`) stops their process trees before exiting
//! instead of dying and leaving them orphaned under PID 1; `wujie ui` closes its server and
//! `wujie notify` ends cleanly; `wujie worker` lets its jobs finish, and on the next signal
//! gives them back.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Handlers for the three stop signals, each delivered every time it comes.
pub struct StopSignals {
    int: Signal,
    term: Signal,
    hup: Signal,
}

impl StopSignals {
    pub fn install() -> std::io::Result<StopSignals> {
        Ok(StopSignals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next stop signal: the exit code it calls for (128 + its number).
    pub async fn recv(&mut self) -> i32 {
        let kind = tokio::select! {
            _ = self.int.recv() => SignalKind::interrupt(),
            _ = self.term.recv() => SignalKind::terminate(),
            _ = self.hup.recv() => SignalKind::hangup(),
        };
        128 + kind.as_raw_value()
    }
}

/// Resolves with the exit code for the first SIGINT, SIGTERM or SIGHUP (128 + its number).
/// If the handlers cannot be installed it says so and never resolves.
pub async fn first_stop_signal() -> i32 {
    match StopSignals::install() {
        Ok(mut signals) => signals.recv().await,
        Err(_) => {
            wujie_process::stderr_line!(
                "wujie: cannot watch SIGINT/SIGTERM/SIGHUP; a signal will not stop the sidecars"
            );
            std::future::pending().await
        }
    }
}
