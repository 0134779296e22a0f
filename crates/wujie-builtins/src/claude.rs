//! The built-in `claude` provider: Claude Code in its own terminal UI, observed through the
//! session transcript it writes itself,
//! `$CLAUDE_CONFIG_DIR/projects/<escaped cwd>/<session id>.jsonl` (`CLAUDE_CONFIG_DIR` defaults
//! to `~/.claude`).
//!
//! The session is always one whose id the provider knows before Claude Code starts, so it never
//! reads another terminal's transcript: a new session gets `--session-id <new uuid>`, a resume
//! (`--resume <id>`) or a given `--session-id` is that id, `--continue` is the newest transcript
//! of this directory when the provider starts, and a fork (`--fork-session`) gets a new
//! `--session-id` too. Bound to an issue, the issue goes in as read-only context with
//! `--append-system-prompt` (appended to the user's own, if any), never as a user message.
//!
//! A session switched to in the UI (`/clear`, `/resume`) is followed: Claude Code keeps the
//! session each of its processes is in in `<config>/sessions/<pid>.json`, and once that names
//! another session whose transcript exists, that transcript is read from its start.
//!
//! What is read from a transcript line (anything else, and lines of subagents, are skipped):
//!
//! | record | events |
//! |---|---|
//! | any, first `sessionId` of each transcript read | `session` |
//! | `user`, text content (not Claude Code's own `<tag>…</tag>` markup, not `isMeta`, not its `[Request interrupted by user…]` marker) | `user_input` |
//! | `user`, `tool_result` block | `tool_result` |
//! | `assistant`, `thinking` block | `thinking` |
//! | `assistant`, `text` block | `final` when the message ended the turn (`stop_reason` other than `tool_use`), else `text` |
//! | `assistant`, `tool_use` block | `tool_use` |
//! | `assistant` with `isApiErrorMessage` | `error` |
//! | `assistant` `message.usage`, once per message id | `usage` (input, output, cache read, cache creation) |
//!
//! Claude Code writes one line per content block of a model response, each repeating the
//! response's id and usage: counting usage once per id is what keeps it exact. Keys are built
//! from Claude Code's own ids: `session:<sid>:user:<uuid>`, `session:<sid>:turn:<message id>:
//! <kind>:<uuid>`, `session:<sid>:tool:<tool_use id>:use` and `…:result`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use wujie_protocol::event::{Event, MessageKind, Usage};

use crate::tui::{LogMapper, LogReader, file_sizes, is_agent_markup, issue_context, run_with_log};
use crate::{
    AgentProgram, BuiltinError, bare_message, content_message, count_field, flag_value, str_field,
};

/// The `source` of every message the claude provider reports.
pub const SOURCE: &str = "claude";

/// Where the Claude Code executable comes from.
pub const CLAUDE: AgentProgram = AgentProgram {
    name: "claude",
    env_var: "WUJIE_CLAUDE_BIN",
    install: "npm install -g @anthropic-ai/claude-code",
};

/// Which transcript is this run's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transcript {
    /// The session with this id (new, resumed or forked into).
    Session(String),
    /// `--continue`: the newest transcript of the working directory.
    Newest,
}

/// Claude Code's arguments as the provider runs them, and the transcript to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub args: Vec<String>,
    pub transcript: Transcript,
}

