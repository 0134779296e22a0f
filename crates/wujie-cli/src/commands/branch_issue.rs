//! Connects commondev branches to the tracker: a branch opened with `issue` reports each prompt
//! and its reply as a local run on that issue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use wujie_commondev::BranchObserver;
use wujie_commondev::store::BranchRecord;
use wujie_localrun::turns::{Turn, report_turn};

use crate::context::Context;

/// Observer handed to `BranchSessions`: collects finished turns and reports them in the
/// background, so a slow or unreachable server never delays the agent.
pub struct IssueTurns {
    prompts: Mutex<HashMap<String, String>>,
    tx: Mutex<Option<mpsc::UnboundedSender<Turn>>>,
}

/// The task delivering turns; `finish` waits for what was queued.
pub struct TurnDelivery(JoinHandle<()>);

impl IssueTurns {
    pub fn start(ctx: &Context) -> (Arc<IssueTurns>, TurnDelivery) {
        let (tx, mut rx) = mpsc::unbounded_channel::<Turn>();
        let profile = ctx.profile.clone();
        let server = ctx.server_flag.clone();
        let task = tokio::spawn(async move {
            let mut conn = None;
            while let Some(turn) = rx.recv().await {
                if conn.is_none() {
                    match wujie_localrun::connection::Connection::open(
                        &profile,
                        server.as_deref(),
                        &crate::context::env_var,
                    )
                    .await
                    {
                        Ok(c) => conn = Some(c),
                        Err(e) => {
                            eprintln!("wujie: cannot report the turn to {}: {e}", turn.issue);
                            continue;
                        }
                    }
                }
                let Some(c) = &conn else { continue };
                if let Err(e) = report_turn(&c.client, &turn).await {
                    eprintln!("wujie: cannot report the turn to {}: {e}", turn.issue);
                }
            }
            if let Some(c) = conn {
                c.close().await;
            }
        });
        let observer = Arc::new(IssueTurns {
            prompts: Mutex::new(HashMap::new()),
            tx: Mutex::new(Some(tx)),
        });
        (observer, TurnDelivery(task))
    }

    /// Stop accepting turns (the delivery task ends once the queue is empty).
    pub fn close(&self) {
        self.tx.lock().expect("turns lock").take();
    }
}

impl TurnDelivery {
    pub async fn finish(self) {
        let _ = self.0.await;
    }
}

impl BranchObserver for IssueTurns {
    fn on_prompt(&self, branch: &BranchRecord, text: &str) {
        if branch.issue.is_some() {
            self.prompts
                .lock()
                .expect("turns lock")
                .insert(branch.label.clone(), text.to_owned());
        }
    }

    fn on_reply(&self, branch: &BranchRecord, reply: &str) {
        let Some(issue) = &branch.issue else { return };
        let prompt = self
            .prompts
            .lock()
            .expect("turns lock")
            .remove(&branch.label)
            .unwrap_or_default();
        let turn = Turn {
            issue: issue.clone(),
            agent_cli: branch.agent_cli.clone(),
            workdir: branch.workdir.to_string_lossy().into_owned(),
            label: branch.label.clone(),
            session_id: branch.session_id().to_owned(),
            prompt,
            reply: reply.to_owned(),
        };
        if let Some(tx) = self.tx.lock().expect("turns lock").as_ref() {
            let _ = tx.send(turn);
        }
    }
}
