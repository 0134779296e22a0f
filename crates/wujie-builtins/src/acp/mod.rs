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
//! The issue: bound to one (`wujie run KEY -- acp …`), the first prompt of a new session (a
//! loaded one had it with its own first prompt) carries the issue as
//! read-only context before what the user typed: an embedded `resource` (`wujie://issues/<id>`)
//! for an agent whose `initialize` says it takes embedded context, else a text block of its
//! own. The `user_input` reported is what the user typed; an agent's echo of the context is
//! not reported.
//!
//! Resume: `--resume ID` loads the agent's session with `session/load` when `initialize` says
//! the agent offers it (else a clear error). The agent replays the history as updates; they were
//! reported when they happened, so they are counted in turns, not reported again, and the next
//! turn is numbered after them (a discussion's keys are unique per discussion: a turn numbered
//! from 1 again would be dropped as a duplicate). Hermes and opencode answer the load after the
//! replay, as the protocol says; Gemini CLI 0.61 answers first and streams the history after
//! (and in two of three tries did not find a session it had just run: "No previous sessions
//! found for this project"), so the replay ends once updates have been quiet for a moment.
//!
//! What the tested agents send (against the mock model server, tests/builtin_acp_agents.rs):
//!
//! | agent | tool input | tool output | user input | usage |
//! |---|---|---|---|---|
//! | Gemini CLI 0.61 (`gemini --acp`) | none (title only) | none | not echoed | `_meta.quota.token_count`, with the model |
//! | Grok Build (`grok agent stdio`) | `rawInput` | text | echoed | `_meta.usage`, with the model; asks permission for shell commands |
//! | Hermes 0.19 (`hermes acp`) | none (title only) | text | not echoed | the draft `usage` field, no model (the session's `models` name it) |
//! | opencode 1.18 (`opencode acp`) | `rawInput` | text | not echoed | the draft `usage` field, last model request only, no model; each request's usage, with its model, is read from opencode's own record ([`opencode_record`]) |

pub mod console;
pub mod mapper;
pub mod opencode_record;

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, EmbeddedResource, EmbeddedResourceResource,
    InitializeRequest, LoadSessionRequest, NewSessionRequest, NewSessionResponse,
    PermissionOptionKind, PromptRequest, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome, SessionId,
    TextContent, TextResourceContents,
};
use agent_client_protocol::{Agent, Client, Lines, Responder, UntypedMessage, V1};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use wujie_protocol::event::{Event, Usage};

use self::console::{Choice, Console, ConsoleOut, TurnInput, user_at_terminal};
use self::mapper::{AcpMapper, TurnEnd, session_model};
use self::opencode_record::OpencodeRecord;

/// What usage counts when opencode's record of each request cannot be read.
const ANSWER_USAGE_ONLY: &str =
    "Each turn's usage counts only what opencode's answer says: its last model request.";

/// How the adapter was asked to run.
#[derive(Debug, Clone, PartialEq)]
pub struct AcpArgs {
    /// `-p TEXT`: one turn with this prompt; `None`: a conversation on the terminal.
    pub prompt: Option<String>,
    pub allow: Allow,
    /// `--resume ID`: load this session of the agent's (`session/load`) instead of a new one.
    pub resume: Option<String>,
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

const USAGE: &str = "usage: acp [-p TEXT] [--allow once|always|reject] [--resume SESSION_ID] -- AGENT_COMMAND [ARGS…], e.g. acp -p \"fix the tests\" -- gemini --acp";

/// Why the acp adapter could not run.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("{0}; {USAGE}")]
    Usage(String),
    #[error("could not start the agent {program:?} named after `--`")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("the agent {program:?} failed: {what}")]
    Protocol { program: String, what: String },
    #[error(
        "the agent {agent:?} cannot resume a session: it does not offer session/load; start it without --resume"
    )]
    CannotResume { agent: String },
}

