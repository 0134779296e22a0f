//! `wujie local-run provider check DIR [-- ARGS]`: the specification's plugin checklist
//! (开发 checklist) as a command. The manifest and command are validated, then the adapter is
//! run for real — in a scratch profile whose embedded server holds an issue, a run and a
//! discussion — with the environment a run (and, for v2, a discussion) gets, and every rule is
//! reported as passed, failed (with the fix) or skipped (with why).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use wujie_builtins::Builtin;
use wujie_client::Client;
use wujie_host::sleep_until_opt;
use wujie_process::exit_code_of;
use wujie_protocol::api::{CreateDiscussion, CreateIssue, CreateRun, IngestBatch, IngestOutcome};
use wujie_protocol::control::HandoffDecision;
use wujie_protocol::event::{DecodedLine, Event, HandoffMode, MessageKind, parse_line};
use wujie_protocol::manifest::{Manifest, ProtocolVersion};
use wujie_term::TermSize;

use crate::connection::Connection;
use crate::error::LocalRunError;
use crate::events::items_for_line;
use crate::profile::Roots;
use crate::registry::{Origin, Provider, load_manifest};
use crate::session::{Binding, adapter_env};
use crate::supervisor::{Adapter, STOP_GRACE, SpawnSpec};

/// The usage fields the specification lists; anything else is dropped by Wujie.
const USAGE_FIELDS: [&str; 6] = [
    "provider",
    "model",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
];
/// An interactive adapter waits for its user forever; once it answered (a `final`) and has
/// said nothing for this long, it is stopped.
const SETTLED_AFTER_FINAL: Duration = Duration::from_secs(2);
/// How long an adapter that sent `handoff_ready` is watched before it gets the decision: it
/// must not act on its plan meanwhile.
const HANDOFF_WATCH: Duration = Duration::from_millis(500);
/// Between a line typed into an interactive adapter and its Enter.
const TYPING_PAUSE: Duration = Duration::from_millis(300);
/// How long an interactive adapter's screen stays unchanged before a line is typed into it.
const STILL_SCREEN: Duration = Duration::from_secs(1);
/// How much of an interactive adapter's terminal output is kept to explain a failure.
const SCREEN_TAIL_BYTES: usize = 4096;
/// The size of the terminal an interactive adapter is given.
const PTY_SIZE: TermSize = TermSize {
    cols: 100,
    rows: 30,
};

pub struct CheckOptions<'a> {
    pub dir: PathBuf,
    /// Passed to the adapter, as after `wujie run ISSUE -- NAME`.
    pub args: Vec<String>,
    /// Lines the user types, in order, into each start of the adapter (its stdin, or its
    /// terminal for an interactive one).
    pub input: Vec<String>,
    pub builtins: &'a [Builtin],
    /// The longest one start of the adapter may take.
    pub timeout: Duration,
    pub current_exe: PathBuf,
    pub path_var: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    Skipped,
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleResult {
    /// Stable id of the rule (`manifest`, `stdout_json`, …).
    pub rule: &'static str,
    /// What the rule asks, in one line.
    pub title: &'static str,
    pub verdict: Verdict,
    /// What was seen.
    pub detail: String,
    /// What to do about a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub dir: String,
    pub provider: Option<String>,
    pub protocol: Option<String>,
    pub passed: bool,
    pub rules: Vec<RuleResult>,
}

/// The rules, in the order they are reported.
struct Rule {
    id: &'static str,
    title: &'static str,
    fix: &'static str,
}

