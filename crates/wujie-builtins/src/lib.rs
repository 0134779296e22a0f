//! Built-in providers: adapters compiled into `wujie` and started as `wujie adapter <name>`.
//!
//! A built-in adapter runs an agent CLI in its machine-readable output mode, maps that output
//! to our NDJSON events and prints them, exactly like an external plugin would. The table of
//! built-in providers ([`BUILTINS`]) and the dispatch to their adapters ([`run_adapter`]) live
//! here, next to what every such adapter needs: finding the agent's executable and building
//! its events.

pub mod abort_dump;
pub mod acp;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod missing_log;
pub mod opencode;
pub mod pi;
pub mod tui;
pub mod versions;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use serde_json::{Map, Value};
use wujie_protocol::event::{Event, Message, MessageKind};
use wujie_protocol::manifest::{Capabilities, Manifest, ProtocolVersion};

use versions::{TestedVersions, UntestedVersion};

/// A provider implemented inside the `wujie` binary: its adapter is `wujie adapter <name>`.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    pub name: &'static str,
    pub display_name: &'static str,
    pub protocol: ProtocolVersion,
    pub interactive_pty: bool,
    /// The flag that gives the agent its task and runs it without a terminal (`-p TASK`), for
    /// the providers a `wujie worker` can run; `None` for those that need a terminal.
    pub task_flag: Option<&'static str>,
    /// The versions of its agent it was tested with; `None` for `acp`, whose agent is any.
    pub tested: Option<TestedVersions>,
    /// The agent uses Ctrl+Z itself (Gemini CLI: an undo in its input; with nothing to undo,
    /// a warning that a second press suspends): the key goes to it, and a second one within
    /// 3 s stops the session.
    pub takes_ctrl_z: bool,
    /// After `fg` the agent repaints in full only when its window size changed (Codex's
    /// composer, opencode's alternate screen are not drawn again on a SIGWINCH alone).
    pub resize_to_repaint: bool,
    /// The agent stops itself on Ctrl+Z and, once continued, draws again where the shell left
    /// the cursor (Codex, whose repaint after a change of size clears the scrollback): the
    /// key goes to it, and its adapter runs it in a process group of its own, in the
    /// foreground of the terminal, so that its stop is not discarded.
    pub suspends_itself: bool,
}

impl Builtin {
    /// The manifest a plugin with the same behaviour would ship.
    pub fn manifest(&self) -> Manifest {
        Manifest {
            schema_version: 1,
            name: self.name.to_owned(),
            display_name: Some(self.display_name.to_owned()),
            command: self.name.to_owned(),
            protocol: self.protocol,
            capabilities: Capabilities {
                interactive_pty: self.interactive_pty,
                structured_events: true,
                issue_context: Some("env".to_owned()),
                usage: true,
                native_plan_handoff: false,
                takes_ctrl_z: self.takes_ctrl_z,
                resize_to_repaint: self.resize_to_repaint,
                suspends_itself: self.suspends_itself,
            },
        }
    }
}