/// Plans the launch of `claude ARGS…`: which session it is and what the provider adds.
/// `new_id` is the id a new or forked session gets; `context` the issue's context.
pub fn plan_launch(
    args: &[String],
    new_id: &str,
    context: Option<&str>,
) -> Result<Launch, BuiltinError> {
    let refuse = |arg: &str, why: &'static str| BuiltinError::Unsupported {
        program: CLAUDE.name,
        arg: arg.to_owned(),
        why,
    };
    if let Some(arg) = args.iter().find(|a| *a == "--no-session-persistence") {
        return Err(refuse(
            arg,
            "Claude Code would write no transcript, and the transcript is what the provider reads; drop it",
        ));
    }
    let fork = args.iter().any(|a| a == "--fork-session");
    let given = flag_value(args, &["--session-id"]);
    let resume = flag_value(args, &["--resume", "-r"]);
    let resumes = resume.is_some() || args.iter().any(|a| a == "--continue" || a == "-c");
    if let Some((_, None)) = given {
        return Err(refuse(
            "--session-id",
            "it needs a session id (a UUID) after it",
        ));
    }
    if let Some((_, None)) = resume
        && !fork
    {
        return Err(refuse(
            "--resume",
            "without a session id Claude Code asks which session to open, and the provider could not tell which transcript is this run's; give the id: --resume <session id>",
        ));
    }
    let mut launch = Launch {
        args: args.to_vec(),
        transcript: Transcript::Session(new_id.to_owned()),
    };
    match (given, resume) {
        (Some((_, Some(id))), _) => launch.transcript = Transcript::Session(id.to_owned()),
        _ if resumes && fork => launch
            .args
            .extend(["--session-id".to_owned(), new_id.to_owned()]),
        (None, Some((_, Some(id)))) => launch.transcript = Transcript::Session(id.to_owned()),
        _ if resumes => launch.transcript = Transcript::Newest,
        _ => launch
            .args
            .extend(["--session-id".to_owned(), new_id.to_owned()]),
    }
    if let Some(context) = context {
        match flag_value(&launch.args, &["--append-system-prompt"]) {
            Some((i, Some(own))) => {
                let merged = format!("{own}\n\n{context}");
                if launch.args[i] == "--append-system-prompt" {
                    launch.args[i + 1] = merged;
                } else {
                    launch.args[i] = format!("--append-system-prompt={merged}");
                }
            }
            _ => launch
                .args
                .extend(["--append-system-prompt".to_owned(), context.to_owned()]),
        }
    }
    Ok(launch)
}

/// `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`.
pub fn config_dir(config_var: Option<&str>, home: Option<&str>) -> PathBuf {
    match config_var.filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(home.unwrap_or("/")).join(".claude"),
    }
}