const MANIFEST: Rule = Rule {
    id: "manifest",
    title: "provider.json exists, is valid JSON, schema_version 1, a supported protocol",
    fix: "fix provider.json as the error says (schema_version 1; protocol wujie-localrun-provider.v1 for Issue-first, .v2 to support discussions)",
};
const NAME: Rule = Rule {
    id: "name",
    title: "the name does not take a built-in provider's",
    fix: "choose another `name`: built-in providers cannot be overridden",
};
const COMMAND: Rule = Rule {
    id: "command",
    title: "command resolves to an executable file",
    fix: "use a path relative to the manifest's directory (./adapter) and make it executable (chmod +x)",
};
const RUN_EXIT: Rule = Rule {
    id: "run_exit",
    title: "in a run's environment the adapter works and exits 0",
    fix: "read the run context from WUJIE_RUN_ID / WUJIE_ISSUE_ID / WUJIE_SERVER_URL / WUJIE_TOKEN and exit 0 when the work succeeded (its stderr is above)",
};
const STDOUT_JSON: Rule = Rule {
    id: "stdout_json",
    title: "stdout carries only single-line JSON events",
    fix: "write logs, debug output and the agent's own output to stderr; stdout carries one JSON event per line",
};
const EVENT_FIELDS: Rule = Rule {
    id: "event_fields",
    title: "every event has its required fields with the right types (source, source_key, content; tool_use.input an object, tool_result.output a string)",
    fix: "give every message event `type`, `source`, `source_key` and its content fields as the protocol table says",
};
const USAGE: Rule = Rule {
    id: "usage_fields",
    title: "usage uses only the supported fields",
    fix: "report usage as {\"usage\": {provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens}}",
};
const UNIQUE_KEYS: Rule = Rule {
    id: "unique_keys",
    title: "each source_key names one event within a run",
    fix: "build source_key from the upstream ids (session, turn, tool call, line), so two events never share one",
};
const REPLAY: Rule = Rule {
    id: "stable_keys",
    title: "a replay gives the same source_keys and stores no new rows",
    fix: "derive source_key from upstream event ids, never from the time, random numbers or a counter of this process",
};
const DISCUSSION: Rule = Rule {
    id: "v2_discussion",
    title: "v2: starts with only WUJIE_LOCALRUN_SESSION_ID (no run or issue yet)",
    fix: "in a discussion WUJIE_RUN_ID and WUJIE_ISSUE_ID are not set: start from WUJIE_LOCALRUN_SESSION_ID alone",
};
const SESSION: Rule = Rule {
    id: "v2_session_event",
    title: "v2: emits a `session` event with the native session id",
    fix: "once the native session is known, print {\"event\":\"session\",\"session_id\":\"<native id>\"}",
};
const HANDOFF: Rule = Rule {
    id: "native_plan_handoff",
    title: "native_plan_handoff: waits for the handoff_decision and does nothing on accepted:false",
    fix: "after handoff_ready, wait for the \\x1eWUJIE handoff_decision frame on stdin; on accepted:false do not execute the plan, and exit",
};
const FAILURE_EXIT: Rule = Rule {
    id: "failure_exit",
    title: "a failure exits non-zero (started with neither a run nor a discussion)",
    fix: "exit with a non-zero status when the adapter cannot work, e.g. when WUJIE_RUN_ID and WUJIE_LOCALRUN_SESSION_ID are both missing",
};

struct Report {
    dir: PathBuf,
    manifest: Option<Manifest>,
    rules: Vec<RuleResult>,
}

impl Report {
    fn add(&mut self, rule: &Rule, verdict: Verdict, detail: impl Into<String>) {
        self.rules.push(RuleResult {
            rule: rule.id,
            title: rule.title,
            verdict,
            detail: detail.into(),
            fix: (verdict == Verdict::Fail).then_some(rule.fix),
        });
    }

    fn judge(&mut self, rule: &Rule, failure: Option<String>, passed: impl Into<String>) {
        match failure {
            Some(why) => self.add(rule, Verdict::Fail, why),
            None => self.add(rule, Verdict::Pass, passed),
        }
    }

    fn skip_all(&mut self, rules: &[&Rule], why: &str) {
        for rule in rules {
            self.add(rule, Verdict::Skipped, why);
        }
    }

    /// `rule` failed with `error`, and the rules after it, which cannot be judged without it,
    /// are skipped because of `why`; the finished report.
    fn fail_and_skip_the_rest(
        mut self,
        rule: &Rule,
        error: String,
        rest: &[&[&Rule]],
        why: &str,
    ) -> CheckReport {
        self.add(rule, Verdict::Fail, error);
        for rules in rest {
            self.skip_all(rules, why);
        }
        self.finish()
    }

    fn finish(self) -> CheckReport {
        CheckReport {
            dir: self.dir.display().to_string(),
            provider: self.manifest.as_ref().map(|m| m.name.clone()),
            protocol: self
                .manifest
                .as_ref()
                .map(|m| m.protocol.as_str().to_owned()),
            passed: self.rules.iter().all(|r| r.verdict != Verdict::Fail),
            rules: self.rules,
        }
    }
}

/// The rules that only a v2 plugin is held to.
const V2_RULES: [&Rule; 3] = [&DISCUSSION, &SESSION, &HANDOFF];

const RUN_RULES: [&Rule; 7] = [
    &RUN_EXIT,
    &STDOUT_JSON,
    &EVENT_FIELDS,
    &USAGE,
    &UNIQUE_KEYS,
    &REPLAY,
    &FAILURE_EXIT,
];

