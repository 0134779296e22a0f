//! The built-in `opencode` provider through the real `wujie` binary: the real opencode in its
//! own terminal UI, driven in tmux against the mock model server. Bound to an issue: a prompt
//! whose answer runs a tool, usage as the mock counted it, the issue as opencode's
//! instructions; then a resume of the same session. In a discussion: `/wujie`, create the
//! issue, the same session going on. And what a user sees without opencode or with an argument
//! the provider cannot work with.
//!
//! The real-CLI tests fail when opencode is not installed, saying to run
//! `scripts/agents/install opencode`, unless `WUJIE_SKIP_AGENTS` lists opencode (or says `all`).

use std::time::Duration;

use serde_json::Value;
use wujie_mockllm::Script;
use wujie_mockllm::agents::{Agent, AgentHome};
use wujie_testkit::*;

const PROMPT: &str = "Run the shell command echo hello";
const CONTEXT_MARKER: &str = "the-storage-layer-needs-sqlite";
/// opencode's status line under its input box, there once it is ready for a prompt.
const READY: &str = "ctrl+p commands";
/// What that line says while opencode works on a turn.
const BUSY: &str = "esc interrupt";
/// How long opencode may take to start or to answer on a busy machine (only so a hang fails).
const PATIENCE: Duration = Duration::from_secs(240);

/// The prompt gets a text and a `bash` call of `echo hello` (usage 11/3), its result thinking
/// and the answer `done` (usage 20/2).
fn script() -> Script {
    Script::from_json(include_str!(
        "../../../wujie-builtins/tests/fixtures/opencode_echo_hello.script.json"
    ))
    .expect("the fixture script parses")
}

/// `wujie ARGS` in tmux below some earlier output, in the agent's work directory with its
/// environment, then `EXIT=<code>`; once opencode is ready for a prompt.
fn start(env: &Env, home: &AgentHome, name: &str, wujie_args: &str) -> Tmux {
    let tmux = tui_agent::start_wujie_below_output(env, home, name, wujie_args);
    wait(&tmux, "opencode to start", |s| s.contains(READY));
    tmux
}

fn wait(tmux: &Tmux, what: &str, cond: impl Fn(&str) -> bool) -> String {
    tmux.poll_for(PATIENCE, cond)
        .unwrap_or_else(|| panic!("timed out waiting for {what}; screen:\n{}", tmux.screen()))
}

/// Types `text`, and Enter once opencode shows it in its input box.
fn say(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    wait(tmux, &format!("{text:?} in the input box"), |s| {
        s.lines()
            .any(|l| l.trim_start().starts_with('┃') && l.trim_end().ends_with(text))
    });
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys(&["Enter"]);
}

/// Whether opencode shows `text` as a line of the conversation.
fn shows(screen: &str, text: &str) -> bool {
    screen.lines().any(|l| l.trim() == text)
}

/// Waits for the turn just sent to start and to end with `answer` on the screen.
fn answered(tmux: &Tmux, answer: &str) {
    wait(tmux, "the turn to start", |s| s.contains(BUSY));
    wait(tmux, &format!("the answer {answer:?}"), |s| {
        !s.contains(BUSY) && s.contains(READY) && shows(s, answer)
    });
}

/// `/exit`; the screen with wujie's exit status, and the session opencode names on leaving
/// (`Continue  opencode -s ses_…`).
fn quit(tmux: &Tmux) -> (String, String) {
    say(tmux, "/exit");
    let end = wait(tmux, "wujie to exit", |s| s.contains("EXIT="));
    assert!(end.contains("EXIT=0"), "{end}");
    let session = end
        .lines()
        .find_map(|l| l.split("opencode -s ").nth(1))
        .map(|id| id.trim().to_owned())
        .unwrap_or_else(|| panic!("opencode named its session:\n{end}"));
    (end, session)
}

fn said(messages: &Value) -> Vec<(String, String)> {
    tui_agent::said_with_tools(messages, tui_agent::tool_and_trimmed_output)
}

