//! Reporting a headless agent turn (a commondev branch prompt and its reply) as a local run on
//! an issue, so work delegated to a branch shows up where the issue's other work does.

use wujie_client::{Client, ClientError};
use wujie_protocol::api::{CreateRun, FinishRun, IngestBatch, IngestItem, RunStatus};
use wujie_protocol::event::{Event, Message, MessageKind};

/// One prompt and what came back.
#[derive(Debug, Clone)]
pub struct Turn {
    pub issue: String,
    /// The agent CLI the branch runs (the run's provider).
    pub agent_cli: String,
    pub workdir: String,
    /// The branch label, `br-<project>-<branch>`: the source of the turn's messages.
    pub label: String,
    /// The backend session the turn ran in.
    pub session_id: String,
    pub prompt: String,
    pub reply: String,
}

/// Create a run on the issue holding the prompt (a user comment) and the reply (an agent
/// comment), then finish it as succeeded. Keys are per run, so a retried call stores nothing
/// twice.
pub async fn report_turn(client: &Client, turn: &Turn) -> Result<String, ClientError> {
    let created = client
        .create_run(
            &turn.issue,
            &CreateRun {
                provider: turn.agent_cli.clone(),
                cwd: turn.workdir.clone(),
            },
        )
        .await?;
    let run_id = created.run.id;
    let message = |kind: MessageKind, content: &str, suffix: &str| {
        let source_key = format!("session:{}:run:{run_id}:{suffix}", turn.session_id);
        IngestItem {
            source: turn.label.clone(),
            source_key: source_key.clone(),
            event: Event::Message(Message {
                kind,
                content: Some(content.to_owned()),
                tool: None,
                input: None,
                output: None,
                source: turn.label.clone(),
                source_key,
            }),
        }
    };
    let batch = IngestBatch {
        items: vec![
            message(MessageKind::UserInput, &turn.prompt, "user"),
            message(MessageKind::Final, &turn.reply, "final"),
        ],
    };
    client.ingest_run_events(&run_id, &batch).await?;
    client
        .finish_run(
            &run_id,
            &FinishRun {
                status: RunStatus::Succeeded,
                exit_code: None,
                error: None,
            },
        )
        .await?;
    Ok(run_id)
}