/// Runs every rule on the plugin in `options.dir`.
pub async fn check(options: &CheckOptions<'_>) -> Result<CheckReport, LocalRunError> {
    let manifest_path = options.dir.join("provider.json");
    let mut report = Report {
        dir: options.dir.clone(),
        manifest: None,
        rules: Vec::new(),
    };
    let manifest = match load_manifest(&manifest_path) {
        Ok(m) => m,
        Err(error) => {
            return Ok(report.fail_and_skip_the_rest(
                &MANIFEST,
                error.to_string(),
                &[&[&NAME, &COMMAND], &RUN_RULES, &V2_RULES],
                "the manifest is not valid",
            ));
        }
    };
    report.add(
        &MANIFEST,
        Verdict::Pass,
        format!(
            "{} (schema_version {}, {})",
            manifest_path.display(),
            manifest.schema_version,
            manifest.protocol.as_str()
        ),
    );
    report.manifest = Some(manifest.clone());
    let taken = options.builtins.iter().any(|b| b.name == manifest.name);
    report.judge(
        &NAME,
        taken.then(|| format!("{:?} is a built-in provider", manifest.name)),
        format!("{:?}", manifest.name),
    );
    let provider = Provider {
        name: manifest.name.clone(),
        origin: Origin::Config,
        manifest: manifest.clone(),
        manifest_path: Some(manifest_path),
        enabled: true,
    };
    let command = match provider.adapter_command(&options.current_exe, options.path_var.as_deref())
    {
        Ok(c) => c,
        Err(error) => {
            return Ok(report.fail_and_skip_the_rest(
                &COMMAND,
                error.to_string(),
                &[&RUN_RULES, &V2_RULES],
                "the command cannot be started",
            ));
        }
    };
    report.add(
        &COMMAND,
        Verdict::Pass,
        command.program.display().to_string(),
    );

    let scratch = Scratch::start(&provider).await?;
    let result = run_rules(options, &provider, &command.program, &scratch, &mut report).await;
    scratch.close().await;
    result?;
    Ok(report.finish())
}

/// A throw-away profile with its embedded server, an issue, and a run and a discussion on it.
struct Scratch {
    root: PathBuf,
    connection: Connection,
    workspace_id: String,
    issue_id: String,
    run_id: String,
    run_token: String,
    discussion_id: String,
    discussion_token: String,
}

impl Scratch {
    async fn start(provider: &Provider) -> Result<Scratch, LocalRunError> {
        let root =
            std::env::temp_dir().join(format!("wujie-provider-check-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&root).map_err(|e| LocalRunError::io(&root, e))?;
        let home = root.join("home");
        let profile =
            Roots::from_vars(|k| (k == "WUJIE_HOME").then(|| home.clone()))?.profile("default")?;
        let connection = Connection::embedded(&profile).await?;
        let failed = |what: &str, source: wujie_client::ClientError| LocalRunError::CheckServer {
            doing: format!("could not {what} on the scratch server"),
            source,
        };
        let client: &Client = &connection.client;
        let workspace = client
            .workspace()
            .await
            .map_err(|e| failed("read the workspace", e))?;
        let issue = client
            .create_issue(&CreateIssue {
                title: "Provider check".to_owned(),
                description: "An issue of `wujie local-run provider check`.".to_owned(),
                discussion_id: None,
            })
            .await
            .map_err(|e| failed("create an issue", e))?;
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let run = client
            .create_run(
                &issue.id,
                &CreateRun {
                    provider: provider.name.clone(),
                    cwd: cwd.clone(),
                    job: None,
                },
            )
            .await
            .map_err(|e| failed("create a run", e))?;
        let discussion = client
            .create_discussion(&CreateDiscussion {
                provider: provider.name.clone(),
                cwd,
            })
            .await
            .map_err(|e| failed("create a discussion", e))?;
        Ok(Scratch {
            root,
            workspace_id: workspace.id,
            issue_id: issue.id,
            run_id: run.run.id,
            run_token: run.token,
            discussion_id: discussion.discussion.id,
            discussion_token: discussion.token,
            connection,
        })
    }

    async fn close(self) {
        self.connection.close().await;
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// What one start of the adapter did.
struct Capture {
    /// Every stdout line, without its newline.
    lines: Vec<Vec<u8>>,
    /// `None`: stopped while still running (see `answered`).
    exit: Option<i32>,
    /// An interactive adapter stopped once it had answered and gone quiet, rather than at the
    /// time limit.
    answered: bool,
    /// The end of what an interactive adapter wrote on its terminal (its stderr is there).
    screen_tail: String,
    /// Set when the adapter sent `handoff_ready`: (message events between the request and the
    /// decision, message events after it).
    handoff: Option<(Vec<String>, Vec<String>)>,
    /// Whether the `accepted:false` decision was sent (the adapter may have ended before).
    decided: bool,
}

/// Lines as events; the first problem of each kind is reported.
struct Parsed {
    events: Vec<(u64, Event)>,
    not_json: Option<String>,
    bad_event: Option<String>,
    bad_usage: Option<String>,
    duplicate_key: Option<String>,
}

fn preview(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut short: String = text.chars().take(80).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    format!("{short:?}")
}

/// A message's key must name one event: the first key used again for another is reported.
fn note_key(
    parsed: &mut Parsed,
    keys: &mut HashMap<(String, String), Event>,
    n: u64,
    event: &Event,
) {
    let Event::Message(m) = event else {
        return;
    };
    let key = (m.source.clone(), m.source_key.clone());
    if let Some(earlier) = keys.get(&key)
        && earlier != event
    {
        parsed.duplicate_key.get_or_insert(format!(
            "stdout line {n}: source_key {:?} (source {:?}) was already used for another event",
            m.source_key, m.source
        ));
    }
    keys.insert(key, event.clone());
}

fn parse(capture: &Capture) -> Parsed {
    let mut parsed = Parsed {
        events: Vec::new(),
        not_json: None,
        bad_event: None,
        bad_usage: None,
        duplicate_key: None,
    };
    let mut keys: HashMap<(String, String), Event> = HashMap::new();
    for (i, line) in capture.lines.iter().enumerate() {
        let n = i as u64 + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                parsed.not_json.get_or_insert(format!(
                    "stdout line {n} is not a JSON object: {}",
                    preview(line)
                ));
                continue;
            }
        };
        if let Some(Value::Object(usage)) = value.get("usage") {
            let extra: Vec<&String> = usage
                .keys()
                .filter(|k| !USAGE_FIELDS.contains(&k.as_str()))
                .collect();
            if !extra.is_empty() {
                parsed.bad_usage.get_or_insert(format!(
                    "stdout line {n}: usage has unsupported fields {extra:?} (they are dropped)"
                ));
            }
        }
        match parse_line(line, n) {
            Ok(events) => {
                for event in events {
                    note_key(&mut parsed, &mut keys, n, &event);
                    parsed.events.push((n, event));
                }
            }
            Err(error) => {
                let problem = error.to_string();
                if parsed.bad_usage.is_none() && problem.contains("usage") {
                    parsed.bad_usage = Some(format!("stdout line {n}: {problem}"));
                } else {
                    parsed
                        .bad_event
                        .get_or_insert(format!("stdout line {n}: {problem}"));
                }
            }
        }
    }
    parsed
}

/// The message events without their keys: what a replay must repeat.
fn said(parsed: &Parsed) -> Vec<Value> {
    parsed
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Message(m) => {
                let mut message = m.clone();
                message.source_key.clear();
                serde_json::to_value(message).ok()
            }
            _ => None,
        })
        .collect()
}

