//! A real agent in its own terminal UI as an interactive provider (its sample under
//! `localrun-providers/`), against the mock model server, driven in tmux like a person: the
//! set-up, the keys a person types, and the checks the agents' tests share.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use wujie_mockllm::agents::{Agent, AgentHome, agents_dir};
use wujie_mockllm::{LatestInput, MockLlm, Script};

use super::{Env, Tmux, V2, WUJIE};

/// How an agent's terminal UI looks to a test.
pub struct Ui {
    /// Text on the screen once the agent is up and waiting for a prompt.
    pub ready: &'static str,
    /// How long the agent may take to show `ready`.
    pub starts_within: Duration,
    pub cols: u16,
    pub rows: u16,
}

/// The agent's mock model server and home, and a wujie profile with its sample installed.
pub struct TuiAgent {
    pub runtime: tokio::runtime::Runtime,
    pub mock: MockLlm,
    pub home: AgentHome,
    pub env: Env,
    agent: Agent,
    ui: Ui,
}

/// The title and description of the issue whose context must reach the model.
pub const CONTEXT_TITLE: &str = "Cache the parsed manifests";
pub const CONTEXT_DESCRIPTION: &str = "Keep an LRU of 64 entries.";

impl TuiAgent {
    /// The mock answering by `script` and `localrun-providers/<agent>` installed; None when
    /// the agent is skipped (which the harness says).
    pub fn require(agent: Agent, script: Script, ui: Ui) -> Option<TuiAgent> {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let (mock, home) = runtime
            .block_on(agent.require_mock(script))
            .unwrap_or_else(|error| panic!("{error}"))?;
        let env = Env::new();
        let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../localrun-providers")
            .join(agent.name());
        let installed = env.ok(&["local-run", "provider", "install", sample.to_str().unwrap()]);
        assert!(
            installed.contains(&format!("Installed {}", agent.name())),
            "{installed}"
        );
        Some(TuiAgent {
            runtime,
            mock,
            home,
            env,
            agent,
            ui,
        })
    }

    /// `wujie ARGS` in a tmux window, in the agent's work dir with the agent's home and
    /// environment, once the agent is ready for a prompt.
    pub fn tmux(&self, name: &str, args: &str) -> Tmux {
        let tmux = Tmux::start(
            name,
            &agent_shell(&self.home, &self.env, args),
            self.ui.cols,
            self.ui.rows,
        );
        tmux.poll_for(self.ui.starts_within, |s| s.contains(self.ui.ready))
            .unwrap_or_else(|| panic!("{} did not start:\n{}", self.agent.name(), tmux.screen()));
        tmux
    }

    /// `wujie ARGS` typed into an interactive bash in tmux ([`start_wujie_in_shell`]), once the
    /// agent is ready for a prompt.
    pub fn shell(&self, name: &str, args: &str) -> Tmux {
        let size = (self.ui.cols, self.ui.rows);
        let tmux = start_wujie_in_shell(&self.env, &self.home, name, args, size);
        tmux.poll_for(self.ui.starts_within, |s| s.contains(self.ui.ready))
            .unwrap_or_else(|| panic!("{} did not start:\n{}", self.agent.name(), tmux.screen()));
        tmux
    }

    /// Picks "create the issue" in the open `/wujie` menu, and "continue in this context" on
    /// its card; the screen once wujie's notice has closed again.
    pub fn create_from_menu(&self, tmux: &Tmux) -> String {
        tmux.keys(&["Enter"]);
        tmux.wait_text("continue in this context");
        tmux.keys(&["Enter"]);
        tmux.wait_text("wujie: created WUJ-1");
        tmux.wait_settled("the notice to close", |s| {
            !s.contains("wujie: created") && s.contains(self.ui.ready)
        })
    }

