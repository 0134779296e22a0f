//! The built-in `pi` provider: runs `pi --mode json <user args>` and turns pi's JSONL events
//! into our NDJSON events.
//!
//! What is read from pi (pi's format evolves, so anything else is skipped, never fatal):
//!
//! | pi line | our events |
//! |---|---|
//! | `session` header `{id}` | `session` |
//! | `message_end` of a `user` message | `user_input` |
//! | `message_end` of an `assistant` message | `thinking` per thinking block, `text` per text block (the text of a message that ends the agent's work is held back, see below), `error` for an error stop, then `usage` |
//! | `tool_execution_start` `{toolCallId, toolName, args}` | `tool_use` |
//! | `tool_execution_end` `{toolCallId, toolName, result}` | `tool_result` (the result's text) |
//! | `agent_end` | `final`: the held text of the last assistant message |
//!
//! Streaming deltas (`message_update`) are ignored: every event carries a complete block, so a
//! token delta never becomes a comment.
//!
//! Source keys follow the seed's recommended shapes, built from pi's session id and, as the
//! turn id, the assistant message's timestamp (milliseconds, stored in pi's session file):
//! `session:<sid>:user:<ts>`, `session:<sid>:turn:<ts>:text:<block>`, `…:thinking:<block>`,
//! `…:final`, `…:error`, `session:<sid>:turn:<ts>:tool:<tool-call-id>:use` and `…:result`. The
//! same pi output therefore always yields the same keys.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;

use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wujie_protocol::event::{Event, Message, MessageKind, Usage};
use wujie_protocol::lines::{LinePiece, LineSplitter};

use crate::{AgentProgram, BuiltinError, hold_stop_signals, str_field};
use wujie_process::exit_code_of;

/// The `source` of every message the pi provider reports.
pub const SOURCE: &str = "pi";

/// Where the pi executable comes from.
pub const PI: AgentProgram = AgentProgram {
    name: "pi",
    env_var: "WUJIE_PI_BIN",
    install: "npm install -g @mariozechner/pi-coding-agent",
};

/// Longest pi stdout line read. `agent_end` repeats the whole conversation on one line, so the
/// limit is far above any single event; it only stops a runaway process from exhausting memory.
pub const MAX_PI_LINE_BYTES: usize = 256 * 1024 * 1024;

/// What one piece of pi's stdout becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum PiOutput {
    /// An event for our stdout.
    Event(Event),
    /// A stdout line of pi's that is not a JSON object (a banner, a warning, `--help` text): it
    /// belongs on stderr, never among our events.
    Stray(Vec<u8>),
    /// A line longer than [`MAX_PI_LINE_BYTES`] was dropped.
    TooLong,
}

/// Maps pi's `--mode json` stdout to our events, incrementally: any chunking of the same bytes
/// gives the same outputs. Never fails; what it does not understand it skips.
#[derive(Debug)]
pub struct PiMapper {
    lines: LineSplitter,
    /// Apart from the splitter, so each line it hands over can be mapped while it is borrowed.
    state: PiState,
}

/// What the mapping remembers between lines.
#[derive(Debug)]
struct PiState {
    /// pi stdout lines seen, for keys of messages that carry no timestamp.
    line_no: u64,
    session_id: Option<String>,
    /// The assistant message (turn id) each tool call was requested in.
    tool_turns: HashMap<String, String>,
    /// The text of the latest assistant message that stopped without calling a tool: the
    /// reply to the user if the agent ends next (`final`), else ordinary `text`.
    held: Option<HeldText>,
}

#[derive(Debug)]
struct HeldText {
    turn: String,
    /// (content index, text) of each text block.
    blocks: Vec<(usize, String)>,
}

impl Default for PiMapper {
    fn default() -> Self {
        PiMapper::new()
    }
}

impl PiMapper {
    pub fn new() -> PiMapper {
        PiMapper::with_max_line_bytes(MAX_PI_LINE_BYTES)
    }

    pub fn with_max_line_bytes(max_line_bytes: usize) -> PiMapper {
        PiMapper {
            lines: LineSplitter::new(max_line_bytes),
            state: PiState {
                line_no: 0,
                session_id: None,
                tool_turns: HashMap::new(),
                held: None,
            },
        }
    }

