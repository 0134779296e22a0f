//! Real coding-agent CLIs pointed at a mock, each in its own temporary home.
//!
//! `scripts/agents/install` puts pinned CLIs in `$WUJIE_AGENTS_DIR` (default
//! `~/.cache/wujie-agents`) with one executable per agent in its `bin/`. [`AgentHome::new`] makes
//! a temp dir holding a fresh `HOME` (with the agent's config file pointing at the mock and its
//! offline switches) and a work directory, and hands out ready [`std::process::Command`]s.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use wujie_mockllm::agents::{Agent, AgentHome};
//! use wujie_mockllm::{MockLlm, Script};
//! let mock = MockLlm::start(Script::default()).await?;
//! let home = AgentHome::new(Agent::Pi, &mock.url())?;
//! let output = home.headless("say pong").output()?; // pi --mode json ... "say pong"
//! # Ok(()) }
//! ```
//!
//! The child's environment is cleared except `PATH`, `LANG`, `TERM` and `TMPDIR`, so the
//! developer's API keys and config never reach it.

use crate::script::{Reply, Script, ToolCallSpec, ToolNames, Turn, When};
use crate::wire::Api;
use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The model id every agent is configured to use.
pub const MODEL: &str = "mock-model";
/// The API key every agent sends (the mock ignores it and never records it).
pub const API_KEY: &str = "mock-key";
/// Environment variable listing agents whose tests are skipped (`pi,codex` or `all`).
pub const SKIP_ENV: &str = "WUJIE_SKIP_AGENTS";
/// Environment variable naming the install directory.
pub const DIR_ENV: &str = "WUJIE_AGENTS_DIR";

/// A supported agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// npm `@mariozechner/pi-coding-agent`, over OpenAI Chat Completions.
    Pi,
    /// npm `@openai/codex`, over OpenAI Responses.
    Codex,
    /// xAI Grok Build (PyPI `grok-cli-bin`), over OpenAI Chat Completions.
    Grok,
    /// npm `@anthropic-ai/claude-code`, over Anthropic Messages.
    Claude,
    /// npm `opencode-ai`, over OpenAI Chat Completions.
    Opencode,
    /// PyPI `hermes-agent`, over OpenAI Chat Completions.
    Hermes,
    /// npm `@google/gemini-cli`, over Gemini `streamGenerateContent`.
    Gemini,
}

impl Agent {
    /// Every supported agent.
    pub const ALL: [Agent; 7] = [
        Agent::Pi,
        Agent::Codex,
        Agent::Grok,
        Agent::Claude,
        Agent::Opencode,
        Agent::Hermes,
        Agent::Gemini,
    ];
    /// The agents CI installs and tests.
    pub const CI: [Agent; 3] = [Agent::Pi, Agent::Codex, Agent::Grok];

