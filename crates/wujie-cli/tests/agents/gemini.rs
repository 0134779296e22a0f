//! The built-in `gemini` provider through the real `wujie` binary: the real Gemini CLI in its
//! own terminal UI, driven in tmux against the mock model server, bound to an issue: a prompt
//! whose answer runs a tool, usage as the mock counted it, the issue as Gemini CLI's loaded
//! context; then a resume of the same session; a discussion turned into an issue with
//! `/wujie`; and the errors a user sees without Gemini CLI.
//!
//! The real-CLI tests fail when Gemini CLI is not installed, saying to run
//! `scripts/agents/install gemini`, unless `WUJIE_SKIP_AGENTS` lists gemini (or says `all`).

use serde_json::Value;
use wujie_mockllm::Script;
use wujie_mockllm::agents::{Agent, AgentHome};
use wujie_testkit::*;

/// Gemini CLI's input box, empty and waiting.
const READY: &str = "Type your message or @path/to/file";
const PROMPT: &str = "Run the shell command echo hello";
const CONTEXT_MARKER: &str = "the-storage-layer-needs-sqlite";

/// The prompt gets a text and a `run_shell_command` of `echo hello` (usage 11/3), its result
/// thinking and the answer `done` (usage 20/2).
fn script() -> Script {
    Script::from_json(include_str!(
        "../../../wujie-builtins/tests/fixtures/gemini_echo_hello.script.json"
    ))
    .expect("the fixture script parses")
}

/// `wujie ARGS` in tmux below some earlier output, in the agent's work directory with its
/// environment, then `EXIT=<code>`; returns once Gemini CLI's input box is ready.
fn start(env: &Env, home: &AgentHome, name: &str, wujie_args: &str) -> Tmux {
    let tmux = tui_agent::start_wujie_below_output(env, home, name, wujie_args);
    tmux.poll_for(std::time::Duration::from_secs(180), |s| s.contains(READY))
        .unwrap_or_else(|| panic!("Gemini CLI did not start:\n{}", tmux.screen()));
    tmux
}

/// Bound to an issue, Gemini CLI asks whether to trust the directory holding the issue's
/// context file (added with `--include-directories`): "2. Yes, and remember the directories
/// as trusted", once the input box is back.
fn trust_context(tmux: &Tmux) {
    tmux.wait_text("Do you trust the following folders being added");
    tmux.keys(&["Down"]);
    tmux.wait_for("the second choice", |s| {
        s.lines()
            .any(|l| l.contains('●') && l.contains("Yes, and remember"))
    });
    tmux.keys(&["Enter"]);
    tmux.wait_settled("the input box", |s| {
        s.contains(READY) && !s.contains("Do you trust")
    });
}