    /// The outputs of every line the chunk completes.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<PiOutput> {
        let mut out = Vec::new();
        let state = &mut self.state;
        self.lines.feed(chunk, |piece| state.line(piece, &mut out));
        out
    }

    /// Ends the stream: a last line without `'\n'`, then any held text as ordinary `text` (pi
    /// stopped without saying the agent was done, so it is not known to be the final reply).
    pub fn finish(&mut self) -> Vec<PiOutput> {
        let mut out = Vec::new();
        let state = &mut self.state;
        self.lines.finish(|piece| state.line(piece, &mut out));
        self.state.release_held_as_text(&mut out);
        out
    }
}

impl PiState {
    fn line(&mut self, line: LinePiece<'_>, out: &mut Vec<PiOutput>) {
        self.line_no += 1;
        let bytes = match line {
            LinePiece::TooLong => return out.push(PiOutput::TooLong),
            LinePiece::Line(bytes) => bytes,
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let object = match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(object)) => object,
            _ => return out.push(PiOutput::Stray(bytes.to_vec())),
        };
        match str_field(&object, "type") {
            Some("session") => self.session(&object, out),
            Some("message_end") => {
                let Some(message) = object.get("message").and_then(Value::as_object) else {
                    return;
                };
                match str_field(message, "role") {
                    Some("user") => self.user_message(message, out),
                    Some("assistant") => self.assistant_message(message, out),
                    _ => {}
                }
            }
            Some("tool_execution_start") => self.tool_start(&object, out),
            Some("tool_execution_end") => self.tool_end(&object, out),
            Some("agent_end") => self.agent_end(out),
            _ => {}
        }
    }

    fn session(&mut self, header: &Map<String, Value>, out: &mut Vec<PiOutput>) {
        let Some(id) = str_field(header, "id").filter(|id| !id.trim().is_empty()) else {
            return;
        };
        self.session_id = Some(id.to_owned());
        out.push(PiOutput::Event(Event::Session {
            session_id: id.to_owned(),
        }));
    }

    fn user_message(&mut self, message: &Map<String, Value>, out: &mut Vec<PiOutput>) {
        let content = match message.get("content") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(blocks)) => join_texts(blocks),
            _ => return,
        };
        // A new prompt while the agent keeps running: the held text answered an earlier one
        // but the agent never said it was done with it.
        self.release_held_as_text(out);
        if content.is_empty() {
            return;
        }
        let key = format!("{}:user:{}", self.session_key(), self.message_id(message));
        out.push(content_message(MessageKind::UserInput, content, key));
    }

    fn assistant_message(&mut self, message: &Map<String, Value>, out: &mut Vec<PiOutput>) {
        self.release_held_as_text(out);
        let turn = self.message_id(message);
        let prefix = format!("{}:turn:{turn}", self.session_key());
        let blocks: &[Value] = match message.get("content") {
            Some(Value::Array(blocks)) => blocks,
            _ => &[],
        };
        let mut texts = Vec::new();
        let mut calls_tool = str_field(message, "stopReason") == Some("toolUse");
        for (index, block) in blocks.iter().enumerate() {
            let Some(block) = block.as_object() else {
                continue;
            };
            match str_field(block, "type") {
                Some("thinking") => {
                    if let Some(thinking) = str_field(block, "thinking").filter(|t| !t.is_empty()) {
                        out.push(content_message(
                            MessageKind::Thinking,
                            thinking.to_owned(),
                            format!("{prefix}:thinking:{index}"),
                        ));
                    }
                }
                Some("text") => {
                    if let Some(text) = str_field(block, "text").filter(|t| !t.is_empty()) {
                        texts.push((index, text.to_owned()));
                    }
                }
                Some("toolCall") => {
                    calls_tool = true;
                    if let Some(id) = str_field(block, "id") {
                        self.tool_turns.insert(id.to_owned(), turn.clone());
                    }
                }
                _ => {}
            }
        }
        if !texts.is_empty() {
            let held = HeldText {
                turn: turn.clone(),
                blocks: texts,
            };
            if calls_tool {
                self.push_texts(held, out);
            } else {
                self.held = Some(held);
            }
        }
        if matches!(str_field(message, "stopReason"), Some("error" | "aborted"))
            && let Some(error) = str_field(message, "errorMessage").filter(|e| !e.is_empty())
        {
            out.push(content_message(
                MessageKind::Error,
                error.to_owned(),
                format!("{prefix}:error"),
            ));
        }
        if let Some(usage) = usage_of(message) {
            out.push(PiOutput::Event(Event::Usage(usage)));
        }
    }

    fn tool_start(&mut self, event: &Map<String, Value>, out: &mut Vec<PiOutput>) {
        let Some(call_id) = str_field(event, "toolCallId") else {
            return;
        };
        let input = match event.get("args") {
            Some(Value::Object(args)) => args.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(other) => Map::from_iter([("args".to_owned(), other.clone())]),
        };
        let mut message = bare_message(MessageKind::ToolUse, self.tool_key(call_id, "use"));
        message.tool = Some(tool_name(event));
        message.input = Some(input);
        out.push(PiOutput::Event(Event::Message(message)));
    }

    fn tool_end(&mut self, event: &Map<String, Value>, out: &mut Vec<PiOutput>) {
        let Some(call_id) = str_field(event, "toolCallId") else {
            return;
        };
        let output = match event.get("result") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Object(result)) => match result.get("content") {
                Some(Value::String(text)) => text.clone(),
                Some(Value::Array(blocks)) => join_texts(blocks),
                _ => String::new(),
            },
            _ => String::new(),
        };
        let mut message = bare_message(MessageKind::ToolResult, self.tool_key(call_id, "result"));
        message.tool = Some(tool_name(event));
        message.output = Some(output);
        out.push(PiOutput::Event(Event::Message(message)));
    }

    fn agent_end(&mut self, out: &mut Vec<PiOutput>) {
        let Some(held) = self.held.take() else {
            return;
        };
        let content = held
            .blocks
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join("\n\n");
        let key = format!("{}:turn:{}:final", self.session_key(), held.turn);
        out.push(content_message(MessageKind::Final, content, key));
    }

    fn release_held_as_text(&mut self, out: &mut Vec<PiOutput>) {
        if let Some(held) = self.held.take() {
            self.push_texts(held, out);
        }
    }

    fn push_texts(&self, held: HeldText, out: &mut Vec<PiOutput>) {
        let prefix = format!("{}:turn:{}", self.session_key(), held.turn);
        for (index, text) in held.blocks {
            out.push(content_message(
                MessageKind::Text,
                text,
                format!("{prefix}:text:{index}"),
            ));
        }
    }

    fn session_key(&self) -> String {
        crate::session_key(self.session_id.as_deref())
    }

    /// A message's id within its session: its timestamp, else the model's response id, else
    /// the pi stdout line it ended on (all of them fixed by pi's output, never by this process).
    fn message_id(&self, message: &Map<String, Value>) -> String {
        match message.get("timestamp") {
            Some(Value::Number(ts)) => return ts.to_string(),
            Some(Value::String(ts)) if !ts.is_empty() => return ts.clone(),
            _ => {}
        }
        match str_field(message, "responseId").filter(|id| !id.is_empty()) {
            Some(id) => format!("response-{id}"),
            None => format!("line-{}", self.line_no),
        }
    }

    fn tool_key(&self, call_id: &str, end: &str) -> String {
        let turn = self.tool_turns.get(call_id).map_or("none", String::as_str);
        format!("{}:turn:{turn}:tool:{call_id}:{end}", self.session_key())
    }
}