    /// The name `scripts/agents/install` and `WUJIE_SKIP_AGENTS` use; also the executable's name.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Pi => "pi",
            Agent::Codex => "codex",
            Agent::Grok => "grok",
            Agent::Claude => "claude",
            Agent::Opencode => "opencode",
            Agent::Hermes => "hermes",
            Agent::Gemini => "gemini",
        }
    }

    pub fn from_name(name: &str) -> Option<Agent> {
        Agent::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The wire API this agent is configured to use against the mock.
    pub fn api(self) -> Api {
        match self {
            Agent::Codex => Api::OpenaiResponses,
            Agent::Claude => Api::AnthropicMessages,
            Agent::Gemini => Api::GeminiGenerateContent,
            Agent::Pi | Agent::Grok | Agent::Opencode | Agent::Hermes => Api::OpenaiChat,
        }
    }

    /// Where the installed executable is expected: `<agents dir>/bin/<name>`.
    pub fn executable(self) -> PathBuf {
        agents_dir().join("bin").join(self.name())
    }

    pub fn is_installed(self) -> bool {
        self.executable().is_file()
    }

    /// Whether `WUJIE_SKIP_AGENTS` asks to skip this agent's tests.
    pub fn is_skipped(self) -> bool {
        std::env::var(SKIP_ENV).is_ok_and(|list| self.is_listed_in(&list))
    }

    /// Whether a comma-separated list (as in `WUJIE_SKIP_AGENTS`) names this agent or says `all`.
    pub fn is_listed_in(self, list: &str) -> bool {
        list.split(',')
            .map(str::trim)
            .any(|n| n.eq_ignore_ascii_case("all") || n.eq_ignore_ascii_case(self.name()))
    }

    /// A two-turn script: when the user text contains `trigger`, call this agent's shell tool
    /// with `command`; when a tool result contains `result_contains`, answer `answer`.
    pub fn shell_script(
        self,
        trigger: &str,
        command: &str,
        result_contains: &str,
        answer: &str,
    ) -> Script {
        let call = Turn {
            when: When {
                user_contains: Some(trigger.to_string()),
                ..When::default()
            },
            reply: Reply {
                tool_calls: vec![self.shell_call(command)],
                ..Reply::default()
            },
        };
        let finish = Turn {
            when: When {
                tool_result_contains: Some(result_contains.to_string()),
                ..When::default()
            },
            reply: Reply {
                text: Some(answer.to_string()),
                ..Reply::default()
            },
        };
        Script {
            models: Vec::new(),
            turns: vec![call, finish],
        }
    }

    /// A scripted tool call that makes this agent run `command` in a shell, naming the agent's
    /// own shell tool with the argument shape it expects.
    pub fn shell_call(self, command: &str) -> ToolCallSpec {
        let (names, arguments): (&[&str], Value) = match self {
            Agent::Pi => (&["bash"], json!({"command": command})),
            Agent::Codex => (&["exec_command"], json!({"cmd": command})),
            Agent::Grok => (
                &["run_terminal_command"],
                json!({"command": command, "description": "Run the command"}),
            ),
            Agent::Claude => (
                &["Bash"],
                json!({"command": command, "description": "Run the command"}),
            ),
            Agent::Opencode => (
                &["bash"],
                json!({"command": command, "description": "Run the command"}),
            ),
            Agent::Hermes => (&["terminal"], json!({"command": command})),
            Agent::Gemini => (
                &["run_shell_command"],
                json!({"command": command, "description": "Run the command"}),
            ),
        };
        ToolCallSpec {
            tool: ToolNames::AnyOf(names.iter().map(|n| n.to_string()).collect()),
            arguments,
        }
    }
}

/// The install directory: `$WUJIE_AGENTS_DIR`, else `$HOME/.cache/wujie-agents`.
pub fn agents_dir() -> PathBuf {
    match std::env::var_os(DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let home = std::env::var_os("HOME").unwrap_or_else(|| OsString::from("/root"));
            PathBuf::from(home).join(".cache").join("wujie-agents")
        }
    }
}