fn keys(parsed: &Parsed) -> Vec<(String, String)> {
    parsed
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Message(m) => Some((m.source.clone(), m.source_key.clone())),
            _ => None,
        })
        .collect()
}

fn sessions(parsed: &Parsed) -> Vec<String> {
    parsed
        .events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Session { session_id } => Some(session_id.clone()),
            _ => None,
        })
        .collect()
}

/// `detail`, and what the adapter last showed on its terminal when it had one.
fn with_screen(detail: String, capture: &Capture) -> String {
    if capture.screen_tail.is_empty() {
        detail
    } else {
        format!("{detail}; its terminal showed: {}", capture.screen_tail)
    }
}

fn exit_text(capture: &Capture, timeout: Duration) -> String {
    match capture.exit {
        Some(code) => format!("exit {code}"),
        None if capture.answered => "answered, then waited for its user (stopped)".to_owned(),
        None => format!("still running after {} s (stopped)", timeout.as_secs()),
    }
}

/// Starts the adapter under check the same way each time, bound to what it is given.
struct Starter<'a> {
    options: &'a CheckOptions<'a>,
    provider: &'a Provider,
    program: &'a Path,
    scratch: &'a Scratch,
}

impl Starter<'_> {
    async fn start(
        &self,
        binding: Binding,
        token: &str,
        handoff: bool,
    ) -> Result<Capture, LocalRunError> {
        let env = adapter_env(
            &binding,
            &self.scratch.workspace_id,
            &self.scratch.connection.client,
            token,
            self.provider,
            &self.provider.name,
            &self.options.args,
        );
        let spec = SpawnSpec {
            program: self.program.to_path_buf(),
            args: self.options.args.clone(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            env,
        };
        let interactive = self.provider.manifest.capabilities.interactive_pty;
        let options = self.options;
        capture(spec, interactive, &options.input, options.timeout, handoff).await
    }

    fn run_binding(&self) -> Binding {
        Binding {
            run_id: Some(self.scratch.run_id.clone()),
            issue_id: Some(self.scratch.issue_id.clone()),
            session_id: None,
        }
    }
}

