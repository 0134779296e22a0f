//! The built-in `claude` provider through the real `wujie` binary: the real Claude Code in its
//! own terminal UI, driven in tmux against the mock model server, bound to an issue; then a
//! resume of the same session; a discussion turned into an issue with `/wujie`; and the
//! errors a user sees without Claude Code.
//!
//! The real-CLI test fails when Claude Code is not installed, saying to run
//! `scripts/agents/install claude`, unless `WUJIE_SKIP_AGENTS` lists claude (or says `all`).

use serde_json::Value;
use wujie_mockllm::Script;
use wujie_mockllm::agents::{Agent, AgentHome};
use wujie_testkit::*;

const PROMPT: &str = "Run the shell command echo hello";
const CONTEXT_MARKER: &str = "the-storage-layer-needs-sqlite";

/// The script: the prompt gets a text and a `Bash` call of `echo hello` (usage 11/3), its
/// result thinking and the answer `done` (usage 20/2).
fn script() -> Script {
    Script::from_json(include_str!(
        "../../../wujie-builtins/tests/fixtures/claude_echo_hello.script.json"
    ))
    .expect("the fixture script parses")
}

/// Claude Code's input box is ready.
fn wait_ready(tmux: &Tmux) {
    tmux.wait_settled("Claude Code's input box", |s| {
        s.contains("❯") && s.contains("shift+tab")
    });
}

/// Types `text`, then Enter a moment later (keys arriving with the text count as a paste).
fn say(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    // Claude Code draws a no-break space after its prompt sign.
    tmux.wait_for(&format!("{text:?} in the input box"), |s| {
        s.lines().any(|l| l.starts_with('❯') && l.ends_with(text))
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    tmux.keys(&["Enter"]);
}

/// Quits Claude Code with `/exit` and returns the final screen.
/// `wujie discuss -- claude` in the tmux session `name`, once Claude Code has answered the
/// first prompt and is ready for the next.
fn first_answer(env: &Env, home: &AgentHome, name: &str) -> Tmux {
    let tmux = tui_agent::start_wujie(env, home, name, "discuss -- claude");
    wait_ready(&tmux);
    say(&tmux, "plan the storage layer");
    tmux.wait_for("the first answer", |s| s.contains("● pong"));
    wait_ready(&tmux);
    tmux
}

fn quit(tmux: &Tmux) -> String {
    say(tmux, "/exit");
    tmux.wait_text("EXIT=")
}

fn said(run: &Value) -> Vec<(String, String)> {
    tui_agent::said_with_tools(&run["messages"], tui_agent::tool_and_output)
}

/// The ids of Claude Code's session transcripts under its config directory.
fn session_ids(home: &AgentHome) -> Vec<String> {
    let projects = home.home().join(".claude/projects");
    let mut ids = Vec::new();
    for dir in std::fs::read_dir(projects).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Some(id) = file
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
            {
                ids.push(id.to_owned());
            }
        }
    }
    ids
}