#[test]
fn opencode_in_its_own_terminal_ui_reports_a_tool_run_with_usage_and_the_issue_as_context() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Opencode, script()) else {
        return;
    };
    let env = Env::new();
    let key = tui_agent::create_marked_issue(&env, CONTEXT_MARKER);

    let tmux = start(
        &env,
        &home,
        "opencode-run",
        &format!("run {key} -- opencode"),
    );
    say(&tmux, PROMPT);
    answered(&tmux, "done");
    let (_, session) = quit(&tmux);
    drop(tmux);

    let run = &tui_agent::first_run_succeeded(&env, &key, "opencode");
    let expected = tui_agent::pairs(&[
        ("user_input", PROMPT),
        ("text", "I will run it."),
        (
            "tool_use",
            r#"bash {"command":"echo hello","description":"Run the command"}"#,
        ),
        ("tool_result", "bash hello"),
        ("thinking", "It worked."),
        ("final", "done"),
    ]);
    assert_eq!(said(&run["messages"]), expected, "{run:#}");

    // Usage: each request the mock answered, as it counted it. (opencode also asks for a
    // session title, which no scripted turn matches: the mock refuses it, with no usage.)
    let requests: Vec<_> = mock
        .model_requests()
        .into_iter()
        .filter(|r| r.status == 200)
        .collect();
    assert_eq!(requests.len(), 2, "two answered requests: {requests:#?}");
    assert_eq!(tui_agent::usage_of(run), [(11, 3), (20, 2)], "{run:#}");

    // The issue reached the model as instructions in the system prompt, not as the user's.
    let messages = requests[0].body["messages"].as_array().expect("messages");
    let carrying: Vec<&Value> = messages
        .iter()
        .filter(|m| m.to_string().contains(CONTEXT_MARKER))
        .collect();
    assert_eq!(carrying.len(), 1, "{messages:#?}");
    assert_eq!(carrying[0]["role"], "system", "{messages:#?}");

    // A resume of the same session: what it held is not reported again, the new turn is.
    let tmux = start(
        &env,
        &home,
        "opencode-resume",
        &format!("run {key} -- opencode -s {session}"),
    );
    say(&tmux, PROMPT);
    answered(&tmux, "done");
    let (_, resumed) = quit(&tmux);
    assert_eq!(resumed, session, "the same session went on");
    let issue = env.issue(&key);
    let again = tui_agent::other_run(&issue, run);
    assert_eq!(again["status"], "succeeded", "{again:#}");
    assert_eq!(
        said(&again["messages"]),
        expected,
        "only the new turn: {again:#}"
    );
    assert_eq!(tui_agent::usage_of(again), [(11, 3), (20, 2)], "{again:#}");
    runtime.block_on(mock.shutdown());
}

#[test]
fn opencode_planning_in_a_discussion_becomes_an_issue_with_wujie_and_keeps_going() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // Without a script the mock answers every request with `pong`.
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Opencode, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let tmux = start(&env, &home, "opencode-discuss", "discuss -- opencode");
    say(&tmux, "plan the storage layer");
    answered(&tmux, "pong");

    let menu = tui_agent::open_wujie_menu(&tmux);
    assert!(menu.contains("/wujie"), "{menu}");
    tui_agent::create_issue_from_menu(&tmux, READY);

    // The same opencode session goes on; what it says now belongs to the issue's run.
    say(&tmux, "go ahead");
    answered(&tmux, "pong");
    let (_, session) = quit(&tmux);
    drop(tmux);

    let issue = env.issue("WUJ-1");
    assert_eq!(issue["title"], "plan the storage layer");
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "opencode", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    assert_eq!(
        tui_agent::said(&run["messages"]),
        tui_agent::pong_turns(&["go ahead"]),
        "{run:#}"
    );
    assert_eq!(run["usage"].as_array().map(Vec::len), Some(1), "{run:#}");
    let discussion = &env.json(&["discussion", "list"])[0];
    assert_eq!(discussion["status"], "promoted");
    let shown = env.json(&["discussion", "show", discussion["id"].as_str().unwrap()]);
    assert_eq!(
        tui_agent::said(&shown["entries"]),
        tui_agent::pong_turns(&["plan the storage layer"]),
        "{shown:#}"
    );
    // The session opencode created is the discussion's, so a resume of it finds it.
    assert_eq!(
        shown["native_session_ids"],
        serde_json::json!([session]),
        "{shown:#}"
    );
    runtime.block_on(mock.shutdown());
}