/// Types `text` and, once Gemini CLI shows it in its input line (` > text`, ` * text` in
/// YOLO mode), Enter. Typed right after an answer, while Gemini CLI is still ending its turn,
/// the keys can go missing (seen on a loaded machine: the answer shown, the input box still
/// empty 60 s later), so the text is typed again while the box stays empty.
fn say(tmux: &Tmux, text: &str) {
    let shown = |s: &str| {
        s.lines()
            .any(|l| [format!("> {text}"), format!("* {text}")].contains(&l.trim().to_owned()))
    };
    tmux.keys(&["-l", text]);
    let typed = (0..4).any(|_| {
        let seen = tmux
            .poll_for(std::time::Duration::from_secs(15), shown)
            .is_some();
        // Not shown after all that time, with the input box empty: the keys were dropped.
        if !seen && tmux.screen().contains(READY) {
            tmux.keys(&["-l", text]);
        }
        seen
    });
    assert!(
        typed,
        "{text:?} never showed in the input line:\n{}",
        tmux.screen()
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    tmux.keys(&["Enter"]);
}

/// `wujie discuss -- gemini` in the tmux session `name`: one prompt, the mock's answer, then
/// Gemini CLI quits and the discussion ends.
fn one_discussion_turn(env: &Env, home: &AgentHome, name: &str) {
    let tmux = start(env, home, name, "discuss -- gemini");
    say(&tmux, "plan the storage layer");
    tmux.wait_for("the first answer", |s| s.contains("✦ pong"));
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
}

/// `/quit`, and the screen once wujie exited. Gemini CLI's command popup may take the first
/// Enter to complete `/quit` rather than run it, so Enter is pressed again while it stays.
fn quit(tmux: &Tmux) -> String {
    // Typed while Gemini CLI still ends its turn, `/quit` is queued and sent to the model as
    // a prompt: only once the input box is back and the screen settled.
    tmux.wait_settled("the input box", |s| s.contains(READY));
    say(tmux, "/quit");
    (0..6)
        .find_map(|_| {
            let end = tmux.poll_for(std::time::Duration::from_secs(10), |s| s.contains("EXIT="));
            if end.is_none() {
                tmux.keys(&["Enter"]);
            }
            end
        })
        .unwrap_or_else(|| panic!("Gemini CLI did not quit:\n{}", tmux.screen()))
}

fn said(run: &Value) -> Vec<(String, String)> {
    tui_agent::said_with_tools(&run["messages"], tui_agent::tool_name)
}

/// The session ids of Gemini CLI's chat logs (the first line of each names its session), once each.
fn session_ids(home: &AgentHome) -> Vec<String> {
    let mut ids = Vec::new();
    let projects = home.home().join(".gemini/tmp");
    for project in std::fs::read_dir(projects).into_iter().flatten().flatten() {
        for log in std::fs::read_dir(project.path().join("chats"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(log.path()).unwrap_or_default();
            let first: Value = serde_json::from_str(text.lines().next().unwrap_or("")).unwrap();
            ids.push(first["sessionId"].as_str().unwrap().to_owned());
        }
    }
    // A resume starts another log with the same id (and appends to the first).
    ids.sort();
    ids.dedup();
    ids
}

#[test]
fn gemini_cli_in_its_own_terminal_ui_reports_a_tool_run_with_usage_and_the_issue_as_context() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Gemini, script()) else {
        return;
    };
    let env = Env::new();
    let key = tui_agent::create_marked_issue(&env, CONTEXT_MARKER);

    // Without asking before it runs a command: the test does not answer approval prompts.
    let tmux = start(
        &env,
        &home,
        "gemini-run",
        &format!("run {key} -- gemini --approval-mode yolo"),
    );
    trust_context(&tmux);
    say(&tmux, PROMPT);
    tmux.wait_for("the answer", |s| s.contains("✦ done"));
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let run = &tui_agent::first_run_succeeded(&env, &key, "gemini");
    let expected = tui_agent::pairs(&[
        ("user_input", PROMPT),
        ("text", "I will run it."),
        (
            "tool_use",
            r#"run_shell_command {"command":"echo hello","description":"Run the command"}"#,
        ),
        ("tool_result", "run_shell_command"),
        // The mock streams the thinking in two pieces; Gemini CLI records each.
        ("thinking", "It\nworked."),
        ("final", "done"),
    ]);
    assert_eq!(said(run), expected, "{run:#}");
    let result = &run["messages"][3]["output"];
    assert!(
        result.as_str().is_some_and(|o| o.contains("hello")),
        "{run:#}"
    );

    // Usage: each request of the conversation the mock answered, as it counted it. (Gemini
    // CLI also asks its utility model, another model id, for a session summary; its chat log
    // records no usage for that request.)
    let answered: Vec<_> = mock
        .model_requests()
        .into_iter()
        .filter(|r| r.status == 200 && r.path.contains("/models/mock-model:"))
        .collect();
    assert_eq!(
        answered.len(),
        2,
        "two answered model requests: {answered:#?}"
    );
    assert_eq!(tui_agent::usage_of(run), [(11, 3), (20, 2)], "{run:#}");

    // The issue reached the model in Gemini CLI's loaded context, not in the user's prompt.
    let parts: Vec<&Value> = answered[0].body["contents"]
        .as_array()
        .expect("contents")
        .iter()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .collect();
    let carrying: Vec<&&Value> = parts
        .iter()
        .filter(|p| p.to_string().contains(CONTEXT_MARKER))
        .collect();
    assert_eq!(carrying.len(), 1, "{parts:#?}");
    let context = carrying[0]["text"].as_str().unwrap_or_default();
    assert!(
        context.contains("<loaded_context>") && !context.contains(PROMPT),
        "{context}"
    );
    drop(tmux);

    // A resume of the same session: the earlier conversation is the baseline, nothing is
    // reported twice; what is said now is. The issue's context folder is the one trusted
    // before: Gemini CLI does not ask again, and its listing of the workspace's directories
    // is not the user speaking.
    let ids = session_ids(&home);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let tmux = start(
        &env,
        &home,
        "gemini-resume",
        &format!("run {key} -- gemini --resume {}", ids[0]),
    );
    let end = quit(&tmux);
    assert!(
        end.contains("EXIT=0") && !end.contains("Do you trust"),
        "{end}"
    );
    let issue = env.issue(&key);
    let resumed = tui_agent::other_run(&issue, run);
    assert_eq!(resumed["status"], "succeeded", "{resumed:#}");
    assert_eq!(said(resumed), [], "{resumed:#}");
    assert_eq!(resumed["usage"], serde_json::json!([]), "{resumed:#}");
    assert_eq!(session_ids(&home), ids, "the resume wrote the same log");
    runtime.block_on(mock.shutdown());
}