impl AcpArgs {
    pub fn parse(args: &[String]) -> Result<AcpArgs, AcpError> {
        let usage = |what: String| Err(AcpError::Usage(what));
        let mut prompt = None;
        let mut allow = Allow::Ask;
        let mut resume = None;
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
                "--resume" => match rest.next() {
                    Some(id) if !id.trim().is_empty() && !id.starts_with('-') => {
                        resume = Some(id.clone());
                    }
                    _ => return usage("--resume needs the agent's session id".to_owned()),
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
            resume,
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
            wujie_process::stderr_line!("wujie adapter acp: error: {e}");
            return 2;
        }
    };
    let terminal = user_at_terminal();
    if args.prompt.is_none() && !terminal {
        let e = AcpError::Usage(
            "no prompt: pass -p TEXT, or start it on a terminal to converse with the agent"
                .to_owned(),
        );
        wujie_process::stderr_line!("wujie adapter acp: error: {e}");
        return 2;
    }
    match run(args, terminal).await {
        Ok(code) => code,
        Err(e) => {
            wujie_process::stderr_line!(
                "wujie adapter acp: error: {}",
                wujie_protocol::error_text::with_causes(&e)
            );
            match e {
                AcpError::Usage(_) => 2,
                AcpError::Spawn { .. } => 127,
                AcpError::Protocol { .. } | AcpError::CannotResume { .. } => 1,
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
    let failed = |what: String| AcpError::Protocol {
        program: program.clone(),
        what,
    };
    let cwd = std::env::current_dir()
        .map_err(|e| failed(format!("the current directory is unreadable: {e}")))?;
    // Fetched before the agent starts: a run bound to an issue gives it to the agent with the
    // first prompt.
    let issue = IssueContext::fetch().await;
    let (command, record) = opencode_record::plan(&args.command);
    let record = record.unwrap_or_else(|why| {
        wujie_process::stderr_line!(
            "wujie adapter acp: opencode's record of each model request cannot be read: {why}. {ANSWER_USAGE_ONLY}"
        );
        None
    });
    let (mut child, stdin, stdout) = spawn_agent(&command)?;
    let console = match terminal {
        true => Some(Console::open().map_err(|e| {
            failed(format!(
                "the terminal could not be set up for the conversation: {e}"
            ))
        })?),
        false => None,
    };
    let state = Shared::default();
    let out: Option<ConsoleOut> = console.as_ref().map(Console::out);
    let (asks_tx, asks) = mpsc::unbounded_channel::<PermissionAsk>();
    let policy = PermissionPolicy {
        allow: args.allow,
        ask_user: args.allow == Allow::Ask && console.is_some(),
        asks: asks_tx,
    };
    let conversation = Conversation {
        state: state.clone(),
        console,
        asks,
        issue,
        embedded_context: false,
        record,
        record_unread: false,
    };
    let result = Client
        .v1()
        .on_receive_notification(
            {
                let state = state.clone();
                async move |message: UntypedMessage, _cx| {
                    state.on_notification(&message, out.as_ref());
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                policy.answer(request, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            transport(stdin, stdout),
            async move |cx: ConnectionTo<Agent>| {
                conversation.run(cx, cwd, args.resume, args.prompt).await
            },
        )
        .await;

    let outcome = match result {
        Ok(Ended::Turns { all_ok: true }) => Ok(0),
        Ok(Ended::Turns { all_ok: false }) => Ok(1),
        Ok(Ended::CannotResume { agent }) => Err(AcpError::CannotResume { agent }),
        Err(e) => {
            // The connection broke (the agent exited, or spoke something that is not
            // JSON-RPC): a turn still open ends as an error on the issue.
            let what = format!("{e}");
            state.break_off_open_turn(&what);
            Err(failed(what))
        }
    };
    stop_agent(&mut child).await;
    outcome
}

/// Starts the agent with its stdin and stdout as pipes (its stderr is the user's).
fn spawn_agent(
    command: &[String],
) -> Result<
    (
        tokio::process::Child,
        tokio::process::ChildStdin,
        tokio::process::ChildStdout,
    ),
    AcpError,
> {
    let program = &command[0];
    let mut child = tokio::process::Command::new(program)
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| AcpError::Spawn {
            program: program.clone(),
            source,
        })?;
    match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => Ok((child, stdin, stdout)),
        _ => Err(AcpError::Protocol {
            program: program.clone(),
            what: "its stdin or stdout could not be opened as a pipe".to_owned(),
        }),
    }
}

/// JSON-RPC over the agent's stdin and stdout, one message per line.
fn transport(
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
) -> Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures::Stream<Item = std::io::Result<String>> + Send + 'static,
> {
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
    Lines::new(outgoing, incoming)
}

/// What the connection's handlers and the conversation share: the session's mapper (once a
/// session is open; updates before that are skipped) and whether a turn is running.
#[derive(Clone, Default)]
struct Shared {
    mapper: Arc<Mutex<Option<AcpMapper>>>,
    turn_open: Arc<Mutex<bool>>,
    /// When the last `session/update` came.
    last_update: Arc<Mutex<Option<tokio::time::Instant>>>,
}

/// A replay is over once the updates have been quiet this long after the agent answered
/// `session/load`: the protocol has the agent answer after the whole history, but Gemini CLI
/// 0.61 answers first and streams the history after.
const REPLAY_QUIET: std::time::Duration = std::time::Duration::from_millis(300);
/// However long an agent goes on sending updates after the load, the conversation starts then.
const REPLAY_LONGEST: std::time::Duration = std::time::Duration::from_secs(5);

impl Shared {
    fn with_mapper<T>(&self, f: impl FnOnce(&mut AcpMapper) -> T) -> Option<T> {
        let mut guard = self.mapper.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_mut().map(f)
    }

    fn set_mapper(&self, mapper: AcpMapper) {
        *self.mapper.lock().unwrap_or_else(|p| p.into_inner()) = Some(mapper);
    }

    fn set_turn_open(&self, open: bool) -> bool {
        std::mem::replace(
            &mut *self.turn_open.lock().unwrap_or_else(|p| p.into_inner()),
            open,
        )
    }

    /// A `session/update` becomes events (and, on a terminal, what the user sees).
    fn on_notification(&self, message: &UntypedMessage, out: Option<&ConsoleOut>) {
        if message.method != "session/update" {
            return;
        }
        *self.last_update.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(tokio::time::Instant::now());
        if let Some((events, replaying)) =
            self.with_mapper(|m| (m.update(&message.params), m.is_replaying()))
        {
            emit(events);
            if let Some(out) = out.filter(|_| !replaying) {
                out.show_update(&message.params);
            }
        }
    }

    /// Waits until no update came for [`REPLAY_QUIET`] (counted from now at the earliest),
    /// at most [`REPLAY_LONGEST`].
    async fn updates_quiet(&self) {
        let from = tokio::time::Instant::now();
        let give_up = from + REPLAY_LONGEST;
        loop {
            let last = *self.last_update.lock().unwrap_or_else(|p| p.into_inner());
            let quiet_at = (last.unwrap_or(from).max(from) + REPLAY_QUIET).min(give_up);
            if tokio::time::Instant::now() >= quiet_at {
                return;
            }
            tokio::time::sleep_until(quiet_at).await;
        }
    }

    /// The connection broke while a turn ran: the turn ends as an error.
    fn break_off_open_turn(&self, what: &str) {
        if self.set_turn_open(false)
            && let Some(events) = self.with_mapper(|m| {
                m.end_turn(&TurnEnd::Failed(format!("the turn broke off: {what}")), &[])
            })
        {
            emit(events);
        }
    }
}

/// How `session/request_permission` is answered.
struct PermissionPolicy {
    allow: Allow,
    /// No `--allow` and a terminal: the conversation asks the user.
    ask_user: bool,
    asks: mpsc::UnboundedSender<PermissionAsk>,
}

impl PermissionPolicy {
    fn answer(
        &self,
        request: RequestPermissionRequest,
        responder: Responder<RequestPermissionResponse, V1>,
    ) -> Result<(), agent_client_protocol::Error> {
        if self.ask_user {
            // Answered by the conversation loop, which owns the terminal; the connection goes
            // on meanwhile.
            let ask = PermissionAsk { request, responder };
            return match self.asks.send(ask) {
                Ok(()) => Ok(()),
                Err(mpsc::error::SendError(ask)) => ask.responder.respond(
                    RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled),
                ),
            };
        }
        if self.allow == Allow::Ask {
            let title = request.tool_call.fields.title.clone().unwrap_or_default();
            wujie_process::stderr_line!(
                "wujie adapter acp: the agent asks permission for {title:?}; rejected, as there is no terminal to ask on (pass --allow once or --allow always to allow)"
            );
        }
        let outcome = match choose_option(self.allow, &option_kinds(&request)) {
            Some(id) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)),
            None => RequestPermissionOutcome::Cancelled,
        };
        responder.respond(RequestPermissionResponse::new(outcome))
    }
}

/// How the conversation ended, when the connection did not break.
enum Ended {
    Turns {
        all_ok: bool,
    },
    /// `--resume` for an agent that does not offer `session/load`.
    CannotResume {
        agent: String,
    },
}

/// The session's prompts and turns: the one prompt of `-p`, or the user's on the terminal.
struct Conversation {
    state: Shared,
    console: Option<Console>,
    asks: mpsc::UnboundedReceiver<PermissionAsk>,
    /// The issue the run is bound to, until it went with the first prompt.
    issue: Option<IssueContext>,
    /// The agent takes embedded resources in a prompt (`promptCapabilities.embeddedContext`).
    embedded_context: bool,
    /// opencode's record of each model request, for `opencode acp` ([`opencode_record`]).
    record: Option<OpencodeRecord>,
    /// Reading that record failed once, and the user was told.
    record_unread: bool,
}

/// The issue a run is bound to, as read-only context for the agent (the same text the
/// built-in terminal providers give theirs, `tui::context_text`).
struct IssueContext {
    uri: String,
    text: String,
}

impl IssueContext {
    /// The run's issue; `None` for a discussion, or when it cannot be fetched (said on stderr).
    async fn fetch() -> Option<IssueContext> {
        let text = crate::tui::issue_context("acp").await?;
        let id = std::env::var("WUJIE_ISSUE_ID").unwrap_or_default();
        Some(IssueContext {
            uri: format!("wujie://issues/{id}"),
            text,
        })
    }
}

/// A prompt's blocks: the issue's context first when it goes with this prompt — an embedded
/// resource for an agent that takes them, the ACP way to give context that is not the user's
/// message; else a text block of its own (the text says it is read-only context) — then what
/// the user typed.
fn prompt_blocks(
    prompt: &str,
    issue: Option<&IssueContext>,
    embedded_context: bool,
) -> Vec<ContentBlock> {
    let context = issue.map(|issue| match embedded_context {
        true => ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(
                TextResourceContents::new(issue.text.clone(), issue.uri.clone())
                    .mime_type("text/markdown".to_owned()),
            ),
        )),
        false => ContentBlock::Text(TextContent::new(issue.text.clone())),
    });
    context
        .into_iter()
        .chain([ContentBlock::Text(TextContent::new(prompt.to_owned()))])
        .collect()
}