async fn run_rules(
    options: &CheckOptions<'_>,
    provider: &Provider,
    program: &Path,
    scratch: &Scratch,
    report: &mut Report,
) -> Result<(), LocalRunError> {
    let starter = Starter {
        options,
        provider,
        program,
        scratch,
    };
    let token = &scratch.run_token;
    let first = starter.start(starter.run_binding(), token, false).await?;
    let parsed = parse(&first);
    judge_run(report, &starter, &first, &parsed);
    // The replay: the same environment again; what the first run printed went to the scratch
    // run first, so the server says whether the second one adds anything.
    let second = starter.start(starter.run_binding(), token, false).await?;
    let replayed = parse(&second);
    replay_rule(report, scratch, &first, &parsed, &second, &replayed).await?;
    let probe = starter
        .start(Binding::default(), "wujie-provider-check-disabled", false)
        .await?;
    judge_probe(report, &probe, options.timeout);
    if provider.manifest.protocol != ProtocolVersion::V2 {
        report.skip_all(&V2_RULES, "v1 is Issue-first: no discussions");
        return Ok(());
    }
    let binding = Binding {
        session_id: Some(scratch.discussion_id.clone()),
        ..Binding::default()
    };
    let handoff = provider.manifest.capabilities.native_plan_handoff;
    let discussion = starter
        .start(binding, &scratch.discussion_token, handoff)
        .await?;
    judge_discussion(report, &starter, &discussion);
    if handoff {
        judge_handoff(report, &discussion, options.timeout);
    } else {
        let why = "native_plan_handoff is not declared";
        report.add(&HANDOFF, Verdict::Skipped, why);
    }
    Ok(())
}

/// The first run: its exit, its stdout, its events, usage and keys.
fn judge_run(report: &mut Report, starter: &Starter<'_>, first: &Capture, parsed: &Parsed) {
    let (manifest, timeout) = (&starter.provider.manifest, starter.options.timeout);
    let run_failed = match first.exit {
        Some(0) => None,
        None if manifest.capabilities.interactive_pty => None,
        _ => Some(with_screen(exit_text(first, timeout), first)),
    };
    let lines = first.lines.len();
    let exit = exit_text(first, timeout);
    report.judge(
        &RUN_EXIT,
        run_failed,
        format!("{exit}, {lines} stdout lines"),
    );
    let count =
        |wanted: fn(&Event) -> bool| parsed.events.iter().filter(|(_, e)| wanted(e)).count();
    let messages = count(|e| matches!(e, Event::Message(_)));
    let summary = format!("{lines} lines, all JSON");
    report.judge(&STDOUT_JSON, parsed.not_json.clone(), summary);
    let summary = format!("{messages} message events");
    report.judge(&EVENT_FIELDS, parsed.bad_event.clone(), summary);
    let usages = count(|e| matches!(e, Event::Usage(_)));
    if usages == 0 && parsed.bad_usage.is_none() {
        let why = if manifest.capabilities.usage {
            "no usage was reported in this run"
        } else {
            "capabilities.usage is not declared"
        };
        report.add(&USAGE, Verdict::Skipped, why);
    } else {
        let summary = format!("{usages} usage events");
        report.judge(&USAGE, parsed.bad_usage.clone(), summary);
    }
    let summary = format!("{} distinct keys", keys(parsed).len());
    report.judge(&UNIQUE_KEYS, parsed.duplicate_key.clone(), summary);
}

/// Started bound to nothing, the adapter must fail.
fn judge_probe(report: &mut Report, probe: &Capture, timeout: Duration) {
    let failure = match probe.exit {
        Some(0) => {
            Some("exit 0 with neither WUJIE_RUN_ID nor WUJIE_LOCALRUN_SESSION_ID".to_owned())
        }
        None => Some(format!(
            "kept running for {} s with neither WUJIE_RUN_ID nor WUJIE_LOCALRUN_SESSION_ID",
            timeout.as_secs()
        )),
        Some(_) => None,
    };
    let summary = format!(
        "{} without a run or a discussion",
        exit_text(probe, timeout)
    );
    report.judge(&FAILURE_EXIT, failure, summary);
}

/// A discussion: a clean end, valid events, a native session id.
fn judge_discussion(report: &mut Report, starter: &Starter<'_>, discussion: &Capture) {
    let timeout = starter.options.timeout;
    let parsed = parse(discussion);
    let ended = match discussion.exit {
        Some(0) => None,
        None if starter.provider.manifest.capabilities.interactive_pty => None,
        // A declined handoff may end the adapter with its own status: still a clean end.
        Some(_) if discussion.handoff.is_some() => None,
        _ => Some(with_screen(exit_text(discussion, timeout), discussion)),
    };
    let trouble = parsed
        .not_json
        .clone()
        .or(parsed.bad_event.clone())
        .or(ended);
    let summary = format!(
        "{}, {} events",
        exit_text(discussion, timeout),
        parsed.events.len()
    );
    report.judge(&DISCUSSION, trouble, summary);
    let ids = sessions(&parsed);
    let missing = ids
        .is_empty()
        .then(|| "no `session` event in the discussion".to_owned());
    report.judge(&SESSION, missing, format!("session {}", ids.join(", ")));
}

