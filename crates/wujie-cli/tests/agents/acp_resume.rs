//! `acp --resume ID`: the built-in `acp` provider loads an agent's session (`session/load`)
//! instead of opening a new one. The agent replays the history before it answers; what it
//! replays was reported when it happened, so a resumed run or discussion holds only the new
//! turns, numbered after the replayed ones (a discussion's keys are unique per discussion, so a
//! reused key would drop the new turn). Against the stand-in agent
//! `tests/fixtures/fake_acp_agent.py`, which keeps its history in `FAKE_ACP_HISTORY`.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use wujie_testkit::run_output::messages_of;
use wujie_testkit::term::Term;
use wujie_testkit::{Env, WUJIE};

fn fake_agent() -> String {
    let path: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_acp_agent.py");
    path.to_str().expect("a UTF-8 path").to_owned()
}

/// The stand-in agent as a command line, chatting, with its history in `history` (none: it
/// does not offer `session/load`) and what it receives logged to `log`.
fn agent_command(history: Option<&Path>, log: &Path) -> Vec<String> {
    let mut command = vec![
        "env".to_owned(),
        "FAKE_ACP_MODE=chat".to_owned(),
        format!("FAKE_ACP_LOG={}", log.display()),
    ];
    if let Some(history) = history {
        command.push(format!("FAKE_ACP_HISTORY={}", history.display()));
    }
    command.extend(["python3".to_owned(), fake_agent()]);
    command
}

/// `wujie run KEY -- acp OPTIONS… -- AGENT`.
fn run(env: &Env, key: &str, options: &[&str], agent: &[String]) -> Output {
    let mut args: Vec<&str> = vec!["run", key, "--", "acp"];
    args.extend(options);
    args.push("--");
    args.extend(agent.iter().map(String::as_str));
    env.cmd().args(&args).output().expect("wujie runs")
}

fn methods(received: &[Value]) -> Vec<String> {
    received
        .iter()
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .collect()
}

