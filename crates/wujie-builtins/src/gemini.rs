//! The built-in `gemini` provider: Gemini CLI in its own terminal UI (inline: it keeps the
//! conversation in the terminal's scrollback), observed through the chat log it writes itself,
//! `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-<time>-<first 8 of the id>.jsonl`
//! (`GEMINI_CLI_HOME` defaults to the home directory).
//!
//! The session is always one whose id the provider knows before Gemini CLI starts, so it never
//! reads another terminal's log: a new session gets `--session-id <new uuid>`, a resume
//! (`--resume <id>`) or a given `--session-id` is that id, and `--resume latest` is the newest
//! log of this directory's project when the provider starts. A resume by index (`--resume 3`)
//! is refused: which session that is, only Gemini CLI's own list says. Bound to an issue, the
//! issue goes in as read-only context the way Gemini CLI takes context: a context file
//! (`GEMINI.md`, or the name the `context.fileName` setting gives) in a directory of its own,
//! added with `--include-directories`, which Gemini CLI loads into its `<loaded_context>`;
//! never as a user message. With folder trust on, Gemini CLI first asks whether to trust that
//! directory; the context reaches the model once the user says yes. The directory is the
//! issue's own under the provider's state, the same on every run of the issue, so trust that
//! the user asked Gemini CLI to remember holds for the next run too. Once trusted, Gemini CLI
//! lists the workspace's directories to the model in a `user` record of its own (`- **Workspace
//! Directories:**` …): that is not the user speaking.
//!
//! Gemini CLI appends a message again each time it changes (its tool calls and their results
//! are added to the model message once they completed), so records are read by message id,
//! and each part is reported once:
//!
//! | record | events |
//! |---|---|
//! | the first line `{sessionId, projectHash}` | `session` |
//! | `user` message with text (not Gemini CLI's own `<session_context>`, not a tool response) | `user_input` |
//! | `gemini` message `thoughts[]` (the pieces of its thinking) | `thinking`, one per message |
//! | `gemini` message `content` | `text` when tool calls follow it, `final` when a user prompt, the user back at the input or the end of the session does |
//! | `gemini` message `toolCalls[]` | `tool_use`, and `tool_result` once it has a result |
//! | `gemini` message `tokens`, once per message | `usage` |
//! | `error` message | `error` |
//!
//! Gemini CLI does not record where a turn ends: a reply is known to be the last of its turn
//! only when the next prompt or the end of the session follows it (a reply that asked for
//! tools gets them added later, after they ran), or when `wujie` says the user is back at
//! Gemini CLI's input (`/wujie` typed there: the turn on screen has ended). So the final reply
//! of a turn is reported then.
//! Usage: Gemini counts cached input inside `input` (`promptTokenCount`); the usage reported
//! splits it out (input is the uncached part plus the tool-use prompt, cache read the cached
//! part), and counts thinking tokens as output, as they are billed. Gemini CLI records no cache
//! writes. Keys come from Gemini CLI's ids: `session:<sid>:message:<id>` (`…:final`,
//! `…:thinking`), `session:<sid>:call:<call id>:use` and `…:result`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use wujie_protocol::event::{Event, MessageKind, Usage};

use crate::tui::{
    Every, FindLog, LogMapper, LogReader, PROVIDER_STATE_DIR_VAR, SWITCH_CHECK, is_agent_markup,
    issue_context, run_with_log,
};
use crate::{AgentProgram, BuiltinError, bare_message, content_message, count_field, str_field};

/// The `source` of every message the gemini provider reports.
pub const SOURCE: &str = "gemini";

/// Where the Gemini CLI executable comes from.
pub const GEMINI: AgentProgram = AgentProgram {
    name: "gemini",
    env_var: "WUJIE_GEMINI_BIN",
    install: "npm install -g @google/gemini-cli",
};

/// Which chat log is this run's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chat {
    /// The session with this id (new or resumed).
    Session(String),
    /// `--resume latest`: the newest log of the working directory's project.
    Newest,
}

/// Gemini CLI's arguments as the provider runs them, and the chat log to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub args: Vec<String>,
    pub chat: Chat,
}

/// The value of `--flag VALUE` / `--flag=VALUE` (any of `names`) in `args`: `Some(None)` when
/// the flag is there without a value.
fn flag_value<'a>(args: &'a [String], names: &[&str]) -> Option<Option<&'a str>> {
    args.iter().enumerate().find_map(|(i, arg)| {
        names.iter().find_map(|name| {
            if arg == name {
                let value = args.get(i + 1).map(String::as_str);
                Some(value.filter(|v| !v.starts_with('-')))
            } else {
                arg.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('='))
                    .map(Some)
            }
        })
    })
}