#[test]
fn claude_code_in_its_own_terminal_ui_reports_a_tool_run_with_usage_and_the_issue_as_context() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Claude, script()) else {
        return;
    };
    let env = Env::new();
    let key = tui_agent::create_marked_issue(&env, CONTEXT_MARKER);

    // Claude Code 2.1's default permission mode (auto) runs a plain `echo` without asking.
    let tmux = tui_agent::start_wujie(&env, &home, "claude", &format!("run {key} -- claude"));
    wait_ready(&tmux);
    say(&tmux, PROMPT);
    tmux.wait_for("the answer", |s| s.contains("● done"));
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let run = &tui_agent::first_run_succeeded(&env, &key, "claude");
    let expected = tui_agent::pairs(&[
        ("user_input", PROMPT),
        ("text", "I will run it."),
        (
            "tool_use",
            r#"Bash {"command":"echo hello","description":"Run the command"}"#,
        ),
        ("tool_result", "Bash hello"),
        ("thinking", "It worked."),
        ("final", "done"),
    ]);
    assert_eq!(said(run), expected, "{run:#}");

    // Usage: each model request exactly as the mock counted it.
    let answered = mock.model_requests();
    assert_eq!(answered.len(), 2, "two model requests: {answered:#?}");
    let usage = tui_agent::usage_of(run);
    assert_eq!(usage, [(11, 3), (20, 2)], "{run:#}");

    // The issue reached the model as system context, never as a user message.
    let first = &answered[0].body;
    assert!(
        first["system"].to_string().contains(CONTEXT_MARKER),
        "{first:#}"
    );
    assert!(
        !first["messages"].to_string().contains(CONTEXT_MARKER),
        "{first:#}"
    );
    drop(tmux);

    // A resume of the same session: the earlier conversation is the baseline, nothing is
    // reported twice; what is said now is.
    let ids = session_ids(&home);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let tmux = tui_agent::start_wujie(
        &env,
        &home,
        "claude-resume",
        &format!("run {key} -- claude --resume {}", ids[0]),
    );
    wait_ready(&tmux);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
    let issue = env.issue(&key);
    let resumed = tui_agent::other_run(&issue, run);
    assert_eq!(resumed["status"], "succeeded", "{resumed:#}");
    assert_eq!(said(resumed), [], "{resumed:#}");
    assert_eq!(resumed["usage"], serde_json::json!([]), "{resumed:#}");
    assert_eq!(
        session_ids(&home),
        ids,
        "the resume wrote the same transcript"
    );
    runtime.block_on(mock.shutdown());
}

/// Esc while a command runs: Claude Code records `[Request interrupted by user…]` as a user
/// message of its own; the user said nothing, so no user comment.
#[test]
fn claude_code_interrupted_by_the_user_reports_no_invented_prompt() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let script = Script::from_json(
        r#"{"turns":[{"when":{"user_contains":"wait a while"},"reply":{"text":"Waiting.","tool_calls":[{"tool":["Bash"],"arguments":{"command":"timeout 120 tail -f /dev/null","description":"Wait"}}]}}]}"#,
    )
    .expect("the script parses");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Claude, script) else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("interrupted");
    let tmux = tui_agent::start_wujie(&env, &home, "claude-esc", &format!("run {key} -- claude"));
    wait_ready(&tmux);
    say(&tmux, "wait a while");
    tmux.wait_for("the command", |s| {
        s.contains("timeout 120 tail -f /dev/null")
    });
    // Esc until Claude Code says it stopped (the first may only close a permission prompt).
    let interrupted = (0..5).any(|_| {
        tmux.keys(&["Escape"]);
        tmux.poll_for(std::time::Duration::from_secs(5), |s| {
            s.contains("Interrupted")
        })
        .is_some()
    });
    assert!(interrupted, "{}", tmux.screen());
    wait_ready(&tmux);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let run = &tui_agent::first_run_succeeded(&env, &key, "claude");
    let prompts = tui_agent::of_kinds(said(run), &["user_input"]);
    assert_eq!(
        prompts,
        [tui_agent::pair("user_input", "wait a while")],
        "{run:#}"
    );
    runtime.block_on(mock.shutdown());
}

#[test]
fn claude_is_built_in_as_an_interactive_provider() {
    let env = Env::new();
    tui_agent::assert_built_in_interactive(&env, "claude");
}

#[test]
fn without_claude_code_the_adapter_says_what_it_looked_for() {
    let env = Env::new();
    let err = tui_agent::adapter_without_agent(&env, "claude", "WUJIE_CLAUDE_BIN");
    assert!(
        err.contains("claude") && err.contains("WUJIE_CLAUDE_BIN") && err.contains("npm install"),
        "{err}"
    );

    let err = tui_agent::adapter_refuses(
        &env,
        &["claude", "--no-session-persistence"],
        "WUJIE_CLAUDE_BIN",
    );
    assert!(err.contains("--no-session-persistence"), "{err}");
}

