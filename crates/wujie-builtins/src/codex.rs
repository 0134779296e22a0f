//! The built-in `codex` provider: the Codex CLI in its own terminal UI, inline
//! (`--no-alt-screen`, so the conversation stays in the terminal's scrollback and `/wujie` can
//! open under its composer), observed through its rollout log
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<ts>-<thread id>.jsonl` (`CODEX_HOME` defaults to
//! `~/.codex`).
//!
//! Codex takes no session id from outside, so the log is bound by who writes it: the rollout
//! file that Codex, a process this adapter started, holds open. Another terminal's Codex in
//! the same directory is never read. What a resumed log held before Codex started is the
//! baseline (nothing in it is reported again): `codex resume <id>` reads it first, and a log
//! Codex chose itself (`resume --last`, its picker) is measured before Codex starts. Bound to an issue, the issue goes in as read-only
//! context with `-c developer_instructions=…`, Codex's own option for instructions beside its
//! built-in ones, never as a user message.
//!
//! What is read from the log (anything else is skipped):
//!
//! | record | events |
//! |---|---|
//! | `session_meta` `{id}` | `session` |
//! | `response_item` user `message` (not Codex's own `<tag>…</tag>` context) | `user_input` |
//! | `response_item` assistant `message` | `text`; `final` when `task_complete` ends the turn after it |
//! | `response_item` `reasoning` summary | `thinking` |
//! | `response_item` `function_call` / `custom_tool_call` | `tool_use` |
//! | `response_item` `function_call_output` / `custom_tool_call_output` | `tool_result` |
//! | `token_usage_record` `{response_id, usage}`, once per response | `usage` |
//!
//! Codex counts cached input inside `input_tokens`; the usage reported splits it out (input is
//! the uncached part, cache read the cached part), as the other providers report it. Keys come
//! from Codex's item ids: `session:<sid>:item:<id>`, `session:<sid>:call:<call id>:use` and
//! `…:result`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use wujie_protocol::event::{Event, MessageKind, Usage};

use crate::tui::{
    Every, FindLog, LogMapper, LogReader, SWITCH_CHECK, file_sizes, is_agent_markup, issue_context,
    run_with_log,
};
use crate::{AgentProgram, BuiltinError, bare_message, content_message, count_field, str_field};

/// The `source` of every message the codex provider reports.
pub const SOURCE: &str = "codex";

/// Where the Codex executable comes from.
pub const CODEX: AgentProgram = AgentProgram {
    name: "codex",
    env_var: "WUJIE_CODEX_BIN",
    install: "npm install -g @openai/codex",
};

/// Codex's arguments as the provider runs them: inline, with the issue's context.
pub fn launch_args(args: &[String], context: Option<&str>) -> Result<Vec<String>, BuiltinError> {
    if let Some(arg) = args
        .iter()
        .find(|a| a.starts_with("developer_instructions=") && context.is_some())
    {
        return Err(BuiltinError::Unsupported {
            program: CODEX.name,
            arg: arg.clone(),
            why: "bound to an issue, the provider gives Codex the issue as its developer_instructions; put your instructions in AGENTS.md instead",
        });
    }
    let mut launch = Vec::new();
    if !args.iter().any(|a| a == "--no-alt-screen") {
        launch.push("--no-alt-screen".to_owned());
    }
    if let Some(context) = context {
        // `-c` values are TOML; a JSON string is a valid TOML basic string.
        let quoted = serde_json::to_string(context).unwrap_or_default();
        launch.extend(["-c".to_owned(), format!("developer_instructions={quoted}")]);
    }
    launch.extend(args.iter().cloned());
    Ok(launch)
}

/// The thread id of `codex resume <id>` (the subcommand's first value that is not a flag).
pub fn resumed_thread(args: &[String]) -> Option<&str> {
    let at = args.iter().position(|a| a == "resume")?;
    args[at + 1..]
        .iter()
        .map(String::as_str)
        .find(|a| !a.starts_with('-'))
}

/// `$CODEX_HOME`, else `$HOME/.codex`.
pub fn codex_home(codex_home_var: Option<&str>, home: Option<&str>) -> PathBuf {
    match codex_home_var.filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(home.unwrap_or("/")).join(".codex"),
    }
}

/// The rollout log of thread `id`, if there is one.
pub fn rollout_of(sessions: &Path, id: &str) -> Option<PathBuf> {
    let suffix = format!("-{id}.jsonl");
    file_sizes(sessions)
        .into_keys()
        .find(|path| path.to_string_lossy().ends_with(&suffix))
}

/// A `rollout-*.jsonl` under `sessions` that process `root` or one of its descendants holds
/// open (read from `/proc`).
pub fn rollout_held_by(root: u32, sessions: &Path) -> Option<PathBuf> {
    rollouts_held_by(root, sessions).into_iter().next()
}

/// Every `rollout-*.jsonl` under `sessions` that process `root` or one of its descendants
/// holds open: Codex keeps an earlier thread's open for a while after `/new`.
pub fn rollouts_held_by(root: u32, sessions: &Path) -> Vec<PathBuf> {
    let mut parents: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(ppid) = parent_of(pid) {
            parents.entry(ppid).or_default().push(pid);
        }
    }
    let mut family = vec![root];
    let mut i = 0;
    while let Some(&pid) = family.get(i) {
        family.extend(parents.get(&pid).into_iter().flatten());
        i += 1;
    }
    family
        .iter()
        .flat_map(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| {
            target.starts_with(sessions)
                && target.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("rollout-") && n.ends_with(".jsonl")
                })
        })
        .collect()
}

/// The parent pid from `/proc/<pid>/stat` (the field after the parenthesised command name).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// Maps Codex rollout records to events (see the module comment).
#[derive(Debug, Default)]
pub struct CodexMapper {
    session_id: Option<String>,
    model: Option<String>,
    /// Tool name of each call id.
    tools: HashMap<String, String>,
    /// The turn's latest assistant message (key, text), held until it is known whether it
    /// ends the turn.
    answer: Option<(String, String)>,
    /// Responses whose usage was reported.
    counted: HashSet<String>,
}

impl LogMapper for CodexMapper {
    fn record(&mut self, line_no: u64, record: &Map<String, Value>, out: &mut Vec<Event>) {
        let Some(payload) = record.get("payload").and_then(Value::as_object) else {
            return;
        };
        match str_field(record, "type") {
            Some("session_meta") => {
                if self.session_id.is_none()
                    && let Some(id) = str_field(payload, "id").filter(|id| !id.trim().is_empty())
                {
                    self.session_id = Some(id.to_owned());
                    out.push(Event::Session {
                        session_id: id.to_owned(),
                    });
                }
            }
            Some("turn_context") => {
                if let Some(model) = str_field(payload, "model") {
                    self.model = Some(model.to_owned());
                }
            }
            Some("response_item") => self.item(line_no, payload, out),
            Some("event_msg") if str_field(payload, "type") == Some("task_complete") => {
                self.release_answer(MessageKind::Final, out)
            }
            Some("token_usage_record") => self.usage(payload, out),
            _ => {}
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        // Codex exited without saying the turn was complete: the answer is not known to be
        // its final one.
        self.release_answer(MessageKind::Text, out);
    }

    /// The first `session_meta` of the next rollout is the thread the run goes on in.
    fn next_log(&mut self, _out: &mut Vec<Event>) {
        self.session_id = None;
    }
}

impl CodexMapper {
    fn session_key(&self) -> String {
        crate::session_key(self.session_id.as_deref())
    }

    fn release_answer(&mut self, kind: MessageKind, out: &mut Vec<Event>) {
        crate::release_answer(SOURCE, &mut self.answer, kind, out);
    }

    fn item(&mut self, line_no: u64, item: &Map<String, Value>, out: &mut Vec<Event>) {
        let id = str_field(item, "id")
            .map(str::to_owned)
            .unwrap_or_else(|| format!("line-{line_no}"));
        let key = format!("{}:item:{id}", self.session_key());
        match str_field(item, "type") {
            Some("message") => {
                let text = texts_of(item.get("content"), "text");
                if text.trim().is_empty() {
                    return;
                }
                match str_field(item, "role") {
                    Some("user") if !is_agent_markup(&text) => {
                        self.release_answer(MessageKind::Text, out);
                        out.push(content_message(SOURCE, MessageKind::UserInput, text, key));
                    }
                    Some("assistant") => {
                        self.release_answer(MessageKind::Text, out);
                        self.answer = Some((key, text));
                    }
                    _ => {}
                }
            }
            Some("reasoning") => {
                let text = texts_of(item.get("summary"), "text");
                if !text.trim().is_empty() {
                    self.release_answer(MessageKind::Text, out);
                    out.push(content_message(SOURCE, MessageKind::Thinking, text, key));
                }
            }
            Some("function_call") | Some("custom_tool_call") => {
                self.release_answer(MessageKind::Text, out);
                let call = str_field(item, "call_id").unwrap_or(&id).to_owned();
                let name = str_field(item, "name").unwrap_or("tool").to_owned();
                self.tools.insert(call.clone(), name.clone());
                let input = match item.get("arguments").or_else(|| item.get("input")) {
                    Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
                        Ok(Value::Object(arguments)) => arguments,
                        _ => Map::from_iter([("input".to_owned(), Value::String(raw.clone()))]),
                    },
                    Some(Value::Object(arguments)) => arguments.clone(),
                    Some(other) => Map::from_iter([("input".to_owned(), other.clone())]),
                    None => Map::new(),
                };
                let mut message = bare_message(
                    SOURCE,
                    MessageKind::ToolUse,
                    format!("{}:call:{call}:use", self.session_key()),
                );
                message.tool = Some(name);
                message.input = Some(input);
                out.push(Event::Message(message));
            }
            Some("function_call_output") | Some("custom_tool_call_output") => {
                let Some(call) = str_field(item, "call_id") else {
                    return;
                };
                let output = match item.get("output") {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                let mut message = bare_message(
                    SOURCE,
                    MessageKind::ToolResult,
                    format!("{}:call:{call}:result", self.session_key()),
                );
                message.tool = Some(
                    self.tools
                        .get(call)
                        .cloned()
                        .unwrap_or_else(|| "tool".to_owned()),
                );
                message.output = Some(output);
                out.push(Event::Message(message));
            }
            _ => {}
        }
    }

    fn usage(&mut self, record: &Map<String, Value>, out: &mut Vec<Event>) {
        let (Some(response), Some(usage)) = (
            str_field(record, "response_id"),
            record.get("usage").and_then(Value::as_object),
        ) else {
            return;
        };
        if !self.counted.insert(response.to_owned()) {
            return;
        }
        let input = count_field(usage, "input_tokens");
        let cached = count_field(usage, "cached_input_tokens").min(input);
        out.push(Event::Usage(Usage {
            provider: "openai".to_owned(),
            model: self.model.clone().unwrap_or_else(|| "unknown".to_owned()),
            input_tokens: input - cached,
            output_tokens: count_field(usage, "output_tokens"),
            cache_read_tokens: cached,
            cache_write_tokens: count_field(usage, "cache_write_input_tokens"),
        }));
    }
}

/// The text of every `{type: …, text}` part (any part type carrying `field`), one per line.
fn texts_of(parts: Option<&Value>, field: &str) -> String {
    let Some(Value::Array(parts)) = parts else {
        return String::new();
    };
    parts
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|p| str_field(p, field))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `wujie adapter codex [ARGS…]`: Codex in its terminal UI on our terminal, its session
/// reported as events; exits with Codex's exit code.
pub async fn run_codex_adapter(args: Vec<String>) -> i32 {
    super::adapter_exit("codex", run(args).await)
}

/// What `wujie run` checks before it creates a run (see [`crate::preflight`]): Codex's
/// executable, which it returns, and the arguments.
pub fn preflight(args: &[String]) -> Result<PathBuf, BuiltinError> {
    let program = CODEX.locate_from_env()?;
    launch_args(args, Some(""))?;
    Ok(program)
}

async fn run(args: Vec<String>) -> Result<i32, BuiltinError> {
    let program = preflight(&args)?;
    let env = |name| std::env::var(name).ok();
    let context = issue_context(CODEX.name).await;
    let launch = launch_args(&args, context.as_deref())?;
    let sessions =
        codex_home(env("CODEX_HOME").as_deref(), env("HOME").as_deref()).join("sessions");
    let find = RolloutFinder {
        resumed: resumed_thread(&args).and_then(|id| rollout_of(&sessions, id)),
        earlier: file_sizes(&sessions),
        sessions,
        switch_check: Every::new(SWITCH_CHECK),
        followed: HashSet::new(),
    };
    let looked_in = find.sessions.display().to_string();
    run_with_log(
        &CODEX,
        &program,
        &launch,
        looked_in,
        find,
        LogReader::new(CodexMapper::default()),
    )
    .await
}

/// Finds this run's rollout log: the resumed thread's before Codex starts, else the one Codex
/// holds open, which is another once the user starts or resumes a thread in the UI (`/new`,
/// `/resume`); knows how large each log was before Codex started.
struct RolloutFinder {
    sessions: PathBuf,
    resumed: Option<PathBuf>,
    earlier: HashMap<PathBuf, u64>,
    /// Finding the rollouts Codex holds open walks every process: not on every poll.
    switch_check: Every,
    /// The rollouts read so far: one still held open after a switch is not switched back to.
    followed: HashSet<PathBuf>,
}

impl FindLog for RolloutFinder {
    fn find(&mut self, agent_pid: Option<u32>) -> Option<PathBuf> {
        match agent_pid {
            None => self.resumed.clone(),
            Some(pid) => rollout_held_by(pid, &self.sessions),
        }
    }

    fn earlier_bytes(&self, path: &Path) -> u64 {
        self.earlier.get(path).copied().unwrap_or(0)
    }

    fn switched(&mut self, agent_pid: Option<u32>, current: &Path) -> Option<PathBuf> {
        if !self.switch_check.due() {
            return None;
        }
        self.followed.insert(current.to_path_buf());
        // Codex may hold none open between writes: only one not read yet is a switch.
        rollouts_held_by(agent_pid?, &self.sessions)
            .into_iter()
            .find(|held| !self.followed.contains(held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::testing::{self, messages};

    /// See tests/fixtures/README.md: Codex 0.171.0 running `echo hello` and answering `done`.
    const FIXTURE: &[u8] = include_bytes!("../tests/fixtures/codex_echo_hello.jsonl");
    const SESSION: &str = "01a230e3-1954-7630-ad28-2d8826084e8d";

    fn map_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<Event> {
        testing::map_chunks(CodexMapper::default(), chunks)
    }

    fn summary(events: &[Event]) -> Vec<(MessageKind, String)> {
        testing::summary(events, testing::tool_name)
    }

    #[test]
    fn recorded_rollout_maps_to_our_events() {
        let out = map_chunks([FIXTURE]);
        assert_eq!(
            out.first(),
            Some(&Event::Session {
                session_id: SESSION.to_owned()
            })
        );
        assert_eq!(
            summary(&out),
            [
                (
                    MessageKind::UserInput,
                    "Run the shell command echo hello".to_owned()
                ),
                (MessageKind::Text, "I will run it.".to_owned()),
                (
                    MessageKind::ToolUse,
                    r#"exec_command {"cmd":"echo hello"}"#.to_owned()
                ),
                (MessageKind::ToolResult, "exec_command".to_owned()),
                (MessageKind::Thinking, "It worked.".to_owned()),
                (MessageKind::Final, "done".to_owned()),
            ]
        );
        let result = &messages(&out)[3];
        assert!(
            result.output.as_deref().unwrap().contains("hello"),
            "{result:?}"
        );
        let usage: Vec<(u64, u64, String)> = testing::usages(&out)
            .into_iter()
            .map(|u| (u.input_tokens, u.output_tokens, u.model))
            .collect();
        let mock = |i, o| (i, o, "mock-model".to_owned());
        assert_eq!(usage, [mock(11, 3), mock(20, 2)]);
        let keys: HashSet<String> = messages(&out).into_iter().map(|m| m.source_key).collect();
        assert_eq!(keys.len(), 6);
        assert!(keys.contains(&format!("session:{SESSION}:call:call_4:use")));
    }

    #[test]
    fn every_event_survives_our_own_protocol_parser() {
        testing::assert_events_survive_the_protocol_parser(map_chunks([FIXTURE]));
    }

    #[test]
    fn any_chunking_and_garbage_give_the_same_events() {
        let whole = testing::assert_chunking_changes_nothing(FIXTURE, &[1, 13, 4096], map_chunks);
        let mut noisy = b"garbage\n{\"type\":\"new_kind\",\"payload\":{}}\n{\"type\":\"response_item\",\"payload\":3}\n".to_vec();
        noisy.extend_from_slice(FIXTURE);
        assert_eq!(map_chunks([&noisy[..]]), whole);
    }

    #[test]
    fn a_baseline_is_not_reported_again_and_an_unfinished_answer_is_text() {
        let mut reader = LogReader::new(CodexMapper::default());
        drop(reader.feed(FIXTURE));
        // The same lines again (a replay) count nothing twice.
        let again: Vec<Event> = reader
            .feed(FIXTURE)
            .into_iter()
            .filter(|e| matches!(e, Event::Usage(_)))
            .collect();
        assert_eq!(again, []);
        let cut = FIXTURE
            .windows(b"task_complete".len())
            .rposition(|w| w == b"task_complete")
            .unwrap();
        let line_start = FIXTURE[..cut].iter().rposition(|b| *b == b'\n').unwrap() + 1;
        let out = map_chunks([&FIXTURE[..line_start]]);
        assert_eq!(
            summary(&out).last(),
            Some(&(MessageKind::Text, "done".to_owned()))
        );
    }

    #[test]
    fn launches_are_inline_with_the_issue_as_developer_instructions() {
        let s = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert_eq!(
            launch_args(&s(&["resume", "abc"]), None).unwrap(),
            s(&["--no-alt-screen", "resume", "abc"])
        );
        assert_eq!(
            launch_args(&s(&["--no-alt-screen"]), Some("say \"hi\"\nnow")).unwrap(),
            s(&[
                "-c",
                "developer_instructions=\"say \\\"hi\\\"\\nnow\"",
                "--no-alt-screen"
            ])
        );
        let error = launch_args(&s(&["-c", "developer_instructions=x"]), Some("")).unwrap_err();
        assert!(
            error.to_string().contains("developer_instructions"),
            "{error}"
        );
        assert_eq!(
            resumed_thread(&s(&["resume", "--yolo", "abc"])),
            Some("abc")
        );
        assert_eq!(resumed_thread(&s(&["--model", "m"])), None);
    }

    #[test]
    fn the_log_held_open_by_our_child_is_found() {
        let sessions = tempfile::tempdir().unwrap();
        let day = sessions.path().join("2026/12/01");
        std::fs::create_dir_all(&day).unwrap();
        let log = day.join("rollout-2026-12-01T09-15-19-abc.jsonl");
        std::fs::write(&log, "").unwrap();
        assert_eq!(rollout_of(sessions.path(), "abc"), Some(log.clone()));
        assert_eq!(rollout_of(sessions.path(), "zzz"), None);
        assert_eq!(rollout_held_by(std::process::id(), sessions.path()), None);
        // A child that holds the log open, as Codex does while it runs.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("exec 3>>\"$0\"; read _")
            .arg(&log)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let found = (0..200).find_map(|_| {
            rollout_held_by(child.id(), sessions.path()).or_else(|| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                None
            })
        });
        assert_eq!(found, Some(log));
        drop(child.stdin.take());
        child.wait().unwrap();
    }
}