/// Plans the launch of `gemini ARGS…`: which session it is and what the provider adds.
/// `new_id` is the id a new session gets; `context_dir` the directory holding the issue's
/// context file.
pub fn plan_launch(
    args: &[String],
    new_id: &str,
    context_dir: Option<&Path>,
) -> Result<Launch, BuiltinError> {
    let refuse = |arg: &str, why: &'static str| BuiltinError::Unsupported {
        program: GEMINI.name,
        arg: arg.to_owned(),
        why,
    };
    if let Some(arg) = args
        .iter()
        .find(|a| *a == "--acp" || *a == "--experimental-acp")
    {
        return Err(refuse(
            arg,
            "the provider runs Gemini CLI in its terminal UI; for Gemini CLI over ACP use the acp provider: `wujie run KEY -- acp -p TEXT -- gemini --acp`",
        ));
    }
    if let Some(arg) = args.iter().find(|a| a.starts_with("--session-file")) {
        return Err(refuse(
            arg,
            "Gemini CLI would choose the session's log itself and the provider could not tell which log is this run's; resume by id instead: --resume <session id>",
        ));
    }
    let given = flag_value(args, &["--session-id"]);
    let resume = flag_value(args, &["--resume", "-r"]);
    if given == Some(None) {
        return Err(refuse(
            "--session-id",
            "it needs a session id (a UUID) after it",
        ));
    }
    let chat = match (given, resume) {
        (Some(_), Some(_)) => {
            return Err(refuse(
                "--session-id",
                "it starts a new session and --resume continues an old one; give one of them",
            ));
        }
        (Some(Some(id)), None) => Chat::Session(id.to_owned()),
        (None, Some(Some("latest"))) => Chat::Newest,
        (None, Some(Some(id))) if !id.chars().all(|c| c.is_ascii_digit()) => {
            Chat::Session(id.to_owned())
        }
        (None, Some(_)) => {
            return Err(refuse(
                "--resume",
                "without a session id the provider could not tell which log is this run's; give the id (`gemini --list-sessions` shows them) or `latest`: --resume <session id>",
            ));
        }
        (_, None) => Chat::Session(new_id.to_owned()),
    };
    let mut launch = Launch {
        args: args.to_vec(),
        chat,
    };
    if given.is_none() && resume.is_none() {
        launch
            .args
            .extend(["--session-id".to_owned(), new_id.to_owned()]);
    }
    if let Some(dir) = context_dir {
        launch.args.extend([
            "--include-directories".to_owned(),
            dir.to_string_lossy().into_owned(),
        ]);
    }
    Ok(launch)
}

/// Gemini CLI's own directory: `$GEMINI_CLI_HOME/.gemini`, else `$HOME/.gemini`.
pub fn gemini_dir(cli_home: Option<&str>, home: Option<&str>) -> PathBuf {
    let home = cli_home.filter(|v| !v.is_empty()).or(home).unwrap_or("/");
    Path::new(home).join(".gemini")
}

/// The chat log of session `id` in any project (the file name carries the id's first 8
/// characters; its first line, the whole id).
pub fn find_session_log(gemini: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("-{}.jsonl", id.get(..8).unwrap_or(id));
    let mut logs: Vec<PathBuf> = chat_logs(gemini)
        .filter(|path| path.to_string_lossy().ends_with(&suffix))
        .filter(|path| session_of(path).as_deref() == Some(id))
        .collect();
    // A resume appends to the session's first log, though Gemini CLI also starts a new,
    // empty one with the same id: the oldest (its name begins with its start time) is it.
    logs.sort_by_key(|path| path.file_name().map(|n| n.to_owned()));
    logs.into_iter().next()
}

/// The newest chat log of the project Gemini CLI keeps for `cwd` (its `projects.json`
/// names the project's directory under `tmp/`).
pub fn newest_log(gemini: &Path, cwd: &Path) -> Option<PathBuf> {
    let projects: Value =
        serde_json::from_str(&std::fs::read_to_string(gemini.join("projects.json")).ok()?).ok()?;
    let slug = projects["projects"][cwd.to_string_lossy().as_ref()].as_str()?;
    let chats = gemini.join("tmp").join(slug).join("chats");
    std::fs::read_dir(chats)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| is_session_log(path))
        .filter_map(|path| Some((path.metadata().ok()?.modified().ok()?, path)))
        .max()
        .map(|(_, path)| path)
}

fn is_session_log(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("session-") && n.ends_with(".jsonl"))
}