#[test]
fn claude_code_planning_in_a_discussion_becomes_an_issue_with_wujie_and_keeps_going() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // Without a script the mock answers every request with `pong`.
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Claude, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let tmux = first_answer(&env, &home, "claude-discuss");

    tui_agent::open_wujie_menu(&tmux);
    tui_agent::create_issue_from_menu(&tmux, "shift+tab");

    // The same Claude Code session goes on; what it says now belongs to the issue's run.
    say(&tmux, "go ahead");
    tmux.wait_for("the second answer", |s| s.matches("● pong").count() >= 2);
    wait_ready(&tmux);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let issue = env.issue("WUJ-1");
    assert_eq!(issue["title"], "plan the storage layer");
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "claude", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    let expected = [
        ("user_input".to_owned(), "go ahead".to_owned()),
        ("final".to_owned(), "pong".to_owned()),
    ];
    assert_eq!(said(run), expected, "{run:#}");
    assert_eq!(run["usage"].as_array().map(Vec::len), Some(1), "{run:#}");
    let discussion = &env.json(&["discussion", "list"])[0];
    assert_eq!(discussion["status"], "promoted");
    let entries = env.json(&["discussion", "show", discussion["id"].as_str().unwrap()]);
    let kinds: Vec<&str> = entries["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    // The discussion keeps what was said before the issue existed.
    assert_eq!(kinds, ["user_input", "final"]);
    runtime.block_on(mock.shutdown());
}

/// `wujie discuss --resume <discussion> -- claude`: Claude Code resumes the session the
/// discussion recorded, so the model sees the earlier turn.
#[test]
fn claude_code_discussion_resumed_by_its_id_goes_on_in_the_same_claude_session() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Claude, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let tmux = first_answer(&env, &home, "claude-discuss-first");
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
    drop(tmux);
    let id = env.json(&["discussion", "list"])[0]["id"]
        .as_str()
        .expect("an id")
        .to_owned();

    let tmux = tui_agent::start_wujie(
        &env,
        &home,
        "claude-discuss-again",
        &format!("discuss --resume {id} -- claude"),
    );
    wait_ready(&tmux);
    say(&tmux, "go on");
    tmux.wait_for("the answer to it", |s| {
        s.split("go on")
            .nth(1)
            .is_some_and(|after| after.contains("● pong"))
    });
    wait_ready(&tmux);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    assert_eq!(session_ids(&home).len(), 1, "one Claude Code session");
    let requests = mock.model_requests();
    let asked: Vec<String> = requests
        .iter()
        .map(|r| r.body["messages"].to_string())
        .filter(|m| m.contains("go on"))
        .collect();
    assert!(
        !asked.is_empty() && asked.iter().all(|m| m.contains("plan the storage layer")),
        "the model sees the earlier turn: {asked:#?}"
    );
    let entries = env.json(&["discussion", "show", &id]);
    let kinds: Vec<&str> = entries["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["user_input", "final", "user_input", "final"],
        "{entries:#}"
    );
    runtime.block_on(mock.shutdown());
}

/// `/clear` starts a new Claude Code session, in a new transcript: the turn after it is this
/// run's too, and is synced (before, only the first transcript was read).
#[test]
fn claude_code_turn_after_clear_is_synced_too() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let script = Script::from_json(
        r#"{"turns":[{"when":{"user_contains":"first question"},"reply":{"text":"first answer"}},{"when":{"user_contains":"second question"},"reply":{"text":"second answer"}}]}"#,
    )
    .expect("the script parses");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Claude, script) else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("cleared");
    let tmux = tui_agent::start_wujie(&env, &home, "claude-clear", &format!("run {key} -- claude"));
    wait_ready(&tmux);
    say(&tmux, "first question");
    tmux.wait_for("the first answer", |s| s.contains("● first answer"));
    wait_ready(&tmux);
    say(&tmux, "/clear");
    tmux.wait_for("the cleared screen", |s| !s.contains("● first answer"));
    wait_ready(&tmux);
    say(&tmux, "second question");
    tmux.wait_for("the second answer", |s| s.contains("● second answer"));
    wait_ready(&tmux);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
    // The turns are in two transcripts: what the provider followed is Claude Code's switch.
    assert_eq!(session_ids(&home).len(), 2, "{:?}", session_ids(&home));

    let run = &tui_agent::first_run_succeeded(&env, &key, "claude");
    let expected = tui_agent::pairs(&[
        ("user_input", "first question"),
        ("final", "first answer"),
        ("user_input", "second question"),
        ("final", "second answer"),
    ]);
    assert_eq!(said(run), expected, "{run:#}");
    runtime.block_on(mock.shutdown());
}