    /// The model requests' system prompts, joined.
    pub fn system_prompts(&self) -> String {
        self.mock
            .model_requests()
            .iter()
            .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
            .filter(|m| m["role"] == "system")
            .map(|m| m["content"].to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What the model got as the user's text, request by request.
    pub fn user_prompts(&self) -> Vec<String> {
        self.mock
            .model_requests()
            .iter()
            .filter_map(|r| match r.latest_input() {
                Some(LatestInput::UserText(text)) => Some(text),
                _ => None,
            })
            .collect()
    }

    /// An issue with a title and a description; its key.
    pub fn create_context_issue(&self) -> String {
        let created = self.env.json(&[
            "issue",
            "create",
            "--title",
            CONTEXT_TITLE,
            "--description",
            CONTEXT_DESCRIPTION,
        ]);
        created["key"].as_str().unwrap().to_owned()
    }

    /// The model was told about the issue of [`TuiAgent::create_context_issue`].
    pub fn assert_context_reached_the_model(&self) {
        let prompts = self.system_prompts();
        assert!(
            prompts.contains(CONTEXT_TITLE) && prompts.contains("LRU of 64"),
            "the issue's context reached the model:\n{prompts}"
        );
    }

    /// After a discussion "please run echo hello" (a tool call, answered `done`) became WUJ-1
    /// and went on with "go ahead" (answered `pong`): the issue, its run and the promoted
    /// discussion hold each turn where it belongs, and the tool really ran (the model got its
    /// output back). Returns the discussion as `discussion show` gives it.
    pub fn assert_promoted_then_ran(&self) -> Value {
        let issue = self.env.issue("WUJ-1");
        assert_eq!(issue["title"], "please run echo hello");
        let run = &issue["runs"][0];
        assert_eq!(run["provider"], self.agent.name());
        assert_eq!(run["status"], "succeeded", "{run:#}");
        assert_eq!(said(&run["messages"]), pong_turns(&["go ahead"]), "{run:#}");
        assert!(!run["usage"].as_array().unwrap().is_empty(), "{run:#}");

        let discussion = &self.env.json(&["discussion", "list"])[0];
        assert_eq!(discussion["status"], "promoted");
        let shown = self.show(discussion);
        assert_eq!(
            said(&shown["entries"]),
            [
                pair("user_input", "please run echo hello"),
                pair("final", "done")
            ],
            "{shown:#}"
        );
        let results: Vec<String> = self
            .mock
            .model_requests()
            .iter()
            .filter_map(|r| match r.latest_input() {
                Some(LatestInput::ToolResult(out)) => Some(out),
                _ => None,
            })
            .collect();
        assert!(results.iter().any(|r| r.contains("hello")), "{results:?}");
        shown
    }

    /// `discussion show` of a discussion as `discussion list` gives it.
    pub fn show(&self, listed: &Value) -> Value {
        self.env
            .json(&["discussion", "show", listed["id"].as_str().unwrap()])
    }

    /// The one discussion there is, shown.
    pub fn only_discussion(&self) -> Value {
        let discussions = self.env.json(&["discussion", "list"]);
        assert_eq!(discussions.as_array().unwrap().len(), 1, "{discussions:#}");
        self.show(&discussions[0])
    }

    /// Stops the mock model server.
    pub fn shutdown(self) {
        self.runtime.block_on(self.mock.shutdown());
    }
}

/// The shell line for tmux: `wujie ARGS` in the agent's work dir with the agent's home, its
/// environment and the installed agents on PATH, with no run context inherited; then the exit
/// status (`EXIT=N`), and the window kept open to read it. `CI` is unset too: the session
/// stands for a person at a terminal, and Gemini CLI with `CI` set runs headless (it then
/// refuses to start without a prompt) even on a terminal.
pub fn agent_shell(home: &AgentHome, env: &Env, args: &str) -> String {
    format!(
        "{} {} {WUJIE} {args}; echo EXIT=$?; trap '' INT; sleep 600",
        in_work_dir(home),
        agent_env(home, env)
    )
}

/// Unsets the run context (and `CI`, see [`agent_shell`]) and goes to the agent's work
/// directory: the start of a shell line.
fn in_work_dir(home: &AgentHome) -> String {
    format!(
        "unset CI WUJIE_RUN_ID WUJIE_ISSUE_ID WUJIE_TOKEN WUJIE_SERVER_URL; cd {} &&",
        home.workdir().display()
    )
}

/// `env …` with the profile, the agent's home and environment, and the installed agents on
/// PATH, for the command that follows it.
fn agent_env(home: &AgentHome, env: &Env) -> String {
    let vars: Vec<String> = home
        .envs()
        .iter()
        .map(|(k, v)| format!("{k}='{v}'"))
        .collect();
    format!(
        "env WUJIE_HOME={wujie_home} HOME={home} PATH={bin}:$PATH TERM=xterm-256color {vars}",
        wujie_home = env.home.path().display(),
        home = home.home().display(),
        bin = agents_dir().join("bin").display(),
        vars = vars.join(" "),
    )
}

/// Types `text` and, once the agent shows it in its input line (`❯ text`), Enter.
pub fn say(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    tmux.wait_text(&format!("❯ {text}"));
    tmux.keys(&["Enter"]);
}

/// Types `/wujie`; the screen once wujie's menu is open.
pub fn open_wujie_menu(tmux: &Tmux) -> String {
    tmux.keys(&["-l", "/wujie"]);
    tmux.wait_text("/wujiecreateissue")
}

/// `/quit` and wujie's exit status line.
pub fn quit(tmux: &Tmux) -> String {
    say(tmux, "/quit");
    tmux.poll_for(Duration::from_secs(60), |s| s.contains("EXIT="))
        .unwrap_or_else(|| panic!("the agent did not quit:\n{}", tmux.screen()))
}

/// [`quit`], and wujie exited 0.
pub fn quit_ok(tmux: &Tmux) {
    let end = quit(tmux);
    assert!(end.contains("EXIT=0"), "{end}");
}

/// The entries of `said` whose kind is one of `kinds`, in order.
pub fn of_kinds(said: Vec<(String, String)>, kinds: &[&str]) -> Vec<(String, String)> {
    said.into_iter()
        .filter(|(kind, _)| kinds.contains(&kind.as_str()))
        .collect()
}

/// (type, content) of a run's or discussion's messages.
pub fn said(messages: &Value) -> Vec<(String, String)> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["type"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

pub fn pair(kind: &str, content: &str) -> (String, String) {
    (kind.to_owned(), content.to_owned())
}

/// Each prompt as the user's input, answered `pong`.
pub fn pong_turns(prompts: &[&str]) -> Vec<(String, String)> {
    prompts
        .iter()
        .flat_map(|p| [pair("user_input", p), pair("final", "pong")])
        .collect()
}

/// One of `issue`'s runs holds just the turn `prompt`, answered `pong` (`what` says which).
pub fn assert_a_run_holds_only(issue: &Value, prompt: &str, what: &str) {
    let turn = pong_turns(&[prompt]);
    assert!(
        issue["runs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| said(&r["messages"]) == turn),
        "{what}:\n{issue:#}"
    );
}

/// `agent`'s mock model server answering by `script`, and its home; None when the agent is
/// skipped (which the harness says).
pub fn require_mock(
    runtime: &tokio::runtime::Runtime,
    agent: Agent,
    script: Script,
) -> Option<(MockLlm, AgentHome)> {
    runtime
        .block_on(agent.require_mock(script))
        .unwrap_or_else(|error| panic!("{error}"))
}

/// `wujie ARGS` in tmux (100×30), in the agent's work directory with its environment, then
/// `EXIT=<code>`.
pub fn start_wujie(env: &Env, home: &AgentHome, name: &str, wujie_args: &str) -> Tmux {
    Tmux::start(name, &agent_shell(home, env, wujie_args), 100, 30)
}

/// `wujie ARGS` typed into an interactive bash (job control on) in a `cols`×`rows` tmux
/// window, under some shell output, in the agent's work directory with its home and
/// environment, as [`agent_shell`] has them.
pub fn start_wujie_in_shell(
    env: &Env,
    home: &AgentHome,
    name: &str,
    wujie_args: &str,
    (cols, rows): (u16, u16),
) -> Tmux {
    let shell = format!(
        "{} exec {} PS1='$ ' bash --norc --noprofile -i",
        in_work_dir(home),
        agent_env(home, env)
    );
    let tmux = Tmux::start(name, &shell, cols, rows);
    tmux.wait_for("the shell's prompt", |s| s.trim_end().ends_with('$'));
    tmux.keys(&["-l", &format!("seq 1 12; {WUJIE} {wujie_args}")]);
    tmux.keys(&["Enter"]);
    tmux
}

/// What Ctrl+Z did to the terminal of an agent under `wujie` ([`Tmux::modes`]).
#[derive(Debug)]
pub struct Stopped {
    /// While the agent ran, before Ctrl+Z.
    pub running: String,
    /// While `wujie` was stopped, the shell at its prompt.
    pub stopped: String,
}

/// `stop` (Ctrl+Z, or SIGTSTP to `wujie`) with the agent up (started by
/// [`start_wujie_in_shell`]): `wujie` stops as a job,
/// the shell has the terminal in its own modes (`0 1 0`: main screen, cursor shown, no mouse
/// reporting) and runs a command; then `fg`, and the screen once `ready` holds on it again
/// (within `patience`). Whether the agent works again is for the caller to see, by its own
/// prompt and answer.
pub fn stop_then_fg(
    tmux: &Tmux,
    stop: impl FnOnce(),
    patience: Duration,
    ready: impl Fn(&str) -> bool,
) -> (Stopped, String) {
    let running = tmux.modes();
    stop();
    let screen = tmux.wait_for("bash to report the job stopped", |s| {
        s.contains("Stopped") && s.trim_end().ends_with('$')
    });
    let stopped = tmux.modes();
    assert_eq!(
        stopped, "0 1 0",
        "the shell's terminal modes while the agent is stopped (were {running} before):\n{screen}"
    );
    tmux.keys(&["-l", "echo shell-$((6*7))"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("shell-42");
    tmux.keys(&["-l", "fg"]);
    tmux.keys(&["Enter"]);
    let back = tmux
        .poll_for(patience, ready)
        .unwrap_or_else(|| panic!("the agent is not back after fg:\n{}", tmux.screen()));
    eprintln!("stopped: modes {running} while running, {stopped} while stopped");
    (Stopped { running, stopped }, back)
}

/// [`stop_then_fg`] by Ctrl+Z.
pub fn ctrl_z_then_fg(
    tmux: &Tmux,
    patience: Duration,
    ready: impl Fn(&str) -> bool,
) -> (Stopped, String) {
    stop_then_fg(tmux, || tmux.keys(&["C-z"]), patience, ready)
}

/// The `wujie run` process in `home`'s work directory (not the adapter, `wujie adapter`).
pub fn wujie_run_in(home: &AgentHome) -> i32 {
    let work = home.workdir().canonicalize().unwrap_or(home.workdir());
    super::wait_for_wujie(
        "wujie run in the agent's work directory",
        |pid, cmdline, _| {
            cmdline.split('\0').nth(1) == Some("run")
                && std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == work)
        },
    )
}

/// [`start_wujie`] below some earlier output, so that the agent's UI does not start at the
/// top of the screen.
pub fn start_wujie_below_output(env: &Env, home: &AgentHome, name: &str, wujie_args: &str) -> Tmux {
    let shell = format!("seq 1 12; {}", agent_shell(home, env, wujie_args));
    Tmux::start(name, &shell, 100, 30)
}

/// An issue whose description carries `marker`, the sign that its context reached the model;
/// its key.
pub fn create_marked_issue(env: &Env, marker: &str) -> String {
    let issue = env.json(&[
        "issue",
        "create",
        "--title",
        "echo something",
        "--description",
        &format!("Remember: {marker}."),
    ]);
    issue["key"].as_str().expect("key").to_owned()
}

/// In the open `/wujie` menu: "create the issue", then "continue in this context" on its
/// card; returns once wujie's notice has closed and `ready` is back on the screen.
pub fn create_issue_from_menu(tmux: &Tmux, ready: &str) {
    tmux.keys(&["Enter"]);
    tmux.wait_text("Create the issue and continue in this context");
    tmux.keys(&["Enter"]);
    tmux.wait_text("wujie: created WUJ-1");
    tmux.wait_settled("the notice to close", |s| {
        !s.contains("wujie: created") && s.contains(ready)
    });
}

/// (type, what) of a run's messages: a tool use as its tool and input, a tool result as
/// `tool_result` shows it, anything else as its content.
pub fn said_with_tools(
    messages: &Value,
    tool_result: impl Fn(&Value) -> String,
) -> Vec<(String, String)> {
    messages
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let kind = m["type"].as_str().unwrap_or_default().to_owned();
            let what = match kind.as_str() {
                "tool_use" => format!("{} {}", m["tool"].as_str().unwrap_or_default(), m["input"]),
                "tool_result" => tool_result(m),
                _ => m["content"].as_str().unwrap_or_default().to_owned(),
            };
            (kind, what)
        })
        .collect()
}

/// A tool result shown as its tool's name.
pub fn tool_name(m: &Value) -> String {
    m["tool"].as_str().unwrap_or_default().to_owned()
}

/// A tool result shown as its tool's name and output.
pub fn tool_and_output(m: &Value) -> String {
    format!(
        "{} {}",
        m["tool"].as_str().unwrap_or_default(),
        m["output"].as_str().unwrap_or_default()
    )
}

/// A tool result shown as its tool's name and output without surrounding whitespace.
pub fn tool_and_trimmed_output(m: &Value) -> String {
    format!(
        "{} {}",
        m["tool"].as_str().unwrap_or_default(),
        m["output"].as_str().unwrap_or_default().trim()
    )
}

/// Each (type, what) as owned strings, to compare with [`said_with_tools`].
pub fn pairs(said: &[(&str, &str)]) -> Vec<(String, String)> {
    said.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// (input, output) tokens of each usage of a run.
pub fn usage_of(run: &Value) -> Vec<(u64, u64)> {
    run["usage"]
        .as_array()
        .expect("usage")
        .iter()
        .map(|u| {
            (
                u["input_tokens"].as_u64().unwrap(),
                u["output_tokens"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The run of `issue` that is not `run`.
pub fn other_run<'a>(issue: &'a Value, run: &Value) -> &'a Value {
    issue["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] != run["id"])
        .unwrap_or_else(|| panic!("a second run: {issue:#}"))
}

/// `provider list` shows `name` as a built-in provider of protocol v2.
pub fn assert_built_in_interactive(env: &Env, name: &str) {
    let list = env.json(&["local-run", "provider", "list"]);
    let provider = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("{name} listed: {list:#}"));
    assert_eq!(provider["kind"], "builtin", "{provider:#}");
    assert_eq!(provider["protocol"], V2, "{provider:#}");
}

/// `wujie adapter NAME` with the agent neither on PATH nor named by `bin_var`: exit 127 and no
/// events; its error output.
pub fn adapter_without_agent(env: &Env, name: &str, bin_var: &str) -> String {
    let out = env
        .cmd()
        .args(["adapter", name])
        .env("PATH", "/nonexistent")
        .env_remove(bin_var)
        .output()
        .expect("wujie runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(out.stdout.is_empty(), "no events: {:?}", out.stdout);
    err
}

/// `wujie adapter ARGS` with `bin_var` naming `/bin/true`, refused as a usage error (exit 2);
/// its error output.
pub fn adapter_refuses(env: &Env, args: &[&str], bin_var: &str) -> String {
    let out = env
        .cmd()
        .arg("adapter")
        .args(args)
        .env(bin_var, "/bin/true")
        .output()
        .expect("wujie runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// The first run of issue `key`, which `provider` ran and which succeeded.
pub fn first_run_succeeded(env: &Env, key: &str, provider: &str) -> Value {
    let run = env.issue(key)["runs"][0].clone();
    assert_eq!(run["provider"], provider, "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    run
}