impl Conversation {
    async fn run(
        mut self,
        cx: ConnectionTo<Agent>,
        cwd: std::path::PathBuf,
        resume: Option<String>,
        prompt: Option<String>,
    ) -> Result<Ended, agent_client_protocol::Error> {
        let init = cx
            .send_request(InitializeRequest::new(ProtocolVersion::V1))
            .block_task()
            .await?;
        self.embedded_context = init.agent_capabilities.prompt_capabilities.embedded_context;
        let agent = init
            .agent_info
            .as_ref()
            .map(|i| i.name.clone())
            .unwrap_or_else(|| "acp".to_owned());
        let session_id = match resume {
            Some(_) if !init.agent_capabilities.load_session => {
                return Ok(Ended::CannotResume { agent });
            }
            Some(id) => {
                // The session got the issue with its own first prompt; the agent replays it.
                self.issue = None;
                self.load_session(&cx, id, cwd, &agent).await?
            }
            None => {
                let response =
                    request_json(&cx, "session/new", NewSessionRequest::new(cwd)).await?;
                let session: NewSessionResponse = serde_json::from_value(response.clone())
                    .map_err(|e| agent_client_protocol::Error::parse_error().data(e.to_string()))?;
                let mut mapper = AcpMapper::new(&session.session_id.0, &agent);
                mapper.set_session_model(session_model(&response));
                emit(vec![mapper.session_event()]);
                self.state.set_mapper(mapper);
                session.session_id
            }
        };
        if let Some(console) = &self.console {
            console.out().note(&format!(
                "{agent}, session {}: Enter sends, Ctrl+C cancels a turn, Ctrl+D ends",
                session_id.0
            ));
        }
        let one_prompt = prompt.is_some();
        let mut next_prompt = prompt;
        let mut input_open = true;
        let mut all_ok = true;
        loop {
            let prompt = match (next_prompt.take(), self.console.as_mut()) {
                (Some(prompt), _) => prompt,
                (None, Some(console)) if !one_prompt && input_open => {
                    match console.read_prompt().await {
                        Some(prompt) => prompt,
                        None => break,
                    }
                }
                _ => break,
            };
            let turn = self.turn(&cx, &session_id, prompt, &mut input_open).await?;
            all_ok &= turn.ok;
            if turn.connection_closed {
                // A connection that broke does not come back.
                break;
            }
        }
        Ok(Ended::Turns { all_ok })
    }