fn tool_name(event: &Map<String, Value>) -> String {
    str_field(event, "toolName").unwrap_or("unknown").to_owned()
}

/// The text of every text block, one per line; images become a placeholder so the reader
/// knows something was there.
fn join_texts(blocks: &[Value]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|block| match str_field(block, "type") {
            Some("text") => str_field(block, "text").map(str::to_owned),
            Some("image") => Some(format!(
                "[image {}]",
                str_field(block, "mimeType").unwrap_or("")
            )),
            _ => None,
        })
        .collect();
    parts.join("\n")
}

fn bare_message(kind: MessageKind, source_key: String) -> Message {
    super::bare_message(SOURCE, kind, source_key)
}

fn content_message(kind: MessageKind, content: String, source_key: String) -> PiOutput {
    PiOutput::Event(super::content_message(SOURCE, kind, content, source_key))
}

/// The message's token usage; `None` when it has none or every count is zero (pi's
/// `message_start` placeholders, aborted requests).
fn usage_of(message: &Map<String, Value>) -> Option<Usage> {
    let usage = message.get("usage")?.as_object()?;
    let count = |field: &str| super::count_field(usage, field);
    let usage = Usage {
        provider: str_field(message, "provider")
            .unwrap_or("unknown")
            .to_owned(),
        model: str_field(message, "model").unwrap_or("unknown").to_owned(),
        input_tokens: count("input"),
        output_tokens: count("output"),
        cache_read_tokens: count("cacheRead"),
        cache_write_tokens: count("cacheWrite"),
    };
    let counted = usage.input_tokens
        + usage.output_tokens
        + usage.cache_read_tokens
        + usage.cache_write_tokens;
    (counted > 0).then_some(usage)
}