/// Errors preparing an agent's home.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(
        "{agent} is not installed (looked for {path}): run `scripts/agents/install {agent}`, \
         or set {SKIP_ENV}={agent} to skip its tests"
    )]
    NotInstalled { agent: &'static str, path: PathBuf },
    #[error("cannot write {path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the mock model server")]
    Mock(#[from] crate::MockError),
}

impl Agent {
    /// The agent's executable for a test that drives it, or a skip (`None`, after saying why)
    /// when `WUJIE_SKIP_AGENTS` lists it or it is not installed. Under `WUJIE_REQUIRE_ALL` either
    /// fails the test instead (`wujie-require`).
    pub fn require(self) -> Option<PathBuf> {
        let name = self.name();
        if self.is_skipped() {
            return wujie_require::missing(
                name,
                &format!("{SKIP_ENV} lists it"),
                "leave it out of that list to run its tests",
            );
        }
        let executable = self.executable();
        if executable.is_file() {
            return Some(executable);
        }
        wujie_require::missing(
            name,
            &format!("not installed at {}", executable.display()),
            &format!("run `scripts/agents/install {name}`"),
        )
    }

    /// What an end-to-end test of this agent starts from: a mock model server with `script`
    /// and a home pointing the agent at it. `Ok(None)` when the test skips ([`Agent::require`]).
    pub async fn require_mock(
        self,
        script: Script,
    ) -> Result<Option<(crate::MockLlm, AgentHome)>, AgentError> {
        if self.require().is_none() {
            return Ok(None);
        }
        let mock = crate::MockLlm::start(script).await?;
        let home = AgentHome::new(self, &mock.url())?;
        Ok(Some((mock, home)))
    }
}

/// One agent's private home and work directory, deleted when dropped.
#[derive(Debug)]
pub struct AgentHome {
    agent: Agent,
    root: tempfile::TempDir,
    program: PathBuf,
    envs: Vec<(String, String)>,
}

impl AgentHome {
    /// Prepares a temp `HOME` whose config points `agent` at the mock at `mock_url`
    /// (`http://127.0.0.1:PORT`, as [`crate::MockLlm::url`] gives). Fails when the agent is not
    /// installed.
    pub fn new(agent: Agent, mock_url: &str) -> Result<AgentHome, AgentError> {
        let program = agent.executable();
        if !program.is_file() {
            return Err(AgentError::NotInstalled {
                agent: agent.name(),
                path: program,
            });
        }
        let root = tempfile::Builder::new()
            .prefix(&format!("wujie-agent-{}-", agent.name()))
            .tempdir()
            .map_err(|source| AgentError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
        let mut home = AgentHome {
            agent,
            root,
            program,
            envs: Vec::new(),
        };
        home.create_dir(&home.home())?;
        home.create_dir(&home.workdir())?;
        home.configure(mock_url.trim_end_matches('/'))?;
        Ok(home)
    }

    pub fn agent(&self) -> Agent {
        self.agent
    }

    /// The agent's `HOME` (`<temp>/home`).
    pub fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// An empty directory the agent runs in (`<temp>/work`).
    pub fn workdir(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// The agent's executable.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Environment variables the agent needs besides `HOME` and `PATH` (config locations,
    /// endpoint, key, offline switches).
    pub fn envs(&self) -> &[(String, String)] {
        &self.envs
    }

    /// The agent's executable with a cleared environment (only `PATH`, `LANG`, `TERM`, `TMPDIR`
    /// kept), `HOME` and [`AgentHome::envs`] set, run in [`AgentHome::workdir`], stdin closed.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.env_clear();
        for keep in ["LANG", "TERM", "TMPDIR"] {
            if let Some(value) = std::env::var_os(keep) {
                cmd.env(keep, value);
            }
        }
        // The install dir's bin/ comes first: it holds the `fd` link pi looks for.
        let mut path = OsString::from(agents_dir().join("bin"));
        if let Some(inherited) = std::env::var_os("PATH") {
            path.push(":");
            path.push(inherited);
        }
        cmd.env("PATH", path)
            .env("HOME", self.home())
            .env("WUJIE_HOME", self.root.path().join("wujie"))
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .current_dir(self.workdir())
            .stdin(Stdio::null());
        cmd
    }

    /// A one-shot headless run of `prompt` in the agent's structured output mode, with tool use
    /// allowed without asking:
    ///
    /// | agent | arguments | output |
    /// |---|---|---|
    /// | pi | `--provider mock --model mock-model --mode json -p PROMPT` | JSONL events |
    /// | codex | `exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox PROMPT` | JSONL events |
    /// | grok | `-p PROMPT --output-format streaming-json --always-approve` | JSONL events |
    /// | claude | `-p PROMPT --output-format stream-json --verbose --allowedTools Bash` | JSONL messages |
    /// | opencode | `run --format json PROMPT` (model from its config) | JSONL parts |
    /// | hermes | `chat -Q -q PROMPT --yolo` | plain text (Hermes has no JSONL mode) |
    /// | gemini | `-p PROMPT -o stream-json --approval-mode yolo --skip-trust` | JSONL events |
    pub fn headless(&self, prompt: &str) -> Command {
        let mut cmd = self.command();
        cmd.args(self.model_args());
        match self.agent {
            Agent::Pi => cmd.args(["--mode", "json", "-p", prompt]),
            Agent::Codex => cmd.args([
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                prompt,
            ]),
            Agent::Grok => cmd.args([
                "-p",
                prompt,
                "--output-format",
                "streaming-json",
                "--always-approve",
            ]),
            Agent::Claude => cmd.args([
                "-p",
                prompt,
                "--output-format",
                "stream-json",
                "--verbose",
                "--allowedTools",
                "Bash",
            ]),
            Agent::Opencode => cmd.args(["run", "--format", "json", prompt]),
            Agent::Hermes => cmd.args(["chat", "-Q", "-q", prompt, "--yolo"]),
            Agent::Gemini => cmd.args([
                "-p",
                prompt,
                "-o",
                "stream-json",
                "--approval-mode",
                "yolo",
                "--skip-trust",
            ]),
        };
        cmd
    }

    /// Command-line arguments selecting the mock model, for agents whose config file alone does
    /// not select it: pi `--provider mock --model mock-model`; none for the others.
    /// [`AgentHome::headless`] adds them; callers building their own arguments on
    /// [`AgentHome::command`] (e.g. pi's `--mode rpc`) should add them too.
    pub fn model_args(&self) -> Vec<String> {
        match self.agent {
            Agent::Pi => ["--provider", "mock", "--model", MODEL]
                .map(String::from)
                .to_vec(),
            _ => Vec::new(),
        }
    }

    /// The agent as an Agent Client Protocol server (JSON-RPC lines on stdin/stdout), for the
    /// agents that speak it themselves: grok `agent stdio`, opencode `acp`, hermes `acp`,
    /// gemini `--acp`.
    /// `None` for pi, Codex and Claude Code, which need third-party adapters. Stdin is closed in
    /// the returned command: set it to piped before spawning.
    pub fn acp(&self) -> Option<Command> {
        let args: &[&str] = match self.agent {
            Agent::Grok => &["agent", "stdio"],
            Agent::Opencode => &["acp"],
            Agent::Hermes => &["acp"],
            Agent::Gemini => &["--acp"],
            Agent::Pi | Agent::Codex | Agent::Claude => return None,
        };
        let mut cmd = self.command();
        cmd.args(args);
        Some(cmd)
    }

    fn create_dir(&self, path: &Path) -> Result<(), AgentError> {
        std::fs::create_dir_all(path).map_err(|source| AgentError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    fn write(&self, relative: &str, contents: &str) -> Result<(), AgentError> {
        let path = self.home().join(relative);
        if let Some(parent) = path.parent() {
            self.create_dir(parent)?;
        }
        std::fs::write(&path, contents).map_err(|source| AgentError::Io { path, source })
    }

    fn env(&mut self, key: &str, value: impl Into<String>) {
        self.envs.push((key.to_string(), value.into()));
    }

    /// Writes the agent's config file and sets its environment.
    fn configure(&mut self, url: &str) -> Result<(), AgentError> {
        let v1 = format!("{url}/v1");
        match self.agent {
            Agent::Pi => {
                let models = json!({"providers": {"mock": {
                    "baseUrl": v1, "api": "openai-completions", "apiKey": API_KEY,
                    "models": [{"id": MODEL, "name": "Mock model", "contextWindow": 128000, "maxTokens": 4096}]}}});
                self.write(".pi/agent/models.json", &pretty(&models))?;
                // Without it pi downloads fd and rg at startup.
                self.env("PI_OFFLINE", "1");
            }
            Agent::Codex => {
                // A custom provider goes straight to HTTPS; the built-in one first tries a
                // WebSocket. `wire_api = "chat"` is a config error in current Codex. Its
                // terminal UI would otherwise start an app-server daemon that outlives it.
                let config = format!(
                    "model = \"{MODEL}\"\nmodel_provider = \"mock\"\n\n\
                     [model_providers.mock]\nname = \"Mock\"\nbase_url = \"{v1}\"\n\
                     env_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\n\
                     request_max_retries = 0\nstream_max_retries = 0\n\n\
                     [features]\ndaemon_auto_start = false\n"
                );
                self.write(".codex/config.toml", &config)?;
                self.env("CODEX_HOME", self.home().join(".codex").to_string_lossy());
                self.env("MOCK_API_KEY", API_KEY);
            }
            Agent::Grok => {
                let config = format!(
                    "[model.mock]\nmodel = \"{MODEL}\"\nbase_url = \"{v1}\"\napi_key = \"{API_KEY}\"\n\
                     api_backend = \"chat_completions\"\ncontext_window = 128000\n\n\
                     [models]\ndefault = \"mock\"\n\n[cli]\nauto_update = false\n"
                );
                self.write(".grok/config.toml", &config)?;
            }
            Agent::Claude => {
                self.env("ANTHROPIC_BASE_URL", url);
                self.env("ANTHROPIC_API_KEY", API_KEY);
                self.env("ANTHROPIC_MODEL", MODEL);
                self.env("ANTHROPIC_SMALL_FAST_MODEL", MODEL);
                self.env("ANTHROPIC_DEFAULT_HAIKU_MODEL", MODEL);
                self.env("ANTHROPIC_DEFAULT_SONNET_MODEL", MODEL);
                self.env("ANTHROPIC_DEFAULT_OPUS_MODEL", MODEL);
                self.env(
                    "CLAUDE_CONFIG_DIR",
                    self.home().join(".claude").to_string_lossy(),
                );
                self.env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
                self.env("DISABLE_AUTOUPDATER", "1");
                // Its terminal UI otherwise starts with the first-run setup (which wants to
                // reach Anthropic), asks whether to use the key (it remembers the approved ones
                // by their last 20 characters) and whether to trust the work directory.
                let workdir = self.workdir().to_string_lossy().into_owned();
                let key_tail = &API_KEY[API_KEY.len().saturating_sub(20)..];
                let state = json!({
                    "hasCompletedOnboarding": true,
                    "theme": "dark",
                    "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
                    "projects": {workdir: {
                        "hasTrustDialogAccepted": true,
                        "hasCompletedProjectOnboarding": true}}});
                self.write(".claude/.claude.json", &pretty(&state))?;
            }
            Agent::Opencode => {
                let config = json!({
                    "model": format!("mock/{MODEL}"),
                    "small_model": format!("mock/{MODEL}"),
                    "autoupdate": false,
                    "share": "disabled",
                    "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny"},
                    "provider": {"mock": {
                        "npm": "@ai-sdk/openai-compatible", "name": "Mock",
                        "options": {"baseURL": v1, "apiKey": API_KEY},
                        "models": {MODEL: {"name": "Mock model"}}}}});
                self.write(".config/opencode/opencode.json", &pretty(&config))?;
                self.env(
                    "XDG_CONFIG_HOME",
                    self.home().join(".config").to_string_lossy(),
                );
                self.env(
                    "XDG_DATA_HOME",
                    self.home().join(".local/share").to_string_lossy(),
                );
                self.env(
                    "XDG_CACHE_HOME",
                    self.home().join(".cache").to_string_lossy(),
                );
                self.env(
                    "XDG_STATE_HOME",
                    self.home().join(".local/state").to_string_lossy(),
                );
                self.env("OPENCODE_DISABLE_MODELS_FETCH", "1");
                self.env("OPENCODE_DISABLE_AUTOUPDATE", "1");
                self.env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1");
            }
            Agent::Hermes => {
                let config = format!(
                    "model:\n  provider: custom\n  default: {MODEL}\n  base_url: {v1}\n  \
                     api_key: {API_KEY}\n  api_mode: chat_completions\n"
                );
                self.write(".hermes/config.yaml", &config)?;
                self.env("HERMES_HOME", self.home().join(".hermes").to_string_lossy());
            }
            Agent::Gemini => {
                // Gemini CLI speaks only the Gemini protocol; the base URL has no version (it
                // adds `/v1beta`). Update checks, telemetry and usage statistics stay off.
                let settings = json!({
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    "model": {"name": MODEL},
                    "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
                    "telemetry": {"enabled": false},
                    "privacy": {"usageStatisticsEnabled": false}});
                self.write(".gemini/settings.json", &pretty(&settings))?;
                self.env("GOOGLE_GEMINI_BASE_URL", url);
                self.env("GEMINI_API_KEY", API_KEY);
                self.env("GEMINI_CLI_TRUST_WORKSPACE", "true");
            }
        }
        Ok(())
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for agent in Agent::ALL {
            assert_eq!(Agent::from_name(agent.name()), Some(agent));
        }
        assert_eq!(Agent::from_name("nope"), None);
    }

    #[test]
    fn skip_lists() {
        assert!(Agent::Codex.is_listed_in("pi, codex"));
        assert!(Agent::Grok.is_listed_in("all"));
        assert!(!Agent::Pi.is_listed_in("pipx,codex"));
        assert!(!Agent::Pi.is_listed_in(""));
    }

    #[test]
    fn not_installed_says_what_to_run() {
        let error = AgentError::NotInstalled {
            agent: "grok",
            path: PathBuf::from("/x/bin/grok"),
        };
        let text = error.to_string();
        assert!(
            text.contains("/x/bin/grok") && text.contains("scripts/agents/install grok"),
            "{text}"
        );
        assert!(text.contains("WUJIE_SKIP_AGENTS=grok"), "{text}");
    }

    #[test]
    fn home_points_the_agent_at_the_mock() {
        // Uses a fake executable so the test does not depend on the installed agents.
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("pi");
        std::fs::write(&fake, "").unwrap();
        let mut home = AgentHome {
            agent: Agent::Pi,
            root: tempfile::tempdir().unwrap(),
            program: fake,
            envs: Vec::new(),
        };
        home.configure("http://127.0.0.1:9").unwrap();
        let models = std::fs::read_to_string(home.home().join(".pi/agent/models.json")).unwrap();
        assert!(models.contains("http://127.0.0.1:9/v1"), "{models}");
        let cmd = home.headless("hi");
        let envs: Vec<_> = cmd.get_envs().collect();
        assert!(envs.iter().any(|(k, v)| *k == "PI_OFFLINE" && v.is_some()));
        assert!(
            envs.iter()
                .any(|(k, v)| *k == "HOME" && *v == Some(home.home().as_os_str()))
        );
        assert_eq!(cmd.get_current_dir(), Some(home.workdir().as_path()));
        assert_eq!(cmd.get_args().last().and_then(|a| a.to_str()), Some("hi"));
    }
}