/// (type, content, source_key) of every message of a run or a discussion.
fn said(messages: &Value) -> Vec<(String, String, String)> {
    messages
        .as_array()
        .expect("a list of messages")
        .iter()
        .map(|m| {
            (
                m["type"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
                m["source_key"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn entry(kind: &str, content: &str, key: &str) -> (String, String, String) {
    (kind.to_owned(), content.to_owned(), key.to_owned())
}

#[test]
fn a_resumed_session_reports_only_its_new_turn_numbered_after_the_replayed_ones() {
    let env = Env::new();
    let key = env.create_issue("resume over acp");
    let history = env.work.path().join("history.jsonl");
    let log = env.work.path().join("received.log");
    let agent = agent_command(Some(&history), &log);

    let first = run(&env, &key, &["-p", "first"], &agent);
    assert!(first.status.success(), "{first:?}");
    let second = run(
        &env,
        &key,
        &["--resume", "fake-session-1", "-p", "second"],
        &agent,
    );
    assert!(second.status.success(), "{second:?}");

    let received = wujie_testkit::json_lines(&log);
    let methods = methods(&received);
    assert_eq!(
        methods,
        [
            "initialize",
            "session/new",
            "session/prompt",
            "initialize",
            "session/load",
            "session/prompt"
        ],
        "{received:#?}"
    );
    let load = received
        .iter()
        .find(|m| m["method"] == "session/load")
        .unwrap();
    assert_eq!(load["params"]["sessionId"], "fake-session-1");

    let issue = env.issue(&key);
    let runs = issue["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{issue:#}");
    let resumed = runs
        .iter()
        .find(|r| {
            messages_of(r, "user_input")
                .iter()
                .any(|m| m["content"] == "second")
        })
        .unwrap_or_else(|| panic!("no run holds the second prompt: {issue:#}"));
    assert_eq!(resumed["status"], "succeeded", "{resumed:#}");
    // Nothing of the replayed first turn (its prompt, thought and reply) is reported again.
    assert_eq!(
        said(&resumed["messages"]),
        [
            entry(
                "user_input",
                "second",
                "session:fake-session-1:turn:2:user:prompt"
            ),
            entry(
                "final",
                "you said: second",
                "session:fake-session-1:turn:2:final"
            ),
        ],
        "{resumed:#}"
    );
}

#[test]
fn resuming_with_an_agent_that_cannot_load_or_an_unknown_session_is_a_clear_error() {
    let env = Env::new();
    let key = env.create_issue("resume over acp");
    let log = env.work.path().join("received.log");

    // No history: the agent does not offer session/load, so nothing is sent past initialize.
    let out = run(
        &env,
        &key,
        &["--resume", "fake-session-1", "-p", "hi"],
        &agent_command(None, &log),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "the agent \"fake-agent\" cannot resume a session: it does not offer session/load; start it without --resume"
        ),
        "{stderr}"
    );
    assert_eq!(methods(&wujie_testkit::json_lines(&log)), ["initialize"]);

    // A session the agent does not know: its own error is shown.
    let history = env.work.path().join("history.jsonl");
    std::fs::write(&history, "").unwrap();
    let out = run(
        &env,
        &key,
        &["--resume", "no-such-session", "-p", "hi"],
        &agent_command(Some(&history), &log),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("session not found"), "{stderr}");

    // `--resume` needs an id.
    let out = run(&env, &key, &["--resume"], &agent_command(None, &log));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--resume needs the agent's session id"),
        "{stderr}"
    );

    let issue = env.issue(&key);
    for run in issue["runs"].as_array().unwrap() {
        assert_eq!(run["status"], "failed", "{run:#}");
    }
}

/// `wujie discuss [--resume ID] -- acp -- AGENT` on a terminal of its own.
fn discuss(env: &Env, options: &[&str], agent: &[String]) -> Term {
    let mut args: Vec<&str> = vec!["discuss", "--", "acp"];
    args.extend(options);
    args.push("--");
    args.extend(agent.iter().map(String::as_str));
    Term::spawn(env, WUJIE, &args)
}

#[test]
fn a_discussion_over_acp_resumes_with_the_agent_s_session_and_becomes_an_issue() {
    let env = Env::new();
    let history = env.work.path().join("history.jsonl");
    let log = env.work.path().join("received.log");
    let agent = agent_command(Some(&history), &log);

    let mut term = discuss(&env, &[], &agent);
    term.wait_text("Ctrl+D ends");
    term.say("plan the storage layer", "you said: plan the storage layer");
    term.send(b"\x04");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}\n{}", term.contents());

    // The agent's session id in the arguments lands on the same discussion.
    let mut term = discuss(&env, &["--resume", "fake-session-1"], &agent);
    term.wait_text("resumed session fake-session-1: 1 earlier turn(s)");
    term.say("use sqlite", "you said: use sqlite");
    term.create_issue_from_menu("WUJ-1");
    term.say("go ahead", "you said: go ahead");
    term.send(b"\x04");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}\n{}", term.contents());

    let discussions = env.json(&["discussion", "list"]);
    assert_eq!(
        discussions.as_array().unwrap().len(),
        1,
        "one discussion: {discussions:#}"
    );
    assert_eq!(discussions[0]["status"], "promoted");
    let shown = env.json(&["discussion", "show", discussions[0]["id"].as_str().unwrap()]);
    let conversation: Vec<(String, String, String)> = said(&shown["entries"])
        .into_iter()
        .filter(|(kind, ..)| kind == "user_input" || kind == "final")
        .collect();
    assert_eq!(
        conversation,
        [
            entry(
                "user_input",
                "plan the storage layer",
                "session:fake-session-1:turn:1:user:prompt"
            ),
            entry(
                "final",
                "you said: plan the storage layer",
                "session:fake-session-1:turn:1:final"
            ),
            entry(
                "user_input",
                "use sqlite",
                "session:fake-session-1:turn:2:user:prompt"
            ),
            entry(
                "final",
                "you said: use sqlite",
                "session:fake-session-1:turn:2:final"
            ),
        ],
        "{shown:#}"
    );

    let issue = env.issue("WUJ-1");
    assert_eq!(issue["title"], "plan the storage layer", "{issue:#}");
    let run = &issue["runs"][0];
    assert_eq!(run["provider"], "acp");
    assert_eq!(
        said(&run["messages"]),
        [
            entry(
                "user_input",
                "go ahead",
                "session:fake-session-1:turn:3:user:prompt"
            ),
            entry(
                "final",
                "you said: go ahead",
                "session:fake-session-1:turn:3:final"
            ),
        ],
        "{run:#}"
    );
}