/// A Claude Code that keeps its transcript where the provider does not look (as a new version
/// may): the user who typed to it and waited is told so on the terminal, the run records it,
/// and the run's summary follows the warning instead of standing alone.
#[test]
fn a_claude_code_whose_transcript_is_not_found_is_said_on_the_terminal_and_in_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let key = env.create_issue("nowhere");
    let agent = env.work.path().join("claude");
    std::fs::write(
        &agent,
        "#!/bin/sh\necho 'claude ready'\nwhile IFS= read -r line; do echo \"working on $line\"; done\n",
    )
    .expect("write the agent");
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let shell = format!(
        "cd {work} && env WUJIE_HOME={home} HOME={work} WUJIE_CLAUDE_BIN={agent} TERM=xterm-256color \
         {WUJIE} run {key} -- claude; echo EXIT=$?; sleep 600",
        work = env.work.path().display(),
        home = env.home.path().display(),
        agent = agent.display(),
    );
    let tmux = Tmux::start("claude-nowhere", &shell, 120, 30);
    tmux.wait_text("claude ready");
    // A terminal's input time moves in steps of 8 s: typing in a later step than the agent's
    // start is what tells the user's input from the start-up.
    std::thread::sleep(std::time::Duration::from_secs(10));
    tmux.keys(&["-l", "plan it"]);
    tmux.keys(&["Enter"]);
    tmux.wait_text("working on plan it");
    let projects = env.work.path().join(".claude/projects");
    let warned = tmux.wait_text("nothing it does in this run is synced");
    assert!(
        warned.contains("wujie adapter claude: no transcript found at"),
        "{warned}"
    );
    tmux.keys(&["C-d"]);
    let end = tmux.wait_text("EXIT=");
    assert!(end.contains("EXIT=0"), "{end}");
    // Said once by the adapter (the end of the run does not say it again), and repeated
    // above the run's summary, where the agent's screen cannot cover it.
    assert_eq!(
        end.matches("wujie adapter claude: no transcript found")
            .count(),
        1,
        "{end}"
    );
    let warning = end
        .find("wujie: warning: no transcript found at")
        .unwrap_or_else(|| panic!("no warning above the summary:\n{end}"));
    let summary = end
        .find(&format!("on {key} succeeded"))
        .unwrap_or_else(|| panic!("no summary:\n{end}"));
    assert!(warning < summary, "{end}");

    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    let errors: Vec<&str> = run["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["type"] == "error")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(errors.len(), 1, "{run:#}");
    assert!(
        errors[0].starts_with(&format!("no transcript found at {}", projects.display())),
        "{run:#}"
    );
}

/// Ctrl+Z under `wujie run`: the shell gets its terminal in its own modes, and after `fg`
/// Claude Code takes a prompt and answers it.
#[test]
fn ctrl_z_stops_claude_code_for_the_shell_and_fg_brings_it_back() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Claude, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("stop and go on");
    let run = format!("run {key} -- claude");
    let tmux = tui_agent::start_wujie_in_shell(&env, &home, "claude-ctrl-z", &run, (100, 30));
    wait_ready(&tmux);
    tui_agent::ctrl_z_then_fg(&tmux, std::time::Duration::from_secs(60), |s| {
        s.contains("❯") && s.contains("shift+tab")
    });
    say(&tmux, "back after fg");
    tmux.wait_for("the answer after fg", |s| {
        s.split("back after fg")
            .nth(1)
            .is_some_and(|after| after.contains("● pong"))
    });
    runtime.block_on(mock.shutdown());
}