/// Refuse arguments that would change pi's output mode: the adapter reads `--mode json`.
pub fn check_args(args: &[String]) -> Result<(), BuiltinError> {
    match args
        .iter()
        .find(|a| *a == "--mode" || a.starts_with("--mode="))
    {
        Some(arg) => Err(BuiltinError::RejectedArg {
            program: PI.name,
            arg: arg.clone(),
            fixed: "`--mode json`",
        }),
        None => Ok(()),
    }
}

/// `wujie adapter pi [ARGS…]`: run `pi --mode json ARGS…` in the current directory (stderr
/// inherited, stdin empty), print its events as our NDJSON on stdout, and exit with pi's exit
/// code.
/// pi is `$WUJIE_PI_BIN`, else `pi` on `PATH`.
pub async fn run_pi_adapter(args: Vec<String>) -> i32 {
    super::adapter_exit("pi", run(args).await)
}

/// What `wujie run` checks before it creates a run (see [`crate::preflight`]): the
/// arguments, then pi's executable, which it returns.
pub fn preflight(args: &[String]) -> Result<PathBuf, BuiltinError> {
    check_args(args)?;
    PI.locate_from_env()
}

async fn run(args: Vec<String>) -> Result<i32, BuiltinError> {
    let program = preflight(&args)?;
    let mut child = tokio::process::Command::new(&program)
        .args(["--mode", "json"])
        .args(&args)
        // pi in json mode reads piped stdin to its end as more prompt text before it starts.
        // Under `wujie run` our stdin is a pipe carrying the terminal's keystrokes, which never
        // ends, so pi would wait forever: prompts come from its arguments (`-p "…"`, `@file`).
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| BuiltinError::Spawn {
            program: PI.name,
            path: program.clone(),
            source,
        })?;
    // A stop signal reaches pi too (same process group): stay alive to pass on what pi still
    // prints while it winds down, and exit with its code. A second stop escalates to SIGKILL
    // of the whole group, which ends this process as well.
    let _stop_signals = hold_stop_signals();
    let mut forward = Forward::new();
    if let Some(mut stdout) = child.stdout.take() {
        let mut mapper = PiMapper::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdout.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => forward.send(mapper.feed(&buf[..n])).await,
                Err(source) => {
                    // Still wait for pi below, so its exit code is what we report.
                    wujie_process::stderr_line!(
                        "wujie adapter pi: {}",
                        BuiltinError::Read {
                            program: PI.name,
                            source
                        }
                    );
                    break;
                }
            }
        }
        forward.send(mapper.finish()).await;
    }
    let status = child.wait().await.map_err(|source| BuiltinError::Read {
        program: PI.name,
        source,
    })?;
    Ok(exit_code_of(status))
}