/// Providers compiled into `wujie` (their adapters are `wujie adapter <name>`, see
/// [`run_adapter`]).
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "pi",
        display_name: "pi (built in)",
        protocol: ProtocolVersion::V1,
        task_flag: Some("-p"),
        interactive_pty: false,
        tested: Some(TestedVersions {
            package: "@mariozechner/pi-coding-agent",
            oldest: "0.73.1",
            newest: "0.73.1",
        }),
        takes_ctrl_z: false,
        resize_to_repaint: false,
        suspends_itself: false,
    },
    Builtin {
        name: "claude",
        display_name: "Claude Code (built in, its own terminal UI)",
        protocol: ProtocolVersion::V2,
        task_flag: None,
        interactive_pty: true,
        tested: Some(TestedVersions {
            package: "@anthropic-ai/claude-code",
            oldest: "2.1.332",
            newest: "2.1.332",
        }),
        takes_ctrl_z: false,
        resize_to_repaint: false,
        suspends_itself: false,
    },
    Builtin {
        name: "codex",
        display_name: "Codex (built in, its own terminal UI)",
        protocol: ProtocolVersion::V2,
        task_flag: None,
        interactive_pty: true,
        tested: Some(TestedVersions {
            package: "@openai/codex",
            oldest: "0.171.0",
            newest: "0.171.0",
        }),
        takes_ctrl_z: false,
        resize_to_repaint: true,
        suspends_itself: true,
    },
    Builtin {
        name: "gemini",
        display_name: "Gemini CLI (built in, its own terminal UI)",
        protocol: ProtocolVersion::V2,
        task_flag: None,
        interactive_pty: true,
        tested: Some(TestedVersions {
            package: "@google/gemini-cli",
            oldest: "0.61.0",
            newest: "0.61.0",
        }),
        takes_ctrl_z: true,
        resize_to_repaint: false,
        suspends_itself: false,
    },
    Builtin {
        name: "opencode",
        display_name: "opencode (built in, its own terminal UI)",
        protocol: ProtocolVersion::V2,
        task_flag: None,
        interactive_pty: true,
        tested: Some(TestedVersions {
            package: "opencode-ai",
            oldest: "1.18.33",
            newest: "1.18.33",
        }),
        takes_ctrl_z: false,
        resize_to_repaint: true,
        suspends_itself: false,
    },
    Builtin {
        name: "acp",
        display_name: "any ACP agent (built in, a conversation on the terminal)",
        protocol: ProtocolVersion::V2,
        task_flag: Some("-p"),
        interactive_pty: true,
        tested: None,
        takes_ctrl_z: false,
        resize_to_repaint: false,
        suspends_itself: false,
    },
];

/// The built-in provider named `name`.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// `wujie adapter NAME` named no provider of [`BUILTINS`].
#[derive(Debug, thiserror::Error)]
#[error(
    "no built-in provider named {name:?}; the built-in providers are: {}",
    builtin_names()
)]
pub struct UnknownBuiltin {
    pub name: String,
}

fn builtin_names() -> String {
    let names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
    names.join(", ")
}

/// Runs the adapter of the built-in provider `name` with `args`; its exit code.
pub async fn run_adapter(name: &str, args: Vec<String>) -> Result<i32, UnknownBuiltin> {
    // `wujie` tells every built-in adapter when the user is back at the agent's input; one
    // that has no use for it must not die of it (a signal's default action).
    let _user_at_input = tui::user_at_input_signal();
    Ok(match name {
        "pi" => pi::run_pi_adapter(args).await,
        "acp" => acp::run_acp_adapter(args).await,
        "claude" => claude::run_claude_adapter(args).await,
        "codex" => codex::run_codex_adapter(args).await,
        "gemini" => gemini::run_gemini_adapter(args).await,
        "opencode" => opencode::run_opencode_adapter(args).await,
        other => {
            return Err(UnknownBuiltin {
                name: other.to_owned(),
            });
        }
    })
}

/// Whether the adapter of the built-in provider `name` can start its agent with `args`: the
/// agent's executable is found and the arguments are ones the adapter takes. `wujie run` and
/// `wujie discuss` ask before they create a run or a discussion, so that a start that would
/// fail at once (exit 127 or 2) leaves nothing behind. The adapter checks the same again.
/// `acp` names its agent in its own arguments and is checked when it starts.
pub fn preflight(name: &str, args: &[String]) -> Result<(), BuiltinError> {
    agent_program(name, args).transpose().map(drop)
}

/// The agent's executable that the adapter of `name` would start with `args`, checked as the
/// adapter checks it; `None` for `acp`, which names its agent in its own arguments.
fn agent_program(name: &str, args: &[String]) -> Option<Result<PathBuf, BuiltinError>> {
    Some(match name {
        "pi" => pi::preflight(args),
        "claude" => claude::preflight(args),
        "codex" => codex::preflight(args),
        "gemini" => gemini::preflight(args),
        "opencode" => opencode::preflight(args),
        _ => return None,
    })
}