/// Claude Code's directory name for a working directory: every character other than an ASCII
/// letter or digit becomes `-`.
pub fn escape_cwd(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The transcript file of `transcript`, if it exists yet. A session's file is looked for in
/// every project directory (its id is unique), so a path Claude Code escapes differently (a
/// long one, say) is still found.
pub fn find_transcript(config: &Path, cwd: &Path, transcript: &Transcript) -> Option<PathBuf> {
    let projects = config.join("projects");
    match transcript {
        Transcript::Session(id) => {
            let name = format!("{id}.jsonl");
            let own = projects.join(escape_cwd(cwd)).join(&name);
            if own.is_file() {
                return Some(own);
            }
            std::fs::read_dir(&projects)
                .ok()?
                .filter_map(Result::ok)
                .map(|dir| dir.path().join(&name))
                .find(|path| path.is_file())
        }
        Transcript::Newest => std::fs::read_dir(projects.join(escape_cwd(cwd)))
            .ok()?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
            .filter_map(|path| Some((path.metadata().ok()?.modified().ok()?, path)))
            .max()
            .map(|(_, path)| path),
    }
}

/// The session Claude Code process `pid` is in now, from the file it keeps up to date for
/// each running process, `<config>/sessions/<pid>.json` (`sessionId`): it changes when the
/// user switches sessions in the UI (`/clear`, `/resume`).
pub fn current_session(config: &Path, pid: u32) -> Option<String> {
    let text = std::fs::read(config.join("sessions").join(format!("{pid}.json"))).ok()?;
    let record: Map<String, Value> = serde_json::from_slice(&text).ok()?;
    str_field(&record, "sessionId")
        .filter(|id| !id.trim().is_empty())
        .map(str::to_owned)
}

/// This run's transcript: the one [`plan_launch`] chose, then the one of each session the
/// user switches to.
struct TranscriptFinder {
    config: PathBuf,
    cwd: PathBuf,
    transcript: Transcript,
    /// `--continue` opens the newest transcript as it is now; fixed at the first look.
    newest: Option<PathBuf>,
    /// How large each transcript was before Claude Code started: one resumed in the UI holds
    /// an earlier conversation, reported by the run that had it.
    earlier: HashMap<PathBuf, u64>,
}

impl crate::tui::FindLog for TranscriptFinder {
    fn find(&mut self, _agent_pid: Option<u32>) -> Option<PathBuf> {
        match &self.transcript {
            Transcript::Newest => {
                if self.newest.is_none() {
                    self.newest = find_transcript(&self.config, &self.cwd, &self.transcript);
                }
                self.newest.clone()
            }
            session => find_transcript(&self.config, &self.cwd, session),
        }
    }

    fn switched(&mut self, agent_pid: Option<u32>, current: &Path) -> Option<PathBuf> {
        let session = current_session(&self.config, agent_pid?)?;
        if current.file_stem().is_some_and(|stem| *stem == *session) {
            return None;
        }
        // Claude Code names the new session before it writes its transcript: it is followed
        // once the file is there.
        find_transcript(&self.config, &self.cwd, &Transcript::Session(session))
    }

    fn earlier_bytes(&self, path: &Path) -> u64 {
        self.earlier.get(path).copied().unwrap_or(0)
    }
}

/// Maps Claude Code transcript records to events (see the module comment).
#[derive(Debug, Default)]
pub struct ClaudeMapper {
    session_id: Option<String>,
    /// Tool name of each `tool_use` id.
    tools: HashMap<String, String>,
    /// Model responses whose usage was reported.
    counted: HashSet<String>,
}

impl LogMapper for ClaudeMapper {
    fn record(&mut self, line_no: u64, record: &Map<String, Value>, out: &mut Vec<Event>) {
        if self.session_id.is_none()
            && let Some(id) = str_field(record, "sessionId").filter(|id| !id.trim().is_empty())
        {
            self.session_id = Some(id.to_owned());
            out.push(Event::Session {
                session_id: id.to_owned(),
            });
        }
        if record.get("isSidechain") == Some(&Value::Bool(true)) {
            return;
        }
        let Some(message) = record.get("message").and_then(Value::as_object) else {
            return;
        };
        let uuid = str_field(record, "uuid")
            .map(str::to_owned)
            .unwrap_or_else(|| format!("line-{line_no}"));
        match str_field(record, "type") {
            Some("user") if record.get("isMeta") != Some(&Value::Bool(true)) => {
                self.user(&uuid, message, out)
            }
            Some("assistant") => self.assistant(record, &uuid, message, out),
            _ => {}
        }
    }

    /// The first `sessionId` of the next transcript is the session the run goes on in.
    fn next_log(&mut self, _out: &mut Vec<Event>) {
        self.session_id = None;
    }
}

/// Whether a `user` record's text is the marker Claude Code writes when the user stops a
/// response (Esc): `[Request interrupted by user]`, `… for tool use]`. The user said nothing.
fn is_interruption_marker(text: &str) -> bool {
    let text = text.trim();
    text.starts_with("[Request interrupted by user") && text.ends_with(']') && !text.contains('\n')
}

impl ClaudeMapper {
    fn session_key(&self) -> String {
        crate::session_key(self.session_id.as_deref())
    }

    fn user(&mut self, uuid: &str, message: &Map<String, Value>, out: &mut Vec<Event>) {
        let mut texts = Vec::new();
        match message.get("content") {
            Some(Value::String(text)) => texts.push(text.clone()),
            Some(Value::Array(blocks)) => {
                for block in blocks.iter().filter_map(Value::as_object) {
                    match str_field(block, "type") {
                        Some("text") => texts.extend(str_field(block, "text").map(str::to_owned)),
                        Some("image") => texts.push("[image]".to_owned()),
                        Some("tool_result") => self.tool_result(block, out),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        let text = texts.join("\n");
        if !text.trim().is_empty() && !is_agent_markup(&text) && !is_interruption_marker(&text) {
            let key = format!("{}:user:{uuid}", self.session_key());
            out.push(content_message(SOURCE, MessageKind::UserInput, text, key));
        }
    }

    fn tool_result(&mut self, block: &Map<String, Value>, out: &mut Vec<Event>) {
        let Some(id) = str_field(block, "tool_use_id") else {
            return;
        };
        let output = match block.get("content") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(Value::as_object)
                .filter_map(|p| str_field(p, "text"))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        let mut message = bare_message(
            SOURCE,
            MessageKind::ToolResult,
            format!("{}:tool:{id}:result", self.session_key()),
        );
        message.tool = Some(
            self.tools
                .get(id)
                .cloned()
                .unwrap_or_else(|| "tool".to_owned()),
        );
        message.output = Some(output);
        out.push(Event::Message(message));
    }

    fn assistant(
        &mut self,
        record: &Map<String, Value>,
        uuid: &str,
        message: &Map<String, Value>,
        out: &mut Vec<Event>,
    ) {
        let turn = str_field(message, "id").unwrap_or(uuid).to_owned();
        let prefix = format!("{}:turn:{turn}", self.session_key());
        let blocks: &[Value] = match message.get("content") {
            Some(Value::Array(blocks)) => blocks,
            _ => &[],
        };
        if record.get("isApiErrorMessage") == Some(&Value::Bool(true)) {
            let text: Vec<&str> = blocks
                .iter()
                .filter_map(Value::as_object)
                .filter_map(|b| str_field(b, "text"))
                .collect();
            let text = if text.is_empty() {
                "Claude Code reported an API error".to_owned()
            } else {
                text.join("\n")
            };
            out.push(content_message(
                SOURCE,
                MessageKind::Error,
                text,
                format!("{prefix}:error:{uuid}"),
            ));
            return;
        }
        let ends_turn = matches!(str_field(message, "stop_reason"), Some(r) if r != "tool_use");
        for block in blocks.iter().filter_map(Value::as_object) {
            match str_field(block, "type") {
                Some("thinking") => {
                    if let Some(text) = str_field(block, "thinking").filter(|t| !t.is_empty()) {
                        out.push(content_message(
                            SOURCE,
                            MessageKind::Thinking,
                            text.to_owned(),
                            format!("{prefix}:thinking:{uuid}"),
                        ));
                    }
                }
                Some("text") => {
                    if let Some(text) = str_field(block, "text").filter(|t| !t.trim().is_empty()) {
                        let (kind, name) = if ends_turn {
                            (MessageKind::Final, "final")
                        } else {
                            (MessageKind::Text, "text")
                        };
                        out.push(content_message(
                            SOURCE,
                            kind,
                            text.to_owned(),
                            format!("{prefix}:{name}:{uuid}"),
                        ));
                    }
                }
                Some("tool_use") => self.tool_use(block, out),
                _ => {}
            }
        }
        if !self.counted.contains(&turn)
            && let Some(usage) = usage_of(message)
        {
            self.counted.insert(turn);
            out.push(Event::Usage(usage));
        }
    }

    fn tool_use(&mut self, block: &Map<String, Value>, out: &mut Vec<Event>) {
        let Some(id) = str_field(block, "id") else {
            return;
        };
        let name = str_field(block, "name").unwrap_or("tool").to_owned();
        self.tools.insert(id.to_owned(), name.clone());
        let mut message = bare_message(
            SOURCE,
            MessageKind::ToolUse,
            format!("{}:tool:{id}:use", self.session_key()),
        );
        message.tool = Some(name);
        message.input = match block.get("input") {
            Some(Value::Object(input)) => Some(input.clone()),
            Some(other) => Some(Map::from_iter([("input".to_owned(), other.clone())])),
            None => Some(Map::new()),
        };
        out.push(Event::Message(message));
    }
}

/// A model response's usage; `None` without one, when every count is zero, or for Claude
/// Code's own `<synthetic>` messages (errors, interruptions), which no model produced.
fn usage_of(message: &Map<String, Value>) -> Option<Usage> {
    let usage = message.get("usage")?.as_object()?;
    let model = str_field(message, "model").unwrap_or("unknown");
    if model == "<synthetic>" {
        return None;
    }
    let usage = Usage {
        provider: "anthropic".to_owned(),
        model: model.to_owned(),
        input_tokens: count_field(usage, "input_tokens"),
        output_tokens: count_field(usage, "output_tokens"),
        cache_read_tokens: count_field(usage, "cache_read_input_tokens"),
        cache_write_tokens: count_field(usage, "cache_creation_input_tokens"),
    };
    let counted = usage.input_tokens
        + usage.output_tokens
        + usage.cache_read_tokens
        + usage.cache_write_tokens;
    (counted > 0).then_some(usage)
}

/// `wujie adapter claude [ARGS…]`: Claude Code in its terminal UI on our terminal, its session
/// reported as events; exits with Claude Code's exit code.
pub async fn run_claude_adapter(args: Vec<String>) -> i32 {
    super::adapter_exit("claude", run(args).await)
}

/// What `wujie run` checks before it creates a run (see [`crate::preflight`]): Claude Code's
/// executable, which it returns, and the arguments.
pub fn preflight(args: &[String]) -> Result<PathBuf, BuiltinError> {
    let program = CLAUDE.locate_from_env()?;
    plan_launch(args, &uuid::Uuid::nil().to_string(), None)?;
    Ok(program)
}

async fn run(args: Vec<String>) -> Result<i32, BuiltinError> {
    // Checked before the issue is fetched, so a bad argument fails at once.
    let program = preflight(&args)?;
    let env = |name| std::env::var(name).ok();
    let new_id = uuid::Uuid::new_v4().to_string();
    let context = issue_context(CLAUDE.name).await;
    let launch = plan_launch(&args, &new_id, context.as_deref())?;
    let config = config_dir(env("CLAUDE_CONFIG_DIR").as_deref(), env("HOME").as_deref());
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let looked_in = match &launch.transcript {
        Transcript::Session(id) => config
            .join("projects")
            .join(escape_cwd(&cwd))
            .join(format!("{id}.jsonl")),
        Transcript::Newest => config.join("projects").join(escape_cwd(&cwd)),
    };
    let find = TranscriptFinder {
        earlier: file_sizes(&config.join("projects")),
        config,
        cwd,
        transcript: launch.transcript.clone(),
        newest: None,
    };
    run_with_log(
        &CLAUDE,
        &program,
        &launch.args,
        looked_in.display().to_string(),
        find,
        LogReader::new(ClaudeMapper::default()),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::testing::{self, messages};

    /// See tests/fixtures/README.md: a prompt, a `Bash` call of `echo hello` and its answer,
    /// then a resume of the same session whose request the mock refused.
    const FIXTURE: &[u8] = include_bytes!("../tests/fixtures/claude_echo_hello_resumed.jsonl");
    const SESSION: &str = "11111111-2222-4333-8444-555555555555";

    fn map_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<Event> {
        testing::map_chunks(ClaudeMapper::default(), chunks)
    }

    fn summary(events: &[Event]) -> Vec<(MessageKind, String)> {
        testing::summary(events, testing::tool_and_output)
    }

    fn usages(events: &[Event]) -> Vec<(u64, u64)> {
        testing::usages(events)
            .into_iter()
            .map(|u| (u.input_tokens, u.output_tokens))
            .collect()
    }

    #[test]
    fn recorded_transcript_maps_to_our_events() {
        let out = map_chunks([FIXTURE]);
        assert_eq!(
            out.first(),
            Some(&Event::Session {
                session_id: SESSION.to_owned()
            })
        );
        let said = summary(&out);
        assert_eq!(
            said[..6],
            [
                (
                    MessageKind::UserInput,
                    "Run the shell command echo hello".to_owned()
                ),
                (MessageKind::Text, "I will run it.".to_owned()),
                (
                    MessageKind::ToolUse,
                    r#"Bash {"command":"echo hello","description":"Run the command"}"#.to_owned()
                ),
                (MessageKind::ToolResult, "Bash hello".to_owned()),
                (MessageKind::Thinking, "It worked.".to_owned()),
                (MessageKind::Final, "done".to_owned()),
            ]
        );
        assert_eq!(said[6], (MessageKind::UserInput, "again".to_owned()));
        assert_eq!(said[7].0, MessageKind::Error);
        assert!(said[7].1.contains("no scripted turn matches"), "{said:?}");
        assert_eq!(said.len(), 8, "{said:?}");
        // One usage per model response, although each response spans two lines; none for the
        // synthetic error message.
        assert_eq!(usages(&out), [(11, 3), (20, 2)]);
        let keys: HashSet<String> = messages(&out).into_iter().map(|m| m.source_key).collect();
        assert_eq!(keys.len(), 8, "keys are unique");
        assert!(keys.contains(&format!("session:{SESSION}:tool:toolu_2:use")));
        assert!(keys.contains(&format!("session:{SESSION}:tool:toolu_2:result")));
    }

    #[test]
    fn every_event_survives_our_own_protocol_parser() {
        testing::assert_events_survive_the_protocol_parser(map_chunks([FIXTURE]));
    }

    #[test]
    fn any_chunking_gives_the_same_events() {
        testing::assert_chunking_changes_nothing(FIXTURE, &[1, 7, 4096], map_chunks);
    }

    #[test]
    fn garbage_and_unknown_records_are_skipped() {
        let mut noisy = b"not json\n[1,2]\n{\"type\":\"brand-new-record\",\"sessionId\":\"11111111-2222-4333-8444-555555555555\"}\n{\"type\":\"assistant\",\"message\":7}\n{torn".to_vec();
        noisy.extend_from_slice(b"\n");
        noisy.extend_from_slice(FIXTURE);
        noisy.extend_from_slice(b"{\"type\":\"user\",\"isSidechain\":true,\"message\":{\"content\":\"a subagent's prompt\"}}\n");
        noisy.extend_from_slice(b"{\"type\":\"user\",\"message\":{\"content\":\"<command-name>/model</command-name>\"}}\n");
        // What Claude Code writes when the user stops a response with Esc.
        noisy.extend_from_slice(b"{\"type\":\"user\",\"uuid\":\"i1\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"[Request interrupted by user]\"}]}}\n");
        noisy.extend_from_slice(b"{\"type\":\"user\",\"uuid\":\"i2\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"[Request interrupted by user for tool use]\"}]}}\n");
        assert_eq!(
            summary(&map_chunks([&noisy[..]])),
            summary(&map_chunks([FIXTURE]))
        );
    }

    #[test]
    fn a_baseline_read_first_counts_nothing_twice() {
        // The first run's lines are the baseline of the resumed run: what is read after it
        // reports only the resumed part.
        let cut = FIXTURE
            .windows(b"\"content\":\"again\"".len())
            .position(|w| w == b"\"content\":\"again\"")
            .unwrap();
        let line_start = FIXTURE[..cut].iter().rposition(|b| *b == b'\n').unwrap() + 1;
        let mut reader = LogReader::new(ClaudeMapper::default());
        drop(reader.feed(&FIXTURE[..line_start]));
        let mut after = reader.feed(&FIXTURE[line_start..]);
        after.extend(reader.finish());
        let said = summary(&after);
        assert_eq!(said.len(), 2, "{said:?}");
        assert_eq!(said[0], (MessageKind::UserInput, "again".to_owned()));
        assert!(usages(&after).is_empty());
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn launches_pick_the_session_and_add_the_context() {
        let new = "new-id";
        let plan = |args: &[&str], context| plan_launch(&strings(args), new, context).unwrap();
        assert_eq!(
            plan(&["--model", "x"], None),
            Launch {
                args: strings(&["--model", "x", "--session-id", new]),
                transcript: Transcript::Session(new.to_owned()),
            }
        );
        let resumed = plan(&["--resume", "abc"], Some("issue"));
        assert_eq!(resumed.transcript, Transcript::Session("abc".to_owned()));
        assert_eq!(
            resumed.args,
            strings(&["--resume", "abc", "--append-system-prompt", "issue"])
        );
        assert_eq!(plan(&["-c"], None).transcript, Transcript::Newest);
        let fork = plan(&["-r", "abc", "--fork-session"], None);
        assert_eq!(fork.transcript, Transcript::Session(new.to_owned()));
        assert!(fork.args.ends_with(&strings(&["--session-id", new])));
        assert_eq!(
            plan(&["--session-id=given"], None).transcript,
            Transcript::Session("given".to_owned())
        );
        assert_eq!(
            plan(&["--append-system-prompt", "mine"], Some("issue")).args,
            strings(&[
                "--append-system-prompt",
                "mine\n\nissue",
                "--session-id",
                new
            ])
        );
    }

    #[test]
    fn arguments_the_provider_cannot_follow_are_refused_clearly() {
        for (args, says) in [
            (&["--no-session-persistence"][..], "no transcript"),
            (&["--resume"][..], "--resume <session id>"),
            (&["--resume", "--model", "x"][..], "--resume <session id>"),
            (&["--session-id"][..], "needs a session id"),
        ] {
            let error = plan_launch(&strings(args), "n", None).unwrap_err();
            let text = error.to_string();
            assert!(text.contains(says) && text.contains("claude"), "{text}");
            assert_eq!(error.exit_code(), 2);
        }
    }

    #[test]
    fn transcripts_are_found_by_session_or_as_the_newest_of_the_directory() {
        let config = tempfile::tempdir().unwrap();
        let cwd = Path::new("/home/u/my.project");
        assert_eq!(escape_cwd(cwd), "-home-u-my-project");
        let own = config.path().join("projects/-home-u-my-project");
        let elsewhere = config.path().join("projects/-other");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        let session = |id: &str| Transcript::Session(id.to_owned());
        assert_eq!(find_transcript(config.path(), cwd, &session("a")), None);
        std::fs::write(elsewhere.join("a.jsonl"), "").unwrap();
        assert_eq!(
            find_transcript(config.path(), cwd, &session("a")),
            Some(elsewhere.join("a.jsonl"))
        );
        std::fs::write(own.join("old.jsonl"), "").unwrap();
        std::fs::write(own.join("new.jsonl"), "").unwrap();
        let aged = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(own.join("old.jsonl"))
            .unwrap()
            .set_modified(aged)
            .unwrap();
        assert_eq!(
            find_transcript(config.path(), cwd, &Transcript::Newest),
            Some(own.join("new.jsonl"))
        );
        assert_eq!(
            config_dir(None, Some("/home/u")),
            PathBuf::from("/home/u/.claude")
        );
        assert_eq!(config_dir(Some("/c"), Some("/home/u")), PathBuf::from("/c"));
    }
}