/// A declared native handoff: the adapter waits for the decision and does not act on a "no".
fn judge_handoff(report: &mut Report, discussion: &Capture, timeout: Duration) {
    let failure = match &discussion.handoff {
        None => Some("declared, but no handoff_ready came in the discussion (pass arguments after `--` that lead the adapter to a plan)".to_owned()),
        Some((early, _)) if !early.is_empty() => Some(format!(
            "went on before the decision: {}",
            early.join(", ")
        )),
        Some(_) if !discussion.decided => Some(
            "ended right after handoff_ready, before the decision came".to_owned(),
        ),
        Some((_, late)) if !late.is_empty() => Some(format!(
            "acted after accepted:false: {}",
            late.join(", ")
        )),
        Some(_) if discussion.exit.is_none() => Some(format!(
            "did not exit after accepted:false (still running after {} s)",
            timeout.as_secs()
        )),
        Some(_) => None,
    };
    let summary = format!(
        "waited for the decision, then {} without acting",
        exit_text(discussion, timeout)
    );
    report.judge(&HANDOFF, failure, summary);
}

async fn replay_rule(
    report: &mut Report,
    scratch: &Scratch,
    first: &Capture,
    parsed: &Parsed,
    second: &Capture,
    replayed: &Parsed,
) -> Result<(), LocalRunError> {
    // A replay means the same upstream events: a second start that opened another native
    // session, or that a live agent answered anew, is not one, and its keys may differ.
    let (a, b) = (sessions(parsed), sessions(replayed));
    let not_a_replay = if a != b && keys(parsed) != keys(replayed) {
        Some(format!(
            "each start opened a new native session ({} / {}): their events are not a replay",
            a.join(","),
            b.join(",")
        ))
    } else if said(parsed) != said(replayed) {
        Some("the two starts reported different events (a live agent answers anew): keys not compared".to_owned())
    } else {
        None
    };
    if let Some(why) = not_a_replay {
        report.add(&REPLAY, Verdict::Skipped, why);
        return Ok(());
    }
    let stored_first = ingest(scratch, first).await?;
    let stored_again = ingest(scratch, second).await?;
    let differing: Vec<String> = keys(parsed)
        .iter()
        .zip(keys(replayed).iter())
        .filter(|(x, y)| x != y)
        .take(3)
        .map(|(x, y)| format!("{:?} then {:?}", x.1, y.1))
        .collect();
    let failure = (!differing.is_empty() || stored_again > 0).then(|| {
        format!(
            "the replay stored {stored_again} new rows; keys that changed: {}",
            if differing.is_empty() {
                "none".to_owned()
            } else {
                differing.join(", ")
            }
        )
    });
    report.judge(
        &REPLAY,
        failure,
        format!("{stored_first} rows stored by the first start, none by the replay"),
    );
    Ok(())
}

/// Sends a capture's events to the scratch run; returns how many were stored anew.
async fn ingest(scratch: &Scratch, capture: &Capture) -> Result<usize, LocalRunError> {
    let mut items = Vec::new();
    for (i, line) in capture.lines.iter().enumerate() {
        if let Ok(events) = parse_line(line, i as u64 + 1) {
            let decoded = DecodedLine {
                line_no: i as u64 + 1,
                events,
            };
            items.extend(items_for_line(&scratch.run_id, decoded));
        }
    }
    if items.is_empty() {
        return Ok(0);
    }
    let result = scratch
        .connection
        .client
        .ingest_run_events(&scratch.run_id, &IngestBatch { items })
        .await
        .map_err(|source| LocalRunError::CheckServer {
            doing: "the scratch server refused the events".to_owned(),
            source,
        })?;
    Ok(result
        .results
        .iter()
        .filter(|r| r.outcome == IngestOutcome::Stored)
        .count())
}

/// Where a capture writes control frames: the stdin pipe, or the PTY of an interactive one.
enum FrameSink {
    Pipe(tokio::process::ChildStdin),
    /// Shared with the task typing the user's lines.
    Pty(Arc<tokio::sync::Mutex<pty_process::OwnedWritePty>>),
}

impl FrameSink {
    async fn send(&mut self, bytes: &[u8]) {
        let _ = match self {
            FrameSink::Pipe(pipe) => pipe.write_all(bytes).await,
            FrameSink::Pty(pty) => pty.lock().await.write_all(bytes).await,
        };
    }
}

/// What an interactive adapter showed: the end of its output, and when it last wrote.
#[derive(Default)]
struct Screen {
    tail: Vec<u8>,
    last_output: Option<tokio::time::Instant>,
}

/// Types `input` into an interactive adapter like a person: each line once its screen has
/// been still for a moment (it is waiting for input; a TUI that is still starting may drop
/// keys typed ahead), then Enter a little later (keys arriving with the text can be taken as a
/// paste).
async fn type_lines(
    input: Vec<String>,
    screen: Arc<Mutex<Screen>>,
    pty: Arc<tokio::sync::Mutex<pty_process::OwnedWritePty>>,
) {
    for line in input {
        loop {
            tokio::time::sleep(TYPING_PAUSE).await;
            let last = screen.lock().expect("screen").last_output;
            if last.is_some_and(|at| at.elapsed() >= STILL_SCREEN) {
                break;
            }
        }
        let _ = pty.lock().await.write_all(line.as_bytes()).await;
        tokio::time::sleep(TYPING_PAUSE).await;
        let _ = pty.lock().await.write_all(b"\r").await;
    }
}

