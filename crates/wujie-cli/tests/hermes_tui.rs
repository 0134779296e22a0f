//! The real Hermes Agent in its chat REPL as an interactive provider
//! (`localrun-providers/hermes`), against the mock model server, driven in tmux like a person:
//! a discussion with a scripted tool call, `/wujie`, create, and the same Hermes session going
//! on in the issue's run; `wujie run KEY -- hermes` with the issue's context reaching the
//! model, and a resume that reports nothing twice.
//!
//! Fails when hermes is not installed, saying to run `scripts/agents/install hermes`, unless
//! `WUJIE_SKIP_AGENTS` lists hermes (or says `all`).

mod common;

use std::path::PathBuf;

use common::*;
use wujie_mockllm::agents::{Agent, AgentHome, agents_dir};
use wujie_mockllm::{LatestInput, MockLlm, Script};

/// Hermes' status bar: it is up and waiting for a prompt.
const READY: &str = "⚕ mock-model";

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../localrun-providers")
}

/// A `terminal` call for `echo hello`, its answer `done`, and `pong` for anything else.
fn script() -> Script {
    Script::from_json(
        r#"{"turns": [
            {"when": {"user_contains": "echo hello"},
             "reply": {"text": "Running it.",
                       "tool_calls": [{"tool": "terminal", "arguments": {"command": "echo hello"}}]}},
            {"when": {"tool_result_contains": "hello"},
             "reply": {"text": "done", "usage": {"input_tokens": 20, "output_tokens": 2}}},
            {"when": {}, "reply": {"text": "pong"}}
        ]}"#,
    )
    .expect("script")
}

struct Hermes {
    runtime: tokio::runtime::Runtime,
    mock: MockLlm,
    home: AgentHome,
    env: Env,
}

impl Hermes {
    fn start() -> Option<Hermes> {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let (mock, home) = runtime
            .block_on(Agent::Hermes.with_mock(script()))
            .unwrap_or_else(|error| panic!("{error}"))?;
        let env = Env::new();
        env.ok(&[
            "local-run",
            "provider",
            "install",
            samples().join("hermes").to_str().unwrap(),
        ]);
        Some(Hermes {
            runtime,
            mock,
            home,
            env,
        })
    }

    fn tmux(&self, name: &str, args: &str) -> Tmux {
        let vars: Vec<String> = self
            .home
            .envs()
            .iter()
            .map(|(k, v)| format!("{k}='{v}'"))
            .collect();
        let shell = format!(
            "unset WUJIE_RUN_ID WUJIE_ISSUE_ID WUJIE_TOKEN WUJIE_SERVER_URL; cd {work} && \
             env WUJIE_HOME={wujie_home} HOME={home} PATH={bin}:$PATH TERM=xterm-256color {vars} \
             {WUJIE} {args}; echo EXIT=$?; trap '' INT; sleep 600",
            work = self.home.workdir().display(),
            wujie_home = self.env.home.path().display(),
            home = self.home.home().display(),
            bin = agents_dir().join("bin").display(),
            vars = vars.join(" "),
        );
        let tmux = Tmux::start(name, &shell, 110, 40);
        // Hermes takes a while to start (it probes the model server first).
        tmux.poll_for(std::time::Duration::from_secs(180), |s| s.contains(READY))
            .unwrap_or_else(|| panic!("Hermes did not start:\n{}", tmux.screen()));
        tmux
    }

