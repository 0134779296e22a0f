//! Reporting a headless agent turn (a commondev branch prompt, the tool calls it made and its
//! reply or error) as a local run on an issue, so work delegated to a branch shows up where the
//! issue's other work does — failed turns included.

use wujie_client::{Client, ClientError};
use wujie_protocol::api::{CreateRun, FinishRun, IngestBatch, IngestItem, RunStatus};
use wujie_protocol::event::{Event, Message, MessageKind};
use wujie_protocol::git::GitChanges;
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
    /// What the turn changed in the code, when its work tree is a git one.
    pub code: Option<GitChanges>,
}

/// Create a run on the issue holding the prompt (a user comment), the tool calls, and the reply
/// (an agent comment) or the error, then finish it as succeeded or failed. Keys are per run, so
/// a retried call stores nothing twice.
pub async fn report_turn(client: &Client, turn: &Turn) -> Result<String, ClientError> {
    let create = CreateRun {
        provider: turn.agent_cli.clone(),
        cwd: turn.workdir.clone(),
        job: None,
    };
    let run_id = client.create_run(&turn.issue, &create).await?.run.id;
    let mut items: Vec<IngestItem> = turn_messages(turn)
        .into_iter()
        .map(|(suffix, mut message)| {
            let source_key = source_key(turn, &run_id, &suffix);
            message.source = turn.label.clone();
            message.source_key = source_key.clone();
            item(turn, source_key, Event::Message(message))
        })
        .collect();
    if let Some(code) = &turn.code {
        let key = source_key(turn, &run_id, "git");
        items.push(item(turn, key, Event::GitChanges(code.clone())));
    }
    client
        .ingest_run_events(&run_id, &IngestBatch { items })
        .await?;
    let (status, error) = match &turn.outcome {
        TurnOutcome::Replied(_) => (RunStatus::Succeeded, None),
        TurnOutcome::Failed(error) => (RunStatus::Failed, Some(error.clone())),
    };
    let finish = FinishRun {
        status,
        exit_code: None,
        error,
    };
    client.finish_run(&run_id, &finish).await?;
    Ok(run_id)
}

/// The turn's messages in order, each with the end of its key.
fn turn_messages(turn: &Turn) -> Vec<(String, Message)> {
    let mut messages = vec![(
        "user".to_owned(),
        Message {
            content: Some(turn.prompt.clone()),
            ..blank(MessageKind::UserInput)
        },
    )];
    for (n, call) in turn.tool_calls.iter().enumerate() {
        let tool_use = Message {
            tool: Some(call.tool.clone()),
            input: Some(call.input.clone().unwrap_or_default()),
            ..blank(MessageKind::ToolUse)
        };
        messages.push((format!("tool:{n}"), tool_use));
        if let Some(output) = &call.output {
            let result = Message {
                tool: Some(call.tool.clone()),
                output: Some(output.clone()),
                ..blank(MessageKind::ToolResult)
            };
            messages.push((format!("tool:{n}:result"), result));
        }
    }
    let (suffix, kind, content) = match &turn.outcome {
        TurnOutcome::Replied(reply) => ("final", MessageKind::Final, reply),
        TurnOutcome::Failed(error) => ("error", MessageKind::Error, error),
    };
    let last = Message {
        content: Some(content.clone()),
        ..blank(kind)
    };
    messages.push((suffix.to_owned(), last));
    messages
}

/// A message of `kind` and nothing else; [`keyed`] gives it its source and key.
fn blank(kind: MessageKind) -> Message {
    wujie_builtins::bare_message("", kind, String::new())
}

/// The key of an item of the turn's run: the backend session, the run, and what it is.
fn source_key(turn: &Turn, run_id: &str, suffix: &str) -> String {
    format!("session:{}:run:{run_id}:{suffix}", turn.session_id)
}

fn item(turn: &Turn, source_key: String, event: Event) -> IngestItem {
    IngestItem {
        source: turn.label.clone(),
        source_key,
        event,
    }
}