#[test]
fn opencode_is_built_in_and_says_what_it_needs() {
    let env = Env::new();
    tui_agent::assert_built_in_interactive(&env, "opencode");

    let err = tui_agent::adapter_without_agent(&env, "opencode", "WUJIE_OPENCODE_BIN");
    assert!(
        err.contains("\"opencode\"")
            && err.contains("WUJIE_OPENCODE_BIN")
            && err.contains("npm install -g opencode-ai"),
        "{err}"
    );

    for arg in ["--mini", "serve"] {
        let err = tui_agent::adapter_refuses(&env, &["opencode", arg], "WUJIE_OPENCODE_BIN");
        assert!(err.contains(arg) && err.contains("opencode"), "{err}");
    }
}

/// `/new` in opencode starts another session of the same process: the turn in it is this
/// run's too, and is synced (before, only the first session was).
#[test]
fn opencode_turn_in_a_new_session_is_synced_too() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Opencode, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("two sessions");
    let tmux = start(
        &env,
        &home,
        "opencode-new",
        &format!("run {key} -- opencode"),
    );
    say(&tmux, "first question");
    answered(&tmux, "pong");
    say(&tmux, "/new");
    wait(&tmux, "the new session", |s| {
        !shows(s, "pong") && s.contains(READY)
    });
    say(&tmux, "second question");
    answered(&tmux, "pong");
    quit(&tmux);
    drop(tmux);

    let run = &tui_agent::first_run_succeeded(&env, &key, "opencode");
    let prompts = tui_agent::of_kinds(said(&run["messages"]), &["user_input", "final"]);
    assert_eq!(
        prompts,
        tui_agent::pairs(&[
            ("user_input", "first question"),
            ("final", "pong"),
            ("user_input", "second question"),
            ("final", "pong"),
        ]),
        "{run:#}"
    );
    runtime.block_on(mock.shutdown());
}

/// Ctrl+C quits opencode as it does without wujie: no dump of its server's aborted requests
/// on the user's terminal (before, two to four of about forty lines each).
///
/// opencode itself sometimes prints one warning with a stack as it quits ("Code highlighting
/// failed, falling back to plain text: warn: TreeSitter client destroyed", about 1 quit in 6
/// without wujie): that one is the agent's own and is passed on, so it is taken out here
/// before the terminal is searched for stack lines.
#[test]
fn opencode_quit_with_ctrl_c_leaves_no_stack_on_the_terminal() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Opencode, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("ctrl c");
    let tmux = start(
        &env,
        &home,
        "opencode-ctrl-c",
        &format!("run {key} -- opencode"),
    );
    say(&tmux, "first question");
    answered(&tmux, "pong");
    (0..5)
        .find_map(|_| {
            tmux.keys(&["C-c"]);
            tmux.poll_for(Duration::from_secs(10), |s| s.contains("EXIT="))
        })
        .unwrap_or_else(|| panic!("opencode did not quit:\n{}", tmux.screen()));
    std::thread::sleep(Duration::from_secs(2));
    // The screen with the history above it: a warning's first line may have scrolled off.
    let end = tmux.tmux(&["capture-pane", "-p", "-S", "-200"]);
    let without_own_warning = without_highlight_warning(&end);
    assert!(
        !end.contains("AbortError")
            && !end.contains("DOMException")
            && !without_own_warning.contains("    at "),
        "{end}"
    );
    drop(tmux);
    runtime.block_on(mock.shutdown());
}

/// `screen` without opencode's own quit warning: its first line and the `at …` lines after it.
fn without_highlight_warning(screen: &str) -> String {
    let mut in_warning = false;
    let mut kept = Vec::new();
    for line in screen.lines() {
        if line.contains("Code highlighting failed, falling back to plain text:") {
            in_warning = true;
        } else if !(in_warning && line.trim_start().starts_with("at ")) {
            in_warning = false;
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// Ctrl+Z under `wujie run`: opencode's alternate screen, hidden cursor and mouse reporting
/// are left for the shell, and after `fg` opencode is back on its screen and answers a prompt.
#[test]
fn ctrl_z_stops_opencode_for_the_shell_and_fg_brings_it_back() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Opencode, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("stop and go on");
    let run = format!("run {key} -- opencode");
    let tmux = tui_agent::start_wujie_in_shell(&env, &home, "opencode-ctrl-z", &run, (100, 30));
    wait(&tmux, "opencode to start", |s| s.contains(READY));
    let (modes, _) = tui_agent::ctrl_z_then_fg(&tmux, PATIENCE, |s| s.contains(READY));
    tmux.wait_modes(&modes.running);
    say(&tmux, "back after fg");
    answered(&tmux, "pong");
    runtime.block_on(mock.shutdown());
}
