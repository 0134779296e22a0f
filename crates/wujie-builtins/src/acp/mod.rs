//! The built-in `acp` provider: `wujie adapter acp [OPTIONS] -- AGENT_COMMAND [ARGS…]` starts
//! any agent that speaks the Agent Client Protocol on its stdin/stdout, opens a session in the
//! current directory, sends the prompt and prints the session's updates as our NDJSON events
//! (see [`mapper`] for what maps to what).
//!
//! Options: `-p TEXT` (the prompt: one turn, headless) and `--allow once|always|reject` (how
//! `session/request_permission` is answered). With no `--allow` the user would be asked on a
//! terminal; the adapter has none (its stdin is the run's input pipe), so it rejects and says so.
//! The client advertises no file-system and no terminal capability: it implements neither.
//!
//! What the tested agents send (against the mock model server, tests/builtin_acp_agents.rs):
//!
//! | agent | tool input | tool output | user input | usage |
//! |---|---|---|---|---|
//! | Gemini CLI 0.61 (`gemini --acp`) | none (title only) | none | not echoed | `_meta.quota.token_count`, with the model |
//! | Grok Build (`grok agent stdio`) | `rawInput` | text | echoed | `_meta.usage`, with the model; asks permission for shell commands |
//! | Hermes 0.19 (`hermes acp`) | none (title only) | text | not echoed | the draft `usage` field, no model |
//! | opencode 1.18 (`opencode acp`) | `rawInput` | text | not echoed | the draft `usage` field, last model request only, no model |

pub mod mapper;

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind, PromptRequest,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, TextContent,
};
use agent_client_protocol::{Agent, Client, Lines, UntypedMessage};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use wujie_protocol::event::Event;

use self::mapper::{AcpMapper, TurnEnd};

/// How the adapter was asked to run.
#[derive(Debug, Clone, PartialEq)]
pub struct AcpArgs {
    pub prompt: String,
    pub allow: Allow,
    /// The agent's command line: program, then its arguments.
    pub command: Vec<String>,
}

/// The answer to every `session/request_permission`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allow {
    Once,
    Always,
    Reject,
    /// No `--allow`: ask the user on a terminal, of which the adapter has none.
    Ask,
}

const USAGE: &str = "usage: acp [-p TEXT] [--allow once|always|reject] -- AGENT_COMMAND [ARGS…], e.g. acp -p \"fix the tests\" -- gemini --acp";

/// Why the acp adapter could not run.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("{0}; {USAGE}")]
    Usage(String),
    #[error("could not start the agent {program:?}: {source}; check the command after `--`")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("the agent {program:?} failed: {what}")]
    Protocol { program: String, what: String },
}

impl AcpArgs {
    pub fn parse(args: &[String]) -> Result<AcpArgs, AcpError> {
        let usage = |what: String| Err(AcpError::Usage(what));
        let mut prompt = None;
        let mut allow = Allow::Ask;
        let mut rest = args.iter();
        let mut command = Vec::new();
        while let Some(arg) = rest.next() {
            match arg.as_str() {
                "--" => {
                    command = rest.by_ref().cloned().collect();
                    break;
                }
                "-p" | "--prompt" => match rest.next() {
                    Some(text) => prompt = Some(text.clone()),
                    None => return usage(format!("{arg} needs the prompt text")),
                },
                "--allow" => {
                    allow = match rest.next().map(String::as_str) {
                        Some("once") => Allow::Once,
                        Some("always") => Allow::Always,
                        Some("reject") => Allow::Reject,
                        Some(other) => {
                            return usage(format!(
                                "--allow {other:?} is not a policy: use once, always or reject"
                            ));
                        }
                        None => return usage("--allow needs once, always or reject".to_owned()),
                    }
                }
                other => return usage(format!("unknown option {other:?}")),
            }
        }
        if command.is_empty() {
            return usage("no agent command after `--`".to_owned());
        }
        let Some(prompt) = prompt.filter(|p| !p.trim().is_empty()) else {
            return usage(
                "no prompt: pass -p TEXT (a conversation on the terminal is not available yet)"
                    .to_owned(),
            );
        };
        Ok(AcpArgs {
            prompt,
            allow,
            command,
        })
    }
}

/// The option that answers a permission request under `allow`, or `None` to refuse it.
/// Options are chosen by their kind, never by position or name.
pub fn choose_option(allow: Allow, options: &[(String, PermissionOptionKind)]) -> Option<String> {
    let preference: &[PermissionOptionKind] = match allow {
        Allow::Once => &[
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
        ],
        Allow::Always => &[
            PermissionOptionKind::AllowAlways,
            PermissionOptionKind::AllowOnce,
        ],
        Allow::Reject | Allow::Ask => &[
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::RejectAlways,
        ],
    };
    preference.iter().find_map(|kind| {
        options
            .iter()
            .find(|(_, k)| k == kind)
            .map(|(id, _)| id.clone())
    })
}

/// `wujie adapter acp ARGS…`: exit code 0 when the turn ended normally, 1 when the agent
/// failed, 2 for bad arguments, 127 when the agent could not be started.
pub async fn run_acp_adapter(args: Vec<String>) -> i32 {
    let args = match AcpArgs::parse(&args) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("wujie adapter acp: error: {e}");
            return 2;
        }
    };
    match run(args).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wujie adapter acp: error: {e}");
            match e {
                AcpError::Usage(_) => 2,
                AcpError::Spawn { .. } => 127,
                AcpError::Protocol { .. } => 1,
            }
        }
    }
}

/// Prints events on our stdout, one NDJSON line each.
fn emit(events: Vec<Event>) {
    use std::io::Write;
    if events.is_empty() {
        return;
    }
    let bytes: Vec<u8> = events.iter().flat_map(Event::encode_line).collect();
    let mut stdout = std::io::stdout().lock();
    // A closed stdout means the parent is gone; the agent is still driven to the end.
    let _ = stdout.write_all(&bytes).and_then(|()| stdout.flush());
}