/// Every `tmp/<project>/chats/session-*.jsonl` under Gemini CLI's directory.
fn chat_logs(gemini: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(gemini.join("tmp"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .flat_map(|project| {
            std::fs::read_dir(project.path().join("chats"))
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
        })
        .map(|entry| entry.path())
        .filter(|path| is_session_log(path))
}

/// This run's chat log: the one [`plan_launch`] chose, then the one Gemini CLI starts when the
/// user clears the chat (`/clear` begins a new session, in a new log of the same project).
/// Gemini CLI records no link between a process and its session, so a new log is taken for
/// this run's only when it is the one log of another session begun in the project since the
/// agent started that was not read yet: with two Gemini CLIs at work in one directory, neither
/// is followed.
struct ChatFinder {
    gemini: PathBuf,
    cwd: PathBuf,
    chat: Chat,
    /// `--resume latest` opens the newest log as it is now; fixed at the first look.
    newest: Option<PathBuf>,
    started: std::time::SystemTime,
    followed: HashSet<PathBuf>,
    switch_check: Every,
}

impl FindLog for ChatFinder {
    fn find(&mut self, _agent_pid: Option<u32>) -> Option<PathBuf> {
        match &self.chat {
            Chat::Newest => {
                if self.newest.is_none() {
                    self.newest = newest_log(&self.gemini, &self.cwd);
                }
                self.newest.clone()
            }
            Chat::Session(id) => find_session_log(&self.gemini, id),
        }
    }

    fn switched(&mut self, _agent_pid: Option<u32>, current: &Path) -> Option<PathBuf> {
        if !self.switch_check.due() {
            return None;
        }
        self.followed.insert(current.to_path_buf());
        let begun_since = |path: &PathBuf| {
            path.metadata()
                .and_then(|meta| meta.created().or_else(|_| meta.modified()))
                .is_ok_and(|at| at >= self.started)
        };
        // A resume begins a new, empty log with the session's own id too (and goes on in the
        // first one): only a log of another session is a switch.
        let session = session_of(current);
        let mut new: Vec<PathBuf> = std::fs::read_dir(current.parent()?)
            .ok()?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| is_session_log(path) && !self.followed.contains(path))
            .filter(begun_since)
            .filter(|path| session_of(path).is_some_and(|id| Some(id) != session))
            .collect();
        match (new.pop(), new.is_empty()) {
            (Some(only), true) => Some(only),
            _ => None,
        }
    }
}

/// The `sessionId` of a log's first line.
fn session_of(path: &Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let mut first = String::new();
    std::io::BufReader::new(std::fs::File::open(path).ok()?)
        .take(64 * 1024)
        .read_line(&mut first)
        .ok()?;
    let record: Value = serde_json::from_str(&first).ok()?;
    record["sessionId"].as_str().map(str::to_owned)
}

/// The context file name Gemini CLI loads: the first of the `context.fileName` setting (the
/// workspace's settings over the user's), else `GEMINI.md`.
pub fn context_file_name(settings: &[Option<String>]) -> String {
    settings
        .iter()
        .flatten()
        .filter_map(|text| serde_json::from_str::<Value>(text).ok())
        .find_map(|settings| match &settings["context"]["fileName"] {
            Value::String(name) => Some(name.clone()),
            Value::Array(names) => names.iter().find_map(Value::as_str).map(str::to_owned),
            _ => None,
        })
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .unwrap_or_else(|| "GEMINI.md".to_owned())
}

/// Writes the issue's context file as `file_name` into the issue's own directory under
/// `state` (see the module comment) and returns that directory. What an earlier run wrote
/// there goes first: the file is read-only, and its name may have changed since.
pub fn write_context_dir(
    state: &Path,
    issue_id: &str,
    file_name: &str,
    text: &str,
) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let name: String = issue_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = state.join("issue-context").join(name);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    for entry in std::fs::read_dir(&dir)? {
        std::fs::remove_file(entry?.path())?;
    }
    let file = dir.join(file_name);
    std::fs::write(&file, text)?;
    // Read-only: the issue is context, not a file for the agent to edit.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444))?;
    Ok(dir)
}

/// Whether a `user` record's text is Gemini CLI's own listing of the workspace's directories,
/// which it adds once directories were added to the workspace.
fn is_workspace_listing(text: &str) -> bool {
    text.starts_with("- **Workspace Directories:**\n")
}

