//! Hearing a cancel asked from anywhere (`wujie issue cancel`, the web UI) while a run runs:
//! the run's control state is read every [`POLL`], a read by the run's key that costs the
//! server little. The heartbeat (every 30 s) is too rare to stop an agent within seconds, and
//! the answers to deliveries come only while the agent prints.

use std::time::Duration;

use wujie_client::Client;
use wujie_protocol::api::RunControl;

use crate::adapter_session::ElsewhereStop;

/// How often a running run asks whether it was cancelled.
const POLL: Duration = Duration::from_secs(2);

/// Resolves once someone asked for run `run_id` of issue `issue_key` to be cancelled. A read
/// that fails (the server restarting, unreachable) is tried again at the next poll.
pub(crate) async fn cancel_asked(
    client: Client,
    run_id: String,
    issue_key: String,
) -> ElsewhereStop {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + POLL, POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Ok(RunControl {
            cancel: Some(cancel),
        }) = client.run_control(&run_id).await
        {
            let who = cancel.who();
            return ElsewhereStop {
                said: format!(
                    "run {run_id} on {issue_key} was cancelled by {who}; stopping the agent…"
                ),
                error: format!("cancelled by {who}"),
            };
        }
    }
}