    fn system_prompts(&self) -> String {
        self.mock
            .model_requests()
            .iter()
            .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
            .filter(|m| m["role"] == "system")
            .map(|m| m["content"].to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Whether Hermes shows a line that is `text` (its answers are indented in a box).
fn shows(screen: &str, text: &str) -> bool {
    screen.lines().any(|l| l.trim() == text)
}

fn say(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    tmux.wait_text(&format!("❯ {text}"));
    tmux.keys(&["Enter"]);
}

fn quit(tmux: &Tmux) -> String {
    say(tmux, "/quit");
    tmux.poll_for(std::time::Duration::from_secs(60), |s| s.contains("EXIT="))
        .unwrap_or_else(|| panic!("Hermes did not quit:\n{}", tmux.screen()))
}

/// The session id Hermes shows in its banner (`Session: 20261201_071244_ec618d`).
fn banner_session(screen: &str) -> String {
    screen
        .lines()
        .find_map(|l| l.split("Session: ").nth(1))
        .map(|rest| rest.split_whitespace().next().unwrap_or("").to_owned())
        .unwrap_or_else(|| panic!("no session in the banner:\n{screen}"))
}

fn said(messages: &serde_json::Value) -> Vec<(String, String)> {
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

fn pair(kind: &str, content: &str) -> (String, String) {
    (kind.to_owned(), content.to_owned())
}

#[test]
fn a_hermes_discussion_with_a_tool_call_becomes_an_issue_and_keeps_going() {
    let Some(hermes) = Hermes::start() else {
        return;
    };
    let tmux = hermes.tmux("hermes-discuss", "discuss -- hermes --yolo");
    let session = banner_session(&tmux.screen());
    say(&tmux, "please run echo hello");
    tmux.wait_settled("the answer after the tool call", |s| {
        shows(s, "done") && s.contains("❯")
    });

    tmux.keys(&["-l", "/wujie"]);
    let menu = tmux.wait_text("/wujiecreateissue");
    let input_row = menu.lines().position(|l| l.starts_with("❯ /wujie"));
    let menu_row = menu.lines().position(|l| l.contains("/wujiecreateissue"));
    assert!(
        matches!((input_row, menu_row), (Some(i), Some(m)) if m > i),
        "the menu opens under Hermes' input line:\n{menu}"
    );
    tmux.keys(&["Enter"]);
    tmux.wait_text("continue in this context");
    tmux.keys(&["Enter"]);
    tmux.wait_text("wujie: created WUJ-1");
    tmux.wait_settled("the notice to close", |s| {
        !s.contains("wujie: created") && s.contains(READY)
    });
    assert!(shows(&tmux.screen(), "done"), "{}", tmux.screen());

    say(&tmux, "go ahead");
    tmux.wait_for("the next answer", |s| shows(s, "pong"));
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let issue = hermes.env.issue("WUJ-1");
    assert_eq!(issue["title"], "please run echo hello");
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "hermes");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    assert_eq!(
        said(&run["messages"]),
        [pair("user_input", "go ahead"), pair("final", "pong")],
        "{run:#}"
    );
    assert!(!run["usage"].as_array().unwrap().is_empty(), "{run:#}");
    let discussion = &hermes.env.json(&["discussion", "list"])[0];
    assert_eq!(discussion["status"], "promoted");
    let shown = hermes
        .env
        .json(&["discussion", "show", discussion["id"].as_str().unwrap()]);
    assert_eq!(
        said(&shown["entries"]),
        [
            pair("user_input", "please run echo hello"),
            pair("final", "done")
        ],
        "{shown:#}"
    );
    assert_eq!(shown["native_session_ids"], serde_json::json!([session]));
    let results: Vec<String> = hermes
        .mock
        .model_requests()
        .iter()
        .filter_map(|r| match r.latest_input() {
            Some(LatestInput::ToolResult(out)) => Some(out),
            _ => None,
        })
        .collect();
    assert!(results.iter().any(|r| r.contains("hello")), "{results:?}");
    hermes.runtime.block_on(hermes.mock.shutdown());
}

#[test]
fn hermes_on_an_issue_gets_its_context_and_a_resume_reports_nothing_twice() {
    let Some(hermes) = Hermes::start() else {
        return;
    };
    let created = hermes.env.json(&[
        "issue",
        "create",
        "--title",
        "Cache the parsed manifests",
        "--description",
        "Keep an LRU of 64 entries.",
    ]);
    let key = created["key"].as_str().unwrap().to_owned();
    let tmux = hermes.tmux("hermes-run", &format!("run {key} -- hermes --yolo"));
    let session = banner_session(&tmux.screen());
    say(&tmux, "hi");
    tmux.wait_for("the answer", |s| shows(s, "pong"));
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
    drop(tmux);
    let prompts = hermes.system_prompts();
    assert!(
        prompts.contains("Cache the parsed manifests") && prompts.contains("LRU of 64"),
        "the issue's context reached the model:\n{prompts}"
    );

    let tmux = hermes.tmux(
        "hermes-resume",
        &format!("run {key} -- hermes --yolo --resume {session}"),
    );
    say(&tmux, "again");
    tmux.wait_settled("the second answer", |s| {
        s.lines()
            .skip_while(|l| !l.contains("again"))
            .any(|l| l.trim() == "pong")
    });
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let issue = hermes.env.issue(&key);
    let runs = issue["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{issue:#}");
    let by_said: Vec<Vec<(String, String)>> = runs.iter().map(|r| said(&r["messages"])).collect();
    assert!(
        by_said.contains(&vec![pair("user_input", "hi"), pair("final", "pong")]),
        "{issue:#}"
    );
    assert!(
        by_said.contains(&vec![pair("user_input", "again"), pair("final", "pong")]),
        "the resumed run has only its own turn:\n{issue:#}"
    );
    // The resumed run counts only its own tokens: one turn answered like the first run's, not
    // the session's total (which would add the first run's again).
    let resumed = runs
        .iter()
        .find(|r| said(&r["messages"])[0].1 == "again")
        .unwrap();
    let input: u64 = resumed["usage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["input_tokens"].as_u64().unwrap())
        .sum();
    let first = runs
        .iter()
        .find(|r| said(&r["messages"])[0].1 == "hi")
        .unwrap();
    let first_input: u64 = first["usage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["input_tokens"].as_u64().unwrap())
        .sum();
    assert!(input > 0 && input <= first_input, "{issue:#}");
    hermes.runtime.block_on(hermes.mock.shutdown());
}

#[test]
fn discuss_with_hermes_resume_lands_on_the_same_discussion_without_duplicates() {
    let Some(hermes) = Hermes::start() else {
        return;
    };
    let tmux = hermes.tmux("hermes-discuss-1", "discuss -- hermes --yolo");
    let session = banner_session(&tmux.screen());
    say(&tmux, "first");
    tmux.wait_for("the first answer", |s| shows(s, "pong"));
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
    drop(tmux);

    let tmux = hermes.tmux(
        "hermes-discuss-2",
        &format!("discuss -- hermes --yolo --resume {session}"),
    );
    say(&tmux, "second");
    tmux.wait_settled("the second answer", |s| {
        s.lines()
            .skip_while(|l| !l.contains("second"))
            .any(|l| l.trim() == "pong")
    });
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let discussions = hermes.env.json(&["discussion", "list"]);
    assert_eq!(discussions.as_array().unwrap().len(), 1, "{discussions:#}");
    let shown = hermes
        .env
        .json(&["discussion", "show", discussions[0]["id"].as_str().unwrap()]);
    assert_eq!(
        said(&shown["entries"]),
        [
            pair("user_input", "first"),
            pair("final", "pong"),
            pair("user_input", "second"),
            pair("final", "pong"),
        ],
        "{shown:#}"
    );
    assert_eq!(shown["native_session_ids"], serde_json::json!([session]));
    hermes.runtime.block_on(hermes.mock.shutdown());
}