/// Maps Gemini CLI chat-log records to events (see the module comment).
#[derive(Debug, Default)]
pub struct GeminiMapper {
    session_id: Option<String>,
    /// Keys of everything reported (a message appended again reports only what is new).
    reported: HashSet<String>,
    /// The latest model reply (key, text), held until it is known whether it ends the turn.
    answer: Option<(String, String)>,
}

impl LogMapper for GeminiMapper {
    fn record(&mut self, _line_no: u64, record: &Map<String, Value>, out: &mut Vec<Event>) {
        if self.session_id.is_none()
            && record.contains_key("projectHash")
            && let Some(id) = str_field(record, "sessionId").filter(|id| !id.trim().is_empty())
        {
            self.session_id = Some(id.to_owned());
            out.push(Event::Session {
                session_id: id.to_owned(),
            });
            return;
        }
        let Some(id) = str_field(record, "id") else {
            return;
        };
        let key = format!("{}:message:{id}", self.session_key());
        match str_field(record, "type") {
            Some("user") => self.user(record, key, out),
            Some("gemini") => self.gemini(record, key, out),
            Some("error") => {
                let text = parts_text(record.get("content"));
                if !text.trim().is_empty() && self.reported.insert(key.clone()) {
                    self.release_answer(MessageKind::Text, out);
                    out.push(content_message(SOURCE, MessageKind::Error, text, key));
                }
            }
            _ => {}
        }
    }

    fn end_baseline(&mut self) {
        // What the log held before Gemini CLI started was reported by its own run.
        self.answer = None;
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.release_answer(MessageKind::Final, out);
    }

    fn turn_ended(&mut self, out: &mut Vec<Event>) {
        self.release_answer(MessageKind::Final, out);
    }

    fn next_log(&mut self, out: &mut Vec<Event>) {
        // The chat was cleared: the reply held was the last of its turn.
        self.release_answer(MessageKind::Final, out);
        self.session_id = None;
    }
}

impl GeminiMapper {
    fn session_key(&self) -> String {
        crate::session_key(self.session_id.as_deref())
    }

    fn release_answer(&mut self, kind: MessageKind, out: &mut Vec<Event>) {
        crate::release_answer(SOURCE, &mut self.answer, kind, out);
    }

    fn user(&mut self, record: &Map<String, Value>, key: String, out: &mut Vec<Event>) {
        // What the user typed (`@file` references expanded in `content`), when it differs.
        let text = match record.get("displayContent") {
            Some(shown) if !parts_text(Some(shown)).trim().is_empty() => parts_text(Some(shown)),
            _ => parts_text(record.get("content")),
        };
        if text.trim().is_empty()
            || is_agent_markup(&text)
            || is_workspace_listing(&text)
            || !self.reported.insert(key.clone())
        {
            return;
        }
        self.release_answer(MessageKind::Final, out);
        out.push(content_message(SOURCE, MessageKind::UserInput, text, key));
    }