    /// `session/load`: the agent replays the session's history as updates before it answers;
    /// what was already reported is not reported again, and the turns go on from there.
    async fn load_session(
        &mut self,
        cx: &ConnectionTo<Agent>,
        id: String,
        cwd: std::path::PathBuf,
        agent: &str,
    ) -> Result<SessionId, agent_client_protocol::Error> {
        let session_id = SessionId::new(id);
        let mapper = AcpMapper::resuming(&session_id.0, agent);
        emit(vec![mapper.session_event()]);
        self.state.set_mapper(mapper);
        let response = request_json(
            cx,
            "session/load",
            LoadSessionRequest::new(session_id.clone(), cwd),
        )
        .await?;
        self.state
            .with_mapper(|m| m.set_session_model(session_model(&response)));
        self.state.updates_quiet().await;
        let earlier = self.state.with_mapper(AcpMapper::end_replay).unwrap_or(0);
        if let Some(console) = &self.console {
            console.out().note(&format!(
                "resumed session {}: {earlier} earlier turn(s)",
                session_id.0
            ));
        }
        Ok(session_id)
    }

    /// One prompt turn, until the agent answers the prompt.
    async fn turn(
        &mut self,
        cx: &ConnectionTo<Agent>,
        session_id: &SessionId,
        prompt: String,
        input_open: &mut bool,
    ) -> Result<TurnOutcome, agent_client_protocol::Error> {
        let issue = self.issue.take();
        let events = self.state.with_mapper(|m| {
            let events = m.start_turn(&prompt);
            if let Some(issue) = &issue {
                m.sent_context(&issue.text);
            }
            events
        });
        emit(events.unwrap_or_default());
        self.state.set_turn_open(true);
        let blocks = prompt_blocks(&prompt, issue.as_ref(), self.embedded_context);
        let request = cx
            .send_request(PromptRequest::new(session_id.clone(), blocks))
            .block_task();
        tokio::pin!(request);
        let response = loop {
            let during = tokio::select! {
                response = &mut request => DuringTurn::Done(response),
                Some(ask) = self.asks.recv() => DuringTurn::Ask(ask),
                input = turn_input(self.console.as_mut(), *input_open) => DuringTurn::Input(input),
            };
            let cancel = match during {
                DuringTurn::Done(response) => break response,
                DuringTurn::Ask(ask) => answer_on_terminal(self.console.as_mut(), ask).await?,
                DuringTurn::Input(TurnInput::Cancel) => true,
                DuringTurn::Input(TurnInput::Closed) => {
                    *input_open = false;
                    true
                }
            };
            if cancel {
                cancel_turn(cx, session_id, self.console.as_ref())?;
            }
        };
        self.state.set_turn_open(false);
        let end = turn_end(&response);
        let recorded = self.recorded_usage(&end, session_id).await;
        if let Some(events) = self.state.with_mapper(|m| m.end_turn(&end, &recorded)) {
            emit(events);
        }
        if let Some(console) = &self.console {
            show_turn_end(&console.out(), &end);
        }
        Ok(TurnOutcome {
            ok: matches!(end, TurnEnd::Stopped { .. }),
            connection_closed: response
                .as_ref()
                .is_err_and(agent_client_protocol::is_incoming_transport_closed),
        })
    }