#[test]
fn gemini_cli_discussion_is_resumed_then_becomes_an_issue_with_wujie_and_keeps_going() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // Without a script the mock answers every request with `pong`.
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Gemini, Script::default())
    else {
        return;
    };
    let env = Env::new();
    one_discussion_turn(&env, &home, "gemini-discuss");

    // `wujie discuss -- gemini --resume <id>` goes on in the same discussion: the session
    // event of the resumed log names it.
    let ids = session_ids(&home);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let tmux = start(
        &env,
        &home,
        "gemini-discuss-resume",
        &format!("discuss -- gemini --resume {}", ids[0]),
    );
    let discussions = env.json(&["discussion", "list"]);
    assert_eq!(discussions.as_array().unwrap().len(), 1, "{discussions:#}");
    tui_agent::open_wujie_menu(&tmux);
    tui_agent::create_issue_from_menu(&tmux, READY);

    // The same Gemini CLI session goes on; what it says now belongs to the issue's run.
    say(&tmux, "go ahead");
    tmux.wait_for("the second answer", |s| s.matches("✦ pong").count() >= 2);
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    let issue = env.issue("WUJ-1");
    assert_eq!(issue["title"], "plan the storage layer");
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "gemini", "{run:#}");
    assert_eq!(run["status"], "succeeded", "{run:#}");
    assert_eq!(
        said(run),
        [
            tui_agent::pair("user_input", "go ahead"),
            tui_agent::pair("final", "pong")
        ],
        "{run:#}"
    );
    assert_eq!(tui_agent::usage_of(run).len(), 1, "{run:#}");
    let discussions = env.json(&["discussion", "list"]);
    assert_eq!(discussions.as_array().unwrap().len(), 1, "{discussions:#}");
    assert_eq!(discussions[0]["status"], "promoted");
    let entries = env.json(&["discussion", "show", discussions[0]["id"].as_str().unwrap()]);
    // The discussion keeps what was said before the issue existed, once.
    assert_eq!(
        tui_agent::said(&entries["entries"]),
        [
            tui_agent::pair("user_input", "plan the storage layer"),
            tui_agent::pair("final", "pong")
        ],
        "{entries:#}"
    );
    assert_eq!(session_ids(&home), ids, "both ran the same session");
    runtime.block_on(mock.shutdown());
}