/// The agent of the built-in provider `name`, when the one `args` would start is installed in
/// a version outside those it was tested with; `None` inside them, and when its version or the
/// agent cannot be found.
pub fn untested_version(name: &str, args: &[String]) -> Option<UntestedVersion> {
    let builtin = builtin(name)?;
    let tested = builtin.tested?;
    let program = agent_program(name, args)?.ok()?;
    let installed = tested.installed(&program)?;
    (!tested.covers(&installed)).then_some(UntestedVersion {
        agent: builtin.name,
        installed,
        tested,
    })
}

/// The arguments that resume the agent's own session `native` (a discussion resumed by its id
/// goes on in the session it recorded): `args` with the agent's resume added, or `args` as
/// they are when they already name a session; `None` when the agent cannot resume one by id.
pub fn resume_args(name: &str, args: &[String], native: &str) -> Option<Vec<String>> {
    let names_session = |flags: &[&str]| flag_value(args, flags).is_some();
    let owned = |words: &[&str]| -> Vec<String> { words.iter().map(|w| (*w).to_owned()).collect() };
    let (before, after): (Vec<String>, Vec<String>) = match name {
        "gemini" if !names_session(&["--resume", "-r", "--session-id"]) => {
            (Vec::new(), owned(&["--resume", native]))
        }
        "claude" if !names_session(&["--resume", "-r", "--continue", "-c", "--session-id"]) => {
            (Vec::new(), owned(&["--resume", native]))
        }
        // `codex resume ID [OPTIONS]`: a subcommand, first.
        "codex" if !matches!(args.first().map(String::as_str), Some("resume" | "fork")) => {
            (owned(&["resume", native]), Vec::new())
        }
        "opencode" if !names_session(&["--session", "-s", "--continue", "-c"]) => {
            (Vec::new(), owned(&["--session", native]))
        }
        // The acp provider's own options come before `--` and the agent's command.
        "acp" if !names_session(&["--resume"]) => (owned(&["--resume", native]), Vec::new()),
        "gemini" | "claude" | "codex" | "opencode" | "acp" => (Vec::new(), Vec::new()),
        _ => return None,
    };
    Some(
        before
            .into_iter()
            .chain(args.iter().cloned())
            .chain(after)
            .collect(),
    )
}

/// Why a built-in adapter could not start its agent.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    #[error(
        "{program} was not found: {env_var} is not set and no executable {program:?} is on PATH ({path}); install it ({install}) or set {env_var} to its path"
    )]
    NotFound {
        program: &'static str,
        env_var: &'static str,
        path: String,
        install: &'static str,
    },
    #[error(
        "{env_var} is {value:?}, which is not an executable file; point it at the {program} executable or unset it to search PATH"
    )]
    BadOverride {
        program: &'static str,
        env_var: &'static str,
        value: String,
    },
    #[error(
        "argument {arg:?} is not allowed: the built-in {program} provider runs {program} with {fixed} to read its events; drop {arg:?}"
    )]
    RejectedArg {
        program: &'static str,
        arg: String,
        fixed: &'static str,
    },
    #[error("argument {arg:?} cannot be used with the built-in {program} provider: {why}")]
    Unsupported {
        program: &'static str,
        arg: String,
        why: &'static str,
    },
    #[error("could not start {program} ({path})")]
    Spawn {
        program: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {program}'s output")]
    Read {
        program: &'static str,
        source: std::io::Error,
    },
}

/// A built-in adapter's exit: the agent's own code, or the error said on stderr as
/// `wujie adapter NAME: error: …` and its [`BuiltinError::exit_code`].
pub fn adapter_exit(adapter: &str, outcome: Result<i32, BuiltinError>) -> i32 {
    outcome.unwrap_or_else(|e| {
        wujie_process::stderr_line!(
            "wujie adapter {adapter}: error: {}",
            wujie_protocol::error_text::with_causes(&e)
        );
        e.exit_code()
    })
}

impl BuiltinError {
    /// The adapter's exit code for this error: 2 for arguments it refuses, 127 when the agent
    /// cannot be started, 1 when its output cannot be read.
    pub fn exit_code(&self) -> i32 {
        match self {
            BuiltinError::RejectedArg { .. } | BuiltinError::Unsupported { .. } => 2,
            BuiltinError::NotFound { .. }
            | BuiltinError::BadOverride { .. }
            | BuiltinError::Spawn { .. } => 127,
            BuiltinError::Read { .. } => 1,
        }
    }
}

