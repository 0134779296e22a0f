//! A real agent in its own terminal UI as an interactive provider (its sample under
//! `localrun-providers/`), against the mock model server, driven in tmux like a person: the
//! set-up, the keys a person types, and the checks the agents' tests share.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use wujie_mockllm::agents::{Agent, AgentHome, agents_dir};
use wujie_mockllm::{LatestInput, MockLlm, Script};

use super::{Env, Tmux, WUJIE};

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
    pub fn start(agent: Agent, script: Script, ui: Ui) -> Option<TuiAgent> {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let (mock, home) = runtime
            .block_on(agent.with_mock(script))
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
    let vars: Vec<String> = home
        .envs()
        .iter()
        .map(|(k, v)| format!("{k}='{v}'"))
        .collect();
    format!(
        "unset CI WUJIE_RUN_ID WUJIE_ISSUE_ID WUJIE_TOKEN WUJIE_SERVER_URL; cd {work} && \
         env WUJIE_HOME={wujie_home} HOME={home} PATH={bin}:$PATH TERM=xterm-256color {vars} \
         {WUJIE} {args}; echo EXIT=$?; trap '' INT; sleep 600",
        work = home.workdir().display(),
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