/// `/wujie` right after a reply: Gemini CLI's log never says that a reply ended its turn, yet
/// the card, the issue and the discussion hold the reply the user saw, and the run does not
/// get it later.
#[test]
fn gemini_cli_reply_just_shown_is_in_the_issue_made_with_wujie() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Gemini, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let tmux = start(&env, &home, "gemini-discuss-reply", "discuss -- gemini");
    say(&tmux, "plan the storage layer");
    tmux.wait_for("the answer", |s| s.contains("✦ pong"));
    tmux.wait_settled("the input box", |s| s.contains(READY));
    tui_agent::open_wujie_menu(&tmux);
    tmux.keys(&["Enter"]);
    let card = tmux.wait_text("Create the issue and continue in this context");
    assert!(
        card.contains("**Agent:** pong"),
        "the card holds the reply:\n{card}"
    );
    tmux.keys(&["Enter"]);
    tmux.wait_text("wujie: created WUJ-1");
    tmux.wait_settled("the notice to close", |s| {
        !s.contains("wujie: created") && s.contains(READY)
    });
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
    // The hint goes on in the same Gemini CLI session.
    let ids = session_ids(&home);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let hint = format!("`wujie run WUJ-1 -- gemini --resume {}`", ids[0]);
    assert!(end.replace('\n', "").contains(&hint), "{hint} in:\n{end}");

    let issue = env.issue("WUJ-1");
    let description = issue["description"].as_str().unwrap_or_default();
    assert!(description.contains("pong"), "{issue:#}");
    assert_eq!(said(&issue["runs"][0]), [], "{issue:#}");
    let discussions = env.json(&["discussion", "list"]);
    let entries = env.json(&["discussion", "show", discussions[0]["id"].as_str().unwrap()]);
    assert_eq!(
        tui_agent::said(&entries["entries"]),
        [
            tui_agent::pair("user_input", "plan the storage layer"),
            tui_agent::pair("final", "pong")
        ],
        "{entries:#}"
    );
    runtime.block_on(mock.shutdown());
}

/// `wujie discuss --resume <discussion> -- gemini`, as the hint says: Gemini CLI resumes the
/// session the discussion recorded, so the model sees the earlier turns.
#[test]
fn gemini_cli_discussion_resumed_by_its_id_goes_on_in_the_same_gemini_session() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Gemini, Script::default())
    else {
        return;
    };
    let env = Env::new();
    one_discussion_turn(&env, &home, "gemini-discuss-first");
    let discussions = env.json(&["discussion", "list"]);
    let id = discussions[0]["id"].as_str().expect("an id").to_owned();

    let tmux = start(
        &env,
        &home,
        "gemini-discuss-again",
        &format!("discuss --resume {id} -- gemini"),
    );
    say(&tmux, "go on");
    // Gemini CLI may still be loading the resumed session and keep the prompt in its input
    // box (seen on a loaded machine): Enter again while it stays there unanswered.
    let answered = |s: &str| s.matches("✦ pong").count() >= 2;
    let replied = (0..4).any(|_| {
        let seen = tmux
            .poll_for(std::time::Duration::from_secs(20), answered)
            .is_some();
        if !seen && tmux.screen().lines().any(|l| l.trim() == "> go on") {
            tmux.keys(&["Enter"]);
        }
        seen
    });
    assert!(replied, "no answer to \"go on\":\n{}", tmux.screen());
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");

    assert_eq!(session_ids(&home).len(), 1, "one Gemini CLI session");
    let last = mock
        .model_requests()
        .into_iter()
        .rfind(|r| r.status == 200 && r.path.contains("/models/mock-model:"))
        .expect("a request");
    let body = last.body.to_string();
    assert!(
        body.contains("plan the storage layer") && body.contains("go on"),
        "the model sees the earlier turn: {body}"
    );
    let entries = env.json(&["discussion", "show", &id]);
    assert_eq!(
        tui_agent::said(&entries["entries"]),
        [
            tui_agent::pair("user_input", "plan the storage layer"),
            tui_agent::pair("final", "pong"),
            tui_agent::pair("user_input", "go on"),
            tui_agent::pair("final", "pong")
        ],
        "{entries:#}"
    );
    runtime.block_on(mock.shutdown());
}

#[test]
fn gemini_is_built_in_as_an_interactive_provider() {
    let env = Env::new();
    tui_agent::assert_built_in_interactive(&env, "gemini");
}

#[test]
fn without_gemini_cli_the_adapter_says_what_it_looked_for() {
    let env = Env::new();
    let err = tui_agent::adapter_without_agent(&env, "gemini", "WUJIE_GEMINI_BIN");
    assert!(
        err.contains("\"gemini\"")
            && err.contains("WUJIE_GEMINI_BIN")
            && err.contains("npm install -g @google/gemini-cli"),
        "{err}"
    );

    let err = tui_agent::adapter_refuses(&env, &["gemini", "--resume", "2"], "WUJIE_GEMINI_BIN");
    assert!(
        err.contains("\"--resume\"") && err.contains("--resume <session id>"),
        "{err}"
    );
}