/// How to find an agent's executable: an environment variable naming it, else `PATH`.
#[derive(Debug, Clone, Copy)]
pub struct AgentProgram {
    /// The executable's name on `PATH`.
    pub name: &'static str,
    /// The variable that overrides the `PATH` lookup.
    pub env_var: &'static str,
    /// How a user installs it, quoted in the not-found error.
    pub install: &'static str,
}

impl AgentProgram {
    /// The executable to run, from this process's override variable and `PATH`.
    pub fn locate_from_env(&self) -> Result<PathBuf, BuiltinError> {
        let env = |name| std::env::var(name).ok();
        self.locate(env(self.env_var).as_deref(), env("PATH").as_deref())
    }

    /// The executable to run, given the override variable's value and `PATH`.
    pub fn locate(
        &self,
        override_value: Option<&str>,
        path_var: Option<&str>,
    ) -> Result<PathBuf, BuiltinError> {
        if let Some(value) = override_value.filter(|v| !v.is_empty()) {
            let path = PathBuf::from(value);
            return if is_executable(&path) {
                Ok(path)
            } else {
                Err(BuiltinError::BadOverride {
                    program: self.name,
                    env_var: self.env_var,
                    value: value.to_owned(),
                })
            };
        }
        let path_var = path_var.unwrap_or("");
        path_var
            .split(':')
            .filter(|d| !d.is_empty())
            .map(|d| Path::new(d).join(self.name))
            .find(|p| is_executable(p))
            .ok_or_else(|| BuiltinError::NotFound {
                program: self.name,
                env_var: self.env_var,
                path: path_var.to_owned(),
                install: self.install,
            })
    }
}

/// Registers handlers for SIGINT, SIGTERM and SIGHUP so they no longer end this process;
/// each with the signal it listens for, to pass it on where the agent does not get it.
pub(crate) fn hold_stop_signals() -> Vec<(Signal, tokio::signal::unix::Signal)> {
    use tokio::signal::unix::{SignalKind, signal};
    [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP]
        .into_iter()
        .filter_map(|held| Some((held, signal(SignalKind::from_raw(held as i32)).ok()?)))
        .collect()
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

// What every built-in's mapper builds its events from.

/// A message of `kind` from `source` with its key and nothing else set.
pub fn bare_message(source: &str, kind: MessageKind, source_key: String) -> Message {
    Message {
        kind,
        content: None,
        tool: None,
        input: None,
        output: None,
        source: source.to_owned(),
        source_key,
    }
}

/// A message carrying text content.
pub fn content_message(source: &str, kind: MessageKind, content: String, key: String) -> Event {
    let mut message = bare_message(source, kind, key);
    message.content = Some(content);
    Event::Message(message)
}

/// The key prefix of everything one agent session reports: `session:<id>`, `session:unknown`
/// until the agent has named its session. It begins every `source_key` the built-ins report,
/// which the server stores, so its spelling stays as it is.
///
/// pi's provider wrote `session:none` for a missing session before; taking this spelling
/// re-keys nothing stored: pi prints its session header first whenever it has a session, and a
/// resumed pi prints only the new turns' events, never earlier ones again, so the events keyed
/// `session:none` (a pi that named no session) are never read a second time.
pub fn session_key(session_id: Option<&str>) -> String {
    format!("session:{}", session_id.unwrap_or("unknown"))
}

/// Reports a held-back answer (`key`, `text`) as `kind`; a final answer's key gets `:final`,
/// so the same message reported as text first and final later are two events.
pub fn release_answer(
    source: &str,
    answer: &mut Option<(String, String)>,
    kind: MessageKind,
    out: &mut Vec<Event>,
) {
    if let Some((key, text)) = answer.take() {
        let key = match kind {
            MessageKind::Final => format!("{key}:final"),
            _ => key,
        };
        out.push(content_message(source, kind, text, key));
    }
}

/// A token count: a non-negative integer (a float is rounded), else 0.
pub fn count_field(object: &Map<String, Value>, field: &str) -> u64 {
    match object.get(field) {
        Some(Value::Number(n)) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f.round() as u64)
        }),
        _ => None,
    }
    .unwrap_or(0)
}

