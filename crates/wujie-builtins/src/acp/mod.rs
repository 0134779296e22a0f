//! The built-in `acp` provider: `wujie adapter acp [OPTIONS] -- AGENT_COMMAND [ARGS…]` starts
//! any agent that speaks the Agent Client Protocol on its stdin/stdout, opens a session in the
//! current directory, sends the prompt and prints the session's updates as our NDJSON events
//! (see [`mapper`] for what maps to what).
//!
//! Prompts: `-p TEXT` is one turn. Without it, on a terminal, the user converses with the agent
//! ([`console`]): a line editor of our own, the agent's reply streamed as it comes, Ctrl+C
//! cancels the running turn (`session/cancel`), Ctrl+D ends. With neither, there is nothing to
//! send: a usage error.
//!
//! Permissions: `--allow once|always|reject` answers every `session/request_permission`. With no
//! `--allow` the user is asked on the terminal (the options the agent offers, by number); with no
//! terminal (`wujie run` with its input piped) the request is rejected, and the adapter says so.
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

pub mod console;
pub mod mapper;

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, NewSessionRequest, PermissionOptionKind,
    PromptRequest, PromptResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, TextContent,
};
use agent_client_protocol::{Agent, Client, Lines, Responder, UntypedMessage, V1};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use wujie_protocol::event::Event;

use self::console::{Choice, Console, ConsoleOut, TurnInput, user_at_terminal};
use self::mapper::{AcpMapper, TurnEnd};