/// The session's mapper, once `session/new` answered; updates before that are skipped.
type SharedMapper = Arc<Mutex<Option<AcpMapper>>>;

fn with_mapper<T>(shared: &SharedMapper, f: impl FnOnce(&mut AcpMapper) -> T) -> Option<T> {
    let mut guard = shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    guard.as_mut().map(f)
}

async fn run(args: AcpArgs) -> Result<i32, AcpError> {
    let program = args.command[0].clone();
    let cwd = std::env::current_dir().map_err(|e| AcpError::Protocol {
        program: program.clone(),
        what: format!("the current directory is unreadable: {e}"),
    })?;
    let mut child = tokio::process::Command::new(&program)
        .args(&args.command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| AcpError::Spawn {
            program: program.clone(),
            source,
        })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(AcpError::Protocol {
            program,
            what: "its stdin or stdout could not be opened as a pipe".to_owned(),
        });
    };
    let outgoing = futures::sink::unfold(stdin, |mut stdin, line: String| async move {
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await?;
        Ok::<_, std::io::Error>(stdin)
    });
    let incoming =
        futures::stream::unfold(Some(BufReader::new(stdout).lines()), |lines| async move {
            let mut lines = lines?;
            match lines.next_line().await {
                Ok(Some(line)) => Some((Ok(line), Some(lines))),
                Ok(None) => None,
                // One error ends the stream: a broken pipe does not heal.
                Err(e) => Some((Err(e), None)),
            }
        });

    let shared: SharedMapper = Arc::new(Mutex::new(None));
    let turn_open = Arc::new(Mutex::new(false));
    let allow = args.allow;
    let result = Client
        .v1()
        .on_receive_notification(
            {
                let shared = shared.clone();
                async move |message: UntypedMessage, _cx| {
                    if message.method == "session/update"
                        && let Some(events) = with_mapper(&shared, |m| m.update(&message.params))
                    {
                        emit(events);
                    }
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let options: Vec<(String, PermissionOptionKind)> = request
                    .options
                    .iter()
                    .map(|o| (o.option_id.0.to_string(), o.kind))
                    .collect();
                let title = request.tool_call.fields.title.clone().unwrap_or_default();
                if allow == Allow::Ask {
                    eprintln!(
                        "wujie adapter acp: the agent asks permission for {title:?}; rejected, as there is no terminal to ask on (pass --allow once or --allow always to allow)"
                    );
                }
                let outcome = match choose_option(allow, &options) {
                    Some(id) => {
                        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id))
                    }
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(Lines::new(outgoing, incoming), {
            let shared = shared.clone();
            let turn_open = turn_open.clone();
            let prompt = args.prompt.clone();
            async move |cx: ConnectionTo<Agent>| {
                let init = cx
                    .send_request(InitializeRequest::new(ProtocolVersion::V1))
                    .block_task()
                    .await?;
                let agent_name = init
                    .agent_info
                    .as_ref()
                    .map(|i| i.name.clone())
                    .unwrap_or_else(|| "acp".to_owned());
                let session = cx
                    .send_request(NewSessionRequest::new(cwd))
                    .block_task()
                    .await?;
                let session_id = session.session_id.clone();
                let mut mapper = AcpMapper::new(&session_id.0, &agent_name);
                emit(vec![mapper.session_event()]);
                emit(mapper.start_turn(&prompt));
                *shared.lock().unwrap_or_else(|p| p.into_inner()) = Some(mapper);
                *turn_open.lock().unwrap_or_else(|p| p.into_inner()) = true;
                let response = cx
                    .send_request(PromptRequest::new(
                        session_id,
                        vec![ContentBlock::Text(TextContent::new(prompt))],
                    ))
                    .block_task()
                    .await;
                *turn_open.lock().unwrap_or_else(|p| p.into_inner()) = false;
                let end = match &response {
                    Ok(r) => TurnEnd::Stopped {
                        stop_reason: serde_json::to_value(r.stop_reason)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_else(|| "unknown".to_owned()),
                        usage: r.usage.as_ref().and_then(|u| serde_json::to_value(u).ok()),
                        meta: r.meta.as_ref().and_then(|m| serde_json::to_value(m).ok()),
                    },
                    // An error answer, or the agent's output closed (it exited) mid-turn.
                    Err(e) => TurnEnd::Failed(format!("the turn broke off: {}", e.message)),
                };
                if let Some(events) = with_mapper(&shared, |m| m.end_turn(&end)) {
                    emit(events);
                }
                Ok(matches!(end, TurnEnd::Stopped { .. }))
            }
        })
        .await;

    let outcome = match result {
        Ok(true) => Ok(0),
        Ok(false) => Ok(1),
        Err(e) => {
            // The connection broke (the agent exited, or spoke something that is not
            // JSON-RPC): a turn still open ends as an error on the issue.
            let what = format!("{e}");
            if std::mem::take(&mut *turn_open.lock().unwrap_or_else(|p| p.into_inner()))
                && let Some(events) = with_mapper(&shared, |m| {
                    m.end_turn(&TurnEnd::Failed(format!("the turn broke off: {what}")))
                })
            {
                emit(events);
            }
            Err(AcpError::Protocol {
                program: program.clone(),
                what,
            })
        }
    };
    stop_agent(&mut child).await;
    outcome
}

/// Ends the agent: its stdin is closed already (the connection is gone); give it a moment to
/// exit by itself, then kill it.
async fn stop_agent(child: &mut tokio::process::Child) {
    let grace = std::time::Duration::from_secs(3);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}
