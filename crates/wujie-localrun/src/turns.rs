//! Reporting a headless agent turn (a commondev branch prompt, the tool calls it made and its
//! reply or error) as a local run on an issue, so work delegated to a branch shows up where the
//! issue's other work does — failed turns included.

use wujie_client::{Client, ClientError};
use wujie_protocol::api::{CreateRun, FinishRun, IngestBatch, IngestItem, RunStatus};
use wujie_protocol::event::{Event, Message, MessageKind};
use wujie_protocol::sidecar_tools::ToolCall;

/// How a turn ended.
#[derive(Debug, Clone)]
pub enum TurnOutcome {
    Replied(String),
    /// The error the user saw (timeout, drift, a broken sidecar, …).
    Failed(String),
}

/// One prompt and what came of it.
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
    /// The tool calls the backend's `state` shows for this turn.
    pub tool_calls: Vec<ToolCall>,
    pub outcome: TurnOutcome,
}

/// Create a run on the issue holding the prompt (a user comment), the tool calls, and the reply
/// (an agent comment) or the error, then finish it as succeeded or failed. Keys are per run, so
/// a retried call stores nothing twice.
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
    let item = |mut message: Message, suffix: &str| {
        let source_key = format!("session:{}:run:{run_id}:{suffix}", turn.session_id);
        message.source = turn.label.clone();
        message.source_key = source_key.clone();
        IngestItem {
            source: turn.label.clone(),
            source_key,
            event: Event::Message(message),
        }
    };
    let message = |kind: MessageKind| Message {
        kind,
        content: None,
        tool: None,
        input: None,
        output: None,
        source: String::new(),
        source_key: String::new(),
    };
    let mut items = vec![item(
        Message {
            content: Some(turn.prompt.clone()),
            ..message(MessageKind::UserInput)
        },
        "user",
    )];
    for (n, call) in turn.tool_calls.iter().enumerate() {
        items.push(item(
            Message {
                tool: Some(call.tool.clone()),
                input: Some(call.input.clone().unwrap_or_default()),
                ..message(MessageKind::ToolUse)
            },
            &format!("tool:{n}"),
        ));
        if let Some(output) = &call.output {
            items.push(item(
                Message {
                    tool: Some(call.tool.clone()),
                    output: Some(output.clone()),
                    ..message(MessageKind::ToolResult)
                },
                &format!("tool:{n}:result"),
            ));
        }
    }
    let (status, error) = match &turn.outcome {
        TurnOutcome::Replied(reply) => {
            items.push(item(
                Message {
                    content: Some(reply.clone()),
                    ..message(MessageKind::Final)
                },
                "final",
            ));
            (RunStatus::Succeeded, None)
        }
        TurnOutcome::Failed(error) => {
            items.push(item(
                Message {
                    content: Some(error.clone()),
                    ..message(MessageKind::Error)
                },
                "error",
            ));
            (RunStatus::Failed, Some(error.clone()))
        }
    };
    client
        .ingest_run_events(&run_id, &IngestBatch { items })
        .await?;
    client
        .finish_run(
            &run_id,
            &FinishRun {
                status,
                exit_code: None,
                error,
            },
        )
        .await?;
    Ok(run_id)
}