    /// The usage of each model request of the turn that just ended, from the agent's own
    /// record where the provider reads one; empty otherwise, and when it cannot be read (said
    /// once on stderr).
    async fn recorded_usage(&mut self, end: &TurnEnd, session_id: &SessionId) -> Vec<Usage> {
        let (Some(record), TurnEnd::Stopped { .. }) = (&self.record, end) else {
            return Vec::new();
        };
        match record.turn_usage(&session_id.0).await {
            Ok(usage) => usage,
            Err(why) => {
                if !std::mem::replace(&mut self.record_unread, true) {
                    wujie_process::stderr_line!("wujie adapter acp: {why}. {ANSWER_USAGE_ONLY}");
                }
                Vec::new()
            }
        }
    }
}

struct TurnOutcome {
    ok: bool,
    connection_closed: bool,
}

/// Sends a request and returns its response as the agent sent it: the typed responses drop
/// what the schema no longer has, such as the `models` Hermes names its model in.
async fn request_json(
    cx: &ConnectionTo<Agent>,
    method: &str,
    params: impl serde::Serialize,
) -> Result<serde_json::Value, agent_client_protocol::Error> {
    cx.send_request(UntypedMessage::new(method, params)?)
        .block_task()
        .await
}

/// How a turn ended, from the prompt's response.
fn turn_end(response: &Result<PromptResponse, agent_client_protocol::Error>) -> TurnEnd {
    match response {
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
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_goes_first_as_a_resource_or_else_as_text_of_its_own() {
        let issue = IssueContext {
            uri: "wujie://issues/i1".to_owned(),
            text: "You are working on issue WUJ-1".to_owned(),
        };
        let json = |blocks: Vec<ContentBlock>| serde_json::to_value(blocks).unwrap();
        assert_eq!(
            json(prompt_blocks("go", Some(&issue), true)),
            serde_json::json!([
                {"type": "resource", "resource": {"uri": "wujie://issues/i1",
                 "mimeType": "text/markdown", "text": "You are working on issue WUJ-1"}},
                {"type": "text", "text": "go"}
            ])
        );
        assert_eq!(
            json(prompt_blocks("go", Some(&issue), false)),
            serde_json::json!([
                {"type": "text", "text": "You are working on issue WUJ-1"},
                {"type": "text", "text": "go"}
            ])
        );
        assert_eq!(
            json(prompt_blocks("go", None, true)),
            serde_json::json!([{"type": "text", "text": "go"}])
        );
    }
}