/// A field of a JSON object, when it is a string.
pub fn str_field<'a>(object: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    object.get(field).and_then(Value::as_str)
}

/// The value of `--flag VALUE` / `--flag=VALUE` (any of `names`) in `args`: `Some(None)` when
/// the flag is there without a value.
pub fn flag_value<'a>(args: &'a [String], names: &[&str]) -> Option<(usize, Option<&'a str>)> {
    args.iter().enumerate().find_map(|(i, arg)| {
        names.iter().find_map(|name| {
            if arg == name {
                let value = args.get(i + 1).map(String::as_str);
                Some((i, value.filter(|v| !v.starts_with('-'))))
            } else {
                arg.strip_prefix(name)
                    .and_then(|rest| rest.strip_prefix('='))
                    .map(|value| (i, Some(value)))
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_discussion_resumed_by_id_resumes_the_agents_own_session() {
        let args =
            |words: &[&str]| -> Vec<String> { words.iter().map(|w| w.to_string()).collect() };
        let resumed = |name, given: &[&str]| resume_args(name, &args(given), "N").unwrap();
        assert_eq!(
            resumed("gemini", &["-m", "x"]),
            args(&["-m", "x", "--resume", "N"])
        );
        assert_eq!(resumed("gemini", &["--resume=O"]), args(&["--resume=O"]));
        assert_eq!(resumed("claude", &[]), args(&["--resume", "N"]));
        assert_eq!(resumed("claude", &["-c"]), args(&["-c"]));
        assert_eq!(
            resumed("codex", &["-m", "x"]),
            args(&["resume", "N", "-m", "x"])
        );
        assert_eq!(resumed("codex", &["resume", "O"]), args(&["resume", "O"]));
        assert_eq!(resumed("opencode", &[]), args(&["--session", "N"]));
        assert_eq!(resumed("opencode", &["-s", "O"]), args(&["-s", "O"]));
        assert_eq!(
            resumed("acp", &["--", "hermes", "acp"]),
            args(&["--resume", "N", "--", "hermes", "acp"])
        );
        assert_eq!(resume_args("pi", &args(&["-x"]), "N"), None);
    }

    #[test]
    fn keys_name_the_session_or_say_it_is_not_known_yet() {
        assert_eq!(session_key(Some("ses_1")), "session:ses_1");
        assert_eq!(session_key(None), "session:unknown");
    }

    #[test]
    fn a_str_field_is_a_string_or_nothing() {
        let value = serde_json::json!({"a": "x", "n": 1, "z": null, "o": {"a": "y"}});
        let object = value.as_object().unwrap();
        assert_eq!(str_field(object, "a"), Some("x"));
        for field in ["n", "z", "o", "missing"] {
            assert_eq!(str_field(object, field), None, "{field}");
        }
    }

    #[test]
    fn locate_prefers_the_override_then_path() {
        let dir = tempfile::tempdir().unwrap();
        let program = AgentProgram {
            name: "agent",
            env_var: "AGENT_BIN",
            install: "get it",
        };
        let bin = dir.path().join("agent");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("/nonexistent:{}", dir.path().display());
        assert_eq!(program.locate(None, Some(&path)).unwrap(), bin);
        assert_eq!(
            program
                .locate(Some(bin.to_str().unwrap()), Some("/nonexistent"))
                .unwrap(),
            bin
        );

        let missing = program
            .locate(None, Some("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("AGENT_BIN") && missing.contains("PATH") && missing.contains("get it"),
            "{missing}"
        );
        let bad = program
            .locate(Some("/nonexistent/agent"), Some(&path))
            .unwrap_err()
            .to_string();
        assert!(
            bad.contains("AGENT_BIN") && bad.contains("/nonexistent/agent"),
            "{bad}"
        );
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(program.locate(None, Some(&path)).is_err());
    }
}