/// Writes events to our stdout and stray lines to stderr.
struct Forward {
    stdout: tokio::io::Stdout,
    stderr: tokio::io::Stderr,
    /// Cleared when stdout breaks (the parent is gone); pi's output is still drained so it
    /// never blocks on a full pipe.
    stdout_open: bool,
}

impl Forward {
    fn new() -> Forward {
        Forward {
            stdout: tokio::io::stdout(),
            stderr: tokio::io::stderr(),
            stdout_open: true,
        }
    }

    async fn send(&mut self, outputs: Vec<PiOutput>) {
        let mut events = Vec::new();
        for output in outputs {
            match output {
                PiOutput::Event(event) => events.extend(event.encode_line()),
                PiOutput::Stray(mut line) => {
                    line.push(b'\n');
                    let _ = self.stderr.write_all(&line).await;
                }
                PiOutput::TooLong => {
                    let note = format!(
                        "wujie adapter pi: skipped a pi output line longer than {MAX_PI_LINE_BYTES} bytes\n"
                    );
                    let _ = self.stderr.write_all(note.as_bytes()).await;
                }
            }
        }
        let _ = self.stderr.flush().await;
        if events.is_empty() || !self.stdout_open {
            return;
        }
        let written = async {
            self.stdout.write_all(&events).await?;
            self.stdout.flush().await
        }
        .await;
        if let Err(e) = written {
            self.stdout_open = false;
            wujie_process::stderr_line!(
                "wujie adapter pi: stdout closed ({e}); events are no longer passed on"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::testing;

    /// Recorded from pi 0.73.1 (`pi --provider mock --model mock-model --mode json -p "Run the
    /// shell command echo hello, then say done."`) against `wujie-mockllm` with
    /// `tests/fixtures/pi_echo_hello.script.json`: a text block and a `bash` call of
    /// `echo hello`, then thinking "It worked." and the answer "done" with usage 20/2.
    const FIXTURE: &[u8] = include_bytes!("../tests/fixtures/pi_echo_hello.jsonl");
    const SESSION: &str = "01a22b26-ebca-7331-bf66-007cd1903c9b";

    fn map_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<PiOutput> {
        let mut mapper = PiMapper::new();
        let mut out: Vec<PiOutput> = chunks.into_iter().flat_map(|c| mapper.feed(c)).collect();
        out.extend(mapper.finish());
        out
    }

    fn map_all(bytes: &[u8]) -> Vec<PiOutput> {
        map_chunks([bytes])
    }

    fn events(outputs: &[PiOutput]) -> Vec<Event> {
        outputs
            .iter()
            .filter_map(|o| match o {
                PiOutput::Event(e) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    fn messages(outputs: &[PiOutput]) -> Vec<Message> {
        testing::messages(&events(outputs))
    }

    /// (type, key, content/tool/output) of each message, for compact comparisons.
    fn summary(outputs: &[PiOutput]) -> Vec<(MessageKind, String, String)> {
        messages(outputs)
            .into_iter()
            .map(|m| {
                let what = match m.kind {
                    MessageKind::ToolUse => format!(
                        "{} {}",
                        m.tool.unwrap_or_default(),
                        Value::Object(m.input.unwrap_or_default())
                    ),
                    MessageKind::ToolResult => {
                        format!(
                            "{} {}",
                            m.tool.unwrap_or_default(),
                            m.output.unwrap_or_default()
                        )
                    }
                    _ => m.content.unwrap_or_default(),
                };
                (m.kind, m.source_key, what)
            })
            .collect()
    }

    #[test]
    fn recorded_run_maps_to_our_events() {
        let out = map_all(FIXTURE);
        let all = events(&out);
        assert_eq!(
            all.first(),
            Some(&Event::Session {
                session_id: SESSION.to_owned()
            })
        );
        let s = format!("session:{SESSION}");
        let expected = vec![
            (
                MessageKind::UserInput,
                format!("{s}:user:1796020300762"),
                "Run the shell command echo hello, then say done.".to_owned(),
            ),
            (
                MessageKind::Text,
                format!("{s}:turn:1796020300863:text:0"),
                "I will run it.".to_owned(),
            ),
            (
                MessageKind::ToolUse,
                format!("{s}:turn:1796020300863:tool:call_2:use"),
                r#"bash {"command":"echo hello"}"#.to_owned(),
            ),
            (
                MessageKind::ToolResult,
                format!("{s}:turn:1796020300863:tool:call_2:result"),
                "bash hello\n".to_owned(),
            ),
            (
                MessageKind::Thinking,
                format!("{s}:turn:1796020300924:thinking:0"),
                "It worked.".to_owned(),
            ),
            (
                MessageKind::Final,
                format!("{s}:turn:1796020300924:final"),
                "done".to_owned(),
            ),
        ];
        assert_eq!(summary(&out), expected);

        let usage = testing::usages(&all);
        let expect_usage = |input, output| Usage {
            provider: "mock".to_owned(),
            model: "mock-model".to_owned(),
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        };
        assert_eq!(usage, vec![expect_usage(10, 1), expect_usage(20, 2)]);
        assert!(
            !out.iter().any(|o| !matches!(o, PiOutput::Event(_))),
            "a clean pi run has no stray lines"
        );
    }

    #[test]
    fn every_event_survives_our_own_protocol_parser() {
        testing::assert_events_survive_the_protocol_parser(events(&map_all(FIXTURE)));
    }

    #[test]
    fn keys_are_unique_and_the_same_on_every_replay() {
        let first = summary(&map_all(FIXTURE));
        let keys: std::collections::HashSet<&String> = first.iter().map(|(_, k, _)| k).collect();
        assert_eq!(keys.len(), first.len(), "duplicate keys: {first:?}");
        assert_eq!(summary(&map_all(FIXTURE)), first);
    }

    #[test]
    fn any_chunking_gives_the_same_outputs() {
        let whole = testing::assert_chunking_changes_nothing(
            FIXTURE,
            &[1, 2, 3, 7, 64, 1000, 4096],
            map_chunks,
        );
        for cut in (0..FIXTURE.len()).step_by(101) {
            let (a, b) = FIXTURE.split_at(cut);
            assert_eq!(map_chunks([a, b]), whole, "cut at {cut}");
        }
    }

    #[test]
    fn garbage_and_unknown_lines_are_skipped_or_sent_aside() {
        let garbage: &[&[u8]] = &[
            b"Warning: something pi printed",
            b"[1,2,3]",
            b"42",
            b"\"just a string\"",
            b"{\"type\":\"future_event\",\"payload\":{}}",
            b"{\"no_type\":true}",
            b"{\"type\":7}",
            b"{\"type\":\"message_end\"}",
            b"{\"type\":\"message_end\",\"message\":[]}",
            b"{\"type\":\"message_end\",\"message\":{\"role\":\"narrator\",\"content\":\"x\"}}",
            b"{\"type\":\"message_end\",\"message\":{\"role\":\"toolResult\",\"content\":[]}}",
            b"{\"type\":\"message_end\",\"message\":{\"role\":\"user\",\"content\":5}}",
            b"{\"type\":\"tool_execution_start\",\"toolName\":\"bash\"}",
            b"{\"type\":\"tool_execution_end\",\"toolCallId\":7}",
            b"{\"type\":\"session\",\"id\":\"\"}",
            b"{\"type\":\"session\",\"id\":null}",
            b"{\"type\":\"agent_end\",\"messages\":\"oops\"}",
            b"\xff\xfe not utf-8",
            b"{ truncated",
            b"   ",
        ];
        let mut noisy = Vec::new();
        for line in FIXTURE.split(|&b| b == b'\n') {
            for g in garbage {
                noisy.extend_from_slice(g);
                noisy.push(b'\n');
            }
            noisy.extend_from_slice(line);
            noisy.push(b'\n');
        }
        let clean = map_all(FIXTURE);
        let out = map_all(&noisy);
        assert_eq!(events(&out), events(&clean));
        let strays: Vec<&Vec<u8>> = out
            .iter()
            .filter_map(|o| match o {
                PiOutput::Stray(line) => Some(line),
                _ => None,
            })
            .collect();
        let lines = FIXTURE.split(|&b| b == b'\n').count();
        // Non-objects go to stderr: the warning, the array, the number, the string, the
        // invalid UTF-8 and the truncated object, before every fixture line.
        assert_eq!(strays.len(), 6 * lines);
        assert!(strays.contains(&&b"Warning: something pi printed".to_vec()));
        assert_eq!(map_chunks(noisy.chunks(13)), out);
    }

    #[test]
    fn a_reply_followed_by_more_work_is_text_and_only_agent_end_makes_it_final() {
        let lines = [
            r#"{"type":"session","id":"s1"}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"first"}],"stopReason":"stop","timestamp":1}}"#,
            r#"{"type":"message_end","message":{"role":"user","content":"follow-up","timestamp":2}}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"stopReason":"stop","timestamp":3}}"#,
            r#"{"type":"agent_end","messages":[]}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"unfinished"}],"stopReason":"stop","timestamp":4}}"#,
        ];
        let out = map_all(lines.join("\n").as_bytes());
        let got: Vec<(MessageKind, String, String)> = summary(&out);
        let want = [
            (MessageKind::Text, "session:s1:turn:1:text:0", "first"),
            (MessageKind::UserInput, "session:s1:user:2", "follow-up"),
            (MessageKind::Final, "session:s1:turn:3:final", "a\n\nb"),
            // No agent_end after it: pi stopped early, so it is not claimed as the final reply.
            (MessageKind::Text, "session:s1:turn:4:text:0", "unfinished"),
        ]
        .map(|(k, key, c)| (k, key.to_owned(), c.to_owned()))
        .to_vec();
        assert_eq!(got, want);
    }

    #[test]
    fn error_stops_images_and_odd_args_are_mapped() {
        let lines = [
            r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"rate limited","responseId":"r9","usage":{"input":3,"output":0,"cacheRead":5,"cacheWrite":1.0}}}"#,
            r#"{"type":"tool_execution_start","toolCallId":"c1","toolName":"read","args":"raw"}"#,
            r#"{"type":"tool_execution_end","toolCallId":"c1","result":{"content":[{"type":"text","text":"a"},{"type":"image","mimeType":"image/png","data":"..."}]},"isError":true}"#,
        ];
        let out = map_all(lines.join("\n").as_bytes());
        assert_eq!(
            summary(&out),
            [
                (
                    MessageKind::Error,
                    "session:unknown:turn:response-r9:error",
                    "rate limited"
                ),
                (
                    MessageKind::ToolUse,
                    "session:unknown:turn:none:tool:c1:use",
                    r#"read {"args":"raw"}"#
                ),
                (
                    MessageKind::ToolResult,
                    "session:unknown:turn:none:tool:c1:result",
                    "unknown a\n[image image/png]"
                ),
            ]
            .map(|(k, key, c)| (k, key.to_owned(), c.to_owned()))
            .to_vec()
        );
        assert!(events(&out).contains(&Event::Usage(Usage {
            provider: "unknown".to_owned(),
            model: "unknown".to_owned(),
            input_tokens: 3,
            output_tokens: 0,
            cache_read_tokens: 5,
            cache_write_tokens: 1,
        })));
    }

    #[test]
    fn overlong_lines_are_dropped_and_reading_goes_on() {
        let mut mapper = PiMapper::with_max_line_bytes(64);
        let mut text = format!("{{\"type\":\"session\",\"id\":\"{}\"}}\n", "x".repeat(100));
        text.push_str("{\"type\":\"session\",\"id\":\"ok\"}\n");
        let mut out = mapper.feed(text.as_bytes());
        out.extend(mapper.finish());
        assert_eq!(
            out,
            vec![
                PiOutput::TooLong,
                PiOutput::Event(Event::Session {
                    session_id: "ok".to_owned()
                })
            ]
        );
    }

    #[test]
    fn output_mode_arguments_are_refused() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_args(&args(&["-p", "fix it", "--model", "x"])).is_ok());
        for bad in [&["--mode", "rpc"][..], &["-p", "x", "--mode=text"]] {
            let err = check_args(&args(bad)).unwrap_err().to_string();
            assert!(
                err.contains("--mode") && err.contains("--mode json"),
                "{err}"
            );
        }
    }
}
