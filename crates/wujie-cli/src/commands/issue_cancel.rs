//! `wujie issue cancel KEY [--run ID]`: asks the issue's running runs (or the one named) to
//! stop, wherever they run; each run's reporter stops its agent and records the end.

use anyhow::{Result, bail};
use wujie_client::Client;
use wujie_protocol::api::{RunCancel, RunStatus};

use crate::context::Context;
use crate::output::{inline, outln, print_json};

pub async fn cancel(ctx: &Context, client: &Client, key: &str, run: Option<&str>) -> Result<()> {
    let shown = inline(&key.to_ascii_uppercase()).to_string();
    let runs = client.issue_runs(key).await?;
    let chosen: Vec<String> = match run {
        Some(id) => {
            if !runs.iter().any(|r| r.id == id) {
                bail!(
                    "{shown} has no run {}; `wujie issue runs {shown}` lists its runs",
                    inline(id)
                );
            }
            vec![id.to_owned()]
        }
        None => {
            let running: Vec<String> = runs
                .iter()
                .filter(|r| r.status == RunStatus::Running)
                .map(|r| r.id.clone())
                .collect();
            if running.is_empty() {
                bail!(
                    "no run of {shown} is running, so there is nothing to cancel; \
                     `wujie issue runs {shown}` lists its runs"
                );
            }
            running
        }
    };
    let mut cancels = Vec::with_capacity(chosen.len());
    for id in &chosen {
        cancels.push(client.cancel_run(id).await?);
    }
    if ctx.json() {
        print_json(&cancels)?;
    } else {
        for c in &cancels {
            outln!("{}", describe(c));
        }
    }
    Ok(())
}

fn describe(c: &RunCancel) -> String {
    let who = inline(c.cancel.who());
    if c.already_requested {
        format!(
            "Run {} on {} was already asked to stop (by {who} at {}); its agent stops within \
             seconds of its reporter hearing of it.",
            c.run_id, c.issue_key, c.cancel.at
        )
    } else {
        format!(
            "Cancelled run {} on {}: its agent stops within seconds, wherever it runs.",
            c.run_id, c.issue_key
        )
    }
}