/// Starts the adapter, collects its stdout until it exits (or until the time limit, or — for an
/// interactive adapter, which waits for its user — once it answered and went quiet), answering a
/// `handoff_ready` with `accepted:false` when `handoff` is set.
async fn capture(
    spec: SpawnSpec,
    interactive: bool,
    input: &[String],
    timeout: Duration,
    handoff: bool,
) -> Result<Capture, LocalRunError> {
    let screen = Arc::new(Mutex::new(Screen::default()));
    let (mut adapter, mut sink) = if interactive {
        start_on_pty(&spec, input, &screen)?
    } else {
        start_on_pipes(&spec, input, handoff).await?
    };
    let stdout = adapter
        .stdout
        .take()
        .ok_or(LocalRunError::StdoutNotCaptured)?;
    let mut rx = stdout_lines(stdout);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut watch = Watch::new(interactive, handoff);
    let mut stdout_open = true;
    let exit = loop {
        let decide_at = watch.pending.as_ref().map(|p| p.2);
        tokio::select! {
            line = rx.recv(), if stdout_open => match line {
                Some(line) => watch.on_line(line),
                None => stdout_open = false,
            },
            status = adapter.wait(), if !stdout_open => {
                break status.ok().map(exit_code_of);
            }
            () = sleep_until_opt(decide_at) => {
                let frame = watch.decide();
                if let Some(sink) = sink.as_mut() {
                    sink.send(&frame).await;
                }
            }
            () = sleep_until_opt(watch.settled_at) => {
                let _ = adapter.stop(STOP_GRACE).await;
                watch.answered = true;
                break None;
            }
            () = tokio::time::sleep_until(deadline) => {
                let _ = adapter.stop(STOP_GRACE).await;
                break None;
            }
        }
    };
    // Whatever was printed before the end is kept.
    while let Ok(line) = rx.try_recv() {
        watch.lines.push(line);
    }
    drop(sink);
    let screen_tail = plain_text(&screen.lock().expect("screen").tail);
    Ok(Capture {
        lines: watch.lines,
        exit,
        answered: watch.answered,
        screen_tail,
        handoff: watch.handoff_seen,
        decided: watch.decided,
    })
}

/// An interactive adapter on a PTY nobody looks at: its output is drained (it must not block
/// on a full PTY, and its last words explain a failure) and `input` is typed into it.
fn start_on_pty(
    spec: &SpawnSpec,
    input: &[String],
    screen: &Arc<Mutex<Screen>>,
) -> Result<(Adapter, Option<FrameSink>), LocalRunError> {
    let (adapter, pty) = Adapter::spawn_pty(spec, PTY_SIZE, false)?;
    let (mut read, write) = pty.into_split();
    let tail = screen.clone();
    tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = read.read(&mut buf).await {
            if n == 0 {
                break;
            }
            let mut screen = tail.lock().expect("screen");
            screen.tail.extend_from_slice(&buf[..n]);
            let excess = screen.tail.len().saturating_sub(SCREEN_TAIL_BYTES);
            screen.tail.drain(..excess);
            screen.last_output = Some(tokio::time::Instant::now());
        }
    });
    let write = Arc::new(tokio::sync::Mutex::new(write));
    tokio::spawn(type_lines(input.to_vec(), screen.clone(), write.clone()));
    Ok((adapter, Some(FrameSink::Pty(write))))
}

/// An adapter on pipes, given `input` as lines on its stdin.
async fn start_on_pipes(
    spec: &SpawnSpec,
    input: &[String],
    handoff: bool,
) -> Result<(Adapter, Option<FrameSink>), LocalRunError> {
    let mut adapter = Adapter::spawn(spec)?;
    let mut sink = adapter.stdin.take().map(FrameSink::Pipe);
    if let Some(sink) = sink.as_mut() {
        for line in input {
            sink.send(format!("{line}\n").as_bytes()).await;
        }
    }
    // Without a handoff to answer, the adapter sees the end of its input after that.
    Ok((adapter, sink.filter(|_| handoff)))
}