/// `/clear` in Gemini CLI begins a new session in a new chat log: the turn after it is this
/// run's too, and is synced (before, only the first log was read).
#[test]
fn gemini_cli_turn_after_clear_is_synced_too() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Gemini, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("cleared");
    let tmux = start(&env, &home, "gemini-clear", &format!("run {key} -- gemini"));
    trust_context(&tmux);
    say(&tmux, "first question");
    tmux.wait_for("the first answer", |s| s.contains("✦ pong"));
    tmux.wait_settled("the input box", |s| s.contains(READY));
    say(&tmux, "/clear");
    tmux.wait_settled("the cleared screen", |s| {
        !s.contains("✦ pong") && s.contains(READY)
    });
    say(&tmux, "second question");
    tmux.wait_for("the second answer", |s| s.contains("✦ pong"));
    let end = quit(&tmux);
    assert!(end.contains("EXIT=0"), "{end}");
    // Two chat logs: the turn after `/clear` was followed into Gemini CLI's new session.
    assert_eq!(session_ids(&home).len(), 2, "{:?}", session_ids(&home));

    let run = &tui_agent::first_run_succeeded(&env, &key, "gemini");
    let prompts = tui_agent::of_kinds(said(run), &["user_input"]);
    assert_eq!(
        prompts,
        tui_agent::pairs(&[
            ("user_input", "first question"),
            ("user_input", "second question")
        ]),
        "{run:#}"
    );
    runtime.block_on(mock.shutdown());
}

/// Gemini CLI uses Ctrl+Z itself (an undo in its input; with nothing to undo, it asks for a
/// second press to suspend): the key reaches it and `wujie` does not stop. The second press
/// stops the session (Gemini CLI's own suspend would leave it stuck: its stop is discarded in
/// its orphaned group), as SIGTSTP sent to `wujie` does: the shell gets its terminal in its
/// own modes, and after `fg` Gemini CLI answers a prompt.
#[test]
fn ctrl_z_reaches_gemini_cli_and_a_second_one_or_sigtstp_stops_it_for_the_shell() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, Agent::Gemini, Script::default())
    else {
        return;
    };
    let env = Env::new();
    let key = env.create_issue("stop and go on");
    let run = format!("run {key} -- gemini");
    let tmux = tui_agent::start_wujie_in_shell(&env, &home, "gemini-ctrl-z", &run, (100, 30));
    tmux.poll_for(std::time::Duration::from_secs(180), |s| s.contains(READY))
        .unwrap_or_else(|| panic!("Gemini CLI did not start:\n{}", tmux.screen()));
    trust_context(&tmux);
    let modes = tmux.modes();

    tmux.keys(&["C-z"]);
    let warned = tmux.wait_text("again to suspend");
    assert!(!warned.contains("Stopped"), "{warned}");
    assert_eq!(tmux.modes(), modes, "{warned}");
    let ready = |s: &str| s.contains(READY);
    let patience = std::time::Duration::from_secs(60);
    tui_agent::stop_then_fg(&tmux, || tmux.keys(&["C-z"]), patience, ready);
    tmux.wait_modes(&modes);
    say(&tmux, "back after fg");
    tmux.wait_for("the answer after fg", |s| {
        s.split("back after fg")
            .nth(1)
            .is_some_and(|after| after.contains("✦ pong"))
    });
    tmux.wait_settled("the input box", ready);

    let wujie = tui_agent::wujie_run_in(&home);
    let stop = || assert!(signal_pid(wujie, nix::sys::signal::Signal::SIGTSTP));
    tui_agent::stop_then_fg(&tmux, stop, patience, ready);
    tmux.wait_modes(&modes);
    say(&tmux, "back again");
    tmux.wait_for("the answer after the second fg", |s| {
        s.split("back again")
            .nth(1)
            .is_some_and(|after| after.contains("✦ pong"))
    });
    runtime.block_on(mock.shutdown());
}