/// How the adapter was asked to run.
#[derive(Debug, Clone, PartialEq)]
pub struct AcpArgs {
    /// `-p TEXT`: one turn with this prompt; `None`: a conversation on the terminal.
    pub prompt: Option<String>,
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
    /// No `--allow`: ask the user on the terminal; with no terminal, reject.
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
                    Some(text) if !text.trim().is_empty() => prompt = Some(text.clone()),
                    Some(_) => return usage(format!("{arg} needs the prompt text, not a blank")),
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

/// `wujie adapter acp ARGS…`: exit code 0 when the turn (or the conversation) ended normally,
/// 1 when the agent failed, 2 for bad arguments, 127 when the agent could not be started.
pub async fn run_acp_adapter(args: Vec<String>) -> i32 {
    let args = match AcpArgs::parse(&args) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("wujie adapter acp: error: {e}");
            return 2;
        }
    };
    let terminal = user_at_terminal();
    if args.prompt.is_none() && !terminal {
        let e = AcpError::Usage(
            "no prompt: pass -p TEXT, or start it on a terminal to converse with the agent"
                .to_owned(),
        );
        eprintln!("wujie adapter acp: error: {e}");
        return 2;
    }
    match run(args, terminal).await {
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

/// A permission request for the user on the terminal, with the way to answer it.
struct PermissionAsk {
    request: RequestPermissionRequest,
    responder: Responder<RequestPermissionResponse, V1>,
}

/// What happened first while a turn ran.
enum DuringTurn {
    Done(Result<PromptResponse, agent_client_protocol::Error>),
    Ask(PermissionAsk),
    Input(TurnInput),
}

async fn run(args: AcpArgs, terminal: bool) -> Result<i32, AcpError> {
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
    let console = if terminal {
        Some(Console::open().map_err(|e| AcpError::Protocol {
            program: program.clone(),
            what: format!("the terminal could not be set up for the conversation: {e}"),
        })?)
    } else {
        None
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
    let out: Option<ConsoleOut> = console.as_ref().map(Console::out);
    let (asks_tx, asks) = mpsc::unbounded_channel::<PermissionAsk>();
    let ask_user = allow == Allow::Ask && console.is_some();
    let result = Client
        .v1()
        .on_receive_notification(
            {
                let shared = shared.clone();
                let out = out.clone();
                async move |message: UntypedMessage, _cx| {
                    if message.method == "session/update"
                        && let Some(events) = with_mapper(&shared, |m| m.update(&message.params))
                    {
                        emit(events);
                        if let Some(out) = &out {
                            out.show_update(&message.params);
                        }
                    }
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                if ask_user {
                    // Answered by the conversation loop, which owns the terminal; the
                    // connection goes on meanwhile.
                    let ask = PermissionAsk { request, responder };
                    if let Err(mpsc::error::SendError(ask)) = asks_tx.send(ask) {
                        return ask.responder.respond(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Cancelled,
                        ));
                    }
                    return Ok(());
                }
                if allow == Allow::Ask {
                    let title = request.tool_call.fields.title.clone().unwrap_or_default();
                    eprintln!(
                        "wujie adapter acp: the agent asks permission for {title:?}; rejected, as there is no terminal to ask on (pass --allow once or --allow always to allow)"
                    );
                }
                let outcome = match choose_option(allow, &option_kinds(&request)) {
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
            let first_prompt = args.prompt.clone();
            let mut console = console;
            let mut asks = asks;
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
                let mapper = AcpMapper::new(&session_id.0, &agent_name);
                emit(vec![mapper.session_event()]);
                *shared.lock().unwrap_or_else(|p| p.into_inner()) = Some(mapper);
                if let Some(console) = &console {
                    console.out().note(&format!(
                        "{agent_name}, session {}: Enter sends, Ctrl+C cancels a turn, Ctrl+D ends",
                        session_id.0
                    ));
                }
                let mut next_prompt = first_prompt.clone();
                let mut input_open = true;
                let mut all_ok = true;
                loop {
                    let prompt = match (next_prompt.take(), console.as_mut()) {
                        (Some(prompt), _) => prompt,
                        (None, Some(console)) if first_prompt.is_none() && input_open => {
                            match console.read_prompt().await {
                                Some(prompt) => prompt,
                                None => break,
                            }
                        }
                        _ => break,
                    };
                    if let Some(events) = with_mapper(&shared, |m| m.start_turn(&prompt)) {
                        emit(events);
                    }
                    *turn_open.lock().unwrap_or_else(|p| p.into_inner()) = true;
                    let request = cx
                        .send_request(PromptRequest::new(
                            session_id.clone(),
                            vec![ContentBlock::Text(TextContent::new(prompt))],
                        ))
                        .block_task();
                    tokio::pin!(request);
                    let response = loop {
                        let during = tokio::select! {
                            response = &mut request => DuringTurn::Done(response),
                            Some(ask) = asks.recv() => DuringTurn::Ask(ask),
                            input = turn_input(console.as_mut(), input_open) => DuringTurn::Input(input),
                        };
                        match during {
                            DuringTurn::Done(response) => break response,
                            DuringTurn::Ask(ask) => {
                                let cancel = answer_on_terminal(console.as_mut(), ask).await?;
                                if cancel {
                                    cancel_turn(&cx, &session_id, console.as_ref())?;
                                }
                            }
                            DuringTurn::Input(TurnInput::Cancel) => {
                                cancel_turn(&cx, &session_id, console.as_ref())?;
                            }
                            DuringTurn::Input(TurnInput::Closed) => {
                                input_open = false;
                                cancel_turn(&cx, &session_id, console.as_ref())?;
                            }
                        }
                    };
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
                    if let Some(console) = &console {
                        show_turn_end(&console.out(), &end);
                    }
                    match end {
                        TurnEnd::Stopped { .. } => {}
                        TurnEnd::Failed(_) => {
                            all_ok = false;
                            // A connection that broke does not come back.
                            if response.as_ref().is_err_and(|e| {
                                agent_client_protocol::is_incoming_transport_closed(e)
                            }) {
                                break;
                            }
                        }
                    }
                }
                Ok(all_ok)
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

fn option_kinds(request: &RequestPermissionRequest) -> Vec<(String, PermissionOptionKind)> {
    request
        .options
        .iter()
        .map(|o| (o.option_id.0.to_string(), o.kind))
        .collect()
}

/// The user's input during a turn; never resolves without a terminal or once its input ended.
async fn turn_input(console: Option<&mut Console>, open: bool) -> TurnInput {
    match console {
        Some(console) if open => console.turn_input().await,
        _ => std::future::pending().await,
    }
}

/// Asks the user on the terminal and answers the agent; returns true when the user pressed
/// Ctrl+C, which cancels the turn as well.
async fn answer_on_terminal(
    console: Option<&mut Console>,
    ask: PermissionAsk,
) -> Result<bool, agent_client_protocol::Error> {
    let PermissionAsk { request, responder } = ask;
    let choice = match console {
        Some(console) => {
            let title = request
                .tool_call
                .fields
                .title
                .clone()
                .unwrap_or_else(|| "a tool call".to_owned());
            let names: Vec<String> = request.options.iter().map(|o| o.name.clone()).collect();
            console
                .choose(&format!("The agent asks permission for: {title}"), &names)
                .await
        }
        None => Choice::Closed,
    };
    let (outcome, cancel) = match choice {
        Choice::Picked(at) => (
            request
                .options
                .get(at)
                .map(|o| {
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        o.option_id.clone(),
                    ))
                })
                .unwrap_or(RequestPermissionOutcome::Cancelled),
            false,
        ),
        Choice::Refused => (
            choose_option(Allow::Reject, &option_kinds(&request))
                .map(|id| RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)))
                .unwrap_or(RequestPermissionOutcome::Cancelled),
            false,
        ),
        Choice::CancelTurn | Choice::Closed => (RequestPermissionOutcome::Cancelled, true),
    };
    responder.respond(RequestPermissionResponse::new(outcome))?;
    Ok(cancel)
}

/// `session/cancel`: the agent stops the turn and answers the prompt with `cancelled`.
fn cancel_turn(
    cx: &ConnectionTo<Agent>,
    session_id: &SessionId,
    console: Option<&Console>,
) -> Result<(), agent_client_protocol::Error> {
    if let Some(console) = console {
        console.out().note("cancelling the turn…");
    }
    cx.send_notification(CancelNotification::new(session_id.clone()))
}

/// Tells the user on the terminal how a turn ended, when it did not simply end.
fn show_turn_end(out: &ConsoleOut, end: &TurnEnd) {
    match end {
        TurnEnd::Stopped { stop_reason, .. } if stop_reason == "end_turn" => out.end_line(),
        TurnEnd::Stopped { stop_reason, .. } if stop_reason == "cancelled" => {
            out.note("(the turn was cancelled)");
        }
        TurnEnd::Stopped { stop_reason, .. } => {
            out.note(&format!("(the agent stopped the turn: {stop_reason})"));
        }
        TurnEnd::Failed(what) => out.note(&format!("({what})")),
    }
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