/// The adapter's stdout as lines (without their newline), read by a task of their own.
fn stdout_lines(stdout: tokio::process::ChildStdout) -> mpsc::UnboundedReceiver<Vec<u8>> {
    let (tx, rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    }
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// What [`capture`] saw so far.
struct Watch {
    interactive: bool,
    /// Answer a `handoff_ready`.
    handoff: bool,
    lines: Vec<Vec<u8>>,
    /// When an interactive adapter that answered counts as waiting for its user.
    settled_at: Option<tokio::time::Instant>,
    /// A handoff to decline: (request id, mode, when).
    pending: Option<(String, HandoffMode, tokio::time::Instant)>,
    /// See [`Capture::handoff`].
    handoff_seen: Option<(Vec<String>, Vec<String>)>,
    decided: bool,
    answered: bool,
}

impl Watch {
    fn new(interactive: bool, handoff: bool) -> Watch {
        Watch {
            interactive,
            handoff,
            lines: Vec::new(),
            settled_at: None,
            pending: None,
            handoff_seen: None,
            decided: false,
            answered: false,
        }
    }

    fn on_line(&mut self, line: Vec<u8>) {
        for event in parse_line(&line, 0).unwrap_or_default() {
            self.on_event(&event);
        }
        if let Some(at) = self.settled_at.as_mut() {
            *at = (*at).max(tokio::time::Instant::now() + SETTLED_AFTER_FINAL);
        }
        self.lines.push(line);
    }

    fn on_event(&mut self, event: &Event) {
        match event {
            Event::HandoffReady { request_id, mode }
                if self.handoff && self.pending.is_none() && !self.decided =>
            {
                let at = tokio::time::Instant::now() + HANDOFF_WATCH;
                self.pending = Some((request_id.clone(), *mode, at));
                self.handoff_seen = Some((Vec::new(), Vec::new()));
            }
            Event::Message(m) => {
                if let Some((early, late)) = self.handoff_seen.as_mut() {
                    let what = format!("{} ({})", m.kind.as_str(), m.source_key);
                    if self.decided {
                        late.push(what)
                    } else {
                        early.push(what)
                    }
                }
                if self.interactive && m.kind == MessageKind::Final {
                    self.settled_at = Some(tokio::time::Instant::now() + SETTLED_AFTER_FINAL);
                }
            }
            _ => {}
        }
    }

    /// The watch on the pending handoff is over: the frame that declines it.
    fn decide(&mut self) -> Vec<u8> {
        let (request_id, mode, _) = self.pending.take().expect("a pending decision");
        self.decided = true;
        HandoffDecision {
            request_id,
            accepted: false,
            mode: Some(mode),
            issue_id: None,
            issue_key: None,
            run_id: None,
            error: Some("declined by wujie local-run provider check".to_owned()),
        }
        .encode_frame()
    }
}

/// Terminal output as plain text: escape sequences and control characters dropped, the last
/// few lines kept.
fn plain_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters up to a final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS and the like: up to BEL or ST (ESC \\).
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' => out.push('\n'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    let lines: Vec<&str> = out
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(5)..].join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(lines: &[&str]) -> Capture {
        Capture {
            lines: lines.iter().map(|l| l.as_bytes().to_vec()).collect(),
            exit: Some(0),
            answered: false,
            screen_tail: String::new(),
            handoff: None,
            decided: false,
        }
    }

    #[test]
    fn each_kind_of_problem_is_found_with_its_line() {
        let parsed = parse(&capture(&[
            r#"{"type":"text","content":"a","source":"s","source_key":"k"}"#,
            "",
            "starting up",
            r#"{"type":"final","content":"b","source":"s"}"#,
            r#"{"usage":{"provider":"p","model":"m","input_tokens":1,"output_tokens":1,"total":2}}"#,
            r#"{"type":"final","content":"c","source":"s","source_key":"k"}"#,
            r#"{"type":"text","content":"a","source":"s","source_key":"k2"}"#,
        ]));
        assert!(parsed.not_json.unwrap().starts_with("stdout line 3 "));
        assert!(parsed.bad_event.unwrap().starts_with("stdout line 4: "));
        assert!(parsed.bad_usage.unwrap().contains("[\"total\"]"));
        assert!(parsed.duplicate_key.unwrap().starts_with("stdout line 6: "));
        assert_eq!(parsed.events.len(), 4);
    }

    #[test]
    fn the_same_event_twice_under_one_key_is_not_a_duplicate() {
        let line = r#"{"type":"text","content":"a","source":"s","source_key":"k"}"#;
        assert!(parse(&capture(&[line, line])).duplicate_key.is_none());
    }

    #[test]
    fn terminal_output_becomes_its_last_lines_of_text() {
        let text = plain_text(
            b"\x1b[2J\x1b[1;1Hfirst\r\n\x1b]0;title\x07sec\x1b]8;;u\x1b\\ond\x1b[K\r\n\r\n",
        );
        assert_eq!(text, "first / second");
        let many: Vec<u8> = (1..=9)
            .flat_map(|n| format!("line {n}\n").into_bytes())
            .collect();
        assert_eq!(
            plain_text(&many),
            "line 5 / line 6 / line 7 / line 8 / line 9"
        );
    }
}