    fn gemini(&mut self, record: &Map<String, Value>, key: String, out: &mut Vec<Event>) {
        // Gemini CLI records a response's thinking as the pieces it streamed; one event.
        let thinking = match record.get("thoughts") {
            Some(Value::Array(thoughts)) => thoughts
                .iter()
                .filter_map(Value::as_object)
                .flat_map(|t| [str_field(t, "subject"), str_field(t, "description")])
                .flatten()
                .filter(|t| !t.trim().is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        let thinking_key = format!("{key}:thinking");
        if !thinking.is_empty() && self.reported.insert(thinking_key.clone()) {
            self.release_answer(MessageKind::Text, out);
            out.push(content_message(
                SOURCE,
                MessageKind::Thinking,
                thinking,
                thinking_key,
            ));
        }
        let text = parts_text(record.get("content"));
        if !text.trim().is_empty() && self.reported.insert(key.clone()) {
            self.release_answer(MessageKind::Text, out);
            self.answer = Some((key.clone(), text));
        }
        if let Some(Value::Array(calls)) = record.get("toolCalls") {
            for call in calls.iter().filter_map(Value::as_object) {
                self.tool_call(call, out);
            }
        }
        if let Some(usage) = record.get("tokens").and_then(Value::as_object)
            && self.reported.insert(format!("{key}:usage"))
        {
            out.push(Event::Usage(usage_of(
                usage,
                str_field(record, "model").unwrap_or("unknown"),
            )));
        }
    }

    fn tool_call(&mut self, call: &Map<String, Value>, out: &mut Vec<Event>) {
        let Some(id) = str_field(call, "id") else {
            return;
        };
        // The reply that asked for the tool did not end the turn.
        self.release_answer(MessageKind::Text, out);
        let name = str_field(call, "name").unwrap_or("tool").to_owned();
        let prefix = format!("{}:call:{id}", self.session_key());
        if self.reported.insert(format!("{prefix}:use")) {
            let mut message = bare_message(SOURCE, MessageKind::ToolUse, format!("{prefix}:use"));
            message.tool = Some(name.clone());
            message.input = Some(match call.get("args") {
                Some(Value::Object(args)) => args.clone(),
                Some(other) => Map::from_iter([("input".to_owned(), other.clone())]),
                None => Map::new(),
            });
            out.push(Event::Message(message));
        }
        let done = call.get("result").is_some_and(|r| !r.is_null())
            || matches!(
                str_field(call, "status"),
                Some("success" | "error" | "cancelled")
            );
        if done && self.reported.insert(format!("{prefix}:result")) {
            let mut message =
                bare_message(SOURCE, MessageKind::ToolResult, format!("{prefix}:result"));
            message.tool = Some(name);
            message.output = Some(tool_output(call));
            out.push(Event::Message(message));
        }
    }
}

/// A tool call's output: what its function responses say (`output`, else `error`, else the
/// whole response), else what Gemini CLI displayed.
fn tool_output(call: &Map<String, Value>) -> String {
    let responses: Vec<String> = match call.get("result") {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("functionResponse"))
            .map(
                |r| match (&r["response"]["output"], &r["response"]["error"]) {
                    (Value::String(output), _) => output.clone(),
                    (_, Value::String(error)) => error.clone(),
                    _ => r["response"].to_string(),
                },
            )
            .collect(),
        _ => Vec::new(),
    };
    if !responses.is_empty() {
        return responses.join("\n");
    }
    match call.get("resultDisplay") {
        Some(Value::String(shown)) => shown.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The text of a message's content: a string, or the `text` of each part (thoughts aside).
fn parts_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(Value::as_object)
            .filter(|p| p.get("thought") != Some(&Value::Bool(true)))
            .filter_map(|p| str_field(p, "text"))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// One model request's usage from Gemini CLI's `tokens` record (see the module comment).
fn usage_of(tokens: &Map<String, Value>, model: &str) -> Usage {
    let input = count_field(tokens, "input");
    let cached = count_field(tokens, "cached").min(input);
    Usage {
        provider: "google".to_owned(),
        model: model.to_owned(),
        input_tokens: input - cached + count_field(tokens, "tool"),
        output_tokens: count_field(tokens, "output") + count_field(tokens, "thoughts"),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// `wujie adapter gemini [ARGS…]`: Gemini CLI in its terminal UI on our terminal, its session
/// reported as events; exits with Gemini CLI's exit code.
pub async fn run_gemini_adapter(args: Vec<String>) -> i32 {
    super::adapter_exit("gemini", run(args).await)
}

/// What `wujie run` checks before it creates a run (see [`crate::preflight`]): the Gemini
/// CLI's executable, which it returns, and the arguments.
pub fn preflight(args: &[String]) -> Result<PathBuf, BuiltinError> {
    let program = GEMINI.locate_from_env()?;
    plan_launch(args, &uuid::Uuid::nil().to_string(), None)?;
    Ok(program)
}

async fn run(args: Vec<String>) -> Result<i32, BuiltinError> {
    // Checked before the issue is fetched, so a bad argument fails at once.
    let program = preflight(&args)?;
    let env = |name| std::env::var(name).ok();
    let new_id = uuid::Uuid::new_v4().to_string();
    let gemini = gemini_dir(env("GEMINI_CLI_HOME").as_deref(), env("HOME").as_deref());
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let context = match issue_context(GEMINI.name).await {
        Some(text) => {
            let read = |path: PathBuf| std::fs::read_to_string(path).ok();
            let file_name = context_file_name(&[
                read(cwd.join(".gemini/settings.json")),
                read(gemini.join("settings.json")),
            ]);
            context_dir(&file_name, &text)
        }
        None => None,
    };
    let launch = plan_launch(&args, &new_id, context.as_deref())?;
    let chat = launch.chat.clone();
    let looked_in = gemini.join("tmp").join("<project>").join("chats");
    let find = ChatFinder {
        gemini,
        cwd,
        chat,
        newest: None,
        started: std::time::SystemTime::now(),
        followed: HashSet::new(),
        switch_check: Every::new(SWITCH_CHECK),
    };
    run_with_log(
        &GEMINI,
        &program,
        &launch.args,
        looked_in.display().to_string(),
        find,
        LogReader::new(GeminiMapper::default()),
    )
    .await
}

/// [`write_context_dir`] for the issue this run is bound to, under the state directory `wujie
/// run` gives; `None` (said on stderr) when there is none or it cannot be written.
fn context_dir(file_name: &str, text: &str) -> Option<PathBuf> {
    let env = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
    let (Some(state), Some(issue_id)) = (env(PROVIDER_STATE_DIR_VAR), env("WUJIE_ISSUE_ID")) else {
        wujie_process::stderr_line!(
            "wujie adapter gemini: {PROVIDER_STATE_DIR_VAR} is not set, so there is no place for the issue's context file; gemini starts without the issue's context"
        );
        return None;
    };
    match write_context_dir(Path::new(&state), &issue_id, file_name, text) {
        Ok(dir) => Some(dir),
        Err(e) => {
            wujie_process::stderr_line!(
                "wujie adapter gemini: could not write the issue's context file under {state} ({e}); gemini starts without the issue's context"
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::testing::{self, messages};

    /// See tests/fixtures/README.md: a prompt, a `run_shell_command` of `echo hello` and its
    /// answer, then a resume of the same session with a second prompt.
    const FIXTURE: &[u8] = include_bytes!("../tests/fixtures/gemini_echo_hello_resumed.jsonl");
    const SESSION: &str = "11111111-2222-4333-8444-555555555555";

    fn map_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<Event> {
        testing::map_chunks(GeminiMapper::default(), chunks)
    }

    fn summary(events: &[Event]) -> Vec<(MessageKind, String)> {
        testing::summary(events, testing::tool_name)
    }

    fn usages(events: &[Event]) -> Vec<(u64, u64, String)> {
        testing::usages(events)
            .into_iter()
            .map(|u| (u.input_tokens, u.output_tokens, u.model))
            .collect()
    }

    /// Where the resumed run's lines begin: the line of the second prompt.
    fn resume_cut() -> usize {
        let at = FIXTURE
            .windows(b"\"text\":\"again\"".len())
            .position(|w| w == b"\"text\":\"again\"")
            .unwrap();
        FIXTURE[..at].iter().rposition(|b| *b == b'\n').unwrap() + 1
    }

    fn first_run() -> Vec<(MessageKind, String)> {
        [
            (MessageKind::UserInput, "Run the shell command echo hello"),
            (MessageKind::Text, "I will run it."),
            (
                MessageKind::ToolUse,
                r#"run_shell_command {"command":"echo hello","description":"Run the command"}"#,
            ),
            (MessageKind::ToolResult, "run_shell_command"),
            (MessageKind::Thinking, "It\nworked."),
            (MessageKind::Final, "done"),
        ]
        .map(|(k, v)| (k, v.to_owned()))
        .to_vec()
    }

    #[test]
    fn recorded_chat_log_maps_to_our_events() {
        let out = map_chunks([FIXTURE]);
        assert_eq!(
            out.first(),
            Some(&Event::Session {
                session_id: SESSION.to_owned()
            })
        );
        let said = summary(&out);
        assert_eq!(said[..6], first_run()[..], "{said:?}");
        assert_eq!(
            said[6..],
            [
                (MessageKind::UserInput, "again".to_owned()),
                (MessageKind::Final, "pong".to_owned())
            ],
            "{said:?}"
        );
        let result = &messages(&out)[3];
        assert!(
            result.output.as_deref().unwrap().contains("hello"),
            "{result:?}"
        );
        // Once per model message, although Gemini CLI appends the first one twice.
        let mock = |i, o| (i, o, "mock-model".to_owned());
        assert_eq!(usages(&out), [mock(11, 3), mock(20, 2), mock(10, 1)]);
        let keys: HashSet<String> = messages(&out).into_iter().map(|m| m.source_key).collect();
        assert_eq!(keys.len(), said.len(), "keys are unique");
        assert!(
            keys.iter().any(|k| k
                .starts_with(&format!("session:{SESSION}:call:run_shell_command"))
                && k.ends_with(":use")),
            "{keys:?}"
        );
    }

    #[test]
    fn every_event_survives_our_own_protocol_parser() {
        testing::assert_events_survive_the_protocol_parser(map_chunks([FIXTURE]));
    }

    #[test]
    fn any_chunking_garbage_and_unknown_records_give_the_same_events() {
        let whole = testing::assert_chunking_changes_nothing(FIXTURE, &[1, 13, 4096], map_chunks);
        let (first, second) = FIXTURE.split_at(resume_cut());
        let mut noisy = b"not json\n[1,2]\n".to_vec();
        noisy.extend_from_slice(first);
        noisy.extend_from_slice(b"{\"id\":\"x1\",\"type\":\"info\",\"content\":\"shown only\"}\n{\"$rewindTo\":\"nothing\"}\n{\"type\":\"gemini\",\"id\":7}\n{\"id\":\"x2\",\"type\":\"user\",\"content\":\"<session_context>ctx</session_context>\"}\n{torn");
        noisy.extend_from_slice(b"\n");
        noisy.extend_from_slice(second);
        assert_eq!(map_chunks([&noisy[..]]), whole);
    }

    #[test]
    fn a_baseline_read_first_reports_nothing_twice() {
        // The first run's lines are the baseline of the resumed run, including its last
        // reply, which only its end made final.
        let (first, second) = FIXTURE.split_at(resume_cut());
        let mut reader = LogReader::new(GeminiMapper::default());
        drop(reader.feed(first));
        reader.mapper.end_baseline();
        let mut after = reader.feed(second);
        after.extend(reader.finish());
        assert_eq!(
            summary(&after),
            [
                (MessageKind::UserInput, "again".to_owned()),
                (MessageKind::Final, "pong".to_owned())
            ]
        );
        assert_eq!(usages(&after), [(10, 1, "mock-model".to_owned())]);
    }

    #[test]
    fn the_user_back_at_the_input_makes_the_held_reply_final_once() {
        let (first, second) = FIXTURE.split_at(resume_cut());
        let mut reader = LogReader::new(GeminiMapper::default());
        let mut out = reader.feed(first);
        let mut ended = Vec::new();
        reader.mapper.turn_ended(&mut ended);
        assert_eq!(summary(&ended), [(MessageKind::Final, "done".to_owned())]);
        out.extend(ended);
        out.extend(reader.feed(second));
        out.extend(reader.finish());
        assert_eq!(out, map_chunks([FIXTURE]), "the same events, nothing twice");
    }

    #[test]
    fn gemini_clis_listing_of_added_directories_is_not_the_user_speaking() {
        // What Gemini CLI records once the user trusted a directory added to the workspace.
        let listing = serde_json::json!({"id": "l1", "type": "user", "content": [{"text":
            "- **Workspace Directories:**\n  - /w\n  - /state/issue-context/i1\n- **Directory Structure:**\n\nShowing up to 200 items"}]});
        let typed = serde_json::json!({"id": "u1", "type": "user", "content": [{"text":
            "- **Workspace Directories:** are they all here?"}]});
        let log = format!("{listing}\n{typed}\n");
        assert_eq!(
            summary(&map_chunks([log.as_bytes()])),
            [(
                MessageKind::UserInput,
                "- **Workspace Directories:** are they all here?".to_owned()
            )]
        );
    }

    #[test]
    fn the_issues_context_folder_is_the_same_on_every_run_and_holds_this_runs_text() {
        let state = tempfile::tempdir().unwrap();
        let first = write_context_dir(state.path(), "issue-1", "GEMINI.md", "one").unwrap();
        let again = write_context_dir(state.path(), "issue-1", "AGENTS.md", "two").unwrap();
        assert_eq!(first, again);
        assert!(first.starts_with(state.path()));
        let names: Vec<_> = std::fs::read_dir(&again)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["AGENTS.md"]);
        assert_eq!(
            std::fs::read_to_string(again.join("AGENTS.md")).unwrap(),
            "two"
        );
        let other = write_context_dir(state.path(), "../issue-2", "GEMINI.md", "x").unwrap();
        assert_ne!(other, first);
        assert!(
            other.starts_with(state.path().join("issue-context")),
            "{other:?}"
        );
    }

    #[test]
    fn usage_splits_cached_input_out_and_counts_thinking_as_output() {
        let tokens = serde_json::json!({"input": 100, "output": 7, "cached": 60, "thoughts": 5, "tool": 2, "total": 114});
        let usage = usage_of(tokens.as_object().unwrap(), "gemini-x");
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens
            ),
            (42, 12, 60, 0)
        );
        assert_eq!(usage.provider, "google");
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn launches_pick_the_session_and_add_the_context() {
        let new = "new-id";
        let plan = |args: &[&str], dir: Option<&str>| {
            plan_launch(&strings(args), new, dir.map(Path::new)).unwrap()
        };
        assert_eq!(
            plan(&["--model", "x"], None),
            Launch {
                args: strings(&["--model", "x", "--session-id", new]),
                chat: Chat::Session(new.to_owned()),
            }
        );
        let resumed = plan(&["-r", "abc-def"], Some("/tmp/ctx"));
        assert_eq!(resumed.chat, Chat::Session("abc-def".to_owned()));
        assert_eq!(
            resumed.args,
            strings(&["-r", "abc-def", "--include-directories", "/tmp/ctx"])
        );
        assert_eq!(plan(&["--resume=latest"], None).chat, Chat::Newest);
        assert_eq!(
            plan(&["--resume", "latest"], None).args,
            strings(&["--resume", "latest"])
        );
        assert_eq!(
            plan(&["--session-id=given"], None),
            Launch {
                args: strings(&["--session-id=given"]),
                chat: Chat::Session("given".to_owned()),
            }
        );
    }

    #[test]
    fn arguments_the_provider_cannot_follow_are_refused_clearly() {
        for (args, says) in [
            (&["--acp"][..], "acp provider"),
            (&["--experimental-acp"][..], "acp provider"),
            (&["--session-file", "s.json"][..], "--resume <session id>"),
            (&["--resume"][..], "--resume <session id>"),
            (&["-r", "3"][..], "--resume <session id>"),
            (&["--resume", "--model", "x"][..], "--resume <session id>"),
            (&["--session-id"][..], "needs a session id"),
            (&["--session-id", "a", "-r", "b"][..], "give one of them"),
        ] {
            let error = plan_launch(&strings(args), "n", None).unwrap_err();
            let text = error.to_string();
            assert!(
                text.contains(says) && text.contains("gemini"),
                "{args:?}: {text}"
            );
            assert_eq!(error.exit_code(), 2);
        }
    }

    #[test]
    fn logs_are_found_by_session_or_as_the_newest_of_the_project() {
        let home = tempfile::tempdir().unwrap();
        let gemini = gemini_dir(None, home.path().to_str());
        assert_eq!(gemini, home.path().join(".gemini"));
        assert_eq!(
            gemini_dir(Some("/g"), Some("/h")),
            PathBuf::from("/g/.gemini")
        );
        let chats = gemini.join("tmp/work/chats");
        let other = gemini.join("tmp/other/chats");
        std::fs::create_dir_all(&chats).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let id = "abcdef12-0000-4000-8000-000000000001";
        let twin = "abcdef12-0000-4000-8000-000000000002";
        assert_eq!(find_session_log(&gemini, id), None);
        // Another session whose id starts the same way, in another project.
        let meta = |id: &str| format!("{{\"sessionId\":\"{id}\",\"projectHash\":\"h\"}}\n");
        std::fs::write(
            other.join("session-2026-12-01T10-00-abcdef12.jsonl"),
            meta(twin),
        )
        .unwrap();
        assert_eq!(find_session_log(&gemini, id), None);
        let own = chats.join("session-2026-12-01T10-01-abcdef12.jsonl");
        std::fs::write(&own, meta(id)).unwrap();
        assert_eq!(find_session_log(&gemini, id), Some(own.clone()));
        // The empty log a resume also starts, with the same id.
        let later = chats.join("session-2026-12-01T10-05-abcdef12.jsonl");
        std::fs::write(&later, meta(id)).unwrap();
        assert_eq!(find_session_log(&gemini, id), Some(own.clone()));

        let cwd = Path::new("/home/u/work");
        assert_eq!(newest_log(&gemini, cwd), None, "no projects.json yet");
        std::fs::write(
            gemini.join("projects.json"),
            r#"{"projects":{"/home/u/work":"work"}}"#,
        )
        .unwrap();
        let old = chats.join("session-2026-11-30T10-00-00000000.jsonl");
        std::fs::write(&old, meta("00000000-1")).unwrap();
        let aged = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(aged)
            .unwrap();
        assert_eq!(newest_log(&gemini, cwd), Some(later));
        assert_eq!(newest_log(&gemini, Path::new("/elsewhere")), None);
    }

    #[test]
    fn the_context_file_takes_the_name_gemini_cli_loads() {
        let s = |text: &str| Some(text.to_owned());
        assert_eq!(context_file_name(&[None, None]), "GEMINI.md");
        assert_eq!(
            context_file_name(&[None, s(r#"{"context":{"fileName":"AGENTS.md"}}"#)]),
            "AGENTS.md"
        );
        assert_eq!(
            context_file_name(&[
                s(r#"{"context":{"fileName":["CONTEXT.md","GEMINI.md"]}}"#),
                s(r#"{"context":{"fileName":"AGENTS.md"}}"#)
            ]),
            "CONTEXT.md",
            "the workspace's settings first"
        );
        assert_eq!(
            context_file_name(&[
                s("// a comment, not JSON"),
                s(r#"{"context":{"fileName":"../x"}}"#)
            ]),
            "GEMINI.md"
        );
    }
}
