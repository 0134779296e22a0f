//! The signals that end a `wujie` command which owns sidecars (`wujie branch`, `wujie mcp`): the
//! command stops its sidecars' process trees before exiting instead of dying and leaving them
//! orphaned under PID 1.

use tokio::signal::unix::{SignalKind, signal};

/// Resolves with the exit code for the first SIGINT, SIGTERM or SIGHUP (128 + its number).
/// If the handlers cannot be installed it says so and never resolves.
pub async fn first_stop_signal() -> i32 {
    let streams = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    );
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = streams else {
        eprintln!("wujie: cannot watch SIGINT/SIGTERM/SIGHUP; a signal will not stop the sidecars");
        return std::future::pending().await;
    };
    let number = tokio::select! {
        _ = int.recv() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
        _ = hup.recv() => libc::SIGHUP,
    };
    128 + number
}
